import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { main } from '../src/cli/main.js';
import type { CommandIo } from '../src/cli/io.js';
import { parseProgram } from '../src/protocol/parse-program.js';
import { validateProgram } from '../src/protocol/program/validate-program.js';
import type { CliResult } from './support/cli.js';
import { expectCodedError, parseStdoutJson } from './support/cli-assert.js';
import { createTestRepo, type TestRepo } from './support/git-repo.js';

// The PROGRAM commands of issue 12 on real temporary git repositories, run in-process through the
// CLI's main (stdout JSON, stderr one coded line, exit codes 0/1/2).

async function cli(repo: TestRepo, args: string[]): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const io: CommandIo = {
    cwd: repo.dir,
    env: { ...repo.env, HOME: repo.root },
    now: () => new Date(2026, 0, 2, 12),
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    readStdin: async () => '',
  };
  const started = performance.now();
  const code = await main(args, io);
  return { code, stdout, stderr, durationMs: performance.now() - started };
}

function implDoc(slug: string, state: string, files: string[], waves = 1): string {
  return [
    `title: ${slug[0]!.toUpperCase()}${slug.slice(1)}`,
    `feature_slug: ${slug}`,
    'verdict: SUITABLE',
    'test_command: "true"',
    'lint_command: "true"',
    `state: ${state}`,
    'file_ownership:',
    ...files.map((file) => `  - {file: ${file}, agent: A, wave: 1, action: new}`),
    'waves:',
    ...Array.from({ length: waves }, (_, index) => `  - number: ${index + 1}\n    agents:\n      - {id: A, task: t, files: [${files.join(', ')}]}`),
    '',
  ].join('\n');
}

const implFiles: Record<string, string> = {
  'docs/IMPL/IMPL-alpha.yaml': implDoc('alpha', 'REVIEWED', ['src/a.ts', 'src/shared.ts']),
  'docs/IMPL/IMPL-beta.yaml': implDoc('beta', 'COMPLETE', ['src/b.ts', 'src/shared.ts'], 2),
  'docs/IMPL/IMPL-gamma.yaml': implDoc('gamma', 'WAVE_PENDING', ['src/c.ts']),
};

const programText = (state: string, statuses: Record<string, string> = {}) => `# PROGRAM: suite — hand-written, comments must survive
title: Suite
program_slug: suite
state: ${state}  # the current phase
program_contracts:
  - name: Session
    definition: "export interface Session { id: string }"
    location: src/session.ts
    freeze_at: "Tier 1 completion"
  - name: Api
    definition: "export type Api = () => void"
    location: src/api.ts
    freeze_at: gamma
  - name: Later
    definition: "x"
    location: src/later.ts
    freeze_at: tier-2
impls:
  - slug: alpha
    title: Alpha
    tier: 1
    status: ${statuses.alpha ?? 'reviewed'}  # set by hand
  - slug: gamma
    title: Gamma
    tier: 1
    status: ${statuses.gamma ?? 'executing'}
  - slug: beta
    title: Beta
    tier: 2
    depends_on: [alpha]
    status: ${statuses.beta ?? 'complete'}
tiers:
  - number: 1
    impls: [alpha, gamma]
  - number: 2
    impls: [beta]
completion:
  tiers_complete: 1
  tiers_total: 2
  impls_complete: 1
  impls_total: 3
  total_agents: 0
  total_waves: 0
`;

const programPath = 'docs/PROGRAM/PROGRAM-suite.yaml';

async function repoWith(files: Record<string, string> = {}): Promise<TestRepo> {
  return createTestRepo({ files: { ...implFiles, ...files } });
}

/** Lines of `after` that differ from `before` (same line count assumed unless noted). */
function changedLines(before: string, after: string): string[] {
  const a = before.split('\n');
  const b = after.split('\n');
  return b.filter((line, index) => a[index] !== line);
}

