/**
 * A directory the sandbox hides that vanishes between the wrap and bubblewrap's start (another run's cleanup:
 * its TMPDIR's scratch parent, another agent's worktree) made bubblewrap stop before it ran anything ("Can't mkdir
 * parents for …: Read-only file system"). Seen in CI: an agent's first tool call on a worker failed, and its commit
 * lost the file that call wrote (dispatch F4). Each sandboxed start now tries again with a fresh wrap. The race is
 * made certain here by a `bwrap` first on PATH that deletes the directory at the first start. Each case fails
 * without the retry (the first start's error comes back).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildAgentSandboxPlan } from '../src/agents/sandbox/agent-sandbox.js';
import { createToolExecutor, type ToolExecutor } from '../src/agents/sandbox/tool-executor.js';
import { runGates } from '../src/gates/run-gates.js';
import { runSandboxedShell } from '../src/gates/sandboxed-shell.js';
import { makeScratchDir, resetSandbox, sandboxStatus, vanishedMountPoint } from '../src/sandbox/index.js';
import { createAgentLayout } from './support/agent-layout.js';
import { vanishingShim } from './support/bwrap-shim.js';
import { createTestRepo } from './support/git-repo.js';

const available = (await sandboxStatus()).available;
const uid = typeof process.getuid === 'function' ? process.getuid() : 'user';

afterAll(async () => {
  await resetSandbox();
});

/** A command run by `executor` in `cwd`: its output (stdout and stderr). */
function outputOf(executor: ToolExecutor, cwd: string, env: Record<string, string>): (command: string) => Promise<string> {
  return async (command) => {
    const chunks: Buffer[] = [];
    await executor.run(command, { cwd, env, onOutput: (chunk) => chunks.push(chunk) }).done;
    return Buffer.concat(chunks).toString('utf8');
  };
}

/**
 * A repository, and the environment of a gate there that names another run's TMPDIR (whose scratch parent every gate
 * plan then hides), with a `bwrap` on PATH that deletes that parent at its first start.
 */
async function otherRunLayout() {
  const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n' } });
  const otherTmp = mkdtempSync(path.join(os.tmpdir(), 'pw-other-run-'));
  const vanishing = path.join(otherTmp, `polywave-scratch-${uid}`);
  mkdirSync(vanishing, { recursive: true });
  const shim = vanishingShim(vanishing);
  return { repo, shim, env: { ...repo.env, TMPDIR: otherTmp, PATH: shim.path() } };
}

describe('vanishedMountPoint', () => {
  it("is bubblewrap's own start failure on a path that is gone, nothing else", () => {
    const gone = path.join(mkdtempSync(path.join(os.tmpdir(), 'pw-vanished-')), 'gone/polywave-scratch-0');
    expect(vanishedMountPoint(`bwrap: Can't mkdir parents for ${gone}: Read-only file system\n`)).toBe(gone);
    expect(vanishedMountPoint(`bwrap: Can't find source path ${gone}: No such file or directory`)).toBe(gone);
    // the path is there: a real failure, not the race
    expect(vanishedMountPoint(`bwrap: Can't mkdir parents for ${os.tmpdir()}: Read-only file system`)).toBeUndefined();
    // the command ran (more output), or it is not bubblewrap's line
    expect(vanishedMountPoint(`hello\nbwrap: Can't mkdir parents for ${gone}: Read-only file system`)).toBeUndefined();
    expect(vanishedMountPoint(`bwrap: setting up uid map: Permission denied`)).toBeUndefined();
    expect(vanishedMountPoint(`bwrap: Can't mkdir parents for relative/x: Read-only file system`)).toBeUndefined();
  });
});

