import { existsSync } from 'node:fs';
import { PolywaveError } from '../errors/polywave-error.js';
import { parseImpl } from '../protocol/parse-impl.js';
import type { ImplManifest } from '../protocol/schema/impl-schema.js';
import { updateFileLocked } from '../store/locked-write.js';
import { editImpl } from '../store/manifest-file.js';
import { readTextFile } from '../store/read-text.js';

/**
 * E28A brief refresh (`run-scout --refresh-brief`): the Scout runs again on an existing REVIEWED
 * IMPL to bring the agents' task descriptions up to date with the code, keeping file ownership and
 * the wave structure. The IMPL never regresses to SCOUT_PENDING: its state is put back, and when
 * the Scout changed anything but the tasks (or failed), the original text is restored byte for byte.
 */
export interface RefreshSnapshot {
  text: string;
  manifest: ImplManifest;
  state: string;
}

/** States a brief refresh accepts: reviewed, not yet executed. */
const refreshableStates = new Set(['REVIEWED', 'SCAFFOLD_PENDING', 'WAVE_PENDING']);

/** Reads the IMPL to refresh; refuses (exit 2, nothing changed) a missing, unusable, or non-REVIEWED one. */
export async function refreshSnapshot(implPath: string): Promise<RefreshSnapshot> {
  if (!existsSync(implPath)) throw new PolywaveError({ code: 'N019_SCOUT_INVALID_OPTS', message: `--refresh-brief needs an existing IMPL; ${implPath} does not exist` });
  const text = await readTextFile(implPath);
  const manifest = parseImpl(text).manifest;
  if (!manifest) throw new PolywaveError({ code: 'N019_SCOUT_INVALID_OPTS', message: `${implPath} is not a usable manifest (run: polywave validate); nothing to refresh` });
  const state = (manifest.state ?? '').trim();
  const executed = Object.keys(manifest.completion_reports ?? {}).length > 0 || (manifest.waves ?? []).some((wave) => !!wave.base_commit);
  if (!refreshableStates.has(state) || executed) {
    throw new PolywaveError({ code: 'N019_SCOUT_INVALID_OPTS', message: `--refresh-brief refreshes a reviewed IMPL before its waves run (REVIEWED, SCAFFOLD_PENDING, WAVE_PENDING without reports); ${implPath} is ${state || 'without state'}${executed ? ' and has already run' : ''}` });
  }
  return { text, manifest, state };
}

/** The feature text the Scout gets in refresh mode: the directive, then the original feature. */
export function refreshFeature(feature: string, relativeImpl: string): string {
  return [
    `BRIEF REFRESH (E28A) of the existing, reviewed IMPL ${relativeImpl}. Read it and the code as it is NOW.`,
    'Keep everything in it exactly as it is — file_ownership, the waves (numbers, types, agent IDs, files, dependencies), interface_contracts, scaffolds, quality_gates, state — and rewrite ONLY the `task` text of agents whose task no longer matches the code (names, signatures, file layout, line numbers that changed).',
    'Edit the file in place; do not create another IMPL and do not change its state.',
    '',
    `Feature: ${feature}`,
  ].join('\n');
}

/** The plan a brief refresh must keep: ownership and waves without the task texts, contracts, scaffolds. */
function shape(manifest: ImplManifest): Record<string, string> {
  return {
    file_ownership: JSON.stringify(manifest.file_ownership ?? []),
    waves: JSON.stringify((manifest.waves ?? []).map((wave) => ({ ...wave, agents: (wave.agents ?? []).map(({ task: _task, ...rest }) => rest) }))),
    interface_contracts: JSON.stringify(manifest.interface_contracts ?? []),
    scaffolds: JSON.stringify(manifest.scaffolds ?? []),
  };
}

/** What the refresh changed besides the tasks (empty when only tasks changed). */
export function planChanges(before: ImplManifest, after: ImplManifest): string[] {
  const a = shape(before);
  const b = shape(after);
  return Object.keys(a).filter((key) => a[key] !== b[key]);
}