describe('create-program', () => {
  it('writes a valid PROGRAM with IMPLs sharing files in different tiers, Go JSON keys', async () => {
    const repo = await repoWith();
    const result = await cli(repo, ['create-program', '--from-impls', 'alpha,beta', '--from-impls', 'gamma']);
    expect(result.code, result.stderr).toBe(0);
    const output = parseStdoutJson<Record<string, unknown>>(result);
    expect(Object.keys(output)).toEqual(['manifest_path', 'conflict_report', 'tier_assignments', 'manifest']);
    expect(output.manifest_path).toBe('docs/PROGRAM/PROGRAM-alpha-and-beta-and-gamma.yaml');
    expect(output.tier_assignments).toEqual({ alpha: 1, beta: 2, gamma: 1 });
    expect((output.conflict_report as { conflicts: unknown[] }).conflicts).toEqual([{ file: 'src/shared.ts', impls: ['alpha', 'beta'] }]);
    const text = repo.read('docs/PROGRAM/PROGRAM-alpha-and-beta-and-gamma.yaml');
    const parsed = parseProgram(text);
    expect(parsed.manifest).not.toBeNull();
    expect(parsed.data).toEqual(output.manifest);
    expect(parsed.manifest!.state).toBe('REVIEWED');
    expect(parsed.manifest!.created).toBe('2026-01-02');
    expect(parsed.manifest!.impls.map((impl) => [impl.slug, impl.tier, impl.status, impl.depends_on])).toEqual([
      ['alpha', 1, 'reviewed', []],
      ['beta', 2, 'complete', ['alpha']],
      ['gamma', 1, 'executing', []],
    ]);
    expect(validateProgram(parsed.manifest!, { fileName: 'PROGRAM-alpha-and-beta-and-gamma.yaml' }).filter((finding) => finding.severity === 'error')).toEqual([]);
    expect(result.stderr).toContain('1 file conflict(s)');
  });

  it('takes --slug and --title, and never overwrites an existing PROGRAM (exit 2, bytes unchanged)', async () => {
    const repo = await repoWith();
    const first = await cli(repo, ['create-program', '--from-impls', 'alpha,gamma', '--slug', 'two', '--title', 'Two things']);
    expect(first.code, first.stderr).toBe(0);
    const before = repo.read('docs/PROGRAM/PROGRAM-two.yaml');
    expect(parseProgram(before).manifest).toMatchObject({ title: 'Two things', program_slug: 'two' });
    const again = await cli(repo, ['create-program', '--from-impls', 'alpha,beta', '--slug', 'two']);
    expectCodedError(again, { exitCode: 2, code: 'X001_INVALID_INPUT' });
    expect(repo.read('docs/PROGRAM/PROGRAM-two.yaml')).toBe(before);
  });

  it('refuses bad input with a coded error and writes nothing', async () => {
    const repo = await repoWith();
    expectCodedError(await cli(repo, ['create-program', '--from-impls', 'alpha']), { exitCode: 2, code: 'X001_INVALID_INPUT' });
    expectCodedError(await cli(repo, ['create-program', '--from-impls', 'alpha,nope']), { exitCode: 2, code: 'N005_IMPL_NOT_FOUND' });
    expectCodedError(await cli(repo, ['create-program', '--from-impls', 'alpha,docs/IMPL/IMPL-alpha.yaml']), { exitCode: 2, code: 'X001_INVALID_INPUT' });
    expect(existsSync(repo.path('docs/PROGRAM'))).toBe(false);
  });

  it('does not write a manifest that would be invalid (exit 1, validation_errors)', async () => {
    const repo = await repoWith();
    const result = await cli(repo, ['create-program', '--from-impls', 'alpha,gamma', '--slug', 'Not_A_Slug']);
    expect(result.code).toBe(1);
    const output = parseStdoutJson<{ validation_errors: Array<{ code: string }> }>(result);
    expect(output.validation_errors.length).toBeGreaterThan(0);
    expect(result.stderr).toMatch(/^polywave: error\[V024_PROGRAM_INVALID\]/);
    expect(existsSync(repo.path('docs/PROGRAM/PROGRAM-Not_A_Slug.yaml'))).toBe(false);
  });
});

