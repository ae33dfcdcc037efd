import { existsSync } from 'node:fs';
import path from 'node:path';
import { isBlocking, type Finding } from '../errors/finding.js';
import { PolywaveError } from '../errors/polywave-error.js';
import { canonicalJson, checkFreeze } from '../protocol/freeze.js';
import { implSlugFromPath, worktreePath } from '../protocol/names.js';
import { parseImpl, type ImplParseResult } from '../protocol/parse-impl.js';
import type { ImplManifest } from '../protocol/schema/impl-schema.js';
import { validateImpl } from '../protocol/validate-impl.js';
import { isWaveComplete } from '../protocol/waves.js';
import { applyEdits, type YamlEdit } from '../protocol/yaml/index.js';
import { editImpl, loadImpl } from '../store/manifest-file.js';
import { observeAgent, requireParsedManifest, resolveAgentRepos, type AgentGitOptions } from './reconcile-state.js';

/** The sentinel code of every refused amendment (E36 ErrAmendBlocked; the Go registry's P013). */
export const amendBlockedCode = 'P013_AMEND_BLOCKED';

/** One E36 operation. */
export type AmendOperation =
  /** E36a; `agent` is the new wave's first agent (issue 13: a wave without agents does not validate, V005). */
  | { kind: 'add-wave'; agent?: { id: string; task: string } }
  | { kind: 'redirect-agent'; agentId: string; wave: number; newTask: string }
  | { kind: 'extend-scope' };

/** Options of {@link amendImpl}. */
export interface AmendImplOptions extends AgentGitOptions {
  operation: AmendOperation;
}

/** The amend-impl JSON (the Go keys; `error`/`code` on a refusal, the E36c hint keys for extend-scope). */
export interface AmendImplResult {
  success: boolean;
  operation: AmendOperation['kind'];
  new_wave_number?: number;
  agent_id?: string;
  warnings: string[];
  /** extend-scope only (E36c). */
  manifest_path?: string;
  /** extend-scope only (E36c). */
  message?: string;
  /** Refusals: why, and `P013_AMEND_BLOCKED`. */
  error?: string;
  code?: string;
}

function blocked(message: string): PolywaveError {
  return new PolywaveError({ code: amendBlockedCode, message, exitCode: 1 });
}

/**
 * E36/E15 common preconditions: an IMPL that is complete cannot be amended — `completion_date`
 * set, state COMPLETE (or NOT_SUITABLE, the other terminal state), the completion marker
 * `polywave:complete` (or the legacy `SAW:COMPLETE`) anywhere in the file, or the file already
 * archived under `complete/`. Returns the reason, or undefined when amending is allowed.
 */
export function amendBlockReason(manifest: ImplManifest, text: string, implPath: string): string | undefined {
  const date = (manifest.completion_date ?? '').trim();
  if (date !== '') return `IMPL is complete (completion_date=${date}); cannot amend — start a new IMPL doc to extend completed work (E15)`;
  const state = (manifest.state ?? '').trim();
  if (state === 'COMPLETE' || state === 'NOT_SUITABLE') return `IMPL is in terminal state ${state}; cannot amend`;
  if (text.includes('polywave:complete') || text.includes('SAW:COMPLETE')) return 'IMPL is complete (polywave:complete marker present); cannot amend';
  if (path.basename(path.dirname(implPath)) === 'complete') return `IMPL is archived (${implPath}); cannot amend`;
  return undefined;
}

function findingKey(finding: Finding): string {
  return `${finding.code}\0${finding.field ?? ''}\0${finding.message}`;
}

function blockingFindings(parsed: ImplParseResult): Finding[] {
  const findings = [...parsed.findings];
  if (parsed.manifest) findings.push(...validateImpl({ manifest: parsed.manifest, locate: parsed.locate }));
  return findings.filter(isBlocking);
}

