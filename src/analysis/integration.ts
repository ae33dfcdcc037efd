import { PolywaveError } from '../errors/polywave-error.js';
import type { Git } from '../git/git-port.js';
import type { ImplManifest } from '../protocol/schema/impl-schema.js';
import { findWave, waveBaseCommit } from '../protocol/waves.js';
import { blobSpec, readBlobs } from './read-blobs.js';
import { grepReferences, maxGrepNames } from './grep-references.js';
import { buildReferenceIndex, type ReferenceIndex } from './reference-index.js';
import { codeFamilyOf, isBinaryText, isTestFile, lexSource, type CodeFamily } from './source-lexer.js';
import { extractMembersFromSource, extractSymbolsFromSource, type MemberSymbol, type TopLevelSymbol } from './symbols.js';

/**
 * E25 integration validation: the new exports of a wave's complete agents that nothing calls.
 *
 * Differences from the Go `ValidateIntegration` (engine-cli.md §6.1), on purpose:
 * - Files are read from git at `ref` (the merge result, or each agent's branch via `agentRefs`),
 *   not from the pre-merge checkout where new files do not exist yet.
 * - Only NEW exports count: an export already present in the same file at the wave's base
 *   (`base`, default `waves[].base_commit`) is not the wave's doing. Without a base every export
 *   counts (Go behaviour).
 * - TS/JS, Go, Python and Rust (Go: Go AST + TS regexes only).
 * - References come from ONE identifier index of the repository at `ref` (comments and strings do
 *   not count, identifiers match whole), not a substring walk of the repository per export.
 * - Suggested callers: files that already use other exports of the defining file (no `go list`
 *   per gap).
 *
 * Naming rules. Which exports need a caller (engine-cli.md §6.1, the E25 text is silent): functions
 * and methods whose first name word is an action (Build, Create, New, Make, Register, Setup/SetUp,
 * Init/Initialize, Run, Start, Wire, Mount, Install, Bootstrap) or whose last word is Handler,
 * Middleware, Factory or Builder; types and classes named the same way; every exported Go struct
 * field; TS/JS `…Props` members named `on…`/`handle…`. Query-like names (Is, Has, Get, String,
 * Format, Validate) and plain constants never do. Words split camelCase, PascalCase and
 * snake_case alike, so `createThing`, `NewThing` and `register_routes` are all recognised, and
 * `Initial…`/`Runner` are not `Init`/`Run`.
 *
 * Severity follows the E25 TEXT where it and the Go code differ (engine-cli.md §12 #19):
 * - error: a function whose name says it must be called — Register, Init/Initialize, Build,
 *   Setup, Wire, Mount, Install, Bootstrap, Run, Start (the text's "Register*, Init*, Build*");
 * - warning: constructors New/Create/Make ("New* constructors that may be called by later
 *   waves" — Go makes New* an error), other required functions (…Handler, …Middleware), and
 *   callback props;
 * - info: types, classes, interfaces and struct fields ("likely intentionally public").
 * Gaps below the threshold (`threshold`, else `integration_gap_severity_threshold`, else
 * `warning`) are dropped, as in Go.
 */

export type IntegrationSeverity = 'error' | 'warning' | 'info';
export type IntegrationCategory = 'function_call' | 'type_usage' | 'field_init';

/** One gap (impl-manifest.schema.json `IntegrationGap`). */
export interface IntegrationGap {
  export_name: string;
  file_path: string;
  agent_id: string;
  category: IntegrationCategory;
  severity: IntegrationSeverity;
  reason: string;
  suggested_fix: string;
  /** Files that might need to call this export (may be empty). */
  search_results: string[];
}

/** The E25 report (impl-manifest.schema.json `IntegrationReport`). */
export interface IntegrationReport {
  wave: number;
  gaps: IntegrationGap[];
  valid: boolean;
  summary: string;
}

