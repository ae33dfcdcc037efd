import { describe, expect, it } from 'vitest';
import { applyEvent, boardFromImpl, whereText, type Board, type StreamEvent } from '../web/src/board.js';
import { taskBatcher } from '../web/src/sse.js';

// The live board's fold (web/src/board.ts): what each engine/E40 event does to the cards, waves and
// gates — the same function the browser runs on every SSE frame (test/serve-browser.test.ts drives
// it end to end in Chromium).

const detail = {
  slug: 'tiny',
  file: 'docs/IMPL/IMPL-tiny.yaml',
  state: 'REVIEWED',
  findings: [],
  manifest: {
    file_ownership: [
      { file: 'src/a.js', agent: 'A', wave: 1 },
      { file: 'src/b.js', agent: 'B', wave: 1 },
      { file: 'src/c.js', agent: 'C', wave: 2 },
    ],
    waves: [
      { number: 1, agents: [{ id: 'A', files: ['src/a.js'] }, { id: 'B', files: ['src/b.js'] }] },
      { number: 2, agents: [{ id: 'C', files: ['src/c.js'], dependencies: ['A'] }] },
    ],
  },
  progress: { waves: [] },
};

let id = 0;
function event(type: string, fields: Partial<StreamEvent> & { payload?: Record<string, unknown> }): StreamEvent {
  id += 1;
  return { id, ts: 1_000_000 + id * 1000, type, slug: 'tiny', payload: {}, ...fields };
}

function fold(board: Board, events: StreamEvent[]): Board {
  return events.reduce((current, next) => applyEvent(current, next).board, board);
}

