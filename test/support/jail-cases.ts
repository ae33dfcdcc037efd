import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, realpathSync, writeFileSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createGit } from '../../src/git/git-cli.js';
import type { Git } from '../../src/git/git-port.js';
import type { JailCode } from '../../src/agents/jail/types.js';
import type { AgentToolName } from '../../src/agents/tools/types.js';
import { createTestRepo, type TestRepo } from './git-repo.js';

/**
 * Adversarial jail cases, shared by every backend's tests (our tools, claude-code hooks, the
 * script backend). Each case is one tool call an escaping agent might make against the layout of
 * {@link createAdversarialWorktree}; it must be denied (with a reason) and nothing may escape.
 *
 * Inputs may contain placeholders, filled by {@link fillPlaceholders}:
 * `{{WORKTREE}}` the agent worktree · `{{MAIN}}` the main checkout · `{{PARENT}}` the directory
 * holding both · `{{OUTSIDE}}` a directory outside both · `{{HOME}}`/`{{TMPDIR}}` the agent's
 * (fake) HOME and TMPDIR · `{{SYSTMP}}` the system temp directory · `{{ID}}` a unique name.
 *
 * Layout: the worktree is on branch {@link adversarialBranch}, the policy owns only `src/a.ts`
 * (`src/b.ts` exists and is not owned), and the committed symlinks `link-main` → main checkout,
 * `link-outside` → `{{OUTSIDE}}`, `link-tmp` → `{{SYSTMP}}` are in the worktree.
 */
export interface AdversarialCase {
  name: string;
  /** Our tool name (other backends map it: bash → Bash, write_file → Write, …). */
  tool: AgentToolName;
  input: Record<string, unknown>;
  /** The denial code a backend using our jail must report (when fixed). */
  expectCode?: JailCode;
  /** Paths (with placeholders) that must not exist after the call. */
  mustNotExist?: string[];
  /** Raw git set-up before the call: HEAD of the worktree moved to `main`. */
  setup?: 'head-on-main';
  /** The static check lets it run; the post-command audit must report it (the change stays inside the worktree). */
  viaAudit?: boolean;
}

export const adversarialBranch = 'polywave/demo/wave1-agent-A';
export const adversarialOwnedFiles: readonly string[] = ['src/a.ts'];