describe('import-impls', () => {
  it('creates a PLANNING PROGRAM from --from-impls', async () => {
    const repo = await repoWith();
    const result = await cli(repo, ['import-impls', '--program', 'fresh', '--from-impls', 'alpha,beta,gamma']);
    expect(result.code, result.stderr).toBe(0);
    const output = parseStdoutJson<Record<string, unknown>>(result);
    expect(output).toMatchObject({ manifest_path: 'docs/PROGRAM/PROGRAM-fresh.yaml', created: true, updated: false, tier_assignments: { alpha: 1, beta: 2, gamma: 1 } });
    expect(output.impls_imported).toEqual([
      { slug: 'alpha', title: 'Alpha', status: 'reviewed', assigned_tier: 1, agent_count: 1, wave_count: 1 },
      { slug: 'beta', title: 'Beta', status: 'complete', assigned_tier: 2, agent_count: 2, wave_count: 2 },
      { slug: 'gamma', title: 'Gamma', status: 'executing', assigned_tier: 1, agent_count: 1, wave_count: 1 },
    ]);
    const parsed = parseProgram(repo.read('docs/PROGRAM/PROGRAM-fresh.yaml'));
    expect(parsed.manifest).toMatchObject({ program_slug: 'fresh', state: 'PLANNING', tiers: [{ number: 1, impls: ['alpha', 'gamma'] }, { number: 2, impls: ['beta'] }] });
    expect(validateProgram(parsed.manifest!, { fileName: 'PROGRAM-fresh.yaml' }).filter((finding) => finding.severity === 'error')).toEqual([]);
  });

  it('adds to an existing PROGRAM with minimal edits (comments kept), skips present slugs, overlap with an existing IMPL pushes to a later tier', async () => {
    const existing = `# my program
title: Mine
program_slug: mine
state: PLANNING  # still planning
impls:
  - slug: alpha  # first
    title: Alpha
    tier: 1
    status: reviewed
tiers:
  - number: 1
    impls: [alpha]
completion:
  tiers_complete: 0
  tiers_total: 1
  impls_complete: 0
  impls_total: 1
  total_agents: 0
  total_waves: 0
`;
    const repo = await repoWith({ 'docs/PROGRAM/PROGRAM-mine.yaml': existing });
    const result = await cli(repo, ['import-impls', '--program', 'docs/PROGRAM/PROGRAM-mine.yaml', '--from-impls', 'alpha,beta,gamma']);
    expect(result.code, result.stderr).toBe(0);
    const output = parseStdoutJson<Record<string, unknown>>(result);
    expect(output).toMatchObject({ created: false, updated: true, skipped: ['alpha'], tier_assignments: { beta: 2, gamma: 1 } });
    const after = repo.read('docs/PROGRAM/PROGRAM-mine.yaml');
    expect(after).toContain('# my program\n');
    expect(after).toContain('state: PLANNING  # still planning\n');
    expect(after).toContain('  - slug: alpha  # first\n');
    const parsed = parseProgram(after).manifest!;
    expect(parsed.tiers).toEqual([
      { number: 1, impls: ['alpha', 'gamma'] },
      { number: 2, impls: ['beta'] },
    ]);
    expect(parsed.completion).toMatchObject({ tiers_total: 2, impls_total: 3, impls_complete: 1 });
    expect(parsed.impls.find((impl) => impl.slug === 'beta')).toMatchObject({ tier: 2, depends_on: ['alpha'] });
    // Re-running imports nothing and changes nothing.
    const again = await cli(repo, ['import-impls', '--program', 'mine', '--from-impls', 'beta']);
    expect(parseStdoutJson<Record<string, unknown>>(again)).toMatchObject({ impls_imported: [], updated: false, skipped: ['beta'] });
    expect(repo.read('docs/PROGRAM/PROGRAM-mine.yaml')).toBe(after);
  });

  it('--discover imports every IMPL doc (complete/ too) and lists them', async () => {
    const repo = await repoWith({ 'docs/IMPL/complete/IMPL-delta.yaml': implDoc('delta', 'COMPLETE', ['src/d.ts']) });
    const result = await cli(repo, ['import-impls', '--program', 'all', '--discover']);
    expect(result.code, result.stderr).toBe(0);
    const output = parseStdoutJson<{ impls_discovered: string[]; impls_imported: Array<{ slug: string }> }>(result);
    expect(output.impls_discovered.map((file) => file.slice(repo.dir.length + 1))).toEqual([
      'docs/IMPL/IMPL-alpha.yaml',
      'docs/IMPL/IMPL-beta.yaml',
      'docs/IMPL/IMPL-gamma.yaml',
      'docs/IMPL/complete/IMPL-delta.yaml',
    ]);
    expect(output.impls_imported.map((entry) => entry.slug)).toEqual(['alpha', 'beta', 'gamma', 'delta']);
  });

  it('refuses missing flags, both flags and unknown IMPLs (nothing written)', async () => {
    const repo = await repoWith();
    expectCodedError(await cli(repo, ['import-impls', '--program', 'x']), { exitCode: 2, code: 'X001_INVALID_INPUT' });
    expectCodedError(await cli(repo, ['import-impls', '--program', 'x', '--discover', '--from-impls', 'alpha']), { exitCode: 2, code: 'X001_INVALID_INPUT' });
    expectCodedError(await cli(repo, ['import-impls', '--program', 'x', '--from-impls', 'nope']), { exitCode: 2, code: 'N005_IMPL_NOT_FOUND' });
    expect(existsSync(repo.path('docs/PROGRAM/PROGRAM-x.yaml'))).toBe(false);
  });
});

describe('check-program-conflicts', () => {
  it('exits 1 with the conflicts of a tier, 0 for a disjoint tier, 2 for a tier that does not exist', async () => {
    const conflicting = programText('TIER_EXECUTING').replace('impls: [alpha, gamma]', 'impls: [alpha, gamma, beta]').replace('  - number: 2\n    impls: [beta]\n', '');
    const repo = await repoWith({ [programPath]: conflicting, 'docs/PROGRAM/PROGRAM-ok.yaml': programText('TIER_EXECUTING').replace('program_slug: suite', 'program_slug: ok') });
    const blocked = await cli(repo, ['check-program-conflicts', programPath, '--tier', '1']);
    expect(blocked.code).toBe(1);
    expect(parseStdoutJson(blocked)).toEqual({ conflicts: [{ file: 'src/shared.ts', impls: ['alpha', 'beta'] }], disjoint_sets: [['alpha', 'beta'], ['gamma']], tier_suggestion: { alpha: 1, gamma: 1, beta: 2 } });
    expect(blocked.stderr).toContain('BLOCKED — 1 conflict(s) detected in tier 1');
    const clean = await cli(repo, ['check-program-conflicts', 'docs/PROGRAM/PROGRAM-ok.yaml', '--tier', '1']);
    expect(clean.code, clean.stderr).toBe(0);
    expect(parseStdoutJson<{ conflicts: unknown[] }>(clean).conflicts).toEqual([]);
    expectCodedError(await cli(repo, ['check-program-conflicts', programPath, '--tier', '7']), { exitCode: 2, code: 'X001_INVALID_INPUT' });
    expectCodedError(await cli(repo, ['check-program-conflicts', 'docs/PROGRAM/PROGRAM-missing.yaml', '--tier', '1']), { exitCode: 2, code: 'N005_IMPL_NOT_FOUND' });
  });
});

