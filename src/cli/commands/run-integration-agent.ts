import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { PolywaveError } from '../../errors/polywave-error.js';
import { runIntegrationAgent } from '../../orchestrator/run-integration.js';
import { loadImpl } from '../../store/manifest-file.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { interruptSignal, repoDirOption, waveOption } from './prepare-wave.js';
import { agentProgressPrinter } from './run-scaffold.js';
import { implPathFrom, requireManifest } from './shared.js';
import { unsafeNoSandboxFrom } from '../sandbox-option.js';

async function buildErrorText(options: Record<string, unknown>, io: CommandIo): Promise<string> {
  const file = typeof options.buildErrorFile === 'string' ? options.buildErrorFile.trim() : '';
  if (file === '') return '';
  if (file === '-') return io.readStdin();
  try {
    return await readFile(path.resolve(io.cwd, file), 'utf8');
  } catch (error) {
    throw new PolywaveError({ code: 'X002_FILE_READ', message: `--build-error-file ${file}: ${error instanceof Error ? error.message : String(error)}` });
  }
}

/**
 * `run-integration-agent <impl> --wave N [--model M] [--repo-dir D] [--hotfix-files a,b
 * --build-error-file F]` — E26: one Integration Agent wires the wave's integration gaps
 * (`integration_reports.wave{N}`, wiring gaps) editing only the connector/caller files, on the
 * merged result; E25 is re-run afterwards. With `--hotfix-files` it is the E47 caller-cascade
 * hotfix instead (only those files; the build/test command must pass). Prints `{success,
 * gap_count, agent_launched, build_passed?, error?, wave, mode, skipped, gaps_before, gaps_after,
 * remaining_gaps, allowed_files, files_changed, commit?, …}`; exit 0 when done (or nothing to
 * do), 1 when gaps remain or the agent failed.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = implPathFrom(args, io);
  const wave = waveOption(options);
  requireManifest((await loadImpl(implPath)).parsed, implPath);
  const repoDir = repoDirOption(options, io);
  const hotfixFiles = Array.isArray(options.hotfixFiles) ? (options.hotfixFiles as string[]) : [];
  if (hotfixFiles.length === 0 && options.buildErrorFile !== undefined) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: '--build-error-file goes with --hotfix-files (E47 hotfix mode)' });
  const hotfix = hotfixFiles.length > 0 ? { files: hotfixFiles, buildError: await buildErrorText(options, io) } : undefined;
  const interrupt = interruptSignal();
  try {
    const result = await runIntegrationAgent({
      ...(unsafeNoSandboxFrom(options, io) ? { unsafeNoSandbox: true } : {}),
      implPath,
      wave,
      env: io.env,
      now: io.now,
      events: agentProgressPrinter('run-integration-agent', io),
      signal: interrupt.signal,
      ...(repoDir ? { repoDir } : {}),
      ...(typeof options.model === 'string' && options.model.trim() !== '' ? { model: options.model.trim() } : {}),
      ...(hotfix ? { hotfix } : {}),
    });
    printJson(io, result);
    if (result.skipped) io.stderr(`run-integration-agent: no integration gaps detected for wave ${wave}\n`);
    else if (!result.success) io.stderr(`run-integration-agent: ${result.error ?? 'failed'} (non-fatal for the protocol, E26: report it to a human)\n`);
    return result.success ? 0 : 1;
  } finally {
    interrupt.dispose();
  }
}
