import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import {
  chainedHookName,
  clearActiveWave,
  guardBeginMarker,
  installIsolationHook,
  readActiveWaves,
  verifyHookInstalled,
  verifyIsolation,
  writeActiveWave,
} from '../src/engine/isolation-hook.js';
import { prepareWave } from '../src/engine/prepare-wave.js';
import { GitError } from '../src/git/git-error.js';
import { createGit } from '../src/git/git-cli.js';
import type { Git } from '../src/git/git-port.js';
import { createTestRepo, type TestRepo } from './support/git-repo.js';

const execFileAsync = promisify(execFile);

// E4 layer 0 / E43: the pre-commit guard, exercised with real `git commit` (git runs the hook).

const impl = `title: Isolation demo
feature_slug: iso
verdict: SUITABLE
state: WAVE_PENDING
file_ownership:
    - file: src/a.ts
      agent: A
      wave: 1
      action: new
    - file: src/b.ts
      agent: B
      wave: 1
      action: new
waves:
    - number: 1
      agents:
        - id: A
          task: Write src/a.ts.
          files:
            - src/a.ts
        - id: B
          task: Write src/b.ts.
          files:
            - src/b.ts
`;

function gitIn(repo: TestRepo, directory: string): Git {
  return createGit(directory, { env: repo.env });
}

function worktreeOf(repo: TestRepo, agent: string): string {
  return repo.path(`.claude/worktrees/polywave/iso/wave1-agent-${agent}`);
}

/**
 * `git add` + `git commit` WITHOUT --no-verify, with plain git (a user's terminal, an agent's own git): the pre-commit
 * hook runs. polywave's own git port runs no repository hook at all (harden.ts), so the guard is for these.
 */
async function commitFile(repo: TestRepo, directory: string, file: string, text: string, env?: Record<string, string>): Promise<string> {
  writeFileSync(path.join(directory, file), text);
  const run = (args: string[]) => execFileAsync('git', args, { cwd: directory, env: { ...process.env, ...repo.env, ...env } });
  await run(['add', '--', file]);
  const committed = await run(['commit', '-q', '--allow-empty', '-m', `change ${file}`]).then(
    () => undefined,
    (error: unknown) => String((error as { stderr?: string }).stderr ?? error),
  );
  if (committed !== undefined) throw new GitError({ args: ['commit'], exitCode: 1, stderr: committed, cwd: directory });
  return (await run(['rev-parse', 'HEAD'])).stdout.trim();
}

/** A commit made with plain git (a user's terminal, an agent's CLI): the hooks it runs are git's, not polywave's choice. */
async function plainCommit(repo: TestRepo, directory: string, file: string, text: string): Promise<string> {
  writeFileSync(path.join(directory, file), text);
  const run = (args: string[]) => execFileAsync('git', args, { cwd: directory, env: { ...process.env, ...repo.env } });
  await run(['add', '--', file]);
  const committed = await run(['commit', '-q', '-m', `change ${file}`]).then(
    () => undefined,
    (error: unknown) => String((error as { stderr?: string }).stderr ?? error),
  );
  if (committed !== undefined) throw new GitError({ args: ['commit'], exitCode: 1, stderr: committed, cwd: directory });
  return (await run(['rev-parse', 'HEAD'])).stdout.trim();
}

async function expectRefused(promise: Promise<unknown>, pattern: RegExp): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error, 'the commit should have been refused').toBeInstanceOf(GitError);
  expect((error as GitError).stderr).toMatch(pattern);
}

async function preparedRepo(files: Record<string, string> = {}): Promise<{ repo: TestRepo; implPath: string }> {
  const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-iso.yaml': impl, 'src/base.ts': 'export {};\n', ...files } });
  return { repo, implPath: repo.path('docs/IMPL/IMPL-iso.yaml') };
}

async function runPrepare(repo: TestRepo, implPath: string) {
  const result = await prepareWave({ implPath, wave: 1, env: repo.env, gitAt: (directory) => gitIn(repo, directory) });
  expect(result.success, JSON.stringify(result.steps.find((step) => step.status === 'failed'))).toBe(true);
  return result;
}

