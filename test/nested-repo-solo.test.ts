/**
 * REGRESSION (issue 11, outside attack X13 #1, #2, #6; helper S7): an agent working in the main
 * checkout (solo wave) turned `docs/` — the IMPL's directory's parent — into its own repository
 * (`docs/.git` with config, hooks, filters and a committed polywave.config.json). `git status` never
 * shows a `.git`, so no check saw it; the user's next command resolved the repository of
 * `docs/IMPL/IMPL-x.yaml` to `docs/` (rev-parse --show-toplevel) and ran the agent's clean filter,
 * pinned its hooks, connected to its `dispatch.url`. Now a new `.git` anywhere in the checkout is
 * moved out when the agent stops (a denial, the wave blocks), and a repository nested in another
 * one's work tree is refused as the plan's repository (NESTED_REPOSITORY, exit 2, nothing changed),
 * except a registered submodule; its config is never the trusted one.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { assertNotNestedRepository } from '../src/git/nested-repos.js';
import { runGit } from '../src/git/run-git.js';
import { sandboxStatus } from '../src/sandbox/index.js';
import { repositoryOf } from '../src/store/trusted-config.js';
import { runCliInProcess } from './support/cli-in-process.js';
import { findFile, soloEscapeRepo } from './support/solo-escape.js';

const available = (await sandboxStatus()).available;

/** What the agent runs (with `sh`; the static bash layer refuses `git init` on a command line). */
const plant = [
  'set -e',
  // X13 s9/s2: docs/ becomes a repository with a filter, an fsmonitor and a committed config.
  "cd docs && git init -q && git config core.fsmonitor 'echo PWNED' && git config filter.x.clean 'echo PWNED' && echo '* filter=x' > .gitattributes",
  'echo \'{"dispatch":{"url":"redis://127.0.0.1:1"}}\' > polywave.config.json && git add polywave.config.json && git -c user.name=t -c user.email=t@t commit -qm c && rm polywave.config.json .gitattributes',
  // X13 s1 solo: a new directory holding a repository (not a submodule path).
  'cd .. && mkdir -p lib/sub && cd lib/sub && git init -q && git config core.fsmonitor "echo PWNED"',
  'echo planted',
  '',
].join('\n');

describe('an untracked nested repository of yours in the main checkout (outside attack X30-02)', () => {
  // run-wave refuses a solo wave with an untracked path, so the agent is run directly (runAgent, as the integration
  // agent and the daemon's runs reach it): a writing agent in the main checkout, the real sandbox, a script backend.
  it.skipIf(!available)('is read-only to an agent that writes the checkout: its .git/config, hooks and work tree cannot be written (git status shows it as one entry and never looks inside)', async () => {
    const { repo, home } = await soloEscapeRepo();
    mkdirSync(repo.path('ref'));
    await runGit(['init', '-q'], { cwd: repo.path('ref'), env: repo.env });
    const config = readFileSync(repo.path('ref/.git/config'), 'utf8');
    // (base64 and eval, as an attacker does: the static check refuses a .git path on the command line; the sandbox is the boundary)
    const attempt = "const fs=require('fs');for(const f of ['ref/.git/config','ref/.git/hooks/post-checkout','ref/evil.test.js']){try{fs.appendFileSync(f,'x');console.log(f+': WRITTEN')}catch(e){console.log(f+': '+e.code)}}";
    const scriptPath = path.join(realpathSync(mkdtempSync(path.join(os.tmpdir(), 'pw-x30-02-'))), 'script.json');
    writeFileSync(scriptPath, JSON.stringify({ version: 1, agents: { A: { steps: [{ bash: `node -e "eval(Buffer.from('${Buffer.from(attempt).toString('base64')}','base64').toString())"` }] } } }));
    const { runAgent } = await import('../src/agents/run-agent.js');
    const outputs: string[] = [];
    const result = await runAgent({ agentId: 'A', role: 'wave', wave: 1, model: `script:${scriptPath}`, systemPrompt: 'x', prompt: 'x', cwd: repo.dir, policy: { root: repo.dir, ownedFiles: ['src/a.ts'] }, limits: { maxTurns: 10, toolTimeoutMs: 30_000 }, env: { ...(repo.env as Record<string, string>), HOME: home }, onEvent: (event) => void (event.type === 'tool-call-end' && outputs.push(event.output)) });
    expect(result.sandbox, 'sandboxed').toBeDefined();
    const output = outputs.join('\n');
    expect(output, output).toMatch(/^ref\/\.git\/config: (EROFS|EACCES|EPERM)$/m);
    expect(output, output).toMatch(/^ref\/evil\.test\.js: (EROFS|EACCES|EPERM)$/m);
    expect(readFileSync(repo.path('ref/.git/config'), 'utf8')).toBe(config);
    expect(existsSync(repo.path('ref/.git/hooks/post-checkout'))).toBe(false);
    expect(existsSync(repo.path('ref/evil.test.js'))).toBe(false);
  }, 180_000);
});

