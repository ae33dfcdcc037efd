import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeTempDir } from '../../test/support/temp.js';
import { EventBus, type PolywaveEvent } from '../engine/events.js';
import { GateCache } from './gate-cache.js';
import { runBaselineGates as runBaselineGatesIn, runGates as runGatesIn, type RunGatesOptions } from './run-gates.js';
import type { GateSpec } from './types.js';

// These tests are about the runner itself (phases, groups, timeouts, the E38 cache): they count
// runs in files outside the repository, which the OS sandbox rightly refuses. Sandboxed gates are
// tested in test/sandbox-gates.test.ts.
const runGates = (options: RunGatesOptions) => runGatesIn({ sandbox: false, ...options });
const runBaselineGates = (options: Omit<RunGatesOptions, 'timing'>) => runBaselineGatesIn({ sandbox: false, ...options });

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' } });
}

/** A fresh git repository with one committed file (`src.txt`). */
function makeRepo(name = 'repo', parent = makeTempDir('polywave-gates-')): string {
  const root = path.join(parent, name);
  mkdirSync(root, { recursive: true });
  git(root, 'init', '--quiet', '--initial-branch=main');
  git(root, 'config', 'user.name', 'Polywave Test');
  git(root, 'config', 'user.email', 'test@polywave.invalid');
  git(root, 'config', 'commit.gpgsign', 'false');
  writeFileSync(path.join(root, 'src.txt'), 'one\n');
  git(root, 'add', '.');
  git(root, 'commit', '--quiet', '-m', 'initial');
  return root;
}

/** A gate command that appends a line to a counter file outside the repo, so we can count real runs. */
function countingGate(counter: string, extra: Partial<GateSpec> = {}): GateSpec {
  return { type: 'test', command: `echo ran >> '${counter}'; echo gate-output`, required: true, ...extra };
}

function runsOf(counter: string): number {
  return existsSync(counter) ? readFileSync(counter, 'utf8').split('\n').filter(Boolean).length : 0;
}

describe('runGates: E21B parallel groups', () => {
  it('three 2 s gates of one parallel_group finish together and report both failures', async () => {
    const repo = makeRepo();
    const gates: GateSpec[] = [
      { type: 'build', command: 'sleep 2; echo build-ok', required: true, parallel_group: 'checks' },
      { type: 'test', command: 'sleep 2; echo test-broken >&2; exit 3', required: true, parallel_group: 'checks' },
      { type: 'lint', command: 'sleep 2; echo lint-broken; exit 4', required: true, parallel_group: 'checks' },
    ];
    const start = performance.now();
    const run = await runGates({ repoDir: repo, gates, noCache: true, concurrency: 3 });
    const elapsed = performance.now() - start;
    console.info(`[timing] 3 × sleep 2 in one parallel_group: ${Math.round(elapsed)} ms`);
    expect(elapsed).toBeLessThan(4500);
    expect(run.passed).toBe(false);
    expect(run.required_failures).toBe(2);
    expect(run.results.map((result) => [result.type, result.passed, result.exit_code])).toEqual([
      ['build', true, 0],
      ['test', false, 3],
      ['lint', false, 4],
    ]);
    expect(run.results[1]!.output).toContain('test-broken');
    expect(run.results[2]!.output).toContain('lint-broken');
    expect(run.phases).toHaveLength(1);
    expect(run.phases[0]).toMatchObject({ phase: 'VALIDATION', passed: false, skipped: false });
  });

  it('bounds a group by `concurrency`', async () => {
    const repo = makeRepo();
    const gates: GateSpec[] = [1, 2, 3].map((number) => ({ type: 'custom', command: `sleep 0.5; echo ${number}`, required: true, parallel_group: 'g' }));
    const start = performance.now();
    const run = await runGates({ repoDir: repo, gates, noCache: true, concurrency: 1 });
    expect(performance.now() - start).toBeGreaterThanOrEqual(1400);
    expect(run.passed).toBe(true);
  });

  it('gates without a group run one after another, in declaration order', async () => {
    const repo = makeRepo();
    const log = path.join(path.dirname(repo), 'order.log');
    const gates: GateSpec[] = [
      { type: 'custom', command: `sleep 0.3; echo first >> '${log}'`, required: true },
      { type: 'custom', command: `echo second >> '${log}'`, required: true },
    ];
    const run = await runGates({ repoDir: repo, gates, noCache: true });
    expect(run.passed).toBe(true);
    expect(readFileSync(log, 'utf8')).toBe('first\nsecond\n');
  });
});

