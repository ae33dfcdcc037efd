import { describe, expect, it } from 'vitest';
import { createTestRepo } from '../../test/support/git-repo.js';
import { buildReferenceIndex } from './reference-index.js';

describe('buildReferenceIndex', () => {
  it('indexes the ref (not the checkout), code identifiers only, skipping vendor/node_modules/dist/dot-dirs', async () => {
    const repo = await createTestRepo({
      files: {
        'pkg/a/a.go': 'package a\n\nfunc NewThing() {}\n',
        'cmd/main.go': 'package main\n\n// NewThing is mentioned in a comment only\nvar s = "NewThing"\n\nfunc main() { a.NewThingy() }\n',
        'src/use.ts': 'import { NewThing } from "./x";\nNewThing();\n',
        'src/use.test.ts': 'NewThing();\n',
        'app/use.py': 'from pkg import NewThing\n',
        'vendor/lib/v.go': 'package lib\nfunc f() { NewThing() }\n',
        'node_modules/x/index.js': 'NewThing();\n',
        'dist/out.js': 'NewThing();\n',
        '.github/scripts/s.js': 'NewThing();\n',
        'docs/notes.md': 'NewThing\n',
      },
    });
    await repo.git.createBranch('feature', 'HEAD');
    await repo.git.checkout('feature');
    repo.write('src/late.rs', 'fn main() { NewThing(); }\n');
    await repo.commitAll('feature');
    await repo.git.checkout('main');
    repo.write('src/checkout-only.ts', 'NewThing();\n');

    const index = await buildReferenceIndex({ git: repo.git, ref: 'feature' });
    expect(index.commit).toBe((await repo.run(['rev-parse', 'feature'])).trim());
    expect(index.files).toEqual(['app/use.py', 'cmd/main.go', 'pkg/a/a.go', 'src/late.rs', 'src/use.test.ts', 'src/use.ts']);
    expect(index.filesReferencing('NewThing')).toEqual(['app/use.py', 'pkg/a/a.go', 'src/late.rs', 'src/use.test.ts', 'src/use.ts']);
    expect(index.filesReferencing('NewThing', { excludeFile: 'pkg/a/a.go', excludeTests: true })).toEqual(['app/use.py', 'src/late.rs', 'src/use.ts']);
    expect(index.filesReferencing('NewThingy')).toEqual(['cmd/main.go']);
    expect(index.filesReferencing('Nothing')).toEqual([]);
    expect(index.fileMentions('src/use.ts', 'NewThing')).toBe(true);
    expect(index.fileMentions('cmd/main.go', 'NewThing')).toBe(false);
    expect(index.hasFile('vendor/lib/v.go')).toBe(false);
    expect(index.stats.files).toBe(6);
  });

  it('takes the extensions to index and skips large files', async () => {
    const repo = await createTestRepo({ files: { 'a.go': 'package a\nfunc X() {}\n', 'b.ts': 'export const X = 1;\n', 'big.go': `package a\n// ${'y'.repeat(5000)}\nvar X = 1\n` } });
    const goOnly = await buildReferenceIndex({ git: repo.git, ref: 'HEAD', extensions: ['go'], maxFileBytes: 1000 });
    expect(goOnly.files).toEqual(['a.go']);
    expect(goOnly.stats.skipped).toBe(1);
  });
});
