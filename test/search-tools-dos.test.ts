/**
 * DoS REPRODUCTION (outside attack X21-02, 2026-12-03): grep ran the agent's pattern on V8's linear-time engine on
 * the orchestrator's MAIN thread. The engine costs pattern size × text: a 1,000-alternative pattern (~7 KB) on one
 * 200 KB line took 54 s, run-wave froze and no agent's timeout fired. Glob's brace scan was O(n²) in unmatched `{`
 * (80,000 → 8 s). Now: patterns over 1,000 characters are refused, a line is matched on its first 4,096 characters,
 * and matching that could take long runs in a worker terminated at the call's deadline. Each case measures how late
 * a main-thread timer fires during the call (the other agents' timers, lock renewals): it must stay under 1.5 s (a freeze is the whole match).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestRepo } from './support/git-repo.js';
import { createJail } from '../src/agents/jail/jail.js';
import { createAgentTools, runToolCall } from '../src/agents/tools/index.js';
import { closeSearchWorkers, searchWorkersStarted } from '../src/agents/tools/search-matcher.js';
import { globToRegExp } from '../src/agents/tools/shared.js';
import type { AgentToolName, ToolContext } from '../src/agents/tools/types.js';

afterAll(() => closeSearchWorkers());

const branch = 'polywave/dos/wave1-agent-A';

async function fixture(options: { toolTimeoutMs?: number; signal?: AbortSignal } = {}) {
  const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n' } });
  const wt = repo.sibling('wt');
  await repo.git.worktreeAdd({ path: wt, branch, base: 'HEAD', createBranch: true });
  const jail = await createJail({ root: wt, ownedFiles: ['src/a.ts'], branch }, { env: repo.env });
  const context: ToolContext = {
    jail,
    env: repo.env,
    signal: options.signal ?? new AbortController().signal,
    toolTimeoutMs: options.toolTimeoutMs ?? 20_000,
    maxToolOutputBytes: 1_000_000,
    branch,
  };
  const tools = new Map(createAgentTools().map((tool) => [tool.name, tool]));
  let counter = 0;
  const observer = { onEvent: () => undefined };
  const call = (tool: AgentToolName, input: unknown) => runToolCall(tools.get(tool)!, input, context, observer, `call-${(counter += 1)}`);
  const write = (relative: string, content: string) => {
    mkdirSync(path.dirname(path.join(wt, relative)), { recursive: true });
    writeFileSync(path.join(wt, relative), content);
  };
  return { wt, call, write };
}

/** Runs `work` while a 10 ms timer ticks on this (the main) thread; returns the result, the duration and the timer's worst lateness. */
async function measured<T>(work: () => Promise<T>): Promise<{ result: T; elapsedMs: number; worstLatenessMs: number; ticks: number }> {
  let last = performance.now();
  let worstLatenessMs = 0;
  let ticks = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    worstLatenessMs = Math.max(worstLatenessMs, now - last - 10);
    last = now;
    ticks += 1;
  }, 10);
  const started = performance.now();
  try {
    const result = await work();
    const elapsedMs = performance.now() - started;
    // the last stretch counts too (a freeze that ended with the call)
    worstLatenessMs = Math.max(worstLatenessMs, performance.now() - last - 10);
    return { result, elapsedMs, worstLatenessMs, ticks };
  } finally {
    clearInterval(timer);
  }
}

/** The attack's pattern: `(?:abc0|abd1|…)x` with `count` alternatives, none of which matches `abab…`. */
function alternation(count: number): string {
  return `(?:${Array.from({ length: count }, (_, index) => `ab${String.fromCharCode(99 + (index % 20))}${index}`).join('|')})x`;
}

/**
 * A frozen main thread is late by the whole match (19–103 s before the fix); a busy CI machine (vitest's workers
 * on 2 cores) makes a healthy 10 ms timer late by a few hundred ms. The bound tells the two apart.
 */
const latenessLimitMs = 1_500;

