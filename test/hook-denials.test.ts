import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentOfWorktree } from '../src/engine/jail-denials.js';
import { binPath, repoRoot, runCli } from './support/cli.js';
import { createTestRepo } from './support/git-repo.js';

// Issue 13, outside attack F2: a write the Claude Code plugin's PreToolUse hook refuses
// (`polywave hook pre-tool-use`, the in-session /polywave flow) was printed as `deny` but never
// recorded, so agent-status showed nothing and `finalize-wave --strict-ownership` merged. Now the
// hook appends it to the agent's denials store (the one run-agent fills); an agent cannot write
// into another agent's store or erase its own; a store that cannot be written never turns the
// deny into an allow. Also: a solo wave's finalize has check-jail-denials, and run-wave passes
// --strict-ownership through.

const twoAgents = [
  'title: Two files',
  'feature_slug: two',
  'verdict: SUITABLE',
  'test_command: "true"',
  'lint_command: "true"',
  'file_ownership:',
  '    - {file: src/a.ts, agent: A, wave: 1, action: new}',
  '    - {file: src/b.ts, agent: B, wave: 1, action: new}',
  'interface_contracts: []',
  'waves:',
  '    - number: 1',
  '      agents:',
  '        - {id: A, task: Create src/a.ts., files: [src/a.ts]}',
  '        - {id: B, task: Create src/b.ts., files: [src/b.ts]}',
  'quality_gates:',
  '    level: standard',
  '    gates:',
  '        - {type: test, command: "true", required: true}',
  'state: WAVE_PENDING',
  'injection_method: manual-fallback',
  '',
].join('\n');

const hookScript = path.join(repoRoot, 'claude-plugin', 'hooks', 'polywave-hook.sh');

/** The plugin's own launcher (hooks.json → polywave-hook.sh → `polywave hook pre-tool-use`), a real payload on stdin. */
function preToolUse(payload: Record<string, unknown>, env: Record<string, string>) {
  const ran = spawnSync('sh', [hookScript, 'pre-tool-use'], { input: JSON.stringify({ session_id: 's', hook_event_name: 'PreToolUse', agent_type: 'polywave-wave-agent', ...payload }), encoding: 'utf8', env: { ...process.env, ...env, POLYWAVE_BIN: binPath, POLYWAVE_RESIDENT: '0' }, cwd: typeof payload.cwd === 'string' ? payload.cwd : undefined });
  const output = ran.stdout.trim() === '' ? undefined : (JSON.parse(ran.stdout) as { hookSpecificOutput?: { permissionDecision?: string } });
  return { code: ran.status, decision: output?.hookSpecificOutput?.permissionDecision ?? 'pass', stderr: ran.stderr };
}

