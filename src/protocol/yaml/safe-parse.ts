import { Composer, CST, isAlias, isMap, isPair, isScalar, isSeq, Lexer, LineCounter, Parser, type Document, type Pair } from 'yaml';
import { codes } from '../../errors/codes.js';
import type { Finding } from '../../errors/finding.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { formatPath } from './locate.js';
import { defaultMaxAliasCount, plainKeyOf, toPlain } from './to-plain.js';

/** Default size cap for YAML text: 10 MiB (UTF-8 bytes). */
export const defaultMaxYamlBytes = 10 * 1024 * 1024;
/** Default cap on collection nesting. Far above any manifest, far below yaml's stack limits. */
export const defaultMaxYamlDepth = 100;

/** Options of {@link parseYamlSafe}. */
export interface ParseYamlOptions {
  /** Reject text larger than this many UTF-8 bytes. Default 10 MiB. */
  maxBytes?: number;
  /** Reject collections nested deeper than this. Default 100. */
  maxDepth?: number;
  /** Alias dereferences allowed before the text counts as an alias bomb. Default 100. */
  maxAliasCount?: number;
}

/**
 * The outcome of {@link parseYamlSafe}. `ok: true` carries the document (possibly with
 * non-fatal findings such as duplicate keys); `ok: false` means the text is not usable YAML.
 */
export type YamlParseResult =
  | { ok: true; document: Document.Parsed; lineCounter: LineCounter; findings: Finding[] }
  | { ok: false; findings: Finding[] };

/**
 * Parses YAML text defensively; never throws. Before composing it rejects oversize text
 * (`RESOURCE_EXHAUSTION`), binary content (`V046_PARSE_ERROR`) and nesting deeper than
 * `maxDepth` (`RESOURCE_EXHAUSTION`, found by a linear token pre-scan so that the recursive
 * composer is never reached with a deep input). Syntax errors and multiple documents are
 * `V046_PARSE_ERROR` (ok: false); alias bombs are `RESOURCE_EXHAUSTION` (ok: false).
 * Duplicate keys at any depth are reported as `E16_DUPLICATE_KEY` findings, one per key per
 * mapping with every line it occurs on, and do not make the result fail (E16).
 */
export function parseYamlSafe(text: string, options: ParseYamlOptions = {}): YamlParseResult {
  try {
    return parseUnguarded(text, options);
  } catch (error) {
    const code = PolywaveError.isInstance(error) ? error.code : codes.parseError;
    const reason = error instanceof Error ? error.message : String(error);
    const isStack = error instanceof RangeError && /call stack/i.test(reason);
    return {
      ok: false,
      findings: [
        {
          code: isStack ? codes.nestingTooDeep : code,
          message: isStack ? 'YAML nesting is too deep to process' : `YAML could not be parsed: ${firstLine(reason)}`,
          severity: 'fatal',
        },
      ],
    };
  }
}

