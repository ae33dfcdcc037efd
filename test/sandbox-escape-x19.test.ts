/**
 * Outside attack X19 (issue 11): secrets an agent in a worktree could still read in the main repository's
 * bound-back parts, each merged into main by the attacker's wave:
 * - X19-01, `.git/` beyond `.git/config`'s URL passwords: a submodule's `.git/modules/<sub>/config` with the
 *   `extraheader` actions/checkout writes there, a file the config `[include]`s, a credential store kept in
 *   `.git/.git-credentials`, and in the config itself a token as a URL's user name, `sendemail.smtpPass`,
 *   `github.token`;
 * - X19-02, the ignored "build/dependency" directories bound back: Bundler's local `.bundle/config`, a
 *   virtualenv's `pip.conf`, `node_modules/.cache`, the compiled `__pycache__` copy of a hidden settings file, an
 *   ignored `bin/` of private scripts;
 * - X19-06, a read lock taken from inside the sandbox on the manifest writes' lock file in `.git/polywave/locks/`
 *   (the writer's exclusive lock waited on it: another agent's report timed out, the wave was BLOCKED).
 * Real git, the real sandbox: the sandboxed command prints what it can read; git inside still works.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { gitConfigMasks, sandboxStatus } from '../src/sandbox/index.js';
import { gitConfigUnmaskable, gitDirectoryForeignEntries, unmaskableConfigCopies } from '../src/sandbox/sandbox-plan.js';
import { wrapInSandbox } from '../src/sandbox/wrap-in-sandbox.js';
import { childOutput } from './support/child-output.js';
import { worktreeAgentPlan } from './support/worktree-plan.js';
import { createTestRepo, type TestRepo } from './support/git-repo.js';

const available = (await sandboxStatus()).available;

async function runWrapped(file: string, args: string[], cwd: string, env: Record<string, string>): Promise<string> {
  const { stdout, stderr } = await childOutput(spawn(file, args, { cwd, env }));
  return stdout + stderr;
}

function plant(file: string, text: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
}

/** The attacker's layout: every place X19 read a secret from, each with its own canary. */
async function attackedRepo(): Promise<TestRepo> {
  const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n', '.gitignore': '.bundle/\n.venv/\nnode_modules/\n__pycache__/\n/bin/\n/dist/\nvendor/\n' } });
  await repo.run(['remote', 'add', 'origin', 'https://ghp_SECRET14tokenonly@github.com/o/r.git']);
  await repo.run(['config', 'sendemail.smtpPass', 'SECRET-SMTP-15']);
  await repo.run(['config', 'github.token', 'SECRET-GHTOKEN-16']);
  await repo.run(['config', 'include.path', 'creds.inc']);
  plant(repo.path('.git/creds.inc'), '[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic SECRET-INC-12\n');
  plant(repo.path('.git/modules/sub/config'), '[core]\n\trepositoryformatversion = 0\n[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic SECRET-SUBMOD-9\n');
  plant(repo.path('.git/.git-credentials'), 'https://bot:SECRET-GITCRED-10@github.com\n');
  plant(repo.path('.bundle/config'), '---\nBUNDLE_GEMS__CONTRIBSYS__COM: "user:SECRET-BUNDLE-1"\n');
  plant(repo.path('.venv/pip.conf'), '[global]\nindex-url = https://u:SECRET-PIP-2@pypi.corp/simple\n');
  plant(repo.path('.venv/lib/ok.py'), 'DEP-venv-ok\n');
  plant(repo.path('__pycache__/local_settings.cpython-311.pyc'), 'SECRET-PYC-3\n');
  plant(repo.path('bin/deploy.sh'), 'SECRET-BIN-5\n');
  plant(repo.path('dist/app.js'), 'SECRET-DIST-7\n');
  plant(repo.path('node_modules/.cache/app/.env'), 'SECRET-NM-6\n');
  plant(repo.path('node_modules/pkg/index.js'), 'DEP-node_modules-ok\n');
  plant(repo.path('.git/polywave/locks/IMPL-x.yaml.0123.lock'), '');
  // X20-01: what the X19 fixes missed in .git — a reflog with a pull URL, config grammar (a key on the header line, a
  // continued value, imap.pass, api-token, a ':' in the password), an include with a comment, files in info/,
  // legacy remotes, git-annex credentials; X20-02: Prisma's copy of .env in node_modules
  plant(repo.path('.git/logs/HEAD'), `${'0'.repeat(40)} ${'1'.repeat(40)} T <t@t> 1 +0000\tpull https://x-access-token:SECRET-REFLOG-1@github.com/o/r.git main: Fast-forward\n`);
  const config = readFileSync(repo.path('.git/config'), 'utf8');
  writeFileSync(repo.path('.git/config'), `${config}[http "https://gitlab.com/"] extraheader = AUTHORIZATION: basic SECRET-SAMELINE-2\n[http "https://example.com/"]\n\textraheader = \\\nAUTHORIZATION: bearer SECRET-CONT-3\n[imap]\n\tpass = SECRET-IMAP-4\n[gitlab]\n\tapi-token = SECRET-DASH-5\n[remote "colon"]\n\turl = https://u:pa:SECRET-COLON-6@host/r.git\n[include]\n\tpath = info/q.inc ; the CI token\n`);
  plant(repo.path('.git/info/q.inc'), '[http]\n\textraheader = SECRET-INCCOMMENT-13\n');
  plant(repo.path('.git/info/git-credentials'), 'https://bot:SECRET-INFO-9@github.com\n');
  plant(repo.path('.git/info/cookies'), 'example.com\tFALSE\t/\tTRUE\t0\to\tSECRET-COOKIE-15\n');
  plant(repo.path('.git/annex/creds/uuid'), 'SECRET-ANNEX-10\n');
  plant(repo.path('.git/branches/legacy'), 'https://u:SECRET-BRANCHES-7@host/r.git\n');
  plant(repo.path('.git/remotes/legacy2'), 'URL: https://u:SECRET-REMOTES-8@host/r.git\n');
  plant(repo.path('node_modules/.prisma/client/.env'), 'DATABASE_URL=postgres://u:SECRET-PRISMA-21@db/x\n');
  // X20-09: clones inside dependency directories keep the install URL's token (pip's editable VCS installs, a git
  // dependency kept as a clone, a scoped one, Composer's --prefer-source, Bundler's bare mirror and its checkout),
  // npm's hidden lockfile keeps a tokened `resolved`, a secret-named file at a (nested) dependency dir's top
  for (const [file, canary] of x2009Clones) plant(repo.path(file), `[remote "origin"]\n\turl = https://u:${canary}@github.com/org/private.git\n`);
  plant(repo.path('.venv/src/private-lib/setup.py'), 'DEP-venv-src-ok\n');
  plant(repo.path('node_modules/private-pkg/index.js'), 'DEP-git-pkg-ok\n');
  plant(repo.path('node_modules/.package-lock.json'), '{"packages":{"node_modules/private-pkg":{"resolved":"git+https://SECRET-NPMLOCK-72:x-oauth-basic@github.com/org/private-pkg.git#abc"}},"name":"LOCK-READABLE"}\n');
  plant(repo.path('packages/web/node_modules/.env.production'), 'API_KEY=SECRET-NESTEDENVPROD-74\n');
  plant(repo.path('node_modules/.env.development.local'), 'API_KEY=SECRET-ENVDEV-76\n');
  return repo;
}

