import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CommandIo } from '../src/cli/io.js';
import { main } from '../src/cli/main.js';
import { parseImpl } from '../src/protocol/parse-impl.js';
import { binPath, corpusRoot, repoRoot, runCli } from './support/cli.js';
import { listYamlFiles } from './support/cli-assert.js';
import { rotatingShare } from './support/rotation.js';

/**
 * The cheap CLI call (issue 13): hooks run `validate`, `check-completion`, `scan-stubs` and
 * `list-impls` on every write. bin/polywave.js runs the esbuild bundle (dist/bundle/, built by
 * `npm run build`); these tests guard, without timing anything, that
 * - a call loads only what its command needs (no agent runtime, engine, SDKs, WebAssembly
 *   parsers; no YAML or zod for a stub scan), traced through the ESM loader;
 * - the bundle answers exactly like the per-module build on the whole corpus (same stdout,
 *   stderr and exit code), and the real binary like both.
 * bench/cli-calls.mjs measures the time.
 */
const bundleDir = path.join(repoRoot, 'dist', 'bundle');
const implDir = path.join(corpusRoot, 'polywave-go', 'IMPL');
const largest = path.join(implDir, 'complete', 'IMPL-engine-review-fixes.yaml');
const implFiles = listYamlFiles(corpusRoot).filter((file) => !file.split(path.sep).includes('PROGRAM'));
const stubFiles = ['src/analysis/stubs.ts', 'src/analysis/stubs.test.ts', 'src/protocol/rules/index.ts', 'test/finalize-wave.test.ts'];

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the per-module CLI (src, through vitest) in-process with a recording io. */
async function runModules(args: string[], cwd: string): Promise<Outcome> {
  let stdout = '';
  let stderr = '';
  const io: CommandIo = {
    cwd,
    env: {},
    now: () => new Date('2026-01-01T00:00:00Z'),
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
    readStdin: async () => '',
  };
  const code = await main(args, io);
  return { code, stdout, stderr };
}

/** Runs the bundled CLI's main() for every call in one child process (test/support/run-bundled-main.mjs). */
function runBundled(calls: Array<{ args: string[]; cwd: string }>): Promise<Outcome[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(repoRoot, 'test', 'support', 'run-bundled-main.mjs')], { cwd: repoRoot, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`run-bundled-main exited ${code}: ${stderr}`));
      else resolve(JSON.parse(stdout) as Outcome[]);
    });
    child.stdin.end(JSON.stringify(calls));
  });
}

/** The four hook commands on the corpus: every IMPL manifest through validate and check-completion. */
const corpusSlice = rotatingShare(implFiles, 1 / 3);
function corpusCalls(): Array<{ args: string[]; cwd: string }> {
  const calls: Array<{ args: string[]; cwd: string }> = [];
  // Per-file calls on a third of the corpus per run, rotating by day (every file every three days;
  // POLYWAVE_TEST_FULL=1: all): each costs a validate in both builds. list-impls below reads all of it.
  for (const file of corpusSlice.items) {
    calls.push({ args: ['validate', file], cwd: corpusRoot });
    const reports = Object.keys(parseImpl(readFileSync(file, 'utf8')).manifest?.completion_reports ?? {});
    for (const agent of new Set([reports[0] ?? 'A', 'Z'])) calls.push({ args: ['check-completion', file, '--agent', agent], cwd: corpusRoot });
  }
  calls.push({ args: ['list-impls', '--dir', implDir], cwd: repoRoot });
  calls.push({ args: ['list-impls', '--dir', implDir, '--include-complete'], cwd: repoRoot });
  calls.push({ args: ['list-impls', '--dir', path.join(implDir, 'complete')], cwd: repoRoot });
  calls.push({ args: ['list-impls'], cwd: corpusRoot });
  calls.push({ args: ['scan-stubs', ...stubFiles], cwd: repoRoot });
  calls.push({ args: ['scan-stubs', 'no-such-file.ts'], cwd: repoRoot });
  calls.push({ args: ['validate', path.join(corpusRoot, 'no-such-manifest.yaml')], cwd: repoRoot });
  calls.push({ args: ['check-completion', largest], cwd: repoRoot });
  calls.push({ args: ['validate'], cwd: repoRoot });
  calls.push({ args: ['valdate', largest], cwd: repoRoot });
  return calls;
}

