/**
 * REGRESSION (issue 11, outside attack X14 #3/#5, helper S10): a solo agent (in the main checkout)
 * made `docs/IMPL` ITSELF a git directory (HEAD, config, objects/, refs/ — no `.git` anywhere, so the
 * nested-`.git` quarantine saw nothing): the user's own `git status` in docs/IMPL then ran its
 * fsmonitor outside any sandbox. It also left an unowned script and turned its owned file into a link
 * into `.git/hooks` — refused by the stop audit, but left in the checkout for the user to run or save.
 * Now all of it is moved to `.git/polywave/quarantine/<agent>-<time>-leftover/` when the agent stops
 * (the plan's own files in docs/IMPL stay), recorded as denials, and the wave stays refused; the
 * user's own untracked file is not touched.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, rmSync, statSync, utimesSync, symlinkSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createJail } from '../src/agents/jail/jail.js';
import { runGit } from '../src/git/run-git.js';
import { implicitGitDirs, quarantineSoloLeftovers, soloLeftoverBaseline } from '../src/git/solo-quarantine.js';
import { sandboxStatus } from '../src/sandbox/index.js';
import { runCliInProcess } from './support/cli-in-process.js';
import { createTestRepo } from './support/git-repo.js';
import { findFile, soloEscapeRepo } from './support/solo-escape.js';

const available = (await sandboxStatus()).available;

// (`pkg/`, not `docs/IMPL/` as first written: the directory of the IMPL doc is read-only to a solo agent that owns nothing
// in it since X43-19 — a planted git dir there is refused before it exists)
/** What the agent runs (with `sh`): `pkg/` becomes a git dir whose fsmonitor writes a marker; an unowned script; its own file a link into .git. */
const plant = (marker: string): string =>
  [
    'set -e',
    'T=$(mktemp -d) && git init -q "$T" && mkdir -p pkg && cp -r "$T/.git/HEAD" "$T/.git/objects" "$T/.git/refs" pkg/',
    `printf '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n\\tworktree = ..\\n\\tfsmonitor = "echo PWNED >> ${marker}"\\n' > pkg/config`,
    'mkdir -p tools && echo "echo PWNED" > tools/run.sh',
    'ln -sf ../.git/hooks/pre-commit src/a.ts',
    'echo planted',
    '',
  ].join('\n');

