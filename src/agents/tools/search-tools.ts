/**
 * glob and grep: walk the worktree (no symbolic links followed, .git and node_modules skipped).
 */
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import v8 from 'node:v8';
import { z } from 'zod';
import { checkGlobPattern, globLiteralBase } from '../jail/jail.js';
import { denialResult, defineTool, errorMessage, errorResult, globToRegExp, looksBinary, okResult, openPinned, plural, sandboxHiddenTest, walkTree } from './shared.js';
import type { AgentTool, ToolContext } from './types.js';

const maxGlobResults = 1000;
const maxGrepMatches = 500;
const maxWalkEntries = 200_000;
const maxGrepFileBytes = 4 * 1024 * 1024;
const maxLineChars = 400;

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
  pattern: z.string().min(1).describe('Glob such as "src/**/*.ts" or "*.json" (** spans directories, {a,b} alternatives).'),
  path: z.string().optional().describe('Directory the pattern is relative to (default: the worktree root).'),
});

export const globTool: AgentTool = defineTool<z.infer<typeof globInput>>({
  name: 'glob',
  description: 'Find files by glob pattern in the worktree (skips .git and node_modules). Returns paths relative to the worktree root.',
  inputSchema: globInput,
  async execute(input, context) {
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
    let matcher: RegExp;
    try {
      matcher = linearRegExp(globToRegExp(pattern.replace(/^\.\//, '')).source, '');
    } catch (error) {
      return errorResult(`invalid glob "${input.pattern}": ${errorMessage(error)}`);
    }
    const matches: string[] = [];
    let more = false;
    const hidden = sandboxHiddenTest(context.sandbox, context.jail.root);
    const walk = await walkTree(base.absolute, { maxEntries: maxWalkEntries, deadline: Date.now() + context.toolTimeoutMs, signal: context.signal, ...(hidden ? { hidden } : {}) }, (entry) => {
      if (!matcher.test(entry.relative)) return;
      if (matches.length >= maxGlobResults) {
        more = true;
        return true;
      }
      matches.push(display(context, entry.absolute) + (entry.dirent.isDirectory() ? '/' : ''));
    });
    const notes: string[] = [];
    if (more) notes.push(`[glob: stopped after ${maxGlobResults} matches; narrow the pattern]`);
    if (walk.stopped) notes.push(`[glob: the search stopped early (${walk.stopped}); results are incomplete]`);
    if (matches.length === 0) return okResult([`No files match "${input.pattern}".`, ...notes].join('\n'));
    return okResult([...matches, ...notes].join('\n'));
  },
});

const grepInput = z.object({
  pattern: z.string().min(1).describe('JavaScript regular expression to search for.'),
  path: z.string().optional().describe('File or directory to search (default: the worktree root).'),
  glob: z.string().optional().describe('Only files matching this glob ("*.ts" matches names; "src/**/*.ts" matches paths).'),
  ignore_case: z.boolean().optional().describe('Case-insensitive search (default false).'),
});

let linearEngine = false;

/**
 * The agent's pattern compiled for V8's linear-time engine (the `l` flag): grep runs it in the orchestrator's
 * process, on its main thread, where a catastrophically backtracking pattern (`^(a+)+$` on a line of 50 `a`s and a
 * `!`) stopped every timer, agent and lock renewal for good (outside attack X20-06; glob's compiled pattern the same,
 * X20-14: `*a*a*a*…b` against long names). Patterns the engine cannot run
 * in linear time (backreferences, lookaround) are refused with a message.
 */
function linearRegExp(pattern: string, flags: string): RegExp {
  if (!linearEngine) {
    v8.setFlagsFromString('--enable-experimental-regexp-engine');
    linearEngine = true;
  }
  // The linear engine takes no `i` flag: case is folded in the pattern itself.
  const linear = 'l'; // V8's linear-time engine flag (eslint's RegExp flag list does not know it)
  return new RegExp(flags.includes('i') ? caseFolded(pattern) : pattern, linear);
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
    let regex: RegExp;
    try {
      regex = linearRegExp(input.pattern, input.ignore_case ? 'i' : '');
    } catch (error) {
      const message = errorMessage(error);
      if (/linear time/i.test(message)) return errorResult(`grep runs patterns in linear time only: rewrite "${input.pattern}" without backreferences or lookaround (${message})`);
      return errorResult(`invalid regular expression: ${message}`);
    }
    let fileFilter: ((relative: string) => boolean) | undefined;
    if (input.glob !== undefined) {
      const globDecision = checkGlobPattern(input.glob);
      if (!globDecision.allowed) return denialResult('grep', globDecision, input.glob);
      const matcher = linearRegExp(globToRegExp(input.glob.replace(/^\.\//, '')).source, '');
      fileFilter = input.glob.includes('/') ? (relative) => matcher.test(relative) : (relative) => matcher.test(path.posix.basename(relative));
    }
    const requested = input.path ?? '.';
    const decision = await context.jail.checkRead(requested);
    if (!decision.allowed) return denialResult('grep', decision, requested);
    const lines: string[] = [];
    let matchCount = 0;
    let truncated = false;
    let skippedLarge = 0;
    // `expected`: the file's canonical path as the walk reached it; a file reached through a link swapped in meanwhile is not read (X18-15)
    const searchFile = async (absolute: string, expected: string): Promise<boolean> => {
      let handle;
      try {
        handle = await openPinned(absolute, expected);
        if (!handle) return false;
        const { size } = await handle.stat();
        if (size > maxGrepFileBytes) {
          skippedLarge += 1;
          return false;
        }
        const buffer = Buffer.alloc(size);
        await handle.read(buffer, 0, size, 0);
        if (looksBinary(buffer)) return false;
        const fileLines = buffer.toString('utf8').split('\n');
        for (let index = 0; index < fileLines.length; index += 1) {
          const line = fileLines[index]!;
          if (!regex.test(line)) continue;
          matchCount += 1;
          if (lines.length >= maxGrepMatches) {
            truncated = true;
            return true;
          }
          const shown = line.length > maxLineChars ? `${line.slice(0, maxLineChars)}…` : line;
          lines.push(`${display(context, absolute)}:${index + 1}: ${shown}`);
        }
        return false;
      } catch {
        return false;
      } finally {
        await handle?.close();
      }
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
        const walk = await walkTree(decision.absolute, { maxEntries: maxWalkEntries, deadline: Date.now() + context.toolTimeoutMs, signal: context.signal, ...(hidden ? { hidden } : {}) }, async (entry) => {
          if (!entry.dirent.isFile()) return;
          if (fileFilter && !fileFilter(entry.relative)) return;
          return searchFile(entry.absolute, entry.real);
        });
        stopped = walk.stopped;
      }
      const notes: string[] = [];
      if (truncated) notes.push(`[grep: showing the first ${maxGrepMatches} of at least ${matchCount} matches; narrow the pattern or path]`);
      if (skippedLarge > 0) notes.push(`[grep: skipped ${plural(skippedLarge, 'file')} larger than ${maxGrepFileBytes} bytes]`);
      if (stopped) notes.push(`[grep: the search stopped early (${stopped}); results are incomplete]`);
      if (lines.length === 0) return okResult(['No matches.', ...notes].join('\n'));
      return okResult([...lines, ...notes].join('\n'));
    } catch (error) {
      return errorResult(`cannot search ${requested}: ${errorMessage(error)}`);
    }
  },
});
