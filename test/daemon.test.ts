import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { demoBaseFiles, demoManifest, demoScript } from '../src/demo/project.js';
import { initDemoRepository } from '../src/demo/run-demo.js';
import { expectCodedError } from './support/cli-assert.js';
import { binPath, runCli, type CliResult } from './support/cli.js';

// Issue 13: `polywave daemon` watches docs/IMPL/queue/ and runs its items with real agents (the
// script backend here) through the same autopilot as `polywave run` — unlike the Go daemon, which
// never launches an agent. The sample library of `polywave demo` is the project: its IMPL is
// REVIEWED, so a queue item titled "textkit" resumes it (the plan review is where autonomy matters).
// Its plan is cut to wave 1 (agents A, B, C): what the daemon does with an item does not depend on
// the number of waves, and `polywave demo`'s own tests run both waves.

const waveOneAgents = ['A', 'B', 'C'];

/** The demo's IMPL manifest with wave 1 only: its waves, file ownership and contracts. */
function waveOneManifest(): string {
  const manifest = parseYaml(demoManifest()) as {
    waves: Array<{ number: number; agents: Array<{ id: string; files: string[] }> }>;
    file_ownership: Array<{ wave: number }>;
    interface_contracts: Array<{ location: string }>;
  };
  manifest.waves = manifest.waves.filter((wave) => wave.number === 1);
  manifest.file_ownership = manifest.file_ownership.filter((row) => row.wave === 1);
  const files = new Set(manifest.waves[0]!.agents.flatMap((agent) => agent.files));
  manifest.interface_contracts = manifest.interface_contracts.filter((contract) => files.has(contract.location));
  return stringifyYaml(manifest);
}

const parent = mkdtempSync(path.join(os.tmpdir(), 'polywave-daemon-test-'));
afterAll(() => rmSync(parent, { recursive: true, force: true }));
const env = { POLYWAVE_NO_EVENTS: '1', POLYWAVE_NO_PRIORITIZE: '1' };

interface Project {
  repo: string;
  script: string;
  item: string;
}

let counter = 0;
async function project(): Promise<Project> {
  counter += 1;
  const dir = path.join(parent, `p${counter}`);
  const repo = path.join(dir, 'textkit');
  const script = path.join(dir, 'agents.script.yaml');
  await initDemoRepository(repo, { ...demoBaseFiles, 'docs/IMPL/IMPL-textkit.yaml': waveOneManifest() }, { ...process.env }, 'textkit: empty library and the IMPL plan');
  writeFileSync(script, demoScript({ stepDelayMs: 0 }));
  const added = await runCli(['queue', 'add', '--title', 'textkit', '--description', 'Text helpers for the sample library.', '--repo-dir', repo]);
  expect(added.code, added.stderr).toBe(0);
  return { repo, script, item: (JSON.parse(added.stdout) as { path: string }).path };
}

function daemon(p: Project, extra: string[]): Promise<CliResult> {
  return runCli(['daemon', '--repo-dir', p.repo, '--model', `script:${p.script}`, '--no-critic', '--json', ...extra], { env, timeoutMs: 600_000 });
}

function itemText(p: Project): string {
  return readFileSync(p.item, 'utf8');
}

function git(cwd: string, args: string[]): string {
  return spawnSync('git', args, { cwd, encoding: 'utf8' }).stdout;
}

function expectLibraryBuilt(repo: string): void {
  const merges = git(repo, ['log', '--merges', '--format=%s']).trim().split('\n');
  for (const agent of waveOneAgents) expect(merges.filter((subject) => subject.includes(`wave`) && subject.includes(`-agent-${agent}`)), agent).toHaveLength(1);
  expect(existsSync(path.join(repo, 'docs', 'IMPL', 'complete', 'IMPL-textkit.yaml'))).toBe(true);
  const tests = spawnSync(process.execPath, ['--test'], { cwd: repo, encoding: 'utf8' });
  expect(tests.status, tests.stdout + tests.stderr).toBe(0);
  expect(tests.stdout).toMatch(new RegExp(`# pass ${waveOneAgents.length}\\b`));
}

