import { isBlocking, type Finding } from '../errors/finding.js';
import { scaffoldPath, type Agent, type ImplManifest, type Wave } from './schema/impl-schema.js';

/** The waves of a manifest (never undefined). */
function wavesOf(manifest: ImplManifest): Wave[] {
  return manifest.waves ?? [];
}

/** Looks a wave up by its `number` (not by index); undefined when absent. */
export function findWave(manifest: ImplManifest, waveNumber: number): Wave | undefined {
  return wavesOf(manifest).find((wave) => wave.number === waveNumber);
}

/** The agents of wave `waveNumber` (`[]` when the wave does not exist). */
export function agentsOfWave(manifest: ImplManifest, waveNumber: number): Agent[] {
  return findWave(manifest, waveNumber)?.agents ?? [];
}

/**
 * Finds an agent by ID and the wave that holds it. The first occurrence in document order wins
 * (duplicate IDs are a validation error of their own; Go keeps the last one).
 */
export function findAgent(manifest: ImplManifest, agentId: string): { agent: Agent; wave: Wave } | undefined {
  for (const wave of wavesOf(manifest)) {
    for (const agent of wave.agents ?? []) {
      if (agent.id === agentId) return { agent, wave };
    }
  }
  return undefined;
}

/** True when `agentId` has a completion report with status `complete`. */
export function isAgentComplete(manifest: ImplManifest, agentId: string | undefined): boolean {
  if (agentId === undefined) return false;
  return manifest.completion_reports?.[agentId]?.status === 'complete';
}

function resolveWave(manifest: ImplManifest, wave: number | Wave): Wave | undefined {
  return typeof wave === 'number' ? findWave(manifest, wave) : wave;
}

/**
 * True when every agent of the wave has a `complete` report (reference §4.3). `partial` and
 * `blocked` count as incomplete. A wave without agents is complete; an unknown wave number is not.
 */
export function isWaveComplete(manifest: ImplManifest, wave: number | Wave): boolean {
  const resolved = resolveWave(manifest, wave);
  if (resolved === undefined) return false;
  return (resolved.agents ?? []).every((agent) => isAgentComplete(manifest, agent.id));
}

/** True when the wave has exactly one agent (E5 naming checks and merges treat it specially). */
export function isSoloWave(manifest: ImplManifest, wave: number | Wave): boolean {
  return (resolveWave(manifest, wave)?.agents?.length ?? 0) === 1;
}

/**
 * True when `waveNumber` is the last wave. Decision: "last" means the highest wave number
 * present (Go compares with `len(waves)`, which is the same for a manifest that passes I3 but
 * wrong for one numbered [1, 3]).
 */
export function isFinalWave(manifest: ImplManifest, waveNumber: number): boolean {
  const numbers = wavesOf(manifest).map((wave) => wave.number ?? 0);
  return numbers.length > 0 && waveNumber === Math.max(...numbers);
}

/**
 * The wave to work on now (reference §4.3 `CurrentWave`): the first wave in document order with
 * an agent lacking a `complete` report; undefined when every wave is complete (or there are no
 * waves). A manifest without `completion_reports` is at its first wave.
 */
export function currentWave(manifest: ImplManifest): Wave | undefined {
  return wavesOf(manifest).find((wave) => !isWaveComplete(manifest, wave));
}

/**
 * Issue 13: is wave `waveNumber` already merged and verified? True when every agent of the wave
 * has a `complete` report and either the IMPL records a finished merge (`WAVE_VERIFIED` or
 * `COMPLETE` with `merge_state: completed`) or a later wave has already started (has a
 * `base_commit` or a completion report). A wave whose agents are done but whose merge has not
 * been verified (WAVE_EXECUTING, WAVE_MERGING, BLOCKED) is not finished: preparing it again is
 * E9 re-entry.
 */
