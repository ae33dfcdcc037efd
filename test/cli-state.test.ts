import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseImpl } from '../src/protocol/parse-impl.js';
import { freezeRecord } from '../src/protocol/freeze.js';
import { applyEdits } from '../src/protocol/yaml/index.js';
import { corpusRoot, repoRoot, runCli } from './support/cli.js';
import { changedLineIndexes, copyInto, expectCodedError, expectNoStackTrace, parseStdoutJson } from './support/cli-assert.js';
import { makeTempDir } from './support/temp.js';

const exampleText = readFileSync(path.join(repoRoot, 'examples', 'IMPL-greeting-cli.yaml'), 'utf8');
const goCorpus = path.join(corpusRoot, 'polywave-go');

/** System and global git config off: the developer's hooks, signing or templates must not leak in. */
const gitEnv = { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, ...gitEnv } });
}

/** A fresh git repository with `docs/IMPL/IMPL-<slug>.yaml` (the example manifest) committed. */
function makeRepo(name: string, text = exampleText, slug = 'greeting-cli'): { root: string; manifest: string } {
  const root = path.join(makeTempDir(`polywave-state-${name}-`), 'repo');
  mkdirSync(path.join(root, 'docs', 'IMPL'), { recursive: true });
  git(root, 'init', '--quiet', '--initial-branch=main');
  git(root, 'config', 'user.name', 'Polywave Test');
  git(root, 'config', 'user.email', 'test@polywave.invalid');
  git(root, 'config', 'commit.gpgsign', 'false');
  const manifest = path.join(root, 'docs', 'IMPL', `IMPL-${slug}.yaml`);
  writeFileSync(manifest, text);
  writeFileSync(path.join(root, 'README.md'), '# test repo\n');
  git(root, 'add', '.');
  git(root, 'commit', '--quiet', '-m', 'initial');
  return { root, manifest };
}

function reportsOf(file: string): Record<string, Record<string, unknown>> {
  const parsed = parseImpl(readFileSync(file, 'utf8'));
  expect(parsed.manifest, JSON.stringify(parsed.findings)).not.toBeNull();
  return (parsed.data as { completion_reports?: Record<string, Record<string, unknown>> }).completion_reports ?? {};
}

function expectNoLeftovers(file: string): void {
  const base = path.basename(file);
  expect(readdirSync(path.dirname(file)).filter((name) => name !== base && name.includes(base))).toEqual([]);
}

