import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { buildAgentSandboxPlan } from '../src/agents/sandbox/agent-sandbox.js';
import { createToolExecutor } from '../src/agents/sandbox/tool-executor.js';
import { resetSandbox, sandboxStatus } from '../src/sandbox/index.js';
import { untrackedSecretFiles } from '../src/sandbox/sandbox-plan.js';
import { createAgentLayout } from './support/agent-layout.js';
import { createTestRepo } from './support/git-repo.js';

// Outside round X41 (attack-sandbox-41.md): after X40-02 fixed git's lookup, other host programs polywave starts by
// name still searched an empty or relative PATH entry (`PATH=:$PATH`, `node_modules/.bin`) from a cwd an agent
// writes: the sandbox wrapper's `bash` (and the `bwrap` in it) from the agent's worktree — the agent's `bash` ran on
// the host instead of bubblewrap, with the whole sandbox command line (X41-02); the sandbox probe's from the
// orchestrator's cwd (X41-05); the plan's own `git ls-files` from the main checkout, where merged agent work lands
// (X41-01). Each case plants logging stand-ins and requires that none ran.
const repoRoot = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const available = (await sandboxStatus()).available;

afterAll(async () => {
  await resetSandbox();
});

/** Executables named `names` in `dir` (and its node_modules/.bin) that append to `marker` and run the real program. */
function plant(dir: string, names: readonly string[], marker: string): void {
  for (const where of [dir, path.join(dir, 'node_modules', '.bin')]) {
    mkdirSync(where, { recursive: true });
    for (const name of names) {
      writeFileSync(path.join(where, name), `#!/bin/sh\necho "planted ${name} ran in $PWD" >> ${marker}\nPATH=/usr/local/bin:/usr/bin:/bin exec ${name} "$@"\n`);
      chmodSync(path.join(where, name), 0o755);
    }
  }
}

const relativeFirst = (hostPath: string) => `:node_modules/.bin:.:${hostPath}`;

describe('host programs started by name never come from a relative PATH entry (X41)', () => {
  it.skipIf(!available)('X41-02: the tool executor’s sandbox wrapper (bash, bwrap) started in the agent’s worktree', async () => {
    const layout = await createAgentLayout('polywave/x41w/wave1-agent-A');
    const marker = layout.repo.sibling('planted-ran.log');
    plant(layout.worktree, ['bash', 'sh', 'bwrap', 'node'], marker);
    const plan = await buildAgentSandboxPlan({ root: layout.worktree, home: layout.home, tmp: layout.tmp, env: layout.repo.env, userHome: layout.repo.sibling('user-home') });
    const env = { ...layout.repo.env, HOME: layout.home, TMPDIR: layout.tmp, PATH: relativeFirst(process.env.PATH ?? '/usr/bin:/bin') } as Record<string, string>;
    const executor = createToolExecutor(plan, { cwd: layout.worktree, env });
    try {
      const chunks: Buffer[] = [];
      await executor.run('echo inside', { cwd: layout.worktree, env, onOutput: (chunk) => chunks.push(chunk) }).done;
      expect(Buffer.concat(chunks).toString('utf8')).toBe('inside\n');
      expect(existsSync(marker) ? readFileSync(marker, 'utf8') : '').toBe('');
    } finally {
      await executor.stop();
    }
  }, 60_000);

  it('X41-01: the plan’s git listing of the main checkout', async () => {
    const repo = await createTestRepo({ files: { 'README.md': '# x\n' } });
    const marker = repo.sibling('planted-git.log');
    plant(repo.dir, ['git'], marker);
    writeFileSync(path.join(repo.dir, '.env'), 'TOKEN=x\n');
    const saved = process.env.PATH;
    process.env.PATH = relativeFirst(saved ?? '/usr/bin:/bin');
    try {
      expect(untrackedSecretFiles(repo.dir).map((file) => path.basename(file))).toContain('.env');
    } finally {
      process.env.PATH = saved;
    }
    expect(existsSync(marker) ? readFileSync(marker, 'utf8') : '').toBe('');
  });

  it.skipIf(!available)('X41-05: the sandbox probe, from a cwd holding a bash and a bwrap (a separate process, built dist)', () => {
    const dir = path.join(repoRoot, 'test', '.tmp-x41-probe');
    const marker = path.join(dir, 'planted.log');
    mkdirSync(dir, { recursive: true });
    try {
      plant(dir, ['bash', 'bwrap', 'sh'], marker);
      const statusUrl = pathToFileURL(path.join(repoRoot, 'dist', 'sandbox', 'sandbox-status.js')).href;
      const result = spawnSync(process.execPath, ['--input-type=module', '-e', `const { sandboxStatus } = await import(${JSON.stringify(statusUrl)}); const status = await sandboxStatus(); console.log(JSON.stringify(status.available)); process.exit(0);`], {
        cwd: dir,
        env: { ...process.env, PATH: relativeFirst(process.env.PATH ?? '/usr/bin:/bin') },
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(result.stdout.trim()).toBe('true');
      expect(existsSync(marker) ? readFileSync(marker, 'utf8') : '').toBe('');
    } finally {
      spawnSync('rm', ['-rf', dir]);
    }
  }, 90_000);
});
