import type { EventRow } from './event-store.js';

/** Event types `metrics` reads (E40 ones first, the engine's progress events as fallback). */
export const metricsEventTypes = ['agent_performance', 'cost', 'activity', 'agent-launch', 'agent-progress', 'agent-end', 'wave-run-end', 'gate-result'] as const;

export interface UsageTotals {
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  /** Null when no call of the scope had a known price. */
  cost_usd: number | null;
}

export interface AgentMetrics extends UsageTotals {
  agent: string;
  wave: number | null;
  attempts: number;
  succeeded: number;
  failed: number;
  success_rate: number | null;
  duration_ms: number;
  models: string[];
}

export interface WaveMetrics extends UsageTotals {
  wave: number;
  runs: number;
  succeeded: number;
  success_rate: number | null;
  duration_ms: number;
  avg_duration_ms: number | null;
}

export interface ModelMetrics extends UsageTotals {
  model: string;
  /** Model calls (E40 `cost` events) or, without them, agent attempts. */
  calls: number;
}

export interface Metrics {
  scope: { impl?: string; program?: string };
  runs: number;
  events: number;
  first_at: string | null;
  last_at: string | null;
  totals: UsageTotals & { agent_attempts: number; agents_succeeded: number; success_rate: number | null; wave_duration_ms: number };
  agents: AgentMetrics[];
  waves: WaveMetrics[];
  models: ModelMetrics[];
  gates: { executed: number; passed: number; failed: number; pass_rate: number | null };
}

type Payload = Record<string, unknown>;

const number = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) ? value : 0);
const textOf = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);
const succeededStatus = (status: unknown) => status === 'complete' || status === 'success' || status === 'completed';

function emptyUsage(): UsageTotals {
  return { input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, cost_usd: null };
}

function addUsage(target: UsageTotals, usage: Partial<UsageTotals>): void {
  target.input_tokens += number(usage.input_tokens);
  target.output_tokens += number(usage.output_tokens);
  target.cache_read_tokens += number(usage.cache_read_tokens);
  target.cache_write_tokens += number(usage.cache_write_tokens);
  if (typeof usage.cost_usd === 'number' && Number.isFinite(usage.cost_usd)) target.cost_usd = round((target.cost_usd ?? 0) + usage.cost_usd);
}

function round(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}

function rate(part: number, whole: number): number | null {
  return whole === 0 ? null : Math.round((part / whole) * 1000) / 1000;
}

interface Attempt {
  run: string;
  agent: string;
  wave: number | null;
  attempt: number;
  model?: string;
  status?: string;
  duration_ms: number;
  /** From agent-end, else the last agent-progress. */
  usage?: Partial<UsageTotals>;
  progress?: Partial<UsageTotals>;
  /** Summed E40 cost events (preferred: per call, with cache tokens). */
  costs: Array<{ model: string } & Partial<UsageTotals>>;
}

/**
 * Cost, tokens, durations and success rates of one IMPL or PROGRAM from its stored events, per
 * agent, per wave and per model. Usage comes from E40 `cost` events when a run has them (per
 * model call, cache tokens included), else from `agent-end` (or the last `agent-progress` of an
 * attempt cut short); agent outcomes from `agent_performance`, else `agent-end`.
 */
