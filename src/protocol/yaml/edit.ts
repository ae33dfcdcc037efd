import { Document, isAlias, isMap, isScalar, isSeq, visit, type Pair, type Scalar, type YAMLMap, type YAMLSeq } from 'yaml';
import { codes } from '../../errors/codes.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { formatPath, resolvePath, type PathResolution, type YamlPath } from './locate.js';
import { loadPlainFast } from './fast-plain.js';
import { defaultMaxYamlDepth, parseYamlSafe, type ParseYamlOptions, type YamlParseResult } from './safe-parse.js';
import { nodeToPlain, plainKeyOf, setOwnProperty, toPlain } from './to-plain.js';

/** Sets the value at `path` (creating missing mappings) or deletes the key/item at `path`. */
export type YamlEdit = { path: YamlPath; value: unknown } | { path: YamlPath; delete: true };

/** How new YAML content is laid out; detected from the file when not given. */
export interface YamlStyle {
  /** Indentation unit in spaces (Go yaml.v3 files: 4). */
  indent: number;
  /** Whether block sequences are indented under their key (`key:\n    - a`) or flush. */
  indentSequences: boolean;
  /** Line ending used by the file. */
  lineEnding: '\n' | '\r\n';
  /**
   * Go yaml.v3 layout: nested content goes to the next multiple of `indent` above its parent's
   * column, so inside `- key: …` items children sit at dash + indent rather than key + indent.
   */
  indentGrid: boolean;
}

/** Options of {@link applyEdits}. */
export interface ApplyEditsOptions extends ParseYamlOptions {
  /** Override the detected indentation unit. */
  indent?: number;
  /** Override the detected sequence indentation. */
  indentSequences?: boolean;
  /**
   * The successful result of `parseYamlSafe(text)` (same text, default options) when the
   * caller already has it: saves parsing the text again.
   */
  parsed?: ParsedYaml;
}

type ParsedYaml = Extract<YamlParseResult, { ok: true }>;
type ParsedDocument = ParsedYaml['document'];

interface NormalizedEdit {
  path: Array<string | number>;
  kind: 'set' | 'delete';
  value: unknown;
}

/**
 * Applies `edits` to YAML `text` with minimal, format-preserving changes: every byte outside
 * the edited values is kept (comments, key order, quoting, Go yaml.v3 layout). Setting a
 * scalar rewrites only that scalar; a missing key is appended at the end of its mapping in
 * the file's own indentation style (missing parents are created, a flow `{}` parent becomes a
 * block); a sequence index equal to its length appends; a structured value replaces exactly
 * the old value's lines; delete removes the key's (or item's) lines.
 *
 * New content is rendered by the yaml library and re-indented. Several edits whose changes lie
 * apart (the usual state + report fields) are applied together and verified with one re-parse;
 * otherwise every step is verified by re-parsing: the data must equal the old data with the edit
 * applied, else the next larger rewrite is tried (the parent collection, up to the whole document). The final result is
 * verified against all edits; if anything does not mean what was asked, throws a
 * PolywaveError `N094_MANIFEST_SAVE_FAILED` instead of returning text. Invalid requests
 * (bad path, unsupported value, setting a key under a scalar) throw `X001_INVALID_INPUT`;
 * unparseable input text throws its parse finding's code.
 */
export function applyEdits(text: string, edits: ReadonlyArray<YamlEdit>, options: ApplyEditsOptions = {}): string {
  if (edits.length === 0) return text;
  // Offsets and columns are computed without a byte order mark; it is put back unchanged.
  if (text.charCodeAt(0) === 0xfeff) {
    const { parsed: _offsetsDiffer, ...rest } = options;
    return `\uFEFF${applyEdits(text.slice(1), edits, rest)}`;
  }
  const parseOptions: ParseYamlOptions = {
    ...(options.maxBytes !== undefined ? { maxBytes: options.maxBytes } : {}),
    ...(options.maxDepth !== undefined ? { maxDepth: options.maxDepth } : {}),
    ...(options.maxAliasCount !== undefined ? { maxAliasCount: options.maxAliasCount } : {}),
  };
  const maxDepth = options.maxDepth ?? defaultMaxYamlDepth;
  const normalized = edits.map((edit) => normalizeEdit(edit, maxDepth));

  const initial = options.parsed ?? parseYamlSafe(text, parseOptions);
  if (!initial.ok) {
    const first = initial.findings[0];
    throw new PolywaveError({
      code: first?.code ?? codes.parseError,
      message: `cannot edit YAML that does not parse: ${first?.message ?? 'unknown error'}`,
      exitCode: 2,
      findings: initial.findings,
    });
  }
  const detected = detectYamlStyle(text, initial.document);
  const indent = options.indent ?? detected.indent;
  const indentSequences = options.indentSequences ?? detected.indentSequences;
  const style: YamlStyle = {
    indent,
    indentSequences,
    lineEnding: detected.lineEnding,
    indentGrid: detected.indentGrid && indent === detected.indent && indentSequences,
  };

  const originalPlain = toPlain(initial.document, parseOptions);
  let expectedFinal = clonePlain(originalPlain);
  for (const edit of normalized) expectedFinal = applyPlainEdit(expectedFinal, edit);
  const batched = splicedBatch(text, initial.document, normalized, style, parseOptions, expectedFinal, countDuplicateFindings(initial.findings));
  if (batched !== undefined) return batched;

  let currentText = text;
  let currentDocument = initial.document;
  let currentPlain = originalPlain;
  let currentDuplicates = countDuplicateFindings(initial.findings);
  for (const [index, edit] of normalized.entries()) {
    const expected = applyPlainEdit(clonePlain(currentPlain), edit);
    let accepted: { text: string; document: ParsedDocument; plain: unknown; duplicates: number } | undefined;
    let lastProblem = 'no candidate rewrite';
    for (const candidate of candidateTexts(currentText, currentDocument, edit, style)) {
      // The last edit's result needs no Document for a next one: the fast reader may verify it.
      if (index === normalized.length - 1 && readsBackAs(candidate, expected, parseOptions)) return candidate;
      const reparsed = parseYamlSafe(candidate, parseOptions);
      if (!reparsed.ok) {
        lastProblem = reparsed.findings[0]?.message ?? 'the result does not parse';
        continue;
      }
      if (countDuplicateFindings(reparsed.findings) > currentDuplicates) {
        lastProblem = 'the result has a new duplicate key';
        continue;
      }
      const plain = toPlain(reparsed.document, parseOptions);
      const difference = findDifference(expected, plain, []);
      if (difference === undefined) {
        accepted = { text: candidate, document: reparsed.document, plain, duplicates: countDuplicateFindings(reparsed.findings) };
        break;
      }
      lastProblem = `the result differs at ${difference}`;
    }
    if (accepted === undefined) {
      throw new PolywaveError({
        code: codes.saveFailed,
        message: `refusing to write YAML: editing ${formatPath(edit.path) || 'the document'} would not produce the requested data (${lastProblem})`,
        exitCode: 2,
      });
    }
    currentText = accepted.text;
    currentDocument = accepted.document;
    currentPlain = accepted.plain;
    currentDuplicates = accepted.duplicates;
  }

  const difference = findDifference(expectedFinal, currentPlain, []);
  if (difference !== undefined) {
    throw new PolywaveError({
      code: codes.saveFailed,
      message: `refusing to write YAML: the edited text differs from the requested data at ${difference}`,
      exitCode: 2,
    });
  }
  return currentText;
}

