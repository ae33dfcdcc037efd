/**
 * Outside attack attack-compat-5 F9 (issue 13): a gate's npm cache is the repository's gate build
 * cache (empty at first) and the gate's sandbox reaches only `sandbox.network.allow`, so
 * `npx tsc` for a package the project does not have retried the npm registry for 73 s before
 * failing. Where the allow-list does not reach the registry, npm is told it is offline and fails at
 * once (ENOTCACHED); where it does, npm is left alone. Real sandbox, real npm, no network needed.
 */
import { describe, expect, it } from 'vitest';
import { hostAllowed, npmOfflineEnv, npmOfflineHint, npmRegistryHost } from '../src/gates/npm-offline.js';
import { runGates } from '../src/gates/run-gates.js';
import { sandboxStatus } from '../src/sandbox/index.js';
import { createTestRepo } from './support/git-repo.js';

const available = (await sandboxStatus()).available;

describe('npm in a gate sandbox without the registry (F9)', () => {
  it('offline unless the allow-list reaches the registry (exact or *.domain), or the caller chose', () => {
    expect(hostAllowed('registry.npmjs.org', ['*.npmjs.org'])).toBe(true);
    expect(hostAllowed('registry.npmjs.org', ['npmjs.org.evil.com', 'github.com'])).toBe(false);
    expect(npmOfflineEnv('/nonexistent', [], { HOME: '/nonexistent' })).toMatchObject({ npm_config_offline: 'true', npm_config_fetch_retries: '0' });
    expect(npmOfflineEnv('/nonexistent', ['registry.npmjs.org'], { HOME: '/nonexistent' })).toEqual({});
    expect(npmOfflineEnv('/nonexistent', [], { HOME: '/nonexistent', npm_config_offline: 'false' })).toEqual({});
    expect(npmRegistryHost('/nonexistent', { HOME: '/nonexistent', npm_config_registry: 'https://npm.example.com/repo/' })).toBe('npm.example.com');
    // X6 N7: the hint for npm's offline misses only.
    expect(npmOfflineHint('npm error code ENOTCACHED\nnpm error request to https://registry.npmjs.org/x failed: cache mode is \'only-if-cached\'', 'registry.npmjs.org')).toContain('add "registry.npmjs.org" there');
    expect(npmOfflineHint('npm error code E404\nnpm error 404 Not Found - GET https://registry.npmjs.org/x (offline)', 'registry.npmjs.org')).toBeDefined();
    expect(npmOfflineHint('FAIL src/a.test.ts: expected 1 to be 2', 'registry.npmjs.org')).toBeUndefined();
  });

  it.skipIf(!available)('npx of a missing package fails at once (ENOTCACHED), not after retrying the registry; an allowed registry is left alone', async () => {
    const repo = await createTestRepo({ files: { 'package.json': '{"name":"x","version":"1.0.0"}\n' } });
    const env = { ...(repo.env as Record<string, string>) };
    delete env.npm_config_offline;
    const gate = { type: 'lint', command: 'echo "offline=$npm_config_offline"; npx --yes polywave-no-such-package-f9 --version', required: true };
    const denied = await runGates({ repoDir: repo.dir, env, noCache: true, gates: [gate] });
    const output = denied.results[0]!.output;
    expect(denied.passed, output).toBe(false);
    expect(output).toContain('offline=true');
    expect(output).toContain('ENOTCACHED');
    expect(output).not.toContain('EAI_AGAIN');
    // X6 N7: the failure says how to allow the registry, and npm has no store-dir noise (pnpm's store is PNPM_HOME's here).
    expect(output).toContain('the registry registry.npmjs.org is not in sandbox.network.allow of the committed polywave.config.json; add "registry.npmjs.org" there');
    expect(output).not.toContain('Unknown env config');

    repo.write('polywave.config.json', JSON.stringify({ sandbox: { network: { allow: ['registry.npmjs.org'] } } }));
    await repo.commitAll('allow the npm registry');
    const allowed = await runGates({ repoDir: repo.dir, env, noCache: true, gates: [{ type: 'lint', command: 'echo "offline=$npm_config_offline"', required: true }] });
    expect(allowed.results[0]!.output).toContain('offline=\n');
  });
});
