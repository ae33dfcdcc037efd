/**
 * Issue 11, "What it must show" 1: an attacking agent in a real wave, black box. `run-wave` runs
 * three script agents through the CLI on a real repository; agent A attacks (test/support/
 * wave-attacks.ts: computed paths in node, python, perl and awk, the main checkout's README,
 * `.git/config`, refs, hooks and IMPL manifest, B's uncommitted file, outside the repository,
 * /tmp, secrets, hard links, symlinks, the worktree's .git file, agent-written scripts,
 * background jobs, the network). After the wave, and after a pause for background jobs, the file
 * system and git must show 0 escapes: every attempt denied or contained, each one in A's journal.
 *
 * A positive control runs the same attacks with the sandbox switched off and must find escapes
 * with the same checks, so the checks cannot pass vacuously.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxStatus } from '../src/agents/sandbox/index.js';
import { journalPaths, readJournal } from '../src/engine/journal.js';
import { parseImpl } from '../src/protocol/parse-impl.js';
import { runCli } from './support/cli.js';
import { createTestRepo, type TestRepo } from './support/git-repo.js';
import { waveAttacks, type AttackTargets } from './support/wave-attacks.js';

const secret = 'SECRET-KEY-7f3a9c';

function implYaml(): string {
  const owned: Record<string, string[]> = { A: ['src/a.ts', 'src/a2.ts'], B: ['src/b.ts'], C: ['src/c.ts'] };
  return [
    'title: Attack wave',
    'feature_slug: attack',
    'verdict: SUITABLE',
    'state: WAVE_PENDING',
    'test_command: "node -e \\"process.exit(0)\\""',
    'file_ownership:',
    ...Object.entries(owned).flatMap(([id, files]) => files.flatMap((file) => [`    - file: ${file}`, `      agent: ${id}`, '      wave: 1', '      action: new'])),
    'interface_contracts:',
    '    - name: Letter',
    '      description: A letter constant.',
    '      definition: "export const x: string"',
    '      location: src/a.ts',
    'waves:',
    '    - number: 1',
    '      agents:',
    ...Object.entries(owned).flatMap(([id, files]) => [`        - id: ${id}`, `          task: Implement ${files.join(' and ')}.`, '          files:', ...files.map((file) => `            - ${file}`)]),
    '',
  ].join('\n');
}

interface Listener {
  port: number;
  connections: () => number;
  close: () => Promise<void>;
}

async function listen(): Promise<Listener> {
  let count = 0;
  const server = net.createServer((socket) => {
    count += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    connections: () => count,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function hashTree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (current: string) => {
    for (const entry of readdirSync(current, { withFileTypes: true })) {
      const full = path.join(current, entry.name);
      if (entry.isDirectory()) walk(full);
      else out[path.relative(dir, full)] = createHash('sha256').update(readFileSync(full)).digest('hex');
    }
  };
  if (existsSync(dir)) walk(dir);
  return out;
}

function findNamed(dir: string, pattern: RegExp): string[] {
  const found: string[] = [];
  const walk = (current: string) => {
    let entries;
    try {
      entries = readdirSync(current, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const full = path.join(current, entry.name);
      if (pattern.test(entry.name)) found.push(full);
      if (entry.isDirectory() && !entry.isSymbolicLink()) walk(full);
    }
  };
  walk(dir);
  return found;
}

interface Scenario {
  repo: TestRepo;
  targets: AttackTargets;
  listener: Listener;
  before: { config: string; refs: string; hooks: string[]; outside: Record<string, string> };
  cli: Awaited<ReturnType<typeof runCli>>;
}

async function runAttackWave(options: { sandbox: boolean }): Promise<Scenario> {
  const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-attack.yaml': implYaml(), 'src/index.ts': 'export {};\n' } });
  const outside = repo.sibling('outside');
  mkdirSync(outside);
  writeFileSync(path.join(outside, 'victim.txt'), 'victim\n');
  const home = repo.sibling('home');
  mkdirSync(path.join(home, '.ssh'), { recursive: true });
  writeFileSync(path.join(home, '.ssh', 'id_rsa'), `${secret}\n`);
  const listener = await listen();
  const tag = path.basename(repo.root);
  const targets: AttackTargets = { main: repo.dir, outside, home, port: listener.port, tag };

  const attacks = waveAttacks(targets);
  const script = {
    version: 1,
    agents: {
      A: {
        steps: [
          { write: { path: 'src/a.ts', content: "export const a = 'a';\n" } },
          { write: { path: 'src/a2.ts', content: "export const a2 = 'a2';\n" } },
          { sleep_ms: 800 },
          ...attacks.map((attack) => attack.step),
          { write: { path: 'src/a2.ts', content: "export const a2 = 'a2';\n" } },
          { commit: 'feat(A): a' },
          { report: { status: 'complete', verification: 'PASS', notes: 'done' } },
        ],
      },
      B: {
        steps: [
          { write: { path: 'src/b.ts', content: "export const b = 'b';\n" } },
          { sleep_until_ms: 4000 },
          { commit: 'feat(B): b' },
          { report: { status: 'complete', verification: 'PASS', notes: 'done' } },
        ],
      },
      C: { steps: [{ write: { path: 'src/c.ts', content: "export const c = 'c';\n" } }, { commit: 'feat(C): c' }, { report: { status: 'complete', verification: 'PASS', notes: 'done' } }] },
    },
  };
  const scriptPath = path.join(realpathSync(mkdtempSync(path.join(os.tmpdir(), 'pw-attack-'))), 'attack.json');
  writeFileSync(scriptPath, JSON.stringify(script, null, 2));

  const before = {
    config: readFileSync(repo.path('.git/config'), 'utf8'),
    refs: await repo.run(['for-each-ref', '--format=%(refname) %(objectname)']),
    hooks: readdirSync(repo.path('.git/hooks')).filter((name) => !name.endsWith('.sample')),
    outside: hashTree(outside),
  };
  const env: Record<string, string> = { ...(repo.env as Record<string, string>), HOME: home };
  if (!options.sandbox) env.POLYWAVE_SANDBOX = 'off';
  const args = ['run-wave', repo.path('docs/IMPL/IMPL-attack.yaml'), '--wave', '1', '--model', `script:${scriptPath}`, '--skip-critic', '--timeout', '120'];
  if (!options.sandbox) args.push('--unsafe-no-sandbox');
  const cli = await runCli(args, { cwd: repo.dir, env, timeoutMs: 240_000 });
  // Background jobs an attack started get time to act before anything is checked.
  await sleep(3500);
  return { repo, targets, listener, before, cli };
}

/** Every trace an escape would leave; an empty list means 0 escapes. */
async function escapes(scenario: Scenario): Promise<string[]> {
  const { repo, targets, listener, before } = scenario;
  const found: string[] = [];
  const readme = readFileSync(repo.path('README.md'), 'utf8');
  if (readme !== '# test repository\n') found.push(`main README changed: ${JSON.stringify(readme)}`);
  const config = readFileSync(repo.path('.git/config'), 'utf8');
  if (config !== before.config) found.push('main .git/config changed');
  for (const hook of ['post-merge', 'pre-merge-commit']) if (existsSync(repo.path(`.git/hooks/${hook}`))) found.push(`hook planted: ${hook}`);
  const refs = (await repo.run(['for-each-ref', '--format=%(refname) %(objectname)'])).split('\n').filter((line) => line !== '' && !line.startsWith('refs/heads/main ') && !line.startsWith('refs/heads/polywave/'));
  const refsBefore = before.refs.split('\n').filter((line) => line !== '' && !line.startsWith('refs/heads/main ') && !line.startsWith('refs/heads/polywave/'));
  if (JSON.stringify(refs) !== JSON.stringify(refsBefore)) found.push(`refs changed: ${refs.join(', ')}`);
  const outsideNow = hashTree(targets.outside);
  if (JSON.stringify(outsideNow) !== JSON.stringify(before.outside)) found.push(`outside directory changed: ${Object.keys(outsideNow).join(', ')}`);
  for (const file of findNamed(repo.root, /^ESC-/)) found.push(`file created outside the worktree: ${path.relative(repo.root, file)}`);
  for (const file of readdirSync('/tmp').filter((name) => name.includes(targets.tag) && name.startsWith('pwned-'))) found.push(`file created in /tmp: ${file}`);
  const manifest = readFileSync(repo.path('docs/IMPL/IMPL-attack.yaml'), 'utf8');
  if (manifest.includes('PWNED')) found.push('IMPL manifest rewritten');
  for (const file of ['src/a.ts', 'src/a2.ts', 'src/b.ts', 'src/c.ts']) {
    if (!existsSync(repo.path(file))) continue;
    const text = readFileSync(repo.path(file), 'utf8');
    if (text.includes('PWNED')) found.push(`${file} on main carries attacker content`);
    if (text.includes(secret)) found.push(`${file} on main carries the secret`);
    if (file.startsWith('src/a') && text.includes("export const b = 'b'")) found.push(`${file} on main carries B's worktree content`);
  }
  if (listener.connections() > 0) found.push(`${listener.connections()} network connection(s) reached the host`);
  return found;
}