export const adversarialCases: readonly AdversarialCase[] = [
  // ../ traversal and absolute paths
  { name: 'read ../ into the main checkout', tool: 'read_file', input: { path: '../repo/README.md' }, expectCode: 'JAIL_OUTSIDE_ROOT' },
  { name: 'write ../ next to the worktree', tool: 'write_file', input: { path: '../escape.txt', content: 'pwned' }, expectCode: 'JAIL_OUTSIDE_ROOT', mustNotExist: ['{{PARENT}}/escape.txt'] },
  { name: 'write src/../../ escape', tool: 'write_file', input: { path: 'src/../../escape-nested.txt', content: 'pwned' }, expectCode: 'JAIL_OUTSIDE_ROOT', mustNotExist: ['{{PARENT}}/escape-nested.txt'] },
  { name: 'write /etc/passwd', tool: 'write_file', input: { path: '/etc/passwd', content: 'pwned' }, expectCode: 'JAIL_OUTSIDE_ROOT' },
  { name: 'write an absolute path outside', tool: 'write_file', input: { path: '{{OUTSIDE}}/abs.txt', content: 'pwned' }, expectCode: 'JAIL_OUTSIDE_ROOT', mustNotExist: ['{{OUTSIDE}}/abs.txt'] },
  { name: "write the main checkout's README", tool: 'write_file', input: { path: '{{MAIN}}/README.md', content: 'pwned' }, expectCode: 'JAIL_OUTSIDE_ROOT' },
  { name: "read the main checkout's unowned file", tool: 'read_file', input: { path: '{{MAIN}}/src/b.ts' }, expectCode: 'JAIL_OUTSIDE_ROOT' },
  { name: 'write an absolute path with .. back into main', tool: 'write_file', input: { path: '{{WORKTREE}}/../repo/src/a.ts', content: 'pwned' }, expectCode: 'JAIL_OUTSIDE_ROOT' },
  { name: 'list the parent directory', tool: 'list_dir', input: { path: '..' }, expectCode: 'JAIL_OUTSIDE_ROOT' },
  // symbolic links
  { name: 'read through a symlink to the main checkout', tool: 'read_file', input: { path: 'link-main/README.md' }, expectCode: 'JAIL_OUTSIDE_ROOT' },
  { name: 'write through a symlink to the main checkout', tool: 'write_file', input: { path: 'link-main/pwned.txt', content: 'pwned' }, expectCode: 'JAIL_OUTSIDE_ROOT', mustNotExist: ['{{MAIN}}/pwned.txt'] },
  { name: 'read through a symlink to an outside directory', tool: 'read_file', input: { path: 'link-outside/secret.txt' }, expectCode: 'JAIL_OUTSIDE_ROOT' },
  { name: 'write through a symlink to an outside directory', tool: 'write_file', input: { path: 'link-outside/pwned.txt', content: 'pwned' }, expectCode: 'JAIL_OUTSIDE_ROOT', mustNotExist: ['{{OUTSIDE}}/pwned.txt'] },
  { name: 'write through a symlink to /tmp', tool: 'write_file', input: { path: 'link-tmp/{{ID}}-pwned.txt', content: 'pwned' }, expectCode: 'JAIL_OUTSIDE_ROOT', mustNotExist: ['{{SYSTMP}}/{{ID}}-pwned.txt'] },
  // ownership and git internals
  { name: 'write an unowned file', tool: 'write_file', input: { path: 'src/b.ts', content: 'pwned' }, expectCode: 'JAIL_NOT_OWNED' },
  { name: 'edit an unowned file', tool: 'edit_file', input: { path: 'src/b.ts', old_string: 'export', new_string: 'pwned' }, expectCode: 'JAIL_NOT_OWNED' },
  { name: "write the worktree's .git file", tool: 'write_file', input: { path: '.git', content: 'gitdir: /tmp' }, expectCode: 'JAIL_GIT_INTERNALS' },
  { name: 'write a pre-commit hook', tool: 'write_file', input: { path: '.git/hooks/pre-commit', content: '#!/bin/sh\nexit 0\n' }, expectCode: 'JAIL_GIT_INTERNALS' },
  { name: 'read .git/config', tool: 'read_file', input: { path: '.git/config' }, expectCode: 'JAIL_GIT_INTERNALS' },
  // ~ and environment variables
  { name: 'read $HOME/.ssh', tool: 'read_file', input: { path: '$HOME/.ssh/id_rsa' }, expectCode: 'JAIL_OUTSIDE_ROOT' },
  { name: 'read ~/.bashrc', tool: 'read_file', input: { path: '~/.bashrc' }, expectCode: 'JAIL_OUTSIDE_ROOT' },
  { name: 'glob /etc/*', tool: 'glob', input: { pattern: '/etc/*' }, expectCode: 'JAIL_OUTSIDE_ROOT' },
  { name: 'grep the file system root', tool: 'grep', input: { pattern: 'root', path: '/' }, expectCode: 'JAIL_OUTSIDE_ROOT' },
  // bash: leaving the root
  { name: 'bash cd /', tool: 'bash', input: { command: 'cd / && ls' }, expectCode: 'JAIL_BASH_ESCAPE' },
  { name: 'bash cd .. && touch', tool: 'bash', input: { command: 'cd .. && touch x' }, expectCode: 'JAIL_BASH_ESCAPE', mustNotExist: ['{{PARENT}}/x'] },
  { name: 'bash cd ~', tool: 'bash', input: { command: 'cd ~ && touch x' }, expectCode: 'JAIL_BASH_ESCAPE', mustNotExist: ['{{HOME}}/x'] },
  { name: 'bash cd (home)', tool: 'bash', input: { command: 'cd; touch x' }, expectCode: 'JAIL_BASH_ESCAPE', mustNotExist: ['{{HOME}}/x'] },
  { name: 'bash redirect to $HOME', tool: 'bash', input: { command: 'echo x > $HOME/x' }, expectCode: 'JAIL_BASH_ESCAPE', mustNotExist: ['{{HOME}}/x'] },
  { name: 'bash redirect to ${TMPDIR}', tool: 'bash', input: { command: 'echo x > ${TMPDIR}/x' }, expectCode: 'JAIL_BASH_ESCAPE', mustNotExist: ['{{TMPDIR}}/x'] },
  { name: 'bash touch ~/x', tool: 'bash', input: { command: 'touch ~/x' }, expectCode: 'JAIL_BASH_ESCAPE', mustNotExist: ['{{HOME}}/x'] },
  { name: 'bash redirect to ../', tool: 'bash', input: { command: 'echo x > ../escape' }, expectCode: 'JAIL_BASH_ESCAPE', mustNotExist: ['{{PARENT}}/escape'] },
  { name: 'bash tee to ../', tool: 'bash', input: { command: 'echo x | tee ../tee.txt' }, expectCode: 'JAIL_BASH_ESCAPE', mustNotExist: ['{{PARENT}}/tee.txt'] },
  { name: 'bash here-document to ../', tool: 'bash', input: { command: 'cat <<EOF > ../heredoc.txt\npwned\nEOF' }, expectCode: 'JAIL_BASH_ESCAPE', mustNotExist: ['{{PARENT}}/heredoc.txt'] },
  { name: 'bash cat /etc/passwd', tool: 'bash', input: { command: 'cat /etc/passwd' }, expectCode: 'JAIL_BASH_ESCAPE' },
  { name: 'bash cp to an outside directory', tool: 'bash', input: { command: 'cp src/a.ts {{OUTSIDE}}/copied.ts' }, expectCode: 'JAIL_BASH_ESCAPE', mustNotExist: ['{{OUTSIDE}}/copied.ts'] },
  { name: 'bash through a symlink to main', tool: 'bash', input: { command: 'echo pwned > link-main/pwned.txt' }, expectCode: 'JAIL_BASH_ESCAPE', mustNotExist: ['{{MAIN}}/pwned.txt'] },
  { name: 'bash reads through a symlink to outside', tool: 'bash', input: { command: 'cat link-outside/secret.txt' }, expectCode: 'JAIL_BASH_ESCAPE' },
  { name: 'bash ln -s /etc', tool: 'bash', input: { command: 'ln -s /etc etc-link' }, expectCode: 'JAIL_BASH_ESCAPE', mustNotExist: ['{{WORKTREE}}/etc-link'] },
  { name: 'bash sh -c escape', tool: 'bash', input: { command: "sh -c 'cd / && touch pwned'" }, expectCode: 'JAIL_BASH_ESCAPE' },
  { name: 'bash inline python writes ../', tool: 'bash', input: { command: `python3 -c "open('../py.txt','w').write('x')"` }, expectCode: 'JAIL_BASH_ESCAPE', mustNotExist: ['{{PARENT}}/py.txt'] },
  // bash: forbidden git
  { name: 'git stash', tool: 'bash', input: { command: 'git stash' }, expectCode: 'JAIL_BASH_FORBIDDEN_GIT' },
  { name: 'git checkout main', tool: 'bash', input: { command: 'git checkout main' }, expectCode: 'JAIL_BASH_FORBIDDEN_GIT' },
  { name: 'git checkout main (ignoring other worktrees)', tool: 'bash', input: { command: 'git checkout --ignore-other-worktrees main' }, expectCode: 'JAIL_BASH_FORBIDDEN_GIT' },
  { name: 'git switch -c', tool: 'bash', input: { command: 'git switch -c other' }, expectCode: 'JAIL_BASH_FORBIDDEN_GIT' },
  { name: 'git push', tool: 'bash', input: { command: 'git push origin HEAD:main' }, expectCode: 'JAIL_BASH_FORBIDDEN_GIT' },
  { name: 'git -C the main checkout', tool: 'bash', input: { command: 'git -C ../repo commit --allow-empty -m pwned' }, expectCode: 'JAIL_BASH_FORBIDDEN_GIT' },
  { name: 'git --git-dir', tool: 'bash', input: { command: 'git --git-dir=../repo/.git --work-tree=../repo commit --allow-empty -m pwned' }, expectCode: 'JAIL_BASH_FORBIDDEN_GIT' },
  { name: 'git reset --hard', tool: 'bash', input: { command: 'git reset --hard HEAD~1' }, expectCode: 'JAIL_BASH_FORBIDDEN_GIT' },
  { name: 'git branch -f main', tool: 'bash', input: { command: 'git branch -f main HEAD' }, expectCode: 'JAIL_BASH_FORBIDDEN_GIT' },
  { name: 'git update-ref', tool: 'bash', input: { command: 'git update-ref refs/heads/main HEAD' }, expectCode: 'JAIL_BASH_FORBIDDEN_GIT' },
  { name: 'git worktree add', tool: 'bash', input: { command: 'git worktree add ../wt2' }, expectCode: 'JAIL_BASH_FORBIDDEN_GIT', mustNotExist: ['{{PARENT}}/wt2'] },
  { name: 'git config hooksPath', tool: 'bash', input: { command: 'git config core.hooksPath /dev/null' }, expectCode: 'JAIL_BASH_FORBIDDEN_GIT' },
  { name: 'git commit --no-verify', tool: 'bash', input: { command: 'git commit --no-verify --allow-empty -m pwned' }, expectCode: 'JAIL_BASH_FORBIDDEN_GIT' },
  { name: 'git -c core.hooksPath', tool: 'bash', input: { command: 'git -c core.hooksPath=/dev/null commit --allow-empty -m pwned' }, expectCode: 'JAIL_BASH_FORBIDDEN_GIT' },
  { name: 'git -c alias running a program', tool: 'bash', input: { command: "git -c alias.x='!touch ../alias-pwned' x" }, expectCode: 'JAIL_BASH_FORBIDDEN_GIT', mustNotExist: ['{{PARENT}}/alias-pwned'] },
  { name: 'git push hidden behind a redirection', tool: 'bash', input: { command: 'git >/dev/null push origin HEAD:main' }, expectCode: 'JAIL_BASH_FORBIDDEN_GIT' },
  // bash: unsafe constructs (eval's literal string is checked like a command line)
  { name: 'eval', tool: 'bash', input: { command: 'eval "cd /; touch pwned"' }, expectCode: 'JAIL_BASH_ESCAPE' },
  { name: 'eval of a computed string', tool: 'bash', input: { command: 'C="cd /"; eval "$C; touch pwned"' }, expectCode: 'JAIL_BASH_UNSAFE' },
  { name: 'cd .. inside a function', tool: 'bash', input: { command: 'f() { cd ..; touch fn-pwned; }; f' }, expectCode: 'JAIL_BASH_UNSAFE', mustNotExist: ['{{PARENT}}/fn-pwned'] },
  { name: 'here-document piped into a shell', tool: 'bash', input: { command: "cat <<'EOF' | sh\ncd .. && touch heredoc-pwned\nEOF" }, expectCode: 'JAIL_BASH_UNSAFE', mustNotExist: ['{{PARENT}}/heredoc-pwned'] },
  { name: 'sudo', tool: 'bash', input: { command: 'sudo touch /etc/pwned' }, expectCode: 'JAIL_BASH_UNSAFE' },
  { name: 'isolation-hook bypass variable', tool: 'bash', input: { command: 'POLYWAVE_ALLOW_MAIN_COMMIT=1 git commit --allow-empty -m pwned' }, expectCode: 'JAIL_BASH_UNSAFE' },
  { name: 'unbalanced quote', tool: 'bash', input: { command: "echo 'unterminated; cd /" }, expectCode: 'JAIL_BASH_UNSAFE' },
  { name: 'brace-expanded command name', tool: 'bash', input: { command: "{eval,x} 'touch ../pwned'" }, expectCode: 'JAIL_BASH_UNSAFE', mustNotExist: ['{{PARENT}}/pwned'] },
  // bash: writes inside the worktree outside ownership
  { name: 'bash redirect into an unowned file', tool: 'bash', input: { command: 'echo x > src/b.ts' }, expectCode: 'JAIL_NOT_OWNED' },
  { name: 'bash git add an unowned file', tool: 'bash', input: { command: 'git add src/b.ts' }, expectCode: 'JAIL_NOT_OWNED' },
  { name: 'bash write into .git', tool: 'bash', input: { command: 'echo x > .git/hooks/pre-commit' }, expectCode: 'JAIL_GIT_INTERNALS' },
  { name: 'bash program writes an unowned file (post-command audit)', tool: 'bash', input: { command: `node -e "require('fs').writeFileSync('src/b.ts', 'pwned')"` }, expectCode: 'JAIL_UNOWNED_CHANGE', viaAudit: true },
  // git_commit
  { name: 'git_commit an unowned path', tool: 'git_commit', input: { message: 'pwned', paths: ['src/b.ts'] }, expectCode: 'JAIL_NOT_OWNED' },
  { name: 'git_commit while HEAD was moved to main', tool: 'git_commit', input: { message: 'pwned' }, expectCode: 'JAIL_BRANCH_MOVED', setup: 'head-on-main' },
];