describe('live board fold', () => {
  it('starts from the manifest: every agent pending with its owned files, waves pending', () => {
    const board = boardFromImpl(detail);
    expect(Object.values(board.agents).map((card) => [card.id, card.wave, card.status, card.files])).toEqual([
      ['A', 1, 'pending', ['src/a.js']],
      ['B', 1, 'pending', ['src/b.js']],
      ['C', 2, 'pending', ['src/c.js']],
    ]);
    expect(board.waves).toEqual({ 1: { number: 1, status: 'pending', merged: 0 }, 2: { number: 2, status: 'pending', merged: 0 } });
    expect(board.state).toBe('REVIEWED');
  });

  it('runs a wave: launch → progress → tool call → end, the gate, the merge, COMPLETE', () => {
    id = 0;
    const start = boardFromImpl(detail);
    const events = [
      event('wave-run-start', { wave: 1, payload: { agents: ['A', 'B'] } }),
      event('agent-launch', { wave: 1, agent: 'A', payload: { attempt: 1, model: 'script:x.yaml', backend: 'script' } }),
      event('agent-progress', { wave: 1, agent: 'A', payload: { turns: 3, input_tokens: 1200, output_tokens: 80, cost_usd: 0.012 } }),
      event('agent-tool-call', { wave: 1, agent: 'A', payload: { tool: 'write_file', is_error: true, denied: 'outside the worktree' } }),
    ];
    const running = fold(start, events);
    expect(running.agents.A).toMatchObject({ status: 'running', attempt: 1, model: 'script:x.yaml', turns: 3, inputTokens: 1200, outputTokens: 80, costUsd: 0.012, lastTool: 'write_file', lastToolDenied: 'outside the worktree', lastToolError: true, startedAt: 1_002_000 });
    expect(running.agents.B!.status).toBe('pending');
    expect(running.waves[1]!.status).toBe('running');
    // The old board is left as it was.
    expect(start.agents.A!.status).toBe('pending');

    const done = fold(running, [
      event('agent-end', { wave: 1, agent: 'A', payload: { status: 'complete', turns: 5, input_tokens: 2000, output_tokens: 100, cost_usd: 0.02, duration_ms: 4000 } }),
      event('activity', { wave: 1, activity_type: 'gate_executed', payload: { gate: 'test', command: 'node --test', from_cache: true, gate_scope: 'pre-merge', duration_ms: 120 } }),
      event('activity', { wave: 1, activity_type: 'wave_merge', payload: {} }),
      event('wave-run-end', { wave: 1, payload: { success: true, state: 'WAVE_VERIFIED', duration_ms: 9000, cost_usd: 0.03 } }),
    ]);
    expect(done.agents.A).toMatchObject({ status: 'complete', turns: 5, costUsd: 0.02, endedAt: 1_005_000, startedAt: 1_001_000 });
    expect(done.gates).toEqual([{ gate: 'test', command: 'node --test', passed: true, fromCache: true, durationMs: 120, scope: 'pre-merge', wave: 1 }]);
    // wave_merge comes before the wave's end event: the wave stays merged.
    expect(done.waves[1]).toEqual({ number: 1, status: 'merged', merged: 2, durationMs: 9000, costUsd: 0.03 });
    expect(done.state).toBe('WAVE_VERIFIED');
    expect(done.lastEventId).toBe(8);
    expect(done.events).toBe(8);

    const complete = fold(done, [event('activity', { activity_type: 'impl_complete', payload: {} })]);
    expect(complete.state).toBe('COMPLETE');
    expect(complete.waves[2]!.status).toBe('merged');
  });

  it('shows a failure with its E19 class and the suggested action; a relaunch clears it', () => {
    id = 0;
    const failed = fold(boardFromImpl(detail), [
      event('agent-launch', { wave: 1, agent: 'B', payload: { attempt: 1 } }),
      event('agent-retry', { wave: 1, agent: 'B', payload: { failure_type: 'transient', action: 'retry', note: 'rate limited', next_attempt: 2 } }),
    ]);
    expect(failed.agents.B).toMatchObject({ status: 'retrying', failureType: 'transient', action: 'retry', note: 'rate limited' });
    const relaunched = fold(failed, [event('agent-launch', { wave: 1, agent: 'B', payload: { attempt: 2 } })]);
    expect(relaunched.agents.B).toMatchObject({ status: 'running', attempt: 2, failureType: undefined, action: undefined });
    const blocked = fold(relaunched, [event('agent-end', { wave: 1, agent: 'B', payload: { status: 'blocked', failure_type: 'needs_replan', explanation: 'the contract is wrong' } })]);
    expect(blocked.agents.B).toMatchObject({ status: 'blocked', failureType: 'needs_replan', note: 'the contract is wrong', action: 're-engage the Scout with the completion report; review the revised IMPL' });
    const escalated = fold(boardFromImpl(detail), [event('agent_performance', { wave: 1, agent: 'A', payload: { status: 'failed', failure_type: 'escalate' } })]);
    expect(escalated.agents.A).toMatchObject({ status: 'failed', failureType: 'escalate', action: "a human reads the agent's completion report and decides" });
    // X15 N8: a fixable failure that still failed on the final record had its retries used up: the engine escalated.
    const usedUp = fold(boardFromImpl(detail), [
      event('agent-end', { wave: 1, agent: 'B', payload: { status: 'blocked', failure_type: 'fixable' } }),
      event('agent-retry', { wave: 1, agent: 'B', payload: { failure_type: 'fixable', action: 'send-fix-prompt', note: 'fixable failure: apply the fix' } }),
      event('agent-end', { wave: 1, agent: 'B', payload: { status: 'blocked', failure_type: 'fixable' } }),
      event('agent_performance', { wave: 1, agent: 'B', payload: { status: 'blocked', failure_type: 'fixable', retry_count: 1 } }),
    ]);
    expect(usedUp.agents.B!.action).toBe("escalated after 2 attempt(s), retries used up: a human reads the agent's completion report and decides");
  });

  it('says where each agent runs (issue 17) and shows finalize-wave merging agent by agent (issue 16)', () => {
    id = 0;
    const launched = fold(boardFromImpl(detail), [
      event('agent-launch', { wave: 1, agent: 'A', payload: { attempt: 1, dispatcher: 'redis' } }),
      event('agent-launch', { wave: 1, agent: 'B', payload: { attempt: 1, dispatcher: 'in-process' } }),
    ]);
    expect([whereText(launched.agents.A!), whereText(launched.agents.B!), whereText(launched.agents.C!)]).toEqual(['dispatched (redis)', 'in-process', undefined]);
    // While it runs: a worker took the job (an agent-running of another attempt changes nothing).
    const taken = fold(launched, [event('agent-running', { wave: 1, agent: 'A', payload: { attempt: 2, dispatcher: 'redis', job_id: 'j', worker: 'w9' } }), event('agent-running', { wave: 1, agent: 'A', payload: { attempt: 1, dispatcher: 'redis', job_id: 'j', worker: 'w1', host: 'box' } })]);
    expect([taken.agents.A!.status, whereText(taken.agents.A!)]).toEqual(['running', 'on w1 (box)']);
    const ended = fold(launched, [event('agent-end', { wave: 1, agent: 'A', payload: { status: 'complete', dispatch: { dispatcher: 'redis', job_id: 'j', worker: 'w2', host: 'box', stalls: 1 } } })]);
    expect(ended.agents.A).toMatchObject({ dispatcher: 'redis', worker: 'w2', host: 'box', stalls: 1 });
    expect(whereText(ended.agents.A!)).toBe('on w2 (box)');
    // A relaunch runs somewhere new: the worker is known again at its end.
    expect(whereText(fold(ended, [event('agent-launch', { wave: 1, agent: 'A', payload: { attempt: 2, dispatcher: 'redis' } })]).agents.A!)).toBe('dispatched (redis)');
    // From the IMPL answer (runs_on) before any event: a board opened after the run.
    const opened = boardFromImpl({ ...detail, progress: { waves: [{ number: 1, agents: [{ id: 'A', status: 'complete', runs_on: { dispatcher: 'redis', worker: 'w1', stalls: 0 } }] }] } });
    expect(whereText(opened.agents.A!)).toBe('on w1');
    const merging = fold(ended, [event('agent-merge', { wave: 1, agent: 'A', payload: { branch: 'polywave/tiny/wave1-agent-A', merged: 1, total: 2 } })]);
    expect(merging.agents.A!.merged).toBe(true);
    expect(merging.agents.B!.merged).toBeUndefined();
    expect(merging.waves[1]).toMatchObject({ status: 'merging', merged: 1, mergeTotal: 2 });
    const merged = fold(merging, [event('agent-merge', { wave: 1, agent: 'B', payload: { merged: 2, total: 2 } }), event('activity', { wave: 1, activity_type: 'wave_merge', payload: {} })]);
    expect(merged.waves[1]).toMatchObject({ status: 'merged', merged: 2 });
  });

  it('takes ISO timestamps as well as epoch milliseconds, and ignores events without an agent for the cards', () => {
    const board = fold(boardFromImpl(detail), [
      { id: 1, ts: '2026-12-02T04:00:00.000Z', type: 'agent-launch', slug: 'tiny', wave: 1, agent: 'A', payload: {} },
      { id: 2, ts: 5, type: 'agent-progress', slug: 'tiny', wave: 1, payload: { turns: 9 } },
    ]);
    expect(board.agents.A!.startedAt).toBe(Date.parse('2026-12-02T04:00:00.000Z'));
    expect(Object.values(board.agents).map((card) => card.turns)).toEqual([0, 0, 0]);
    expect(board.events).toBe(2);
  });

  it("changes only the card of the event's agent (the page re-renders that card only); a burst is handed over once, after the task that received it", async () => {
    const running = fold(boardFromImpl(detail), [event('agent-launch', { wave: 1, agent: 'A' }), event('agent-launch', { wave: 1, agent: 'B' })]);
    const next = applyEvent(running, event('agent-progress', { wave: 1, agent: 'B', payload: { turns: 3 } }));
    expect(next.agent).toBe('B');
    expect(next.board.agents.B).not.toBe(running.agents.B);
    expect(next.board.agents.A).toBe(running.agents.A);
    expect(next.board.agents.C).toBe(running.agents.C);
    expect(next.board.gates).toBe(running.gates);

    // sse.ts: the frames of one received chunk (dispatched in one task) are folded in one update, in the next task.
    const flushed: string[][] = [];
    let queue: string[] = [];
    let wake = (): void => undefined;
    const batcher = taskBatcher(() => {
      flushed.push(queue);
      queue = [];
      wake();
    });
    const nextFlush = () => new Promise<void>((done) => (wake = done));
    let first = nextFlush();
    for (const frame of ['1', '2', '3']) {
      queue.push(frame);
      batcher.schedule();
    }
    await Promise.resolve();
    expect(flushed).toEqual([]);
    await first;
    first = nextFlush();
    queue.push('4');
    batcher.schedule();
    await first;
    batcher.close();
    expect(flushed).toEqual([['1', '2', '3'], ['4']]);
  });
});