describe('polywave daemon: the queue item is the orchestrator\'s file (outside attack X28-06)', () => {
  it.runIf(process.platform === 'linux')('the Scout of an item cannot rewrite it: read-only in its sandbox (not only left out of its audit)', async () => {
    const { sandboxStatus } = await import('../src/sandbox/index.js');
    if (!(await sandboxStatus({ env: process.env })).available) return;
    counter += 1;
    const dir = path.join(parent, `p${counter}`);
    const repo = path.join(dir, 'greeter');
    await initDemoRepository(repo, { ...demoBaseFiles }, { ...process.env }, 'an empty library');
    const added = await runCli(['queue', 'add', '--title', 'greeter', '--description', 'Greeting helpers.', '--repo-dir', repo]);
    expect(added.code, added.stderr).toBe(0);
    const item = (JSON.parse(added.stdout) as { path: string }).path;
    const itemRelative = path.relative(repo, item).split(path.sep).join('/');
    // Exits 0 only when the write is refused by the file system (read-only), 3 when it went through.
    const plant = `const fs=require('fs');try{fs.appendFileSync(${JSON.stringify(itemRelative)},'autonomy_override: autonomous\\n');process.exit(3)}catch(e){process.exit(e.code==='EROFS'?0:4)}`;
    const manifest = waveOneManifest().replace('feature_slug: textkit', 'feature_slug: greeter').replace('state: REVIEWED', 'state: SCOUT_PENDING');
    const script = path.join(dir, 'scout.yaml');
    writeFileSync(script, `version: 1\nagents:\n  scout:\n    steps:\n      - bash: ${JSON.stringify(`node -e ${JSON.stringify(plant)}`)}\n        expect: ok\n      - write: { path: docs/IMPL/IMPL-greeter.yaml, content: ${JSON.stringify(manifest)} }\n      - text: "written"\n`);
    const result = await runCli(['daemon', '--repo-dir', repo, '--model', `script:${script}`, '--no-critic', '--json', '--once', '--autonomy', 'supervised'], { env, timeoutMs: 300_000 });
    expect(result.code, result.stderr).toBe(0);
    const outcome = JSON.parse(result.stdout.split('\n')[0]!) as { status: string; reason?: string };
    expect(outcome, result.stdout + result.stderr).toMatchObject({ type: 'daemon-item', slug: 'greeter', status: 'awaiting_review' });
    const text = readFileSync(item, 'utf8');
    expect(text).not.toContain('autonomy_override');
    expect(text).toMatch(/awaiting_review: true/);
  }, 300_000);
});