const x2009Clones: Array<[string, string]> = [
  ['.venv/src/private-lib/.git/config', 'SECRET-VENVSRC-71'],
  ['node_modules/private-pkg/.git/config', 'SECRET-NMGIT-75'],
  ['node_modules/@org/scoped/.git/config', 'SECRET-SCOPED-77'],
  ['vendor/acme/lib/.git/config', 'SECRET-COMPOSER-78'],
  ['vendor/bundle/ruby/3.2.0/cache/bundler/git/private-gem-abc123/config', 'SECRET-BUNDLERGIT-73'],
  ['vendor/bundle/ruby/3.2.0/bundler/gems/private-gem-0a1b2c/.git/config', 'SECRET-BUNDLERGEM-79'],
  ['.venv/src/private-lib/.git/logs/HEAD', 'SECRET-VENVLOG-80'],
];

const secrets = [...x2009Clones.map(([, canary]) => canary), 'SECRET-NPMLOCK-72', 'SECRET-NESTEDENVPROD-74', 'SECRET-ENVDEV-76', 'SECRET-REFLOG-1', 'SECRET-SAMELINE-2', 'SECRET-CONT-3', 'SECRET-IMAP-4', 'SECRET-DASH-5', 'SECRET-COLON-6', 'SECRET-INCCOMMENT-13', 'SECRET-INFO-9', 'SECRET-COOKIE-15', 'SECRET-ANNEX-10', 'SECRET-BRANCHES-7', 'SECRET-REMOTES-8', 'SECRET-PRISMA-21', 'ghp_SECRET14tokenonly', 'SECRET-SMTP-15', 'SECRET-GHTOKEN-16', 'SECRET-INC-12', 'SECRET-SUBMOD-9', 'SECRET-GITCRED-10', 'SECRET-BUNDLE-1', 'SECRET-PIP-2', 'SECRET-PYC-3', 'SECRET-BIN-5', 'SECRET-DIST-7', 'SECRET-NM-6'];