describe('leftovers of an agent in the main checkout (X14 #3/#5)', () => {
  it.skipIf(!available)('an implicit git dir, an unowned file and a link into .git are moved out; the wave is refused; the user\'s files stay', async () => {
    const { repo, home } = await soloEscapeRepo();
    const marker = path.join(home, 'fsmonitor-ran');
    // (a solo wave needs a clean checkout: the user's own file is an ignored one)
    writeFileSync(repo.path('.git/info/exclude'), 'mine.txt\n');
    writeFileSync(repo.path('mine.txt'), 'the user\'s own untracked file\n');
    const steps = [
      { write: { path: 'src/a.ts', content: plant(marker) } },
      { bash: 'sh src/a.ts' },
      { report: { status: 'complete', verification: 'PASS', notes: 'done' } },
    ];
    const scriptPath = path.join(realpathSync(mkdtempSync(path.join(os.tmpdir(), 'pw-s10-'))), 'script.json');
    writeFileSync(scriptPath, JSON.stringify({ version: 1, agents: { A: { steps } } }));
    const env: Record<string, string> = { ...(repo.env as Record<string, string>), HOME: home };
    const impl = repo.path('docs/IMPL/IMPL-solo.yaml');
    const wave = await runCliInProcess(['run-wave', impl, '--wave', '1', '--model', `script:${scriptPath}`, '--skip-critic', '--timeout', '120'], { cwd: repo.dir, env });
    expect(wave.code, wave.stdout + wave.stderr).toBe(1);
    expect(wave.stdout + wave.stderr).toContain('BLOCKED');

    // Out of the checkout: the git-dir entries, the script, the link; the plan stays, and so does the user's file.
    for (const gone of ['pkg/HEAD', 'pkg/objects', 'pkg/refs', 'pkg/config', 'tools/run.sh', 'src/a.ts']) expect(existsSync(repo.path(gone)) || isLink(repo.path(gone)), gone).toBe(false);
    expect(existsSync(impl)).toBe(true);
    expect(readFileSync(repo.path('mine.txt'), 'utf8')).toContain('own untracked');
    // nothing left but the manifest the orchestrator updates
    expect((await runGit(['status', '--porcelain'], { cwd: repo.dir, env: repo.env })).split('\n').filter((line) => line !== '' && !line.endsWith('docs/IMPL/IMPL-solo.yaml'))).toEqual([]);
    // git from pkg/ finds the real repository again, and runs nothing of the agent's
    mkdirSync(repo.path('pkg'), { recursive: true });
    expect(path.resolve(repo.path('pkg'), (await runGit(['rev-parse', '--git-dir'], { cwd: repo.path('pkg'), env: repo.env })).trim())).toBe(realpathSync(repo.path('.git')));
    await runGit(['status', '--porcelain'], { cwd: repo.path('pkg'), env: repo.env });
    expect(existsSync(marker)).toBe(false);

    // Kept in the quarantine, recorded as denials.
    const quarantine = repo.path('.git/polywave/quarantine');
    const batch = readdirSync(quarantine).find((name) => name.endsWith('-leftover'));
    expect(batch).toBeDefined();
    // (the planted git dir is a directory of its own: recorded as one leftover, its entries kept one by one)
    for (const kept of ['pkg/HEAD.quarantined', 'pkg/config.quarantined', 'tools/run.sh.quarantined']) expect(existsSync(path.join(quarantine, batch!, kept)), `${kept} in ${JSON.stringify(readdirSync(path.join(quarantine, batch!), { recursive: true }))}`).toBe(true);
    expect(isLink(path.join(quarantine, batch!, 'src/a.ts.quarantined'))).toBe(true);
    const denials = readFileSync(findFile(repo.path('.polywave-state'), 'denials.jsonl')!, 'utf8');
    const targets = denials.trim().split('\n').map((line) => JSON.parse(line) as { code: string; target?: string }).filter((record) => record.code === 'SANDBOX_SOLO_LEFTOVER_QUARANTINED').map((record) => record.target);
    expect(new Set(targets)).toEqual(new Set(['pkg', 'tools/run.sh', 'src/a.ts']));
  }, 240_000);

  it.skipIf(!available)('X44-15: a solo wave whose agent leaves empty directories and a sticky bit is refused, both undone; polywave\'s own directories made meanwhile are not its', async () => {
    const { repo, home } = await soloEscapeRepo();
    // (the journal's directories are not ignored here: they are judged by where they are, polywave's state)
    writeFileSync(repo.path('.gitignore'), '');
    await runGit(['commit', '-qam', 'no ignore'], { cwd: repo.dir, env: repo.env });
    const start = statSync(repo.path('docs')).mode & 0o7777;
    const steps = [
      { write: { path: 'src/a.ts', content: 'export const a: string = "a";\n' } },
      { bash: 'mkdir -p src/b.ts .husky empty_x44/sub && chmod +t docs && echo made' },
      { report: { status: 'complete', verification: 'PASS', notes: 'done' } },
    ];
    const scriptPath = path.join(realpathSync(mkdtempSync(path.join(os.tmpdir(), 'pw-s10-'))), 'script.json');
    writeFileSync(scriptPath, JSON.stringify({ version: 1, agents: { A: { steps } } }));
    const env: Record<string, string> = { ...(repo.env as Record<string, string>), HOME: home };
    const impl = repo.path('docs/IMPL/IMPL-solo.yaml');
    const wave = await runCliInProcess(['run-wave', impl, '--wave', '1', '--model', `script:${scriptPath}`, '--skip-critic', '--timeout', '120'], { cwd: repo.dir, env });
    expect(wave.code, wave.stdout + wave.stderr).toBe(1);
    expect(wave.stdout + wave.stderr).toContain('BLOCKED');
    expect(['src/b.ts', '.husky', 'empty_x44'].filter((entry) => existsSync(repo.path(entry)))).toEqual([]);
    expect(statSync(repo.path('docs')).mode & 0o7777).toBe(start);
    const denials = readFileSync(findFile(repo.path('.polywave-state'), 'denials.jsonl')!, 'utf8');
    const targets = denials.trim().split('\n').map((line) => JSON.parse(line) as { code: string; target?: string }).filter((record) => record.code === 'SANDBOX_SOLO_LEFTOVER_QUARANTINED').map((record) => record.target);
    expect(new Set(targets)).toEqual(new Set(['src/b.ts', '.husky', 'empty_x44', 'empty_x44/sub', 'docs']));
  }, 240_000);
});

