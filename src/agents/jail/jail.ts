/**
 * The worktree jail (fails closed). `createJail(policy)` resolves the root with realpath and
 * answers, for every path a tool touches, whether it may be read or written:
 *
 * - a path is resolved the way the kernel would (segment by segment, following symbolic links,
 *   also dangling ones — writing through a dangling link would create its target); the result
 *   must lie inside the root (or be one of `readablePaths`, for reads);
 * - `~` and `$VAR` in a path are refused (nothing is expanded);
 * - `.git` (the directory, or a worktree's `.git` file) is off limits for reads and writes;
 * - writes: read-only role → JAIL_READ_ONLY; frozen (I2) → JAIL_FROZEN; owned (I1, exact path)
 *   or under a writable prefix → allowed; otherwise JAIL_NOT_OWNED.
 *
 * Bash commands are checked statically (bash-policy.ts) and audited afterwards with git.
 */
import { lstatSync, readdirSync, readlinkSync, statSync } from 'node:fs';
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { createGit } from '../../git/git-cli.js';
import type { Git } from '../../git/git-port.js';
import { changedGitlinkRepos, gitlinkRepoSignatures, type GitlinkRepoSignatures } from '../../git/nested-repos.js';
import { statusWithBranch } from '../../git/status-with-branch.js';
import { isTempOf } from '../../store/atomic-file.js';
import { checkBashCommand } from './bash-policy.js';
import type { Jail, JailAudit, JailCode, JailDecision, JailPolicy, PathDecision } from './types.js';

export type { Jail, JailAudit, JailCode, JailDecision, JailedPath, JailPolicy, PathDecision } from './types.js';
export { checkBashCommand, type BashPolicyOptions } from './bash-policy.js';

export interface CreateJailOptions {
  /** Environment for the audit's git (default process.env). */
  env?: Record<string, string | undefined>;
  /** Git port factory for the audit (default createGit(dir, {env})). */
  gitAt?: (dir: string) => Git;
}

/** Files prepare-wave writes into a worktree (src/engine/brief.ts) — never the agent's changes. */
export const agentSupportFiles: readonly string[] = Object.freeze(['.polywave-agent-brief.md', '.polywave-ownership.json', '.polywave-worktree-env']);

/** True for the agent support files and anything under `.polywave-state/` (ignored by the audit). */
export function isAgentSupportPath(relative: string): boolean {
  return agentSupportFiles.includes(relative) || relative === '.polywave-state' || relative.startsWith('.polywave-state/');
}

const isolation = 'worktree isolation E4/E43';
const maximumSymlinkHops = 40;

/**
 * Resolves `requested` (absolute, or relative to the absolute `fromDirectory`) the way the
 * kernel would: segment by segment, `..` applied to the real directory reached so far,
 * symbolic links followed (dangling ones too). Segments that do not exist are appended
 * lexically. Throws on a symbolic-link loop.
 */
export function resolvePhysicalPath(fromDirectory: string, requested: string): string {
  const pending = (path.isAbsolute(requested) ? requested : `${fromDirectory}/${requested}`).split('/').reverse();
  let current = '/';
  let hops = 0;
  let missing = false;
  while (pending.length > 0) {
    const segment = pending.pop()!;
    if (segment === '' || segment === '.') continue;
    if (segment === '..') {
      current = path.dirname(current);
      continue;
    }
    const next = path.join(current, segment);
    if (missing) {
      current = next;
      continue;
    }
    let stats: ReturnType<typeof lstatSync>;
    try {
      stats = lstatSync(next);
    } catch {
      missing = true; // the rest does not exist: lexical from here on
      current = next;
      continue;
    }
    if (!stats?.isSymbolicLink()) {
      current = next;
      continue;
    }
    hops += 1;
    if (hops > maximumSymlinkHops) throw new Error(`too many levels of symbolic links at ${next}`);
    const target = readlinkSync(next);
    if (path.isAbsolute(target)) current = '/';
    pending.push(...target.split('/').reverse());
  }
  return current;
}