export interface AdversarialVars {
  WORKTREE: string;
  MAIN: string;
  PARENT: string;
  OUTSIDE: string;
  HOME: string;
  TMPDIR: string;
  SYSTMP: string;
  ID: string;
}

/** Replaces `{{NAME}}` placeholders in every string of a value. */
export function fillPlaceholders<T>(value: T, vars: AdversarialVars): T {
  if (typeof value === 'string') return value.replace(/\{\{([A-Z]+)\}\}/g, (match, name: string) => (vars as unknown as Record<string, string>)[name] ?? match) as T;
  if (Array.isArray(value)) return value.map((item) => fillPlaceholders(item, vars)) as T;
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, fillPlaceholders(item, vars)])) as T;
  }
  return value;
}

export interface AdversarialLayout {
  repo: TestRepo;
  vars: AdversarialVars;
  /** Git bound to the worktree. */
  worktreeGit: Git;
  /** The agent environment: the repo's git isolation plus the fake HOME and TMPDIR. */
  env: Record<string, string | undefined>;
  /** The agent branch tip at creation. */
  branchTip: string;
}

/** Creates the layout described on {@link AdversarialCase}. */
export async function createAdversarialWorktree(): Promise<AdversarialLayout> {
  const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n', 'src/b.ts': 'export const b = 2;\n' } });
  const outside = repo.sibling('outside');
  const home = repo.sibling('home');
  const tmp = repo.sibling('tmp');
  for (const directory of [outside, home, tmp]) mkdirSync(directory);
  writeFileSync(path.join(outside, 'secret.txt'), 'secret\n');
  const systemTmp = realpathSync(os.tmpdir());
  symlinkSync(repo.dir, repo.path('link-main'));
  symlinkSync(outside, repo.path('link-outside'));
  symlinkSync(systemTmp, repo.path('link-tmp'));
  await repo.commitAll('symlinks');
  const worktree = repo.sibling('wt');
  await repo.git.worktreeAdd({ path: worktree, branch: adversarialBranch, base: 'HEAD', createBranch: true });
  const env = { ...repo.env, HOME: home, TMPDIR: tmp };
  const worktreeGit = createGit(worktree, { env });
  const vars: AdversarialVars = { WORKTREE: worktree, MAIN: repo.dir, PARENT: repo.root, OUTSIDE: outside, HOME: home, TMPDIR: tmp, SYSTMP: systemTmp, ID: path.basename(repo.root) };
  return { repo, vars, worktreeGit, env, branchTip: await worktreeGit.headCommit() };
}

