import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, onTestFinished } from 'vitest';
import { createGit } from '../../src/git/git-cli.js';
import type { Git } from '../../src/git/git-port.js';

/**
 * Real temporary git repositories for tests (DESIGN §6: never mock git).
 *
 *   const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n' } });
 *   repo.write('src/b.ts', '…');
 *   const sha = await repo.commitAll('add b');
 *   await repo.git.worktreeAdd({ path: repo.sibling('wt-a'), branch: 'a', base: 'HEAD', createBranch: true });
 *
 * Layout: `<root>/repo` is the repository (`dir`); put worktrees or sibling repositories in
 * `sibling(name)` = `<root>/<name>`. Paths are real paths (so they compare equal to git's output).
 * The repo is on branch `main` with a local user.name/email and one commit ("initial commit",
 * holding README.md plus `files`). git runs with system and global config switched off, so the
 * developer's own config (hooks, signing, templates) cannot leak in; pass `repo.env` to any other
 * createGit you make in a test.
 *
 * Cleanup is automatic: created inside a test → removed when that test finishes; created at
 * file level or in beforeAll → removed after the test file. `cleanup()` removes it at once.
 */
export interface TestRepo {
  /** Temporary directory holding the repository and its siblings. */
  root: string;
  /** The repository's top level (`<root>/repo`). */
  dir: string;
  /** Git port bound to `dir`, using `env`. */
  git: Git;
  /** The environment the helper's git runs with (system/global git config off). */
  env: Record<string, string | undefined>;
  /** Absolute path of a file in the repository. */
  path(relativePath: string): string;
  /** Absolute path next to the repository (for worktrees, other repositories). */
  sibling(name: string): string;
  /** Writes a file (creating directories); does not stage it. */
  write(relativePath: string, text: string): void;
  read(relativePath: string): string;
  /** Deletes a file or directory from the working tree. */
  remove(relativePath: string): void;
  /** `git add -A && git commit --no-verify --allow-empty -m message` (hooks skipped); returns the new SHA. */
  commitAll(message: string): Promise<string>;
  /** Raw git in `dir`; returns stdout. */
  run(args: readonly string[]): Promise<string>;
  /** Removes the temporary directory now (idempotent). */
  cleanup(): void;
}

export interface CreateTestRepoOptions {
  /** Files of the initial commit besides README.md (relative path → text). */
  files?: Record<string, string>;
  /** Make the initial commit (default true); false leaves an unborn `main`. */
  initialCommit?: boolean;
  /** Initial branch name (default `main`). */
  branch?: string;
}

const pending = new Set<() => void>();
afterAll(() => {
  for (const cleanup of pending) cleanup();
});

/** Creates a real temporary git repository; see TestRepo. */
export async function createTestRepo(options: CreateTestRepoOptions = {}): Promise<TestRepo> {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'polywave-git-')));
  const dir = path.join(root, 'repo');
  let removed = false;
  const cleanup = () => {
    if (removed) return;
    removed = true;
    pending.delete(cleanup);
    // Retries: a process the test stopped (an agent CLI) may still be closing files in there.
    rmSync(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  };
  try {
    onTestFinished(cleanup);
  } catch {
    pending.add(cleanup); // not inside a test: cleaned after the file
  }

  const env: Record<string, string | undefined> = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: os.devNull };
  await createGit(root, { env }).run(['init', '--quiet', '--initial-branch', options.branch ?? 'main', dir]);
  const git = createGit(dir, { env });
  // What `git config user.name …` (×3) writes, appended in one file write: three git processes fewer
  // for every repository the suite creates (a process start from a large test worker is not cheap).
  appendFileSync(path.join(dir, '.git', 'config'), '[user]\n\tname = Polywave Test\n\temail = test@polywave.invalid\n[commit]\n\tgpgSign = false\n');

  const filePath = (relativePath: string) => path.join(dir, relativePath);
  const write = (relativePath: string, text: string) => {
    mkdirSync(path.dirname(filePath(relativePath)), { recursive: true });
    writeFileSync(filePath(relativePath), text);
  };
  const commitAll = async (message: string) => {
    await git.run(['add', '--all']);
    return git.commit({ message, noVerify: true, allowEmpty: true });
  };

  const repo: TestRepo = {
    root,
    dir,
    git,
    env,
    path: filePath,
    sibling: (name) => path.join(root, name),
    write,
    read: (relativePath) => readFileSync(filePath(relativePath), 'utf8'),
    remove: (relativePath) => rmSync(filePath(relativePath), { recursive: true, force: true }),
    commitAll,
    run: async (args) => (await git.run(args)).stdout,
    cleanup,
  };

  if (options.initialCommit ?? true) {
    write('README.md', '# test repository\n');
    for (const [relativePath, text] of Object.entries(options.files ?? {})) write(relativePath, text);
    await commitAll('initial commit');
  }
  return repo;
}