describe('grep and glob cannot freeze the orchestrator (outside attack X21-02)', () => {
  it('the attack: a 7 KB alternation on a 200 KB line is refused at once with a message the model can act on', async () => {
    const f = await fixture();
    f.write('src/a2.ts', `// ${'ab'.repeat(100_000)}\n`);
    const pattern = alternation(1000);
    expect(pattern.length).toBeGreaterThan(6800);
    const run = await measured(() => f.call('grep', { pattern, path: 'src/a2.ts' }));
    expect(run.result.isError).toBe(true);
    expect(run.result.output).toMatch(/^grep: the pattern is longer than 1000 characters \(\d+\)/);
    expect(run.elapsedMs).toBeLessThan(10_000);
    expect(run.worstLatenessMs).toBeLessThan(latenessLimitMs);
  });

  it('a slow pattern under the cap runs off the main thread and is stopped at the deadline; the main thread\'s timer keeps firing', async () => {
    const f = await fixture({ toolTimeoutMs: 3_000 });
    // the attack's 200 KB line, then 4 KB lines: ~175 ms each for this 770-character alternation, ~50 s in all
    f.write('src/a2.ts', `// ${'ab'.repeat(100_000)}\n${`${'ab'.repeat(2048)}\n`.repeat(300)}`);
    const pattern = alternation(125);
    expect(pattern.length).toBeLessThanOrEqual(1000);
    const before = searchWorkersStarted();
    const run = await measured(() => f.call('grep', { pattern, path: 'src/a2.ts' }));
    expect(run.result.isError).toBe(true);
    expect(run.result.output).toBe('grep stopped after 3 s: narrow the pattern or the path.');
    expect(run.elapsedMs).toBeGreaterThanOrEqual(2_900);
    expect(run.elapsedMs).toBeLessThan(15_000);
    expect(run.worstLatenessMs).toBeLessThan(latenessLimitMs);
    expect(run.ticks).toBeGreaterThan(20);
    expect(searchWorkersStarted()).toBeGreaterThan(before);
    // the worker was terminated; the next call works
    f.write('src/b.ts', 'export const b = "abx";\n');
    expect((await f.call('grep', { pattern: 'abx', path: 'src/b.ts' })).output).toBe('src/b.ts:1: export const b = "abx";');
  });

  it('an aborted call ends its worker at once', async () => {
    const controller = new AbortController();
    const f = await fixture({ signal: controller.signal });
    f.write('src/a2.ts', `${'ab'.repeat(2048)}\n`.repeat(300));
    setTimeout(() => controller.abort(), 300);
    const run = await measured(() => f.call('grep', { pattern: alternation(125), path: 'src' }));
    expect(run.result).toMatchObject({ isError: true, output: 'grep was aborted.' });
    expect(run.elapsedMs).toBeLessThan(8_000);
    expect(run.worstLatenessMs).toBeLessThan(latenessLimitMs);
  });

  it('80,000 `{` in a glob return at once with an error (glob and grep\'s glob filter); the brace scan itself is linear', async () => {
    const f = await fixture();
    const bomb = `${'{'.repeat(80_000)}a`;
    const run = await measured(async () => [await f.call('glob', { pattern: bomb }), await f.call('grep', { pattern: 'x', glob: bomb })]);
    expect(run.result[0]).toMatchObject({ isError: true, output: expect.stringMatching(/^glob: the pattern is longer than 1000 characters \(80001\)/) });
    expect(run.result[1]).toMatchObject({ isError: true, output: expect.stringMatching(/^grep: the glob is longer than 1000 characters \(80001\)/) });
    expect(run.elapsedMs).toBeLessThan(5_000);
    expect(run.worstLatenessMs).toBeLessThan(latenessLimitMs);
    // without the cap: one pass per brace or bracket (it was O(n²): 30,000 `{` took ~1.7 s unloaded, 80,000 8 s), the meaning unchanged
    const started = performance.now();
    expect(globToRegExp(`${'{'.repeat(30_000)}a`).test(`${'{'.repeat(30_000)}a`)).toBe(true);
    expect(globToRegExp(`${'['.repeat(30_000)}a`).test(`${'['.repeat(30_000)}a`)).toBe(true);
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(globToRegExp('{a,{b,c}}/*.{ts,[jt]s}').source).toBe('^(?:a|(?:b|c))\\/[^/]*\\.(?:ts|[jt]s)$');
  });

  it('ordinary results are unchanged: small calls stay on the main thread, large ones go through the worker with the same answers', async () => {
    const f = await fixture();
    f.write('src/b.ts', 'export const b = 2; // TODO\n');
    const before = searchWorkersStarted();
    expect((await f.call('grep', { pattern: 'TODO', path: 'src/b.ts' })).output).toBe('src/b.ts:1: export const b = 2; // TODO');
    expect((await f.call('grep', { pattern: 'EXPORT', ignore_case: true, glob: '*.ts' })).output).toBe('src/a.ts:1: export const a = 1;\nsrc/b.ts:1: export const b = 2; // TODO');
    expect((await f.call('glob', { pattern: 'src/*.ts' })).output).toBe('src/a.ts\nsrc/b.ts');
    expect(searchWorkersStarted()).toBe(before);

    // a large file: through the worker, the lines a plain regex finds, past 500 the usual note
    const big = Array.from({ length: 700 }, (_, index) => (index % 7 === 3 ? `const hit${index} = find(${index});` : `const other${index} = ${index};`));
    f.write('src/big.ts', `${big.join('\n')}\n`);
    const expected = big.flatMap((line, index) => (/hit\d+ = find/.test(line) ? [`src/big.ts:${index + 1}: ${line}`] : []));
    expect(expected.length).toBe(100);
    const bigRun = await measured(() => f.call('grep', { pattern: 'hit\\d+ = find', path: 'src/big.ts' }));
    expect(bigRun.result.output).toBe(expected.join('\n'));
    expect(searchWorkersStarted()).toBeGreaterThan(before);
    expect(bigRun.worstLatenessMs).toBeLessThan(latenessLimitMs);
    const many = await f.call('grep', { pattern: 'const', path: 'src/big.ts' });
    const manyLines = many.output.split('\n');
    expect(manyLines.slice(0, 500)).toEqual(big.slice(0, 500).map((line, index) => `src/big.ts:${index + 1}: ${line}`));
    expect(manyLines.slice(500)).toEqual(['[grep: showing the first 500 of at least 501 matches; narrow the pattern or path]']);

    // a line longer than 4,096 characters is matched on its start only, and the result says so
    f.write('src/long.ts', `${'x'.repeat(10)}EARLY${'y'.repeat(4500)}LATE\n`);
    const early = await f.call('grep', { pattern: 'EARLY', path: 'src/long.ts' });
    expect(early.output).toBe(`src/long.ts:1: ${'x'.repeat(10)}EARLY${'y'.repeat(385)}…\n[grep: 1 line longer than 4096 characters searched in their first 4096 only]`);
    expect((await f.call('grep', { pattern: 'LATE', path: 'src/long.ts' })).output).toBe('No matches.\n[grep: 1 line longer than 4096 characters searched in their first 4096 only]');

    // glob over more entries than one batch: walk order, the first 1,000 matches and the usual note
    const names = Array.from({ length: 2500 }, (_, index) => `f${String(index).padStart(4, '0')}.${index % 2 === 0 ? 'ts' : 'md'}`);
    for (const name of names) f.write(`many/${name}`, '');
    const globbed = await f.call('glob', { pattern: '*.ts', path: 'many' });
    expect(globbed.output.split('\n')).toEqual([...names.filter((name) => name.endsWith('.ts')).slice(0, 1000).map((name) => `many/${name}`), '[glob: stopped after 1000 matches; narrow the pattern]']);
    const mdNames = names.filter((name) => name.endsWith('.md') && name < 'f0100');
    expect((await f.call('glob', { pattern: 'many/f00*.md' })).output).toBe(mdNames.map((name) => `many/${name}`).join('\n'));
  });
});