describe('polywave daemon', () => {
  let p: Project;
  beforeAll(async () => {
    p = await project();
  });

  it('gated (the default) advances nothing and says why; supervised stops at the plan review', async () => {
    const gated = await daemon(p, ['--once']);
    expect(gated.code, gated.stderr).toBe(0);
    expect(gated.stderr).toContain('autonomy gated does not advance the queue (autonomy_blocked)');
    expect(itemText(p)).toMatch(/status: queued/);

    const supervised = await daemon(p, ['--once', '--autonomy', 'supervised']);
    expect(supervised.code, supervised.stderr).toBe(0);
    const outcome = JSON.parse(supervised.stdout.split('\n')[0]!) as { status: string; reason: string };
    expect(outcome).toMatchObject({ type: 'daemon-item', slug: 'textkit', status: 'awaiting_review' });
    expect(outcome.reason).toContain('polywave run docs/IMPL/IMPL-textkit.yaml --yes');
    expect(itemText(p)).toMatch(/status: in_progress/);
    expect(itemText(p)).toMatch(/awaiting_review: true/);
    expect(git(p.repo, ['log', '--merges', '--format=%s']).trim()).toBe('');
    // Asked again, it does not run the same plan review over and over.
    const again = await daemon(p, ['--once', '--autonomy', 'supervised']);
    expect(again.stdout.trim().split('\n')).toEqual([expect.stringContaining('"type":"daemon-result"')]);
  }, 300_000);

  it('an item allowed to go on (autonomy_override) is run by real agents to COMPLETE, even after the daemon is SIGKILLed mid-wave', async () => {
    writeFileSync(p.item, itemText(p).replace('status: in_progress', 'status: in_progress\nautonomy_override: autonomous'));
    // Kill the daemon once the first agent commit exists, then run it again.
    const child = spawn(process.execPath, [binPath, 'daemon', '--repo-dir', p.repo, '--model', `script:${p.script}`, '--no-critic', '--once', '--autonomy', 'supervised'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const killed = await new Promise<boolean>((resolve) => {
      const timer = setInterval(() => {
        // One git process per poll: main's tip and every agent branch's tip.
        const refs = git(p.repo, ['for-each-ref', '--format=%(refname) %(objectname)', 'refs/heads/main', 'refs/heads/polywave/']).trim().split('\n');
        const main = refs.find((line) => line.startsWith('refs/heads/main '))?.split(' ')[1];
        if (main !== undefined && refs.some((line) => line.startsWith('refs/heads/polywave/') && !line.endsWith(main))) {
          clearInterval(timer);
          child.kill('SIGKILL');
          resolve(true);
        }
      }, 100);
      child.on('exit', () => {
        clearInterval(timer);
        resolve(false);
      });
    });
    await new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve(undefined) : child.on('exit', resolve)));
    expect(killed, stderr).toBe(true);
    expect(itemText(p)).toMatch(/status: in_progress/);

    const resumed = await daemon(p, ['--once', '--autonomy', 'supervised']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout.split('\n')[0]!)).toMatchObject({ slug: 'textkit', status: 'complete', state: 'COMPLETE' });
    expect(itemText(p)).toMatch(/status: complete/);
    expect(itemText(p)).toContain('autonomy_override: autonomous');
    expect(itemText(p)).not.toContain('awaiting_review');
    expectLibraryBuilt(p.repo);
    // Nothing left to do: a later pass runs nothing.
    const idle = await daemon(p, ['--once', '--autonomy', 'autonomous']);
    expect(idle.stdout.trim().split('\n')).toHaveLength(1);
  }, 600_000);

  it('one daemon per repository; bad input is refused with a code and nothing changed', async () => {
    const q = await project();
    const first = spawn(process.execPath, [binPath, 'daemon', '--repo-dir', q.repo, '--model', `script:${q.script}`, '--poll-interval', '1s'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let firstErr = '';
    first.stderr.on('data', (chunk: Buffer) => (firstErr += chunk.toString()));
    await new Promise<void>((resolve, reject) => {
      const deadline = Date.now() + 60_000;
      const timer = setInterval(() => {
        if (firstErr.includes('daemon: watching')) {
          clearInterval(timer);
          resolve();
        } else if (Date.now() > deadline || first.exitCode !== null) {
          clearInterval(timer);
          reject(new Error(`first daemon did not start: ${firstErr}`));
        }
      }, 50);
    });
    const second = await daemon(q, ['--once', '--autonomy', 'autonomous']);
    const error = expectCodedError(second, { exitCode: 1, code: 'Q007_DAEMON_RUNNING' });
    expect(error.message).toContain(`pid ${first.pid}`);
    expect(itemText(q)).toMatch(/status: queued/);
    first.kill('SIGTERM');
    const code = await new Promise<number | null>((resolve) => first.on('exit', (exitCode) => resolve(exitCode)));
    expect(code, firstErr).toBe(0);

    const before = itemText(q);
    expectCodedError(await daemon(q, ['--once', '--autonomy', 'reckless']), { code: 'X001_INVALID_INPUT' });
    expectCodedError(await daemon(q, ['--once', '--poll-interval', 'soon']), { code: 'X001_INVALID_INPUT' });
    expectCodedError(await daemon(q, ['--max-items', '0']), { code: 'X001_INVALID_INPUT' });
    // A hand-written item whose slug climbs out of docs/IMPL/ is blocked, not run.
    const hostile = path.join(path.dirname(q.item), '001-evil.yaml');
    writeFileSync(hostile, 'title: evil\npriority: 1\nslug: ../../../evil\nfeature_description: x\nstatus: queued\n');
    const refused = await daemon(q, ['--once', '--autonomy', 'autonomous', '--max-items', '1']);
    expect(refused.code, refused.stderr).toBe(1);
    expect(JSON.parse(refused.stdout.split('\n')[0]!)).toMatchObject({ slug: '../../../evil', status: 'blocked' });
    expect(readFileSync(hostile, 'utf8')).toMatch(/status: blocked/);
    expect(existsSync(path.join(q.repo, '..', 'evil.yaml'))).toBe(false);
    expect(itemText(q)).toBe(before);
    rmSync(hostile);
    writeFileSync(path.join(path.dirname(q.item), '010-broken.yaml'), '- just\n- a list\n');
    expectCodedError(await daemon(q, ['--once', '--autonomy', 'autonomous']), { code: 'Q006_QUEUE_CORRUPTED_FILE' });
    expect(itemText(q)).toBe(before);
    expect(readdirSync(path.dirname(q.item)).sort()).toEqual(['010-broken.yaml', path.basename(q.item)].sort());
    rmSync(path.join(path.dirname(q.item), '010-broken.yaml'));

    // Found by an outside attack: a FIFO named *.yaml hung the daemon; a symlinked lock file let it overwrite a file outside the repository.
    spawnSync('mkfifo', [path.join(path.dirname(q.item), '020-fifo.yaml')]);
    expectCodedError(await daemon(q, ['--once', '--autonomy', 'autonomous']), { code: 'Q006_QUEUE_CORRUPTED_FILE' });
    rmSync(path.join(path.dirname(q.item), '020-fifo.yaml'));
    const victim = path.join(parent, 'victim.txt');
    writeFileSync(victim, 'precious\n');
    rmSync(path.join(q.repo, '.polywave-state', 'daemon.lock'), { force: true });
    symlinkSync(victim, path.join(q.repo, '.polywave-state', 'daemon.lock'));
    expectCodedError(await daemon(q, ['--once', '--autonomy', 'autonomous']), { code: 'X001_INVALID_INPUT' });
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
    rmSync(path.join(q.repo, '.polywave-state', 'daemon.lock'));
    expectCodedError(await daemon(q, ['--once', '--poll-interval', '600h']), { code: 'X001_INVALID_INPUT' });

    // Fail closed: restrictions the daemon does not understand block the item instead of being ignored.
    writeFileSync(q.item, itemText(q).replace('status: queued', 'status: queued\nautonomy_override: Gated\nrequire_review: yes'));
    const closed = await daemon(q, ['--once', '--autonomy', 'autonomous']);
    expect(closed.code, closed.stderr).toBe(0);
    expect(itemText(q)).toMatch(/status: blocked/);
    expect(itemText(q)).toMatch(/blocked_reason: .*autonomy_override must be gated, supervised, autonomous/);
    expect(git(q.repo, ['log', '--merges', '--format=%s']).trim()).toBe('');
  }, 300_000);

  it('queued items on a depends_on cycle are blocked with the cycle named, never left waiting; an item that is not on it waits for them', async () => {
    const q = await project();
    const queueDir = path.dirname(q.item);
    rmSync(q.item);
    const item = (slug: string, dependsOn: string[]) => `title: ${slug}\npriority: 1\nslug: ${slug}\nfeature_description: x\nstatus: queued\ndepends_on: [${dependsOn.join(', ')}]\n`;
    writeFileSync(path.join(queueDir, '001-alpha.yaml'), item('alpha', ['beta']));
    writeFileSync(path.join(queueDir, '002-beta.yaml'), item('beta', ['gamma']));
    writeFileSync(path.join(queueDir, '003-gamma.yaml'), item('gamma', ['alpha']));
    writeFileSync(path.join(queueDir, '004-delta.yaml'), item('delta', ['alpha']));
    const run = await daemon(q, ['--once', '--autonomy', 'autonomous']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain('daemon: alpha: blocked — depends_on cycle: alpha → beta → gamma → alpha');
    for (const [file, cycle] of [['001-alpha.yaml', 'alpha → beta → gamma → alpha'], ['002-beta.yaml', 'beta → gamma → alpha → beta'], ['003-gamma.yaml', 'gamma → alpha → beta → gamma']] as const) {
      const text = readFileSync(path.join(queueDir, file), 'utf8');
      expect(text).toMatch(/status: blocked/);
      expect(text).toContain(`depends_on cycle: ${cycle}`);
    }
    expect(readFileSync(path.join(queueDir, '004-delta.yaml'), 'utf8')).toMatch(/status: queued/);
    expect(git(q.repo, ['log', '--merges', '--format=%s']).trim()).toBe('');
  }, 120_000);

  it('a run stopped by BLOCKED agents is not retried under gate_failure autonomy: blocked, auto_retries untouched', async () => {
    const q = await project();
    // Agents that do nothing: no commit, no completion report → E42 fails them → the wave is BLOCKED (not a gate).
    writeFileSync(q.script, 'version: 1\nagents: {}\n');
    const run = await daemon(q, ['--once', '--autonomy', 'autonomous', '--max-items', '1']);
    const outcome = JSON.parse(run.stdout.split('\n')[0]!) as { status: string; reason?: string };
    expect(outcome.status, run.stderr).toBe('blocked');
    expect(outcome.reason).toMatch(/BLOCKED|stopped/);
    expect(outcome.reason).not.toContain('auto-retry');
    expect(itemText(q)).toMatch(/status: blocked/);
    expect(itemText(q)).not.toMatch(/auto_retries/);
  }, 300_000);
});

