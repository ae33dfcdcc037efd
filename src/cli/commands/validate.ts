import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Finding } from '../../errors/finding.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { findMalformedTypedFences, findTypedBlocks, isMarkdownImplDoc, lintImplDoc } from '../../protocol/markdown/index.js';
import { summarizeFindings, validateImpl } from '../../protocol/validate-impl.js';
import { solverFindings } from '../../protocol/wave-solver.js';
import { parseImpl } from '../../protocol/parse-impl.js';
import { loadImpl, unreadableManifestError } from '../../store/manifest-file.js';
import { readTextFile } from '../../store/read-text.js';
import { repoFileFacts } from '../../store/repo-facts.js';
import { resolveManifestPath } from '../../store/resolve-path.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { applyImplFixes } from './impl-fixes.js';
import { requireContent } from './shared.js';

function repoFacts(repoDir: string) {
  const root = path.resolve(repoDir);
  if (!existsSync(root) || !statSync(root).isDirectory()) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `--repo-dir ${repoDir} is not a directory` });
  }
  return repoFileFacts(root);
}

/**
 * `validate <impl> [--fix] [--solver] [--repo-dir DIR] [--wave N]` — E16 (+E16A–D), I1–I6, MR01/MR02, …
 * Prints `{valid, error_count, errors, warning_count, warnings, fixed}`; exit 0 valid, 1 invalid,
 * 2 when the file is not readable YAML (coded one-line error with line and column).
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const resolved = resolveManifestPath(args[0] ?? '', { cwd: io.cwd, kind: 'impl' });
  const filePath = resolved.path;
  const text = await readTextFile(filePath);
  requireContent(text, filePath);

  const markdown = isMarkdownImplDoc(text);
  const typed = markdown && (findTypedBlocks(text).length > 0 || findMalformedTypedFences(text).length > 0);
  // A .yaml/.yml file without typed blocks is read as the YAML manifest it claims to be: prose, a
  // number or `null` written over an IMPL is V001 (as in Go), never a "valid" markdown doc.
  if (markdown && (typed || !/\.ya?ml$/i.test(filePath))) {
    // E16A–C: markdown IMPL docs with typed blocks.
    const findings: Finding[] = lintImplDoc(text).map((finding) => ({ ...finding, file: filePath }));
    if (!typed) {
      // E16A's exception: a pre-typed-block doc is not checked, with the "no typed blocks found" warning.
      findings.push({ code: 'E16_NO_TYPED_BLOCKS', severity: 'warning', file: filePath, message: `${filePath}: no typed blocks found (a pre-typed-block markdown IMPL doc: nothing is checked) — a YAML manifest or \`\`\`yaml type=impl-<name> blocks are validated` });
    }
    const summary = summarizeFindings(findings);
    printJson(io, { ...summary, fixed: 0 });
    return summary.valid ? 0 : 1;
  }

  let fixed = 0;
  const fixes: string[] = [];
  if (options.fix) {
    const outcome = await applyImplFixes(filePath);
    fixed = outcome.fixed;
    fixes.push(...outcome.descriptions);
  }

  // The text read above is parsed (read again only after --fix rewrote the file).
  const parsed = options.fix ? (await loadImpl(filePath)).parsed : parseImpl(text);
  if (parsed.fatal) throw unreadableManifestError(filePath, parsed.findings);
  const findings: Finding[] = [...parsed.findings];
  if (parsed.manifest) {
    const facts = typeof options.repoDir === 'string' ? repoFacts(path.resolve(io.cwd, options.repoDir)) : {};
    findings.push(
      ...validateImpl({
        manifest: parsed.manifest,
        locate: parsed.locate,
        ...facts,
        ...(typeof options.wave === 'number' ? { wave: options.wave } : {}),
      }),
    );
    // --solver: wave assignments recomputed from the dependencies (Go's SOLVER_* findings).
    if (options.solver) findings.push(...solverFindings(parsed.manifest));
  }
  const summary = summarizeFindings(findings);
  printJson(io, { ...summary, fixed, ...(fixes.length > 0 ? { fixes } : {}) });
  return summary.valid ? 0 : 1;
}