function records(file: string): Array<Record<string, unknown>> {
  return readFileSync(file, 'utf8').trim().split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('refusals of the plugin hook are recorded for the agent they judged', () => {
  it('the attacker repro: recorded, not forgeable or erasable, shown by agent-status, blocking finalize-wave --strict-ownership', async () => {
    const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-two.yaml': twoAgents, 'src/base.ts': 'export const x = 1;\n' } });
    const env = repo.env as Record<string, string>;
    const implPath = repo.path('docs/IMPL/IMPL-two.yaml');
    const prepared = await runCli(['prepare-wave', implPath, '--wave', '1'], { cwd: repo.dir, env, timeoutMs: 120_000 });
    expect(prepared.code, prepared.stderr.slice(-2000)).toBe(0);
    const worktrees = (JSON.parse(prepared.stdout) as { worktrees: Array<{ agent: string; path: string }> }).worktrees;
    const wtA = worktrees.find((entry) => entry.agent === 'A')!.path;
    const wtB = worktrees.find((entry) => entry.agent === 'B')!.path;
    const storeA = repo.path('.polywave-state/two/wave1/agent-A/denials.jsonl');
    const storeB = repo.path('.polywave-state/two/wave1/agent-B/denials.jsonl');

    // Agent A, working in its worktree, writes B's file: denied and recorded under A.
    const moved = preToolUse({ cwd: wtA, tool_name: 'Write', tool_input: { file_path: path.join(wtA, 'src/b.ts'), content: 'export const moved = 1;' } }, env);
    expect(moved).toMatchObject({ code: 0, decision: 'deny' });
    expect(records(storeA)).toEqual([expect.objectContaining({ tool: 'Write', code: 'JAIL_NOT_OWNED', target: 'src/b.ts', source: 'hook', via: 'cwd', attempt: 1 })]);
    // An allowed write records nothing.
    expect(preToolUse({ cwd: wtA, tool_name: 'Write', tool_input: { file_path: path.join(wtA, 'src/a.ts'), content: 'export const a = 1;' } }, env).decision).toBe('pass');
    expect(records(storeA)).toHaveLength(1);

    // Forging into B's store and erasing A's own: both refused by the jail (outside A's worktree),
    // each refusal recorded under A; B's store is never created, A's keeps its record.
    const forged = `${JSON.stringify({ ts: 'x', attempt: 1, tool: 'Write', code: 'JAIL_NOT_OWNED', target: 'src/a.ts', reason: 'forged' })}\n`;
    expect(preToolUse({ cwd: wtA, tool_name: 'Write', tool_input: { file_path: storeB, content: forged } }, env).decision).toBe('deny');
    expect(preToolUse({ cwd: wtA, tool_name: 'Bash', tool_input: { command: `rm -f ${storeA}` } }, env).decision).toBe('deny');
    expect(existsSync(storeB)).toBe(false);
    const ownRecords = records(storeA);
    expect(ownRecords).toHaveLength(3);
    expect(ownRecords.slice(1).map((record) => record.code)).toEqual(expect.arrayContaining(['JAIL_OUTSIDE_ROOT']));
    expect(ownRecords.every((record) => record.source === 'hook' && record.via === 'cwd')).toBe(true);

    // A store swapped for a symlink (to a file outside the repository) is not written through;
    // the call stays denied, the failure is a line on stderr.
    const outside = path.join(mkdtempSync(path.join(os.tmpdir(), 'pw-hook-denials-')), 'bashrc');
    writeFileSync(outside, 'keep\n');
    mkdirSync(path.dirname(storeB), { recursive: true });
    symlinkSync(outside, storeB);
    const throughLink = preToolUse({ cwd: wtB, tool_name: 'Write', tool_input: { file_path: path.join(wtB, 'src/a.ts'), content: 'x' } }, env);
    expect(throughLink.decision).toBe('deny');
    expect(throughLink.stderr).toContain('could not be recorded');
    expect(readFileSync(outside, 'utf8')).toBe('keep\n');
    rmSync(storeB);

    // Both agents finish and report complete, as in the repro.
    for (const [agent, worktree] of [['A', wtA], ['B', wtB]] as const) {
      const file = `src/${agent.toLowerCase()}.ts`;
      writeFileSync(path.join(worktree, file), `export const ${agent.toLowerCase()} = 1;\n`);
      await repo.run(['-C', worktree, 'add', file]);
      await repo.run(['-C', worktree, 'commit', '-qm', agent]);
      const reported = await runCli(['set-completion', implPath, '--agent', agent, '--status', 'complete', '--verification', 'PASS', '--files-created', file], { cwd: worktree, env });
      expect(reported.code, reported.stderr).toBe(0);
    }

    // The report filed from A's worktree carries the refused write (out_of_scope_deps); B's none.
    const reports = readFileSync(implPath, 'utf8');
    expect(reports).toMatch(/file: src\/b\.ts, change: write refused by the jail \(JAIL_NOT_OWNED\)/);
    expect(reports.match(/write refused by the jail/g)).toHaveLength(1);

    const status = await runCli(['agent-status', implPath, '--json'], { cwd: repo.dir, env });
    expect(status.code, status.stderr).toBe(0);
    expect((JSON.parse(status.stdout) as { refused_writes: unknown[] }).refused_writes).toEqual([expect.objectContaining({ agent: 'A', wave: 1, target: 'src/b.ts', code: 'JAIL_NOT_OWNED' })]);

    const head = (await repo.run(['rev-parse', 'HEAD'])).trim();
    const strict = await runCli(['finalize-wave', implPath, '--wave', '1', '--strict-ownership'], { cwd: repo.dir, env, timeoutMs: 300_000 });
    expect(strict.code, strict.stderr.slice(-2000)).toBe(1);
    const result = JSON.parse(strict.stdout) as { success: boolean; steps: Array<{ step: string; status: string; detail: string }> };
    expect(result.success).toBe(false);
    expect(result.steps.find((step) => step.step === 'check-jail-denials')).toMatchObject({ status: 'failed', detail: expect.stringContaining('agent A: src/b.ts (JAIL_NOT_OWNED)') });
    expect((await repo.run(['rev-parse', 'HEAD'])).trim()).toBe(head);
  }, 600_000);

  it('a solo wave run by run-wave --strict-ownership shows the refused write in check-jail-denials and is not verified', async () => {
    const solo = [
      'title: Solo',
      'feature_slug: solo',
      'verdict: SUITABLE',
      'state: WAVE_PENDING',
      'test_command: "true"',
      'file_ownership:',
      '    - {file: src/a.ts, agent: A, wave: 1, action: modify}',
      '    - {file: src/c.ts, agent: A, wave: 1, action: new}',
      'waves:',
      '    - number: 1',
      '      agents:',
      '        - {id: A, task: Move helper() from src/base.ts into src/a.ts., files: [src/a.ts, src/c.ts]}',
      '',
    ].join('\n');
    const script = [
      'version: 1',
      'agents:',
      '  A:',
      '    steps:',
      '      - write: { path: src/a.ts, content: "export const a = 1;\\nexport function helper() { return 1; }\\n" }',
      '      - write: { path: src/c.ts, content: "export const c = 1;\\n" }',
      '      - write: { path: src/base.ts, content: "export const x = 1;\\n" }',
      '      - commit: "feat(A): helper moved"',
      '      - report: { status: complete, verification: PASS }',
      '',
    ].join('\n');
    const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-solo.yaml': solo, 'src/a.ts': 'export const a = 1;\n', 'src/base.ts': 'export const x = 1;\nexport function helper() { return 1; }\n' } });
    const env = repo.env as Record<string, string>;
    const scriptPath = path.join(mkdtempSync(path.join(os.tmpdir(), 'pw-hook-denials-')), 'script.yaml');
    writeFileSync(scriptPath, script);
    const help = await runCli(['run-wave', '--help']);
    expect(help.stdout).toContain('--strict-ownership');

    const ran = await runCli(['run-wave', repo.path('docs/IMPL/IMPL-solo.yaml'), '--wave', '1', '--model', `script:${scriptPath}`, '--skip-critic', '--unsafe-no-sandbox', '--strict-ownership'], { cwd: repo.dir, env, timeoutMs: 300_000 });
    expect(ran.code, ran.stderr.slice(-2000)).not.toBe(0);
    const result = JSON.parse(ran.stdout) as { finalize?: { mode: string; steps: Array<{ step: string; status: string; detail: string }> } };
    expect(result.finalize?.mode).toBe('solo');
    expect(result.finalize?.steps.find((step) => step.step === 'check-jail-denials')).toMatchObject({ status: 'failed', detail: expect.stringContaining('agent A: src/base.ts (JAIL_NOT_OWNED)') });
    expect(result.finalize?.steps.map((step) => step.step)).not.toContain('mark-verified');
    expect(readFileSync(repo.path('docs/IMPL/IMPL-solo.yaml'), 'utf8')).toMatch(/^state: BLOCKED/m);
  }, 600_000);

  it('the agent is the one named by the E5 worktree path and its ownership record together, else nobody', () => {
    const same = (file: string) => file;
    const worktree = '/r/.claude/worktrees/polywave/two/wave1-agent-A';
    expect(agentOfWorktree(worktree, { agent: 'A', wave: 1, repo_root: '/r' }, same)).toEqual({ repoRoot: '/r', slug: 'two', wave: 1, agent: 'A' });
    // A record that disagrees with the path (another agent, wave or repository), none at all, or a path outside the layout: no attribution.
    expect(agentOfWorktree(worktree, { agent: 'B', wave: 1, repo_root: '/r' }, same)).toBeUndefined();
    expect(agentOfWorktree(worktree, { agent: 'A', wave: 2, repo_root: '/r' }, same)).toBeUndefined();
    expect(agentOfWorktree(worktree, { agent: 'A', wave: 1, repo_root: '/elsewhere' }, same)).toBeUndefined();
    expect(agentOfWorktree(worktree, undefined, same)).toBeUndefined();
    expect(agentOfWorktree('/r/.claude/worktrees/polywave/two/wave1-agent-A/sub', { agent: 'A', wave: 1, repo_root: '/r' }, same)).toBeUndefined();
    expect(agentOfWorktree('/r/worktrees/wave1-agent-A', { agent: 'A', wave: 1, repo_root: '/r' }, same)).toBeUndefined();
  });
});