/** Blocking findings of `after` that `before` did not have (as a multiset). */
function introducedFindings(before: readonly Finding[], after: readonly Finding[]): Finding[] {
  const counts = new Map<string, number>();
  for (const finding of before) counts.set(findingKey(finding), (counts.get(findingKey(finding)) ?? 0) + 1);
  const introduced: Finding[] = [];
  for (const finding of after) {
    const key = findingKey(finding);
    const left = counts.get(key) ?? 0;
    if (left > 0) counts.set(key, left - 1);
    else introduced.push(finding);
  }
  return introduced;
}

/**
 * E36 + E2: what an amendment must not change — interface contracts once frozen (the freeze
 * hashes, and no new freeze violation), and the waves whose agents are all complete together with
 * their file_ownership rows. Returns the violations.
 */
export function immutableChanges(before: ImplManifest, after: ImplManifest): string[] {
  const problems: string[] = [];
  const frozenBefore = checkFreeze(before).violations.map((violation) => violation.message);
  for (const violation of checkFreeze(after).violations) {
    if (!frozenBefore.includes(violation.message)) problems.push(`E2: ${violation.message}`);
  }
  if ((before.frozen_contracts_hash ?? '').trim() !== '' && canonicalJson(before.interface_contracts ?? []) !== canonicalJson(after.interface_contracts ?? [])) {
    problems.push('E2: interface contracts are frozen (frozen_contracts_hash) and must not change');
  }
  for (const wave of before.waves ?? []) {
    if ((wave.agents ?? []).length === 0 || !isWaveComplete(before, wave)) continue;
    const same = (after.waves ?? []).find((candidate) => candidate.number === wave.number);
    if (same === undefined || canonicalJson(same) !== canonicalJson(wave)) problems.push(`wave ${wave.number} is complete and immutable`);
    const rows = (manifest: ImplManifest) => canonicalJson((manifest.file_ownership ?? []).filter((row) => row.wave === wave.number));
    if (rows(before) !== rows(after)) problems.push(`file_ownership of completed wave ${wave.number} is frozen`);
  }
  return problems;
}

/**
 * E36a: runs the edits on `text` in memory and checks the result before anything is written —
 * it must parse, introduce no new validation error (E36a "passes validate"; `allowed` names
 * findings the operation is expected to add, e.g. the empty agents list of a new wave skeleton)
 * and change nothing immutable (E2, completed waves). Throws P013 otherwise.
 */
