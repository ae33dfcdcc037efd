import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openEventStore } from '../src/observability/event-store.js';
import { repoRoot, runCli } from './support/cli.js';
import { createObservedWave } from './support/observability-wave.js';

// Issue 14: query events / metrics / events prune|export on what a real `polywave run-wave` of a
// script wave recorded; --follow seeing what another process writes; a future schema.

const dir = mkdtempSync(path.join(os.tmpdir(), 'pw-obs-commands-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface EventRecord {
  id: number;
  ts: string;
  run_id: string;
  seq: number;
  type: string;
  activity_type?: string;
  slug?: string;
  wave?: number;
  agent?: string;
  event: Record<string, unknown>;
}

const cli = (args: string[], store: string, env: Record<string, string> = {}) => runCli(args, { env: { POLYWAVE_EVENTS_DB: store, ...env } });

describe('query events and metrics on a recorded run-wave', () => {
  const store = path.join(dir, 'wave', 'events.db');

  it('run-wave prints its run id; query events --run shows the run in sequence; metrics sums it up', async () => {
    const wave = await createObservedWave('observed');
    const run = await wave.run([], { POLYWAVE_EVENTS_DB: store });
    expect(run.code, run.stderr.slice(-2000)).toBe(0);
    const runId = /run id (\w+) — query with: polywave query events --run \1/.exec(run.stderr)?.[1];
    expect(runId, run.stderr.slice(0, 2000)).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);

    const query = await cli(['query', 'events', '--run', runId!, '--format', 'json', '--limit', '100000'], store);
    expect(query.code, query.stderr).toBe(0);
    const records = JSON.parse(query.stdout) as EventRecord[];
    expect(records.map((record) => record.seq)).toEqual(records.map((_, index) => index + 1));
    const types = new Set(records.map((record) => record.type));
    for (const type of ['wave-run-start', 'agent-launch', 'agent-end', 'wave-run-end']) expect(types.has(type), type).toBe(true);
    // Every event carries the IMPL slug; the payload is the bus event as emitted.
    expect(records.every((record) => record.slug === 'observed')).toBe(true);
    const end = records.find((record) => record.type === 'wave-run-end')!;
    expect(end.event).toMatchObject({ type: 'wave-run-end', slug: 'observed', wave: 1, success: true, state: 'WAVE_VERIFIED' });
    expect(records.filter((record) => record.type === 'agent-end').map((record) => record.agent).sort()).toEqual(['A', 'B']);

    // Filters: --impl, --agent, --type (type or activity_type), --limit (the newest N, oldest first).
    const agentA = JSON.parse((await cli(['query', 'events', '--impl', 'observed', '--agent', 'A', '--type', 'agent-end', '--format', 'json'], store)).stdout) as EventRecord[];
    expect(agentA).toHaveLength(1);
    expect(agentA[0]).toMatchObject({ agent: 'A', type: 'agent-end', run_id: runId });
    const lastTwo = JSON.parse((await cli(['query', 'events', '--impl', 'observed', '--limit', '2', '--format', 'json'], store)).stdout) as EventRecord[];
    expect(lastTwo.map((record) => record.seq)).toEqual([records.length - 1, records.length]);
    const since = JSON.parse((await cli(['query', 'events', '--impl', 'observed', '--since', '1h', '--until', '2999-01-01', '--format', 'json', '--limit', '100000'], store)).stdout) as EventRecord[];
    expect(since).toHaveLength(records.length);
    const none = JSON.parse((await cli(['query', 'events', '--impl', "observed' OR 1=1 --", '--format', 'json'], store)).stdout) as EventRecord[];
    expect(none).toEqual([]);

    // Table and CSV.
    const table = await cli(['query', 'events', '--run', runId!, '--limit', '5'], store);
    expect(table.stdout.split('\n')[0]).toMatch(/^TIME\s+TYPE\s+IMPL\s+WAVE\s+AGENT\s+RUN\s+SEQ\s+DETAIL$/);
    expect(table.stdout.trim().split('\n')).toHaveLength(6);
    expect(table.stdout).toContain('wave-run-end');
    const csv = await cli(['query', 'events', '--run', runId!, '--format', 'csv', '--limit', '3'], store);
    const csvLines = csv.stdout.trim().split('\n');
    expect(csvLines[0]).toBe('id,ts,run_id,seq,type,activity_type,slug,wave,agent,program,event');
    expect(csvLines).toHaveLength(4);

    // metrics: the agents, the wave and its success, from the stored events.
    const metrics = await cli(['metrics', 'observed', '--format', 'json'], store);
    expect(metrics.code, metrics.stderr).toBe(0);
    const summary = JSON.parse(metrics.stdout) as { runs: number; gates: { executed: number; failed: number }; totals: { agent_attempts: number; agents_succeeded: number; success_rate: number }; waves: Array<{ wave: number; runs: number; success_rate: number; duration_ms: number }>; agents: Array<{ agent: string; attempts: number; success_rate: number }> };
    expect(summary.runs).toBe(1);
    expect(summary.gates.executed).toBeGreaterThan(0);
    expect(summary.gates.failed).toBe(0);
    expect(summary.totals).toMatchObject({ agent_attempts: 2, agents_succeeded: 2, success_rate: 1 });
    expect(summary.waves).toEqual([expect.objectContaining({ wave: 1, runs: 1, success_rate: 1 })]);
    expect(summary.waves[0]!.duration_ms).toBe((end.event as { duration_ms: number }).duration_ms);
    expect(summary.agents.map((agent) => [agent.agent, agent.attempts, agent.success_rate])).toEqual([['A', 1, 1], ['B', 1, 1]]);
    const human = await cli(['metrics', 'observed', '--breakdown'], store);
    expect(human.stdout).toMatch(/IMPL observed: 1 run\(s\)/);
    expect(human.stdout).toMatch(/agents:\n\s+AGENT/);

    // Export as JSON lines, then prune: nothing is older than a day, everything is older than "0s" from now.
    const exported = await cli(['events', 'export', '--run', runId!], store);
    const lines = exported.stdout.trim().split('\n').map((line) => JSON.parse(line) as EventRecord);
    expect(lines.map((line) => line.seq)).toEqual(records.map((record) => record.seq));
    const keep = await cli(['events', 'prune', '--older-than', '1d'], store);
    expect(JSON.parse(keep.stdout)).toMatchObject({ deleted_events: 0 });
    const wipe = await cli(['events', 'prune', '--older-than', '0s'], store);
    expect(JSON.parse(wipe.stdout).deleted_events).toBeGreaterThanOrEqual(records.length);
    expect(JSON.parse((await cli(['query', 'events', '--run', runId!, '--format', 'json'], store)).stdout)).toEqual([]);
  }, 240_000);

  it('--no-events records nothing and prints no run id; the wave result is the same', async () => {
    const wave = await createObservedWave('unrecorded');
    const quietStore = path.join(dir, 'off', 'events.db');
    const run = await wave.run(['--no-events'], { POLYWAVE_EVENTS_DB: quietStore });
    expect(run.code, run.stderr.slice(-2000)).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ success: true, state: 'WAVE_VERIFIED' });
    expect(run.stderr).not.toContain('run id');
    const query = await cli(['query', 'events', '--format', 'json'], quietStore);
    expect(JSON.parse(query.stdout)).toEqual([]);
  }, 240_000);
});

