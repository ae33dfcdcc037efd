import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { assignAgentIds } from '../src/protocol/agent-ids.js';
import { parseImpl } from '../src/protocol/parse-impl.js';
import { runCli } from './support/cli.js';
import { expectNoStackTrace, expectVerdict, parseStdoutJson } from './support/cli-assert.js';
import { makeTempDir } from './support/temp.js';

/**
 * THE concurrency test (ARCHITECTURE.md "Writing manifests — one path"): 50 real
 * `polywave set-completion` processes write 50 reports into one manifest at the same time.
 * Nothing may be lost, the comments stay, and no lock or temp file is left behind.
 */
const agentCount = 50;
const agentsPerWave = 10;
const ids = assignAgentIds(agentCount);

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
    '# Fifty agents, one manifest: the concurrency test of set-completion.',
    '# Every comment in this file must survive 50 concurrent writers.',
    '# ------------------------------------------------------------------',
    'title: Fifty agents in parallel',
    'feature_slug: fifty-agents',
    'verdict: SUITABLE',
    'test_command: npm test   # run by the gates',
    'lint_command: npm run lint',
    '# Ownership: one file per agent, disjoint (I1).',
    'file_ownership:',
  ];
  ids.forEach((id, index) => {
    lines.push(`    - file: ${fileOf(id)}`, `      agent: ${id}`, `      wave: ${waveOf(index)}`, '      action: new');
  });
  lines.push('# Waves of ten agents each.', 'waves:');
  for (let wave = 1; wave <= Math.ceil(agentCount / agentsPerWave); wave += 1) {
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

describe('50 concurrent set-completion processes', () => {
  it('end with 50 reports, comments intact, a valid manifest and no leftovers', async () => {
    expect(ids).toHaveLength(agentCount);
    expect(ids[25]).toBe('Z');
    expect(ids[26]).toBe('A2');
    expect(ids[49]).toBe('X2');

    const directory = makeTempDir('polywave-concurrency-');
    const manifest = path.join(directory, 'IMPL-fifty-agents.yaml');
    const original = buildManifest();
    writeFileSync(manifest, original);
    const parsedBefore = parseImpl(original);
    expect(parsedBefore.manifest, JSON.stringify(parsedBefore.findings)).not.toBeNull();
    const baseline = await runCli(['validate', manifest]);
    expect(expectVerdict(baseline).valid, baseline.stdout).toBe(true);

    const start = performance.now();
    const results = await Promise.all(
      ids.map((id) =>
        runCli(['set-completion', manifest, '--agent', id, '--status', 'complete', '--commit', commitFor(id), '--files-changed', fileOf(id), '--verification', 'PASS', '--notes', `agent ${id}: done # not a comment`], {
          cwd: directory,
          timeoutMs: 360_000,
        }),
      ),
    );
    const wallMs = performance.now() - start;
    const slowest = Math.max(...results.map((result) => result.durationMs));
    console.log(`50 concurrent set-completion processes: wall ${Math.round(wallMs)} ms (slowest process ${Math.round(slowest)} ms)`);

    const after = readFileSync(manifest, 'utf8');
    const parsed = parseImpl(after);
    expect(parsed.fatal, JSON.stringify(parsed.findings)).toBe(false);
    expect(parsed.manifest, JSON.stringify(parsed.findings)).not.toBeNull();
    const reports = (parsed.data as { completion_reports: Record<string, { status: string; commit: string; files_changed: string[]; notes: string }> }).completion_reports ?? {};

    // Two different failures, reported separately: a writer that said "saved" but whose report
    // is gone (a lost update), and a writer that failed.
    const saved = ids.filter((_, index) => results[index]!.code === 0);
    expect.soft(saved.filter((id) => !(id in reports)), 'lost updates: exit 0 but the report is missing').toEqual([]);
    expect.soft(
      results.map((result, index) => ({ id: ids[index]!, code: result.code, stderr: result.stderr.trim() })).filter((result) => result.code !== 0),
      'set-completion processes that failed',
    ).toEqual([]);
    results.forEach((result, index) => {
      const id = ids[index]!;
      expect(result.code, `agent ${id}: exit ${result.code}\n${result.stderr}`).toBe(0);
      expect(parseStdoutJson(result, id)).toEqual({ agent: id, status: 'complete', saved: true });
      expectNoStackTrace(result.stderr, id);
    });
    expect(Object.keys(reports).sort()).toEqual([...ids].sort());
    for (const id of ids) {
      expect(reports[id], id).toEqual({ status: 'complete', commit: commitFor(id), files_changed: [fileOf(id)], verification: 'PASS', notes: `agent ${id}: done # not a comment` });
    }

    // Only lines were added: every original line (comments included) is still there, in order.
    // (The report block goes above the closing comment, which stays the last line.)
    const originalLines = original.split('\n');
    const afterLines = after.split('\n');
    let matched = 0;
    for (const line of afterLines) if (matched < originalLines.length && line === originalLines[matched]) matched += 1;
    expect(matched, 'original lines kept in order').toBe(originalLines.length);
    const commentLines = originalLines.filter((line) => line.includes('#'));
    expect(commentLines.length).toBeGreaterThanOrEqual(8);
    for (const line of commentLines) expect(afterLines).toContain(line);
    expect(afterLines.filter((line) => line.includes('#')).length).toBe(commentLines.length + agentCount);

    // Everything but the reports is unchanged.
    const { completion_reports: _reports, ...rest } = parsed.data as Record<string, unknown>;
    expect(rest).toEqual(parsedBefore.data);

    const validation = await runCli(['validate', manifest]);
    const verdict = expectVerdict(validation);
    expect(verdict.valid, validation.stdout).toBe(true);
    const conflicts = await runCli(['check-conflicts', manifest]);
    expect(conflicts.code, conflicts.stdout).toBe(0);

    // No lock file, no temp file.
    expect(readdirSync(directory)).toEqual([path.basename(manifest)]);
  }, 420_000);
});
