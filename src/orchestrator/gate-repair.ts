import { existsSync } from 'node:fs';
import { missingCredential } from '../agents/credentials.js';
import { resolveModelSpec } from '../agents/model-spec.js';
import { runAgent } from '../agents/run-agent.js';
import type { FinalizeWaveResult } from '../engine/finalize/context.js';
import { journalPaths } from '../engine/journal.js';
import { createGit } from '../git/git-cli.js';
import { branchName, implSlugFromPath, worktreePath } from '../protocol/names.js';
import type { ImplManifest } from '../protocol/schema/impl-schema.js';
import type { GoGateResult } from '../gates/go-compat.js';

/**
 * E21 closed-loop gate retry (CLI path): when finalize-wave stops on a required pre-merge gate,
 * a repair agent is launched in the failing agent's worktree with the gate's command and output,
 * fixes its owned files and commits; finalize-wave then runs again (the gates re-run on the new
 * tip — the E38 cache key holds HEAD). At most `maxRetries` rounds (the spec's 2). The repair
 * agent is jailed and sandboxed like the wave agent it repairs: its owned files, its branch.
 */
/** What finalize-wave's own agents (E21 repair, E47 hotfix) run with. */
export interface FinalizeAgentRunOptions {
  implPath: string;
  wave: number;
  manifest: ImplManifest;
  /** The primary repository's main checkout (it holds the agents' worktrees). */
  repoRoot: string;
  model?: string;
  env: Readonly<Record<string, string | undefined>>;
  unsafeNoSandbox?: boolean;
  signal?: AbortSignal;
  log: (line: string) => void;
  /** Runs finalize-wave again. */
  finalize: () => Promise<FinalizeWaveResult>;
}

export interface GateRepairOptions extends FinalizeAgentRunOptions {
  maxRetries?: number;
}

export interface GateRepairAttempt {
  round: number;
  agent: string;
  gate: string;
  /** finished / failed / timeout / … (the agent's outcome), or why it was not launched. */
  outcome: string;
  /** The worktree's HEAD after the repair (a new commit when it fixed something). */
  head?: string;
}

export interface GateRepairResult {
  result: FinalizeWaveResult;
  attempts: GateRepairAttempt[];
  /** Why no repair ran, when none did. */
  skipped?: string;
}

/** Required pre-merge gates that failed, per agent (from finalize's gate_results). */
export function failedGatesByAgent(result: FinalizeWaveResult): Map<string, Array<GoGateResult & { agent?: string }>> {
  const out = new Map<string, Array<GoGateResult & { agent?: string }>>();
  if (result.failed_step?.step !== 'run-gates') return out;
  for (const results of Object.values(result.gate_results ?? {})) {
    for (const gate of results) {
      if (gate.passed || !gate.required || !gate.agent || gate.timing !== 'pre-merge') continue;
      out.set(gate.agent, [...(out.get(gate.agent) ?? []), gate]);
    }
  }
  return out;
}

function tail(text: string, max = 4000): string {
  return text.length <= max ? text : `…${text.slice(-max)}`;
}

function repairPrompt(agentId: string, wave: number, files: readonly string[], gates: ReadonlyArray<GoGateResult>, round: number): { system: string; user: string } {
  const system = [
    `You are a Polywave repair agent for wave ${wave} agent ${agentId} (E21 closed-loop gate retry, round ${round}).`,
    'You work in that agent\'s git worktree, on its branch. A required quality gate failed there before the merge.',
    `Change only the agent's own files: ${files.join(', ') || '(none listed)'}. Writes anywhere else are refused.`,
    'Find the cause in the gate output, fix it, run the gate command yourself to check, and commit your fix on this branch with a message starting "fix(gate):".',
    'Do not weaken, skip or delete tests or gates to make them pass. Do not file a completion report: the orchestrator re-runs the gates on your commit.',
  ].join('\n');
  const user = [
    `The following pre-merge gate(s) failed in this worktree:`,
    ...gates.map((gate) => [`\n## \`${gate.command}\` (${gate.type}) exited ${gate.exit_code}`, gate.stdout.trim() ? `stdout:\n\`\`\`\n${tail(gate.stdout)}\n\`\`\`` : '', gate.stderr.trim() ? `stderr:\n\`\`\`\n${tail(gate.stderr)}\n\`\`\`` : ''].filter(Boolean).join('\n')),
    '\nFix it and commit.',
  ].join('\n');
  return { system, user };
}

