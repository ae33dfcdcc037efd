/**
 * glob and grep: walk the worktree (no symbolic links followed, .git and node_modules skipped).
 */
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { checkGlobPattern, globLiteralBase } from '../jail/jail.js';
import { denialResult, defineTool, errorMessage, errorResult, globToRegExp, looksBinary, okResult, openPinned, plural, sandboxHiddenTest, walkTree } from './shared.js';
import { SearchMatcher, SearchStoppedError } from './search-matcher.js';
import type { AgentTool, ToolContext } from './types.js';

const maxGlobResults = 1000;
const maxGrepMatches = 500;
const maxWalkEntries = 200_000;
const maxGrepFileBytes = 4 * 1024 * 1024;
const maxLineChars = 400;
/**
 * Bounds on the agent's input to the host-side matching (outside attack X21-02: the linear engine costs
 * pattern size × text, and a ~7 KB alternation on a 200 KB line ran 54 s): patterns (grep's and globs) up to
 * this length, lines matched on their first {@link maxMatchedLineChars} characters, and a whole call
 * stopped at {@link maxSearchMs} (or the tool timeout when shorter), the matching itself in a worker
 * that is then terminated (search-matcher.ts).
 */
const maxPatternChars = 1000;
const maxMatchedLineChars = 4096;
const maxSearchMs = 10_000;
/** Files (their characters) sent to the matcher at once, and glob's paths. */
const maxBatchChars = 1024 * 1024;
const maxBatchFiles = 256;
const globBatchEntries = 2000;

function searchDeadline(context: ToolContext): { deadline: number; seconds: number } {
  const milliseconds = Math.min(maxSearchMs, context.toolTimeoutMs);
  return { deadline: Date.now() + milliseconds, seconds: Math.round(milliseconds / 100) / 10 };
}

function tooLong(tool: string, what: string, pattern: string): string | undefined {
  if (pattern.length <= maxPatternChars) return undefined;
  return `${tool}: the ${what} is longer than ${maxPatternChars} characters (${pattern.length}); use a shorter ${what} (search in steps, or narrow the path).`;
}

/** The model's message when the matching ran out of time or the call was aborted; what was found before is kept below it. */
function stoppedResult(tool: string, error: SearchStoppedError, seconds: number, found: string[]): ReturnType<typeof errorResult> {
  const head = error.reason === 'time' ? `${tool} stopped after ${seconds} s: narrow the pattern or the path.` : `${tool} was aborted.`;
  return errorResult(found.length === 0 ? head : [head, `Found before it stopped (incomplete):`, ...found].join('\n'));
}

function toPosix(value: string): string {
  return value.split(path.sep).join('/');
}

/** Display path: relative to the root when inside it, else as the jail gave it. */
function display(context: ToolContext, absolute: string): string {
  const root = context.jail.root;
  if (absolute === root) return '.';
  return absolute.startsWith(`${root}/`) ? toPosix(absolute.slice(root.length + 1)) : absolute;
}

const globInput = z.object({
  pattern: z.string().min(1).describe(`Glob such as "src/**/*.ts" or "*.json" (** spans directories, {a,b} alternatives); at most ${maxPatternChars} characters.`),
  path: z.string().optional().describe('Directory the pattern is relative to (default: the worktree root).'),
});

