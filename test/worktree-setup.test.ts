/**
 * Issue 13 item 3: the worktree setup of prepare-wave, on real repositories, real worktrees, real
 * npm (offline, with local tarball dependencies) and, where it is available, the real OS sandbox.
 * A new worktree of a project with npm dependencies passes its `npm test` gate with the default
 * setup (node_modules shared read-only from the main checkout, never committed, never merged); a
 * configured `setup` sees POLYWAVE_* and a distinct port per agent; a failing setup is a coded
 * failure that leaves the worktree and does not arm the wave; teardown runs before cleanup
 * removes a worktree; `--no-workspace-setup` skips it all; hostile config entries are refused.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readActiveWave } from '../src/engine/isolation-hook.js';
import { prepareAgent, prepareWave, type PrepareWaveOptions, type PrepareWaveResult } from '../src/engine/prepare-wave.js';
import { checkCopyPattern, commandText } from '../src/engine/prepare/worktree-setup.js';
import { runGates } from '../src/gates/run-gates.js';
import { createGit } from '../src/git/git-cli.js';
import { buildAgentSandboxPlan } from '../src/agents/sandbox/index.js';
import { resetSandbox, sandboxStatus, wrapInSandbox } from '../src/sandbox/index.js';
import { configuredWorktreeSetup, configuredWorktreeSetupSettings, parseProjectConfig } from '../src/store/project-config.js';
import { runCli } from './support/cli.js';
import { createWaveFixture, type WaveFixture } from './support/wave-fixture.js';

const sandboxAvailable = (await sandboxStatus()).available;
afterAll(async () => {
  await resetSandbox();
});

/** A tiny npm project whose test needs its dependency, installed once (offline, from local tarballs). */
interface NodeTemplate {
  dir: string;
  /** package.json + package-lock.json with tiny-dep only (the main checkout's). */
  files: Record<string, string>;
  /** package.json + package-lock.json with tiny-dep and tiny-dep2 (a different lockfile). */
  changed: Record<string, string>;
}

let template: NodeTemplate;

function npm(args: string[], cwd: string): string {
  return execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

beforeAll(() => {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'polywave-setup-template-')));
  for (const [name, body] of [
    ['tiny-dep', "exports.greet = (name) => 'hello ' + name;\n"],
    ['tiny-dep2', 'exports.two = 2;\n'],
  ] as const) {
    mkdirSync(path.join(dir, name));
    writeFileSync(path.join(dir, name, 'package.json'), JSON.stringify({ name, version: '1.0.0', main: 'index.js' }));
    writeFileSync(path.join(dir, name, 'index.js'), body);
    mkdirSync(path.join(dir, 'app', 'vendor'), { recursive: true });
    npm(['pack', '--pack-destination', path.join(dir, 'app', 'vendor'), '--silent'], path.join(dir, name));
  }
  const app = path.join(dir, 'app');
  const packageJson = (deps: Record<string, string>) => `${JSON.stringify({ name: 'fixture-app', version: '1.0.0', private: true, scripts: { test: 'node test.js' }, dependencies: deps }, null, 2)}\n`;
  writeFileSync(path.join(app, 'test.js'), "const { greet } = require('tiny-dep');\nif (greet('x') !== 'hello x') process.exit(1);\nconsole.log('npm test ok');\n");
  const changedDir = path.join(dir, 'changed');
  cpSync(app, changedDir, { recursive: true });
  writeFileSync(path.join(changedDir, 'package.json'), packageJson({ 'tiny-dep': 'file:vendor/tiny-dep-1.0.0.tgz', 'tiny-dep2': 'file:vendor/tiny-dep2-1.0.0.tgz' }));
  npm(['install', '--offline', '--no-audit', '--no-fund', '--silent'], changedDir);
  writeFileSync(path.join(app, 'package.json'), packageJson({ 'tiny-dep': 'file:vendor/tiny-dep-1.0.0.tgz' }));
  npm(['install', '--offline', '--no-audit', '--no-fund', '--silent'], app);
  const read = (base: string) => ({ 'package.json': readFileSync(path.join(base, 'package.json'), 'utf8'), 'package-lock.json': readFileSync(path.join(base, 'package-lock.json'), 'utf8') });
  template = { dir, files: { ...read(app), 'test.js': readFileSync(path.join(app, 'test.js'), 'utf8'), '.gitignore': 'node_modules/\n.env\n.venv/\n' }, changed: read(changedDir) };
}, 120_000);