export function isWaveFinished(manifest: ImplManifest, waveNumber: number): boolean {
  const wave = findWave(manifest, waveNumber);
  if (wave === undefined || (wave.agents ?? []).length === 0 || !isWaveComplete(manifest, wave)) return false;
  const state = (manifest.state ?? '').trim();
  if ((state === 'WAVE_VERIFIED' || state === 'COMPLETE') && manifest.merge_state === 'completed') return true;
  return wavesOf(manifest).some(
    (later) => (later.number ?? 0) > waveNumber && ((later.base_commit ?? '').trim() !== '' || (later.agents ?? []).some((agent) => agent.id !== undefined && manifest.completion_reports?.[agent.id] !== undefined)),
  );
}

/** The `base_commit` recorded for a wave by worktree creation, if any. */
export function waveBaseCommit(manifest: ImplManifest, waveNumber: number): string | undefined {
  const commit = findWave(manifest, waveNumber)?.base_commit?.trim();
  return commit === undefined || commit === '' ? undefined : commit;
}

/**
 * Canonical repository key: the last path segment, so `/Users/x/code/app`, `app/` and `app`
 * are one repository. Manifests write absolute paths in `repositories`/report `repo` and bare
 * names in ownership rows; comparing raw strings would count one repository twice.
 */
export function repoKey(repo: string | undefined): string {
  const trimmed = (repo ?? '').trim().replace(/[\\/]+$/, '');
  const segments = trimmed.split(/[\\/]/);
  return segments[segments.length - 1] ?? '';
}

/** Distinct repositories named by `repositories` and ownership `repo` tags (by {@link repoKey}). */
export function manifestRepos(manifest: ImplManifest): string[] {
  const repos = new Set<string>();
  for (const repo of manifest.repositories ?? []) if (repoKey(repo) !== '') repos.add(repoKey(repo));
  for (const row of manifest.file_ownership ?? []) if (repoKey(row.repo) !== '') repos.add(repoKey(row.repo));
  return [...repos].sort();
}

/**
 * E37: a critic review is required before wave execution when wave 1 has 3 or more agents or
 * `file_ownership` spans 2 or more repositories (`repositories` ∪ ownership `repo`). Decision:
 * repositories are compared by their last path segment (Go compares raw strings, so
 * `repositories: [/abs/app]` plus `repo: app` counts as two repositories).
 */
export function e37Required(manifest: ImplManifest): boolean {
  return agentsOfWave(manifest, 1).length >= 3 || manifestRepos(manifest).length >= 2;
}

function criticHasErrorIssue(manifest: ImplManifest): boolean {
  const reviews = manifest.critic_report?.agent_reviews ?? {};
  return Object.values(reviews).some((review) => (review.issues ?? []).some((issue) => issue.severity === 'error'));
}

/**
 * E37 critic gate (reference §4.4 `CriticGatePasses`): may the wave proceed on the strength of
 * the critic report? No report → false (callers decide with {@link e37Required} whether one is
 * needed); PASS → true; ISSUES with an error issue → false; ISSUES with warnings only → true in
 * auto mode, false otherwise (surface to the user); any other verdict → false.
 * Decision: SKIPPED (an explicit operator skip) passes, as in `pre-wave-gate`; Go's
 * `CriticGatePasses` blocks it while its `PreWaveGate` passes it.
 */
export function criticGatePasses(manifest: ImplManifest, options: { auto: boolean }): boolean {
  const report = manifest.critic_report;
  if (report === undefined) return false;
  if (report.verdict === 'PASS' || report.verdict === 'SKIPPED') return true;
  if (report.verdict !== 'ISSUES') return false;
  if (criticHasErrorIssue(manifest)) return false;
  return options.auto;
}

/** One pre-wave readiness check, as printed by `pre-wave-gate`. */
export interface PreWaveCheck {
  name: 'validation' | 'critic_review' | 'scaffolds' | 'state';
  status: 'pass' | 'fail' | 'warn';
  message: string;
}