/**
 * Fast path for several edits: each edit's minimal change is planned against the ORIGINAL text,
 * as a splice (the part of the text it replaces); when the splices are pairwise apart they are
 * applied together and the result is parsed and verified ONCE (the same final check as the
 * step-by-step path: the data must equal the original data with every edit applied, and no new
 * duplicate key). Undefined when the splices touch or overlap, or the check fails: the caller
 * then goes edit by edit.
 */
function splicedBatch(
  text: string,
  document: ParsedDocument,
  edits: readonly NormalizedEdit[],
  style: YamlStyle,
  parseOptions: ParseYamlOptions,
  expected: unknown,
  duplicates: number,
): string | undefined {
  if (edits.length < 2) return undefined;
  const splices: Array<{ start: number; end: number; insert: string }> = [];
  for (const edit of edits) {
    let first: IteratorResult<string>;
    try {
      first = candidateTexts(text, document, edit, style).next();
    } catch {
      // Maybe valid only after an earlier edit of the batch: the step-by-step path decides.
      return undefined;
    }
    if (first.done) return undefined;
    const candidate = first.value;
    if (candidate === text) continue;
    const limit = Math.min(text.length, candidate.length);
    let prefix = 0;
    while (prefix < limit && text.charCodeAt(prefix) === candidate.charCodeAt(prefix)) prefix += 1;
    let suffix = 0;
    while (suffix < limit - prefix && text.charCodeAt(text.length - 1 - suffix) === candidate.charCodeAt(candidate.length - 1 - suffix)) suffix += 1;
    splices.push({ start: prefix, end: text.length - suffix, insert: candidate.slice(prefix, candidate.length - suffix) });
  }
  // Stable: insertions at one point (new keys appended to the same mapping) keep the edits' order,
  // as if each were appended after the one before.
  splices.sort((left, right) => left.start - right.start);
  const merged: typeof splices = [];
  for (const splice of splices) {
    const previous = merged[merged.length - 1];
    if (previous !== undefined && previous.start === previous.end && splice.start === splice.end && previous.end === splice.start) {
      previous.insert += splice.insert;
      continue;
    }
    if (previous !== undefined && previous.end >= splice.start) return undefined;
    merged.push({ ...splice });
  }
  let result = text;
  for (const splice of merged.reverse()) result = result.slice(0, splice.start) + splice.insert + result.slice(splice.end);
  if (readsBackAs(result, expected, parseOptions)) return result;
  const reparsed = parseYamlSafe(result, parseOptions);
  if (!reparsed.ok || countDuplicateFindings(reparsed.findings) > duplicates) return undefined;
  return findDifference(expected, toPlain(reparsed.document, parseOptions), []) === undefined ? result : undefined;
}

/**
 * The check of an edited text, cheaply: true when the fast reader ({@link loadPlainFast}, what every
 * command reads a manifest with) takes the text and reads exactly `expected` from it. Its taking the
 * text implies the full parse accepts it with no finding at all (no duplicate key among them) and
 * gives the same data (proven by fast-plain.test.ts), so this passes only what the full check would
 * pass; false sends the text to the full check. ~1.5 ms instead of ~6 for a 10 KB IMPL: the full
 * re-parse was a third of a report's locked write. Not used with non-default parse limits.
 */
export function readsBackAs(candidate: string, expected: unknown, parseOptions: ParseYamlOptions): boolean {
  if (parseOptions.maxBytes !== undefined || parseOptions.maxDepth !== undefined || parseOptions.maxAliasCount !== undefined) return false;
  const fast = loadPlainFast(candidate);
  return fast !== undefined && findDifference(expected, fast.value, []) === undefined;
}

function countDuplicateFindings(findings: ReadonlyArray<{ code: string }>): number {
  return findings.filter((finding) => finding.code === codes.duplicateKey).length;
}

/**
 * Detects the layout of a YAML file: indentation unit (most common step between a key and
 * its nested mapping; default 4), whether block sequences are indented under their key
 * (default yes), the line ending, and whether content inside `- key:` items follows Go
 * yaml.v3's indentation grid (default yes when the unit is above 2).
 */
