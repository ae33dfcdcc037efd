/**
 * One question, one answer, whatever the process knew before (issue 15, outside round X42): check-callers'
 * answer must not depend on which path the engine took — the first call on a tree (git grep, disk bytes
 * hashed), a later process with facts on disk (the listing: `ls-files -s -v` blob ids), or a process that
 * searched the repository before (the word index). Tried on the index states where git calls a file
 * unmodified although its working-tree bytes differ from the index blob, or where git grep searches
 * otherwise than the disk says:
 * - an assume-unchanged file edited on disk, whose index content is also another file's (X42-01: the
 *   cached facts of that blob gave index line numbers with the disk's context lines);
 * - a smudge filter that adds a line, `git status` clean (X42-05: the same, shifted lines);
 * - a skip-worktree file edited on disk, and a tracked symbolic link replaced by a regular file (X42-04:
 *   the word index read both from disk, git grep searches neither);
 * - a file whose name is not UTF-8 (X42-06: reported under a decoded name that does not exist);
 * - the system attributes file marking sources binary (X42-12: the word index searched them, git grep -I not).
 * Every answer must also be right: positions and context lines from the bytes on disk.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { findReferences, type Reference } from '../src/analysis/engine/index.js';
import { cacheDir, flushCache } from '../src/analysis/engine/cache.js';
import { analysisCall, memory } from '../src/analysis/engine/scope.js';
import { createTestRepo, type TestRepo } from './support/git-repo.js';

const use = "import { zapIt } from './def.js';\nzapIt();\n";

afterEach(() => {
  flushCache();
  memory.clear();
});

function emptyCache(dir: string): void {
  flushCache();
  rmSync(cacheDir(path.join(dir, '.git')), { recursive: true, force: true });
}

const call = (dir: string) => analysisCall(process.env, () => findReferences(dir, 'zapIt'));
const brief = (references: Reference[]) => references.map((reference) => `${reference.file}:${reference.line}:${reference.column} ${reference.kind} | ${reference.context}`);

/**
 * The answers of every path: FIRST (nothing cached, nothing known), SECOND (a new process with the first call's
 * facts on disk), LISTING (a new process with an unrelated pack on disk: the listing, facts parsed), and
 * AGAIN (the process of LISTING asked again: the word index stands in for git grep where it may).
 */
async function everyPath(dir: string): Promise<Record<string, string[]>> {
  memory.clear();
  emptyCache(dir);
  const first = brief(await call(dir));
  flushCache();
  memory.clear();
  const second = brief(await call(dir));
  memory.clear();
  emptyCache(dir);
  mkdirSync(path.join(cacheDir(path.join(dir, '.git')), 'packs'), { recursive: true });
  writeFileSync(path.join(cacheDir(path.join(dir, '.git')), 'packs', 'unrelated.pack'), 'PWP1\n{}\n');
  const listing = brief(await call(dir));
  const again = brief(await call(dir));
  const third = brief(await call(dir));
  return { first, second, listing, again, third };
}

function expectAllEqual(answers: Record<string, string[]>, expected: string[]): void {
  for (const [name, answer] of Object.entries(answers)) expect({ name, answer }).toEqual({ name, answer: expected });
}

async function repoWith(files: Record<string, string>): Promise<TestRepo> {
  return createTestRepo({ files: { 'def.ts': 'export function zapIt(): void {}\n', ...files } });
}

