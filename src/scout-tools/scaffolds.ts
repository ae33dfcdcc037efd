import { existsSync } from 'node:fs';
import path from 'node:path';
import { listSymbols } from '../analysis/engine/index.js';
import { extractTopLevelSymbols } from '../analysis/symbols.js';
import { codeFamilyOf } from '../analysis/source-lexer.js';
import type { Git } from '../git/git-port.js';
import { branchName, legacyBranchName } from '../protocol/names.js';
import type { ImplManifest } from '../protocol/schema/impl-schema.js';
import { agentFacts } from './changed-symbols.js';
import { createEngineReferenceFinder, isTestPath, type ReferenceFinder } from './references.js';
import { contractDefinition, detectSharedTypes, suggestedScaffoldFile } from './shared-types.js';

/** Go `ScaffoldCandidate` plus the agents involved. */
export interface ScaffoldCandidate {
  type_name: string;
  locations: string[];
  suggested_file: string;
  definition: string;
  agents: string[];
}

/** Go `TypeConflict`. */
export interface TypeConflict {
  type_name: string;
  agents: string[];
  files: string[];
  resolution: string;
}

/**
 * E45 pre-agent: every shared type (detect-shared-types) as a scaffold to write before Wave 1 —
 * the files that define or use it, a scaffold file beside the defining file, and the contract's
 * definition when one holds it (a placeholder otherwise).
 */
export async function detectScaffoldsPreAgent(manifest: ImplManifest, options: { repoRoot?: string; finder?: ReferenceFinder } = {}): Promise<{ scaffolds_needed: ScaffoldCandidate[] }> {
  const fromText = detectSharedTypes(manifest).map((candidate) => ({
      type_name: candidate.type_name,
      locations: [...new Set([candidate.defining_file, ...candidate.referencing_files].filter((file) => file !== ''))].sort(),
      suggested_file: suggestedScaffoldFile(candidate),
      definition: contractDefinition(manifest, candidate.type_name) ?? `${candidate.type_name} — see the agents' tasks; no contract defines it`,
      agents: candidate.referencing_agents,
    }));
  const fromCode = options.repoRoot ? await sharedTypesInCode(manifest, options.repoRoot, options.finder ?? createEngineReferenceFinder()) : [];
  const known = new Set(fromText.map((candidate) => candidate.type_name));
  return { scaffolds_needed: [...fromText, ...fromCode.filter((candidate) => !known.has(candidate.type_name))].sort((a, b) => a.type_name.localeCompare(b.type_name)) };
}

const structuralKinds = new Set(['type', 'interface', 'class', 'struct', 'enum', 'trait']);

/**
 * The code side of E45 pre-agent: a type defined in an existing file one agent owns, named in
 * that agent's task (so it is being worked on), and really referenced (analysis engine) from an
 * existing file another agent of the same wave owns — both agents touch one data structure in
 * parallel.
 */
async function sharedTypesInCode(manifest: ImplManifest, repoRoot: string, finder: ReferenceFinder): Promise<ScaffoldCandidate[]> {
  const facts = agentFacts(manifest);
  const existing = (files: readonly string[]) => files.filter((file) => !isTestPath(file) && codeFamilyOf(file) !== undefined && existsSync(path.join(repoRoot, file)));
  const candidates: ScaffoldCandidate[] = [];
  for (const owner of facts) {
    const ownFiles = existing(owner.files);
    if (ownFiles.length === 0) continue;
    const peers = facts.filter((fact) => fact.id !== owner.id && fact.wave === owner.wave);
    const peerFiles = new Map(peers.flatMap((peer) => existing(peer.files).map((file) => [file, peer.id] as const)));
    if (peerFiles.size === 0) continue;
    let symbols;
    try {
      symbols = await listSymbols(repoRoot, ownFiles);
    } catch {
      return [];
    }
    for (const symbol of symbols) {
      if (!structuralKinds.has(symbol.kind) || !new RegExp(`(?<![\\w$])${symbol.name}(?![\\w$])`).test(owner.task)) continue;
      const references = await finder.findReferences(repoRoot, symbol.name, { definedIn: symbol.file, files: [...peerFiles.keys()] });
      const users = [...new Set(references.map((reference) => reference.file))].sort();
      if (users.length === 0) continue;
      candidates.push({
        type_name: symbol.name,
        locations: [symbol.file, ...users],
        suggested_file: symbol.file,
        definition: `${symbol.kind} ${symbol.name} (${symbol.file}:${symbol.line}) — used by ${users.join(', ')}; freeze it as a contract or scaffold it before the wave`,
        agents: [...new Set([owner.id, ...users.map((file) => peerFiles.get(file)!)])].sort(),
      });
    }
  }
  return candidates;
}

const typeKinds = new Set(['type', 'interface', 'class', 'struct', 'enum', 'trait']);

/**
 * E45 post-agent: type definitions (struct, interface, class, enum, trait, type alias) that two
 * or more agents of a wave added on their branches — in any file, any language — i.e. the
 * duplicates a missing scaffold produced. Each agent's new definitions = types at its branch tip
 * in the code files it changed that the merge base did not have. Agents without a branch are
 * skipped. Sorted by type name.
 */
export async function detectScaffoldsPostAgent(options: { git: Git; manifest: ImplManifest; base: string; wave?: number }): Promise<{ conflicts: TypeConflict[] }> {
  const { git, manifest } = options;
  const slug = manifest.feature_slug ?? '';
  const definitions = new Map<string, Map<string, Set<string>>>();
  for (const wave of manifest.waves) {
    if (options.wave !== undefined && wave.number !== options.wave) continue;
    for (const agent of wave.agents ?? []) {
      const id = agent.id ?? '';
      let tip: string | undefined;
      for (const ref of [slug ? branchName(slug, wave.number ?? 1, id) : undefined, legacyBranchName(wave.number ?? 1, id)]) {
        if (ref && tip === undefined) tip = await git.tryRevParse(`refs/heads/${ref}`);
      }
      if (tip === undefined) continue;
      const base = (await git.mergeBase(options.base, tip)) ?? options.base;
      const changed = (await git.diffNameOnly(`${base}..${tip}`)).filter((file) => codeFamilyOf(file) !== undefined && !isTestPath(file));
      for (const file of changed) {
        const after = await git.showFile(tip, file);
        if (after === undefined) continue;
        const before = await git.showFile(base, file);
        const existing = new Set(before === undefined ? [] : extractTopLevelSymbols(file, before).filter((symbol) => typeKinds.has(symbol.kind)).map((symbol) => symbol.name));
        for (const symbol of extractTopLevelSymbols(file, after)) {
          if (!typeKinds.has(symbol.kind) || existing.has(symbol.name)) continue;
          const byAgent = definitions.get(symbol.name) ?? new Map<string, Set<string>>();
          byAgent.set(id, (byAgent.get(id) ?? new Set()).add(file));
          definitions.set(symbol.name, byAgent);
        }
      }
    }
  }
  const conflicts: TypeConflict[] = [];
  for (const [name, byAgent] of [...definitions].sort(([a], [b]) => a.localeCompare(b))) {
    if (byAgent.size < 2) continue;
    const agents = [...byAgent.keys()].sort();
    const files = [...new Set([...byAgent.values()].flatMap((set) => [...set]))].sort();
    conflicts.push({ type_name: name, agents, files, resolution: `Scaffold ${name} once (E45) and have agents ${agents.join(', ')} import it; keep the definition in ${files[0]}` });
  }
  return { conflicts };
}
