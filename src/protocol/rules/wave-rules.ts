import type { Finding } from '../../errors/finding.js';
import { agentIdPattern, type ImplManifest } from '../schema/impl-schema.js';
import type { ImplRule } from './rule.js';
import { compareText, goQuote, isScaffoldRow, report, sortedKeys } from './rule-helpers.js';

interface AgentPlace {
  wave: number;
  waveIndex: number;
  agentIndex: number;
}

/** Agent ID → where it is declared; the last declaration wins, like the Go maps. */
function agentPlaces(manifest: ImplManifest): Map<string, AgentPlace> {
  const places = new Map<string, AgentPlace>();
  manifest.waves.forEach((wave, waveIndex) => {
    wave.agents.forEach((agent, agentIndex) => {
      places.set(agent.id ?? '', { wave: wave.number ?? 0, waveIndex, agentIndex });
    });
  });
  return places;
}

/**
 * I2 (Go numbering; the texts' I3 wave sequencing): an agent may only depend on agents of
 * earlier waves — both `waves[].agents[].dependencies` and `file_ownership[].depends_on`
 * (`"B"` or `"B:path"`; the part before the first `:` is the agent).
 */
export const dependenciesInPriorWaves: ImplRule = {
  name: 'dependencies-in-prior-waves',
  reference: 'I2',
  codes: ['V003_SAME_WAVE_DEPENDENCY'],
  check(context) {
    const { manifest } = context;
    const places = agentPlaces(manifest);
    const findings: Finding[] = [];
    manifest.waves.forEach((wave, waveIndex) => {
      const waveNumber = wave.number ?? 0;
      wave.agents.forEach((agent, agentIndex) => {
        agent.dependencies.forEach((dependency, dependencyIndex) => {
          const path = ['waves', waveIndex, 'agents', agentIndex, 'dependencies', dependencyIndex];
          const target = places.get(dependency);
          if (!target) {
            findings.push(
              report(context, {
                code: 'V003_SAME_WAVE_DEPENDENCY',
                message: `agent ${agent.id ?? ''} (wave ${waveNumber}) depends on unknown agent ${goQuote(dependency)}`,
                path,
              }),
            );
          } else if (target.wave >= waveNumber) {
            findings.push(
              report(context, {
                code: 'V003_SAME_WAVE_DEPENDENCY',
                message: `agent ${agent.id ?? ''} (wave ${waveNumber}) depends on ${dependency} (wave ${target.wave}) — dependencies must be in prior waves`,
                path,
              }),
            );
          }
        });
      });
    });
    manifest.file_ownership.forEach((row, rowIndex) => {
      const rowWave = row.wave ?? 0;
      row.depends_on.forEach((entry, entryIndex) => {
        const colon = entry.indexOf(':');
        const dependency = colon === -1 ? entry : entry.slice(0, colon);
        const path = ['file_ownership', rowIndex, 'depends_on', entryIndex];
        const target = places.get(dependency);
        if (!target) {
          findings.push(
            report(context, {
              code: 'V003_SAME_WAVE_DEPENDENCY',
              message: `file ${goQuote(row.file ?? '')} (agent ${row.agent ?? ''}, wave ${rowWave}) depends on unknown agent ${goQuote(dependency)}`,
              path,
            }),
          );
        } else if (target.wave >= rowWave) {
          findings.push(
            report(context, {
              code: 'V003_SAME_WAVE_DEPENDENCY',
              message: `file ${goQuote(row.file ?? '')} (agent ${row.agent ?? ''}, wave ${rowWave}) depends on agent ${dependency} (wave ${target.wave}) — dependencies must be in prior waves`,
              path,
            }),
          );
        }
      });
    });
    return findings;
  },
};

/** I3 (Go numbering): `waves[i].number` must be `i + 1` — one finding per mismatching index. */
export const waveNumbering: ImplRule = {
  name: 'wave-numbering',
  reference: 'I3',
  codes: ['V004_WAVE_NOT_1INDEXED'],
  check(context) {
    const findings: Finding[] = [];
    context.manifest.waves.forEach((wave, index) => {
      const number = wave.number ?? 0;
      if (number !== index + 1) {
        findings.push(
          report(context, {
            code: 'V004_WAVE_NOT_1INDEXED',
            message: `wave number mismatch: expected wave ${index + 1}, got wave ${number}`,
            path: ['waves', index, 'number'],
          }),
        );
      }
    });
    return findings;
  },
};

/**
 * I6 (Go numbering): the agent dependency graph has no cycles. Unlike Go (first cycle only,
 * start node in map order) every cycle closed by a back edge of a DFS is reported, starting
 * nodes in ID order and edges in declaration order, so the output is deterministic.
 */