/** Runs up to `maxRetries` repair rounds while finalize-wave keeps failing on pre-merge gates. */
export async function closedLoopGateRetry(first: FinalizeWaveResult, options: GateRepairOptions): Promise<GateRepairResult> {
  const attempts: GateRepairAttempt[] = [];
  if (failedGatesByAgent(first).size === 0) return { result: first, attempts };
  const spec = resolveModelSpec(options.model, options.env);
  const missing = spec.backend === 'script' ? undefined : missingCredential(spec, options.env);
  if (missing) {
    const skipped = `E21 closed-loop gate retry not run: no credentials for ${spec.raw} (${missing}); pass --model or --no-gate-retry`;
    options.log(skipped);
    return { result: first, attempts, skipped };
  }
  const slug = implSlugFromPath(options.implPath, options.manifest);
  const wave = (options.manifest.waves ?? []).find((candidate) => candidate.number === options.wave);
  const scaffolds = (options.manifest.scaffolds ?? []).map((scaffold) => scaffold.file_path ?? scaffold.file ?? '').filter(Boolean);
  const maxRetries = options.maxRetries ?? 2;
  let result = first;
  for (let round = 1; round <= maxRetries; round += 1) {
    const failing = failedGatesByAgent(result);
    if (failing.size === 0 || options.signal?.aborted) break;
    let repaired = false;
    for (const [agentId, gates] of failing) {
      const agent = wave?.agents?.find((candidate) => candidate.id === agentId);
      const cwd = worktreePath(options.repoRoot, slug, options.wave, agentId);
      const gate = gates.map((item) => item.command).join(', ');
      if (!agent || !existsSync(cwd)) {
        attempts.push({ round, agent: agentId, gate, outcome: `not launched: no worktree at ${cwd}` });
        continue;
      }
      const branch = branchName(slug, options.wave, agentId);
      const git = createGit(cwd, { env: options.env });
      const before = await git.tryRevParse('HEAD').catch(() => undefined);
      const prompt = repairPrompt(agentId, options.wave, agent.files ?? [], gates, round);
      options.log(`E21 closed-loop gate retry ${round}/${maxRetries}: repair agent for ${agentId} (${gate})`);
      const run = await runAgent({
        agentId,
        role: 'wave',
        wave: options.wave,
        // The wave agent's own run was attempt 1: a scripted or logged repair is a later attempt.
        attempt: round + 1,
        model: spec,
        systemPrompt: prompt.system,
        prompt: prompt.user,
        cwd,
        branch,
        ...(before ? { baseCommit: before } : {}),
        implPath: options.implPath,
        policy: { root: cwd, ownedFiles: agent.files ?? [], frozenPaths: scaffolds.filter((file) => !(agent.files ?? []).includes(file)), branch, readablePaths: [options.implPath] },
        env: { ...options.env, POLYWAVE_REPO_ROOT: options.repoRoot },
        journal: journalPaths(options.repoRoot, slug, options.wave, agentId),
        ...(options.unsafeNoSandbox ? { unsafeNoSandbox: true } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      });
      const head = await git.tryRevParse('HEAD').catch(() => undefined);
      attempts.push({ round, agent: agentId, gate, outcome: run.outcome.status, ...(head ? { head } : {}) });
      if (head && head !== before) repaired = true;
    }
    if (!repaired) {
      options.log('E21 closed-loop gate retry: no repair agent committed a change; stopping');
      break;
    }
    result = await options.finalize();
  }
  return { result, attempts };
}
