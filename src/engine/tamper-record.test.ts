import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkManifest, describeFingerprint, diffFingerprints, isHarmlessConfigKey, isOrchestratorFile } from './tamper-check.js';
import { fingerprintSnapshot, fingerprintTree, isConcurrentRef, isWaveAgentRef, manifestFingerprint, pinnedGitConfig, pinsForDirectory, writeHooksSnapshot } from './tamper-record.js';

const scratch = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'polywave-tamper-')));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('refs other orchestrated work moves (a PROGRAM tier)', () => {
  it('an entry ending in / is a prefix, any other entry one exact ref — so an IMPL never leaves out its own IMPL branch', () => {
    const others = ['refs/heads/polywave/catalog/', 'refs/heads/polywave/program/shop/tier1-impl-catalog'];
    expect(isConcurrentRef('refs/heads/polywave/catalog/wave1-agent-C', others)).toBe(true);
    expect(isConcurrentRef('refs/heads/polywave/program/shop/tier1-impl-catalog', others)).toBe(true);
    // This IMPL's own target (a slug that starts like the other's) stays checked.
    expect(isConcurrentRef('refs/heads/polywave/program/shop/tier1-impl-catalog-extra', others)).toBe(false);
    expect(isConcurrentRef('refs/heads/polywave/catalog-extra/wave1-agent-A', others)).toBe(false);
    expect(isConcurrentRef('refs/heads/main', others)).toBe(false);
  });
});

describe('pinned git configuration', () => {
  it('no hooks at all, even with a verified snapshot (X25-03/04: a hook may run tree content); fsmonitor always off', () => {
    expect(pinnedGitConfig(undefined)).toEqual({ 'core.hooksPath': os.devNull, 'core.fsmonitor': 'false' });
    expect(pinnedGitConfig('/snap')).toEqual({ 'core.hooksPath': os.devNull, 'core.fsmonitor': 'false' });
  });

  it('a directory takes the pins of the longest root that contains it', () => {
    const pins = new Map([['/r', 'outer'], ['/r/.claude/worktrees/x', 'inner']]);
    expect(pinsForDirectory(pins, '/r/src')).toBe('outer');
    expect(pinsForDirectory(pins, '/r/.claude/worktrees/x/a')).toBe('inner');
    expect(pinsForDirectory(pins, '/rx')).toBeUndefined();
  });
});