export function detectYamlStyle(text: string, document?: ParsedDocument): YamlStyle {
  const lineEnding: '\n' | '\r\n' = /\r\n/.test(text.slice(0, (text.indexOf('\n') + 1) || text.length)) ? '\r\n' : '\n';
  const parsedDocument = document ?? (() => {
    const parsed = parseYamlSafe(text);
    return parsed.ok ? parsed.document : undefined;
  })();
  const indentCounts = new Map<number, number>();
  let indentedSequences = 0;
  let flushSequences = 0;
  const sequenceSteps = new Map<number, number>();
  // Children of keys inside `- key:` items: [column of key, column of child]
  const itemChildColumns: Array<[number, number]> = [];
  const stack: unknown[] = parsedDocument ? [parsedDocument.contents] : [];
  let visited = 0;
  while (stack.length > 0 && visited < 5000) {
    const node = stack.pop();
    visited += 1;
    if (isMap(node) && !node.flow) {
      for (const pair of node.items) {
        const keyOffset = rangeOf(pair.key)?.[0];
        const value = pair.value;
        if (keyOffset !== undefined && (isMap(value) || isSeq(value)) && !value.flow && value.items.length > 0) {
          const keyColumn = columnOf(text, keyOffset);
          const keyLineEnd = endOfLine(text, keyOffset);
          if (isMap(value)) {
            const childOffset = rangeOf(value.items[0]?.key)?.[0];
            if (childOffset !== undefined && childOffset > keyLineEnd) {
              const step = columnOf(text, childOffset) - keyColumn;
              if (step > 0) indentCounts.set(step, (indentCounts.get(step) ?? 0) + 1);
            }
          } else {
            const dash = sequenceDashOffsets(value)[0];
            if (dash !== undefined && dash > keyLineEnd) {
              const step = columnOf(text, dash) - keyColumn;
              if (step > 0) {
                indentedSequences += 1;
                sequenceSteps.set(step, (sequenceSteps.get(step) ?? 0) + 1);
              } else flushSequences += 1;
            }
          }
        }
        stack.push(value);
      }
    } else if (isSeq(node) && !node.flow) {
      for (const item of node.items) {
        stack.push(item);
        if (!isMap(item) || item.flow || itemChildColumns.length >= 200) continue;
        for (const pair of item.items) {
          const keyOffset = rangeOf(pair.key)?.[0];
          const value = pair.value;
          if (keyOffset === undefined || !(isMap(value) || isSeq(value)) || value.flow || value.items.length === 0) continue;
          const childOffset = isMap(value) ? rangeOf(value.items[0]?.key)?.[0] : sequenceDashOffsets(value)[0];
          if (childOffset !== undefined && childOffset > endOfLine(text, keyOffset)) {
            itemChildColumns.push([columnOf(text, keyOffset), columnOf(text, childOffset)]);
          }
        }
      }
    }
  }
  const indent = Math.min(Math.max(mostCommon(indentCounts) ?? mostCommon(sequenceSteps) ?? 4, 1), 9);
  const indentSequences = indentedSequences >= flushSequences;
  let gridVotes = 0;
  let keyRelativeVotes = 0;
  for (const [keyColumn, childColumn] of itemChildColumns) {
    if (childColumn === nextGridColumn(keyColumn, indent)) gridVotes += 1;
    else if (childColumn === keyColumn + indent) keyRelativeVotes += 1;
  }
  const indentGrid = indent > 2 && indentSequences && gridVotes >= keyRelativeVotes;
  return { indent, indentSequences, lineEnding, indentGrid };
}

/** The next multiple of `unit` strictly above `column` (Go yaml.v3's nesting rule). */
function nextGridColumn(column: number, unit: number): number {
  return unit * Math.floor((column + unit) / unit);
}

function mostCommon(counts: Map<number, number>): number | undefined {
  let best: number | undefined;
  let bestCount = 0;
  for (const [value, count] of [...counts].sort((left, right) => left[0] - right[0])) {
    if (count > bestCount) {
      best = value;
      bestCount = count;
    }
  }
  return best;
}

// ---------------------------------------------------------------------------------------------
// Planning: what changes where, and the sequence of ever larger rewrites to try.

type Operation =
  | { kind: 'noop' }
  | { kind: 'replace'; path: Array<string | number>; value: unknown }
  | { kind: 'insert-pair'; mapPath: Array<string | number>; key: string; value: unknown }
  | { kind: 'append-item'; seqPath: Array<string | number>; value: unknown }
  | { kind: 'delete-pair'; mapPath: Array<string | number>; key: string }
  | { kind: 'delete-item'; seqPath: Array<string | number>; index: number }
  | { kind: 'append-document'; value: unknown };

interface Plan {
  operation: Operation;
  /** Path of the deepest existing node whose data changes; rewrites escalate from here up. */
  basePath: Array<string | number>;
  resolution: PathResolution;
}

function invalid(message: string): PolywaveError {
  return new PolywaveError({ code: codes.invalidInput, message, exitCode: 2 });
}