afterAll(() => {
  if (template) rmSync(template.dir, { recursive: true, force: true });
});

const twoAgents = { waves: [[{ id: 'A', files: ['src/a.js'] }, { id: 'B', files: ['src/b.js'] }]], state: 'WAVE_PENDING' };

/** A repository holding the npm project (node_modules installed in the main checkout, ignored). */
async function nodeProject(extra: Record<string, string> = {}): Promise<WaveFixture> {
  const fixture = await createWaveFixture(twoAgents, { ...template.files, ...extra });
  cpSync(path.join(template.dir, 'app', 'vendor'), fixture.repo.path('vendor'), { recursive: true });
  await fixture.repo.commitAll('vendor the dependencies');
  cpSync(path.join(template.dir, 'app', 'node_modules'), fixture.repo.path('node_modules'), { recursive: true });
  return fixture;
}

function prepare(fixture: WaveFixture, extra: Partial<PrepareWaveOptions> = {}): Promise<PrepareWaveResult> {
  return prepareWave({ implPath: fixture.implPath, wave: 1, env: fixture.repo.env, gitAt: fixture.gitAt, now: () => new Date('2026-05-12T10:00:00Z'), ...extra });
}

function step(result: PrepareWaveResult, name: string) {
  return result.steps.find((item) => item.step === name);
}

function failure(result: PrepareWaveResult): string {
  return JSON.stringify(result.steps.find((item) => item.status === 'failed'));
}

async function config(fixture: WaveFixture, value: Record<string, unknown>): Promise<void> {
  // Configured setups and teardowns run in the gate sandbox (issue 11): the ones here leave their
  // evidence next to the repository, which the committed `sandbox.writable` opens to them.
  const withEvidence = { sandbox: { writable: [path.dirname(fixture.repo.dir)] }, ...value };
  fixture.repo.write('polywave.config.json', `${JSON.stringify(withEvidence, null, 2)}\n`);
  await fixture.repo.commitAll('configure worktree setup');
}

async function status(directory: string, env: WaveFixture['repo']['env']): Promise<string> {
  return (await createGit(directory, { env }).run(['status', '--porcelain', '--untracked-files=all'])).stdout;
}