describe('quarantineSoloLeftovers (real git, real jail, no sandbox needed)', () => {
  it('a new git dir is moved out even with nothing else refused; an owned tracked file made a link is written back; the user\'s untracked file stays', async () => {
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n', 'lib/keep.ts': 'x\n', 'notes/HEAD': 'tracked file named HEAD\n' } });
    writeFileSync(repo.path('mine.txt'), 'the user\'s\n');
    const before = await soloLeftoverBaseline(repo.dir, { env: repo.env });
    // the agent: an implicit git dir in a new directory (its files are owned: no I1 violation), one beside tracked files
    // whose HEAD is tracked already (only objects/ and refs/ are new), and its owned tracked file replaced by a link into .git
    for (const dir of ['gen/repo/objects', 'gen/repo/refs', 'notes/objects', 'notes/refs']) mkdirSync(repo.path(dir), { recursive: true });
    writeFileSync(repo.path('gen/repo/HEAD'), 'ref: refs/heads/main\n');
    writeFileSync(repo.path('gen/repo/config'), '[core]\n\tfsmonitor = echo PWNED\n');
    rmSync(repo.path('src/a.ts'));
    symlinkSync('../.git/hooks/pre-commit', repo.path('src/a.ts'));
    const jail = await createJail({ root: repo.dir, ownedFiles: ['src/a.ts', 'gen/repo/HEAD', 'gen/repo/config'] }, { env: repo.env });
    const left = await quarantineSoloLeftovers({ root: repo.dir, jail, before, agentId: 'A', env: repo.env, now: new Date('2026-12-03T00:00:00Z') });
    expect(left.map((entry) => `${entry.why}:${entry.path}:${entry.movedTo ? 'moved' : entry.error}${entry.restored ? ':restored' : ''}`).sort()).toEqual([
      'git-dir:gen/repo:moved',
      'git-dir:notes/objects:moved',
      'git-dir:notes/refs:moved',
      'link:src/a.ts:moved:restored',
    ]);
    expect(existsSync(repo.path('gen/repo'))).toBe(false);
    expect(readFileSync(repo.path('notes/HEAD'), 'utf8')).toContain('tracked');
    expect(isLink(repo.path('src/a.ts'))).toBe(false);
    expect(readFileSync(repo.path('src/a.ts'), 'utf8')).toBe('export const a = 1;\n');
    expect(readFileSync(repo.path('mine.txt'), 'utf8')).toBe('the user\'s\n');
    expect(readFileSync(repo.path('.git/polywave/quarantine/A-2026-12-03T00-00-00-000Z-leftover/gen/repo/config.quarantined'), 'utf8')).toContain('fsmonitor');
    // nothing new: nothing moved
    expect(await quarantineSoloLeftovers({ root: repo.dir, jail, before: await soloLeftoverBaseline(repo.dir, { env: repo.env }), agentId: 'A', env: repo.env })).toEqual([]);
  });
});

