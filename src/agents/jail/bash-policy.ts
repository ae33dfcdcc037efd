/**
 * The static bash check of the worktree jail: a fast usability filter that refuses, before
 * anything runs and with a clear reason, what an agent must not do from its worktree. It is not
 * the boundary — the OS sandbox is; programs a command starts (npm scripts, a script file, a
 * compiled binary) are not inspected, and the jail's post-command audit backstops the worktree.
 *
 * `checkBashCommand` parses the command with a real bash parser (tree-sitter-bash, see
 * bash-parser.ts; a tree with a syntax error is refused) and walks the syntax tree: every
 * statement in every nesting (lists, pipelines, subshells, `{ …; }`, if/while/for/case bodies,
 * function bodies, `$(…)`, backticks, `<(…)`, here-documents, arithmetic) and the command strings
 * of `bash -c '…'`, `eval '…'`, `watch '…'`, re-parsed. Only literal words are evaluated:
 *
 * - the effective directory is tracked through `cd`/`pushd`/`popd` as a SET of possible
 *   directories (a `cd` may fail), with `&&`/`||` semantics; any possible directory outside the
 *   root is an escape; `cd` inside a loop or a function body is refused (not trackable);
 * - every argument is treated as a path unless the command is known to take data there (grep
 *   patterns, sed scripts, commit messages): absolute paths outside the root, `..` that leaves
 *   it, `~`, `$HOME`-like variables and variables/substitutions inside paths are refused;
 *   symbolic links are followed through the optional `resolvePath` hook;
 * - writes (redirections, `tee`, `touch`, `rm`, `mv`, `cp`, `ln`, `sed -i`, `git add/rm/…`) are
 *   checked against the ownership policy through the optional `checkWritePath` hook;
 * - dangerous commands (sudo, exec, source, …), git commands that leave the agent's branch or
 *   repository, and git configuration that runs programs (`-c core.hooksPath=…`) are refused;
 * - what cannot be decided statically (a computed command name, a path built from a
 *   substitution, a `cd` in a loop) is refused as JAIL_BASH_UNSAFE (fail closed).
 */
import path from 'node:path';
import { diagnoseWithMvdanSh, findSyntaxError, loadBashParser, type BashNode, type BashParser } from './bash-parser.js';
import type { JailCode, JailDecision } from './types.js';

const posix = path.posix;

export interface BashPolicyOptions {
  /** Absolute real path of the jail root. */
  root: string;
  /** The agent branch (git commit is allowed; the audit verifies the branch afterwards). */
  branch?: string;
  /** Read-only role: every write (redirection, write command, git add/commit…) is refused. */
  readOnly?: boolean;
  /** Absolute real paths outside the root that read-only commands (cat, grep…) may read. */
  readablePaths?: readonly string[];
  /**
   * Resolves `requested` (relative to the absolute directory `fromDirectory`, or absolute) the
   * way the kernel would, following symbolic links. Without it only lexical checks are made.
   */
  resolvePath?: (fromDirectory: string, requested: string) => string;
  /** The write policy for a root-relative path (ownership, frozen paths, read-only). */
  checkWritePath?: (relative: string) => JailDecision;
  /**
   * Lists an absolute directory (names), or undefined when it cannot be read. With it, glob
   * patterns are expanded like bash would and every match is checked (symbolic links, ownership);
   * without it a write to a glob pattern is refused.
   */
  listDirectory?: (absoluteDirectory: string) => Array<{ name: string; directory: boolean }> | undefined;
}

const isolation = 'worktree isolation E4/E43';

class Denied extends Error {
  constructor(
    readonly code: JailCode,
    readonly reason: string,
    /** The root-relative path the command would have written, when the refusal is about one (outside attack X6, N9: the denial record names the file). */
    readonly target?: string,
  ) {
    super(reason);
  }
}

/** The command cannot be checked (too large, too deep, not trackable): refused as JAIL_BASH_UNSAFE. */
class ParseFailure extends Error {}

/** The parser found a syntax error in `source` (the command, or a nested command string). */
class SyntaxFailure extends Error {
  constructor(
    readonly source: string,
    /** "the command", or `the command string of "bash -c …"` */
    readonly subject: string,
    readonly location: { line: number; column: number; near: string; missing: boolean },
  ) {
    super(`syntax error in ${subject}`);
  }
}

const escape = (message: string) => new Denied('JAIL_BASH_ESCAPE', `bash: ${message} (${isolation}).`);
const unsafe = (message: string) => new Denied('JAIL_BASH_UNSAFE', `bash: ${message}, so the command was refused (fail closed).`);
const gitInternals = (message: string) => new Denied('JAIL_GIT_INTERNALS', `bash: ${message}; agents may not touch git internals (${isolation}).`);
const forbiddenGit = (command: string, why: string) =>
  new Denied('JAIL_BASH_FORBIDDEN_GIT', `bash: "${command}" is forbidden for agents: ${why} (${isolation}).`);

const maximumNesting = 16;

// ---------------------------------------------------------------------------------------------
// Words: what a word of the syntax tree evaluates to, as far as it is literal
// ---------------------------------------------------------------------------------------------

type Part =
  | { kind: 'lit'; text: string; quoted: boolean }
  /** `$x`, `${…}`: `substitutions` are the `$(…)`/`<(…)` inside a `${…}` (checked as subshells). */
  | { kind: 'param'; name: string; raw: string; substitutions: BashNode[] }
  | { kind: 'cmdsub'; node: BashNode }
  | { kind: 'arith'; raw: string; node: BashNode }
  | { kind: 'procsub'; node: BashNode };

interface Word {
  parts: Part[];
  /** Source text (for messages). */
  text: string;
}

/** The word's value when it has no expansions. */
function literalOf(word: Word): string | undefined {
  let text = '';
  for (const part of word.parts) {
    if (part.kind !== 'lit') return undefined;
    text += part.text;
  }
  return text;
}

const expansionTypes = new Set(['simple_expansion', 'expansion', 'command_substitution', 'process_substitution', 'arithmetic_expansion']);
const substitutionTypes = new Set(['command_substitution', 'process_substitution']);
/** Leaves whose text is taken as an unquoted literal (patterns, operators, names, `{1..3}`). */
const literalLeafTypes = new Set(['extglob_pattern', 'regex', 'test_operator', 'variable_name', 'special_variable_name', 'file_descriptor', 'brace_expression', 'number']);

function addLiteral(parts: Part[], text: string, quoted: boolean): void {
  if (text === '') return;
  const last = parts[parts.length - 1];
  if (last?.kind === 'lit' && last.quoted === quoted) last.text += text;
  else parts.push({ kind: 'lit', text, quoted });
}

/** Unquoted text: a backslash quotes the next character, backslash-newline disappears. */
function addUnquoted(parts: Part[], text: string): void {
  for (let index = 0; index < text.length; index += 1) {
    const c = text[index]!;
    if (c !== '\\') {
      addLiteral(parts, c, false);
      continue;
    }
    const next = text[index + 1];
    index += 1;
    if (next === undefined) addLiteral(parts, '\\', false);
    else if (next !== '\n') addLiteral(parts, next, true);
  }
}

/** Inside double quotes (and unquoted here-documents) a backslash only escapes $ ` " \ and newline. */
function addDoubleQuoted(parts: Part[], text: string): void {
  let out = '';
  for (let index = 0; index < text.length; index += 1) {
    const c = text[index]!;
    const next = text[index + 1];
    if (c === '\\' && next !== undefined && '$`"\\\n'.includes(next)) {
      if (next !== '\n') out += next;
      index += 1;
    } else out += c;
  }
  addLiteral(parts, out, true);
}

/** The value of a `$'…'` string (its text between the quotes) with its escapes decoded. */
function decodeAnsiC(text: string): string {
  const simple: Record<string, string> = { a: '\x07', b: '\b', e: '\x1b', E: '\x1b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v', '\\': '\\', "'": "'", '"': '"', '?': '?' };
  let out = '';
  for (let index = 0; index < text.length; ) {
    const c = text[index]!;
    if (c !== '\\') {
      out += c;
      index += 1;
      continue;
    }
    const next = text[index + 1] ?? '';
    index += 2;
    if (simple[next] !== undefined) {
      out += simple[next];
    } else if (next === 'x' || next === 'u' || next === 'U') {
      const size = next === 'x' ? 2 : next === 'u' ? 4 : 8;
      const digits = /^[0-9a-fA-F]+/.exec(text.slice(index, index + size))?.[0] ?? '';
      index += digits.length;
      out += digits === '' ? `\\${next}` : String.fromCodePoint(Math.min(Number.parseInt(digits, 16), 0x10ffff));
    } else if (/[0-7]/.test(next)) {
      const digits = next + (/^[0-7]{0,2}/.exec(text.slice(index, index + 2))?.[0] ?? '');
      index += digits.length - 1;
      out += String.fromCharCode(Number.parseInt(digits, 8) & 0xff);
    } else if (next === 'c') {
      out += String.fromCharCode((text[index] ?? '').toUpperCase().charCodeAt(0) ^ 0x40);
      index += 1;
    } else {
      out += `\\${next}`;
    }
  }
  return out;
}

/** The outermost `$(…)`, backticks and `<(…)` below a node (they run as subshells). */
function substitutionsIn(node: BashNode): BashNode[] {
  const found: BashNode[] = [];
  const visit = (current: BashNode) => {
    for (const child of current.namedChildren) {
      if (substitutionTypes.has(child.type)) found.push(child);
      else visit(child);
    }
  };
  visit(node);
  return found;
}

/** The children of `node` in order, with the source text between them (`gap`) handed to `onGap`. */
function forEachChildWithGaps(node: BashNode, from: number, to: number, onChild: (child: BashNode) => void, onGap: (text: string) => void): void {
  const text = node.text;
  const base = node.startIndex;
  let position = from;
  for (const child of node.children) {
    if (child.endIndex <= from || child.startIndex >= to) continue;
    if (child.startIndex > position) onGap(text.slice(position - base, child.startIndex - base));
    onChild(child);
    position = child.endIndex;
  }
  if (position < to) onGap(text.slice(position - base, to - base));
}

/**
 * tree-sitter leaves some substitutions unparsed inside `${…}` operands, here-document bodies and
 * pattern leaves (`${x:-`cmd`}`, `${x#$(cmd)}`): text outside the parsed substitutions that still
 * holds an unescaped backtick or `$(` is refused rather than taken as literal.
 */
function hidesSubstitution(text: string): boolean {
  for (let index = 0; index < text.length; index += 1) {
    const c = text[index]!;
    if (c === '\\') index += 1;
    else if (c === '`' || (c === '$' && text[index + 1] === '(')) return true;
  }
  return false;
}

function refuseHiddenSubstitution(text: string, where: string): void {
  if (hidesSubstitution(text)) throw unsafe(`${where} ${JSON.stringify(text.length > 60 ? `${text.slice(0, 57)}...` : text)} holds a command substitution the checker's parser does not follow`);
}

