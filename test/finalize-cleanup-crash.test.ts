import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cleanupWave, type CleanupOptions } from '../src/engine/cleanup.js';
import type { FinalizeWaveResult } from '../src/engine/finalize-wave.js';
import { recordRemoval } from '../src/store/removal-markers.js';
import { binPath, runCli } from './support/cli.js';
import { createWaveFixture, type WaveFixture } from './support/wave-fixture.js';

// Issue 11: a finalize-wave SIGKILLed while `git worktree remove` was deleting the agents' files,
// then re-run, reported success while a merged agent's worktree (and branch) were still there:
// git deletes a worktree file by file, so an interrupted removal leaves a worktree whose only
// "changes" are deletions (the re-run's plain remove refused it and kept it, as a warning), or a
// directory whose `.git` file is already gone (the re-run pruned it and said "removed" while the
// directory stayed). Cleanup now writes a removal marker before git starts and finishes such a
// removal on the next run — never touching a worktree that holds work.

const agents = ['A', 'B', 'C', 'D'];
const env = { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };

/** Many committed files per worktree, so that a removal takes long enough to be interrupted. */
function vendorFiles(count: number): Record<string, string> {
  const files: Record<string, string> = {};
  for (let index = 0; index < count; index += 1) files[`vendor/part-${Math.floor(index / 100)}/file-${index}.txt`] = `content ${index}\n`;
  return files;
}

async function completedWave(vendorCount: number): Promise<WaveFixture> {
  const fixture = await createWaveFixture({ waves: [agents.map((id) => ({ id, files: [`src/${id.toLowerCase()}.ts`] }))], testCommand: 'true' }, vendorFiles(vendorCount));
  await fixture.startWave(1);
  for (const id of agents) await fixture.complete(id, { [`src/${id.toLowerCase()}.ts`]: `export const ${id.toLowerCase()} = '${id}';\n` });
  return fixture;
}

/** Runs finalize-wave in its own process group and SIGKILLs the whole group (git included) once a worktree starts disappearing. */
async function finalizeKilledDuringRemoval(fixture: WaveFixture, delayMs: number): Promise<boolean> {
  const child = spawn(process.execPath, [binPath, 'finalize-wave', fixture.implPath, '--wave', '1', '--json-only'], { cwd: fixture.repo.dir, env: { ...process.env, ...env }, detached: true, stdio: 'ignore' });
  const probes = agents.map((id) => path.join(fixture.worktree(id), 'vendor', 'part-5', 'file-550.txt'));
  let killed = false;
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      if (!probes.some((probe) => !existsSync(probe))) return;
      clearInterval(timer);
      setTimeout(() => {
        try {
          process.kill(-child.pid!, 'SIGKILL');
          killed = true;
        } catch {
          // already gone
        }
        resolve();
      }, delayMs);
    }, 1);
    child.once('exit', () => {
      clearInterval(timer);
      resolve();
    });
  });
  await new Promise((resolve) => child.exitCode !== null || child.signalCode !== null ? resolve(undefined) : child.once('exit', resolve));
  return killed;
}

/** Worktree directories an interrupted removal left (present, and missing some of their files). */
function wrecks(fixture: WaveFixture): string[] {
  return agents.filter((id) => existsSync(fixture.worktree(id)) && !existsSync(path.join(fixture.worktree(id), 'vendor', 'part-5', 'file-550.txt')));
}

describe('finalize-wave killed while removing worktrees, then re-run', () => {
  it('the re-run finishes the interrupted removals: no worktree, no directory, no branch left; the work is in main', async () => {
    let interrupted: string[] = [];
    let fixture: WaveFixture | undefined;
    for (let attempt = 0; attempt < 4 && interrupted.length === 0; attempt += 1) {
      fixture = await completedWave(1500);
      const killed = await finalizeKilledDuringRemoval(fixture, attempt);
      if (killed) interrupted = wrecks(fixture);
    }
    expect(interrupted.length, 'no removal could be interrupted in 4 attempts').toBeGreaterThan(0);
    fixture = fixture!;
    expect(fixture.manifest().state).toBe('WAVE_VERIFIED');

    const rerun = await runCli(['finalize-wave', fixture.implPath, '--wave', '1', '--json-only'], { cwd: fixture.repo.dir, env, timeoutMs: 120_000 });
    expect(rerun.code, rerun.stderr).toBe(0);
    const result = JSON.parse(rerun.stdout) as FinalizeWaveResult;
    const cleanup = result.steps.find((step) => step.step === 'cleanup');
    expect(cleanup?.status, JSON.stringify(result.cleanup_result)).toBe('success');
    expect(await fixture.repo.git.listBranches('polywave/'), JSON.stringify(result.cleanup_result)).toEqual([]);
    expect(await fixture.repo.git.worktreeList()).toHaveLength(1);
    for (const id of agents) expect(existsSync(fixture.worktree(id)), `worktree directory of ${id}`).toBe(false);
    expect(existsSync(fixture.repo.path('.claude/worktrees/polywave/demo'))).toBe(false);
    for (const id of agents) expect(fixture.repo.read(`src/${id.toLowerCase()}.ts`)).toBe(`export const ${id.toLowerCase()} = '${id}';\n`);
    expect(existsSync(path.join(fixture.repo.dir, '.git', 'polywave', 'removing')) ? readdirSync(path.join(fixture.repo.dir, '.git', 'polywave', 'removing')) : []).toEqual([]);
  }, 600_000);
});

