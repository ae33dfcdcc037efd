/**
 * Outside round P17's minor findings of the PROGRAM layer (issue 12), with the built CLI as child processes on real
 * temporary git repositories (the demo PROGRAM "shop" set up without running it, states crafted on top).
 */
import { linkSync, lstatSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { acquireRunLock } from '../src/cli/run-lock.js';
import { editImpl } from '../src/store/manifest-file.js';
import { runCli } from './support/cli.js';
import { makeTempDir } from './support/temp.js';
import { cli, craft, git, gitEnv, implDoc, programRelative, setupDemo, withStatuses } from './support/program-crafted.js';

const pricingDoc = 'docs/IMPL/IMPL-pricing.yaml';

// P17-01a / P17-12: a symlink to the IMPL doc (outside the repository) given to set-impl-state, amend-impl or
// update-agent-prompt was read through, but the PROGRAM run-lock lookup missed it and the save replaced the LINK by a
// regular file: "success", the real doc untouched, no RUN_IN_PROGRESS during a live loop. The path is resolved now:
// the lock, the PROGRAM check and the write are the real doc's; the link stays a link.
describe('P17-01a / P17-12: manifest commands given a symlink to the doc', () => {
  it('during a live loop RUN_IN_PROGRESS through the link (nothing written); otherwise the real doc is edited and the link stays a link; a writer handed a link refuses it', async () => {
    const demo = await craft({ [programRelative]: withStatuses({ pricing: 'reviewed', catalog: 'reviewed' }), [pricingDoc]: implDoc('pricing', 'REVIEWED'), 'docs/IMPL/IMPL-catalog.yaml': implDoc('catalog', 'REVIEWED') });
    const real = path.join(demo.repo, pricingDoc);
    const programReal = path.join(demo.repo, programRelative);
    const outside = makeTempDir('polywave-p17-links-');
    const link = path.join(outside, 'link.yaml');
    const programLink = path.join(outside, 'program-link.yaml');
    symlinkSync(real, link);
    symlinkSync(programReal, programLink);
    const original = readFileSync(real, 'utf8');
    const run = (args: string[]) => runCli(args, { cwd: outside, env: gitEnv, timeoutMs: 120_000 });

    // The loop holds the PROGRAM (as while it scouts/reviews the tier): every writer is RUN_IN_PROGRESS through the link.
    const release = acquireRunLock(demo.repo, programReal);
    try {
      for (const args of [
        ['set-impl-state', link, '--state', 'BLOCKED'],
        ['amend-impl', link, '--add-wave', '--agent', 'Q', '--new-task', 'more'],
        ['update-agent-prompt', link, '--agent', 'P', '--prompt', 'a new prompt'],
      ]) {
        const refused = await run(args);
        expect([args[0], refused.code, refused.stderr]).toEqual([args[0], 2, expect.stringMatching(/error\[RUN_IN_PROGRESS\]/)]);
        expect(lstatSync(link).isSymbolicLink()).toBe(true);
        expect(readFileSync(real, 'utf8')).toBe(original);
      }
    } finally {
      release();
    }

    // No loop: the real doc is edited through the link, the link stays a link.
    const prompt = await run(['update-agent-prompt', link, '--agent', 'P', '--prompt', 'a new prompt for P']);
    expect(prompt.code, prompt.stderr).toBe(0);
    const blocked = await run(['set-impl-state', link, '--state', 'BLOCKED']);
    expect(blocked.code, blocked.stderr).toBe(0);
    expect(JSON.parse(blocked.stdout)).toMatchObject({ previous_state: 'REVIEWED', new_state: 'BLOCKED' });
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readFileSync(real, 'utf8')).toMatch(/^state: BLOCKED$/m);
    expect(readFileSync(real, 'utf8')).toContain('a new prompt for P');

    // A PROGRAM writer through a link to the PROGRAM: the same.
    const status = await run(['update-program-impl', programLink, '--impl', 'pricing', '--status', 'blocked']);
    expect(status.code, status.stderr).toBe(0);
    expect(lstatSync(programLink).isSymbolicLink()).toBe(true);
    expect(readFileSync(programReal, 'utf8')).toMatch(/- slug: pricing\n(?: {6}.*\n)*? {6}status: blocked/);

    // The manifest writer itself never replaces a link it is handed (it would leave the real doc as it was).
    const before = readFileSync(real, 'utf8');
    await expect(editImpl(link, () => ({ edits: [{ path: ['state'], value: 'REVIEWED' }], outcome: undefined }))).rejects.toMatchObject({ code: 'N094_MANIFEST_SAVE_FAILED', message: expect.stringMatching(/is a symbolic link .*nothing written/) });
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readFileSync(real, 'utf8')).toBe(before);
    expect(git(demo.repo, ['status', '--porcelain', '--', 'docs/IMPL/IMPL-catalog.yaml'])).toBe('');
  }, 240_000);
});

