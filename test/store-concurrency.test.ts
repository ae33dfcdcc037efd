import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildSync } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseYamlSafe, toPlain } from '../src/protocol/yaml/index.js';
import { resolveLockLocation, updateFileLocked } from '../src/store/index.js';
import { repoRoot } from './support/cli.js';
import { makeTempDir } from './support/temp.js';

// The children run the compiled store and YAML editor. We compile just that module graph from
// the current sources into node_modules/.cache (so `yaml` resolves), instead of trusting a
// possibly stale dist/.
const buildDirectory = path.join(repoRoot, 'node_modules', '.cache', 'polywave-tests', `store-${process.pid}`);
const storeUrl = pathToFileURL(path.join(buildDirectory, 'store', 'index.js')).href;
const yamlUrl = pathToFileURL(path.join(buildDirectory, 'protocol', 'yaml', 'index.js')).href;

function compileForChildren(): void {
  rmSync(buildDirectory, { recursive: true, force: true });
  mkdirSync(buildDirectory, { recursive: true });
  // esbuild (the bundler of the CLI), not tsc: the same sources in ~0.1 s instead of ~10 s of CPU.
  buildSync({
    entryPoints: [path.join(repoRoot, 'src', 'store', 'index.ts'), path.join(repoRoot, 'src', 'protocol', 'yaml', 'index.ts')],
    outdir: buildDirectory,
    outbase: path.join(repoRoot, 'src'),
    bundle: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'silent',
  });
  if (!existsSync(path.join(buildDirectory, 'store', 'index.js'))) throw new Error('could not compile the store for child processes');
}

const childProgram = `
const { updateFileLocked } = await import(process.env.STORE_URL);
const { applyEdits } = await import(process.env.YAML_URL);
const id = process.env.AGENT_ID;
process.stdout.write('ready\\n');
await new Promise((resolve) => process.stdin.once('data', resolve));
await updateFileLocked(process.env.TARGET, async (current) => {
  // Widen the read-modify-write window so that an unlocked writer would lose updates.
  await new Promise((resolve) => setTimeout(resolve, Math.random() * 5));
  return applyEdits(current, [{ path: ['completion_reports', id], value: { status: 'complete', commit: id.toLowerCase(), files_changed: ['pkg/' + id + '.go'] } }]);
}, { lockTimeoutMs: 60000 });
process.stdout.write('done\\n');
process.exit(0);
`;

const spawned = new Set<ChildProcess>();

function startChild(environment: Record<string, string>, program: string): { child: ChildProcess; ready: Promise<void>; exit: Promise<{ code: number | null; stderr: string }> } {
  const child = spawn(process.execPath, ['--input-type=module', '-e', program], {
    env: { ...process.env, ...environment },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  spawned.add(child);
  let stderr = '';
  let stdout = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      if (stdout.includes('ready') || stdout.includes('locked')) resolve();
    });
    child.once('exit', () => reject(new Error(`child exited before it was ready: ${stderr}`)));
  });
  ready.catch(() => undefined);
  const exit = new Promise<{ code: number | null; stderr: string }>((resolve) => child.once('close', (code) => resolve({ code, stderr })));
  return { child, ready, exit };
}

