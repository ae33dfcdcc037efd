/**
 * Issue 11, X39-01: with the tool executor (the script and ai-sdk backends: one sandbox per agent, a plain process
 * start per bash call), a path that appears DURING one long bash call — here another agent's worktree added beside
 * the repository, with an uncommitted `.env` — was readable to that call until it ended: bubblewrap's mounts are fixed
 * for the sandbox's life, and the appeared-since-start check ran only between calls. Now the executor runs the same
 * check every 500 ms while a command runs (and once more as it ends): a stale view kills the command and everything
 * it started, withholds its output, and the backend ends the run as a transient failure (`SANDBOX_VIEW_STALE`), which
 * run-wave relaunches (E19) in a sandbox that hides it.
 *
 * Black box through `run-wave` with script agents: agent A's first attempt runs a 20 s node loop that tries, every
 * 100 ms, to read the late worktree's `.env` through a computed path (the static check cannot see it; only the
 * sandbox can hide it). The test adds that worktree once the loop runs. Before the fix the loop printed the secret
 * into A's journal and ran its full 20 s.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { sandboxStatus } from '../src/agents/sandbox/index.js';
import { parseImpl } from '../src/protocol/parse-impl.js';
import { runCli } from './support/cli.js';
import { filesUnder } from './support/files-under.js';
import { createTestRepo, type TestRepo } from './support/git-repo.js';

const secret = 'SECRET-X39-01-during-call';
const available = (await sandboxStatus()).available;

function implYaml(): string {
  const owned: Record<string, string> = { A: 'src/a.ts', B: 'src/b.ts' };
  return [
    'title: During a call',
    'feature_slug: during',
    'verdict: SUITABLE',
    'state: WAVE_PENDING',
    'test_command: "node -e \\"process.exit(0)\\""',
    'file_ownership:',
    ...Object.entries(owned).flatMap(([id, file]) => [`    - file: ${file}`, `      agent: ${id}`, '      wave: 1', '      action: new']),
    'interface_contracts:',
    '    - name: Letter',
    '      description: A letter constant.',
    '      definition: "export const a: string"',
    '      location: src/a.ts',
    'waves:',
    '    - number: 1',
    '      agents:',
    ...Object.entries(owned).flatMap(([id, file]) => [`        - id: ${id}`, `          task: Implement ${file}.`, '          files:', `            - ${file}`]),
    '',
  ].join('\n');
}

/**
 * Agent A's first attempt loops 20 s reading `lateEnv` (a computed path); once it runs, `appear` makes the path. The call
 * must be killed, its output withheld, the run relaunched, the wave verified, and the secret nowhere.
 */
async function killedWhenItAppears(where: (repo: TestRepo) => { late: string; lateEnv: string }, appear: (repo: TestRepo, late: string, lateEnv: string) => Promise<void>, shown: 'dir' | 'file', options: { retryReads?: boolean; files?: Record<string, string> } = {}): Promise<void> {
    const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-during.yaml': implYaml(), 'src/index.ts': 'export {};\n', ...options.files } });
    const { late, lateEnv } = where(repo);
    const hex = Buffer.from(lateEnv).toString('hex');
    // (started: A writes its owned file first, so the test knows the loop runs)
    const loop = `node -e "const fs=require('fs');fs.writeFileSync('src/a.ts','export const a = \\'0\\';\\n');const p=Buffer.from('${hex}','hex').toString();const end=Date.now()+20000;let seen=false;const tick=()=>{try{const t=fs.readFileSync(p,'utf8');if(!seen){process.stdout.write('READ:'+t);seen=true}}catch(e){}if(Date.now()<end)setTimeout(tick,100);else console.log('LOOP'+'-ENDED')};tick()"`;
    const finish = [
      { write: { path: 'src/a.ts', content: "export const a = 'a';\n" } },
      { commit: 'feat(A): a' },
      { report: { status: 'complete', verification: 'PASS', notes: 'done' } },
    ];
    const script = {
      version: 1,
      agents: {
        // (retryReads, X43-07: the relaunch reads the path again for 3 s — a model retries what it was doing)
        A: { attempts: { 1: [{ bash: loop }, ...finish] }, steps: options.retryReads ? [{ bash: loop.replace('20000', '3000').replace("'LOOP'+'-ENDED'", "'RETRY'+'-ENDED'") }, ...finish] : finish },
        B: { steps: [{ write: { path: 'src/b.ts', content: "export const b = 'b';\n" } }, { commit: 'feat(B): b' }, { report: { status: 'complete', verification: 'PASS', notes: 'done' } }] },
      },
    };
    const scriptDir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'pw-during-')));
    const scriptPath = path.join(scriptDir, 'during.json');
    writeFileSync(scriptPath, JSON.stringify(script, null, 2));
    const home = repo.sibling('home');
    mkdirSync(home);
    const env: Record<string, string> = { ...(repo.env as Record<string, string>), HOME: home };

    const wave = runCli(['run-wave', repo.path('docs/IMPL/IMPL-during.yaml'), '--wave', '1', '--model', `script:${scriptPath}`, '--skip-critic', '--timeout', '120'], { cwd: repo.dir, env, timeoutMs: 240_000 });
    let ended = false;
    void wave.finally(() => (ended = true));
    // the loop runs once A's src/a.ts is there in its worktree
    const worktrees = repo.path('.claude/worktrees');
    const loopRuns = () => filesUnder(worktrees).some((file) => file.endsWith(`${path.sep}src${path.sep}a.ts`) && file.includes('agent-A'));
    const deadline = Date.now() + 120_000;
    while (!ended && !loopRuns() && Date.now() < deadline) await sleep(100);
    expect(loopRuns(), 'A\'s first attempt started its loop').toBe(true);
    await sleep(1_000);
    const addedAt = Date.now();
    await appear(repo, late, lateEnv);
    const cli = await wave;
    const detail = `${cli.stdout.slice(-2000)}\n${cli.stderr.slice(-3000)}`;

    // nothing A's runs left anywhere carries the secret: the journal (tool results too), its worktree, the CLI's output
    const stateFiles = filesUnder(repo.path('.polywave-state'));
    expect(stateFiles.length).toBeGreaterThan(0);
    const carrying = [...stateFiles, ...filesUnder(worktrees)].filter((file) => readFileSync(file, 'utf8').includes(secret));
    expect(carrying, detail).toEqual([]);
    expect(`${cli.stdout}\n${cli.stderr}`).not.toContain(secret);
    const journalText = stateFiles.filter((file) => file.includes('agent-A')).map((file) => readFileSync(file, 'utf8')).join('\n');
    // the call was killed (not run to its end), and said why
    expect(journalText).not.toContain('LOOP-ENDED');
    expect(journalText).toContain('[SANDBOX_VIEW_STALE]');
    expect(journalText).toContain(shown === 'file' ? lateEnv : late);
    // the relaunch (attempt 2) finished the work: the wave is merged and verified
    expect(cli.code, detail).toBe(0);
    expect(parseImpl(readFileSync(repo.path('docs/IMPL/IMPL-during.yaml'), 'utf8')).manifest?.state).toBe('WAVE_VERIFIED');
    expect(readFileSync(repo.path('src/a.ts'), 'utf8')).toBe("export const a = 'a';\n");
    expect(existsSync(lateEnv)).toBe(true);
    // bounded: the first attempt ended well before its loop's 20 s (it started ~1 s before the worktree was added)
    const firstRun = /\[A\] failed — [^\n]*?, ([\d.]+)s: failed: SANDBOX_VIEW_STALE/.exec(cli.stderr);
    expect(firstRun, detail).not.toBeNull();
    expect(Number(firstRun![1])).toBeLessThan(12);
    expect(Date.now() - addedAt).toBeGreaterThan(0);
}

