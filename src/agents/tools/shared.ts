/**
 * Helpers shared by the agent tools: results, denials, directory walking, glob matching.
 */
import { constants, realpathSync, type Dirent } from 'node:fs';
import { open, readdir, readlink, realpath, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { JailCode } from '../jail/types.js';
import type { AgentTool, AgentToolName, ToolResult } from './types.js';

export function okResult(output: string): ToolResult {
  return { output, isError: false };
}

export function errorResult(output: string): ToolResult {
  return { output, isError: true };
}

/** A jail refusal as a tool result (the text goes back to the model; the denial to the outcome). */
export function denialResult(tool: AgentToolName, decision: { code: JailCode | string; reason: string }, target?: string): ToolResult {
  return {
    output: `Denied (${decision.code}): ${decision.reason}`,
    isError: true,
    denial: { tool, code: decision.code, reason: decision.reason, ...(target !== undefined ? { target } : {}) },
  };
}

export function errorMessage(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code && !error.message.includes(code) ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}

/** Declares a tool with its precise input type and returns it as a plain AgentTool. */
export function defineTool<Input>(tool: AgentTool<Input>): AgentTool {
  return tool as unknown as AgentTool;
}

/** Directories the walking tools never enter. */
export const skippedDirectories: ReadonlySet<string> = new Set(['.git', 'node_modules']);

export interface WalkLimits {
  /** Stop after visiting this many entries. */
  maxEntries: number;
  /** Stop at this time (ms since epoch). */
  deadline: number;
  signal?: AbortSignal;
  /** Entries (by canonical path) the walk neither reports nor enters: what the agent's sandbox hides ({@link sandboxHiddenTest}). */
  hidden?: (real: string) => boolean;
}

const within = (child: string, parent: string): boolean => child === parent || child.startsWith(parent.endsWith(path.sep) ? parent : `${parent}${path.sep}`);

/**
 * What the agent's OS sandbox hides inside `root`, as a test on canonical paths, for the tools that read the
 * tree in the orchestrator's process (grep, glob): a path under an `unreadable` entry of the plan that no more
 * specific `readable`/`writable` entry reopens (outside attack X19-17: inside the root, the files credential
 * variables name — hidden from bash and read_file — were returned by grep). Undefined without a sandbox or
 * without such entries.
 */
export function sandboxHiddenTest(plan: { unreadable: readonly string[]; readable?: readonly string[]; writable: readonly string[] } | undefined, root: string): ((real: string) => boolean) | undefined {
  if (!plan) return undefined;
  const base = path.resolve(root);
  const canonical = (entry: string): string => {
    try {
      return realpathSync(entry);
    } catch {
      return path.resolve(entry);
    }
  };
  const denied = plan.unreadable.map((entry) => path.resolve(entry)).filter((entry) => within(entry, base) && entry !== base).map(canonical);
  if (denied.length === 0) return undefined;
  const open = [...(plan.readable ?? []), ...plan.writable].map((entry) => path.resolve(entry));
  return (real) => denied.some((hidden) => within(real, hidden) && !open.some((reopened) => reopened !== hidden && within(reopened, hidden) && within(real, reopened)));
}

export interface WalkEntry {
  absolute: string;
  /** The entry's canonical path as the walk reached it (the base's real path + `relative`): what {@link openPinned} checks. */
  real: string;
  /** Relative to the walk's base, POSIX separators. */
  relative: string;
  dirent: Dirent;
}

/** Linux gives the path of an open descriptor: the pinned reads below check what was opened, not a path. */
const pinnable = process.platform === 'linux';

/**
 * Opens `absolute` (a file; with `directory`, a directory) for reading only when what was opened IS
 * `expected` (its canonical path): the last component is not followed (O_NOFOLLOW) and the opened
 * descriptor's own path (`/proc/self/fd/N`) must equal `expected`, so a directory on the way swapped
 * for a symbolic link after it was listed leads nowhere (issue 11, outside attack X18-15: grep run
 * beside a bash call that swapped a directory for a link to ~/.ssh read the private key). Undefined
 * when it is not, or when it is not a regular file (a directory with `directory`). Elsewhere than Linux: a
 * plain O_NOFOLLOW open.
 */
export async function openPinned(absolute: string, expected: string, directory = false): Promise<FileHandle | undefined> {
  let handle: FileHandle | undefined;
  try {
    // O_NONBLOCK: a FIFO swapped in for a listed file opens at once instead of blocking a libuv thread until a
    // writer comes (outside attack X19-07: four such opens stopped every fs call of the orchestrator for good);
    // anything but a regular file (a directory with `directory`) is then refused. No effect on a regular file's reads.
    handle = await open(absolute, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | (directory ? constants.O_DIRECTORY : 0));
    const stats = await handle.stat();
    if ((directory ? !stats.isDirectory() : !stats.isFile()) || (pinnable && (await readlink(`/proc/self/fd/${handle.fd}`)) !== expected)) {
      await handle.close();
      return undefined;
    }
    return handle;
  } catch {
    await handle?.close().catch(() => undefined);
    return undefined;
  }
}

/** The entries of directory `absolute` when it is still `expected` once opened ({@link openPinned}), read through its descriptor. */
async function readDirectoryPinned(absolute: string, expected: string): Promise<Dirent[] | undefined> {
  if (!pinnable) return readdir(absolute, { withFileTypes: true }).catch(() => undefined);
  const handle = await openPinned(absolute, expected, true);
  if (!handle) return undefined;
  try {
    return await readdir(`/proc/self/fd/${handle.fd}`, { withFileTypes: true });
  } catch {
    return undefined;
  } finally {
    await handle.close();
  }
}

/**
 * Walks a directory tree depth-first in name order, never following symbolic links and skipping
 * `.git` and `node_modules`. `stopped` says why it ended early (limit, time, abort). Each directory is
 * read through a descriptor checked to be the directory listed ({@link openPinned}): a directory
 * swapped for a link meanwhile is skipped, never followed.
 */
export async function walkTree(base: string, limits: WalkLimits, visit: (entry: WalkEntry) => boolean | void | Promise<boolean | void>): Promise<{ visited: number; stopped?: 'entries' | 'time' | 'aborted' }> {
  let visited = 0;
  let realBase: string;
  try {
    realBase = await realpath(base);
  } catch {
    return { visited };
  }
  const stack: string[] = [''];
  while (stack.length > 0) {
    const relativeDirectory = stack.pop()!;
    if (limits.signal?.aborted) return { visited, stopped: 'aborted' };
    if (Date.now() > limits.deadline) return { visited, stopped: 'time' };
    const entries = await readDirectoryPinned(path.join(base, relativeDirectory), path.join(realBase, relativeDirectory));
    if (!entries) continue;
    entries.sort((left, right) => (left.name < right.name ? -1 : left.name > right.name ? 1 : 0));
    const subdirectories: string[] = [];
    for (const dirent of entries) {
      if (dirent.isDirectory() && skippedDirectories.has(dirent.name)) continue;
      if (dirent.name === '.git') continue;
      visited += 1;
      if (visited > limits.maxEntries) return { visited, stopped: 'entries' };
      const relative = relativeDirectory === '' ? dirent.name : `${relativeDirectory}/${dirent.name}`;
      if (limits.hidden?.(path.join(realBase, relative))) continue;
      const stop = await visit({ absolute: path.join(base, relative), real: path.join(realBase, relative), relative, dirent });
      if (stop === true) return { visited };
      if (dirent.isDirectory()) subdirectories.push(relative);
    }
    // reverse so that the stack pops them in name order
    for (let index = subdirectories.length - 1; index >= 0; index -= 1) stack.push(subdirectories[index]!);
  }
  return { visited };
}

/**
 * Compiles a glob to a RegExp over POSIX relative paths: `**` (a whole segment) matches any
 * number of segments, `*` and `?` stay inside one segment, `[abc]`/`[!abc]` classes and
 * `{a,b}` alternatives. Dotfiles are matched like any other name.
 */
export function globToRegExp(pattern: string): RegExp {
  return new RegExp(`^${globSource(pattern, 0, pattern.length, indexGlob(pattern))}$`);
}

interface GlobIndex {
  /** For each `{`, the index of its matching `}`; -1 when unmatched. */
  closing: Int32Array;
  /** For each index, the first `]` at or after it; -1 when none. */
  nextBracket: Int32Array;
}

/**
 * Where each brace group and class ends, in one pass each: the scans were O(n²) in unmatched `{` or `[`
 * (each scanned to the end) and nested groups were rescanned at every level (outside attack X21-02:
 * 80,000 `{` held the orchestrator's main thread 8 s).
 */
function indexGlob(pattern: string): GlobIndex {
  const closing = new Int32Array(pattern.length).fill(-1);
  const open: number[] = [];
  for (let index = 0; index < pattern.length; index += 1) {
    if (pattern[index] === '{') open.push(index);
    else if (pattern[index] === '}' && open.length > 0) closing[open.pop()!] = index;
  }
  const nextBracket = new Int32Array(pattern.length + 2).fill(-1);
  for (let index = pattern.length - 1; index >= 0; index -= 1) nextBracket[index] = pattern[index] === ']' ? index : nextBracket[index + 1]!;
  return { closing, nextBracket };
}

/** The regex source of `pattern[from, to)` (a matched group's braces are all matched inside it, so one index serves every level). */
function globSource(pattern: string, from: number, to: number, glob: GlobIndex): string {
  const { closing } = glob;
  let source = '';
  let index = from;
  while (index < to) {
    const c = pattern[index]!;
    if (c === '*') {
      if (index + 1 < to && pattern[index + 1] === '*') {
        const atStart = index === from || pattern[index - 1] === '/';
        const next = index + 2 < to ? pattern[index + 2] : undefined;
        if (atStart && next === '/') {
          source += '(?:[^/]*/)*';
          index += 3;
          continue;
        }
        if (atStart && next === undefined) {
          source += '.*';
          index += 2;
          continue;
        }
      }
      source += '[^/]*';
      index += 1;
      continue;
    }
    if (c === '?') {
      source += '[^/]';
      index += 1;
      continue;
    }
    if (c === '[') {
      const end = index + 2 < pattern.length ? glob.nextBracket[index + 2]! : -1;
      if (end > 0 && end < to) {
        let body = pattern.slice(index + 1, end);
        if (body.startsWith('!')) body = `^${body.slice(1)}`;
        source += `[${body.replace(/\\/g, '\\\\')}]`;
        index = end + 1;
        continue;
      }
    }
    if (c === '{') {
      const end = closing[index]!;
      if (end > 0 && end < to) {
        // alternatives: split at the group's own commas, jumping over nested groups
        const alternatives: string[] = [];
        let start = index + 1;
        for (let scan = index + 1; scan < end; scan += 1) {
          if (pattern[scan] === '{' && closing[scan]! > 0) scan = closing[scan]!;
          else if (pattern[scan] === ',') {
            alternatives.push(globSource(pattern, start, scan, glob));
            start = scan + 1;
          }
        }
        alternatives.push(globSource(pattern, start, end, glob));
        source += `(?:${alternatives.join('|')})`;
        index = end + 1;
        continue;
      }
    }
    source += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    index += 1;
  }
  return source;
}

/** A NUL byte in the first 8 KiB means binary. */
export function looksBinary(buffer: Uint8Array): boolean {
  const end = Math.min(buffer.length, 8192);
  for (let index = 0; index < end; index += 1) if (buffer[index] === 0) return true;
  return false;
}

/** `s` when count != 1. */
export function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? '' : 's'}`;
}