describe('P18-02a: manifest writers given a HARD link to the doc or the PROGRAM', () => {
  // Before the fix: "success" (set-impl-state, update-program-impl) during a live loop, no RUN_IN_PROGRESS, and the save
  // broke the link — the doc under docs/ untouched.
  it('refuse with N094 (exit 2), nothing written, the link kept', async () => {
    const demo = await craft({ [programRelative]: withStatuses({ pricing: 'reviewed', catalog: 'reviewed' }), [pricingDoc]: implDoc('pricing', 'REVIEWED'), 'docs/IMPL/IMPL-catalog.yaml': implDoc('catalog', 'REVIEWED') });
    const real = path.join(demo.repo, pricingDoc);
    const programReal = path.join(demo.repo, programRelative);
    const outside = makeTempDir('polywave-p18-hard-');
    const hard = path.join(outside, 'hard.yaml');
    const hardProgram = path.join(outside, 'hard-program.yaml');
    linkSync(real, hard);
    linkSync(programReal, hardProgram);
    const original = { doc: readFileSync(real, 'utf8'), program: readFileSync(programReal, 'utf8') };
    const run = (args: string[]) => runCli(args, { cwd: outside, env: gitEnv, timeoutMs: 120_000 });
    for (const args of [
      ['set-impl-state', hard, '--state', 'BLOCKED'],
      ['amend-impl', hard, '--add-wave', '--agent', 'Q', '--new-task', 'more'],
      ['update-program-impl', hardProgram, '--impl', 'pricing', '--status', 'blocked'],
      ['update-program-state', hardProgram, '--state', 'BLOCKED'],
    ]) {
      const refused = await run(args);
      expect([args[0], refused.code]).toEqual([args[0], 2]);
      expect(`${refused.stdout}${refused.stderr}`).toMatch(/N094_MANIFEST_SAVE_FAILED.*2 hard links/);
      expect(statSync(real).nlink).toBe(2);
      expect(statSync(programReal).nlink).toBe(2);
      expect({ doc: readFileSync(real, 'utf8'), program: readFileSync(programReal, 'utf8') }).toEqual(original);
    }
  }, 240_000);
});

// P17-04a: update-program-impl with an IMPL the PROGRAM does not have exits 2 (N005, bad input — P13-01, documented in
// docs/differences.md); its --help said 1.
describe('P17-04a: update-program-impl --help and an unknown IMPL agree', () => {
  it('--help names exit 2 for no such IMPL, and the command exits 2', async () => {
    const help = await runCli(['update-program-impl', '--help'], { timeoutMs: 60_000 });
    expect(help.code).toBe(0);
    expect(help.stdout).not.toMatch(/1 no such IMPL/);
    expect(help.stdout).toMatch(/2 no such IMPL in the PROGRAM \(N005/);
    const demo = await setupDemo();
    const unknown = await cli(demo, ['update-program-impl', programRelative, '--impl', 'nosuch', '--status', 'complete']);
    expect([unknown.code, unknown.stderr]).toEqual([2, expect.stringMatching(/error\[N005_IMPL_NOT_FOUND\]/)]);
  }, 120_000);
});

// P17-09a: check-program-conflicts (P1) compared file paths unnormalised: catalog claiming pricing's file as
// `./src/pricing.js` or `src//pricing.js` was "disjoint" (exit 0) while the loop's V029 refused the same docs.
describe('P17-09a: check-program-conflicts normalises paths as V029 does', () => {
  for (const variant of ['./src/pricing.js', 'src//pricing.js', 'src/./pricing.js']) {
    it(`catalog owning ${variant}: the conflict on src/pricing.js, exit 1`, async () => {
      const demo = await craft({
        [programRelative]: withStatuses({ pricing: 'reviewed', catalog: 'reviewed' }),
        [pricingDoc]: implDoc('pricing', 'REVIEWED'),
        'docs/IMPL/IMPL-catalog.yaml': implDoc('catalog', 'REVIEWED', (text) => text.split('src/catalog-data.js').join(variant)),
      });
      const result = await cli(demo, ['check-program-conflicts', programRelative, '--tier', '1']);
      expect(result.code, result.stdout).toBe(1);
      expect(JSON.parse(result.stdout).conflicts).toEqual([{ file: 'src/pricing.js', impls: ['catalog', 'pricing'] }]);
      expect(result.stderr).toMatch(/BLOCKED — 1 conflict/);
    }, 120_000);
  }
});
