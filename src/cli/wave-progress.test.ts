import { describe, expect, it } from 'vitest';
import type { CommandIo } from './io.js';
import { createWaveProgress } from './wave-progress.js';

function io(): CommandIo & { err: string[] } {
  const err: string[] = [];
  return { cwd: '/', env: {}, now: () => new Date(0), stdout: () => {}, stderr: (text) => err.push(text), readStdin: async () => '', err };
}

describe('wave progress', () => {
  it('prints one line per agent state change when stderr is not a terminal', () => {
    const out = io();
    let clock = 0;
    const progress = createWaveProgress(out, { tty: false, now: () => clock });
    progress.onEvent({ v: 1, type: 'wave-run-start', slug: 's', wave: 1, agents: ['A', 'B'], order: ['B', 'A'], reordered: true, concurrency: 2 });
    progress.onEvent({ v: 1, type: 'agent-launch', slug: 's', wave: 1, agent: 'B', attempt: 1, model: 'anthropic:claude-sonnet-4-5', backend: 'ai-sdk' });
    progress.onEvent({ v: 1, type: 'agent-tool-call', slug: 's', wave: 1, agent: 'B', attempt: 1, tool: 'write_file', is_error: true, denied: 'JAIL_NOT_OWNED: nope', duration_ms: 0 });
    clock = 12_345;
    progress.onEvent({ v: 1, type: 'agent-end', slug: 's', wave: 1, agent: 'B', attempt: 1, status: 'complete', turns: 7, input_tokens: 12_300, output_tokens: 800, cost_usd: 0.0421, duration_ms: 12_345 });
    progress.onEvent({ v: 1, type: 'agent-retry', slug: 's', wave: 1, agent: 'A', attempt: 1, next_attempt: 2, failure_type: 'transient', action: 'retry', note: 'relaunch', backoff_ms: 2000 });
    progress.stop();
    const text = out.err.join('');
    expect(text).toContain('launching 2 agent(s) in order B, A');
    expect(text).toContain('[B] launched (anthropic:claude-sonnet-4-5)');
    expect(text).toContain('[B] write_file denied: JAIL_NOT_OWNED: nope');
    expect(text).toContain('[B] complete — 7 turn(s), 12.3k/800 tokens, $0.04, 12.3s');
    expect(text).toContain('[A] E19 retry (transient), attempt 2 after 2.0s');
  });

  it('redraws a block with status, elapsed time, turns, tokens and cost on a terminal', async () => {
    const out = io();
    const progress = createWaveProgress(out, { tty: true, now: () => 5000 });
    progress.onEvent({ v: 1, type: 'wave-run-start', slug: 's', wave: 1, agents: ['A'], order: ['A'], reordered: false, concurrency: 1 });
    progress.onEvent({ v: 1, type: 'agent-launch', slug: 's', wave: 1, agent: 'A', attempt: 1, model: 'script:x', backend: 'script' });
    progress.onEvent({ v: 1, type: 'agent-progress', slug: 's', wave: 1, agent: 'A', attempt: 1, turns: 3, input_tokens: 1500, output_tokens: 20, cost_usd: 0.5 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    progress.onEvent({ v: 1, type: 'wave-run-end', slug: 's', wave: 1, success: true, state: 'WAVE_VERIFIED', duration_ms: 1000 });
    progress.stop();
    const text = out.err.join('');
    expect(text).toMatch(/A {4}running .*turns {3}3 {2}tok 1\.5k\/20 {2}\$0\.50/);
    expect(text).toContain('\u001b[2K');
  });
});