describe('cleanup after an interrupted removal (the states a kill leaves, made on purpose)', () => {
  async function mergedWave(): Promise<{ fixture: WaveFixture; options: (ids: string[]) => CleanupOptions; tips: Map<string, string> }> {
    const fixture = await completedWave(30);
    const tips = new Map<string, string>();
    for (const id of agents) {
      tips.set(id, (await fixture.repo.run(['rev-parse', fixture.branch(id)])).trim());
      await fixture.repo.run(['merge', '--no-ff', '--quiet', '-m', `merge ${id}`, fixture.branch(id)]);
    }
    const options = (ids: string[]): CleanupOptions => ({
      git: fixture.repo.git,
      targetGit: fixture.repo.git,
      targetBranch: 'main',
      wave: 1,
      agents: ids.map((id) => ({ agent: id, branch: fixture.branch(id), worktreePath: fixture.worktree(id) })),
    });
    return { fixture, options, tips };
  }

  it('a worktree whose only changes are deletions, with our marker: removal finished (--force is safe: every file is in the merged tip)', async () => {
    const { fixture, options, tips } = await mergedWave();
    await recordRemoval(fixture.worktree('A'), { branch: fixture.branch('A'), tip: tips.get('A')! });
    rmSync(path.join(fixture.worktree('A'), 'vendor', 'part-0'), { recursive: true });
    unlinkSync(path.join(fixture.worktree('A'), 'src', 'a.ts'));
    const result = await cleanupWave(options(['A']));
    expect(result.agents[0]).toMatchObject({ worktree_removed: true, branch_deleted: true });
    expect(result.success).toBe(true);
    expect(existsSync(fixture.worktree('A'))).toBe(false);
  });

  it('the same deletions without a marker (an agent that never committed a deletion): kept with its branch', async () => {
    const { fixture, options } = await mergedWave();
    unlinkSync(path.join(fixture.worktree('B'), 'src', 'b.ts'));
    const result = await cleanupWave(options(['B']));
    expect(result.agents[0]).toMatchObject({ worktree_removed: false, branch_deleted: false });
    expect(result.agents[0]!.kept).toContain('uncommitted changes');
    expect(existsSync(fixture.worktree('B'))).toBe(true);
  });

  it('a directory whose .git is gone, holding only files of the merged tip and ignored files, with our marker: removed, branch deleted', async () => {
    const { fixture, options, tips } = await mergedWave();
    await recordRemoval(fixture.worktree('C'), { branch: fixture.branch('C'), tip: tips.get('C')! });
    writeFileSync(fixture.repo.path('.gitignore'), 'build/\n');
    rmSync(path.join(fixture.worktree('C'), '.git'));
    rmSync(path.join(fixture.worktree('C'), 'vendor', 'part-0', 'file-3.txt'));
    mkdirSync(path.join(fixture.worktree('C'), 'vendor', 'build'));
    writeFileSync(path.join(fixture.worktree('C'), 'vendor', 'build', 'out.txt'), 'generated\n');
    const result = await cleanupWave(options(['C']));
    expect(result.agents[0]).toMatchObject({ worktree_removed: true, branch_deleted: true });
    expect(existsSync(fixture.worktree('C'))).toBe(false);
    expect(await fixture.repo.git.worktreeList()).toHaveLength(4);
  });

  it('such a directory holding a file that is not in the tip: left untouched, branch kept, reported (not claimed removed)', async () => {
    const { fixture, options, tips } = await mergedWave();
    await recordRemoval(fixture.worktree('D'), { branch: fixture.branch('D'), tip: tips.get('D')! });
    rmSync(path.join(fixture.worktree('D'), '.git'));
    writeFileSync(path.join(fixture.worktree('D'), 'src', 'd.ts'), 'changed after the commit\n');
    writeFileSync(path.join(fixture.worktree('D'), 'notes.txt'), 'new work\n');
    const result = await cleanupWave(options(['D']));
    expect(result.agents[0]).toMatchObject({ worktree_removed: false, branch_deleted: false });
    expect(result.agents[0]!.kept).toContain('src/d.ts');
    expect(result.agents[0]!.kept).toContain('notes.txt');
    expect(result.success).toBe(false);
    expect(fixture.repo.read('.claude/worktrees/polywave/demo/wave1-agent-D/notes.txt')).toBe('new work\n');
  });

  it('such a directory without a marker: left untouched and not claimed removed', async () => {
    const { fixture, options } = await mergedWave();
    rmSync(path.join(fixture.worktree('A'), '.git'));
    const result = await cleanupWave(options(['A']));
    expect(result.agents[0]).toMatchObject({ worktree_removed: false, branch_deleted: false });
    expect(result.agents[0]!.kept).toContain('no working tree');
    expect(existsSync(fixture.worktree('A'))).toBe(true);
  });
});
