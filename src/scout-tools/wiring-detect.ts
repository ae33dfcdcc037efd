import type { ImplManifest } from '../protocol/schema/impl-schema.js';

/** A wiring: entry (E35 schema). */
export interface WiringDeclaration {
  symbol: string;
  defined_in: string;
  must_be_called_from: string;
  agent: string;
  wave: number;
  integration_pattern: 'append' | 'register' | 'inject' | 'call';
}
import { agentFacts, locationFile, symbolFromName } from './changed-symbols.js';
import { isTestPath } from './references.js';

/** Prose that names a call: "calls `X()`", "uses `pkg.X`", "delegates to `X`", "invokes X()", "registers `X`". */
const callPhrases: ReadonlyArray<{ pattern: RegExp; integration: WiringDeclaration['integration_pattern'] }> = [
  { pattern: /\b(?:calls?|invokes?|uses?|delegates?\s+to|wires?\s+(?:in|up)?)\s+`([A-Za-z_][\w.]*)(?:\(\))?`/gi, integration: 'call' },
  { pattern: /\b(?:calls?|invokes?|delegates?\s+to)\s+([A-Za-z_][\w.]*)\(\)/gi, integration: 'call' },
  { pattern: /\bregisters?\s+`([A-Za-z_][\w.]*)(?:\(\))?`/gi, integration: 'register' },
  // "replace the calls to `old` with `New`": the new name is called.
  { pattern: /\breplac(?:e|es|ing)\s[^.;:!?\n]*?\bwith\s+`([A-Za-z_][\w.]*)(?:\(\))?`/gi, integration: 'call' },
];

/** A negation in the clause just before a call phrase: "must not call", "does not use", "never invokes", "instead of calling". */
const negation = /\b(?:not|never|no\s+longer|without|instead\s+of|rather\s+than|avoids?|stops?)\b|n't\b/i;

function negated(text: string, index: number): boolean {
  const clause = text.slice(0, index).split(/[.;:!?,()\n]/).pop() ?? '';
  return negation.test(clause.trim().split(/\s+/).slice(-4).join(' '));
}

/**
 * E35 detect-wiring: for each agent, the functions its task says it calls that another agent
 * defines (an interface contract whose location another agent owns) → a wiring declaration
 * `{symbol, defined_in, must_be_called_from, agent, wave, integration_pattern}` with the
 * caller's first owned non-test file. Names no contract locates (stdlib, existing code) are
 * skipped, as in Go. One declaration per (agent, symbol); sorted by wave, agent, symbol.
 */
export function detectWiring(manifest: ImplManifest): WiringDeclaration[] {
  const ownerOf = new Map(manifest.file_ownership.map((row) => [row.file ?? '', row.agent ?? '']));
  const located = new Map<string, { file: string; agent: string }>();
  for (const contract of manifest.interface_contracts) {
    const parsed = symbolFromName(contract.name ?? '');
    const location = locationFile(contract.location);
    if (!parsed || location === '' || located.has(parsed.name)) continue;
    located.set(parsed.name, { file: location, agent: ownerOf.get(location) ?? '' });
  }
  const declarations: WiringDeclaration[] = [];
  for (const fact of agentFacts(manifest)) {
    const seen = new Set<string>();
    for (const phrase of callPhrases) {
      for (const match of fact.task.matchAll(phrase.pattern)) {
        const parsed = symbolFromName(match[1]!);
        if (!parsed || seen.has(parsed.name) || negated(fact.task, match.index)) continue;
        const definition = located.get(parsed.name);
        if (!definition || definition.agent === fact.id) continue;
        const caller = fact.files.find((file) => !isTestPath(file)) ?? fact.files[0];
        if (!caller) continue;
        seen.add(parsed.name);
        declarations.push({ symbol: parsed.name, defined_in: definition.file, must_be_called_from: caller, agent: fact.id, wave: fact.wave, integration_pattern: phrase.integration });
      }
    }
  }
  return declarations.sort((a, b) => a.wave - b.wave || a.agent.localeCompare(b.agent) || a.symbol.localeCompare(b.symbol));
}