describe('set-impl-state (real git)', () => {
  let repo: { root: string; manifest: string };
  beforeAll(() => {
    repo = makeRepo('set-state');
  });

  it('a legal transition changes only the state line', async () => {
    const before = readFileSync(repo.manifest, 'utf8');
    const result = await runCli(['set-impl-state', repo.manifest, '--state', 'WAVE_PENDING'], { cwd: repo.root });
    expect(result.code, result.stderr).toBe(0);
    expect(parseStdoutJson(result)).toEqual({ previous_state: 'REVIEWED', new_state: 'WAVE_PENDING', committed: false });
    const after = readFileSync(repo.manifest, 'utf8');
    const changed = changedLineIndexes(before, after);
    expect(changed.map((index) => after.split('\n')[index])).toEqual(['state: WAVE_PENDING']);
    expectNoLeftovers(repo.manifest);
  });

  it('an illegal transition: exit 1 listing the legal targets, file unchanged', async () => {
    const before = readFileSync(repo.manifest, 'utf8');
    const result = await runCli(['set-impl-state', repo.manifest, '--state', 'COMPLETE'], { cwd: repo.root });
    const { message } = expectCodedError(result, { exitCode: 1, code: 'N008_STATE_TRANSITION' });
    expect(message).toContain('WAVE_PENDING');
    expect(message).toContain('valid targets: [WAVE_EXECUTING, BLOCKED]');
    expect(readFileSync(repo.manifest, 'utf8')).toBe(before);
  });

  it('an unknown state: exit 2, file unchanged', async () => {
    const before = readFileSync(repo.manifest, 'utf8');
    const result = await runCli(['set-impl-state', repo.manifest, '--state', 'DANCING'], { cwd: repo.root });
    const { message } = expectCodedError(result, { exitCode: 2, code: 'V008_INVALID_STATE' });
    expect(message).toContain('DANCING');
    expect(readFileSync(repo.manifest, 'utf8')).toBe(before);
  });

  it('accepts a slug instead of a path', async () => {
    const result = await runCli(['set-impl-state', 'greeting-cli', '--state', 'BLOCKED'], { cwd: repo.root });
    expect(result.code, result.stderr).toBe(0);
    expect(parseStdoutJson<{ new_state: string }>(result).new_state).toBe('BLOCKED');
    const back = await runCli(['set-impl-state', 'greeting-cli', '--state', 'WAVE_PENDING'], { cwd: repo.root });
    expect(back.code, back.stderr).toBe(0);
  });

  it('--commit creates a commit touching only the manifest, with the default message', async () => {
    // Unrelated work in progress — staged and unstaged — must stay out of the commit.
    writeFileSync(path.join(repo.root, 'README.md'), '# test repo\nstaged change\n');
    git(repo.root, 'add', 'README.md');
    writeFileSync(path.join(repo.root, 'notes.txt'), 'untracked\n');
    const headBefore = git(repo.root, 'rev-parse', 'HEAD').trim();

    const result = await runCli(['set-impl-state', repo.manifest, '--state', 'WAVE_EXECUTING', '--commit'], { cwd: repo.root, env: gitEnv });
    expect(result.code, result.stderr).toBe(0);
    const output = parseStdoutJson<{ previous_state: string; new_state: string; committed: boolean; commit_sha: string }>(result);
    expect(output).toMatchObject({ previous_state: 'WAVE_PENDING', new_state: 'WAVE_EXECUTING', committed: true });
    const head = git(repo.root, 'rev-parse', 'HEAD').trim();
    expect(output.commit_sha).toBe(head);
    expect(git(repo.root, 'rev-parse', 'HEAD~1').trim()).toBe(headBefore);
    expect(git(repo.root, 'log', '-1', '--format=%s').trim()).toBe('chore: set IMPL state to WAVE_EXECUTING');
    expect(git(repo.root, 'show', '--name-only', '--format=', 'HEAD').trim().split('\n')).toEqual(['docs/IMPL/IMPL-greeting-cli.yaml']);
    expect(git(repo.root, 'show', 'HEAD:docs/IMPL/IMPL-greeting-cli.yaml')).toContain('state: WAVE_EXECUTING');
    // The staged README change is still staged, the untracked file untouched.
    expect(git(repo.root, 'diff', '--cached', '--name-only').trim()).toBe('README.md');
    expect(git(repo.root, 'status', '--porcelain', '--', 'notes.txt').trim()).toBe('?? notes.txt');
  });

  it('--commit-msg overrides the message', async () => {
    const result = await runCli(['set-impl-state', repo.manifest, '--state', 'WAVE_VERIFIED', '--commit', '--commit-msg', 'wave 1 verified'], { cwd: repo.root, env: gitEnv });
    expect(result.code, result.stderr).toBe(0);
    expect(git(repo.root, 'log', '-1', '--format=%s').trim()).toBe('wave 1 verified');
  });
});

