/**
 * ESCAPE REPRODUCTION (outside attack X10 N1b/N1c, 2026-12-03), against the home deny-list.
 * `homeSecrets` named ~45 credential stores; agent bash and the verify-build gate read 28 others
 * (glab, Copilot, doctl, fly, pulumi, wrangler, s3cmd, rclone, podman, OCI, Databricks, Vercel,
 * browser cookies, client histories…), and `.env`-like files outside the agent's worktree: the main
 * checkout's `pkgs/app/.env.local`, `.dev.vars`, `secrets.yml`, a parent directory's `.env`, the
 * file GOOGLE_APPLICATION_CREDENTIALS names (the gate even read the top-level `.env`).
 *
 * Now the user's home is an allow-list (sandbox-plan.ts homeView): unreadable except the tool roots
 * a build needs — here a node-like program under `~/.nvm/versions/node/vX/bin` and a tool in
 * `~/.local/bin`, both on PATH, which must still run — and the repository when it lives in the home.
 * Untracked secret-named files of the main checkout and its parents are hidden in agent and gate plans.
 * Outside attack X13 #4/#5: links in a PATH directory of the home to a store file or directory
 * (`~/.local/bin/x -> ~/.config/glab-cli/config.yml`) and `*.tfvars`, `*.tfstate*`, `kubeconfig.yaml`,
 * `application-secrets.yaml` were still read; a link to an executable elsewhere in the home still runs.
 */
import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { buildAgentSandboxPlan } from '../src/agents/sandbox/index.js';
import { runGates } from '../src/gates/run-gates.js';
import { resetSandbox, sandboxStatus, wrapInSandbox } from '../src/sandbox/index.js';
import { createTestRepo } from './support/git-repo.js';

const available = (await sandboxStatus()).available;
const run = promisify(execFile);

/** Credential stores X10 read (not in homeSecrets then), and two the deny-list always had. */
const stores = [
  '.config/glab-cli/config.yml',
  '.config/github-copilot/hosts.json',
  '.config/doctl/config.yaml',
  '.fly/config.yml',
  '.pulumi/credentials.json',
  '.config/.wrangler/config/default.toml',
  '.s3cfg',
  '.boto',
  '.config/rclone/rclone.conf',
  '.config/containers/auth.json',
  '.oci/config',
  '.databrickscfg',
  '.local/share/com.vercel.cli/auth.json',
  '.gemini/oauth_creds.json',
  '.mozilla/firefox/p/cookies.sqlite',
  '.config/google-chrome/Default/Cookies',
  '.viminfo',
  '.rediscli_history',
  '.snowflake/connections.toml',
  '.ansible/vault_pass',
  '.ssh/id_rsa',
  '.cargo/credentials.toml',
];
/** Outside attack X14 #2: untracked, ignored files of the main checkout under names the secret list lacked, and a plain one. */
const x14Files = ['.vault-token', '.s3cfg', '.boto', '.terraformrc', '.htpasswd', 'config/database.yml', 'wp-config.php', 'appsettings.Production.json', 'vpn/client.ovpn', '.secrets', 'env.local', 'notes/todo.txt', '.claude/settings.local.json'];
const x14Ignored = '/.vault-token\n/.s3cfg\n/.boto\n/.terraformrc\n/.htpasswd\n/config/database.yml\n/wp-config.php\n/appsettings.Production.json\n/vpn/\n/.secrets\n/env.local\n/notes/todo.txt\n/.claude/\nnode_modules/\n/dist/\n/local-data/\n';
const made: string[] = [];

function plant(file: string, text: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
}

afterAll(async () => {
  await resetSandbox();
  for (const directory of made) rmSync(directory, { recursive: true, force: true });
});