describe('outside attack X19: the git directory and the bound-back directories hold no readable secret', () => {
  it('masks every config file with a credential (the config, a submodule config, an included file) and hides the git directory\'s foreign files, not git\'s own', async () => {
    const repo = await attackedRepo();
    const masked = gitConfigMasks(repo.path('.git')).map((entry) => entry.path).sort();
    expect(masked).toEqual([repo.path('.git/config'), repo.path('.git/creds.inc'), repo.path('.git/info/q.inc'), repo.path('.git/modules/sub/config')].sort());
    const foreign = gitDirectoryForeignEntries(repo.path('.git'));
    expect(foreign).toContain(repo.path('.git/.git-credentials'));
    // git's own entries, and the included file (git inside reads it: masked, not hidden), stay
    for (const own of ['HEAD', 'config', 'objects', 'refs', 'index', 'hooks', 'info', 'info/exclude', 'modules', 'creds.inc', 'info/q.inc']) expect(foreign, own).not.toContain(repo.path(`.git/${own}`));
    // git's, but holding credentials and needed by no sandbox (X20-01)
    for (const hidden of ['logs', 'branches', 'remotes', 'info/git-credentials', 'info/cookies', 'annex/creds']) expect(foreign, hidden).toContain(repo.path(`.git/${hidden}`));
    expect(gitConfigMasks(repo.path('.git')).map((entry) => entry.path)).toContain(repo.path('.git/info/q.inc'));
  });

  it('X20-07: every submodule config with a token is masked, 80 of them too (a cap of 64 left 17 in clear)', async () => {
    const repo = await createTestRepo();
    for (let index = 0; index < 80; index += 1) plant(repo.path(`.git/modules/sub${index}/config`), `[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic SECRET-SUB-${index}\n`);
    const masked = gitConfigMasks(repo.path('.git')).map((entry) => entry.path);
    for (let index = 0; index < 80; index += 1) expect(masked).toContain(repo.path(`.git/modules/sub${index}/config`));
  });

  it.skipIf(!available)('an agent in a worktree reads none of the secrets of X19 and X20; its dependency directories and git still work', async () => {
    const repo = await attackedRepo();
    const { worktree, home, tmp, plan } = await worktreeAgentPlan(repo);
    const files = ['.git/logs/HEAD', '.git/info/q.inc', '.git/info/git-credentials', '.git/info/cookies', '.git/annex/creds/uuid', '.git/branches/legacy', '.git/remotes/legacy2', 'node_modules/.prisma/client/.env', '.git/config', '.git/creds.inc', '.git/modules/sub/config', '.git/.git-credentials', '.bundle/config', '.venv/pip.conf', '__pycache__/local_settings.cpython-311.pyc', 'bin/deploy.sh', 'dist/app.js', 'node_modules/.cache/app/.env', ...x2009Clones.map(([file]) => file), 'node_modules/.package-lock.json', 'packages/web/node_modules/.env.production', 'node_modules/.env.development.local'];
    const probe = [
      `for f in ${files.map((file) => `'${repo.path(file)}'`).join(' ')}; do cat "$f" 2>/dev/null; done`,
      `grep -rh SECRET '${repo.path('.git')}' '${repo.path('node_modules')}' '${repo.path('.venv')}' '${repo.path('vendor')}' '${repo.path('packages')}' 2>/dev/null`,
      'git config --list 2>&1; git remote -v 2>&1',
      `cat '${repo.path('node_modules/pkg/index.js')}' '${repo.path('.venv/lib/ok.py')}' '${repo.path('.venv/src/private-lib/setup.py')}' '${repo.path('node_modules/private-pkg/index.js')}'`,
      'git status --short >/dev/null && echo GIT-STATUS-OK; git log --oneline -1 >/dev/null && echo GIT-LOG-OK',
      `python3 -c "print('PY-' + 'OK')"`,
      // X19-06: a read lock on the manifest writes' lock file (the orchestrator's exclusive lock would wait on it)
      `python3 -c "import fcntl, os; fd = os.open('${repo.path('.git/polywave/locks/IMPL-x.yaml.0123.lock')}', os.O_RDONLY); fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB); print('LOCK-' + 'TAKEN')" 2>/dev/null`,
      `ls '${repo.path('.git/polywave/locks')}' 2>/dev/null | sed 's/^/listed: /'`,
    ].join('\n');
    const wrapped = await wrapInSandbox(plan, probe, { cwd: worktree, env: { PATH: process.env.PATH ?? '', HOME: home, TMPDIR: tmp } });
    const output = await runWrapped(wrapped.file, wrapped.args, worktree, wrapped.env);
    wrapped.release();
    if (process.env.X19_DEBUG) console.log(output);
    for (const secret of secrets) expect(output, secret).not.toContain(secret);
    expect(output).not.toContain('LOCK-TAKEN');
    expect(output).not.toContain('listed: ');
    for (const ok of ['PY-OK', 'DEP-node_modules-ok', 'DEP-venv-ok', 'DEP-venv-src-ok', 'DEP-git-pkg-ok', 'LOCK-READABLE', 'GIT-STATUS-OK', 'GIT-LOG-OK', 'origin']) expect(output, ok).toContain(ok);
  }, 120_000);

  it.skipIf(!available)('X21-04: a config file with a credential that is not UTF-8 (one Latin-1 byte in a comment), which sandbox-runtime cannot mask, is seen as polywave\'s masked copy, not in clear; git inside still works', async () => {
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n' } });
    const config = readFileSync(repo.path('.git/config'));
    writeFileSync(repo.path('.git/config'), Buffer.concat([config, Buffer.from('# Jos\xe9\'s machine\n[remote "origin"]\n\turl = https://u:SECRET-LATIN1-21@github.com/o/r.git\n', 'latin1')]));
    expect(gitConfigMasks(repo.path('.git')).map((entry) => entry.path)).not.toContain(repo.path('.git/config'));
    expect(gitConfigUnmaskable(repo.path('.git'))).toEqual([repo.path('.git/config')]);
    const { worktree, home, tmp, plan } = await worktreeAgentPlan(repo);
    const probe = [`cat '${repo.path('.git/config')}' 2>&1`, 'git config --list 2>&1', 'git status --short >/dev/null && echo GIT-STATUS-OK'].join('\n');
    const wrapped = await wrapInSandbox(plan, probe, { cwd: worktree, env: { PATH: process.env.PATH ?? '', HOME: home, TMPDIR: tmp } });
    const output = await runWrapped(wrapped.file, wrapped.args, worktree, wrapped.env);
    wrapped.release();
    expect(output).not.toContain('SECRET-LATIN1-21');
    expect(output).toContain('GIT-STATUS-OK');
    // not an empty file: the configuration as it is, the credential replaced (git reads the remote)
    expect(output).toContain('remote.origin.url=https://fake_value_1@github.com/o/r.git');
  }, 120_000);

  it.skipIf(!available)('X21-01/X21-06: credentials in a helper, an ssh command, *key keys, a filter command, a URL with two @, an included file outside .git, a linked worktree\'s reflog and messages, a rebase todo, 210 submodule reflogs — none readable; git inside still works', async () => {
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n' } });
    const outsideInclude = repo.sibling('ci-auth.gitconfig');
    writeFileSync(outsideInclude, '[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic SECRET-OUTINC-7\n');
    const config = readFileSync(repo.path('.git/config'), 'utf8');
    writeFileSync(repo.path('.git/config'), `${config}[credential]\n\thelper = "!f() { echo username=ci; echo password=SECRET-HELPER-1; }; f"\n[core]\n\tsshCommand = sshpass -p SECRET-SSHPASS-2 ssh\n[jira]\n\tapikey = SECRET-APIKEY-3\n[filter "x"]\n\tsmudge = curl -H 'PRIVATE-TOKEN: SECRET-FILTER-4' https://example.com\n[remote "at"]\n\turl = https://u:p@SECRET-AT-6@host/r.git\n[include]\n\tpath = ${outsideInclude}\n`);
    await repo.run(['worktree', 'add', '--quiet', '-b', 'user-wt', repo.sibling('wt-user')]);
    plant(repo.path('.git/worktrees/wt-user/logs/HEAD'), `${'0'.repeat(40)} ${'1'.repeat(40)} T <t@t> 1 +0000\tpull https://x-access-token:SECRET-WTLOG-14@github.com/o/r.git: Fast-forward\n`);
    plant(repo.path('.git/worktrees/wt-user/MERGE_MSG'), 'Merge SECRET-WTMERGE-15\n');
    plant(repo.path('.git/rebase-merge/git-rebase-todo'), "exec curl -H 'Authorization: token SECRET-REBASE-16' https://x\n");
    plant(repo.path('.git/COMMIT_EDITMSG'), 'SECRET-EDITMSG-17\n');
    plant(repo.path('.git/lfs/tmp/part'), 'SECRET-LFS-18\n');
    for (let index = 0; index < 210; index += 1) plant(repo.path(`.git/modules/lib${index}/logs/HEAD`), `pull https://x-access-token:SECRET-MODLOG${index}-1@github.com/o/r.git\n`);
    const canaries = ['SECRET-HELPER-1', 'SECRET-SSHPASS-2', 'SECRET-APIKEY-3', 'SECRET-FILTER-4', 'SECRET-AT-6', 'SECRET-OUTINC-7', 'SECRET-WTLOG-14', 'SECRET-WTMERGE-15', 'SECRET-REBASE-16', 'SECRET-EDITMSG-17', 'SECRET-LFS-18', 'SECRET-MODLOG'];
    const { worktree, home, tmp, plan } = await worktreeAgentPlan(repo);
    const probe = [
      `cat '${repo.path('.git/config')}' '${outsideInclude}' 2>/dev/null`,
      `grep -rh SECRET '${repo.path('.git')}' 2>/dev/null`,
      'git config --list 2>&1',
      'git status --short >/dev/null && echo GIT-STATUS-OK',
    ].join('\n');
    const wrapped = await wrapInSandbox(plan, probe, { cwd: worktree, env: { PATH: process.env.PATH ?? '', HOME: home, TMPDIR: tmp } });
    const output = await runWrapped(wrapped.file, wrapped.args, worktree, wrapped.env);
    wrapped.release();
    if (process.env.X19_DEBUG) console.log(output);
    for (const canary of canaries) expect(output, canary).not.toContain(canary);
    expect(output).toContain('GIT-STATUS-OK');
    // the configuration is still there, its credentials replaced
    expect(output).toContain('filter.x.smudge=fake_value_');
    expect(output).toContain('remote.at.url=https://fake_value_');
  }, 120_000);

  it('X22-01: the masked copies live in a directory of this user\'s alone, written fresh: one another user made first (0777) is not used, a file found there is replaced', async () => {
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n' } });
    const config = readFileSync(repo.path('.git/config'));
    writeFileSync(repo.path('.git/config'), Buffer.concat([config, Buffer.from('# Jos\xe9\n[remote "origin"]\n\turl = https://u:SECRET-LATIN1-22@github.com/o/r.git\n', 'latin1')]));
    const saved = process.env.TMPDIR;
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'pw-x22-'));
    process.env.TMPDIR = tmp;
    try {
      const directory = path.join(tmp, `polywave-masked-config-${process.getuid?.() ?? 'user'}`);
      mkdirSync(directory);
      chmodSync(directory, 0o777);
      expect(unmaskableConfigCopies(repo.path('.git'))).toEqual([]);
      // the file stays hidden (fail closed): the plan still lists it
      expect(gitConfigUnmaskable(repo.path('.git'))).toEqual([repo.path('.git/config')]);
      chmodSync(directory, 0o700);
      const first = unmaskableConfigCopies(repo.path('.git'));
      expect(first).toHaveLength(1);
      // a copy swapped there in between is not reused: the next plan writes it again
      writeFileSync(first[0]!.source, '[core]\n\tfsmonitor = touch /tmp/pwned\n');
      const second = unmaskableConfigCopies(repo.path('.git'));
      expect(second[0]!.source).toBe(first[0]!.source);
      const text = readFileSync(second[0]!.source, 'latin1');
      expect(text).toContain('url = https://fake_value_1@github.com/o/r.git');
      expect(text).not.toContain('fsmonitor');
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
