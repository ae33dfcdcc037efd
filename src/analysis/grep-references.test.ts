import { describe, expect, it } from 'vitest';
import { createTestRepo } from '../../test/support/git-repo.js';
import { grepReferences } from './grep-references.js';

describe('grepReferences', () => {
  it('finds identifiers in code across several trees, ignoring comments, strings, tests-agnostic, and excluded paths', async () => {
    const repo = await createTestRepo({
      files: {
        'src/a.ts': 'export function registerA(): void {}\n',
        'src/uses.ts': "import { registerA } from './a';\nregisterA();\n",
        'src/comment.ts': '// registerB is mentioned only in a comment\nexport const text = "registerB";\n',
        'vendor/lib.ts': 'registerB();\n',
      },
    });
    const main = await repo.git.headCommit();
    await repo.run(['checkout', '-q', '-b', 'agent']);
    repo.write('src/b.ts', 'export function registerB(): void {}\n');
    repo.write('src/caller.py', 'from b import registerB\nregisterB()\n');
    repo.remove('src/uses.ts');
    const tip = await repo.commitAll('agent work');
    const found = await grepReferences(repo.git, { refs: [main, tip], names: ['registerA', 'registerB', 'missing'] });
    expect([...found.get('registerA')!].sort()).toEqual(['src/a.ts', 'src/uses.ts']);
    expect([...found.get('registerB')!].sort()).toEqual(['src/b.ts', 'src/caller.py']);
    expect([...found.get('missing')!]).toEqual([]);
    // src/uses.ts is deleted on the agent branch: its copy on main must not count.
    const excluded = await grepReferences(repo.git, { refs: [main, tip], names: ['registerA'], excludePaths: new Set(['src/uses.ts']) });
    expect([...excluded.get('registerA')!]).toEqual(['src/a.ts']);
    // The merged view E25 uses: main's tree minus what the branch touched, plus the branch's files.
    const merged = await grepReferences(repo.git, {
      refs: [main],
      names: ['registerA', 'registerB'],
      excludePaths: new Set(['src/uses.ts', 'src/b.ts', 'src/caller.py']),
      files: [
        { spec: `${tip}:src/b.ts`, path: 'src/b.ts' },
        { spec: `${tip}:src/caller.py`, path: 'src/caller.py' },
      ],
    });
    expect([...merged.get('registerA')!]).toEqual(['src/a.ts']);
    expect([...merged.get('registerB')!].sort()).toEqual(['src/b.ts', 'src/caller.py']);
  });
});
