import { isAlias, isMap, isPair, isScalar, isSeq, type Alias, type Document, type Node as YamlNode, type Scalar } from 'yaml';
import { codes } from '../../errors/codes.js';
import { PolywaveError } from '../../errors/polywave-error.js';

/** Default cap on alias dereferences (yaml's own default for `maxAliasCount`). */
export const defaultMaxAliasCount = 100;

/** Options of {@link toPlain}. */
export interface ToPlainOptions {
  /**
   * How many alias dereferences (`*name`, counted also inside expanded aliases) are allowed
   * before the document is treated as an alias bomb. -1 disables the check. Default 100.
   */
  maxAliasCount?: number;
}

/** A YAML document of any strictness (parsed or built). */
type AnyDocument = Document<YamlNode, boolean> | Document.Parsed;

interface ConversionState {
  document: AnyDocument;
  maxAliasCount: number;
  aliasCount: number;
  anchors: Map<string, Array<{ offset: number; node: unknown }>> | undefined;
}

/**
 * Converts a parsed YAML document into plain JS data the way Go's yaml.v3 decodes a manifest
 * into string fields: plain scalars keep their number/boolean value only when `String(value)`
 * reproduces the source text (`0123`, `1.10`, `True`, `1e3` stay strings), quoted and block
 * scalars are strings, `null`/`~`/empty are null, aliases are expanded (bounded), non-string
 * keys become their source text, and the last of duplicate keys wins.
 *
 * Iterative (no recursion per nesting level). Throws a PolywaveError `RESOURCE_EXHAUSTION`
 * when alias expansion exceeds `maxAliasCount`.
 */
export function toPlain(document: AnyDocument, options: ToPlainOptions = {}): unknown {
  return nodeToPlain(document.contents, document, options);
}

/**
 * Converts one node of `document` (see {@link toPlain}); `document` is needed to resolve aliases.
 */
export function nodeToPlain(node: unknown, document: AnyDocument, options: ToPlainOptions = {}): unknown {
  const state: ConversionState = {
    document,
    maxAliasCount: options.maxAliasCount ?? defaultMaxAliasCount,
    aliasCount: 0,
    anchors: undefined,
  };
  return convert(node, state);
}

/**
 * The plain value of a scalar node following the yaml.v3-like rules of {@link toPlain}.
 */
export function scalarToPlain(node: Scalar): unknown {
  const value: unknown = node.value;
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return value;
  const source = typeof node.source === 'string' ? node.source : undefined;
  const plain = node.type === undefined || node.type === 'PLAIN';
  if (!plain) return source ?? String(value);
  if (typeof value === 'number' || typeof value === 'boolean') {
    if (source === undefined || String(value) === source) return value;
    return source;
  }
  return source ?? String(value);
}

/**
 * The string key a map key node becomes in plain data: strings as they are, numbers/booleans
 * as their source text, null keys as their source (`~`, `null`, or empty), collection keys as
 * the JSON text of their plain value.
 */
export function plainKeyOf(keyNode: unknown, document: AnyDocument, options: ToPlainOptions = {}): string {
  if (isScalar(keyNode)) return scalarKeyOf(keyNode);
  return keyOf(keyNode, {
    document,
    maxAliasCount: options.maxAliasCount ?? defaultMaxAliasCount,
    aliasCount: 0,
    anchors: undefined,
  });
}

function scalarKeyOf(keyNode: Scalar): string {
  const value = scalarToPlain(keyNode);
  if (typeof value === 'string') return value;
  if (value === null) return typeof keyNode.source === 'string' ? keyNode.source : '';
  return String(value);
}

function keyOf(keyNode: unknown, state: ConversionState): string {
  if (keyNode === null || keyNode === undefined) return '';
  if (isScalar(keyNode)) return scalarKeyOf(keyNode);
  if (isAlias(keyNode)) return `*${keyNode.source}`;
  return JSON.stringify(convert(keyNode, state));
}