describe('quarantineSoloLeftovers: untracked files of yours the agent deleted (nothing lost)', () => {
  it('one it does not own is put back with its mode; one it owns stays deleted; one in a directory the agent moved out as a git dir comes back; one too large to keep is reported', async () => {
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n' } });
    writeFileSync(repo.path('mine.txt'), 'the user\'s\n', { mode: 0o600 });
    writeFileSync(repo.path('owned-draft.md'), 'the agent may delete this\n');
    mkdirSync(repo.path('work'));
    writeFileSync(repo.path('work/notes.md'), 'notes\n');
    writeFileSync(repo.path('big.bin'), Buffer.alloc(1024 * 1024 + 1));
    const before = await soloLeftoverBaseline(repo.dir, { env: repo.env });
    for (const file of ['mine.txt', 'owned-draft.md', 'big.bin']) rmSync(repo.path(file));
    // work/ emptied and made a git dir (HEAD + objects/ + refs/): moved out whole
    rmSync(repo.path('work/notes.md'));
    for (const dir of ['work/objects', 'work/refs']) mkdirSync(repo.path(dir), { recursive: true });
    writeFileSync(repo.path('work/HEAD'), 'ref: refs/heads/main\n');
    const jail = await createJail({ root: repo.dir, ownedFiles: ['src/a.ts', 'owned-draft.md'] }, { env: repo.env });
    const left = await quarantineSoloLeftovers({ root: repo.dir, jail, before, agentId: 'A', env: repo.env });
    expect(left.map((entry) => `${entry.why}:${entry.path}:${entry.movedTo ? 'moved' : entry.restored ? 'restored' : entry.error}`).sort()).toEqual([
      'git-dir:work:moved',
      'unowned-untracked:big.bin:an untracked file of yours the agent deleted; too large to have been kept, so it could not be put back',
      'unowned-untracked:mine.txt:restored',
      'unowned-untracked:work/notes.md:restored',
    ]);
    expect(readFileSync(repo.path('mine.txt'), 'utf8')).toBe('the user\'s\n');
    expect(statSync(repo.path('mine.txt')).mode & 0o777).toBe(0o600);
    expect(readFileSync(repo.path('work/notes.md'), 'utf8')).toBe('notes\n');
    expect(existsSync(repo.path('work/HEAD'))).toBe(false);
    expect(existsSync(repo.path('owned-draft.md'))).toBe(false);
  });

  it('X30-01: an untracked file of yours replaced by a directory: what the agent put in it is moved out (not taken for yours), your file is put back', async () => {
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n' } });
    writeFileSync(repo.path('TODO.md'), 'my list\n');
    const before = await soloLeftoverBaseline(repo.dir, { env: repo.env });
    rmSync(repo.path('TODO.md'));
    mkdirSync(repo.path('TODO.md'));
    writeFileSync(repo.path('TODO.md/evil.test.js'), "require('fs').writeFileSync('pwned','x')");
    const jail = await createJail({ root: repo.dir, ownedFiles: ['src/a.ts'] }, { env: repo.env });
    const left = await quarantineSoloLeftovers({ root: repo.dir, jail, before, agentId: 'A', env: repo.env });
    expect(left.map((entry) => `${entry.why}:${entry.path}:${entry.movedTo ? 'moved' : entry.restored ? 'restored' : entry.error}`).sort()).toEqual(['unowned-untracked:TODO.md:restored', 'unowned:TODO.md/evil.test.js:moved']);
    expect(readFileSync(repo.path('TODO.md'), 'utf8')).toBe('my list\n');
  });

  it('X30-04: a FIFO the agent left (git lists none) is moved out, even at a path it owns; one that was there before stays', async () => {
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n' } });
    spawnSync('mkfifo', [repo.path('mine.fifo')]);
    const before = await soloLeftoverBaseline(repo.dir, { env: repo.env });
    spawnSync('mkfifo', [repo.path('.npmrc'), repo.path('src/index.js')]);
    const jail = await createJail({ root: repo.dir, ownedFiles: ['src/a.ts', 'src/index.js'] }, { env: repo.env });
    const left = await quarantineSoloLeftovers({ root: repo.dir, jail, before, agentId: 'A', env: repo.env });
    expect(left.map((entry) => `${entry.why}:${entry.path}:${entry.movedTo ? 'moved' : entry.error}`).sort()).toEqual(['special:.npmrc:moved', 'special:src/index.js:moved']);
    expect(existsSync(repo.path('.npmrc'))).toBe(false);
    expect(existsSync(repo.path('src/index.js'))).toBe(false);
    expect(lstatSync(repo.path('mine.fifo')).isFIFO()).toBe(true);
  });

  it('X30-08: group/other write and setuid/setgid the agent added to the root, a directory or a file are taken back off; an x bit it set on its own file stays', async () => {
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n', 'scripts/build.sh': '#!/bin/sh\n', 'package.json': '{}\n' } });
    const modeOf = (entry: string) => statSync(repo.path(entry)).mode & 0o7777;
    const start = { root: modeOf('.'), scripts: modeOf('scripts'), build: modeOf('scripts/build.sh'), pkg: modeOf('package.json') };
    const before = await soloLeftoverBaseline(repo.dir, { env: repo.env });
    chmodSync(repo.dir, 0o777);
    chmodSync(repo.path('scripts'), 0o2777);
    chmodSync(repo.path('scripts/build.sh'), 0o6777);
    chmodSync(repo.path('package.json'), 0o666);
    chmodSync(repo.path('src/a.ts'), 0o755);
    const jail = await createJail({ root: repo.dir, ownedFiles: ['src/a.ts'] }, { env: repo.env });
    const left = await quarantineSoloLeftovers({ root: repo.dir, jail, before, agentId: 'A', env: repo.env });
    expect(left.filter((entry) => entry.why === 'mode').map((entry) => `${entry.path}:${entry.restored ? 'restored' : entry.error}`).sort()).toEqual(['.:restored', 'package.json:restored', 'scripts/build.sh:restored', 'scripts:restored']);
    expect({ root: modeOf('.'), scripts: modeOf('scripts'), build: modeOf('scripts/build.sh') & ~0o111, pkg: modeOf('package.json') }).toEqual({ ...start, build: start.build & ~0o111 });
    expect(modeOf('src/a.ts')).toBe(0o755);
  });

  it('X44-15: empty directories the agent made are removed and the sticky bit it added is taken back off', async () => {
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n', 'docs/readme.md': '# r\n' } });
    const start = statSync(repo.path('docs')).mode & 0o7777;
    const before = await soloLeftoverBaseline(repo.dir, { env: repo.env });
    mkdirSync(repo.path('src/b.ts'));
    mkdirSync(repo.path('.husky'));
    mkdirSync(repo.path('empty_x44/sub'), { recursive: true });
    chmodSync(repo.path('docs'), start | 0o1000);
    const jail = await createJail({ root: repo.dir, ownedFiles: ['src/a.ts'] }, { env: repo.env });
    const left = await quarantineSoloLeftovers({ root: repo.dir, jail, before, agentId: 'A', env: repo.env });
    expect(left.filter((entry) => entry.why === 'empty-dir').map((entry) => `${entry.path}:${entry.restored ? 'removed' : entry.error}`).sort()).toEqual(['.husky:removed', 'empty_x44/sub:removed', 'empty_x44:removed', 'src/b.ts:removed']);
    expect(['src/b.ts', '.husky', 'empty_x44'].filter((entry) => existsSync(repo.path(entry)))).toEqual([]);
    expect(statSync(repo.path('docs')).mode & 0o7777).toBe(start);
    expect(left.some((entry) => entry.path === 'docs' && entry.why === 'mode' && entry.restored)).toBe(true);
  });

  it('X44-15: an empty directory polywave made (its state, its journal), one where the agent\'s sandbox is read-only, or one git ignores (a tool\'s output) is not the agent\'s', async () => {
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n', '.gitignore': 'dist/\nnode_modules/\n', 'docs/IMPL/IMPL-x.yaml': 'title: x\n' } });
    const before = await soloLeftoverBaseline(repo.dir, { env: repo.env });
    mkdirSync(repo.path('.polywave-state/shapes/wave0/agent-scaffold/tool-results'), { recursive: true });
    mkdirSync(repo.path('docs/IMPL/sub'), { recursive: true });
    mkdirSync(repo.path('dist/assets'), { recursive: true });
    mkdirSync(repo.path('node_modules/.vite-temp'), { recursive: true });
    mkdirSync(repo.path('src/b.ts'));
    const jail = await createJail({ root: repo.dir, ownedFiles: ['src/a.ts'] }, { env: repo.env });
    const left = await quarantineSoloLeftovers({ root: repo.dir, jail, before, agentId: 'A', env: repo.env, notTheAgents: ['.polywave-state', 'docs/IMPL'] });
    expect(left.filter((entry) => entry.why === 'empty-dir').map((entry) => entry.path)).toEqual(['src/b.ts']);
    for (const kept of ['.polywave-state/shapes/wave0/agent-scaffold/tool-results', 'docs/IMPL/sub', 'dist/assets', 'node_modules/.vite-temp']) expect(existsSync(repo.path(kept)), kept).toBe(true);
  });

  it('never writes one back through a directory the agent turned into a link that stays (its own, into the checkout)', async () => {
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n' } });
    mkdirSync(repo.path('work'));
    writeFileSync(repo.path('work/notes.md'), 'notes\n');
    const before = await soloLeftoverBaseline(repo.dir, { env: repo.env });
    rmSync(repo.path('work'), { recursive: true });
    symlinkSync('src', repo.path('work'));
    // the link is the agent's own path (owned) and leads inside the checkout: not moved out; the restore must refuse it
    const jail = await createJail({ root: repo.dir, ownedFiles: ['src/a.ts', 'work'] }, { env: repo.env });
    const left = await quarantineSoloLeftovers({ root: repo.dir, jail, before, agentId: 'A', env: repo.env });
    const notes = left.find((entry) => entry.path === 'work/notes.md');
    expect(notes?.restored).toBeUndefined();
    expect(notes?.error).toMatch(/"work" is no longer a directory \(a symbolic link\)/);
    expect(readdirSync(repo.path('src'))).toEqual(['a.ts']);
  });
});

