// The Scout's analysis commands in resident mode (issue 15 "warm check-callers", issue 13 resident
// mode): one warm server answers check-callers / analyze-deps / detect-cascades while the repository
// changes under it — edited, committed, renamed, deleted, an attributes file added, the repository
// moved and another one made at its path, an edit git can only see by its ctime (same size, mtime
// put back, right after the index was written), a repository appearing inside the calling
// directory — and every answer must be byte for byte what a fresh
// `node bin/polywave.js` gives at that moment (a stale answer is the bug hunted here). Plus the
// engine's memory in process: repository roots checked per call, per-call counters, blob-keyed facts.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, statSync, symlinkSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findReferences } from '../src/analysis/engine/index.js';
import { repoContext } from '../src/analysis/engine/repo-files.js';
import { analysisCall, currentScope, memory } from '../src/analysis/engine/scope.js';
import { processAlive, residentCapable } from '../src/cli/resident-server.js';
import { analysisFixtureRepo } from './support/analysis-fixture.js';
import { binPath, repoRoot, runCli } from './support/cli.js';
import { childOutput } from './support/child-output.js';

const client = path.join(repoRoot, 'dist', 'native', 'polywave-client');
const bundle = path.join(repoRoot, 'dist', 'bundle', 'main.js');
const enabled = process.platform !== 'win32' && existsSync(bundle) && existsSync(client);

let scratch = '';
let socketPath = '';
let serverPid = 0;

function status(): { running?: boolean; pid?: number; requests?: number } {
  const result = spawnSync(process.execPath, [binPath, 'resident', 'status', '--json'], { encoding: 'utf8', env: { ...process.env, POLYWAVE_RESIDENT_SOCKET: socketPath } });
  return JSON.parse(result.stdout) as { running?: boolean; pid?: number; requests?: number };
}

function runClient(args: string[], cwd: string, env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return childOutput(spawn(client, args, { cwd, env: { ...process.env, NO_COLOR: '1', POLYWAVE_RESIDENT_SOCKET: socketPath, ...env }, stdio: ['ignore', 'pipe', 'pipe'] }));
}

describe('which analysis calls run resident', () => {
  it('the read-only Scout commands do; solve (writes the IMPL) does not', () => {
    for (const argv of [['check-callers', 'x'], ['analyze-deps', '.', '--files', 'a.ts'], ['detect-cascades', '.', '--renames', '[]'], ['detect-shared-types', 'i.yaml'], ['check-test-cascade', 'i.yaml'], ['list-error-ranges']]) {
      expect(residentCapable(argv), argv.join(' ')).toBe(true);
    }
    expect(residentCapable(['solve', 'i.yaml'])).toBe(false);
  });
});