export interface ValidateIntegrationOptions {
  manifest: ImplManifest;
  /** Wave number (`waves[].number`). */
  wave: number;
  git: Git;
  /** Where the wave's work is visible: the merge result, or a branch. The reference index is built here. */
  ref: string;
  /** A reference index of `ref` built earlier in the run (reused, not rebuilt). */
  index?: ReferenceIndex;
  /** Builds the index on demand — only when a gap needs suggested callers, or without `searchRefs` (default: index `ref`). */
  loadIndex?: () => Promise<ReferenceIndex>;
  /**
   * Find references with one `git grep` over these trees (the target and the agents' tips) instead
   * of indexing the whole repository first; `searchExclude` = paths some branch deletes.
   */
  searchRefs?: readonly string[];
  searchExclude?: ReadonlySet<string>;
  /** Files searched directly besides the trees (e.g. each agent's changed files at its tip). */
  searchFiles?: ReadonlyArray<{ spec: string; path: string }>;
  /** Minimum severity reported; default the manifest's `integration_gap_severity_threshold`, else `warning`. */
  threshold?: IntegrationSeverity;
  /** Commit the wave started from; default `waves[].base_commit`. */
  base?: string;
  /** `base` is a full commit id the caller already resolved (no `rev-parse` to check it again). */
  baseResolved?: boolean;
  /** Read an agent's files from its own ref (pre-merge: its branch) instead of `ref`. */
  agentRefs?: Readonly<Record<string, string>>;
}

const severityOrder: Record<IntegrationSeverity, number> = { info: 0, warning: 1, error: 2 };

const queryWords = new Set(['is', 'has', 'get', 'string', 'format', 'validate']);
const mustCallWords = new Set(['register', 'init', 'initialize', 'initialise', 'build', 'setup', 'wire', 'mount', 'install', 'bootstrap', 'run', 'start']);
const constructorWords = new Set(['new', 'create', 'make']);
const actionSuffixes = new Set(['handler', 'middleware', 'factory', 'builder']);
const callbackWords = new Set(['on', 'handle']);

/** A new export with what E25 needs to judge it. */
interface ExportCandidate {
  name: string;
  /** Go-style kind word for the reason: func, method, type, class, field, prop. */
  kindWord: string;
  category: IntegrationCategory | 'none';
  line: number;
  isProp: boolean;
}

