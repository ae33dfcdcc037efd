/**
 * ESCAPE REPRODUCTION (outside attack 2026-12-02, #13), now the regression test of its fix: a quality
 * gate runs agent-written code, and it could write the user's real `~/.cache` (the attack planted
 * `~/.cache/node/corepack/v1/evil.cjs`: corepack's shims run later outside any sandbox), `~/.npm`
 * (`npx` runs `~/.npm/_npx`), Go's caches… Now a gate's build caches are one polywave-owned directory
 * per repository (src/gates/build-cache.ts), named to the tools through XDG_CACHE_HOME,
 * npm_config_cache, GOCACHE, … and the user's own caches are read-only in the gate's sandbox. The cache
 * stays warm: a later gate run of the same repository (another wave, the main checkout) finds what an
 * earlier one wrote; the caches of repositories that are gone are removed when a new one is made.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { gateBuildCacheDir } from '../src/gates/build-cache.js';
import { runGates } from '../src/gates/run-gates.js';
import { resetSandbox, sandboxStatus } from '../src/sandbox/index.js';
import { createTestRepo } from './support/git-repo.js';

const available = (await sandboxStatus()).available;

afterAll(async () => {
  await resetSandbox();
});

describe.skipIf(!available)("a gate's build caches are polywave's, per repository; the user's are read-only", () => {
  it("agent code in a gate cannot plant files in ~/.cache, ~/.npm or ~/go; it writes the repository's gate cache, warm for the next run", async () => {
    const repo = await createTestRepo({ files: { 'src/a.txt': 'a\n' } });
    const worktree = repo.sibling('wt-A');
    await repo.git.worktreeAdd({ path: worktree, branch: 'polywave/cache/wave1-agent-A', base: 'HEAD', createBranch: true });
    const home = repo.sibling('home');
    for (const cache of ['.cache', '.npm', 'go/pkg/mod']) mkdirSync(path.join(home, cache), { recursive: true });
    const env: Record<string, string> = { ...(repo.env as Record<string, string>), HOME: home };
    for (const name of ['XDG_CACHE_HOME', 'npm_config_cache', 'GOCACHE', 'GOMODCACHE', 'GOPATH', 'CARGO_HOME', 'PIP_CACHE_DIR']) delete env[name];

    // The attack (repro/gate2.mjs), plus npx's and Go's caches; then the caches the gate is given.
    const attack = [
      'mkdir -p "$HOME/.cache/node/corepack/v1" && echo "console.log(1)" > "$HOME/.cache/node/corepack/v1/evil.cjs" && echo WROTE-XDG',
      'mkdir -p "$HOME/.npm/_npx/x" && echo evil > "$HOME/.npm/_npx/x/evil.js" && echo WROTE-NPM',
      'echo evil > "$HOME/go/pkg/mod/evil.go" && echo WROTE-GO',
      'mkdir -p "$XDG_CACHE_HOME/node/corepack/v1" && echo shim > "$XDG_CACHE_HOME/node/corepack/v1/shim.cjs"',
      'mkdir -p "$npm_config_cache/_npx" "$GOCACHE" "$PIP_CACHE_DIR" "$CARGO_HOME" && echo npm > "$npm_config_cache/_npx/entry" && echo go > "$GOCACHE/entry"',
      'for v in XDG_CACHE_HOME npm_config_cache PNPM_HOME GOCACHE GOMODCACHE PIP_CACHE_DIR CARGO_HOME GRADLE_USER_HOME YARN_CACHE_FOLDER BUN_INSTALL_CACHE_DIR; do echo "$v=$(printenv $v)"; done',
    ].join('; ');
    // The cache of a repository deleted since (a `polywave demo` run) goes when a new cache is made.
    const stale = path.join(home, '.cache', 'polywave', 'gate-build-cache', 'stale0123456789a');
    mkdirSync(path.join(stale, 'go-mod', 'example.com'), { recursive: true });
    writeFileSync(path.join(stale, 'REPOSITORY'), `${repo.sibling('deleted-repo')}/.git\n`);
    chmodSync(path.join(stale, 'go-mod'), 0o555);
    const first = await runGates({ repoDir: worktree, env, noCache: true, gates: [{ type: 'test', command: attack, required: true }] });
    expect(existsSync(stale)).toBe(false);
    const output = first.results[0]!.output;
    expect(first.passed, output).toBe(true);
    // The home is hidden (X10 N1b): ~/.cache and ~/.npm are then a private tmpfs of this sandbox, where a
    // write lands and is gone with it; ~/go/pkg is a read-only tool directory bound back. Nothing reaches the home.
    expect(output).not.toContain('WROTE-GO');
    expect(output).toMatch(/Read-only file system/);
    for (const planted of ['.cache/node/corepack/v1/evil.cjs', '.npm/_npx/x/evil.js', 'go/pkg/mod/evil.go']) expect(existsSync(path.join(home, planted)), planted).toBe(false);

    // Every variable names a directory inside the repository's gate build cache (under the user's cache dir).
    const cache = gateBuildCacheDir(realpathSync(repo.path('.git')), env);
    expect(cache.startsWith(path.join(home, '.cache', 'polywave', 'gate-build-cache') + path.sep)).toBe(true);
    const variables = [...output.matchAll(/^(\w+)=(.*)$/gm)];
    expect(variables).toHaveLength(10);
    for (const [, name, value] of variables) expect(value!.startsWith(cache + path.sep), `${name}=${value}`).toBe(true);
    expect(readFileSync(path.join(cache, 'xdg/node/corepack/v1/shim.cjs'), 'utf8')).toBe('shim\n');
    expect(readFileSync(path.join(cache, 'go-build/entry'), 'utf8')).toBe('go\n');

    // The next run (a later wave; here in the main checkout) finds the cache warm.
    const second = await runGates({ repoDir: repo.dir, env, noCache: true, gates: [{ type: 'test', command: 'cat "$XDG_CACHE_HOME/node/corepack/v1/shim.cjs" "$npm_config_cache/_npx/entry" "$GOCACHE/entry"', required: true }] });
    expect(second.passed, second.results[0]!.output).toBe(true);
    expect(second.results[0]!.output).toBe('shim\nnpm\ngo\n');
  });
});