function planEdit(document: ParsedDocument, edit: NormalizedEdit): Plan {
  const path = edit.path;
  const resolution = resolvePath(document, path);
  const { steps, resolvedLength } = resolution;
  const where = (length: number): string => formatPath(path.slice(0, length)) || 'the document root';

  if (resolvedLength === path.length) {
    if (edit.kind === 'set') {
      return { operation: { kind: 'replace', path, value: edit.value }, basePath: path.slice(0, -1), resolution };
    }
    if (path.length === 0) throw invalid('cannot delete the document root');
    const container = steps[path.length - 1]?.node;
    const last = path[path.length - 1] as string | number;
    const containerPath = path.slice(0, -1);
    if (isMap(container)) return { operation: { kind: 'delete-pair', mapPath: containerPath, key: String(last) }, basePath: containerPath, resolution };
    return { operation: { kind: 'delete-item', seqPath: containerPath, index: last as number }, basePath: containerPath, resolution };
  }

  const existing = steps[resolvedLength]?.node;
  const segment = path[resolvedLength] as string | number;
  const existingPath = path.slice(0, resolvedLength);
  if (isSeq(existing) && typeof segment !== 'number') {
    throw invalid(`cannot ${edit.kind} ${formatPath(path)}: ${where(resolvedLength)} is a sequence, '${segment}' is not an index`);
  }
  if (edit.kind === 'delete') return { operation: { kind: 'noop' }, basePath: existingPath, resolution };

  if (isMap(existing)) {
    const value = buildNested(path.slice(resolvedLength + 1), edit.value, path);
    return { operation: { kind: 'insert-pair', mapPath: existingPath, key: String(segment), value }, basePath: existingPath, resolution };
  }
  if (isSeq(existing)) {
    if (segment !== existing.items.length) {
      throw invalid(`cannot set ${formatPath(path)}: ${where(resolvedLength)} has ${existing.items.length} items; only index ${existing.items.length} (append) can be added`);
    }
    const value = buildNested(path.slice(resolvedLength + 1), edit.value, path);
    return { operation: { kind: 'append-item', seqPath: existingPath, value }, basePath: existingPath, resolution };
  }
  if (resolvedLength === 0 && (existing === null || existing === undefined)) {
    return { operation: { kind: 'append-document', value: buildNested(path, edit.value, path) }, basePath: [], resolution };
  }
  const existingIsNull = existing === null || existing === undefined || (isScalar(existing) && existing.value === null);
  // An alias on the way is replaced by an edited copy of what it refers to.
  const base = existingIsNull ? null : isAlias(existing) ? nodeToPlain(existing, document, { maxAliasCount: -1 }) : undefined;
  if (Array.isArray(base) && typeof segment === 'number' && segment > base.length) {
    throw invalid(`cannot set ${formatPath(path)}: ${where(resolvedLength)} has ${base.length} items; only index ${base.length} (append) can be added`);
  }
  if (base === null || (typeof base === 'object' && base !== undefined && !(Array.isArray(base) && typeof segment !== 'number'))) {
    const value = applyPlainEdit(clonePlain(base), { path: path.slice(resolvedLength), kind: 'set', value: edit.value });
    return { operation: { kind: 'replace', path: existingPath, value }, basePath: existingPath.slice(0, -1), resolution };
  }
  const type = isScalar(existing) ? typeof existing.value : base === undefined ? 'value' : Array.isArray(base) ? 'sequence' : typeof base;
  throw invalid(`cannot set ${formatPath(path)}: ${where(resolvedLength)} is a ${type}, not a mapping or sequence`);
}

function buildNested(rest: ReadonlyArray<string | number>, value: unknown, fullPath: ReadonlyArray<string | number>): unknown {
  let built = value;
  for (let index = rest.length - 1; index >= 0; index -= 1) {
    const segment = rest[index] as string | number;
    if (typeof segment === 'number') {
      if (segment !== 0) throw invalid(`cannot set ${formatPath(fullPath)}: index ${segment} of a sequence that does not exist yet`);
      built = [built];
    } else {
      const object: Record<string, unknown> = {};
      setOwnProperty(object, segment, built);
      built = object;
    }
  }
  return built;
}

/**
 * Candidate results, smallest change first, each in the file's layout and then (if that
 * differs) in the yaml library's plain layout; each one is verified by the caller.
 */
function* candidateTexts(text: string, document: ParsedDocument, edit: NormalizedEdit, style: YamlStyle): Generator<string> {
  const plan = planEdit(document, edit);
  const operation = plan.operation;
  if (operation.kind === 'noop') {
    yield text;
    return;
  }
  const styles = style.indentGrid ? [style, { ...style, indentGrid: false }] : [style];
  const tried = new Set<string>();
  const fresh = (candidate: string | undefined): candidate is string => {
    if (candidate === undefined || tried.has(candidate)) return false;
    tried.add(candidate);
    return true;
  };
  for (const variant of styles) {
    const minimal = minimalEdit(text, document, plan, variant);
    if (fresh(minimal)) yield minimal;
  }
  const basePath = plan.basePath;
  for (let length = basePath.length; length >= 0; length -= 1) {
    const prefix = basePath.slice(0, length);
    const node = plan.resolution.steps[length]?.node;
    if (length === basePath.length && operation.kind === 'replace' && operation.path.length === length) continue;
    const current = node === undefined ? null : nodeToPlain(node, document, { maxAliasCount: -1 });
    const value = applyPlainEdit(clonePlain(current), { ...edit, path: edit.path.slice(length) });
    for (const variant of styles) {
      const rewritten = replaceNode(text, document, plan.resolution, prefix, value, variant);
      if (fresh(rewritten)) yield rewritten;
    }
  }
}

