import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { assignAgentIds } from '../src/protocol/agent-ids.js';
import { parseImpl } from '../src/protocol/parse-impl.js';
import { resolveLockLocation } from '../src/store/lock-location.js';
import { runCli } from './support/cli.js';
import { expectNoStackTrace, expectVerdict, parseStdoutJson } from './support/cli-assert.js';
import { makeTempDir } from './support/temp.js';

/**
 * THE concurrency test (ARCHITECTURE.md "Writing manifests — one path"): real `polywave
 * set-completion` and `polywave update-status` processes write one manifest, in a real git
 * repository, all at the same time. Every writer succeeds, nothing is lost or changed that was
 * not asked for, the comments stay, and nothing is left in docs/IMPL/ or the lock's inbox.
 *
 * Default: 50 set-completion + 10 update-status (bounded time on 2 cores). The full load of
 * issue 11 — 200 + 50 — runs with POLYWAVE_TEST_WRITERS=200,50 (and in `npm run bench:writers`).
 */
const [reportWriters, statusWriters] = (process.env.POLYWAVE_TEST_WRITERS ?? '50,10').split(',').map(Number) as [number, number];
const agentCount = Math.min(234, Math.max(reportWriters + statusWriters, reportWriters));
const agentsPerWave = 26;
const ids = assignAgentIds(agentCount);
const gitEnv = { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };

function commitFor(id: string): string {
  return createHash('sha1').update(`agent-${id}`).digest('hex');
}

function fileOf(id: string): string {
  return `src/agents/agent-${id.toLowerCase()}.ts`;
}

function waveOf(index: number): number {
  return Math.floor(index / agentsPerWave) + 1;
}

function buildManifest(): string {
  const lines: string[] = [
    '# ------------------------------------------------------------------',
    '# Many agents, one manifest: the concurrency test of set-completion.',
    '# Every comment in this file must survive the concurrent writers.',
    '# ------------------------------------------------------------------',
    'title: Many agents in parallel',
    'feature_slug: many-agents',
    'verdict: SUITABLE',
    'test_command: npm test   # run by the gates',
    'lint_command: npm run lint',
    '# Ownership: one file per agent, disjoint (I1).',
    'file_ownership:',
  ];
  ids.forEach((id, index) => {
    lines.push(`    - file: ${fileOf(id)}`, `      agent: ${id}`, `      wave: ${waveOf(index)}`, '      action: new');
  });
  lines.push('# Waves of twenty-six agents each.', 'waves:');
  for (let wave = 1; wave <= waveOf(ids.length - 1); wave += 1) {
    lines.push(`    - number: ${wave}`, '      agents:');
    ids.forEach((id, index) => {
      if (waveOf(index) !== wave) return;
      lines.push(`        - id: ${id}`, `          task: Implement module ${id} in ${fileOf(id)} with its unit tests.`, '          files:', `            - ${fileOf(id)}`);
    });
  }
  lines.push(
    'quality_gates:',
    '    level: standard',
    '    gates:',
    '        # the one gate',
    '        - type: test',
    '          command: npm test',
    '          required: true',
    'state: WAVE_EXECUTING',
    '# Completion reports are appended below by the agents.',
    '',
  );
  return lines.join('\n');
}

interface Writer {
  kind: 'set-completion' | 'update-status';
  id: string;
  args: string[];
}

/**
 * set-completion for the first agents; update-status for the agents after them (partial, own
 * commit) and, once those run out, for the first agents again with exactly the status and commit
 * their set-completion writes — so every order of the writers gives the same manifest.
 */
function plannedWriters(): Writer[] {
  const writers: Writer[] = ids.slice(0, reportWriters).map((id) => ({
    kind: 'set-completion',
    id,
    args: ['--agent', id, '--status', 'complete', '--commit', commitFor(id), '--files-changed', fileOf(id), '--verification', 'PASS', '--notes', `agent ${id}: done # not a comment`],
  }));
  const fresh = ids.slice(reportWriters);
  for (let index = 0; index < statusWriters; index += 1) {
    const reuse = index >= fresh.length;
    const id = reuse ? ids[index - fresh.length]! : fresh[index]!;
    writers.push({ kind: 'update-status', id, args: ['--wave', String(waveOf(ids.indexOf(id))), '--agent', id, '--status', reuse ? 'complete' : 'partial', '--commit', commitFor(id)] });
  }
  return writers;
}

function expectedReports(writers: Writer[]): Record<string, Record<string, unknown>> {
  const expected: Record<string, Record<string, unknown>> = {};
  for (const writer of writers) {
    if (writer.kind === 'set-completion') expected[writer.id] = { status: 'complete', commit: commitFor(writer.id), files_changed: [fileOf(writer.id)], verification: 'PASS', notes: `agent ${writer.id}: done # not a comment` };
  }
  for (const writer of writers) if (writer.kind === 'update-status') expected[writer.id] ??= { status: 'partial', commit: commitFor(writer.id) };
  return expected;
}

