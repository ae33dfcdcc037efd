import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { acquireRunLock, holdsRunLock, readRunLockHolder, runLockPath } from '../src/cli/run-lock.js';
import { slugOfFeature } from '../src/orchestrator/autopilot.js';
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
  it('also covers prepare-wave, a feature\'s plan before its Scout (run "<feature>") and a PROGRAM (program-execute, run PROGRAM-x.yaml): RUN_IN_PROGRESS, exit 2, one line, nothing written', async () => {
    const repo = realpathSync(makeTempDir('polywave-run-lock-more-'));
    execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: repo });
    const impl = path.join(repo, 'docs', 'IMPL', 'IMPL-tiny.yaml');
    const program = path.join(repo, 'docs', 'PROGRAM', 'PROGRAM-big.yaml');
    mkdirSync(path.dirname(impl), { recursive: true });
    mkdirSync(path.dirname(program), { recursive: true });
    const implText = 'title: tiny\nfeature_slug: tiny\nstate: REVIEWED\nwaves:\n  - number: 1\n    agents:\n      - id: A\n        task: t\n        files: [a.txt]\n';
    const programText = 'title: big\nprogram_slug: big\nstate: REVIEWED\n';
    writeFileSync(impl, implText);
    writeFileSync(program, programText);
    const script = path.join(makeTempDir('polywave-run-lock-script-'), 'agents.json');
    writeFileSync(script, JSON.stringify({ version: 1, agents: {} }));
    const feature = 'Add a greeting endpoint';
    const planned = path.join(repo, 'docs', 'IMPL', `IMPL-${slugOfFeature(feature)}.yaml`);
    const releases = [acquireRunLock(repo, impl), acquireRunLock(repo, program), acquireRunLock(repo, planned)];
    try {
      const cases: Array<{ args: string[]; plan: string }> = [
        { args: ['prepare-wave', 'docs/IMPL/IMPL-tiny.yaml', '--wave', '1'], plan: 'IMPL-tiny.yaml' },
        { args: ['program-execute', 'docs/PROGRAM/PROGRAM-big.yaml', '--model', `script:${script}`], plan: 'PROGRAM-big.yaml' },
        { args: ['run', 'docs/PROGRAM/PROGRAM-big.yaml', '--model', `script:${script}`], plan: 'PROGRAM-big.yaml' },
        { args: ['run', feature, '--model', `script:${script}`, '--yes'], plan: path.basename(planned) },
      ];
      const results = await Promise.all(cases.map((item) => runCli(item.args, { cwd: repo, timeoutMs: 30_000 })));
      results.forEach((result, index) => {
        const { args, plan } = cases[index]!;
        expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(2);
        expect(result.stderr, args.join(' ')).toContain(`error[RUN_IN_PROGRESS]: a run of ${plan} is already in progress (pid ${process.pid} on `);
      });
      // Nothing written: the plans as they were, no IMPL for the feature, no worktree or branch.
      expect(readFileSync(impl, 'utf8')).toBe(implText);
      expect(readFileSync(program, 'utf8')).toBe(programText);
      expect(existsSync(planned)).toBe(false);
      expect(execFileSync('git', ['worktree', 'list', '--porcelain'], { cwd: repo, encoding: 'utf8' }).split('\n').filter((line) => line.startsWith('worktree ')).length).toBe(1);
    } finally {
      for (const release of releases) release();
    }
    expect(existsSync(path.join(repo, '.polywave-state'))).toBe(false);
  });
});
