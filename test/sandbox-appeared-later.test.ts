import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildAgentSandboxPlan } from '../src/agents/sandbox/agent-sandbox.js';
import { createStaleViewCheck } from '../src/agents/sandbox/appeared-since-start.js';
import { closeHeld, createToolExecutor, heldDirectoryRemoved, holdHiddenDirectories, type ToolExecutor } from '../src/agents/sandbox/tool-executor.js';
import { makeScratchDir, resetSandbox, sandboxStatus } from '../src/sandbox/index.js';
import { createAgentLayout } from './support/agent-layout.js';

// Outside round X39 (attack-sandbox-39.md): what appears AFTER an agent's tool executor started must be as hidden
// as what was there when its plan was made — a worktree added to the repository (X39-12), a hidden directory removed
// and made again (X39-03), a registered scratch parent that was absent at the start and is made again (X39-02), a run
// registered between the plan and the executor's start (X39-09). Each case reads a secret through the agent's bash
// between two requests: before the fix the second request printed it.
const uid = typeof process.getuid === 'function' ? process.getuid() : 'user';
const registry = `/tmp/polywave-scratch-${uid}/parents`;
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

function withTmp<T>(tmp: string, work: () => Promise<T>): Promise<T> {
  const saved = process.env.TMPDIR;
  process.env.TMPDIR = tmp;
  return work().finally(() => {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
  });
}

/** Removes the registry line a case added (the registry is the machine's, shared with other runs). */
function dropRegistryLine(line: string): void {
  try {
    const text = readFileSync(registry, 'utf8');
    writeFileSync(registry, text.split('\n').filter((entry) => entry !== line).join('\n'));
  } catch {
    // no registry
  }
}

/** A TMPDIR of another polywave run (not /tmp: it registers its scratch parent); its registry line and files go afterwards. */
async function withOtherRun(prefix: string, work: (laterTmp: string, parent: string) => Promise<void>): Promise<void> {
  const laterTmp = mkdtempSync(`/tmp/${prefix}`);
  const parent = path.join(laterTmp, `polywave-scratch-${uid}`);
  try {
    await work(laterTmp, parent);
  } finally {
    dropRegistryLine(parent);
    rmSync(laterTmp, { recursive: true, force: true });
  }
}

async function agentExecutor(branch: string) {
  const layout = await createAgentLayout(branch);
  const plan = await buildAgentSandboxPlan({ root: layout.worktree, home: layout.home, tmp: layout.tmp, env: layout.repo.env, userHome: layout.repo.sibling('user-home') });
  const env = { ...layout.repo.env, HOME: layout.home, TMPDIR: layout.tmp } as Record<string, string>;
  const executor = createToolExecutor(plan, { cwd: layout.worktree, env });
  return { ...layout, plan, executor, run: outputOf(executor, layout.worktree, env) };
}

