import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../../test/support/cli.js';
import { errorLinePattern } from '../../test/support/cli-assert.js';
import { makeTempDir } from '../../test/support/temp.js';
import type { CommandIo } from '../cli/io.js';
import { main } from '../cli/main.js';

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' } });
}

const manifestHead = `title: Gate runner test
feature_slug: gate-test
verdict: SUITABLE
state: WAVE_PENDING
file_ownership:
    - file: src/a.ts
      agent: A
      wave: 1
      action: new
    - file: docs/guide.md
      agent: B
      wave: 2
      action: modify
waves:
    - number: 1
      agents:
        - id: A
          task: write a
          files:
            - src/a.ts
    - number: 2
      agents:
        - id: B
          task: write docs
          files:
            - docs/guide.md
`;

/** A temp git repo with docs/IMPL/IMPL-gate-test.yaml holding `gatesYaml`. */
function makeRepo(gatesYaml: string): { root: string; manifest: string } {
  const root = path.join(makeTempDir('polywave-run-gates-cli-'), 'repo');
  mkdirSync(path.join(root, 'docs', 'IMPL'), { recursive: true });
  git(root, 'init', '--quiet', '--initial-branch=main');
  git(root, 'config', 'user.name', 'Polywave Test');
  git(root, 'config', 'user.email', 'test@polywave.invalid');
  git(root, 'config', 'commit.gpgsign', 'false');
  const manifest = path.join(root, 'docs', 'IMPL', 'IMPL-gate-test.yaml');
  writeFileSync(manifest, `${manifestHead}${gatesYaml}`);
  writeFileSync(path.join(root, '.gitignore'), '.polywave-state/\n');
  git(root, 'add', '.');
  git(root, 'commit', '--quiet', '-m', 'initial');
  return { root, manifest };
}