describe('update-program-impl', () => {
  it('changes only the status and the completion counters; comments kept', async () => {
    const repo = await repoWith({ [programPath]: programText('TIER_EXECUTING', { alpha: 'executing' }) });
    const before = repo.read(programPath);
    const result = await cli(repo, ['update-program-impl', programPath, '--impl', 'alpha', '--status', 'complete']);
    expect(result.code, result.stderr).toBe(0);
    expect(parseStdoutJson(result)).toEqual({ updated: true, manifest_path: programPath, impl_slug: 'alpha', previous_status: 'executing', new_status: 'complete' });
    const after = repo.read(programPath);
    expect(changedLines(before, after)).toEqual(['    status: complete  # set by hand', '  impls_complete: 2']);
    // Completing gamma completes tier 1 (and with beta complete, tier 2): tiers_complete follows.
    await cli(repo, ['update-program-impl', programPath, '--impl', 'gamma', '--status', 'complete']);
    expect(parseProgram(repo.read(programPath)).manifest!.completion).toMatchObject({ impls_complete: 3, tiers_complete: 2 });
  });

  it('unknown IMPL → exit 2 (N005) before any lock is taken (P13-01), invalid status → exit 2, bytes unchanged', async () => {
    const repo = await repoWith({ [programPath]: programText('TIER_EXECUTING') });
    const before = repo.read(programPath);
    const locks = () => (existsSync(repo.path('.git/polywave/locks')) ? readdirSync(repo.path('.git/polywave/locks')) : []);
    const locksBefore = locks();
    const unknown = await cli(repo, ['update-program-impl', programPath, '--impl', 'zzz', '--status', 'complete']);
    expectCodedError(unknown, { exitCode: 2, code: 'N005_IMPL_NOT_FOUND' });
    expect(unknown.stderr).toContain('impls: alpha, gamma, beta');
    expect(locks()).toEqual(locksBefore);
    expectCodedError(await cli(repo, ['update-program-impl', programPath, '--impl', 'alpha', '--status', 'done']), { exitCode: 2, code: 'X001_INVALID_INPUT' });
    expectCodedError(await cli(repo, ['update-program-impl', programPath, '--impl', 'alpha']), { exitCode: 2 });
    expect(repo.read(programPath)).toBe(before);
  });
});

describe('update-program-impl: status transitions (outside attack X11 #6)', () => {
  it('an illegal move or a COMPLETE PROGRAM → exit 1 N008, nothing written; --force writes it with a warning; Go\'s in_progress is executing; `updated:` keeps its plain style', async () => {
    const text = programText('TIER_EXECUTING').replace('title: Suite\n', 'title: Suite\nupdated: 2026-01-01\n');
    const repo = await repoWith({ [programPath]: text, 'docs/PROGRAM/complete/PROGRAM-done.yaml': programText('COMPLETE').replace('program_slug: suite', 'program_slug: done') });
    expectCodedError(await cli(repo, ['update-program-impl', programPath, '--impl', 'alpha', '--status', 'complete']), { exitCode: 1, code: 'N008_STATE_TRANSITION' });
    expectCodedError(await cli(repo, ['update-program-impl', programPath, '--impl', 'beta', '--status', 'pending']), { exitCode: 1, code: 'N008_STATE_TRANSITION' });
    expect(repo.read(programPath)).toBe(text);
    const archived = repo.read('docs/PROGRAM/complete/PROGRAM-done.yaml');
    expectCodedError(await cli(repo, ['update-program-impl', 'docs/PROGRAM/complete/PROGRAM-done.yaml', '--impl', 'alpha', '--status', 'executing']), { exitCode: 1, code: 'N008_STATE_TRANSITION' });
    expect(repo.read('docs/PROGRAM/complete/PROGRAM-done.yaml')).toBe(archived);
    const goName = await cli(repo, ['update-program-impl', programPath, '--impl', 'alpha', '--status', 'in_progress']);
    expect(goName.code, goName.stderr).toBe(0);
    expect(parseStdoutJson(goName)).toMatchObject({ previous_status: 'reviewed', new_status: 'executing' });
    expect(repo.read(programPath)).toMatch(/^updated: \d{4}-\d{2}-\d{2}$/m);
    const forced = await cli(repo, ['update-program-impl', programPath, '--impl', 'beta', '--status', 'pending', '--force']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.stderr).toMatch(/warning\[N008_STATE_TRANSITION\]: --force: illegal IMPL status transition complete -> pending/);
    expect(parseProgram(repo.read(programPath)).manifest!.impls.find((impl) => impl.slug === 'beta')!.status).toBe('pending');
  });
});