/** E25 for one wave; see the module comment for the rules. */
export async function validateIntegration(options: ValidateIntegrationOptions): Promise<IntegrationReport> {
  const { manifest, git } = options;
  const wave = findWave(manifest, options.wave);
  if (wave === undefined) {
    throw new PolywaveError({ code: 'P011_WAVE_NOT_FOUND', message: `wave ${options.wave} not found in manifest`, exitCode: 2, details: { wave: options.wave } });
  }
  const threshold = options.threshold ?? normalizeSeverity(manifest.integration_gap_severity_threshold) ?? 'warning';
  const baseRef = options.base ?? waveBaseCommit(manifest, options.wave);
  const base = baseRef === undefined ? undefined : options.baseResolved && options.base !== undefined ? options.base : await git.tryRevParse(baseRef);

  const agents = (wave.agents ?? []).flatMap((agent) => {
    const id = agent.id ?? '';
    const report = manifest.completion_reports?.[id];
    if (id === '' || report?.status !== 'complete') return [];
    const files = [...new Set([...(report.files_changed ?? []), ...(report.files_created ?? [])])].filter(
      (file) => file.trim() !== '' && codeFamilyOf(file) !== undefined && !isTestFile(file),
    );
    return [{ id, readRef: options.agentRefs?.[id] ?? options.ref, files }];
  });

  const texts = await readBlobs(
    git,
    agents.flatMap((agent) => agent.files.flatMap((file) => [blobSpec(agent.readRef, file), ...(base ? [blobSpec(base, file)] : [])])),
  );

  // The new exports that need a caller, before any repository-wide work: most waves have none
  // or few, and then nothing is indexed.
  const pending: Array<{ agent: string; file: string; candidate: KeyedCandidate; severity: IntegrationSeverity; fileExports: string[] }> = [];
  for (const agent of agents) {
    for (const file of agent.files) {
      const text = texts.get(blobSpec(agent.readRef, file));
      if (text === undefined || isBinaryText(text)) continue;
      const before = base ? texts.get(blobSpec(base, file)) : undefined;
      const current = exportsOf(file, text);
      const previous = new Set(before === undefined || isBinaryText(before) ? [] : exportsOf(file, before).map((candidate) => candidate.key));
      // Top-level exports only: members (`Name`, `onClick`) would make every file a "caller".
      const fileExports = current.filter((candidate) => !candidate.key.includes('#')).map((candidate) => candidate.name);
      for (const candidate of current) {
        if (previous.has(candidate.key)) continue;
        if (candidate.category === 'none' || !integrationRequired(candidate)) continue;
        const severity = severityOf(candidate);
        if (severityOrder[severity] < severityOrder[threshold]) continue;
        pending.push({ agent: agent.id, file, candidate, severity, fileExports });
      }
    }
  }

  let index = options.index;
  const loadIndex = options.loadIndex ?? (() => buildReferenceIndex({ git, ref: options.ref }));
  // The candidates and the other exports of their files (suggested callers use those) in one lookup.
  const names = [...new Set(pending.flatMap((item) => [item.candidate.name, ...item.fileExports]))];
  let grepped: Map<string, Set<string>> | undefined;
  if (pending.length > 0 && index === undefined) {
    if (options.searchRefs && names.length <= maxGrepNames) {
      grepped = await grepReferences(git, { refs: options.searchRefs, names, ...(options.searchExclude ? { excludePaths: options.searchExclude } : {}), ...(options.searchFiles ? { files: options.searchFiles } : {}) });
    } else {
      index = await loadIndex();
    }
  }
  const callers = (name: string, file: string): string[] => {
    if (index) return index.filesReferencing(name, { excludeFile: file, excludeTests: true });
    return [...(grepped?.get(name) ?? [])].filter((other) => other !== file && !isTestFile(other)).sort();
  };

  const gaps: IntegrationGap[] = [];
  for (const item of pending) {
    const { candidate, file } = item;
    if (callers(candidate.name, file).length > 0) continue;
    const suggestions = suggestCallers(callers, file, candidate.name, item.fileExports);
    gaps.push({
      export_name: candidate.name,
      file_path: file,
      agent_id: item.agent,
      category: candidate.category as IntegrationCategory,
      severity: item.severity,
      reason: `exported ${candidate.kindWord} ${JSON.stringify(candidate.name)} has no call-sites outside its defining file`,
      suggested_fix: suggestFix(candidate, suggestions),
      search_results: suggestions,
    });
  }
  const report: IntegrationReport = { wave: options.wave, gaps, valid: gaps.length === 0, summary: '' };
  report.summary = summarize(report);
  return report;
}

function normalizeSeverity(value: string | undefined): IntegrationSeverity | undefined {
  return value === 'error' || value === 'warning' || value === 'info' ? value : undefined;
}

interface KeyedCandidate extends ExportCandidate {
  /** Identity across versions of the file (receiver/owner qualified). */
  key: string;
}

/** The exported symbols and members of one file version, as E25 candidates. */
function exportsOf(file: string, text: string): KeyedCandidate[] {
  const family = codeFamilyOf(file)!;
  const source = lexSource(file, text);
  const candidates: KeyedCandidate[] = [];
  for (const symbol of extractSymbolsFromSource(source)) {
    if (!symbol.exported) continue;
    candidates.push(symbolCandidate(symbol, family));
  }
  for (const member of extractMembersFromSource(source)) candidates.push(memberCandidate(member));
  return candidates;
}