interface Captured {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI in-process with a capturing io (the same `main` bin/polywave.js calls). */
async function runInProcess(args: string[], cwd: string): Promise<Captured> {
  let stdout = '';
  let stderr = '';
  const io: CommandIo = {
    cwd,
    env: process.env,
    now: () => new Date(),
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

const passingGates = `quality_gates:
    level: standard
    gates:
        - type: build
          command: echo built
          required: true
          parallel_group: checks
        - type: lint
          command: echo lint-warning; exit 1
          required: false
          parallel_group: checks
`;

const failingGates = `quality_gates:
    level: standard
    gates:
        - type: test
          command: echo 1 test failed; exit 1
          required: true
        - type: build
          command: echo built
          required: true
`;

describe('polywave run-gates (CLI)', () => {
  it('exit 0 with the Go-compatible array when no required gate fails (optional failure = warning); cache hit on re-run', async () => {
    const repo = makeRepo(passingGates);
    const first = await runInProcess(['run-gates', repo.manifest], repo.root);
    expect(first.code, first.stderr).toBe(0);
    const results = JSON.parse(first.stdout) as Array<Record<string, unknown>>;
    expect(results.map((result) => [result.type, result.passed, result.exit_code, result.required])).toEqual([
      ['build', true, 0, true],
      ['lint', false, 1, false],
    ]);
    expect(results[0]).toMatchObject({ command: 'echo built', stdout: 'built\n', stderr: '', phase: 'VALIDATION', parallel_group: 'checks', cwd: repo.root });
    expect(first.stderr).toMatch(/gate \[lint\]: failed \(optional, warning\)/);

    const second = await runInProcess(['run-gates', repo.manifest], repo.root);
    expect(second.code).toBe(0);
    const head = git(repo.root, 'rev-parse', 'HEAD').trim();
    expect(JSON.parse(second.stdout)[0]).toMatchObject({ from_cache: true, skip_reason: `cached at SHA ${head}` });
    // E38: the cache hit is announced on stderr, stdout stays JSON.
    expect(second.stderr).toContain(`gate [build]: skipped (cached at SHA ${head})`);

    const bypass = await runInProcess(['run-gates', repo.manifest, '--no-cache'], repo.root);
    expect(JSON.parse(bypass.stdout)[0].from_cache).toBeUndefined();
  });

  it('exit 1 when a required gate fails; --json-detail prints the run summary', async () => {
    const repo = makeRepo(failingGates);
    const result = await runInProcess(['run-gates', 'gate-test', '--json-detail'], repo.root);
    expect(result.code).toBe(1);
    const detail = JSON.parse(result.stdout) as { passed: boolean; required_failures: number; results: Array<{ type: string; output: string }>; phases: Array<{ phase: string; gates: number[] }> };
    expect(detail.passed).toBe(false);
    expect(detail.required_failures).toBe(1);
    expect(detail.results.map((gate) => gate.type)).toEqual(['test', 'build']);
    expect(detail.results[0]!.output).toBe('1 test failed\n');
    expect(detail.phases).toEqual([{ phase: 'VALIDATION', passed: false, skipped: false, gates: [0, 1] }]);
    expect(result.stderr).toMatch(/gate \[test\]: FAILED — echo 1 test failed; exit 1 \(exit 1\)/);
  });

  it('--timing and --wave (docs-only) select and skip gates; --dir picks the directory', async () => {
    const repo = makeRepo(`quality_gates:
    level: standard
    gates:
        - type: build
          command: pwd
          required: true
        - type: custom
          command: echo after-merge
          required: true
          timing: post-merge
`);
    const post = await runInProcess(['run-gates', repo.manifest, '--timing', 'post-merge'], repo.root);
    expect(JSON.parse(post.stdout).map((gate: { type: string }) => gate.type)).toEqual(['custom']);
    const docsOnly = await runInProcess(['run-gates', repo.manifest, '--wave', '2', '--timing', 'pre-merge'], repo.root);
    expect(JSON.parse(docsOnly.stdout)[0]).toMatchObject({ type: 'build', passed: true, skipped: true, skip_reason: 'docs-only wave: no compilable source files changed' });
    const elsewhere = makeTempDir('polywave-run-gates-dir-');
    const moved = await runInProcess(['run-gates', repo.manifest, '--timing', 'pre-merge', '--dir', elsewhere, '--no-cache'], repo.root);
    expect(JSON.parse(moved.stdout)[0].stdout).toBe(`${elsewhere}\n`);
    // Without --dir the manifest's project root is used, whatever the current directory.
    const fromElsewhere = await runInProcess(['run-gates', repo.manifest, '--timing', 'pre-merge', '--no-cache'], elsewhere);
    expect(JSON.parse(fromElsewhere.stdout)[0].stdout).toBe(`${repo.root}\n`);
  });

  it('no quality_gates → [] and exit 0', async () => {
    const repo = makeRepo('');
    const result = await runInProcess(['run-gates', repo.manifest], repo.root);
    expect(result).toMatchObject({ code: 0, stdout: '[]\n' });
  });

  it('exit 2 with one coded line on bad input', async () => {
    const repo = makeRepo(passingGates);
    const cases: Array<[string[], string]> = [
      [['run-gates', repo.manifest, '--timing', 'later'], 'X001_INVALID_INPUT'],
      [['run-gates', repo.manifest, '--wave', '9'], 'X001_INVALID_INPUT'],
      [['run-gates', repo.manifest, '--dir', path.join(repo.root, 'missing')], 'X001_INVALID_INPUT'],
      [['run-gates', path.join(repo.root, 'docs', 'IMPL', 'IMPL-nope.yaml')], 'N005_IMPL_NOT_FOUND'],
    ];
    for (const [args, code] of cases) {
      const result = await runInProcess(args, repo.root);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr.trim()).toMatch(errorLinePattern);
      expect(result.stderr).toContain(`error[${code}]`);
    }
    const fixOutsidePre = makeRepo(`quality_gates:
    level: standard
    gates:
        - type: format
          command: gofmt -w .
          required: true
          fix: true
`);
    const refused = await runInProcess(['run-gates', fixOutsidePre.manifest], fixOutsidePre.root);
    expect(refused.code).toBe(2);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(/^polywave: error\[B009_GATE_VALIDATION_FAILED\]: invalid quality gates: gates\[0\]: gates with fix=true must be in PRE_VALIDATION phase/);
  });
});

// One real process, to prove stdout carries nothing but the JSON document. The CLI is compiled
// from the current sources into node_modules/.cache (like test/store-concurrency.test.ts).
const buildRoot = path.join(repoRoot, 'node_modules', '.cache', 'polywave-tests', `run-gates-cli-${process.pid}`);
afterAll(() => rmSync(buildRoot, { recursive: true, force: true }));

/**
 * Transpiles the module graph of the CLI's `run-gates` path (static imports from cli/main.ts plus
 * the lazily loaded run-gates command; no type check — tsc does that elsewhere) into
 * `<buildRoot>/dist`, next to a copy of package.json.
 */
async function compileCli(): Promise<string> {
  rmSync(buildRoot, { recursive: true, force: true });
  const outDir = path.join(buildRoot, 'dist');
  mkdirSync(outDir, { recursive: true });
  copyFileSync(path.join(repoRoot, 'package.json'), path.join(buildRoot, 'package.json'));
  const ts = (await import('typescript')).default;
  const sourceRoot = path.join(repoRoot, 'src');
  const pending = ['cli/main.ts', 'cli/commands/run-gates.ts'];
  const done = new Set<string>();
  while (pending.length > 0) {
    const relative = pending.pop()!;
    if (done.has(relative)) continue;
    done.add(relative);
    const source = readFileSync(path.join(sourceRoot, relative), 'utf8');
    // Static imports and re-exports only (`import('…')` of other commands is not followed).
    for (const match of source.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+'(\.{1,2}\/[^']+)\.js'/g)) {
      pending.push(path.posix.normalize(path.posix.join(path.posix.dirname(relative), `${match[1]}.ts`)));
    }
    const output = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2023 }, fileName: relative });
    const target = path.join(outDir, relative.replace(/\.ts$/, '.js'));
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, output.outputText);
  }
  return pathToFileURL(path.join(outDir, 'cli', 'main.js')).href;
}