describe('runGates: E21 phases', () => {
  it('runs PRE_VALIDATION, VALIDATION, POST_VALIDATION in order (empty phase = VALIDATION)', async () => {
    const repo = makeRepo();
    const log = path.join(path.dirname(repo), 'phases.log');
    const gates: GateSpec[] = [
      { type: 'custom', command: `echo post >> '${log}'`, required: true, phase: 'POST_VALIDATION' },
      { type: 'custom', command: `echo validation >> '${log}'`, required: true },
      { type: 'custom', command: `echo pre >> '${log}'`, required: true, phase: 'PRE_VALIDATION' },
    ];
    const run = await runGates({ repoDir: repo, gates, noCache: true });
    expect(readFileSync(log, 'utf8')).toBe('pre\nvalidation\npost\n');
    expect(run.phases.map((phase) => phase.phase)).toEqual(['PRE_VALIDATION', 'VALIDATION', 'POST_VALIDATION']);
    expect(run.results.map((result) => result.phase)).toEqual(['PRE_VALIDATION', 'VALIDATION', 'POST_VALIDATION']);
  });

  it('a failed required PRE_VALIDATION gate stops the later phases (all PRE failures still reported)', async () => {
    const repo = makeRepo();
    const counter = path.join(path.dirname(repo), 'later.count');
    const gates: GateSpec[] = [
      { type: 'format', command: 'echo pre-one-broken; exit 1', required: true, phase: 'PRE_VALIDATION' },
      { type: 'custom', command: 'echo pre-two-broken; exit 2', required: true, phase: 'PRE_VALIDATION' },
      countingGate(counter),
      countingGate(counter, { phase: 'POST_VALIDATION' }),
    ];
    const run = await runGates({ repoDir: repo, gates, noCache: true });
    expect(run.passed).toBe(false);
    expect(runsOf(counter)).toBe(0);
    expect(run.required_failures).toBe(2);
    expect(run.results.slice(0, 2).map((result) => [result.passed, result.skipped, result.exit_code])).toEqual([
      [false, false, 1],
      [false, false, 2],
    ]);
    for (const skipped of run.results.slice(2)) {
      expect(skipped).toMatchObject({ passed: false, skipped: true, from_cache: false });
      expect(skipped.skip_reason).toMatch(/required PRE_VALIDATION gate failed \(format: echo pre-one-broken; exit 1\)/);
    }
    expect(run.phases.map((phase) => [phase.phase, phase.passed, phase.skipped])).toEqual([
      ['PRE_VALIDATION', false, false],
      ['VALIDATION', false, true],
      ['POST_VALIDATION', false, true],
    ]);
  });

  it('an optional PRE_VALIDATION failure does not stop anything', async () => {
    const repo = makeRepo();
    const run = await runGates({
      repoDir: repo,
      noCache: true,
      gates: [
        { type: 'custom', command: 'exit 1', required: false, phase: 'PRE_VALIDATION' },
        { type: 'test', command: 'true', required: true },
      ],
    });
    expect(run.passed).toBe(true);
    expect(run.warnings).toBe(1);
    expect(run.results[1]).toMatchObject({ passed: true, skipped: false });
  });

  it('required: false failures are warnings, not failures of the run', async () => {
    const repo = makeRepo();
    const run = await runGates({
      repoDir: repo,
      noCache: true,
      gates: [
        { type: 'lint', command: 'echo style; exit 1', required: false, parallel_group: 'g' },
        { type: 'test', command: 'echo fine', required: true, parallel_group: 'g' },
      ],
    });
    expect(run.passed).toBe(true);
    expect(run.warnings).toBe(1);
    expect(run.required_failures).toBe(0);
    expect(run.phases[0]!.passed).toBe(true);
    expect(run.results[0]).toMatchObject({ passed: false, required: false, exit_code: 1 });
  });

  it('refuses a fix-mode gate outside PRE_VALIDATION (B009, nothing runs)', async () => {
    const repo = makeRepo();
    const counter = path.join(path.dirname(repo), 'never.count');
    await expect(runGates({ repoDir: repo, gates: [countingGate(counter, { fix: true })] })).rejects.toMatchObject({ code: 'B009_GATE_VALIDATION_FAILED', exitCode: 2 });
    await expect(runGates({ repoDir: repo, gates: [countingGate(counter, { phase: 'LATER' })] })).rejects.toMatchObject({ code: 'B009_GATE_VALIDATION_FAILED' });
    expect(runsOf(counter)).toBe(0);
  });

  it('emits gate-start and gate-result events on the engine bus', async () => {
    const repo = makeRepo();
    const bus = new EventBus();
    const events: PolywaveEvent[] = [];
    bus.subscribe((event) => events.push(event));
    await runGates({ repoDir: repo, noCache: true, events: bus, gates: [{ type: 'test', command: 'true', required: true }] });
    expect(events.map((event) => event.type)).toEqual(['gate-start', 'gate-result']);
    expect(events[0]).toMatchObject({ v: 1, gate: 'test', command: 'true', cwd: repo });
    expect(events[1]).toMatchObject({ v: 1, gate: 'test', passed: true, from_cache: false });
  });
});

