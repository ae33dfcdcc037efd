import type { ImplManifest } from '../protocol/schema/impl-schema.js';

/**
 * Task phrases that announce a signature change (E46 "signature change keywords"; the Go list
 * plus the common phrasings the corpus uses: "new signature", "add a parameter", …).
 */
export const changeKeywords: readonly string[] = [
  'change signature',
  'changed signature',
  'update signature',
  'signature change',
  'new signature',
  'change return type',
  'return type',
  'migrate',
  'rename',
  'add parameter',
  'add a parameter',
  'remove parameter',
  'remove method',
];

/**
 * Up to 80 characters of one sentence between two words: a backticked span counts as one piece whatever it holds
 * (``a `ctx context.Context` parameter``, `*slog.Logger`, `...Option`), and so does a dot inside a word (`app/security.py`):
 * a dot before a space or the end, `;`, `:`, `!`, `?` or a line break end a sentence (outside round X54-03 — any dot did,
 * and the commonest Go phrasings were not taken for a signature change; X55-02 — `;`/`:` did not, and the next clause
 * was read as the same one).
 */
const sameSentence = '(?:`[^`\\n]{0,80}`|\\.(?=\\w)|[^.;:!?\\n`]){0,80}?';
/** "add a `logger` parameter", "adds Logger parameter", "remove the ctx parameter", "an optional `timeout` argument", "function signature". */
const parameterChange = new RegExp(
  `\\b(add|adds|added|adding|remove|removes|removed|removing|drop|drops|dropped|thread|threads|threading|change|changes|changed|changing|update|updates|updated|replace|replaces|replaced|extend|extends|extended|reorder|reorders|reordered)\\b${sameSentence}\\b(?:parameters?|params?|arguments?|args?)\\b(?!\\s*(?:parser|parsing|stays?|remains?|are unchanged|is unchanged))|\\bsignatures?\\b`,
  'gi',
);
/**
 * "make `f()` take a `capacity int`" / "… take a `ctx` parameter", "change `parse()` to return `Result<…>`", "make
 * `fetchUser()` async": the callable in backticks, then take/accept with a backticked or named parameter, return(s)
 * with a backticked type, or async — not "return early", "take the lock", "make sure `f()` still returns" (X55-02).
 */
const callableChange = new RegExp(
  `\\b(make|makes|change|changes|update|updates)\\s+\`[^\`\\n]+\`${sameSentence}\\b(?:(?:take|takes|accept|accepts)\\s+(?:(?:an?|the|one|two|an? extra|an? new|an? optional|extra|new|optional)\\s+)?(?:\`[^\`\\n]+\`|[\\w-]+\\s+(?:parameters?|arguments?|options?)\\b)|(?:to\\s+)?returns?\\s+(?:an?\\s+|the\\s+)?\`[^\`\\n]+\`|async\\b|asynchronous\\b)`,
  'gi',
);
/** A negation just before a match's verb: "without changing its parameters", "do not change the signature", "never update …". */
const negated = /\b(?:without|not|never|no|nor)\s+(?:\w+\s+){0,2}$|n't\s+(?:\w+\s+){0,2}$/i;
/** "make sure `f()` …", "make certain …": an instruction, not a change. */
const assurance = /^make\s+(?:sure|certain)\b/i;

/** Whether one of `pattern`'s matches in `text` stands (not negated, no assurance). */
function affirmed(pattern: RegExp, text: string): boolean {
  for (const match of text.matchAll(pattern)) {
    const sentenceStart = Math.max(text.lastIndexOf('\n', match.index), ...['. ', '; ', ': ', '! ', '? '].map((end) => text.lastIndexOf(end, match.index)));
    const before = text.slice(sentenceStart < 0 ? 0 : sentenceStart, match.index);
    if (negated.test(before) || assurance.test(match[0])) continue;
    return true;
  }
  return false;
}

/** True when the text announces a signature change. */
export function mentionsChange(text: string): boolean {
  const lower = text.toLowerCase();
  return changeKeywords.some((keyword) => lower.includes(keyword)) || affirmed(parameterChange, text) || affirmed(callableChange, text);
}

/** A contract `location` without its `:line` suffix (`pkg/deps/types.go:6` → `pkg/deps/types.go`). */
export function locationFile(location: string | undefined): string {
  return (location ?? '').trim().replace(/:\d+(?::\d+)?$/, '');
}

/** A symbol whose signature an agent changes. */
export interface ChangedSymbol {
  /** As written (`Parse`, `LockFileParser.Parse`, `pkg.Func` → `Func`). */
  symbol: string;
  /** The identifier searched for (the last segment). */
  name: string;
  /** `Type.Method`: only member uses (`x.Method`) count. */
  member: boolean;
  /** Agents that change it, sorted. */
  agents: string[];
  /** Wave of the (first) changing agent. */
  wave: number;
  /** The contract's location, when the symbol comes from interface_contracts. */
  location?: string;
  /**
   * Named as a callable (`Foo()`, `Type.Method`) or by a contract. A bare backticked name is
   * only a changed symbol when the agent's own files define it as a function or method (checked
   * against the repository by the callers of changedSymbols).
   */
  confirmed: boolean;
}

