// The live wave board's state and how each engine/E40 event changes it (src/engine/events.ts and
// src/protocol/e40.ts name the events). Pure: the view keeps a Board in state and folds every SSE
// frame into it; a `resync` makes the view refetch the IMPL and start over from its progress.

import type { ImplDetail } from './api.js';

/** One SSE frame's data (serve-api.md): the stored event with its labels. */
export interface StreamEvent {
  id: number;
  run_id?: string;
  seq?: number;
  ts: number | string;
  type: string;
  activity_type?: string;
  slug?: string;
  wave?: number;
  agent?: string;
  program?: string;
  payload: Record<string, unknown>;
}

export type AgentStatus = 'pending' | 'running' | 'retrying' | 'complete' | 'partial' | 'blocked' | 'failed';

export interface AgentCard {
  id: string;
  wave: number;
  status: AgentStatus;
  files: string[];
  attempt: number;
  model?: string;
  backend?: string;
  startedAt?: number;
  endedAt?: number;
  turns: number;
  inputTokens: number;
  outputTokens: number;
  costUsd?: number;
  lastTool?: string;
  lastToolDenied?: string;
  lastToolError?: boolean;
  failureType?: string;
  action?: string;
  note?: string;
  /** Issue 17: `redis` (dispatched to a worker) or `in-process`; unknown before any launch was seen. */
  dispatcher?: string;
  /** The worker that runs or ran the attempt (known once a worker took its job), and its host when given. */
  worker?: string;
  host?: string;
  /** Times the job stalled (a worker died) and went to another worker. */
  stalls?: number;
  /** Issue 16: the agent's branch was merged by finalize-wave (an `agent-merge` event). */
  merged?: boolean;
}

/** Where a card's agent runs, as the card says it: `on w2`, `on w2 (host)`, `dispatched`, `in-process`; undefined when unknown. */
export function whereText(card: Pick<AgentCard, 'dispatcher' | 'worker' | 'host'>): string | undefined {
  if (card.worker) return `on ${card.worker}${card.host && !card.worker.startsWith(card.host) ? ` (${card.host})` : ''}`;
  if (card.dispatcher === 'in-process') return 'in-process';
  if (card.dispatcher) return `dispatched (${card.dispatcher})`;
  return undefined;
}

export interface GateRow {
  gate: string;
  command: string;
  passed?: boolean;
  fromCache?: boolean;
  durationMs?: number;
  scope?: string;
  wave?: number;
}

export interface WaveRow {
  number: number;
  status: 'pending' | 'preparing' | 'running' | 'merging' | 'merged' | 'failed';
  merged: number;
  /** How many branches the running finalize-wave merges (its `agent-merge` events); undefined before the first. */
  mergeTotal?: number;
  durationMs?: number;
  costUsd?: number;
}

export interface Board {
  state: string;
  agents: Record<string, AgentCard>;
  waves: Record<number, WaveRow>;
  gates: GateRow[];
  steps: Array<{ command: string; step: string; status: string; detail: string; wave?: number }>;
  lastEventId: number;
  events: number;
}

/** E19 default reaction for each failure type (src/protocol/e19.ts), shown beside a failed card. */
export const e19Actions: Record<string, string> = {
  transient: 'retry automatically',
  fixable: "apply the agent's suggested fix, then relaunch (polywave run resumes)",
  timeout: 'retry with scope-reduction instructions',
  needs_replan: 're-engage the Scout with the completion report; review the revised IMPL',
  escalate: "a human reads the agent's completion report and decides",
};

/** E19 types whose default reaction retries (src/protocol/e19.ts e19Defaults): failing at the end means escalated. */
const retryingTypes = new Set(['transient', 'fixable', 'timeout']);

const terminal = new Set<AgentStatus>(['complete', 'partial', 'blocked', 'failed']);

function progressStatus(status: string): AgentStatus {
  switch (status) {
    case 'complete':
    case 'success':
      return 'complete';
    case 'partial':
    case 'blocked':
    case 'failed':
    case 'running':
      return status;
    case 'in_progress':
    case 'launched':
      return 'running';
    default:
      return 'pending';
  }
}

/** The board at the state the IMPL detail shows (before any live event). */
export function boardFromImpl(detail: ImplDetail): Board {
  const agents: Record<string, AgentCard> = {};
  const waves: Record<number, WaveRow> = {};
  const ownership = detail.manifest?.file_ownership ?? [];
  const manifestWaves = detail.manifest?.waves ?? [];
  const progressWaves = detail.progress?.waves?.length ? detail.progress.waves : manifestWaves.map((wave) => ({ number: wave.number, agents: (wave.agents ?? []).map((agent) => ({ id: agent.id, status: 'pending', files: agent.files ?? [] })) }));
  for (const wave of progressWaves) {
    const statuses: AgentStatus[] = [];
    for (const agent of wave.agents) {
      const owned = agent.files?.length ? agent.files : ownership.filter((row) => row.agent === agent.id).map((row) => row.file);
      const status = progressStatus(agent.status);
      statuses.push(status);
      const where = 'runs_on' in agent ? agent.runs_on : undefined;
      agents[agent.id] = {
        id: agent.id,
        wave: wave.number,
        status,
        files: owned,
        attempt: 0,
        turns: 0,
        inputTokens: 0,
        outputTokens: 0,
        ...(where?.dispatcher ? { dispatcher: where.dispatcher } : {}),
        ...(where?.worker ? { worker: where.worker } : {}),
        ...(where?.host ? { host: where.host } : {}),
        ...(typeof where?.stalls === 'number' ? { stalls: where.stalls } : {}),
      };
    }
    const allDone = statuses.length > 0 && statuses.every((status) => status === 'complete');
    waves[wave.number] = { number: wave.number, status: allDone && detail.state === 'COMPLETE' ? 'merged' : 'pending', merged: 0 };
  }
  return { state: detail.state, agents, waves, gates: [], steps: [], lastEventId: 0, events: 0 };
}