function addExpansion(parts: Part[], node: BashNode): void {
  switch (node.type) {
    case 'simple_expansion':
      parts.push({ kind: 'param', name: node.text.slice(1), raw: node.text, substitutions: [] });
      return;
    case 'expansion': {
      const nameNode = node.namedChildren.find((child) => child.type === 'variable_name' || child.type === 'special_variable_name' || child.type === 'subscript');
      const name = nameNode?.type === 'subscript' ? (nameNode.childForFieldName('name')?.text ?? '') : (nameNode?.text ?? '');
      const substitutions = substitutionsIn(node);
      let rest = node.text;
      for (const substitution of [...substitutions].reverse()) rest = rest.slice(0, substitution.startIndex - node.startIndex) + rest.slice(substitution.endIndex - node.startIndex);
      refuseHiddenSubstitution(rest, 'the expansion');
      // variables named in the operand (`${x:-$HOME}`) count like the expanded one
      const location = [...rest.matchAll(/\$\{?([A-Za-z_][A-Za-z0-9_]*)/g)].find((match) => isLocationVariable(match[1]!));
      parts.push({ kind: 'param', name: location?.[1] ?? name, raw: node.text, substitutions });
      return;
    }
    case 'command_substitution':
      parts.push({ kind: 'cmdsub', node });
      return;
    case 'process_substitution':
      parts.push({ kind: 'procsub', node });
      return;
    case 'arithmetic_expansion':
      parts.push({ kind: 'arith', raw: node.text, node });
      return;
  }
}

/** Appends what one node of a word contributes. Unknown forms are refused (fail closed). */
function addWordNode(parts: Part[], node: BashNode): void {
  const type = node.type;
  if (!node.isNamed || type === 'word') {
    refuseHiddenSubstitution(node.text, 'the word');
    addUnquoted(parts, node.text);
    return;
  }
  if (expansionTypes.has(type)) {
    addExpansion(parts, node);
    return;
  }
  switch (type) {
    case 'raw_string':
      addLiteral(parts, node.text.slice(1, -1), true);
      return;
    case 'ansi_c_string':
      addLiteral(parts, decodeAnsiC(node.text.slice(2, -1)), true);
      return;
    case 'string':
      forEachChildWithGaps(
        node,
        node.startIndex + 1,
        node.endIndex - 1,
        (child) => {
          if (expansionTypes.has(child.type)) addExpansion(parts, child);
          else if (child.type === 'string_content' || !child.isNamed) {
            refuseHiddenSubstitution(child.text, 'the string');
            addDoubleQuoted(parts, child.text);
          }
          else throw unsafe(`the string ${node.text} contains ${child.type.replace(/_/g, ' ')}, which the checker does not know`);
        },
        (gap) => {
          refuseHiddenSubstitution(gap, 'the string');
          addDoubleQuoted(parts, gap);
        },
      );
      return;
    case 'translated_string': {
      const inner = node.namedChildren.find((child) => child.type === 'string');
      if (inner) addWordNode(parts, inner);
      return;
    }
    case 'concatenation':
    case 'command_name':
      forEachChildWithGaps(
        node,
        node.startIndex,
        node.endIndex,
        (child) => addWordNode(parts, child),
        (gap) => addUnquoted(parts, gap),
      );
      return;
  }
  if (literalLeafTypes.has(type)) {
    refuseHiddenSubstitution(node.text, 'the word');
    if (type === 'number' && node.namedChildCount > 0) {
      forEachChildWithGaps(node, node.startIndex, node.endIndex, (child) => addWordNode(parts, child), (gap) => addUnquoted(parts, gap));
    } else addUnquoted(parts, node.text);
    return;
  }
  throw unsafe(`the word ${JSON.stringify(node.text.slice(0, 60))} has a form (${type.replace(/_/g, ' ')}) the checker does not know`);
}

/** One shell word from adjacent nodes (tree-sitter splits a few forms, e.g. `$"…"`, into pieces). */
function wordOf(nodes: readonly BashNode[]): Word {
  const parts: Part[] = [];
  nodes.forEach((node, index) => {
    // `$"…"` (a translated string) is the string itself
    if (!node.isNamed && node.type === '$' && nodes[index + 1]?.type === 'string') return;
    addWordNode(parts, node);
  });
  return { parts, text: nodes.map((node) => node.text).join('') };
}

/** Groups word nodes into shell words: nodes that touch (no blank between them) form one word. */
function groupWords(nodes: readonly BashNode[]): BashNode[][] {
  const sorted = [...nodes].sort((left, right) => left.startIndex - right.startIndex);
  const groups: BashNode[][] = [];
  for (const node of sorted) {
    const group = groups[groups.length - 1];
    const previous = group?.[group.length - 1];
    if (group && previous && previous.endIndex === node.startIndex) group.push(node);
    else groups.push([node]);
  }
  return groups;
}

// ---------------------------------------------------------------------------------------------
// Words as characters (quoting kept) — brace expansion, globs, tildes
// ---------------------------------------------------------------------------------------------

type Flat = { ch: string; q: boolean } | { exp: Exclude<Part, { kind: 'lit' }> };

function flatten(word: Word): Flat[] {
  const items: Flat[] = [];
  for (const part of word.parts) {
    if (part.kind === 'lit') for (const ch of part.text) items.push({ ch, q: part.quoted });
    else items.push({ exp: part });
  }
  return items;
}

function wordFromItems(items: readonly Flat[]): Word {
  const parts: Part[] = [];
  for (const item of items) {
    if ('exp' in item) {
      parts.push(item.exp);
      continue;
    }
    const last = parts[parts.length - 1];
    if (last?.kind === 'lit' && last.quoted === item.q) last.text += item.ch;
    else parts.push({ kind: 'lit', text: item.ch, quoted: item.q });
  }
  return { parts, text: displayOf(items) };
}

function displayOf(items: readonly Flat[]): string {
  return items
    .map((item) => {
      if ('ch' in item) return item.ch;
      const part = item.exp;
      return part.kind === 'param' ? part.raw : part.kind === 'arith' ? `$((${part.raw}))` : '$(…)';
    })
    .join('');
}

const isUnquoted = (item: Flat | undefined, ch: string): boolean => item !== undefined && 'ch' in item && !item.q && item.ch === ch;

/** Bash brace expansion (`{a,b}`, `{1..3}`) over unquoted braces; at most 256 results. */
function expandBraces(items: Flat[], budget: { count: number }): Flat[][] {
  for (let open = 0; open < items.length; open += 1) {
    if (!isUnquoted(items[open], '{')) continue;
    let depth = 0;
    let close = -1;
    const commas: number[] = [];
    for (let index = open; index < items.length; index += 1) {
      if (isUnquoted(items[index], '{')) depth += 1;
      else if (isUnquoted(items[index], '}')) {
        depth -= 1;
        if (depth === 0) {
          close = index;
          break;
        }
      } else if (depth === 1 && isUnquoted(items[index], ',')) commas.push(index);
    }
    if (close < 0) continue;
    const prefix = items.slice(0, open);
    const suffix = items.slice(close + 1);
    let alternatives: Flat[][];
    if (commas.length > 0) {
      alternatives = [];
      let from = open + 1;
      for (const comma of [...commas, close]) {
        alternatives.push(items.slice(from, comma));
        from = comma + 1;
      }
    } else {
      const inner = items.slice(open + 1, close);
      const text = inner.every((item) => 'ch' in item) ? displayOf(inner) : '';
      const sequence = /^(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(\.\.-?\d+)?$/.exec(text);
      if (!sequence) continue;
      // A sequence expands to numbers or single letters: no "/", "." or "~" can appear, so one
      // representative is enough for the path checks.
      alternatives = [[...sequence[1]!].map((ch) => ({ ch, q: true }))];
    }
    const results: Flat[][] = [];
    for (const alternative of alternatives) {
      for (const expanded of expandBraces([...prefix, ...alternative, ...suffix], budget)) {
        budget.count += 1;
        if (budget.count > 256) throw new ParseFailure('a brace expansion produces too many words');
        results.push(expanded);
      }
    }
    return results;
  }
  return [items];
}

interface Segment {
  text: string;
  glob: boolean;
  /** For glob segments: can this pattern match `name`? (leading-dot rule respected) */
  matches: (name: string) => boolean;
}

function segmentsOf(items: readonly Flat[]): Segment[] {
  const segments: Segment[] = [];
  let current: Flat[] = [];
  const finish = () => {
    segments.push(segmentOf(current));
    current = [];
  };
  for (const item of items) {
    if ('ch' in item && item.ch === '/') finish();
    else current.push(item);
  }
  finish();
  return segments;
}

function segmentOf(items: readonly Flat[]): Segment {
  const text = displayOf(items);
  const glob = items.some((item) => 'ch' in item && !item.q && (item.ch === '*' || item.ch === '?' || item.ch === '['));
  if (!glob) return { text, glob, matches: (name) => name === text };
  let source = '';
  for (let index = 0; index < items.length; index += 1) {
    const item = items[index]!;
    if (!('ch' in item)) {
      source += '.*';
      continue;
    }
    if (!item.q && item.ch === '*') source += '.*';
    else if (!item.q && item.ch === '?') source += '.';
    else if (!item.q && item.ch === '[') {
      let end = index + 1;
      while (end < items.length && !isUnquoted(items[end], ']')) end += 1;
      if (end >= items.length) {
        source += '\\[';
        continue;
      }
      const body = items
        .slice(index + 1, end)
        .map((inner) => ('ch' in inner ? inner.ch : ''))
        .join('');
      source += `[${body.replace(/^!/, '^').replace(/\\/g, '\\\\')}]`;
      index = end;
    } else source += item.ch.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  }
  let regex: RegExp;
  try {
    regex = new RegExp(`^(?:${source})$`, 'i');
  } catch {
    regex = /^.*$/;
  }
  const first = items[0];
  const leadingDot = first !== undefined && 'ch' in first && first.ch === '.';
  return { text, glob, matches: (name) => (name.startsWith('.') && !leadingDot ? false : regex.test(name)) };
}

// ---------------------------------------------------------------------------------------------
// Variables
// ---------------------------------------------------------------------------------------------

/** Variables that point outside the worktree; reading them anywhere is refused. */
const locationVariables = new Set(['HOME', 'OLDPWD', 'CDPATH', 'TMPDIR', 'TMP', 'TEMP', 'TEMPDIR', 'USERPROFILE', 'ZDOTDIR', 'DIRSTACK']);
const isLocationVariable = (name: string) => locationVariables.has(name) || name.startsWith('XDG_');

/** Git variables an agent may set (everything else GIT_* can point git elsewhere or run commands). */
const harmlessGitVariable = /^GIT_(AUTHOR_|COMMITTER_|TERMINAL_PROMPT$|OPTIONAL_LOCKS$|FLUSH$|MERGE_VERBOSITY$|LITERAL_PATHSPECS$|NOGLOB_PATHSPECS$|ICASE_PATHSPECS$|ADVICE$)/;
const unsafeVariables = new Set([
  'BASH_ENV',
  'ENV',
  'SHELLOPTS',
  'BASHOPTS',
  'IFS',
  'PS4',
  'PROMPT_COMMAND',
  'LD_PRELOAD',
  'LD_LIBRARY_PATH',
  'LD_AUDIT',
  'PAGER',
  'EDITOR',
  'VISUAL',
  'LESSOPEN',
  'LESSCLOSE',
  'MANPAGER',
  'BROWSER',
  'PWD',
  'GLOBIGNORE',
]);

/** Refuses assigning (or declaring) a protected variable. */
function checkVariableName(name: string, label: string): void {
  if (isLocationVariable(name) || name === 'PWD') throw escape(`"${label}" changes $${name}, which decides where paths like ~ and cd lead`);
  if (name.startsWith('GIT_') && !harmlessGitVariable.test(name)) throw forbiddenGit(label, `$${name} can point git at another repository, configuration or program`);
  if (unsafeVariables.has(name) || name.startsWith('POLYWAVE_') || name.startsWith('BASH_FUNC_') || name.startsWith('DYLD_')) {
    throw unsafe(`"${label}" changes $${name}, which can run code or change what the checker sees`);
  }
}


/** A word of the form NAME=value or NAME+=value (quoted or not: env and declare see the unquoted text). */
function splitAssignment(word: Word): { name: string; value: Word } | undefined {
  const items = flatten(word);
  const equals = items.findIndex((item) => !('ch' in item) || item.ch === '=');
  if (equals <= 0 || !('ch' in items[equals]!)) return undefined;
  const name = displayOf(items.slice(0, equals)).replace(/\+$/, '');
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? { name, value: wordFromItems(items.slice(equals + 1)) } : undefined;
}

/**
 * One argument of export / declare / typeset / local / readonly: an option, a NAME or a
 * NAME=value — protected names refused, values read as paths.
 */
function checkDeclarationWord(word: Word, from: Set<string>, context: Context, label: string): void {
  walkExpansions(word, from, context, label);
  const value = literalOf(word);
  if (value !== undefined && /^[-+]/.test(value)) {
    if (/^-[a-zA-Z]*n/.test(value)) throw unsafe(`"${label}" declares a name reference, which can change protected variables indirectly`);
    return;
  }
  const assignment = splitAssignment(word);
  if (assignment) {
    checkVariableName(assignment.name, label);
    checkAssignmentValue(assignment.value, from, context, label);
  } else if (value !== undefined) checkVariableName(value, label);
  else throw unsafe(`"${label}" declares a variable whose name is computed at run time`);
}

/** An assigned value is read as paths: bash expands a ~ at its start and after each ":". */
function checkAssignmentValue(value: Word, from: Set<string>, context: Context, label: string): void {
  const pieces: Flat[][] = [[]];
  for (const item of flatten(value)) {
    if (isUnquoted(item, ':')) pieces.push([]);
    else pieces[pieces.length - 1]!.push(item);
  }
  for (const piece of pieces) {
    if (piece.length > 0) checkPathWord(wordFromItems(piece), 'read', from, context, label);
  }
}

// ---------------------------------------------------------------------------------------------
// Statements: a walk over the syntax tree
// ---------------------------------------------------------------------------------------------

interface Context {
  options: BashPolicyOptions;
  parser: BashParser;
  root: string;
  readable: Set<string>;
  /** Every directory the shell may have been in (pushd/popd, function bodies). */
  seen: Set<string>;
  loopDepth: number;
  functionDepth: number;
  nesting: number;
}

/** The directories the shell may be in after a statement succeeded or failed. */
interface Outcome {
  success: Set<string>;
  failure: Set<string>;
}

const union = (...sets: ReadonlyArray<ReadonlySet<string>>) => new Set(sets.flatMap((set) => [...set]));
const both = (directories: Set<string>): Outcome => ({ success: directories, failure: directories });
const statementsOf = (node: BashNode) => node.namedChildren.filter((child) => child.type !== 'comment');
/** The statement's source for messages: here-document bodies left out, blanks collapsed, at most 120 characters. */
function labelOf(node: BashNode): string {
  let text = node.text;
  if (text.includes('\n')) {
    for (const body of node.descendantsOfType('heredoc_body').reverse()) {
      text = text.slice(0, body.startIndex - node.startIndex) + text.slice(body.endIndex - node.startIndex);
    }
  }
  text = text.replace(/\s+/g, ' ').trim();
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}
const redirectTypes = new Set(['file_redirect', 'heredoc_redirect', 'herestring_redirect']);

/** Parses a command (or a nested command string); a syntax error is refused. The caller deletes the tree. */
function parseChecked(source: string, parser: BashParser, subject: string): ReturnType<BashParser['parse']> {
  const tree = parser.parse(source);
  const error = findSyntaxError(tree.rootNode);
  if (error) {
    tree.delete();
    throw new SyntaxFailure(source, subject, error);
  }
  return tree;
}

/** Statements run one after the other (`;`, newline, `&`): the outcome of the last one. */
function evaluateSequence(nodes: readonly BashNode[], from: Set<string>, context: Context): Outcome {
  let outcome = both(from);
  for (const node of nodes) outcome = evaluateStatement(node, union(outcome.success, outcome.failure), context, false);
  return outcome;
}

/** Statements run one after the other: the directories they may end in. */
function evaluateStatements(nodes: readonly BashNode[], from: Set<string>, context: Context): Set<string> {
  const outcome = evaluateSequence(nodes, from, context);
  return union(outcome.success, outcome.failure);
}

/** A command list run in a subshell (`( … )`, `$( … )`, `<( … )`): directory changes stay inside. */
function evaluateSubshell(nodes: readonly BashNode[], from: Set<string>, context: Context): void {
  context.nesting += 1;
  if (context.nesting > maximumNesting) throw new ParseFailure('commands are nested too deeply');
  evaluateStatements(nodes, from, context);
  context.nesting -= 1;
}

/**
 * `$(…)`, `<(…)` or backticks: a subshell. Inside backticks bash first turns \` \$ \\ into ` $ \
 * (so \`…\` nests); tree-sitter does not, so such a body is re-parsed after that unescaping.
 */
function evaluateSubstitution(node: BashNode, from: Set<string>, context: Context, label: string): void {
  const inner = node.text.slice(1, -1);
  if (node.text.startsWith('`') && inner.includes('\\')) checkNestedShell(inner.replace(/\\([`$\\])/g, '$1'), from, context, label);
  else evaluateSubshell(statementsOf(node), from, context);
}

function evaluateStatement(node: BashNode, from: Set<string>, context: Context, stdinIsData: boolean): Outcome {
  const same = both(from);
  switch (node.type) {
    case 'command':
      return evaluateSimpleCommand(node, [], node, from, context, stdinIsData);
    case 'redirected_statement':
      return evaluateRedirected(node, from, context, stdinIsData);
    case 'list': {
      const [left, right] = statementsOf(node);
      const operator = node.children.find((child) => child.type === '&&' || child.type === '||')?.type;
      if (!left || !right || operator === undefined) throw unsafe(`the list "${labelOf(node)}" has a shape the checker does not know`);
      return combine(evaluateStatement(left, from, context, stdinIsData), operator, (start) => evaluateStatement(right, start, context, false));
    }
    case 'pipeline':
      // every member runs in its own subshell; a member after the first reads the pipe
      statementsOf(node).forEach((member, position) => evaluateStatement(member, from, context, stdinIsData || position > 0));
      return same;
    case 'negated_command': {
      const [inner] = statementsOf(node);
      if (!inner) return same;
      const outcome = evaluateStatement(inner, from, context, stdinIsData);
      return { success: outcome.failure, failure: outcome.success };
    }
    case 'subshell':
      evaluateSubshell(statementsOf(node), from, context);
      return same;
    case 'compound_statement':
      return evaluateSequence(statementsOf(node), from, context);
    case 'do_group':
    case 'else_clause':
    case 'elif_clause':
    case 'if_statement':
      // each part may or may not run: walking them in order with "may fail" sets over-approximates
      return both(evaluateStatements(statementsOf(node), from, context));
    case 'while_statement':
      return both(inLoop(context, () => evaluateStatements(statementsOf(node), from, context)));
    case 'for_statement':
      return evaluateFor(node, from, context);
    case 'c_style_for_statement': {
      const label = labelOf(node);
      const body = node.childForFieldName('body');
      for (const child of statementsOf(node)) if (child.id !== body?.id) walkArithmetic(child, from, context, label);
      return both(inLoop(context, () => (body ? evaluateStatements(statementsOf(body), from, context) : from)));
    }
    case 'case_statement':
      return both(evaluateCase(node, from, context));
    case 'function_definition':
      evaluateFunctionDefinition(node, from, context);
      return same;
    case 'test_command':
      for (const child of statementsOf(node)) evaluateTestExpression(child, from, context, labelOf(node));
      return same;
    case 'declaration_command':
      evaluateDeclaration(node, from, context);
      return same;
    case 'unset_command':
      for (const child of statementsOf(node)) {
        const value = literalOf(wordOf([child]));
        if (value !== undefined && /^[A-Za-z_][A-Za-z0-9_]*$/.test(value)) checkVariableName(value, labelOf(node));
      }
      return same;
    case 'variable_assignment':
      checkAssignmentNode(node, from, context, labelOf(node));
      return same;
    case 'variable_assignments':
      for (const child of statementsOf(node)) checkAssignmentNode(child, from, context, labelOf(node));
      return same;
    default:
      throw unsafe(`"${labelOf(node)}" uses ${node.type.replace(/_/g, ' ')}, which the checker does not know`);
  }
}

/** `left && right` / `left || right`: `right` runs from where `left` succeeded / failed. */
function combine(left: Outcome, operator: string, evaluateRight: (start: Set<string>) => Outcome): Outcome {
  if (operator === '&&') {
    const right = evaluateRight(left.success);
    return { success: right.success, failure: union(left.failure, right.failure) };
  }
  const right = evaluateRight(left.failure);
  return { success: union(left.success, right.success), failure: right.failure };
}

function inLoop(context: Context, evaluate: () => Set<string>): Set<string> {
  context.loopDepth += 1;
  const directories = evaluate();
  context.loopDepth -= 1;
  return directories;
}

function evaluateFor(node: BashNode, from: Set<string>, context: Context): Outcome {
  const label = `${node.child(0)?.type ?? 'for'} ${node.childForFieldName('variable')?.text ?? ''} in …`;
  const variable = node.childForFieldName('variable');
  if (variable) checkVariableName(variable.text, label);
  for (const group of groupWords(node.childrenForFieldName('value'))) {
    const word = wordOf(group);
    walkExpansions(word, from, context, label);
    checkPathWord(word, 'read', from, context, label);
  }
  const body = node.childForFieldName('body');
  return both(inLoop(context, () => (body ? evaluateStatements(statementsOf(body), from, context) : from)));
}

function evaluateCase(node: BashNode, from: Set<string>, context: Context): Set<string> {
  const label = labelOf(node);
  let current = from;
  for (const child of statementsOf(node)) {
    if (child.type !== 'case_item') {
      walkExpansions(wordOf([child]), current, context, label);
      continue;
    }
    const patterns = child.childrenForFieldName('value');
    for (const pattern of patterns) walkExpansions(wordOf([pattern]), current, context, label);
    current = evaluateStatements(
      statementsOf(child).filter((statement) => !patterns.some((pattern) => pattern.id === statement.id)),
      current,
      context,
    );
  }
  return current;
}

/**
 * A function body is checked where it is defined, from every directory the shell has been in (it
 * may be called from any of them); a `cd` inside it is refused like one in a loop.
 */
function evaluateFunctionDefinition(node: BashNode, from: Set<string>, context: Context): void {
  const label = labelOf(node);
  const start = union(from, context.seen);
  const body = node.childForFieldName('body');
  for (const redirect of node.childrenForFieldName('redirect')) checkRedirect(redirect, start, context, label);
  if (!body) return;
  context.functionDepth += 1;
  evaluateStatement(body, start, context, false);
  context.functionDepth -= 1;
}

/** export / declare / typeset / local / readonly. */
function evaluateDeclaration(node: BashNode, from: Set<string>, context: Context): void {
  const label = labelOf(node);
  for (const group of groupWords(statementsOf(node))) {
    if (group.length === 1 && group[0]!.type === 'variable_assignment') checkAssignmentNode(group[0]!, from, context, label);
    else checkDeclarationWord(wordOf(group), from, context, label);
  }
}

/** `NAME=value`, `NAME+=value`, `NAME[i]=value`, `NAME=(a b)`. */
function checkAssignmentNode(node: BashNode, from: Set<string>, context: Context, label: string): void {
  const nameNode = node.childForFieldName('name');
  if (!nameNode) throw unsafe(`the assignment "${labelOf(node)}" has no name the checker can read`);
  const name = nameNode.type === 'subscript' ? nameNode.childForFieldName('name')?.text : nameNode.text;
  if (name === undefined || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw unsafe(`"${label}" assigns a variable whose name is computed at run time`);
  checkVariableName(name, label);
  if (nameNode.type === 'subscript') walkArithmetic(nameNode, from, context, label);
  const value = node.childForFieldName('value');
  if (!value) return;
  const elements = value.type === 'array' ? groupWords(statementsOf(value)) : [[value]];
  for (const element of elements) {
    const word = wordOf(element);
    walkExpansions(word, from, context, label);
    checkAssignmentValue(word, from, context, label);
  }
}

/**
 * Arithmetic (`(( … ))`, `$(( … ))`, `for (( … ))`, array indices): the substitutions inside run
 * as subshells, and assignments to protected variables are refused.
 */
function walkArithmetic(node: BashNode, from: Set<string>, context: Context, label: string): void {
  const assignedName = (target: BashNode | null | undefined) => {
    if (target && (target.type === 'variable_name' || target.type === 'word')) checkVariableName(target.text, label);
  };
  const visit = (current: BashNode) => {
    if (substitutionTypes.has(current.type)) {
      evaluateSubstitution(current, from, context, label);
      return;
    }
    if (current.type === 'variable_assignment') assignedName(current.childForFieldName('name'));
    else if (current.type === 'binary_expression') {
      const operator = current.childForFieldName('operator')?.type ?? '';
      if (/^([-+*/%&|^]|<<|>>|\*\*)?=$/.test(operator)) assignedName(current.childForFieldName('left'));
    } else if (current.type === 'postfix_expression' || current.type === 'unary_expression') {
      if (current.children.some((child) => child.type === '++' || child.type === '--')) assignedName(current.namedChildren[0]);
    }
    for (const child of current.namedChildren) visit(child);
  };
  visit(node);
}

/** `[ … ]` and `[[ … ]]`: operands are read paths, the right side of == != =~ is a pattern. */
function evaluateTestExpression(node: BashNode, from: Set<string>, context: Context, label: string): void {
  switch (node.type) {
    case 'binary_expression': {
      const operator = node.childForFieldName('operator')?.text ?? node.children.find((child) => !child.isNamed)?.text ?? '';
      const left = node.childForFieldName('left');
      const rights = node.childrenForFieldName('right');
      if (left) evaluateTestExpression(left, from, context, label);
      for (const right of rights) {
        if (['==', '=', '!=', '=~'].includes(operator)) walkExpansions(wordOf([right]), from, context, label);
        else evaluateTestExpression(right, from, context, label);
      }
      return;
    }
    case 'unary_expression':
    case 'parenthesized_expression':
    case 'negated_expression':
      for (const child of statementsOf(node)) evaluateTestExpression(child, from, context, label);
      return;
    case 'test_operator':
      return;
    default: {
      const word = wordOf([node]);
      walkExpansions(word, from, context, label);
      checkPathWord(word, 'read', from, context, label);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Simple commands and redirections
// ---------------------------------------------------------------------------------------------

/** The redirections of a statement, with those nested in a here-document redirection. */
function flattenRedirects(redirects: readonly BashNode[]): BashNode[] {
  return redirects.flatMap((redirect) => (redirect.type === 'heredoc_redirect' ? [redirect, ...redirect.namedChildren.filter((child) => redirectTypes.has(child.type))] : [redirect]));
}

/**
 * tree-sitter attaches what follows a here-document's `<<EOF` on its line (`| cmd`, `&& cmd`) to
 * the here-document redirection: the rest of the pipeline or list.
 */
function heredocContinuation(redirects: readonly BashNode[]): { kind: 'pipe'; members: BashNode[] } | { kind: 'list'; operator: string; right: BashNode } | undefined {
  const continuations: Array<{ kind: 'pipe'; members: BashNode[] } | { kind: 'list'; operator: string; right: BashNode }> = [];
  for (const redirect of redirects) {
    if (redirect.type !== 'heredoc_redirect') continue;
    const right = redirect.childForFieldName('right');
    const operator = redirect.childForFieldName('operator')?.type;
    if (right && operator !== undefined) continuations.push({ kind: 'list', operator, right });
    for (const child of redirect.namedChildren) {
      if (child.type !== 'pipeline' || child.id === right?.id) continue;
      const members: BashNode[] = [];
      const flatten = (pipeline: BashNode) => {
        for (const member of statementsOf(pipeline)) {
          if (member.type === 'pipeline') flatten(member);
          else if (member.type === 'list') throw unsafe(`the here-document pipeline "${labelOf(redirect)}" continues with && or ||, which the checker's parser groups differently from bash (put the here-document command on its own line)`);
          else members.push(member);
        }
      };
      flatten(child);
      continuations.push({ kind: 'pipe', members });
    }
  }
  if (continuations.length > 1) throw unsafe('several here-documents continue the same command line, which the checker cannot follow');
  return continuations[0];
}

function evaluateRedirected(node: BashNode, from: Set<string>, context: Context, stdinIsData: boolean): Outcome {
  const body = node.childForFieldName('body');
  const redirects = node.childrenForFieldName('redirect');
  const continuation = heredocContinuation(redirects);
  let outcome: Outcome;
  if (body === null || body.type === 'command') {
    outcome = evaluateSimpleCommand(body, redirects, node, from, context, stdinIsData);
  } else {
    const label = labelOf(node);
    const all = flattenRedirects(redirects);
    if (all.some((redirect) => redirect.childrenForFieldName('destination').length > 1)) {
      throw unsafe(`"${label}" has words after a redirection of a compound command, which bash refuses`);
    }
    outcome = evaluateStatement(body, from, context, stdinIsData || redirectsStdin(all));
    // tree-sitter hangs a here-document after `a && b <<EOF` on the whole list: its redirections
    // belong to the last command, so they are checked from every directory the list may reach — the
    // ones it reaches first, so that a refusal names the path bash would write (`cd src && echo x > b.ts`
    // is denied as `src/b.ts`, not `b.ts`; the decision is the same: every directory is checked)
    const start = body.type === 'list' || body.type === 'pipeline' ? union(outcome.success, outcome.failure, from) : from;
    for (const redirect of all) checkRedirect(redirect, start, context, label);
  }
  if (continuation === undefined) return outcome;
  if (continuation.kind === 'list') return combine(outcome, continuation.operator, (start) => evaluateStatement(continuation.right, start, context, false));
  const listBody = body !== null && body.type !== 'command';
  const start = listBody ? union(from, outcome.success, outcome.failure) : from;
  for (const member of continuation.members) evaluateStatement(member, start, context, true);
  return listBody ? both(start) : both(from);
}

const isStdinRedirect = (redirect: BashNode): boolean => {
  const fd = redirect.childForFieldName('descriptor')?.text ?? '0';
  if (fd !== '0') return false;
  if (redirect.type === 'heredoc_redirect' || redirect.type === 'herestring_redirect') return true;
  const operator = redirect.children.find((child) => !child.isNamed)?.type ?? '';
  return operator === '<' || operator === '<>';
};
const redirectsStdin = (redirects: readonly BashNode[]) => redirects.some(isStdinRedirect);

interface CommandInfo {
  label: string;
  /** stdin comes from a pipe or a redirection (a shell or interpreter would read a program from it). */
  stdinIsData: boolean;
}

/**
 * A simple command: assignments, words, redirections (those of the enclosing redirected
 * statement included). Words tree-sitter hangs on a redirection (`git > /dev/null push`: bash runs
 * `git push`) are put back among the command's words, in source order.
 */
function evaluateSimpleCommand(command: BashNode | null, outerRedirects: readonly BashNode[], statement: BashNode, from: Set<string>, context: Context, stdinIsData: boolean): Outcome {
  const label = labelOf(statement);
  const assignments: BashNode[] = [];
  const wordNodes: BashNode[] = [];
  const redirects: BashNode[] = [];
  const subshells: BashNode[] = [];
  for (const child of command?.children ?? []) {
    if (child.type === 'variable_assignment') assignments.push(child);
    else if (child.type === 'command_name') wordNodes.push(child);
    else if (redirectTypes.has(child.type)) redirects.push(child);
    else if (child.type === 'subshell') subshells.push(child);
    else if (child.type !== 'comment') wordNodes.push(child);
  }
  // (the continuation of a here-document on the statement's own redirections is handled by evaluateRedirected)
  if (heredocContinuation(redirects) !== undefined) throw unsafe(`"${label}" continues a here-document inside the command, which the checker's parser cannot follow`);
  redirects.push(...outerRedirects);
  const allRedirects = flattenRedirects(redirects);
  const targets = new Map<number, BashNode[]>();
  for (const redirect of allRedirects) {
    if (redirect.type !== 'file_redirect') continue;
    const [target, ...extra] = groupWords(redirect.childrenForFieldName('destination'));
    if (target) targets.set(redirect.id, target);
    for (const group of extra) wordNodes.push(...group);
  }
  const words = groupWords(wordNodes).map(wordOf);

  const firstName = words[0] ? literalOf(words[0]) : undefined;
  if (subshells.length > 0) {
    // `time ( … )`: tree-sitter hangs the timed subshell on a command named time
    if (firstName !== 'time' || subshells.length > 1 || words.slice(1).some((word) => !/^-/.test(literalOf(word) ?? ''))) {
      throw unsafe(`"${label}" has a subshell where bash expects a word`);
    }
    for (const redirect of flattenRedirects(redirects)) checkRedirect(redirect, from, context, label);
    return evaluateStatement(subshells[0]!, from, context, stdinIsData);
  }
  const deniedReason = firstName !== undefined ? deniedCommands.get(posix.basename(firstName)) : undefined;
  if (deniedReason !== undefined) throw unsafe(`"${posix.basename(firstName!)}" is not allowed for agents because ${deniedReason}`);
  for (const redirect of allRedirects) checkRedirect(redirect, from, context, label, targets.get(redirect.id));
  for (const word of words) walkExpansions(word, from, context, label);
  for (const assignment of assignments) checkAssignmentNode(assignment, from, context, label);
  if (words.length === 0) return both(from);
  // `(( … ))` is an arithmetic command
  const onlyNode = wordNodes.length === 1 ? wordNodes[0]!.namedChildren[0] : undefined;
  if (words.length === 1 && onlyNode?.type === 'arithmetic_expansion' && onlyNode.text.startsWith('((')) return both(from); // walked with the words
  // Brace expansion comes first in bash: `{eval,x}` is the command eval.
  const budget = { count: 0 };
  const expanded: Word[] = [];
  for (const word of words) {
    if (!word.parts.some((part) => part.kind === 'lit' && !part.quoted && part.text.includes('{'))) expanded.push(word);
    else for (const items of expandBraces(flatten(word), budget)) expanded.push(wordFromItems(items));
  }
  if (expanded.length === 0) return both(from);
  const info = { label, stdinIsData: stdinIsData || redirectsStdin(allRedirects) };
  return evaluateCommand(expanded, from, context, info);
}

function checkRedirect(redirect: BashNode, from: Set<string>, context: Context, label: string, target?: readonly BashNode[]): void {
  if (redirect.type === 'heredoc_redirect') {
    const body = redirect.namedChildren.find((child) => child.type === 'heredoc_body');
    const start = redirect.namedChildren.find((child) => child.type === 'heredoc_start')?.text ?? '';
    if (!body || /['"\\]/.test(start)) return; // a quoted delimiter: the body is literal text
    const parts: Part[] = [];
    forEachChildWithGaps(
      body,
      body.startIndex,
      body.endIndex,
      (child) => {
        if (expansionTypes.has(child.type)) addExpansion(parts, child);
        else refuseHiddenSubstitution(child.text, 'the here-document');
      },
      (gap) => refuseHiddenSubstitution(gap, 'the here-document'),
    );
    walkParts(parts, from, context, label);
    return;
  }
  if (redirect.type === 'herestring_redirect') {
    for (const group of groupWords(redirect.namedChildren.filter((child) => child.type !== 'file_descriptor'))) walkExpansions(wordOf(group), from, context, label);
    return;
  }
  const destination = target ?? groupWords(redirect.childrenForFieldName('destination'))[0];
  const operator = redirect.children.find((child) => !child.isNamed)?.type ?? '';
  if (!destination) {
    if (/^[<>]&-$/.test(operator)) return; // closes a descriptor
    throw unsafe(`the redirection in "${label}" has no target the checker can read`);
  }
  const word = wordOf(destination);
  walkExpansions(word, from, context, label);
  const value = literalOf(word);
  if ((operator === '>&' || operator === '<&') && value !== undefined && /^(\d+-?|-)$/.test(value)) return;
  checkPathWord(word, operator === '<' || operator === '<&' ? 'read' : 'write', from, context, label);
}

/** Checks the substitutions inside a word (as subshells) and refuses location variables. */
function walkExpansions(word: Word, from: Set<string>, context: Context, label: string): void {
  walkParts(word.parts, from, context, label);
}

function walkParts(parts: readonly Part[], from: Set<string>, context: Context, label: string): void {
  for (const part of parts) {
    if (part.kind === 'cmdsub' || part.kind === 'procsub') evaluateSubstitution(part.node, from, context, label);
    else if (part.kind === 'arith') walkArithmetic(part.node, from, context, label);
    else if (part.kind === 'param') {
      if (isLocationVariable(part.name)) throw escape(`"${label}" uses ${part.raw}, which points outside the worktree`);
      for (const substitution of part.substitutions) evaluateSubstitution(substitution, from, context, label);
    }
  }
}

/** Unquoted `*`, `?` or a `[…]` class: bash would replace the word with matching file names. */
function hasGlob(word: Word): boolean {
  const items = flatten(word);
  return items.some((item, index) => {
    if (!('ch' in item) || item.q) return false;
    if (item.ch === '*' || item.ch === '?') return true;
    return item.ch === '[' && items.slice(index + 1).some((later) => isUnquoted(later, ']'));
  });
}

type PathRole = 'read' | 'write' | 'cd' | 'exec';

const devicePaths = /^\/dev\/(null|stdin|stdout|stderr|tty|zero|random|urandom|fd\/\d+)$/;
const executableDirectories = ['/usr/bin/', '/bin/', '/usr/local/bin/', '/usr/sbin/', '/sbin/'];

function isInside(root: string, absolute: string): boolean {
  return absolute === root || absolute.startsWith(root === '/' ? '/' : `${root}/`);
}

const hasGitComponent = (relative: string) => relative.split('/').some((segment) => segment.toLowerCase() === '.git');

/**
 * Checks a word used as a path (all its brace expansions). Returns the root-relative
 * directories it names (used by cd).
 */
function checkPathWord(word: Word, role: PathRole, from: Set<string>, context: Context, label: string, reader = false): Set<string> {
  const results = new Set<string>();
  if (word.parts.length === 1 && word.parts[0]!.kind === 'procsub' && role !== 'cd') return results;
  for (const items of expandBraces(flatten(word), { count: 0 })) {
    for (const relative of checkPathItems(items, role, from, context, label, reader)) results.add(relative);
  }
  return results;
}

function checkPathItems(items: Flat[], role: PathRole, from: Set<string>, context: Context, label: string, reader: boolean): Set<string> {
  const display = displayOf(items);
  if (isUnquoted(items[0], '~')) throw escape(`"${display}" in "${label}" starts with ~ (the home directory), which is outside the worktree`);
  // bash also expands a ~ after "=" and ":" in arguments that look like assignments (name=~/x).
  const equals = items.findIndex((item) => isUnquoted(item, '='));
  if (equals > 0 && items.slice(0, equals).every((item) => 'ch' in item && !item.q && /[A-Za-z0-9_]/.test(item.ch)) && !/^[0-9]/.test(display)) {
    for (let index = equals + 1; index < items.length; index += 1) {
      if (isUnquoted(items[index], '~') && (isUnquoted(items[index - 1], '=') || isUnquoted(items[index - 1], ':'))) {
        throw escape(`"${display}" in "${label}" expands ~ (the home directory), which is outside the worktree`);
      }
    }
  }
  const expansions = items.flatMap((item) => ('exp' in item ? [item.exp] : []));
  if (expansions.length > 0) {
    for (const expansion of expansions) {
      if (expansion.kind === 'param' && /[/~]|\.\./.test(expansion.raw.slice(2))) {
        throw escape(`"${display}" in "${label}" builds a path from ${expansion.raw}, which cannot be checked`);
      }
    }
    const computed = expansions.some((expansion) => expansion.kind === 'cmdsub' || expansion.kind === 'procsub');
    const literalText = items.map((item) => ('ch' in item ? item.ch : '')).join('');
    if (role !== 'read' || literalText.includes('/')) {
      if (computed) throw unsafe(`the path "${display}" in "${label}" is computed by a command substitution, which cannot be checked before it runs`);
      throw escape(`the path "${display}" in "${label}" is built from a variable, which may point outside the worktree`);
    }
    return new Set();
  }
  const value = display;
  if (value === '') return new Set();
  const segments = segmentsOf(items);
  const globIndex = segments.findIndex((segment) => segment.glob);
  for (const segment of segments) {
    if (!segment.glob) continue;
    if (segment.matches('..')) throw escape(`the pattern "${value}" in "${label}" can match "..", which leaves the worktree`);
    if (segment.matches('.git')) throw gitInternals(`the pattern "${value}" in "${label}" can match .git`);
  }
  const root = context.root;
  const targets: Array<{ relative: string; fromDirectory: string }> = [];
  if (value.startsWith('/')) {
    const normalized = posix.normalize(value);
    if (role !== 'cd' && devicePaths.test(normalized)) return new Set();
    if (role === 'exec' && globIndex < 0 && executableDirectories.some((directory) => normalized.startsWith(directory))) return new Set();
    if (isInside(root, normalized)) {
      targets.push({ relative: normalized === root ? '' : normalized.slice(root.length + 1).replace(/\/+$/, ''), fromDirectory: '/' });
    } else if (role === 'read' && reader && context.readable.has(normalized)) {
      return new Set();
    } else {
      throw escape(`the absolute path "${value}" in "${label}" is outside the worktree root ${root}`);
    }
  } else {
    for (const directory of from) {
      const joined = posix.normalize(directory === '' ? value : `${directory}/${value}`);
      if (joined === '..' || joined.startsWith('../')) {
        throw escape(`"${value}" in "${label}" leaves the worktree root${directory === '' ? '' : ` (run from ${directory}/)`}`);
      }
      targets.push({ relative: joined === '.' ? '' : joined.replace(/\/+$/, ''), fromDirectory: directory === '' ? root : `${root}/${directory}` });
    }
  }
  if (role === 'cd' && globIndex >= 0) throw unsafe(`"${label}" changes into a glob pattern, which cannot be tracked`);
  const list = context.options.listDirectory;
  if (role === 'write' && globIndex >= 0 && !list) {
    throw unsafe(`"${label}" writes to the glob pattern "${value}", which cannot be checked against ownership (name the files)`);
  }
  const literalPrefix = (globIndex < 0 ? segments : segments.slice(0, globIndex)).map((segment) => segment.text).join('/');
  const directories = new Set<string>();
  const check = (concrete: Concrete) => checkConcretePath(concrete, role, context, label, reader);
  for (const target of targets) {
    if (hasGitComponent(target.relative)) throw gitInternals(`"${value}" in "${label}" is inside .git`);
    if (globIndex >= 0 && list) {
      const matches = expandGlob(value.startsWith('/') ? '/' : target.fromDirectory, segments, list);
      for (const match of matches) {
        const normalized = posix.normalize(match);
        if (!isInside(root, normalized)) throw escape(`the pattern "${value}" in "${label}" matches ${normalized}, outside the worktree root`);
        check({ shown: `${value}" (matching "${normalized.slice(root.length + 1)}`, relative: normalized === root ? '' : normalized.slice(root.length + 1), resolveFrom: '/', resolveRequest: match, ownership: true });
      }
      if (matches.length > 0) continue;
    }
    // No glob, or a glob that matches nothing (bash then passes it on unchanged).
    check({
      shown: value,
      relative: target.relative,
      resolveFrom: target.fromDirectory,
      resolveRequest: literalPrefix === '' ? (value.startsWith('/') ? '/' : '.') : literalPrefix,
      ownership: globIndex < 0 || list !== undefined,
    });
    if (role === 'cd') directories.add(target.relative);
  }
  return directories;
}

interface Concrete {
  /** For messages. */
  shown: string;
  /** Lexical root-relative path. */
  relative: string;
  resolveFrom: string;
  resolveRequest: string;
  /** Apply the ownership policy (false for an unexpanded glob). */
  ownership: boolean;
}

/** Symbolic links, .git and (for writes) the ownership policy of one concrete path inside the root. */
function checkConcretePath(concrete: Concrete, role: PathRole, context: Context, label: string, reader: boolean): void {
  const root = context.root;
  if (hasGitComponent(concrete.relative)) throw gitInternals(`"${concrete.shown}" in "${label}" is inside .git`);
  let writeRelative = concrete.relative;
  const resolvePath = context.options.resolvePath;
  if (resolvePath) {
    let resolved: string;
    try {
      resolved = resolvePath(concrete.resolveFrom, concrete.resolveRequest);
    } catch (error) {
      throw unsafe(`the path "${concrete.shown}" in "${label}" could not be resolved (${error instanceof Error ? error.message : String(error)})`);
    }
    if (!isInside(root, resolved)) {
      if (role === 'read' && reader && context.readable.has(resolved)) return;
      throw escape(`"${concrete.shown}" in "${label}" resolves through a symbolic link to ${resolved}, outside the worktree root`);
    }
    const resolvedRelative = resolved === root ? '' : resolved.slice(root.length + 1);
    if (hasGitComponent(resolvedRelative)) throw gitInternals(`"${concrete.shown}" in "${label}" resolves into .git`);
    writeRelative = resolvedRelative;
  }
  if (role !== 'write') return;
  if (context.options.readOnly) throw new Denied('JAIL_READ_ONLY', `bash: "${label}" writes "${concrete.shown}", but this role is read-only.`, writeRelative);
  const checkWritePath = context.options.checkWritePath;
  if (concrete.ownership && checkWritePath) {
    const decision = checkWritePath(writeRelative);
    if (!decision.allowed) throw new Denied(decision.code, `bash: "${label}" would write "${concrete.shown}": ${decision.reason}`, decision.target ?? writeRelative);
  }
}

/** Expands a glob like bash (leading dots only matched explicitly); at most 10000 matches. */
function expandGlob(base: string, segments: readonly Segment[], list: NonNullable<BashPolicyOptions['listDirectory']>): string[] {
  let paths = [base];
  const last = segments.length - 1;
  segments.forEach((segment, index) => {
    if (segment.text === '') return;
    const next: string[] = [];
    for (const directory of paths) {
      const join = (name: string) => (directory === '/' ? `/${name}` : `${directory}/${name}`);
      if (!segment.glob) {
        next.push(join(segment.text));
        continue;
      }
      for (const entry of list(directory) ?? []) {
        if (entry.name === '.' || entry.name === '..' || !segment.matches(entry.name)) continue;
        if (index < last && !entry.directory) continue;
        next.push(join(entry.name));
      }
    }
    if (next.length > 10_000) throw new ParseFailure('a glob pattern matches more than 10000 paths');
    paths = next;
  });
  return paths.length === 1 && paths[0] === base ? [] : paths;
}

// ---------------------------------------------------------------------------------------------
// Arguments
// ---------------------------------------------------------------------------------------------

interface ArgSpec {
  /** Short option letters that take a value. */
  short?: string;
  /** Long options that take a value (given as the next word when not attached with "="). */
  long?: readonly string[];
  /** Everything from the first positional on is positional (prefix commands: `xargs -0 rm -f x`). */
  stopAtPositional?: boolean;
}

type Arg = { kind: 'option'; name: string; value?: Word } | { kind: 'positional'; word: Word; index: number } | { kind: 'end-of-options' };

function parseArgs(words: readonly Word[], spec: ArgSpec = {}): Arg[] {
  const args: Arg[] = [];
  let onlyPositional = false;
  for (let index = 0; index < words.length; index += 1) {
    const word = words[index]!;
    const value = literalOf(word);
    if (onlyPositional || value === undefined || !value.startsWith('-') || value === '-') {
      args.push({ kind: 'positional', word, index });
      if (spec.stopAtPositional) onlyPositional = true;
      continue;
    }
    if (value === '--') {
      onlyPositional = true;
      args.push({ kind: 'end-of-options' });
      continue;
    }
    const items = flatten(word);
    if (value.startsWith('--')) {
      const equals = value.indexOf('=');
      if (equals >= 0) {
        args.push({ kind: 'option', name: value.slice(0, equals), value: wordFromItems(items.slice(equals + 1)) });
      } else if (spec.long?.includes(value) && index + 1 < words.length) {
        index += 1;
        args.push({ kind: 'option', name: value, value: words[index]! });
      } else args.push({ kind: 'option', name: value });
      continue;
    }
    for (let position = 1; position < value.length; position += 1) {
      const letter = value[position]!;
      if (spec.short?.includes(letter)) {
        if (position + 1 < value.length) args.push({ kind: 'option', name: `-${letter}`, value: wordFromItems(items.slice(position + 1)) });
        else if (index + 1 < words.length) {
          index += 1;
          args.push({ kind: 'option', name: `-${letter}`, value: words[index]! });
        } else args.push({ kind: 'option', name: `-${letter}` });
        break;
      }
      if (!/[A-Za-z0-9]/.test(letter)) {
        // "-o/path", "-I../x": the rest is an attached value of the previous letter.
        const previous = args[args.length - 1];
        const name = position > 1 && previous?.kind === 'option' ? previous.name : `-${letter}`;
        if (previous?.kind === 'option' && position > 1) args.pop();
        args.push({ kind: 'option', name, value: wordFromItems(items.slice(position)) });
        break;
      }
      args.push({ kind: 'option', name: `-${letter}` });
    }
  }
  return args;
}

const positionals = (args: readonly Arg[]) => args.flatMap((arg) => (arg.kind === 'positional' ? [arg.word] : []));
const hasOption = (args: readonly Arg[], ...names: string[]) => args.some((arg) => arg.kind === 'option' && names.includes(arg.name));

type ArgRole = PathRole | 'data';

/** Path-checks every positional and option value with the given roles (default: read). */
function checkArgs(
  args: readonly Arg[],
  from: Set<string>,
  context: Context,
  label: string,
  roles: { positional?: (index: number, count: number) => ArgRole; option?: (name: string) => ArgRole; reader?: boolean } = {},
): void {
  const words = positionals(args);
  let index = 0;
  for (const arg of args) {
    if (arg.kind === 'positional') {
      const role = roles.positional?.(index, words.length) ?? 'read';
      index += 1;
      if (role !== 'data') checkPathWord(arg.word, role, from, context, label, roles.reader);
    } else if (arg.kind === 'option' && arg.value) {
      const role = roles.option?.(arg.name) ?? 'read';
      if (role !== 'data') checkPathWord(arg.value, role, from, context, label, roles.reader);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------------------------

const deniedCommands = new Map<string, string>([
  ['sudo', 'it runs commands as another user'],
  ['su', 'it runs commands as another user'],
  ['doas', 'it runs commands as another user'],
  ['pkexec', 'it runs commands as another user'],
  ['runuser', 'it runs commands as another user'],
  ['sg', 'it runs commands as another group'],
  ['newgrp', 'it runs commands as another group'],
  ['chroot', 'it changes the root directory'],
  ['nsenter', 'it enters other namespaces'],
  ['unshare', 'it creates new namespaces'],
  ['exec', 'it replaces the shell or rewires its file descriptors'],
  ['source', 'it runs a script inside the current shell, which cannot be checked'],
  ['.', 'it runs a script inside the current shell, which cannot be checked'],
  ['alias', 'it redefines commands'],
  ['unalias', 'it redefines commands'],
  ['trap', 'it runs commands later'],
  ['enable', 'it loads or disables shell builtins'],
  ['hash', 'it remaps command names to other programs'],
  ['fc', 'it re-runs commands from history'],
  ['history', 'it re-runs commands from history'],
  ['coproc', 'it starts a background process'],
  ['setsid', 'it starts a process that outlives the tool call'],
  ['nohup', 'it starts a process that outlives the tool call'],
  ['disown', 'it lets a process outlive the tool call'],
  ['crontab', 'it schedules commands'],
  ['at', 'it schedules commands'],
  ['batch', 'it schedules commands'],
  ['mount', 'it changes the file system layout'],
  ['umount', 'it changes the file system layout'],
  ['pkill', 'it kills processes by name, which can hit the orchestrator'],
  ['killall', 'it kills processes by name, which can hit the orchestrator'],
  ['flock', 'it runs a command the checker cannot see'],
  ['script', 'it runs a command the checker cannot see'],
  ['parallel', 'it runs commands the checker cannot see'],
  ['busybox', 'it is a multi-call binary whose applets cannot be checked'],
  ['ssh', 'it runs commands on another host (or this one) outside the jail'],
  ['scp', 'it copies files to or from other hosts'],
  ['sftp', 'it copies files to or from other hosts'],
  ['tmux', 'it starts sessions that outlive the tool call'],
  ['screen', 'it starts sessions that outlive the tool call'],
  ['systemd-run', 'it starts services that outlive the tool call'],
  ['start-stop-daemon', 'it starts daemons that outlive the tool call'],
  ['daemonize', 'it starts daemons that outlive the tool call'],
  ['vi', 'interactive editors can run shell commands'],
  ['vim', 'interactive editors can run shell commands'],
  ['nvim', 'interactive editors can run shell commands'],
  ['view', 'interactive editors can run shell commands'],
  ['ex', 'interactive editors can run shell commands'],
  ['ed', 'interactive editors can run shell commands'],
  ['emacs', 'interactive editors can run shell commands'],
  ['complete', 'it registers commands to run later'],
  ['compgen', 'it can run commands given as strings'],
]);

/** Words bash reads as syntax at the start of a command: never a command name in a correct parse. */
const reservedWords = new Set(['{', '}', '!', '[[', ']]', 'if', 'then', 'elif', 'else', 'fi', 'for', 'select', 'while', 'until', 'do', 'done', 'case', 'esac', 'in', 'function']);

const posixShells = new Set(['bash', 'sh', 'dash', 'zsh', 'ksh', 'mksh', 'ash', 'yash', 'posh', 'rbash']);
const otherShells = new Set(['fish', 'csh', 'tcsh', 'xonsh', 'nu', 'pwsh', 'elvish', 'rc']);
const readerCommands = new Set(['cat', 'head', 'tail', 'less', 'more', 'grep', 'egrep', 'fgrep', 'rg', 'wc', 'diff', 'cmp', 'file', 'stat', 'ls', 'jq', 'yq', 'sort', 'uniq', 'cut', 'nl', 'od', 'xxd', 'hexdump', 'md5sum', 'sha1sum', 'sha256sum', 'shasum', 'sed', 'awk']);

const argSpecs: Record<string, ArgSpec> = {
  grep: { short: 'efABCmdD', long: ['--regexp', '--file', '--after-context', '--before-context', '--context', '--max-count', '--devices', '--directories', '--binary-files', '--label', '--exclude', '--include', '--exclude-dir', '--exclude-from'] },
  rg: {
    short: 'efABCmgtTrjMdE',
    long: ['--regexp', '--file', '--after-context', '--before-context', '--context', '--max-count', '--glob', '--iglob', '--type', '--type-not', '--replace', '--threads', '--max-columns', '--max-depth', '--max-filesize', '--encoding', '--type-add', '--sort', '--sortr', '--colors', '--color', '--path-separator', '--pre', '--pre-glob', '--ignore-file'],
  },
  sed: { short: 'efl', long: ['--expression', '--file', '--line-length'] },
  awk: { short: 'fvF', long: ['--file', '--assign', '--field-separator'] },
  touch: { short: 'drt', long: ['--date', '--reference'] },
  truncate: { short: 'sr', long: ['--size', '--reference'] },
  rm: {},
  tee: { long: ['--output-error'] },
  mv: { short: 'tS', long: ['--target-directory', '--suffix'] },
  cp: { short: 'tS', long: ['--target-directory', '--suffix'] },
  install: { short: 'tSmogC', long: ['--target-directory', '--suffix', '--mode', '--owner', '--group'] },
  ln: { short: 'tS', long: ['--target-directory', '--suffix'] },
  mkdir: { short: 'm', long: ['--mode'] },
  chmod: { long: ['--reference'] },
  chown: { long: ['--reference', '--from'] },
  chgrp: { long: ['--reference'] },
  npx: { short: 'p', long: ['--package'] },
  bunx: { short: 'p', long: ['--package'] },
  pnpx: { short: 'p', long: ['--package'] },
  xargs: { short: 'IndPEeLlsa', long: ['--max-args', '--max-procs', '--delimiter', '--eof', '--max-lines', '--max-chars', '--arg-file', '--replace', '--process-slot-var'] },
  timeout: { short: 'sk', long: ['--signal', '--kill-after'] },
  nice: { short: 'n', long: ['--adjustment'] },
  stdbuf: { short: 'ioe', long: ['--input', '--output', '--error'] },
  env: { short: 'uCS', long: ['--unset', '--chdir', '--split-string'] },
  curl: { short: 'oKTdHXAeuFbcEw', long: ['--output', '--config', '--upload-file', '--data', '--header', '--request', '--user-agent', '--referer', '--user', '--form', '--cookie', '--cookie-jar', '--cert', '--write-out', '--trace', '--trace-ascii', '--dump-header', '--stderr'] },
  wget: { short: 'OoPaiU', long: ['--output-document', '--output-file', '--directory-prefix', '--append-output', '--input-file', '--user-agent'] },
  tar: { short: 'fCTX', long: ['--file', '--directory', '--files-from', '--exclude-from'] },
};

function evaluateCommand(words: Word[], from: Set<string>, context: Context, info: CommandInfo): Outcome {
  const nameWord = words[0]!;
  const rest = words.slice(1);
  const label = info.label;
  const name = literalOf(nameWord);
  if (name === undefined) throw unsafe(`the command name in "${label}" is computed at run time, so it cannot be checked`);
  if (reservedWords.has(name)) {
    // tree-sitter reads `time { …; }`, `time for …` as a command named `time` with words: what
    // bash runs there is a compound command the walk did not see
    const hint = /^time\b/.test(label) ? ' (write the compound command without "time")' : '';
    throw unsafe(`"${label}" has the reserved word "${name}" where a command name belongs, which the checker's parser cannot follow${hint}`);
  }
  if (name !== '[' && hasGlob(nameWord)) throw unsafe(`the command name "${name}" in "${label}" is a glob pattern, so what runs cannot be checked`);
  if (name.includes('/')) checkPathWord(nameWord, 'exec', from, context, label);
  const base = posix.basename(name);
  const denied = deniedCommands.get(base);
  if (denied !== undefined) throw unsafe(`"${base}" is not allowed for agents because ${denied}`);
  if (base.startsWith('git-') || base === 'hub' || base === 'gh') throw forbiddenGit(base, 'git helpers and wrappers bypass the git checks (they can push, fetch or move HEAD)');

  switch (base) {
    case 'cd':
    case 'pushd':
    case 'popd':
      return { success: evaluateDirectoryChange(base, rest, from, context, label), failure: from };
    case 'git':
      checkGit(rest, from, context, label);
      return both(from);
    case 'command':
    case 'builtin': {
      let index = 0;
      while (index < rest.length && /^-[pvV]+$/.test(literalOf(rest[index]!) ?? '')) {
        if (/[vV]/.test(literalOf(rest[index]!)!)) return both(from);
        index += 1;
      }
      return index < rest.length ? evaluateCommand(rest.slice(index), from, context, info) : both(from);
    }
    case 'time':
    case 'nice':
    case 'timeout':
    case 'stdbuf':
    case 'xargs':
    case 'env':
    case 'npx':
    case 'bunx':
    case 'pnpx':
      return both(evaluatePrefixCommand(base, rest, from, context, info));
    case 'eval': {
      // eval runs its joined arguments in this shell: checked like a nested command line
      const texts = rest.map((word) => literalOf(word));
      if (texts.some((text) => text === undefined)) throw unsafe(`the command string of "${label}" is computed at run time, so it cannot be checked`);
      return checkNestedShell(texts.join(' '), from, context, label);
    }
    case 'watch': {
      const args = parseArgs(rest, { short: 'nd', long: ['--interval', '--differences'] });
      const command = positionals(args);
      if (hasOption(args, '-x', '--exec')) {
        if (command.length > 0) evaluateCommand(command, from, context, { label, stdinIsData: false });
      } else {
        const texts = command.map((word) => literalOf(word));
        if (texts.some((text) => text === undefined)) throw unsafe(`the command watched by "${label}" is computed at run time`);
        checkNestedShell(texts.join(' '), from, context, label);
      }
      return both(from);
    }
    case 'shopt': {
      const values = rest.map((word) => literalOf(word) ?? '');
      if (values.some((value) => ['cdable_vars', 'dotglob', 'globskipdots', 'extglob'].includes(value)) && values.some((value) => /^-[su]$/.test(value))) {
        throw unsafe(`"${label}" changes how bash expands paths, which the checker relies on`);
      }
      return both(from);
    }
    case 'export':
    case 'declare':
    case 'typeset':
    case 'local':
    case 'readonly': {
      for (const word of rest) checkDeclarationWord(word, from, context, label);
      return both(from);
    }
    case 'read':
    case 'mapfile':
    case 'readarray':
    case 'getopts':
    case 'unset':
      if ((base === 'mapfile' || base === 'readarray') && rest.some((word) => /^-[a-zA-Z]*C/.test(literalOf(word) ?? ''))) {
        throw unsafe(`"${label}" runs a callback command string, which cannot be checked`);
      }
      for (const word of rest) {
        const value = literalOf(word);
        if (value !== undefined && /^[A-Za-z_][A-Za-z0-9_]*$/.test(value)) checkVariableName(value, label);
      }
      return both(from);
    case 'printf': {
      const args = parseArgs(rest, { short: 'v' });
      for (const arg of args) {
        if (arg.kind !== 'option' || arg.name !== '-v' || !arg.value) continue;
        const name = literalOf(arg.value);
        if (name === undefined) throw unsafe(`"${label}" assigns a variable whose name is computed at run time`);
        checkVariableName(name, label);
      }
      checkArgs(args.filter((arg) => !(arg.kind === 'option' && arg.name === '-v')), from, context, label);
      return both(from);
    }
    case 'kill':
      if (rest.length > 0 && literalOf(rest[rest.length - 1]!) === '-1') throw unsafe(`"${label}" signals every process of the user`);
      return both(from);
    case 'find':
      checkFind(rest, from, context, info);
      return both(from);
    case 'ln':
      checkLink(rest, from, context, label);
      return both(from);
    default:
      break;
  }

  if (posixShells.has(base) || otherShells.has(base)) {
    checkShellInvocation(base, rest, from, context, info);
    return both(from);
  }
  if (interpreterKind(base) !== undefined) {
    checkInterpreter(base, rest, from, context, info);
    return both(from);
  }
  checkOrdinaryCommand(base, rest, from, context, label);
  return both(from);
}

function evaluateDirectoryChange(name: 'cd' | 'pushd' | 'popd', args: Word[], from: Set<string>, context: Context, label: string): Set<string> {
  if (context.loopDepth > 0) throw unsafe(`"${label}" changes directory inside a loop, which cannot be tracked statically`);
  if (context.functionDepth > 0) throw unsafe(`"${label}" changes directory inside a function, which cannot be tracked statically`);
  if (name === 'popd') return new Set(context.seen);
  let physical = false;
  let target: Word | undefined;
  for (let index = 0; index < args.length; index += 1) {
    const value = literalOf(args[index]!);
    if (value === '--') {
      target = args[index + 1];
      break;
    }
    if (value !== undefined && /^-[LPe@n]+$/.test(value)) {
      if (value.includes('P')) physical = true;
      continue;
    }
    target = args[index];
    break;
  }
  if (target === undefined) {
    if (name === 'pushd') return new Set(context.seen);
    throw escape(`"${label}" without a directory goes to $HOME, outside the worktree`);
  }
  const value = literalOf(target);
  if (value === '-') throw escape(`"${label}" returns to $OLDPWD, which may be outside the worktree`);
  if (name === 'pushd' && value !== undefined && /^[+-]\d+$/.test(value)) return new Set(context.seen);
  let directories = checkPathWord(target, 'cd', from, context, label);
  if (directories.size === 0) return from;
  if (physical && context.options.resolvePath) {
    const resolvePath = context.options.resolvePath;
    directories = new Set([...directories].map((directory) => {
      const resolved = resolvePath(context.root, directory === '' ? '.' : directory);
      return resolved === context.root ? '' : resolved.slice(context.root.length + 1);
    }));
  }
  for (const directory of directories) context.seen.add(directory);
  return directories;
}

function evaluatePrefixCommand(base: string, words: Word[], from: Set<string>, context: Context, info: CommandInfo): Set<string> {
  const label = info.label;
  let start = words.length;
  if (base === 'env') {
    let index = 0;
    while (index < words.length) {
      const word = words[index]!;
      const value = literalOf(word);
      if (value === undefined) break;
      if (['-i', '--ignore-environment', '-0', '--null', '-v', '--debug', '-', '--'].includes(value)) index += 1;
      else if (value === '-u' || value === '--unset') index += 2;
      else if (value.startsWith('--unset=') || /^-u./.test(value)) index += 1;
      else if (/^(-C|--chdir|-S|--split-string)/.test(value)) {
        throw unsafe(`"${label}" uses env ${value}, which changes directory or splits a command string the checker cannot see`);
      } else if (value.startsWith('-')) {
        throw unsafe(`"${label}" uses the env option ${value}, which the checker does not know`);
      } else {
        const assignment = splitAssignment(word);
        if (!assignment) break;
        checkVariableName(assignment.name, label);
        checkAssignmentValue(assignment.value, from, context, label);
        index += 1;
      }
    }
    start = index;
  } else {
    const args = parseArgs(words, { ...(argSpecs[base] ?? {}), stopAtPositional: true });
    if ((base === 'npx' || base === 'bunx' || base === 'pnpx') && hasOption(args, '-c', '--call')) throw unsafe(`"${label}" runs a command string the checker cannot see`);
    checkArgs(
      args.filter((arg) => arg.kind === 'option'),
      from,
      context,
      label,
      { option: (name) => (base === 'xargs' && (name === '-a' || name === '--arg-file') ? 'read' : 'data') },
    );
    const first = args.find((arg) => arg.kind === 'positional');
    if (first?.kind === 'positional') start = first.index + (base === 'timeout' ? 1 : 0);
  }
  const command = words.slice(start);
  if (command.length === 0) return from;
  // xargs, timeout, nice… run the command in a child: directory changes do not persist.
  evaluateCommand(command, from, context, { label, stdinIsData: info.stdinIsData || base === 'xargs' });
  return from;
}

/** A command string run by a nested shell or eval (re-parsed): the outcome of its last statement. */
function checkNestedShell(command: string, from: Set<string>, context: Context, label: string): Outcome {
  const tree = parseChecked(command, context.parser, `the command string of "${label}"`);
  context.nesting += 1;
  try {
    if (context.nesting > maximumNesting) throw new ParseFailure('commands are nested too deeply');
    return evaluateSequence(statementsOf(tree.rootNode), from, context);
  } finally {
    context.nesting -= 1;
    tree.delete();
  }
}

function checkShellInvocation(base: string, words: Word[], from: Set<string>, context: Context, info: CommandInfo): void {
  const label = info.label;
  let commandFlag = false;
  let index = 0;
  for (; index < words.length; index += 1) {
    const value = literalOf(words[index]!);
    if (value === undefined) throw unsafe(`the arguments of "${label}" are computed at run time`);
    if (value === '--' || value === '-') {
      index += 1;
      break;
    }
    if (!/^[-+]/.test(value)) break;
    if (value === '--rcfile' || value === '--init-file') {
      index += 1;
      if (words[index]) checkPathWord(words[index]!, 'read', from, context, label);
      continue;
    }
    if (value.startsWith('--')) continue;
    if (value.slice(1).includes('s')) throw unsafe(`"${label}" makes the shell read commands from stdin`);
    if (value.slice(1).includes('c')) commandFlag = true;
    if (/^[-+][oO]$/.test(value)) {
      index += 1;
      const option = literalOf(words[index] ?? { parts: [], text: '' }) ?? '';
      if (['cdable_vars', 'dotglob', 'extglob'].includes(option)) throw unsafe(`"${label}" changes how the shell expands paths`);
    }
  }
  const operands = words.slice(index);
  if (commandFlag) {
    if (otherShells.has(base)) throw unsafe(`"${base} -c" strings use a syntax the checker does not parse`);
    const script = operands[0];
    const text = script ? literalOf(script) : undefined;
    if (text === undefined) throw unsafe(`the command string of "${label}" is computed at run time, so it cannot be checked`);
    checkNestedShell(text, from, context, label);
    return;
  }
  const script = operands[0];
  if (script === undefined) {
    if (info.stdinIsData) throw unsafe(`"${label}" reads commands from stdin, which cannot be checked`);
    return;
  }
  for (const operand of operands) checkPathWord(operand, 'read', from, context, label);
}

type InterpreterKind = 'node' | 'python' | 'perl' | 'ruby' | 'php' | 'deno' | 'lua';

function interpreterKind(base: string): InterpreterKind | undefined {
  if (['node', 'nodejs', 'bun', 'tsx', 'ts-node'].includes(base)) return 'node';
  if (/^python[0-9.]*$/.test(base) || base === 'pypy' || base === 'pypy3') return 'python';
  if (base === 'perl') return 'perl';
  if (base === 'ruby') return 'ruby';
  if (base === 'php') return 'php';
  if (base === 'deno') return 'deno';
  if (base === 'lua' || base === 'luajit') return 'lua';
  return undefined;
}

function checkInterpreter(base: string, words: Word[], from: Set<string>, context: Context, info: CommandInfo): void {
  const kind = interpreterKind(base)!;
  const label = info.label;
  const codeFlag = (value: string): boolean => {
    switch (kind) {
      case 'node':
        return ['-e', '--eval', '-p', '--print', '-pe', '-ep'].includes(value);
      case 'python':
        return /^-[A-Za-z]*c$/.test(value);
      case 'perl':
      case 'ruby':
        return /^-[A-Za-z0-9.]*[eE]$/.test(value);
      case 'php':
        return value === '-r';
      case 'lua':
        return value === '-e';
      case 'deno':
        return false;
    }
  };
  const denoSubcommands = new Set(['run', 'test', 'task', 'fmt', 'lint', 'check', 'compile', 'bench', 'info', 'doc']);
  let program: 'none' | 'inline' | 'file' | 'stdin' = 'none';
  let inPlace = false;
  const code: Word[] = [];
  const rest: Word[] = [];
  for (let index = 0; index < words.length; index += 1) {
    const word = words[index]!;
    const value = literalOf(word);
    if (program !== 'none') {
      rest.push(word);
      continue;
    }
    if (value === undefined) {
      program = 'file';
      checkPathWord(word, 'read', from, context, label);
      continue;
    }
    if (kind === 'deno' && value === 'eval') {
      if (words[index + 1]) code.push(words[index + 1]!);
      index += 1;
      program = 'inline';
      continue;
    }
    if (kind === 'deno' && denoSubcommands.has(value)) continue;
    if ((kind === 'perl' || kind === 'ruby') && /^-[A-Za-z0-9]*i/.test(value)) inPlace = true;
    if (codeFlag(value)) {
      if (words[index + 1]) code.push(words[index + 1]!);
      index += 1;
      program = 'inline';
      continue;
    }
    if (kind === 'node' && /^--(eval|print)=/.test(value)) {
      code.push(wordFromItems(flatten(word).slice(value.indexOf('=') + 1)));
      program = 'inline';
      continue;
    }
    if (value === '-') {
      program = 'stdin';
      continue;
    }
    if (value.startsWith('-')) {
      rest.push(word);
      continue;
    }
    program = 'file';
    checkPathWord(word, 'read', from, context, label);
  }
  if (program === 'stdin' || (program === 'none' && info.stdinIsData)) {
    throw unsafe(`"${label}" runs a program read from stdin, which cannot be checked`);
  }
  for (const word of code) {
    const text = literalOf(word);
    if (text === undefined) throw unsafe(`the inline program of "${label}" is built from shell expansions, which cannot be checked`);
    scanInlineCode(text, kind, from, context, label);
  }
  checkArgs(parseArgs(rest), from, context, label, { positional: () => (inPlace ? 'write' : 'read') });
}

const inlineCommandExecution =
  /child_process|\bsymlink\w*|\blink(Sync)?\s*\(|subprocess|\bos\.(system|popen|exec\w*|spawn\w*|fork)\b|\bexecSync\b|\bexecFileSync\b|\bspawnSync\b|\bspawn\s*\(|\bsystem\s*\(|\bpopen\b|\bqx\b|Deno\.(run|Command)|Bun\.spawn|\bshell_exec\b|\bpassthru\b|\bproc_open\b|\bIO\.popen\b|\bOpen3\b|\bKernel\.exec\b|\bos\.execute\b|\bio\.popen\b/;
const inlineLocations = /\b(homedir|tmpdir|expanduser|gettempdir|mkdtemp\w*|Dir\.home|Path\.home|chdir|getcwd)\b|\b(HOME|TMPDIR|TMP|TEMP|USERPROFILE|OLDPWD|CDPATH)\b/;

/** A conservative scan of `node -e`/`python -c`/… programs for paths and process launches. */
function scanInlineCode(code: string, kind: InterpreterKind, from: Set<string>, context: Context, label: string): void {
  const execution = inlineCommandExecution.exec(code);
  if (execution) throw unsafe(`the inline program of "${label}" starts other commands (${execution[0]}), which cannot be checked`);
  if ((kind === 'perl' || kind === 'ruby' || kind === 'php') && code.includes('`')) throw unsafe(`the inline program of "${label}" runs commands in backticks, which cannot be checked`);
  const location = inlineLocations.exec(code);
  if (location) throw escape(`the inline program of "${label}" refers to ${location[0]}, a location outside the worktree`);
  const literal = /(['"`])((?:\\.|(?!\1)[^\\\n])*)\1/g;
  const candidates = [...code.matchAll(literal)].map((match) => match[2]!);
  // Absolute paths outside quotes too (Ruby %q(/etc/x), Perl q(/etc/x), bare words): after a delimiter, not "//".
  // With a directory lister only paths whose first segment exists under / count (so regex literals like /foo/ pass).
  const topLevel = context.options.listDirectory ? new Set((context.options.listDirectory('/') ?? []).map((entry) => entry.name)) : undefined;
  for (const match of code.matchAll(/(?:^|[\s(,=[{<>|;:])(\/(?!\/)[A-Za-z0-9._~-][^\s'"`()<>|;,\]}]*)/g)) {
    const candidate = match[1]!;
    if (topLevel === undefined || topLevel.has(candidate.split('/')[1] ?? '') || isInside(context.root, posix.normalize(candidate))) candidates.push(candidate);
  }
  for (const text of candidates) {
    if (!(text.startsWith('/') || text.startsWith('~') || text === '..' || text.startsWith('../') || text.includes('/../') || text.endsWith('/..'))) continue;
    const word: Word = { parts: [{ kind: 'lit', text, quoted: !text.startsWith('~') }], text };
    if (text.startsWith('~')) throw escape(`the inline program of "${label}" uses the path "${text}", in the home directory`);
    checkPathWord(word, 'read', from, context, `${label}`);
  }
}

function checkOrdinaryCommand(base: string, words: Word[], from: Set<string>, context: Context, label: string): void {
  const spec = argSpecs[base === 'egrep' || base === 'fgrep' ? 'grep' : base === 'gawk' || base === 'mawk' || base === 'nawk' ? 'awk' : base] ?? {};
  const args = parseArgs(words, spec);
  const reader = readerCommands.has(base);
  switch (base) {
    case 'touch':
    case 'rm':
    case 'unlink':
    case 'shred':
    case 'truncate':
    case 'tee':
      checkArgs(args, from, context, label, { positional: () => 'write', option: () => 'read' });
      return;
    case 'chmod':
    case 'chown':
    case 'chgrp': {
      const reference = hasOption(args, '--reference');
      checkArgs(args, from, context, label, { positional: (index) => (index === 0 && !reference ? 'data' : 'write') });
      return;
    }
    case 'mv':
      checkArgs(args, from, context, label, { positional: () => 'write', option: (name) => (name === '-t' || name === '--target-directory' ? 'write' : 'data') });
      return;
    case 'cp':
    case 'install': {
      if (hasOption(args, '-s', '--symbolic-link', '-l', '--link')) throw unsafe(`"${label}" creates links, use ln (its targets are checked)`);
      const target = hasOption(args, '-t', '--target-directory');
      checkArgs(args, from, context, label, {
        positional: (index, total) => (!target && index === total - 1 && total > 1 ? 'write' : 'read'),
        option: (name) => (name === '-t' || name === '--target-directory' ? 'write' : name === '-S' || name === '--suffix' || name === '-m' || name === '--mode' || name === '-o' || name === '-g' ? 'data' : 'read'),
      });
      return;
    }
    case 'dd':
      for (const word of words) {
        const value = literalOf(word);
        const items = flatten(word);
        if (value?.startsWith('of=')) checkPathWord(wordFromItems(items.slice(3)), 'write', from, context, label);
        else if (value?.startsWith('if=')) checkPathWord(wordFromItems(items.slice(3)), 'read', from, context, label);
        else if (value === undefined) checkPathWord(word, 'write', from, context, label);
      }
      return;
    case 'sed': {
      const inPlace = args.some((arg) => arg.kind === 'option' && (arg.name === '-i' || arg.name === '--in-place' || arg.name.startsWith('--in-place')));
      const explicitScript = hasOption(args, '-e', '--expression', '-f', '--file');
      for (const arg of args) {
        if (arg.kind === 'option' && (arg.name === '-e' || arg.name === '--expression') && arg.value) checkSedScript(arg.value, label);
      }
      let index = 0;
      for (const arg of args) {
        if (arg.kind === 'positional') {
          if (index === 0 && !explicitScript) checkSedScript(arg.word, label);
          else checkPathWord(arg.word, inPlace ? 'write' : 'read', from, context, label, reader);
          index += 1;
        } else if (arg.kind === 'option' && (arg.name === '-f' || arg.name === '--file')) {
          throw unsafe(`"${label}" runs a sed script from a file, which cannot be checked`);
        }
      }
      return;
    }
    case 'awk':
    case 'gawk':
    case 'mawk':
    case 'nawk': {
      if (args.some((arg) => arg.kind === 'option' && (arg.name === '-i' || arg.name === '--include' || arg.name === '-l' || arg.name === '--load'))) {
        throw unsafe(`"${label}" loads awk extensions or edits in place`);
      }
      const programFile = hasOption(args, '-f', '--file');
      let index = 0;
      for (const arg of args) {
        if (arg.kind === 'positional') {
          if (index === 0 && !programFile) checkAwkProgram(arg.word, label);
          else if (!/^[A-Za-z_][A-Za-z0-9_]*=/.test(literalOf(arg.word) ?? '')) checkPathWord(arg.word, 'read', from, context, label, reader);
          index += 1;
        } else if (arg.kind === 'option' && arg.value && (arg.name === '-f' || arg.name === '--file')) {
          checkPathWord(arg.value, 'read', from, context, label);
        }
      }
      return;
    }
    case 'grep':
    case 'egrep':
    case 'fgrep':
    case 'rg': {
      if (base === 'rg' && hasOption(args, '--pre', '-L', '--follow')) throw unsafe(`"${label}" runs a preprocessor or follows symbolic links out of the worktree`);
      if (base !== 'rg' && hasOption(args, '-R', '--dereference-recursive')) throw escape(`"${label}" follows symbolic links, which can lead out of the worktree (use -r)`);
      const explicitPattern = hasOption(args, '-e', '--regexp', '-f', '--file');
      checkArgs(args, from, context, label, {
        reader: true,
        positional: (index) => (index === 0 && !explicitPattern ? 'data' : 'read'),
        option: (name) => (['-f', '--file', '--exclude-from', '--ignore-file'].includes(name) ? 'read' : 'data'),
      });
      return;
    }
    case 'curl':
    case 'wget':
      checkArgs(args, from, context, label, {
        positional: () => 'data',
        option: (name) =>
          ['-o', '--output', '-O', '--output-document', '--output-file', '--cookie-jar', '--trace', '--trace-ascii', '--dump-header', '--stderr', '-a', '--append-output'].includes(name)
            ? 'write'
            : ['-K', '--config', '-T', '--upload-file', '-i', '--input-file', '-P', '--directory-prefix', '--cert'].includes(name)
              ? 'read'
              : 'data',
      });
      return;
    case 'tar':
      if (hasOption(args, '-P', '--absolute-names')) throw escape(`"${label}" keeps absolute member names, which can write outside the worktree`);
      if (hasOption(args, '--to-command', '--use-compress-program', '-I', '--checkpoint-action', '--info-script', '--new-volume-script', '-F', '--rsh-command')) {
        throw unsafe(`"${label}" runs helper commands the checker cannot see`);
      }
      checkArgs(args, from, context, label);
      return;
    case 'rsync':
      if (args.some((arg) => arg.kind === 'option' && ['-e', '--rsh', '--rsync-path', '-L', '--copy-links', '-k', '--copy-dirlinks'].includes(arg.name))) {
        throw unsafe(`"${label}" runs a remote shell or follows symbolic links`);
      }
      checkArgs(args, from, context, label, { positional: (index, total) => (index === total - 1 && total > 1 ? 'write' : 'read') });
      return;
    case 'npm':
    case 'pnpm':
    case 'yarn':
    case 'bun': {
      if (args.some((arg) => arg.kind === 'option' && (arg.name === '-c' || arg.name === '--call'))) throw unsafe(`"${label}" runs a command string the checker cannot see`);
      if (hasOption(args, '-g', '--global', '--location') || literalOf(positionals(args)[0] ?? { parts: [], text: '' }) === 'global') {
        throw escape(`"${label}" installs globally, outside the worktree`);
      }
      const first = positionals(args)[0];
      const subcommand = first ? literalOf(first) : undefined;
      if (subcommand !== undefined && ['exec', 'x', 'dlx'].includes(subcommand)) {
        const rest = words.slice(words.indexOf(first!) + 1);
        const command = rest[0] !== undefined && literalOf(rest[0]) === '--' ? rest.slice(1) : rest;
        if (command.length > 0) evaluatePrefixCommand('npx', command, from, context, { label, stdinIsData: false });
        return;
      }
      checkArgs(args, from, context, label);
      return;
    }
    default:
      checkArgs(args, from, context, label, { reader });
  }
}

/**
 * sed scripts are parsed (GNU syntax: addresses, `!`, blocks, s/y with any delimiter and flags,
 * a/i/c text, labels); the r R w W e commands and the s///e and s///w flags are refused: they
 * read or write other files or run commands.
 */
function checkSedScript(word: Word, label: string): void {
  const script = literalOf(word);
  if (script === undefined) throw unsafe(`the sed script of "${label}" is built from shell expansions`);
  const refuse = (what: string) => unsafe(`the sed script of "${label}" uses ${what}, which reads, writes or runs things the checker cannot see`);
  let index = 0;
  const at = () => script[index];
  /** Skips a delimited part (`/re/`, the two parts of s and y), honouring backslash escapes. */
  const skipDelimited = (delimiter: string) => {
    for (; index < script.length; index += 1) {
      if (script[index] === '\\') index += 1;
      else if (script[index] === delimiter) {
        index += 1;
        return;
      }
      else if (script[index] === '\n' && delimiter !== '\n') break;
    }
    throw unsafe(`the sed script of "${label}" cannot be parsed`);
  };
  const skipAddress = () => {
    const c = at();
    if (c === '/') {
      index += 1;
      skipDelimited('/');
    } else if (c === '\\') {
      const delimiter = script[index + 1] ?? '';
      index += 2;
      skipDelimited(delimiter);
    } else {
      while (index < script.length && /[0-9$~+]/.test(script[index]!)) index += 1;
    }
    while (at() === 'I' || at() === 'M') index += 1;
  };
  const toLineEnd = () => {
    while (index < script.length && script[index] !== '\n') index += 1;
  };
  while (index < script.length) {
    const c = at()!;
    if (/[\s;}]/.test(c)) {
      index += 1;
      continue;
    }
    if (c === '#') {
      toLineEnd();
      continue;
    }
    skipAddress();
    if (at() === ',') {
      index += 1;
      skipAddress();
    }
    while (at() === ' ' || at() === '\t') index += 1;
    if (at() === '!') index += 1;
    while (at() === ' ' || at() === '\t') index += 1;
    const command = at();
    if (command === undefined) break;
    index += 1;
    if (command === '{') continue;
    if (command === 's') {
      const delimiter = at();
      if (delimiter === undefined || delimiter === '\n' || delimiter === '\\') throw unsafe(`the sed script of "${label}" cannot be parsed`);
      index += 1;
      skipDelimited(delimiter);
      skipDelimited(delimiter);
      while (index < script.length && /[gpiImMe0-9w]/.test(script[index]!)) {
        if (script[index] === 'e') throw refuse('the s///e flag');
        if (script[index] === 'w') throw refuse('the s///w flag');
        index += 1;
      }
      continue;
    }
    if (command === 'y') {
      const delimiter = at() ?? '';
      index += 1;
      skipDelimited(delimiter);
      skipDelimited(delimiter);
      continue;
    }
    if ('rRwWe'.includes(command)) throw refuse(`the "${command}" command`);
    if ('aic:'.includes(command)) {
      toLineEnd();
      continue;
    }
    if ('btTqQlL'.includes(command)) {
      while (index < script.length && !/[;\n}]/.test(script[index]!)) index += 1;
      continue;
    }
    if ('=dDgGhHnNpPxzF'.includes(command)) continue;
    throw unsafe(`the sed script of "${label}" has the command "${command}", which the checker does not know`);
  }
}

/** awk programs: no system(), getline, pipes or output redirection. */
function checkAwkProgram(word: Word, label: string): void {
  const program = literalOf(word);
  if (program === undefined) throw unsafe(`the awk program of "${label}" is built from shell expansions`);
  if (/\bsystem\s*\(|\bgetline\b|\|\s*["&]|\|\s*[A-Za-z_]|>\s*"|>>|\bclose\s*\(|\bENVIRON\b/.test(program)) {
    throw unsafe(`the awk program of "${label}" runs commands or redirects output, which cannot be checked`);
  }
}

function checkFind(words: Word[], from: Set<string>, context: Context, info: CommandInfo): void {
  const label = info.label;
  const patternTests = new Set(['-name', '-iname', '-path', '-ipath', '-wholename', '-iwholename', '-regex', '-iregex', '-lname', '-ilname']);
  const writeTests = new Set(['-fprint', '-fprint0', '-fprintf', '-fls']);
  const valueTests = new Set(['-type', '-xtype', '-maxdepth', '-mindepth', '-mtime', '-mmin', '-atime', '-amin', '-ctime', '-cmin', '-size', '-perm', '-user', '-group', '-uid', '-gid', '-links', '-inum', '-printf', '-fstype', '-regextype', '-used', '-newerXY']);
  let expression = false;
  for (let index = 0; index < words.length; index += 1) {
    const word = words[index]!;
    const value = literalOf(word);
    if (value !== undefined && ['-L', '-H', '-follow'].includes(value)) throw escape(`"${label}" follows symbolic links, which can lead out of the worktree`);
    if (!expression && value !== undefined && (value.startsWith('-') || value === '(' || value === '!' || value === ')')) expression = true;
    if (!expression) {
      checkPathWord(word, 'read', from, context, label);
      continue;
    }
    if (value === undefined) {
      checkPathWord(word, 'read', from, context, label);
      continue;
    }
    if (patternTests.has(value) || valueTests.has(value) || /^-newer[a-zA-Z]{2}$/.test(value)) {
      index += 1;
      continue;
    }
    if (writeTests.has(value)) {
      index += 1;
      if (words[index]) checkPathWord(words[index]!, 'write', from, context, label);
      if (value === '-fprintf') index += 1;
      continue;
    }
    if (['-newer', '-anewer', '-cnewer', '-samefile'].includes(value)) {
      index += 1;
      if (words[index]) checkPathWord(words[index]!, 'read', from, context, label);
      continue;
    }
    if (['-exec', '-execdir', '-ok', '-okdir'].includes(value)) {
      const command: Word[] = [];
      for (index += 1; index < words.length; index += 1) {
        const inner = literalOf(words[index]!);
        if (inner === ';' || inner === '+') break;
        command.push(words[index]!);
      }
      if (command.length > 0) evaluateCommand(command, from, context, { label, stdinIsData: false });
      continue;
    }
    if (value.startsWith('-') || ['(', ')', '!', ',', '{}'].includes(value)) continue;
    checkPathWord(word, 'read', from, context, label);
  }
}

function checkLink(words: Word[], from: Set<string>, context: Context, label: string): void {
  const args = parseArgs(words, argSpecs.ln);
  const symbolic = hasOption(args, '-s', '--symbolic');
  const targetDirectoryArg = args.find((arg) => arg.kind === 'option' && (arg.name === '-t' || arg.name === '--target-directory'));
  const operands = positionals(args);
  let linkWord: Word | undefined;
  let targets: Word[];
  if (targetDirectoryArg?.kind === 'option' && targetDirectoryArg.value) {
    linkWord = targetDirectoryArg.value;
    targets = operands;
  } else if (operands.length >= 2) {
    linkWord = operands[operands.length - 1]!;
    targets = operands.slice(0, -1);
  } else {
    targets = operands;
  }
  checkLinkTargets(targets, linkWord, symbolic, from, context, label);
  if (linkWord) checkPathWord(linkWord, 'write', from, context, label);
}

function checkLinkTargets(targets: Word[], linkWord: Word | undefined, symbolic: boolean, from: Set<string>, context: Context, label: string): void {
  for (const target of targets) {
    if (literalOf(target) === undefined) throw unsafe(`the link target in "${label}" is computed at run time, so it cannot be checked`);
    checkPathWord(target, 'read', from, context, label);
    if (!symbolic) continue;
    const value = literalOf(target)!;
    if (value.startsWith('/')) {
      if (posix.normalize(value).replace(/\/+$/, '') === context.root) throw escape(`the symbolic link "${value}" created by "${label}" would point at the worktree root, and ".." through it leaves the root`);
      continue; // checked above (inside the root)
    }
    // A relative symlink target is resolved from the link's directory, not from the shell's.
    const linkValue = linkWord ? literalOf(linkWord) : undefined;
    if (linkWord && linkValue === undefined) throw unsafe(`the link name in "${label}" is computed at run time`);
    for (const directory of from) {
      const base = linkValue === undefined ? directory : posix.normalize(linkValue.startsWith('/') ? linkValue : `${directory === '' ? '.' : directory}/${linkValue}`);
      const linkDirectories = linkValue === undefined ? [base] : [posix.dirname(base), base];
      for (const linkDirectory of linkDirectories) {
        const absoluteDirectory = linkDirectory.startsWith('/') ? linkDirectory : posix.join(context.root, linkDirectory);
        const resolved = posix.normalize(`${absoluteDirectory}/${value}`);
        if (!isInside(context.root, resolved)) throw escape(`the symbolic link "${value}" created by "${label}" would point outside the worktree root`);
        if (resolved === context.root) throw escape(`the symbolic link "${value}" created by "${label}" would point at the worktree root, and ".." through it leaves the root`);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// git
// ---------------------------------------------------------------------------------------------

const gitGlobalOptions = new Set(['--no-pager', '-p', '--paginate', '-P', '--literal-pathspecs', '--glob-pathspecs', '--noglob-pathspecs', '--icase-pathspecs', '--no-optional-locks', '--no-replace-objects', '--version', '--help', '-h', '--html-path', '--man-path', '--info-path', '--no-lazy-fetch', '--no-advice']);
const gitReadOnly = new Set(['status', 'diff', 'log', 'show', 'ls-files', 'ls-tree', 'grep', 'blame', 'annotate', 'rev-parse', 'rev-list', 'shortlog', 'describe', 'cat-file', 'merge-base', 'diff-tree', 'diff-index', 'diff-files', 'for-each-ref', 'show-ref', 'name-rev', 'whatchanged', 'check-ignore', 'check-attr', 'show-branch', 'cherry', 'range-diff', 'count-objects', 'var', 'help', 'version']);
const gitForbiddenReasons: Record<string, string> = {
  stash: 'it hides work outside the agent branch',
  checkout: 'it can move HEAD off the agent branch (use "git checkout -- <paths>" or "git restore")',
  switch: 'it moves HEAD off the agent branch',
  push: 'it talks to remotes; the orchestrator merges agent branches',
  pull: 'it talks to remotes and merges',
  fetch: 'it talks to remotes',
  clone: 'it creates another repository',
  init: 'it creates another repository',
  rebase: 'it rewrites history',
  merge: 'it merges other branches into the agent branch',
  'cherry-pick': 'it copies commits from other branches',
  revert: 'it rewrites the agent branch with commits from elsewhere',
  am: 'it applies commits from mail',
  'update-ref': 'it moves refs directly',
  'symbolic-ref': 'it moves HEAD directly',
  worktree: 'it creates or removes worktrees',
  clean: 'it deletes untracked files wholesale',
  'filter-branch': 'it rewrites history',
  'filter-repo': 'it rewrites history',
  replace: 'it replaces objects',
  notes: 'it writes refs outside the agent branch',
  tag: 'it writes refs outside the agent branch',
  bisect: 'it moves HEAD',
  gc: 'it rewrites the shared object store',
  prune: 'it deletes objects from the shared store',
  repack: 'it rewrites the shared object store',
  submodule: 'it manages other repositories',
  'sparse-checkout': 'it changes which files the worktree has',
  'checkout-index': 'it writes files from the index wholesale',
  'read-tree': 'it replaces the index',
  'update-index': 'it edits the index directly',
  'hash-object': 'it writes objects directly',
  'commit-tree': 'it creates commits outside the normal flow',
  'mktree': 'it writes objects directly',
  'mktag': 'it writes objects directly',
  'pack-refs': 'it rewrites refs',
  difftool: 'it runs external tools',
  mergetool: 'it runs external tools',
  'send-email': 'it sends mail',
  'request-pull': 'it talks to remotes',
  archive: 'it writes archives of other trees',
  bundle: 'it writes or reads repository bundles',
  maintenance: 'it runs background maintenance',
  lfs: 'it talks to remotes',
  daemon: 'it starts a server',
  instaweb: 'it starts a server',
  'format-patch': 'it writes patch files',
};

/**
 * Configuration that runs programs (hooks, aliases, editors, pagers, diff/merge/filter drivers,
 * credential helpers, ssh, fsmonitor), loads other configuration, or points git at other files,
 * repositories or remotes: refused in `git -c`. Sections are matched whole; `[section, variable]`
 * pairs match any subsection (`diff.<driver>.textconv`).
 */
const gitConfigRefusedSections = new Set(['alias', 'include', 'includeif', 'credential', 'filter', 'difftool', 'mergetool', 'gpg', 'sendemail', 'url', 'http', 'remote', 'uploadpack', 'uploadarchive', 'receive', 'transfer', 'protocol', 'ssh', 'safe', 'browser', 'man', 'help', 'web', 'instaweb', 'gui', 'guitool', 'submodule', 'pager', 'sequence']);
const gitConfigRefusedKeys = new Set([
  'core.hookspath', 'core.fsmonitor', 'core.sshcommand', 'core.editor', 'core.pager', 'core.askpass', 'core.gitproxy', 'core.worktree', 'core.bare',
  'core.attributesfile', 'core.excludesfile', 'core.alternaterefscommand', 'diff.external', 'diff.tool', 'diff.guitool', 'diff.command', 'diff.textconv',
  'merge.tool', 'merge.guitool', 'merge.driver', 'trailer.command', 'trailer.cmd', 'interactive.difffilter', 'commit.template', 'blame.ignorerevsfile', 'mailmap.file',
  'mailmap.blob', 'init.templatedir',
]);

/** `git -c <name>[=<value>]`: allowed unless the key runs programs or points git elsewhere. */
function checkGitConfigOverride(setting: string): void {
  const name = setting.split('=')[0]!;
  const segments = name.split('.').map((segment) => segment.trim());
  const section = segments[0]!.toLowerCase();
  const variable = segments[segments.length - 1]!.toLowerCase();
  if (gitConfigRefusedSections.has(section) || gitConfigRefusedKeys.has(`${section}.${variable}`)) {
    throw forbiddenGit(`git -c ${name}`, 'this configuration can run programs or point git at other files, hooks or repositories');
  }
}

function checkGit(words: Word[], from: Set<string>, context: Context, label: string): void {
  let index = 0;
  for (; index < words.length; index += 1) {
    const value = literalOf(words[index]!);
    if (value === undefined) throw unsafe(`an option of "${label}" is computed at run time`);
    if (!value.startsWith('-')) break;
    if (gitGlobalOptions.has(value)) continue;
    if (value === '-c') {
      const settingWord = words[index + 1];
      const setting = settingWord ? literalOf(settingWord) : undefined;
      if (settingWord === undefined) throw forbiddenGit(label, '"-c" needs a configuration setting');
      if (setting === undefined) throw unsafe(`the configuration given to "git -c" in "${label}" is computed at run time`);
      checkGitConfigOverride(setting);
      index += 1;
      continue;
    }
    if (/^(-C|-c|--git-dir|--work-tree|--namespace|--exec-path|--config-env|--bare|--super-prefix|--list-cmds)/.test(value)) {
      throw forbiddenGit(`git ${value}`, 'it points git at another repository, work tree or configuration');
    }
    throw forbiddenGit(`git ${value}`, 'the checker does not know this global option');
  }
  if (index >= words.length) return;
  const subcommand = literalOf(words[index]!)!;
  const args = words.slice(index + 1);
  const command = `git ${subcommand}`;
  const readOnly = context.options.readOnly === true;
  const denyWrite = () => {
    if (readOnly) throw new Denied('JAIL_READ_ONLY', `bash: "${label}" changes the repository, but this role is read-only.`);
  };
  const dataOptions = new Set(['--grep', '--author', '--committer', '--format', '--pretty', '--since', '--until', '--after', '--before', '--date', '-S', '-G', '--message', '-m', '--abbrev', '--sort', '--color', '--decorate', '--stat', '--diff-filter', '-n', '--max-count', '--skip', '-L', '-U', '--unified', '--word-diff', '--word-diff-regex', '--relative', '--encoding', '--notes', '--show-notes', '--branches', '--tags', '--remotes', '--glob', '--exclude', '-e', '-x', '--points-at', '--contains', '--merged', '--no-merged', '--no-contains', '--untracked-files', '-u', '--ignore-submodules', '--column', '--find-renames', '-M', '-C', '--find-copies', '-B', '--break-rewrites', '--dirstat', '--submodule', '--src-prefix', '--dst-prefix', '--line-prefix', '--anchored', '-O', '--inter-hunk-context', '--output-indicator-new', '--output-indicator-old', '--output-indicator-context', '-z', '--trailer', '--cleanup', '--fixup', '--squash', '--reuse-message', '--reedit-message', '--chmod', '--source', '-s']);
  const gitSpec: ArgSpec = { short: 'nSGLmCceFtUsx', long: ['--grep', '--author', '--committer', '--format', '--pretty', '--since', '--until', '--after', '--before', '--date', '--message', '--max-count', '--skip', '--file', '--template', '--reuse-message', '--reedit-message', '--fixup', '--squash', '--trailer', '--cleanup', '--source', '--output', '--contents', '--pathspec-from-file', '--directory', '--exclude', '--include', '--points-at', '--contains', '--no-contains', '--merged', '--no-merged', '--sort'] };

  if (gitReadOnly.has(subcommand)) {
    const parsed = parseArgs(args, subcommand === 'grep' ? { short: 'efABCm', long: ['--regexp', '--file', '--after-context', '--before-context', '--context', '--max-count', '--max-depth'] } : { long: gitSpec.long });
    if (subcommand === 'grep' && hasOption(parsed, '-O', '--open-files-in-pager')) throw forbiddenGit(command, 'it runs a pager command');
    if (hasOption(parsed, '--ext-diff', '--textconv') && !hasOption(parsed, '--no-ext-diff')) {
      // configured drivers only; the agent cannot configure them (git config writes are refused)
    }
    const explicitPattern = hasOption(parsed, '-e', '--regexp', '-f', '--file');
    let seenSeparator = false;
    let positionalIndex = 0;
    for (const arg of parsed) {
      if (arg.kind === 'end-of-options') seenSeparator = true;
      else if (arg.kind === 'positional') {
        const isPattern = subcommand === 'grep' && positionalIndex === 0 && !explicitPattern && !seenSeparator;
        positionalIndex += 1;
        if (!isPattern) checkPathWord(arg.word, 'read', from, context, label);
      } else if (arg.value) {
        if (arg.name === '--output' || arg.name === '-o') checkPathWord(arg.value, 'write', from, context, label);
        else if (!dataOptions.has(arg.name)) checkPathWord(arg.value, 'read', from, context, label);
      }
    }
    return;
  }

  switch (subcommand) {
    case 'add':
    case 'rm':
    case 'mv':
    case 'restore':
    case 'apply': {
      denyWrite();
      const parsed = parseArgs(args, { short: subcommand === 'restore' ? 's' : subcommand === 'apply' ? 'p' : '', long: ['--source', '--pathspec-from-file', '--directory', '--exclude', '--include', '--chmod'] });
      if (subcommand === 'apply' && hasOption(parsed, '--unsafe-paths')) throw forbiddenGit(command, '--unsafe-paths lets a patch touch files outside the worktree');
      if (hasOption(parsed, '--pathspec-from-file')) throw unsafe(`"${label}" reads its paths from a file, which cannot be checked`);
      checkArgs(parsed, from, context, label, {
        positional: () => (subcommand === 'apply' ? 'read' : 'write'),
        option: (name) => (name === '--directory' ? 'read' : 'data'),
      });
      return;
    }
    case 'commit': {
      denyWrite();
      checkGitCommit(args, from, context, label);
      return;
    }
    case 'checkout': {
      denyWrite();
      const separator = args.findIndex((word) => literalOf(word) === '--');
      if (separator < 0) throw forbiddenGit(label, gitForbiddenReasons.checkout!);
      const before = args.slice(0, separator);
      const allowedOptions = new Set(['-q', '--quiet', '-f', '--force', '--ours', '--theirs', '--no-overlay', '--overlay', '-m', '--merge']);
      let treeishCount = 0;
      for (const word of before) {
        const value = literalOf(word);
        if (value === undefined) throw unsafe(`an argument of "${label}" is computed at run time`);
        if (value.startsWith('-')) {
          if (!allowedOptions.has(value)) throw forbiddenGit(label, gitForbiddenReasons.checkout!);
        } else treeishCount += 1;
      }
      if (treeishCount > 1) throw forbiddenGit(label, gitForbiddenReasons.checkout!);
      for (const word of args.slice(separator + 1)) checkPathWord(word, 'write', from, context, label);
      return;
    }
    case 'reset': {
      denyWrite();
      const separator = args.findIndex((word) => literalOf(word) === '--');
      const before = separator < 0 ? args : args.slice(0, separator);
      const after = separator < 0 ? [] : args.slice(separator + 1);
      const positionalWords: Word[] = [];
      for (const word of before) {
        const value = literalOf(word);
        if (value === undefined) throw unsafe(`an argument of "${label}" is computed at run time`);
        if (['--hard', '--soft', '--merge', '--keep'].includes(value)) throw forbiddenGit(`git reset ${value}`, 'it discards work or moves the agent branch');
        if (value.startsWith('-')) {
          if (!['-q', '--quiet', '--mixed', '-N', '--no-refresh', '--refresh', '-p', '--patch'].includes(value)) throw forbiddenGit(label, 'the checker does not know this reset option');
          continue;
        }
        positionalWords.push(word);
      }
      if (separator < 0 && positionalWords.length > 0) {
        const first = literalOf(positionalWords[0]!);
        if (first !== 'HEAD' && first !== '@') throw forbiddenGit(label, 'git reset <commit> moves the agent branch (use "git reset -- <paths>" to unstage)');
        for (const word of positionalWords.slice(1)) checkPathWord(word, 'read', from, context, label);
      } else if (positionalWords.length > 1) {
        throw forbiddenGit(label, 'only one tree-ish may come before "--"');
      }
      for (const word of after) checkPathWord(word, 'read', from, context, label);
      return;
    }
    case 'branch': {
      const parsed = parseArgs(args, { long: ['--contains', '--no-contains', '--merged', '--no-merged', '--points-at', '--sort', '--format'] });
      const listFlags = new Set(['-a', '--all', '-r', '--remotes', '-v', '-vv', '--verbose', '-l', '--list', '--show-current', '-q', '--quiet', '--no-color', '--color', '--no-column', '--column', '--no-abbrev', '--abbrev', '-i', '--ignore-case', '--sort', '--format', '--contains', '--no-contains', '--merged', '--no-merged', '--points-at']);
      const listMode = hasOption(parsed, '-l', '--list');
      for (const arg of parsed) {
        if (arg.kind === 'option' && !listFlags.has(arg.name)) throw forbiddenGit(`git branch ${arg.name}`, 'it creates, moves, renames or deletes branches');
        if (arg.kind === 'positional' && !listMode) throw forbiddenGit(label, 'it creates, moves, renames or deletes branches');
      }
      return;
    }
    case 'config': {
      const values = args.map((word) => literalOf(word));
      const readFlags = ['--get', '--get-all', '--get-regexp', '--get-urlmatch', '--list', '-l', '--get-color', '--get-colorbool'];
      const writeFlags = ['--add', '--unset', '--unset-all', '--replace-all', '--rename-section', '--remove-section', '-e', '--edit', 'set', 'unset', 'edit', 'rename-section', 'remove-section'];
      const reading = values.some((value) => value !== undefined && readFlags.includes(value)) || values[0] === 'get' || values[0] === 'list';
      const writing = values.some((value) => value === undefined || writeFlags.includes(value));
      if (!reading || writing) throw forbiddenGit(label, 'only reading the configuration (--get, --list) is allowed');
      args.forEach((word, position) => {
        const value = values[position - 1];
        if (value === '--file' || value === '-f' || value === '--blob') checkPathWord(word, 'read', from, context, label);
      });
      return;
    }
    case 'reflog': {
      const first = literalOf(args[0] ?? { parts: [{ kind: 'lit', text: 'show', quoted: false }], text: '' });
      if (first !== undefined && ['expire', 'delete', 'drop'].includes(first)) throw forbiddenGit(label, 'it deletes reflog entries');
      return;
    }
    case 'remote': {
      const first = literalOf(args[0] ?? { parts: [{ kind: 'lit', text: '-v', quoted: false }], text: '' });
      if (first === undefined || !['-v', '--verbose', 'show', 'get-url'].includes(first)) throw forbiddenGit(label, 'it changes remotes');
      return;
    }
    default:
      throw forbiddenGit(command, gitForbiddenReasons[subcommand] ?? 'it is not on the list of git commands agents may run');
  }
}

function checkGitCommit(words: Word[], from: Set<string>, context: Context, label: string): void {
  const valueLetters = 'mFCct';
  const fileOptions = new Set(['-F', '--file', '-t', '--template']);
  const separateValueOptions = new Set(['--message', '--author', '--date', '--file', '--template', '--reuse-message', '--reedit-message', '--fixup', '--squash', '--trailer', '--cleanup', '--pathspec-from-file']);
  let onlyPaths = false;
  for (let index = 0; index < words.length; index += 1) {
    const word = words[index]!;
    const value = literalOf(word);
    if (onlyPaths || value === undefined || !value.startsWith('-') || value === '-') {
      checkPathWord(word, 'write', from, context, label);
      continue;
    }
    if (value === '--') {
      onlyPaths = true;
      continue;
    }
    if (value.startsWith('--')) {
      const equals = value.indexOf('=');
      const name = equals < 0 ? value : value.slice(0, equals);
      if (name === '--amend') throw forbiddenGit('git commit --amend', "it rewrites the previous commit, which may be the wave's base commit");
      if (name === '--no-verify') throw forbiddenGit('git commit --no-verify', 'it skips the E43 isolation hook');
      if (name === '--pathspec-from-file') throw unsafe(`"${label}" reads its paths from a file, which cannot be checked`);
      const attached = equals < 0 ? undefined : wordFromItems(flatten(word).slice(equals + 1));
      let valueWord = attached;
      if (equals < 0 && separateValueOptions.has(name)) {
        index += 1;
        valueWord = words[index];
      }
      if (valueWord && fileOptions.has(name)) checkPathWord(valueWord, 'read', from, context, label);
      continue;
    }
    for (let position = 1; position < value.length; position += 1) {
      const letter = value[position]!;
      if (letter === 'n') throw forbiddenGit('git commit -n', 'it skips the E43 isolation hook');
      if (valueLetters.includes(letter)) {
        const rest = value.slice(position + 1);
        let valueWord: Word | undefined;
        if (rest !== '') valueWord = wordFromItems(flatten(word).slice(position + 1));
        else {
          index += 1;
          valueWord = words[index];
        }
        if (valueWord && (letter === 'F' || letter === 't')) checkPathWord(valueWord, 'read', from, context, label);
        break;
      }
      if (letter === 'S' || letter === 'u') break; // optional attached values
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Entry point
// ---------------------------------------------------------------------------------------------

/**
 * Statically checks a bash command against the jail (pure unless `resolvePath`/`checkWritePath`
 * touch the file system). The parser loads on the first call. Anything it cannot parse or prove
 * is refused as JAIL_BASH_UNSAFE; it never throws.
 */
export async function checkBashCommand(command: string, options: BashPolicyOptions): Promise<JailDecision> {
  const refuse = (reason: string): JailDecision => ({ allowed: false, code: 'JAIL_BASH_UNSAFE', reason });
  if (!path.isAbsolute(options.root)) return refuse('bash: the command cannot be checked (the jail root is not an absolute path), so it was refused (fail closed).');
  if (command.length > 100_000) return refuse('bash: the command cannot be checked (the command is longer than 100000 characters), so it was refused (fail closed).');
  if (command.includes('\0')) return refuse('bash: the command cannot be checked (the command contains a NUL byte), so it was refused (fail closed).');
  let parser: BashParser;
  try {
    parser = await loadBashParser();
  } catch (error) {
    return refuse(`bash: the bash parser could not be loaded (${error instanceof Error ? error.message : String(error)}), so the command was refused (fail closed).`);
  }
  try {
    const root = posix.normalize(options.root).replace(/(.)\/+$/, '$1');
    const context: Context = {
      options,
      parser,
      root,
      readable: new Set((options.readablePaths ?? []).map((entry) => posix.normalize(entry))),
      seen: new Set(['']),
      loopDepth: 0,
      functionDepth: 0,
      nesting: 0,
    };
    const tree = parseChecked(command, parser, 'the command');
    try {
      evaluateStatements(statementsOf(tree.rootNode), new Set(['']), context);
    } finally {
      tree.delete();
    }
    return { allowed: true };
  } catch (error) {
    if (error instanceof Denied) return { allowed: false, code: error.code, reason: error.reason, ...(error.target !== undefined ? { target: error.target } : {}) };
    if (error instanceof SyntaxFailure) return refuse(await describeSyntaxFailure(error));
    const message = error instanceof Error ? error.message : String(error);
    if (error instanceof ParseFailure) return refuse(`bash: the command cannot be checked (${message}), so it was refused (fail closed).`);
    if (error instanceof RangeError) return refuse('bash: the command is too complex to check, so it was refused (fail closed).');
    return refuse(`bash: the checker failed (${message}), so the command was refused (fail closed).`);
  }
}

/** "not valid bash" when mvdan/sh agrees, else: valid bash that tree-sitter-bash does not follow. */
async function describeSyntaxFailure(failure: SyntaxFailure): Promise<string> {
  const { line, column, near, missing } = failure.location;
  const where = `line ${line}, column ${column}, ${missing ? `a missing ${JSON.stringify(near)}` : `near ${JSON.stringify(near)}`}`;
  let diagnosis: string | undefined;
  try {
    diagnosis = await diagnoseWithMvdanSh(failure.source);
  } catch {
    return `bash: ${failure.subject} cannot be parsed (${where}), so it was refused (fail closed).`;
  }
  if (diagnosis !== undefined) return `bash: ${failure.subject} is not valid bash (${diagnosis}), so it was refused (fail closed).`;
  return `bash: ${failure.subject} is valid bash in a form the checker's parser does not follow (${where}); write it more simply (for example a here-document's command on a line of its own), so it was refused (fail closed).`;
}
