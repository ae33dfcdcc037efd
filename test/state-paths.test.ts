import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { adoptMergeLog, mergeLogPath } from '../src/engine/merge.js';
import { waveStateDir } from '../src/engine/state-paths.js';
import { expectCodedError } from './support/cli-assert.js';
import { runCli } from './support/cli.js';
import { makeTempDir } from './support/temp.js';

// Per-wave runtime state is IMPL-scoped (.polywave-state/<slug>/wave<N>/): what the layout change
// must keep working — a merge log left at the old place, and debug-journal's short references.

function journal(root: string, relative: string, lines: object[]): void {
  const dir = path.join(root, '.polywave-state', relative);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'index.jsonl'), lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
}

describe('IMPL-scoped wave state', () => {
  it('a slug cannot climb out of the state directory', () => {
    const root = makeTempDir();
    for (const slug of ['..', '../../etc', '/abs', 'a/b', '']) {
      const dir = waveStateDir(root, slug, 1);
      expect(dir.startsWith(path.join(root, '.polywave-state') + path.sep), slug).toBe(true);
      expect(path.relative(path.join(root, '.polywave-state'), dir).split(path.sep)).toHaveLength(2);
    }
  });

  it('adopts a merge log left at .polywave-state/wave<N>/ only by the IMPL whose branches it names', async () => {
    const root = makeTempDir();
    const legacy = { wave: 1, target_branch: 'main', merges: [{ agent: 'A', branch: 'polywave/alpha/wave1-agent-A', tip: 'a'.repeat(40), merge_sha: 'b'.repeat(40), merged_at: '2026-12-01T00:00:00Z' }] };
    mkdirSync(path.join(root, '.polywave-state', 'wave1'), { recursive: true });
    writeFileSync(path.join(root, '.polywave-state', 'wave1', 'merge-log.json'), JSON.stringify(legacy));
    // Another IMPL's wave 1 does not take it.
    const beta = await adoptMergeLog(root, 'beta', 1);
    expect(beta).toBe(mergeLogPath(root, 'beta', 1));
    expect(() => readFileSync(beta)).toThrow();
    // Its own IMPL does, once; a later different legacy file does not overwrite the adopted log.
    const alpha = await adoptMergeLog(root, 'alpha', 1);
    expect(JSON.parse(readFileSync(alpha, 'utf8'))).toEqual(legacy);
    writeFileSync(path.join(root, '.polywave-state', 'wave1', 'merge-log.json'), JSON.stringify({ ...legacy, target_branch: 'other' }));
    await adoptMergeLog(root, 'alpha', 1);
    expect(JSON.parse(readFileSync(alpha, 'utf8'))).toEqual(legacy);
  });

  it('debug-journal: <slug>/wave1/agent-A, the one IMPL with that journal, the old place, and a coded error when two IMPLs have it', async () => {
    const root = makeTempDir();
    journal(root, 'alpha/wave1/agent-A', [{ kind: 'tool_use', tool_name: 'Read', tool_use_id: 't1', input: { file_path: 'alpha.ts' } }]);
    const only = await runCli(['debug-journal', 'wave1/agent-A', '--repo-dir', root]);
    expect(only.code, only.stderr).toBe(0);
    expect(only.stdout).toContain('alpha.ts');

    journal(root, 'beta/wave1/agent-A', [{ kind: 'tool_use', tool_name: 'Read', tool_use_id: 't2', input: { file_path: 'beta.ts' } }]);
    const ambiguous = expectCodedError(await runCli(['debug-journal', 'wave1-agent-A', '--repo-dir', root]), { code: 'X001_INVALID_INPUT' });
    expect(ambiguous.message).toContain('alpha, beta');
    const named = await runCli(['debug-journal', 'beta/wave1/agent-A', '--repo-dir', root]);
    expect(named.code, named.stderr).toBe(0);
    expect(named.stdout).toContain('beta.ts');
    expect(named.stdout).not.toContain('alpha.ts');
    const full = await runCli(['debug-journal', path.join(root, '.polywave-state', 'alpha', 'wave1', 'agent-A'), '--repo-dir', root]);
    expect(full.stdout).toContain('alpha.ts');

    journal(root, 'wave2/agent-B', [{ kind: 'tool_use', tool_name: 'Bash', tool_use_id: 't3', input: { command: 'legacy-layout' } }]);
    const old = await runCli(['debug-journal', 'wave2/agent-B', '--repo-dir', root]);
    expect(old.code, old.stderr).toBe(0);
    expect(old.stdout).toContain('legacy-layout');
    expectCodedError(await runCli(['debug-journal', '../wave1/agent-A;rm', '--repo-dir', root]), { code: 'X001_INVALID_INPUT' });
  });
});
