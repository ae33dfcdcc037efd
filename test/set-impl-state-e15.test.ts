import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runCli } from './support/cli.js';
import { expectCodedError, parseStdoutJson } from './support/cli-assert.js';
import { createTestRepo } from './support/git-repo.js';

// Issue 13, item 6: set-impl-state refuses REVIEWED -> COMPLETE and BLOCKED -> COMPLETE (they
// skip the E15 WAVE_VERIFIED guard): exit 1, coded, the manifest unchanged. Real repository.

function impl(state: string): string {
  return [
    'title: Demo',
    'feature_slug: demo',
    'verdict: SUITABLE',
    `state: ${state}`,
    'file_ownership:',
    '    - file: src/a.ts',
    '      agent: A',
    '      wave: 1',
    '      action: new',
    'waves:',
    '    - number: 1',
    '      agents:',
    '        - id: A',
    '          task: Implement src/a.ts.',
    '          files:',
    '            - src/a.ts',
    '',
  ].join('\n');
}

describe('set-impl-state: the E15 WAVE_VERIFIED guard (issue 13)', () => {
  it.each([['REVIEWED'], ['BLOCKED']])('%s -> COMPLETE is refused (exit 1, N008, file unchanged)', async (state) => {
    const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-demo.yaml': impl(state) } });
    const manifest = repo.path('docs/IMPL/IMPL-demo.yaml');
    const before = readFileSync(manifest, 'utf8');
    const result = await runCli(['set-impl-state', manifest, '--state', 'COMPLETE'], { cwd: repo.dir, env: repo.env as Record<string, string> });
    const { message } = expectCodedError(result, { exitCode: 1, code: 'N008_STATE_TRANSITION' });
    expect(message).toContain(`E15: transition from ${state} to COMPLETE skips the WAVE_VERIFIED guard`);
    expect(readFileSync(manifest, 'utf8')).toBe(before);
  });

  it('BLOCKED -> WAVE_VERIFIED -> COMPLETE is the way through', async () => {
    const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-demo.yaml': impl('BLOCKED') } });
    const manifest = repo.path('docs/IMPL/IMPL-demo.yaml');
    const verified = await runCli(['set-impl-state', manifest, '--state', 'WAVE_VERIFIED'], { cwd: repo.dir, env: repo.env as Record<string, string> });
    expect(verified.code, verified.stderr).toBe(0);
    const complete = await runCli(['set-impl-state', manifest, '--state', 'COMPLETE'], { cwd: repo.dir, env: repo.env as Record<string, string> });
    expect(complete.code, complete.stderr).toBe(0);
    expect(parseStdoutJson<{ previous_state: string; new_state: string }>(complete)).toMatchObject({ previous_state: 'WAVE_VERIFIED', new_state: 'COMPLETE' });
  });
});