describe('completion reports: set-completion, update-status, check-completion, check-conflicts', () => {
  let repo: { root: string; manifest: string };
  beforeAll(() => {
    repo = makeRepo('reports');
  });

  it('set-completion with flags writes a complete report', async () => {
    const result = await runCli(
      [
        'set-completion',
        repo.manifest,
        '--agent',
        'A',
        '--status',
        'complete',
        '--commit',
        'abc1234',
        '--branch',
        'polywave/greeting-cli/wave1-agent-A',
        '--files-changed',
        'src/formatters/plain.ts, docs/IMPL/IMPL-greeting-cli.yaml,src/formatters/plain.ts',
        '--verification',
        'PASS',
      ],
      { cwd: repo.root },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(parseStdoutJson(result)).toEqual({ agent: 'A', status: 'complete', saved: true });
    expect(reportsOf(repo.manifest).A).toEqual({
      status: 'complete',
      branch: 'polywave/greeting-cli/wave1-agent-A',
      commit: 'abc1234',
      files_changed: ['src/formatters/plain.ts', 'docs/IMPL/IMPL-greeting-cli.yaml'],
      verification: 'PASS',
    });
    // Only lines were added; everything written before is still there in order.
    expect(readFileSync(repo.manifest, 'utf8').startsWith(exampleText.replace(/\n$/, ''))).toBe(true);
    expectNoLeftovers(repo.manifest);
  });

  it('set-completion partial without failure_type: exit 2, file unchanged', async () => {
    const before = readFileSync(repo.manifest, 'utf8');
    const result = await runCli(['set-completion', repo.manifest, '--agent', 'B', '--status', 'partial'], { cwd: repo.root });
    const { message } = expectCodedError(result, { exitCode: 2, code: 'V005_REQUIRED_FIELDS_MISSING' });
    expect(message).toContain('failure_type');
    expect(readFileSync(repo.manifest, 'utf8')).toBe(before);
  });

  it('set-completion complete without a commit: exit 2 (I5), file unchanged', async () => {
    const before = readFileSync(repo.manifest, 'utf8');
    const result = await runCli(['set-completion', repo.manifest, '--agent', 'B', '--status', 'complete'], { cwd: repo.root });
    expectCodedError(result, { exitCode: 2, code: 'G003_COMMIT_MISSING' });
    expect(readFileSync(repo.manifest, 'utf8')).toBe(before);
  });

  it('set-completion for an agent the manifest does not have: exit 2, file unchanged', async () => {
    const before = readFileSync(repo.manifest, 'utf8');
    const result = await runCli(['set-completion', repo.manifest, '--agent', 'Q', '--status', 'complete', '--commit', 'abc'], { cwd: repo.root });
    const { message } = expectCodedError(result, { exitCode: 2, code: 'N095_REPORT_SET_FAILED' });
    expect(message).toContain('Q');
    const badId = await runCli(['set-completion', repo.manifest, '--agent', 'a1', '--status', 'complete', '--commit', 'abc'], { cwd: repo.root });
    expectCodedError(badId, { exitCode: 2, code: 'V009_INVALID_AGENT_ID' });
    expect(readFileSync(repo.manifest, 'utf8')).toBe(before);
    expectNoLeftovers(repo.manifest);
  });

  it('set-completion --file report.yaml (flags override the file)', async () => {
    const reportFile = path.join(repo.root, 'report.yaml');
    writeFileSync(
      reportFile,
      `# agent B's report
agent: B
status: partial
failure_type: fixable
files_changed:
  - src/formatters/json.ts
verification: FAIL (json test)
notes: needs one more pass
`,
    );
    const result = await runCli(['set-completion', repo.manifest, '--file', 'report.yaml', '--notes', 'overridden by the flag'], { cwd: repo.root });
    expect(result.code, result.stderr).toBe(0);
    expect(parseStdoutJson(result)).toEqual({ agent: 'B', status: 'partial', saved: true });
    expect(reportsOf(repo.manifest).B).toEqual({
      status: 'partial',
      files_changed: ['src/formatters/json.ts'],
      verification: 'FAIL (json test)',
      failure_type: 'fixable',
      notes: 'overridden by the flag',
    });
    expect(reportsOf(repo.manifest).A?.commit).toBe('abc1234');
  });

  it('set-completion --file - reads JSON from stdin', async () => {
    const report = { agent: 'C', status: 'complete', commit: 'c0ffee1', files_created: ['src/formatters/shout.ts'], verification: 'PASS' };
    const result = await runCli(['set-completion', repo.manifest, '--file', '-'], { cwd: repo.root, input: JSON.stringify(report) });
    expect(result.code, result.stderr).toBe(0);
    expect(parseStdoutJson(result)).toEqual({ agent: 'C', status: 'complete', saved: true });
    expect(reportsOf(repo.manifest).C).toEqual({ status: 'complete', commit: 'c0ffee1', files_created: ['src/formatters/shout.ts'], verification: 'PASS' });
  });

  it('set-completion --file - with invalid JSON/YAML on stdin: exit 2, file unchanged', async () => {
    const before = readFileSync(repo.manifest, 'utf8');
    const result = await runCli(['set-completion', repo.manifest, '--file', '-'], { cwd: repo.root, input: '{"agent": "C", "status": ' });
    expectCodedError(result, { exitCode: 2, code: 'V046_PARSE_ERROR' });
    expect(readFileSync(repo.manifest, 'utf8')).toBe(before);
  });

  it('set-completion replaces an agent’s earlier report', async () => {
    const result = await runCli(['set-completion', repo.manifest, '--agent', 'B', '--status', 'complete', '--commit', 'b0b0b0b', '--files-changed', 'src/formatters/json.ts'], { cwd: repo.root });
    expect(result.code, result.stderr).toBe(0);
    expect(reportsOf(repo.manifest).B).toEqual({ status: 'complete', commit: 'b0b0b0b', files_changed: ['src/formatters/json.ts'] });
  });

  it('the manifest with three reports still validates', async () => {
    const result = await runCli(['validate', repo.manifest], { cwd: repo.root });
    const verdict = parseStdoutJson<{ valid: boolean; errors: unknown[] }>(result);
    expect(verdict.valid, result.stdout).toBe(true);
    expect(result.code).toBe(0);
  });

  it('update-status: complete without a commit is exit 1 (I5); file unchanged', async () => {
    const before = readFileSync(repo.manifest, 'utf8');
    const result = await runCli(['update-status', repo.manifest, '--wave', '2', '--agent', 'D', '--status', 'complete'], { cwd: repo.root });
    expectCodedError(result, { exitCode: 1, code: 'G003_COMMIT_MISSING' });
    expect(readFileSync(repo.manifest, 'utf8')).toBe(before);
  });

  it('update-status: an agent not in that wave is exit 2', async () => {
    const result = await runCli(['update-status', repo.manifest, '--wave', '1', '--agent', 'D', '--status', 'blocked'], { cwd: repo.root });
    expectCodedError(result, { exitCode: 2, code: 'N015_STATUS_UPDATE_FAILED' });
  });

  it('update-status: a legal update changes only the status line', async () => {
    const before = readFileSync(repo.manifest, 'utf8');
    const result = await runCli(['update-status', repo.manifest, '--wave', '1', '--agent', 'A', '--status', 'partial'], { cwd: repo.root });
    expect(result.code, result.stderr).toBe(0);
    expect(parseStdoutJson(result)).toEqual({ wave: 1, agent: 'A', old_status: 'complete', new_status: 'partial', updated: true });
    const after = readFileSync(repo.manifest, 'utf8');
    const changed = changedLineIndexes(before, after);
    expect(changed).toHaveLength(1);
    expect(after.split('\n')[changed[0]!]!.trim()).toBe('status: partial');
    const again = await runCli(['update-status', repo.manifest, '--wave', '1', '--agent', 'A', '--status', 'complete'], { cwd: repo.root });
    expect(again.code, again.stderr).toBe(0);
    expect(readFileSync(repo.manifest, 'utf8')).toBe(before);
  });

  it('update-status with --commit creates the report for an agent without one', async () => {
    const result = await runCli(['update-status', repo.manifest, '--wave', '2', '--agent', 'D', '--status', 'complete', '--commit', 'd00d123'], { cwd: repo.root });
    expect(result.code, result.stderr).toBe(0);
    expect(parseStdoutJson(result)).toEqual({ wave: 2, agent: 'D', old_status: '', new_status: 'complete', updated: true });
    expect(reportsOf(repo.manifest).D).toEqual({ status: 'complete', commit: 'd00d123' });
  });

  it('check-completion: found → exit 0, missing → exit 1', async () => {
    const found = await runCli(['check-completion', repo.manifest, '--agent', 'A'], { cwd: repo.root });
    expect(found.code, found.stderr).toBe(0);
    expect(parseStdoutJson(found)).toEqual({
      found: true,
      agent_id: 'A',
      status: 'complete',
      has_commit: true,
      files_changed: ['src/formatters/plain.ts', 'docs/IMPL/IMPL-greeting-cli.yaml'],
    });
    const missing = await runCli(['check-completion', repo.manifest, '--agent', 'E'], { cwd: repo.root });
    expect(missing.code).toBe(1);
    expect(parseStdoutJson(missing)).toEqual({ found: false, agent_id: 'E', status: '', has_commit: false, files_changed: [] });
    expect(missing.stderr).toBe('');
  });

  it('check-conflicts: no conflicts (protocol-owned docs/IMPL/ paths are ignored) → exit 0', async () => {
    const result = await runCli(['check-conflicts', repo.manifest], { cwd: repo.root });
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(parseStdoutJson(result)).toEqual({ conflict_count: 0, conflicts: [] });
  });

  it('check-conflicts: two reports claiming one file → exit 1', async () => {
    for (const [agent, own] of [
      ['A', 'src/formatters/plain.ts'],
      ['B', 'src/formatters/json.ts'],
    ] as const) {
      const result = await runCli(['set-completion', repo.manifest, '--agent', agent, '--status', 'complete', '--commit', `${agent.toLowerCase()}1234567`, '--files-changed', `${own},src/shared.ts`], {
        cwd: repo.root,
      });
      expect(result.code, result.stderr).toBe(0);
    }
    const result = await runCli(['check-conflicts', repo.manifest], { cwd: repo.root });
    expect(result.code, result.stderr).toBe(1);
    const report = parseStdoutJson<{ conflict_count: number; conflicts: Array<{ file: string; agents: string[]; wave: number; kind: string }> }>(result);
    expect(report.conflict_count).toBe(report.conflicts.length);
    expect(report.conflicts).toContainEqual(expect.objectContaining({ file: 'src/shared.ts', agents: ['A', 'B'], wave: 1, kind: 'multiple_agents' }));
    const onlyWave2 = await runCli(['check-conflicts', repo.manifest, '--wave', '2'], { cwd: repo.root });
    expect(onlyWave2.code).toBe(0);
  });
});

describe('freeze-check and pre-wave-gate', () => {
  let repo: { root: string; manifest: string };
  beforeAll(() => {
    repo = makeRepo('freeze');
  });

  it('freeze-check without a freeze record: frozen false, exit 0', async () => {
    const result = await runCli(['freeze-check', repo.manifest], { cwd: repo.root });
    expect(result.code, result.stderr).toBe(0);
    expect(parseStdoutJson(result)).toEqual({ frozen: false, violation_count: 0, violations: [] });
  });

  it('freeze-check after a freeze record: clean → exit 0; a contract edited after the freeze → exit 1 with a violation', async () => {
    const text = readFileSync(repo.manifest, 'utf8');
    const parsed = parseImpl(text);
    const record = freezeRecord(parsed.manifest!, new Date('2026-05-12T10:00:00Z'));
    const frozenText = applyEdits(text, [
      { path: ['worktrees_created_at'], value: record.worktrees_created_at },
      { path: ['frozen_contracts_hash'], value: record.frozen_contracts_hash },
      { path: ['frozen_scaffolds_hash'], value: record.frozen_scaffolds_hash },
    ]);
    writeFileSync(repo.manifest, frozenText);

    const clean = await runCli(['freeze-check', repo.manifest], { cwd: repo.root });
    expect(clean.code, clean.stdout + clean.stderr).toBe(0);
    expect(parseStdoutJson(clean)).toEqual({ frozen: true, violation_count: 0, violations: [] });

    // Committing a scaffold (status bookkeeping) is not an interface change.
    const committedScaffold = applyEdits(frozenText, [{ path: ['scaffolds', 0, 'status'], value: 'committed (abc1234)' }]);
    writeFileSync(repo.manifest, committedScaffold);
    expect((await runCli(['freeze-check', repo.manifest], { cwd: repo.root })).code).toBe(0);

    const edited = applyEdits(committedScaffold, [{ path: ['interface_contracts', 0, 'description'], value: 'Every formatter turns a name into a greeting, loudly.' }]);
    writeFileSync(repo.manifest, edited);
    const result = await runCli(['freeze-check', repo.manifest], { cwd: repo.root });
    expect(result.code, result.stderr).toBe(1);
    const output = parseStdoutJson<{ frozen: boolean; violation_count: number; violations: Array<{ section: string; message: string }> }>(result);
    expect(output.frozen).toBe(true);
    expect(output.violation_count).toBe(1);
    expect(output.violations[0]!.section).toBe('interface_contracts');
    expect(output.violations[0]!.message).toContain('Interface contracts have been modified after freeze at 2026-05-12T10:00:00Z');
    expect(readFileSync(repo.manifest, 'utf8')).toBe(edited);
  });

  it('pre-wave-gate: uncommitted scaffold and missing critic review → not ready (exit 1); fixed → ready (exit 0)', async () => {
    writeFileSync(repo.manifest, exampleText);
    const blocked = await runCli(['pre-wave-gate', repo.manifest], { cwd: repo.root });
    expect(blocked.code, blocked.stderr).toBe(1);
    const gate = parseStdoutJson<{ ready: boolean; checks: Array<{ name: string; status: string; message: string }> }>(blocked);
    expect(gate.ready).toBe(false);
    expect(gate.checks.map((check) => check.name)).toEqual(['validation', 'critic_review', 'scaffolds', 'state']);
    expect(gate.checks.find((check) => check.name === 'scaffolds')!.status).toBe('fail');
    expect(gate.checks.find((check) => check.name === 'critic_review')!.status).toBe('fail');

    const ready = applyEdits(exampleText, [
      { path: ['scaffolds', 0, 'status'], value: 'committed (abc1234)' },
      { path: ['critic_report'], value: { verdict: 'PASS', summary: 'looks good' } },
    ]);
    writeFileSync(repo.manifest, ready);
    const result = await runCli(['pre-wave-gate', repo.manifest], { cwd: repo.root });
    expect(result.code, result.stdout).toBe(0);
    const passed = parseStdoutJson<{ ready: boolean; checks: Array<{ name: string; status: string }> }>(result);
    expect(passed.ready).toBe(true);
    expect(passed.checks.every((check) => check.status !== 'fail')).toBe(true);
  });
});

describe('stateless commands', () => {
  it('assign-agent-ids --count 27 ends with A2', async () => {
    const result = await runCli(['assign-agent-ids', '--count', '27']);
    expect(result.code, result.stderr).toBe(0);
    const ids = result.stdout.trim().split(' ');
    expect(ids).toHaveLength(27);
    expect(ids.slice(0, 3)).toEqual(['A', 'B', 'C']);
    expect(ids[25]).toBe('Z');
    expect(ids[26]).toBe('A2');
  });

  it('assign-agent-ids with a grouping and with bad input', async () => {
    const grouped = await runCli(['assign-agent-ids', '--count', '5', '--grouping', '["", "data", "", "data", "api"]']);
    expect(grouped.code, grouped.stderr).toBe(0);
    expect(grouped.stdout).toBe('A B A2 B2 C\n');
    expectCodedError(await runCli(['assign-agent-ids', '--count', '0']), { exitCode: 2, code: 'I001_AGENT_COUNT_INVALID' });
    expectCodedError(await runCli(['assign-agent-ids', '--count', '300']), { exitCode: 2, code: 'I003_AGENT_LIMIT_EXCEEDED' });
    expectCodedError(await runCli(['assign-agent-ids', '--count', '2', '--grouping', 'not json']), { exitCode: 2, code: 'X001_INVALID_INPUT' });
  });

  it('schema impl / schema program print JSON Schemas; an unknown kind is exit 2', async () => {
    for (const kind of ['impl', 'program']) {
      const result = await runCli(['schema', kind]);
      expect(result.code, result.stderr).toBe(0);
      const schema = parseStdoutJson<Record<string, unknown>>(result);
      expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
      expect(schema.type).toBe('object');
      expect(Object.keys(schema.properties as object).length).toBeGreaterThan(5);
    }
    const byDefault = await runCli(['schema']);
    expect(parseStdoutJson<{ title: string }>(byDefault).title).toBe('Polywave IMPL manifest');
    expectCodedError(await runCli(['schema', 'nope']), { exitCode: 2, code: 'X001_INVALID_INPUT' });
  });
});

describe('list-impls and resolve-impl', () => {
  let root: string;
  beforeAll(() => {
    root = makeRepo('list', exampleText, 'greeting-cli').root;
    const complete = exampleText.replace('feature_slug: greeting-cli', 'feature_slug: old-work').replace(/^state: REVIEWED$/m, 'state: COMPLETE');
    mkdirSync(path.join(root, 'docs', 'IMPL', 'complete'), { recursive: true });
    writeFileSync(path.join(root, 'docs', 'IMPL', 'complete', 'IMPL-old-work.yaml'), complete);
    writeFileSync(path.join(root, 'docs', 'IMPL', 'IMPL-broken.yaml'), 'title: [unclosed\n');
  });

  it('list-impls lists pending IMPLs (unreadable ones under skipped); --include-complete adds the archive', async () => {
    const result = await runCli(['list-impls'], { cwd: root });
    expect(result.code, result.stderr).toBe(0);
    const listing = parseStdoutJson<{ impls: Array<Record<string, unknown>>; skipped?: Array<{ path: string }> }>(result);
    expect(listing.impls).toEqual([
      { path: path.join(root, 'docs', 'IMPL', 'IMPL-greeting-cli.yaml'), feature_slug: 'greeting-cli', verdict: 'SUITABLE', state: 'REVIEWED', current_wave: expect.any(Number), total_waves: 3 },
    ]);
    expect(listing.skipped?.map((entry) => path.basename(entry.path))).toEqual(['IMPL-broken.yaml']);
    const all = await runCli(['list-impls', '--include-complete'], { cwd: root });
    const allListing = parseStdoutJson<{ impls: Array<{ feature_slug: string; state: string }> }>(all);
    expect(allListing.impls.map((impl) => impl.feature_slug).sort()).toEqual(['greeting-cli', 'old-work']);
    const empty = await runCli(['list-impls', '--dir', 'nowhere'], { cwd: root });
    expect(empty.code).toBe(0);
    expect(parseStdoutJson(empty)).toEqual({ impls: [] });
  });

  it('resolve-impl auto-selects the only pending IMPL, resolves slugs and file names, and says no for unknown ones', async () => {
    const expected = path.join(root, 'docs', 'IMPL', 'IMPL-greeting-cli.yaml');
    const auto = await runCli(['resolve-impl'], { cwd: root });
    expect(auto.code, auto.stderr).toBe(0);
    expect(parseStdoutJson(auto)).toEqual({ impl_path: expected, slug: 'greeting-cli', resolution_method: 'auto-select', pending_count: 1 });
    const bySlug = await runCli(['resolve-impl', '--impl', 'greeting-cli'], { cwd: root });
    expect(parseStdoutJson(bySlug)).toMatchObject({ impl_path: expected, resolution_method: 'explicit-slug' });
    const archived = await runCli(['resolve-impl', '--impl', 'old-work'], { cwd: root });
    expect(parseStdoutJson(archived)).toMatchObject({ impl_path: path.join(root, 'docs', 'IMPL', 'complete', 'IMPL-old-work.yaml') });
    const missing = await runCli(['resolve-impl', '--impl', 'no-such-feature'], { cwd: root });
    expectCodedError(missing, { code: 'N005_IMPL_NOT_FOUND' });
  });

  it('resolve-impl with no pending IMPL: exit 1', async () => {
    const emptyRoot = makeTempDir('polywave-resolve-empty-');
    const result = await runCli(['resolve-impl'], { cwd: emptyRoot });
    expectCodedError(result, { exitCode: 1, code: 'N005_IMPL_NOT_FOUND' });
  });
});

describe('programs: list-programs and program-status on a copy of the corpus', () => {
  const programName = 'PROGRAM-create-program-cross-repo-and-program-wave-conflict-and-engine-reference-injection.yaml';
  const implSlugs = ['create-program-cross-repo', 'program-wave-conflict', 'engine-reference-injection'];
  let root: string;
  let programPath: string;

  beforeAll(() => {
    root = makeTempDir('polywave-programs-');
    programPath = copyInto(path.join(goCorpus, 'PROGRAM', 'complete', programName), path.join(root, 'docs', 'PROGRAM'));
    copyInto(path.join(goCorpus, 'PROGRAM', 'complete', 'PROGRAM-engine-hardening.yaml'), path.join(root, 'docs', 'PROGRAM'));
    for (const slug of implSlugs) copyInto(path.join(goCorpus, 'IMPL', 'complete', `IMPL-${slug}.yaml`), path.join(root, 'docs', 'IMPL', 'complete'));
  });

  it('list-programs lists both programs', async () => {
    const result = await runCli(['list-programs'], { cwd: root });
    expect(result.code, result.stderr).toBe(0);
    const programs = parseStdoutJson<Array<{ path: string; slug: string; state: string; title: string }>>(result);
    expect(programs.map((program) => program.slug).sort()).toEqual(['create-program-cross-repo-and-program-wave-conflict-and-engine-reference-injection', 'engine-hardening']);
    expect(programs.find((program) => program.slug === 'engine-hardening')).toMatchObject({ state: 'COMPLETE', title: 'engine-hardening' });
  });

  it('program-status --json cross-checks the IMPL docs on disk and changes no file', async () => {
    const before = readFileSync(programPath, 'utf8');
    const result = await runCli(['program-status', programPath, '--json'], { cwd: root });
    expect(result.code, result.stderr).toBe(0);
    const status = parseStdoutJson<{
      program_slug: string;
      state: string;
      current_tier: number;
      tier_statuses: Array<{ number: number; complete: boolean; impl_statuses: Array<{ slug: string; disk_state: string | null; status: string; mismatch: boolean }> }>;
      completion: { impls_total: number };
    }>(result);
    expect(status.program_slug).toBe('create-program-cross-repo-and-program-wave-conflict-and-engine-reference-injection');
    expect(status.tier_statuses.map((tier) => tier.number)).toEqual([1, 2]);
    const entries = status.tier_statuses.flatMap((tier) => tier.impl_statuses);
    expect(entries.map((entry) => entry.slug).sort()).toEqual([...implSlugs].sort());
    for (const entry of entries) expect(entry).toMatchObject({ disk_state: 'COMPLETE', status: 'complete', mismatch: false });
    expect(readFileSync(programPath, 'utf8')).toBe(before);

    // An IMPL doc that is back in flight (docs/IMPL/ wins over complete/) shows up as a mismatch.
    const inFlight = readFileSync(path.join(goCorpus, 'IMPL', 'complete', 'IMPL-program-wave-conflict.yaml'), 'utf8').replace(/^state: COMPLETE$/m, 'state: WAVE_EXECUTING');
    writeFileSync(path.join(root, 'docs', 'IMPL', 'IMPL-program-wave-conflict.yaml'), inFlight);
    const again = parseStdoutJson<typeof status>(await runCli(['program-status', programPath, '--json'], { cwd: root }));
    const entry = again.tier_statuses.flatMap((tier) => tier.impl_statuses).find((candidate) => candidate.slug === 'program-wave-conflict');
    expect(entry).toMatchObject({ disk_state: 'WAVE_EXECUTING', status: 'executing', mismatch: true });
    expect(again.tier_statuses.find((tier) => tier.number === 2)!.complete).toBe(false);
    expect(readFileSync(programPath, 'utf8')).toBe(before);
  });

  it('program-status prints the E32 text summary by default (by slug too)', async () => {
    const result = await runCli(['program-status', programPath], { cwd: root });
    expect(result.code, result.stderr).toBe(0);
    expect(() => JSON.parse(result.stdout)).toThrow();
    expect(result.stdout).toContain('create-program-cross-repo');
    expect(result.stdout).toMatch(/tier/i);
    expectNoStackTrace(result.stderr);
    const bySlug = await runCli(['program-status', 'engine-hardening'], { cwd: root });
    expect(bySlug.code, bySlug.stderr).toBe(0);
    expect(bySlug.stdout).toContain('engine-hardening');
  });

  it('validate-program --import-mode reads the IMPL docs of the copy', async () => {
    const result = await runCli(['validate-program', programPath, '--import-mode'], { cwd: root });
    const verdict = parseStdoutJson<{ valid: boolean; errors: unknown[] }>(result);
    expect(result.code).toBe(verdict.valid ? 0 : 1);
    expectNoStackTrace(result.stderr);
  });

  it('program-status of a missing program: exit 2', async () => {
    expectCodedError(await runCli(['program-status', 'no-such-program'], { cwd: root }), { exitCode: 2, code: 'N005_IMPL_NOT_FOUND' });
  });
});
