import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { execFileSync } from 'node:child_process';
import { agentSandboxPlan, defaultBuildCaches, gatePlan, homeSecrets, ignoredPathsToHide, secretFileName } from './sandbox-plan.js';
import { scratchParent } from './scratch-dirs.js';

const base = {
  root: '/repo/.claude/worktrees/wave1-agent-A',
  home: '/tmp/polywave-agent-A-x/home',
  tmp: '/tmp/polywave-agent-A-x/tmp',
  gitCommonDir: '/repo/.git',
  otherWorktrees: ['/repo/.claude/worktrees/wave1-agent-B', '/repo/.claude/worktrees/wave1-agent-C'],
  userHome: '/home/user',
};

describe('agentSandboxPlan', () => {
  it('writable: the worktree, the private HOME and TMPDIR; read-only: the worktree .git; no network by default', () => {
    const plan = agentSandboxPlan(base);
    expect(plan.writable).toEqual([base.root, base.home, base.tmp]);
    expect(plan.readOnlyWithin).toEqual([`${base.root}/.git`]);
    expect(plan.allowedHosts).toEqual([]);
  });

  it('unreadable: every other worktree and the credentials of the user home', () => {
    const plan = agentSandboxPlan(base);
    for (const other of base.otherWorktrees) expect(plan.unreadable).toContain(other);
    for (const secret of ['.ssh', '.aws', '.config/gcloud', '.azure', '.docker', '.netrc', '.git-credentials', '.npmrc']) expect(plan.unreadable).toContain(`/home/user/${secret}`);
    expect(plan.unreadable).not.toContain(base.root);
    expect(homeSecrets).toContain('.npm/_logs');
  });

  it('the main checkout .env files are unreadable, unless the agent works in the main checkout', () => {
    const envFiles = ['.env', '.env.local'];
    expect(agentSandboxPlan({ ...base, mainCheckoutEnvFiles: envFiles }).unreadable).toEqual(expect.arrayContaining(['/repo/.env', '/repo/.env.local']));
    const solo = agentSandboxPlan({ ...base, root: '/repo', mainCheckoutEnvFiles: envFiles, otherWorktrees: [] });
    expect(solo.unreadable).not.toContain('/repo/.env');
  });

  it('an agent in the main checkout: the common .git directory and the manifest stay read-only; worktrees containing the root are not denied', () => {
    const plan = agentSandboxPlan({ ...base, root: '/repo', otherWorktrees: ['/repo/.claude/worktrees/wave1-agent-B'], readOnly: ['docs/IMPL/IMPL-x.yaml'] });
    expect(plan.readOnlyWithin).toEqual(['/repo/.git', '/repo/docs/IMPL/IMPL-x.yaml']);
    expect(plan.unreadable).toContain('/repo/.claude/worktrees/wave1-agent-B');
    // a listed worktree that contains the root (never the case for git, but fail safe) is not made unreadable
    expect(agentSandboxPlan({ ...base, otherWorktrees: ['/repo/.claude'] }).unreadable).not.toContain('/repo/.claude');
  });

  it('sandbox.network.allow and sandbox.writable (with ~/ expanded) come from the config, deduplicated', () => {
    const plan = agentSandboxPlan({ ...base, config: { network: { allow: ['registry.npmjs.org', '*.pypi.org', 'registry.npmjs.org'] }, writable: ['~/.npm', '/opt/cache', base.root] } });
    expect(plan.allowedHosts).toEqual(['registry.npmjs.org', '*.pypi.org']);
    expect(plan.writable).toEqual([base.root, base.home, base.tmp, '/home/user/.npm', '/opt/cache']);
  });

  it("unreadable: other agents' and gates' scratch directories (the whole scratch parent by default), the own HOME/TMPDIR writable", () => {
    const parent = scratchParent();
    const own = { ...base, home: path.join(parent, 'polywave-agent-A-x', 'home'), tmp: path.join(parent, 'polywave-agent-A-x', 'tmp') };
    const plan = agentSandboxPlan(own);
    expect(plan.unreadable).toContain(parent);
    expect(plan.writable).toEqual([own.root, own.home, own.tmp]);
    const listed = agentSandboxPlan({ ...base, scratchDirs: ['/tmp/polywave-scratch-1000', '/tmp/polywave-agent-B-y'] });
    expect(listed.unreadable).toEqual(expect.arrayContaining(['/tmp/polywave-scratch-1000', '/tmp/polywave-agent-B-y']));
    // an orchestrator whose TMPDIR differs: that parent, this process's and /tmp's are all denied
    const uid = process.getuid?.() ?? 'user';
    expect(agentSandboxPlan({ ...base, env: { TMPDIR: '/var/tmp/elsewhere' } }).unreadable).toEqual(expect.arrayContaining([parent, `/var/tmp/elsewhere/polywave-scratch-${uid}`, `/tmp/polywave-scratch-${uid}`]));
    // a scratch path containing the agent's own root is not denied (fail safe)
    expect(agentSandboxPlan({ ...base, scratchDirs: ['/repo'] }).unreadable).not.toContain('/repo');
  });

  it('hiddenAround (a dispatch worker\'s --dir): hidden whole but the root (writable) and the git directory (read-only), whose worktrees/ shows the own entry only', () => {
    const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'pw-hidden-around-')));
    try {
      const clone = path.join(dir, 'repo.git');
      const root = path.join(dir, 'work', 'job-A');
      mkdirSync(path.join(clone, 'worktrees', 'job-A'), { recursive: true });
      mkdirSync(path.join(clone, 'worktrees', 'job-B'), { recursive: true });
      mkdirSync(root, { recursive: true });
      writeFileSync(path.join(root, '.git'), `gitdir: ${path.join(clone, 'worktrees', 'job-A')}\n`);
      const input = { root, home: base.home, tmp: base.tmp, gitCommonDir: clone, mainCheckout: root, otherWorktrees: [path.join(dir, 'work', 'job-B')], userHome: base.userHome, scratchDirs: [] };
      const plan = agentSandboxPlan({ ...input, hiddenAround: [dir] });
      expect(plan.unreadable).toEqual(expect.arrayContaining([dir, path.join(clone, 'worktrees')]));
      // (covered by the hidden directory: not one mount more)
      expect(plan.unreadable).not.toContain(path.join(dir, 'work', 'job-B'));
      expect(plan.readable).toEqual(expect.arrayContaining([clone, path.join(clone, 'worktrees', 'job-A')]));
      expect(plan.readable).not.toContain(path.join(clone, 'worktrees', 'job-B'));
      expect(plan.writable).toContain(root);
      // a gate job's checkout on the worker: the same
      const gate = gatePlan({ directory: root, tmp: base.tmp, gitCommonDir: clone, userHome: base.userHome, scratchDirs: [], hiddenAround: [dir] });
      expect(gate.unreadable).toEqual(expect.arrayContaining([dir, path.join(clone, 'worktrees')]));
      expect(gate.readable).toEqual(expect.arrayContaining([clone, path.join(clone, 'worktrees', 'job-A')]));
      // an entry that is (or lies in) the root or the git directory hides nothing
      const none = agentSandboxPlan({ ...input, hiddenAround: [root, clone, path.join(root, 'src')] });
      expect(none.unreadable).not.toContain(root);
      expect(none.unreadable).not.toContain(clone);
      expect(none.unreadable).not.toContain(path.join(clone, 'worktrees'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('every path is absolute', () => {
    const plan = agentSandboxPlan({ ...base, config: { writable: ['~/x'] }, readOnly: ['a/b'] });
    for (const entry of [...plan.writable, ...plan.readOnlyWithin, ...plan.unreadable]) expect(path.isAbsolute(entry)).toBe(true);
  });
});

describe('gatePlan', () => {
  it("a worktree gate: its directory, TMPDIR and the repository's gate build cache writable, never the user's caches; .git read-only; secrets and scratch dirs unreadable", () => {
    const cache = '/home/user/.cache/polywave/gate-build-cache/0123456789abcdef';
    const plan = gatePlan({ directory: base.root, tmp: '/tmp/gate-1', caches: [cache], gitCommonDir: '/repo/.git', userHome: '/home/user', scratchDirs: ['/tmp/polywave-scratch-1000'] });
    expect(plan.writable).toEqual([base.root, '/tmp/gate-1', cache]);
    for (const userCache of defaultBuildCaches('/home/user')) expect(plan.writable).not.toContain(userCache);
    expect(plan.readOnlyWithin).toEqual([`${base.root}/.git`]);
    expect(plan.unreadable).toEqual(expect.arrayContaining(['/home/user/.ssh', '/tmp/polywave-scratch-1000']));
    expect(plan.allowedHosts).toEqual([]);
    // by default: the scratch parent of this user
    expect(gatePlan({ directory: base.root, tmp: '/tmp/gate-1' }).unreadable).toContain(scratchParent());
    // a throwaway checkout inside the scratch parent (X3 #18): the parent stays hidden, the checkout is bound back writable
    const inScratch = '/tmp/polywave-scratch-1000/polywave-checkout-1/tree-1';
    expect(gatePlan({ directory: inScratch, tmp: '/tmp/gate-1', scratchDirs: ['/tmp/polywave-scratch-1000'] }).unreadable).not.toContain('/tmp/polywave-scratch-1000');
    const thrown = gatePlan({ directory: inScratch, tmp: '/tmp/gate-1', scratchDirs: ['/tmp/polywave-scratch-1000'], directoryIsScratch: true });
    expect(thrown.unreadable).toContain('/tmp/polywave-scratch-1000');
    expect(thrown.writable).toContain(inScratch);
  });

  it('a gate in the main checkout keeps the common git directory read-only', () => {
    const plan = gatePlan({ directory: '/repo', tmp: '/tmp/gate-2', gitCommonDir: '/repo/.git', caches: [], config: { network: { allow: ['proxy.golang.org'] } } });
    expect(plan.writable).toEqual(['/repo', '/tmp/gate-2']);
    expect(plan.readOnlyWithin).toEqual(['/repo/.git']);
    expect(plan.allowedHosts).toEqual(['proxy.golang.org']);
  });
});

describe('the home as an allow-list (outside attack X10 N1b/N1c)', () => {
  it('hides the home but for its tool roots and the repository (around the writable worktree), keeps credentials inside tool roots hidden; secret files around the checkout hidden', () => {
    const lab = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'polywave-plan-home-')));
    try {
      const home = path.join(lab, 'home');
      const repo = path.join(home, 'code', 'repo');
      const worktree = path.join(repo, '.claude', 'worktrees', 'wave1-agent-A');
      const other = path.join(repo, '.claude', 'worktrees', 'wave1-agent-B');
      for (const dir of ['.cargo/bin', '.nvm/versions/node/v20/bin', '.config/glab-cli', '.config/mytool', '.docker/bin', '.local/bin', '.local/share/claude/versions']) mkdirSync(path.join(home, dir), { recursive: true });
      for (const dir of [path.join(repo, '.git'), path.join(repo, 'src'), worktree, other]) mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(home, '.cargo/credentials.toml'), 'x');
      writeFileSync(path.join(home, '.local/share/claude/versions/1.0'), 'x', { mode: 0o755 });
      symlinkSync(path.join(home, '.local/share/claude/versions/1.0'), path.join(home, '.local/bin/claude'));
      // outside attack X13 #4: links in a PATH dir to a data file, a store directory, an executable in ~/.config or a credential store put nothing back
      for (const dir of ['.local/share/store', '.ssh/bin', '.nvm/alias']) mkdirSync(path.join(home, dir), { recursive: true });
      writeFileSync(path.join(home, '.config/glab-cli/config.yml'), 'x');
      writeFileSync(path.join(home, '.config/run.sh'), 'x', { mode: 0o755 });
      writeFileSync(path.join(home, '.ssh/bin/helper'), 'x', { mode: 0o755 });
      symlinkSync(path.join(home, '.config/glab-cli/config.yml'), path.join(home, '.local/bin/glab-link'));
      symlinkSync(path.join(home, '.local/share/store'), path.join(home, '.local/bin/storedir'));
      symlinkSync(path.join(home, '.config/run.sh'), path.join(home, '.local/bin/run'));
      symlinkSync(path.join(home, '.ssh/bin/helper'), path.join(home, '.local/bin/helper'));
      symlinkSync(path.join(home, '.nvm/alias'), path.join(home, '.local/bin/nvm-alias'));
      // issue 11 (S9): a link to an executable file elsewhere puts back that file only, never its directory; a link to a directory is not followed
      mkdirSync(path.join(home, 'Documents/tools'), { recursive: true });
      writeFileSync(path.join(home, 'Documents/run.sh'), 'x', { mode: 0o755 });
      writeFileSync(path.join(home, 'Documents/prod.key'), 'x', { mode: 0o755 });
      symlinkSync(path.join(home, 'Documents/run.sh'), path.join(home, '.local/bin/docrun'));
      symlinkSync(path.join(home, 'Documents/prod.key'), path.join(home, '.local/bin/dockey'));
      symlinkSync(path.join(home, 'Documents/tools'), path.join(home, '.local/bin/doctools'));
      writeFileSync(path.join(repo, '.env'), 'x');
      writeFileSync(path.join(home, 'code', '.env'), 'x');
      writeFileSync(path.join(lab, 'gcreds.json'), 'x');
      const env = { PATH: `${path.join(home, '.docker/bin')}:${path.join(home, '.cargo/bin')}:${path.join(home, '.nvm/versions/node/v20/bin')}:${path.join(home, '.local/bin')}:/usr/bin`, GOOGLE_APPLICATION_CREDENTIALS: path.join(lab, 'gcreds.json') };
      const plan = agentSandboxPlan({ root: worktree, home: path.join(lab, 'h'), tmp: path.join(lab, 't'), gitCommonDir: path.join(repo, '.git'), otherWorktrees: [other], userHome: home, env, mainCheckoutEnvFiles: ['.env'], config: { readable: ['~/.config/mytool'] } });
      expect(plan.unreadable).toEqual(expect.arrayContaining([home, path.join(home, '.cargo/credentials.toml'), path.join(lab, 'gcreds.json')]));
      // covered by the hidden home (the main checkout inside it is hidden whole from a worktree agent): no mount of their own
      for (const covered of [path.join(home, '.ssh'), path.join(home, 'code', '.env'), repo, other, path.join(repo, '.env')]) expect(plan.unreadable, covered).not.toContain(covered);
      expect(plan.readable).toEqual(expect.arrayContaining([path.join(home, '.cargo'), path.join(home, '.nvm'), path.join(home, '.local/bin'), path.join(home, '.local/share/claude/versions/1.0'), path.join(home, '.config/run.sh'), path.join(home, 'Documents/run.sh'), path.join(home, '.config/mytool'), path.join(repo, '.git')]));
      // of the main checkout only its git directory (and dependency directories) is put back: not its sources, not the other worktree
      for (const never of [path.join(repo, 'src'), path.join(repo, '.claude')]) expect(plan.readable, never).not.toContain(never);
      // ~/.docker/bin on PATH does not open ~/.docker (a secret store)
      for (const never of [repo, worktree, other, path.join(repo, '.env'), path.join(home, '.config/glab-cli'), path.join(home, '.docker'), path.join(home, '.docker/bin')]) expect(plan.readable).not.toContain(never);
      // X13 #4, S9: of what the links point at outside the tool roots, only executable files (`~/.nvm/alias` is inside `~/.nvm`, put back whole)
      for (const never of ['.config', '.config/glab-cli', '.config/glab-cli/config.yml', '.local/share', '.local/share/store', '.local/share/claude/versions', '.ssh', '.ssh/bin', '.ssh/bin/helper', '.nvm/alias', 'Documents', 'Documents/tools', 'Documents/prod.key']) expect(plan.readable, never).not.toContain(path.join(home, never));
      expect(plan.readable!.filter((entry) => entry.startsWith(path.join(home, '.local/share')))).toEqual([path.join(home, '.local/share/claude/versions/1.0')]);
      expect(plan.readable!.filter((entry) => entry.startsWith(path.join(home, 'Documents')))).toEqual([path.join(home, 'Documents/run.sh')]);
      // a solo agent (root = the checkout): the checkout is writable, its own .env readable; the parent's .env hidden (not inside the hidden home: HOME is elsewhere)
      const solo = agentSandboxPlan({ root: repo, home: path.join(lab, 'h'), tmp: path.join(lab, 't'), gitCommonDir: path.join(repo, '.git'), otherWorktrees: [], userHome: path.join(lab, 'elsewhere'), env: {} });
      expect(solo.unreadable).toContain(path.join(home, 'code', '.env'));
      expect(solo.unreadable).not.toContain(path.join(repo, '.env'));
      // the home cannot be hidden when a writable path holds it (sandbox.writable: ["~"]): the deny-list
      const wide = gatePlan({ directory: worktree, tmp: path.join(lab, 't'), userHome: home, env, config: { writable: ['~'] } });
      expect(wide.unreadable).not.toContain(home);
      expect(wide.unreadable).toContain(path.join(home, '.ssh'));
      expect(wide.readable).toBeUndefined();
    } finally {
      rmSync(lab, { recursive: true, force: true });
    }
  });

  it("the main checkout's ignored paths (outside attack X14 #2): hidden but build directories and sandbox.readable, around the agent's own worktree; real git", () => {
    const repo = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'polywave-plan-ignored-')));
    try {
      const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, stdio: 'ignore' });
      git('init', '-q');
      const files: Record<string, string> = {
        '.gitignore': '/.claude/\n*.log\n/private/\n/db.sqlite\nnode_modules/\ntarget/\n__pycache__/\n/fixtures/\n',
        'src/a.ts': 'x', 'src/debug.log': 'x', 'private/notes.txt': 'x', 'db.sqlite': 'x', 'pkgs/web/node_modules/x/i.js': 'x', 'target/debug/app': 'x', 'src/__pycache__/a.pyc': 'x', 'fixtures/big.json': 'x',
        '.claude/settings.local.json': 'x', '.claude/worktrees/wave1-agent-A/a.ts': 'x', '.claude/worktrees/wave1-agent-B/b.ts': 'x',
      };
      for (const [file, text] of Object.entries(files)) {
        mkdirSync(path.dirname(path.join(repo, file)), { recursive: true });
        writeFileSync(path.join(repo, file), text);
      }
      git('add', '.gitignore', 'src/a.ts');
      const own = path.join(repo, '.claude/worktrees/wave1-agent-A');
      const hidden = ignoredPathsToHide(repo, [own, path.join(repo, 'fixtures')]);
      expect(hidden.map((entry) => path.relative(repo, entry)).sort()).toEqual(['.claude/settings.local.json', '.claude/worktrees/wave1-agent-B', 'db.sqlite', 'private', 'src/debug.log']);
      // through the plan: a relative sandbox.readable entry is the checkout's; the solo agent (root = checkout) hides none of its own
      const plan = agentSandboxPlan({ root: own, home: path.join(repo, 'h'), tmp: path.join(repo, 't'), gitCommonDir: path.join(repo, '.git'), otherWorktrees: [], userHome: '/nonexistent-home', env: {}, config: { readable: ['fixtures'] } });
      // the checkout is hidden whole (issue 11: also what is created in it later); its git directory, build/dependency
      // directories and sandbox.readable put back read-only — its other ignored paths need no mount of their own
      expect(plan.unreadable).toContain(repo);
      for (const covered of [path.join(repo, 'private'), path.join(repo, 'db.sqlite'), path.join(repo, '.claude/settings.local.json')]) expect(plan.unreadable, covered).not.toContain(covered);
      // build output (target/, __pycache__/) is not bound back (outside attack X19-02): only dependency directories are
      expect([...(plan.readable ?? [])].sort()).toEqual(['.git', 'fixtures', 'pkgs/web/node_modules'].map((entry) => path.join(repo, entry)));
      for (const open of [own, path.join(repo, 'fixtures'), path.join(repo, 'target'), path.join(repo, '.claude')]) expect(plan.unreadable, open).not.toContain(open);
      const solo = agentSandboxPlan({ root: repo, home: path.join(repo, 'h'), tmp: path.join(repo, 't'), gitCommonDir: path.join(repo, '.git'), otherWorktrees: [], userHome: '/nonexistent-home', env: {} });
      // ... but the quarantine (outside attack X16 #9), in every plan, created so that the deny is a mount
      // ... and the manifest writes' lock directory (X19-06: a read lock from inside a sandbox stalled them)
      expect(solo.unreadable.filter((entry) => entry.startsWith(`${repo}/`))).toEqual([path.join(repo, '.git/polywave/quarantine'), path.join(repo, '.git/polywave/locks')]);
      expect(existsSync(path.join(repo, '.git/polywave/quarantine'))).toBe(true);
      expect(plan.unreadable).toContain(path.join(repo, '.git/polywave/quarantine'));
      const gate = gatePlan({ directory: own, tmp: path.join(repo, 't'), gitCommonDir: path.join(repo, '.git'), userHome: '/nonexistent-home', env: {} });
      expect(gate.unreadable).toContain(path.join(repo, '.git/polywave/quarantine'));
    } finally {
      rmSync(repo, { recursive: true, force: true });
    }
  });

  it('over the hide limit, secret-named files, whole directories and dot files are hidden first and the checkout gets one warning (no silent fail-open); real git', () => {
    const repo = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'polywave-plan-ignored-many-')));
    const written: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    try {
      execFileSync('git', ['init', '-q'], { cwd: repo, stdio: 'ignore' });
      writeFileSync(path.join(repo, '.gitignore'), '/out-*.txt\n/zz/\n');
      for (let index = 0; index < 320; index += 1) writeFileSync(path.join(repo, `out-${String(index).padStart(3, '0')}.txt`), 'x');
      // sorted after every out-*.txt by git: kept only because the likely secrets go first
      mkdirSync(path.join(repo, 'zz'));
      writeFileSync(path.join(repo, 'zz', '.vault-token'), 'x');
      const hidden = ignoredPathsToHide(repo, []);
      expect(hidden).toHaveLength(300);
      expect(hidden[0]).toBe(path.join(repo, 'zz'));
      expect(written.filter((line) => line.includes('ignored paths outside build directories'))).toEqual([
        `polywave: warning: ${repo} has more than 300 ignored paths outside build directories; 21 of them stay readable to agents and gates working elsewhere (secret-named files, whole directories and dot files were hidden first). Move private files out of the checkout.\n`,
      ]);
      ignoredPathsToHide(repo, []);
      expect(written.filter((line) => line.includes('ignored paths outside build directories'))).toHaveLength(1);
    } finally {
      spy.mockRestore();
      rmSync(repo, { recursive: true, force: true });
    }
  });

  it('a listing git cannot give fails the plan closed (X16 #7: it hid nothing); over the 400 secret-name limit, dependency dirs go last, with one warning (X16 #5); real git', () => {
    const repo = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'polywave-plan-listing-')));
    const written: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    try {
      execFileSync('git', ['init', '-q'], { cwd: repo, stdio: 'ignore' });
      const certs = path.join(repo, '.venv/lib/python3.12/site-packages/certifi');
      mkdirSync(certs, { recursive: true });
      for (let index = 0; index < 405; index += 1) writeFileSync(path.join(certs, `c${String(index).padStart(3, '0')}.pem`), 'x');
      for (const file of ['build/.env', 'bin/credentials', 'vendor/secrets.json', 'dist/deep/er/id_rsa']) {
        mkdirSync(path.dirname(path.join(repo, file)), { recursive: true });
        writeFileSync(path.join(repo, file), 'x');
      }
      writeFileSync(path.join(repo, '.gitignore'), '/.venv/\n/build/\n/bin/\n/vendor/\n/dist/\n/private/\n');
      const own = path.join(repo, 'wt');
      const plan = agentSandboxPlan({ root: own, home: path.join(repo, 'h'), tmp: path.join(repo, 't'), gitCommonDir: path.join(repo, '.git'), otherWorktrees: [], userHome: '/nonexistent-home', env: {} });
      // inside a bound-back dependency directory: hidden one by one; build output is not bound back at all (X19-02)
      expect(plan.unreadable).toContain(path.join(repo, 'vendor/secrets.json'));
      for (const file of ['build/.env', 'bin/credentials', 'dist/deep/er/id_rsa']) expect((plan.readable ?? []).some((open) => path.join(repo, file).startsWith(`${open}/`)), file).toBe(false);
      expect(plan.unreadable).toContain(repo);
      expect(plan.unreadable.filter((entry) => entry.endsWith('.pem'))).toHaveLength(396);
      const warnings = written.filter((line) => line.includes('untracked secret-named files'));
      expect(warnings).toEqual([expect.stringContaining(`${repo} has 409 untracked secret-named files`) as unknown]);
      expect(warnings[0]).toContain('9 stay readable');
      gatePlan({ directory: own, tmp: path.join(repo, 't'), gitCommonDir: path.join(repo, '.git'), userHome: '/nonexistent-home', env: {} });
      expect(written.filter((line) => line.includes('untracked secret-named files'))).toHaveLength(1);
      // a broken index: git fails, the plan is refused (coded, naming the checkout and git's message) instead of hiding nothing
      const broken = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'polywave-plan-broken-')));
      try {
        execFileSync('git', ['init', '-q'], { cwd: broken, stdio: 'ignore' });
        mkdirSync(path.join(broken, 'private'));
        writeFileSync(path.join(broken, 'private/notes.txt'), 'x');
        writeFileSync(path.join(broken, '.git/index'), 'not an index at all, longer than a header');
        const refused = () => agentSandboxPlan({ root: path.join(broken, 'wt'), home: path.join(broken, 'h'), tmp: path.join(broken, 't'), gitCommonDir: path.join(broken, '.git'), otherWorktrees: [], userHome: '/nonexistent-home', env: {} });
        expect(refused).toThrow(expect.objectContaining({ code: 'SANDBOX_PLAN_UNAVAILABLE', message: expect.stringMatching(new RegExp(`git could not list the .* of ${broken} \\(.*index`)) as unknown }) as Error);
        expect(() => ignoredPathsToHide(broken, [])).toThrow(/SANDBOX_PLAN_UNAVAILABLE|git could not list the ignored paths/);
      } finally {
        rmSync(broken, { recursive: true, force: true });
      }
      // not a repository (or no such directory): nothing to hide, no error
      expect(ignoredPathsToHide(path.join(repo, 'h-missing'), [])).toEqual([]);
    } finally {
      spy.mockRestore();
      rmSync(repo, { recursive: true, force: true });
    }
  });

  it('secret file names', () => {
    const secret = ['.env', '.env.local', '.envrc', '.dev.vars', 'secrets.yml', 'secrets.prod.json', 'credentials', 'credentials.json', 'server.pem', 'tls.key', 'id_ed25519', 'service-account.json', '.npmrc', '.pypirc', '.netrc', '.git-credentials',
      // outside attack X13 #5
      'terraform.tfvars', 'prod.auto.tfvars.json', 'prod.tfstate', 'terraform.tfstate.backup', 'terraform.tfstate.1700000000.backup', 'kubeconfig', 'kubeconfig.yaml', 'kubeconfig-prod', 'application-secrets.yaml', 'app.secrets.json', 'db_credentials.yml', 'Application-Secrets.YML',
      // outside attack X14 #2
      '.vault-token', '.s3cfg', '.boto', '.terraformrc', '.htpasswd', 'database.yml', 'wp-config.php', 'appsettings.Production.json', 'client.ovpn', '.secrets', '.secrets.toml', 'env.local',
      // outside attack X30-06: the names ssh-keygen -f and deploy-key how-tos give keys, package-manager auth files
      'id_rsa_deploy', 'id_ed25519_sk', 'id_xmss', 'id_ed25519-github', 'id_ecdsa.old', 'deploy_key', 'github_deploy_key', 'deploy-key.txt', '.yarnrc.yml', 'auth.json', 'token.json', 'prod.env'];
    const plain = ['credentials.ts', 'secrets.js', 'env.ts', 'keys.go', 'README.md', 'key.txt', 'monkey', 'environment.yml', 'secrets-manager.ts', 'tfvars.md', 'variables.tf', 'main.tf', 'kube.yaml', 'appsettings.json', 'database.ts', 'env.local.ts.md',
      'id_rsa.pub', 'id_ed25519_sk.pub', 'deploy_key.pub', 'id_card.png', 'deploy.ts', 'keyboard.js', 'tokens.ts', 'auth.ts', '.yarnrc'];
    expect(secret.filter((name) => !secretFileName.test(name))).toEqual([]);
    expect(plain.filter((name) => secretFileName.test(name))).toEqual([]);
  });
});