export function checkAmendment(text: string, parsed: ImplParseResult, edits: readonly YamlEdit[], allowed: (finding: Finding) => boolean): { warnings: string[] } {
  const candidateText = applyEdits(text, edits);
  const candidate = parseImpl(candidateText);
  if (candidate.fatal || candidate.manifest === null || parsed.manifest === null) {
    throw blocked('the amended manifest would not be a usable manifest; nothing written');
  }
  const before = blockingFindings(parsed);
  const introduced = introducedFindings(before, blockingFindings(candidate));
  const warnings: string[] = [];
  const unexpected = introduced.filter((finding) => !allowed(finding));
  if (unexpected.length > 0) {
    throw blocked(`validation failed after the amendment (E36a): ${unexpected.map((finding) => `${finding.code}: ${finding.message}`).join('; ')}`);
  }
  for (const finding of introduced) warnings.push(`${finding.code}: ${finding.message} (expected until the Scout adds agents to the new wave)`);
  if (before.length > 0) warnings.push(`the manifest already had ${before.length} validation error(s) before this amendment (run: polywave validate)`);
  const changes = immutableChanges(parsed.manifest, candidate.manifest);
  if (changes.length > 0) throw blocked(`the amendment would change immutable content: ${changes.join('; ')}`);
  return { warnings };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function rawWaves(parsed: ImplParseResult): unknown[] {
  const waves = (parsed.data as { waves?: unknown } | null)?.waves;
  return Array.isArray(waves) ? waves : [];
}

/**
 * E36 amend-impl. Exactly one operation:
 * - add-wave (E36a): appends `{number: max+1, agents: [{id, task}]}` — the first agent is required
 *   (an empty `agents` list fails validate, V005; issue 13);
 * - redirect-agent (E36b): replaces the agent's task and clears a non-complete report; refused
 *   for an agent with a `complete` report or with commits on its branch beyond the wave's
 *   base_commit (HEAD when no base is recorded);
 * - extend-scope (E36c): a hint only, the file is not touched.
 * Every operation first checks the common preconditions ({@link amendBlockReason}); the edit is
 * validated in memory before it is written (E36a) and may not touch frozen contracts (E2) or
 * completed waves. Refusals come back as `{success: false, code: P013_AMEND_BLOCKED, error}`
 * with the file unchanged; bad input and unreadable files throw.
 */
export async function amendImpl(options: AmendImplOptions): Promise<AmendImplResult> {
  const operation = options.operation;
  const failure = (error: unknown): AmendImplResult => {
    if (PolywaveError.isInstance(error) && error.code === amendBlockedCode) {
      return { success: false, operation: operation.kind, warnings: [], error: error.message, code: amendBlockedCode };
    }
    throw error;
  };
  try {
    return await runAmendment(options);
  } catch (error) {
    return failure(error);
  }
}

async function runAmendment(options: AmendImplOptions): Promise<AmendImplResult> {
  const { operation, implPath } = options;
  const { text, parsed } = await loadImpl(implPath);
  const manifest = requireParsedManifest(parsed.manifest, implPath);
  const reason = amendBlockReason(manifest, text, implPath);
  if (reason !== undefined) throw blocked(reason);

  if (operation.kind === 'extend-scope') {
    return { success: true, operation: 'extend-scope', manifest_path: implPath, message: `Re-engage Scout with --impl-context ${implPath}`, warnings: [] };
  }

  const warnings: string[] = [];
  if (operation.kind === 'redirect-agent') {
    if (operation.newTask.trim() === '') throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'the new task is empty (give --new-task or pipe it on stdin)' });
    warnings.push(...(await checkAgentNotCommitted(manifest, options, operation)));
  }

  const outcome = await editImpl<{ new_wave_number?: number; warnings: string[] }>(implPath, (current, currentText) => {
    const currentManifest = requireParsedManifest(current.manifest, implPath);
    const currentReason = amendBlockReason(currentManifest, currentText, implPath);
    if (currentReason !== undefined) throw blocked(currentReason);
    if (operation.kind === 'add-wave') {
      const numbers = (currentManifest.waves ?? []).map((wave) => wave.number ?? 0);
      const newNumber = numbers.length === 0 ? 1 : Math.max(...numbers) + 1;
      const index = rawWaves(current).length;
      const hasWaves = Array.isArray((current.data as { waves?: unknown } | null)?.waves);
      // Issue 13: E36a asks that the saved manifest passes validate, and an empty `agents` list
      // does not (V005) — so the new wave gets its first agent, or nothing is written.
      if (operation.agent === undefined) {
        throw blocked(`E36a: a wave without agents does not pass validate (V005_REQUIRED_FIELDS_MISSING: waves[${index}].agents must be non-empty); nothing written — give the new wave's first agent: --add-wave --agent <ID> --new-task <TEXT> (or the task on stdin); the Scout can add more (--extend-scope)`);
      }
      const skeleton = { number: newNumber, agents: [{ id: operation.agent.id, task: operation.agent.task }] };
      const edits: YamlEdit[] = hasWaves ? [{ path: ['waves', index], value: skeleton }] : [{ path: ['waves'], value: [skeleton] }];
      const checked = checkAmendment(currentText, current, edits, () => false);
      return { edits, outcome: { new_wave_number: newNumber, warnings: checked.warnings } };
    }
    // redirect-agent
    // Indices into the text as written (the edit paths), not into the normalized model.
    const waveIndex = rawWaves(current).findIndex((wave) => isRecord(wave) && wave.number === operation.wave);
    const rawAgents = waveIndex === -1 ? [] : (rawWaves(current)[waveIndex] as { agents?: unknown }).agents;
    const agentIndex = Array.isArray(rawAgents) ? rawAgents.findIndex((agent) => isRecord(agent) && agent.id === operation.agentId) : -1;
    if (agentIndex === -1) throw blocked(notFoundMessage(currentManifest, operation.agentId, operation.wave));
    const report = currentManifest.completion_reports?.[operation.agentId];
    if (report?.status === 'complete') throw blocked(`agent ${operation.agentId} has a complete completion report; cannot redirect a completed agent`);
    const edits: YamlEdit[] = [{ path: ['waves', waveIndex, 'agents', agentIndex, 'task'], value: operation.newTask }];
    const extra: string[] = [];
    const rawReports = (current.data as { completion_reports?: unknown } | null)?.completion_reports;
    if (rawReports && typeof rawReports === 'object' && Object.prototype.hasOwnProperty.call(rawReports, operation.agentId)) {
      edits.push({ path: ['completion_reports', operation.agentId], delete: true });
      extra.push(`cleared the ${report?.status ?? 'incomplete'} completion report of agent ${operation.agentId}`);
    }
    const checked = checkAmendment(currentText, current, edits, () => false);
    return { edits, outcome: { warnings: [...extra, ...checked.warnings] } };
  });

  const result: AmendImplResult = { success: true, operation: operation.kind, warnings: [...warnings, ...outcome.warnings] };
  if (operation.kind === 'add-wave' && outcome.new_wave_number !== undefined) result.new_wave_number = outcome.new_wave_number;
  if (operation.kind === 'add-wave' && operation.agent !== undefined) result.agent_id = operation.agent.id;
  if (operation.kind === 'redirect-agent') result.agent_id = operation.agentId;
  return result;
}