describe('a FIFO where git reads, made by an agent that writes the main checkout (outside attack X30-13)', () => {
  it.skipIf(!available)('never holds the run: the bash audit times out (fails closed), the FIFO is moved out before any listing at the stop, the run ends', async () => {
    const { repo, home } = await soloEscapeRepo();
    const scriptPath = path.join(realpathSync(mkdtempSync(path.join(os.tmpdir(), 'pw-x30-13-'))), 'script.json');
    writeFileSync(scriptPath, JSON.stringify({ version: 1, agents: { A: { steps: [{ bash: 'mkdir -p tools && mkfifo tools/.gitignore && echo made' }] } } }));
    const { runAgent } = await import('../src/agents/run-agent.js');
    process.env.POLYWAVE_GIT_STATUS_TIMEOUT_MS = '3000';
    try {
      const started = performance.now();
      const result = await runAgent({ agentId: 'A', role: 'wave', wave: 1, model: `script:${scriptPath}`, systemPrompt: 'x', prompt: 'x', cwd: repo.dir, policy: { root: repo.dir, ownedFiles: ['src/a.ts'] }, limits: { maxTurns: 10, toolTimeoutMs: 30_000 }, env: { ...(repo.env as Record<string, string>), HOME: home } });
      expect(performance.now() - started).toBeLessThan(60_000);
      expect(existsSync(repo.path('tools/.gitignore'))).toBe(false);
      expect(result.outcome.denials.some((denial) => denial.code === 'SANDBOX_SOLO_LEFTOVER_QUARANTINED' && denial.target === 'tools/.gitignore')).toBe(true);
      // and your own git in the checkout answers again
      expect(spawnSync('git', ['status', '--porcelain'], { cwd: repo.dir, timeout: 10_000 }).status).toBe(0);
    } finally {
      delete process.env.POLYWAVE_GIT_STATUS_TIMEOUT_MS;
    }
  }, 180_000);
});

