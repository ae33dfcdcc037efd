/**
 * Issue 11 (documented until now): an agent or gate reads the repository's `.git/config` (git needs it), and with it
 * a token in a remote URL or the `http.extraHeader` a CI checkout writes there. The sandbox now sees those values
 * replaced by placeholders (sandbox-runtime's structured credential masking); git inside still works.
 * Real git, real sandbox: the sandboxed command prints what it can read.
 */
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runGates } from '../src/gates/run-gates.js';
import { gitConfigMasks, sandboxStatus } from '../src/sandbox/index.js';
import { wrapInSandbox } from '../src/sandbox/wrap-in-sandbox.js';
import { worktreeAgentPlan } from './support/worktree-plan.js';
import { createTestRepo } from './support/git-repo.js';

const available = (await sandboxStatus()).available;

function runWrapped(file: string, args: string[], cwd: string, env: Record<string, string>): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn(file, args, { cwd, env });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('close', () => resolve(out));
  });
}

describe("credentials in the repository's git configuration are masked in every sandbox", () => {
  it('finds URL passwords/tokens and extraHeader values, nothing in a config without them', async () => {
    const repo = await createTestRepo();
    expect(gitConfigMasks(repo.path('.git'))).toEqual([]);
    await repo.run(['remote', 'add', 'plain', 'https://github.com:443/o/r.git']);
    expect(gitConfigMasks(repo.path('.git'))).toEqual([]);
    // X19-01: a URL's user part alone may be a token (GitHub takes one as the user name): masked too
    await repo.run(['remote', 'add', 'user-only', 'https://someone@github.com/o/r.git']);
    expect(gitConfigMasks(repo.path('.git'))).toHaveLength(1);
    await repo.run(['remote', 'remove', 'user-only']);
    expect(gitConfigMasks(repo.path('.git'))).toEqual([]);
    await repo.run(['config', 'http.https://github.com/.extraHeader', 'AUTHORIZATION: basic U0VDUkVU']);
    expect(gitConfigMasks(repo.path('.git'))).toHaveLength(1);
    expect(gitConfigMasks(path.join(repo.root, 'missing'))).toEqual([]);
  });

  it.skipIf(!available)('an agent in a worktree and a gate see placeholders; git in the sandbox still works', async () => {
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n' } });
    await repo.run(['remote', 'add', 'origin', 'https://x-access-token:ghs_TOKEN-IN-URL-1234@github.com/o/r.git']);
    await repo.run(['config', 'http.https://github.com/.extraheader', 'AUTHORIZATION: basic SEADER-IN-CONFIG']);
    await repo.run(['config', 'url.https://bot:PUSH-TOKEN-99@github.com/.insteadOf', 'https://github.com/']);
    const before = readFileSync(repo.path('.git/config'), 'utf8');
    const { worktree, home, tmp, plan } = await worktreeAgentPlan(repo);
    expect(plan.maskedFiles?.map((entry) => entry.path)).toEqual([repo.path('.git/config')]);
    const probe = `cat ${repo.path('.git/config')}; git config --get remote.origin.url; git config --get-regexp 'http.*'; git status --short && echo GIT-STATUS-OK; git log --oneline -1 && echo GIT-LOG-OK`;
    const wrapped = await wrapInSandbox(plan, probe, { cwd: worktree, env: { PATH: process.env.PATH ?? '', HOME: home, TMPDIR: tmp } });
    const agent = await runWrapped(wrapped.file, wrapped.args, worktree, wrapped.env);
    wrapped.release();
    for (const secret of ['ghs_TOKEN-IN-URL-1234', 'SEADER-IN-CONFIG', 'PUSH-TOKEN-99']) expect(agent, secret).not.toContain(secret);
    // the rest of the file is there, byte for byte, around the placeholders
    // the URL's whole user-info is a placeholder (X20-01: a ':' in a password)
    expect(agent).toMatch(/url = https:\/\/fake_value_\S+@github\.com\/o\/r\.git/);
    expect(agent).toContain('[user]');
    expect(agent).toContain('GIT-STATUS-OK');
    expect(agent).toContain('GIT-LOG-OK');

    const gate = await runGates({ repoDir: worktree, gates: [{ type: 'test', command: `cat ${repo.path('.git/config')}; git remote -v`, required: true }], noCache: true, env: { ...(repo.env as Record<string, string>), HOME: home } });
    const output = gate.results[0]!.output;
    for (const secret of ['ghs_TOKEN-IN-URL-1234', 'SEADER-IN-CONFIG', 'PUSH-TOKEN-99']) expect(output, secret).not.toContain(secret);
    expect(output).toContain('origin');
    // the host's file is untouched
    expect(readFileSync(repo.path('.git/config'), 'utf8')).toBe(before);
    expect(execFileSync('git', ['config', '--get', 'remote.origin.url'], { cwd: repo.dir, encoding: 'utf8' })).toContain('ghs_TOKEN-IN-URL-1234');
  }, 120_000);
});
