import type { Git } from '../git/git-port.js';
import { blobSpec, readBlobs } from './read-blobs.js';
import { depthAtLineStarts, isBinaryText, lexSource, lineAt, lineTextOf, stringAt, stringContent, type LexedSource } from './source-lexer.js';

/**
 * E20 stub detection. Unlike the Go scanner (a case-insensitive substring match over whole lines,
 * engine-cli.md §5) this is language-aware: markers count only inside comments, code patterns
 * only in code (never in strings or comments), and the protocol's Python examples (`pass`,
 * `...`, `raise NotImplementedError`) are detected.
 *
 * Patterns:
 * - Python: a `def`/`class` whose body is only `pass` or `...` (a docstring allowed), reported
 *   on the header line; `raise NotImplementedError`. Exempt: `.pyi` files, `@abstractmethod` and
 *   `@overload` functions, methods of `Protocol` classes, exception/warning classes
 *   (`class ParseError(ValueError): pass` is idiomatic), `Protocol`/`TypedDict`/`NamedTuple` classes.
 * - Rust: `todo!(…)`, `unimplemented!(…)`.
 * - Go: `panic("not implemented")` / `panic("TODO")` (any case, also wrapped in `errors.New`/`fmt.Errorf`).
 * - TS/JS: `throw new Error("not implemented")` / `throw new Error('TODO')` (any quote, any case,
 *   `throw Error(…)` too). Empty function bodies are NOT stubs.
 * - Every language: `TODO`, `FIXME`, `HACK`, `XXX` as words inside comments (upper case, or any
 *   case when followed by `:` or `(`); comments starting with `stub` or `placeholder`
 *   (`// stub`, `# placeholder: …`). Prose files (Markdown, text, unknown types) count as all
 *   comment.
 * One hit per line: a code pattern wins over a marker, a marker over a stub comment.
 */

/** One E20 hit (impl-manifest.schema.json `StubHit`). */
export interface StubHit {
  file: string;
  /** 1-based. */
  line: number;
  pattern: string;
  /** The trimmed source line, at most 200 characters. */
  context: string;
}

/** A hit on an agent's branch. */
export type AgentStubHit = StubHit & { agent_id: string };

export interface ScanStubsOnBranchesOptions {
  git: Git;
  /** Each agent's branch (or commit) and the files it changed/created (repo-relative). */
  agents: ReadonlyArray<{ agentId: string; ref: string; files: readonly string[] }>;
}

const contextLimit = 200;

const codePriority = 0;
const markerPriority = 1;
const stubCommentPriority = 2;