describe('runGates: results are data', () => {
  it('a timeout kills the whole process group: sleep 30 with timeout_seconds 1 ends in about 1 s', async () => {
    const repo = makeRepo();
    const marker = path.join(path.dirname(repo), 'grandchild-survived');
    const start = performance.now();
    const run = await runGates({
      repoDir: repo,
      noCache: true,
      gates: [{ type: 'test', command: `(sleep 3 && touch '${marker}') & echo started; sleep 30`, required: true, timeout_seconds: 1 }],
    });
    const elapsed = performance.now() - start;
    console.info(`[timing] sleep 30 with timeout_seconds 1: ${Math.round(elapsed)} ms`);
    expect(elapsed).toBeLessThan(2500);
    expect(run.passed).toBe(false);
    expect(run.results[0]).toMatchObject({ timed_out: true, passed: false, exit_code: -1, signal: 'SIGTERM' });
    expect(run.results[0]!.output).toContain('started');
    expect(run.results[0]!.error).toMatch(/timed out after 1 s/);
    // The background grandchild was in the same process group: it must be gone too.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect(existsSync(marker)).toBe(false);
  });

  it('an AbortSignal stops the running gate and skips the rest', async () => {
    const repo = makeRepo();
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const start = performance.now();
    const run = await runGates({
      repoDir: repo,
      noCache: true,
      signal: controller.signal,
      gates: [
        { type: 'test', command: 'sleep 30', required: true },
        { type: 'lint', command: 'true', required: true },
      ],
    });
    expect(performance.now() - start).toBeLessThan(2500);
    expect(run.canceled).toBe(true);
    expect(run.passed).toBe(false);
    expect(run.results[0]).toMatchObject({ canceled: true, passed: false });
    expect(run.results[1]).toMatchObject({ canceled: true, skipped: true, passed: false, skip_reason: 'run canceled' });
  });

  it('large output keeps head and tail and saves the full log under the git dir (polywave/gate-logs: no gate can write there)', async () => {
    const repo = makeRepo();
    const run = await runGates({
      repoDir: repo,
      noCache: true,
      now: () => new Date('2026-03-04T05:06:07.089Z'),
      gates: [{ type: 'test', command: 'for i in $(seq 1 5000); do echo "line $i"; done; echo oops >&2; exit 1', required: true }],
    });
    const result = run.results[0]!;
    expect(result.output_truncated).toBe(true);
    const lines = result.output.split('\n');
    expect(lines[0]).toBe('line 1');
    expect(lines[99]).toBe('line 100');
    expect(lines[100]).toMatch(/^\.\.\. \[\d+ lines, \d+ bytes omitted; full output: .*\] \.\.\.$/);
    expect(result.output.trimEnd().endsWith('oops')).toBe(true);
    expect(lines.length).toBeLessThanOrEqual(100 + 1 + 200 + 1);
    expect(result.full_output_path).toBe(path.join(realpathSync(repo), '.git', 'polywave', 'gate-logs', '20260304T050607.089Z-test.log'));
    const full = readFileSync(result.full_output_path!, 'utf8');
    expect(full.split('\n')).toHaveLength(5002);
    expect(full).toContain('line 2500\n');
  });

  it('small output is kept whole, stdout and stderr interleaved in order', async () => {
    const repo = makeRepo();
    const run = await runGates({ repoDir: repo, noCache: true, gates: [{ type: 'test', command: 'echo out1; sleep 0.1; echo err1 >&2; sleep 0.1; echo out2', required: true }] });
    expect(run.results[0]).toMatchObject({ output: 'out1\nerr1\nout2\n', output_truncated: false, passed: true, exit_code: 0, signal: null, timed_out: false });
    expect(run.results[0]!.full_output_path).toBeUndefined();
  });

  it('a gate whose directory is missing is a failed result, not an exception', async () => {
    const parent = makeTempDir('polywave-gates-');
    const repo = makeRepo('primary', parent);
    writeFileSync(path.join(parent, 'polywave.config.json'), JSON.stringify({ repos: [{ name: 'gone', path: path.join(parent, 'gone') }] }));
    const run = await runGates({ repoDir: repo, noCache: true, gates: [{ type: 'build', command: 'true', required: true, repo: 'gone' }] });
    expect(run.passed).toBe(false);
    expect(run.results[0]!.error).toMatch(/gone.*is not a directory/);
  });
});