describe('update-program-state', () => {
  it('a legal transition changes only the state value (its comment kept)', async () => {
    const repo = await repoWith({ [programPath]: programText('PLANNING') });
    const before = repo.read(programPath);
    const result = await cli(repo, ['update-program-state', 'suite', '--state', 'validating']);
    expect(result.code, result.stderr).toBe(0);
    expect(parseStdoutJson(result)).toEqual({ updated: true, manifest_path: programPath, previous_state: 'PLANNING', new_state: 'VALIDATING' });
    expect(changedLines(before, repo.read(programPath))).toEqual(['state: VALIDATING  # the current phase']);
    // The same state again: nothing to write, and the JSON says so.
    const after = repo.read(programPath);
    const again = await cli(repo, ['update-program-state', 'suite', '--state', 'VALIDATING']);
    expect(again.code, again.stderr).toBe(0);
    expect(parseStdoutJson(again)).toEqual({ updated: false, manifest_path: programPath, previous_state: 'VALIDATING', new_state: 'VALIDATING' });
    expect(repo.read(programPath)).toBe(after);
  });

  it('an illegal transition → exit 1 N008 naming the legal targets, nothing written; --force writes it with a warning', async () => {
    const repo = await repoWith({ [programPath]: programText('PLANNING') });
    const before = repo.read(programPath);
    const refused = expectCodedError(await cli(repo, ['update-program-state', programPath, '--state', 'COMPLETE']), { exitCode: 1, code: 'N008_STATE_TRANSITION' });
    expect(refused.message).toContain('legal from PLANNING: VALIDATING, NOT_SUITABLE');
    expect(repo.read(programPath)).toBe(before);
    expectCodedError(await cli(repo, ['update-program-state', programPath, '--state', 'FINISHED']), { exitCode: 2, code: 'V008_INVALID_STATE' });
    expect(repo.read(programPath)).toBe(before);
    const forced = await cli(repo, ['update-program-state', programPath, '--state', 'COMPLETE', '--force']);
    expect(forced.code).toBe(0);
    expect(forced.stderr).toMatch(/^polywave: warning\[N008_STATE_TRANSITION\]: --force: illegal PROGRAM transition PLANNING -> COMPLETE/);
    expect(parseProgram(repo.read(programPath)).manifest!.state).toBe('COMPLETE');
  });
});

