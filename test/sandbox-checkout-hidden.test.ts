/**
 * Issue 11 (outside attack X16 #8 and #5, documented until now): an agent or gate working in a
 * worktree saw the main checkout through a DENY-list taken when its sandbox started — a `.env` the
 * user wrote into the checkout while the agent ran was readable, and past 300 ignored paths the rest
 * stayed readable. The main checkout is now hidden whole from a sandbox working elsewhere; only its
 * git directory and its dependency/build directories are bound back, read-only.
 *
 * Black box through `run-wave` with a script agent: the agent waits until the test has written new
 * files into the main checkout (after the agent's sandbox started), then tries every way to read
 * them, the user's uncommitted edit of a tracked file, an ignored file past the old limit, and copies
 * whatever it got into its own file, which is merged. Positive control in the same agent: the main
 * checkout's `node_modules` (bound back read-only) and `.git` (git log) still work, and a write into the
 * hidden view fails (read-only), rather than vanishing. A gate in the
 * worktree gets the same checks.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { runGates } from '../src/gates/run-gates.js';
import { sandboxStatus } from '../src/sandbox/index.js';
import { runCli } from './support/cli.js';
import { createTestRepo } from './support/git-repo.js';

const available = (await sandboxStatus()).available;

const implYaml = [
  'title: Hidden checkout',
  'feature_slug: hidden',
  'verdict: SUITABLE',
  'state: WAVE_PENDING',
  'test_command: "true"',
  'file_ownership:',
  '    - file: loot.txt',
  '      agent: A',
  '      wave: 1',
  '      action: new',
  '    - file: b.txt',
  '      agent: B',
  '      wave: 1',
  '      action: new',
  'waves:',
  '    - number: 1',
  '      agents:',
  '        - id: A',
  '          task: Write loot.txt.',
  '          files:',
  '            - loot.txt',
  '        - id: B',
  '          task: Write b.txt.',
  '          files:',
  '            - b.txt',
  '',
].join('\n');

describe('the main checkout is hidden whole from sandboxes working elsewhere (issue 11)', () => {
  it.skipIf(!available)('files written into it after the agent started, uncommitted edits, ignored files past the old 300 limit: unreadable; node_modules and .git still work', async () => {
    const repo = await createTestRepo({
      files: {
        'docs/IMPL/IMPL-hidden.yaml': implYaml,
        'src/index.ts': 'export const x = 1;\n',
        '.gitignore': 'node_modules/\n/out-*.txt\n/.claude/\n/late.env\n',
      },
    });
    const main = repo.dir;
    mkdirSync(path.join(main, 'node_modules', 'dep'), { recursive: true });
    writeFileSync(path.join(main, 'node_modules', 'dep', 'index.js'), 'DEP-READABLE\n');
    // 320 ignored files: the old deny-list stopped at 300, the last ones stayed readable
    for (let index = 0; index < 320; index += 1) writeFileSync(path.join(main, `out-${String(index).padStart(3, '0')}.txt`), index === 319 ? 'SECRET-PAST-LIMIT\n' : 'x\n');
    const signal = repo.sibling('signal');
    mkdirSync(signal);
    const go = path.join(signal, 'go');

    // One python program, base64 on the command line: the static check refuses `cd ..` out of the root, absolute
    // outside paths and paths built from variables, so only an interpreter computing them at run time gets this far.
    const program = [
      'import os, subprocess, base64, time',
      "r = os.path.abspath('.')",
      'for _ in range(5): r = os.path.dirname(r)',
      `go = base64.b64decode('${Buffer.from(go).toString('base64')}').decode()`,
      'while not os.path.exists(go): time.sleep(0.1)',
      "out = open('loot.txt', 'a')",
      "for f in ['late.env', 'src/index.ts', 'out-319.txt']:",
      '    try: out.write(open(os.path.join(r, f)).read())',
      "    except Exception as e: out.write('ERR %s %s\\n' % (f, type(e).__name__))",
      "out.write('\\n'.join(os.listdir(r)) + '\\n')",
      "try: out.write(open(os.path.join(r, 'node_modules/dep/index.js')).read())",
      "except Exception as e: out.write('DEP-ERR %s\\n' % e)",
      "if subprocess.run(['git', 'log', '--oneline', '-1'], capture_output=True).returncode == 0: out.write('GIT-WORKS\\n')",
      "for name, tag in [('.git/planted', 'GIT-READ-ONLY'), ('planted', 'MAIN-READ-ONLY')]:",
      '    try: open(os.path.join(r, name), "w").write("x")',
      "    except OSError as e: out.write('%s %s\\n' % (tag, e.strerror))",
      'out.close()',
    ].join('\n');
    const grab = `python3 -c "import base64; exec(base64.b64decode('${Buffer.from(program).toString('base64')}'))"`;
    const script = {
      version: 1,
      agents: {
        A: {
          steps: [
            { write: { path: 'loot.txt', content: 'start\n' } },
            { bash: grab },
            { commit: 'feat(A): loot' },
            { report: { status: 'complete', verification: 'PASS', notes: 'done' } },
          ],
        },
        B: { steps: [{ write: { path: 'b.txt', content: 'b\n' } }, { commit: 'feat(B): b' }, { report: { status: 'complete', verification: 'PASS', notes: 'done' } }] },
      },
    };
    const scriptPath = path.join(signal, 'script.json');
    writeFileSync(scriptPath, JSON.stringify(script));
    const home = repo.sibling('home');
    mkdirSync(home);
    const env: Record<string, string> = { ...(repo.env as Record<string, string>), HOME: home };
    const running = runCli(['run-wave', path.join(main, 'docs/IMPL/IMPL-hidden.yaml'), '--wave', '1', '--model', `script:${scriptPath}`, '--skip-critic', '--timeout', '120'], { cwd: main, env, timeoutMs: 180_000 });
    // The agent has started (its sandbox with it) once its first write is in its worktree.
    const worktreeLoot = path.join(main, '.claude/worktrees/polywave/hidden/wave1-agent-A/loot.txt');
    let ended: Awaited<typeof running> | undefined;
    void running.then((result) => (ended = result));
    for (let waited = 0; !existsSync(worktreeLoot) && ended === undefined && waited < 120_000; waited += 100) await sleep(100);
    expect(existsSync(worktreeLoot), `run-wave ended first: ${ended?.stdout ?? ''}${ended?.stderr ?? ''}`).toBe(true);
    writeFileSync(path.join(main, 'late.env'), 'API_TOKEN=SECRET-WRITTEN-LATER\n');
    writeFileSync(go, '');
    const cli = await running;
    expect(cli.code, cli.stderr).toBe(0);

    const loot = await repo.run(["show", "HEAD:loot.txt"]);
    for (const secret of ['SECRET-WRITTEN-LATER', 'SECRET-PAST-LIMIT']) expect(loot, secret).not.toContain(secret);
    // not even the checkout's tracked files: the agent has them in its own tree
    expect(loot).not.toContain('export const x');
    // the computed path reached the real main checkout (not a wrong directory): it sees the bound-back entries only
    expect(loot).toMatch(/^\.git$/m);
    expect(loot).not.toMatch(/^src$|^late\.env$|^out-000\.txt$/m);
    expect(loot).toContain('DEP-READABLE');
    expect(loot).toContain('GIT-WORKS');
    expect(loot).toContain('GIT-READ-ONLY');
    // the empty view is read-only too: a write there fails instead of vanishing
    expect(loot).toContain('MAIN-READ-ONLY Read-only file system');
    expect(existsSync(path.join(main, 'planted'))).toBe(false);
    expect(existsSync(path.join(main, '.git', 'planted'))).toBe(false);

    // A gate in a worktree: same view, also of the user's uncommitted work in a tracked file.
    writeFileSync(path.join(main, 'src', 'index.ts'), 'export const x = 1; // SECRET-UNCOMMITTED\n');
    const worktree = repo.sibling('wt-gate');
    await repo.run(['worktree', 'add', '--quiet', '-b', 'polywave/hidden/wave2-agent-B', worktree]);
    await runGates({
      repoDir: worktree,
      gates: [{ type: 'test', command: `for f in late.env src/index.ts out-319.txt; do cat ${main}/$f; done > gate-loot.txt 2>&1; cat ${main}/node_modules/dep/index.js >> gate-loot.txt; true`, required: true }],
      noCache: true,
      env,
    });
    const gateLoot = readFileSync(path.join(worktree, 'gate-loot.txt'), 'utf8');
    for (const secret of ['SECRET-WRITTEN-LATER', 'SECRET-UNCOMMITTED', 'SECRET-PAST-LIMIT']) expect(gateLoot, secret).not.toContain(secret);
    expect(gateLoot).toContain('DEP-READABLE');
  }, 240_000);
});
