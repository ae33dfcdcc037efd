import type { ImplManifest } from './schema/impl-schema.js';

/**
 * `validate-briefs` (E37 check 2 "symbol accuracy" and check 3 "line references", run at Scout
 * completion before the critic): do the symbols, line numbers and "Wave N Agent X" references an
 * agent's task cites exist? Pure: file contents and the repository-wide symbol search come in
 * through {@link BriefFacts}.
 */

/** One problem in a brief (Go's `BriefIssue` keys). */
export interface BriefIssue {
  check: 'symbol_missing' | 'line_invalid' | 'wave_reference_invalid';
  severity: 'error' | 'warning';
  description: string;
  file?: string;
  symbol?: string;
  line_number?: number;
  suggestions?: string[];
}

/** One agent's result. */
export interface AgentBriefResult {
  agent_id: string;
  passed: boolean;
  issues: BriefIssue[];
}

/** The `validate-briefs` JSON (Go's `BriefValidationData`). */
export interface BriefValidation {
  valid: boolean;
  agent_results: Record<string, AgentBriefResult>;
  summary: string;
}

/** What the rules may know about the repository. */
export interface BriefFacts {
  /** Text of a repository file (ownership path + its `repo`), undefined when it does not exist. */
  read(file: string, repo?: string): string | undefined;
  /** Symbols (from {@link briefSymbolCandidates}) found anywhere in the repository, as whole words. */
  repoSymbols?: ReadonlySet<string>;
  /** How a file is shown in issues (default: the ownership path). */
  display?(file: string, repo?: string): string;
}

/** Keywords and builtins of the languages we read: never symbols of the project. */
const notSymbols = new Set(
  [
    // Go
    'break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var',
    'bool byte rune string error int int8 int16 int32 int64 uint uint8 uint16 uint32 uint64 uintptr float32 float64 complex64 complex128 any',
    'nil true false iota append cap close complex copy delete imag len make new panic print println real recover min max clear',
    'ctx err ok fmt context result',
    // TypeScript / JavaScript
    'async await class constructor declare enum export extends function implements in instanceof let namespace null of private protected public readonly static super this throw try catch finally typeof undefined void while with yield',
    'number boolean object symbol bigint unknown never Promise Array Map Set Record Partial Readonly Error Date JSON Object String Number Boolean Symbol console require module exports',
    // Python
    'def self cls None True False lambda pass raise global nonlocal assert del elif except is not and or from as dict list tuple set str float bytes',
    // Rust
    'fn mut pub impl trait crate mod use where loop match ref move unsafe dyn Self Box Vec Option Some Result Ok Err usize isize u8 u16 u32 u64 i8 i16 i32 i64 f32 f64',
  ]
    .join(' ')
    .split(/\s+/),
);

const backtickIdentifier = /`([A-Za-z_][A-Za-z0-9_]*)(?:\(\))?`/g;
const declarationPatterns = [
  /\btype\s+([A-Z][A-Za-z0-9_]*)\s+(?:struct|interface)\b/g,
  /\bfunc\s+(?:\([^)]*\)\s*)?([A-Za-z_][A-Za-z0-9_]*)\s*\(/g,
];
/** Sentences that remove something: its symbols need not exist afterwards (nor before, for a rename). */
const deletionWords = /\b(?:delete|deletes|deleted|deleting|remove|removes|removed|removing|drop|drops|dropped|rename|renames|renamed)\b/i;
/**
 * Sentences that create something: a brand-new symbol cannot exist yet. Go checks them and
 * reports `symbol_missing` for every new function a modify-only agent is asked to add.
 */
const creationWords = /\b(?:add|adds|adding|create|creates|creating|introduce|introduces|implement|implements|implementing|define|defines|defining|write|writes|export|exports|expose|exposes|declare|declares)\b/i;

/** Splits a task into sentences (". ", end of line). */
function sentences(text: string): string[] {
  return text
    .replace(/\.\n/g, '. ')
    .split(/\.\s+|\n/)
    .map((sentence) => sentence.trim())
    .filter((sentence) => sentence !== '');
}

function identifiersIn(text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(backtickIdentifier)) found.push(match[1]!);
  for (const pattern of declarationPatterns) for (const match of text.matchAll(pattern)) found.push(match[1]!);
  return found;
}

/**
 * Symbols a task says already exist: backticked identifiers (`Name`, `name()`) and Go
 * declarations (`type X struct`, `func y(`), minus package-qualified names (`pkg.Name` is never
 * captured), keywords and builtins, and the symbols of sentences that delete, rename or create
 * something. Sorted, unique.
 */
export function extractBriefSymbols(task: string): string[] {
  const excluded = new Set<string>();
  for (const sentence of sentences(task)) {
    if (deletionWords.test(sentence) || creationWords.test(sentence)) for (const symbol of identifiersIn(sentence)) excluded.add(symbol);
  }
  const symbols = new Set<string>();
  for (const symbol of identifiersIn(task)) {
    if (symbol.length < 2 || notSymbols.has(symbol) || excluded.has(symbol)) continue;
    symbols.add(symbol);
  }
  return [...symbols].sort();
}

