import path from 'node:path';
import { startRecording } from '../event-recording.js';
import { EventBus } from '../../engine/events.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { executeProgram, type ProgramQuestion } from '../../orchestrator/program-execute.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { unsafeNoSandboxFrom } from '../sandbox-option.js';
import { budgetFrom } from '../budget-option.js';
import { createWaveProgress } from '../wave-progress.js';
import { repoDirOption } from './prepare-wave.js';
import { linkedDocsDirectory, topLevelOf } from './repo-dir-option.js';
import { sayRecovered } from '../replan-recovery.js';
import { requireAgentsReady } from '../../agents/model-preflight.js';
import { parseProgram } from '../../protocol/parse-program.js';
import { readFile } from 'node:fs/promises';
import { accessSync, constants, existsSync, readdirSync, realpathSync, rmSync, statSync } from 'node:fs';
import { processExists } from '../../store/process-alive.js';
import { acquireRunLock } from '../run-lock.js';
import { notePendingStep, onUnsettled } from '../unsettled-guard.js';
import { dispatchFlagsFrom, dispatcherFromConfig } from '../../dispatch/from-config.js';
import type { Dispatcher } from '../../dispatch/dispatcher.js';

function text(options: Record<string, unknown>, name: string): string | undefined {
  const value = options[name];
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/** `--name <value>` as a positive number (an integer when `integer`), undefined when absent; X001 (exit 2) otherwise. */
function positiveOption(options: Record<string, unknown>, name: string, flag: string, integer: boolean): number | undefined {
  const raw = options[name];
  if (raw === undefined) return undefined;
  const text = String(raw).trim();
  const value = Number(text);
  if (text === '' || !Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${flag} must be a positive ${integer ? 'integer' : 'number'}, got "${String(raw)}"`, exitCode: 2 });
  }
  return value;
}

/**
 * SIGINT and SIGTERM stop the run as an interruption (exit 130, resumable). The first one aborts
 * the run; a second one (a terminal's double Ctrl-C) is absorbed while it winds down; a third
 * quits at once (exit 130: the PROGRAM is as a kill leaves it, which a re-run resumes too).
 */
function programInterrupt(io: CommandIo): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  let count = 0;
  const onSignal = (name: NodeJS.Signals) => {
    count += 1;
    if (count === 1) controller.abort(new Error(`interrupted (${name})`));
    else if (count === 2) io.stderr('program: stopping — the run is being interrupted (once more to quit at once)\n');
    else process.exit(130);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    signal: controller.signal,
    dispose: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

/** Exit code of an interrupted run (128 + SIGINT, as a shell reports a Ctrl-C). */
export const interruptedExitCode = 130;

function describe(question: ProgramQuestion): string {
  if (question.kind === 'tier-review') {
    const stale = question.stale_briefs.map((item) => `  stale brief? ${item.impl} agent ${item.agent} names ${item.references.join(', ')}, changed by the previous tier (E28A: re-run its Scout to refresh the briefs)`);
    return `Tier ${question.tier} is planned:\n${question.impls.map((impl) => `  ${impl.slug.padEnd(24)} ${impl.title}\n    ${impl.impl_path}`).join('\n')}\n${stale.length > 0 ? `${stale.join('\n')}\n` : ''}`;
  }
  return `Tier ${question.tier} is merged and verified${question.frozen.length > 0 ? `; frozen contracts: ${question.frozen.join(', ')}` : ''}. Next: tier ${question.next_tier}.\n`;
}

/**
 * `polywave program-execute <program> [--auto] [--yes] [--model M] …` — the tier loop (E28–E34),
 * also reached through `polywave run <PROGRAM file>`. Resumable: re-run the same command.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const target = args[0]?.trim() ?? '';
  if (target === '') throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'program-execute needs the path of a PROGRAM manifest' });
  // Checked before anything runs (a bad value used to be ignored: 0 ran with no limit).
  const concurrency = positiveOption(options, 'concurrency', '--concurrency', true);
  const timeout = positiveOption(options, 'timeout', '--timeout', false);
  const maxTurns = positiveOption(options, 'maxTurns', '--max-turns', true);
  // From a subdirectory of the work tree too (outside attack P12-13: the loop looked for the Scouts' IMPL docs, which
  // run-scout writes at the top level, under the current directory and stopped BLOCKED): the top of the work tree.
  const repoDir = repoDirOption(options, io) ?? (await topLevelOf(io.cwd, io.env)) ?? io.cwd;
  // (its real path, as git names the top: a directory reached through a symlink stays inside the repository)
  const given = path.resolve(io.cwd, target);
  const programPath = existsSync(given) ? realpathSync(given) : given;
  // Outside attack P12-39: a PROGRAM elsewhere (the legacy docs/PROGRAM-<slug>.yaml, a `--program plans/…` path) ran its
  // Scouts, then every IMPL stopped on the manifest's own uncommitted status updates (only docs/PROGRAM/ is the loop's).
  // Refused before anything runs, with the move that makes it run.
  const relativeProgram = path.relative(repoDir, programPath).split(path.sep).join('/');
  // P15-20: a committed `docs/PROGRAM` (or `docs`) link is named, with the commands that replace it (the advised
  // `git mv … docs/PROGRAM/…` went through it); so is a `docs/IMPL` link, where every Scout's IMPL doc was refused.
  const linked = linkedDocsDirectory(repoDir, 'PROGRAM', 'the PROGRAM manifests') ?? (existsSync(programPath) ? linkedDocsDirectory(repoDir, 'IMPL', 'the IMPL docs (each Scout its own)') : undefined);
  if (linked !== undefined) throw new PolywaveError({ code: 'X001_INVALID_INPUT', exitCode: 2, message: `the tier loop cannot run ${target}: ${linked}` });
  if (!/^docs\/PROGRAM\/(complete\/)?PROGRAM-[^/]+\.ya?ml$/.test(relativeProgram) && !relativeProgram.startsWith('../')) {
    const slug = /PROGRAM-([^/]+?)\.ya?ml$/.exec(relativeProgram)?.[1];
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `the tier loop runs a PROGRAM at docs/PROGRAM/PROGRAM-<slug>.yaml, not ${relativeProgram}${slug ? `: move it (git mv ${relativeProgram} docs/PROGRAM/PROGRAM-${slug}.yaml, then commit)` : ''}; nothing changed` });
  }
  // Issue 17: --dispatch redis://… (or polywave.config.json `dispatch`): the wave agents of every IMPL run
  // on `polywave worker`s — checked (Redis, the shared remote) before anything runs, only when a launch is
  // possible (a missing manifest or a COMPLETE PROGRAM gets the loop's own answer, nothing contacted).
  const launching = await launchableProgram(programPath);
  const dispatcher = launching ? await dispatcherFromConfig(dispatchFlagsFrom(options), { startDir: repoDir, env: io.env }) : undefined;
  try {
    if (launching) await requireProgramAgentsReady(options, io, dispatcher !== undefined);
    // One run of a PROGRAM at a time, across processes (the lock `polywave run` takes per plan), held for the
    // loop's life; each IMPL's own lock is taken while its tier runs it (a `polywave run <IMPL>` meanwhile is refused).
    // (A path that names no file takes no lock: the loop's own not-found error, nothing written.)
    const releaseLock = existsSync(programPath) ? acquireRunLock(repoDir, programPath) : () => undefined;
    try {
      if (existsSync(programPath)) await sayRecovered(repoDir, programPath, io);
      removeStaleNextIndexLocks(repoDir);
      return await execute(programPath, repoDir, options, io, { concurrency, timeout, maxTurns, ...(dispatcher ? { dispatcher } : {}) });
    } finally {
      releaseLock();
    }
  } finally {
    await dispatcher?.close();
  }
}

async function execute(programPath: string, repoDir: string, options: Record<string, unknown>, io: CommandIo, limits: { concurrency: number | undefined; timeout: number | undefined; maxTurns: number | undefined; dispatcher?: Dispatcher }): Promise<CommandResult> {
  const { concurrency, timeout, maxTurns, dispatcher } = limits;
  const budget = await budgetFrom(options, repoDir);
  const json = options.json === true;
  const auto = options.auto === true;
  const yes = options.yes === true;
  const events = new EventBus();
  const progress = json ? undefined : createWaveProgress(io, { tty: io.stderrIsTty === true, command: 'program-execute' });
  if (json) events.subscribe((event) => io.stdout(`${JSON.stringify(event)}\n`));
  else events.subscribe(progress!.onEvent);
  const recorder = startRecording(events, { command: 'program-execute', options, io, quiet: json });
  const interrupt = programInterrupt(io);
  // After a Ctrl-C or SIGTERM, a step that never settles (an agent stopped mid-tool, a request to a
  // child the signal killed) must not end the process with Node's silent exit 13: when nothing is
  // left to run, the stop is reported as the interruption it is (the PROGRAM is as a kill leaves
  // it: a re-run resumes). Without a signal, the CLI's guard reports the stall (exit 1).
  const removeUnsettled = onUnsettled(() => {
    if (!interrupt.signal.aborted) return false;
    io.stderr(`program: interrupted\n  Next: re-run \`polywave program-execute ${path.relative(repoDir, programPath)}\` to resume.\n`);
    process.exit(interruptedExitCode);
  });
  try {
    const result = await executeProgram({
      programPath,
      repoDir,
      env: io.env,
      now: io.now,
      events,
      signal: interrupt.signal,
      auto,
      lockPlan: (implPath) => acquireRunLock(repoDir, implPath),
      ...(options.replan === true ? { replan: true } : {}),
      ...(unsafeNoSandboxFrom(options, io) ? { unsafeNoSandbox: true } : {}),
      ...(text(options, 'model') ? { model: text(options, 'model')! } : {}),
      models: {
        ...(text(options, 'scoutModel') ? { scout: text(options, 'scoutModel')! } : {}),
        ...(text(options, 'waveModel') ? { wave: text(options, 'waveModel')! } : {}),
        ...(text(options, 'plannerModel') ? { planner: text(options, 'plannerModel')! } : {}),
      },
      ...(concurrency !== undefined ? { concurrency } : {}),
      ...(timeout !== undefined ? { agentTimeoutMs: Math.round(timeout * 1000) } : {}),
      ...(maxTurns !== undefined ? { maxTurns } : {}),
      ...(options.critic === false ? { noCritic: true } : {}),
      ...(budget ? { budget } : {}),
      ...(dispatcher ? { dispatcher } : {}),
      ...(options.acceptChanges === true ? { acceptChanges: true } : {}),
      approve: async (question) => {
        if (yes) return true;
        if (json) return false;
        io.stderr(describe(question));
        if (!io.ask) {
          io.stderr('Not a terminal: re-run with --yes to approve (or --auto for no pauses between tiers).\n');
          return false;
        }
        const answer = (await io.ask(question.kind === 'tier-review' ? 'Run these IMPLs? [y/N, r = reject some] ' : 'Start the next tier? [y/N] ')).trim().toLowerCase();
        if (question.kind === 'tier-review' && (answer === 'r' || answer === 'reject')) {
          // P12-29 (E28A): the reviewer can reject any IMPL of the tier, new or imported.
          const slugs = question.impls.map((impl) => impl.slug);
          const named = (await io.ask(`Reject which IMPLs (${slugs.join(', ')}; comma-separated)? `)).split(/[\s,]+/).filter((slug) => slug !== '');
          const unknown = named.filter((slug) => !slugs.includes(slug));
          if (unknown.length > 0 || named.length === 0) {
            io.stderr(`${named.length === 0 ? 'No IMPL named' : `Not an IMPL of tier ${question.tier}: ${unknown.join(', ')}`} — nothing rejected, the tier waits for its review.\n`);
            return false;
          }
          return { reject: named };
        }
        return answer === 'y' || answer === 'yes';
      },
      onProgress: (line) => {
        notePendingStep(line);
        if (!json) io.stderr(`program: ${line}\n`);
      },
    });
    if (json) io.stdout(`${JSON.stringify({ v: 1, type: 'program-result', result, ...(recorder ? { run_id: recorder.runId } : {}) })}\n`);
    else {
      printJson(io, result);
      // The next step as the PROGRAM's state allows it (a plain re-run only repeats a BLOCKED stop).
      const next = result.next ?? 're-run the same command to resume';
      io.stderr(`program: ${result.success ? 'COMPLETE' : `${result.refused ? 'refused, nothing changed' : result.interrupted ? 'interrupted' : 'stopped'} (${result.state})`} in ${(result.duration_ms / 1000).toFixed(1)} s${result.stopped ? `\n  ${result.stopped}\n  Next: ${next}.` : ''}\n`);
    }
    return result.success ? 0 : result.interrupted ? interruptedExitCode : 1;
  } finally {
    removeUnsettled();
    recorder?.close();
    progress?.stop();
    interrupt.dispose();
  }
}

