import path from 'node:path';
import { startRecording } from '../event-recording.js';
import { EventBus } from '../../engine/events.js';
import { requireAgentsReady } from '../../agents/model-preflight.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { commitManifest, inferRepoRoot, renderCriticForAgentTool, rfc3339, runCritic, type CriticReportRecord } from '../../orchestrator/run-critic.js';
import { editImpl } from '../../store/manifest-file.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { interruptSignal, repoDirOption } from './prepare-wave.js';
import { implPathFrom, requireManifest } from './shared.js';
import { unsafeNoSandboxFrom } from '../sandbox-option.js';

const backends = ['agent-tool', 'model', 'cli'] as const;

/**
 * `run-critic <impl> [--backend agent-tool|model] [--model M] [--repo-dir D] [--timeout MIN]
 * [--skip|--no-review] [--auto]` — E37. `agent-tool` prints the assembled critic prompt (Claude
 * Code skills launch the agent and it reports with set-critic-review). `model` (default; `cli` is
 * Go's name for it) runs the critic read-only, stores `critic_report` and commits the manifest
 * (E48), printing `{verdict, issue_count, error_count, gate_passes, …}`. `--skip` writes a PASS
 * "Skipped by operator". Exit 0 the gate passes, 1 ISSUES or no review, 2 bad input.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = implPathFrom(args, io);
  const backend = (typeof options.backend === 'string' ? options.backend.trim().toLowerCase() : 'model') as (typeof backends)[number];
  if (!(backends as readonly string[]).includes(backend)) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `--backend must be one of ${backends.join(', ')} (got ${String(options.backend)})` });
  }
  const repoDir = repoDirOption(options, io);

  if (backend === 'agent-tool') {
    io.stdout(await renderCriticForAgentTool(implPath, repoDir));
    return 0;
  }

  if (options.skip === true || options.review === false) {
    const report: CriticReportRecord = { verdict: 'PASS', agent_reviews: {}, summary: 'Skipped by operator', reviewed_at: rfc3339(io.now()), issue_count: 0 };
    await editImpl(implPath, (parsed) => {
      requireManifest(parsed, implPath);
      return { edits: [{ path: ['critic_report'], value: report }], outcome: undefined };
    });
    const root = repoDir ?? inferRepoRoot(implPath) ?? path.dirname(implPath);
    let commitSha: string | undefined;
    try {
      const slug = /IMPL-([^/\\]+?)\.ya?ml$/.exec(implPath)?.[1] ?? 'impl';
      commitSha = await commitManifest(root, implPath, `chore: critic report for ${slug} (skipped by operator) [Polywave:critic:${slug}]`, io.env);
    } catch (error) {
      io.stderr(`run-critic: warning: the manifest was not committed: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}\n`);
    }
    io.stderr('run-critic: critic review skipped by operator (PASS written)\n');
    printJson(io, { verdict: report.verdict, issue_count: 0, reviewed_at: report.reviewed_at, saved: true, skipped: true, committed: commitSha !== undefined, ...(commitSha ? { commit_sha: commitSha } : {}) });
    return 0;
  }

  const timeout = options.timeout === undefined ? undefined : Number(options.timeout);
  if (timeout !== undefined && (!Number.isFinite(timeout) || timeout <= 0)) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `--timeout must be a positive number of minutes (got ${String(options.timeout)})` });
  // Issue 13 (N4): credentials, the backend's package and the model server before the Critic starts (exit 2).
  await requireAgentsReady([{ role: 'the Critic', model: typeof options.model === 'string' && options.model.trim() !== '' ? options.model.trim() : undefined }], io.env);
  const events = new EventBus();
  events.subscribe((event) => {
    if (event.type === 'step-end') io.stderr(`${event.command}: [${event.step.step}] ${event.step.status} — ${event.step.detail}\n`);
  });
  const recorder = startRecording(events, { command: 'run-critic', options, io, quiet: false });
  const interrupt = interruptSignal();
  try {
    const result = await runCritic({
      ...(unsafeNoSandboxFrom(options, io) ? { unsafeNoSandbox: true } : {}),
      implPath,
      env: io.env,
      now: io.now,
      events,
      signal: interrupt.signal,
      auto: options.auto === true,
      ...(repoDir ? { repoDir } : {}),
      ...(typeof options.model === 'string' && options.model.trim() !== '' ? { model: options.model.trim() } : {}),
      ...(timeout ? { timeoutMs: Math.round(timeout * 60_000) } : {}),
    });
    printJson(io, result);
    if (result.error) io.stderr(`run-critic: [${result.error.code}] ${result.error.message}\n`);
    else if (!result.gate_passes) io.stderr(`run-critic: critic found issues (${result.error_count} error(s)) — review and correct the IMPL before proceeding\n`);
    return result.success ? 0 : 1;
  } finally {
    recorder?.close();
    interrupt.dispose();
  }
}