function parseUnguarded(text: string, options: ParseYamlOptions): YamlParseResult {
  const maxBytes = options.maxBytes ?? defaultMaxYamlBytes;
  const maxDepth = options.maxDepth ?? defaultMaxYamlDepth;
  const maxAliasCount = options.maxAliasCount ?? defaultMaxAliasCount;

  if (text.length > maxBytes) {
    // Every character is at least one byte: no need to count them all.
    return fail(codes.fileTooLarge, `YAML text is at least ${text.length} bytes, larger than the limit of ${maxBytes} bytes`);
  }
  const size = utf8ByteLengthOver(text, maxBytes);
  if (size !== undefined) {
    return fail(codes.fileTooLarge, `YAML text is ${size} bytes, larger than the limit of ${maxBytes} bytes`);
  }
  const binary = findBinaryCharacter(text);
  if (binary !== undefined) {
    const { line, column } = lineAndColumn(text, binary);
    const code = text.charCodeAt(binary);
    const what = code === 0 ? 'NUL byte' : `control character U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
    return fail(codes.binaryInput, `binary content: ${what} at line ${line}, column ${column}`, { line, column });
  }
  // Flow-bracket floods and runs of compact block indicators (`- - - x`) are refused by the
  // early-exit token scan before anything is built; ordinary text skips it and is tokenized only
  // once, by the parser below (which builds the whole CST of a deep input before measuring it).
  if (roughFlowDepth(text) > maxDepth / 2 || hasCompactIndicatorRun(text, maxDepth / 2)) {
    const scan = scanTokens(text, maxDepth);
    if (scan.tooDeepAt !== undefined) {
      const { line, column } = lineAndColumn(text, scan.tooDeepAt);
      return fail(codes.nestingTooDeep, `YAML nesting is deeper than the limit of ${maxDepth} levels (at line ${line})`, { line, column });
    }
  }

  // The parser (CST) is iterative; only the composer recurses. So: parse, measure the CST's
  // nesting without recursion, and compose only shallow input.
  const lineCounter = new LineCounter();
  const tokens = Array.from(new Parser(lineCounter.addNewLine).parse(text));
  const measured = measureCst(tokens, maxDepth);
  if (measured.tooDeepAt !== undefined) {
    const { line, column } = lineAndColumn(text, measured.tooDeepAt);
    return fail(codes.nestingTooDeep, `YAML nesting is deeper than the limit of ${maxDepth} levels (at line ${line})`, { line, column });
  }
  const hasAliases = measured.hasAliases;
  const composer = new Composer({ keepSourceTokens: true, uniqueKeys: true, prettyErrors: false });
  let document: Document.Parsed | undefined;
  let multipleDocuments = false;
  for (const composed of composer.compose(tokens, true, text.length)) {
    if (!document) document = composed as Document.Parsed;
    else {
      multipleDocuments = true;
      break;
    }
  }
  if (!document) return fail(codes.parseError, 'YAML could not be parsed: no document');
  if (multipleDocuments) {
    const { line, col } = lineCounter.linePos(document.range[1]);
    return fail(codes.parseError, `YAML syntax error at line ${line}, column ${col}: the text holds more than one YAML document (--- separators); a manifest is one document`, { line, column: col });
  }

  const syntaxFindings: Finding[] = [];
  for (const error of document.errors) {
    if (error.code === 'DUPLICATE_KEY') continue;
    const { line, col } = lineCounter.linePos(error.pos[0]);
    const reason =
      error.code === 'MULTIPLE_DOCS' ? 'the text holds more than one YAML document (--- separators); a manifest is one document' : firstLine(error.message);
    syntaxFindings.push({
      code: codes.parseError,
      message: `YAML syntax error at line ${line}, column ${col}: ${reason}`,
      severity: 'fatal',
      line,
      column: col,
    });
  }
  if (syntaxFindings.length > 0) return { ok: false, findings: syntaxFindings };

  const findings: Finding[] = [];
  for (const warning of document.warnings) {
    const { line, col } = lineCounter.linePos(warning.pos[0]);
    findings.push({ code: codes.parseError, message: `YAML warning at line ${line}, column ${col}: ${firstLine(warning.message)}`, severity: 'warning', line, column: col });
  }

  // Alias bombs first: later walks may expand aliases (in complex keys) and must be bounded.
  if (hasAliases) {
    try {
      toPlain(document, { maxAliasCount });
    } catch (error) {
      if (PolywaveError.isInstance(error)) return { ok: false, findings: [{ code: error.code, message: error.message, severity: 'fatal' }] };
      throw error;
    }
  }

  findings.push(...findDuplicateKeys(document, lineCounter));
  return { ok: true, document, lineCounter, findings };
}

function fail(code: string, message: string, position: { line?: number; column?: number } = {}): YamlParseResult {
  return { ok: false, findings: [{ code, message, severity: 'fatal', ...position }] };
}

function firstLine(message: string): string {
  const line = message.split('\n', 1)[0] ?? '';
  return line.length > 200 ? `${line.slice(0, 197)}...` : line;
}

/** Returns the UTF-8 size when it exceeds `limit`, else undefined; linear, no allocation. */
function utf8ByteLengthOver(text: string, limit: number): number | undefined {
  if (text.length * 3 <= limit) return undefined;
  let bytes = 0;
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && index + 1 < text.length) {
      const next = text.charCodeAt(index + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        index += 1;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes > limit ? bytes : undefined;
}

// C0 controls other than tab, LF, CR, and DEL. A regular expression scans natively: a character
// loop runs in the interpreter in a short-lived CLI process (measured: ~20 ms on a 90 KB manifest).
// eslint-disable-next-line no-control-regex
const binaryCharacterPattern = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/;

/** Offset of the first C0 control character other than tab, LF, CR (or DEL): not YAML text. */
function findBinaryCharacter(text: string): number | undefined {
  const match = binaryCharacterPattern.exec(text);
  return match === null ? undefined : match.index;
}

function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let index = text.indexOf('\n'); index !== -1 && index < offset; index = text.indexOf('\n', index + 1)) {
    line += 1;
    lineStart = index + 1;
  }
  return { line, column: offset - lineStart + 1 };
}

/**
 * A cheap over-the-text estimate of flow nesting (brackets outside nothing in particular):
 * used only to decide whether the early-exit token scan should run first.
 */
function roughFlowDepth(text: string): number {
  let depth = 0;
  let max = 0;
  // Visits the brackets only (native scan between them).
  const brackets = /[[\]{}]/g;
  for (let match = brackets.exec(text); match !== null; match = brackets.exec(text)) {
    const character = match[0];
    if (character === '[' || character === '{') {
      depth += 1;
      if (depth > max) max = depth;
    } else if (depth > 0) depth -= 1;
  }
  return max;
}

const compactRunPatterns = new Map<number, RegExp>();

/** Whether some line holds `length` or more compact block indicators in a row (`- - - x`, `? ? k`). */
function hasCompactIndicatorRun(text: string, length: number): boolean {
  const count = Math.max(1, Math.floor(length));
  let pattern = compactRunPatterns.get(count);
  if (pattern === undefined) {
    pattern = new RegExp(`(?:[-?][ \\t]+){${count}}`);
    compactRunPatterns.set(count, pattern);
  }
  return pattern.test(text);
}

interface CstToken {
  type?: string;
  offset?: number;
  value?: unknown;
  items?: Array<{ start?: unknown; key?: unknown; sep?: unknown; value?: unknown }>;
}

const collectionTypes = new Set(['block-map', 'block-seq', 'flow-collection']);

/**
 * Nesting depth of the parsed CST, walked iteratively (no recursion at any depth). Returns the
 * offset of the first collection nested deeper than `maxDepth`, and whether an alias occurs.
 */
function measureCst(tokens: readonly unknown[], maxDepth: number): { tooDeepAt?: number; hasAliases: boolean } {
  let hasAliases = false;
  // Two parallel stacks instead of an object and a closure per node: this runs on every parse.
  const stack: CstToken[] = [];
  const depths: number[] = [];
  const push = (child: unknown, depth: number): void => {
    if (child && typeof child === 'object' && !Array.isArray(child)) {
      stack.push(child as CstToken);
      depths.push(depth);
    }
  };
  for (const token of tokens) if (token && typeof token === 'object') push(token, 0);
  while (stack.length > 0) {
    const token = stack.pop()!;
    const depth = depths.pop()!;
    const type = token.type;
    if (type === 'alias') {
      hasAliases = true;
      continue;
    }
    const level = type !== undefined && collectionTypes.has(type) ? depth + 1 : depth;
    if (level > maxDepth) return { tooDeepAt: token.offset ?? 0, hasAliases };
    if (type === 'document') push(token.value, level);
    const items = token.items;
    if (items) {
      for (const item of items) {
        push(item.key, level);
        push(item.value, level);
      }
    }
  }
  return { hasAliases };
}

interface BlockLevel {
  column: number;
  kind: 'map' | 'seq';
}

/**
 * Linear pre-scan with yaml's Lexer (a state machine, no recursion): tracks flow depth
 * (`[`/`{`) and the stack of block collections by the column of their indicators/keys.
 * `tooDeepAt` is the offset where nesting first exceeds `maxDepth`. Block nesting is counted
 * from indentation and inline indicators (`- - x`, `- k:`), flow nesting exactly, so the
 * recursive composer only ever sees shallow input. Also tells whether any alias occurs.
 */
function scanTokens(text: string, maxDepth: number): { tooDeepAt?: number; hasAliases: boolean } {
  let hasAliases = false;
  const stack: BlockLevel[] = [];
  let flowDepth = 0;
  let offset = 0;
  let column = 0;
  let lineHasContent = false;
  let nextIsScalarSource = false;
  let keyCandidateColumn: number | undefined;

  const exceeds = (): boolean => stack.length + flowDepth > maxDepth;
  const openBlock = (blockColumn: number, kind: 'map' | 'seq', firstOnLine: boolean): void => {
    while (stack.length > 0 && (stack[stack.length - 1] as BlockLevel).column > blockColumn) stack.pop();
    let top = stack[stack.length - 1];
    if (kind === 'map' && top && top.column === blockColumn && top.kind === 'seq' && stack.length > 1) {
      const parent = stack[stack.length - 2] as BlockLevel;
      if (parent.column === blockColumn && parent.kind === 'map') {
        // `key:\n- item\nnext:` — the unindented sequence ended, back to its mapping.
        stack.pop();
        top = parent;
      }
    }
    if (top && top.column === blockColumn) {
      if (top.kind === kind) return;
      if (kind === 'seq' && top.kind === 'map' && firstOnLine) {
        stack.push({ column: blockColumn, kind });
        return;
      }
      return;
    }
    stack.push({ column: blockColumn, kind });
  };

  for (const token of new Lexer().lex(text)) {
    // Marker tokens (document, scalar, flow-error-end) carry no source text.
    if (token === '\x02' || token === '\x18') continue;
    if (token === '\x1f') {
      nextIsScalarSource = true;
      continue;
    }
    const tokenStart = offset;
    const tokenColumn = column;
    offset += token.length;
    const lastNewline = token.lastIndexOf('\n');
    column = lastNewline === -1 ? column + token.length : token.length - lastNewline - 1;

    if (nextIsScalarSource) {
      nextIsScalarSource = false;
      if (keyCandidateColumn === undefined) keyCandidateColumn = tokenColumn;
      lineHasContent = true;
      if (lastNewline !== -1) {
        // Block scalar content or a multi-line scalar: we are now on a fresh line.
        lineHasContent = column > 0 && token.slice(lastNewline + 1).trim() !== '';
        keyCandidateColumn = undefined;
      }
      continue;
    }
    const type = CST.tokenType(token);
    switch (type) {
      case 'newline':
        lineHasContent = false;
        keyCandidateColumn = undefined;
        break;
      case 'space':
      case 'comment':
        break;
      case 'doc-start':
      case 'doc-end':
        stack.length = 0;
        flowDepth = 0;
        keyCandidateColumn = undefined;
        lineHasContent = true;
        break;
      case 'flow-map-start':
      case 'flow-seq-start':
        flowDepth += 1;
        lineHasContent = true;
        keyCandidateColumn = undefined;
        if (exceeds()) return { tooDeepAt: tokenStart, hasAliases };
        break;
      case 'flow-map-end':
      case 'flow-seq-end':
        if (flowDepth > 0) flowDepth -= 1;
        lineHasContent = true;
        break;
      case 'seq-item-ind':
        if (flowDepth === 0) {
          openBlock(tokenColumn, 'seq', !lineHasContent);
          if (exceeds()) return { tooDeepAt: tokenStart, hasAliases };
        }
        lineHasContent = true;
        keyCandidateColumn = undefined;
        break;
      case 'explicit-key-ind':
        if (flowDepth === 0) {
          openBlock(tokenColumn, 'map', !lineHasContent);
          if (exceeds()) return { tooDeepAt: tokenStart, hasAliases };
        }
        lineHasContent = true;
        keyCandidateColumn = undefined;
        break;
      case 'map-value-ind':
        if (flowDepth === 0) {
          const keyColumn = keyCandidateColumn ?? tokenColumn;
          openBlock(keyColumn, 'map', true);
          if (exceeds()) return { tooDeepAt: tokenStart, hasAliases };
        }
        lineHasContent = true;
        keyCandidateColumn = undefined;
        break;
      default:
        // anchors, tags, quoted scalars, aliases, block scalar headers, directives, commas
        if (type === 'alias') hasAliases = true;
        if (keyCandidateColumn === undefined && type !== 'comma' && type !== 'block-scalar-header') keyCandidateColumn = tokenColumn;
        lineHasContent = true;
        break;
    }
  }
  return { hasAliases };
}

/** A path as a chain of links from the node back to the root: built into an array only when a finding needs it. */
interface PathLink {
  parent: PathLink | undefined;
  segment: string | number;
}

function pathOf(link: PathLink | undefined): Array<string | number> {
  const path: Array<string | number> = [];
  for (let current = link; current !== undefined; current = current.parent) path.push(current.segment);
  return path.reverse();
}

/** Walks every mapping (iteratively) and reports keys that occur more than once (E16). */
function findDuplicateKeys(document: Document.Parsed, lineCounter: LineCounter): Finding[] {
  const findings: Finding[] = [];
  const nodes: unknown[] = [document.contents];
  const links: Array<PathLink | undefined> = [undefined];
  while (nodes.length > 0) {
    const node = nodes.pop();
    const link = links.pop();
    if (node === null || node === undefined) continue;
    if (isMap(node)) {
      const pairs = node.items as Pair[];
      const keys = pairs.map((pair) => plainKeyOf(pair.key, document, { maxAliasCount: -1 }));
      if (new Set(keys).size !== keys.length) {
        const lines = new Map<string, number[]>();
        pairs.forEach((pair, index) => {
          const key = keys[index]!;
          const offset = nodeOffset(pair.key) ?? nodeOffset(pair.value);
          const line = offset === undefined ? 0 : lineCounter.linePos(offset).line;
          const list = lines.get(key) ?? [];
          list.push(line);
          lines.set(key, list);
        });
        for (const [key, keyLines] of lines) {
          if (keyLines.length < 2) continue;
          const sorted = [...keyLines].sort((left, right) => left - right);
          const known = sorted.filter((line) => line > 0);
          findings.push({
            code: codes.duplicateKey,
            message: `duplicate key '${key}' at lines ${known.join(', ')}`,
            severity: 'error',
            field: formatPath([...pathOf(link), key]),
            ...(known[1] !== undefined ? { line: known[1] } : {}),
          });
        }
      }
      for (let index = pairs.length - 1; index >= 0; index -= 1) {
        nodes.push((pairs[index] as Pair).value);
        links.push({ parent: link, segment: keys[index]! });
      }
    } else if (isSeq(node)) {
      for (let index = node.items.length - 1; index >= 0; index -= 1) {
        nodes.push(node.items[index]);
        links.push({ parent: link, segment: index });
      }
    } else if (isPair(node)) {
      nodes.push(node.value);
      links.push(link);
    }
  }
  findings.sort((left, right) => (left.line ?? 0) - (right.line ?? 0));
  return findings;
}

function nodeOffset(node: unknown): number | undefined {
  if (node && (isScalar(node) || isMap(node) || isSeq(node) || isAlias(node)) && node.range) return node.range[0];
  return undefined;
}
