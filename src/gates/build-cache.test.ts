import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeTempDir } from '../../test/support/temp.js';
import { ensureGateBuildCache, gateBuildCacheDir, gateBuildCacheEnv } from './build-cache.js';

describe('gate build cache', () => {
  it('one directory per repository (by real path) under the user cache dir, XDG_CACHE_HOME first', () => {
    const root = makeTempDir();
    mkdirSync(path.join(root, 'repo', '.git'), { recursive: true });
    symlinkSync(path.join(root, 'repo'), path.join(root, 'link'));
    const env = { HOME: path.join(root, 'home') };
    const dir = gateBuildCacheDir(path.join(root, 'repo', '.git'), env);
    expect(dir).toMatch(new RegExp(`^${path.join(root, 'home', '.cache', 'polywave', 'gate-build-cache')}/[0-9a-f]{16}$`));
    expect(gateBuildCacheDir(path.join(root, 'link', '.git'), env)).toBe(dir);
    expect(gateBuildCacheDir(path.join(root, 'other'), env)).not.toBe(dir);
    expect(path.dirname(gateBuildCacheDir(path.join(root, 'repo', '.git'), { ...env, XDG_CACHE_HOME: path.join(root, 'xdg') }))).toBe(path.join(root, 'xdg', 'polywave', 'gate-build-cache'));
    expect(ensureGateBuildCache(path.join(root, 'repo', '.git'), env)).toBe(dir);
    expect(readFileSync(path.join(dir, 'REPOSITORY'), 'utf8')).toBe(`${path.join(root, 'repo', '.git')}\n`);
  });

  it("every variable points into the cache and overrides the user's; Go modules seeded from the user's cache; cargo config copied; browsers in place", () => {
    const root = makeTempDir();
    const home = path.join(root, 'home');
    mkdirSync(path.join(home, 'go', 'pkg', 'mod', 'cache', 'download'), { recursive: true });
    mkdirSync(path.join(home, '.cargo'), { recursive: true });
    writeFileSync(path.join(home, '.cargo', 'config.toml'), '[net]\noffline = true\n');
    mkdirSync(path.join(home, '.cache', 'ms-playwright'), { recursive: true });
    const cache = path.join(root, 'cache');
    const env = gateBuildCacheEnv(cache, { HOME: home, npm_config_cache: path.join(home, '.npm'), GOCACHE: path.join(home, '.cache', 'go-build'), MAVEN_OPTS: '-Xmx1g' });
    for (const name of ['XDG_CACHE_HOME', 'npm_config_cache', 'PNPM_HOME', 'YARN_CACHE_FOLDER', 'YARN_GLOBAL_FOLDER', 'BUN_INSTALL_CACHE_DIR', 'GOCACHE', 'GOMODCACHE', 'PIP_CACHE_DIR', 'CARGO_HOME', 'GRADLE_USER_HOME']) {
      expect(env[name]!.startsWith(cache + path.sep), name).toBe(true);
    }
    expect(env.MAVEN_OPTS).toBe(`-Xmx1g -Dmaven.repo.local=${path.join(cache, 'm2')}`);
    expect(env.GOPROXY).toBe(`file://${path.join(home, 'go', 'pkg', 'mod', 'cache', 'download')},https://proxy.golang.org,direct`);
    expect(readFileSync(path.join(cache, 'cargo', 'config.toml'), 'utf8')).toBe('[net]\noffline = true\n');
    expect(env.PLAYWRIGHT_BROWSERS_PATH).toBe(path.join(home, '.cache', 'ms-playwright'));
    expect(env.CYPRESS_CACHE_FOLDER).toBeUndefined();
    // without a user module cache, GOPROXY is left alone
    expect(gateBuildCacheEnv(cache, { HOME: path.join(root, 'empty') }).GOPROXY).toBeUndefined();
    // npm_config_store_dir only in a pnpm project (npm warns 'Unknown env config "store-dir"' on every run otherwise: X6 N7).
    expect(env.npm_config_store_dir).toBeUndefined();
    const project = path.join(root, 'project');
    mkdirSync(path.join(project, 'packages', 'app'), { recursive: true });
    writeFileSync(path.join(project, 'package.json'), '{"name": "p"}\n');
    expect(gateBuildCacheEnv(cache, { HOME: home }, path.join(project, 'packages', 'app')).npm_config_store_dir).toBeUndefined();
    writeFileSync(path.join(project, 'pnpm-workspace.yaml'), 'packages: ["packages/*"]\n');
    expect(gateBuildCacheEnv(cache, { HOME: home }, path.join(project, 'packages', 'app')).npm_config_store_dir).toBe(path.join(cache, 'pnpm', 'store'));
  });
});