/** Defines `key` on `target` as an own data property (also for `__proto__`). */
export function setOwnProperty(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    target[key] = value;
  }
}

interface Task {
  node: unknown;
  assign: (value: unknown) => void;
}

function convert(root: unknown, state: ConversionState): unknown {
  let result: unknown = null;
  const stack: Task[] = [{ node: root, assign: (value) => (result = value) }];
  while (stack.length > 0) {
    const task = stack.pop() as Task;
    const node = task.node;
    if (node === null || node === undefined) {
      task.assign(null);
    } else if (isScalar(node)) {
      task.assign(scalarToPlain(node));
    } else if (isAlias(node)) {
      countAlias(state);
      stack.push({ node: resolveAlias(node, state), assign: task.assign });
    } else if (isMap(node) || isPair(node)) {
      const pairs = isPair(node) ? [node] : node.items;
      const target: Record<string, unknown> = {};
      task.assign(target);
      const keys = pairs.map((pair) => keyOf(pair.key, state));
      const lastIndex = new Map<string, number>();
      keys.forEach((key, index) => lastIndex.set(key, index));
      for (const key of keys) if (!Object.prototype.hasOwnProperty.call(target, key)) setOwnProperty(target, key, null);
      for (let index = pairs.length - 1; index >= 0; index -= 1) {
        const key = keys[index] as string;
        if (lastIndex.get(key) !== index) continue;
        stack.push({ node: (pairs[index] as { value: unknown }).value, assign: (value) => setOwnProperty(target, key, value) });
      }
    } else if (isSeq(node)) {
      const items = node.items;
      const target: unknown[] = new Array<unknown>(items.length).fill(null);
      task.assign(target);
      for (let index = items.length - 1; index >= 0; index -= 1) {
        stack.push({ node: items[index], assign: (value) => (target[index] = value) });
      }
    } else {
      task.assign(null);
    }
  }
  return result;
}

function countAlias(state: ConversionState): void {
  state.aliasCount += 1;
  if (state.maxAliasCount >= 0 && state.aliasCount > state.maxAliasCount) {
    throw new PolywaveError({
      code: codes.aliasBomb,
      message: `too many alias expansions (more than ${state.maxAliasCount}); refusing to expand a possible alias bomb`,
      exitCode: 2,
    });
  }
}

/** Resolves an alias to the closest preceding node with that anchor (linear anchor index). */
function resolveAlias(alias: Alias, state: ConversionState): unknown {
  if (state.anchors === undefined) state.anchors = collectAnchors(state.document.contents);
  const candidates = state.anchors.get(alias.source) ?? [];
  const aliasOffset = alias.range?.[0] ?? Number.MAX_SAFE_INTEGER;
  let found: unknown;
  for (const candidate of candidates) {
    if (candidate.offset < aliasOffset) found = candidate.node;
  }
  if (found === undefined) {
    throw new PolywaveError({ code: codes.parseError, message: `unresolved alias *${alias.source}`, exitCode: 2 });
  }
  return found;
}

function collectAnchors(root: unknown): Map<string, Array<{ offset: number; node: unknown }>> {
  const anchors = new Map<string, Array<{ offset: number; node: unknown }>>();
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const node = stack.pop();
    if (node === null || node === undefined || isAlias(node)) continue;
    if (isScalar(node) || isMap(node) || isSeq(node)) {
      if (node.anchor) {
        const list = anchors.get(node.anchor) ?? [];
        list.push({ offset: node.range?.[0] ?? -1, node });
        anchors.set(node.anchor, list);
      }
    }
    if (isMap(node)) {
      for (const pair of node.items) stack.push(pair.key, pair.value);
    } else if (isSeq(node)) {
      for (const item of node.items) stack.push(item);
    } else if (isPair(node)) {
      stack.push(node.key, node.value);
    }
  }
  for (const list of anchors.values()) list.sort((left, right) => left.offset - right.offset);
  return anchors;
}
