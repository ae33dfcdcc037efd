import path from 'node:path';
import { parseProgram } from '../../protocol/parse-program.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { formatProgramStatus, programStatus } from '../../protocol/program/index.js';
import { loadManifest } from '../../store/manifest-file.js';
import { projectRootOf, readProgramImplDocs, waveProgressOf } from '../../store/program-impl-docs.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { programPathFrom, requireProgram } from './shared.js';
import { withProgram } from '../replan-recovery.js';

/**
 * `program-status <program> [--json] [--repo-dir DIR]` — E32 tier-by-tier summary; IMPL statuses
 * are cross-checked against the IMPL docs on disk, with each running IMPL's live wave progress
 * (`waves: {total, complete}`); the manifest is not rewritten: reading the status changes no file.
 */
async function runCommand(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const filePath = programPathFrom(args, io);
  const { parsed } = await loadManifest(filePath, parseProgram);
  const manifest = requireProgram(parsed, filePath);
  // Outside attack P12-41: an IMPL doc (or any YAML without a program_slug) printed an empty PROGRAM "COMPLETE" with exit 0;
  // P13-24: a file with a program_slug and nothing else printed "(no tiers) 0/0". A PROGRAM has a state and IMPLs or tiers.
  const raw = (parsed.data ?? {}) as Record<string, unknown>;
  const missing = [
    ...((manifest.program_slug ?? '').trim() === '' ? ['program_slug'] : []),
    ...(typeof raw.state !== 'string' || raw.state.trim() === '' ? ['state'] : []),
    ...(raw.impls === undefined && raw.tiers === undefined ? ['impls'] : []),
  ];
  if (missing.length > 0) {
    const shown = path.relative(io.cwd, filePath) || filePath;
    throw new PolywaveError({ code: 'V005_REQUIRED_FIELDS_MISSING', message: `${shown} is not a PROGRAM manifest: ${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} required (run: polywave validate-program ${shown})` });
  }
  const repoRoot = typeof options.repoDir === 'string' ? path.resolve(io.cwd, options.repoDir) : projectRootOf(filePath, io.cwd);
  const docs = await readProgramImplDocs(repoRoot, manifest);
  const states = new Map<string, string | undefined>();
  for (const [slug, doc] of docs) states.set(slug, doc.manifest?.state);
  const status = programStatus(manifest, states, waveProgressOf(docs));
  if (options.json) printJson(io, status);
  else io.stdout(`${formatProgramStatus(status).replace(/\n*$/, '')}\n`);
  return 0;
}

/** P13-05/P13-07: a killed re-plan's half revision is put back first (src/cli/replan-recovery.ts). */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  return withProgram(programPathFrom(args, io), io, { lock: false }, () => runCommand(args, options, io));
}
