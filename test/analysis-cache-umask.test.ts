/**
 * Facts the engine caches are written with the umask of the call that parsed them — in the resident
 * server, each request runs with its caller's umask — read without the no-argument `process.umask()`
 * (which sets the umask to 0 for a moment: files other threads create then get mode 0666, X42-09).
 * Two calls back to back, the second starting before the first's queued write went out: each pack
 * still has its own caller's mode.
 */
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { findReferences } from '../src/analysis/engine/index.js';
import { cacheDir, currentUmask, flushCache } from '../src/analysis/engine/cache.js';
import { analysisCall, memory } from '../src/analysis/engine/scope.js';
import { createTestRepo } from './support/git-repo.js';

const saved = process.umask(0o022);
process.umask(saved);
afterEach(() => {
  process.umask(saved);
  flushCache();
  memory.clear();
});

function packModes(dir: string): number[] {
  const packs = path.join(cacheDir(path.join(dir, '.git')), 'packs');
  return readdirSync(packs)
    .filter((name) => name.endsWith('.pack'))
    .map((name) => statSync(path.join(packs, name)).mode & 0o777)
    .sort();
}

describe('the analysis cache and the umask', () => {
  it('reads the umask without changing it', () => {
    process.umask(0o027);
    expect(currentUmask()).toBe(0o027);
    expect(process.umask(0o027)).toBe(0o027);
  });

  it('writes each call\'s pack with that call\'s umask, also when the next call starts before the write', async () => {
    const repo = await createTestRepo({
      files: {
        'def.ts': 'export function zapIt(): void {}\nexport function other(): void {}\n',
        'a.ts': "import { zapIt } from './def.js';\nzapIt();\n",
        'b.ts': "import { other } from './def.js';\nother();\n",
      },
    });
    memory.clear();
    process.umask(0o077);
    await analysisCall(process.env, () => findReferences(repo.dir, 'zapIt'));
    // No turn of the event loop in between: the first call's pack is still queued.
    process.umask(0o002);
    await analysisCall(process.env, () => findReferences(repo.dir, 'other'));
    flushCache();
    expect(packModes(repo.dir)).toEqual([0o600, 0o664]);
  }, 60_000);

  it('a queued write whose repository was removed before it went out makes nothing (the repository is not made again)', async () => {
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export function shared() {}\n', 'src/b.ts': "import { shared } from './a';\nshared();\n" } });
    const refs = await analysisCall(process.env, () => findReferences(repo.dir, 'shared'));
    expect(refs.length).toBeGreaterThan(0);
    // The call answered; its facts are queued. The repository is deleted before they are written.
    rmSync(repo.root, { recursive: true, force: true });
    flushCache();
    expect(existsSync(repo.root)).toBe(false);
    // A live repository still gets its pack.
    const live = await createTestRepo({ files: { 'src/a.ts': 'export function shared(x: number) { return x; }\n' } });
    await analysisCall(process.env, () => findReferences(live.dir, 'shared'));
    flushCache();
    expect(packModes(live.dir).length).toBeGreaterThan(0);
  });
});