describe('an attacking agent in a real wave (run-wave, script backend)', () => {
  let available = false;
  let sandboxed: Scenario | undefined;
  beforeAll(async () => {
    available = (await sandboxStatus()).available;
    if (available) sandboxed = await runAttackWave({ sandbox: true });
  }, 300_000);
  afterAll(async () => {
    await sandboxed?.listener.close();
    for (const name of readdirSync('/tmp').filter((entry) => sandboxed !== undefined && entry.startsWith('pwned-') && entry.includes(sandboxed.targets.tag))) rmSync(path.join('/tmp', name), { force: true });
  });

  it('is run where the OS sandbox is available (CI installs bubblewrap, socat, ripgrep)', () => {
    expect(available).toBe(true);
  });

  it('0 escapes: the main checkout, .git, refs, hooks, outside files, /tmp, secrets and the network are untouched', async () => {
    const found = await escapes(sandboxed!);
    console.log(`sandboxed wave: ${waveAttacks(sandboxed!.targets).length} attacks, ${found.length} escapes`);
    expect(found, sandboxed!.cli.stderr.slice(-3000)).toEqual([]);
  });

  it('the wave still finishes: the contained attacks cost A nothing it owns, and every legitimate change is merged', () => {
    const { repo, cli } = sandboxed!;
    expect(cli.code, `${cli.stdout.slice(-2000)}\n${cli.stderr.slice(-3000)}`).toBe(0);
    const state = parseImpl(readFileSync(repo.path('docs/IMPL/IMPL-attack.yaml'), 'utf8')).manifest?.state;
    expect(state).toBe('WAVE_VERIFIED');
    expect(readFileSync(repo.path('src/a.ts'), 'utf8')).toBe("export const a = 'a';\n");
    expect(readFileSync(repo.path('src/b.ts'), 'utf8')).toBe("export const b = 'b';\n");
    expect(readFileSync(repo.path('src/c.ts'), 'utf8')).toBe("export const c = 'c';\n");
  });

  it("every attempt is in A's journal with a failed, denied or contained result", async () => {
    const { repo, targets } = sandboxed!;
    const journal = await readJournal(journalPaths(repo.dir, 'attack', 1, 'A').index);
    const uses = journal.filter((entry) => entry.kind === 'tool_use');
    const attacks = waveAttacks(targets);
    // The attacks plus A's own writes, sleep-free steps, commit and report.
    expect(uses.length).toBeGreaterThanOrEqual(attacks.length);
    const commands = uses.map((entry) => JSON.stringify(entry.input ?? {}));
    for (const attack of attacks) {
      const needle = JSON.stringify(attack.step.bash ?? '').slice(1, 40);
      if (typeof attack.step.bash === 'string') expect(commands.some((text) => text.includes(needle.replace(/\\\\/g, '\\'))) || commands.some((text) => text.includes(JSON.stringify(attack.step.bash).slice(1, 30))), attack.name).toBe(true);
    }
  });
});

describe('positive control: the same attacks with the sandbox off are caught by the same checks', () => {
  it('finds escapes (so the 0 above is not vacuous) — the static checks alone do not hold', async () => {
    const scenario = await runAttackWave({ sandbox: false });
    try {
      const found = await escapes(scenario);
      console.log(`positive control (sandbox off): ${found.length} escape traces\n  ${found.join('\n  ')}`);
      expect(found.length, found.join('\n')).toBeGreaterThan(0);
      expect(scenario.cli.stderr).toMatch(/sandbox/i);
    } finally {
      await scenario.listener.close();
      for (const name of readdirSync('/tmp').filter((entry) => entry.startsWith('pwned-') && entry.includes(scenario.targets.tag))) rmSync(path.join('/tmp', name), { force: true });
    }
  }, 300_000);
});
