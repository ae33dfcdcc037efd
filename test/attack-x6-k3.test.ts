import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createJail } from '../src/agents/jail/jail.js';
import { ownershipDenials } from '../src/engine/jail-denials.js';
import { prepareWave } from '../src/engine/prepare-wave.js';
import { runPolywave } from './support/closing-fixture.js';
import { createWaveFixture, implRelative } from './support/wave-fixture.js';

/** The Go reference binary, a comparison tool (its part of a test is skipped where it is absent). */
const goBinary = path.resolve(import.meta.dirname, '..', '..', 'shared', 'tools', 'polywave-tools-go');

// Outside attack X6 (issue 13), findings N6–N9. Real repositories, real processes.

const spec = { waves: [[{ id: 'A', files: ['src/a.ts'] }, { id: 'B', files: ['src/b.ts'] }]], testCommand: 'true', lintCommand: 'true' };

describe('N6: prepare-wave --commit-baseline leaves secret-bearing untracked files out by name AND by content', () => {
  it("the attacker's names and content-only secrets stay out of the baseline commit; ordinary new files go in", async () => {
    const fixture = await createWaveFixture(spec);
    fixture.repo.write('src/base.ts', 'export const base = 2;\n');
    const byName = ['.dev.vars', 'api_key.json', 'docker-config.json', 'kubeconfig', 'terraform.tfvars', 'token.txt'];
    for (const file of byName) fixture.repo.write(file, 'TOKEN=abc\n');
    // Names no list knows: only the content says secret.
    const byContent: Record<string, string> = {
      'deploy/bootstrap': '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\n',
      'notes/setup.md': 'use ghp_abcdefghijklmnopqrstuvwxyz0123 for the CI\n',
      'config/app.toml': 'db = "postgres://app:hunter2@db.internal/app"\n',
      'config/local.yml': 'service:\n  password: hunter2\n',
      'wrangler.vars': 'API_KEY=abc123\n',
    };
    for (const [file, text] of Object.entries(byContent)) fixture.repo.write(file, text);
    fixture.repo.write('src/new.ts', 'export const token = getToken();\n');
    fixture.repo.write('locales/en.json', '{"password": "Password", "forgotPassword": "Forgot password?"}\n');
    const head = await fixture.head();
    const result = await prepareWave({ implPath: fixture.implPath, wave: 1, env: fixture.repo.env, gitAt: fixture.gitAt, commitBaseline: true });
    expect(result.success, JSON.stringify(result.steps.find((step) => step.status === 'failed'))).toBe(true);
    const inBaseline = (await fixture.repo.run(['diff', '--name-only', head, 'HEAD'])).split('\n').filter((file) => file !== '');
    expect(inBaseline).toEqual(expect.arrayContaining(['src/base.ts', 'src/new.ts', 'locales/en.json']));
    expect(inBaseline.filter((file) => byName.includes(file) || file in byContent)).toEqual([]);
    const leftOut = (result.steps.find((step) => step.step === 'working_dir_check')?.data as { left_out: Array<{ file: string; reason: string }> }).left_out;
    expect(leftOut.filter((item) => item.reason === 'secret-looking').map((item) => item.file).sort()).toEqual([...byName].sort());
    expect(leftOut.filter((item) => item.reason === 'secret-content').map((item) => item.file).sort()).toEqual(Object.keys(byContent).sort());
    // Kept on disk, out of git's sight (info/exclude).
    expect(readFileSync(fixture.repo.path('wrangler.vars'), 'utf8')).toBe('API_KEY=abc123\n');
    expect((await fixture.repo.git.status()).filter((entry) => !entry.path.startsWith('docs/IMPL/'))).toEqual([]);
  });
});

describe("N8: predict-conflicts' conflicts_detected is Go's number", () => {
  it('A and B both edit src/base.ts: conflicts_detected counts the conflicts (as Go); blocking_findings counts everything; exit 1', async () => {
    const fixture = await createWaveFixture(spec);
    await fixture.startWave(1);
    await fixture.complete('A', { 'src/a.ts': 'export const a = 1;\n', 'src/base.ts': 'export const base = "A";\n' }, { created: ['src/a.ts', 'src/base.ts'] });
    await fixture.complete('B', { 'src/b.ts': 'export const b = 1;\n', 'src/base.ts': 'export const base = "B";\n' }, { created: ['src/b.ts', 'src/base.ts'] });
    const ours = await runPolywave(['predict-conflicts', implRelative, '--wave', '1'], { cwd: fixture.repo.dir, env: fixture.repo.env });
    expect(ours.code, ours.stderr).toBe(1);
    const parsed = JSON.parse(ours.stdout) as { conflicts_detected: number; blocking_findings: number; conflicts: unknown[]; undeclared_modifications: unknown[]; textual_conflicts: unknown[] };
    expect(parsed.conflicts).toEqual([{ file: 'src/base.ts', agents: ['A', 'B'] }]);
    expect(parsed.conflicts_detected).toBe(1);
    expect(parsed.blocking_findings).toBe(1 + parsed.undeclared_modifications.length + parsed.textual_conflicts.length);
    expect(parsed.blocking_findings).toBeGreaterThan(1);
    if (existsSync(goBinary)) {
      const go = spawnSync(goBinary, ['predict-conflicts', implRelative, '--wave', '1'], { cwd: fixture.repo.dir, env: fixture.repo.env as NodeJS.ProcessEnv, encoding: 'utf8', timeout: 60_000 });
      expect(go.status).toBe(1);
      expect((JSON.parse(go.stdout) as { conflicts_detected: number }).conflicts_detected).toBe(parsed.conflicts_detected);
    }
  });
});

