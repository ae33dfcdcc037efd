/**
 * The rig of the "git config replaced or made during a worktree agent's run" escapes (X43-18, X44-09): a two-agent wave
 * through `run-wave` with script agents; agent A's first attempt loops 20 s reading `watched` (a computed path) and prints
 * it once it carries `token`; once the loop runs, `change` writes the token into the repository's git configuration.
 * Expected: the call is killed, its output withheld, the run ends `SANDBOX_VIEW_STALE` — and the token is nowhere in the
 * journals, the worktrees or the CLI's output.
 */
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import { runCli } from './cli.js';
import { filesUnder } from './files-under.js';
import { createTestRepo, type TestRepo } from './git-repo.js';

const impl = [
  'title: Config',
  'feature_slug: config',
  'verdict: SUITABLE',
  'state: WAVE_PENDING',
  'test_command: "true"',
  'file_ownership:',
  ...['A', 'B'].flatMap((id) => [`    - file: src/${id.toLowerCase()}.ts`, `      agent: ${id}`, '      wave: 1', '      action: new']),
  'waves:',
  '    - number: 1',
  '      agents:',
  ...['A', 'B'].flatMap((id) => [`        - id: ${id}`, `          task: Implement src/${id.toLowerCase()}.ts.`, '          files:', `            - src/${id.toLowerCase()}.ts`]),
  '',
].join('\n');

export async function expectLateConfigTokenNeverRead(options: { token: string; setup: (repo: TestRepo) => Promise<void>; watched: (repo: TestRepo) => string; change: (repo: TestRepo) => Promise<void> }): Promise<void> {
  const { token } = options;
  const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-config.yaml': impl, 'src/index.ts': 'export {};\n' } });
  await options.setup(repo);
  const hex = Buffer.from(options.watched(repo)).toString('hex');
  const tokenHex = Buffer.from(token).toString('hex');
  const loop = `node -e "const fs=require('fs');fs.writeFileSync('src/a.ts','export const a = \\'0\\';\\n');const p=Buffer.from('${hex}','hex').toString();const k=Buffer.from('${tokenHex}','hex').toString();const end=Date.now()+20000;const tick=()=>{try{const t=fs.readFileSync(p,'utf8');if(t.includes(k)){process.stdout.write('READ:'+t);return}}catch(e){}if(Date.now()<end)setTimeout(tick,100);else console.log('LOOP'+'-ENDED')};tick()"`;
  const finish = [{ write: { path: 'src/a.ts', content: "export const a = 'a';\n" } }, { commit: 'feat(A): a' }, { report: { status: 'complete', verification: 'PASS', notes: 'done' } }];
  const script = {
    version: 1,
    agents: {
      A: { attempts: { 1: [{ bash: loop }, ...finish] }, steps: [{ bash: loop }, ...finish] },
      B: { steps: [{ write: { path: 'src/b.ts', content: "export const b = 'b';\n" } }, { commit: 'feat(B): b' }, { report: { status: 'complete', verification: 'PASS', notes: 'done' } }] },
    },
  };
  const scriptPath = path.join(realpathSync(mkdtempSync(path.join(os.tmpdir(), 'pw-late-config-'))), 'script.json');
  writeFileSync(scriptPath, JSON.stringify(script));
  const home = repo.sibling('home');
  mkdirSync(home);
  const env: Record<string, string> = { ...(repo.env as Record<string, string>), HOME: home };
  const wave = runCli(['run-wave', repo.path('docs/IMPL/IMPL-config.yaml'), '--wave', '1', '--model', `script:${scriptPath}`, '--skip-critic', '--timeout', '60'], { cwd: repo.dir, env, timeoutMs: 240_000 });
  let ended = false;
  void wave.finally(() => (ended = true));
  const worktrees = repo.path('.claude/worktrees');
  const loopRuns = () => filesUnder(worktrees).some((file) => file.endsWith(`${path.sep}src${path.sep}a.ts`) && file.includes('agent-A'));
  const deadline = Date.now() + 120_000;
  while (!ended && !loopRuns() && Date.now() < deadline) await sleep(100);
  expect(loopRuns(), "A's first attempt started its loop").toBe(true);
  await sleep(1_000);
  await options.change(repo);
  const cli = await wave;
  const detail = `${cli.stdout.slice(-2000)}\n${cli.stderr.slice(-3000)}`;
  const stateFiles = filesUnder(repo.path('.polywave-state'));
  expect(stateFiles.length).toBeGreaterThan(0);
  const carrying = [...stateFiles, ...filesUnder(worktrees)].filter((file) => readFileSync(file, 'utf8').includes(token));
  expect(carrying, detail).toEqual([]);
  expect(`${cli.stdout}\n${cli.stderr}`).not.toContain(token);
  const journalText = stateFiles.filter((file) => file.includes('agent-A')).map((file) => readFileSync(file, 'utf8')).join('\n');
  expect(journalText, detail).toContain('[SANDBOX_VIEW_STALE]');
}
