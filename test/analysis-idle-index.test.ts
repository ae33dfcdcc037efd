/**
 * The word index of a new tree in a long-lived process (issue 15: the second command on a tree cost 4–6×
 * git grep while the resident server read every file to build it): above a few hundred unread files the
 * call that would build it lets git grep answer and leaves the reading to idle time (scope.ts
 * setIdleRunner; the resident server runs it between requests, a slice at a time). Shown here with
 * a runner that records the task and runs it when told: the second call searches with git grep, the
 * task reads the files, the third call searches with no git process — and all three answer alike.
 * Without a runner (a CLI process) the index is built within the call, as before.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { findReferences } from '../src/analysis/engine/index.js';
import { flushCache } from '../src/analysis/engine/cache.js';
import { analysisCall, memory, setIdleRunner, type IdleRunner } from '../src/analysis/engine/scope.js';
import { createTestRepo } from './support/git-repo.js';

afterEach(() => {
  setIdleRunner(undefined);
  flushCache();
  memory.clear();
});

async function bigRepo() {
  const files: Record<string, string> = { 'src/def.ts': 'export function zapIt(): void {}\n' };
  for (let i = 0; i < 400; i += 1) files[`src/f${i}.ts`] = i % 40 === 0 ? `import { zapIt } from './def.js';\nzapIt(${i});\n` : `export const v${i} = ${i};\n`;
  return createTestRepo({ files });
}

async function traced<T>(trace: string, fn: () => Promise<T>): Promise<{ result: T; grep: boolean }> {
  const saved = process.env.GIT_TRACE;
  process.env.GIT_TRACE = trace;
  try {
    const result = await analysisCall(process.env, fn);
    return { result, grep: / git grep /.test(readFileSync(trace, 'utf8')) };
  } finally {
    if (saved === undefined) delete process.env.GIT_TRACE;
    else process.env.GIT_TRACE = saved;
  }
}

describe('the word index of a new tree, built in idle time', () => {
  it('second call: git grep, the reading left to idle time; third call: the index; one answer', async () => {
    const repo = await bigRepo();
    const tasks: Array<Parameters<IdleRunner>[0]> = [];
    setIdleRunner((task) => tasks.push(task));
    memory.clear();
    const first = await traced(path.join(repo.root, '1.trace'), () => findReferences(repo.dir, 'zapIt'));
    expect(first.result).toHaveLength(20);
    expect(first.grep).toBe(true);
    const second = await traced(path.join(repo.root, '2.trace'), () => findReferences(repo.dir, 'zapIt'));
    expect(second.grep).toBe(true);
    expect(second.result).toEqual(first.result);
    expect(tasks).toHaveLength(1);
    // The same tree asked again before the idle time came: no second task for it.
    await traced(path.join(repo.root, '2b.trace'), () => findReferences(repo.dir, 'zapIt'));
    expect(tasks).toHaveLength(1);
    let slices = 0;
    await tasks[0]!(async () => {
      slices += 1;
      return true;
    });
    expect(slices).toBeGreaterThan(1); // a slice at a time (128 files), the runner asked before each
    const third = await traced(path.join(repo.root, '3.trace'), () => findReferences(repo.dir, 'zapIt'));
    expect(third.grep).toBe(false);
    expect(third.result).toEqual(first.result);
  }, 60_000);

  it('a stopping process ends the task between slices; without a runner the call builds the index itself', async () => {
    const repo = await bigRepo();
    const tasks: Array<Parameters<IdleRunner>[0]> = [];
    setIdleRunner((task) => tasks.push(task));
    memory.clear();
    await traced(path.join(repo.root, '1.trace'), () => findReferences(repo.dir, 'zapIt'));
    await traced(path.join(repo.root, '2.trace'), () => findReferences(repo.dir, 'zapIt'));
    await tasks[0]!(async () => false);
    // Nothing was read: still git grep.
    expect((await traced(path.join(repo.root, '3.trace'), () => findReferences(repo.dir, 'zapIt'))).grep).toBe(true);
    setIdleRunner(undefined);
    memory.clear();
    await traced(path.join(repo.root, '4.trace'), () => findReferences(repo.dir, 'zapIt'));
    const built = await traced(path.join(repo.root, '5.trace'), () => findReferences(repo.dir, 'zapIt'));
    expect(built.grep).toBe(false);
    expect(built.result).toHaveLength(20);
  }, 60_000);

  it('slices end by bytes as well as files (X44-03); a listing is filled at most twice when the memory did not keep it (X44-05/07, X45-02)', async () => {
    const padding = `// ${'x'.repeat(78)}\n`.repeat(500); // ~40 KB a file: 2 MB is ~50 files, not 128
    const files: Record<string, string> = { 'src/def.ts': 'export function zapIt(): void {}\n' };
    for (let i = 0; i < 300; i += 1) files[`src/f${i}.ts`] = (i % 50 === 0 ? `import { zapIt } from './def.js';\nzapIt(${i});\n` : `export const v${i} = ${i};\n`) + padding;
    const repo = await createTestRepo({ files });
    const tasks: Array<Parameters<IdleRunner>[0]> = [];
    setIdleRunner((task) => tasks.push(task));
    memory.clear();
    await traced(path.join(repo.root, '1.trace'), () => findReferences(repo.dir, 'zapIt'));
    await traced(path.join(repo.root, '2.trace'), () => findReferences(repo.dir, 'zapIt'));
    expect(tasks).toHaveLength(1);
    let slices = 0;
    await tasks[0]!(async () => {
      slices += 1;
      return true;
    });
    expect(slices).toBeGreaterThanOrEqual(6); // 12 MB in slices of at most ~2 MB (128-file slices: 3)
    // The memory lost the words before the next call (as with a tree past its budget): git grep answers; the same
    // listing is filled once more (a tree edited during its fill and back: X45-02), then never again (it would read
    // everything again after every call).
    memory.clear();
    await traced(path.join(repo.root, '4.trace'), () => findReferences(repo.dir, 'zapIt'));
    const again = await traced(path.join(repo.root, '5.trace'), () => findReferences(repo.dir, 'zapIt'));
    expect(again.grep).toBe(true);
    expect(again.result).toHaveLength(12);
    expect(tasks).toHaveLength(2);
    await tasks[1]!(async () => true);
    memory.clear();
    await traced(path.join(repo.root, '6.trace'), () => findReferences(repo.dir, 'zapIt'));
    const last = await traced(path.join(repo.root, '7.trace'), () => findReferences(repo.dir, 'zapIt'));
    expect(last.grep).toBe(true);
    expect(tasks).toHaveLength(2);
  }, 60_000);

  it('attributes that cannot change git grep\'s answer (Git LFS\'s lines) keep the word index; `binary` on a source file keeps it out (X44-11)', async () => {
    const repo = await createTestRepo({
      files: {
        '.gitattributes': '*.psd filter=lfs diff=lfs merge=lfs -text\n',
        'src/def.ts': 'export function zapIt(): void {}\n',
        'src/use.ts': "import { zapIt } from './def.js';\nzapIt();\n",
      },
    });
    memory.clear();
    const first = await traced(path.join(repo.root, '1.trace'), () => findReferences(repo.dir, 'zapIt'));
    await traced(path.join(repo.root, '2.trace'), () => findReferences(repo.dir, 'zapIt'));
    const warm = await traced(path.join(repo.root, '3.trace'), () => findReferences(repo.dir, 'zapIt'));
    expect(warm.grep).toBe(false);
    // (git is asked which files the attributes touch on every call: its answer depends on more than the texts, X46)
    expect(readFileSync(path.join(repo.root, '3.trace'), 'utf8')).toMatch(/check-attr/);
    expect(warm.result).toEqual(first.result);
    // The same tree with the sources marked binary: git grep -I passes them over, and so does every later call.
    repo.write('.gitattributes', '*.psd filter=lfs diff=lfs merge=lfs -text\n*.ts binary\n');
    const marked = await traced(path.join(repo.root, '4.trace'), () => findReferences(repo.dir, 'zapIt'));
    const again = await traced(path.join(repo.root, '5.trace'), () => findReferences(repo.dir, 'zapIt'));
    expect(marked.result).toEqual([]);
    expect(again.result).toEqual([]);
    expect(again.grep).toBe(true);
  }, 60_000);

  it('the same attributes text moved to another directory (X45-01), core.ignorecase turned on (X46-02), a deleted tracked .gitattributes whose index copy changes (X46-01): each another answer', async () => {
    const repo = await createTestRepo({
      files: {
        'lib/def.ts': 'export function zapIt(): void {}\n',
        'lib/use.ts': "import { zapIt } from './def.js';\nzapIt();\n",
        'assets/notes.txt': 'zapIt\n',
      },
    });
    repo.write('assets/.gitattributes', '*.ts -diff\n');
    memory.clear();
    const grepI = async () => (await repo.run(['grep', '-I', '-l', '-w', 'zapIt'])).split('\n').filter((file) => file !== '' && file !== 'lib/def.ts');
    expect(await grepI()).toEqual(['assets/notes.txt', 'lib/use.ts']);
    for (const name of ['1', '2', '3']) expect((await traced(path.join(repo.root, `${name}.trace`), () => findReferences(repo.dir, 'zapIt'))).result.map((reference) => reference.file)).toEqual(['lib/use.ts', 'lib/use.ts']);
    // Moved (untracked, the same text): now lib/*.ts are the files git grep -I passes over.
    rmSync(repo.path('assets/.gitattributes'));
    repo.write('lib/.gitattributes', '*.ts -diff\n');
    expect(await grepI()).toEqual(['assets/notes.txt']);
    for (const name of ['4', '5']) expect((await traced(path.join(repo.root, `${name}.trace`), () => findReferences(repo.dir, 'zapIt'))).result).toEqual([]);

    // `*.TS -diff` matches lib/use.ts only when git ignores case: the same texts, another answer.
    rmSync(repo.path('lib/.gitattributes'));
    repo.write('lib/.gitattributes', '*.TS -diff\n');
    expect(await grepI()).toEqual(['assets/notes.txt', 'lib/use.ts']);
    for (const name of ['6', '7']) expect((await traced(path.join(repo.root, `${name}.trace`), () => findReferences(repo.dir, 'zapIt'))).result).toHaveLength(2);
    await repo.run(['config', 'core.ignorecase', 'true']);
    expect(await grepI()).toEqual(['assets/notes.txt']);
    for (const name of ['8', '9']) expect((await traced(path.join(repo.root, `${name}.trace`), () => findReferences(repo.dir, 'zapIt'))).result).toEqual([]);
    await repo.run(['config', 'core.ignorecase', 'false']);
    // A tracked .gitattributes deleted from the disk (git reads the index copy), whose index copy then changes.
    rmSync(repo.path('lib/.gitattributes'));
    repo.write('.gitattributes', 'assets/*.ts -diff\n');
    await repo.commitAll('a top-level .gitattributes');
    await repo.run(['update-index', '--skip-worktree', '.gitattributes']);
    rmSync(repo.path('.gitattributes'));
    for (const name of ['10', '11']) expect((await traced(path.join(repo.root, `${name}.trace`), () => findReferences(repo.dir, 'zapIt'))).result).toHaveLength(2);
    const marked = spawnSync('git', ['hash-object', '-w', '--stdin'], { cwd: repo.dir, input: 'lib/*.ts -diff\n', encoding: 'utf8' }).stdout.trim();
    await repo.run(['update-index', '--cacheinfo', `100644,${marked},.gitattributes`]);
    await repo.run(['update-index', '--skip-worktree', '.gitattributes']);
    expect(await grepI()).toEqual(['assets/notes.txt']);
    for (const name of ['12', '13']) expect((await traced(path.join(repo.root, `${name}.trace`), () => findReferences(repo.dir, 'zapIt'))).result).toEqual([]);
  }, 60_000);

  it('a listed file over 1 MiB keeps the word index out and is never read by the fill (X45-08/09)', async () => {
    const repo = await bigRepo();
    repo.write('src/bundle.js', `/* ${'y'.repeat(2 * 1024 * 1024)} */\nzapIt();\n`);
    await repo.commitAll('a bundle');
    const tasks: Array<Parameters<IdleRunner>[0]> = [];
    setIdleRunner((task) => tasks.push(task));
    memory.clear();
    const first = await traced(path.join(repo.root, '1.trace'), () => findReferences(repo.dir, 'zapIt'));
    await traced(path.join(repo.root, '2.trace'), () => findReferences(repo.dir, 'zapIt'));
    expect(tasks).toHaveLength(1);
    await tasks[0]!(async () => true);
    const third = await traced(path.join(repo.root, '3.trace'), () => findReferences(repo.dir, 'zapIt'));
    expect(third.grep).toBe(true);
    expect(third.result).toEqual(first.result);
    expect(first.result.some((reference) => reference.file === 'src/bundle.js')).toBe(true);
  }, 60_000);
});
