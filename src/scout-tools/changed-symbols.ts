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
  `\\b(add|adds|added|adding|make|makes|give|gives|remove|removes|removed|removing|drop|drops|dropped|thread|threads|threading|change|changes|changed|changing|update|updates|updated|replace|replaces|replaced|extend|extends|extended|reorder|reorders|reordered)\\b${sameSentence}\\b(?:parameters?|params?|arguments?|args?)\\b(?!\\s*(?:parser|parsing|stays?|remains?|are unchanged|is unchanged))|\\bsignatures?\\b`,
  'gi',
);
/** A backticked span that is a value, not a type or parameter: `nil`, `0`, `None`, `'\n'`, `O(n)`, `--verbose`, `ErrNotFound`, `<br>`, `2 * n`. */
const VALUE_SPAN = String.raw`\x60(?:nil|null|None|undefined|true|false|True|False|NaN|-?\d[^\x60]*|O\([^\x60]*\)|-[^\x60]*|'[^\x60]*'|"[^\x60]*"|<[^\x60]*>|Err(?!ors?\x60)\w+|[^\x60]*\s\*\s[^\x60]*)\x60`;
/** What a callable is made to take or accept: a backticked parameter (not a value), or "a/an <noun>" that is no lock, snapshot… */
const TAKEN = String.raw`(?:(?:an?|one|two|an? extra|an? new|an? optional|an? required|extra|new|optional|required)\s+)?(?:(?!${VALUE_SPAN})\x60[^\x60\n]+\x60(?!\s+into\s+account)|[\w-]+\s+(?:parameters?|arguments?|options?|struct)\b)|(?:an?|one)\s+(?!(?:lock|mutex|snapshot|look|while|moment|note|break|copy|backup|second|bit)\b)(?!\d)[\w-]+`;
/** What a callable is made to return: a backticked type (not a value), "a/an <noun>", "both …", "an error as well". */
const RETURNED = String.raw`(?:(?:an?\s+)?(?!${VALUE_SPAN})\x60[^\x60\n]+\x60|(?:an?)\s+(?!\d)[\w-]+|both\b)`;
/**
 * "make `f()` take a `capacity int`" / "… take a context", "change `parse()` to return `Result<…>`", "make `load()`
 * also return an error", "make `fetchUser()` async / generic / variadic / a coroutine", "let `connect()` accept a
 * `*tls.Config`", and the callable first: "`fetch()` should now take a context", "`get()` gains a `ctx` parameter" —
 * not "return early", "return `nil`", "take the lock", "take a snapshot", "make sure `f()` still returns" (X55-02, X56-02/04).
 */
const callableChange = new RegExp(
  String.raw`\b(make|makes|change|changes|update|updates|have|has|let|lets|give|gives|turn|turns|convert|converts)\s+\x60[^\x60\n]+\x60${sameSentence}\b(?:(?:also\s+)?(?:take|takes|accept|accepts)\s+(?:${TAKEN})|(?:to\s+|so\s+(?:that\s+)?it\s+)?(?:also\s+)?returns?\s+${RETURNED}|async\b|asynchronous\b|generic\b|variadic\b|(?:an?\s+)?coroutine\b|keyword-only\b|an?\s+(?:async|generic)\s+function\b|into\s+an?\s+(?:async|generic)\b)` +
    String.raw`|\x60[^\x60\n]+\(\)\x60\s+(?:function\s+)?(?:(?:(?:should|must|will)\s+(?:now\s+)?|now\s+)(?:takes?|accepts?|returns?)|gains?)\s+(?:${TAKEN}|${RETURNED})`,
  'gi',
);
/**
 * A negation or a promise to keep what the match names, in the same clause just before it (no "and", "but", "so", a
 * comma between): "without changing its parameters", "do not rename", "must keep its current signature", "leave the
 * signature … alone", "make sure nobody adds parameters" — but "doesn't panic and add a parameter" is a change (X56-12).
 */
const negated = /(?:\b(?:without|not|never|no|nor|nobody|keep|keeps|keeping|leave|leaves|preserve|preserves|retain|retains)|n't)\s+(?:(?!and\b|or\b|but\b|so\b|then\b)[\w`'()*.-]+\s+){0,3}$/i;
/** After the match, in its clause: "the signature stays", "… is unchanged". */
const keptAfter = /^[^,;.!?\n]{0,40}?\b(?:stays?|remains?|(?:is|are)\s+unchanged|unchanged|alone)\b/i;
/** "make sure `f()` …", "make certain …": an instruction, not a change. */
const assurance = /^make\s+(?:sure|certain)\b/i;

/** Whether one of `pattern`'s matches in `text` stands (not negated, no assurance). */
function affirmed(pattern: RegExp, text: string): boolean {
  for (const match of text.matchAll(pattern)) {
    if (standsAt(text, match.index, match[0])) return true;
  }
  return false;
}

/** Whether the change announced by `matched` at `index` of `text` is not negated or kept in its clause. */
function standsAt(text: string, index: number, matched: string): boolean {
  const sentenceStart = Math.max(text.lastIndexOf('\n', index), ...['. ', '; ', ': ', '! ', '? '].map((end) => text.lastIndexOf(end, index)));
  const before = text.slice(sentenceStart < 0 ? 0 : sentenceStart, index);
  const after = text.slice(index + matched.length);
  return !negated.test(before) && !assurance.test(matched) && !keptAfter.test(after);
}

/** True when the text announces a signature change. */
export function mentionsChange(text: string): boolean {
  const lower = text.toLowerCase();
  for (const keyword of changeKeywords) {
    for (let at = lower.indexOf(keyword); at >= 0; at = lower.indexOf(keyword, at + 1)) {
      // (a keyword inside a word or naming something else: "rename the local variable" is not a signature's)
      if (/\w/.test(lower[at - 1] ?? '') || /^rename the local\b/.test(lower.slice(at))) continue;
      if (standsAt(text, at, keyword)) return true;
    }
  }
  return affirmed(parameterChange, text) || affirmed(callableChange, text);
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
