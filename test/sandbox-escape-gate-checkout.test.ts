/**
 * ESCAPE REPRODUCTION (outside attacks X3 #18, X4 #19/#24; issue 11). After the merge, finalize-wave
 * runs the merged agent code on the main checkout: the post-merge quality gates (for a solo wave, all
 * its gates) and verify-build's test_command. They ran sandboxed, but with the main checkout writable
 * (all but `.git`), so an agent's test wrote the checkout's IGNORED files, which the user later runs
 * outside any sandbox: `node_modules/.bin/tsc` (the next `npm run build`), `.envrc` (direnv), `dist/`.
 * The agent writes only files it owns; the jail, I1/E42 and the tamper check all pass.
 *
 * Fixed: these commands run in a throwaway checkout of the merged tree (src/gates/throwaway-checkout.ts),
 * with the checkout's `node_modules` linked in read-only; nothing they write persists. One solo wave
 * runs both (gate tagged `gate`, verify-build tagged `vb`); each must have run and passed (it can read
 * the installed dependency), and the main checkout's ignored files must be unchanged. With the opt-out
 * POLYWAVE_UNSAFE_GATES_IN_CHECKOUT=1 (the behaviour before the fix) this test fails.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { sandboxStatus } from '../src/sandbox/index.js';
import { runCli } from './support/cli.js';
import { createTestRepo } from './support/git-repo.js';

const available = (await sandboxStatus()).available;

const impl = [
  'title: Gate checkout wave',
  'feature_slug: gc',
  'verdict: SUITABLE',
  'state: WAVE_PENDING',
  'test_command: "EVIL_TAG=vb node --test src/"',
  'quality_gates:',
  '    level: standard',
  '    gates:',
  '        - type: test',
  '          command: EVIL_TAG=gate node --test src/',
  '          required: true',
  '          timing: post-merge',
  'file_ownership:',
  ...['src/a.ts', 'src/a.test.mjs'].flatMap((file) => [`    - file: ${file}`, '      agent: A', '      wave: 1', '      action: new']),
  'interface_contracts:',
  '    - name: Letter',
  '      description: A letter constant.',
  '      definition: "export const a: string"',
  '      location: src/a.ts',
  'waves:',
  '    - number: 1',
  '      agents:',
  '        - id: A',
  '          task: Implement src/a.ts with a test.',
  '          files:',
  '            - src/a.ts',
  '            - src/a.test.mjs',
  '',
].join('\n');

/**
 * Agent A's test: it needs the installed dependency and a writable tool cache in node_modules/.cache
 * (a normal project), leaves a "ran" marker in the
 * gate build cache (writable in every gate sandbox), then plants what the user would run later.
 */
const agentTest = [
  "import fs from 'node:fs'; import path from 'node:path'; import test from 'node:test';",
  "test('a', () => {",
  "  if (fs.readFileSync('node_modules/dep/index.js', 'utf8').trim() !== 'module.exports = 1;') throw new Error('dependency not visible');",
  '  const tag = process.env.EVIL_TAG;',
  "  fs.mkdirSync('node_modules/.cache/tool', { recursive: true }); fs.writeFileSync('node_modules/.cache/tool/' + tag, tag); // a tool's cache stays writable",
  "  fs.writeFileSync('dist-ok-' + tag, tag); // and so is the tree",
  "  fs.writeFileSync(path.join(process.env.XDG_CACHE_HOME, 'ran-' + tag), tag);",
  "  const tries = [['node_modules/.bin/evil-' + tag, 'evil'], ['node_modules/.bin/tsc', 'evil-tsc ' + tag], ['.envrc', 'evil-envrc ' + tag], ['dist/evil-' + tag, 'evil'], ['.vscode/tasks.json', 'evil']];",
  '  for (const [file, text] of tries) { try { fs.mkdirSync(path.dirname(file), { recursive: true }); fs.writeFileSync(file, text); } catch {} }',
  '});',
  '',
].join('\n');