describe('cross-process manifest updates', () => {
  const directory = makeTempDir('polywave-concurrency-');

  beforeAll(() => {
    compileForChildren();
    return () => {
      // A failed or timed-out test must not leave writers running.
      for (const child of spawned) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      rmSync(buildDirectory, { recursive: true, force: true });
    };
  }, 180_000);

  it('50 processes each add a completion report to the same manifest at the same time; none is lost', async () => {
    const target = path.join(directory, 'IMPL-concurrency.yaml');
    const original = '# manifest written by the test\ntitle: Concurrency\nfeature_slug: concurrency\nstate: WAVE_EXECUTING\nwaves:\n    - number: 1\n      agents:\n        - id: A\n          task: t\n';
    writeFileSync(target, original);
    const ids = Array.from({ length: 50 }, (_, index) => `R${String(index).padStart(2, '0')}`);
    const children = ids.map((id) => startChild({ STORE_URL: storeUrl, YAML_URL: yamlUrl, AGENT_ID: id, TARGET: target }, childProgram));
    await Promise.all(children.map((entry) => entry.ready));
    const start = performance.now();
    for (const entry of children) entry.child.stdin?.write('go\n');
    const results = await Promise.all(children.map((entry) => entry.exit));
    const elapsed = performance.now() - start;
    for (const result of results) expect(result.code, result.stderr).toBe(0);

    const text = readFileSync(target, 'utf8');
    expect(text.startsWith(original)).toBe(true);
    const parsed = parseYamlSafe(text);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.findings).toEqual([]);
    const reports = (toPlain(parsed.document) as { completion_reports: Record<string, { commit: string }> }).completion_reports;
    expect(Object.keys(reports).sort()).toEqual(ids);
    for (const id of ids) expect(reports[id]?.commit).toBe(id.toLowerCase());
    expect(readdirSync(directory).filter((name) => name !== 'IMPL-concurrency.yaml')).toEqual([]);
    console.log(`50 concurrent locked updates finished in ${Math.round(elapsed)} ms`);
  }, 300_000);

  it('8 processes incrementing one counter 40 times each lose no increment (lock churn)', async () => {
    const target = path.join(directory, 'counter.txt');
    writeFileSync(target, '0\n');
    const program = `
      const { updateFileLocked } = await import(process.env.STORE_URL);
      process.stdout.write('ready\\n');
      await new Promise((resolve) => process.stdin.once('data', resolve));
      for (let index = 0; index < 40; index += 1) {
        await updateFileLocked(process.env.TARGET, async (current) => {
          const value = Number(current.trim());
          if (Math.random() < 0.3) await new Promise((resolve) => setTimeout(resolve, Math.random() * 3));
          return String(value + 1) + '\\n';
        }, { lockTimeoutMs: 60000 });
      }
      process.exit(0);`;
    const children = Array.from({ length: 8 }, () => startChild({ STORE_URL: storeUrl, TARGET: target }, program));
    await Promise.all(children.map((entry) => entry.ready));
    for (const entry of children) entry.child.stdin?.write('go\n');
    const results = await Promise.all(children.map((entry) => entry.exit));
    for (const result of results) expect(result.code, result.stderr).toBe(0);
    expect(readFileSync(target, 'utf8')).toBe('320\n');
    expect(readdirSync(directory).filter((name) => name.startsWith('counter'))).toEqual(['counter.txt']);
  }, 300_000);

  it('a process killed while holding the lock releases it at once (kernel lock): the next writer proceeds, nothing left beside the file', async () => {
    const target = path.join(directory, 'IMPL-stale.yaml');
    writeFileSync(target, 'state: WAVE_PENDING\n');
    const holder = startChild(
      { STORE_URL: storeUrl, TARGET: target },
      `const { withFileLock } = await import(process.env.STORE_URL);
       await withFileLock(process.env.TARGET, async () => { process.stdout.write('locked\\n'); await new Promise(() => setInterval(() => {}, 1000)); });`,
    );
    await holder.ready;
    const location = await resolveLockLocation(target);
    expect(existsSync(location.lockPath)).toBe(true);
    expect(location.lockPath.startsWith(directory)).toBe(false);
    holder.child.kill('SIGKILL');
    await holder.exit;

    const start = performance.now();
    const result = await updateFileLocked(target, (current) => current.replace('WAVE_PENDING', 'WAVE_EXECUTING'), { lockTimeoutMs: 5000 });
    expect(performance.now() - start).toBeLessThan(2000);
    expect(result.changed).toBe(true);
    expect(readFileSync(target, 'utf8')).toBe('state: WAVE_EXECUTING\n');
    expect(readdirSync(directory).filter((name) => name.includes('IMPL-stale') && name !== 'IMPL-stale.yaml')).toEqual([]);
  }, 60_000);
});
