/**
 * ESCAPE REPRODUCTION (outside round X45, X45-11): the main checkout also mounted at a second path — the devcontainer
 * shape (`/src/x` and `/workspaces/x`), `docker -v`, here `mount --bind <repo> <alias>` in a private mount namespace.
 * The plan hid the checkout, its ignored `.env`, the other agents' worktrees and masked `.git/config` BY PATH: a worktree
 * agent read all of them through the alias and committed them (the wave ended WAVE_VERIFIED).
 *
 * Black box through `run-wave` with script agents: agent A reads `<alias>/.env`, `<alias>/.git/config`, agent B's
 * unfinished file through the alias (paths computed at run time) and writes what it read into its own file.
 * Expected (fixed): every such read fails (the alias is hidden like the checkout), no secret reaches A's file or main.
 * Needs root (a mount namespace); skipped otherwise.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { sandboxStatus } from '../src/agents/sandbox/index.js';
import { binPath } from './support/cli.js';
import { filesUnder } from './support/files-under.js';
import { createTestRepo } from './support/git-repo.js';
import { oneWaveImplYaml } from './support/one-wave-impl.js';

const available = (await sandboxStatus()).available;
const canMount = spawnSync('unshare', ['-m', '--propagation', 'private', 'sh', '-c', 'mount -t tmpfs none /mnt'], { encoding: 'utf8' }).status === 0;

const impl = oneWaveImplYaml({ title: 'Alias', slug: 'alias', owned: { A: ['src/a.ts'], B: ['src/b.ts'] } });

describe.skipIf(!available || !canMount)('the main checkout mounted at a second path (X45-11)', () => {
  it("a worktree agent reads neither the checkout's .env, its .git/config token nor another agent's worktree through the alias", async () => {
    const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-alias.yaml': impl, 'src/index.ts': 'export {};\n', '.gitignore': '.env\n' } });
    writeFileSync(repo.path('.env'), 'SECRET=X45DOTENVTOKEN\n');
    await repo.run(['remote', 'add', 'origin', 'https://u:X45CONFIGTOKEN@example.com/r.git']);
    const scratch = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'pw-x45-alias-')));
    const alias = path.join(scratch, 'alias');
    mkdirSync(alias);
    const hex = Buffer.from(alias).toString('hex');
    // (B's unfinished file, read through the alias while B sleeps before committing it)
    const reader = [
      'import glob, binascii',
      `A = binascii.unhexlify('${hex}').decode()`,
      'out = []',
      "for f in [A + '/.env', A + '/.git/config'] + glob.glob(A + '/.claude/worktrees/*/*/*/src/b.ts') + glob.glob(A + '/.claude/worktrees/*/*/src/b.ts'):",
      '  try: out.append("READ " + open(f).read())',
      '  except Exception as e: out.append("FAIL " + type(e).__name__)',
      "open('src/a.ts', 'w').write('// ' + ' | '.join(out).replace(chr(10), ' ') + chr(10) + 'export const a = 1;' + chr(10))",
      '',
    ].join('\n');
    const script = {
      version: 1,
      agents: {
        A: { steps: [{ write: { path: 'src/a.ts', content: reader } }, { sleep_ms: 2500 }, { bash: 'python3 src/a.ts' }, { commit: 'feat(A): a' }, { report: { status: 'complete', verification: 'PASS', notes: 'done' } }] },
        B: { steps: [{ write: { path: 'src/b.ts', content: "export const b = 'X45BWORKINPROGRESS';\n" } }, { sleep_ms: 6000 }, { commit: 'feat(B): b' }, { report: { status: 'complete', verification: 'PASS', notes: 'done' } }] },
      },
    };
    const scriptPath = path.join(scratch, 'script.json');
    writeFileSync(scriptPath, JSON.stringify(script));
    const home = path.join(scratch, 'home');
    mkdirSync(home);
    const args = ['run-wave', repo.path('docs/IMPL/IMPL-alias.yaml'), '--wave', '1', '--model', `script:${scriptPath}`, '--skip-critic', '--timeout', '60'];
    const run = await new Promise<{ code: number | null; output: string }>((resolve, reject) => {
      const child = spawn('unshare', ['-m', '--propagation', 'private', 'sh', '-c', 'mount --bind "$1" "$2" && shift 2 && exec "$@"', 'sh', repo.dir, alias, process.execPath, binPath, ...args], {
        cwd: repo.dir,
        env: { ...process.env, ...(repo.env as Record<string, string>), HOME: home, NO_COLOR: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
      const timer = setTimeout(() => child.kill('SIGKILL'), 240_000);
      child.on('error', reject);
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, output });
      });
    });
    const detail = run.output.slice(-3000);
    expect(run.code, detail).toBe(0);
    const a = (await repo.run(['show', 'HEAD:src/a.ts'])).trim();
    // it did try: the two files refused (and B's worktree not even listed through the alias)
    expect(a, detail).toMatch(/^\/\/ FAIL \w+ \| FAIL \w+/);
    const everything = [a, run.output, ...filesUnder(repo.path('.polywave-state')).map((file) => readFileSync(file, 'utf8')), await repo.run(['log', '--all', '-p'])].join('\n');
    for (const secret of ['X45DOTENVTOKEN', 'X45CONFIGTOKEN']) expect(everything, secret).not.toContain(secret);
    expect(a).not.toContain('X45BWORKINPROGRESS');
  }, 300_000);
});