describe.skipIf(!available)('a path that appears DURING one long bash call of the tool executor (X39-01)', () => {
  it('the call is killed within about 0.5 s, its output withheld, the run ends transient and is relaunched; the secret is nowhere', async () => {
    await killedWhenItAppears(
      (repo) => ({ late: repo.sibling('wt-late'), lateEnv: path.join(repo.sibling('wt-late'), '.env') }),
      async (repo, late, lateEnv) => {
        // (detached: a new branch would be a ref change finalize-wave's tamper check refuses — not what this test is about)
        await repo.run(['worktree', 'add', '--quiet', '--detach', late, 'HEAD']);
        writeFileSync(lateEnv, `${secret}=agent-C\n`);
      },
      'dir',
    );
  }, 300_000);
});

// Outside round X42-03: a secret-named file that appears directly in a directory ABOVE the repository while an agent
// runs (`<parent>/.env.late`) was readable to it — the plan hides the parents' secret-named files as they are at its
// start only. The appeared-since-start check lists the parent directories again (when their change time moved).
describe.skipIf(!available)('a secret-named file that appears in a parent directory during a run (X42-03)', () => {
  it('the call is killed, its output withheld, the run ends transient and is relaunched; the secret is nowhere', async () => {
    await killedWhenItAppears(
      (repo) => ({ late: path.dirname(repo.dir), lateEnv: path.join(path.dirname(repo.dir), '.env.late') }),
      async (_repo, _late, lateEnv) => writeFileSync(lateEnv, `${secret}=late\n`),
      'file',
      { retryReads: true },
    );
  }, 300_000);
});

// Outside round X43-15/16: the plan hides what is not git's own at the top of the git directory and the secret-named files
// at the top of the main checkout's `node_modules` (bound back into every worktree agent's sandbox) by name, as listed
// when it is made; one made there during a run was readable. The appeared-since-start check lists those places again.
describe.skipIf(!available)('a credential file that appears at the top of .git or of the shared node_modules during a run (X43-15/16)', () => {
  it('.git/.git-credentials (a credential store made during the run): the call is killed, its output withheld, the relaunch cannot read it', async () => {
    await killedWhenItAppears(
      (repo) => ({ late: repo.path('.git'), lateEnv: repo.path('.git/.git-credentials') }),
      async (_repo, _late, lateEnv) => writeFileSync(lateEnv, `https://user:${secret}@example.invalid\n`),
      'file',
      { retryReads: true },
    );
  }, 300_000);

  it('node_modules/.env.production in the main checkout (ignored, bound back read-only): the call is killed, its output withheld, the relaunch cannot read it', async () => {
    await killedWhenItAppears(
      (repo) => {
        mkdirSync(repo.path('node_modules/left-pad'), { recursive: true });
        writeFileSync(repo.path('node_modules/left-pad/index.js'), 'module.exports = 1;\n');
        return { late: repo.path('node_modules'), lateEnv: repo.path('node_modules/.env.production') };
      },
      async (_repo, _late, lateEnv) => writeFileSync(lateEnv, `${secret}=late\n`),
      'file',
      { retryReads: true, files: { '.gitignore': 'node_modules/\n' } },
    );
  }, 300_000);
});
