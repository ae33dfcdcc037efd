import { PolywaveError } from '../errors/polywave-error.js';
import { agentIdPattern, type ImplManifest } from './schema/impl-schema.js';

/**
 * E5: branch names `polywave/{slug}/wave{N}-agent-{ID}` or the legacy `wave{N}-agent-{ID}`
 * (reference §2.7). Group 1 = slug (absent for legacy names), 2 = wave number, 3 = agent ID.
 */
export const branchNamePattern = /^(?:polywave\/([a-z0-9][-a-z0-9]*)\/)?wave(\d+)-agent-([A-Z][2-9]?)$/;

/** Program (E28B) branch names `polywave/program/{program}/tier{N}-impl-{impl}`. */
export const programBranchNamePattern = /^polywave\/program\/([a-z0-9][-a-z0-9]*)\/tier(\d+)-impl-([a-z0-9][-a-z0-9]*)$/;

const worktreeRoot = '.claude/worktrees/polywave';

function invalid(message: string): PolywaveError {
  return new PolywaveError({ code: 'X001_INVALID_INPUT', message, exitCode: 2 });
}

function checkWave(wave: number, what = 'wave'): void {
  if (!Number.isInteger(wave) || wave < 1) throw invalid(`${what} number must be a positive integer, got ${wave}`);
}

function checkAgentId(agentId: string): void {
  if (!agentIdPattern.test(agentId)) {
    throw invalid(`agent ID ${JSON.stringify(agentId)} does not match protocol pattern ^[A-Z][2-9]?$`);
  }
}

function checkSlug(slug: string, what = 'feature slug'): void {
  if (!/^[a-z0-9][-a-z0-9]*$/.test(slug)) {
    throw invalid(`${what} ${JSON.stringify(slug)} cannot be used in a branch name (lowercase letters, digits and hyphens)`);
  }
}

/**
 * E5: the per-agent name segment `wave{N}-agent-{ID}`, shared by branch and worktree names
 * (the segment a completion report's worktree path must contain). Throws on bad input.
 */
export function agentSegment(wave: number, agentId: string): string {
  checkWave(wave);
  checkAgentId(agentId);
  return `wave${wave}-agent-${agentId}`;
}

/**
 * E5: the agent's branch, `polywave/{slug}/wave{N}-agent-{ID}`. Throws a PolywaveError
 * (`X001_INVALID_INPUT`) for an empty/ill-formed slug, a wave < 1 or an invalid agent ID rather
 * than producing a name that the E5 pattern would reject (Go happily builds `polywave//wave1-…`).
 */
export function branchName(slug: string, wave: number, agentId: string): string {
  checkSlug(slug);
  return `polywave/${slug}/${agentSegment(wave, agentId)}`;
}

/** E5 backward compatibility: the pre-slug branch name `wave{N}-agent-{ID}`. */
export function legacyBranchName(wave: number, agentId: string): string {
  return agentSegment(wave, agentId);
}

function joinPosix(root: string, relative: string): string {
  const trimmed = root.length > 1 ? root.replace(/\/+$/, '') : root;
  if (trimmed === '') return relative;
  return trimmed.endsWith('/') ? `${trimmed}${relative}` : `${trimmed}/${relative}`;
}

/**
 * E5: the agent's worktree, `{repoRoot}/.claude/worktrees/polywave/{slug}/wave{N}-agent-{ID}`
 * (POSIX separators; a trailing `/` on `repoRoot` is ignored; an empty root gives the relative
 * path). Same input checks as {@link branchName}.
 */
export function worktreePath(repoRoot: string, slug: string, wave: number, agentId: string): string {
  checkSlug(slug);
  return joinPosix(repoRoot, `${worktreeRoot}/${slug}/${agentSegment(wave, agentId)}`);
}

/** E28B: a program tier's IMPL branch, `polywave/program/{program}/tier{N}-impl-{impl}`. */
export function programBranchName(programSlug: string, tier: number, implSlug: string): string {
  checkSlug(programSlug, 'program slug');
  checkSlug(implSlug, 'IMPL slug');
  checkWave(tier, 'tier');
  return `polywave/program/${programSlug}/tier${tier}-impl-${implSlug}`;
}

/** E28B: a program tier's IMPL worktree, `{repoRoot}/.claude/worktrees/polywave/program/{program}/tier{N}-impl-{impl}`. */
export function programWorktreePath(repoRoot: string, programSlug: string, tier: number, implSlug: string): string {
  checkSlug(programSlug, 'program slug');
  checkSlug(implSlug, 'IMPL slug');
  checkWave(tier, 'tier');
  return joinPosix(repoRoot, `${worktreeRoot}/program/${programSlug}/tier${tier}-impl-${implSlug}`);
}

/** What {@link parseBranchName} reads out of an agent branch name. */
export interface ParsedBranchName {
  /** The IMPL slug; absent for a legacy `wave{N}-agent-{ID}` name. */
  slug?: string;
  wave: number;
  agentId: string;
}

/**
 * E5: parses an agent branch name (either format); undefined when it is not one. The wave is
 * read as a decimal number (`wave01` → 1), exactly like the Go `ParseBranch`.
 */
export function parseBranchName(name: string): ParsedBranchName | undefined {
  const match = branchNamePattern.exec(name);
  if (match === null) return undefined;
  const parsed: ParsedBranchName = { wave: Number(match[2]), agentId: match[3]! };
  if (match[1] !== undefined) parsed.slug = match[1];
  return parsed;
}

/** E28B: parses a program tier branch name; undefined when it is not one. */
export function parseProgramBranchName(name: string): { programSlug: string; tier: number; implSlug: string } | undefined {
  const match = programBranchNamePattern.exec(name);
  if (match === null) return undefined;
  return { programSlug: match[1]!, tier: Number(match[2]), implSlug: match[3]! };
}

/**
 * The IMPL's slug (reference §2.7 `ExtractIMPLSlug`): the manifest's `feature_slug` when set,
 * else the file name without the `IMPL-` prefix and `.yaml`/`.yml` suffix, else the path itself.
 * Both `/` and `\` separate path segments.
 */
export function implSlugFromPath(path: string, manifest?: Pick<ImplManifest, 'feature_slug'>): string {
  const slug = manifest?.feature_slug?.trim();
  if (slug !== undefined && slug !== '') return slug;
  const segments = path.split(/[\\/]/);
  const base = (segments[segments.length - 1] ?? '').replace(/^IMPL-/, '').replace(/\.ya?ml$/, '');
  return base === '' ? path : base;
}