describe('default setup: a Node project', () => {
  it('shares the main checkout\'s node_modules (lockfile identical): the worktree passes `npm test`, git never sees the link, the merge holds no node_modules, cleanup keeps main\'s', async () => {
    const fixture = await nodeProject();
    const result = await prepare(fixture);
    expect(result.success, failure(result)).toBe(true);
    expect(step(result, 'workspace_setup')).toMatchObject({ status: 'success' });
    expect(step(result, 'workspace_setup')!.detail).toContain('package-lock.json identical');
    const worktree = fixture.worktree('A');
    expect(lstatSync(path.join(worktree, 'node_modules')).isSymbolicLink()).toBe(true);
    expect(readlinkSync(path.join(worktree, 'node_modules'))).toBe(fixture.repo.path('node_modules'));
    // .gitignore says `node_modules/`, which does not match a symlink: the setup excluded it.
    expect(await status(worktree, fixture.repo.env)).toBe('');
    expect(readFileSync(fixture.repo.path('.git/info/exclude'), 'utf8')).toContain('/node_modules');

    // The real `npm test` gate in the worktree (in the OS sandbox when it is available here).
    const gate = await runGates({ repoDir: worktree, env: fixture.repo.env, noCache: true, gates: [{ type: 'test', command: 'npm test', required: true }] });
    expect(gate.passed, gate.results[0]?.output).toBe(true);
    expect(gate.results[0]!.output).toContain('npm test ok');

    // The agents work and report; finalize merges and removes the worktrees.
    await fixture.complete('A', { 'src/a.js': 'exports.a = 1;\n' });
    await fixture.complete('B', { 'src/b.js': 'exports.b = 2;\n' });
    const finalized = await fixture.finalize(1);
    expect(finalized.success, JSON.stringify(finalized.steps.filter((item) => item.status === 'failed'))).toBe(true);
    const tree = await fixture.repo.run(['ls-tree', '-r', '--name-only', 'HEAD']);
    expect(tree).toContain('src/a.js');
    expect(tree).not.toMatch(/(^|\/)node_modules/m);
    expect(existsSync(worktree)).toBe(false);
    expect(readFileSync(fixture.repo.path('node_modules/tiny-dep/index.js'), 'utf8')).toContain('hello');
  }, 120_000);

  it.skipIf(!sandboxAvailable)('the shared node_modules is read-only inside the sandbox (the link points outside the writable worktree)', async () => {
    const fixture = await nodeProject();
    const result = await prepare(fixture);
    expect(result.success, failure(result)).toBe(true);
    const worktree = fixture.worktree('A');
    const attempts = [
      "node -e \"require('fs').writeFileSync('node_modules/tiny-dep/index.js', 'pwned')\"",
      'echo pwned > node_modules/planted.js',
      'rm -rf node_modules/tiny-dep',
    ];
    const run = await runGates({ repoDir: worktree, env: fixture.repo.env, noCache: true, gates: attempts.map((command) => ({ type: 'custom', command, required: true })) });
    for (const attempt of run.results) expect(attempt.passed, `${attempt.command}\n${attempt.output}`).toBe(false);
    expect(readFileSync(fixture.repo.path('node_modules/tiny-dep/index.js'), 'utf8')).toContain('hello');
    expect(existsSync(fixture.repo.path('node_modules/planted.js'))).toBe(false);
    // Writing the worktree's own files still works.
    const own = await runGates({ repoDir: worktree, env: fixture.repo.env, noCache: true, gates: [{ type: 'custom', command: 'echo ok > src-out.txt && npm test', required: true }] });
    expect(own.passed, own.results[0]?.output).toBe(true);

    // The agent's own sandbox (its plan: worktree, private HOME and TMPDIR writable): reads through the link, cannot write through it.
    const home = fixture.repo.sibling('agent-home');
    const tmp = fixture.repo.sibling('agent-tmp');
    mkdirSync(home);
    mkdirSync(tmp);
    const plan = await buildAgentSandboxPlan({ root: worktree, home, tmp, env: fixture.repo.env, userHome: fixture.repo.sibling('user-home') });
    const env = { ...(Object.fromEntries(Object.entries(fixture.repo.env).filter((entry): entry is [string, string] => entry[1] !== undefined))), HOME: home, TMPDIR: tmp };
    const inAgentSandbox = async (command: string) => {
      const wrapped = await wrapInSandbox(plan, command, { cwd: worktree, env });
      try {
        return spawnSync(wrapped.file, wrapped.args, { cwd: worktree, env: wrapped.env, encoding: 'utf8', timeout: 60_000 });
      } finally {
        wrapped.release();
      }
    };
    expect((await inAgentSandbox("node -e \"require('tiny-dep')\" && echo mine > own.txt")).status).toBe(0);
    const write = await inAgentSandbox("node -e \"require('fs').writeFileSync('node_modules/tiny-dep/index.js', 'pwned')\"");
    expect(write.status, write.stdout + write.stderr).not.toBe(0);
    expect(write.stderr).toMatch(/EROFS|read-only|EACCES|EPERM/);
    expect(readFileSync(fixture.repo.path('node_modules/tiny-dep/index.js'), 'utf8')).toContain('hello');
  }, 120_000);

  it('a worktree whose lockfile differs from the main checkout\'s gets its own `npm ci --prefer-offline`', async () => {
    const fixture = await nodeProject();
    // The wave merges into `feature`, whose lockfile adds tiny-dep2; the main checkout stays on main.
    await fixture.repo.run(['checkout', '-q', '-b', 'feature']);
    for (const [file, text] of Object.entries(template.changed)) fixture.repo.write(file, text);
    fixture.repo.write('test.js', `${template.files['test.js']}require('tiny-dep2');\n`);
    await fixture.repo.commitAll('add tiny-dep2');
    await fixture.repo.run(['checkout', '-q', 'main']);
    const result = await prepare(fixture, { mergeTarget: 'feature' });
    expect(result.success, failure(result)).toBe(true);
    expect(step(result, 'workspace_setup')!.detail).toContain('npm ci --prefer-offline');
    const worktree = fixture.worktree('B');
    expect(lstatSync(path.join(worktree, 'node_modules')).isDirectory()).toBe(true);
    expect(existsSync(path.join(worktree, 'node_modules/tiny-dep2/index.js'))).toBe(true);
    expect(existsSync(fixture.repo.path('node_modules/tiny-dep2'))).toBe(false);
    expect(await status(worktree, fixture.repo.env)).toBe('');
    const gate = await runGates({ repoDir: worktree, env: fixture.repo.env, noCache: true, gates: [{ type: 'test', command: 'npm test', required: true }] });
    expect(gate.passed, gate.results[0]?.output).toBe(true);
  }, 120_000);

  it('--no-workspace-setup: no link, no copies, no setup command', async () => {
    const fixture = await nodeProject();
    await config(fixture, { setup: 'touch "$POLYWAVE_ROOT/../setup-ran-$POLYWAVE_AGENT"', copy: ['.env'] });
    fixture.repo.write('.env', 'SECRET=1\n');
    const result = await prepare(fixture, { workspaceSetup: false });
    expect(result.success, failure(result)).toBe(true);
    expect(step(result, 'workspace_setup')).toMatchObject({ status: 'skipped' });
    expect(existsSync(path.join(fixture.worktree('A'), 'node_modules'))).toBe(false);
    expect(existsSync(path.join(fixture.worktree('A'), '.env'))).toBe(false);
    expect(existsSync(fixture.repo.sibling('setup-ran-A'))).toBe(false);
  }, 60_000);
});

