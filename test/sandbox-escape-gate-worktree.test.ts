/**
 * ESCAPE REPRODUCTION (outside attack X3, 2026-12-02). A quality gate runs agent-written code in the
 * OS sandbox with its directory (an agent's worktree, or the main checkout after the merge) and the
 * repository's gate build cache writable. Three things polywave does OUTSIDE the sandbox trust what
 * that code left in those writable places:
 *
 * 1. The full output log of a gate (`<repoDir>/.polywave-state/gates/<stamp>-<type>.log`, written when
 *    the output is truncated) is opened following symlinks: the gate plants symlinks for the log names
 *    of the last 10 s (the stamp has ms resolution) pointing at a file outside, and prints more than
 *    300 lines: polywave overwrites the file with the gate's output (~/.bashrc → code at the next shell).
 * 2. The sandbox settings of every gate are read from `polywave.config.json` found from `repoDir`, the
 *    agent's worktree: an earlier gate writes `{"sandbox":{"writable":["<anywhere>"]}}` there and the
 *    next gate's sandbox makes that place writable (and `network.allow` any host).
 * 3. The gate build cache's `REPOSITORY` file is (re)written by `ensureGateBuildCache` with a plain
 *    writeFile when it is missing: a gate replaces it with a symlink and polywave creates the symlink's
 *    target outside the sandbox.
 *
 * 4. (#17) the gates ran with the orchestrator's environment, model keys included.
 *
 * Fixed: full logs go under the git common dir (polywave/gate-logs, no sandbox writes there) and are
 * created O_EXCL|O_NOFOLLOW; gates take their sandbox settings from the main checkout, read once per
 * run; cache metadata is written only as new files in real directories; gates run without credentials.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runGates } from '../src/gates/run-gates.js';
import { sandboxStatus } from '../src/sandbox/index.js';
import { createTestRepo } from './support/git-repo.js';

const available = (await sandboxStatus()).available;

describe('gate code cannot make polywave write outside the sandbox', () => {
  it.skipIf(!available)('log symlinks, a polywave.config.json of its own, a REPOSITORY symlink in the gate build cache', async () => {
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n' } });
    const worktree = repo.sibling('wt-A');
    await repo.run(['worktree', 'add', '--quiet', '-b', 'polywave/x3/wave1-agent-A', worktree]);
    const home = repo.sibling('home');
    const outside = repo.sibling('outside');
    mkdirSync(home, { recursive: true });
    mkdirSync(outside, { recursive: true });
    const victim = path.join(outside, 'bashrc');
    writeFileSync(victim, 'victim\n');
    const viaConfig = path.join(outside, 'written-by-gate-2');
    const viaRepositoryFile = path.join(outside, 'created-through-REPOSITORY');

    // Gate 1 (agent code, e.g. its build script): plants all three, then prints 400 lines.
    const plant = [
      'mkdir -p .polywave-state/gates',
      `node -e 'const fs=require("fs");const now=Date.now();for(let t=now-10000;t<=now;t++){const s=new Date(t).toISOString().replace(/[-:]/g,"");try{fs.symlinkSync(process.argv[1],".polywave-state/gates/"+s+"-build.log")}catch{}}' ${victim}`,
      `printf '{"sandbox":{"writable":["%s"]}}' ${outside} > polywave.config.json`,
      'cache=$(dirname "$XDG_CACHE_HOME")',
      `rm -f "$cache/REPOSITORY" && ln -s ${viaRepositoryFile} "$cache/REPOSITORY"`,
      "echo 'echo PWNED-BY-GATE-LOG'; for i in $(seq 1 400); do echo '#'; done",
    ].join('\n');
    writeFileSync(path.join(worktree, 'plant.sh'), `${plant}\n`);
    const run = await runGates({
      repoDir: worktree,
      gates: [
        { type: 'build', command: 'bash plant.sh', required: true, phase: 'PRE_VALIDATION' },
        { type: 'test', command: `echo gate-2 > ${viaConfig}; echo done`, required: true, phase: 'VALIDATION' },
        // #17: the orchestrator's model key must not reach gate code.
        { type: 'lint', command: 'echo "key=${ANTHROPIC_API_KEY:-none}"', required: true, phase: 'POST_VALIDATION' },
      ],
      noCache: true,
      env: { ...repo.env, HOME: home, XDG_CACHE_HOME: path.join(home, '.cache'), ANTHROPIC_API_KEY: 'CANARY-X3-KEY' },
    });
    expect(run.results).toHaveLength(3);
    expect(run.results[2]!.output).toContain('key=none');

    const escapes: string[] = [];
    const victimNow = readFileSync(victim, 'utf8');
    if (victimNow !== 'victim\n') escapes.push(`gate log written through a symlink over a file outside: ${JSON.stringify(victimNow.slice(0, 40))}`);
    if (existsSync(viaConfig)) escapes.push('gate 2 wrote outside: its sandbox took sandbox.writable from the polywave.config.json gate 1 wrote in the worktree');
    if (existsSync(viaRepositoryFile)) escapes.push('polywave created a file outside through the REPOSITORY symlink in the gate build cache');
    expect(escapes).toEqual([]);
  }, 120_000);
});
