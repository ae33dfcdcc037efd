import { runDemo } from '../../demo/run-demo.js';
import { EventBus } from '../../engine/events.js';
import { startRecording } from '../event-recording.js';
import { runProgramDemo } from '../../demo/run-program-demo.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { interruptSignal } from './prepare-wave.js';
import { unsafeNoSandboxFrom } from '../sandbox-option.js';

/**
 * `polywave demo [--dir D] [--json]` — builds a sample library with six scripted agents in two
 * waves through the whole protocol (no API key), prints each phase, then where to look.
 */
export async function run(_args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  if (options.program === true) return runProgram(options, io);
  const json = options.json === true;
  const interrupt = interruptSignal();
  const say = (text: string) => {
    if (!json) io.stderr(text);
  };
  say('polywave demo: a sample library (textkit), an IMPL of 2 waves × 3 agents, scripted agents, the full protocol.\n');
  const events = new EventBus();
  const recorder = startRecording(events, { command: 'demo', options, io, quiet: json });
  try {
    const result = await runDemo({
      events,
      ...(unsafeNoSandboxFrom(options, io) ? { unsafeNoSandbox: true } : {}),
      env: io.env,
      now: io.now,
      signal: interrupt.signal,
      ...(typeof options.dir === 'string' && options.dir.trim() !== '' ? { dir: options.dir } : {}),
      onPhase: (phase) => say(`  ${phase.phase}${phase.wave ? ` ${phase.wave}` : ''}: ${phase.status} — ${phase.detail} (${(phase.duration_ms / 1000).toFixed(1)} s)\n`),
    });
    if (json) {
      printJson(io, { dir: result.dir, repo: result.repo, success: result.run.success && result.tests.passed, state: result.run.state, merges: result.merges, tests_passed: result.tests.passed, duration_ms: result.duration_ms, phases: result.run.phases, stopped: result.run.stopped, sandbox: result.sandbox, ...(recorder ? { run_id: recorder.runId } : {}) });
    } else {
      io.stdout(`${result.log}\n`);
      io.stdout(
        [
          `${result.run.success && result.tests.passed ? 'Done' : 'Stopped'} in ${(result.duration_ms / 1000).toFixed(1)} s: state ${result.run.state}, ${result.merges} merge commit(s), tests ${result.tests.passed ? 'pass' : 'FAIL'}.${result.run.stopped ? ` ${result.run.stopped}` : ''}`,
          result.sandbox.sandboxed
            ? `Sandboxed: every agent command and gate ran inside the OS sandbox (${result.sandbox.mechanism}): only its worktree, a private HOME/TMPDIR writable; .git, the main checkout and other worktrees read-only; no network.`
            : `NOT sandboxed: the agents ran with the static checks only (${result.sandbox.detail}).${result.sandbox.detail === '--unsafe-no-sandbox' ? '' : ' Model-backed agents refuse to run like this: install bubblewrap, socat and ripgrep (Debian/Ubuntu: apt-get install bubblewrap socat ripgrep).'}`,
          '',
          'Where to look:',
          `  cd ${result.repo}`,
          '  git log --graph --oneline          # one --no-ff merge per agent, wave by wave',
          '  node --test                        # the library the agents wrote',
          '  cat docs/IMPL/complete/IMPL-textkit.yaml   # the plan, completion reports, gate and integration results',
          '  cat docs/CONTEXT.md                # what the project learned (E18)',
          `  cat ${result.script}   # what each scripted agent did`,
          '  polywave query events --impl textkit   # what happened, event by event (E40 store)',
          '  polywave metrics textkit --breakdown   # durations, tokens, cost, success per wave and agent',
          '',
          'With a real model: polywave run "<feature>" --model anthropic:claude-sonnet-4-5 (ANTHROPIC_API_KEY), --model ollama:qwen2.5-coder:32b (local), or --model claude-code:.',
          '',
        ].join('\n'),
      );
    }
    return result.run.success && result.tests.passed ? 0 : 1;
  } finally {
    recorder?.close();
    interrupt.dispose();
  }
}

/** `polywave demo --program`: the 2-tier "shop" PROGRAM through the whole tier loop. */
async function runProgram(options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const json = options.json === true;
  const interrupt = interruptSignal();
  const say = (text: string) => {
    if (!json) io.stderr(text);
  };
  say('polywave demo --program: a 2-tier PROGRAM (shop) — tier 1: pricing + catalog (2 waves) scouted in parallel and run concurrently on IMPL branches; tier 2: checkout, on the contract frozen at tier 1.\n');
  // attack-serve-15 N6: recorded in the event store like `polywave demo` and `program-execute` (what `polywave serve` shows).
  const events = new EventBus();
  const recorder = startRecording(events, { command: 'demo', options, io, quiet: json, program: 'shop' });
  try {
    const result = await runProgramDemo({
      events,
      ...(unsafeNoSandboxFrom(options, io) ? { unsafeNoSandbox: true } : {}),
      env: io.env,
      now: io.now,
      signal: interrupt.signal,
      ...(typeof options.dir === 'string' && options.dir.trim() !== '' ? { dir: options.dir } : {}),
      onProgress: (line) => say(`  ${line}\n`),
    });
    const run = result.run!;
    const ok = run.success && result.tests!.passed;
    if (json) {
      printJson(io, { dir: result.dir, repo: result.repo, success: ok, state: run.state, stopped: run.stopped, tests_passed: result.tests!.passed, duration_ms: result.duration_ms, tiers: run.tiers, sandbox: result.sandbox, ...(recorder ? { run_id: recorder.runId } : {}) });
    } else {
      io.stdout(`${result.log}\n`);
      io.stdout(
        [
          `${ok ? 'Done' : 'Stopped'} in ${(result.duration_ms / 1000).toFixed(1)} s: PROGRAM ${run.state}, tests ${result.tests!.passed ? 'pass' : 'FAIL'}.${run.stopped ? ` ${run.stopped}` : ''}`,
          `Sandbox: ${result.sandbox.sandboxed ? `every agent command and gate ran in the OS sandbox (${result.sandbox.mechanism})` : `NOT sandboxed (${result.sandbox.detail})`}.`,
          '',
          'Where to look:',
          `  cd ${result.repo}`,
          '  git log --graph --oneline          # agent merges on each IMPL branch, then the IMPL branches into main, tier by tier',
          '  cat docs/PROGRAM/complete/PROGRAM-shop.yaml   # tiers, statuses, the frozen contract',
          '  ls docs/IMPL/complete/             # the three IMPLs, archived',
          `  cat ${result.script}   # what each scripted Scout and agent did`,
          '  polywave query events --program shop   # what happened, event by event (E40 store)',
          `  polywave serve --repo ${result.repo}   # the PROGRAM view and each IMPL's live board in the browser`,
          '',
        ].join('\n'),
      );
    }
    return ok ? 0 : 1;
  } finally {
    recorder?.close();
    interrupt.dispose();
  }
}
