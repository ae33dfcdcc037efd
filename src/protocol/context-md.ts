import { isMap, stringify } from 'yaml';
import { PolywaveError } from '../errors/polywave-error.js';
import type { ImplManifest } from './schema/impl-schema.js';
import { applyEdits, parseYamlSafe, toPlain, type YamlEdit } from './yaml/index.js';

/**
 * docs/CONTEXT.md — project memory (message-formats.txt "docs/CONTEXT.md — Project Memory",
 * E17 read by the Scout, E18 written after each completed feature).
 *
 * The canonical file is a YAML document whose first line is the comment
 * `# docs/CONTEXT.md — Project memory for Polywave`, with `created`, `protocol_version`,
 * `architecture`, `decisions`, `conventions`, `established_interfaces` and `features_completed`.
 * Pure: text in, text out; the date is passed in.
 *
 * Three layouts are handled, and user content is never dropped:
 * - no file (or only blank lines/comments): a fresh canonical document is written;
 * - a YAML mapping (the canonical form, possibly hand-edited): new entries are appended to the
 *   three lists with format-preserving edits (comments, key order and quoting kept);
 * - anything else (markdown prose, the Go tool's `## Features Completed` bullets): the text is
 *   kept byte for byte and the memory lives in one fenced block
 *   ```` ```yaml polywave-context ```` … ```` ``` ````, appended once and merged on later runs.
 *
 * Idempotent: a feature is recorded once per slug, an interface once per (name, path) unless its
 * signature changed, a decision once per (decision, feature) — re-running changes nothing.
 */

/** Protocol version written to `protocol_version` (message-formats.txt Version). */
export const contextProtocolVersion = '0.26.0';
/** First line of a CONTEXT.md created by polywave (a YAML comment). */
export const contextHeaderLine = '# docs/CONTEXT.md — Project memory for Polywave';
/** Info string of the fenced block used when CONTEXT.md is not a YAML document. */
export const contextBlockInfo = 'yaml polywave-context';
/** The error code for a CONTEXT.md that cannot be merged (the Go registry's N009_CONTEXT_ERROR). */
export const contextErrorCode = 'N009_CONTEXT_ERROR';

/** One `features_completed` entry. */
export interface ContextFeature {
  slug: string;
  impl_doc: string;
  waves: number;
  agents: number;
  date: string;
}

/** One `decisions` entry. */
export interface ContextDecision {
  decision: string;
  rationale: string;
  date: string;
  /** IMPL doc slug. */
  feature: string;
}

/** One `established_interfaces` entry. */
export interface ContextInterface {
  name: string;
  path: string;
  signature: string;
  /** IMPL doc slug. */
  introduced_in: string;
}

/** What one completed IMPL contributes to CONTEXT.md. */
export interface ContextEntries {
  feature: ContextFeature;
  decisions: ContextDecision[];
  interfaces: ContextInterface[];
}

/**
 * E18: the entries a completed IMPL adds. `features_completed` gets slug, IMPL doc path (relative
 * to the project root, as given), wave and agent counts and the date. `established_interfaces`
 * come from `interface_contracts` (location → path, definition → signature). `decisions` come
 * from the agents' reported `interface_deviations` — the decisions taken during the feature that
 * changed a planned interface, which a later Scout must respect (E17); an IMPL without
 * deviations adds none ("When to omit").
 */
export function contextEntriesFromImpl(manifest: ImplManifest, options: { slug: string; implDoc: string; date: string }): ContextEntries {
  const waves = manifest.waves ?? [];
  const agents = waves.reduce((total, wave) => total + (wave.agents ?? []).length, 0);
  const interfaces: ContextInterface[] = [];
  for (const contract of manifest.interface_contracts ?? []) {
    const name = (contract.name ?? '').trim();
    if (name === '') continue;
    interfaces.push({ name, path: (contract.location ?? '').trim(), signature: trimEnd(contract.definition ?? ''), introduced_in: options.slug });
  }
  const decisions: ContextDecision[] = [];
  const reports = manifest.completion_reports ?? {};
  for (const agentId of Object.keys(reports).sort()) {
    for (const deviation of reports[agentId]?.interface_deviations ?? []) {
      const description = (deviation.description ?? '').trim();
      if (description === '') continue;
      const affects = (deviation.affects ?? []).filter((item) => item.trim() !== '');
      decisions.push({
        decision: description,
        rationale: `interface deviation reported by agent ${agentId}${affects.length > 0 ? `; affects ${affects.join(', ')}` : ''}`,
        date: options.date,
        feature: options.slug,
      });
    }
  }
  return {
    feature: { slug: options.slug, impl_doc: options.implDoc, waves: waves.length, agents, date: options.date },
    decisions: dedupe(decisions, decisionKey),
    interfaces: dedupe(interfaces, (item) => `${item.name}\0${item.path}`),
  };
}

/** How CONTEXT.md was laid out when merged. */
export type ContextLayout = 'created' | 'yaml' | 'embedded';