describe('default setup: Go workspaces and Python virtualenvs', () => {
  it('writes a go.work for several modules and links the main checkout\'s .venv; --no-gowork leaves go.work out', async () => {
    const files = {
      'svc/go.mod': 'module example.com/svc\n\ngo 1.21\n',
      'lib/go.mod': 'module example.com/lib\n\ngo 1.22.3\n',
      'pyproject.toml': '[project]\nname = "app"\n',
      '.gitignore': '.venv/\n',
    };
    const fixture = await createWaveFixture(twoAgents, files);
    mkdirSync(fixture.repo.path('.venv/bin'), { recursive: true });
    writeFileSync(fixture.repo.path('.venv/pyvenv.cfg'), 'home = /usr/bin\n');
    const result = await prepare(fixture);
    expect(result.success, failure(result)).toBe(true);
    const worktree = fixture.worktree('A');
    expect(readFileSync(path.join(worktree, 'go.work'), 'utf8')).toBe('go 1.22.3\n\nuse (\n\t./lib\n\t./svc\n)\n');
    expect(readlinkSync(path.join(worktree, '.venv'))).toBe(fixture.repo.path('.venv'));
    expect(await status(worktree, fixture.repo.env)).toBe('');

    const second = await createWaveFixture(twoAgents, files);
    const without = await prepare(second, { goWork: false });
    expect(without.success, failure(without)).toBe(true);
    expect(existsSync(path.join(second.worktree('A'), 'go.work'))).toBe(false);
  }, 60_000);
});