/** A line reference found in a task: the file named in the same paragraph, the highest line cited. */
export interface LineReference {
  file: string;
  line: number;
}

const filePathPattern = /(?:^|[\s`'"([])((?:[\w.-]+\/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,4})(?=$|[\s`'"),:;\]])/g;
const lineRangePattern = /\blines?\s+(\d+)\s*[-–]\s*(\d+)/gi;
const singleLinePattern = /\b(?:around line|at line|on line|line)\s+(\d+)\b/gi;

/**
 * Line numbers a task cites, each tied to the file named closest before it in the same
 * paragraph (else the paragraph's first file). A reference with no file in its paragraph is
 * ignored (Go checks it against the repository root and always reports it invalid).
 */
export function extractLineReferences(task: string): LineReference[] {
  const found: Array<{ file: string; line: number; order: number }> = [];
  let offset = 0;
  for (const paragraph of task.split(/(\n\s*\n)/)) {
    const start = offset;
    offset += paragraph.length;
    const files = [...paragraph.matchAll(filePathPattern)]
      .map((match) => ({ file: match[1]!, index: match.index! }))
      .filter((candidate) => !/^\d+(?:\.\d+)+$/.test(candidate.file) && !/^(?:e\.g|i\.e|etc)\.?$/i.test(candidate.file));
    if (files.length === 0) continue;
    const fileAt = (index: number) => [...files].reverse().find((candidate) => candidate.index < index)?.file ?? files[0]!.file;
    let rest = paragraph;
    for (const match of paragraph.matchAll(lineRangePattern)) {
      found.push({ file: fileAt(match.index!), line: Math.max(Number(match[1]), Number(match[2])), order: start + match.index! });
      rest = rest.replace(match[0], ' '.repeat(match[0].length));
    }
    for (const match of rest.matchAll(singleLinePattern)) found.push({ file: fileAt(match.index!), line: Number(match[1]), order: start + match.index! });
  }
  const references = new Map<string, LineReference>();
  for (const reference of found.filter((candidate) => candidate.line >= 1).sort((a, b) => a.order - b.order)) {
    const previous = references.get(reference.file);
    if (!previous) references.set(reference.file, { file: reference.file, line: reference.line });
    else if (previous.line < reference.line) previous.line = reference.line;
  }
  return [...references.values()];
}

/** "Wave N Agent X" references of a task. */
export function extractWaveAgentReferences(task: string): Array<{ wave: number; agent: string }> {
  const seen = new Set<string>();
  const references: Array<{ wave: number; agent: string }> = [];
  for (const match of task.matchAll(/\bWave\s+(\d+)[,:]?\s+agent\s+([A-Z][2-9]?)\b/gi)) {
    const reference = { wave: Number(match[1]), agent: match[2]!.toUpperCase() };
    const key = `${reference.wave}:${reference.agent}`;
    if (seen.has(key)) continue;
    seen.add(key);
    references.push(reference);
  }
  return references;
}

/** Edit distance (case-insensitive callers lower-case first). */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = current;
  }
  return previous[b.length]!;
}

/** Up to three identifiers of `texts` close to `symbol` (distance ≤ half its length + 2), closest first. */
function suggestionsFor(symbol: string, texts: readonly string[]): string[] {
  const candidates = new Set<string>();
  for (const text of texts) for (const match of text.matchAll(/\b[A-Za-z_][A-Za-z0-9_]{2,}\b/g)) if (!notSymbols.has(match[0])) candidates.add(match[0]);
  const target = symbol.toLowerCase();
  const limit = Math.floor(symbol.length / 2) + 2;
  return [...candidates]
    .map((candidate) => ({ candidate, distance: editDistance(target, candidate.toLowerCase()) }))
    .filter((scored) => scored.distance <= limit && scored.candidate !== symbol)
    .sort((a, b) => a.distance - b.distance || a.candidate.localeCompare(b.candidate))
    .slice(0, 3)
    .map((scored) => scored.candidate);
}

function wordPattern(symbol: string): RegExp {
  return new RegExp(`(?<![A-Za-z0-9_$])${symbol.replace(/[$]/g, '\\$')}(?![A-Za-z0-9_$])`);
}

interface OwnedFile {
  file: string;
  repo?: string;
  isNew: boolean;
}

/** Files an agent owns in any wave (file_ownership rows and the agent's `files`), in manifest order. */
function ownedFilesOf(manifest: ImplManifest, agentId: string, agentFiles: readonly string[]): OwnedFile[] {
  const owned = new Map<string, OwnedFile>();
  for (const row of manifest.file_ownership) {
    if (row.agent !== agentId || !row.file) continue;
    const key = `${row.repo ?? ''}\0${row.file}`;
    const isNew = (row.action ?? '').trim().toLowerCase() === 'new';
    const previous = owned.get(key);
    owned.set(key, { file: row.file, ...(row.repo ? { repo: row.repo } : {}), isNew: (previous?.isNew ?? false) || isNew });
  }
  for (const file of agentFiles) {
    if (![...owned.values()].some((entry) => entry.file === file)) owned.set(`\0${file}`, { file, isNew: false });
  }
  return [...owned.values()];
}