describe.skipIf(!available)('paths that appear after an agent sandbox started stay hidden (X39)', () => {
  it('X39-12: a worktree added to the repository while the agent runs — its uncommitted work and .env', async () => {
    const { repo, executor, run, plan } = await agentExecutor('polywave/x39j/wave1-agent-A');
    try {
      expect(await run('echo started')).toBe('started\n');
      const other = repo.sibling('wt-C');
      await repo.git.worktreeAdd({ path: other, branch: 'polywave/x39j/wave1-agent-C', base: 'HEAD', createBranch: true });
      writeFileSync(path.join(other, 'README.md'), 'SECRET-12 agent C uncommitted work\n');
      writeFileSync(path.join(other, '.env'), 'SECRET-12-TOKEN=agent-C\n');
      const out = await run(`cat ${other}/README.md ${other}/.env 2>&1; echo two`);
      expect(out).not.toContain('SECRET-12');
      expect(out).toContain('two');
      expect(plan.unreadable).toContain(other);
      // its own tree is still its own
      expect(await run('echo mine > own.txt && cat own.txt')).toBe('mine\n');
    } finally {
      await executor.stop();
    }
  }, 60_000);

  it('a worktree added inside the hidden main checkout (.claude/worktrees/, as polywave makes them) is not seen, without a new sandbox; one outside still gets one', async () => {
    const { repo, executor, run, plan } = await agentExecutor('polywave/x39k/wave1-agent-A');
    try {
      expect(await run('echo started')).toBe('started\n');
      expect(executor.starts).toBe(1);
      const inside = path.join(repo.dir, '.claude', 'worktrees', 'polywave', 'x39k', 'wave1-agent-D');
      await repo.git.worktreeAdd({ path: inside, branch: 'polywave/x39k/wave1-agent-D', base: 'HEAD', createBranch: true });
      writeFileSync(path.join(inside, 'README.md'), 'SECRET-13 agent D uncommitted work\n');
      const out = await run(`cat ${inside}/README.md 2>&1; ls -a ${repo.dir} 2>&1; echo two`);
      expect(out).not.toContain('SECRET-13');
      expect(out).toContain('two');
      // the main checkout's view is empty and stays so: nothing to restart for
      expect(executor.starts).toBe(1);
      expect(plan.unreadable).not.toContain(inside);
      // a worktree outside every hidden directory still gets a new sandbox that hides it (X39-12)
      const outside = repo.sibling('wt-E');
      await repo.git.worktreeAdd({ path: outside, branch: 'polywave/x39k/wave1-agent-E', base: 'HEAD', createBranch: true });
      writeFileSync(path.join(outside, 'README.md'), 'SECRET-14 agent E uncommitted work\n');
      expect(await run(`cat ${outside}/README.md 2>&1; echo three`)).not.toContain('SECRET-14');
      expect(executor.starts).toBe(2);
    } finally {
      await executor.stop();
    }
  }, 60_000);

  it('X39-03: a hidden directory removed (or renamed away) and made again between two requests', async () => {
    for (const mode of ['rm', 'mv'] as const) {
      const layout = await createAgentLayout(`polywave/x39c${mode}/wave1-agent-A`);
      const hidden = layout.repo.sibling('other-run/polywave-scratch-z');
      mkdirSync(hidden, { recursive: true });
      writeFileSync(path.join(hidden, 'key'), 'SECRET-03-original\n');
      const built = await buildAgentSandboxPlan({ root: layout.worktree, home: layout.home, tmp: layout.tmp, env: layout.repo.env, userHome: layout.repo.sibling('user-home') });
      const plan = { ...built, unreadable: [...built.unreadable, hidden] };
      const env = { ...layout.repo.env, HOME: layout.home, TMPDIR: layout.tmp } as Record<string, string>;
      const executor = createToolExecutor(plan, { cwd: layout.worktree, env });
      const run = outputOf(executor, layout.worktree, env);
      try {
        const first = await run(`cat ${hidden}/key 2>&1; echo first`);
        expect(first).not.toContain('SECRET-03');
        if (mode === 'rm') rmSync(hidden, { recursive: true, force: true });
        else renameSync(hidden, `${hidden}.old`);
        mkdirSync(hidden, { recursive: true });
        writeFileSync(path.join(hidden, 'key'), `SECRET-03-made-again-${mode}\n`);
        const second = await run(`cat ${hidden}/key 2>&1; echo second`);
        expect(second).not.toContain('SECRET-03');
        expect(second).toContain('second');
      } finally {
        await executor.stop();
      }
    }
  }, 60_000);

  it('X39-02: a registered scratch parent that was gone when the executor started and is made again (registry unchanged)', async () => {
    await withOtherRun('polywave-x39b-', async (laterTmp, parent) => {
      // an earlier run with this TMPDIR registered its parent; the TMPDIR was then wiped (a CI job's temp directory)
      await withTmp(laterTmp, () => makeScratchDir('polywave-agent-old-'));
      rmSync(parent, { recursive: true, force: true });
      const { executor, run } = await agentExecutor('polywave/x39b/wave1-agent-A');
      try {
        expect(await run('echo started')).toBe('started\n');
        const before = readFileSync(registry, 'utf8');
        const agentDir = await withTmp(laterTmp, () => makeScratchDir('polywave-agent-B-'));
        writeFileSync(path.join(agentDir, 'credentials.json'), 'SECRET-02-next-job\n');
        expect(readFileSync(registry, 'utf8')).toBe(before);
        const out = await run(`cat ${path.join(agentDir, 'credentials.json')} 2>&1; echo after`);
        expect(out).not.toContain('SECRET-02');
        expect(out).toContain('after');
      } finally {
        await executor.stop();
      }
    });
  }, 60_000);

  it('X39-09: a run registered between the plan and the executor start is hidden from the first request on', async () => {
    const layout = await createAgentLayout('polywave/x39g/wave1-agent-A');
    const plan = await buildAgentSandboxPlan({ root: layout.worktree, home: layout.home, tmp: layout.tmp, env: layout.repo.env, userHome: layout.repo.sibling('user-home') });
    await withOtherRun('polywave-x39g-', async (laterTmp) => {
      const agentDir = await withTmp(laterTmp, () => makeScratchDir('polywave-agent-B-'));
      writeFileSync(path.join(agentDir, 'credentials.json'), 'SECRET-09-between\n');
      const env = { ...layout.repo.env, HOME: layout.home, TMPDIR: layout.tmp } as Record<string, string>;
      const executor = createToolExecutor(plan, { cwd: layout.worktree, env });
      try {
        const out = await outputOf(executor, layout.worktree, env)(`cat ${agentDir}/credentials.json 2>&1; echo one`);
        expect(out).not.toContain('SECRET-09');
        expect(out).toContain('one');
      } finally {
        await executor.stop();
      }
    });
  }, 60_000);

  it('issue 11 (h11b): a scratch parent registered inside a directory the sandbox hides whole (the user\'s home) leaves the view as it was; one the view exposes still makes it stale', async () => {
    const layout = await createAgentLayout('polywave/h11b/wave1-agent-A');
    const userHome = layout.repo.sibling('user-home');
    mkdirSync(userHome, { recursive: true });
    const plan = await buildAgentSandboxPlan({ root: layout.worktree, home: layout.home, tmp: layout.tmp, env: layout.repo.env, userHome });
    expect(plan.unreadable).toContain(userHome);
    const env = { ...layout.repo.env, HOME: layout.home, TMPDIR: layout.tmp } as Record<string, string>;
    const executor = createToolExecutor(plan, { cwd: layout.worktree, env });
    const run = outputOf(executor, layout.worktree, env);
    // (the checks the claude-code and cli backends run; made at the start, as they do)
    const unrelated = createStaleViewCheck(plan, layout.worktree, { identities: true });
    let exposing: ReturnType<typeof createStaleViewCheck> | undefined;
    const homeTmp = path.join(userHome, 'tmp');
    mkdirSync(homeTmp);
    const hiddenParent = path.join(homeTmp, `polywave-scratch-${uid}`);
    try {
      expect(await run('echo started')).toBe('started\n');
      // a run whose TMPDIR is under the user's home (hidden whole: its view is empty and stays so)
      const hiddenAgentDir = await withTmp(homeTmp, () => makeScratchDir('polywave-agent-B-'));
      writeFileSync(path.join(hiddenAgentDir, 'credentials.json'), 'SECRET-H11B-in-home\n');
      expect(readFileSync(registry, 'utf8').split('\n')).toContain(hiddenParent);
      // not stale for it (another run of this machine may end it for ITS path, never for this one)
      expect(unrelated.check() ?? '').not.toContain(hiddenParent);
      const two = await run(`cat ${hiddenAgentDir}/credentials.json 2>&1; echo two`);
      expect(two).not.toContain('SECRET-H11B');
      expect(two).toContain('two');
      expect(plan.unreadable).not.toContain(hiddenParent);
      // a run whose TMPDIR the view exposes (a directory under /tmp): stale, and hidden from the next call on
      await withOtherRun('polywave-h11b-', async (laterTmp, parent) => {
        exposing = createStaleViewCheck(plan, layout.worktree, { identities: true });
        const agentDir = await withTmp(laterTmp, () => makeScratchDir('polywave-agent-C-'));
        writeFileSync(path.join(agentDir, 'credentials.json'), 'SECRET-H11B-exposed\n');
        expect(exposing.check()).toContain(parent);
        const three = await run(`cat ${agentDir}/credentials.json 2>&1; echo three`);
        expect(three).not.toContain('SECRET-H11B');
        expect(three).toContain('three');
        expect(plan.unreadable).toContain(parent);
      });
    } finally {
      unrelated.close();
      exposing?.close();
      dropRegistryLine(hiddenParent);
      await executor.stop();
    }
  }, 60_000);

  it('X40-09: a worktree whose directory was gone at the start (its entry kept) and comes back at the same path', async () => {
    const layout = await createAgentLayout('polywave/x40e2/wave1-agent-A');
    const other = layout.repo.sibling('wt-D');
    await layout.repo.git.worktreeAdd({ path: other, branch: 'polywave/x40e2/wave1-agent-D', base: 'HEAD', createBranch: true });
    renameSync(other, `${other}.away`);
    const plan = await buildAgentSandboxPlan({ root: layout.worktree, home: layout.home, tmp: layout.tmp, env: layout.repo.env, userHome: layout.repo.sibling('user-home') });
    const env = { ...layout.repo.env, HOME: layout.home, TMPDIR: layout.tmp } as Record<string, string>;
    const executor = createToolExecutor(plan, { cwd: layout.worktree, env });
    const run = outputOf(executor, layout.worktree, env);
    try {
      expect(await run('echo started')).toBe('started\n');
      renameSync(`${other}.away`, other);
      writeFileSync(path.join(other, '.env'), 'SECRET-40-09=agent-D\n');
      for (const round of ['two', 'three']) {
        const out = await run(`cat ${other}/.env 2>&1; echo ${round}`);
        expect(out).not.toContain('SECRET-40-09');
        expect(out).toContain(round);
      }
    } finally {
      await executor.stop();
    }
  }, 60_000);

  it('X40-08, X41-03/04: a held hidden directory or file tells it was removed on any file system (no birth time needed)', () => {
    const dir = mkdtempSync('/tmp/polywave-x40-held-');
    try {
      const hidden = path.join(dir, 'hidden');
      const secret = path.join(dir, 'secret.env');
      mkdirSync(hidden);
      writeFileSync(secret, 'x');
      // here the file system keeps birth times: the identity tells a path made again apart, nothing needs holding
      const birthTimes = statSync(hidden, { bigint: true }).birthtimeNs !== 0n;
      expect(holdHiddenDirectories([hidden, secret])).toHaveLength(birthTimes ? 0 : 2);
      const held = holdHiddenDirectories([hidden, secret, path.join(dir, 'absent')], true);
      expect(held).toHaveLength(2);
      expect(heldDirectoryRemoved(held)).toBe(false);
      rmSync(hidden, { recursive: true });
      mkdirSync(hidden);
      // the same path again, possibly the same inode number: the held one has no links left
      expect(heldDirectoryRemoved(held)).toBe(true);
      closeHeld(held);
      expect(held).toHaveLength(0);
      const file = holdHiddenDirectories([secret], true);
      rmSync(secret);
      writeFileSync(secret, 'made again');
      expect(heldDirectoryRemoved(file)).toBe(true);
      closeHeld(file);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
