import { chmodSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { FinalizeWaveOptions, FinalizeWaveResult } from '../src/engine/finalize-wave.js';
import { prepareWave, type PrepareWaveResult } from '../src/engine/prepare-wave.js';
import { hooksSnapshotPath, tamperRecordPath } from '../src/engine/tamper-record.js';
import { runCli } from './support/cli.js';
import { createWaveFixture, mergeCommits, type FixtureSpec, type WaveFixture } from './support/wave-fixture.js';

// Issue 11 item 3, tamper-proof merges, on real repositories: prepare-wave records the main
// repository (config, hooks, refs, manifest), the agents work in real worktrees, something
// changes what they must not touch, and finalize-wave refuses with TAMPER_DETECTED before any
// merge — git refs, worktrees and the manifest byte-identical before and after — while a clean
// wave merges with its hooks pinned to the recorded ones.

const spec: FixtureSpec = {
  waves: [[{ id: 'A', files: ['src/a.ts'] }, { id: 'B', files: ['src/b.ts'] }]],
  testCommand: 'test -f src/a.ts && test -f src/b.ts',
  lintCommand: 'true',
  state: 'WAVE_PENDING',
};

interface PreparedWave {
  fixture: WaveFixture;
  prepared: PrepareWaveResult;
  /** A file outside the repository that hooks planted by the tests write into (must never appear). */
  marker: string;
  recordPath: string;
}

/** A repository prepared by the real prepare-wave, both agents committed and reported complete. */
async function preparedWave(options: { hooks?: Record<string, string> } = {}): Promise<PreparedWave> {
  const fixture = await createWaveFixture(spec);
  for (const [name, text] of Object.entries(options.hooks ?? {})) {
    writeFileSync(fixture.repo.path(`.git/hooks/${name}`), text, { mode: 0o755 });
  }
  const prepared = await prepareWave({ implPath: fixture.implPath, wave: 1, env: fixture.repo.env, gitAt: fixture.gitAt, now: () => new Date('2026-05-12T09:00:00Z') });
  expect(prepared.success, JSON.stringify(prepared.steps.find((item) => item.status === 'failed'))).toBe(true);
  for (const id of ['A', 'B']) await fixture.complete(id, { [`src/${id.toLowerCase()}.ts`]: `export const ${id.toLowerCase()} = 1;\n` });
  return {
    fixture,
    prepared,
    marker: fixture.repo.sibling('HOOK-RAN'),
    recordPath: tamperRecordPath(fixture.repo.path('.git'), 'demo', 1),
  };
}

/** Everything a refused finalize must leave exactly as it was. */
async function snapshot(fixture: WaveFixture) {
  return {
    refs: await fixture.repo.run(['for-each-ref', '--format=%(refname) %(objectname)']),
    head: await fixture.repo.run(['symbolic-ref', 'HEAD']),
    worktrees: await fixture.repo.run(['worktree', 'list', '--porcelain']),
    manifest: readFileSync(fixture.implPath, 'utf8'),
    log: existsSync(fixture.repo.path('.polywave-state/demo/wave1/merge-log.json')),
  };
}

function failed(result: FinalizeWaveResult) {
  return result.steps.find((item) => item.status === 'failed');
}

/** Runs finalize-wave and asserts the refusal: TAMPER_DETECTED naming `expected`, nothing changed. */
async function expectRefused(wave: PreparedWave, expected: RegExp | string, options: { step?: string; finalize?: Partial<FinalizeWaveOptions> } = {}): Promise<FinalizeWaveResult> {
  const before = await snapshot(wave.fixture);
  const result = await wave.fixture.finalize(1, options.finalize);
  expect(result.success).toBe(false);
  expect(result.failed_step?.code, JSON.stringify(result.failed_step)).toBe('TAMPER_DETECTED');
  expect(failed(result)?.step).toBe(options.step ?? 'check-tamper');
  expect(result.failed_step?.detail).toMatch(/^TAMPER_DETECTED: /);
  expect(result.failed_step?.detail).toMatch(expected);
  expect(result.steps.some((item) => item.step === 'merge-agents' && item.status === 'success')).toBe(false);
  expect(await snapshot(wave.fixture)).toEqual(before);
  expect(await mergeCommits(wave.fixture.repo)).toHaveLength(0);
  expect(wave.fixture.manifest().state).not.toBe('WAVE_MERGING');
  expect(existsSync(wave.marker)).toBe(false);
  return result;
}

const plantingHook = (marker: string) => `#!/bin/sh\necho planted >> "${marker}"\n`;

describe('finalize-wave refuses a tampered repository (TAMPER_DETECTED, nothing changed)', () => {
  it('a post-merge hook planted in .git/hooks: never runs, the wave is refused', async () => {
    const wave = await preparedWave();
    writeFileSync(wave.fixture.repo.path('.git/hooks/post-merge'), plantingHook(wave.marker), { mode: 0o755 });
    await expectRefused(wave, /hook post-merge: \(absent\) → file 0755/);
  });

  it('a pre-merge-commit hook planted', async () => {
    const wave = await preparedWave();
    writeFileSync(wave.fixture.repo.path('.git/hooks/pre-merge-commit'), plantingHook(wave.marker), { mode: 0o755 });
    await expectRefused(wave, /hook pre-merge-commit: \(absent\) → file/);
  });

  it('an existing hook rewritten', async () => {
    const wave = await preparedWave({ hooks: { 'post-checkout': '#!/bin/sh\nexit 0\n' } });
    writeFileSync(wave.fixture.repo.path('.git/hooks/post-checkout'), plantingHook(wave.marker));
    await expectRefused(wave, /hook post-checkout: file 0755 \w{12} → file 0755 \w{12}/);
  });

  it('a disabled (non-executable) hook made executable', async () => {
    const wave = await preparedWaveDisabledHook();
    chmodSync(wave.fixture.repo.path('.git/hooks/post-merge'), 0o755);
    await expectRefused(wave, /hook post-merge: file 0644 (\w{12}) → file 0755 \1/);
  });

  it('the hooks directory made writable for everyone', async () => {
    const wave = await preparedWave();
    const directory = wave.fixture.repo.path('.git/hooks');
    const mode = statSync(directory).mode & 0o777;
    chmodSync(directory, 0o777);
    try {
      await expectRefused(wave, new RegExp(`hooks directory .*: directory 0${mode.toString(8)} → directory 0777`));
    } finally {
      chmodSync(directory, mode);
    }
  });

  it.each([
    ['core.hooksPath', ['config', 'core.hooksPath', '/tmp/evil-hooks'], /\.git\/config core\.hookspath: \(unset\) → "\/tmp\/evil-hooks"/],
    ['core.fsmonitor', ['config', 'core.fsmonitor', 'touch /tmp/fsmonitor-ran'], /\.git\/config core\.fsmonitor: \(unset\) → "touch \/tmp\/fsmonitor-ran"/],
    ['an alias', ['config', 'alias.st', '!touch /tmp/alias-ran'], /\.git\/config alias\.st: \(unset\) → "!touch \/tmp\/alias-ran"/],
    ['a new remote', ['remote', 'add', 'evil', 'https://user:secret@evil.invalid/x.git'], /\.git\/config remote\.evil\.url: \(unset\) → "https:\/\/\*\*\*@evil\.invalid\/x\.git"/],
  ])('.git/config changed: %s', async (_name, args, expected) => {
    const wave = await preparedWave();
    await wave.fixture.repo.run(args);
    const result = await expectRefused(wave, expected);
    expect(result.failed_step?.detail).not.toContain('secret');
  });

  it('a new ref, a moved tag, a moved non-agent branch', async () => {
    const wave = await preparedWaveWithRefs();
    const repo = wave.fixture.repo;
    const other = (await repo.run(['commit-tree', 'HEAD^{tree}', '-m', 'planted'])).trim();
    await repo.run(['update-ref', 'refs/heads/planted', other]);
    await repo.run(['tag', '-f', 'v1', other]);
    await repo.run(['update-ref', 'refs/heads/feature', other]);
    await expectRefused(wave, /ref refs\/heads\/feature: \w{12} → \w{12}; ref refs\/heads\/planted: \(absent\) → \w{12}; ref refs\/tags\/v1: \w{12} → \w{12}/);
  });

  it('a non-target branch moved forward: the refusal lists the commits it gained, the one under a familiar-looking tip too (X61-01)', async () => {
    const wave = await preparedWaveWithRefs();
    const repo = wave.fixture.repo;
    const foreign = (await repo.run(['commit-tree', 'feature^{tree}', '-p', 'feature', '-m', 'evil: planted under the tip'])).trim();
    const tip = (await repo.run(['commit-tree', 'feature^{tree}', '-p', foreign, '-m', 'chore: program shop BLOCKED: looks like ours'])).trim();
    await repo.run(['update-ref', 'refs/heads/feature', tip]);
    await expectRefused(wave, /ref refs\/heads\/feature: \w{12} → \w{12} \(2 new commit\(s\), newest first: \w+ chore: program shop BLOCKED: looks like ours; \w+ evil: planted under the tip\)/);
  });

  it('the merge target moved by a commit that is not a merge of the wave', async () => {
    const wave = await preparedWave();
    const repo = wave.fixture.repo;
    const planted = (await repo.run(['commit-tree', 'HEAD^{tree}', '-p', 'HEAD', '-m', 'planted on main'])).trim();
    await repo.run(['update-ref', 'refs/heads/main', planted]);
    await repo.run(['reset', '-q', '--hard', 'HEAD']);
    await expectRefused(wave, /merge target refs\/heads\/main: \w{12} → \w{12}; not merges of this wave's agent tips: \w{12} "planted on main"/);
  });

  it('the main checkout: README modified, and an untracked file', async () => {
    const wave = await preparedWave();
    wave.fixture.repo.write('README.md', '# pwned\n');
    wave.fixture.repo.write('evil.sh', 'rm -rf /\n');
    await expectRefused(wave, /uncommitted changes that are not the orchestrator's: README\.md \(modified\), evil\.sh \(untracked\)/);
  });

  it("the IMPL manifest's state rewritten, and a merge-relevant field", async () => {
    const wave = await preparedWave();
    const text = readFileSync(wave.fixture.implPath, 'utf8');
    writeFileSync(wave.fixture.implPath, text.replace(/^state: .*$/m, 'state: WAVE_VERIFIED'));
    await expectRefused(wave, /manifest state: WAVE_PENDING → WAVE_VERIFIED/);
    writeFileSync(wave.fixture.implPath, text.replace('test_command: "test -f src/a.ts && test -f src/b.ts"', 'test_command: "true"'));
    await expectRefused(wave, /manifest field test_command: changed/);
  });
});

describe('prepare-wave re-entry (E9) checks the record before it writes anything', () => {
  it('a hook planted while the agents ran: the second prepare-wave refuses, nothing written', async () => {
    const wave = await preparedWave();
    writeFileSync(wave.fixture.repo.path('.git/hooks/post-checkout'), plantingHook(wave.marker), { mode: 0o755 });
    const before = await snapshot(wave.fixture);
    const again = await prepareWave({ implPath: wave.fixture.implPath, wave: 1, env: wave.fixture.repo.env, gitAt: wave.fixture.gitAt, now: () => new Date('2026-05-12T11:00:00Z') });
    expect(again.success).toBe(false);
    const refused = again.steps.find((item) => item.status === 'failed');
    expect(refused?.step).toBe('tamper_check');
    expect(refused?.detail).toMatch(/^TAMPER_DETECTED: wave 1 was prepared before .*hook post-checkout: \(absent\) → file 0755/);
    expect((refused?.data as { code?: string }).code).toBe('TAMPER_DETECTED');
    expect(again.steps.map((item) => item.step)).not.toContain('working_dir_check');
    expect(await snapshot(wave.fixture)).toEqual(before);
    expect(existsSync(wave.marker)).toBe(false);
    // The caller vouches for it: listed, recorded again, and finalize takes it as recorded.
    const accepted = await prepareWave({ implPath: wave.fixture.implPath, wave: 1, env: wave.fixture.repo.env, gitAt: wave.fixture.gitAt, now: () => new Date('2026-05-12T11:00:00Z'), acceptChanges: true });
    expect(accepted.success, JSON.stringify(accepted.steps.find((item) => item.status === 'failed'))).toBe(true);
    expect(accepted.steps.find((item) => item.step === 'tamper_check')).toMatchObject({ status: 'warning', detail: expect.stringContaining('hook post-checkout') });
    expect((await wave.fixture.finalize(1)).success).toBe(true);
  });

  it('an untampered re-entry passes and records again', async () => {
    const wave = await preparedWave();
    const again = await prepareWave({ implPath: wave.fixture.implPath, wave: 1, env: wave.fixture.repo.env, gitAt: wave.fixture.gitAt, now: () => new Date('2026-05-12T11:00:00Z') });
    expect(again.success, JSON.stringify(again.steps.find((item) => item.status === 'failed'))).toBe(true);
    expect(again.steps.find((item) => item.step === 'tamper_check')?.detail).toContain('E9 re-entry: the repository is as recorded');
    const result = await wave.fixture.finalize(1);
    expect(result.success, JSON.stringify(failed(result))).toBe(true);
  });
});

describe('an agent branch changing files its agent does not own (issue 11: refused as before)', () => {
  it('is refused by predict-conflicts from the real diff, even when the report hides the file', async () => {
    const fixture = await createWaveFixture(spec);
    const prepared = await prepareWave({ implPath: fixture.implPath, wave: 1, env: fixture.repo.env, gitAt: fixture.gitAt, now: () => new Date('2026-05-12T09:00:00Z') });
    expect(prepared.success).toBe(true);
    const commit = await fixture.work('A', { 'src/a.ts': 'export const a = 1;\n', 'README.md': '# rewritten by agent A\n', 'src/base.ts': 'export const base = 666;\n' });
    await fixture.report('A', { status: 'complete', commit, branch: fixture.branch('A'), worktree: fixture.worktree('A'), files_created: ['src/a.ts'], verification: 'PASS' });
    await fixture.complete('B', { 'src/b.ts': 'export const b = 1;\n' });
    const head = await fixture.head();
    const result = await fixture.finalize(1);
    expect(result.success).toBe(false);
    expect(result.steps.find((item) => item.step === 'check-tamper')?.status).toBe('success');
    expect(failed(result)?.step).toBe('predict-conflicts');
    expect(failed(result)?.detail).toContain('agent A changed README.md (owned by no agent of this wave)');
    expect(failed(result)?.detail).toContain('agent A changed src/base.ts (owned by no agent of this wave)');
    expect(await fixture.head()).toBe(head);
    expect(await mergeCommits(fixture.repo)).toHaveLength(0);
    expect(fixture.repo.read('README.md')).toBe('# test repository\n');
  });
});

/** A prepared wave in a repository that already has a tag `v1` and a branch `feature`. */
function preparedWaveWithRefs(): Promise<PreparedWave> {
  return preparedWaveAfter(async (fixture) => {
    await fixture.repo.run(['tag', 'v1', 'HEAD']);
    await fixture.repo.run(['branch', 'feature', 'HEAD']);
  });
}

/** A prepared wave whose repository has a disabled (mode 0644) post-merge hook. */
function preparedWaveDisabledHook(): Promise<PreparedWave> {
  return preparedWaveAfter((fixture) => {
    writeFileSync(fixture.repo.path('.git/hooks/post-merge'), plantingHook(fixture.repo.sibling('HOOK-RAN')), { mode: 0o644 });
    chmodSync(fixture.repo.path('.git/hooks/post-merge'), 0o644);
  });
}

async function preparedWaveAfter(setup: (fixture: WaveFixture) => void | Promise<void>): Promise<PreparedWave> {
  const fixture = await createWaveFixture(spec);
  await setup(fixture);
  const prepared = await prepareWave({ implPath: fixture.implPath, wave: 1, env: fixture.repo.env, gitAt: fixture.gitAt, now: () => new Date('2026-05-12T09:00:00Z') });
  expect(prepared.success).toBe(true);
  for (const id of ['A', 'B']) await fixture.complete(id, { [`src/${id.toLowerCase()}.ts`]: `export const ${id.toLowerCase()} = 1;\n` });
  return { fixture, prepared, marker: fixture.repo.sibling('HOOK-RAN'), recordPath: tamperRecordPath(fixture.repo.path('.git'), 'demo', 1) };
}

describe('finalize-wave CLI on a tampered repository', () => {
  it('exit 1, the result JSON with failed_step.code, one coded line on stderr; nothing changed', async () => {
    const wave = await preparedWave();
    writeFileSync(wave.fixture.repo.path('.git/hooks/post-merge'), plantingHook(wave.marker), { mode: 0o755 });
    const before = await snapshot(wave.fixture);
    const cli = await runCli(['finalize-wave', wave.fixture.implPath, '--wave', '1'], { cwd: wave.fixture.repo.dir, env: { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' }, timeoutMs: 90_000 });
    expect(cli.code, cli.stderr).toBe(1);
    const result = JSON.parse(cli.stdout) as FinalizeWaveResult;
    expect(result.failed_step).toMatchObject({ step: 'check-tamper', code: 'TAMPER_DETECTED' });
    expect(cli.stderr.split('\n').filter((line) => line.includes('not finalized'))).toEqual([expect.stringMatching(/^finalize-wave: wave 1 not finalized — \[check-tamper\] TAMPER_DETECTED: .*hook post-merge/)]);
    expect(await snapshot(wave.fixture)).toEqual(before);
    expect(existsSync(wave.marker)).toBe(false);
  });
});

describe('finalize-wave with an untampered repository', () => {
  it('merges run no repository hook, not even the recorded one (X25-03/04: a .git/hooks entry may run tree content); the snapshot is still recorded', async () => {
    const legit = (marker: string) => `#!/bin/sh\necho legit >> "${marker}"\n`;
    const fixture = await createWaveFixture(spec);
    const legitMarker = fixture.repo.sibling('LEGIT-RAN');
    writeFileSync(fixture.repo.path('.git/hooks/post-merge'), legit(legitMarker), { mode: 0o755 });
    const prepared = await prepareWave({ implPath: fixture.implPath, wave: 1, env: fixture.repo.env, gitAt: fixture.gitAt, now: () => new Date('2026-05-12T09:00:00Z') });
    expect(prepared.success).toBe(true);
    const snapshotDir = hooksSnapshotPath(fixture.repo.path('.git'), 'demo', 1);
    expect(readdirSync(snapshotDir).sort()).toEqual(['post-merge', 'pre-commit']);
    for (const id of ['A', 'B']) await fixture.complete(id, { [`src/${id.toLowerCase()}.ts`]: `export const ${id.toLowerCase()} = 1;\n` });
    const result = await fixture.finalize(1);
    expect(result.success, JSON.stringify(failed(result))).toBe(true);
    expect(result.steps.find((item) => item.step === 'check-tamper')?.status).toBe('success');
    expect(await mergeCommits(fixture.repo)).toHaveLength(2);
    // The recorded post-merge hook is the user's, but it ran for neither merge: polywave's host git runs no hook.
    expect(existsSync(legitMarker)).toBe(false);
    expect(readFileSync(fixture.repo.path('.git/hooks/post-merge'), 'utf8')).toBe(legit(legitMarker));
  });

  it("no hook runs for the whole run: a self-rewriting hook that would plant another never runs, nor does what it would plant", async () => {
    const fixture = await createWaveFixture(spec);
    const legitMarker = fixture.repo.sibling('LEGIT-RAN');
    const marker = fixture.repo.sibling('HOOK-RAN');
    const hooks = fixture.repo.path('.git/hooks');
    // A recorded hook that, once run, rewrites itself and plants a pre-merge-commit hook.
    const legit = [
      '#!/bin/sh',
      `echo legit >> "${legitMarker}"`,
      `printf '#!/bin/sh\necho planted >> "${marker}"\n' > "${hooks}/post-merge.new" && chmod 755 "${hooks}/post-merge.new" && mv "${hooks}/post-merge.new" "${hooks}/post-merge"`,
      `cp "${hooks}/post-merge" "${hooks}/pre-merge-commit"`,
      '',
    ].join('\n');
    writeFileSync(path.join(hooks, 'post-merge'), legit, { mode: 0o755 });
    const prepared = await prepareWave({ implPath: fixture.implPath, wave: 1, env: fixture.repo.env, gitAt: fixture.gitAt, now: () => new Date('2026-05-12T09:00:00Z') });
    expect(prepared.success).toBe(true);
    for (const id of ['A', 'B']) await fixture.complete(id, { [`src/${id.toLowerCase()}.ts`]: `export const ${id.toLowerCase()} = 1;\n` });
    const result = await fixture.finalize(1);
    expect(result.success, JSON.stringify(failed(result))).toBe(true);
    expect(await mergeCommits(fixture.repo)).toHaveLength(2);
    expect(existsSync(legitMarker)).toBe(false);
    expect(existsSync(path.join(hooks, 'pre-merge-commit'))).toBe(false);
    expect(existsSync(marker)).toBe(false);
  });

  it('a hook planted by a pre-merge gate (agent code, OS sandbox off) is caught right before merging', async () => {
    // The gate plants only where agents' code runs (their worktrees), not in prepare's baseline run.
    // With the OS sandbox on, the gate cannot write .git at all; the check must hold without it.
    const plant = `case "$(pwd)" in */.claude/worktrees/*) hooks="$(git rev-parse --path-format=absolute --git-common-dir)/hooks"; printf '#!/bin/sh\\necho planted >> %s\\n' "$hooks/../../../HOOK-RAN" > "$hooks/post-merge"; chmod 755 "$hooks/post-merge";; esac`;
    const fixture = await createWaveFixture({ ...spec, gates: ['        - type: test', `          command: ${JSON.stringify(plant)}`, '          required: true'].join('\n') });
    const prepared = await prepareWave({ implPath: fixture.implPath, wave: 1, env: fixture.repo.env, gitAt: fixture.gitAt, now: () => new Date('2026-05-12T09:00:00Z') });
    expect(prepared.success, JSON.stringify(prepared.steps.find((item) => item.status === 'failed'))).toBe(true);
    expect(existsSync(fixture.repo.path('.git/hooks/post-merge'))).toBe(false);
    for (const id of ['A', 'B']) await fixture.complete(id, { [`src/${id.toLowerCase()}.ts`]: `export const ${id.toLowerCase()} = 1;\n` });
    const wave: PreparedWave = { fixture, prepared, marker: fixture.repo.sibling('HOOK-RAN'), recordPath: tamperRecordPath(fixture.repo.path('.git'), 'demo', 1) };
    const result = await expectRefused(wave, /found right before merging.*hook post-merge: \(absent\) → file 0755/, { step: 'merge-agents', finalize: { env: { ...fixture.repo.env, POLYWAVE_SANDBOX: 'off' } } });
    expect(existsSync(fixture.repo.path('.git/hooks/post-merge'))).toBe(true);
    expect(result.steps.find((item) => item.step === 'check-tamper')?.status).toBe('success');
    expect(result.steps.find((item) => item.step === 'run-gates')?.status).toBe('success');
  });

  it('core.hooksPath inside the working tree (tracked hooks): the merges run none of them — not the version recorded at prepare-wave (an earlier wave\'s agent may have written it: outside attack X24-01), not an agent-changed version merged before them', async () => {
    const marker = 'hook-ran.txt';
    const hookSpec: FixtureSpec = { ...spec, waves: [[{ id: 'A', files: ['src/a.ts', '.githooks/post-merge'], modify: ['.githooks/post-merge'] }, { id: 'B', files: ['src/b.ts'] }]] };
    const fixture = await createWaveFixture(hookSpec, { '.githooks/post-merge': `#!/bin/sh\necho legit >> "$(git rev-parse --show-toplevel)/../${marker}"\n` });
    chmodSync(fixture.repo.path('.githooks/post-merge'), 0o755);
    await fixture.repo.run(['update-index', '--chmod=+x', '.githooks/post-merge']);
    await fixture.repo.commitAll('executable hook');
    await fixture.repo.run(['config', 'core.hooksPath', '.githooks']);
    const prepared = await prepareWave({ implPath: fixture.implPath, wave: 1, env: fixture.repo.env, gitAt: fixture.gitAt, now: () => new Date('2026-05-12T09:00:00Z') });
    expect(prepared.success, JSON.stringify(prepared.steps.find((item) => item.status === 'failed'))).toBe(true);
    // tracked hooks are agent-writable content: nothing of them is snapshotted for the merges
    expect(existsSync(hooksSnapshotPath(fixture.repo.path('.git'), 'demo', 1))).toBe(false);
    // Agent A owns the tracked hook and rewrites it; merged first, its version is in main when B merges.
    await fixture.complete('A', { 'src/a.ts': 'export const a = 1;\n', '.githooks/post-merge': `#!/bin/sh\necho planted >> "$(git rev-parse --show-toplevel)/../${marker}"\n` });
    await fixture.complete('B', { 'src/b.ts': 'export const b = 1;\n' });
    const result = await fixture.finalize(1);
    expect(result.success, JSON.stringify(failed(result))).toBe(true);
    expect(fixture.repo.read('.githooks/post-merge')).toContain('planted');
    expect(existsSync(fixture.repo.sibling(marker))).toBe(false);
  });

  it('a crash-resumed finalize (merge log present) passes the check and finishes', async () => {
    const wave = await preparedWave();
    const env = { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };
    const crashed = await runCli(['finalize-wave', wave.fixture.implPath, '--wave', '1', '--json-only'], { cwd: wave.fixture.repo.dir, env: { ...env, POLYWAVE_TEST_CRASH_AFTER_MERGE: '1:merged' }, timeoutMs: 90_000 });
    expect(crashed.code).toBeNull();
    expect(await mergeCommits(wave.fixture.repo)).toHaveLength(1);
    const rerun = await runCli(['finalize-wave', wave.fixture.implPath, '--wave', '1', '--json-only'], { cwd: wave.fixture.repo.dir, env, timeoutMs: 90_000 });
    expect(rerun.code, rerun.stdout.slice(0, 3000)).toBe(0);
    expect(await mergeCommits(wave.fixture.repo)).toHaveLength(2);
    expect(wave.fixture.manifest().state).toBe('WAVE_VERIFIED');
  });

  // CI caught a SIGKILL inside `git merge` before MERGE_HEAD: the agent's files were left
  // uncommitted in the checkout being merged into, and the re-run refused them as foreign.
  it("a merge killed before MERGE_HEAD (agent A's files left uncommitted in the main checkout): restored, then merged", async () => {
    const wave = await preparedWave();
    const tipA = await wave.fixture.repo.run(['rev-parse', wave.fixture.branch('A')]);
    wave.fixture.repo.write('src/a.ts', await wave.fixture.repo.run(['show', `${tipA.trim()}:src/a.ts`]));
    expect(readFileSync(wave.fixture.repo.path('src/a.ts'), 'utf8')).toBe('export const a = 1;\n');
    const result = await wave.fixture.finalize(1);
    expect(result.success, JSON.stringify(failed(result))).toBe(true);
    expect(result.steps.find((item) => item.step === 'check-tamper')?.detail).toMatch(/a killed merge of an agent branch left src\/a\.ts in .* put back as HEAD has it/);
    expect(await mergeCommits(wave.fixture.repo)).toHaveLength(2);
    expect(await wave.fixture.repo.run(['status', '--porcelain', '--untracked-files=all', '--', 'src'])).toBe('');
  });

  // CI of the PROGRAM kill-and-resume test (point 10, the tier-2 wave): TAMPER_DETECTED "uncommitted changes that are not
  // the orchestrator's: src/checkout.js" in the IMPL worktree — git creates a file, then writes it, and a SIGKILL in
  // between leaves it empty (or cut off) beside an index.lock: no agent tip's blob, so the restore refused it all.
  it("a merge killed inside git's write of a file (src/a.ts left empty, or cut off, with index.lock): restored, then merged; a shorter file that is not the tip's start is not", async () => {
    for (const torn of ['', 'export const a']) {
      const wave = await preparedWave();
      wave.fixture.repo.write('src/a.ts', torn);
      writeFileSync(wave.fixture.repo.path('.git/index.lock'), '');
      const result = await wave.fixture.finalize(1);
      expect(result.success, JSON.stringify(failed(result))).toBe(true);
      expect(result.steps.find((item) => item.step === 'check-tamper')?.detail).toMatch(/a killed merge of an agent branch left src\/a\.ts in .* put back as HEAD has it/);
      expect(await mergeCommits(wave.fixture.repo)).toHaveLength(2);
      expect(await wave.fixture.repo.run(['status', '--porcelain', '--untracked-files=all', '--', 'src'])).toBe('');
      expect(readFileSync(wave.fixture.repo.path('src/a.ts'), 'utf8')).toBe('export const a = 1;\n');
    }
    const foreign = await preparedWave();
    foreign.fixture.repo.write('src/a.ts', 'export const b');
    await expectRefused(foreign, /uncommitted changes that are not the orchestrator's: src\/a\.ts \(untracked\)/);
    expect(readFileSync(foreign.fixture.repo.path('src/a.ts'), 'utf8')).toBe('export const b');
  });

  it("an index.lock left by a killed git (with the orchestrator's manifest edited: git merge said 'stash failed') is removed and the wave merges; one a live process holds is left alone", async () => {
    const held = await preparedWave();
    const heldLock = held.fixture.repo.path('.git/index.lock');
    writeFileSync(heldLock, '');
    const { spawn } = await import('node:child_process');
    const holder = spawn('sh', ['-c', `exec 3<"${heldLock}"; echo ready; exec sleep 60`], { stdio: ['ignore', 'pipe', 'ignore'] });
    await new Promise((resolve) => holder.stdout!.once('data', resolve));
    try {
      const refused = await held.fixture.finalize(1);
      expect(refused.success).toBe(false);
      expect(JSON.stringify(failed(refused))).toMatch(/index\.lock/);
      expect(existsSync(heldLock)).toBe(true);
    } finally {
      holder.kill('SIGKILL');
    }

    const wave = await preparedWave();
    writeFileSync(wave.fixture.repo.path('.git/index.lock'), '');
    const result = await wave.fixture.finalize(1);
    expect(result.success, JSON.stringify(failed(result))).toBe(true);
    expect(existsSync(wave.fixture.repo.path('.git/index.lock'))).toBe(false);
    expect(await mergeCommits(wave.fixture.repo)).toHaveLength(2);
  });

  it('left-over files that differ by one byte from every agent tip are not touched: TAMPER_DETECTED', async () => {
    const wave = await preparedWave();
    wave.fixture.repo.write('src/a.ts', 'export const a = 2;\n');
    await expectRefused(wave, /uncommitted changes that are not the orchestrator's: src\/a\.ts \(untracked\)/);
    expect(readFileSync(wave.fixture.repo.path('src/a.ts'), 'utf8')).toBe('export const a = 2;\n');
  });

  it('one matching file and one foreign file: nothing restored (all or nothing), TAMPER_DETECTED', async () => {
    const wave = await preparedWave();
    wave.fixture.repo.write('src/a.ts', 'export const a = 1;\n');
    wave.fixture.repo.write('notes.txt', 'mine\n');
    await expectRefused(wave, /src\/a\.ts \(untracked\)/);
    expect(readFileSync(wave.fixture.repo.path('src/a.ts'), 'utf8')).toBe('export const a = 1;\n');
    expect(readFileSync(wave.fixture.repo.path('notes.txt'), 'utf8')).toBe('mine\n');
  });

  it('the same tear in a --merge-target branch checked out in another worktree (a PROGRAM IMPL branch): restored, then merged there', async () => {
    const fixture = await createWaveFixture(spec);
    const implWorktree = fixture.repo.sibling('impl-branch');
    await fixture.repo.run(['worktree', 'add', '-q', '-b', 'feature', implWorktree, 'HEAD']);
    const prepared = await prepareWave({ implPath: fixture.implPath, wave: 1, env: fixture.repo.env, gitAt: fixture.gitAt, mergeTarget: 'feature', now: () => new Date('2026-05-12T09:00:00Z') });
    expect(prepared.success, JSON.stringify(prepared.steps.find((item) => item.status === 'failed'))).toBe(true);
    for (const id of ['A', 'B']) await fixture.complete(id, { [`src/${id.toLowerCase()}.ts`]: `export const ${id.toLowerCase()} = 1;\n` });
    writeFileSync(path.join(implWorktree, 'src/b.ts'), 'export const b = 1;\n');
    const result = await fixture.finalize(1, { mergeTarget: 'feature' });
    expect(result.success, JSON.stringify(failed(result))).toBe(true);
    expect(result.steps.find((item) => item.step === 'check-tamper')?.detail).toMatch(/left src\/b\.ts in .*impl-branch/);
    expect(await mergeCommits(fixture.repo, 'feature')).toHaveLength(2);
    expect(await fixture.repo.run(['-C', implWorktree, 'status', '--porcelain', '--untracked-files=all'])).toBe('');
  });

  // Outside attack P13-23: killed AFTER git wrote MERGE_HEAD (between the merged index/files and the merge commit) —
  // the checkout was left mid-merge with the agent's files staged, and every re-run refused them as foreign
  // (TAMPER_DETECTED, for ever). An interrupted merge of one of the wave's own agent tips is aborted and made again.
  it("killed mid-merge (MERGE_HEAD = agent A's tip, its files staged) in the main checkout and in a --merge-target worktree: aborted, then merged", async () => {
    const wave = await preparedWave();
    await wave.fixture.repo.run(['-c', 'core.hooksPath=/dev/null', 'merge', '--no-ff', '--no-commit', wave.fixture.branch('A')]);
    expect(existsSync(wave.fixture.repo.path('.git/MERGE_HEAD'))).toBe(true);
    const result = await wave.fixture.finalize(1);
    expect(result.success, JSON.stringify(failed(result))).toBe(true);
    expect(result.steps.find((item) => item.step === 'check-tamper')?.detail).toMatch(/a killed merge of an agent branch left src\/a\.ts in /);
    expect(await mergeCommits(wave.fixture.repo)).toHaveLength(2);
    expect(existsSync(wave.fixture.repo.path('.git/MERGE_HEAD'))).toBe(false);

    const fixture = await createWaveFixture(spec);
    const implWorktree = fixture.repo.sibling('impl-branch-mid-merge');
    await fixture.repo.run(['worktree', 'add', '-q', '-b', 'feature', implWorktree, 'HEAD']);
    const prepared = await prepareWave({ implPath: fixture.implPath, wave: 1, env: fixture.repo.env, gitAt: fixture.gitAt, mergeTarget: 'feature', now: () => new Date('2026-05-12T09:00:00Z') });
    expect(prepared.success, JSON.stringify(prepared.steps.find((item) => item.status === 'failed'))).toBe(true);
    for (const id of ['A', 'B']) await fixture.complete(id, { [`src/${id.toLowerCase()}.ts`]: `export const ${id.toLowerCase()} = 1;\n` });
    await fixture.repo.run(['-C', implWorktree, '-c', 'core.hooksPath=/dev/null', 'merge', '--no-ff', '--no-commit', fixture.branch('B')]);
    const merged = await fixture.finalize(1, { mergeTarget: 'feature' });
    expect(merged.success, JSON.stringify(failed(merged))).toBe(true);
    expect(await mergeCommits(fixture.repo, 'feature')).toHaveLength(2);
    expect(await fixture.repo.run(['-C', implWorktree, 'status', '--porcelain', '--untracked-files=all'])).toBe('');
  });

  it("our agent's merge in progress plus a staged change of someone else's: not aborted (the reset would take it), TAMPER_DETECTED", async () => {
    const wave = await preparedWave();
    await wave.fixture.repo.run(['-c', 'core.hooksPath=/dev/null', 'merge', '--no-ff', '--no-commit', wave.fixture.branch('A')]);
    wave.fixture.repo.write('notes.txt', 'mine\n');
    await wave.fixture.repo.run(['add', 'notes.txt']);
    await expectRefused(wave, /notes\.txt/);
    expect(existsSync(wave.fixture.repo.path('.git/MERGE_HEAD'))).toBe(true);
    expect(await wave.fixture.repo.run(['diff', '--cached', '--name-only'])).toMatch(/notes\.txt/);
  });

  it('a merge in progress of a branch that is not an agent tip of the wave: TAMPER_DETECTED, not aborted', async () => {
    const wave = await preparedWave();
    // A commit of someone else's (no ref: made with a scratch index), merged half-way into the checkout.
    const { execFileSync } = await import('node:child_process');
    const env = { ...process.env, ...wave.fixture.repo.env, GIT_INDEX_FILE: wave.fixture.repo.sibling('scratch-index') };
    const plumb = (args: string[], input?: string) => execFileSync('git', args, { cwd: wave.fixture.repo.dir, env, encoding: 'utf8', ...(input !== undefined ? { input } : {}) }).trim();
    plumb(['read-tree', 'HEAD']);
    plumb(['update-index', '--add', '--cacheinfo', `100644,${plumb(['hash-object', '-w', '--stdin'], 'mine\n')},notes.txt`]);
    const other = plumb(['commit-tree', plumb(['write-tree']), '-p', 'HEAD', '-m', 'other work']);
    await wave.fixture.repo.run(['-c', 'core.hooksPath=/dev/null', 'merge', '--no-ff', '--no-commit', other]);
    await expectRefused(wave, /notes\.txt/);
    expect(existsSync(wave.fixture.repo.path('.git/MERGE_HEAD'))).toBe(true);
  });

  it('without a record from prepare-wave: a warning, a fresh record, and no repository hook runs', async () => {
    const fixture = await createWaveFixture({ ...spec, state: 'WAVE_EXECUTING' });
    const marker = fixture.repo.sibling('HOOK-RAN');
    await fixture.startWave(1);
    for (const id of ['A', 'B']) await fixture.complete(id, { [`src/${id.toLowerCase()}.ts`]: `export const ${id.toLowerCase()} = 1;\n` });
    writeFileSync(fixture.repo.path('.git/hooks/post-merge'), plantingHook(marker), { mode: 0o755 });
    const result = await fixture.finalize(1);
    expect(result.success, JSON.stringify(failed(result))).toBe(true);
    const check = result.steps.find((item) => item.step === 'check-tamper');
    expect(check?.status).toBe('warning');
    expect(check?.detail).toContain('no record from prepare-wave');
    expect(existsSync(tamperRecordPath(fixture.repo.path('.git'), 'demo', 1))).toBe(true);
    expect(existsSync(marker)).toBe(false);
  });
});