describe('the stop audit reads what git\'s stat data would hide (outside attack X30-12)', () => {
  it('with core.trustctime=false in the repository, a tracked file rewritten in place (same size, old mtime put back) is still an unowned change', async () => {
    const repo = await createTestRepo({ files: { 'package.json': '{"scripts":{"test":"vitest run"}}\n', 'src/a.ts': 'export const a = 1;\n' } });
    await runGit(['config', 'core.trustctime', 'false'], { cwd: repo.dir, env: repo.env });
    await runGit(['config', 'core.checkStat', 'minimal'], { cwd: repo.dir, env: repo.env });
    const file = repo.path('package.json');
    const before = statSync(file);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    spawnSync('git', ['update-index', '--refresh'], { cwd: repo.dir, env: repo.env as NodeJS.ProcessEnv }); // as the user's own git status does
    writeFileSync(file, '{"scripts":{"test":"node x.js;"}}\n');
    expect(statSync(file).size).toBe(before.size);
    utimesSync(file, before.atime, before.mtime);
    // (runGit pins the full stat check: the user's own git is asked here)
    expect(spawnSync('git', ['status', '--porcelain'], { cwd: repo.dir, env: repo.env as NodeJS.ProcessEnv, encoding: 'utf8' }).stdout.trim(), 'your own git, with the repository\'s settings, sees nothing').toBe('');
    const jail = await createJail({ root: repo.dir, ownedFiles: ['src/a.ts'] }, { env: repo.env });
    const audit = await jail.audit();
    expect(audit.violations.map((violation) => `${violation.code}:${violation.path}`)).toContain('JAIL_UNOWNED_CHANGE:package.json');
  });
});