describe('runGates: repo routing (polywave.config.json)', () => {
  it('routes gates to the repo named in polywave.config.json (list and object-map shapes), others to repoDir', async () => {
    const parent = makeTempDir('polywave-gates-');
    const primary = makeRepo('primary', parent);
    const other = makeRepo('other', parent);
    const third = makeRepo('third', parent);
    writeFileSync(path.join(parent, 'polywave.config.json'), JSON.stringify({ repos: [{ name: 'api', path: other }, { name: 'web', path: './third' }] }));
    const gates: GateSpec[] = [
      { type: 'build', command: 'pwd', required: true, repo: 'api' },
      { type: 'build', command: 'pwd', required: true, repo: 'web' },
      { type: 'test', command: 'pwd', required: true },
    ];
    const run = await runGates({ repoDir: primary, gates, noCache: true });
    expect(run.passed).toBe(true);
    expect(run.results.map((result) => result.output.trim())).toEqual([other, third, primary]);
    expect(run.results.map((result) => result.cwd)).toEqual([other, third, primary]);

    writeFileSync(path.join(parent, 'polywave.config.json'), JSON.stringify({ repos: { api: other } }));
    const mapped = await runGates({ repoDir: primary, gates: [gates[0]!], noCache: true });
    expect(mapped.results[0]!.output.trim()).toBe(other);
  });

  it('an unknown repo fails that gate with the known names; the other gates still run', async () => {
    const parent = makeTempDir('polywave-gates-');
    const primary = makeRepo('primary', parent);
    writeFileSync(path.join(parent, 'polywave.config.json'), JSON.stringify({ repos: [{ name: 'api', path: primary }] }));
    const run = await runGates({
      repoDir: primary,
      noCache: true,
      gates: [
        { type: 'build', command: 'true', required: true, repo: 'nowhere' },
        { type: 'test', command: 'true', required: true },
      ],
    });
    expect(run.passed).toBe(false);
    expect(run.results[0]).toMatchObject({ passed: false, skipped: false, exit_code: -1, repo: 'nowhere' });
    expect(run.results[0]!.error).toBe(`gate repo nowhere not found in ${path.join(parent, 'polywave.config.json')} (known repos: [api])`);
    expect(run.results[0]!.output).toContain('gate repo nowhere not found');
    expect(run.results[1]!.passed).toBe(true);
  });
});