function symbolCandidate(symbol: TopLevelSymbol, family: CodeFamily): KeyedCandidate {
  const key = symbol.receiver === undefined ? symbol.name : `${symbol.receiver}.${symbol.name}`;
  const base = { name: symbol.name, line: symbol.line, key, isProp: false };
  switch (symbol.kind) {
    case 'function':
      return { ...base, kindWord: symbol.receiver === undefined ? 'func' : 'method', category: 'function_call' };
    case 'class':
      // A Python class is called to construct it; elsewhere a class is used like a type.
      return { ...base, kindWord: 'class', category: 'type_usage' };
    case 'const':
      return { ...base, kindWord: family === 'go' ? 'var' : 'const', category: 'none' };
    default:
      return { ...base, kindWord: 'type', category: 'type_usage' };
  }
}

function memberCandidate(member: MemberSymbol): KeyedCandidate {
  return {
    name: member.name,
    line: member.line,
    key: `${member.owner}#${member.name}`,
    kindWord: member.kind,
    // The schema's categories have no prop_pass: a callback prop is a field to initialise.
    category: 'field_init',
    isProp: member.kind === 'prop',
  };
}

/** Splits camelCase, PascalCase, snake_case and SCREAMING_CASE into lower-case words. */
export function nameWords(name: string): string[] {
  return name
    .replace(/^_+/, '')
    .split(/_+/)
    .flatMap((part) => part.match(/[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+|[A-Z]/g) ?? [])
    .map((word) => word.toLowerCase());
}

function leadingWord(words: readonly string[]): string {
  const [first = '', second = ''] = words;
  // SetUp / set_up read as "setup".
  return first === 'set' && second === 'up' ? 'setup' : first;
}

function integrationRequired(candidate: ExportCandidate): boolean {
  const words = nameWords(candidate.name);
  if (candidate.category === 'field_init') return candidate.isProp ? callbackWords.has(words[0] ?? '') : true;
  const first = leadingWord(words);
  if (queryWords.has(first)) return false;
  if (mustCallWords.has(first) || constructorWords.has(first)) return true;
  return actionSuffixes.has(words[words.length - 1] ?? '');
}

function severityOf(candidate: ExportCandidate): IntegrationSeverity {
  if (candidate.category === 'field_init') return candidate.isProp ? 'warning' : 'info';
  if (candidate.category === 'type_usage') return 'info';
  const first = leadingWord(nameWords(candidate.name));
  if (mustCallWords.has(first)) return 'error';
  return 'warning';
}

/** Up to five files that already use other exports of the defining file, most-used first. */
function suggestCallers(callers: (name: string, file: string) => string[], file: string, name: string, fileExports: readonly string[]): string[] {
  const counts = new Map<string, number>();
  for (const other of new Set(fileExports)) {
    if (other === name) continue;
    for (const caller of callers(other, file)) counts.set(caller, (counts.get(caller) ?? 0) + 1);
  }
  return [...counts.entries()]
    .sort(([leftFile, left], [rightFile, right]) => right - left || (leftFile < rightFile ? -1 : leftFile > rightFile ? 1 : 0))
    .slice(0, 5)
    .map(([caller]) => caller);
}

function suggestFix(candidate: ExportCandidate, suggestions: readonly string[]): string {
  if (suggestions.length > 0) return `Add call to ${candidate.name} in ${suggestions[0]}`;
  switch (candidate.category) {
    case 'function_call':
      return `Find appropriate caller for ${candidate.name} and add invocation`;
    case 'type_usage':
      return `Use type ${candidate.name} in appropriate location`;
    default:
      return `Wire ${candidate.name} into the codebase`;
  }
}

/** Go `buildSummary`. */
function summarize(report: IntegrationReport): string {
  if (report.valid) return `Wave ${report.wave}: all exports are integrated (no gaps detected)`;
  const errors = report.gaps.filter((gap) => gap.severity === 'error').length;
  const warnings = report.gaps.filter((gap) => gap.severity === 'warning').length;
  const parts = [`Wave ${report.wave}: ${report.gaps.length} integration gap(s) detected`];
  if (errors > 0) parts.push(`${errors} error(s)`);
  if (warnings > 0) parts.push(`${warnings} warning(s)`);
  return parts.join(', ');
}