describe('implicitGitDirs follows git\'s own rule (outside attack X16 #16)', () => {
  it('objects/refs as EXECUTABLE files make a git dir (git takes it), as plain files not; checked against real git', async () => {
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n' } });
    for (const dir of ['exe', 'plain']) {
      mkdirSync(repo.path(`${dir}/sub`), { recursive: true });
      writeFileSync(repo.path(`${dir}/HEAD`), 'ref: refs/heads/main\n');
      writeFileSync(repo.path(`${dir}/objects`), 'x', { mode: dir === 'exe' ? 0o755 : 0o644 });
      writeFileSync(repo.path(`${dir}/refs`), 'x', { mode: dir === 'exe' ? 0o755 : 0o644 });
    }
    const gitDirOf = async (dir: string): Promise<string> => path.resolve(repo.path(dir), (await runGit(['rev-parse', '--git-dir'], { cwd: repo.path(dir), env: repo.env })).trim());
    // what git does: exe/ is a repository of its own; plain/ is not (discovery goes on to the real one)
    expect(await gitDirOf('exe/sub')).toBe(repo.path('exe'));
    expect(await gitDirOf('plain/sub')).toBe(realpathSync(repo.path('.git')));
    expect([...implicitGitDirs(repo.dir)].sort()).toEqual(['exe']);
  });
});

