/**
 * REGRESSION (issue 11, outside attack X10 N3, N9/R4/R5, N6; helper S5): polywave.config.json trust.
 * - N3: a SOLO wave's agent owning polywave.config.json widened `sandbox.writable`; finalize had no
 *   wave base for solo waves ("check-config-change skipped"), so nothing pinned the settings and the
 *   wave was verified. Now prepare-agent --no-worktree records HEAD as the wave's base_commit: the
 *   change BLOCKs (SANDBOX_CONFIG_CHANGED), and the accepted finalize's verify-build runs with the
 *   base's (old) settings.
 * - N9: a BLOCKED change stayed live on main: the next plan's agents and gates ran with it. Now the
 *   block is recorded in `<git common dir>/polywave/`; prepare-wave/prepare-agent, verify-build and
 *   the dispatcher refuse (exit 1) and the sandbox settings are the accepted ones until
 *   `polywave accept-config` (or finalize-wave --accept-changes).
 * - N6: `dispatch` came from a nested (owned or untracked) `docs/.../polywave.config.json` found from
 *   the IMPL's directory upwards: the next run-wave connected to the agent's Redis. Now only the
 *   repository root's committed config sets the watched keys; a loopback listener records that no
 *   connection is attempted.
 * Real git, the real prepare/finalize pipelines in-process, the CLI for accept-config/verify-build.
 */
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { dispatcherFromConfig } from '../src/dispatch/from-config.js';
import { prepareAgent, prepareWave } from '../src/engine/prepare-wave.js';
import { readSandboxSettings, sandboxStatus } from '../src/sandbox/index.js';
import { loadTrustedConfig } from '../src/store/trusted-config.js';
import { runCliInProcess } from './support/cli-in-process.js';
import { createTestRepo } from './support/git-repo.js';
import { createWaveFixture, implYaml } from './support/wave-fixture.js';

const available = (await sandboxStatus()).available;