/** Directory entries for the bash checker's glob expansion (`directory` follows symbolic links). */
export function listDirectory(absoluteDirectory: string): Array<{ name: string; directory: boolean }> | undefined {
  try {
    return readdirSync(absoluteDirectory, { withFileTypes: true }).map((entry) => {
      let directory = entry.isDirectory();
      if (entry.isSymbolicLink()) {
        try {
          directory = statSync(path.join(absoluteDirectory, entry.name)).isDirectory();
        } catch {
          directory = false;
        }
      }
      return { name: entry.name, directory };
    });
  } catch {
    return undefined;
  }
}

function toPosix(value: string): string {
  return value.split(path.sep).join('/');
}

/** Repository-relative policy entry: `./` and one leading `/` dropped, normalized. */
function normalizeEntry(entry: string): string | undefined {
  let value = toPosix(entry.trim()).replace(/\\/g, '/');
  while (value.startsWith('./')) value = value.slice(2);
  if (value.startsWith('/')) value = value.slice(1);
  if (value === '') return undefined;
  const directory = value.endsWith('/');
  const normalized = path.posix.normalize(value).replace(/\/+$/, '');
  if (normalized === '.' || normalized === '..' || normalized.startsWith('../')) return undefined;
  return directory ? `${normalized}/` : normalized;
}

const hasGitComponent = (relative: string) => relative.split('/').some((segment) => segment.toLowerCase() === '.git');

function quoteList(values: readonly string[], limit = 5): string {
  if (values.length === 0) return 'none';
  const shown = values.slice(0, limit).join(', ');
  return values.length > limit ? `${shown} and ${values.length - limit} more` : shown;
}