describe('post-merge gates and verify-build cannot persist writes in the main checkout', () => {
  it.skipIf(!available)('an agent test run after the merge leaves node_modules/.bin, .envrc, dist/ and .vscode/ of the main checkout unchanged', async () => {
    const repo = await createTestRepo({
      files: { 'docs/IMPL/IMPL-gc.yaml': impl, 'src/index.ts': 'export {};\n', '.gitignore': '.polywave-state/\nnode_modules/\n.envrc\ndist/\n.vscode/\n' },
    });
    // The user's ignored files: installed dependencies and a direnv file.
    mkdirSync(repo.path('node_modules/.bin'), { recursive: true });
    mkdirSync(repo.path('node_modules/dep'), { recursive: true });
    writeFileSync(repo.path('node_modules/dep/index.js'), 'module.exports = 1;\n');
    writeFileSync(repo.path('node_modules/.bin/tsc'), 'original tsc\n');
    writeFileSync(repo.path('.envrc'), 'original envrc\n');
    const home = repo.sibling('home');
    mkdirSync(home);
    const script = {
      version: 1,
      agents: {
        A: {
          steps: [
            { write: { path: 'src/a.ts', content: "export const a = 'a';\n" } },
            { write: { path: 'src/a.test.mjs', content: agentTest } },
            { commit: 'feat(A): a and its test' },
            { report: { status: 'complete', verification: 'PASS', notes: 'done' } },
          ],
        },
      },
    };
    const scriptPath = path.join(realpathSync(mkdtempSync(path.join(os.tmpdir(), 'pw-g1-'))), 'script.json');
    writeFileSync(scriptPath, JSON.stringify(script));
    const env: Record<string, string> = { ...(repo.env as Record<string, string>), HOME: home };
    delete env.XDG_CACHE_HOME;
    const cli = await runCli(['run-wave', repo.path('docs/IMPL/IMPL-gc.yaml'), '--wave', '1', '--model', `script:${scriptPath}`, '--skip-critic', '--timeout', '120'], {
      cwd: repo.dir,
      env,
      timeoutMs: 240_000,
    });
    const transcript = cli.stdout + cli.stderr;
    // The wave went through: both commands ran (their markers), saw the dependency and passed.
    expect(cli.code, transcript).toBe(0);
    const caches = path.join(home, '.cache', 'polywave', 'gate-build-cache');
    const ran = existsSync(caches) ? readdirSync(caches).flatMap((entry) => (existsSync(path.join(caches, entry, 'xdg')) ? readdirSync(path.join(caches, entry, 'xdg')) : [])) : [];
    expect(ran.filter((name) => name.startsWith('ran-')).sort(), transcript).toEqual(['ran-gate', 'ran-vb']);

    const escapes: string[] = [];
    const planted = readdirSync(repo.path('node_modules/.bin')).filter((name) => name !== 'tsc');
    if (planted.length > 0) escapes.push(`node_modules/.bin gained ${planted.join(', ')}`);
    if (readFileSync(repo.path('node_modules/.bin/tsc'), 'utf8') !== 'original tsc\n') escapes.push(`node_modules/.bin/tsc rewritten: ${readFileSync(repo.path('node_modules/.bin/tsc'), 'utf8')}`);
    if (readFileSync(repo.path('.envrc'), 'utf8') !== 'original envrc\n') escapes.push(`.envrc rewritten: ${readFileSync(repo.path('.envrc'), 'utf8')}`);
    if (existsSync(repo.path('dist'))) escapes.push(`dist/ created: ${readdirSync(repo.path('dist')).join(', ')}`);
    if (existsSync(repo.path('.vscode'))) escapes.push('.vscode/tasks.json created');
    if (existsSync(repo.path('node_modules/.cache'))) escapes.push('node_modules/.cache created');
    const leftovers = readdirSync(repo.dir).filter((name) => name.startsWith('dist-ok-'));
    if (leftovers.length > 0) escapes.push(`left in the checkout: ${leftovers.join(', ')}`);
    expect(escapes).toEqual([]);
    // No throwaway checkout is left registered (or on disk).
    const worktrees = await repo.run(['worktree', 'list', '--porcelain']);
    expect(worktrees.split('\n').filter((line) => line.startsWith('worktree ')).length, worktrees).toBe(1);
  }, 300_000);
});