export function eventTime(event: StreamEvent): number {
  return typeof event.ts === 'number' ? event.ts : Date.parse(event.ts);
}

function num(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}
function str(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function card(board: Board, id: string, wave: number | undefined): AgentCard {
  const existing = board.agents[id];
  if (existing) return { ...existing };
  return { id, wave: wave ?? 0, status: 'pending', files: [], attempt: 0, turns: 0, inputTokens: 0, outputTokens: 0 };
}

function wave(board: Board, number: number): WaveRow {
  return { ...(board.waves[number] ?? { number, status: 'pending', merged: 0 }) };
}

/**
 * Folds one event into the board (a new object; the old one is left as it was). Returns the agent
 * id whose card changed, if any, so the view can report card updates (latency bench).
 */
export function applyEvent(board: Board, event: StreamEvent): { board: Board; agent?: string } {
  const p = event.payload ?? {};
  const next: Board = { ...board, agents: board.agents, waves: board.waves, lastEventId: Math.max(board.lastEventId, event.id || 0), events: board.events + 1 };
  const agentId = event.agent ?? str(p.agent);
  const waveNumber = event.wave ?? num(p.wave);
  const at = eventTime(event);
  const setAgent = (update: (c: AgentCard) => void): { board: Board; agent: string } => {
    const c = card(board, agentId!, waveNumber);
    update(c);
    next.agents = { ...board.agents, [c.id]: c };
    return { board: next, agent: c.id };
  };
  const setWave = (number: number, update: (w: WaveRow) => void): void => {
    const w = wave(board, number);
    update(w);
    next.waves = { ...next.waves, [number]: w };
  };
  const type = event.type;
  const activity = event.activity_type ?? str(p.activity_type);

  if (type === 'agent-launch' && agentId) {
    return setAgent((c) => {
      c.status = 'running';
      c.attempt = num(p.attempt) ?? c.attempt + 1;
      c.model = str(p.model) ?? c.model;
      c.backend = str(p.backend) ?? c.backend;
      c.startedAt = at;
      c.endedAt = undefined;
      c.failureType = undefined;
      c.action = undefined;
      c.note = undefined;
      // A new attempt: where it runs now (its worker is known once a worker takes its job: agent-running).
      c.dispatcher = str(p.dispatcher) ?? 'in-process';
      c.worker = undefined;
      c.host = undefined;
      c.stalls = undefined;
      c.merged = undefined;
    });
  }
  // Issue 17: a worker took the dispatched attempt's job — where it runs, before its result (again after a stall).
  if (type === 'agent-running' && agentId) {
    return setAgent((c) => {
      if (num(p.attempt) !== undefined && num(p.attempt) !== c.attempt) return;
      c.dispatcher = str(p.dispatcher) ?? c.dispatcher ?? 'redis';
      c.worker = str(p.worker) ?? c.worker;
      c.host = str(p.host);
    });
  }
  if (type === 'agent-progress' && agentId) {
    return setAgent((c) => {
      if (!terminal.has(c.status)) c.status = 'running';
      c.startedAt ??= at;
      c.turns = num(p.turns) ?? c.turns;
      c.inputTokens = num(p.input_tokens) ?? c.inputTokens;
      c.outputTokens = num(p.output_tokens) ?? c.outputTokens;
      c.costUsd = num(p.cost_usd) ?? c.costUsd;
    });
  }
  if (type === 'agent-tool-call' && agentId) {
    return setAgent((c) => {
      if (!terminal.has(c.status)) c.status = 'running';
      c.startedAt ??= at;
      c.lastTool = str(p.tool) ?? c.lastTool;
      c.lastToolDenied = str(p.denied);
      c.lastToolError = p.is_error === true;
    });
  }
  if (type === 'agent-retry' && agentId) {
    return setAgent((c) => {
      c.status = 'retrying';
      c.failureType = str(p.failure_type);
      c.action = str(p.action);
      c.note = str(p.note);
    });
  }
  if (type === 'agent-end' && agentId) {
    return setAgent((c) => {
      const status = str(p.status) ?? 'complete';
      c.status = status === 'complete' || status === 'success' ? 'complete' : status === 'partial' || status === 'blocked' ? status : 'failed';
      c.turns = num(p.turns) ?? c.turns;
      c.inputTokens = num(p.input_tokens) ?? c.inputTokens;
      c.outputTokens = num(p.output_tokens) ?? c.outputTokens;
      c.costUsd = num(p.cost_usd) ?? c.costUsd;
      c.endedAt = at;
      const duration = num(p.duration_ms);
      if (duration !== undefined) c.startedAt = at - duration;
      c.failureType = str(p.failure_type) ?? (c.status === 'complete' ? undefined : c.failureType);
      c.note = str(p.explanation) ?? c.note;
      if (c.failureType && !c.action) c.action = e19Actions[c.failureType];
      const dispatch = p.dispatch && typeof p.dispatch === 'object' ? (p.dispatch as Record<string, unknown>) : undefined;
      if (dispatch) {
        c.dispatcher = str(dispatch.dispatcher) ?? c.dispatcher ?? 'redis';
        c.worker = str(dispatch.worker) ?? c.worker;
        c.host = str(dispatch.host) ?? c.host;
        c.stalls = num(dispatch.stalls) ?? c.stalls;
      }
    });
  }
  if (type === 'agent-merge' && agentId) {
    const result = setAgent((c) => void (c.merged = true));
    if (waveNumber !== undefined) {
      setWave(waveNumber, (w) => {
        if (w.status !== 'merged' && w.status !== 'failed') w.status = 'merging';
        w.merged = Math.max(w.merged, num(p.merged) ?? w.merged + 1);
        w.mergeTotal = num(p.total) ?? w.mergeTotal;
      });
    }
    return result;
  }
  if (type === 'agent_performance' && agentId) {
    return setAgent((c) => {
      const status = str(p.status);
      if (status === 'success') c.status = 'complete';
      else if (status === 'partial' || status === 'blocked') c.status = status;
      else if (status === 'failed') c.status = 'failed';
      c.failureType = str(p.failure_type) ?? c.failureType;
      // The agent's final record: a retrying type (transient, fixable, timeout) that still failed here had its
      // retries used up, and the engine escalated (E19: "If all retries fail, escalate") — say that, not the default.
      const attempts = (num(p.retry_count) ?? 0) + 1;
      if (c.failureType && c.status !== 'complete' && retryingTypes.has(c.failureType)) c.action = `escalated after ${attempts} attempt(s), retries used up: ${e19Actions.escalate}`;
      else if (c.failureType) c.action = c.action ?? e19Actions[c.failureType];
    });
  }
  if (type === 'worktree-create' && agentId) {
    return setAgent(() => undefined);
  }
  if (waveNumber !== undefined) {
    if (type === 'wave-prepare-start') setWave(waveNumber, (w) => void (w.status = 'preparing'));
    if (type === 'wave-run-start') setWave(waveNumber, (w) => void (w.status = 'running'));
    if (type === 'wave-run-end') {
      setWave(waveNumber, (w) => {
        // wave_merge (E40) comes before the wave's end: a merged wave stays merged.
        if (w.status !== 'merged') w.status = p.success === false ? 'failed' : 'merging';
        w.durationMs = num(p.duration_ms);
        w.costUsd = num(p.cost_usd);
      });
      const state = str(p.state);
      if (state) next.state = state;
    }
  }
  if (type === 'activity') {
    if (activity === 'wave_merge' && waveNumber !== undefined) {
      setWave(waveNumber, (w) => {
        w.status = 'merged';
        w.merged = Object.values(board.agents).filter((a) => a.wave === waveNumber).length;
      });
    }
    if (activity === 'wave_failed' && waveNumber !== undefined) setWave(waveNumber, (w) => void (w.status = 'failed'));
    if (activity === 'impl_complete') {
      next.state = 'COMPLETE';
      next.waves = Object.fromEntries(Object.entries(next.waves).map(([key, w]) => [key, w.status === 'failed' ? w : { ...w, status: 'merged' as const }]));
    }
    if (activity === 'gate_executed' || activity === 'gate_failed') {
      next.gates = [
        ...board.gates,
        {
          gate: str(p.gate) ?? 'gate',
          command: str(p.command) ?? '',
          passed: activity === 'gate_executed',
          fromCache: p.from_cache === true,
          durationMs: num(p.duration_ms),
          scope: str(p.gate_scope),
          wave: waveNumber,
        },
      ];
    }
  }
  if (type === 'step-end') {
    const step = (p.step ?? {}) as { step?: string; status?: string; detail?: string };
    const row = { command: str(p.command) ?? '', step: step.step ?? '', status: step.status ?? '', detail: step.detail ?? '', ...(waveNumber !== undefined ? { wave: waveNumber } : {}) };
    next.steps = [...board.steps.slice(-49), row];
    // A merge step in progress: the wave is merging.
    if (waveNumber !== undefined && /merge/i.test(row.step)) {
      setWave(waveNumber, (w) => {
        if (w.status !== 'merged' && w.status !== 'failed') w.status = row.status === 'failed' ? 'failed' : 'merging';
      });
    }
  }
  return { board: next };
}