describe('polywave.config.json trust (X10)', () => {
  it('N3 + N9: a solo wave has a base, its widened config blocks, stays refused until accepted, and its gates ran with the old settings', async () => {
    // Another plan of the same repository, the user's next one (N9).
    const nextImpl = implYaml({ waves: [[{ id: 'C', files: ['src/c.ts'] }, { id: 'D', files: ['src/d.ts'] }]], state: 'WAVE_PENDING' }).replace('feature_slug: demo', 'feature_slug: next');
    const fixture = await createWaveFixture({ waves: [[{ id: 'A', files: ['polywave.config.json', 'test.sh', 'src/a.ts'] }], [{ id: 'B', files: ['src/b.ts'] }]], testCommand: 'sh test.sh' }, { 'docs/IMPL/IMPL-next.yaml': nextImpl });
    const nextPath = fixture.repo.path('docs/IMPL/IMPL-next.yaml');
    const { repo } = fixture;
    const home = repo.sibling('victim-home');
    mkdirSync(home);
    const bashrc = path.join(home, '.bashrc');
    writeFileSync(bashrc, 'echo original\n');
    const head = await fixture.head();

    // The solo agent is prepared: HEAD is recorded as the wave's base.
    const prepared = await prepareAgent({ implPath: fixture.implPath, wave: 1, agent: 'A', noWorktree: true, env: repo.env, gitAt: fixture.gitAt });
    expect(prepared.success, JSON.stringify(prepared.steps)).toBe(true);
    expect(prepared.steps.find((step) => step.step === 'solo_base')?.status).toBe('success');
    expect(fixture.manifest().waves[0]?.base_commit).toBe(head);

    // The agent commits in the main checkout: a config widening the sandbox and a test writing the home.
    repo.write('polywave.config.json', `${JSON.stringify({ sandbox: { writable: [home] } })}\n`);
    repo.write('test.sh', `echo "echo PWNED-X10" >> ${JSON.stringify(bashrc)} 2>/dev/null && echo wrote-bashrc || echo bashrc-denied\nexit 0\n`);
    repo.write('src/a.ts', "export const a = 'a';\n");
    await repo.run(['add', 'polywave.config.json', 'test.sh', 'src/a.ts']);
    await repo.run(['commit', '-qm', 'feat(A): a']);
    const commit = await fixture.head();
    await fixture.report('A', { status: 'complete', commit, branch: 'main', worktree: repo.dir, files_created: ['polywave.config.json', 'test.sh', 'src/a.ts'], files_changed: [], verification: 'PASS' });

    const blocked = await fixture.finalize(1);
    expect(blocked.success).toBe(false);
    expect(blocked.failed_step?.step, JSON.stringify(blocked.steps)).toBe('check-config-change');
    expect(blocked.failed_step?.detail).toContain(`SANDBOX_CONFIG_CHANGED: polywave.config.json changed since the wave base ${head.slice(0, 12)} in sandbox.writable (+ ${home})`);
    expect(existsSync(repo.path('.git/polywave/config-block.json'))).toBe(true);

    // N9: while blocked, the sandbox settings are the accepted ones, and every later command refuses.
    expect((await readSandboxSettings(repo.dir)).writable ?? []).not.toContain(home);
    const next = await prepareWave({ implPath: nextPath, wave: 1, env: repo.env, gitAt: fixture.gitAt, commitState: true });
    expect(next.success).toBe(false);
    const refusal = next.steps.find((step) => step.step === 'config_trust');
    expect(refusal?.status).toBe('failed');
    expect(refusal?.detail).toContain('SANDBOX_CONFIG_CHANGED: prepare-wave:');
    expect(refusal?.detail).toContain('IMPL-demo.yaml wave 1');
    expect(refusal?.detail).toContain('polywave accept-config');
    expect(next.steps.some((step) => step.step === 'working_dir_check')).toBe(false);
    expect(await fixture.head()).toBe(commit); // nothing committed (not the blocked IMPL's state either)
    const solo = await prepareAgent({ implPath: nextPath, wave: 1, agent: 'C', noWorktree: true, env: repo.env, gitAt: fixture.gitAt });
    expect(solo.success).toBe(false);
    expect(solo.steps.find((step) => step.step === 'config_trust')?.detail).toContain('SANDBOX_CONFIG_CHANGED: prepare-agent:');
    expect(readFileSync(nextPath, 'utf8')).not.toContain('base_commit'); // refused before its base was recorded
    await expect(dispatcherFromConfig({}, { startDir: path.dirname(fixture.implPath), env: repo.env })).rejects.toMatchObject({ code: 'SANDBOX_CONFIG_CHANGED', exitCode: 1 });
    const verify = await runCliInProcess(['verify-build', fixture.implPath], { cwd: repo.dir, env: repo.env as Record<string, string> });
    expect(verify.code).toBe(1);
    expect(verify.stderr).toMatch(/^polywave: error\[SANDBOX_CONFIG_CHANGED\]: verify-build: .*polywave\.config\.json at HEAD changes sandbox\.writable/);
    // --check shows each changed key's committed value before and now (text; --json the same), accepts nothing.
    const check = await runCliInProcess(['accept-config', '--check', '--json', '--repo-dir', repo.dir], { cwd: repo.dir, env: repo.env as Record<string, string> });
    expect(check.code, check.stderr).toBe(1);
    expect(JSON.parse(check.stdout)).toMatchObject({ blocked: true, wave: 1, accepted_before: head, values: [{ key: 'sandbox', now: { writable: [home] } }] });
    const checkText = await runCliInProcess(['accept-config', '--check', '--repo-dir', repo.dir], { cwd: repo.dir, env: repo.env as Record<string, string> });
    expect(checkText.code, checkText.stderr).toBe(1);
    expect(checkText.stdout).toContain(`  sandbox:\n    before: (not set)\n    now:    ${JSON.stringify({ writable: [home] })}\n`);

    // The human accepts: the record goes, commands run again.
    const accept = await runCliInProcess(['accept-config', '--json', '--repo-dir', repo.dir], { cwd: repo.dir, env: repo.env as Record<string, string> });
    expect(accept.code, accept.stderr).toBe(0);
    expect(JSON.parse(accept.stdout)).toMatchObject({ accepted: true, changes: [`sandbox.writable (+ ${home})`], values: [{ key: 'sandbox', now: { writable: [home] } }] });
    expect(existsSync(repo.path('.git/polywave/config-block.json'))).toBe(false);
    expect((await runCliInProcess(['accept-config', '--check', '--repo-dir', repo.dir], { cwd: repo.dir, env: repo.env as Record<string, string> })).code).toBe(0);

    // N3: the solo wave's own finalize, re-run (accepted with accept-config: no --accept-changes needed),
    // still runs its test with the base's settings.
    const finished = await fixture.finalize(1);
    const change = finished.steps.find((step) => step.step === 'check-config-change');
    expect(change?.status, JSON.stringify(finished.steps)).toBe('warning');
    expect(change?.detail).toContain('accepted with polywave accept-config');
    if (available) expect(finished.verify_build['.']?.test_output ?? '', JSON.stringify(finished.steps)).toContain('bashrc-denied');
    expect(readFileSync(bashrc, 'utf8')).toBe('echo original\n');
    expect(existsSync(repo.path('.git/polywave/config-block.json'))).toBe(false);
    const after = await prepareAgent({ implPath: nextPath, wave: 1, agent: 'C', noWorktree: true, env: repo.env, gitAt: fixture.gitAt });
    expect(after.steps.find((step) => step.step === 'config_trust')?.status, JSON.stringify(after.steps)).toBe('success');
  }, 120_000);

  // Outside attack P13-03: a PROGRAM's IMPL wave merges into its IMPL branch, checked out in its own worktree; a blocked
  // config change lives there, not at HEAD — accept-config said "no longer at HEAD (reverted)", dropped the record, and
  // the re-run blocked again for ever. The record names the branch; --check and the acceptance read it there.
  it('P13-03: a change blocked on a --merge-target branch checked out elsewhere is shown and accepted there; the re-run merges', async () => {
    const fixture = await createWaveFixture({ waves: [[{ id: 'A', files: ['polywave.config.json', 'src/a.ts'] }, { id: 'B', files: ['src/b.ts'] }]] });
    const { repo } = fixture;
    const implWorktree = repo.sibling('impl-branch-config');
    await repo.run(['worktree', 'add', '-q', '-b', 'feature', implWorktree, 'HEAD']);
    const prepared = await prepareWave({ implPath: fixture.implPath, wave: 1, env: repo.env, gitAt: fixture.gitAt, mergeTarget: 'feature' });
    expect(prepared.success, JSON.stringify(prepared.steps.find((item) => item.status === 'failed'))).toBe(true);
    await fixture.complete('A', { 'polywave.config.json': `${JSON.stringify({ sandbox: { network: { allow: ['registry.example.com'] } } })}\n`, 'src/a.ts': 'export const a = 1;\n' });
    await fixture.complete('B', { 'src/b.ts': 'export const b = 1;\n' });
    const blocked = await fixture.finalize(1, { mergeTarget: 'feature' });
    expect(blocked.success).toBe(false);
    expect(blocked.failed_step?.detail, JSON.stringify(blocked.failed_step)).toContain('SANDBOX_CONFIG_CHANGED');
    expect(JSON.parse(readFileSync(repo.path('.git/polywave/config-block.json'), 'utf8'))).toMatchObject({ target_branch: 'feature' });
    const cli = (args: string[]) => runCliInProcess(args, { cwd: repo.dir, env: repo.env as Record<string, string> });
    const check = await cli(['accept-config', '--check', '--json']);
    expect(check.code, check.stdout).toBe(1);
    expect(JSON.parse(check.stdout)).toMatchObject({ blocked: true, wave: 1 });
    const accept = await cli(['accept-config', '--json']);
    expect(accept.code, accept.stderr).toBe(0);
    expect(JSON.parse(accept.stdout)).toMatchObject({ accepted: true });
    const finished = await fixture.finalize(1, { mergeTarget: 'feature' });
    expect(finished.success, JSON.stringify(finished.steps.filter((step) => step.status === 'failed'))).toBe(true);
    expect(finished.steps.find((step) => step.step === 'check-config-change')?.detail).toContain('accepted with polywave accept-config');
  }, 120_000);

  it('N6: a nested (committed or untracked) config never sets dispatch or sandbox; only the root committed one does', async () => {
    const connections: string[] = [];
    const server: Server = createServer((socket) => {
      connections.push(String(socket.remotePort));
      socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    try {
      const nested = `${JSON.stringify({ dispatch: { url: `redis://127.0.0.1:${port}`, remote: 'file:///tmp/exfil.git' }, sandbox: { writable: ['/tmp/nested-widened'] } })}\n`;
      const repo = await createTestRepo({ files: { 'polywave.config.json': `${JSON.stringify({ sandbox: { network: { allow: [] } } })}\n`, 'docs/polywave.config.json': nested, 'docs/IMPL/README.md': 'x\n' } });
      // An untracked one even nearer to the IMPL (a solo agent's leftover).
      writeFileSync(repo.path('docs/IMPL/polywave.config.json'), nested);
      const warnings: string[] = [];
      const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
        warnings.push(String(chunk));
        return true;
      });
      let dispatcher;
      try {
        dispatcher = await dispatcherFromConfig({}, { startDir: repo.path('docs/IMPL'), env: repo.env });
      } finally {
        spy.mockRestore();
      }
      expect(dispatcher).toBeUndefined();
      expect(warnings.join('')).toContain(`${repo.path('docs/IMPL/polywave.config.json')}: ignored for sandbox, dispatch — only the repository root's committed polywave.config.json sets them`);
      expect((await readSandboxSettings(repo.path('docs/IMPL'))).writable ?? []).not.toContain('/tmp/nested-widened');
      const trusted = await loadTrustedConfig(repo.path('docs/IMPL'));
      expect(trusted.path).toBe(repo.path('polywave.config.json'));
      // The working tree's root config is not trusted either: HEAD's is.
      repo.write('polywave.config.json', nested);
      expect((await loadTrustedConfig(repo.dir)).config?.dispatch).toBeUndefined();
      await repo.run(['add', 'polywave.config.json']);
      await repo.run(['commit', '-qm', 'dispatch, by a human']);
      expect((await loadTrustedConfig(repo.path('docs/IMPL'))).config?.dispatch?.url).toBe(`redis://127.0.0.1:${port}`);
      expect(connections).toEqual([]);
    } finally {
      server.close();
    }
  }, 60_000);
});
