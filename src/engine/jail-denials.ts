import { statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { appendConfinedSync } from '../store/confined-write.js';
import { journalPaths } from './journal.js';

/**
 * Issue 13: writes the jail refused must be visible where the merge is decided. Each agent's
 * refused tool calls are appended to `denials.jsonl` in its journal directory
 * (`.polywave-state/<slug>/wave<N>/agent-<ID>/`); the refused writes inside the repository also go
 * into the agent's completion report as `out_of_scope_deps`; finalize-wave and agent-status show
 * them, and `finalize-wave --strict-ownership` refuses to merge an agent that has any.
 */
export const denialsFileName = 'denials.jsonl';

/** Codes of refused writes to a file of the repository the agent does not own (work the merge may lack). */
export const ownershipDenialCodes: ReadonlySet<string> = new Set(['JAIL_NOT_OWNED', 'JAIL_FROZEN', 'JAIL_UNOWNED_CHANGE', 'JAIL_READ_ONLY']);

export interface DenialRecord {
  ts: string;
  attempt: number;
  tool: string;
  code: string;
  reason: string;
  target?: string;
  /** An after-run check (`tool: 'sandbox'`) could not undo this change (ToolDenial.stayed). */
  stayed?: true;
  /** `hook`: recorded by `polywave hook pre-tool-use` (the plugin's in-session agents); absent: by run-agent. */
  source?: 'hook';
  /**
   * For a hook record, how the judged worktree was found: `cwd` (the caller works inside it),
   * `env` (`POLYWAVE_AGENT_WORKTREE`) or `target` (the caller's cwd is in no agent worktree and
   * the refused path lies in this one).
   */
  via?: 'cwd' | 'env' | 'target';
}

export async function appendDenials(journalDir: string, records: readonly DenialRecord[]): Promise<void> {
  if (records.length === 0) return;
  // Never through a symlink or out of the repository: the journal may sit in an agent's tree (X3 #21).
  appendConfinedSync(path.join(journalDir, denialsFileName), records.map((record) => `${JSON.stringify(record)}\n`).join(''));
}

/** The agent's recorded denials (torn or foreign lines skipped); [] when none. */
export async function readDenials(journalDir: string): Promise<DenialRecord[]> {
  let text: string;
  try {
    text = await readFile(path.join(journalDir, denialsFileName), 'utf8');
  } catch {
    return [];
  }
  const records: DenialRecord[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const value = JSON.parse(line) as Partial<DenialRecord>;
      if (typeof value.code === 'string' && typeof value.tool === 'string') {
        records.push({
          ts: String(value.ts ?? ''),
          attempt: Number(value.attempt ?? 1),
          tool: value.tool,
          code: value.code,
          reason: String(value.reason ?? ''),
          ...(typeof value.target === 'string' ? { target: value.target } : {}),
          ...(value.source === 'hook' ? { source: 'hook' as const } : {}),
          ...(value.via === 'cwd' || value.via === 'env' || value.via === 'target' ? { via: value.via } : {}),
        });
      }
    } catch {
      // A torn last line after a crash.
    }
  }
  return records;
}

/** Tools that write the file they name (Claude Code's and polywave's own). */
const fileWriteTools: ReadonlySet<string> = new Set(['Write', 'Edit', 'MultiEdit', 'NotebookEdit', 'write_file', 'edit_file']);

/** A repository-relative target (no `..`, not absolute, not empty). */
function isRepositoryTarget(target: string | undefined): target is string {
  if (target === undefined || target === '' || path.isAbsolute(target) || /^[A-Za-z]:[/\\]/.test(target)) return false;
  const normalized = path.posix.normalize(target.split(path.sep).join('/'));
  return normalized !== '.' && normalized !== '..' && !normalized.startsWith('../');
}

/**
 * True for a refused write the merge may lack: an ownership code, or — outside attack X6, N9 — a
 * file tool's `JAIL_OUTSIDE_ROOT` whose recorded target is inside the repository (a relative
 * `../base.ts` from a subdirectory: the jail resolves it against the worktree root and refuses it,
 * but it names another agent's file, and the agent lost that write all the same).
 */