describe('freeze-contracts', () => {
  it('records the freeze in the manifest when every contract of the tier is committed; skips the others; idempotent', async () => {
    const repo = await repoWith({ [programPath]: programText('TIER_VERIFIED'), 'src/session.ts': 'export interface Session { id: string }\n', 'src/api.ts': 'export type Api = () => void;\n' });
    const head = (await repo.run(['rev-parse', 'HEAD'])).trim();
    const blob = (await repo.run(['rev-parse', 'HEAD:src/session.ts'])).trim();
    const before = repo.read(programPath);
    const result = await cli(repo, ['freeze-contracts', programPath, '--tier', '1']);
    expect(result.code, result.stderr).toBe(0);
    const output = parseStdoutJson<Record<string, unknown>>(result);
    expect(output).toMatchObject({ tier_number: 1, contracts_skipped: ['Later'], success: true, manifest_updated: true });
    expect(output.contracts_frozen).toEqual([
      { name: 'Session', location: 'src/session.ts', freeze_at: 'Tier 1 completion', file_exists: true, committed: true, frozen_commit: head, frozen_blob: blob },
      expect.objectContaining({ name: 'Api', freeze_at: 'gamma', committed: true, frozen_commit: head }),
    ]);
    const after = repo.read(programPath);
    expect(after.startsWith('# PROGRAM: suite — hand-written, comments must survive\n')).toBe(true);
    const contract = parseProgram(after).manifest!.program_contracts[0]!;
    expect(contract).toMatchObject({ frozen_at_tier: 1, frozen_commit: head, frozen_blob: blob });
    expect(after.split('\n').length - before.split('\n').length).toBe(6);
    // The manifest is dirty now; a second run finds the freeze recorded and writes nothing.
    const again = await cli(repo, ['freeze-contracts', programPath, '--tier', '1']);
    expect(again.code, again.stderr).toBe(0);
    expect(parseStdoutJson<{ manifest_updated: boolean }>(again).manifest_updated).toBe(false);
    expect(repo.read(programPath)).toBe(after);
  });

  it('a location with a #Symbol suffix freezes its file', async () => {
    const repo = await repoWith({ [programPath]: programText('TIER_VERIFIED').replace('location: src/session.ts', 'location: src/session.ts#Session'), 'src/session.ts': 'export interface Session { id: string }\n', 'src/api.ts': 'export type Api = () => void;\n' });
    const blob = (await repo.run(['rev-parse', 'HEAD:src/session.ts'])).trim();
    const result = await cli(repo, ['freeze-contracts', programPath, '--tier', '1']);
    expect(result.code, result.stderr).toBe(0);
    expect(parseStdoutJson<{ contracts_frozen: unknown[] }>(result).contracts_frozen[0]).toMatchObject({ name: 'Session', location: 'src/session.ts#Session', file_exists: true, committed: true, frozen_blob: blob });
  });

  it('--commit commits the recorded freeze; a frozen contract changed later is a P2 error (exit 1)', async () => {
    const repo = await repoWith({ [programPath]: programText('TIER_VERIFIED'), 'src/session.ts': 'export interface Session { id: string }\n', 'src/api.ts': 'export type Api = () => void;\n' });
    const result = await cli(repo, ['freeze-contracts', programPath, '--tier', '1', '--commit']);
    expect(result.code, result.stderr).toBe(0);
    const sha = parseStdoutJson<{ commit_sha: string }>(result).commit_sha;
    expect((await repo.run(['log', '-1', '--format=%H %s'])).trim()).toBe(`${sha} chore: freeze program contracts at tier 1`);
    expect((await repo.run(['status', '--porcelain'])).trim()).toBe('');
    repo.write('src/session.ts', 'export interface Session { id: string; user: string }\n');
    await repo.commitAll('change a frozen contract');
    const frozenText = repo.read(programPath);
    const changed = await cli(repo, ['freeze-contracts', programPath, '--tier', '1']);
    expect(changed.code).toBe(1);
    const output = parseStdoutJson<{ success: boolean; errors: string[] }>(changed);
    expect(output.success).toBe(false);
    expect(output.errors[0]).toMatch(/^contract Session: src\/session.ts changed since it was frozen at [0-9a-f]{40}/);
    expect(changed.stderr).toMatch(/^polywave: error\[N012_FREEZE_ERROR\]/);
    expect(repo.read(programPath)).toBe(frozenText);
  });

  it('missing, uncommitted or untracked contract files → exit 1 with errors, manifest unchanged; unknown tier → exit 2', async () => {
    const repo = await repoWith({ [programPath]: programText('TIER_VERIFIED'), 'src/session.ts': 'export interface Session { id: string }\n' });
    repo.write('src/session.ts', 'export interface Session { id: number }\n');
    const before = repo.read(programPath);
    const result = await cli(repo, ['freeze-contracts', programPath, '--tier', '1']);
    expect(result.code).toBe(1);
    const output = parseStdoutJson<{ errors: string[]; contracts_frozen: Array<{ name: string; file_exists: boolean; committed: boolean }>; manifest_updated: boolean }>(result);
    expect(output.errors).toEqual(['contract Session: file not committed at src/session.ts (uncommitted changes)', 'contract Api: file not found at src/api.ts']);
    expect(output.contracts_frozen.map((entry) => [entry.name, entry.file_exists, entry.committed])).toEqual([
      ['Session', true, false],
      ['Api', false, false],
    ]);
    expect(output.manifest_updated).toBe(false);
    repo.write('src/api.ts', 'export type Api = () => void;\n');
    expect(parseStdoutJson<{ errors: string[] }>(await cli(repo, ['freeze-contracts', programPath, '--tier', '1'])).errors).toContain('contract Api: file not committed at src/api.ts (not tracked at HEAD)');
    expect(repo.read(programPath)).toBe(before);
    expectCodedError(await cli(repo, ['freeze-contracts', programPath, '--tier', '9']), { exitCode: 2, code: 'X001_INVALID_INPUT' });
    expectCodedError(await cli(repo, ['freeze-contracts', programPath, '--tier', 'one']), { exitCode: 2, code: 'X001_INVALID_INPUT' });
    expect(repo.read(programPath)).toBe(before);
  });
});

describe('freeze-contracts: the orchestrator\'s own files (P12-02)', () => {
  it('a contract located at the PROGRAM manifest itself is refused (V055), nothing written', async () => {
    const repo = await repoWith({ [programPath]: programText('TIER_VERIFIED').replace('location: src/session.ts', `location: ${programPath}`), 'src/api.ts': 'export type Api = () => void;\n' });
    const before = repo.read(programPath);
    const result = await cli(repo, ['freeze-contracts', programPath, '--tier', '1']);
    expect(result.code).toBe(1);
    const output = parseStdoutJson<{ errors: string[]; manifest_updated: boolean }>(result);
    expect(output.errors).toEqual([`contract Session: location ${programPath} is a file polywave writes (manifests, CONTEXT.md, worktrees, state), not a contract's file (V055)`]);
    expect(output.manifest_updated).toBe(false);
    expect(repo.read(programPath)).toBe(before);
    // validate-program says so too.
    const validated = await cli(repo, ['validate-program', programPath]);
    expect(validated.code).toBe(1);
    expect(validated.stdout).toContain('V055_CONTRACT_LOCATION_CONFLICT');
  });
});