describe('what is recorded', () => {
  it("leaves out exactly this wave's agent branches (E5 and legacy names)", () => {
    expect(isWaveAgentRef('refs/heads/polywave/demo/wave1-agent-A', 'demo', 1)).toBe(true);
    expect(isWaveAgentRef('refs/heads/wave1-agent-B2', 'demo', 1)).toBe(true);
    expect(isWaveAgentRef('refs/heads/polywave/demo/wave2-agent-A', 'demo', 1)).toBe(false);
    expect(isWaveAgentRef('refs/heads/polywave/other/wave1-agent-A', 'demo', 1)).toBe(false);
    expect(isWaveAgentRef('refs/tags/polywave/demo/wave1-agent-A', 'demo', 1)).toBe(false);
    expect(isWaveAgentRef('refs/heads/main', 'demo', 1)).toBe(false);
  });

  it('the manifest fingerprint ignores reports, state, later waves, tasks and context_source — nothing else', () => {
    const base = {
      title: 'x',
      state: 'WAVE_PENDING',
      test_command: 'npm test',
      file_ownership: [{ file: 'a', agent: 'A', wave: 1 }, { file: 'c', agent: 'C', wave: 2 }],
      waves: [{ number: 1, agents: [{ id: 'A', task: 'do a', files: ['a'] }] }, { number: 2, agents: [{ id: 'C', task: 'do c' }] }],
      completion_reports: { A: { status: 'complete' } },
    };
    const recorded = manifestFingerprint(base, 1);
    expect(Object.keys(recorded).sort()).toEqual(['file_ownership', 'test_command', 'title', 'waves']);
    const legit = {
      ...base,
      state: 'WAVE_EXECUTING',
      completion_reports: { A: { status: 'partial' } },
      stub_reports: { wave1: {} },
      file_ownership: [...base.file_ownership, { file: 'd', agent: 'D', wave: 3 }],
      waves: [{ number: 1, agents: [{ id: 'A', task: 'redirected (E36b)', files: ['a'], context_source: 'prepared-brief' }] }, { number: 2, agents: [] }, { number: 3, agents: [] }],
    };
    expect(manifestFingerprint(legit, 1)).toEqual(recorded);
    expect(manifestFingerprint({ ...base, waves: [{ number: 1, agents: [{ id: 'A', task: 'do a', files: ['a', 'README.md'] }] }] }, 1).waves).not.toBe(recorded.waves);
    expect(manifestFingerprint({ ...base, file_ownership: [{ file: 'README.md', agent: 'A', wave: 1 }] }, 1).file_ownership).not.toBe(recorded.file_ownership);
  });

  it('the state: one the orchestrator wrote or a wave passes through; never a later one', () => {
    const recorded = { path: 'x', fields: manifestFingerprint({ a: 1 }, 1), state: 'WAVE_PENDING' };
    for (const state of ['WAVE_PENDING', 'WAVE_EXECUTING', 'WAVE_MERGING', 'BLOCKED']) expect(checkManifest(recorded, { data: { a: 1 }, state }, 1)).toEqual([]);
    for (const state of ['WAVE_VERIFIED', 'COMPLETE', 'REVIEWED', 'SCOUT_PENDING', 'whatever']) {
      expect(checkManifest(recorded, { data: { a: 1 }, state }, 1).map((finding) => finding.what)).toEqual(['manifest state']);
    }
    expect(checkManifest({ ...recorded, state: 'WAVE_VERIFIED' }, { data: { a: 1 }, state: 'WAVE_VERIFIED' }, 1)).toEqual([]);
    expect(checkManifest(recorded, { data: { a: 1 }, state: 'WAVE_EXECUTING', mergeState: 'completed' }, 1).map((finding) => finding.what)).toEqual(['manifest merge_state']);
    expect(checkManifest(recorded, { data: { a: 2, b: 1 }, state: 'WAVE_PENDING' }, 1)).toEqual([
      { what: 'manifest field a', change: 'changed' },
      { what: 'manifest field b', change: 'added' },
    ]);
  });

  it('the orchestrator files of a main checkout: the IMPL, its lock and temp files, .polywave-state/', () => {
    const impl = 'docs/IMPL/IMPL-demo.yaml';
    for (const file of [impl, `${impl}.lock`, `${impl}.lock.123.tmp`, 'docs/IMPL/.IMPL-demo.yaml.99.abc.tmp', '.polywave-state/wave1/merge-log.json']) expect(isOrchestratorFile(file, impl)).toBe(true);
    for (const file of ['README.md', 'docs/IMPL/IMPL-other.yaml', 'docs/IMPL/evil.sh', 'docs/.IMPL-demo.yaml.1.tmp', '.polywave-stateX']) expect(isOrchestratorFile(file, impl)).toBe(false);
  });

  it('config keys that neither run code nor redirect git', () => {
    for (const key of ['user.name', 'user.email', 'color.ui', 'advice.detachedHead']) expect(isHarmlessConfigKey(key)).toBe(true);
    for (const key of ['core.hooksPath', 'core.fsmonitor', 'alias.st', 'remote.evil.url', 'include.path', 'filter.x.smudge', 'user.signingkey', 'gpg.program']) expect(isHarmlessConfigKey(key)).toBe(false);
  });
});

describe('hooks directory fingerprint and snapshot', () => {
  it('records content, mode, symlinks and subdirectories; leaves samples out; the snapshot is a dereferenced copy', async () => {
    const hooks = path.join(scratch, 'hooks');
    mkdirSync(path.join(hooks, '_'), { recursive: true });
    writeFileSync(path.join(hooks, 'pre-commit'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    writeFileSync(path.join(hooks, 'post-merge.sample'), 'sample\n', { mode: 0o755 });
    writeFileSync(path.join(hooks, '_', 'h'), 'helper\n', { mode: 0o644 });
    writeFileSync(path.join(scratch, 'shared-hook'), '#!/bin/sh\necho shared\n', { mode: 0o755 });
    symlinkSync(path.join(scratch, 'shared-hook'), path.join(hooks, 'post-merge'));
    const tree = await fingerprintTree(hooks);
    expect(Object.keys(tree).sort()).toEqual(['_', '_/h', 'post-merge', 'pre-commit']);
    expect(tree['post-merge']).toMatchObject({ kind: 'symlink', link: path.join(scratch, 'shared-hook'), mode: 0o755 });
    expect(describeFingerprint(tree['pre-commit'])).toMatch(/^file 0755 [0-9a-f]{12}$/);
    const snapshot = path.join(scratch, 'snapshot');
    const copied = await writeHooksSnapshot(hooks, snapshot);
    expect(Object.keys(copied).sort()).toEqual(['_/h', 'post-merge', 'pre-commit']);
    expect(copied['post-merge']).toEqual({ kind: 'file', mode: 0o755, sha256: tree['post-merge']!.sha256 });
    expect(await fingerprintSnapshot(snapshot)).toEqual(copied);
    // A change in the snapshot shows as a difference.
    writeFileSync(path.join(snapshot, 'post-commit'), 'x', { mode: 0o755 });
    expect(diffFingerprints('recorded hook copy', copied, await fingerprintSnapshot(snapshot)).map((finding) => finding.what)).toEqual(['recorded hook copy post-commit']);
  });
});