describe('check-callers answers alike on every path (index states)', () => {
  it('an assume-unchanged file edited on disk, its index content shared with another file (X42-01)', async () => {
    const repo = await repoWith({ 'a.ts': use, 'b.ts': use });
    await repo.run(['update-index', '--assume-unchanged', 'a.ts']);
    repo.write('a.ts', `// pad\n// pad\n// pad\n${use}`);
    expectAllEqual(await everyPath(repo.dir), [
      'a.ts:4:10 import | import { zapIt } from \'./def.js\';',
      'a.ts:5:1 call | zapIt();',
      'b.ts:1:10 import | import { zapIt } from \'./def.js\';',
      'b.ts:2:1 call | zapIt();',
    ]);
  }, 60_000);

  it('a smudge filter that adds a line, git status clean (X42-05)', async () => {
    const repo = await repoWith({ 'b.ts': use });
    await repo.run(['config', 'filter.hdr.smudge', "sed '1i // generated header'"]);
    await repo.run(['config', 'filter.hdr.clean', "sed '1d'"]);
    repo.write('.gitattributes', 'a.ts filter=hdr\n');
    repo.write('a.ts', `// generated header\n${use}`);
    await repo.commitAll('filtered a.ts');
    expect(await repo.run(['status', '--porcelain'])).toBe('');
    expect(await repo.run(['rev-parse', 'HEAD:a.ts'])).toBe(await repo.run(['rev-parse', 'HEAD:b.ts']));
    expectAllEqual(await everyPath(repo.dir), [
      'a.ts:2:10 import | import { zapIt } from \'./def.js\';',
      'a.ts:3:1 call | zapIt();',
      'b.ts:1:10 import | import { zapIt } from \'./def.js\';',
      'b.ts:2:1 call | zapIt();',
    ]);
  }, 60_000);

  it('a skip-worktree file edited on disk, a tracked link replaced by a regular file (X42-04)', async () => {
    const repo = await repoWith({ 'use.ts': use, 'sparse.ts': 'export const s = 1;\n' });
    symlinkSync('use.ts', repo.path('link.ts'));
    await repo.commitAll('a link');
    await repo.run(['update-index', '--skip-worktree', 'sparse.ts']);
    repo.write('sparse.ts', use);
    rmSync(repo.path('link.ts'));
    repo.write('link.ts', use);
    const answers = await everyPath(repo.dir);
    // git grep searches neither (the index calls link.ts a link; a skip-worktree entry is not in the working tree).
    const grepHits = (await repo.run(['grep', '-l', '-w', 'zapIt'])).split('\n').filter((file) => file !== '' && file !== 'def.ts');
    expect(grepHits).toEqual(['use.ts']);
    expectAllEqual(answers, ['use.ts:1:10 import | import { zapIt } from \'./def.js\';', 'use.ts:2:1 call | zapIt();']);
  }, 60_000);

  it('a file whose name is not UTF-8 is never reported under a name that does not exist (X42-06)', async () => {
    const repo = await repoWith({ 'base.ts': use });
    const raw = Buffer.concat([Buffer.from(repo.dir + '/'), Buffer.from([0xe9]), Buffer.from('lat.ts')]);
    writeFileSync(raw, use);
    await repo.commitAll('a latin-1 name');
    const answers = await everyPath(repo.dir);
    for (const answer of Object.values(answers)) expect(answer.filter((line) => line.includes('\uFFFD'))).toEqual([]);
    expectAllEqual(answers, ['base.ts:1:10 import | import { zapIt } from \'./def.js\';', 'base.ts:2:1 call | zapIt();']);
  }, 60_000);
});

/** bubblewrap, where it can run here (the CI installs it): a private /etc with a system attributes file. */
const bwrapWorks = spawnSync('bwrap', ['--bind', '/', '/', '--dev', '/dev', '--proc', '/proc', 'true']).status === 0;

describe('the system attributes file', () => {
  // X42-12: `/etc/gitattributes` saying `*.ts binary` makes git grep -I pass the files over; the word index (a
  // process that searched the repository before) read them anyway. Run in a mount namespace whose /etc is a
  // copy of this one's plus that file (nothing on the host changes), two calls in one process.
  it.skipIf(!bwrapWorks)('/etc/gitattributes keeps the word index out: the second call answers as git grep does', async () => {
    const repo = await repoWith({ 'b.ts': use });
    const script = path.join(repo.root, 'twice.mjs');
    const engine = pathToFileURL(path.resolve('dist/analysis/engine/index.js')).href;
    const scope = pathToFileURL(path.resolve('dist/analysis/engine/scope.js')).href;
    writeFileSync(
      script,
      `import { findReferences } from ${JSON.stringify(engine)};\nimport { analysisCall } from ${JSON.stringify(scope)};\n` +
        `const once = () => analysisCall(process.env, () => findReferences(${JSON.stringify(repo.dir)}, 'zapIt')).then((r) => r.map((x) => x.file + ':' + x.line));\n` +
        `console.log(JSON.stringify([await once(), await once(), await once()]));\n`,
    );
    const attributes = path.join(repo.root, 'gitattributes');
    writeFileSync(attributes, '*.ts binary\n');
    const etc = readdirSync('/etc').filter((name) => name !== 'gitattributes').flatMap((name) => ['--ro-bind', `/etc/${name}`, `/etc/${name}`]);
    const run = spawnSync('bwrap', ['--bind', '/', '/', '--tmpfs', '/etc', ...etc, '--ro-bind', attributes, '/etc/gitattributes', '--dev', '/dev', '--proc', '/proc', process.execPath, script], {
      encoding: 'utf8',
      env: { ...process.env, POLYWAVE_ANALYSIS_WORKERS: '0' },
    });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual([[], [], []]);
    // Without the file the same script finds the uses (the test is about the file, not the sandbox).
    const plain = spawnSync(process.execPath, [script], { encoding: 'utf8' });
    expect(JSON.parse(plain.stdout)).toEqual([['b.ts:1', 'b.ts:2'], ['b.ts:1', 'b.ts:2'], ['b.ts:1', 'b.ts:2']]);
  }, 60_000);
});