function notFoundMessage(manifest: ImplManifest, agentId: string, waveNumber: number): string {
  const home = (manifest.waves ?? []).find((wave) => (wave.agents ?? []).some((agent) => agent.id === agentId));
  if (home !== undefined) return `agent ${agentId} is in wave ${home.number}, not wave ${waveNumber}`;
  return `agent ${agentId} not found in wave ${waveNumber}`;
}

/**
 * E36b: "valid only if the agent has NOT committed yet" — no commits on its branch (slug-scoped
 * or legacy) beyond the wave's base_commit. Throws P013 when it has; returns warnings.
 */
async function checkAgentNotCommitted(manifest: ImplManifest, options: AmendImplOptions, operation: Extract<AmendOperation, { kind: 'redirect-agent' }>): Promise<string[]> {
  const wave = (manifest.waves ?? []).find((candidate) => candidate.number === operation.wave);
  if (wave === undefined || !(wave.agents ?? []).some((agent) => agent.id === operation.agentId)) throw blocked(notFoundMessage(manifest, operation.agentId, operation.wave));
  if (manifest.completion_reports?.[operation.agentId]?.status === 'complete') {
    throw blocked(`agent ${operation.agentId} has a complete completion report; cannot redirect a completed agent`);
  }
  const warnings: string[] = [];
  let repos;
  try {
    repos = await resolveAgentRepos(manifest, options);
  } catch (error) {
    if (PolywaveError.isInstance(error) && error.code === 'D011_REPO_ROOT_INVALID') {
      return [`no git repository found; the agent's branch could not be checked for commits (${error.message})`];
    }
    throw error;
  }
  const slug = implSlugFromPath(options.implPath, manifest);
  const observation = await observeAgent(manifest, { slug, wave, agentId: operation.agentId, repos });
  if (observation.repo_path === '') {
    warnings.push(`the repository of agent ${operation.agentId} was not found; its branch could not be checked for commits`);
    return warnings;
  }
  if (observation.branch_exists) {
    if ((wave.base_commit ?? '').trim() === '') warnings.push('base_commit not set for this wave; counted the commits on the branch that are not in HEAD');
    if (observation.commit_count > 0) {
      throw blocked(`agent ${operation.agentId} has ${observation.commit_count} commit(s) on branch ${observation.branch} beyond the wave base; cannot redirect a committed agent`);
    }
  }
  try {
    const worktree = worktreePath(observation.repo_path, slug, operation.wave, operation.agentId);
    if (existsSync(worktree)) {
      warnings.push(`worktree ${worktree} exists and is not recreated (E36b); its brief is stale — re-run prepare-wave (or prepare-agent) before relaunching the agent`);
    }
  } catch {
    // a slug that cannot name a worktree: nothing to warn about
  }
  return warnings;
}