/** Runs the binary with the ESM loader traced; returns every module URL it loaded. */
async function loadedModules(args: string[], cwd: string): Promise<{ urls: string[]; code: number | null }> {
  const directory = mkdtempSync(path.join(os.tmpdir(), 'polywave-trace-'));
  const traceFile = path.join(directory, 'modules.txt');
  try {
    const code = await new Promise<number | null>((resolve, reject) => {
      const child = spawn(process.execPath, ['--import', path.join(repoRoot, 'test', 'support', 'trace-modules.mjs'), binPath, ...args], {
        cwd,
        env: { ...process.env, POLYWAVE_TRACE_MODULES: traceFile },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      child.on('error', reject);
      child.on('close', resolve);
    });
    return { urls: readFileSync(traceFile, 'utf8').split('\n').filter((line) => line.length > 0), code };
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

/** The sources (src/… files and package names) that went into the bundle files a call loaded. */
function bundledInputs(urls: string[]): { chunks: string[]; sources: Set<string>; packages: Set<string> } {
  const metafile = JSON.parse(readFileSync(path.join(bundleDir, 'meta.json'), 'utf8')) as { outputs: Record<string, { inputs: Record<string, unknown> }> };
  const chunks = urls.filter((url) => url.startsWith('file:') && url.includes('/dist/bundle/'));
  const sources = new Set<string>();
  const packages = new Set<string>();
  for (const url of chunks) {
    const output = metafile.outputs[`dist/bundle/${url.slice(url.lastIndexOf('/') + 1)}`];
    expect(output, url).toBeDefined();
    for (const input of Object.keys(output!.inputs)) {
      const packageMatch = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input);
      if (packageMatch) packages.add(packageMatch[1]!);
      else if (input.startsWith('src/')) sources.add(input);
    }
  }
  return { chunks, sources, packages };
}

const heavyDirectories = ['src/agents/', 'src/orchestrator/', 'src/engine/', 'src/gates/', 'src/server/', 'src/demo/'];

describe('cheap CLI calls: what a hook call loads (issue 13)', () => {
  it('the bundle is built (npm run build) beside the per-module build', () => {
    expect(existsSync(path.join(bundleDir, 'main.js')), 'dist/bundle/main.js missing: run `npm run build`').toBe(true);
    expect(existsSync(path.join(bundleDir, 'meta.json'))).toBe(true);
    expect(existsSync(path.join(repoRoot, 'dist', 'cli', 'main.js'))).toBe(true);
  });

  const cases: Array<{ name: string; args: string[]; cwd: string; yaml: boolean }> = [
    { name: 'validate', args: ['validate', largest], cwd: repoRoot, yaml: true },
    { name: 'check-completion', args: ['check-completion', largest, '--agent', 'L'], cwd: repoRoot, yaml: true },
    { name: 'scan-stubs', args: ['scan-stubs', ...stubFiles], cwd: repoRoot, yaml: false },
    { name: 'list-impls', args: ['list-impls', '--dir', implDir], cwd: repoRoot, yaml: true },
  ];
  for (const testCase of cases) {
    it(`${testCase.name}: the bundle only — no agent runtime, engine, SDK or WebAssembly parser${testCase.yaml ? '' : ', no YAML or zod'}`, async () => {
      const { urls, code } = await loadedModules(testCase.args, testCase.cwd);
      expect(code).toBe(0);
      // Everything outside the bundle that was loaded: only the entry script and Node built-ins.
      const outside = urls.filter((url) => !url.startsWith('node:') && !url.includes('/dist/bundle/'));
      expect(outside).toEqual([`file://${binPath}`]);
      const { chunks, sources, packages } = bundledInputs(urls);
      expect(chunks[0]).toMatch(/\/dist\/bundle\/main\.js$/);
      expect([...sources].filter((source) => heavyDirectories.some((directory) => source.startsWith(directory)))).toEqual([]);
      expect([...packages].sort()).toEqual(testCase.yaml ? ['commander', 'js-yaml', 'yaml', 'zod'] : ['commander']);
      expect(sources.has('src/protocol/schema/impl-schema.ts')).toBe(testCase.yaml);
    });
  }
});

describe('cheap CLI calls: Node built-ins a hook call does not need are not loaded (issue 13)', () => {
  // node:child_process and node:crypto are the costliest built-ins to load; the bundle loads them on
  // first use (scripts/bundle-cli.mjs, lazy-builtins). None of the four hook commands uses them.
  const report = 'data:text/javascript,process.on("exit", () => process.stderr.write("\\nBUILTINS " + JSON.stringify(process.moduleLoadList.filter((entry) => entry.startsWith("NativeModule ")).map((entry) => entry.slice(13))) + "\\n"))';
  const cases = [
    ['validate', largest],
    ['check-completion', largest, '--agent', 'L'],
    ['scan-stubs', ...stubFiles],
    ['list-impls', '--dir', implDir],
  ];
  for (const args of cases) {
    it(`${args[0]}: neither node:child_process nor node:crypto`, async () => {
      const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
        const child = spawn(process.execPath, ['--import', report, binPath, ...args], { cwd: repoRoot, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, POLYWAVE_NO_CACHE: '1' } });
        let text = '';
        child.stderr.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        child.on('error', reject);
        child.on('close', (exitCode) => resolve({ code: exitCode, stderr: text }));
      });
      expect(code).toBe(0);
      const loaded = JSON.parse(/BUILTINS (.*)/.exec(stderr)![1]!) as string[];
      expect(loaded).toContain('fs');
      expect(loaded.filter((name) => name === 'child_process' || name === 'crypto')).toEqual([]);
    });
  }
});