/** Scans one file's text for E20 stub patterns; hits in line order. */
export function scanStubText(filePath: string, text: string): StubHit[] {
  if (text === '' || isBinaryText(text)) return [];
  const source = lexSource(filePath, text);
  const found = new Map<number, { priority: number; pattern: string }>();
  const add = (line: number, priority: number, pattern: string) => {
    const earlier = found.get(line);
    if (!earlier || earlier.priority > priority) found.set(line, { priority, pattern });
  };

  switch (source.language) {
    case 'python':
      for (const hit of pythonCodeStubs(source)) add(hit.line, codePriority, hit.pattern);
      break;
    case 'rust':
      for (const match of source.code.matchAll(/\b(todo|unimplemented)!\s*[([{]/g)) add(lineAt(source, match.index), codePriority, `${match[1]}!()`);
      break;
    case 'go':
      for (const { line, kind } of messageCalls(source, /\bpanic\s*\(\s*(?:(?:errors\.New|fmt\.Errorf)\s*\(\s*)?/g)) add(line, codePriority, kind === 'todo' ? 'panic("TODO")' : 'panic("not implemented")');
      break;
    case 'typescript':
    case 'javascript':
      for (const { line, kind } of messageCalls(source, /\bthrow\s+(?:new\s+)?Error\s*\(\s*/g)) add(line, codePriority, kind === 'todo' ? 'throw new Error("TODO")' : 'throw new Error("not implemented")');
      break;
    default:
      break;
  }
  for (const hit of commentStubs(source)) add(hit.line, hit.priority, hit.pattern);

  return [...found.entries()]
    .sort(([left], [right]) => left - right)
    .map(([line, { pattern }]) => ({ file: filePath, line, pattern, context: contextOf(source, line) }));
}

/**
 * E20 over the agents' branches (not the main checkout — the Go scanner reads the pre-merge
 * checkout, where new files do not exist yet): every file is read from its agent's ref with one
 * `git cat-file --batch`; files missing there (deleted) or binary are skipped. Hits are sorted by
 * file, line, agent.
 */
export async function scanStubsOnBranches(options: ScanStubsOnBranchesOptions): Promise<{ hits: AgentStubHit[] }> {
  const wanted = options.agents.map((agent) => ({ agent, files: [...new Set(agent.files.filter((file) => file.trim() !== ''))] }));
  const texts = await readBlobs(
    options.git,
    wanted.flatMap(({ agent, files }) => files.map((file) => blobSpec(agent.ref, file))),
  );
  const hits: AgentStubHit[] = [];
  for (const { agent, files } of wanted) {
    for (const file of files) {
      const text = texts.get(blobSpec(agent.ref, file));
      if (text === undefined) continue;
      for (const hit of scanStubText(file, text)) hits.push({ ...hit, agent_id: agent.agentId });
    }
  }
  hits.sort((left, right) => compareText(left.file, right.file) || left.line - right.line || compareText(left.agent_id, right.agent_id));
  return { hits };
}

/**
 * The E20 report as markdown (message-formats.txt "Stub Report Section Format"): the table, or
 * "No stub patterns detected." With `wave`, the whole section with its heading and note.
 */
export function formatStubTable(hits: readonly StubHit[], options: { wave?: number } = {}): string {
  const body =
    hits.length === 0
      ? 'No stub patterns detected.\n'
      : [
          '| File | Line | Pattern | Context |',
          '|------|------|---------|---------|',
          ...hits.map((hit) => `| ${escapeCell(hit.file)} | ${hit.line} | ${codeSpan(hit.pattern)} | ${codeSpan(hit.context)} |`),
          '',
        ].join('\n');
  if (options.wave === undefined) return body;
  return [
    `## Stub Report — Wave ${options.wave}`,
    '',
    `_Generated by scan-stubs.sh after wave ${options.wave} completion. Informational only — does not block merge._`,
    '',
    body,
  ].join('\n');
}

function escapeCell(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
}

/** A markdown code span that survives backticks and table pipes. */
function codeSpan(text: string): string {
  const cell = text.replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
  if (!cell.includes('`')) return `\`${cell}\``;
  const longest = Math.max(...(cell.match(/`+/g) ?? ['']).map((run) => run.length));
  const fence = '`'.repeat(longest + 1);
  return `${fence} ${cell} ${fence}`;
}

function contextOf(source: LexedSource, line: number): string {
  const trimmed = lineTextOf(source.text, source.lineStarts, line).trim();
  return trimmed.length <= contextLimit ? trimmed : trimmed.slice(0, contextLimit);
}

function compareText(left: string, right: string): number {
  return left < right ? -1 : left > right ? 1 : 0;
}

const notImplementedMessage = /^\s*(?:not\s+(?:yet\s+)?implemented|unimplemented)\b/i;
const todoMessage = /^\s*todo\b/i;

/** Calls whose first argument is a string literal saying "not implemented" or "TODO". */
function messageCalls(source: LexedSource, call: RegExp): Array<{ line: number; kind: 'not-implemented' | 'todo' }> {
  const calls: Array<{ line: number; kind: 'not-implemented' | 'todo' }> = [];
  for (const match of source.code.matchAll(call)) {
    const literal = stringAt(source, match.index + match[0].length);
    if (!literal) continue;
    const message = stringContent(source, literal);
    const kind = notImplementedMessage.test(message) ? 'not-implemented' : todoMessage.test(message) ? 'todo' : undefined;
    if (kind) calls.push({ line: lineAt(source, match.index), kind });
  }
  return calls;
}

const markerWord = /(?<![\w$])(TODO|FIXME|HACK|XXX)(?![\w$])/;
const markerWithColon = /(?<![\w$])(todo|fixme|hack|xxx)(?=\s*[:(])/i;
const stubWords = /^(stub|placeholder)\b(?!\s+(?:text|attribute|value|color|colour|image|prop)\b)/i;

function commentLeader(source: LexedSource): string {
  switch (source.language) {
    case 'python':
    case 'hash':
      return '#';
    case 'dash':
      return '--';
    case 'markup':
      return '<!--';
    default:
      return '//';
  }
}

function commentStubs(source: LexedSource): Array<{ line: number; priority: number; pattern: string }> {
  const hits: Array<{ line: number; priority: number; pattern: string }> = [];
  const leader = commentLeader(source);
  const prose = source.language === 'text';
  for (const comment of source.comments) {
    const firstLine = lineAt(source, comment.start);
    const lines = source.text.slice(comment.start, comment.end).split('\n');
    lines.forEach((lineText, offset) => {
      const line = firstLine + offset;
      const marker = markerWord.exec(lineText) ?? markerWithColon.exec(lineText);
      if (marker) hits.push({ line, priority: markerPriority, pattern: marker[1]!.toUpperCase() });
      if (prose) return;
      const body = offset === 0 ? lineText.replace(/^(?:\/\/+!?|\/\*+!?|#+!?|--+|<!--)/, '') : lineText.replace(/^\s*\*(?!\/)/, '');
      const stub = stubWords.exec(body.trim());
      if (stub) hits.push({ line, priority: stubCommentPriority, pattern: `${leader} ${stub[1]!.toLowerCase()}` });
    });
  }
  return hits;
}

// ---------------------------------------------------------------------------------------------
// Python bodies

interface PythonBlock {
  kind: 'def' | 'class';
  name: string;
  bases: string;
  decorators: string[];
  indent: number;
  headerLine: number;
  /** Last line of the body (inclusive). */
  endLine: number;
  /** Single-statement bodies: `pass`, `...`, docstring; undefined when the body does more. */
  trivialPattern: 'pass' | '...' | undefined;
}

const abstractDecorators = new Set(['abstractmethod', 'abstractproperty', 'abstractclassmethod', 'abstractstaticmethod', 'overload']);
const exemptClassBases = /\b(Protocol|TypedDict|NamedTuple)\b/;
const exceptionName = /(Error|Exception|Warning)\b/;

function pythonCodeStubs(source: LexedSource): Array<{ line: number; pattern: string }> {
  const hits: Array<{ line: number; pattern: string }> = [];
  const blocks = pythonBlocks(source);
  const stubFile = source.path.toLowerCase().endsWith('.pyi');

  const enclosing = (line: number, kind: 'def' | 'class', inside?: PythonBlock) => {
    let best: PythonBlock | undefined;
    for (const block of blocks) {
      if (block.kind !== kind || block === inside) continue;
      const contains = inside ? block.headerLine < inside.headerLine && block.endLine >= inside.endLine : block.headerLine <= line && block.endLine >= line;
      if (contains && (!best || block.headerLine > best.headerLine)) best = block;
    }
    return best;
  };
  const isAbstract = (block: PythonBlock) => block.decorators.some((name) => abstractDecorators.has(name.slice(name.lastIndexOf('.') + 1)));

  if (!stubFile) {
    for (const block of blocks) {
      if (!block.trivialPattern) continue;
      if (block.kind === 'def') {
        if (isAbstract(block)) continue;
        const owner = enclosing(block.headerLine, 'class', block);
        if (owner && exemptClassBases.test(owner.bases)) continue;
      } else if (exceptionName.test(block.name) || exceptionName.test(block.bases) || exemptClassBases.test(block.bases)) {
        continue;
      }
      hits.push({ line: block.headerLine, pattern: block.trivialPattern });
    }
  }

  for (const match of source.code.matchAll(/\braise\s+NotImplementedError\b/g)) {
    const line = lineAt(source, match.index);
    const owner = enclosing(line, 'def');
    if (owner && isAbstract(owner)) continue;
    hits.push({ line, pattern: 'raise NotImplementedError' });
  }
  return hits;
}

/** Every def/class block (any nesting) with its extent and whether its body is only pass/.../docstring. */
function pythonBlocks(source: LexedSource): PythonBlock[] {
  const depths = depthAtLineStarts(source);
  const lineCount = source.lineStarts.length;
  const codeLines = source.code.split('\n');
  // Lines that start inside a multi-line string continue a statement.
  const inString = new Uint8Array(lineCount + 1);
  for (const literal of source.strings) {
    const first = lineAt(source, literal.start);
    const last = lineAt(source, Math.max(literal.start, literal.end - 1));
    for (let line = first + 1; line <= last; line += 1) inString[line] = 1;
  }
  const isStatementLine = (line: number) => line <= lineCount && depths[line - 1] === 0 && inString[line] === 0 && (codeLines[line - 1] ?? '').trim() !== '';
  const indentOf = (line: number) => /^[ \t]*/.exec(codeLines[line - 1] ?? '')![0].replace(/\t/g, '        ').length;

  const blocks: PythonBlock[] = [];
  let decorators: string[] = [];
  for (let line = 1; line <= lineCount; line += 1) {
    if (!isStatementLine(line)) continue;
    const text = codeLines[line - 1]!;
    const decorator = /^\s*@\s*([\w.]+)/.exec(text);
    if (decorator) {
      decorators.push(decorator[1]!);
      continue;
    }
    const header = /^(\s*)(?:async\s+)?(def|class)\s+([A-Za-z_]\w*)/.exec(text);
    if (!header) {
      decorators = [];
      continue;
    }
    const indent = indentOf(line);
    const headerOffset = source.lineStarts[line - 1]! + header[0].length;
    const colon = findBlockColon(source.code, headerOffset);
    if (colon === -1) {
      decorators = [];
      continue;
    }
    const colonLine = lineAt(source, colon);
    const basesMatch = /^\s*\(([^)]*)\)/.exec(source.code.slice(headerOffset, colon));
    const block: PythonBlock = {
      kind: header[2] as 'def' | 'class',
      name: header[3]!,
      bases: basesMatch?.[1] ?? '',
      decorators,
      indent,
      headerLine: line,
      endLine: colonLine,
      trivialPattern: undefined,
    };
    decorators = [];

    const statements: Array<{ offset: number; text: string }> = [];
    let nested = false;
    const inline = source.code.slice(colon + 1, source.lineStarts[colonLine] === undefined ? source.code.length : source.lineStarts[colonLine]! - 1);
    if (inline.trim() !== '') {
      let offset = colon + 1;
      for (const part of inline.split(';')) {
        if (part.trim() !== '') statements.push({ offset: offset + (part.length - part.trimStart().length), text: part.trim() });
        offset += part.length + 1;
      }
    } else {
      let bodyIndent = -1;
      for (let inner = colonLine + 1; inner <= lineCount; inner += 1) {
        if (!isStatementLine(inner)) continue;
        const innerIndent = indentOf(inner);
        if (innerIndent <= indent) break;
        if (bodyIndent === -1) bodyIndent = innerIndent;
        block.endLine = inner;
        const innerText = codeLines[inner - 1]!;
        if (innerIndent > bodyIndent) nested = true;
        else statements.push({ offset: source.lineStarts[inner - 1]! + (innerText.length - innerText.trimStart().length), text: innerText.trim() });
      }
      // Continuation lines (open brackets, strings) after the last statement line belong to it.
      while (block.endLine < lineCount && !isStatementLine(block.endLine + 1) && (depths[block.endLine] !== 0 || inString[block.endLine + 1] === 1)) block.endLine += 1;
    }
    block.trivialPattern = nested ? undefined : trivialBody(source, statements);
    blocks.push(block);
  }
  return blocks;
}

/** The `:` that opens a def/class body: the first at bracket depth 0 after the name. */
function findBlockColon(code: string, from: number): number {
  let depth = 0;
  for (let index = from; index < code.length; index += 1) {
    const char = code[index];
    if (char === '(' || char === '[' || char === '{') depth += 1;
    else if (char === ')' || char === ']' || char === '}') depth -= 1;
    else if (char === ':' && depth === 0) return index;
    else if (char === '\n' && depth === 0 && code[index - 1] !== '\\') return -1;
  }
  return -1;
}

/** 'pass' / '...' when every statement is pass, ..., or a docstring (and one of the first two is there). */
function trivialBody(source: LexedSource, statements: ReadonlyArray<{ offset: number; text: string }>): 'pass' | '...' | undefined {
  let pattern: 'pass' | '...' | undefined;
  for (const statement of statements) {
    if (statement.text === 'pass' || statement.text === '...') {
      pattern ??= statement.text;
      continue;
    }
    // A string literal statement (docstring), possibly prefixed (r"""…""").
    const literal = stringAt(source, statement.offset);
    if (literal && source.code.slice(literal.end, source.code.indexOf('\n', literal.end) === -1 ? source.code.length : source.code.indexOf('\n', literal.end)).trim().replace(/^;.*$/, '') === '') continue;
    return undefined;
  }
  return pattern;
}