describe('an IMPL of a running PROGRAM tier, run by hand on the main checkout (P12-11)', () => {
  it('run, run-wave, prepare-wave, finalize-wave, merge-agents, retry and close-impl refuse it naming program-execute; nothing changed', async () => {
    const repo = await repoWith({ [programPath]: programText('TIER_EXECUTING') });
    const branch = 'polywave/program/suite/tier1-impl-gamma';
    await repo.run(['branch', branch]);
    const snapshot = async () => [await repo.run(['status', '--porcelain', '--untracked-files=all']), await repo.run(['for-each-ref']), await repo.run(['worktree', 'list', '--porcelain']), repo.read('docs/IMPL/IMPL-gamma.yaml'), repo.read(programPath)].join('\n--\n');
    const before = await snapshot();
    const impl = 'docs/IMPL/IMPL-gamma.yaml';
    for (const args of [
      ['run', impl, '--auto'],
      ['run-wave', impl, '--wave', '1'],
      ['prepare-wave', impl, '--wave', '1'],
      ['finalize-wave', impl, '--wave', '1'],
      ['finalize-wave', impl, '--wave', '1', '--dry-run'],
      ['merge-agents', impl, '--wave', '1'],
      ['retry', impl, '--wave', '1'],
      ['close-impl', impl],
    ]) {
      const result = await cli(repo, args);
      expectCodedError(result, { exitCode: 2, code: 'E28B_IMPL_OF_PROGRAM' });
      expect(result.stderr).toContain(`${args[0]}: IMPL gamma belongs to tier 1 of PROGRAM suite`);
      expect(result.stderr).toContain(`its IMPL branch ${branch}`);
      expect(result.stderr).toContain('polywave program-execute docs/PROGRAM/PROGRAM-suite.yaml');
      expect(result.stderr).not.toMatch(/data loss|deleted without merging/);
      expect(await snapshot()).toBe(before);
    }
    // --merge-target says where: not refused (finalize-wave's dry run answers for that branch).
    const targeted = await cli(repo, ['finalize-wave', impl, '--wave', '1', '--dry-run', '--merge-target', branch]);
    expect(targeted.stderr).not.toContain('E28B_IMPL_OF_PROGRAM');
    // An IMPL the PROGRAM lists as complete is the user's to run.
    expect((await cli(repo, ['close-impl', 'docs/IMPL/IMPL-beta.yaml'])).stderr).not.toContain('E28B_IMPL_OF_PROGRAM');
    // P14-20: one whose IMPL branch is not (or no longer) there is still the loop's while the PROGRAM is approved and not
    // COMPLETE: the loop (re)makes its branch; by hand it would land on main (P5).
    await repo.run(['branch', '-D', branch]);
    expect((await cli(repo, ['finalize-wave', impl, '--wave', '1', '--dry-run'])).stderr).toContain('which the tier loop has not started');
  });
});

