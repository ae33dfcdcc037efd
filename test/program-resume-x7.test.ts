/**
 * Outside attack X7 (PROGRAM kill-and-resume), finding 6: a run SIGKILLed while a post-merge gate ran
 * in its throwaway checkout (src/gates/throwaway-checkout.ts) left that checkout registered in the
 * repository (`git worktree list`) and on disk, a full copy of the tree, even after the resumed run
 * completed: nothing removed it, and `git worktree prune` keeps it because its directory exists.
 *
 * Here a real process makes a gate checkout of a real repository (the same function the gates use,
 * from the build in dist/) and is SIGKILLed while it holds it — the state a killed run leaves. The
 * next gate checkout made for the repository removes it (owner gone), keeps a checkout whose owner
 * still runs, and never touches a worktree outside `<scratch parent>/polywave-checkout-*`.
 * Finding 1 (a multi-wave IMPL killed as its wave 2 launches) is a kill point of
 * test/program-execute.test.ts. Cost: one child process, ~1 s.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { makeThrowawayCheckout, pruneDeadCheckouts } from '../src/gates/throwaway-checkout.js';
import { scratchParent } from '../src/sandbox/scratch-dirs.js';
import { repoRoot } from './support/cli.js';
import { createTestRepo, type TestRepo } from './support/git-repo.js';

const built = path.join(repoRoot, 'dist', 'gates', 'throwaway-checkout.js');

/** A child process holding a throwaway checkout of `repo` (made by the built module), until killed. */
function holdCheckout(repo: TestRepo): Promise<{ pid: number; root: string; killed: Promise<void> }> {
  const script = `const { makeThrowawayCheckout } = await import(${JSON.stringify(pathToFileURL(built).href)});
const checkout = await makeThrowawayCheckout(process.argv[1], process.env);
process.stdout.write(checkout.root + '\\n');
setInterval(() => {}, 1 << 30);`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script, repo.dir], { env: { ...process.env, ...repo.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const killed = new Promise<void>((done) => child.on('close', () => done()));
    let stdout = '';
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      if (stdout.includes('\n')) resolve({ pid: child.pid!, root: stdout.trim(), killed });
    });
    child.on('error', reject);
    child.on('close', (code) => reject(new Error(`the checkout holder exited ${code} before making a checkout: ${stderr}`)));
  });
}

async function worktreePaths(repo: TestRepo): Promise<string[]> {
  return (await repo.run(['worktree', 'list', '--porcelain'])).split('\n').filter((line) => line.startsWith('worktree ')).map((line) => line.slice('worktree '.length));
}

describe('gate checkouts left by a killed run (outside attack X7 #6)', () => {
  it('the next gate checkout removes a SIGKILLed owner\'s checkout (worktree list and disk), keeps a live one, and never touches a worktree outside the pattern', async () => {
    expect(existsSync(built), 'npm run build first (dist/gates/throwaway-checkout.js)').toBe(true);
    const repo = await createTestRepo({ files: { 'src/a.js': 'export const a = 1;\n' } });
    const holder = await holdCheckout(repo);
    expect(path.dirname(path.dirname(holder.root))).toBe(scratchParent());
    // The checkout names its owner, and is kept while the owner runs.
    expect(readFileSync(path.join(path.dirname(holder.root), 'owner'), 'utf8')).toMatch(new RegExp(`^${holder.pid}( \\d+( pid:\\[\\d+\\])?)?\\n$`));
    expect(pruneDeadCheckouts()).not.toContain(path.dirname(holder.root));
    expect(await worktreePaths(repo)).toContain(holder.root);

    // A worktree of the same shape outside the scratch parent, with a dead owner file: never touched.
    const outside = repo.sibling('polywave-checkout-mine/tree-0123abcd');
    mkdirSync(path.dirname(outside), { recursive: true });
    await repo.run(['worktree', 'add', '--detach', '--quiet', outside, 'HEAD']);
    writeFileSync(path.join(path.dirname(outside), 'owner'), `${holder.pid}\n`);

    // SIGKILL, as a killed run leaves it: still registered, still on disk (git's own prune keeps it).
    process.kill(holder.pid, 'SIGKILL');
    await holder.killed;
    await repo.run(['worktree', 'prune']);
    expect(await worktreePaths(repo)).toContain(holder.root);
    expect(existsSync(path.join(holder.root, 'src/a.js'))).toBe(true);

    // The next gate checkout of the repository removes it: registration, admin entry and files.
    const next = (await makeThrowawayCheckout(repo.dir, repo.env))!;
    const paths = await worktreePaths(repo);
    expect(paths).not.toContain(holder.root);
    expect(existsSync(path.dirname(holder.root))).toBe(false);
    expect(new Set(paths)).toEqual(new Set([repo.dir, outside, next.root]));
    expect(existsSync(path.join(outside, 'src/a.js'))).toBe(true);
    await next.dispose();
    expect(await worktreePaths(repo)).toEqual([repo.dir, outside]);
    expect(readdirSync(repo.path('.git/worktrees'))).toHaveLength(1);

    // Killed after its registration was removed (dispose's last step): the directory alone, dead owner → removed.
    // An owner in another PID namespace (a container sharing /tmp) cannot be judged → kept.
    const unregistered = mkdtempSync(path.join(scratchParent(), 'polywave-checkout-'));
    writeFileSync(path.join(unregistered, 'owner'), `${holder.pid}\n`);
    const foreign = mkdtempSync(path.join(scratchParent(), 'polywave-checkout-'));
    writeFileSync(path.join(foreign, 'owner'), `${holder.pid} 1 pid:[1]\n`);
    try {
      const removed = pruneDeadCheckouts();
      expect(removed).toContain(unregistered);
      expect(existsSync(unregistered)).toBe(false);
      expect(existsSync(foreign)).toBe(true);
    } finally {
      rmSync(foreign, { recursive: true, force: true });
    }
  });
});