function runProcess(mainUrl: string, args: string[], cwd: string): Promise<Captured> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', `const { main } = await import(${JSON.stringify(mainUrl)}); process.exitCode = await main(process.argv.slice(1));`, ...args], {
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

describe('polywave run-gates (real process)', () => {
  it('stdout is exactly one JSON document even when gates print a lot; exit codes 0/1/2', async () => {
    const mainUrl = await compileCli();
    const repo = makeRepo(`quality_gates:
    level: standard
    gates:
        - type: test
          command: for i in $(seq 1 400); do echo "noise $i"; echo "err $i" >&2; done
          required: true
`);
    const ok = await runProcess(mainUrl, ['run-gates', repo.manifest], repo.root);
    expect(ok.code, ok.stderr).toBe(0);
    const parsed = JSON.parse(ok.stdout) as Array<{ stdout: string; output_truncated: boolean; full_output_path: string }>;
    expect(parsed).toHaveLength(1);
    expect(parsed[0]!.output_truncated).toBe(true);
    expect(readFileSync(parsed[0]!.full_output_path, 'utf8').split('\n')).toHaveLength(801);
    expect(ok.stdout.trimEnd().endsWith(']')).toBe(true);

    const failing = makeRepo(failingGates);
    const bad = await runProcess(mainUrl, ['run-gates', failing.manifest], failing.root);
    expect(bad.code).toBe(1);
    expect(Array.isArray(JSON.parse(bad.stdout))).toBe(true);

    const usage = await runProcess(mainUrl, ['run-gates', failing.manifest, '--timing', 'sometime'], failing.root);
    expect(usage.code).toBe(2);
    expect(usage.stdout).toBe('');
    expect(usage.stderr.trim()).toMatch(errorLinePattern);
  }, 180_000);
});
