import { existsSync } from 'node:fs';
import path from 'node:path';
import type { ImplManifest } from '../protocol/schema/impl-schema.js';
import { agentFacts, backtickNames, locationFile, mentionsChange, symbolFromName } from './changed-symbols.js';
import { definingFile } from './test-cascade.js';
import { createEngineReferenceFinder, type ReferenceFinder } from './references.js';

/** Go `WaveStructureProblem`. */
export interface WaveStructureProblem {
  symbol: string;
  changed_in_wave: number;
  caller_wave: number;
  caller_files: string[];
  message: string;
}

/** Go's `%v` of a string slice: `[A B]`. */
function goSlice(values: readonly string[]): string {
  return `[${values.join(' ')}]`;
}

/**
 * suggest-wave-structure (step 4 of pre-wave-validate): for each changed symbol — interface
 * contracts (name + location) and backticked/parenthesised names in tasks that announce a
 * signature change — the `file_ownership` files that really reference it (code references,
 * resolved against the defining file; Go scans substrings), grouped by wave. Callers in an
 * earlier wave than the change, or in the same/a later wave without `dependencies` on the
 * changing agent, are problems (Go's messages). Files that do not exist yet are skipped.
 */
export async function suggestWaveStructure(options: { manifest: ImplManifest; repoRoot: string; finder?: ReferenceFinder }): Promise<WaveStructureProblem[]> {
  const { manifest, repoRoot } = options;
  const finder = options.finder ?? createEngineReferenceFinder();
  const facts = agentFacts(manifest);
  const byId = new Map(facts.map((fact) => [fact.id, fact]));
  const ownership = manifest.file_ownership.filter((row) => row.file && row.agent);
  const ownerRow = new Map(ownership.map((row) => [row.file!, row]));

  interface Changed {
    symbol: string;
    name: string;
    member: boolean;
    wave: number;
    agent: string;
    location?: string;
    confirmed: boolean;
  }
  const symbols = new Map<string, Changed>();
  for (const contract of manifest.interface_contracts) {
    const location = locationFile(contract.location);
    const row = ownerRow.get(location);
    const parsed = symbolFromName(contract.name ?? '');
    if (!row || !parsed || symbols.has(parsed.symbol)) continue;
    symbols.set(parsed.symbol, { symbol: parsed.symbol, name: parsed.name, member: parsed.member, wave: row.wave ?? 0, agent: row.agent!, location, confirmed: true });
  }
  for (const fact of facts) {
    if (!mentionsChange(fact.task)) continue;
    const names = [...backtickNames(fact.task), ...[...fact.task.matchAll(/\(([A-Z][A-Za-z0-9_]*)\)/g)].map((match) => match[1]!)];
    for (const raw of names) {
      const parsed = symbolFromName(raw);
      if (!parsed || symbols.has(parsed.symbol)) continue;
      symbols.set(parsed.symbol, { symbol: parsed.symbol, name: parsed.name, member: parsed.member, wave: fact.wave, agent: fact.id, confirmed: parsed.callable || parsed.member || /^[A-Z]/.test(parsed.name) });
    }
  }

  const problems: WaveStructureProblem[] = [];
  for (const changed of [...symbols.values()].sort((a, b) => a.symbol.localeCompare(b.symbol))) {
    const callerRows = ownership.filter((row) => !(row.agent === changed.agent && row.wave === changed.wave) && existsSync(path.join(repoRoot, row.file!)));
    if (callerRows.length === 0) continue;
    const definedIn = changed.location ?? (await definingFile(repoRoot, manifest, { name: changed.name, agents: [changed.agent], confirmed: changed.confirmed }));
    if (definedIn === undefined) continue;
    const references = await finder.findReferences(repoRoot, changed.name, {
      files: [...new Set(callerRows.map((row) => row.file!))],
      ...(definedIn ? { definedIn } : {}),
      ...(changed.member ? { memberOnly: true, memberOf: changed.symbol.split('.')[0]! } : {}),
    });
    const referencing = new Set(references.map((reference) => reference.file));
    const byWave = new Map<number, string[]>();
    for (const row of callerRows) {
      if (!referencing.has(row.file!)) continue;
      const files = byWave.get(row.wave ?? 0) ?? [];
      if (!files.includes(row.file!)) files.push(row.file!);
      byWave.set(row.wave ?? 0, files);
    }
    for (const [callerWave, callerFiles] of [...byWave].sort(([a], [b]) => a - b)) {
      const quoted = JSON.stringify(changed.symbol);
      if (callerWave < changed.wave) {
        problems.push({
          symbol: changed.symbol,
          changed_in_wave: changed.wave,
          caller_wave: callerWave,
          caller_files: callerFiles,
          message: `symbol ${quoted} is changed in wave ${changed.wave} but called from wave ${callerWave} (earlier wave); move callers to wave ${changed.wave} or later`,
        });
        continue;
      }
      const callerAgents = [...new Set(ownership.filter((row) => row.wave === callerWave && callerFiles.includes(row.file!) && row.agent !== changed.agent).map((row) => row.agent!))].sort();
      const missing = callerAgents.filter((agent) => byId.has(agent) && !byId.get(agent)!.dependencies.includes(changed.agent));
      if (missing.length === 0) continue;
      problems.push({
        symbol: changed.symbol,
        changed_in_wave: changed.wave,
        caller_wave: callerWave,
        caller_files: callerFiles,
        message:
          callerWave === changed.wave
            ? `symbol ${quoted} is changed in wave ${changed.wave} and called from the same wave by agents ${goSlice(missing)}, but those agents do not list ${JSON.stringify(changed.agent)} in their depends_on`
            : `symbol ${quoted} is changed in wave ${changed.wave} but callers in wave ${callerWave} (agents ${goSlice(missing)}) do not declare depends_on referencing the defining agent ${JSON.stringify(changed.agent)}`,
      });
    }
  }
  return problems;
}
