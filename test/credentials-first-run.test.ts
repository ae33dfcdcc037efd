import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { missingCredential, requireModelCredentials } from '../src/agents/credentials.js';
import { resolveModelSpec } from '../src/agents/model-spec.js';
import { runPolywave } from './support/closing-fixture.js';
import { createTestRepo } from './support/git-repo.js';
import { createWaveFixture, implRelative } from './support/wave-fixture.js';

// Issue 13, item 6: a first run without model credentials says — before anything starts — which
// backend and model would run and exactly what to set; exit 2, nothing changed. Real repositories.

const credentialNames = ['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'OPENAI_API_KEY', 'CLAUDE_CODE_OAUTH_TOKEN', 'CLAUDE_CODE_USE_BEDROCK', 'CLAUDE_CODE_USE_VERTEX'];

function withoutCredentials(env: Record<string, string | undefined>): Record<string, string | undefined> {
  const copy = { ...env };
  for (const name of credentialNames) delete copy[name];
  return copy;
}

function expectAdvice(stderr: string): void {
  expect(stderr).toMatch(/^polywave: error\[AGENT_CREDENTIALS_MISSING\]: no model credentials — /m);
  for (const hint of ['claude-code backend', 'ANTHROPIC_API_KEY', 'OPENAI_API_KEY', 'CLAUDE_CODE_OAUTH_TOKEN', '--model ollama:<model>', 'Nothing was started or changed']) expect(stderr).toContain(hint);
}

describe('model credentials before anything starts (issue 13)', () => {
  it('knows what each backend needs', () => {
    expect(missingCredential(resolveModelSpec(undefined, {}), {})).toContain('CLAUDE_CODE_OAUTH_TOKEN');
    expect(missingCredential(resolveModelSpec(undefined, {}), { CLAUDE_CODE_OAUTH_TOKEN: 't' })).toBeUndefined();
    expect(missingCredential(resolveModelSpec('anthropic:claude-sonnet-4-5', {}), {})).toBe('ANTHROPIC_API_KEY');
    expect(missingCredential(resolveModelSpec('openai:gpt-4o', {}), {})).toBe('OPENAI_API_KEY');
    expect(missingCredential(resolveModelSpec('ollama:qwen2.5-coder:32b', {}), {})).toBeUndefined();
    expect(missingCredential(resolveModelSpec('script:/x.yaml', {}), {})).toBeUndefined();
    expect(requireModelCredentials([{ role: 'x', model: undefined }], { ANTHROPIC_API_KEY: 'k' })[0]).toMatchObject({ backend: 'ai-sdk', provider: 'anthropic' });
  });

  it('run "<feature>" --yes: exit 2 with the backend, the model and what to set; no IMPL, no commit', async () => {
    const repo = await createTestRepo();
    const head = await repo.git.headCommit();
    const result = await runPolywave(['run', 'add a greeting command', '--yes'], { cwd: repo.dir, env: withoutCredentials(repo.env) });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expectAdvice(result.stderr);
    expect(result.stderr).toContain('the Scout would run on the claude-code backend');
    expect(existsSync(repo.path('docs/IMPL'))).toBe(false);
    expect(await repo.git.headCommit()).toBe(head);
    expect(await repo.git.status()).toEqual([]);
  });

  it('run-scout and run-wave refuse the same way; run-wave creates no worktree', async () => {
    const repo = await createTestRepo();
    const scout = await runPolywave(['run-scout', 'add a greeting command'], { cwd: repo.dir, env: withoutCredentials(repo.env) });
    expect(scout.code).toBe(2);
    expectAdvice(scout.stderr);

    const fixture = await createWaveFixture({ waves: [[{ id: 'A', files: ['src/a.ts'] }, { id: 'B', files: ['src/b.ts'] }]], state: 'WAVE_PENDING', testCommand: 'true', lintCommand: 'true' });
    const wave = await runPolywave(['run-wave', implRelative, '--wave', '1'], { cwd: fixture.repo.dir, env: withoutCredentials(fixture.repo.env) });
    expect(wave.code).toBe(2);
    expectAdvice(wave.stderr);
    expect(wave.stderr).toContain('agent A would run on the claude-code backend');
    expect(await fixture.repo.git.worktreeList()).toHaveLength(1);
    const openai = await runPolywave(['run-wave', implRelative, '--wave', '1', '--model', 'openai:gpt-4o'], { cwd: fixture.repo.dir, env: withoutCredentials(fixture.repo.env) });
    expect(openai.code).toBe(2);
    expect(openai.stderr).toContain('agent A would run on the openai API (model gpt-4o), which needs OPENAI_API_KEY');
  });
});

describe('run: human-mode summary and resume advice (issue 13)', () => {
  it('advises re-running only where it helps', async () => {
    const { resumeAdvice } = await import('../src/cli/commands/run.js');
    expect(resumeAdvice('NOT_SUITABLE', 'NOT_SUITABLE: too small')).toBeUndefined();
    expect(resumeAdvice('BLOCKED', 'the IMPL is BLOCKED: a human must decide (see polywave agent-status x)')).toBeUndefined();
    expect(resumeAdvice('REVIEWED', 'waiting for approval of the plan')).toBe('Re-run with --yes (or --auto) to approve the plan.');
    expect(resumeAdvice('BLOCKED', 'wave 1 stopped: gate failed')).toMatch(/re-run the same command to resume/);
  });
});