describe.skipIf(!available)('a hidden directory that vanishes before bubblewrap starts', () => {
  it("the agent's tool executor starts anyway: its first write lands (the write dispatch F4 lost)", async () => {
    const { repo, worktree, home, tmp } = await createAgentLayout('polywave/vanish/wave1-agent-A');
    const vanishing = repo.sibling('other-run/polywave-scratch-x');
    mkdirSync(vanishing, { recursive: true });
    const built = await buildAgentSandboxPlan({ root: worktree, home, tmp, env: repo.env, userHome: repo.sibling('user-home') });
    const plan = { ...built, unreadable: [...built.unreadable, vanishing] };
    const shim = vanishingShim(vanishing);
    const executor = createToolExecutor(plan, { cwd: worktree, env: { ...repo.env, HOME: home, TMPDIR: tmp, PATH: shim.path() } as Record<string, string> });
    try {
      const written = await executor.write(path.join(worktree, 'src/first.ts'), 'export const first = 1;\n');
      expect(written.bytes).toBeGreaterThan(0);
      expect(readFileSync(path.join(worktree, 'src/first.ts'), 'utf8')).toBe('export const first = 1;\n');
      // bubblewrap was started twice: the first stopped on the vanished directory, the second ran the executor
      expect(shim.starts()).toBe(2);
    } finally {
      await executor.stop();
    }
  }, 60_000);

  it('a quality gate runs its command instead of failing on bubblewrap’s line (a wave is not BLOCKED for it)', async () => {
    const { repo, env, shim } = await otherRunLayout();
    const result = await runGates({ repoDir: repo.dir, env, noCache: true, gates: [{ type: 'test', command: 'echo GATE-$((40 + 2))', required: true }] });
    const gate = result.results[0]!;
    // (the command's own output, not its text: a gate's output may name the command)
    expect(gate.output, gate.output).toContain('GATE-42');
    expect(gate.output).not.toContain('bwrap:');
    expect(gate.passed).toBe(true);
    expect(shim.starts()).toBe(2);
  }, 60_000);

  it('a gate command that prints bubblewrap\'s line itself and exits 1 is run once and fails (outside attack X38-02)', async () => {
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n' } });
    // a `bwrap` on PATH that only counts the starts (what it would delete never exists)
    const shim = vanishingShim(repo.sibling('never-there'));
    // the command ran (bubblewrap recorded its exit code): its own "bwrap:" line is no reason to run it again
    const command = `echo "bwrap: Can't mkdir parents for /nonexistent-x38/a: Read-only file system" >&2; exit 1`;
    const result = await runGates({ repoDir: repo.dir, env: { ...repo.env, PATH: shim.path() }, noCache: true, gates: [{ type: 'test', command, required: true }] });
    expect(result.results[0]!.passed).toBe(false);
    expect(shim.starts()).toBe(1);
  }, 60_000);

  it("verify-build's commands (runSandboxedShell) run too", async () => {
    const { repo, env, shim } = await otherRunLayout();
    const run = await runSandboxedShell('echo BUILD-$((40 + 2))', { cwd: repo.dir, env, timeoutMs: 30_000, logPath: repo.sibling('build.log') });
    expect(run.output, run.output).toContain('BUILD-42');
    expect(run.exitCode).toBe(0);
    expect(run.sandboxed).toBe(true);
    expect(shim.starts()).toBe(2);
  }, 60_000);
});

describe.skipIf(!available)('a hidden path that did not exist when the sandbox started (outside attack X38-03)', () => {
  it("is not readable once it appears: the agent's tool executor starts a new sandbox, which hides it, before its next request", async () => {
    const { repo, worktree, home, tmp } = await createAgentLayout('polywave/appear/wave1-agent-A');
    const appearing = repo.sibling('other-run/polywave-scratch-y');
    const built = await buildAgentSandboxPlan({ root: worktree, home, tmp, env: repo.env, userHome: repo.sibling('user-home') });
    const plan = { ...built, unreadable: [...built.unreadable, appearing] };
    const env = { ...repo.env, HOME: home, TMPDIR: tmp } as Record<string, string>;
    const executor = createToolExecutor(plan, { cwd: worktree, env });
    const run = outputOf(executor, worktree, env);
    try {
      expect(await run(`cat ${JSON.stringify(path.join(appearing, 'key'))} 2>&1; echo first`)).toContain('No such file or directory');
      // re-created after the start (another run's new scratch parent, a directory put back by rename)
      mkdirSync(appearing, { recursive: true });
      writeFileSync(path.join(appearing, 'key'), 'X38SECRET-appeared-later\n');
      const output = await run(`cat ${JSON.stringify(path.join(appearing, 'key'))} 2>&1; echo second`);
      expect(output).toContain('second');
      expect(output).not.toContain('X38SECRET');
    } finally {
      await executor.stop();
    }
  }, 60_000);
});

describe.skipIf(!available)('a polywave run started after an agent\'s tool executor (outside attack X38-09)', () => {
  it("its scratch parent (its agents' HOME/TMPDIR) is not readable: the executor starts a new sandbox that hides it", async () => {
    const { repo, worktree, home, tmp } = await createAgentLayout('polywave/laterrun/wave1-agent-A');
    const plan = await buildAgentSandboxPlan({ root: worktree, home, tmp, env: repo.env, userHome: repo.sibling('user-home') });
    const env = { ...repo.env, HOME: home, TMPDIR: tmp } as Record<string, string>;
    const executor = createToolExecutor(plan, { cwd: worktree, env });
    const run = outputOf(executor, worktree, env);
    const laterTmp = mkdtempSync(path.join(os.tmpdir(), 'pw-later-run-'));
    const saved = process.env.TMPDIR;
    try {
      expect(await run('echo started')).toContain('started');
      // Another polywave process, TMPDIR elsewhere, makes an agent's scratch directory (registering its parent).
      process.env.TMPDIR = laterTmp;
      const agentDir = await makeScratchDir('polywave-agent-B-');
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
      writeFileSync(path.join(agentDir, 'credentials.json'), 'X38SECRET-later-run\n');
      const output = await run(`cat ${JSON.stringify(path.join(agentDir, 'credentials.json'))} 2>&1; echo after`);
      expect(output).toContain('after');
      expect(output).not.toContain('X38SECRET');
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
      await executor.stop();
      rmSync(laterTmp, { recursive: true, force: true });
    }
  }, 60_000);
});
