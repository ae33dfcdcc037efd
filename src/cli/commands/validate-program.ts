import path from 'node:path';
import { parseProgram } from '../../protocol/parse-program.js';
import { validateProgram, validateProgramImport } from '../../protocol/program/index.js';
import { summarizeFindings } from '../../protocol/validate-impl.js';
import { loadManifest } from '../../store/manifest-file.js';
import { projectRootOf, readProgramImplDocs } from '../../store/program-impl-docs.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { programPathFrom, requireContent } from './shared.js';
import { withProgram } from '../replan-recovery.js';

/**
 * `validate-program <program> [--import-mode] [--repo-dir DIR]` — program-manifest.txt §15
 * (plus E28A state mapping, P1, P2 against the IMPL docs on disk with --import-mode).
 */
async function runCommand(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const filePath = programPathFrom(args, io);
  const { text, parsed } = await loadManifest(filePath, parseProgram);
  requireContent(text, filePath);
  const findings = [...parsed.findings];
  if (parsed.manifest) {
    findings.push(...validateProgram(parsed.manifest, { locate: parsed.locate, fileName: path.basename(filePath) }));
    if (options.importMode) {
      const repoRoot = typeof options.repoDir === 'string' ? path.resolve(io.cwd, options.repoDir) : projectRootOf(filePath, io.cwd);
      const docs = await readProgramImplDocs(repoRoot, parsed.manifest);
      findings.push(...validateProgramImport(parsed.manifest, docs, { locate: parsed.locate }));
    }
  }
  const summary = summarizeFindings(findings);
  printJson(io, summary);
  return summary.valid ? 0 : 1;
}

/** P13-05/P13-07: a killed re-plan's half revision is put back first (src/cli/replan-recovery.ts). */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  return withProgram(programPathFrom(args, io), io, { lock: false }, () => runCommand(args, options, io));
}
