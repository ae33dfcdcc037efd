import { describe, expect, it } from 'vitest';
import { createTestRepo } from '../../../test/support/git-repo.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { parseProgram } from '../../protocol/parse-program.js';
import { freezeContracts, markProgramComplete, setProgramImplStatus, setProgramImplStatuses, setProgramState } from './program-edits.js';

const program = `# keep me
title: Lib
program_slug: lib
state: TIER_EXECUTING
program_contracts:
  - name: Shape
    definition: "export type Shape = { a: number }"
    location: src/shape.ts
    freeze_at: one
impls:
  - slug: one
    title: One
    tier: 1
    status: executing
  - slug: two
    title: Two
    tier: 1
    status: executing
  - slug: three
    title: Three
    tier: 2
    status: pending
tiers:
  - number: 1
    impls: [one, two]
  - number: 2
    impls: [three]
completion:
  tiers_complete: 0
  tiers_total: 2
  impls_complete: 0
  impls_total: 3
  total_agents: 0
  total_waves: 0
`;

async function setup() {
  const repo = await createTestRepo({ files: { 'docs/PROGRAM/PROGRAM-lib.yaml': program, 'src/shape.ts': 'export type Shape = { a: number };\n' } });
  return { repo, programPath: repo.path('docs/PROGRAM/PROGRAM-lib.yaml') };
}

describe('program-edits (the tier loop’s entry points)', () => {
  it('concurrent status and state writes lose nothing (locked read-modify-write) and keep the comment', async () => {
    const { repo, programPath } = await setup();
    const results = await Promise.all([
      setProgramImplStatus(programPath, 'one', 'complete'),
      setProgramImplStatus(programPath, 'two', 'complete'),
      setProgramImplStatus(programPath, 'three', 'scouting'),
      setProgramState(programPath, 'TIER_VERIFIED'),
    ]);
    expect(results).toEqual([
      { previous: 'executing', changed: true },
      { previous: 'executing', changed: true },
      { previous: 'pending', changed: true },
      { previous: 'TIER_EXECUTING', changed: true },
    ]);
    const text = repo.read('docs/PROGRAM/PROGRAM-lib.yaml');
    expect(text.startsWith('# keep me\n')).toBe(true);
    const manifest = parseProgram(text).manifest!;
    expect(manifest.state).toBe('TIER_VERIFIED');
    expect(manifest.impls.map((impl) => impl.status)).toEqual(['complete', 'complete', 'scouting']);
    expect(manifest.completion).toMatchObject({ impls_complete: 2, tiers_complete: 1 });
    expect(await setProgramImplStatus(programPath, 'one', 'complete')).toEqual({ previous: 'complete', changed: false });
  });

  it('setProgramState throws a PolywaveError (N008, exit 1) on an illegal transition and writes nothing; force lets it through', async () => {
    const { repo, programPath } = await setup();
    const before = repo.read('docs/PROGRAM/PROGRAM-lib.yaml');
    const error = await setProgramState(programPath, 'PLANNING').catch((caught: unknown) => caught);
    expect(PolywaveError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: 'N008_STATE_TRANSITION', exitCode: 1 });
    expect(repo.read('docs/PROGRAM/PROGRAM-lib.yaml')).toBe(before);
    expect(await setProgramState(programPath, 'TIER_EXECUTING')).toEqual({ previous: 'TIER_EXECUTING', changed: false });
    expect(await setProgramState(programPath, 'PLANNING', { force: true })).toEqual({ previous: 'TIER_EXECUTING', changed: true });
    await expect(setProgramImplStatus(programPath, 'one', 'done' as never)).rejects.toMatchObject({ code: 'X001_INVALID_INPUT', exitCode: 2 });
    await expect(setProgramImplStatus(programPath, 'nine', 'complete')).rejects.toMatchObject({ code: 'N005_IMPL_NOT_FOUND', exitCode: 1 });
    // Several IMPLs in one write: all or nothing, counters kept consistent.
    const unchanged = repo.read('docs/PROGRAM/PROGRAM-lib.yaml');
    await expect(setProgramImplStatuses(programPath, ['one', 'nine'], 'complete')).rejects.toMatchObject({ code: 'N005_IMPL_NOT_FOUND', exitCode: 1 });
    expect(repo.read('docs/PROGRAM/PROGRAM-lib.yaml')).toBe(unchanged);
    expect(await setProgramImplStatuses(programPath, ['one', 'two'], 'complete')).toEqual([
      { previous: 'executing', changed: true },
      { previous: 'executing', changed: true },
    ]);
    const batched = parseProgram(repo.read('docs/PROGRAM/PROGRAM-lib.yaml')).manifest!;
    expect(batched.impls.map((impl) => impl.status)).toEqual(['complete', 'complete', 'pending']);
    expect(batched.completion).toMatchObject({ impls_complete: 2, tiers_complete: 1 });
    expect(await setProgramImplStatuses(programPath, [], 'complete')).toEqual([]);
  });

  it('freezeContracts records the freeze; markProgramComplete archives and commits (default date: today)', async () => {
    const { repo, programPath } = await setup();
    const frozen = await freezeContracts({ programPath, repoRoot: repo.dir, tier: 1, env: repo.env as NodeJS.ProcessEnv });
    expect(frozen).toMatchObject({ tier_number: 1, success: true, manifest_updated: true, contracts_skipped: [] });
    expect(parseProgram(repo.read('docs/PROGRAM/PROGRAM-lib.yaml')).manifest!.program_contracts[0]).toMatchObject({ frozen_at_tier: 1 });
    for (const slug of ['one', 'two', 'three']) await setProgramImplStatus(programPath, slug, 'complete');
    await setProgramState(programPath, 'TIER_VERIFIED');
    const done = await markProgramComplete({ programPath, repoRoot: repo.dir, env: repo.env as NodeJS.ProcessEnv });
    expect(done.date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(done.commit_sha).toMatch(/^[0-9a-f]{40}$/);
    expect((await repo.run(['status', '--porcelain'])).trim()).toBe('');
    expect(parseProgram(repo.read('docs/PROGRAM/complete/PROGRAM-lib.yaml')).manifest).toMatchObject({ state: 'COMPLETE', completion: { tiers_complete: 2, impls_complete: 3 } });
  });
});
