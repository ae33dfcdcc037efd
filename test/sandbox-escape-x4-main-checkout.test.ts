/**
 * ESCAPE REPRODUCTION (outside attack X4, 2026-12-02), against the fixes of X3 #15/#16/#20.
 * finalize-wave's verify-build now runs the merged tree's test command in the gate sandbox, but with
 * the MAIN CHECKOUT writable (X3 #18's class), and polywave trusts two things that code can leave there:
 *
 * 1. verify-build's full output log is `<main>/.polywave-state/verify-build/<stamp>-<kind>.log`. The
 *    O_EXCL|O_NOFOLLOW of the #15 fix guards the LAST component only: the test plants
 *    `.polywave-state/verify-build` as a symlink to any directory and prints more than 300 lines;
 *    polywave (outside the sandbox) creates `<that directory>/<stamp>-test.log` with the test's output
 *    (run-scaffold's `.polywave-state/scaffold/` log has the same shape).
 * 2. The #16 fix reads gates' sandbox settings from the main checkout's `polywave.config.json`. The
 *    same verify-build run writes one (`sandbox.writable: [<anywhere>]`), and every gate of the next
 *    run (and every agent: buildAgentSandboxPlan reads the same file) gets that place writable.
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { verifyBuild } from '../src/engine/verify-build.js';
import { runGates } from '../src/gates/run-gates.js';
import { sandboxStatus } from '../src/sandbox/index.js';
import { createTestRepo } from './support/git-repo.js';

const available = (await sandboxStatus()).available;

describe('code run by verify-build cannot make polywave write outside the sandbox', () => {
  it.skipIf(!available)('a symlinked log directory, a polywave.config.json for the next run', async () => {
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n' } });
    const home = repo.sibling('home');
    const outside = repo.sibling('outside');
    mkdirSync(home, { recursive: true });
    mkdirSync(outside, { recursive: true });
    const env = { ...repo.env, HOME: home, XDG_CACHE_HOME: path.join(home, '.cache') };

    // The merged tree's own test (agent code), run by finalize's verify-build on the main checkout.
    const test = [
      'mkdir -p .polywave-state',
      `ln -sfn ${outside} .polywave-state/verify-build`,
      `printf '{"sandbox":{"writable":["%s"]}}' ${outside} > polywave.config.json`,
      "echo 'echo PWNED-BY-VERIFY-BUILD-LOG'; for i in $(seq 1 400); do echo '#'; done",
    ].join('\n');
    writeFileSync(path.join(repo.dir, 'agent-test.sh'), `${test}\n`);
    const verify = await verifyBuild({ repoDir: repo.dir, testCommand: 'bash agent-test.sh', env });
    expect(verify.test_passed).toBe(true);

    // The next run's gate in an agent's worktree.
    const worktree = repo.sibling('wt-B');
    await repo.run(['worktree', 'add', '--quiet', '-b', 'polywave/x4/wave2-agent-B', worktree]);
    const viaConfig = path.join(outside, 'written-by-next-gate');
    await runGates({ repoDir: worktree, gates: [{ type: 'test', command: `echo gate > ${viaConfig}; true`, required: true }], noCache: true, env });

    const escapes: string[] = [];
    const created = readdirSync(outside).filter((name) => name.endsWith('.log'));
    if (created.length > 0) escapes.push(`verify-build log created outside through a symlinked directory: ${created.join(', ')}`);
    if (existsSync(viaConfig)) escapes.push("the next run's gate wrote outside: its sandbox took sandbox.writable from the polywave.config.json verify-build's code wrote in the main checkout");
    expect(escapes).toEqual([]);
  }, 120_000);
});