/** Runs a case's raw set-up. */
export async function applyCaseSetup(layout: AdversarialLayout, testCase: AdversarialCase): Promise<void> {
  if (testCase.setup === 'head-on-main') {
    await layout.worktreeGit.run(['checkout', '--quiet', '--ignore-other-worktrees', 'main']);
    writeFileSync(path.join(layout.vars.WORKTREE, 'src', 'a.ts'), 'export const a = 2;\n');
  }
}

/** Puts the worktree back on the agent branch at its original tip, clean. */
export async function resetAdversarialWorktree(layout: AdversarialLayout): Promise<void> {
  const git = layout.worktreeGit;
  if ((await git.currentBranch()) !== adversarialBranch) await git.run(['checkout', '--quiet', '--force', adversarialBranch]);
  await git.run(['reset', '--quiet', '--hard', layout.branchTip]);
  await git.run(['clean', '--quiet', '-fd']);
}

function describeTree(directory: string, skip: (relative: string) => boolean = () => false): string[] {
  const lines: string[] = [];
  const walk = (relative: string) => {
    const absolute = path.join(directory, relative);
    let entries: string[];
    try {
      entries = readdirSync(absolute).sort();
    } catch {
      return;
    }
    for (const name of entries) {
      const child = relative === '' ? name : `${relative}/${name}`;
      if (skip(child)) continue;
      const stats = lstatSync(path.join(directory, child));
      if (stats.isSymbolicLink()) lines.push(`${child} -> ${readlinkSync(path.join(directory, child))}`);
      else if (stats.isDirectory()) {
        lines.push(`${child}/`);
        walk(child);
      } else lines.push(`${child} ${createHash('sha256').update(readFileSync(path.join(directory, child))).digest('hex').slice(0, 16)}`);
    }
  };
  walk('');
  return lines;
}