/** Whether a run of this PROGRAM may launch anything: a readable, parseable manifest not yet COMPLETE. */
async function launchableProgram(programPath: string): Promise<boolean> {
  try {
    const parsed = parseProgram(await readFile(programPath, 'utf8'));
    if (parsed.fatal || !parsed.manifest) return false;
    return (parsed.manifest.state ?? '').trim() !== 'COMPLETE';
  } catch {
    return false;
  }
}

/**
 * Issue 13 (N4): the roles a PROGRAM run may launch (Planner, Scouts, wave agents) must have their
 * credentials, backend package and model server before anything changes — exit 2, as run and
 * run-wave. Dispatched wave agents use the workers' credentials: only the other roles' count here.
 */
async function requireProgramAgentsReady(options: Record<string, unknown>, io: CommandIo, dispatched: boolean): Promise<void> {
  const model = (name: string) => text(options, name) ?? text(options, 'model');
  const roles = [
    { role: 'the Planner', model: model('plannerModel') },
    { role: 'the Scouts', model: model('scoutModel') },
    { role: 'the wave agents', model: model('waveModel'), ...(dispatched ? { remote: true } : {}) },
  ];
  requireAgentScripts(await requireAgentsReady(roles, io.env), roles, repoDirOption(options, io) ?? io.cwd, io.env);
}

