import { isAlias, isMap, isScalar, isSeq, type Document, type LineCounter, type Node as YamlNode, type Pair } from 'yaml';
import { codes } from '../../errors/codes.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { plainKeyOf } from './to-plain.js';

/** A path into YAML data: mapping keys are strings, sequence indexes are numbers. */
export type YamlPath = ReadonlyArray<string | number>;

/** A 1-based position in the source text. */
export interface SourcePosition {
  line: number;
  column: number;
}

/** One step of a resolved path: the node reached and how (through a pair or an index). */
export interface PathStep {
  /** The node at this prefix of the path (null for an empty value). */
  node: unknown;
  /** The pair whose value `node` is, when reached through a mapping key. */
  pair?: Pair;
  /** The index of `node` in its sequence, when reached through an index. */
  index?: number;
}

/** The nodes along a path, as far as they exist. */
export interface PathResolution {
  /** `steps[i]` is the node at `path.slice(0, i)`; `steps[0]` is the document contents. */
  steps: PathStep[];
  /** How many segments of the path exist (`steps.length - 1`). */
  resolvedLength: number;
}

type AnyDocument = Document<YamlNode, boolean> | Document.Parsed;

const identifierPattern = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/**
 * Formats a path the way findings name fields: `waves[0].agents[1].id`,
 * `completion_reports.A.commit`, `quality_gates.gates[2].type`. Keys that are not simple
 * identifiers are written as `["a key"]` (JSON-quoted).
 */
export function formatPath(path: YamlPath): string {
  let text = '';
  for (const segment of path) {
    if (typeof segment === 'number') text += `[${segment}]`;
    else if (identifierPattern.test(segment)) text += text === '' ? segment : `.${segment}`;
    else text += `[${JSON.stringify(segment)}]`;
  }
  return text;
}

/**
 * Parses a field path written by {@link formatPath} (its inverse). Also accepts any run of
 * characters other than `.` and `[` as a key (`a/b.c` → `['a/b', 'c']`). Throws a
 * PolywaveError `X001_INVALID_INPUT` on malformed brackets or quotes.
 */
export function parsePath(field: string): Array<string | number> {
  const path: Array<string | number> = [];
  let position = 0;
  const fail = (reason: string): never => {
    throw new PolywaveError({ code: codes.invalidInput, message: `invalid field path '${field}': ${reason}`, exitCode: 2 });
  };
  while (position < field.length) {
    const character = field[position];
    if (character === '[') {
      if (field[position + 1] === '"') {
        let end = position + 2;
        while (end < field.length && field[end] !== '"') end += field[end] === '\\' ? 2 : 1;
        if (end >= field.length) fail(`unterminated quote at ${position}`);
        let key: unknown;
        try {
          key = JSON.parse(field.slice(position + 1, end + 1));
        } catch {
          fail(`bad quoted key at ${position}`);
        }
        if (field[end + 1] !== ']') fail(`expected ']' at ${end + 1}`);
        path.push(key as string);
        position = end + 2;
      } else {
        const end = field.indexOf(']', position);
        if (end < 0) fail(`unterminated '[' at ${position}`);
        const digits = field.slice(position + 1, end);
        if (!/^\d+$/.test(digits)) fail(`expected an index in '[${digits}]'`);
        path.push(Number(digits));
        position = end + 1;
      }
    } else {
      if (character === '.') {
        if (path.length === 0) fail('leading dot');
        position += 1;
      }
      let end = position;
      while (end < field.length && field[end] !== '.' && field[end] !== '[') end += 1;
      if (end === position) fail(`empty key at ${position}`);
      path.push(field.slice(position, end));
      position = end;
    }
  }
  return path;
}

/**
 * Walks `path` from the document root as far as it exists. Mapping keys are compared with
 * their plain string form (numbers in the path match `String(n)` keys); for duplicate keys the
 * last pair wins, as in toPlain. With `followAliases`, an alias on the way is replaced by the
 * node it refers to; otherwise the walk stops at the alias.
 */
export function resolvePath(document: AnyDocument, path: YamlPath, options: { followAliases?: boolean } = {}): PathResolution {
  const steps: PathStep[] = [{ node: document.contents }];
  let current: unknown = document.contents;
  for (const segment of path) {
    if (options.followAliases && isAlias(current)) current = resolveAliasNode(current, document);
    if (isMap(current)) {
      const key = String(segment);
      let found: Pair | undefined;
      for (const pair of current.items) if (plainKeyOf(pair.key, document) === key) found = pair as Pair;
      if (found === undefined) break;
      steps.push({ node: found.value ?? null, pair: found });
      current = found.value ?? null;
    } else if (isSeq(current) && typeof segment === 'number' && Number.isInteger(segment) && segment >= 0 && segment < current.items.length) {
      current = current.items[segment] ?? null;
      steps.push({ node: current, index: segment });
    } else {
      break;
    }
  }
  return { steps, resolvedLength: steps.length - 1 };
}

/**
 * The 1-based position of the node at `path`. For a key, the key's position; for a missing
 * key, the position of the deepest existing ancestor (its key when it has one). Undefined only
 * for an empty document.
 */
export function locatePath(document: AnyDocument, lineCounter: LineCounter, path: YamlPath): SourcePosition | undefined {
  const { steps } = resolvePath(document, path, { followAliases: true });
  for (let index = steps.length - 1; index >= 0; index -= 1) {
    const step = steps[index] as PathStep;
    const offset = stepOffset(step);
    if (offset !== undefined) {
      const position = lineCounter.linePos(offset);
      return { line: position.line, column: position.col };
    }
  }
  return undefined;
}

function stepOffset(step: PathStep): number | undefined {
  const keyNode = step.pair?.key;
  if (keyNode && (isScalar(keyNode) || isMap(keyNode) || isSeq(keyNode) || isAlias(keyNode)) && keyNode.range) return keyNode.range[0];
  const node = step.node;
  if (node && (isScalar(node) || isMap(node) || isSeq(node) || isAlias(node)) && node.range) return node.range[0];
  return undefined;
}

function resolveAliasNode(alias: { source: string; range?: readonly number[] | null }, document: AnyDocument): unknown {
  const aliasOffset = alias.range?.[0] ?? Number.MAX_SAFE_INTEGER;
  let found: unknown;
  const stack: unknown[] = [document.contents];
  while (stack.length > 0) {
    const node = stack.pop();
    if (node === null || node === undefined || isAlias(node)) continue;
    if ((isScalar(node) || isMap(node) || isSeq(node)) && node.anchor === alias.source) {
      const offset = node.range?.[0] ?? -1;
      const foundOffset = (found as { range?: number[] } | undefined)?.range?.[0] ?? -2;
      if (offset < aliasOffset && offset > foundOffset) found = node;
    }
    if (isMap(node)) for (const pair of node.items) stack.push(pair.key, pair.value);
    else if (isSeq(node)) for (const item of node.items) stack.push(item);
  }
  return found ?? null;
}