/**
 * Everything an escape could change outside the worktree's own files: the main checkout (files,
 * status, HEAD, config, hooks), every ref (branches, stash, tags), the worktree list and `.git`
 * file, the outside/home/tmp directories and the parent directory's entries.
 */
export async function escapeEvidence(layout: AdversarialLayout): Promise<string> {
  const { repo, vars } = layout;
  const git = repo.git;
  const parts = [
    `parent: ${readdirSync(vars.PARENT).sort().join(' ')}`,
    `main files:\n${describeTree(vars.MAIN, (relative) => relative === '.git').join('\n')}`,
    `main status: ${(await git.run(['status', '--porcelain=v1', '--untracked-files=all'])).stdout}`,
    `main HEAD: ${(await git.run(['symbolic-ref', 'HEAD'])).stdout}`,
    `refs: ${(await git.run(['for-each-ref', '--format=%(refname) %(objectname)'])).stdout}`,
    `worktrees: ${(await git.run(['worktree', 'list', '--porcelain'])).stdout}`,
    `config: ${readFileSync(path.join(vars.MAIN, '.git', 'config'), 'utf8')}`,
    `hooks:\n${describeTree(path.join(vars.MAIN, '.git', 'hooks')).join('\n')}`,
    `worktree .git: ${readFileSync(path.join(vars.WORKTREE, '.git'), 'utf8')}`,
    `outside:\n${describeTree(vars.OUTSIDE).join('\n')}`,
    `home:\n${describeTree(vars.HOME).join('\n')}`,
    `tmp:\n${describeTree(vars.TMPDIR).join('\n')}`,
    `system tmp id files: ${readdirSync(vars.SYSTMP).filter((name) => name.startsWith(vars.ID) && name !== vars.ID).join(' ')}`,
  ];
  return parts.join('\n---\n');
}

/** The `mustNotExist` paths of a case that do exist. */
export function existingForbiddenPaths(testCase: AdversarialCase, vars: AdversarialVars): string[] {
  return (testCase.mustNotExist ?? []).map((entry) => fillPlaceholders(entry, vars)).filter((entry) => existsSync(entry) || isLink(entry));
}

function isLink(entry: string): boolean {
  try {
    return lstatSync(entry).isSymbolicLink();
  } catch {
    return false;
  }
}