describe.skipIf(!available)('the home is an allow-list; secret files around the checkout are hidden (X10 N1b, N1c)', () => {
  it('agent bash and a gate read no credential store of the home and no .env-like file outside their tree; tools on PATH under the home still run', async () => {
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n', 'pkgs/app/.env.example': 'TRACKED=1\n', '.gitignore': '.env*\n!.env.example\n.dev.vars\nsecrets.yml\n*.tfvars\n*.tfstate*\nkubeconfig.yaml\napplication-secrets.yaml\n' + x14Ignored } });
    // The repository lives in the home: HOME = the directory holding it and its siblings.
    const home = path.dirname(repo.dir);
    for (const store of stores) plant(path.join(home, store), `CANARY-X10-STORE ${store}\n`);
    // tools a build uses, installed in the home and on PATH
    const nodeBin = path.join(home, '.nvm/versions/node/v20.0.0/bin');
    plant(path.join(nodeBin, 'fakenode'), '#!/bin/sh\necho TOOL-nvm-ok\n');
    plant(path.join(home, '.nvm/versions/node/v20.0.0/lib/x.js'), 'TOOL-lib-ok\n');
    plant(path.join(home, '.local/bin/mytool'), '#!/bin/sh\necho TOOL-local-ok\n');
    plant(path.join(home, '.cargo/bin/cargo-x'), '#!/bin/sh\necho TOOL-cargo-ok\n');
    // outside attack X13 #4: a claude-like link in ~/.local/bin to an executable elsewhere in the home still runs;
    // links there to a store file or a store directory do not open them
    plant(path.join(home, '.local/share/xtool/versions/1/xtool'), '#!/bin/sh\necho TOOL-linked-ok\n');
    plant(path.join(home, '.local/share/store/secret.txt'), 'CANARY-X10-STORE linked-dir\n');
    symlinkSync(path.join(home, '.local/share/xtool/versions/1/xtool'), path.join(home, '.local/bin/xtool'));
    symlinkSync(path.join(home, '.config/glab-cli/config.yml'), path.join(home, '.local/bin/glab-link'));
    symlinkSync(path.join(home, '.local/share/store'), path.join(home, '.local/bin/storedir'));
    // issue 11 (S9): a link to an executable puts back that file only (not its directory's other files);
    // a link to a directory is not followed
    plant(path.join(home, '.local/share/xtool/versions/1/data.txt'), 'CANARY-X10-STORE beside-linked-tool\n');
    plant(path.join(home, 'Documents/run.sh'), '#!/bin/sh\necho TOOL-docrun-ok\n');
    plant(path.join(home, 'Documents/notes.txt'), 'CANARY-X10-STORE documents-notes\n');
    plant(path.join(home, 'Documents/dir/secret.txt'), 'CANARY-X10-STORE documents-dir\n');
    symlinkSync(path.join(home, 'Documents/run.sh'), path.join(home, '.local/bin/docrun'));
    symlinkSync(path.join(home, 'Documents/dir'), path.join(home, '.local/bin/docdir'));
    for (const tool of [path.join(nodeBin, 'fakenode'), path.join(home, '.local/bin/mytool'), path.join(home, '.cargo/bin/cargo-x'), path.join(home, '.local/share/xtool/versions/1/xtool'), path.join(home, 'Documents/run.sh')]) chmodSync(tool, 0o755);
    // secret files of the main checkout (untracked, ignored), its parent, and one a variable names
    plant(path.join(repo.dir, 'pkgs/app/.env.local'), 'CANARY-X10-FILE subdir-env\n');
    plant(path.join(repo.dir, '.dev.vars'), 'CANARY-X10-FILE devvars\n');
    plant(path.join(repo.dir, '.env'), 'CANARY-X10-FILE root-env\n');
    plant(path.join(repo.dir, 'secrets.yml'), 'CANARY-X10-FILE secrets-yml\n');
    plant(path.join(home, '.env'), 'CANARY-X10-FILE parent-env\n');
    // X13 #5: terraform variables and state, a kubeconfig, *-secrets.yaml (checkout, ignored) and a parent's terraform.tfvars
    const x13Files = ['terraform.tfvars', 'prod.tfstate', 'infra/terraform.tfstate.backup', 'kubeconfig.yaml', 'application-secrets.yaml'];
    for (const file of x13Files) plant(path.join(repo.dir, file), `CANARY-X10-FILE ${file}\n`);
    plant(path.join(home, 'terraform.tfvars'), 'CANARY-X10-FILE parent-tfvars\n');
    // a checkout outside the home: its parent's .env and a credentials file a variable names
    const outside = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'polywave-x10-outside-')));
    made.push(outside);
    plant(path.join(outside, '.env'), 'CANARY-X10-FILE outside-parent-env\n');
    plant(path.join(outside, 'gcreds.json'), 'CANARY-X10-FILE gcreds\n');
    // X14 #2: every untracked IGNORED file of the main checkout is hidden (secret names the list lacks, and any other
    // name), but build/dependency directories and what sandbox.readable names stay readable
    for (const file of x14Files) plant(path.join(repo.dir, file), `CANARY-X10-FILE ${file}\n`);
    plant(path.join(repo.dir, 'node_modules/pkg/index.js'), 'BUILD-node_modules-ok\n');
    // X19-02: build output is not bound back (the compiled copy of a hidden file): only dependency directories are
    plant(path.join(repo.dir, 'dist/app.js'), 'CANARY-X10-FILE dist-build-output\n');
    plant(path.join(repo.dir, 'local-data/fixture.txt'), 'READABLE-back-ok\n');
    // X16 #9: what the ignored-path guard / leftover sweep moved to the quarantine (a user's .env.local) stays hidden
    plant(path.join(repo.dir, '.git/polywave/quarantine/A-old/.env.local'), 'CANARY-X10-FILE quarantined\n');
    // where polywave makes agent worktrees: inside the main checkout, so inside the home too
    const worktree = path.join(repo.dir, '.claude', 'worktrees', 'wave1-agent-A');
    await repo.git.worktreeAdd({ path: worktree, branch: 'a', base: 'HEAD', createBranch: true });
    const files = [...stores.map((store) => path.join(home, store)), ...['pkgs/app/.env.local', '.dev.vars', '.env', 'secrets.yml'].map((file) => path.join(repo.dir, file)), path.join(home, '.env'), path.join(outside, 'gcreds.json'), ...x13Files.map((file) => path.join(repo.dir, file)), path.join(home, 'terraform.tfvars'), path.join(home, '.local/bin/glab-link'), path.join(home, '.local/bin/storedir/secret.txt'), path.join(home, '.local/share/xtool/versions/1/data.txt'), path.join(home, 'Documents/notes.txt'), path.join(home, 'Documents/dir/secret.txt'), path.join(home, '.local/bin/docdir/secret.txt'), ...x14Files.map((file) => path.join(repo.dir, file)), path.join(repo.dir, '.git/polywave/quarantine/A-old/.env.local')];
    const probe = [
      `for f in ${files.map((file) => `'${file}'`).join(' ')}; do cat "$f" 2>/dev/null; done`,
      'fakenode; mytool; cargo-x; xtool; docrun',
      `cat '${home}/.nvm/versions/node/v20.0.0/lib/x.js'`,
      // the main checkout is hidden whole from a sandbox working elsewhere (issue 11): its tracked files too; the own tree has them
      `cat '${repo.dir}/pkgs/app/.env.example' 2>/dev/null | sed 's/^/main-tracked: /'`,
      `cat pkgs/app/.env.example | sed 's/^/own-tracked: /'`,
      `cat '${repo.dir}/node_modules/pkg/index.js' '${repo.dir}/dist/app.js' '${repo.dir}/local-data/fixture.txt' 2>/dev/null`,
      'git status --porcelain >/dev/null && echo GIT-ok',
      'echo w > written.txt && echo WRITE-ok',
    ].join('\n');
    const PATH = `${nodeBin}:${path.join(home, '.local/bin')}:${path.join(home, '.cargo/bin')}:${process.env.PATH ?? ''}`;
    const env = { ...repo.env, HOME: home, PATH, GOOGLE_APPLICATION_CREDENTIALS: path.join(outside, 'gcreds.json') } as Record<string, string>;

    // agent bash in its worktree (the worktree and main checkout live in the home)
    const scratch = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'polywave-x10-agent-')));
    made.push(scratch);
    mkdirSync(path.join(scratch, 'home'));
    mkdirSync(path.join(scratch, 'tmp'));
    const started = performance.now();
    const plan = await buildAgentSandboxPlan({ root: worktree, home: path.join(scratch, 'home'), tmp: path.join(scratch, 'tmp'), env, userHome: home, settings: { readable: [path.join(repo.dir, 'local-data')] } });
    const planMs = performance.now() - started;
    expect(plan.unreadable).toContain(home);
    // of the main checkout (hidden whole, issue 11) only its .git, build/dependency directories and sandbox.readable come back
    expect(plan.readable).not.toContain(path.join(repo.dir, 'dist'));
    expect(plan.readable).toEqual(expect.arrayContaining([path.join(repo.dir, '.git'), path.join(repo.dir, 'node_modules'), path.join(repo.dir, 'local-data'), path.join(home, '.nvm'), path.join(home, '.local/bin'), path.join(home, '.cargo')]));
    for (const never of [repo.dir, path.join(repo.dir, 'src'), path.join(repo.dir, '.claude')]) expect(plan.readable, never).not.toContain(never);
    // inside the hidden home the checkout has no view of its own: the agent's view of the home is read-only instead
    expect(plan.emptyReadOnly).toEqual([home]);
    for (const open of [worktree, path.join(repo.dir, '.claude'), path.join(repo.dir, 'node_modules'), path.join(repo.dir, 'local-data')]) expect(plan.unreadable, open).not.toContain(open);
    expect(planMs).toBeGreaterThan(0);
    const wrapped = await wrapInSandbox(plan, probe, { cwd: worktree, env: { ...env, HOME: path.join(scratch, 'home'), TMPDIR: path.join(scratch, 'tmp') } });
    const agent = await run(wrapped.file, wrapped.args, { cwd: worktree, env: wrapped.env }).then(
      (result) => result.stdout + result.stderr,
      (error: { stdout?: string; stderr?: string }) => `${error.stdout ?? ''}${error.stderr ?? ''}`,
    );
    wrapped.release();

    // a solo agent in the main checkout (in the home): the checkout writable, its .git read-only, the home's stores hidden
    const soloPlan = await buildAgentSandboxPlan({ root: repo.dir, home: path.join(scratch, 'home'), tmp: path.join(scratch, 'tmp'), env, userHome: home });
    const soloProbe = `echo s > solo.txt && echo SOLO-WRITE-ok; (echo x >> .git/config) 2>/dev/null || echo SOLO-GIT-ro; cat '${path.join(home, '.s3cfg')}' '${path.join(home, '.env')}' .git/polywave/quarantine/A-old/.env.local 2>/dev/null; mytool`;
    const soloWrapped = await wrapInSandbox(soloPlan, soloProbe, { cwd: repo.dir, env: { ...env, HOME: path.join(scratch, 'home'), TMPDIR: path.join(scratch, 'tmp') } });
    const solo = await run(soloWrapped.file, soloWrapped.args, { cwd: repo.dir, env: soloWrapped.env }).then(
      (result) => result.stdout + result.stderr,
      (error: { stdout?: string; stderr?: string }) => `${error.stdout ?? ''}${error.stderr ?? ''}`,
    );
    soloWrapped.release();
    expect(solo).not.toContain('CANARY-X10');
    for (const ok of ['SOLO-WRITE-ok', 'SOLO-GIT-ro', 'TOOL-local-ok']) expect(solo, ok).toContain(ok);

    // a post-merge / verify-build gate: a throwaway checkout of the main checkout, the real HOME
    // as finalize-wave's verify-build: the gate's environment is already without credentials; the variable is the orchestrator's
    const gateEnv = { ...env };
    delete gateEnv.GOOGLE_APPLICATION_CREDENTIALS;
    process.env.GOOGLE_APPLICATION_CREDENTIALS = env.GOOGLE_APPLICATION_CREDENTIALS;
    const gates = await runGates({ repoDir: repo.dir, gates: [{ type: 'test', command: probe, required: true }], noCache: true, throwawayCheckout: true, env: gateEnv }).finally(() => {
      delete process.env.GOOGLE_APPLICATION_CREDENTIALS;
    });
    const gate = gates.results[0]!.output;

    for (const [who, output] of [
      ['agent', agent],
      ['gate', gate],
    ] as const) {
      expect({ who, read: output.split('\n').filter((line) => line.includes('CANARY-X10')) }).toEqual({ who, read: [] });
      for (const ok of ['BUILD-node_modules-ok', ...(who === 'agent' ? ['READABLE-back-ok'] : []), 'TOOL-nvm-ok', 'TOOL-local-ok', 'TOOL-linked-ok', 'TOOL-docrun-ok', 'TOOL-cargo-ok', 'TOOL-lib-ok', 'own-tracked: TRACKED=1', 'GIT-ok', 'WRITE-ok']) expect(output, `${who}: ${ok}`).toContain(ok);
      expect(output, `${who}: the main checkout's tracked file`).not.toContain('main-tracked:');
    }
  }, 120_000);
});