export const noDependencyCycles: ImplRule = {
  name: 'no-dependency-cycles',
  reference: 'I6',
  codes: ['V007_DEPENDENCY_CYCLE'],
  check(context) {
    const { manifest } = context;
    const places = agentPlaces(manifest);
    const dependencies = new Map<string, string[]>();
    for (const wave of manifest.waves) for (const agent of wave.agents) dependencies.set(agent.id ?? '', agent.dependencies);

    const findings: Finding[] = [];
    const seenCycles = new Set<string>();
    const state = new Map<string, 'active' | 'done'>();
    const stack: string[] = [];

    const visit = (node: string): void => {
      state.set(node, 'active');
      stack.push(node);
      const edges = dependencies.get(node) ?? [];
      edges.forEach((dependency, dependencyIndex) => {
        if (!dependencies.has(dependency)) return; // unknown agent: V003 reports it
        const seen = state.get(dependency);
        if (seen === 'active') {
          const cycle = [...stack.slice(stack.indexOf(dependency)), dependency];
          const key = canonicalCycle(cycle);
          if (seenCycles.has(key)) return;
          seenCycles.add(key);
          const place = places.get(node);
          findings.push(
            report(context, {
              code: 'V007_DEPENDENCY_CYCLE',
              message: `dependency cycle detected: ${cycle.join(' -> ')}`,
              path: place ? ['waves', place.waveIndex, 'agents', place.agentIndex, 'dependencies', dependencyIndex] : ['waves'],
            }),
          );
        } else if (seen === undefined) {
          visit(dependency);
        }
      });
      stack.pop();
      state.set(node, 'done');
    };

    for (const node of [...dependencies.keys()].sort(compareText)) {
      if (!state.has(node)) visit(node);
    }
    return findings;
  },
};

/** A cycle `[A, B, C, A]` as a rotation-independent key. */
function canonicalCycle(cycle: readonly string[]): string {
  const nodes = cycle.slice(0, -1);
  let best = nodes.join('\u0000');
  for (let shift = 1; shift < nodes.length; shift += 1) {
    const rotated = [...nodes.slice(shift), ...nodes.slice(0, shift)].join('\u0000');
    if (rotated < best) best = rotated;
  }
  return best;
}

/**
 * Agent IDs match `^[A-Z][2-9]?$` in waves, ownership rows (the `Scaffold` row at wave 0 is
 * exempt, §10.18) and completion-report keys.
 */
export const agentIdFormat: ImplRule = {
  name: 'agent-id-format',
  reference: 'E16',
  codes: ['V009_INVALID_AGENT_ID'],
  check(context) {
    const { manifest } = context;
    const findings: Finding[] = [];
    manifest.waves.forEach((wave, waveIndex) => {
      wave.agents.forEach((agent, agentIndex) => {
        const id = agent.id ?? '';
        if (!agentIdPattern.test(id)) {
          findings.push(
            report(context, {
              code: 'V009_INVALID_AGENT_ID',
              message: `agent ID ${goQuote(id)} in wave ${wave.number ?? 0} does not match protocol pattern ^[A-Z][2-9]?$ (one uppercase letter, optionally followed by digit 2-9)`,
              path: ['waves', waveIndex, 'agents', agentIndex, 'id'],
              suggestion: 'run `polywave assign-agent-ids` for valid IDs',
            }),
          );
        }
      });
    });
    manifest.file_ownership.forEach((row, rowIndex) => {
      if (isScaffoldRow(row)) return;
      const id = row.agent ?? '';
      if (!agentIdPattern.test(id)) {
        findings.push(
          report(context, {
            code: 'V009_INVALID_AGENT_ID',
            message: `agent ID ${goQuote(id)} in file_ownership entry ${rowIndex} (file=${goQuote(row.file ?? '')}) does not match protocol pattern ^[A-Z][2-9]?$`,
            path: ['file_ownership', rowIndex, 'agent'],
          }),
        );
      }
    });
    for (const id of sortedKeys(manifest.completion_reports)) {
      if (!agentIdPattern.test(id)) {
        findings.push(
          report(context, {
            code: 'V009_INVALID_AGENT_ID',
            message: `agent ID ${goQuote(id)} in completion_reports does not match protocol pattern ^[A-Z][2-9]?$`,
            path: ['completion_reports', id],
          }),
        );
      }
    }
    return findings;
  },
};

/**
 * Agent IDs are unique across the manifest (DESIGN §4; Go has no such check and lets the last
 * declaration win). One finding per repeated declaration, pointing at the repeat.
 */
export const uniqueAgentIds: ImplRule = {
  name: 'unique-agent-ids',
  reference: 'E16',
  codes: ['V050_DUPLICATE_AGENT_ID'],
  check(context) {
    const findings: Finding[] = [];
    const firstWave = new Map<string, number>();
    context.manifest.waves.forEach((wave, waveIndex) => {
      const waveNumber = wave.number ?? 0;
      wave.agents.forEach((agent, agentIndex) => {
        const id = agent.id ?? '';
        if (id.trim() === '') return; // V005 reports missing IDs
        const earlier = firstWave.get(id);
        if (earlier === undefined) {
          firstWave.set(id, waveNumber);
          return;
        }
        const where = earlier === waveNumber ? `twice in wave ${waveNumber}` : `wave ${earlier} and wave ${waveNumber}`;
        findings.push(
          report(context, {
            code: 'V050_DUPLICATE_AGENT_ID',
            message: `agent ID ${goQuote(id)} is used more than once: ${where}`,
            path: ['waves', waveIndex, 'agents', agentIndex, 'id'],
            suggestion: 'give every agent its own ID (`polywave assign-agent-ids`)',
          }),
        );
      });
    });
    return findings;
  },
};