describe('query events --follow', () => {
  it('prints what another process stores, as it arrives, one JSON line each', async () => {
    const store = path.join(dir, 'follow', 'events.db');
    const follower = spawn(process.execPath, [path.join(repoRoot, 'bin', 'polywave.js'), 'query', 'events', '--follow', '--impl', 'followed', '--format', 'json'], {
      env: { ...process.env, POLYWAVE_EVENTS_DB: store, POLYWAVE_FOLLOW_INTERVAL_MS: '50' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    follower.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    try {
      await new Promise((resolve) => setTimeout(resolve, 800));
      // Another process (the store does not even exist yet) records two runs: one for our IMPL, one for another.
      const writer = path.join(repoRoot, 'test', 'support', 'observability-writer.mjs');
      const first = JSON.parse(spawnSync(process.execPath, [writer, store, '1500', 'followed'], { encoding: 'utf8' }).stdout) as { run_id: string; emitted: number };
      const other = JSON.parse(spawnSync(process.execPath, [writer, store, '300', 'someone-else'], { encoding: 'utf8' }).stdout) as { run_id: string; emitted: number };
      const deadline = Date.now() + 20_000;
      while (stdout.split('\n').filter(Boolean).length < first.emitted && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
      const lines = stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line) as EventRecord);
      expect(lines).toHaveLength(first.emitted);
      expect(lines.every((line) => line.run_id === first.run_id && line.slug === 'followed')).toBe(true);
      expect(lines.map((line) => line.seq)).toEqual(lines.map((_, index) => index + 1));
      expect(other.emitted).toBeGreaterThan(0);
    } finally {
      follower.kill('SIGTERM');
    }
    const code = await new Promise<number | null>((resolve) => follower.on('close', resolve));
    expect(code).toBe(0);
  }, 60_000);
});

describe('bad input and a store from the future', () => {
  it('refuses with one coded line and exit 2; a missing store reads as empty', async () => {
    const store = path.join(dir, 'input', 'events.db');
    const cases: Array<[string[], RegExp]> = [
      [['query', 'events', '--format', 'xml'], /X001_INVALID_INPUT.*--format/],
      [['query', 'events', '--since', 'yesterday'], /X001_INVALID_INPUT.*--since/],
      [['query', 'events', '--limit', '-3'], /X001_INVALID_INPUT/],
      [['query', 'runs'], /X001_INVALID_INPUT.*query events/],
      [['metrics'], /X001_INVALID_INPUT.*slug/],
      [['metrics', 'x', '--format', 'csv'], /X001_INVALID_INPUT/],
      [['events', 'prune'], /X001_INVALID_INPUT.*--older-than/],
      [['events', 'prune', '--older-than', 'forever'], /X001_INVALID_INPUT/],
      [['events', 'drop'], /X001_INVALID_INPUT/],
    ];
    for (const [args, message] of cases) {
      const result = await cli(args, store);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
      expect(result.stderr, args.join(' ')).toMatch(message);
      expect(result.stdout).toBe('');
    }
    const empty = await cli(['query', 'events', '--format', 'json'], store);
    expect(empty.code).toBe(0);
    expect(JSON.parse(empty.stdout)).toEqual([]);
    expect(JSON.parse((await cli(['metrics', 'nothing', '--format', 'json'], store)).stdout)).toMatchObject({ runs: 0, events: 0 });
  }, 60_000);

  it('a future schema is refused by the query commands (EVENT_STORE_FUTURE_SCHEMA) and left untouched; garbage is EVENT_STORE_UNREADABLE', async () => {
    const store = path.join(dir, 'future', 'events.db');
    const db = openEventStore(store)!;
    db.pragma('user_version = 7');
    db.close();
    for (const args of [['query', 'events'], ['metrics', 'x'], ['events', 'export'], ['events', 'prune', '--older-than', '1d']]) {
      const result = await cli(args, store);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toMatch(/^polywave: error\[EVENT_STORE_FUTURE_SCHEMA\]: .*schema version 7/);
    }
    const garbage = path.join(dir, 'garbage.db');
    spawnSync('sh', ['-c', `head -c 10000 /dev/urandom > ${garbage}`]);
    const result = await cli(['query', 'events'], garbage);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^polywave: error\[EVENT_STORE_UNREADABLE\]/);
  }, 60_000);
});

// `query events` / `metrics` after `polywave demo`: asserted on demo.test.ts's own run (one demo in CI).
