/**
 * ESCAPE REPRODUCTION (outside attack X35-14, 2026-12-04), now the regression test of its fix: the user's credential
 * stores that live OUTSIDE the home at their tools' default places were readable from every sandbox — MIT Kerberos'
 * ticket cache `/tmp/krb5cc_<uid>` (Debian/Ubuntu's default) and podman/buildah/skopeo's registry logins in
 * `$XDG_RUNTIME_DIR/containers/auth.json` — also when `KRB5CCNAME=FILE:<path>` and `REGISTRY_AUTH_FILE` named them
 * (the variables reached the sandbox too). src/sandbox/sandbox-plan.ts `hostCredentialStores` now hides the runtime
 * directory whole (or, when the sandbox's own paths lie in it, the known stores in it) and every `/tmp/krb5cc*`;
 * `KRB5CCNAME`, `KRB5_KTNAME`, `KRB5_CLIENT_KTNAME` and `REGISTRY_AUTH_FILE` are credential variables (stripped, and
 * their files hidden, a `FILE:` prefix understood).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJail } from '../src/agents/jail/jail.js';
import { buildAgentSandboxPlan, createToolExecutor, type ToolExecutor } from '../src/agents/sandbox/index.js';
import { createAgentTools, runToolCall } from '../src/agents/tools/index.js';
import type { ToolContext } from '../src/agents/tools/types.js';
import { resetSandbox, sandboxStatus } from '../src/sandbox/index.js';
import { hostCredentialStores } from '../src/sandbox/sandbox-plan.js';
import { isCredentialVariable } from '../src/sandbox/credential-variables.js';
import { createAgentLayout } from './support/agent-layout.js';

const available = (await sandboxStatus()).available && process.platform === 'linux';
const branch = 'polywave/stores/wave1-agent-A';
const tools = new Map(createAgentTools().map((tool) => [tool.name, tool]));
const kerberosCache = path.join('/tmp', `krb5cc_${process.getuid?.() ?? 0}_x35_${process.pid}`);
const runtimeDir = mkdtempSync(path.join(os.tmpdir(), 'pw-x35-runtime-'));
const authFile = path.join(runtimeDir, 'containers', 'auth.json');

let executor: ToolExecutor | undefined;
let context: ToolContext;

beforeAll(async () => {
  writeFileSync(kerberosCache, 'X35SECRET-krb5-FILE-ccache\n', { mode: 0o600 });
  mkdirSync(path.dirname(authFile), { recursive: true });
  writeFileSync(authFile, '{"auths":{"quay.io":{"auth":"X35SECRET-podman-auth"}}}\n', { mode: 0o600 });
  if (!available) return;
  const layout = await createAgentLayout(branch);
  const { worktree, home, tmp, repo } = layout;
  // The user's environment names both stores, as a Kerberos or podman user's does.
  const userEnv = { ...repo.env, XDG_RUNTIME_DIR: runtimeDir, KRB5CCNAME: `FILE:${kerberosCache}`, REGISTRY_AUTH_FILE: authFile };
  const env = { ...userEnv, HOME: home, TMPDIR: tmp } as Record<string, string>;
  const jail = await createJail({ root: worktree, ownedFiles: ['src/a.ts'], branch }, { env: repo.env });
  const plan = await buildAgentSandboxPlan({ root: jail.root, home, tmp, env: userEnv, userHome: repo.sibling('user-home') });
  executor = createToolExecutor(plan, { cwd: jail.root, env });
  context = { jail, env, signal: new AbortController().signal, toolTimeoutMs: 30_000, maxToolOutputBytes: 30_000, branch, sandbox: plan, toolExecutor: executor };
}, 60_000);

afterAll(async () => {
  rmSync(kerberosCache, { force: true });
  rmSync(runtimeDir, { recursive: true, force: true });
  await executor?.stop();
  await resetSandbox();
});

describe('X35-14: credential stores outside the home', () => {
  it('the Kerberos and registry-login variables are credentials; the stores are planned unreadable', () => {
    for (const name of ['KRB5CCNAME', 'KRB5_KTNAME', 'KRB5_CLIENT_KTNAME', 'REGISTRY_AUTH_FILE']) expect(isCredentialVariable(name), name).toBe(true);
    const stores = hostCredentialStores({ XDG_RUNTIME_DIR: runtimeDir }, ['/elsewhere']);
    expect(stores).toContain(kerberosCache);
    expect(stores).toContain(runtimeDir);
    // rootful podman's logins (X36-03): /run/containers/<uid>, when it exists (made here for the check when it does not)
    const uid = process.getuid?.() ?? -1;
    const rootful = `/run/containers/${uid}`;
    let made = false;
    try {
      if (uid === 0 && !existsSync(rootful)) {
        mkdirSync(rootful, { recursive: true });
        made = true;
      }
      if (existsSync(rootful)) expect(hostCredentialStores({}, ['/elsewhere'])).toContain(rootful);
    } finally {
      if (made) rmSync(rootful, { recursive: true, force: true });
    }
    // the sandbox's own directory inside the runtime directory: the known stores in it instead of the whole
    // (a path the sandbox must READ there — X36-07: also systemd's credentials, the Xwayland cookie, a FILE: cache in it)
    for (const name of ['credentials/x.service', 'app/org.example.App']) mkdirSync(path.join(runtimeDir, name), { recursive: true });
    for (const name of ['.mutter-Xwaylandauth.X36ABC', 'krb5cc_0', 'scratch-notes.txt']) writeFileSync(path.join(runtimeDir, name), 'x');
    const inside = hostCredentialStores({ XDG_RUNTIME_DIR: runtimeDir }, [path.join(runtimeDir, 'scratch')]);
    expect(inside).not.toContain(runtimeDir);
    for (const name of ['containers', 'credentials', 'app', '.mutter-Xwaylandauth.X36ABC', 'krb5cc_0']) expect(inside).toContain(path.join(runtimeDir, name));
    expect(inside).not.toContain(path.join(runtimeDir, 'scratch-notes.txt'));
  });

  it.skipIf(!available)('an agent\'s bash reads neither the ticket cache in /tmp nor the registry login in the runtime directory, named or not', async () => {
    const at = (file: string) => Buffer.from(file).toString('base64');
    const command = [
      `cat "$(echo ${at(kerberosCache)} | base64 -d)"; echo "krb=$?"`,
      `cat "$(echo ${at(authFile)} | base64 -d)"; echo "auth=$?"`,
      'echo "vars=${KRB5CCNAME:-none},${REGISTRY_AUTH_FILE:-none}"',
    ].join('; ');
    const result = await runToolCall(tools.get('bash' as never)!, { command }, context, { denials: [] }, 'b1');
    // Before the fix: both secrets printed, and `vars=FILE:/tmp/krb5cc_…,/…/containers/auth.json`.
    expect(result.output).not.toContain('X35SECRET');
    expect(result.output).toMatch(/krb=1/);
    expect(result.output).toMatch(/auth=1/);
    expect(result.output).toContain('vars=none,none');
  }, 60_000);

  it.skipIf(!available)('X36-07: with the agent\'s TMPDIR inside the runtime directory, it still writes its TMPDIR and reads nothing else there', async () => {
    const layout = await createAgentLayout('polywave/stores/wave1-agent-B');
    const privateTmp = path.join(runtimeDir, 'agent-tmp');
    mkdirSync(privateTmp, { recursive: true });
    writeFileSync(path.join(runtimeDir, 'credentials-token'), 'X36SECRET-runtime-file\n', { mode: 0o600 });
    const userEnv = { ...layout.repo.env, XDG_RUNTIME_DIR: runtimeDir };
    const env = { ...userEnv, HOME: layout.home, TMPDIR: privateTmp } as Record<string, string>;
    const jail = await createJail({ root: layout.worktree, ownedFiles: ['src/a.ts'], branch: 'polywave/stores/wave1-agent-B' }, { env: layout.repo.env });
    const plan = await buildAgentSandboxPlan({ root: jail.root, home: layout.home, tmp: privateTmp, env: userEnv, userHome: layout.repo.sibling('user-home') });
    const own = createToolExecutor(plan, { cwd: jail.root, env });
    try {
      const ownContext: ToolContext = { ...context, jail, env, sandbox: plan, toolExecutor: own, branch: 'polywave/stores/wave1-agent-B' };
      const at = Buffer.from(path.join(runtimeDir, 'credentials-token')).toString('base64');
      // (computed: the static check refuses a plain $TMPDIR path)
      const code = `const fs=require('fs');const d=process.env['TMP'+'DIR'];fs.writeFileSync(d+'/own.txt','mine');console.log(fs.readFileSync(d+'/own.txt','utf8'))`;
      const result = await runToolCall(tools.get('bash' as never)!, { command: `node -e "eval(Buffer.from('${Buffer.from(code).toString('base64')}','base64').toString())"; cat "$(echo ${at} | base64 -d)"; echo "read=$?"` }, ownContext, { denials: [] }, 'b2');
      expect(result.output).toContain('mine');
      expect(result.output).not.toContain('X36SECRET');
      expect(result.output).toMatch(/read=1/);
    } finally {
      await own.stop();
    }
  }, 60_000);

  it('X37-02/09/13/14/04: container and CI secrets, mailboxes, crash dumps, the journal and systemd credentials are hidden; a PATH entry in the runtime directory stays readable; sandbox.readable opts back in', () => {
    const fixed = ['/run/secrets', '/run/credentials', '/workspaces/.codespaces/shared', '/var/crash', '/var/lib/systemd/coredump', '/var/log/journal'];
    const made: string[] = [];
    try {
      if (process.getuid?.() === 0) {
        for (const dir of fixed) {
          if (existsSync(dir)) continue;
          // the topmost directory this test makes (removed after; never one that was there)
          let top = dir;
          while (!existsSync(path.dirname(top))) top = path.dirname(top);
          mkdirSync(dir, { recursive: true });
          made.push(top);
        }
      }
      const stores = hostCredentialStores({ USER: 'pwtester' }, ['/elsewhere']);
      for (const dir of fixed.filter((entry) => existsSync(entry))) expect(stores, dir).toContain(dir);
      // named in sandbox.readable (passed as needed): readable again
      expect(hostCredentialStores({}, ['/run/secrets/db_password'])).not.toContain('/run/secrets');
      // fnm's multishell links in the runtime directory (X37-04): the directory is not hidden whole
      mkdirSync(path.join(runtimeDir, 'fnm_multishells', '1_2', 'bin'), { recursive: true });
      const withTool = hostCredentialStores({ XDG_RUNTIME_DIR: runtimeDir, PATH: `${path.join(runtimeDir, 'fnm_multishells', '1_2', 'bin')}:/usr/bin` }, []);
      expect(withTool).not.toContain(runtimeDir);
      expect(withTool).toContain(path.join(runtimeDir, 'containers'));
    } finally {
      for (const dir of made.reverse()) rmSync(dir, { recursive: true, force: true });
    }
  });
});
