import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { clearActiveWave, guardBlock, inspectHookFile, readActiveWave, writeActiveWave } from './isolation-hook.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'polywave-hook-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('isolation guard', () => {
  it('is valid POSIX sh', () => {
    const result = spawnSync('sh', ['-n'], { input: `#!/bin/sh\n${guardBlock()}`, encoding: 'utf8' });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it('the active-wave marker round-trips and is only cleared for its own slug', async () => {
    const now = new Date('2026-05-12T10:00:00Z');
    await writeActiveWave(root, { slug: 'feat', wave: 2, target_branch: 'release/1.x', impl: '/r/docs/IMPL/IMPL-feat.yaml', base_commit: 'abc' }, now);
    expect(await readActiveWave(root)).toEqual({ slug: 'feat', wave: 2, target_branch: 'release/1.x', impl: '/r/docs/IMPL/IMPL-feat.yaml', base_commit: 'abc', started_at: '2026-05-12T10:00:00Z' });
    expect(await clearActiveWave(root, { slug: 'other' })).toBe(false);
    expect(await clearActiveWave(root, { slug: 'feat' })).toBe(true);
    expect(await readActiveWave(root)).toBeUndefined();
    expect(await clearActiveWave(root)).toBe(false);
  });

  it('inspectHookFile reports missing, non-executable and foreign hooks', async () => {
    const hook = path.join(root, 'pre-commit');
    expect(await inspectHookFile(hook)).toMatchObject({ valid: false, executable: false, has_logic: false });
    writeFileSync(hook, `#!/bin/sh\n${guardBlock()}`, { mode: 0o644 });
    expect(await inspectHookFile(hook)).toMatchObject({ valid: false, reason: 'pre-commit hook is not executable', has_logic: true });
    writeFileSync(hook, '#!/bin/sh\nexit 0\n');
    chmodSync(hook, 0o755);
    expect(await inspectHookFile(hook)).toMatchObject({ valid: false, executable: true, has_logic: false });
  });
});