describe('runGates: E38 cache', () => {
  it('serves a passing result from the cache in milliseconds; every kind of edit invalidates it', async () => {
    const repo = makeRepo();
    const counter = path.join(path.dirname(repo), 'runs.count');
    const gates = [countingGate(counter, { command: `sleep 0.5; echo ran >> '${counter}'; echo gate-output` })];

    const first = await runGates({ repoDir: repo, gates });
    expect(first.results[0]).toMatchObject({ passed: true, from_cache: false, output: 'gate-output\n' });
    expect(runsOf(counter)).toBe(1);

    const start = performance.now();
    const cached = await runGates({ repoDir: repo, gates });
    const cachedMs = performance.now() - start;
    console.info(`[timing] cached re-run: ${Math.round(cachedMs)} ms (first run ${first.duration_ms} ms)`);
    // The gate sleeps 0.5 s: a cached answer must come back sooner than one run of it, even on a loaded machine.
    expect(cachedMs).toBeLessThan(500);
    expect(runsOf(counter)).toBe(1);
    const head = git(repo, 'rev-parse', 'HEAD').trim();
    expect(cached.results[0]).toMatchObject({ passed: true, from_cache: true, skip_reason: `cached at SHA ${head}`, output: 'gate-output\n', exit_code: 0 });

    // Editing a tracked file (unstaged) invalidates.
    writeFileSync(path.join(repo, 'src.txt'), 'two\n');
    expect((await runGates({ repoDir: repo, gates })).results[0]!.from_cache).toBe(false);
    expect(runsOf(counter)).toBe(2);
    expect((await runGates({ repoDir: repo, gates })).results[0]!.from_cache).toBe(true);

    // Same size, different content: still a different key (diff content, not --stat).
    writeFileSync(path.join(repo, 'src.txt'), 'owt\n');
    expect((await runGates({ repoDir: repo, gates })).results[0]!.from_cache).toBe(false);
    expect(runsOf(counter)).toBe(3);

    // Staging the change (same working tree) invalidates.
    git(repo, 'add', 'src.txt');
    expect((await runGates({ repoDir: repo, gates })).results[0]!.from_cache).toBe(false);
    expect(runsOf(counter)).toBe(4);
    expect((await runGates({ repoDir: repo, gates })).results[0]!.from_cache).toBe(true);

    // Creating an untracked file invalidates, and so does editing it.
    writeFileSync(path.join(repo, 'new.txt'), 'fresh\n');
    expect((await runGates({ repoDir: repo, gates })).results[0]!.from_cache).toBe(false);
    expect(runsOf(counter)).toBe(5);
    expect((await runGates({ repoDir: repo, gates })).results[0]!.from_cache).toBe(true);
    writeFileSync(path.join(repo, 'new.txt'), 'fresh!\n');
    expect((await runGates({ repoDir: repo, gates })).results[0]!.from_cache).toBe(false);
    expect(runsOf(counter)).toBe(6);

    // A commit invalidates.
    git(repo, 'add', '.');
    git(repo, 'commit', '--quiet', '-m', 'second');
    expect((await runGates({ repoDir: repo, gates })).results[0]!.from_cache).toBe(false);
    expect(runsOf(counter)).toBe(7);

    // Ignored files do not count; the cache file itself is not a change.
    writeFileSync(path.join(repo, '.git', 'info', 'exclude'), 'build/\n');
    mkdirSync(path.join(repo, 'build'));
    writeFileSync(path.join(repo, 'build', 'out.bin'), 'artifact');
    expect((await runGates({ repoDir: repo, gates })).results[0]!.from_cache).toBe(true);
    expect(runsOf(counter)).toBe(7);

    // A different command is a different key.
    expect((await runGates({ repoDir: repo, gates: [{ ...gates[0]!, command: `${gates[0]!.command} # v2` }] })).results[0]!.from_cache).toBe(false);
    expect(runsOf(counter)).toBe(8);
  });

  it('entries expire after the TTL (clock injected)', async () => {
    const repo = makeRepo();
    const counter = path.join(path.dirname(repo), 'ttl.count');
    const gates = [countingGate(counter)];
    let now = new Date('2026-01-01T00:00:00Z').getTime();
    const clock = () => new Date(now);
    await runGates({ repoDir: repo, gates, now: clock });
    now += 4 * 60_000 + 59_000;
    expect((await runGates({ repoDir: repo, gates, now: clock })).results[0]!.from_cache).toBe(true);
    now += 2_000; // 5 min 1 s after caching
    expect((await runGates({ repoDir: repo, gates, now: clock })).results[0]!.from_cache).toBe(false);
    expect(runsOf(counter)).toBe(2);
    // A custom TTL.
    now += 11_000;
    expect((await runGates({ repoDir: repo, gates, now: clock, cacheTtlMs: 10_000 })).results[0]!.from_cache).toBe(false);
    expect(runsOf(counter)).toBe(3);
  });

  it('failing results are never cached', async () => {
    const repo = makeRepo();
    const counter = path.join(path.dirname(repo), 'fail.count');
    const gates = [countingGate(counter, { command: `echo ran >> '${counter}'; exit 1` })];
    await runGates({ repoDir: repo, gates });
    const second = await runGates({ repoDir: repo, gates });
    expect(second.results[0]).toMatchObject({ from_cache: false, passed: false });
    expect(runsOf(counter)).toBe(2);
    expect(await new GateCache(repo).size()).toBe(0);
  });

  it('post-merge gates are never served from (or written to) the cache', async () => {
    const repo = makeRepo();
    const counter = path.join(path.dirname(repo), 'post.count');
    const gates = [countingGate(counter, { timing: 'post-merge' })];
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const run = await runGates({ repoDir: repo, gates, timing: 'post-merge' });
      expect(run.results[0]).toMatchObject({ from_cache: false, passed: true, timing: 'post-merge' });
    }
    // Also without a timing filter.
    await runGates({ repoDir: repo, gates });
    expect(runsOf(counter)).toBe(4);
    expect(await new GateCache(repo).size()).toBe(0);
  });

  it('--timing filters gates: pre-merge = empty or pre-merge timing', async () => {
    const repo = makeRepo();
    const gates: GateSpec[] = [
      { type: 'build', command: 'echo a', required: true },
      { type: 'test', command: 'echo b', required: true, timing: 'pre-merge' },
      { type: 'lint', command: 'echo c', required: true, timing: 'post-merge' },
    ];
    expect((await runGates({ repoDir: repo, gates, noCache: true, timing: 'pre-merge' })).results.map((result) => result.type)).toEqual(['build', 'test']);
    expect((await runGates({ repoDir: repo, gates, noCache: true, timing: 'post-merge' })).results.map((result) => result.type)).toEqual(['lint']);
    expect((await runGates({ repoDir: repo, gates, noCache: true })).results).toHaveLength(3);
  });

  it('noCache neither reads nor writes the cache', async () => {
    const repo = makeRepo();
    const counter = path.join(path.dirname(repo), 'nocache.count');
    const gates = [countingGate(counter)];
    await runGates({ repoDir: repo, gates });
    expect(await new GateCache(repo).size()).toBe(1);
    const bypass = await runGates({ repoDir: repo, gates, noCache: true });
    expect(bypass.results[0]!.from_cache).toBe(false);
    expect(runsOf(counter)).toBe(2);
  });

  it('a fix-mode gate invalidates the cache so later gates run on the fixed tree', async () => {
    const repo = makeRepo();
    const counter = path.join(path.dirname(repo), 'fix.count');
    const checkGate = countingGate(counter);
    // Warm the cache for the check gate.
    await runGates({ repoDir: repo, gates: [checkGate] });
    expect(runsOf(counter)).toBe(1);
    expect((await runGates({ repoDir: repo, gates: [checkGate] })).results[0]!.from_cache).toBe(true);

    // The fix gate rewrites only an ignored file (so the tree fingerprint stays the same): the
    // invalidation alone must make the check gate run again.
    writeFileSync(path.join(repo, '.git', 'info', 'exclude'), 'formatted.out\n');
    const fixGate: GateSpec = { type: 'format', command: 'echo fixed > formatted.out', required: true, fix: true, phase: 'PRE_VALIDATION' };
    const run = await runGates({ repoDir: repo, gates: [fixGate, checkGate] });
    expect(run.results.map((result) => [result.type, result.passed, result.from_cache])).toEqual([
      ['format', true, false],
      ['test', true, false],
    ]);
    expect(runsOf(counter)).toBe(2);

    // The fix gate itself is never cached: it runs every time.
    const again = await runGates({ repoDir: repo, gates: [fixGate] });
    expect(again.results[0]!.from_cache).toBe(false);
  });

  it('a format gate without a command uses the detected formatter, or is skipped when none is found', async () => {
    const repo = makeRepo();
    const run = await runGates({ repoDir: repo, noCache: true, gates: [{ type: 'format', required: true }] });
    expect(run.results[0]).toMatchObject({ passed: true, skipped: true, skip_reason: 'no formatter detected' });
  });

  it('docs-only waves skip build/test/lint/format gates as passed', async () => {
    const repo = makeRepo();
    const run = await runGates({
      repoDir: repo,
      noCache: true,
      docsOnly: true,
      gates: [
        { type: 'build', command: 'exit 1', required: true },
        { type: 'custom', command: 'echo still-runs', required: true },
      ],
    });
    expect(run.passed).toBe(true);
    expect(run.results[0]).toMatchObject({ passed: true, skipped: true, skip_reason: 'docs-only wave: no compilable source files changed' });
    expect(run.results[1]).toMatchObject({ passed: true, skipped: false, output: 'still-runs\n' });
  });
});