/** Every symbol the briefs cite (for the caller's one repository-wide search). */
export function briefSymbolCandidates(manifest: ImplManifest): string[] {
  const symbols = new Set<string>();
  for (const wave of manifest.waves) for (const agent of wave.agents ?? []) for (const symbol of extractBriefSymbols(agent.task ?? '')) symbols.add(symbol);
  return [...symbols].sort();
}

/**
 * Validates every agent's brief:
 * - `symbol_missing` (error): a cited symbol is in none of the agent's existing owned files and
 *   nowhere else in the repository (when `repoSymbols` is given). Agents whose owned files are
 *   all `action: new` skip this check (nothing exists yet), as do agents owning no files.
 * - `line_invalid` (error): a cited line is beyond the end of an existing file.
 * - `wave_reference_invalid`: "Wave N Agent X" where X is in another wave (error) or is not an
 *   agent of the IMPL (warning).
 * `valid` is false when any error-severity issue exists.
 */
export function validateBriefs(manifest: ImplManifest, facts: BriefFacts): BriefValidation {
  const agentWave = new Map<string, number>();
  for (const wave of manifest.waves) for (const agent of wave.agents ?? []) if (agent.id && !agentWave.has(agent.id)) agentWave.set(agent.id, wave.number ?? 0);
  const display = (file: string, repo?: string) => facts.display?.(file, repo) ?? file;
  const results: Record<string, AgentBriefResult> = {};
  let issueCount = 0;

  for (const wave of manifest.waves) {
    for (const agent of wave.agents ?? []) {
      const id = agent.id ?? '';
      if (id === '' || results[id]) continue;
      const task = agent.task ?? '';
      const issues: BriefIssue[] = [];
      const owned = ownedFilesOf(manifest, id, (agent.files ?? []).map(String));
      const existing = owned.filter((entry) => !entry.isNew).map((entry) => ({ ...entry, text: facts.read(entry.file, entry.repo) })).filter((entry): entry is OwnedFile & { text: string } => entry.text !== undefined);
      const checkSymbols = owned.length > 0 && owned.some((entry) => !entry.isNew);

      if (checkSymbols) {
        for (const symbol of extractBriefSymbols(task)) {
          const pattern = wordPattern(symbol);
          if (existing.some((entry) => pattern.test(entry.text))) continue;
          if (owned.some((entry) => entry.isNew)) continue; // it may be what a new file will define
          if (facts.repoSymbols?.has(symbol)) continue;
          const first = existing[0] ?? owned[0]!;
          const suggestions = suggestionsFor(symbol, existing.map((entry) => entry.text));
          issues.push({
            check: 'symbol_missing',
            severity: 'error',
            description: `symbol "${symbol}" not found in the agent's owned files${facts.repoSymbols ? ' nor anywhere in the repository' : ''}`,
            file: display(first.file, first.repo),
            symbol,
            ...(suggestions.length > 0 ? { suggestions } : {}),
          });
        }
        for (const reference of extractLineReferences(task)) {
          const entry = owned.find((candidate) => candidate.file === reference.file || candidate.file.endsWith(`/${reference.file}`));
          if (entry?.isNew) continue;
          const text = entry ? existing.find((candidate) => candidate === entry || (candidate.file === entry.file && candidate.repo === entry.repo))?.text : facts.read(reference.file);
          if (text === undefined) continue; // a missing file is E16's finding (E16_FILE_NOT_FOUND), not a line error
          const lines = text.endsWith('\n') ? text.split('\n').length - 1 : text.split('\n').length;
          if (reference.line <= lines) continue;
          issues.push({
            check: 'line_invalid',
            severity: 'error',
            description: `line ${reference.line} referenced but ${reference.file} has ${lines} line(s)`,
            file: display(entry?.file ?? reference.file, entry?.repo),
            line_number: reference.line,
          });
        }
      }

      for (const reference of extractWaveAgentReferences(task)) {
        const actual = agentWave.get(reference.agent);
        if (actual === undefined) {
          issues.push({ check: 'wave_reference_invalid', severity: 'warning', description: `brief references Agent ${reference.agent}, which is not an agent of this IMPL` });
        } else if (actual !== reference.wave) {
          issues.push({
            check: 'wave_reference_invalid',
            severity: 'error',
            description: `brief says 'Wave ${reference.wave} Agent ${reference.agent}' but Agent ${reference.agent} is in Wave ${actual} — update this reference`,
          });
        }
      }

      results[id] = { agent_id: id, passed: !issues.some((issue) => issue.severity === 'error'), issues };
      issueCount += issues.length;
    }
  }
  const sorted = Object.fromEntries(Object.entries(results).sort(([a], [b]) => a.localeCompare(b)));
  return {
    valid: Object.values(results).every((result) => result.passed),
    agent_results: sorted,
    summary: `${Object.keys(results).length} agents validated, ${issueCount} issues found`,
  };
}