export function isOwnershipDenial(record: Pick<DenialRecord, 'code' | 'tool' | 'target'>): boolean {
  if (ownershipDenialCodes.has(record.code)) return true;
  return record.code === 'JAIL_OUTSIDE_ROOT' && fileWriteTools.has(record.tool) && isRepositoryTarget(record.target);
}

/** Refused writes to repository files (the ones a merge may be missing), one per target. */
export function ownershipDenials(records: readonly DenialRecord[]): DenialRecord[] {
  const seen = new Set<string>();
  const out: DenialRecord[] = [];
  for (const record of records) {
    if (!isOwnershipDenial(record)) continue;
    const target = record.target ?? refusedPathInReason(record.reason);
    const key = target ?? `${record.tool}:${record.reason}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(target !== undefined && record.target === undefined ? { ...record, target } : record);
  }
  return out;
}

/**
 * The file a refusal without a recorded target names in its reason (a Bash denial recorded before
 * the jail passed its target on: `… would write "src/d.ts": "src/d.ts" is not owned …`).
 */
function refusedPathInReason(reason: string): string | undefined {
  const named = /"([^"\n]+)" (?:is not owned by this agent|is frozen|cannot be written: this role is read-only)/.exec(reason)?.[1];
  return isRepositoryTarget(named) ? named : undefined;
}

/** The `out_of_scope_deps` line for a refused write (the wave prompt's "file: …, change: …, reason: …" form). */
export function outOfScopeLine(denial: { target?: string; code: string; reason: string }): string {
  return `file: ${denial.target ?? '(unknown)'}, change: write refused by the jail (${denial.code}), reason: ${denial.reason}`;
}

/** An agent worktree's place in the protocol: `<repoRoot>/.claude/worktrees/polywave/<slug>/wave<N>-agent-<ID>`. */
export interface AgentWorktreeIdentity {
  repoRoot: string;
  slug: string;
  wave: number;
  agent: string;
}

const agentWorktreePattern = /^(\/.*)\/\.claude\/worktrees\/polywave\/([a-z0-9][-a-z0-9]*)\/wave([1-9]\d{0,5})-agent-([A-Z][2-9]?)$/;

/**
 * Whose denial a refusal judged against `realWorktree` (a real path) is: the agent named by the
 * worktree's path (E5 layout), when its ownership record (agent, wave, repository) agrees. Both are
 * out of the agent's reach: prepare-wave creates the path, and the jail refuses writes to the
 * record (not an owned file). Undefined for anything else (no attribution, nothing recorded).
 */
export function agentOfWorktree(realWorktree: string, ownership: { agent?: unknown; wave?: unknown; repo_root?: unknown } | undefined, realpath: (file: string) => string): AgentWorktreeIdentity | undefined {
  const match = agentWorktreePattern.exec(realWorktree.split(path.sep).join('/'));
  if (!match || ownership === undefined) return undefined;
  const identity = { repoRoot: match[1]!, slug: match[2]!, wave: Number(match[3]), agent: match[4]! };
  if (ownership.agent !== identity.agent || Number(ownership.wave) !== identity.wave || typeof ownership.repo_root !== 'string') return undefined;
  try {
    if (realpath(ownership.repo_root) !== identity.repoRoot) return undefined;
  } catch {
    return undefined;
  }
  return identity;
}

/** Past this size a store takes only ownership refusals (an agent flooding its own store cannot crowd them out). */
export const hookDenialsSoftLimit = 1024 * 1024;

/**
 * Appends one refusal of `polywave hook pre-tool-use` to the agent's store — the same
 * `denials.jsonl` run-agent writes, in the main checkout (`.polywave-state/<slug>/wave<N>/agent-<ID>/`,
 * outside every agent worktree). Confined to the repository (no symlink, no hard link, no
 * directory leading out: {@link appendConfinedSync}); throws when it cannot be written (the
 * hook keeps its decision either way).
 */
export function appendHookDenial(identity: AgentWorktreeIdentity, record: DenialRecord): string {
  const file = path.join(journalPaths(identity.repoRoot, identity.slug, identity.wave, identity.agent).dir, denialsFileName);
  if (!isOwnershipDenial(record)) {
    const size = statSync(file, { throwIfNoEntry: false })?.size ?? 0;
    if (size > hookDenialsSoftLimit) return file;
  }
  appendConfinedSync(file, `${JSON.stringify(record)}\n`, identity.repoRoot);
  return file;
}