export async function createJail(policy: JailPolicy, options: CreateJailOptions = {}): Promise<Jail> {
  const root = await realpath(policy.root);
  const owned = new Set(policy.ownedFiles.map(normalizeEntry).filter((entry): entry is string => entry !== undefined && !entry.endsWith('/')));
  const prefixes = (policy.writablePrefixes ?? []).map(normalizeEntry).filter((entry): entry is string => entry !== undefined);
  const frozen = (policy.frozenPaths ?? []).map(normalizeEntry).filter((entry): entry is string => entry !== undefined);
  const readable = await Promise.all(
    (policy.readablePaths ?? []).map(async (entry) => {
      const absolute = path.resolve(entry);
      try {
        return await realpath(absolute);
      } catch {
        return absolute;
      }
    }),
  );
  const env = options.env ?? process.env;
  const gitAt = options.gitAt ?? ((dir: string) => createGit(dir, { env }));
  const frozenPolicy: Readonly<JailPolicy> = Object.freeze({ ...policy });
  // X8 #2c: the `.git` of every submodule path before the agent runs (undefined: not a repository).
  const gitlinkBaseline: GitlinkRepoSignatures | undefined = await gitlinkRepoSignatures(gitAt(root), root).catch(() => undefined);

  const inside = (absolute: string) => absolute === root || absolute.startsWith(`${root}/`);
  const relativeOf = (absolute: string) => (absolute === root ? '' : toPosix(absolute.slice(root.length + 1)));
  const isReadable = (absolute: string) =>
    readable.some((entry) => {
      if (absolute === entry) return true;
      if (!absolute.startsWith(`${entry}/`)) return false;
      try {
        return statSync(entry).isDirectory();
      } catch {
        return false;
      }
    });

  /** The ownership policy for a root-relative file path (no file system access). */
  function writePolicy(relative: string): JailDecision {
    if (policy.readOnly) return { allowed: false, code: 'JAIL_READ_ONLY', reason: `"${relative}" cannot be written: this role is read-only.`, target: relative };
    const frozenEntry = frozen.find((entry) => (entry.endsWith('/') ? relative.startsWith(entry) : relative === entry || relative.startsWith(`${entry}/`)));
    if (frozenEntry !== undefined) {
      return { allowed: false, code: 'JAIL_FROZEN', reason: `"${relative}" is frozen (I2: scaffolds and contract files cannot change once worktrees exist).`, target: relative };
    }
    if (owned.has(relative)) return { allowed: true };
    if (prefixes.some((entry) => (entry.endsWith('/') ? relative.startsWith(entry) && relative.length > entry.length : relative === entry))) return { allowed: true };
    return {
      allowed: false,
      code: 'JAIL_NOT_OWNED',
      reason: `"${relative}" is not owned by this agent, which may write only its own files (I1 ownership; owned: ${quoteList([...owned, ...prefixes])}).`,
      target: relative,
    };
  }

  function deny(code: JailCode, reason: string): PathDecision {
    return { allowed: false, code, reason };
  }

  /** Shared part of checkRead/checkWrite: refuse ~, $VAR, NUL; resolve; classify. */
  function resolveRequested(requested: unknown, verb: 'read' | 'write'): { absolute: string; relative: string; outside: boolean } | PathDecision {
    if (typeof requested !== 'string') return deny('JAIL_OUTSIDE_ROOT', `cannot ${verb} a path that is not a string.`);
    const text = requested.trim() === '' ? '.' : requested;
    if (text.includes('\0')) return deny('JAIL_OUTSIDE_ROOT', `cannot ${verb} "${text.replace(/\0/g, '\\0')}": the path contains a NUL byte.`);
    if (text.startsWith('~')) return deny('JAIL_OUTSIDE_ROOT', `cannot ${verb} "${text}": ~ (the home directory) is outside the worktree (${isolation}).`);
    if (/\$(\{|\(|[A-Za-z_])/.test(text)) {
      return deny('JAIL_OUTSIDE_ROOT', `cannot ${verb} "${text}": paths are not expanded, and a $VARIABLE may point outside the worktree (${isolation}).`);
    }
    const lexical = path.posix.normalize(toPosix(text)).split('/');
    if (lexical.some((segment) => segment.toLowerCase() === '.git')) {
      return deny('JAIL_GIT_INTERNALS', `cannot ${verb} "${text}": it is inside .git, and agents may not touch git internals (${isolation}).`);
    }
    let absolute: string;
    try {
      absolute = resolvePhysicalPath(root, text);
    } catch (error) {
      return deny('JAIL_OUTSIDE_ROOT', `cannot ${verb} "${text}": ${error instanceof Error ? error.message : String(error)}.`);
    }
    if (!inside(absolute)) return { absolute, relative: toPosix(path.relative(root, absolute)), outside: true };
    return { absolute, relative: relativeOf(absolute), outside: false };
  }

  function outsideReason(requested: string, absolute: string, verb: 'read' | 'write'): string {
    const lexicallyInside = !path.isAbsolute(requested) && !path.posix.normalize(toPosix(requested)).startsWith('..');
    const how = lexicallyInside ? ' through a symbolic link' : '';
    return `cannot ${verb} "${requested}": it resolves${how} to ${absolute}, outside the worktree root ${root} (${isolation}).`;
  }

  async function checkRead(requested: string): Promise<PathDecision> {
    const resolved = resolveRequested(requested, 'read');
    if ('allowed' in resolved) return resolved;
    if (resolved.outside) {
      if (isReadable(resolved.absolute)) {
        // A readable root's git internals are as closed as the worktree's own: a symlink (or a path)
        // into `<readable>/.git/…` would read its config, hooks or the quarantine (S11, after X16).
        const entry = readable.find((open) => resolved.absolute === open || resolved.absolute.startsWith(`${open}/`));
        if (entry !== undefined && hasGitComponent(toPosix(path.relative(entry, resolved.absolute)))) {
          return deny('JAIL_GIT_INTERNALS', `cannot read "${requested}": it resolves into ${resolved.absolute}, inside .git, and agents may not touch git internals (${isolation}).`);
        }
        return { allowed: true, absolute: resolved.absolute, relative: resolved.relative };
      }
      return deny('JAIL_OUTSIDE_ROOT', outsideReason(requested, resolved.absolute, 'read'));
    }
    if (hasGitComponent(resolved.relative)) {
      return deny('JAIL_GIT_INTERNALS', `cannot read "${requested}": it resolves into .git, and agents may not touch git internals (${isolation}).`);
    }
    return { allowed: true, absolute: resolved.absolute, relative: resolved.relative };
  }

  async function checkWrite(requested: string): Promise<PathDecision> {
    const resolved = resolveRequested(requested, 'write');
    if ('allowed' in resolved) return resolved;
    if (resolved.outside) {
      const readableNote = isReadable(resolved.absolute) ? ' It may be read, never written.' : '';
      return deny('JAIL_OUTSIDE_ROOT', `${outsideReason(requested, resolved.absolute, 'write')}${readableNote}`);
    }
    const relative = resolved.relative;
    if (hasGitComponent(relative)) {
      return deny('JAIL_GIT_INTERNALS', `cannot write "${requested}": it resolves into .git, and agents may not touch git internals (${isolation}).`);
    }
    if (relative === '') return deny(policy.readOnly ? 'JAIL_READ_ONLY' : 'JAIL_NOT_OWNED', `cannot write "${requested}": it is the worktree root directory, not a file.`);
    const decision = writePolicy(relative);
    if (!decision.allowed) return decision;
    try {
      if (statSync(resolved.absolute).isDirectory()) {
        return deny('JAIL_NOT_OWNED', `cannot write "${requested}": it is a directory; only files can be owned and written.`);
      }
    } catch {
      // does not exist yet: a new file
    }
    return { allowed: true, absolute: resolved.absolute, relative };
  }

  /** For the bash checker: directories are not file writes (the audit checks the files). */
  function bashWritePath(relative: string): JailDecision {
    if (relative === '') return { allowed: true };
    try {
      if (statSync(path.join(root, relative)).isDirectory()) return { allowed: true };
    } catch {
      // a new file
    }
    return writePolicy(relative);
  }

  async function checkBash(command: string): Promise<JailDecision> {
    if (typeof command !== 'string') return { allowed: false, code: 'JAIL_BASH_UNSAFE', reason: 'bash: the command is not a string, so it was refused (fail closed).' };
    return await checkBashCommand(command, {
      root,
      ...(policy.branch !== undefined ? { branch: policy.branch } : {}),
      readOnly: policy.readOnly === true,
      readablePaths: readable,
      resolvePath: resolvePhysicalPath,
      checkWritePath: bashWritePath,
      listDirectory,
    });
  }

  async function checkToolUse(tool: string, input: Record<string, unknown>): Promise<JailDecision> {
    const stringField = (name: string): string | undefined => (typeof input?.[name] === 'string' ? (input[name] as string) : undefined);
    const pathDecision = (decision: PathDecision): JailDecision => (decision.allowed ? { allowed: true } : { allowed: false, code: decision.code, reason: decision.reason, ...(decision.target !== undefined ? { target: decision.target } : {}) });
    const missing = (field: string): JailDecision => ({ allowed: false, code: 'JAIL_OUTSIDE_ROOT', reason: `${tool}: the call has no "${field}", so its target cannot be checked (fail closed).` });
    switch (tool) {
      case 'Write':
      case 'Edit':
      case 'MultiEdit': {
        const target = stringField('file_path');
        return target === undefined ? missing('file_path') : pathDecision(await checkWrite(target));
      }
      case 'NotebookEdit': {
        const target = stringField('notebook_path');
        return target === undefined ? missing('notebook_path') : pathDecision(await checkWrite(target));
      }
      case 'Read': {
        const target = stringField('file_path');
        return target === undefined ? missing('file_path') : pathDecision(await checkRead(target));
      }
      case 'Glob': {
        const pattern = stringField('pattern');
        if (pattern === undefined) return missing('pattern');
        const patternDecision = checkGlobPattern(pattern);
        if (!patternDecision.allowed) return patternDecision;
        if (path.isAbsolute(pattern)) {
          const decision = pathDecision(await checkRead(globLiteralBase(pattern)));
          if (!decision.allowed) return decision;
        }
        const base = stringField('path');
        return base === undefined ? { allowed: true } : pathDecision(await checkRead(base));
      }
      case 'Grep':
      case 'LS': {
        const target = stringField('path');
        if (target === undefined) return tool === 'LS' ? missing('path') : { allowed: true };
        return pathDecision(await checkRead(target));
      }
      case 'Bash': {
        const command = stringField('command');
        return command === undefined ? { allowed: false, code: 'JAIL_BASH_UNSAFE', reason: 'Bash: the call has no command, so it was refused (fail closed).' } : await checkBash(command);
      }
      case 'Task':
      case 'Agent':
        return { allowed: false, code: 'JAIL_BASH_UNSAFE', reason: `${tool}: subagents are disabled for wave agents (their tool calls could not be confined).` };
      case 'WebFetch':
      case 'WebSearch':
      case 'TodoWrite':
        return { allowed: true };
      default: {
        for (const field of ['file_path', 'path', 'notebook_path']) {
          const target = stringField(field);
          if (target === undefined) continue;
          const decision = pathDecision(await checkWrite(target));
          if (!decision.allowed) return decision;
        }
        return { allowed: true };
      }
    }
  }

  async function audit(auditOptions: { baseCommit?: string } = {}): Promise<JailAudit> {
    const violations: JailAudit['violations'] = [];
    let changedFiles: string[] = [];
    let uncommittedFiles: string[] = [];
    let head: string | undefined;
    try {
      const git = gitAt(root);
      const changed = new Set<string>();
      const uncommitted = new Set<string>();
      // The status with HEAD's commit and branch (`status --branch`: one process, not a status and a rev-parse).
      // X8 #2: never enters a submodule (git-cli hardening), so a repository planted there runs nothing here.
      const [headAndStatus, gitlinks] = await Promise.all([statusWithBranch(git), gitlinkBaseline ? gitlinkRepoSignatures(git, root) : Promise.resolve(undefined)]);
      // HEAD still at the base (the bash tool's audit after a command that committed nothing): nothing committed
      // since it, and the base is HEAD's own ancestor — no diff, no merge-base process.
      const unmoved = auditOptions.baseCommit !== undefined && headAndStatus.head === auditOptions.baseCommit;
      const committed = auditOptions.baseCommit && !unmoved ? await git.diffNameOnly(`${auditOptions.baseCommit}..HEAD`) : [];
      const status = headAndStatus.entries;
      // X8 #2c: a git repository made (or changed) in a submodule path names programs the user's own
      // git would run there (core.fsmonitor, filters): never the agent's to create.
      for (const link of gitlinkBaseline && gitlinks ? changedGitlinkRepos(gitlinkBaseline, gitlinks) : []) {
        violations.push({
          code: 'JAIL_GIT_INTERNALS',
          path: `${link}/.git`,
          reason: `"${link}/.git" was created or changed in the submodule path ${link}: a git repository there can name programs git runs outside the sandbox (core.fsmonitor, filters), so agents may not make one (${isolation}).`,
        });
      }
      head = headAndStatus.head;
      // No commit at HEAD (unborn): no branch either, as before (the check below then says so).
      const current = head === undefined ? undefined : headAndStatus.branch;
      for (const file of committed) changed.add(file);
      for (const entry of status) {
        for (const file of entry.from === undefined ? [entry.path] : [entry.path, entry.from]) {
          changed.add(file);
          uncommitted.add(file);
        }
      }
      const orchestratorOwned = new Set(policy.orchestratorPaths ?? []);
      // (and the temp file of the orchestrator's atomic write of one, there for a moment: a sibling Scout's stop listed
      // `docs/PROGRAM/.PROGRAM-x.yaml.<pid>.<hex>.tmp` as its leftover, and it was gone before it could be moved out)
      const keep = (file: string) => !isAgentSupportPath(file) && !orchestratorOwned.has(file) && ![...orchestratorOwned].some((owned) => isTempOf(file, owned));
      changedFiles = [...changed].filter(keep).sort();
      uncommittedFiles = [...uncommitted].filter(keep).sort();
      for (const file of changedFiles) {
        const decision = writePolicy(file.replace(/\/+$/, ''));
        if (decision.allowed) continue;
        const why = decision.code === 'JAIL_FROZEN' ? 'it is frozen (I2)' : decision.code === 'JAIL_READ_ONLY' ? 'this role is read-only' : 'the agent does not own it (I1 ownership)';
        violations.push({ code: 'JAIL_UNOWNED_CHANGE', path: file, reason: `"${file}" changed in the worktree, but ${why}.` });
      }
      if (policy.branch !== undefined) {
        if (current !== policy.branch) {
          violations.push({
            code: 'JAIL_BRANCH_MOVED',
            reason: current === undefined ? `HEAD is detached, not on the agent branch "${policy.branch}" (${isolation}).` : `HEAD is on "${current}", not on the agent branch "${policy.branch}" (${isolation}).`,
          });
        } else if (auditOptions.baseCommit && !unmoved && !(await git.isAncestor(auditOptions.baseCommit, 'HEAD'))) {
          violations.push({ code: 'JAIL_BRANCH_MOVED', reason: `the agent branch "${policy.branch}" no longer contains the base commit ${auditOptions.baseCommit.slice(0, 12)} (${isolation}).` });
        }
      }
    } catch (error) {
      violations.push({
        code: 'JAIL_UNOWNED_CHANGE',
        reason: `the audit could not read the worktree with git (${error instanceof Error ? error.message.split('\n')[0] : String(error)}), so it is treated as a violation (fail closed).`,
      });
    }
    return { ok: violations.length === 0, violations, changedFiles, uncommittedFiles, ...(head ? { head } : {}) };
  }

  return Object.freeze({ policy: frozenPolicy, root, checkRead, checkWrite, checkBash, checkToolUse, audit });
}

/** The directory part of a glob before its first wildcard segment (`/a/b/*.ts` → `/a/b`; `*.ts` → `.`). */
export function globLiteralBase(pattern: string): string {
  const segments = pattern.split('/');
  const firstGlob = segments.findIndex((segment) => /[*?[\]{}]/.test(segment));
  const literal = firstGlob < 0 ? segments.slice(0, -1) : segments.slice(0, firstGlob);
  const base = literal.join('/');
  return base === '' ? (pattern.startsWith('/') ? '/' : '.') : base;
}

/** Glob patterns: no `~`, no `$VAR`, no `..` segment, no `.git` segment. */
export function checkGlobPattern(pattern: string): JailDecision {
  if (pattern.startsWith('~')) return { allowed: false, code: 'JAIL_OUTSIDE_ROOT', reason: `the glob "${pattern}" starts with ~ (the home directory), outside the worktree (${isolation}).` };
  if (/\$(\{|\(|[A-Za-z_])/.test(pattern)) return { allowed: false, code: 'JAIL_OUTSIDE_ROOT', reason: `the glob "${pattern}" contains a $VARIABLE, which is not expanded and may point outside the worktree (${isolation}).` };
  const segments = pattern.split('/');
  if (segments.includes('..')) return { allowed: false, code: 'JAIL_OUTSIDE_ROOT', reason: `the glob "${pattern}" contains "..", which may leave the worktree (${isolation}).` };
  if (segments.some((segment) => segment.toLowerCase() === '.git')) return { allowed: false, code: 'JAIL_GIT_INTERNALS', reason: `the glob "${pattern}" reaches into .git; agents may not touch git internals (${isolation}).` };
  return { allowed: true };
}
