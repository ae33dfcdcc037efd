import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { acquireRunLock, holdsRunLock, readRunLockHolder, runLockPath } from '../src/cli/run-lock.js';
import { runCli } from './support/cli.js';
import { makeTempDir } from './support/temp.js';

/**
 * attack-serve-17 X1: the wave commands take the plan's run lock (the one `polywave run` and
 * `polywave serve` take), and the lock is re-entrant within one process (a nested take of the
 * kernel's open-file-description lock on a second descriptor would refuse itself).
 */
describe('run lock (attack-serve-17 X1)', () => {
  it('is re-entrant in one process, refuses run-wave / retry / finalize-wave / merge-agents of another process (RUN_IN_PROGRESS, exit 2, nothing changed), and is dropped by the last release', async () => {
    const repo = realpathSync(makeTempDir('polywave-run-lock-'));
    const impl = path.join(repo, 'docs', 'IMPL', 'IMPL-tiny.yaml');
    mkdirSync(path.dirname(impl), { recursive: true });
    const text = 'title: tiny\nfeature_slug: tiny\nstate: WAVE_EXECUTING\nwaves:\n  - number: 1\n    agents:\n      - id: A\n        task: t\n        files: [a.txt]\n';
    writeFileSync(impl, text);
    // The same file whatever directory the command starts from (the plan's project root).
    expect(runLockPath(path.join(repo, 'docs'), impl)).toBe(runLockPath(repo, impl));

    const outer = acquireRunLock(repo, impl);
    const inner = acquireRunLock(repo, impl); // nested: counts up, no self-refusal
    expect(holdsRunLock(repo, impl)).toBe(true);
    inner();
    inner(); // a second call of one release is a no-op
    expect(holdsRunLock(repo, impl)).toBe(true);
    try {
      // run-wave checks its input (the model's credentials among it) before the lock: a script model passes them.
      const script = path.join(makeTempDir('polywave-run-lock-script-'), 'agents.json');
      writeFileSync(script, JSON.stringify({ version: 1, agents: {} }));
      const commands = [['run-wave', '--wave', '1', '--model', `script:${script}`], ['retry', '--wave', '1'], ['finalize-wave', '--wave', '1'], ['merge-agents', '--wave', '1']];
      const results = await Promise.all(commands.map(([command, ...rest]) => runCli([command!, 'docs/IMPL/IMPL-tiny.yaml', ...rest], { cwd: repo, timeoutMs: 20_000 })));
      results.forEach((result, index) => {
        expect(result.code, `${commands[index]![0]}: ${result.stderr}`).toBe(2);
        expect(result.stderr).toMatch(new RegExp(`error\\[RUN_IN_PROGRESS\\]: a run of IMPL-tiny\\.yaml is already in progress \\(pid ${process.pid} on `));
        expect(result.stderr.trim().split('\n')).toHaveLength(1);
      });
      expect(readFileSync(impl, 'utf8')).toBe(text);
      expect(readRunLockHolder(runLockPath(repo, impl))?.pid).toBe(process.pid);
    } finally {
      outer();
    }
    expect(holdsRunLock(repo, impl)).toBe(false);
    // The kernel lock was dropped: a fresh take (a new descriptor) succeeds.
    const again = acquireRunLock(repo, impl);
    again();
    // The last release removed the lock file, its directory and the empty .polywave-state/: nothing left behind.
    expect(existsSync(path.join(repo, '.polywave-state'))).toBe(false);
    // The lock files are ignored by git (their directory's `.gitignore` is `*`): `git status` lists only the plan.
    execFileSync('git', ['init', '-q'], { cwd: repo });
    expect(execFileSync('git', ['status', '--porcelain', '--untracked-files=all'], { cwd: repo, encoding: 'utf8' }).trim()).toBe('?? docs/IMPL/IMPL-tiny.yaml');
    // A path that names no file takes no lock and writes nothing: the command's own not-found error.
    const missing = await runCli(['merge-agents', 'docs/IMPL/IMPL-none.yaml', '--wave', '1'], { cwd: path.join(repo, 'docs'), timeoutMs: 20_000 });
    expect(missing.stderr).not.toContain('RUN_IN_PROGRESS');
    expect(missing.code).not.toBe(0);
  });
});