/** Result of {@link preWaveGate}: `ready` is false when any check failed. */
export interface PreWaveGateResult {
  ready: boolean;
  checks: PreWaveCheck[];
}

/** True when a scaffold `status` counts as committed (`committed`, `committed (abc123)`, …). */
export function isScaffoldCommitted(status: string | undefined): boolean {
  return (status ?? '').trim().startsWith('committed');
}

/**
 * Pre-wave readiness (reference §4.4, `pre-wave-gate`), four checks in this order:
 * 1. `validation` — from `validationFindings` (the caller runs validation): blocking findings
 *    fail (messages joined by `; `), warnings/info only warn.
 * 2. `critic_review` — E37: no report while {@link e37Required} fails; PASS or SKIPPED passes;
 *    any other verdict fails.
 * 3. `scaffolds` — I2: every scaffold must be committed before worktrees exist.
 * 4. `state` — the manifest's state must not be COMPLETE, BLOCKED or NOT_SUITABLE.
 */
export function preWaveGate(manifest: ImplManifest, validationFindings: readonly Finding[]): PreWaveGateResult {
  const checks: PreWaveCheck[] = [
    validationCheck(validationFindings),
    criticCheck(manifest),
    scaffoldCheck(manifest),
    stateCheck(manifest),
  ];
  return { ready: checks.every((check) => check.status !== 'fail'), checks };
}

function validationCheck(findings: readonly Finding[]): PreWaveCheck {
  if (findings.length === 0) return { name: 'validation', status: 'pass', message: 'manifest is valid' };
  const errors = findings.filter(isBlocking).map((finding) => finding.message);
  if (errors.length > 0) return { name: 'validation', status: 'fail', message: errors.join('; ') };
  return { name: 'validation', status: 'warn', message: findings.map((finding) => finding.message).join('; ') };
}

function criticCheck(manifest: ImplManifest): PreWaveCheck {
  const report = manifest.critic_report;
  if (report === undefined) {
    if (!e37Required(manifest)) {
      return { name: 'critic_review', status: 'pass', message: 'critic review not required (threshold not met)' };
    }
    return {
      name: 'critic_review',
      status: 'fail',
      message: `E37: critic review required (wave 1 has ${agentsOfWave(manifest, 1).length} agents, ${manifestRepos(manifest).length} repos) but not run. Run critic or use --no-critic to skip.`,
    };
  }
  if (report.verdict === 'PASS') return { name: 'critic_review', status: 'pass', message: 'critic review passed' };
  if (report.verdict === 'SKIPPED') {
    return { name: 'critic_review', status: 'pass', message: 'critic review explicitly skipped by operator' };
  }
  const counted = Object.values(report.agent_reviews ?? {}).reduce((sum, review) => sum + (review.issues?.length ?? 0), 0);
  return { name: 'critic_review', status: 'fail', message: `critic review failed with ${report.issue_count ?? counted} issue(s)` };
}

function scaffoldCheck(manifest: ImplManifest): PreWaveCheck {
  const scaffolds = manifest.scaffolds ?? [];
  if (scaffolds.length === 0) return { name: 'scaffolds', status: 'pass', message: 'no scaffolds required' };
  const uncommitted = scaffolds.filter((scaffold) => !isScaffoldCommitted(scaffold.status)).map(scaffoldPath);
  if (uncommitted.length === 0) return { name: 'scaffolds', status: 'pass', message: 'all scaffolds committed' };
  return { name: 'scaffolds', status: 'fail', message: `uncommitted scaffolds: ${uncommitted.join(', ')}` };
}

function stateCheck(manifest: ImplManifest): PreWaveCheck {
  const state = (manifest.state ?? '').trim();
  if (state === 'COMPLETE' || state === 'BLOCKED' || state === 'NOT_SUITABLE') {
    return { name: 'state', status: 'fail', message: `IMPL state is ${state}, cannot proceed` };
  }
  return { name: 'state', status: 'pass', message: 'state is acceptable for wave execution' };
}