/** Agents whose task text changed. */
export function refreshedAgents(before: ImplManifest, after: ImplManifest): string[] {
  const old = new Map((before.waves ?? []).flatMap((wave) => (wave.agents ?? []).map((agent) => [agent.id ?? '', agent.task ?? ''] as const)));
  return (after.waves ?? []).flatMap((wave) => (wave.agents ?? []).filter((agent) => old.get(agent.id ?? '') !== (agent.task ?? '')).map((agent) => agent.id ?? ''));
}

/** Puts the original text back (the refresh is refused or failed). */
export async function restoreSnapshot(implPath: string, snapshot: RefreshSnapshot): Promise<void> {
  await updateFileLocked(implPath, () => snapshot.text);
}

/** Puts the original state back when the Scout touched it (the IMPL does not regress). */
export async function keepState(implPath: string, snapshot: RefreshSnapshot): Promise<void> {
  await editImpl(implPath, (parsed) => ({ edits: parsed.manifest?.state === snapshot.state ? [] : [{ path: ['state'], value: snapshot.state }], outcome: undefined }));
}

/** What `run-scout --refresh-brief` adds to the run-scout result. */
export interface BriefRefreshRecord {
  /** Agents whose task text changed. */
  agents_refreshed: string[];
  /** Parts of the plan the Scout changed (the refresh is then refused and the IMPL restored). */
  plan_changes: string[];
  restored: boolean;
}

/**
 * The end of a brief refresh, after the Scout's attempts: a failed run or a changed plan → the
 * original text back (`E28A_REFRESH_FAILED` / `E28A_REFRESH_CHANGED_PLAN`); otherwise the original
 * state kept and one commit of the refreshed tasks.
 */
export async function finishRefresh(input: {
  implPath: string;
  slug: string;
  snapshot: RefreshSnapshot;
  /** The last Scout attempt produced a valid manifest. */
  valid: boolean;
  failure?: { code: string; message: string };
  record: (step: string, status: 'success' | 'failed' | 'skipped' | 'warning', detail: string) => void;
  commit: (message: string) => Promise<string | undefined>;
}): Promise<{ state: string; committed: boolean; commit_sha?: string; error?: { code: string; message: string }; brief_refresh: BriefRefreshRecord; success: boolean }> {
  const { snapshot } = input;
  const after = input.valid ? parseImpl(await readTextFile(input.implPath)).manifest : null;
  if (!after) {
    await restoreSnapshot(input.implPath, snapshot);
    input.record('refresh', 'failed', 'the Scout produced no valid manifest: the original IMPL is restored');
    const error = { code: 'E28A_REFRESH_FAILED', message: `brief refresh failed (${input.failure?.message ?? 'the manifest is still invalid after the last attempt'}); the IMPL is unchanged (${snapshot.state})` };
    return { state: snapshot.state, committed: false, error, brief_refresh: { agents_refreshed: [], plan_changes: [], restored: true }, success: false };
  }
  const changes = planChanges(snapshot.manifest, after);
  if (changes.length > 0) {
    await restoreSnapshot(input.implPath, snapshot);
    input.record('refresh', 'failed', `the Scout changed ${changes.join(', ')}: refused, the original IMPL is restored`);
    const error = { code: 'E28A_REFRESH_CHANGED_PLAN', message: `brief refresh must keep file ownership and the wave structure, but the Scout changed ${changes.join(', ')}; the IMPL is restored unchanged (${snapshot.state}) — re-plan with amend-impl or a new Scout run instead` };
    return { state: snapshot.state, committed: false, error, brief_refresh: { agents_refreshed: refreshedAgents(snapshot.manifest, after), plan_changes: changes, restored: true }, success: false };
  }
  await keepState(input.implPath, snapshot);
  const refreshed = refreshedAgents(snapshot.manifest, after);
  input.record('refresh', 'success', refreshed.length > 0 ? `tasks refreshed: ${refreshed.join(', ')}; ownership and waves unchanged; state ${snapshot.state}` : 'no task needed a change');
  const sha = await input.commit(`chore: refresh agent briefs for ${input.slug} (E28A) [Polywave:scout:${input.slug}]`);
  return { state: snapshot.state, committed: sha !== undefined, ...(sha ? { commit_sha: sha } : {}), brief_refresh: { agents_refreshed: refreshed, plan_changes: [], restored: false }, success: true };
}
