import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Finding } from '../../errors/finding.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { isMarkdownImplDoc, lintImplDoc } from '../../protocol/markdown/index.js';
import { planImplFixes } from '../../protocol/fix-impl.js';
import { summarizeFindings, validateImpl } from '../../protocol/validate-impl.js';
import { editImpl, loadImpl } from '../../store/manifest-file.js';
import { readTextFile } from '../../store/read-text.js';
import { repoFileFacts } from '../../store/repo-facts.js';
import { resolveManifestPath } from '../../store/resolve-path.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { requireContent } from './shared.js';

function repoFacts(repoDir: string) {
  const root = path.resolve(repoDir);
  if (!existsSync(root) || !statSync(root).isDirectory()) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `--repo-dir ${repoDir} is not a directory` });
  }
  return repoFileFacts(root);
}

/**
 * `validate <impl> [--fix] [--repo-dir DIR] [--wave N]` — E16 (+E16A–D), I1–I6, MR01/MR02, …
 * Prints `{valid, error_count, errors, warning_count, warnings, fixed}`; exit 0 valid, 1 invalid,
 * 2 when the file is not readable YAML (coded one-line error with line and column).
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const resolved = resolveManifestPath(args[0] ?? '', { cwd: io.cwd, kind: 'impl' });
  const filePath = resolved.path;
  const text = await readTextFile(filePath);
  requireContent(text, filePath);

  if (isMarkdownImplDoc(text)) {
    // E16A–C: markdown IMPL docs with typed blocks.
    const findings = lintImplDoc(text).map((finding) => ({ ...finding, file: filePath }));
    const summary = summarizeFindings(findings);
    printJson(io, { ...summary, fixed: 0 });
    return summary.valid ? 0 : 1;
  }

  let fixed = 0;
  const fixes: string[] = [];
  if (options.fix) {
    const outcome = await editImpl(filePath, (parsed) => {
      if (!parsed.manifest) return { edits: [], outcome: { fixed: 0, descriptions: [] as string[] } };
      const plan = planImplFixes(parsed.manifest);
      return { edits: plan.edits.map(({ path: editPath, value }) => ({ path: editPath, value })), outcome: { fixed: plan.fixed, descriptions: plan.edits.map((edit) => edit.description) } };
    });
    fixed = outcome.fixed;
    fixes.push(...outcome.descriptions);
  }

  const { parsed } = await loadImpl(filePath);
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
  }
  const summary = summarizeFindings(findings);
  printJson(io, { ...summary, fixed, ...(fixes.length > 0 ? { fixes } : {}) });
  return summary.valid ? 0 : 1;
}