describe('cheap CLI calls: list-impls reads only what it lists (issue 13)', () => {
  it('archived manifests are not read unless --include-complete (an unreadable one is skipped only then)', async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'polywave-list-'));
    try {
      const implRoot = path.join(root, 'docs', 'IMPL');
      mkdirSync(path.join(implRoot, 'complete'), { recursive: true });
      copyFileSync(path.join(implDir, 'IMPL-impl-rollback.yaml'), path.join(implRoot, 'IMPL-impl-rollback.yaml'));
      copyFileSync(largest, path.join(implRoot, 'complete', 'IMPL-engine-review-fixes.yaml'));
      writeFileSync(path.join(implRoot, 'complete', 'IMPL-broken.yaml'), 'title: [unclosed\n');
      const pending = JSON.parse((await runModules(['list-impls'], root)).stdout) as { impls: Array<{ feature_slug: string }>; skipped?: unknown[] };
      expect(pending).toEqual({ impls: [expect.objectContaining({ feature_slug: 'impl-rollback' })] });
      const all = JSON.parse((await runModules(['list-impls', '--include-complete'], root)).stdout) as { impls: Array<{ feature_slug: string }>; skipped?: Array<{ path: string }> };
      expect(all.impls.map((impl) => impl.feature_slug)).toEqual(['impl-rollback', 'engine-review-fixes']);
      expect(all.skipped?.map((entry) => path.basename(entry.path))).toEqual(['IMPL-broken.yaml']);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('cheap CLI calls: list-impls keeps parse results between calls (issue 13)', () => {
  it('an unchanged manifest is not parsed again; a changed, new or removed one is; POLYWAVE_NO_CACHE=1 turns it off', async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'polywave-list-cache-'));
    try {
      const implRoot = path.join(root, 'docs', 'IMPL');
      const tmp = path.join(root, 'tmp');
      mkdirSync(path.join(implRoot, 'complete'), { recursive: true });
      mkdirSync(tmp);
      const rollback = path.join(implRoot, 'IMPL-impl-rollback.yaml');
      copyFileSync(path.join(implDir, 'IMPL-impl-rollback.yaml'), rollback);
      copyFileSync(largest, path.join(implRoot, 'complete', 'IMPL-engine-review-fixes.yaml'));
      writeFileSync(path.join(implRoot, 'complete', 'IMPL-broken.yaml'), 'title: [unclosed\n');
      // Files changed in the last second are parsed but never stored (timestamp granularity).
      await new Promise((resolve) => setTimeout(resolve, 1100));
      const env = { TMPDIR: tmp };
      const args = ['list-impls', '--include-complete'];
      const cacheDir = path.join(tmp, `polywave-${process.getuid!()}`);
      const cacheFiles = (): string[] => (existsSync(cacheDir) ? readdirSync(cacheDir) : []);

      const expected = await runModules(args, root);
      expect(JSON.parse(expected.stdout).impls).toHaveLength(2);
      const first = await runCli(args, { cwd: root, env });
      expect({ code: first.code, stdout: first.stdout, stderr: first.stderr }).toEqual(expected);
      expect(cacheFiles()).toHaveLength(1);
      const cacheFile = path.join(cacheDir, cacheFiles()[0]!);
      const cache = JSON.parse(readFileSync(cacheFile, 'utf8')) as { code: string; entries: Record<string, { outcome: Record<string, unknown> }> };
      expect(cache.code).toMatch(/\/dist\/bundle\/[\w-]+\.js$/);
      expect(Object.keys(cache.entries).map((file) => path.basename(file)).sort()).toEqual(['IMPL-broken.yaml', 'IMPL-engine-review-fixes.yaml', 'IMPL-impl-rollback.yaml']);
      expect(cache.entries[path.join(implRoot, 'complete', 'IMPL-broken.yaml')]!.outcome).toEqual({ error: JSON.parse(expected.stdout).skipped[0].error });

      // The stored result is what a second call answers with (an edited entry shows it), and
      // the same answer as the first call when it is not edited.
      expect((await runCli(args, { cwd: root, env })).stdout).toBe(expected.stdout);
      const summary = cache.entries[rollback]!.outcome.summary as Record<string, unknown>;
      summary.feature_slug = 'from-the-cache';
      writeFileSync(cacheFile, JSON.stringify(cache));
      expect(JSON.parse((await runCli(args, { cwd: root, env })).stdout).impls[0].feature_slug).toBe('from-the-cache');
      expect(JSON.parse((await runCli(args, { cwd: root, env: { ...env, POLYWAVE_NO_CACHE: '1' } })).stdout).impls[0].feature_slug).toBe('impl-rollback');

      // Any change to the file (here only its mtime) makes it parsed again.
      utimesSync(rollback, new Date('2025-01-01T00:00:00Z'), new Date('2025-01-01T00:00:00Z'));
      expect(JSON.parse((await runCli(args, { cwd: root, env })).stdout).impls[0].feature_slug).toBe('impl-rollback');
      // A new manifest and a removed one.
      writeFileSync(path.join(implRoot, 'IMPL-aaa.yaml'), readFileSync(rollback, 'utf8').replace(/^feature_slug: .*$/m, 'feature_slug: aaa'));
      rmSync(path.join(implRoot, 'complete', 'IMPL-broken.yaml'));
      const changed = await runCli(args, { cwd: root, env });
      expect({ code: changed.code, stdout: changed.stdout, stderr: changed.stderr }).toEqual(await runModules(args, root));
      expect(JSON.parse(changed.stdout).impls.map((impl: { feature_slug: string }) => impl.feature_slug)).toEqual(['aaa', 'impl-rollback', 'engine-review-fixes']);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('cheap CLI calls: same answers as before (issue 13)', () => {
  it(`the bundle answers like the per-module build on the corpus (validate and check-completion on ${corpusSlice.label} files; list-impls, scan-stubs, errors)`, async () => {
    const calls = corpusCalls();
    expect(implFiles.length).toBeGreaterThanOrEqual(140);
    const bundled = await runBundled(calls);
    expect(bundled).toHaveLength(calls.length);
    for (const [index, call] of calls.entries()) {
      const expected = await runModules(call.args, call.cwd);
      expect(bundled[index], `${call.args.join(' ')} (cwd ${call.cwd})`).toEqual(expected);
    }
  });

  it('the binary (bin/polywave.js) answers like the per-module build for the four hook commands', async () => {
    const calls = [
      { args: ['validate', largest], cwd: repoRoot },
      { args: ['check-completion', largest, '--agent', 'L'], cwd: repoRoot },
      { args: ['check-completion', largest, '--agent', 'Z'], cwd: repoRoot },
      { args: ['scan-stubs', ...stubFiles], cwd: repoRoot },
      { args: ['list-impls', '--dir', implDir], cwd: repoRoot },
      { args: ['--repo-dir', repoRoot, 'validate', largest], cwd: repoRoot },
      { args: ['validate', '--help'], cwd: repoRoot },
    ];
    for (const call of calls) {
      const spawned = await runCli(call.args, { cwd: call.cwd });
      const expected = await runModules(call.args, call.cwd);
      expect({ code: spawned.code, stdout: spawned.stdout, stderr: spawned.stderr }, call.args.join(' ')).toEqual(expected);
    }
  });
});
