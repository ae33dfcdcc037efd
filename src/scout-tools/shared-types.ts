import path from 'node:path';
import { codeFamilyOf } from '../analysis/source-lexer.js';
import type { ImplManifest } from '../protocol/schema/impl-schema.js';
import { scaffoldPath } from '../protocol/schema/impl-schema.js';
import { agentFacts, backtickNames, locationFile } from './changed-symbols.js';
import { isTestPath } from './references.js';

/** Go `SharedTypeCandidate` (detect-shared-types). */
export interface SharedTypeCandidate {
  type_name: string;
  defining_agent: string;
  defining_file: string;
  referencing_agents: string[];
  referencing_files: string[];
  reason: string;
}

/** Type definitions in code (contracts, scaffolds, code spans and fenced blocks of a task): Go `type X struct`, TS `interface X`/`type X =`/`class X`, Python `class X`, Rust `struct X`/`enum X`/`trait X` — keyword and name on one line. */
const typeDefinition = /\b(?:type|interface|class|enum|struct|trait|dataclass)[ \t]+`?([A-Z][A-Za-z0-9_]*)`?/g;
/** "create/define/add `X` struct|type|…" in a task. */
const createdType = /\b(?:create|creates|define|defines|add|adds|introduce|introduces|new)\s+(?:a\s+|an\s+|the\s+)?(?:new\s+)?`([A-Z][A-Za-z0-9_]*)`\s*(?:struct|type|interface|class|enum|trait|dataclass|record)\b/gi;
/** Go's `type X struct|interface` written in prose without backticks. */
const goTypeInProse = /\btype[ \t]+([A-Z][A-Za-z0-9_]*)[ \t]+(?:struct|interface)\b/g;

function definedTypes(text: string): Set<string> {
  const names = new Set<string>();
  for (const match of text.matchAll(typeDefinition)) names.add(match[1]!);
  for (const match of text.matchAll(createdType)) names.add(match[1]!);
  return names;
}

/**
 * Types a task (prose with code in it) defines. In code — fenced blocks and `code spans` — as in
 * a contract; in the prose around it only a backticked name, Go's `type X struct` shape, or a
 * compound identifier (`class UserServiceFactory`): a plain capitalised word after a type keyword is
 * English ("… the canonical unified type\n\nThe CLI must …", "zero-initialized struct All three …").
 */