/** Result of {@link mergeProjectContext}. */
export interface ContextMergeResult {
  /** The new file text (equal to the input when nothing changed). */
  text: string;
  changed: boolean;
  /** What was added: `features_completed:<slug>`, `established_interfaces:<name>`, `decisions:<text>`. */
  added: string[];
  layout: ContextLayout;
}

/**
 * Merges `entries` into the CONTEXT.md text `existing` (undefined = no file). See the file
 * comment for the layouts. Throws a PolywaveError `N009_CONTEXT_ERROR` (exit 1) when one of the
 * three sections exists but is not a list, or the polywave-context block is not a YAML mapping —
 * the file is then left to a human rather than guessed at.
 */
export function mergeProjectContext(existing: string | undefined, entries: ContextEntries, options: { date: string }): ContextMergeResult {
  if (existing === undefined || existing.split('\n').every((line) => /^\s*(?:#.*)?$/.test(line))) {
    const body = renderFreshContext(entries, options.date);
    const prefix = existing === undefined || existing.trim() === '' ? '' : `${existing.replace(/\s*$/, '')}\n`;
    const text = prefix === '' ? `${contextHeaderLine}\n${body}` : `${prefix}${body}`;
    return { text, changed: true, added: describeAll(entries), layout: 'created' };
  }

  const parsed = parseYamlSafe(existing);
  if (parsed.ok && isMap(parsed.document.contents)) {
    const merged = mergeIntoYaml(existing, entries, 'docs/CONTEXT.md');
    return { text: merged.text, changed: merged.text !== existing, added: merged.added, layout: 'yaml' };
  }

  const block = findContextBlock(existing);
  if (block === undefined) {
    const lineEnding = existing.includes('\r\n') ? '\r\n' : '\n';
    const section = [
      '## Polywave project memory',
      '',
      '<!-- Maintained by polywave (E18); the Scout reads it before planning (E17). Edit freely, keep it valid YAML. -->',
      `\`\`\`${contextBlockInfo}`,
      renderFreshContext(entries, options.date).replace(/\n$/, ''),
      '```',
      '',
    ].join('\n');
    const separator = existing.endsWith('\n\n') ? '' : existing.endsWith('\n') ? '\n' : '\n\n';
    const text = `${existing}${separator}${section}`.replace(/\r?\n/g, lineEnding);
    return { text, changed: true, added: describeAll(entries), layout: 'embedded' };
  }
  const inner = block.inner.trim() === '' ? undefined : block.inner;
  let mergedInner: { text: string; added: string[] };
  if (inner === undefined) {
    mergedInner = { text: renderFreshContext(entries, options.date), added: describeAll(entries) };
  } else {
    const innerParsed = parseYamlSafe(inner);
    if (!innerParsed.ok || !isMap(innerParsed.document.contents)) {
      throw contextError(`docs/CONTEXT.md: the \`\`\`${contextBlockInfo} block is not a YAML mapping; fix it by hand and re-run`);
    }
    mergedInner = mergeIntoYaml(inner, entries, `the ${contextBlockInfo} block of docs/CONTEXT.md`);
  }
  if (mergedInner.text === block.inner) return { text: existing, changed: false, added: [], layout: 'embedded' };
  const innerText = mergedInner.text.endsWith('\n') ? mergedInner.text : `${mergedInner.text}\n`;
  const text = `${existing.slice(0, block.innerStart)}${innerText}${existing.slice(block.innerEnd)}`;
  return { text, changed: text !== existing, added: mergedInner.added, layout: 'embedded' };
}

/** The `features_completed` slugs recorded in a CONTEXT.md text (any layout); `[]` when none can be read. */
export function recordedFeatureSlugs(text: string): string[] {
  const read = (yamlText: string): string[] => {
    const parsed = parseYamlSafe(yamlText);
    if (!parsed.ok || !isMap(parsed.document.contents)) return [];
    const features = (toPlain(parsed.document) as Record<string, unknown>).features_completed;
    return Array.isArray(features) ? features.flatMap((item) => (isRecord(item) && typeof item.slug === 'string' ? [item.slug] : [])) : [];
  };
  const direct = read(text);
  if (direct.length > 0) return direct;
  const block = findContextBlock(text);
  return block ? read(block.inner) : [];
}

// ---------------------------------------------------------------------------------------------

const sections = ['decisions', 'established_interfaces', 'features_completed'] as const;
type Section = (typeof sections)[number];

function renderFreshContext(entries: ContextEntries, date: string): string {
  const parts: string[] = [`${stringify({ created: date }, { lineWidth: 0 })}protocol_version: "${contextProtocolVersion}"\n`];
  for (const section of sections) {
    const items = itemsOf(entries, section);
    if (items.length === 0) continue;
    parts.push(stringify({ [section]: items }, { indent: 2, lineWidth: 0 }));
  }
  return parts.join('\n');
}

function itemsOf(entries: ContextEntries, section: Section): Array<Record<string, unknown>> {
  switch (section) {
    case 'decisions':
      return entries.decisions.map((item) => ({ ...item }));
    case 'established_interfaces':
      return entries.interfaces.map((item) => ({ ...item }));
    case 'features_completed':
      return [{ ...entries.feature }];
  }
}

function describe(section: Section, item: Record<string, unknown>): string {
  const label = section === 'features_completed' ? item.slug : section === 'established_interfaces' ? item.name : item.decision;
  return `${section}:${String(label)}`;
}

function describeAll(entries: ContextEntries): string[] {
  return orderAdded(sections.flatMap((section) => itemsOf(entries, section).map((item) => describe(section, item))));
}

/** `added` lists the feature first, then interfaces, then decisions (most useful first). */
function orderAdded(added: string[]): string[] {
  const rank = (entry: string) => (entry.startsWith('features_completed:') ? 0 : entry.startsWith('established_interfaces:') ? 1 : 2);
  return added.map((entry, index) => ({ entry, index })).sort((left, right) => rank(left.entry) - rank(right.entry) || left.index - right.index).map((item) => item.entry);
}

/** Appends the entries that are not recorded yet to the lists of a YAML mapping text. */
function mergeIntoYaml(text: string, entries: ContextEntries, where: string): { text: string; added: string[] } {
  const parsed = parseYamlSafe(text);
  if (!parsed.ok) throw contextError(`${where} is not valid YAML: ${parsed.findings[0]?.message ?? 'parse error'}`);
  const data = toPlain(parsed.document);
  const root = isRecord(data) ? data : {};
  const edits: YamlEdit[] = [];
  let added: string[] = [];
  for (const section of sections) {
    const current = root[section];
    if (current !== undefined && current !== null && !Array.isArray(current)) {
      throw contextError(`${where}: '${section}' is not a list; fix it by hand and re-run`);
    }
    const existing = (current ?? []) as unknown[];
    const fresh = itemsOf(entries, section).filter((item) => !isRecorded(section, existing, item));
    if (fresh.length === 0) continue;
    added.push(...fresh.map((item) => describe(section, item)));
    if (current === undefined || current === null) edits.push({ path: [section], value: fresh });
    else fresh.forEach((item, index) => edits.push({ path: [section, existing.length + index], value: item }));
  }
  added = orderAdded(added);
  if (edits.length === 0) return { text, added };
  // Only a file that records the protocol version gets it bumped ("created or last updated").
  if (typeof root.protocol_version === 'string' && root.protocol_version !== contextProtocolVersion) {
    edits.push({ path: ['protocol_version'], value: contextProtocolVersion });
  }
  try {
    return { text: applyEdits(text, edits, { parsed, indent: detectIndent(text) }), added };
  } catch (error) {
    throw contextError(`cannot update ${where}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** A 2-space default for files without nested content (the canonical schema's layout). */
function detectIndent(text: string): number | undefined {
  return /^[A-Za-z_][\w-]*:\s*\r?\n[ ]+\S/m.test(text) ? undefined : 2;
}

function isRecorded(section: Section, existing: readonly unknown[], item: Record<string, unknown>): boolean {
  return existing.some((entry) => {
    if (!isRecord(entry)) return false;
    if (section === 'features_completed') return text(entry.slug) === text(item.slug);
    if (section === 'decisions') return decisionKey(entry) === decisionKey(item);
    if (text(entry.name) !== text(item.name) || text(entry.path) !== text(item.path)) return false;
    return text(entry.introduced_in) === text(item.introduced_in) || trimEnd(text(entry.signature)) === trimEnd(text(item.signature));
  });
}

function decisionKey(item: Record<string, unknown> | ContextDecision): string {
  const record = item as Record<string, unknown>;
  return `${text(record.decision).trim()}\0${text(record.feature)}`;
}

function findContextBlock(existing: string): { inner: string; innerStart: number; innerEnd: number } | undefined {
  const opening = /^(`{3,}|~{3,})[ \t]*ya?ml[ \t]+polywave-context[^\n]*\n/m.exec(existing);
  if (!opening) return undefined;
  const fence = opening[1]!;
  const innerStart = opening.index + opening[0].length;
  const closing = new RegExp(`^${fence[0] === '`' ? '`' : '~'}{${fence.length},}[ \\t]*\\r?$`, 'm');
  const rest = existing.slice(innerStart);
  const match = closing.exec(rest);
  const innerEnd = match ? innerStart + match.index : existing.length;
  return { inner: existing.slice(innerStart, innerEnd), innerStart, innerEnd };
}

function dedupe<Item>(items: Item[], key: (item: Item) => string): Item[] {
  const seen = new Set<string>();
  return items.filter((item) => {
    const value = key(item);
    if (seen.has(value)) return false;
    seen.add(value);
    return true;
  });
}

function contextError(message: string): PolywaveError {
  return new PolywaveError({ code: contextErrorCode, message, exitCode: 1 });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function text(value: unknown): string {
  return value === undefined || value === null ? '' : String(value);
}

function trimEnd(value: string): string {
  return value.replace(/\s+$/, '');
}