describe('mark-program-complete', () => {
  const allComplete = { alpha: 'complete', gamma: 'complete', beta: 'complete' };

  it('archives the PROGRAM, sets COMPLETE + completion_date, records it in CONTEXT.md and commits', async () => {
    const repo = await repoWith({ [programPath]: programText('TIER_VERIFIED', allComplete) });
    const result = await cli(repo, ['mark-program-complete', programPath, '--date', '2026-03-04']);
    expect(result.code, result.stderr).toBe(0);
    const output = parseStdoutJson<Record<string, unknown>>(result);
    expect(output).toMatchObject({ completed: true, program_slug: 'suite', date: '2026-03-04', manifest_path: programPath, context_updated: true, tiers_complete: 2, impls_complete: 3 });
    expect(output.archived_path).toBe(repo.path('docs/PROGRAM/complete/PROGRAM-suite.yaml'));
    expect(existsSync(repo.path(programPath))).toBe(false);
    const archived = repo.read('docs/PROGRAM/complete/PROGRAM-suite.yaml');
    expect(archived).toContain('state: COMPLETE  # the current phase\n');
    expect(parseProgram(archived).manifest).toMatchObject({ state: 'COMPLETE', completion_date: '2026-03-04', completion: { tiers_complete: 2, impls_complete: 3 } });
    const context = repo.read('docs/CONTEXT.md');
    expect(context).toContain('slug: PROGRAM-suite');
    expect(context).toContain('name: Session');
    expect((await repo.run(['log', '-1', '--format=%H %s'])).trim()).toBe(`${String(output.commit_sha)} chore: mark PROGRAM suite complete`);
    expect((await repo.run(['show', '--no-renames', '--name-status', '--format=', 'HEAD'])).trim().split('\n').sort()).toEqual(['A\tdocs/CONTEXT.md', 'A\tdocs/PROGRAM/complete/PROGRAM-suite.yaml', 'D\tdocs/PROGRAM/PROGRAM-suite.yaml']);
    expect((await repo.run(['status', '--porcelain'])).trim()).toBe('');
    // A re-run finds it archived and changes nothing.
    const again = await cli(repo, ['mark-program-complete', programPath, '--date', '2026-03-04']);
    expect(again.code, again.stderr).toBe(0);
    expect(parseStdoutJson<Record<string, unknown>>(again).commit_sha).toBeUndefined();
  });

  it('refuses an incomplete tier (N039) and a state other than TIER_VERIFIED (N008) — exit 1, nothing changed; --force passes the state check', async () => {
    const repo = await repoWith({ [programPath]: programText('TIER_VERIFIED'), 'docs/PROGRAM/PROGRAM-run.yaml': programText('TIER_EXECUTING', allComplete).replace('program_slug: suite', 'program_slug: run') });
    const head = (await repo.run(['rev-parse', 'HEAD'])).trim();
    const incomplete = expectCodedError(await cli(repo, ['mark-program-complete', programPath]), { exitCode: 1, code: 'N039_VERIFY_TIERS_INCOMPLETE' });
    expect(incomplete.message).toBe('not all tiers complete — incomplete IMPLs: alpha (status: reviewed), gamma (status: executing)');
    const runBefore = repo.read('docs/PROGRAM/PROGRAM-run.yaml');
    expectCodedError(await cli(repo, ['mark-program-complete', 'docs/PROGRAM/PROGRAM-run.yaml']), { exitCode: 1, code: 'N008_STATE_TRANSITION' });
    expect(repo.read('docs/PROGRAM/PROGRAM-run.yaml')).toBe(runBefore);
    expect((await repo.run(['rev-parse', 'HEAD'])).trim()).toBe(head);
    expect(existsSync(repo.path('docs/CONTEXT.md'))).toBe(false);
    expectCodedError(await cli(repo, ['mark-program-complete', programPath, '--date', '2026-13-40']), { exitCode: 2, code: 'X001_INVALID_INPUT' });
    const forced = await cli(repo, ['mark-program-complete', 'docs/PROGRAM/PROGRAM-run.yaml', '--force', '--date', '2026-03-04']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.stderr).toContain('forced: illegal PROGRAM transition TIER_EXECUTING -> COMPLETE');
    expect(parseProgram(readFileSync(repo.path('docs/PROGRAM/complete/PROGRAM-run.yaml'), 'utf8')).manifest!.state).toBe('COMPLETE');
  });
});

describe('--help', () => {
  it.each(['create-program', 'import-impls', 'check-program-conflicts', 'update-program-impl', 'update-program-state', 'freeze-contracts', 'mark-program-complete'])('%s --help exits 0 and lists its flags', async (command) => {
    const repo = await repoWith();
    const result = await cli(repo, [command, '--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`polywave ${command}`);
    expect(result.stdout).toContain('Exit:');
  });
});

describe('hostile input never changes a file or prints a stack trace', () => {
  it('missing --tier, tier 0, a non-YAML manifest, an empty manifest, a directory', async () => {
    const repo = await repoWith({ [programPath]: programText('PLANNING'), 'docs/PROGRAM/PROGRAM-bad.yaml': 'title: [unclosed\n', 'docs/PROGRAM/PROGRAM-empty.yaml': '# nothing\n' });
    const before = repo.read(programPath);
    expectCodedError(await cli(repo, ['freeze-contracts', programPath]), { exitCode: 2 });
    expectCodedError(await cli(repo, ['check-program-conflicts', programPath, '--tier', '0']), { exitCode: 2, code: 'X001_INVALID_INPUT' });
    for (const file of ['docs/PROGRAM/PROGRAM-bad.yaml', 'docs/PROGRAM/PROGRAM-empty.yaml']) {
      const text = repo.read(file);
      expectCodedError(await cli(repo, ['update-program-state', file, '--state', 'VALIDATING']), { exitCode: 2 });
      expectCodedError(await cli(repo, ['update-program-impl', file, '--impl', 'alpha', '--status', 'complete']), { exitCode: 2 });
      expectCodedError(await cli(repo, ['freeze-contracts', file, '--tier', '1']), { exitCode: 2 });
      expectCodedError(await cli(repo, ['mark-program-complete', file]), { exitCode: 2 });
      expectCodedError(await cli(repo, ['import-impls', '--program', file, '--from-impls', 'alpha']), { exitCode: 2 });
      expect(repo.read(file)).toBe(text);
    }
    expectCodedError(await cli(repo, ['update-program-state', 'docs', '--state', 'VALIDATING']), { exitCode: 2 });
    expect(repo.read(programPath)).toBe(before);
    expect((await repo.run(['status', '--porcelain'])).trim()).toBe('');
  });
});
