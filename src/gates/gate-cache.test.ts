import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../../test/support/cli.js';
import { makeTempDir } from '../../test/support/temp.js';
import { GateCache, type GateCacheEntry } from './gate-cache.js';

function entry(command: string): Omit<GateCacheEntry, 'cached_at' | 'cached_at_ms'> {
  return { gate_type: 'test', command, cwd: '/repo', head: 'abc', passed: true, exit_code: 0, output: `${command}\n`, output_truncated: false, duration_ms: 5 };
}

describe('GateCache', () => {
  it('stores, reads back and expires entries (injected clock)', async () => {
    const repo = makeTempDir('polywave-cache-');
    let now = Date.parse('2026-01-01T00:00:00Z');
    const cache = new GateCache(repo, { now: () => new Date(now) });
    expect(await cache.get('k1')).toBeUndefined();
    await cache.put('k1', entry('one'));
    expect(await cache.get('k1')).toMatchObject({ command: 'one', cached_at: '2026-01-01T00:00:00.000Z', cached_at_ms: now });
    now += 5 * 60_000 - 1;
    expect(await cache.get('k1')).toBeDefined();
    now += 1;
    expect(await cache.get('k1')).toBeUndefined();
    // Writes prune expired entries.
    await cache.put('k2', entry('two'));
    const file = JSON.parse(readFileSync(cache.filePath, 'utf8')) as { version: number; entries: Record<string, unknown> };
    expect(file.version).toBe(1);
    expect(Object.keys(file.entries)).toEqual(['k2']);
    expect(cache.filePath).toBe(path.join(repo, '.polywave-state', 'gate-cache.json'));
  });

  it('an entry from the future (clock went back) is not trusted', async () => {
    const repo = makeTempDir('polywave-cache-');
    let now = Date.parse('2026-01-01T00:10:00Z');
    const cache = new GateCache(repo, { now: () => new Date(now) });
    await cache.put('k', entry('x'));
    now -= 60_000;
    expect(await cache.get('k')).toBeUndefined();
  });

  it('a corrupt cache file is an empty cache and is repaired by the next write', async () => {
    const repo = makeTempDir('polywave-cache-');
    mkdirSync(path.join(repo, '.polywave-state'));
    writeFileSync(path.join(repo, '.polywave-state', 'gate-cache.json'), '{ not json');
    const cache = new GateCache(repo);
    expect(await cache.get('k')).toBeUndefined();
    await cache.put('k', entry('x'));
    expect(await cache.get('k')).toMatchObject({ command: 'x' });
  });

  it('invalidate drops every entry', async () => {
    const repo = makeTempDir('polywave-cache-');
    const cache = new GateCache(repo);
    await cache.put('a', entry('a'));
    await cache.put('b', entry('b'));
    expect(await cache.size()).toBe(2);
    await cache.invalidate();
    expect(await cache.size()).toBe(0);
  });

  it('many concurrent puts in one process lose nothing', async () => {
    const repo = makeTempDir('polywave-cache-');
    const caches = [new GateCache(repo), new GateCache(repo), new GateCache(repo)];
    await Promise.all(Array.from({ length: 30 }, (_, index) => caches[index % 3]!.put(`key-${index}`, entry(`c${index}`))));
    expect(await new GateCache(repo).size()).toBe(30);
  });
});

// Children run the cache module transpiled from the current sources (its static import graph,
// no type check — tsc checks it elsewhere), like test/store-concurrency.test.ts does for the store.
const buildDirectory = path.join(repoRoot, 'node_modules', '.cache', 'polywave-tests', `gates-${process.pid}`);
afterAll(() => rmSync(buildDirectory, { recursive: true, force: true }));

async function compileCacheForChildren(): Promise<string> {
  rmSync(buildDirectory, { recursive: true, force: true });
  const ts = (await import('typescript')).default;
  const sourceRoot = path.join(repoRoot, 'src');
  const pending = ['gates/gate-cache.ts'];
  const done = new Set<string>();
  while (pending.length > 0) {
    const relative = pending.pop()!;
    if (done.has(relative)) continue;
    done.add(relative);
    const source = readFileSync(path.join(sourceRoot, relative), 'utf8');
    for (const match of source.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+'(\.{1,2}\/[^']+)\.js'/g)) {
      pending.push(path.posix.normalize(path.posix.join(path.posix.dirname(relative), `${match[1]}.ts`)));
    }
    const output = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2023 }, fileName: relative });
    const target = path.join(buildDirectory, relative.replace(/\.ts$/, '.js'));
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, output.outputText);
  }
  const compiled = path.join(buildDirectory, 'gates', 'gate-cache.js');
  if (!existsSync(compiled)) throw new Error('could not transpile gate-cache.ts for child processes');
  return pathToFileURL(compiled).href;
}

const childProgram = `
const { GateCache } = await import(process.env.CACHE_URL);
const id = process.env.WORKER_ID;
const cache = new GateCache(process.env.REPO, { lockTimeoutMs: 60000 });
process.stdout.write('ready\\n');
await new Promise((resolve) => process.stdin.once('data', resolve));
await Promise.all(Array.from({ length: Number(process.env.PER_WORKER) }, (_, index) =>
  cache.put(id + '-' + index, { gate_type: 'test', command: id + '-' + index, cwd: '/r', head: 'h', passed: true, exit_code: 0, output: 'x'.repeat(2000), output_truncated: false, duration_ms: 1 })));
process.stdout.write('done\\n');
`;

describe('GateCache across processes', () => {
  it('several processes writing gate-cache.json at once lose no entries', async () => {
    const cacheUrl = await compileCacheForChildren();
    const repo = makeTempDir('polywave-cache-procs-');
    const workers = 6;
    const perWorker = 8;
    const children = Array.from({ length: workers }, (_, index) =>
      spawn(process.execPath, ['--input-type=module', '-e', childProgram], {
        env: { ...process.env, CACHE_URL: cacheUrl, WORKER_ID: `w${index}`, REPO: repo, PER_WORKER: String(perWorker) },
        stdio: ['pipe', 'pipe', 'pipe'],
      }),
    );
    const outputs = children.map((child) => {
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      return {
        ready: new Promise<void>((resolve) => {
          const check = (): void => {
            if (stdout.includes('ready')) resolve();
          };
          child.stdout.on('data', check);
        }),
        exit: new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr }))),
      };
    });
    await Promise.all(outputs.map((output) => output.ready));
    // Release them all at once.
    for (const child of children) child.stdin.end('go\n');
    const exits = await Promise.all(outputs.map((output) => output.exit));
    for (const exit of exits) expect(exit.code, exit.stderr).toBe(0);

    const file = JSON.parse(readFileSync(path.join(repo, '.polywave-state', 'gate-cache.json'), 'utf8')) as { entries: Record<string, unknown> };
    expect(Object.keys(file.entries)).toHaveLength(workers * perWorker);
    for (let worker = 0; worker < workers; worker += 1) {
      for (let index = 0; index < perWorker; index += 1) expect(file.entries[`w${worker}-${index}`]).toBeDefined();
    }
    // No lock or temp files left behind.
    expect(readdirSync(path.join(repo, '.polywave-state')).sort()).toEqual(['gate-cache.json']);
  });
});