describe('isolation guard during an active wave', () => {
  it('refuses a commit on main, allows it with POLYWAVE_ALLOW_MAIN_COMMIT=1; agent commits land only on their branch', async () => {
    const { repo, implPath } = await preparedRepo();
    await runPrepare(repo, implPath);
    const mainBefore = await repo.git.headCommit();

    // A commit on main (the merge target) is refused by the real hook.
    await expectRefused(commitFile(repo, repo.dir, 'src/base.ts', 'export const x = 1;\n'), /commit refused \(E4 layer 0\): wave 1 of 'iso' is active and 'main' is its merge target/);
    expect(await repo.git.headCommit()).toBe(mainBefore);

    // The orchestrator's bypass goes through.
    const bypass = await commitFile(repo, repo.dir, 'src/base.ts', 'export const x = 5;\n', { POLYWAVE_ALLOW_MAIN_COMMIT: '1' });
    expect(await repo.git.headCommit()).toBe(bypass);

    // An agent commits in its worktree: only its branch moves.
    const worktreeA = worktreeOf(repo, 'A');
    const gitA = gitIn(repo, worktreeA);
    const agentCommit = await commitFile(repo, worktreeA, 'src/a.ts', 'export const a = 1;\n');
    expect((await repo.run(['rev-parse', 'polywave/iso/wave1-agent-A'])).trim()).toBe(agentCommit);
    expect(await repo.git.headCommit()).toBe(bypass);
    expect((await repo.run(['rev-parse', 'polywave/iso/wave1-agent-B'])).trim()).toBe(mainBefore);
    expect(await repo.run(['log', '--format=%s', 'main'])).not.toContain('change src/a.ts');

    // In its worktree an agent may not commit on any other branch — main included.
    await gitA.run(['checkout', '-q', '-b', 'sneaky']);
    await expectRefused(commitFile(repo, worktreeA, 'src/a.ts', 'export const a = 2;\n'), /worktree of polywave\/iso\/wave1-agent-A; commits on 'sneaky' are not allowed/);
    await gitA.run(['checkout', '-q', 'polywave/iso/wave1-agent-A']);

    // Once the wave is over (finalize removes the marker) main accepts commits again.
    expect(await clearActiveWave(repo.dir, { slug: 'iso' })).toBe(true);
    await commitFile(repo, repo.dir, 'src/base.ts', 'export const x = 2;\n');
    expect(await repo.git.headCommit()).not.toBe(bypass);
  });

  it('two IMPLs active at once (a PROGRAM tier): each target is refused with its own IMPL named; concurrent arming keeps every record; disarming one keeps the other', async () => {
    const repo = await createTestRepo({ files: { 'src/base.ts': 'export const x = 0;\n' } });
    await installIsolationHook(repo.git);
    await repo.run(['branch', 'polywave/alpha/impl']);
    await repo.run(['branch', 'polywave/beta/impl']);
    const now = new Date('2026-12-01T10:00:00Z');
    // Twenty IMPLs arm at once (as run-wave processes of a tier do): none of the records is lost.
    await Promise.all(Array.from({ length: 20 }, (_, index) => writeActiveWave(repo.dir, { slug: `s${index}`, wave: 1, target_branch: `polywave/s${index}/impl`, impl: `docs/IMPL/IMPL-s${index}.yaml` }, now)));
    expect((await readActiveWaves(repo.dir)).map((record) => record.slug).sort()).toEqual(Array.from({ length: 20 }, (_, index) => `s${index}`).sort());
    await Promise.all(Array.from({ length: 20 }, (_, index) => clearActiveWave(repo.dir, { slug: `s${index}` })));
    expect(existsSync(repo.path('.polywave-state/active-wave'))).toBe(false);

    await writeActiveWave(repo.dir, { slug: 'alpha', wave: 2, target_branch: 'polywave/alpha/impl', impl: 'docs/IMPL/IMPL-alpha.yaml' }, now);
    await writeActiveWave(repo.dir, { slug: 'beta', wave: 1, target_branch: 'polywave/beta/impl', impl: 'docs/IMPL/IMPL-beta.yaml' }, now);
    await writeActiveWave(repo.dir, { slug: 'alpha', wave: 3, target_branch: 'polywave/alpha/impl', impl: 'docs/IMPL/IMPL-alpha.yaml' }, now);
    expect((await readActiveWaves(repo.dir)).map((record) => `${record.slug}:${record.wave}`)).toEqual(['beta:1', 'alpha:3']);

    await repo.run(['checkout', '-q', 'polywave/alpha/impl']);
    await expectRefused(commitFile(repo, repo.dir, 'src/base.ts', 'export const x = 1;\n'), /wave 3 of 'alpha' is active and 'polywave\/alpha\/impl' is its merge target/);
    await repo.run(['checkout', '-q', 'polywave/beta/impl']);
    await expectRefused(commitFile(repo, repo.dir, 'src/base.ts', 'export const x = 2;\n'), /wave 1 of 'beta' is active and 'polywave\/beta\/impl' is its merge target/);

    // alpha's finalize disarms alpha only: beta's target stays guarded.
    expect(await clearActiveWave(repo.dir, { slug: 'alpha' })).toBe(true);
    expect(await clearActiveWave(repo.dir, { slug: 'alpha' })).toBe(false);
    await expectRefused(commitFile(repo, repo.dir, 'src/base.ts', 'export const x = 3;\n'), /'beta' is active/);
    await repo.run(['checkout', '-q', 'polywave/alpha/impl']);
    await commitFile(repo, repo.dir, 'src/base.ts', 'export const x = 4;\n');
    expect(await clearActiveWave(repo.dir, { slug: 'beta' })).toBe(true);
    expect(existsSync(repo.path('.polywave-state/active-wave'))).toBe(false);
  });

  it('verify-hook-installed and verify-isolation see what git runs', async () => {
    const { repo, implPath } = await preparedRepo();
    await runPrepare(repo, implPath);
    const gitA = gitIn(repo, worktreeOf(repo, 'A'));
    const verification = await verifyHookInstalled(gitA);
    expect(verification).toEqual({ valid: true, hook_path: repo.path('.git/hooks/pre-commit'), executable: true, has_logic: true });
    expect(await verifyIsolation(gitA, 'polywave/iso/wave1-agent-A')).toEqual({ ok: true, branch: 'polywave/iso/wave1-agent-A' });
    const wrong = await verifyIsolation(gitA, 'polywave/iso/wave1-agent-B');
    expect(wrong.ok).toBe(false);
    expect(wrong.errors?.join(' ')).toContain('expected polywave/iso/wave1-agent-B');
    const fromMain = await verifyIsolation(repo.git, 'polywave/iso/wave1-agent-A');
    expect(fromMain.ok).toBe(false);

    chmodSync(repo.path('.git/hooks/pre-commit'), 0o644);
    expect(await verifyHookInstalled(gitA)).toMatchObject({ valid: false, executable: false, has_logic: true });
    writeFileSync(repo.path('.git/hooks/pre-commit'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    expect(await verifyHookInstalled(gitA)).toMatchObject({ valid: false, has_logic: false });
  });
});

describe('hook installation', () => {
  it('chains an existing shell hook (its content kept and still run) and is idempotent', async () => {
    const repo = await createTestRepo();
    const hookPath = repo.path('.git/hooks/pre-commit');
    const userHook = `#!/bin/sh\n# the user's own checks\necho ran >> "${repo.path('.git/user-hook-ran')}"\n`;
    writeFileSync(hookPath, userHook, { mode: 0o755 });

    const first = await installIsolationHook(repo.git);
    expect(first).toMatchObject({ action: 'inserted', mode: 'hooks-dir', hook_path: hookPath });
    const installed = readFileSync(hookPath, 'utf8');
    expect(installed.startsWith('#!/bin/sh\n# >>> polywave isolation guard >>>')).toBe(true);
    expect(installed.endsWith(userHook.slice('#!/bin/sh\n'.length))).toBe(true);
    const second = await installIsolationHook(repo.git);
    expect(second.action).toBe('unchanged');
    expect(readFileSync(hookPath, 'utf8')).toBe(installed);
    expect(installed.split(guardBeginMarker)).toHaveLength(2);

    // The user hook still runs on a normal commit; the guard blocks main once a wave is active.
    await commitFile(repo, repo.dir, 'one.txt', '1\n');
    expect(readFileSync(repo.path('.git/user-hook-ran'), 'utf8')).toBe('ran\n');
    await writeActiveWave(repo.dir, { slug: 'x', wave: 1, target_branch: 'main', impl: 'docs/IMPL/IMPL-x.yaml' }, new Date());
    await expectRefused(commitFile(repo, repo.dir, 'two.txt', '2\n'), /'main' is its merge target/);
    // With the bypass the guard steps aside but the user's hook still runs.
    await commitFile(repo, repo.dir, 'two.txt', '2\n', { POLYWAVE_ALLOW_MAIN_COMMIT: '1' });
    expect(readFileSync(repo.path('.git/user-hook-ran'), 'utf8')).toBe('ran\nran\n');
  });

  it('moves a non-shell hook aside unchanged and chains to it', async () => {
    const repo = await createTestRepo();
    const hookPath = repo.path('.git/hooks/pre-commit');
    const nodeHook = `#!/usr/bin/env node\nrequire('node:fs').appendFileSync(${JSON.stringify(repo.path('.git/node-hook-ran'))}, 'ran\\n');\n`;
    writeFileSync(hookPath, nodeHook, { mode: 0o755 });
    const result = await installIsolationHook(repo.git);
    expect(result).toMatchObject({ action: 'chained', chained_hook: repo.path(`.git/hooks/${chainedHookName}`) });
    expect(readFileSync(repo.path(`.git/hooks/${chainedHookName}`), 'utf8')).toBe(nodeHook);
    expect((await installIsolationHook(repo.git)).action).toBe('unchanged');
    await commitFile(repo, repo.dir, 'one.txt', '1\n');
    expect(readFileSync(repo.path('.git/node-hook-ran'), 'utf8')).toBe('ran\n');
  });

  it('honours an absolute core.hooksPath', async () => {
    const repo = await createTestRepo();
    const hooksDir = repo.sibling('shared-hooks');
    await repo.run(['config', 'core.hooksPath', hooksDir]);
    const result = await installIsolationHook(repo.git);
    expect(result.hook_path).toBe(path.join(hooksDir, 'pre-commit'));
    expect(existsSync(repo.path('.git/hooks/pre-commit'))).toBe(false);
    await writeActiveWave(repo.dir, { slug: 'x', wave: 1, target_branch: 'main', impl: 'x' }, new Date());
    await expectRefused(commitFile(repo, repo.dir, 'one.txt', '1\n'), /merge target/);
  });

  it('with core.hooksPath inside the working tree (husky-style), guards main and the agent worktrees and keeps the user hooks running', async () => {
    const { repo, implPath } = await preparedRepo({
      '.githooks/pre-commit': `#!/bin/sh\necho "$(pwd)" >> "${path.join('..', 'tracked-hook-ran')}"\n`,
    });
    chmodSync(repo.path('.githooks/pre-commit'), 0o755);
    await repo.run(['update-index', '--chmod=+x', '.githooks/pre-commit']);
    await repo.commitAll('executable hook');
    await repo.run(['config', 'core.hooksPath', '.githooks']);

    const result = await runPrepare(repo, implPath);
    const install = (result.steps.find((step) => step.step === 'install_hooks')?.data as { installs: Array<{ mode: string }> }).installs[0];
    expect(install?.mode).toBe('worktree-config');
    // The tracked hook file was not touched: only the IMPL edit is dirty.
    expect((await repo.git.status()).map((entry) => entry.path)).toEqual(['docs/IMPL/IMPL-iso.yaml']);

    // the commits a user or an agent's CLI makes with plain git (polywave's own commits never run tracked hooks: X24-01)
    await expectRefused(plainCommit(repo, repo.dir, 'src/base.ts', 'export const x = 1;\n'), /merge target/);
    const worktreeA = worktreeOf(repo, 'A');
    const gitA = gitIn(repo, worktreeA);
    expect((await verifyHookInstalled(gitA)).valid).toBe(true);
    await plainCommit(repo, worktreeA, 'src/a.ts', 'export const a = 1;\n');
    await gitA.run(['checkout', '-q', '-b', 'elsewhere']);
    await expectRefused(plainCommit(repo, worktreeA, 'src/a.ts', 'export const a = 2;\n'), /not allowed/);
    // The repository's own (tracked) hook ran for the agent's commit, from the agent's checkout.
    const ran = readFileSync(path.join(path.dirname(worktreeA), 'tracked-hook-ran'), 'utf8');
    expect(ran).toContain(worktreeA);
    expect(statSync(repo.path('.githooks/pre-commit')).mode & 0o111).not.toBe(0);
  });
});