describe('runBaselineGates (E21A)', () => {
  it('passes with no gates, and reports baseline_verification_failed with the failing commands', async () => {
    const repo = makeRepo();
    const empty = await runBaselineGates({ repoDir: repo, gates: [] });
    expect(empty).toMatchObject({ passed: true, gate_results: [], reason: undefined, failing: [] });

    const gates: GateSpec[] = [
      { type: 'build', command: 'echo compiled', required: true, parallel_group: 'base' },
      { type: 'test', command: 'echo 2 tests failed; exit 1', required: true, parallel_group: 'base' },
      { type: 'lint', command: 'exit 1', required: false, parallel_group: 'base' },
      { type: 'custom', command: 'exit 1', required: true, timing: 'post-merge' },
    ];
    const baseline = await runBaselineGates({ repoDir: repo, gates });
    expect(baseline.passed).toBe(false);
    expect(baseline.reason).toBe('baseline_verification_failed');
    expect(baseline.gate_results.map((result) => result.type)).toEqual(['build', 'test', 'lint']);
    expect(baseline.failing).toEqual([{ type: 'test', command: 'echo 2 tests failed; exit 1', exit_code: 1, output: '2 tests failed\n' }]);
    expect(baseline.commit_sha).toBe(git(repo, 'rev-parse', 'HEAD').trim());

    const green = await runBaselineGates({ repoDir: repo, gates: [gates[0]!] });
    expect(green).toMatchObject({ passed: true, reason: undefined, failing: [] });
    const cached = await runBaselineGates({ repoDir: repo, gates: [gates[0]!] });
    expect(cached.from_cache).toBe(true);
  });
});