/**
 * `--model script:<file>` (the test/demo backend): the agent script must be readable before
 * anything runs — X001 (exit 2), nothing started or committed (it used to fail every Scout and
 * commit a BLOCKED PROGRAM). Relative paths are the repository's, as the script backend reads them.
 */
export function requireAgentScripts(specs: ReadonlyArray<{ backend: string; scriptPath?: string; raw: string }>, roles: ReadonlyArray<{ role: string }>, repoDir: string, env: Readonly<Record<string, string | undefined>>): void {
  specs.forEach((spec, index) => {
    if (spec.backend !== 'script') return;
    const configured = (spec.scriptPath ?? env.POLYWAVE_SCRIPT ?? '').trim();
    if (configured === '') return;
    const file = path.resolve(env.POLYWAVE_REPO_ROOT || repoDir, configured);
    try {
      accessSync(file, constants.R_OK);
      if (statSync(file).isDirectory()) throw new Error('a directory');
    } catch (error) {
      throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${roles[index]?.role ?? 'an agent'} (${spec.raw}): agent script ${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? (error instanceof Error ? error.message : String(error))}) — nothing was started or changed`, exitCode: 2 });
    }
  });
}


/**
 * Outside attack P12-06: git's temporary index of a partial commit (`<git dir>/next-index-<pid>.lock`), left by a git
 * process killed with an earlier run (a commit of the PROGRAM manifest), stayed for good. Removed once its git is gone.
 */
function removeStaleNextIndexLocks(repoDir: string): void {
  const gitDir = path.join(repoDir, '.git');
  let names: string[];
  try {
    names = readdirSync(gitDir);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = Number(/^next-index-(\d+)\.lock$/.exec(name)?.[1] ?? NaN);
    if (Number.isInteger(pid) && pid > 0 && !processExists(pid)) rmSync(path.join(gitDir, name), { force: true });
  }
}