describe('N9: refused writes the merge lacks are counted whatever the code, and a Bash refusal names its file', () => {
  it("a MultiEdit of ../base.ts from a subdirectory (JAIL_OUTSIDE_ROOT) and a Bash redirection into B's file reach out_of_scope_deps and --strict-ownership, by file", async () => {
    const fixture = await createWaveFixture(spec);
    const prepared = await prepareWave({ implPath: fixture.implPath, wave: 1, env: fixture.repo.env, gitAt: fixture.gitAt });
    expect(prepared.success, JSON.stringify(prepared.steps.find((step) => step.status === 'failed'))).toBe(true);
    const wtA = fixture.worktree('A');
    mkdirSync(path.join(wtA, 'src', 'sub'), { recursive: true });
    const hook = async (cwd: string, tool: string, input: Record<string, unknown>) => {
      const ran = await runPolywave(['hook', 'pre-tool-use'], { cwd, env: fixture.repo.env, input: JSON.stringify({ session_id: 's', hook_event_name: 'PreToolUse', cwd, tool_name: tool, tool_input: input }) });
      return (JSON.parse(ran.stdout) as { hookSpecificOutput?: { permissionDecision?: string } }).hookSpecificOutput?.permissionDecision;
    };
    expect(await hook(path.join(wtA, 'src', 'sub'), 'MultiEdit', { file_path: '../base.ts', edits: [{ old_string: '1', new_string: '3' }] })).toBe('deny');
    expect(await hook(wtA, 'Bash', { command: 'echo moved > src/b.ts' })).toBe('deny');
    // A read refused outside the root is no lost write.
    expect(await hook(wtA, 'Write', { file_path: '/etc/x.ts', content: 'x' })).toBe('deny');
    const store = readFileSync(fixture.repo.path('.polywave-state/demo/wave1/agent-A/denials.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { tool: string; code: string; target?: string });
    expect(store.map((record) => [record.tool, record.code, record.target])).toEqual([
      ['MultiEdit', 'JAIL_OUTSIDE_ROOT', 'src/base.ts'],
      ['Bash', 'JAIL_NOT_OWNED', 'src/b.ts'],
      ['Write', 'JAIL_OUTSIDE_ROOT', '/etc/x.ts'],
    ]);

    await fixture.work('A', { 'src/a.ts': 'export const a = 1;\n' });
    await fixture.work('B', { 'src/b.ts': 'export const b = 1;\n' });
    const reported = await runPolywave(['set-completion', fixture.implPath, '--agent', 'A', '--status', 'complete', '--verification', 'PASS', '--files-created', 'src/a.ts', '--out-of-scope-deps', ''], { cwd: wtA, env: fixture.repo.env });
    expect(reported.code, reported.stderr).toBe(0);
    const deps = (fixture.manifest().completion_reports?.A as { out_of_scope_deps?: string[] }).out_of_scope_deps ?? [];
    expect(deps).toEqual([expect.stringMatching(/^file: src\/base\.ts, .*JAIL_OUTSIDE_ROOT/), expect.stringMatching(/^file: src\/b\.ts, .*JAIL_NOT_OWNED/)]);
    await fixture.complete('B', { 'src/b.ts': 'export const b = 1;\n' });
    const strict = await fixture.finalize(1, { strictOwnership: true });
    const step = strict.steps.find((item) => item.step === 'check-jail-denials');
    expect(step?.status).toBe('failed');
    expect(step?.detail).toContain('agent A: src/base.ts (JAIL_OUTSIDE_ROOT), src/b.ts (JAIL_NOT_OWNED)');
    // A Bash record stored before the jail passed its target on: the file comes from the reason.
    const old = { ts: '', attempt: 1, tool: 'Bash', code: 'JAIL_NOT_OWNED', reason: 'bash: "echo moved > src/d.ts" would write "src/d.ts": "src/d.ts" is not owned by this agent, which may write only its own files' };
    expect(ownershipDenials([old]).map((record) => record.target)).toEqual(['src/d.ts']);
    // The jail's Bash refusal carries the file (run-agent's bash tool records it as the target too).
    const jail = await createJail({ root: wtA, ownedFiles: ['src/a.ts'] });
    expect(await jail.checkBash('printf x >> src/b.ts')).toMatchObject({ allowed: false, code: 'JAIL_NOT_OWNED', target: 'src/b.ts' });
  });
});