function isLink(file: string): boolean {
  try {
    return lstatSync(file).isSymbolicLink();
  } catch {
    return false;
  }
}

describe('another IMPL\'s uncommitted state record during a solo wave (outside attack X35-08)', () => {
  it.skipIf(!available)('a solo agent is not blamed for another IMPL doc\'s uncommitted changes (its BLOCKED state record), and cannot change that doc', async () => {
    const { repo, home } = await soloEscapeRepo();
    // another plan, committed, then its state recorded by a run that ended BLOCKED (left uncommitted, as run-wave leaves it)
    const other = repo.path('docs/IMPL/IMPL-other.yaml');
    writeFileSync(other, readFileSync(repo.path('docs/IMPL/IMPL-solo.yaml'), 'utf8').replace('feature_slug: solo', 'feature_slug: other'));
    await repo.commitAll('another plan');
    const blockedRecord = readFileSync(other, 'utf8').replace('state: WAVE_PENDING', 'state: BLOCKED');
    writeFileSync(other, blockedRecord);
    const steps = [
      { write: { path: 'src/a.ts', content: "export const a = 'a';\n" } },
      // computed path: the static check does not see which file it is
      { bash: `node -e "require('fs').appendFileSync(Buffer.from('${Buffer.from('docs/IMPL/IMPL-other.yaml').toString('hex')}','hex').toString(), '# agent\\n')" || echo refused` },
      { commit: 'feat(A): letter a' },
      { report: { status: 'complete', verification: 'PASS', notes: 'done' } },
    ];
    const scriptPath = path.join(realpathSync(mkdtempSync(path.join(os.tmpdir(), 'pw-x35-08-'))), 'script.json');
    writeFileSync(scriptPath, JSON.stringify({ version: 1, agents: { A: { steps } } }));
    const env: Record<string, string> = { ...(repo.env as Record<string, string>), HOME: home };
    const wave = await runCliInProcess(['run-wave', repo.path('docs/IMPL/IMPL-solo.yaml'), '--wave', '1', '--model', `script:${scriptPath}`, '--skip-critic', '--timeout', '120'], { cwd: repo.dir, env });
    // Before the fix: BLOCKED, "I1 violation: docs/IMPL/IMPL-other.yaml changed in the worktree".
    expect(wave.code, wave.stdout + wave.stderr).toBe(0);
    expect(wave.stdout + wave.stderr).not.toMatch(/I1 violation|TAMPER_DETECTED/);
    // the agent's write to it was refused by the sandbox (the doc is read-only to it)
    expect(wave.stdout + wave.stderr).toMatch(/EROFS: read-only file system, open 'docs\/IMPL\/IMPL-other\.yaml'/);
    expect(readFileSync(other, 'utf8')).toBe(blockedRecord);
    expect(readFileSync(repo.path('src/a.ts'), 'utf8')).toBe("export const a = 'a';\n");
  }, 180_000);
});