export function computeMetrics(rows: readonly EventRow[], scope: { impl?: string; program?: string }): Metrics {
  const attempts = new Map<string, Attempt>();
  const performances: Payload[] = [];
  const waveEnds: Array<{ run: string; payload: Payload }> = [];
  const waveActivities: Array<{ run: string; payload: Payload }> = [];
  const gates = { executed: 0, passed: 0, failed: 0 };
  const gateActivityRuns = new Set<string>();
  const gateResults: Array<{ run: string; passed: boolean }> = [];
  const runs = new Set<string>();
  const attemptOf = (run: string, payload: Payload, row: EventRow): Attempt => {
    const agent = textOf(payload.agent) ?? row.agent ?? '?';
    const attemptNumber = number(payload.attempt) || 1;
    const wave = typeof payload.wave === 'number' ? payload.wave : row.wave;
    const key = `${run}\u0000${agent}\u0000${wave ?? ''}\u0000${attemptNumber}`;
    let entry = attempts.get(key);
    if (!entry) {
      entry = { run, agent, wave, attempt: attemptNumber, duration_ms: 0, costs: [] };
      attempts.set(key, entry);
    }
    return entry;
  };
  for (const row of rows) {
    let payload: Payload;
    try {
      payload = JSON.parse(row.payload) as Payload;
    } catch {
      continue;
    }
    runs.add(row.run_id);
    switch (row.type) {
      case 'agent-launch': {
        const entry = attemptOf(row.run_id, payload, row);
        entry.model = textOf(payload.model) ?? entry.model;
        break;
      }
      case 'agent-progress':
        attemptOf(row.run_id, payload, row).progress = { input_tokens: number(payload.input_tokens), output_tokens: number(payload.output_tokens), ...(typeof payload.cost_usd === 'number' ? { cost_usd: payload.cost_usd } : {}) };
        break;
      case 'agent-end': {
        const entry = attemptOf(row.run_id, payload, row);
        entry.status = textOf(payload.status);
        entry.duration_ms = number(payload.duration_ms);
        entry.usage = { input_tokens: number(payload.input_tokens), output_tokens: number(payload.output_tokens), ...(typeof payload.cost_usd === 'number' ? { cost_usd: payload.cost_usd } : {}) };
        break;
      }
      case 'cost': {
        const entry = attemptOf(row.run_id, payload, row);
        const model = textOf(payload.model) ?? entry.model ?? 'unknown';
        entry.model ??= model;
        entry.costs.push({
          model,
          input_tokens: number(payload.input_tokens),
          output_tokens: number(payload.output_tokens),
          cache_read_tokens: number(payload.cache_read_tokens),
          cache_write_tokens: number(payload.cache_write_tokens),
          ...(typeof payload.cost_usd === 'number' ? { cost_usd: payload.cost_usd } : {}),
        });
        break;
      }
      case 'agent_performance':
        performances.push({ ...payload, run_id: row.run_id, wave: payload.wave ?? row.wave });
        break;
      case 'wave-run-end':
        waveEnds.push({ run: row.run_id, payload: { ...payload, wave: payload.wave ?? row.wave } });
        break;
      case 'gate-result':
        gateResults.push({ run: row.run_id, passed: payload.passed === true });
        break;
      case 'activity': {
        const activity = payload.activity_type;
        if (activity === 'gate_executed' || activity === 'gate_failed') {
          gateActivityRuns.add(row.run_id);
          gates.executed += 1;
          if (activity === 'gate_executed') gates.passed += 1;
          else gates.failed += 1;
        } else if (activity === 'wave_merge' || activity === 'wave_failed') waveActivities.push({ run: row.run_id, payload: { ...payload, wave: payload.wave ?? row.wave } });
        break;
      }
      default:
        break;
    }
  }
  // Engine gate results only for runs without E40 gate activities (never both: no double count).
  for (const gate of gateResults) {
    if (gateActivityRuns.has(gate.run)) continue;
    gates.executed += 1;
    if (gate.passed) gates.passed += 1;
    else gates.failed += 1;
  }

  const agents = new Map<string, AgentMetrics>();
  const models = new Map<string, ModelMetrics>();
  const totals = emptyUsage();
  const agentEntry = (agent: string, wave: number | null) => {
    const key = `${agent}\u0000${wave ?? ''}`;
    let entry = agents.get(key);
    if (!entry) {
      entry = { agent, wave, attempts: 0, succeeded: 0, failed: 0, success_rate: null, duration_ms: 0, models: [], ...emptyUsage() };
      agents.set(key, entry);
    }
    return entry;
  };
  const modelEntry = (model: string) => {
    let entry = models.get(model);
    if (!entry) {
      entry = { model, calls: 0, ...emptyUsage() };
      models.set(model, entry);
    }
    return entry;
  };
  // Outcomes: agent_performance per (run, agent, wave) wins over the attempts' agent-end statuses.
  const performanceKeys = new Set<string>();
  for (const performance of performances) {
    const agent = textOf(performance.agent) ?? '?';
    const wave = typeof performance.wave === 'number' ? performance.wave : null;
    performanceKeys.add(`${String(performance.run_id)}\u0000${agent}\u0000${wave ?? ''}`);
    const entry = agentEntry(agent, wave);
    if (succeededStatus(performance.status)) entry.succeeded += 1;
    else entry.failed += 1;
  }
  for (const attempt of attempts.values()) {
    const entry = agentEntry(attempt.agent, attempt.wave);
    entry.attempts += 1;
    entry.duration_ms += attempt.duration_ms;
    if (!performanceKeys.has(`${attempt.run}\u0000${attempt.agent}\u0000${attempt.wave ?? ''}`) && attempt.status !== undefined) {
      if (succeededStatus(attempt.status)) entry.succeeded += 1;
      else entry.failed += 1;
    }
    if (attempt.costs.length > 0) {
      for (const cost of attempt.costs) {
        addUsage(entry, cost);
        addUsage(totals, cost);
        const model = modelEntry(cost.model);
        model.calls += 1;
        addUsage(model, cost);
        if (!entry.models.includes(cost.model)) entry.models.push(cost.model);
      }
    } else {
      const usage = attempt.usage ?? attempt.progress;
      if (!usage) continue;
      addUsage(entry, usage);
      addUsage(totals, usage);
      const model = modelEntry(attempt.model ?? 'unknown');
      model.calls += 1;
      addUsage(model, usage);
      if (attempt.model && !entry.models.includes(attempt.model)) entry.models.push(attempt.model);
    }
  }
  for (const entry of agents.values()) entry.success_rate = rate(entry.succeeded, entry.succeeded + entry.failed);

  const waves = new Map<number, WaveMetrics>();
  const waveEntry = (wave: number) => {
    let entry = waves.get(wave);
    if (!entry) {
      entry = { wave, runs: 0, succeeded: 0, success_rate: null, duration_ms: 0, avg_duration_ms: null, ...emptyUsage() };
      waves.set(wave, entry);
    }
    return entry;
  };
  const endedRuns = new Set<string>();
  for (const { run, payload } of waveEnds) {
    if (typeof payload.wave !== 'number') continue;
    endedRuns.add(`${run}\u0000${payload.wave}`);
    const entry = waveEntry(payload.wave);
    entry.runs += 1;
    if (payload.success === true) entry.succeeded += 1;
    entry.duration_ms += number(payload.duration_ms);
  }
  for (const { run, payload } of waveActivities) {
    if (typeof payload.wave !== 'number' || endedRuns.has(`${run}\u0000${payload.wave}`)) continue;
    const entry = waveEntry(payload.wave);
    entry.runs += 1;
    if (payload.activity_type === 'wave_merge') entry.succeeded += 1;
  }
  for (const agent of agents.values()) {
    if (agent.wave === null) continue;
    addUsage(waveEntry(agent.wave), agent);
  }
  for (const entry of waves.values()) {
    entry.success_rate = rate(entry.succeeded, entry.runs);
    entry.avg_duration_ms = entry.runs === 0 ? null : Math.round(entry.duration_ms / entry.runs);
  }

  const agentList = [...agents.values()].sort((a, b) => (a.wave ?? 0) - (b.wave ?? 0) || a.agent.localeCompare(b.agent));
  const succeeded = agentList.reduce((sum, entry) => sum + entry.succeeded, 0);
  const outcomes = agentList.reduce((sum, entry) => sum + entry.succeeded + entry.failed, 0);
  const waveList = [...waves.values()].sort((a, b) => a.wave - b.wave);
  return {
    scope,
    runs: runs.size,
    events: rows.length,
    first_at: rows.length > 0 ? new Date(rows[0]!.ts).toISOString() : null,
    last_at: rows.length > 0 ? new Date(rows[rows.length - 1]!.ts).toISOString() : null,
    totals: {
      ...totals,
      agent_attempts: agentList.reduce((sum, entry) => sum + entry.attempts, 0),
      agents_succeeded: succeeded,
      success_rate: rate(succeeded, outcomes),
      wave_duration_ms: waveList.reduce((sum, entry) => sum + entry.duration_ms, 0),
    },
    agents: agentList,
    waves: waveList,
    models: [...models.values()].sort((a, b) => a.model.localeCompare(b.model)),
    gates: { ...gates, pass_rate: rate(gates.passed, gates.executed) },
  };
}