describe(`${reportWriters} set-completion + ${statusWriters} update-status processes at once`, () => {
  it('all succeed; every report present and exact, comments intact, a valid manifest, no leftovers anywhere', async () => {
    const root = path.join(makeTempDir('polywave-concurrency-'), 'repo');
    const implDirectory = path.join(root, 'docs', 'IMPL');
    mkdirSync(implDirectory, { recursive: true });
    const manifest = path.join(implDirectory, 'IMPL-many-agents.yaml');
    const original = buildManifest();
    writeFileSync(manifest, original);
    for (const args of [['init', '-q', '-b', 'main'], ['add', '-A'], ['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '-m', 'manifest']]) execFileSync('git', args, { cwd: root, env: { ...process.env, ...gitEnv } });
    const parsedBefore = parseImpl(original);
    expect(parsedBefore.manifest, JSON.stringify(parsedBefore.findings)).not.toBeNull();
    const baseline = await runCli(['validate', manifest]);
    expect(expectVerdict(baseline).valid, baseline.stdout).toBe(true);

    const writers = plannedWriters();
    const start = performance.now();
    const results = await Promise.all(writers.map((writer) => runCli([writer.kind, manifest, ...writer.args], { cwd: root, timeoutMs: 900_000 })));
    const wallMs = performance.now() - start;
    const slowest = Math.max(...results.map((result) => result.durationMs));
    console.log(`${reportWriters} set-completion + ${statusWriters} update-status processes: wall ${Math.round(wallMs)} ms (slowest process ${Math.round(slowest)} ms)`);

    const after = readFileSync(manifest, 'utf8');
    const parsed = parseImpl(after);
    expect(parsed.fatal, JSON.stringify(parsed.findings)).toBe(false);
    expect(parsed.manifest, JSON.stringify(parsed.findings)).not.toBeNull();
    const reports = (parsed.data as { completion_reports?: Record<string, unknown> }).completion_reports ?? {};

    // Two different failures, reported separately: a writer that said "saved" but whose report
    // is gone (a lost update), and a writer that failed.
    const saved = writers.filter((_, index) => results[index]!.code === 0);
    expect.soft(saved.filter((writer) => !(writer.id in reports)).map((writer) => `${writer.kind} ${writer.id}`), 'lost updates: exit 0 but the report is missing').toEqual([]);
    expect.soft(
      results.map((result, index) => ({ writer: `${writers[index]!.kind} ${writers[index]!.id}`, code: result.code, stderr: result.stderr.trim() })).filter((result) => result.code !== 0),
      'processes that failed',
    ).toEqual([]);
    results.forEach((result, index) => {
      const writer = writers[index]!;
      expect(result.code, `${writer.kind} ${writer.id}: exit ${result.code}\n${result.stderr}`).toBe(0);
      if (writer.kind === 'set-completion') expect(parseStdoutJson(result, writer.id)).toEqual({ agent: writer.id, status: 'complete', saved: true });
      else expect(parseStdoutJson(result, writer.id)).toMatchObject({ agent: writer.id, updated: true });
      expectNoStackTrace(result.stderr, writer.id);
    });
    expect(reports).toEqual(expectedReports(writers));

    // Only lines were added: every original line (comments included) is still there, in order.
    const originalLines = original.split('\n');
    const afterLines = after.split('\n');
    let matched = 0;
    for (const line of afterLines) if (matched < originalLines.length && line === originalLines[matched]) matched += 1;
    expect(matched, 'original lines kept in order').toBe(originalLines.length);
    const commentLines = originalLines.filter((line) => line.includes('#'));
    for (const line of commentLines) expect(afterLines).toContain(line);
    expect(afterLines.filter((line) => line.includes('#')).length).toBe(commentLines.length + reportWriters);

    // Everything but the reports is unchanged.
    const { completion_reports: _reports, ...rest } = parsed.data as Record<string, unknown>;
    expect(rest).toEqual(parsedBefore.data);

    const validation = await runCli(['validate', manifest]);
    expect(expectVerdict(validation).valid, validation.stdout).toBe(true);
    const conflicts = await runCli(['check-conflicts', manifest]);
    expect(conflicts.code, conflicts.stdout).toBe(0);

    // No lock, temp or queue file anywhere: docs/IMPL holds the manifest, git sees only its change,
    // the inbox (in .git/polywave/locks) is empty and no commit record is left.
    expect(readdirSync(implDirectory)).toEqual([path.basename(manifest)]);
    expect(execFileSync('git', ['status', '--porcelain', '--untracked-files=all'], { cwd: root, encoding: 'utf8' }).trim()).toBe('M docs/IMPL/IMPL-many-agents.yaml');
    const location = await resolveLockLocation(manifest);
    expect(location.gitCommonDir).toBe(path.join(root, '.git'));
    expect(readdirSync(location.inboxPath)).toEqual([]);
    expect(existsSync(location.commitRecordPath)).toBe(false);
  }, 1_200_000);
});