describe('configured setup and teardown', () => {
  it('runs in each new worktree with POLYWAVE_* and a distinct port, copies listed files, not again on reuse; teardown runs before finalize removes the worktree', async () => {
    const fixture = await nodeProject({ 'scripts/setup.mjs': "import { writeFileSync } from 'node:fs';\nconst keys = ['POLYWAVE_WORKTREE', 'POLYWAVE_ROOT', 'POLYWAVE_AGENT', 'POLYWAVE_SLUG', 'POLYWAVE_WAVE', 'POLYWAVE_PORT', 'POLYWAVE_BRANCH'];\nwriteFileSync(`${process.env.POLYWAVE_ROOT}/../setup-${process.env.POLYWAVE_AGENT}.json`, JSON.stringify({ cwd: process.cwd(), env: Object.fromEntries(keys.map((key) => [key, process.env[key]])) }));\nconsole.log('set up', process.env.POLYWAVE_AGENT);\n" });
    await config(fixture, {
      repos: [{ name: 'repo', path: '.', setup: ['node', 'scripts/setup.mjs'], teardown: 'echo "$POLYWAVE_AGENT $POLYWAVE_PORT $(pwd)" >> "$POLYWAVE_ROOT/../teardown.log"', copy: ['.env', 'config/*.local.json'] }],
      worktree_setup: { base_port: 45100, concurrency: 2 },
    });
    fixture.repo.write('.env', 'API_URL=http://localhost\n');
    fixture.repo.write('config/db.local.json', '{"db": "local"}\n');
    // config/ is not ignored by the repository: the copy must not show up as a change in the worktrees.
    writeFileSync(fixture.repo.path('.git/info/exclude'), `${readFileSync(fixture.repo.path('.git/info/exclude'), 'utf8')}/config/db.local.json\n`);
    const result = await prepare(fixture);
    expect(result.success, failure(result)).toBe(true);
    const seen = ['A', 'B'].map((agent) => JSON.parse(readFileSync(fixture.repo.sibling(`setup-${agent}.json`), 'utf8')) as { cwd: string; env: Record<string, string> });
    expect(seen.map((item) => item.env.POLYWAVE_PORT)).toEqual(['45100', '45101']);
    expect(seen[0]).toEqual({
      cwd: fixture.worktree('A'),
      env: { POLYWAVE_WORKTREE: fixture.worktree('A'), POLYWAVE_ROOT: fixture.repo.dir, POLYWAVE_AGENT: 'A', POLYWAVE_SLUG: 'demo', POLYWAVE_WAVE: '1', POLYWAVE_PORT: '45100', POLYWAVE_BRANCH: fixture.branch('A') },
    });
    // A configured setup replaces the defaults: no shared node_modules.
    expect(existsSync(path.join(fixture.worktree('A'), 'node_modules'))).toBe(false);
    expect(readFileSync(path.join(fixture.worktree('B'), '.env'), 'utf8')).toBe('API_URL=http://localhost\n');
    expect(readFileSync(path.join(fixture.worktree('B'), 'config/db.local.json'), 'utf8')).toBe('{"db": "local"}\n');
    expect(await status(fixture.worktree('B'), fixture.repo.env)).toBe('');
    expect(JSON.parse(readFileSync(fixture.repo.path('.git/worktrees/wave1-agent-B/polywave-setup.json'), 'utf8'))).toMatchObject({ status: 'done', agent: 'B', port: 45101 });

    // E9 re-entry reuses the worktrees: their setup does not run again.
    rmSync(fixture.repo.sibling('setup-A.json'));
    const again = await prepare(fixture);
    expect(again.success, failure(again)).toBe(true);
    expect(step(again, 'workspace_setup')).toMatchObject({ status: 'skipped' });
    expect(existsSync(fixture.repo.sibling('setup-A.json'))).toBe(false);

    await fixture.complete('A', { 'src/a.js': 'exports.a = 1;\n' });
    await fixture.complete('B', { 'src/b.js': 'exports.b = 2;\n' });
    const finalized = await fixture.finalize(1);
    expect(finalized.success, JSON.stringify(finalized.steps.filter((item) => item.status === 'failed'))).toBe(true);
    const log = readFileSync(fixture.repo.sibling('teardown.log'), 'utf8').trim().split('\n').sort();
    expect(log).toEqual([`A 45100 ${fixture.worktree('A')}`, `B 45101 ${fixture.worktree('B')}`]);
    const cleanup = finalized.cleanup_result['.'] ?? Object.values(finalized.cleanup_result)[0];
    expect(cleanup?.agents.map((line) => line.teardown)).toEqual([expect.stringMatching(/^teardown ok/), expect.stringMatching(/^teardown ok/)]);
    expect(cleanup?.agents.every((line) => line.worktree_removed)).toBe(true);
  }, 120_000);

  it('a PROGRAM tier\'s port offset moves every agent\'s POLYWAVE_PORT by the IMPL\'s block; a port past 65535 is a coded failure before any setup runs', async () => {
    const fixture = await createWaveFixture(twoAgents);
    await config(fixture, { setup: 'echo "$POLYWAVE_AGENT $POLYWAVE_PORT" >> "$POLYWAVE_ROOT/../ports.log"' });
    const result = await prepare(fixture, { portOffset: 200 });
    expect(result.success, failure(result)).toBe(true);
    expect(step(result, 'workspace_setup')!.detail).toMatch(/^2 worktree\(s\) set up \(ports A=41200, B=41201\)/);
    expect(readFileSync(fixture.repo.sibling('ports.log'), 'utf8').trim().split('\n').sort()).toEqual(['A 41200', 'B 41201']);
    expect(step(result, 'workspace_setup')!.data).toMatchObject({ base_port: 41000, port_offset: 200 });

    const high = await createWaveFixture(twoAgents);
    await config(high, { setup: 'echo ran >> "$POLYWAVE_ROOT/../ran.log"', worktree_setup: { base_port: 65000 } });
    const refused = await prepare(high, { portOffset: 600 });
    expect(refused.success).toBe(false);
    expect(step(refused, 'workspace_setup')!.detail).toMatch(/^WORKTREE_SETUP_FAILED: agent A would get POLYWAVE_PORT 65600, above 65535 \(base_port 65000 \+ 600 for this IMPL's place in its tier \+ 0\)/);
    expect(existsSync(high.repo.sibling('ran.log'))).toBe(false);
  }, 60_000);

  it('a failing setup: coded failure with the output tail, worktree kept, wave not armed; the next prepare-wave runs that setup again', async () => {
    const fixture = await createWaveFixture(twoAgents);
    await config(fixture, { setup: 'echo "preparing $POLYWAVE_AGENT"; if [ "$POLYWAVE_AGENT" = B ] && [ ! -f "$POLYWAVE_ROOT/../fixed" ]; then echo "boom: database not reachable" >&2; exit 3; fi' });
    const result = await prepare(fixture);
    expect(result.success).toBe(false);
    const failed = result.steps.find((item) => item.status === 'failed')!;
    expect(failed.step).toBe('workspace_setup');
    expect(failed.detail).toMatch(/^WORKTREE_SETUP_FAILED: agent B: setup `.*` exited 3 after [\d.]+ s — boom: database not reachable/);
    expect(failed.detail.split('\n')).toHaveLength(1);
    const agentB = (failed.data as { agents: Array<{ agent: string; ok: boolean; output_tail?: string; exit_code?: number }> }).agents.find((item) => item.agent === 'B')!;
    expect(agentB).toMatchObject({ ok: false, exit_code: 3 });
    expect(agentB.output_tail).toContain('preparing B');
    expect(existsSync(fixture.worktree('B'))).toBe(true);
    expect(step(result, 'activate_wave')).toBeUndefined();
    expect(await readActiveWave(fixture.repo.dir)).toBeUndefined();

    writeFileSync(fixture.repo.sibling('fixed'), '');
    const again = await prepare(fixture);
    expect(again.success, failure(again)).toBe(true);
    expect(step(again, 'workspace_setup')!.detail).toMatch(/^1 worktree\(s\) set up \(ports B=41001\)/);
  }, 60_000);

  it('a setup that outlives its timeout is stopped and reported', async () => {
    const fixture = await createWaveFixture(twoAgents);
    await config(fixture, { setup: 'echo starting; sleep 30', worktree_setup: { timeout_seconds: 1 } });
    const started = Date.now();
    const result = await prepare(fixture);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(result.steps.find((item) => item.status === 'failed')?.detail).toMatch(/^WORKTREE_SETUP_FAILED: agent A: setup `echo starting; sleep 30` timed out/);
  }, 60_000);
});

describe('other entry points', () => {
  it('prepare-agent sets up one agent with that agent\'s port; the CLI\'s --no-workspace-setup skips the step and a failing setup exits 1 with the coded line', async () => {
    const fixture = await createWaveFixture(twoAgents);
    await config(fixture, { setup: 'echo "$POLYWAVE_PORT" > "$POLYWAVE_ROOT/../port-$POLYWAVE_AGENT"; [ -z "$FAIL_SETUP" ]' });
    const agent = await prepareAgent({ implPath: fixture.implPath, wave: 1, agent: 'B', env: fixture.repo.env, gitAt: fixture.gitAt });
    expect(agent.success, JSON.stringify(agent.steps.find((item) => item.status === 'failed'))).toBe(true);
    expect(readFileSync(fixture.repo.sibling('port-B'), 'utf8')).toBe('41001\n');
    expect(existsSync(fixture.repo.sibling('port-A'))).toBe(false);

    const env = Object.fromEntries(Object.entries(fixture.repo.env).filter((entry): entry is [string, string] => entry[1] !== undefined));
    const skipped = await runCli(['prepare-wave', fixture.implPath, '--wave', '1', '--no-workspace-setup', '--json-only'], { cwd: fixture.repo.dir, env, timeoutMs: 60_000 });
    expect(skipped.code, skipped.stderr).toBe(0);
    expect((JSON.parse(skipped.stdout) as PrepareWaveResult).steps.find((item) => item.step === 'workspace_setup')).toMatchObject({ status: 'skipped' });
    expect(existsSync(fixture.repo.sibling('port-A'))).toBe(false);

    const second = await createWaveFixture(twoAgents);
    await config(second, { setup: 'echo "no database" >&2; exit 4' });
    const failed = await runCli(['prepare-wave', second.implPath, '--wave', '1'], { cwd: second.repo.dir, env, timeoutMs: 60_000 });
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/\[workspace_setup\] failed — WORKTREE_SETUP_FAILED: agent A: setup `echo "no database" >&2; exit 4` exited 4 after [\d.]+ s — no database/);
    expect(failed.stderr).not.toMatch(/\n\s+at /);
  }, 120_000);
});

describe('hostile configuration', () => {
  it('an argv setup whose path holds shell metacharacters runs that file and nothing else', async () => {
    const name = 'scripts/set up;touch PWNED $(touch PWNED2) `touch PWNED3`.sh';
    const fixture = await createWaveFixture(twoAgents, { [name]: '#!/bin/sh\necho "ran $POLYWAVE_AGENT" > "$POLYWAVE_ROOT/../argv-ran-$POLYWAVE_AGENT"\n' });
    chmodSync(fixture.repo.path(name), 0o755);
    await fixture.repo.commitAll('executable');
    await config(fixture, { setup: [`./${name}`, '$(touch PWNED4)', '; touch PWNED5'] });
    const result = await prepare(fixture);
    expect(result.success, failure(result)).toBe(true);
    expect(readFileSync(fixture.repo.sibling('argv-ran-A'), 'utf8')).toBe('ran A\n');
    expect(readFileSync(fixture.repo.sibling('argv-ran-B'), 'utf8')).toBe('ran B\n');
    const everywhere = execFileSync('find', [fixture.repo.root, '-name', 'PWNED*'], { encoding: 'utf8' });
    expect(everywhere).toBe('');
    expect(commandText(['a b', "it's", '$(x)'])).toBe(`exec 'a b' 'it'\\''s' '$(x)'`);
  }, 60_000);

  it.each([
    ['../../etc/passwd', /leaves the repository/],
    ['/etc/passwd', /absolute path/],
    ['~/.ssh/id_rsa', /absolute path/],
    ['config/../../x', /leaves the repository/],
    ['.git/config', /git metadata/],
    ['./', /whole repository/],
  ])('copy %s is refused (WORKTREE_SETUP_COPY_REFUSED) and nothing is copied', async (entry, why) => {
    expect(() => checkCopyPattern(entry)).toThrow(why);
    const fixture = await createWaveFixture(twoAgents);
    await config(fixture, { copy: [entry] });
    const result = await prepare(fixture);
    expect(result.success).toBe(false);
    const failed = result.steps.find((item) => item.status === 'failed')!;
    expect(failed.step).toBe('workspace_setup');
    expect(failed.detail).toMatch(/^WORKTREE_SETUP_COPY_REFUSED: agent A: copy entry .* refused/);
    expect(existsSync(path.join(fixture.worktree('A'), 'passwd'))).toBe(false);
    expect(existsSync(path.join(fixture.worktree('A'), 'etc'))).toBe(false);
  }, 60_000);

  it('a copy source that is a symlink out of the repository (or under a symlinked directory) is refused', async () => {
    const fixture = await createWaveFixture(twoAgents, { '.gitignore': '.env\nlinked\n' });
    const outside = fixture.repo.sibling('outside');
    mkdirSync(outside);
    writeFileSync(path.join(outside, 'secret.env'), 'TOKEN=outside\n');
    symlinkSync(path.join(outside, 'secret.env'), fixture.repo.path('.env'));
    symlinkSync(outside, fixture.repo.path('linked'));
    for (const entry of ['.env', 'linked/secret.env', '.env*', 'link*/*']) {
      await config(fixture, { copy: [entry] });
      const result = await prepare(fixture);
      const failed = result.steps.find((item) => item.status === 'failed');
      if (entry === 'link*/*') {
        // A glob never descends into a symlinked directory: nothing matches, nothing is copied.
        expect(result.success, failure(result)).toBe(true);
      } else {
        expect(failed?.detail ?? `nothing failed: ${JSON.stringify(step(result, 'workspace_setup'))}`, entry).toMatch(/^WORKTREE_SETUP_COPY_REFUSED: agent A: copy entry .* refused: it resolves outside the main checkout/);
      }
      for (const agent of ['A', 'B']) {
        expect(existsSync(path.join(fixture.worktree(agent), '.env')), `${entry} ${agent}`).toBe(false);
        expect(existsSync(path.join(fixture.worktree(agent), 'linked')), `${entry} ${agent}`).toBe(false);
        expect(existsSync(path.join(fixture.worktree(agent), 'secret.env')), `${entry} ${agent}`).toBe(false);
        // Start over: the refused setup left the worktree for inspection.
        await fixture.repo.run(['worktree', 'remove', '--force', fixture.worktree(agent)]);
        await fixture.repo.run(['branch', '-D', fixture.branch(agent)]);
      }
    }
  }, 120_000);

  it('setup keys of the wrong shape are N014 config errors; prepare-wave stops before running anything', async () => {
    expect(parseProjectConfig(JSON.stringify({ repos: [{ name: 'a', path: '.', setup: 3, copy: 'x' }], teardown: [], worktree_setup: { base_port: 80, defaults: 'yes' } })).findings.map((finding) => finding.field)).toEqual([
      'repos[0].setup',
      'repos[0].copy',
      'teardown',
      'worktree_setup.base_port',
      'worktree_setup.defaults',
    ]);
    const fixture = await createWaveFixture(twoAgents);
    await config(fixture, { setup: { run: 'x' } });
    const result = await prepare(fixture);
    expect(result.steps.find((item) => item.status === 'failed')?.detail).toMatch(/^N014_CONFIG_INVALID: .*setup: must be a command string or an argv array/);
  }, 60_000);
});

describe('nothing to do', () => {
  it('a repository with no config and no Node/Go/Python files: the step is skipped and leaves no record', async () => {
    const fixture = await createWaveFixture(twoAgents);
    const result = await prepare(fixture);
    expect(result.success, failure(result)).toBe(true);
    expect(step(result, 'workspace_setup')).toMatchObject({ status: 'skipped', detail: expect.stringMatching(/^nothing to set up in 2 new worktree\(s\)/) });
    expect(existsSync(fixture.repo.path('.git/worktrees/wave1-agent-A/polywave-setup.json'))).toBe(false);
  }, 60_000);
});

describe('config resolution', () => {
  it('a repos[] entry wins over the top level; the top level applies to the primary repository only', () => {
    const value = { repos: [{ name: 'app', path: '.', copy: ['.env'] }, { name: 'api', path: '../api', setup: 'make deps' }], setup: ['npm', 'run', 'prep'], teardown: 'make stop' };
    expect(configuredWorktreeSetup(value, { configDir: '/w/app', repoRoot: '/w/app', primary: true })).toEqual({ setup: ['npm', 'run', 'prep'], teardown: 'make stop', copy: ['.env'] });
    expect(configuredWorktreeSetup(value, { configDir: '/w/app', repoRoot: '/w/api', primary: false })).toEqual({ setup: 'make deps', copy: [] });
    expect(configuredWorktreeSetup({ setup: false }, { configDir: '/w', repoRoot: '/w', primary: true }).setup).toBe(false);
    expect(configuredWorktreeSetupSettings(undefined)).toEqual({ basePort: 41000, concurrency: undefined, timeoutSeconds: 600, defaults: true });
  });
});
