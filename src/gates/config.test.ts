import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeTempDir } from '../../test/support/temp.js';
import { findConfigFile, loadRepoRegistry, resolveGateRepo } from './config.js';

describe('polywave.config.json repo registry', () => {
  it('is found up to 10 levels above the start directory, not further', async () => {
    const root = makeTempDir('polywave-config-');
    writeFileSync(path.join(root, 'polywave.config.json'), '{"repos": []}');
    const ten = path.join(root, ...Array.from({ length: 10 }, (_, index) => `d${index}`));
    const eleven = path.join(ten, 'd10');
    mkdirSync(eleven, { recursive: true });
    expect(await findConfigFile(ten)).toBe(path.join(root, 'polywave.config.json'));
    expect(await findConfigFile(eleven)).toBeUndefined();
  });

  it('reads the list shape, the object-map shapes and the legacy single repo', async () => {
    const root = makeTempDir('polywave-config-');
    const write = (value: unknown): void => writeFileSync(path.join(root, 'polywave.config.json'), JSON.stringify(value));
    write({ repos: [{ name: 'api', path: '/abs/api', build_command: 'make', test_command: 'make test' }, { name: 'web', path: 'web' }, { name: 'broken' }] });
    expect((await loadRepoRegistry([root])).repos).toEqual([
      { name: 'api', path: '/abs/api', build_command: 'make', test_command: 'make test' },
      { name: 'web', path: path.join(root, 'web') },
    ]);
    write({ repos: { api: '/abs/api', web: { path: './web' } } });
    expect((await loadRepoRegistry([root])).repos).toEqual([
      { name: 'api', path: '/abs/api' },
      { name: 'web', path: path.join(root, 'web') },
    ]);
    write({ repo: { path: '/abs/solo' } });
    expect((await loadRepoRegistry([root])).repos).toEqual([{ name: 'solo', path: '/abs/solo' }]);
  });

  it('a broken file is a problem reported by repo-routed gates, never an exception', async () => {
    const root = makeTempDir('polywave-config-');
    writeFileSync(path.join(root, 'polywave.config.json'), '{ nope');
    const registry = await loadRepoRegistry([root]);
    expect(registry.problem).toMatch(/not readable JSON/);
    const resolution = await resolveGateRepo('api', registry, root);
    expect(resolution.ok).toBe(false);
    expect(!resolution.ok && resolution.message).toMatch(/gate repo api not found.*not readable JSON/);
  });

  it('resolves exact, then case-insensitive names; the primary repo by its directory name; a git sibling', async () => {
    const parent = makeTempDir('polywave-config-');
    const primary = path.join(parent, 'main-repo');
    const api = path.join(parent, 'api');
    const sibling = path.join(parent, 'docs-site');
    for (const directory of [primary, api, path.join(sibling, '.git')]) mkdirSync(directory, { recursive: true });
    writeFileSync(path.join(primary, 'polywave.config.json'), JSON.stringify({ repos: [{ name: 'API', path: api }] }));
    const registry = await loadRepoRegistry([primary]);
    expect(await resolveGateRepo('API', registry, primary)).toEqual({ ok: true, dir: api, via: 'registry' });
    expect(await resolveGateRepo('api', registry, primary)).toEqual({ ok: true, dir: api, via: 'registry' });
    expect(await resolveGateRepo('main-repo', registry, primary)).toEqual({ ok: true, dir: primary, via: 'primary' });
    expect(await resolveGateRepo('docs-site', registry, primary)).toEqual({ ok: true, dir: sibling, via: 'sibling' });
    const unknown = await resolveGateRepo('ghost', registry, primary);
    expect(unknown).toEqual({ ok: false, message: `gate repo ghost not found in ${path.join(primary, 'polywave.config.json')} (known repos: [API])` });
  });
});