function definedTypesInTask(task: string): Set<string> {
  const code: string[] = [];
  let fence: string | undefined;
  const prose = task
    .split('\n')
    .map((line) => {
      const marker = /^[ \t]*(```|~~~)/.exec(line)?.[1];
      if (fence !== undefined) {
        if (marker === fence) fence = undefined;
        else code.push(line);
        return '';
      }
      if (marker !== undefined) {
        fence = marker;
        return '';
      }
      return line;
    })
    .join('\n');
  for (const match of prose.matchAll(/`([^`\n]+)`/g)) code.push(match[1]!);
  const names = definedTypes(code.join('\n'));
  for (const match of prose.matchAll(typeDefinition)) if (match[0].endsWith('`') || /[A-Z0-9_]/.test(match[1]!.slice(1))) names.add(match[1]!);
  for (const match of prose.matchAll(goTypeInProse)) names.add(match[1]!);
  for (const match of prose.matchAll(createdType)) names.add(match[1]!);
  return names;
}

/** The code family of a file, TypeScript and JavaScript as one (they import each other). */
function languageFamily(file: string): string | undefined {
  const family = codeFamilyOf(file);
  return family === 'javascript' ? 'typescript' : family;
}

function mentions(text: string, name: string): boolean {
  return new RegExp(`(?<![\\w$])${name}(?![\\w$])`).test(text);
}

/**
 * E45 detect-shared-types: data structures two or more agents touch. A type counts when an
 * agent defines it (a contract at a file it owns, or its task creates it: `type X struct`,
 * "define `X` struct") and another agent of the same wave mentions it in its task (or defines it
 * too — the duplicate-definition case E45 exists to prevent). Types no agent defines (existing code,
 * external packages) and types already in `scaffolds` are not reported. Sorted by name.
 */
export function detectSharedTypes(manifest: ImplManifest): SharedTypeCandidate[] {
  const facts = agentFacts(manifest);
  const waveOf = new Map(facts.map((fact) => [fact.id, fact.wave]));
  const ownerOf = new Map(manifest.file_ownership.map((row) => [row.file ?? '', row.agent ?? '']));
  const scaffolded = new Set<string>();
  for (const scaffold of manifest.scaffolds) for (const name of definedTypes(scaffold.contents ?? '')) scaffolded.add(name);
  for (const scaffold of manifest.scaffolds) if (scaffold.contents === undefined) for (const name of backtickNames(scaffold.import_path ?? '')) scaffolded.add(name);

  const definers = new Map<string, Map<string, string>>();
  const addDefiner = (name: string, agent: string, file: string) => {
    const byAgent = definers.get(name) ?? new Map<string, string>();
    if (!byAgent.has(agent)) byAgent.set(agent, file);
    definers.set(name, byAgent);
  };
  for (const contract of manifest.interface_contracts) {
    const location = locationFile(contract.location);
    const owner = ownerOf.get(location);
    if (!owner) continue;
    const names = definedTypes(contract.definition ?? '');
    for (const name of names) addDefiner(name, owner, location);
  }
  for (const fact of facts) {
    const sourceFiles = fact.files.filter((file) => !isTestPath(file));
    for (const name of definedTypesInTask(fact.task)) addDefiner(name, fact.id, sourceFiles.find((file) => mentions(fact.task, path.posix.basename(file))) ?? sourceFiles[0] ?? '');
  }

  const candidates: SharedTypeCandidate[] = [];
  for (const [name, byAgent] of [...definers].sort(([a], [b]) => a.localeCompare(b))) {
    if (scaffolded.has(name)) continue;
    // Agents of the defining agent's wave: later waves build on the merged type (E45 is about parallel agents).
    const definerWaves = new Set([...byAgent.keys()].map((agent) => waveOf.get(agent)));
    const referencing = new Set(byAgent.keys());
    // A mention from an agent whose code is all in another language is a word, not a use: it cannot import the type.
    const definerLanguages = new Set([...byAgent.values()].map(languageFamily).filter((family) => family !== undefined));
    const canImport = (files: readonly string[]) => {
      const languages = files.map(languageFamily).filter((family) => family !== undefined);
      return definerLanguages.size === 0 || languages.length === 0 || languages.some((family) => definerLanguages.has(family));
    };
    for (const fact of facts) if (definerWaves.has(fact.wave) && mentions(fact.task, name) && canImport(fact.files)) referencing.add(fact.id);
    if (referencing.size < 2) continue;
    const definingAgents = [...byAgent.keys()].sort();
    const definingAgent = definingAgents[0]!;
    const definingFile = byAgent.get(definingAgent)!;
    const others = [...referencing].filter((agent) => agent !== definingAgent).sort();
    const referencingFiles = [...new Set(facts.filter((fact) => others.includes(fact.id)).flatMap((fact) => fact.files))].sort();
    const reason =
      definingAgents.length > 1
        ? `Agents [${definingAgents.join(' ')}] each define ${name}: duplicate definitions at merge (E11) — scaffold it once before Wave 1`
        : `Agents [${[...referencing].sort().join(' ')}] reference type from ${definingFile} (owned by agent ${definingAgent})`;
    candidates.push({ type_name: name, defining_agent: definingAgent, defining_file: definingFile, referencing_agents: [...referencing].sort(), referencing_files: referencingFiles, reason });
  }
  return candidates;
}

/** Helper for detect-scaffolds: the scaffold file path for a candidate (`<dir>/<name>.<ext>` beside the defining file). */
export function suggestedScaffoldFile(candidate: SharedTypeCandidate): string {
  const extension = path.posix.extname(candidate.defining_file) || '.go';
  const directory = path.posix.dirname(candidate.defining_file || 'internal/types/x.go');
  const base = extension === '.py' || extension === '.rs' || extension === '.go' ? candidate.type_name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase() : candidate.type_name.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();
  return `${directory === '.' ? '' : `${directory}/`}${base}${extension}`;
}

/** The contract text defining a type (`type X struct {…}` up to its closing brace), if any. */
export function contractDefinition(manifest: ImplManifest, name: string): string | undefined {
  for (const contract of manifest.interface_contracts) {
    const text = contract.definition ?? '';
    const start = text.search(new RegExp(`\\b(?:type|interface|class|enum|struct|trait)\\s+${name}\\b`));
    if (start === -1) continue;
    const open = text.indexOf('{', start);
    if (open === -1) return text.slice(start).split('\n')[0]!.trim();
    let depth = 0;
    for (let index = open; index < text.length; index += 1) {
      if (text[index] === '{') depth += 1;
      else if (text[index] === '}' && --depth === 0) return text.slice(start, index + 1).trim();
    }
  }
  return undefined;
}

/** Re-export for scaffold detection: manifest scaffold paths already planned. */
export function plannedScaffoldPaths(manifest: ImplManifest): string[] {
  return manifest.scaffolds.map(scaffoldPath).filter((file) => file !== '');
}
