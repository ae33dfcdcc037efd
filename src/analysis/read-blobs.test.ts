import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createTestRepo } from '../../test/support/git-repo.js';
import { blobSpec, readBlobs } from './read-blobs.js';

describe('readBlobs', () => {
  it('reads many paths in one batch: missing paths, trees, empty, odd names and invalid UTF-8 included', async () => {
    const repo = await createTestRepo({
      files: {
        'a.txt': 'alpha\n',
        'empty.txt': '',
        'dir/with space.ts': 'export const x = "é ✓";\n',
        'fake-header.txt': 'abc missing\nHEAD:a.txt missing\n',
      },
    });
    // Invalid UTF-8 bytes grow when decoded and re-encoded: the reader must resync.
    writeFileSync(repo.path('latin1.txt'), Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a, 0xff, 0xfe, 0x0a]));
    await repo.commitAll('more');
    const specs = ['a.txt', 'latin1.txt', 'nope.txt', 'empty.txt', 'dir', 'dir/with space.ts', 'fake-header.txt', 'a.txt'].map((file) => blobSpec('HEAD', file));
    const texts = await readBlobs(repo.git, specs);
    expect(texts.get('HEAD:a.txt')).toBe('alpha\n');
    expect(texts.get('HEAD:latin1.txt')).toBe('caf\uFFFD\n\uFFFD\uFFFD\n');
    expect(texts.get('HEAD:nope.txt')).toBeUndefined();
    expect(texts.has('HEAD:nope.txt')).toBe(true);
    expect(texts.get('HEAD:empty.txt')).toBe('');
    expect(texts.get('HEAD:dir')).toBeUndefined();
    expect(texts.get('HEAD:dir/with space.ts')).toBe('export const x = "é ✓";\n');
    expect(texts.get('HEAD:fake-header.txt')).toBe('abc missing\nHEAD:a.txt missing\n');
  });

  it('reads by blob id and from other branches', async () => {
    const repo = await createTestRepo({ files: { 'x.go': 'package x\n' } });
    const blob = (await repo.run(['rev-parse', 'HEAD:x.go'])).trim();
    await repo.git.createBranch('other', 'HEAD');
    await repo.git.checkout('other');
    repo.write('x.go', 'package y\n');
    await repo.commitAll('other');
    const texts = await readBlobs(repo.git, [blob, blobSpec('main', 'x.go'), blobSpec('other', 'x.go'), blobSpec('no-such-branch', 'x.go')]);
    expect([...texts.values()]).toEqual(['package x\n', 'package x\n', 'package y\n', undefined]);
  });

  it('returns an empty map for no specs', async () => {
    const repo = await createTestRepo();
    expect((await readBlobs(repo.git, [])).size).toBe(0);
  });
});
