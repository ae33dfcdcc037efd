import type { Finding } from '../errors/finding.js';
import type { ImplManifest } from './schema/impl-schema.js';

/** One agent's place: the wave the manifest declares and the wave its dependencies require. */
export interface WaveAssignment {
  agent: string;
  declared_wave: number;
  /** 1 + the longest chain of `dependencies` below the agent (I2: every dependency in an earlier wave). */
  computed_wave: number;
}

/** Result of {@link solveWaves}. */
export interface WaveSolution {
  valid: boolean;
  /** Sorted by computed wave, then agent ID. Empty when the graph is invalid. */
  assignments: WaveAssignment[];
  /** Waves the dependency graph needs (its critical path length). */
  wave_count: number;
  /** Unknown dependencies and cycles. */
  errors: Array<{ code: 'SOLVER_MISSING_DEP' | 'SOLVER_CYCLE'; message: string }>;
}

/**
 * Computes wave assignments from the agents' `dependencies` alone (the manifest's waves are
 * ignored): layer-by-layer topological sort, each layer sorted by agent ID, so an agent lands one
 * wave after its latest dependency (the least number of waves I2 allows). Pure, deterministic.
 */
export function solveWaves(manifest: ImplManifest): WaveSolution {
  const declared = new Map<string, number>();
  const dependencies = new Map<string, string[]>();
  for (const wave of manifest.waves) {
    for (const agent of wave.agents ?? []) {
      const id = agent.id ?? '';
      if (id === '' || declared.has(id)) continue;
      declared.set(id, wave.number ?? 0);
      dependencies.set(id, [...new Set((agent.dependencies ?? []).map((dependency) => String(dependency).trim()).filter((dependency) => dependency !== ''))]);
    }
  }
  const errors: WaveSolution['errors'] = [];
  for (const [id, deps] of [...dependencies].sort(([a], [b]) => a.localeCompare(b))) {
    for (const dependency of deps) {
      if (!declared.has(dependency)) errors.push({ code: 'SOLVER_MISSING_DEP', message: `agent ${id} depends on ${dependency}, which is not an agent of this IMPL` });
    }
  }
  if (errors.length > 0) return { valid: false, assignments: [], wave_count: 0, errors };

  const remaining = new Map([...dependencies].map(([id, deps]) => [id, new Set(deps)]));
  const computed = new Map<string, number>();
  let layer = [...remaining].filter(([, deps]) => deps.size === 0).map(([id]) => id).sort();
  let wave = 0;
  while (layer.length > 0) {
    wave += 1;
    for (const id of layer) {
      computed.set(id, wave);
      remaining.delete(id);
    }
    for (const deps of remaining.values()) for (const id of layer) deps.delete(id);
    layer = [...remaining].filter(([, deps]) => deps.size === 0).map(([id]) => id).sort();
  }
  if (remaining.size > 0) {
    const cycle = [...remaining.keys()].sort();
    return { valid: false, assignments: [], wave_count: 0, errors: [{ code: 'SOLVER_CYCLE', message: `dependency cycle: agents ${cycle.join(', ')} depend on each other (I6)` }] };
  }
  const assignments = [...computed]
    .map(([agent, computedWave]) => ({ agent, declared_wave: declared.get(agent)!, computed_wave: computedWave }))
    .sort((a, b) => a.computed_wave - b.computed_wave || a.agent.localeCompare(b.agent));
  return { valid: true, assignments, wave_count: wave, errors: [] };
}

/**
 * `validate --solver` findings (Go's SOLVER_* codes): unknown dependencies and cycles (errors);
 * an agent declared in an earlier wave than its dependencies allow (error: it would start before
 * the work it needs is merged); an agent declared later than needed (warning: it waits longer
 * than its dependencies require — Go makes this an error too, but I2 allows it); more waves than
 * the critical path needs (warning, SOLVER_OVER_SEQUENCED).
 */
export function solverFindings(manifest: ImplManifest): Finding[] {
  const solution = solveWaves(manifest);
  if (!solution.valid) return solution.errors.map((error) => ({ code: error.code, message: error.message, severity: 'error', field: 'waves' }));
  const findings: Finding[] = [];
  for (const assignment of [...solution.assignments].sort((a, b) => a.agent.localeCompare(b.agent))) {
    if (assignment.declared_wave === assignment.computed_wave) continue;
    const early = assignment.declared_wave < assignment.computed_wave;
    findings.push({
      code: 'SOLVER_WAVE_MISMATCH',
      message: `agent ${assignment.agent} is in wave ${assignment.declared_wave} but its dependencies place it in wave ${assignment.computed_wave}${early ? ' (it would start before work it depends on is merged)' : ' (it could start earlier)'}`,
      severity: early ? 'error' : 'warning',
      field: `waves[${Math.max(assignment.declared_wave - 1, 0)}]`,
    });
  }
  const declaredWaves = manifest.waves.filter((wave) => (wave.agents ?? []).length > 0).length;
  if (declaredWaves > solution.wave_count) {
    findings.push({
      code: 'SOLVER_OVER_SEQUENCED',
      message: `manifest has ${declaredWaves} waves but the dependency graph needs only ${solution.wave_count}; consider collapsing waves`,
      severity: 'warning',
      field: 'waves',
    });
  }
  return findings;
}
