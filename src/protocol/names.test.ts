import { describe, expect, it } from 'vitest';
import { PolywaveError } from '../errors/polywave-error.js';
import {
  agentSegment,
  branchName,
  branchNamePattern,
  implSlugFromPath,
  legacyBranchName,
  parseBranchName,
  parseProgramBranchName,
  programBranchName,
  programWorktreePath,
  worktreePath,
} from './names.js';

describe('E5 names', () => {
  it('builds branch and legacy branch names', () => {
    expect(branchName('my-feature', 1, 'A')).toBe('polywave/my-feature/wave1-agent-A');
    expect(branchName('my-feature', 2, 'B3')).toBe('polywave/my-feature/wave2-agent-B3');
    expect(legacyBranchName(1, 'A2')).toBe('wave1-agent-A2');
    expect(agentSegment(12, 'Z9')).toBe('wave12-agent-Z9');
  });

  it('builds worktree paths with posix separators', () => {
    expect(worktreePath('/repo', 'my-feature', 1, 'A')).toBe('/repo/.claude/worktrees/polywave/my-feature/wave1-agent-A');
    expect(worktreePath('/repo/', 'my-feature', 1, 'A')).toBe('/repo/.claude/worktrees/polywave/my-feature/wave1-agent-A');
    expect(worktreePath('/', 'x', 1, 'A')).toBe('/.claude/worktrees/polywave/x/wave1-agent-A');
    expect(worktreePath('', 'x', 1, 'A')).toBe('.claude/worktrees/polywave/x/wave1-agent-A');
  });

  it('builds program branch and worktree names', () => {
    expect(programBranchName('dash-v2', 1, 'auth')).toBe('polywave/program/dash-v2/tier1-impl-auth');
    expect(programWorktreePath('/r', 'dash-v2', 2, 'data-model')).toBe('/r/.claude/worktrees/polywave/program/dash-v2/tier2-impl-data-model');
    expect(parseProgramBranchName('polywave/program/dash-v2/tier2-impl-data-model')).toEqual({ programSlug: 'dash-v2', tier: 2, implSlug: 'data-model' });
    expect(parseProgramBranchName('polywave/dash-v2/wave1-agent-A')).toBeUndefined();
  });

  it.each([
    () => branchName('', 1, 'A'),
    () => branchName('My_Feature', 1, 'A'),
    () => branchName('x', 0, 'A'),
    () => branchName('x', 1.5, 'A'),
    () => branchName('x', 1, 'A1'),
    () => legacyBranchName(1, 'a'),
    () => worktreePath('/r', '', 1, 'A'),
    () => programBranchName('p', 0, 'i'),
  ])('refuses bad input (%#) with a coded error', (build) => {
    try {
      build();
      expect.unreachable();
    } catch (error) {
      expect(PolywaveError.isInstance(error)).toBe(true);
      expect((error as PolywaveError).code).toBe('X001_INVALID_INPUT');
      expect((error as PolywaveError).exitCode).toBe(2);
    }
  });

  // reference §10.13
  it('parses both branch formats', () => {
    expect(parseBranchName('wave1-agent-A')).toEqual({ wave: 1, agentId: 'A' });
    expect(parseBranchName('wave2-agent-C2')).toEqual({ wave: 2, agentId: 'C2' });
    expect(parseBranchName('polywave/my-slug/wave2-agent-B')).toEqual({ slug: 'my-slug', wave: 2, agentId: 'B' });
    expect(parseBranchName('wave01-agent-A')).toEqual({ wave: 1, agentId: 'A' });
  });

  it.each(['feature-branch', 'wave1-agent-A1', 'wave1-agent-a', 'polywave/My/wave1-agent-A', 'polywave//wave1-agent-A', 'x/wave1-agent-A', 'wave1-agent-A ', 'develop'])(
    'does not parse %j',
    (name) => {
      expect(parseBranchName(name)).toBeUndefined();
    },
  );

  it('round-trips built names through the parser', () => {
    expect(parseBranchName(branchName('a-b', 3, 'K7'))).toEqual({ slug: 'a-b', wave: 3, agentId: 'K7' });
    expect(branchNamePattern.test(legacyBranchName(4, 'D'))).toBe(true);
  });
});

describe('implSlugFromPath', () => {
  it('prefers feature_slug, then the file name, then the path', () => {
    expect(implSlugFromPath('docs/IMPL/IMPL-foo.yaml', { feature_slug: 'bar' })).toBe('bar');
    expect(implSlugFromPath('docs/IMPL/IMPL-foo.yaml', { feature_slug: '  ' })).toBe('foo');
    expect(implSlugFromPath('docs/IMPL/IMPL-foo.yaml')).toBe('foo');
    expect(implSlugFromPath('docs\\IMPL\\complete\\IMPL-foo-bar.yml')).toBe('foo-bar');
    expect(implSlugFromPath('notes.md')).toBe('notes.md');
    expect(implSlugFromPath('docs/IMPL/IMPL-.yaml')).toBe('docs/IMPL/IMPL-.yaml');
  });
});