describe('a repository nested in the main checkout (X13 #1, #2, #6)', () => {
  it.skipIf(!available)('a solo agent\'s new .git is moved out and blocks the wave; a nested repository is refused as the plan\'s', async () => {
    const { repo, home } = await soloEscapeRepo();
    const steps = [
      { write: { path: 'src/a.ts', content: plant } },
      { bash: 'sh src/a.ts' },
      { write: { path: 'src/a.ts', content: "export const a = 'a';\n" } },
      { commit: 'feat(A): a' },
      { report: { status: 'complete', verification: 'PASS', notes: 'done' } },
    ];
    const scriptPath = path.join(realpathSync(mkdtempSync(path.join(os.tmpdir(), 'pw-s7-'))), 'script.json');
    writeFileSync(scriptPath, JSON.stringify({ version: 1, agents: { A: { steps } } }));
    const env: Record<string, string> = { ...(repo.env as Record<string, string>), HOME: home };
    const impl = repo.path('docs/IMPL/IMPL-solo.yaml');
    const wave = await runCliInProcess(['run-wave', impl, '--wave', '1', '--model', `script:${scriptPath}`, '--skip-critic', '--timeout', '120'], { cwd: repo.dir, env });
    expect(wave.code, wave.stderr).toBe(1);
    expect(wave.stderr).toContain('BLOCKED');
    expect(wave.stdout + wave.stderr).toContain('docs/.git');
    // Both repositories are out of the checkout, kept in the quarantine; recorded as denials.
    expect(existsSync(repo.path('docs/.git'))).toBe(false);
    expect(existsSync(repo.path('lib/sub/.git'))).toBe(false);
    const quarantine = repo.path('.git/polywave/quarantine');
    const batches = readdirSync(quarantine).filter((name) => name.endsWith('-nested'));
    expect(batches.length).toBeGreaterThan(0);
    expect(existsSync(path.join(quarantine, batches[0]!, 'docs/.git/config.quarantined'))).toBe(true);
    const denials = readFileSync(findFile(repo.path('.polywave-state'), 'denials.jsonl')!, 'utf8');
    const targets = denials.trim().split('\n').map((line) => JSON.parse(line) as { code: string; target?: string }).filter((record) => record.code === 'SANDBOX_NESTED_REPO_QUARANTINED').map((record) => record.target);
    expect(new Set(targets)).toEqual(new Set(['docs/.git', 'lib/sub/.git']));

    // The s9/s2 shape made by hand (as an agent's leftover would be): refused, nothing changed.
    await runGit(['init', '-q'], { cwd: repo.path('docs'), env: repo.env });
    writeFileSync(repo.path('docs/polywave.config.json'), '{"dispatch":{"url":"redis://127.0.0.1:1"}}\n');
    await runGit(['add', 'polywave.config.json'], { cwd: repo.path('docs'), env: repo.env });
    await runGit(['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'c'], { cwd: repo.path('docs'), env: repo.env });
    const manifestBefore = readFileSync(impl, 'utf8');
    const head = await repo.run(['rev-parse', 'HEAD']);
    for (const command of [['prepare-wave', impl, '--wave', '2'], ['run-wave', impl, '--wave', '2', '--model', `script:${scriptPath}`, '--skip-critic']]) {
      const refused = await runCliInProcess(command, { cwd: repo.dir, env });
      expect(refused.code, `${command[0]}: ${refused.stderr}`).toBe(2);
      expect(refused.stderr).toMatch(/error\[NESTED_REPOSITORY\]: .*docs is a git repository nested in the work tree of .*tracks files under docs\//);
    }
    expect(readFileSync(impl, 'utf8')).toBe(manifestBefore);
    expect(await repo.run(['rev-parse', 'HEAD'])).toBe(head);
    // The trusted config is the outer repository's, never the nested one's.
    expect((await repositoryOf(repo.path('docs/IMPL')))?.toplevel).toBe(realpathSync(repo.dir));
    // A new untracked directory holding a repository: refused too.
    mkdirSync(repo.path('other'));
    await runGit(['init', '-q'], { cwd: repo.path('other'), env: repo.env });
    await expect(assertNotNestedRepository(repo.path('other'), repo.env)).rejects.toMatchObject({ code: 'NESTED_REPOSITORY', message: expect.stringContaining('untracked') as unknown });

    // Unaffected: the repository itself, a repository in an ignored directory, a registered submodule.
    await expect(assertNotNestedRepository(repo.dir, repo.env)).resolves.toBeUndefined();
    writeFileSync(repo.path('.git/info/exclude'), 'other/\n');
    await expect(assertNotNestedRepository(repo.path('other'), repo.env)).resolves.toBeUndefined();
    const upstream = repo.sibling('upstream');
    mkdirSync(upstream);
    await runGit(['init', '-q'], { cwd: upstream, env: repo.env });
    await runGit(['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '--allow-empty', '-m', 'u'], { cwd: upstream, env: repo.env });
    await runGit(['-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', upstream, 'vendor/lib'], { cwd: repo.dir, env: repo.env });
    await expect(assertNotNestedRepository(repo.path('vendor/lib'), repo.env)).resolves.toBeUndefined();
  }, 240_000);
});