export const globTool: AgentTool = defineTool<z.infer<typeof globInput>>({
  name: 'glob',
  description: 'Find files by glob pattern in the worktree (skips .git and node_modules). Returns paths relative to the worktree root.',
  inputSchema: globInput,
  async execute(input, context) {
    const long = tooLong('glob', 'pattern', input.pattern);
    if (long) return errorResult(long);
    const { deadline, seconds } = searchDeadline(context);
    const patternDecision = checkGlobPattern(input.pattern);
    if (!patternDecision.allowed) return denialResult('glob', patternDecision, input.pattern);
    let pattern = input.pattern;
    let basePath = input.path ?? '.';
    if (path.isAbsolute(pattern)) {
      // An absolute pattern: its literal directory must be inside the root.
      const literal = globLiteralBase(pattern);
      const decision = await context.jail.checkRead(literal);
      if (!decision.allowed) return denialResult('glob', decision, input.pattern);
      basePath = literal;
      pattern = pattern.slice(literal === '/' ? 1 : literal.length + 1);
      if (pattern === '') return errorResult(`the glob "${input.pattern}" has no pattern part.`);
    }
    const base = await context.jail.checkRead(basePath);
    if (!base.allowed) return denialResult('glob', base, basePath);
    try {
      if (!(await stat(base.absolute)).isDirectory()) return errorResult(`${basePath} is not a directory.`);
    } catch (error) {
      return errorResult(`cannot search ${basePath}: ${errorMessage(error)}`);
    }
    let matcher: SearchMatcher;
    try {
      matcher = new SearchMatcher(globToRegExp(pattern.replace(/^\.\//, '')).source, { deadline, signal: context.signal });
    } catch (error) {
      return errorResult(`invalid glob "${input.pattern}": ${errorMessage(error)}`);
    }
    const matches: string[] = [];
    let more = false;
    // the walk's entries are matched in batches (in the worker when large), in walk order
    let pending: Array<{ relative: string; shown: string }> = [];
    const flush = async (): Promise<boolean> => {
      const batch = pending;
      pending = [];
      if (batch.length === 0) return false;
      const result = await matcher.match(
        batch.map((entry) => entry.relative),
        { lines: false, limit: maxGlobResults - matches.length, maxLineChars: Number.MAX_SAFE_INTEGER },
      );
      for (const [index] of result.hits) matches.push(batch[index]!.shown);
      more = result.more;
      return more;
    };
    const hidden = sandboxHiddenTest(context.sandbox, context.jail.root);
    let walk: Awaited<ReturnType<typeof walkTree>>;
    try {
      walk = await walkTree(base.absolute, { maxEntries: maxWalkEntries, deadline, signal: context.signal, ...(hidden ? { hidden } : {}) }, (entry) => {
        pending.push({ relative: entry.relative, shown: display(context, entry.absolute) + (entry.dirent.isDirectory() ? '/' : '') });
        if (pending.length >= globBatchEntries) return flush();
      });
      if (!more) await flush();
    } catch (error) {
      if (error instanceof SearchStoppedError) return stoppedResult('glob', error, seconds, matches);
      return errorResult(`cannot search ${basePath}: ${errorMessage(error)}`);
    }
    const notes: string[] = [];
    if (more) notes.push(`[glob: stopped after ${maxGlobResults} matches; narrow the pattern]`);
    if (walk.stopped) notes.push(`[glob: the search stopped early (${walk.stopped}); results are incomplete]`);
    if (matches.length === 0) return okResult([`No files match "${input.pattern}".`, ...notes].join('\n'));
    return okResult([...matches, ...notes].join('\n'));
  },
});

const grepInput = z.object({
  pattern: z.string().min(1).describe(`JavaScript regular expression to search for (at most ${maxPatternChars} characters; no backreferences or lookaround). Lines longer than ${maxMatchedLineChars} characters are searched in their first ${maxMatchedLineChars}.`),
  path: z.string().optional().describe('File or directory to search (default: the worktree root).'),
  glob: z.string().optional().describe('Only files matching this glob ("*.ts" matches names; "src/**/*.ts" matches paths).'),
  ignore_case: z.boolean().optional().describe('Case-insensitive search (default false).'),
});

/**
 * The agent's pattern for V8's linear-time engine (the `l` flag, search-matcher.ts): a catastrophically
 * backtracking pattern (`^(a+)+$` on a line of 50 `a`s and a `!`) stopped every timer, agent and lock renewal of
 * the orchestrator for good (outside attack X20-06; glob's compiled pattern the same, X20-14: `*a*a*a*…b` against
 * long names). Patterns the engine cannot run in linear time (backreferences, lookaround) are refused with a
 * message. The engine takes no `i` flag: case is folded in the pattern itself.
 */
function linearSource(pattern: string, ignoreCase: boolean): string {
  return ignoreCase ? caseFolded(pattern) : pattern;
}

const otherCase = (letter: string): string => (letter === letter.toLowerCase() ? letter.toUpperCase() : letter.toLowerCase());
const isLetter = (char: string): boolean => /^[A-Za-z]$/.test(char);

/**
 * `pattern` matching both cases of every ASCII letter without the `i` flag: a letter outside a class becomes `[xX]`,
 * a letter (or a letter range) inside one gets its other case added; escapes (`\w`, `\cJ`, `\p{…}`, `\u{…}`) and
 * group names (`(?<name>`) are kept as they are.
 */
export function caseFolded(pattern: string): string {
  let out = '';
  let inClass = false;
  for (let index = 0; index < pattern.length; index += 1) {
    const char = pattern[index]!;
    if (char === '\\') {
      const next = pattern[index + 1] ?? '';
      if ((next === 'p' || next === 'P' || next === 'u' || next === 'x') && pattern[index + 2] === '{') {
        const end = pattern.indexOf('}', index + 2);
        const stop = end < 0 ? pattern.length - 1 : end;
        out += pattern.slice(index, stop + 1);
        index = stop;
      } else if (next === 'c') {
        out += pattern.slice(index, index + 3);
        index += 2;
      } else {
        out += char + next;
        index += 1;
      }
      continue;
    }
    if (!inClass && char === '(' && pattern.startsWith('(?<', index) && pattern[index + 3] !== '=' && pattern[index + 3] !== '!') {
      const end = pattern.indexOf('>', index);
      const stop = end < 0 ? pattern.length - 1 : end;
      out += pattern.slice(index, stop + 1);
      index = stop;
      continue;
    }
    if (char === '[' && !inClass) {
      inClass = true;
      out += char;
      continue;
    }
    if (char === ']' && inClass) {
      inClass = false;
      out += char;
      continue;
    }
    if (!isLetter(char)) {
      out += char;
      continue;
    }
    if (!inClass) {
      out += `[${char}${otherCase(char)}]`;
      continue;
    }
    // in a class: a range of letters of one case gets the same range in the other; a letter gets its other case
    if (pattern[index + 1] === '-' && isLetter(pattern[index + 2] ?? '') && (char === char.toLowerCase()) === (pattern[index + 2] === pattern[index + 2]!.toLowerCase())) {
      out += `${char}-${pattern[index + 2]}${otherCase(char)}-${otherCase(pattern[index + 2]!)}`;
      index += 2;
      continue;
    }
    out += char + otherCase(char);
  }
  return out;
}

export const grepTool: AgentTool = defineTool<z.infer<typeof grepInput>>({
  name: 'grep',
  description: 'Search file contents with a JavaScript regular expression (skips binaries, .git and node_modules). Prints path:line: text.',
  inputSchema: grepInput,
  async execute(input, context) {
    const long = tooLong('grep', 'pattern', input.pattern) ?? (input.glob === undefined ? undefined : tooLong('grep', 'glob', input.glob));
    if (long) return errorResult(long);
    const { deadline, seconds } = searchDeadline(context);
    let matcher: SearchMatcher;
    try {
      matcher = new SearchMatcher(linearSource(input.pattern, input.ignore_case === true), { deadline, signal: context.signal });
    } catch (error) {
      const message = errorMessage(error);
      if (/linear time/i.test(message)) return errorResult(`grep runs patterns in linear time only: rewrite "${input.pattern}" without backreferences or lookaround (${message})`);
      return errorResult(`invalid regular expression: ${message}`);
    }
    let fileFilter: ((relative: string) => Promise<boolean>) | undefined;
    if (input.glob !== undefined) {
      const globDecision = checkGlobPattern(input.glob);
      if (!globDecision.allowed) return denialResult('grep', globDecision, input.glob);
      let globMatcher: SearchMatcher;
      try {
        globMatcher = new SearchMatcher(globToRegExp(input.glob.replace(/^\.\//, '')).source, { deadline, signal: context.signal });
      } catch (error) {
        return errorResult(`invalid glob "${input.glob}": ${errorMessage(error)}`);
      }
      fileFilter = input.glob.includes('/') ? (relative) => globMatcher.test(relative) : (relative) => globMatcher.test(path.posix.basename(relative));
    }
    const requested = input.path ?? '.';
    const decision = await context.jail.checkRead(requested);
    if (!decision.allowed) return denialResult('grep', decision, requested);
    const lines: string[] = [];
    let truncated = false;
    let skippedLarge = 0;
    let longLines = 0;
    // files read and not yet matched: matched in batches (in the worker when large), in walk order
    let pending: Array<{ shown: string; text: string }> = [];
    let pendingChars = 0;
    const flush = async (): Promise<boolean> => {
      const batch = pending;
      pending = [];
      pendingChars = 0;
      if (batch.length === 0) return truncated;
      const result = await matcher.match(
        batch.map((file) => file.text),
        { lines: true, limit: maxGrepMatches - lines.length, maxLineChars: maxMatchedLineChars },
      );
      const split = new Map<number, string[]>();
      for (const [fileIndex, lineIndex] of result.hits) {
        const file = batch[fileIndex]!;
        if (!split.has(fileIndex)) split.set(fileIndex, file.text.split('\n'));
        const line = split.get(fileIndex)![lineIndex]!;
        const shown = line.length > maxLineChars ? `${line.slice(0, maxLineChars)}…` : line;
        lines.push(`${file.shown}:${lineIndex + 1}: ${shown}`);
      }
      longLines += result.longLines;
      if (result.more) truncated = true;
      return truncated;
    };
    // `expected`: the file's canonical path as the walk reached it; a file reached through a link swapped in meanwhile is not read (X18-15)
    const readText = async (absolute: string, expected: string): Promise<string | undefined> => {
      let handle;
      try {
        handle = await openPinned(absolute, expected);
        if (!handle) return undefined;
        const { size } = await handle.stat();
        if (size > maxGrepFileBytes) {
          skippedLarge += 1;
          return undefined;
        }
        const buffer = Buffer.alloc(size);
        await handle.read(buffer, 0, size, 0);
        if (looksBinary(buffer)) return undefined;
        return buffer.toString('utf8');
      } catch {
        return undefined;
      } finally {
        await handle?.close();
      }
    };
    const searchFile = async (absolute: string, expected: string): Promise<boolean> => {
      const text = await readText(absolute, expected);
      if (text === undefined) return false;
      pending.push({ shown: display(context, absolute), text });
      pendingChars += text.length;
      return pendingChars >= maxBatchChars || pending.length >= maxBatchFiles ? flush() : false;
    };
    try {
      const info = await stat(decision.absolute);
      let stopped: string | undefined;
      // What the agent's sandbox hides inside its root stays hidden from this host-side search too (X19-17).
      const hidden = sandboxHiddenTest(context.sandbox, context.jail.root);
      if (info.isFile()) {
        const real = await realpath(decision.absolute);
        if (!hidden?.(real)) await searchFile(decision.absolute, real);
      } else {
        const walk = await walkTree(decision.absolute, { maxEntries: maxWalkEntries, deadline, signal: context.signal, ...(hidden ? { hidden } : {}) }, async (entry) => {
          if (!entry.dirent.isFile()) return;
          if (fileFilter && !(await fileFilter(entry.relative))) return;
          return searchFile(entry.absolute, entry.real);
        });
        stopped = walk.stopped;
      }
      if (!truncated) await flush();
      const notes: string[] = [];
      if (truncated) notes.push(`[grep: showing the first ${maxGrepMatches} of at least ${maxGrepMatches + 1} matches; narrow the pattern or path]`);
      if (longLines > 0) notes.push(`[grep: ${plural(longLines, 'line')} longer than ${maxMatchedLineChars} characters searched in their first ${maxMatchedLineChars} only]`);
      if (skippedLarge > 0) notes.push(`[grep: skipped ${plural(skippedLarge, 'file')} larger than ${maxGrepFileBytes} bytes]`);
      if (stopped) notes.push(`[grep: the search stopped early (${stopped}); results are incomplete]`);
      if (lines.length === 0) return okResult(['No matches.', ...notes].join('\n'));
      return okResult([...lines, ...notes].join('\n'));
    } catch (error) {
      if (error instanceof SearchStoppedError) return stoppedResult('grep', error, seconds, lines);
      return errorResult(`cannot search ${requested}: ${errorMessage(error)}`);
    }
  },
});
