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

/** Runs `fn` with `vars` set in process.env (undefined: unset), restored after. */
async function withEnv<T>(vars: Record<string, string | undefined>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(vars).map((name) => [name, process.env[name]]));
  const apply = (values: Record<string, string | undefined>) => {
    for (const [name, value] of Object.entries(values)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
  apply(vars);
  try {
    return await fn();
  } finally {
    apply(saved);
  }
}

const filtered = [
  "a.ts:2:10 import | import { zapIt } from './def.js';",
  'a.ts:3:1 call | zapIt();',
  "b.ts:1:10 import | import { zapIt } from './def.js';",
  'b.ts:2:1 call | zapIt();',
];

/** a.ts through a smudge filter that adds a header line (index blob = b.ts's), the attribute written by `attribute`. */
async function filteredRepo(attribute: (repo: TestRepo) => Promise<void> | void, clean = true): Promise<TestRepo> {
  const repo = await repoWith({ 'b.ts': use });
  await repo.run(['config', 'filter.hdr.smudge', "sed '1i // generated header'"]);
  await repo.run(['config', 'filter.hdr.clean', "sed '1d'"]);
  repo.write('.git/info/attributes', 'a.ts filter=hdr\n');
  repo.write('a.ts', `// generated header\n${use}`);
  await repo.commitAll('filtered a.ts');
  repo.remove('.git/info/attributes');
  await attribute(repo);
  if (clean) expect(await repo.run(['status', '--porcelain'])).toBe('');
  return repo;
}

describe('attributes git reads that a text scan could miss (outside round X43)', () => {
  it('pathspec variables in the environment (GIT_LITERAL_PATHSPECS / GIT_GLOB_PATHSPECS) change no answer (X43-01)', async () => {
    const repo = await repoWith({ 'use.ts': use, 'deep/er/use.ts': use });
    const expected = ["deep/er/use.ts:1:10 import | import { zapIt } from './def.js';", 'deep/er/use.ts:2:1 call | zapIt();', "use.ts:1:10 import | import { zapIt } from './def.js';", 'use.ts:2:1 call | zapIt();'];
    for (const name of ['GIT_LITERAL_PATHSPECS', 'GIT_GLOB_PATHSPECS', 'GIT_ICASE_PATHSPECS']) {
      expectAllEqual(await withEnv({ [name]: '1' }, () => everyPath(repo.dir)), expected);
    }
  }, 60_000);

  it('a tracked .gitattributes missing from the disk: git reads the index copy (X43-02)', async () => {
    const repo = await filteredRepo(async (repo) => {
      repo.write('.gitattributes', 'a.ts filter=hdr\n');
      await repo.commitAll('attributes');
      await repo.run(['update-index', '--skip-worktree', '.gitattributes']);
      repo.remove('.gitattributes');
    });
    expectAllEqual(await everyPath(repo.dir), filtered);
  }, 60_000);

  it('a pattern in quotes, and the host user\'s attributes file where polywave gives git the host HOME (X43-07, X43-03)', async () => {
    const quoted = await filteredRepo((repo) => {
      repo.write('.gitattributes', '"a.ts"filter=hdr\n');
      return repo.commitAll('quoted').then(() => undefined);
    });
    expectAllEqual(await everyPath(quoted.dir), filtered);
    const hostHome = path.join(quoted.root, 'host-home');
    mkdirSync(path.join(hostHome, '.config', 'git'), { recursive: true });
    writeFileSync(path.join(hostHome, '.config', 'git', 'attributes'), 'a.ts filter=hdr\n');
    const viaHome = await filteredRepo(() => undefined, false);
    // git with the host HOME applies the filter (git status is clean there); with the process's own HOME it does not.
    const hostGit = spawnSync('git', ['status', '--porcelain'], { cwd: viaHome.dir, encoding: 'utf8', env: { ...process.env, HOME: hostHome, XDG_CONFIG_HOME: '' } });
    expect(hostGit.stdout).toBe('');
    expectAllEqual(await withEnv({ POLYWAVE_HOST_HOME: hostHome, XDG_CONFIG_HOME: undefined }, () => everyPath(viaHome.dir)), filtered);
  }, 60_000);

  it('a FIFO or a link to /dev/zero in place of a tracked source file, a directory replaced by a link to another: no hang, nothing read there (X43-12, X43-11)', async () => {
    const repo = await repoWith({ 'use.ts': use, 'fifo.ts': use, 'zero.ts': use, 'lib/inner.ts': 'export const x = 1;\n' });
    rmSync(repo.path('fifo.ts'));
    expect(spawnSync('mkfifo', [repo.path('fifo.ts')]).status).toBe(0);
    rmSync(repo.path('zero.ts'));
    symlinkSync('/dev/zero', repo.path('zero.ts'));
    const outside = path.join(repo.root, 'outside');
    mkdirSync(outside);
    writeFileSync(path.join(outside, 'inner.ts'), use);
    rmSync(repo.path('lib'), { recursive: true });
    symlinkSync(outside, repo.path('lib'));
    expectAllEqual(await everyPath(repo.dir), ["use.ts:1:10 import | import { zapIt } from './def.js';", 'use.ts:2:1 call | zapIt();']);
  }, 60_000);
});

describe('re-export chains whatever the order files are read in (outside round X44-01)', () => {
  it('a two-step alias chain is followed when the second re-exporter sorts before the first, on every path', async () => {
    for (const [first, second] of [['zz/a.ts', 'aa/b.ts'], ['aa/a.ts', 'zz/b.ts']] as Array<[string, string]>) {
      const up = (from: string, to: string) => path.posix.relative(path.posix.dirname(from), to).replace(/^(?!\.)/, './');
      const repo = await repoWith({
        [first]: `export { zapIt as zA } from '${up(first, 'def.js')}';\n`,
        [second]: `import { zapIt } from '${up(second, 'def.js')}';\nzapIt();\nexport { zA as zB } from '${up(second, first.replace(/\.ts$/, '.js'))}';\n`,
        'c.ts': `import { zB } from './${second.replace(/\.ts$/, '.js')}';\nzB();\n`,
      });
      const answers = await everyPath(repo.dir);
      for (const answer of Object.values(answers)) {
        expect(answer.filter((line) => line.startsWith('c.ts:')), `${first} ${second}`).toEqual(["c.ts:1:10 import | import { zB } from './" + second.replace(/\.ts$/, '.js') + "';", 'c.ts:2:1 call | zB();']);
      }
      expectAllEqual(answers, answers.first!);
    }
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
    // GIT_ATTR_NOSYSTEM=0 (or empty) is false for git: the system file still counts (X43-06).
    for (const value of ['0', '']) {
      const again = spawnSync('bwrap', ['--bind', '/', '/', '--tmpfs', '/etc', ...etc, '--ro-bind', attributes, '/etc/gitattributes', '--dev', '/dev', '--proc', '/proc', process.execPath, script], {
        encoding: 'utf8',
        env: { ...process.env, POLYWAVE_ANALYSIS_WORKERS: '0', GIT_ATTR_NOSYSTEM: value },
      });
      expect(JSON.parse(again.stdout)).toEqual([[], [], []]);
    }
    // Without the file the same script finds the uses (the test is about the file, not the sandbox).
    const plain = spawnSync(process.execPath, [script], { encoding: 'utf8' });
    expect(JSON.parse(plain.stdout)).toEqual([['b.ts:1', 'b.ts:2'], ['b.ts:1', 'b.ts:2'], ['b.ts:1', 'b.ts:2']]);
  }, 60_000);
});
