import type { Finding } from '../errors/finding.js';
import { applyEdits, type ApplyEditsOptions, type YamlEdit } from '../protocol/yaml/index.js';

/** What a manifest parser returns (parseImpl, parseProgram): enough to plan edits and reuse the parse. */
export interface ParsedManifestLike {
  fatal: boolean;
  findings: Finding[];
  /** The plain data of the text (null when it does not parse). */
  data?: unknown;
  document?: unknown;
  lineCounter?: unknown;
}

/**
 * One change of a group: `plan` decides its edits from the manifest as it is after every earlier
 * change of the group, or throws to refuse (only this change). `keys` name what the plan reads
 * and writes (e.g. `completion_reports.A`); undefined = anything.
 */
export interface GroupedEdit<Parsed extends ParsedManifestLike> {
  keys: readonly string[] | undefined;
  plan: (parsed: Parsed, text: string) => { edits: YamlEdit[]; outcome: unknown };
}

/** The result of one change: its outcome, or the error that refused it. */
export type GroupedResult = { ok: true; value: unknown } | { ok: false; error: unknown };

/** `applyEdits` options reusing a parse of exactly `text`. */
export function parsedOption(parsed: ParsedManifestLike | undefined): Pick<ApplyEditsOptions, 'parsed'> {
  if (!parsed?.document || !parsed.lineCounter) return {};
  return { parsed: { ok: true, document: parsed.document, lineCounter: parsed.lineCounter, findings: parsed.findings } as unknown as ApplyEditsOptions['parsed'] };
}

/**
 * Applies a group of changes to `text` in order, as if each were written on its own, with one
 * format-preserving `applyEdits` (one parse, one verification) per run of changes whose keys do
 * not overlap: a change that reads or writes a key an earlier change of the run wrote starts a
 * new run, planned on the text after the earlier ones. A change whose plan throws, or whose edits
 * cannot be applied, fails alone; the others land.
 */
export function applyGroupedEdits<Parsed extends ParsedManifestLike>(
  text: string,
  parsed: Parsed,
  parse: (text: string) => Parsed,
  items: ReadonlyArray<GroupedEdit<Parsed>>,
): { text: string; results: GroupedResult[] } {
  const results: GroupedResult[] = new Array<GroupedResult>(items.length);
  let currentText = text;
  let currentParsed: Parsed | undefined = parsed;
  let run: Array<{ index: number; edits: YamlEdit[] }> = [];
  const touched = new Set<string>();
  let touchesAll = false;

  const parsedNow = (): Parsed => (currentParsed ??= parse(currentText));
  const flush = (): void => {
    const edits = run.flatMap((item) => item.edits);
    if (edits.length > 0) {
      try {
        const current = parsedNow();
        currentText = applyEdits(currentText, mergeCreatedMappings(edits, current.data), parsedOption(current));
      } catch {
        // One change of the run cannot be applied: apply them one by one, failing only that one.
        for (const item of run) {
          if (item.edits.length === 0) continue;
          try {
            currentText = applyEdits(currentText, item.edits, parsedOption(parsedNow()));
            currentParsed = undefined;
          } catch (error) {
            results[item.index] = { ok: false, error };
          }
        }
      }
      currentParsed = undefined;
    }
    run = [];
    touched.clear();
    touchesAll = false;
  };

  items.forEach((item, index) => {
    if (touchesAll || item.keys === undefined || item.keys.some((key) => touched.has(key))) flush();
    let planned: { edits: YamlEdit[]; outcome: unknown };
    try {
      planned = item.plan(parsedNow(), currentText);
    } catch (error) {
      results[index] = { ok: false, error };
      return;
    }
    results[index] = { ok: true, value: planned.outcome };
    run.push({ index, edits: planned.edits });
    if (item.keys === undefined) touchesAll = true;
    else for (const key of item.keys) touched.add(key);
  });
  flush();
  return { text: currentText, results };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Edits that set keys under a mapping the text does not have yet (the first reports of a
 * manifest: `completion_reports.A`, `completion_reports.B`, …) become one edit setting that
 * mapping with every key in edit order — the same text as applying them one by one, but one
 * splice instead of one verified re-parse each (applyEdits cannot batch inserts into a mapping it
 * creates in the same call).
 */
export function mergeCreatedMappings(edits: YamlEdit[], data: unknown): YamlEdit[] {
  const merged: YamlEdit[] = [];
  const roots = new Map<string, { edit: { path: string[]; value: Record<string, unknown> }; position: number }>();
  const blocked = new Set<string>();
  for (const edit of edits) {
    const path = edit.path;
    let depth = 0;
    let node: unknown = data;
    while (depth < path.length - 1 && isRecord(node) && typeof path[depth] === 'string' && Object.hasOwn(node, path[depth] as string)) {
      node = node[path[depth] as string];
      depth += 1;
    }
    // depth = how much of the path exists; path[depth] is the mapping key the edit creates.
    const rest = path.slice(depth + 1);
    const creates = isRecord(node) && depth < path.length - 1 && rest.length > 0 && path.every((step) => typeof step === 'string');
    const rootKey = JSON.stringify(path.slice(0, depth + 1));
    if (!creates || 'delete' in edit || blocked.has(rootKey)) {
      if (creates) blocked.add(rootKey);
      merged.push(edit);
      continue;
    }
    let root = roots.get(rootKey);
    if (root === undefined) {
      root = { edit: { path: path.slice(0, depth + 1) as string[], value: {} }, position: merged.length };
      roots.set(rootKey, root);
      merged.push(root.edit);
    }
    let target = root.edit.value;
    for (const step of rest.slice(0, -1) as string[]) {
      const next = target[step];
      target = isRecord(next) ? next : (target[step] = {});
    }
    target[rest[rest.length - 1] as string] = 'value' in edit ? structuredClone(edit.value) : undefined;
  }
  return merged;
}