/** Identifiers as JS/TS, Go, Python and Rust write them: Unicode letters, digits, `_`, and `$` (JS/TS; X55-07). */
const identifierPath = /^[\p{L}_$][\p{L}\p{N}_$]*(?:\.[\p{L}_$][\p{L}\p{N}_$]*)*$/u;
const fileLike = /\.(go|ts|tsx|js|jsx|mjs|cjs|py|rs|md|ya?ml|json|toml|txt|sh)$/i;

/**
 * A backticked or contract name as a searchable symbol: `Foo()` → Foo; `pkg.Foo` (lower-case
 * qualifier: a package or module) → Foo; `Type.Method` (capitalised qualifier) → member Method.
 * File paths, flags and expressions are not symbols.
 */
export function symbolFromName(raw: string): { symbol: string; name: string; member: boolean; callable: boolean } | undefined {
  const callable = /\(\)$/.test(raw.trim());
  // (a Rust path, `Item::new()`, is written with `::`: outside round X54-07)
  const text = raw.trim().replace(/\(\)$/, '').replace(/::/g, '.');
  if (text === '' || fileLike.test(text) || !identifierPath.test(text)) return undefined;
  const parts = text.split('.');
  const name = parts[parts.length - 1]!;
  if (name.length < 2) return undefined;
  if (parts.length === 1) return { symbol: text, name, member: false, callable };
  const qualifier = parts[parts.length - 2]!;
  const member = /^\p{Lu}/u.test(qualifier) && /^\p{Lu}/u.test(parts[0]!);
  return { symbol: member ? `${qualifier}.${name}` : name, name, member, callable };
}

/** Backticked names in a text (Go `extractBacktickNames`). */
export function backtickNames(text: string): string[] {
  return [...text.matchAll(/`([^`\n]+)`/g)].map((match) => match[1]!);
}

/** Agent → wave, task, and the files it owns (file_ownership rows plus its `files`). */
export interface AgentFacts {
  id: string;
  wave: number;
  task: string;
  dependencies: string[];
  files: string[];
}

/** Every agent of the manifest with its wave and owned files (first declaration wins). */
export function agentFacts(manifest: ImplManifest): AgentFacts[] {
  const facts = new Map<string, AgentFacts>();
  for (const wave of manifest.waves) {
    for (const agent of wave.agents ?? []) {
      const id = agent.id ?? '';
      if (id === '' || facts.has(id)) continue;
      facts.set(id, { id, wave: wave.number ?? 0, task: agent.task ?? '', dependencies: (agent.dependencies ?? []).map(String), files: [...(agent.files ?? [])] });
    }
  }
  for (const row of manifest.file_ownership) {
    const fact = facts.get(row.agent ?? '');
    if (fact && row.file && !fact.files.includes(row.file)) fact.files.push(row.file);
  }
  return [...facts.values()];
}

/**
 * The symbols a manifest changes (E46 Scout-time layer): backticked names in the task of every
 * agent whose task announces a signature change, and the interface contracts whose text does
 * (their `location` says where the symbol is defined). One entry per symbol, sorted.
 */
export function changedSymbols(manifest: ImplManifest): ChangedSymbol[] {
  const found = new Map<string, ChangedSymbol>();
  const add = (raw: string, agent: string | undefined, wave: number, location?: string) => {
    const parsed = symbolFromName(raw);
    if (!parsed) return;
    const { callable, ...symbol } = parsed;
    const entry = found.get(parsed.symbol) ?? { ...symbol, agents: [], wave, confirmed: false };
    entry.confirmed ||= callable || parsed.member || location !== undefined;
    if (agent && !entry.agents.includes(agent)) entry.agents.push(agent);
    if (location && entry.location === undefined) entry.location = location;
    found.set(parsed.symbol, entry);
  };
  const facts = agentFacts(manifest);
  for (const fact of facts) {
    if (!mentionsChange(fact.task)) continue;
    for (const raw of backtickNames(fact.task)) add(raw, fact.id, fact.wave);
  }
  const ownerOf = new Map(manifest.file_ownership.map((row) => [row.file ?? '', row]));
  for (const contract of manifest.interface_contracts) {
    const text = `${contract.name ?? ''}\n${contract.description ?? ''}`;
    const name = contract.name ?? '';
    if (!mentionsChange(text) && !found.has(symbolFromName(name)?.symbol ?? '')) continue;
    const file = locationFile(contract.location);
    const owner = ownerOf.get(file);
    add(name, owner?.agent, owner?.wave ?? 0, file || undefined);
  }
  // `Parse` next to `LockFileParser.Parse` is the same method: keep the qualified (member-only) one.
  for (const member of [...found.values()].filter((entry) => entry.member)) {
    const plain = found.get(member.name);
    if (!plain) continue;
    for (const agent of plain.agents) if (!member.agents.includes(agent)) member.agents.push(agent);
    found.delete(member.name);
  }
  for (const entry of found.values()) entry.agents.sort();
  return [...found.values()].sort((a, b) => a.symbol.localeCompare(b.symbol));
}