describe.skipIf(!enabled)('analysis commands through the warm server', () => {
  beforeAll(async () => {
    scratch = mkdtempSync(path.join(tmpdir(), 'polywave-resident-analysis-'));
    mkdirSync(path.join(scratch, 'sock'), { mode: 0o700 });
    socketPath = path.join(scratch, 'sock', 'r.sock');
    const server = spawn(process.execPath, [binPath, 'resident', 'start', '--foreground', '--idle-timeout', '120'], { env: { ...process.env, POLYWAVE_RESIDENT_SOCKET: socketPath }, stdio: 'ignore', detached: true });
    server.unref();
    serverPid = server.pid!;
    for (let waited = 0; waited < 20_000 && status().running !== true; waited += 100) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(status().running).toBe(true);
  }, 60_000);

  afterAll(() => {
    if (serverPid > 0 && processAlive(serverPid)) process.kill(serverPid, 'SIGKILL');
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it('gives what a fresh node process gives after every edit, commit, rename, delete, attributes file and a moved repository', async () => {
    const repo = await analysisFixtureRepo('ts');
    const calls = [
      ['check-callers', 'makeWidget'],
      // `store.add`: a lowercase qualifier is matched against the text before the dot (file lines).
      ['check-callers', 'store.add', '--format', 'text'],
      ['analyze-deps', '.', '--files', 'src/app.ts,src/model.ts', '--format', 'json'],
    ];
    const served: string[] = [];
    /** Every call through the server and through node at this moment: identical bytes and exit codes. */
    const same = async (step: string, cwd = repo.dir, only = calls) => {
      const before = status().requests ?? 0;
      for (const args of only) {
        const [resident, { code, stdout, stderr }] = await Promise.all([runClient(args, cwd), runCli(args, { cwd })]);
        expect({ step, args, ...resident }).toEqual({ step, args, code, stdout, stderr });
      }
      expect(status().requests, step).toBe(before + only.length); // all of them were served resident
      served.push(step);
    };
    await same('fresh');
    await same('warm (word index)', repo.dir, calls.slice(0, 1));
    const first = await runCli(['check-callers', 'makeWidget'], { cwd: repo.dir });

    // Uncommitted edit that moves lines and adds a caller; then committed.
    repo.write('src/service.ts', `// moved down\n${repo.read('src/service.ts')}\nexport const again = makeWidget;\nimport { makeWidget } from './model.js';\n`);
    await same('edited');
    await repo.commitAll('edit service');

    // Racy git: right after the commit wrote the index, an edit of the same size with the file's
    // mtime put back (the server keeps the listing of an unchanged index between calls).
    const test = repo.path('test/model.test.ts');
    const { mtime } = statSync(test);
    const text = repo.read('test/model.test.ts');
    repo.write('test/model.test.ts', text.replace("makeWidget('t')", "makeWidgex('t')"));
    utimesSync(test, mtime, mtime);
    await same('same size and mtime, index just written', repo.dir, calls.slice(0, 1));
    repo.write('test/model.test.ts', text);
    utimesSync(test, mtime, mtime);

    // A repository made inside the directory a call comes from (the server remembers which
    // repository a directory is in), then removed again.
    const fromSub = await runClient(['check-callers', 'makeWidget'], repo.path('src')); // remembered: src is in repo.dir's repository
    expect(fromSub.stdout).toBe((await runClient(['check-callers', 'makeWidget'], repo.dir)).stdout);
    await repo.run(['init', '-q', 'src']);
    await same('a repository appeared in it', repo.path('src'), calls.slice(0, 1));
    rmSync(repo.path('src/.git'), { recursive: true });
    await same('and went away', repo.path('src'), calls.slice(0, 1));

    // Renamed and deleted files, committed; an untracked file is not analysed, staged it is.
    await repo.run(['mv', 'src/service.ts', 'src/svc.ts']);
    repo.remove('src/app.ts');
    await repo.commitAll('rename and delete');
    repo.write('src/extra.ts', "import { makeWidget } from './model.js';\nmakeWidget('x');\n");
    await same('renamed, deleted, untracked', repo.dir, calls.slice(0, 1));
    await repo.run(['add', 'src/extra.ts']);
    await same('staged', repo.dir, calls.slice(0, 1));

    // git grep -I skips a file an attributes file marks binary: the word index must not answer then.
    repo.write('.gitattributes', 'src/extra.ts binary\n');
    await same('attributes', repo.dir, calls.slice(0, 1));
    repo.remove('.gitattributes');
    // A symbolic link is not searched by git grep either.
    symlinkSync('model.ts', repo.path('src/link.ts'));
    await repo.run(['add', 'src/link.ts']);
    await same('symlink', repo.dir, calls.slice(0, 1));

    // The repository moves away and a different one is made at its old path.
    renameSync(repo.dir, repo.sibling('moved'));
    await same('moved', repo.sibling('moved'), calls.slice(0, 1));
    const other = await analysisFixtureRepo('ts');
    renameSync(other.dir, repo.dir);
    await same('another repository at the old path', repo.dir, calls.slice(0, 1));
    expect((await runClient(['check-callers', 'makeWidget'], repo.dir)).stdout).toBe(first.stdout);
    renameSync(repo.dir, other.dir);

    // Stats are this call's, as a fresh process prints them (the server's memory is not used with them).
    const env = { POLYWAVE_ANALYSIS_STATS: '1' };
    const [resident, node] = await Promise.all([runClient(['check-callers', 'makeWidget'], repo.sibling('moved'), env), runCli(['check-callers', 'makeWidget'], { cwd: repo.sibling('moved'), env })]);
    expect(resident).toEqual({ code: node.code, stdout: node.stdout, stderr: node.stderr });
    expect(resident.stderr).toMatch(/^analysis: parsed 0, cached \d+\n$/);
    expect(served).toHaveLength(12);
  }, 120_000);
});

describe('the engine in a long-lived process', () => {
  it('repository roots are checked on every call; facts are remembered by blob id only; stats mode reads the disk cache', async () => {
    const repo = await analysisFixtureRepo('ts');
    const outer = await analysisCall({}, async () => {
      const context = await repoContext(repo.dir);
      expect(await repoContext(repo.dir)).toBe(context); // shared within the call
      await findReferences(repo.dir, 'makeWidget');
      expect(currentScope().counters.parsed + currentScope().counters.cached).toBeGreaterThan(0);
      return context;
    });
    const [again, counters] = await analysisCall({}, async () => [await repoContext(repo.dir), { ...currentScope().counters }] as const);
    expect(again).not.toBe(outer); // a new context (git's answer is remembered only while what it depends on is unchanged)
    expect(again).toMatchObject({ root: outer.root, commonDir: outer.commonDir });
    expect(counters).toEqual({ parsed: 0, cached: 0 });
    // A repository made in a directory whose repository was remembered: it is the answer at once.
    const sub = repo.path('src');
    expect((await analysisCall({}, () => repoContext(sub))).root).toBe(outer.root);
    await repo.run(['init', '-q', 'src']);
    expect((await analysisCall({}, () => repoContext(sub))).root).toBe(sub);
    rmSync(path.join(sub, '.git'), { recursive: true });
    expect((await analysisCall({}, () => repoContext(sub))).root).toBe(outer.root);

    // Searched twice in calls: the second answer comes from the word index and remembered facts; an edit is seen at once.
    const call = <T>(fn: () => Promise<T>) => analysisCall({}, fn);
    const before = await call(() => findReferences(repo.dir, 'makeWidget'));
    expect(memory.searched.has(outer.commonDir)).toBe(true);
    expect(await call(() => findReferences(repo.dir, 'makeWidget'))).toEqual(before);
    repo.write('src/model.ts', `${repo.read('src/model.ts')}\nexport const twice = makeWidget('b');\n`);
    const after = await call(() => findReferences(repo.dir, 'makeWidget'));
    expect(await findReferences(repo.dir, 'makeWidget')).toEqual(after); // outside a call: no memory, same answer
    expect(after.length).toBe(before.length + 1);
    expect(after.find((reference) => reference.context === "export const twice = makeWidget('b');")?.file).toBe('src/model.ts');

    // A repository moved: the old path is no repository any more, the new one answers the same.
    renameSync(repo.dir, repo.sibling('moved'));
    await expect(call(() => findReferences(repo.dir, 'makeWidget'))).rejects.toThrow();
    expect(await call(() => findReferences(repo.sibling('moved'), 'makeWidget'))).toEqual(after);

    // With POLYWAVE_ANALYSIS_STATS=1 the counts describe the disk cache, not this process's memory.
    rmSync(path.join(repo.sibling('moved'), '.git', 'polywave'), { recursive: true });
    const parsed = await analysisCall({ POLYWAVE_ANALYSIS_STATS: '1' }, async () => {
      await findReferences(repo.sibling('moved'), 'makeWidget');
      return currentScope().counters.parsed;
    });
    expect(parsed).toBeGreaterThan(0);
  });
});
