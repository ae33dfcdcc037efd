/**
 * Outside attack A18-07 (issue 17 × issue 11): a local (in-process) run whose repository lies INSIDE a live
 * `polywave worker`'s `--dir`. The worker's directories are hidden from every other sandbox of the host (A17-12), but
 * one that holds the sandbox's own root could not be hidden by a plain mount — it was left out, and the local agent read
 * the worker's clone (other IMPLs' agent commits) and its running jobs' worktrees and scripts. Now such a directory is
 * hidden whole around the root, as a worker's own `--dir` is for its agents: the root stays writable and the git
 * directory readable (git works), everything else of the worker's directory is gone — also what appears there later.
 *
 * Real parts: a git repository with a linked worktree, the machine's worker registry (registerWorkerDir, as
 * `polywave worker` does), the agent sandbox plan and the tool executor under bubblewrap.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildAgentSandboxPlan } from '../src/agents/sandbox/agent-sandbox.js';
import { createToolExecutor, type ToolExecutor } from '../src/agents/sandbox/tool-executor.js';
import { registerWorkerDir, releaseWorkerDir, resetSandbox, sandboxStatus } from '../src/sandbox/index.js';
import { gatePlan } from '../src/sandbox/sandbox-plan.js';
import { createAgentLayout } from './support/agent-layout.js';

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

/** What a worker keeps in its `--dir` beside the local repository: its clone, a running job's worktree and script. */
function plantWorkerFiles(dir: string, tag: string): string[] {
  const files = ['repo.git/refs-of-other-impls.txt', 'work/job.x/src/wip.js', 'scripts/job.x.yaml'];
  for (const file of files) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), `WORKER-${tag}-SECRET\n`);
  }
  return files.map((file) => path.join(dir, file));
}

describe.skipIf(!available)('a local repository inside a worker --dir (A18-07)', () => {
  it("the local agent's sandbox hides the worker's directory around its root: clone, jobs and scripts unreadable, its own worktree and git still work", async () => {
    const layout = await createAgentLayout('polywave/a1807/wave1-agent-A');
    // the worker's --dir: the directory that holds the local repository and its worktree
    const workerDir = path.dirname(layout.repo.dir);
    const planted = plantWorkerFiles(workerDir, 'A1807');
    registerWorkerDir(workerDir);
    const plan = await buildAgentSandboxPlan({ root: layout.worktree, home: layout.home, tmp: layout.tmp, env: layout.repo.env, userHome: layout.repo.sibling('user-home') });
    const env = { ...layout.repo.env, HOME: layout.home, TMPDIR: layout.tmp } as Record<string, string>;
    const executor = createToolExecutor(plan, { cwd: layout.worktree, env });
    const run = outputOf(executor, layout.worktree, env);
    try {
      // computed at run time: the OS sandbox is what answers, not the static check
      const code = [
        'import os',
        "d = os.path.dirname(os.path.abspath('.'))",
        "print(sorted(os.listdir(d)) if os.path.isdir(d) else 'NODIR')",
        `for p in ${JSON.stringify(planted.map((file) => path.relative(workerDir, file)))}:`,
        '    f = os.path.join(d, p)',
        "    print(open(f).read() if os.path.exists(f) else 'GONE ' + p)",
      ].join('\n');
      const reader = `python3 -c "import base64; exec(base64.b64decode('${Buffer.from(code).toString('base64')}'))"`;
      const out = await run(`${reader} 2>&1; echo read-done`);
      expect(out).toContain('read-done');
      expect(out).not.toContain('WORKER-A1807-SECRET');
      // what appears in the worker's directory later is hidden as well (the mount covers the directory)
      writeFileSync(path.join(workerDir, 'work', 'job.x', 'later.txt'), 'WORKER-A1807-LATER\n');
      expect(await run(`cat ${path.join(workerDir, 'work', 'job.x', 'later.txt')} 2>&1; echo later-done`)).not.toContain('WORKER-A1807-LATER');
      // the agent's own work: written; git reads its repository through the (readable) git directory
      expect(await run('echo mine > own.txt && cat own.txt && git status --porcelain && git log --oneline -1 | wc -l')).toBe('mine\n?? own.txt\n1\n');
      // the plan hides the directory whole, the root writable, the git directory put back readable
      expect(plan.unreadable).toContain(workerDir);
      expect(plan.writable).toContain(layout.worktree);
      expect(plan.readable).toContain(path.join(layout.repo.dir, '.git'));
      // a gate of the local run (a worktree gate) is planned the same way
      const gate = gatePlan({ directory: layout.worktree, tmp: layout.tmp, gitCommonDir: path.join(layout.repo.dir, '.git'), userHome: layout.repo.sibling('user-home'), scratchDirs: [], workerDirs: [workerDir] });
      expect(gate.unreadable).toContain(workerDir);
      expect(gate.readable).toContain(path.join(layout.repo.dir, '.git'));
    } finally {
      await executor.stop();
      releaseWorkerDir(workerDir);
      rmSync(path.join(workerDir, 'work'), { recursive: true, force: true });
    }
  }, 60_000);
});
