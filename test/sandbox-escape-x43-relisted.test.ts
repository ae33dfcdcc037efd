/**
 * Outside round X43-15/16 (issue 11): the plan hides, BY NAME from a listing taken when it is made, what is not git's
 * own at the top of the git directory (a credential store `.git/.git-credentials`, `info/` files git never reads, a
 * submodule's git directory's), and the secret-named files at the top of the main checkout's dependency directories
 * bound back into a sandbox working elsewhere (`node_modules/.env.production`). One made there AFTER the plan was
 * readable to the agent. Now the appeared-since-start check lists those directories again when they change: the tool
 * executor's next request gets a sandbox that hides the new file, and (sandbox-appeared-during-call.test.ts) one made
 * during a call ends the run as a stale view. From the agent's side: its bash reads each file by a computed path.
 */
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildAgentSandboxPlan } from '../src/agents/sandbox/agent-sandbox.js';
import { createStaleViewCheck } from '../src/agents/sandbox/appeared-since-start.js';
import { createToolExecutor, type ToolExecutor } from '../src/agents/sandbox/tool-executor.js';
import { resetSandbox, sandboxStatus } from '../src/sandbox/index.js';
import { createTestRepo } from './support/git-repo.js';

const available = (await sandboxStatus()).available;

afterAll(async () => {
  await resetSandbox();
});

function outputOf(executor: ToolExecutor, cwd: string, env: Record<string, string>) {
  return async (command: string) => {
    const chunks: Buffer[] = [];
    await executor.run(command, { cwd, env, onOutput: (chunk) => chunks.push(chunk) }).done;
    return Buffer.concat(chunks).toString('utf8');
  };
}

/** A command that prints each file of `files` (absolute) through a path computed at run time, then `marker`. */
const readAll = (files: readonly string[], marker: string) =>
  `node -e "const fs=require('fs');for(const h of process.argv.slice(1)){const p=Buffer.from(h,'hex').toString();try{process.stdout.write(fs.readFileSync(p,'utf8'))}catch(e){console.log(e.code)}}" ${files.map((file) => Buffer.from(file).toString('hex')).join(' ')}; echo ${marker}`;

/** A repository with an ignored, installed `node_modules` and a submodule's git directory; agent A's worktree beside it. */
async function layout(branch: string) {
  const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n', '.gitignore': 'node_modules/\n' } });
  mkdirSync(repo.path('node_modules/left-pad'), { recursive: true });
  writeFileSync(repo.path('node_modules/left-pad/index.js'), 'module.exports = "PACKAGE-CODE";\n');
  // a submodule's git directory as `git submodule update` leaves it (only its layout matters here)
  mkdirSync(repo.path('.git/modules/lib/info'), { recursive: true });
  writeFileSync(repo.path('.git/modules/lib/HEAD'), 'ref: refs/heads/main\n');
  const worktree = repo.sibling('wt-A');
  await repo.git.worktreeAdd({ path: worktree, branch, base: 'HEAD', createBranch: true });
  const home = repo.sibling('scratch/home');
  const tmp = repo.sibling('scratch/tmp');
  mkdirSync(home, { recursive: true });
  mkdirSync(tmp, { recursive: true });
  const plan = await buildAgentSandboxPlan({ root: worktree, home, tmp, env: repo.env, userHome: repo.sibling('user-home') });
  const env = { ...repo.env, HOME: home, TMPDIR: tmp } as Record<string, string>;
  return { repo, worktree, plan, env };
}