function minimalEdit(text: string, document: ParsedDocument, plan: Plan, style: YamlStyle): string | undefined {
  const operation = plan.operation;
  const steps = plan.resolution.steps;
  switch (operation.kind) {
    case 'replace':
      return replaceNode(text, document, plan.resolution, operation.path, operation.value, style);
    case 'insert-pair': {
      const map = steps[operation.mapPath.length]?.node;
      return isMap(map) ? insertPair(text, map, operation.key, operation.value, style) : undefined;
    }
    case 'append-item': {
      const seq = steps[operation.seqPath.length]?.node;
      return isSeq(seq) ? appendItem(text, seq, operation.value, style) : undefined;
    }
    case 'delete-pair': {
      const map = steps[operation.mapPath.length]?.node;
      return isMap(map) ? deletePairs(text, document, map, operation.key) : undefined;
    }
    case 'delete-item': {
      const seq = steps[operation.seqPath.length]?.node;
      return isSeq(seq) ? deleteItem(text, seq, operation.index) : undefined;
    }
    case 'append-document': {
      const rendered = layoutLines(renderYaml(operation.value, style), 0, style);
      const separator = text.length === 0 || text.endsWith('\n') ? '' : style.lineEnding;
      return text + separator + rendered;
    }
    default:
      return undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// Text operations. Each returns undefined when it cannot be done as a minimal edit.

/** Replaces the node at `path` (which must exist) with `value`. */
function replaceNode(
  text: string,
  document: ParsedDocument,
  resolution: PathResolution,
  path: ReadonlyArray<string | number>,
  value: unknown,
  style: YamlStyle,
): string | undefined {
  if (path.length === 0) return renderWholeDocument(value, style);
  const container = resolution.steps[path.length - 1]?.node;
  const step = resolution.steps[path.length];
  if (step === undefined) return undefined;
  if (isMap(container) && !container.flow && step.pair) {
    const pair = step.pair;
    const colon = pair.srcToken?.sep?.find((token) => token.type === 'map-value-ind')?.offset;
    const keyOffset = rangeOf(pair.key)?.[0];
    if (colon === undefined || keyOffset === undefined || text[colon] !== ':') return undefined;
    const tail = renderTail({ k: value }, 'k:', columnOf(text, keyOffset), style, quoteHint(step.node, value));
    return replaceAfterIndicator(text, colon, step.node, tail);
  }
  if (isSeq(container) && !container.flow && step.index !== undefined) {
    const dash = sequenceDashOffsets(container)[step.index];
    if (dash === undefined || text[dash] !== '-') return undefined;
    const tail = renderTail([value], '-', columnOf(text, dash), style, quoteHint(step.node, value));
    return replaceAfterIndicator(text, dash, step.node, tail);
  }
  return undefined;
}

function quoteHint(oldNode: unknown, value: unknown): Scalar.Type | undefined {
  if (!isScalar(oldNode) || typeof value !== 'string' || /[\n\r]/.test(value)) return undefined;
  if (oldNode.type === 'QUOTE_DOUBLE' || oldNode.type === 'QUOTE_SINGLE') return oldNode.type;
  // A plain string replaced by one of the same ambiguous kind (`updated: 2026-12-01` → a new date)
  // stays plain: it reads back as the old one did, here and in Go (the edit is verified anyway).
  if (oldNode.type === 'PLAIN' && typeof oldNode.value === 'string') {
    const tests = ambiguousStringTests();
    const kind = tests.findIndex((test) => test.test(value));
    if (kind >= 0 && tests[kind]!.test(oldNode.value)) return 'PLAIN';
  }
  return undefined;
}

/**
 * Splices a rendered value after a `:` or `-` indicator. Single-line values replacing a
 * single-line value keep everything around it (spacing, props, trailing comment); otherwise
 * the old value's lines up to the end of its last content line are replaced.
 */
function replaceAfterIndicator(text: string, indicator: number, oldNode: unknown, tail: string): string {
  const afterIndicator = indicator + 1;
  const oldRange = rangeOf(oldNode);
  const oldIsEmpty = oldRange === undefined || (isScalar(oldNode) && oldNode.value === null && oldRange[0] === oldRange[1]);
  const inline = !tail.includes('\n');

  if (inline) {
    if (oldIsEmpty) return text.slice(0, afterIndicator) + tail + text.slice(afterIndicator);
    const oldText = text.slice(oldRange[0], oldRange[1]);
    const gap = text.slice(afterIndicator, oldRange[0]);
    const oldIsInline = (isScalar(oldNode) && !isBlockScalar(oldNode)) || isAlias(oldNode) || ((isMap(oldNode) || isSeq(oldNode)) && oldNode.flow === true);
    if (oldIsInline && !oldText.includes('\n') && /^[ \t]+$/.test(gap)) {
      return text.slice(0, oldRange[0]) + tail.replace(/^[ \t]+/, '') + text.slice(oldRange[1]);
    }
  }

  let start = afterIndicator;
  const oldEnd = oldIsEmpty ? afterIndicator : lastContentOffset(text, oldNode);
  let end = Math.max(start, endOfLine(text, oldEnd));
  if (/^\r?\n/.test(tail)) {
    const indicatorLineEnd = endOfLine(text, afterIndicator);
    const between = text.slice(afterIndicator, indicatorLineEnd);
    if (/^[ \t]*#/.test(between) && (oldIsEmpty || (oldRange !== undefined && oldRange[0] > indicatorLineEnd))) {
      start = indicatorLineEnd;
      end = Math.max(end, start);
    }
  }
  return text.slice(0, start) + tail + text.slice(end);
}

function insertPair(text: string, map: YAMLMap, key: string, value: unknown, style: YamlStyle): string | undefined {
  if (map.flow || map.items.length === 0) return undefined;
  const firstKeyOffset = rangeOf(map.items[0]?.key)?.[0];
  if (firstKeyOffset === undefined) return undefined;
  const column = columnOf(text, firstKeyOffset);
  const entry: Record<string, unknown> = {};
  setOwnProperty(entry, key, value);
  const rendered = layoutLines(renderYaml(entry, style), column, style);
  return insertAfterLine(text, lastContentOffset(text, map), rendered, style);
}

function appendItem(text: string, seq: YAMLSeq, value: unknown, style: YamlStyle): string | undefined {
  if (seq.flow || seq.items.length === 0) return undefined;
  const dash = sequenceDashOffsets(seq)[0];
  if (dash === undefined || text[dash] !== '-') return undefined;
  const rendered = layoutLines(renderYaml([value], style), columnOf(text, dash), style);
  return insertAfterLine(text, lastContentOffset(text, seq), rendered, style);
}

function insertAfterLine(text: string, offset: number, rendered: string, style: YamlStyle): string {
  const newline = text.indexOf('\n', offset);
  if (newline === -1) return text + style.lineEnding + rendered;
  return text.slice(0, newline + 1) + rendered + text.slice(newline + 1);
}

function deletePairs(text: string, document: ParsedDocument, map: YAMLMap, key: string): string | undefined {
  if (map.flow) return undefined;
  const pairs = map.items as Pair[];
  const matching: number[] = [];
  pairs.forEach((pair, index) => {
    if (plainKeyOf(pair.key, document) === key) matching.push(index);
  });
  if (matching.length === 0 || matching.length === pairs.length) return undefined;
  let result = text;
  // Later pairs first so earlier offsets stay valid.
  for (const index of [...matching].reverse()) {
    const pair = pairs[index] as Pair;
    const keyOffset = rangeOf(pair.key)?.[0];
    if (keyOffset === undefined) return undefined;
    const lineStart = startOfLine(result, keyOffset);
    const end = afterLine(result, lastContentOfPair(result, pair));
    if (/^[ \t]*$/.test(result.slice(lineStart, keyOffset))) {
      result = result.slice(0, lineStart) + result.slice(end);
      continue;
    }
    // `- key: v` — the first pair of a compact mapping in a sequence item: keep the dash and
    // pull the next pair up onto its line.
    const next = pairs[index + 1];
    const nextOffset = rangeOf(next?.key)?.[0];
    if (index !== 0 || next === undefined || nextOffset === undefined || matching.includes(index + 1)) return undefined;
    if (columnOf(result, nextOffset) !== columnOf(result, keyOffset)) return undefined;
    result = result.slice(0, keyOffset) + result.slice(nextOffset);
  }
  return result;
}

function deleteItem(text: string, seq: YAMLSeq, index: number): string | undefined {
  if (seq.flow || seq.items.length <= 1) return undefined;
  const dash = sequenceDashOffsets(seq)[index];
  if (dash === undefined || text[dash] !== '-') return undefined;
  const lineStart = startOfLine(text, dash);
  if (!/^[ \t]*$/.test(text.slice(lineStart, dash))) return undefined;
  const item = seq.items[index];
  const rangeEnd = rangeOf(item);
  const lastContent = rangeEnd === undefined || (isScalar(item) && item.value === null && rangeEnd[0] === rangeEnd[1]) ? dash + 1 : lastContentOffset(text, item);
  return text.slice(0, lineStart) + text.slice(afterLine(text, lastContent));
}

function renderWholeDocument(value: unknown, style: YamlStyle): string {
  return layoutLines(renderYaml(value, style), 0, style);
}

// ---------------------------------------------------------------------------------------------
// Rendering with the yaml library.

let ambiguousTests: RegExp[] | undefined;

/**
 * Patterns of plain scalars that do not read back as strings, here (YAML 1.2 core) or in Go's
 * yaml.v3 (which also resolves timestamps, `_` in numbers, base-60 numbers and YAML 1.1
 * booleans such as `y`/`N`/`on`): such strings are double-quoted, as yaml.v3 writes them.
 */
function ambiguousStringTests(): RegExp[] {
  if (ambiguousTests === undefined) {
    ambiguousTests = [
      /^(?:y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF)$/,
      /^\d{4}-\d{1,2}-\d{1,2}(?:(?:[Tt]|[ \t]+)\d{1,2}:\d{2}:\d{2}(?:\.\d*)?(?:[ \t]*(?:Z|[-+]\d{1,2}(?::\d{2})?))?)?$/,
      /^[-+]?(?:0b[01_]+|0o?[0-7_]+|0x[0-9a-fA-F_]+|[0-9][0-9_]*)$/,
      /^[-+]?(?:\.[0-9_]+|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?$/,
      /^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$/,
    ];
    const schema = new Document(null, { version: '1.2' }).schema;
    for (const tag of schema.tags) {
      if (tag.default === true && tag.test instanceof RegExp) ambiguousTests.push(tag.test);
    }
  }
  return ambiguousTests;
}

/** Renders `value` as a YAML document at column 0 in the given style (ends with `\n`). */
function renderYaml(value: unknown, style: YamlStyle, hint?: Scalar.Type): string {
  const document = new Document(value, { aliasDuplicateObjects: false, keepUndefined: false });
  const tests = ambiguousStringTests();
  visit(document, {
    Scalar(_key, node) {
      if (typeof node.value !== 'string' || node.type !== undefined) return;
      const stringValue = node.value;
      // yaml writes a wrong indentation indicator (|2) for block scalars whose first line starts
      // with a space when indent != 2; double quotes avoid block scalars there.
      if (tests.some((test) => test.test(stringValue)) || (stringValue.includes('\n') && /^\n*[ ]/.test(stringValue))) {
        node.type = 'QUOTE_DOUBLE';
      }
    },
  });
  if (hint !== undefined) {
    const contents = document.contents;
    const target = isMap(contents) ? contents.items[0]?.value : isSeq(contents) ? contents.items[0] : undefined;
    if (isScalar(target) && typeof target.value === 'string') target.type = hint;
  }
  // Like yaml.v3: plain when possible, else single quotes, double quotes when escapes are needed.
  return document.toString({ indent: style.indent, indentSeq: style.indentSequences, lineWidth: 0, singleQuote: true });
}

/**
 * Renders `{k: value}` or `[value]` laid out with the key/dash at `ownerColumn` and returns
 * what follows the key/dash (no final newline).
 */
function renderTail(wrapper: unknown, prefix: string, ownerColumn: number, style: YamlStyle, hint: Scalar.Type | undefined): string {
  const laidOut = layoutLines(renderYaml(wrapper, style, hint), ownerColumn, style);
  const lead = ' '.repeat(ownerColumn) + prefix;
  if (!laidOut.startsWith(lead)) throw new PolywaveError({ code: codes.saveFailed, message: 'internal error: unexpected YAML rendering', exitCode: 2 });
  const tail = laidOut.slice(lead.length);
  return tail.endsWith(style.lineEnding) ? tail.slice(0, -style.lineEnding.length) : tail;
}

/**
 * Places rendered YAML (root at column 0) at `column`: with the Go grid layout when the style
 * asks for it (and the rendering is regular enough), else by indenting every line.
 */
function layoutLines(rendered: string, column: number, style: YamlStyle): string {
  const lines = (style.indentGrid ? alignToGrid(rendered, column, style.indent) : undefined) ?? rendered.split('\n').map((line) => (line === '' ? line : ' '.repeat(column) + line));
  return lines.join(style.lineEnding);
}

/**
 * Re-indents the yaml library's output to Go yaml.v3's layout: every nesting level starts at
 * the next multiple of `unit` above its parent's column; `- ` items put their content 2 columns
 * after the dash. Block scalar content moves with its key. Returns undefined for shapes it does
 * not recognise (the caller then indents uniformly).
 */
function alignToGrid(rendered: string, base: number, unit: number): string[] | undefined {
  const lines = rendered.split('\n');
  const result: string[] = [];
  const stack: Array<{ yaml: number; go: number }> = [];
  let scalar: { ownerYaml: number; target: number | undefined; ownerDelta: number; delta: number | undefined } | undefined;
  const shiftBy = (line: string, delta: number): string => (delta >= 0 ? ' '.repeat(delta) + line : line.slice(-delta));
  for (const line of lines) {
    const indent = (/^ */.exec(line) as RegExpExecArray)[0].length;
    if (scalar !== undefined) {
      const blank = indent === line.length;
      if (line === '' || (blank && (scalar.delta === undefined || indent + scalar.delta < 0))) {
        result.push(line);
        continue;
      }
      if (blank || indent > scalar.ownerYaml) {
        if (scalar.delta === undefined) scalar.delta = scalar.target === undefined ? scalar.ownerDelta : scalar.target - indent;
        result.push(shiftBy(line, scalar.delta));
        continue;
      }
      scalar = undefined;
    }
    if (line === '') {
      result.push(line);
      continue;
    }
    while (stack.length > 0 && (stack[stack.length - 1] as { yaml: number }).yaml > indent) stack.pop();
    const top = stack[stack.length - 1];
    let go: number;
    if (top !== undefined && top.yaml === indent) go = top.go;
    else if (top === undefined) {
      if (indent !== 0) return undefined;
      go = base;
      stack.push({ yaml: 0, go });
    } else {
      go = nextGridColumn(top.go, unit);
      stack.push({ yaml: indent, go });
    }
    let content = line.slice(indent);
    let yamlColumn = indent;
    let goColumn = go;
    let dashOwned = false;
    while (content.startsWith('- ')) {
      yamlColumn += 2;
      goColumn += 2;
      content = content.slice(2);
      stack.push({ yaml: yamlColumn, go: goColumn });
      dashOwned = true;
    }
    if (content.startsWith('? ') || content === '?' || content === '-') return undefined;
    result.push(' '.repeat(go) + line.slice(indent));
    const header = /(^|: )[|>]([1-9][+-]?|[+-][1-9]?)?$/.exec(content);
    if (header) {
      const explicit = /[1-9]/.test(header[0]);
      if (header[1] === '') {
        if (!dashOwned) return undefined;
        // `- |`: content keeps the library's offset from the dash.
        scalar = { ownerYaml: yamlColumn - 2, target: undefined, ownerDelta: goColumn - yamlColumn, delta: undefined };
      } else {
        scalar = { ownerYaml: yamlColumn, target: explicit ? undefined : nextGridColumn(goColumn, unit), ownerDelta: goColumn - yamlColumn, delta: undefined };
      }
    }
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Offsets and lines.

function rangeOf(node: unknown): [number, number, number] | undefined {
  if (node && (isScalar(node) || isMap(node) || isSeq(node) || isAlias(node)) && node.range) return node.range as [number, number, number];
  return undefined;
}

function isBlockScalar(node: Scalar): boolean {
  return node.type === 'BLOCK_LITERAL' || node.type === 'BLOCK_FOLDED';
}

/** The offset just after the last character that belongs to `node`'s value. */
function lastContentOffset(text: string, node: unknown): number {
  let current = node;
  for (;;) {
    const range = rangeOf(current);
    if (isMap(current) && !current.flow && current.items.length > 0) {
      const pair = current.items[current.items.length - 1] as Pair;
      if (pair.value !== null && pair.value !== undefined && !isEmptyScalar(pair.value)) {
        current = pair.value;
        continue;
      }
      const valueRange = rangeOf(pair.value);
      return valueRange ? Math.max(valueRange[1], rangeOf(pair.key)?.[1] ?? 0) : (rangeOf(pair.key)?.[1] ?? range?.[1] ?? 0);
    }
    if (isSeq(current) && !current.flow && current.items.length > 0) {
      const item = current.items[current.items.length - 1];
      if (isEmptyScalar(item)) return rangeOf(item)?.[1] ?? range?.[1] ?? 0;
      current = item;
      continue;
    }
    if (range === undefined) return 0;
    if (isScalar(current) && isBlockScalar(current)) {
      let end = range[1];
      if (text[end - 1] === '\n') end -= 1;
      if (text[end - 1] === '\r') end -= 1;
      return Math.max(end, range[0]);
    }
    return range[1];
  }
}

function lastContentOfPair(text: string, pair: Pair): number {
  if (pair.value !== null && pair.value !== undefined && !isEmptyScalar(pair.value)) return lastContentOffset(text, pair.value);
  return Math.max(rangeOf(pair.value)?.[1] ?? 0, rangeOf(pair.key)?.[1] ?? 0);
}

function isEmptyScalar(node: unknown): boolean {
  const range = rangeOf(node);
  return isScalar(node) && node.value === null && range !== undefined && range[0] === range[1];
}

/** Offsets of the `-` indicators of a block sequence's items, in item order. */
function sequenceDashOffsets(seq: YAMLSeq): number[] {
  const token = seq.srcToken;
  if (!token || token.type !== 'block-seq') return [];
  const offsets: number[] = [];
  for (const item of token.items) {
    const dash = item.start.find((start) => start.type === 'seq-item-ind');
    if (dash) offsets.push(dash.offset);
  }
  return offsets.length === seq.items.length ? offsets : [];
}

function columnOf(text: string, offset: number): number {
  return offset - (text.lastIndexOf('\n', offset - 1) + 1);
}

function startOfLine(text: string, offset: number): number {
  return text.lastIndexOf('\n', offset - 1) + 1;
}

/** Offset of the line break ending the line that contains `offset` (before a `\r`). */
function endOfLine(text: string, offset: number): number {
  const newline = text.indexOf('\n', offset);
  if (newline === -1) return text.length;
  return text[newline - 1] === '\r' && newline - 1 >= offset ? newline - 1 : newline;
}

/** Offset just after the line break ending the line that contains `offset`. */
function afterLine(text: string, offset: number): number {
  const newline = text.indexOf('\n', offset);
  return newline === -1 ? text.length : newline + 1;
}

// ---------------------------------------------------------------------------------------------
// Plain data: normalizing requested values, applying edits to plain data, comparing.

function normalizeEdit(edit: YamlEdit, maxDepth: number): NormalizedEdit {
  if (!edit || !Array.isArray(edit.path)) throw invalid('a YAML edit needs a path array');
  const path = edit.path.map((segment) => {
    if (typeof segment === 'string') return segment;
    if (typeof segment === 'number' && Number.isInteger(segment) && segment >= 0) return segment;
    throw invalid(`invalid path segment ${JSON.stringify(segment)} in ${JSON.stringify(edit.path)}`);
  });
  if ('delete' in edit && edit.delete === true) return { path, kind: 'delete', value: undefined };
  if (!('value' in edit) || edit.value === undefined) throw invalid(`edit of ${formatPath(path) || 'the document'} has no value (use delete: true to remove a key)`);
  const value = normalizeValue(edit.value, path, Math.max(1, maxDepth - path.length - 1));
  return { path, kind: 'set', value };
}

/** A deep copy of `value` as plain YAML-representable data (JSON-like semantics). */
function normalizeValue(value: unknown, path: ReadonlyArray<string | number>, depthBudget: number): unknown {
  const seen = new Set<object>();
  const fail = (reason: string): never => {
    throw invalid(`cannot write ${formatPath(path) || 'the document'}: ${reason}`);
  };
  const copy = (current: unknown, depth: number): unknown => {
    if (current === null || typeof current === 'string' || typeof current === 'boolean') return current;
    if (typeof current === 'number') {
      if (!Number.isFinite(current)) fail(`${current} is not a finite number`);
      return Object.is(current, -0) ? 0 : current;
    }
    if (typeof current !== 'object') return fail(`values of type ${typeof current} cannot be written`);
    if (depth > depthBudget) fail('the value nests too deeply');
    if (seen.has(current)) fail('the value contains a cycle');
    const toJson = (current as { toJSON?: unknown }).toJSON;
    if (typeof toJson === 'function') return copy((toJson as () => unknown).call(current), depth);
    seen.add(current);
    try {
      if (Array.isArray(current)) return current.map((item) => (item === undefined || typeof item === 'function' || typeof item === 'symbol' ? null : copy(item, depth + 1)));
      const prototype: unknown = Object.getPrototypeOf(current);
      if (prototype !== Object.prototype && prototype !== null) return fail(`objects of type ${(current as object).constructor?.name ?? 'unknown'} cannot be written`);
      const result: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(current)) {
        if (item === undefined || typeof item === 'function' || typeof item === 'symbol') continue;
        setOwnProperty(result, key, copy(item, depth + 1));
      }
      return result;
    } finally {
      seen.delete(current);
    }
  };
  return copy(value, 0);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function clonePlain(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(clonePlain);
  if (isPlainObject(value)) {
    const result: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) setOwnProperty(result, key, clonePlain(item));
    return result;
  }
  return value;
}

/** Applies one edit to plain data (mutating containers in place); returns the new root. */
function applyPlainEdit(root: unknown, edit: NormalizedEdit): unknown {
  const path = edit.path;
  if (path.length === 0) return edit.kind === 'set' ? clonePlain(edit.value) : null;
  if (edit.kind === 'delete') {
    let container: unknown = root;
    for (const segment of path.slice(0, -1)) {
      container = Array.isArray(container) ? container[segment as number] : isPlainObject(container) ? container[String(segment)] : undefined;
      if (container === undefined) return root;
    }
    const last = path[path.length - 1] as string | number;
    if (Array.isArray(container) && typeof last === 'number') {
      if (last < container.length) container.splice(last, 1);
    } else if (isPlainObject(container)) delete container[String(last)];
    return root;
  }
  const setIn = (target: unknown, index: number): unknown => {
    if (index === path.length) return clonePlain(edit.value);
    const segment = path[index] as string | number;
    if (Array.isArray(target) && typeof segment === 'number') {
      target[segment] = setIn(target[segment], index + 1);
      return target;
    }
    if (isPlainObject(target)) {
      const key = String(segment);
      setOwnProperty(target, key, setIn(Object.prototype.hasOwnProperty.call(target, key) ? target[key] : undefined, index + 1));
      return target;
    }
    // Missing or null: create it (planning already refused anything else).
    if (typeof segment === 'number') return [setIn(undefined, index + 1)];
    const created: Record<string, unknown> = {};
    setOwnProperty(created, segment, setIn(undefined, index + 1));
    return created;
  };
  return setIn(root, 0);
}

/** The formatted path of the first difference between two plain values, or undefined. */
function findDifference(expected: unknown, actual: unknown, path: Array<string | number>): string | undefined {
  const here = (): string => formatPath(path) || 'the document root';
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) return here();
    for (let index = 0; index < expected.length; index += 1) {
      const difference = findDifference(expected[index], actual[index], [...path, index]);
      if (difference !== undefined) return difference;
    }
    return undefined;
  }
  if (isPlainObject(expected)) {
    if (!isPlainObject(actual)) return here();
    const expectedKeys = Object.keys(expected);
    if (expectedKeys.length !== Object.keys(actual).length) return here();
    for (const key of expectedKeys) {
      if (!Object.prototype.hasOwnProperty.call(actual, key)) return formatPath([...path, key]);
      const difference = findDifference(expected[key], actual[key], [...path, key]);
      if (difference !== undefined) return difference;
    }
    return undefined;
  }
  return Object.is(expected, actual) ? undefined : here();
}
