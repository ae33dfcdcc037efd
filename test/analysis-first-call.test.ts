/**
 * check-callers' first call on a tree (issue 15, cold ≤ 3× git grep): with nothing cached — no facts on
 * disk, a repository the process has not searched — findReferences makes no listing (`ls-files -s` +
 * `diff-files` over the whole tree): every file the word search finds is read anyway, so its blob id is
 * hashed from the bytes read. What that must never change, tried on the states a listing exists to
 * describe: a use added in the working tree and not staged, a file staged then edited again, a tracked
 * file deleted from the disk, an untracked file, a file under node_modules, a tracked symbolic link to a
 * file that uses the symbol, a submodule-like nested repository, the word only in a comment or a string,
 * an aliased import, a re-export under another name (found by a second search), CRLF text, and files in
 * Go and Python. The answer must be what the listing path gives, byte for byte; the facts it cached must
 * be found again by the listing path's blob ids; and it must not have run `git ls-files`.
 */
import { mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { findReferences } from '../src/analysis/engine/index.js';
import { cacheDir, flushCache } from '../src/analysis/engine/cache.js';
import { analysisCall, memory } from '../src/analysis/engine/scope.js';
import { createTestRepo, type TestRepo } from './support/git-repo.js';

const files: Record<string, string> = {
  'src/core.ts': 'export function makeWidget(size: number): number {\n  return size * 2;\n}\n',
  'src/use.ts': "import { makeWidget } from './core.js';\nexport const a = makeWidget(1);\n",
  'src/alias.ts': "import { makeWidget as mk } from './core.js';\nexport const b = mk(2);\n",
  'src/barrel.ts': "export { makeWidget as buildWidget } from './core.js';\n",
  'src/via-barrel.ts': "import { buildWidget } from './barrel.js';\nexport const c = buildWidget(3);\n",
  'src/comment-only.ts': '// makeWidget is documented elsewhere\nexport const d = "makeWidget";\n',
  'src/edited.ts': 'export const e = 1;\n',
  'src/staged.ts': "import { makeWidget } from './core.js';\nexport const f = makeWidget(4);\n",
  'src/deleted.ts': "import { makeWidget } from './core.js';\nexport const g = makeWidget(5);\n",
  'src/crlf.ts': "import { makeWidget } from './core.js';\r\nexport const h = makeWidget(6);\r\n",
  'go/widget.go': 'package widget\n\nvar makeWidget = func(size int) int { return size * 2 }\n\nfunc Use() int { return makeWidget(1) }\n',
  'py/widget.py': 'from core import makeWidget\n\nVALUE = makeWidget(7)\n',
};

let repo: TestRepo | undefined;
afterEach(() => {
  flushCache();
  memory.clear();
});

async function fixture(): Promise<TestRepo> {
  repo = await createTestRepo({ files });
  // Working-tree states after the commit.
  repo.write('src/edited.ts', "import { makeWidget } from './core.js';\nexport const e = makeWidget(8);\n");
  repo.write('src/staged.ts', "import { makeWidget } from './core.js';\nexport const f = makeWidget(4) + makeWidget(9);\n");
  await repo.run(['add', 'src/staged.ts']);
  repo.write('src/staged.ts', "import { makeWidget } from './core.js';\nexport const f = makeWidget(4) + makeWidget(9) + makeWidget(10);\n");
  repo.remove('src/deleted.ts');
  repo.write('src/untracked.ts', "import { makeWidget } from './core.js';\nexport const u = makeWidget(11);\n");
  repo.write('node_modules/dep/index.ts', "import { makeWidget } from '../../src/core.js';\nmakeWidget(12);\n");
  await repo.run(['add', '-f', 'node_modules/dep/index.ts']);
  // Cargo's build output is skipped; a directory of the project's own code named `target` is not (X47)
  repo.write('target/debug/build/gen/out/gen.ts', "import { makeWidget } from '../../../../../src/core.js';\nmakeWidget(14);\n");
  repo.write('src/target/aim.ts', "import { makeWidget } from '../core.js';\nexport const a = makeWidget(15);\n");
  await repo.run(['add', '-f', 'target/debug/build/gen/out/gen.ts', 'src/target/aim.ts']);
  symlinkSync('use.ts', repo.path('src/link.ts'));
  await repo.run(['add', 'src/link.ts']);
  mkdirSync(repo.path('nested'));
  await repo.run(['-C', repo.path('nested'), 'init', '-q']);
  writeFileSync(repo.path('nested/inner.ts'), "import { makeWidget } from '../src/core.js';\nmakeWidget(13);\n");
  return repo;
}

function cacheOf(dir: string): string {
  return cacheDir(path.join(dir, '.git'));
}

/** One analysis call as a command makes it (memory on); git's commands traced to `trace`. */
async function traced<T>(trace: string, fn: () => Promise<T>): Promise<T> {
  const saved = process.env.GIT_TRACE;
  process.env.GIT_TRACE = trace;
  try {
    return await analysisCall(process.env, fn);
  } finally {
    if (saved === undefined) delete process.env.GIT_TRACE;
    else process.env.GIT_TRACE = saved;
  }
}

describe('findReferences, first call on a tree', () => {
  it('answers exactly as the listing path does, without listing the tree', async () => {
    const { dir, root } = await fixture();
    const traceFirst = path.join(root, 'first.trace');
    memory.clear();
    rmSync(cacheOf(dir), { recursive: true, force: true });
    const first = await traced(traceFirst, () => findReferences(dir, 'makeWidget'));
    const firstCommands = readFileSync(traceFirst, 'utf8');
    expect(firstCommands).toMatch(/built-in: git grep/);
    expect(firstCommands).not.toMatch(/built-in: git ls-files/);
    expect(firstCommands).not.toMatch(/built-in: git diff-files/);

    // The listing path: the same call in a process that knows nothing either, but with facts on disk.
    flushCache();
    memory.clear();
    rmSync(cacheOf(dir), { recursive: true, force: true });
    mkdirSync(path.join(cacheOf(dir), 'packs'), { recursive: true });
    writeFileSync(path.join(cacheOf(dir), 'packs', 'unrelated.pack'), 'PWP1\n{}\n');
    const traceListed = path.join(root, 'listed.trace');
    const listed = await traced(traceListed, () => findReferences(dir, 'makeWidget'));
    expect(readFileSync(traceListed, 'utf8')).toMatch(/built-in: git ls-files/);

    expect(first).toEqual(listed);
    const files = new Set(first.map((reference) => reference.file));
    // What each working-tree state means for the answer (both paths agree on all of it, above):
    expect(files.has('src/edited.ts')).toBe(true); // a use only in the working tree
    expect(first.filter((reference) => reference.file === 'src/staged.ts')).toHaveLength(4); // the import + 3 calls on disk
    expect(files.has('src/deleted.ts')).toBe(false);
    expect(files.has('src/untracked.ts')).toBe(false);
    expect(files.has('node_modules/dep/index.ts')).toBe(false);
    expect(files.has('target/debug/build/gen/out/gen.ts')).toBe(false);
    expect(files.has('src/target/aim.ts')).toBe(true);
    expect(files.has('src/link.ts')).toBe(false);
    expect(files.has('nested/inner.ts')).toBe(false);
    expect(files.has('src/comment-only.ts')).toBe(false);
    expect(first.find((reference) => reference.file === 'src/alias.ts' && reference.via === 'mk')).toBeDefined();
    expect(first.find((reference) => reference.file === 'src/via-barrel.ts' && reference.via === 'buildWidget')).toBeDefined();
    expect(first.find((reference) => reference.file === 'src/crlf.ts' && reference.line === 2)?.context).toBe('export const h = makeWidget(6);');
    expect(files.has('py/widget.py')).toBe(true);
    expect(files.has('go/widget.go')).toBe(true);
  }, 60_000);

  it('caches facts under the blob ids the listing path looks them up by', async () => {
    const { dir, root } = await fixture();
    memory.clear();
    rmSync(cacheOf(dir), { recursive: true, force: true });
    const first = await traced(path.join(root, 'a.trace'), () => findReferences(dir, 'makeWidget'));
    flushCache();
    // A new process (no memory) with the facts on disk: the listing path, every hit answered from the cache.
    memory.clear();
    const saved = process.env.POLYWAVE_ANALYSIS_STATS;
    process.env.POLYWAVE_ANALYSIS_STATS = '1';
    try {
      const { engineCounters } = await import('../src/analysis/engine/index.js');
      const parsedBefore = engineCounters.parsed;
      const again = await analysisCall(process.env, () => findReferences(dir, 'makeWidget'));
      expect(again).toEqual(first);
      // Nothing parsed again except what the first call could not store (none here: every file read was exact).
      expect(engineCounters.parsed - parsedBefore).toBe(0);
    } finally {
      if (saved === undefined) delete process.env.POLYWAVE_ANALYSIS_STATS;
      else process.env.POLYWAVE_ANALYSIS_STATS = saved;
    }
  }, 60_000);

  it('takes the listing path with --defined-in, with untracked files, and once the repository was searched', async () => {
    const { dir, root } = await fixture();
    memory.clear();
    rmSync(cacheOf(dir), { recursive: true, force: true });
    const definedTrace = path.join(root, 'defined.trace');
    await traced(definedTrace, () => findReferences(dir, 'makeWidget', { definedIn: 'src/core.ts' }));
    expect(readFileSync(definedTrace, 'utf8')).toMatch(/built-in: git ls-files/);
    flushCache();
    memory.clear();
    rmSync(cacheOf(dir), { recursive: true, force: true });
    const untrackedTrace = path.join(root, 'untracked.trace');
    const withUntracked = await traced(untrackedTrace, () => findReferences(dir, 'makeWidget', { includeUntracked: true }));
    expect(readFileSync(untrackedTrace, 'utf8')).toMatch(/built-in: git ls-files/);
    expect(withUntracked.some((reference) => reference.file === 'src/untracked.ts')).toBe(true);
    // A repository this process searched before (its word index answers from the listing), the cache emptied:
    flushCache();
    rmSync(cacheOf(dir), { recursive: true, force: true });
    const againTrace = path.join(root, 'again.trace');
    await traced(againTrace, () => findReferences(dir, 'makeWidget'));
    // (the index is unchanged since the last listing: only `diff-files` is asked again, repo-files.ts knownListings)
    expect(readFileSync(againTrace, 'utf8')).toMatch(/built-in: git diff-files/);
  }, 60_000);
});