describe.skipIf(!available)('files made after the plan where it hides by name: the git directory, the shared node_modules (X43-15/16)', () => {
  it('a worktree agent cannot read a credential store, a key or a .env made later at the top of .git, in info/, in a submodule\'s git dir, or at the top of the main checkout\'s node_modules', async () => {
    const { repo, worktree, plan, env } = await layout('polywave/x43r/wave1-agent-A');
    const executor = createToolExecutor(plan, { cwd: worktree, env });
    const run = outputOf(executor, worktree, env);
    try {
      const late = [
        repo.path('.git/.git-credentials'),
        repo.path('.git/id_ed25519'),
        repo.path('.git/info/cookies'),
        repo.path('.git/modules/lib/.git-credentials'),
        repo.path('node_modules/.env.production'),
        repo.path('node_modules/deploy.pem'),
        repo.path('node_modules/.npmrc'),
      ];
      // before: the package's code is readable (bound back), none of the late files exists
      expect(await run(readAll([repo.path('node_modules/left-pad/index.js')], 'one'))).toBe('module.exports = "PACKAGE-CODE";\none\n');
      expect(executor.starts).toBe(1);
      for (const [index, file] of late.entries()) writeFileSync(file, `SECRET-X43-16-${index}\n`);
      const out = await run(readAll([...late, repo.path('node_modules/left-pad/index.js'), repo.path('.git/HEAD')], 'two'));
      expect(out).not.toContain('SECRET-X43-16');
      // still there: the package's code and git's own files
      expect(out).toContain('PACKAGE-CODE');
      expect(out).toContain('ref: refs/heads/');
      expect(out).toContain('two');
      for (const file of late) expect(plan.unreadable).toContain(file);
      expect(executor.starts).toBe(2);
      // git in the worktree still works
      expect(await run('git status --porcelain >/dev/null && echo git-ok')).toContain('git-ok');
      // a git-own file made later (a merge's message by the orchestrator's git) is no reason for a new sandbox
      writeFileSync(repo.path('.git/ORIG_HEAD'), '0000000000000000000000000000000000000000\n');
      expect(await run('echo three')).toBe('three\n');
      expect(executor.starts).toBe(2);
    } finally {
      await executor.stop();
    }
  }, 90_000);

  it('the backends with one sandbox per run (cli:*, claude-code) see the view go stale when such a file appears', async () => {
    const { repo, worktree, plan } = await layout('polywave/x43s/wave1-agent-A');
    for (const file of [repo.path('.git/.git-credentials'), repo.path('node_modules/.env.local')]) {
      const check = createStaleViewCheck(structuredClone(plan), worktree, { identities: true });
      try {
        expect(check.check()).toBeUndefined();
        writeFileSync(file, 'SECRET\n');
        expect(check.check()).toContain(file);
      } finally {
        check.close();
      }
    }
  }, 60_000);

  it('empty mount points Claude Code makes for its own sandbox (.git/glab-cli/, .git/info/.claude-sandbox-noreplace) do not end the run; anything written into them later does, and so does a link', async () => {
    const { repo, worktree, plan } = await layout('polywave/x43e/wave1-agent-A');
    const check = createStaleViewCheck(structuredClone(plan), worktree, { identities: true });
    try {
      expect(check.check()).toBeUndefined();
      mkdirSync(repo.path('.git/glab-cli'));
      writeFileSync(repo.path('.git/info/.claude-sandbox-noreplace'), '');
      expect(check.check()).toBeUndefined();
      expect(check.check()).toBeUndefined();
      // content later: the directory's own stamp does not move for a write into an existing file
      writeFileSync(repo.path('.git/info/.claude-sandbox-noreplace'), 'SECRET\n');
      expect(check.check()).toContain(repo.path('.git/info/.claude-sandbox-noreplace'));
    } finally {
      check.close();
    }
    const second = await layout('polywave/x43e/wave1-agent-C');
    const dirCheck = createStaleViewCheck(structuredClone(second.plan), second.worktree, { identities: true });
    try {
      mkdirSync(second.repo.path('.git/glab-cli'));
      expect(dirCheck.check()).toBeUndefined();
      writeFileSync(second.repo.path('.git/glab-cli/token'), 'SECRET\n');
      expect(dirCheck.check()).toContain(second.repo.path('.git/glab-cli'));
    } finally {
      dirCheck.close();
    }
    const other = await layout('polywave/x43e/wave1-agent-B');
    const third = createStaleViewCheck(structuredClone(other.plan), other.worktree, { identities: true });
    try {
      expect(third.check()).toBeUndefined();
      symlinkSync('/etc/hostname', other.repo.path('.git/.empty-looking'));
      expect(third.check()).toContain(other.repo.path('.git/.empty-looking'));
    } finally {
      third.close();
    }
  }, 60_000);
});

// Issue 11 (h11d's limit, h11e): a submodule config made in an EXISTING `.git/modules/<name>/` during a run is not watched
// as `.git/config` is (X43-18). It cannot come from an agent: the git directory is read-only in every agent's sandbox, the
// solo agent's (its root is the main checkout) and a worktree agent's alike, and each linked worktree's own git directory
// too. (And polywave's own git never runs a repository's hook or fsmonitor: `core.hooksPath=/dev/null`,
// `core.fsmonitor=false` on every command, src/git/harden.ts — test/sandbox-escape-x8-git.test.ts.)
describe.skipIf(!available)('a submodule config an agent makes during its run (h11d\'s limit)', () => {
  const attempt = (gitDir: string) =>
    readAll([], 'x').replace(/^node -e "[^"]*"/, `node -e "const fs=require('fs');const g=Buffer.from('${Buffer.from(gitDir).toString('hex')}','hex').toString();for(const f of [g+'/modules/lib/config',g+'/modules/lib/hooks/post-checkout',g+'/modules/new/config']){try{fs.mkdirSync(require('path').dirname(f),{recursive:true});fs.writeFileSync(f,'[core]\\\\n\\\\tfsmonitor = touch /tmp/h11e-pwned\\\\n\\\\thooksPath = /tmp\\\\n');console.log('WROTE '+f)}catch(e){console.log(e.code)}}"`);

  it('neither a worktree agent nor a solo agent can write .git/modules/<name>/config (or a hook there, or a new module)', async () => {
    const { repo, worktree, plan, env } = await layout('polywave/x43m/wave1-agent-A');
    const solo = await buildAgentSandboxPlan({ root: repo.dir, home: repo.sibling('scratch/home'), tmp: repo.sibling('scratch/tmp'), env: repo.env, userHome: repo.sibling('user-home') });
    const linkedGitDir = repo.path('.git/worktrees/wt-A');
    for (const [who, sandboxPlan, cwd, gitDirs] of [
      ['worktree', plan, worktree, [repo.path('.git'), linkedGitDir]],
      ['solo', solo, repo.dir, [repo.path('.git')]],
    ] as const) {
      const executor = createToolExecutor(sandboxPlan, { cwd, env });
      try {
        for (const gitDir of gitDirs) {
          const out = await outputOf(executor, cwd, env)(attempt(gitDir));
          expect(out, `${who}: ${gitDir}`).not.toContain('WROTE');
          expect(out, `${who}: ${gitDir}`).toMatch(/EROFS|EACCES|EPERM|ENOENT/);
        }
      } finally {
        await executor.stop();
      }
    }
    expect(existsSync(repo.path('.git/modules/lib/config'))).toBe(false);
    expect(existsSync(repo.path('.git/modules/new'))).toBe(false);
    expect(existsSync(path.join(linkedGitDir, 'modules'))).toBe(false);
  }, 90_000);
});
