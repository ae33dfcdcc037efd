/**
 * Outside round X42-11/12 (issue 11): X41-02 kept every ABSOLUTE PATH entry, and one inside the main checkout — what
 * direnv's `PATH_add bin` or `layout node` (`<checkout>/node_modules/.bin`) give — is a directory an agent that works in
 * the checkout (a solo wave's agent) can write. The agent planted `bin/{git,bash,bwrap}`: polywave's own `git status`
 * and the sandbox wrapper's `bash`/`bwrap` ran them on the host (the wrapper's `bwrap` got the whole sandbox command
 * line: the agent's code replaced the sandbox of every later call). Now no host program is looked up inside the
 * repositories polywave works on. Real parts: run-wave through the CLI, a solo wave of a script agent in bubblewrap,
 * stand-ins that append to a file outside the repository (read-only to the sandbox: only a host process can write it).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resetSandbox, sandboxStatus } from '../src/sandbox/index.js';
import { runCli } from './support/cli.js';
import { createTestRepo } from './support/git-repo.js';

const available = (await sandboxStatus()).available;

afterAll(async () => {
  await resetSandbox();
});

const impl = [
  'title: Solo wave', 'feature_slug: solo', 'verdict: SUITABLE', 'state: WAVE_PENDING', 'test_command: "true"',
  'file_ownership:', '    - file: src/a.ts', '      agent: A', '      wave: 1', '      action: new', '    - file: src/a2.ts', '      agent: A', '      wave: 1', '      action: new',
  'interface_contracts:', '    - name: Letter', '      description: A letter constant.', '      definition: "export const a: string"', '      location: src/a.ts',
  'waves:', '    - number: 1', '      agents:', '        - id: A', '          task: Implement src/a.ts.', '          files:', '            - src/a.ts', '            - src/a2.ts', '',
].join('\n');

/** A python script (an owned file) that plants logging stand-ins of git, bash, bwrap and sh in `<cwd>/<dir>`. */
const planter = (dir: string, marker: string) =>
  [
    'import os',
    `d = ${JSON.stringify(dir)}`,
    'os.makedirs(d, exist_ok=True)',
    "for n in ('git', 'bash', 'bwrap', 'sh'):",
    '    p = os.path.join(d, n)',
    `    open(p, 'w').write('#!/bin/sh\\necho "%s ran in $PWD" >> ${marker}\\nexec /usr/bin/%s "$@"\\n' % (n, n))`,
    '    os.chmod(p, 0o755)',
    '',
  ].join('\n');

/** A case: where the agent plants (relative to the checkout), the PATH entry it reaches, and how run-wave is started. */
interface PlantCase {
  name: string;
  dir: string;
  entry: (repo: string, outside: string) => string;
  /** Where the IMPL is given from (X43-03: outside the repository, with --repo-dir). */
  implOutside?: boolean;
}

const cases: PlantCase[] = [
  { name: 'X42-11: <checkout>/bin', dir: 'bin', entry: (repo) => path.join(repo, 'bin') },
  { name: 'X42-12: <checkout>/node_modules/.bin (absent at the start)', dir: 'node_modules/.bin', entry: (repo) => path.join(repo, 'node_modules/.bin') },
  // X43-01: `~/linkbin -> <checkout>/bin`, dangling at the start, was judged by the link's own name (outside)
  {
    name: 'X43-01: a symlink outside the checkout to <checkout>/bin, dangling at the start',
    dir: 'bin',
    entry: (repo, outside) => {
      symlinkSync(path.join(repo, 'bin'), path.join(outside, 'linkbin'));
      return path.join(outside, 'linkbin');
    },
  },
  // X43-03: `cd ~/plans && polywave run-wave IMPL.yaml --repo-dir ~/proj` — no directory polywave distrusted was the repository
  { name: 'X43-03: run-wave --repo-dir <checkout> from outside it, the IMPL outside', dir: 'bin', entry: (repo) => path.join(repo, 'bin'), implOutside: true },
];

describe('no host program comes from a PATH entry inside the checkout (X42-11/12, X43-01/03)', () => {
  for (const plant of cases) {
    it.skipIf(!available)(plant.name, async () => {
      const dir = plant.dir;
      const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-solo.yaml': impl, 'src/index.ts': 'export {};\n', '.gitignore': '.polywave-state/\n' } });
      const outside = repo.sibling('outside');
      mkdirSync(outside);
      const marker = path.join(outside, 'HOST-RAN');
      const script = {
        version: 1,
        agents: {
          A: {
            steps: [
              { write: { path: 'src/a.ts', content: "export const a = 'a';\n" } },
              { write: { path: 'src/a2.ts', content: planter(dir, marker) } },
              { bash: 'python3 src/a2.ts; ls -la ' + dir },
              // The next call's wrapper (bash, bwrap) and polywave's own git audit after it.
              { bash: 'echo after-plant' },
              { write: { path: 'src/a2.ts', content: "export const a2 = 'a2';\n" } },
              { commit: 'feat(A): a' },
              { report: { status: 'complete', verification: 'PASS', notes: 'done' } },
            ],
          },
        },
      };
      const scriptPath = path.join(realpathSync(mkdtempSync(path.join(os.tmpdir(), 'x42-path-'))), 'agents.json');
      writeFileSync(scriptPath, JSON.stringify(script));
      const env = { ...(repo.env as Record<string, string>), PATH: `${plant.entry(repo.dir, outside)}:${process.env.PATH ?? '/usr/bin:/bin'}` };
      let implArg = repo.path('docs/IMPL/IMPL-solo.yaml');
      let cwd = repo.dir;
      const extra: string[] = [];
      if (plant.implOutside) {
        const plans = path.join(outside, 'plans');
        mkdirSync(plans);
        implArg = path.join(plans, 'IMPL-solo.yaml');
        writeFileSync(implArg, impl);
        cwd = outside;
        extra.push('--repo-dir', repo.dir);
      }
      const run = await runCli(['run-wave', implArg, '--wave', '1', '--model', `script:${scriptPath}`, '--skip-critic', '--timeout', '300', ...extra], { cwd, env, timeoutMs: 300_000 });
      // The agent did plant them (its own bash saw them), and none ran on the host.
      expect(existsSync(path.join(repo.dir, dir, 'git')) || run.stdout.includes('bwrap') || run.code !== 0, run.stderr.slice(-1500)).toBe(true);
      // Before the fix: "git ran in <checkout>" (polywave's own status) and "bash ran …", "bwrap ran …" (the wrapper).
      expect(existsSync(marker) ? readFileSync(marker, 'utf8') : '(nothing ran)').toBe('(nothing ran)');
    }, 320_000);
  }
});

// X43-10/11/14/21: run-scaffold, serve --repo, the resident server's --repo-dir and run-wave before its own distrust all
// ran git in a repository no directory polywave distrusted was — with `<repo>/bin/git` already there (a merged file, a
// killed run's leftover). Every git instance now distrusts its repository before its first command; X43-02: a PATH entry
// reaching the checkout through a bind mount (realpath does not see mounts) is judged by device and inode.
describe('every git polywave starts distrusts its repository first (X43-02/10/11/14/21)', () => {
  const gitPlanted = async () => {
    const repo = await createTestRepo({ files: { 'src/index.ts': 'export {};\n' } });
    const outside = repo.sibling('outside');
    mkdirSync(outside);
    const marker = path.join(outside, 'HOST-RAN');
    mkdirSync(path.join(repo.dir, 'bin'));
    writeFileSync(path.join(repo.dir, 'bin', 'git'), `#!/bin/sh\necho "git ran in $PWD" >> ${marker}\nexec /usr/bin/git "$@"\n`, { mode: 0o755 });
    // (a program of node's: createGit from dist, started outside the repository, runs `git status` in it)
    const probe = path.join(outside, 'probe.mjs');
    writeFileSync(probe, `const { createGit } = await import(${JSON.stringify(path.resolve('dist/git/git-cli.js'))});\nawait createGit(process.argv[2]).run(['status', '--porcelain']);\nconsole.log('status ran');\n`);
    return { repo, outside, marker, probe };
  };

  it('a PATH entry inside the repository, the caller outside it', async () => {
    const { repo, outside, marker, probe } = await gitPlanted();
    const result = spawnSync(process.execPath, [probe, repo.dir], { cwd: outside, env: { ...process.env, PATH: `${path.join(repo.dir, 'bin')}:${process.env.PATH ?? '/usr/bin:/bin'}` }, encoding: 'utf8' });
    expect(result.stdout + result.stderr).toContain('status ran');
    // Before the fix: "git ran in <repo>" — the planted git, on the host.
    expect(existsSync(marker) ? readFileSync(marker, 'utf8') : '(nothing ran)').toBe('(nothing ran)');
  });

  // X44-02: `/proc/self/cwd/bin` is the CLI's cwd (outside) to polywave, and `<repo>/bin` to a git child started in the
  // repository; X44-16: `<link>/../<repo>/bin` with `link -> <a directory beside the repo>/deep` is `<repo>/bin` to the
  // kernel (the symlink is followed before the `..`), while `path.resolve` made it `<link's dir>/<repo>/bin`.
  it('a PATH entry through /proc/self/cwd, the caller outside it (X44-02)', async () => {
    const { repo, outside, marker, probe } = await gitPlanted();
    const result = spawnSync(process.execPath, [probe, repo.dir], { cwd: outside, env: { ...process.env, PATH: `/proc/self/cwd/bin:${process.env.PATH ?? '/usr/bin:/bin'}` }, encoding: 'utf8' });
    expect(result.stdout + result.stderr).toContain('status ran');
    expect(existsSync(marker) ? readFileSync(marker, 'utf8') : '(nothing ran)').toBe('(nothing ran)');
  });

  it('a PATH entry with `..` after a symlink (X44-16)', async () => {
    const { repo, outside, marker, probe } = await gitPlanted();
    const deep = path.join(path.dirname(repo.dir), 'deep');
    mkdirSync(deep, { recursive: true });
    const links = path.join(outside, 'links');
    mkdirSync(links);
    symlinkSync(deep, path.join(links, 'lnk'));
    const entry = `${path.join(links, 'lnk')}/../${path.basename(repo.dir)}/bin`;
    const result = spawnSync(process.execPath, [probe, repo.dir], { cwd: repo.dir, env: { ...process.env, PATH: `${entry}:${process.env.PATH ?? '/usr/bin:/bin'}` }, encoding: 'utf8' });
    expect(result.stdout + result.stderr).toContain('status ran');
    expect(existsSync(marker) ? readFileSync(marker, 'utf8') : '(nothing ran)').toBe('(nothing ran)');
  });

  const canBind = spawnSync('unshare', ['-m', 'true']).status === 0;
  it.skipIf(!canBind)('a PATH entry reaching the repository through a bind mount (X43-02)', async () => {
    const { repo, outside, marker, probe } = await gitPlanted();
    const mount = path.join(outside, 'mnt');
    mkdirSync(mount);
    // (a mount namespace of its own: the bind is seen by this process only)
    const result = spawnSync('unshare', ['-m', 'sh', '-c', 'mount --bind "$1" "$2" && exec "$3" "$4" "$1"', 'sh', repo.dir, mount, process.execPath, probe], { cwd: outside, env: { ...process.env, PATH: `${path.join(mount, 'bin')}:${process.env.PATH ?? '/usr/bin:/bin'}` }, encoding: 'utf8' });
    expect(result.stdout + result.stderr).toContain('status ran');
    expect(existsSync(marker) ? readFileSync(marker, 'utf8') : '(nothing ran)').toBe('(nothing ran)');
  });
});

const twoAgents = [
  'title: Two agents', 'feature_slug: two', 'verdict: SUITABLE', 'state: WAVE_PENDING', 'test_command: "hello-tool && nm-tool"',
  'file_ownership:',
  '    - file: src/a.ts', '      agent: A', '      wave: 1', '      action: new',
  '    - file: src/tools.txt', '      agent: A', '      wave: 1', '      action: new',
  '    - file: src/b.ts', '      agent: B', '      wave: 1', '      action: new',
  'interface_contracts:', '    - name: Letter', '      description: A letter constant.', '      definition: "export const a: string"', '      location: src/a.ts',
  'waves:', '    - number: 1', '      agents:',
  '        - id: A', '          task: Implement src/a.ts.', '          files:', '            - src/a.ts', '            - src/tools.txt',
  '        - id: B', '          task: Implement src/b.ts.', '          files:', '            - src/b.ts', '',
].join('\n');

/** A project tool: says its name; on the host it would also write `marker` (read-only inside every sandbox). */
const tool = (name: string, marker: string) => `#!/bin/sh\necho ${name}-ran\n{ echo "${name} ran on the host in $PWD" >> ${marker}; } 2>/dev/null || true\n`;

describe('inside the sandbox, the checkout\'s PATH entries are searched again (X42-11/12 follow-up)', () => {
  it.skipIf(!available)("an agent in a worktree and the gates find <checkout>/bin (as the worktree's bin) and <checkout>/node_modules/.bin; the host never runs them", async () => {
    const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-two.yaml': twoAgents, 'src/index.ts': 'export {};\n', '.gitignore': '.polywave-state/\nnode_modules/\n' } });
    const outside = repo.sibling('outside');
    mkdirSync(outside);
    const marker = path.join(outside, 'HOST-RAN');
    mkdirSync(repo.path('bin'));
    writeFileSync(repo.path('bin/hello-tool'), tool('hello-tool', marker), { mode: 0o755 });
    await repo.run(['add', 'bin/hello-tool']);
    await repo.run(['commit', '-qm', 'project tool']);
    mkdirSync(repo.path('node_modules/.bin'), { recursive: true });
    writeFileSync(repo.path('node_modules/.bin/nm-tool'), tool('nm-tool', marker), { mode: 0o755 });
    const script = {
      version: 1,
      agents: {
        A: {
          steps: [
            { write: { path: 'src/a.ts', content: "export const a = 'a';\n" } },
            { bash: '(hello-tool; nm-tool) > src/tools.txt 2>&1; cat src/tools.txt' },
            { commit: 'feat(A): a' },
            { report: { status: 'complete', verification: 'PASS', notes: 'done' } },
          ],
        },
        B: { steps: [{ write: { path: 'src/b.ts', content: "export const b = 'b';\n" } }, { commit: 'feat(B): b' }, { report: { status: 'complete', verification: 'PASS', notes: 'done' } }] },
      },
    };
    const scriptPath = path.join(realpathSync(mkdtempSync(path.join(os.tmpdir(), 'x42-path-'))), 'agents.json');
    writeFileSync(scriptPath, JSON.stringify(script));
    const env = { ...(repo.env as Record<string, string>), PATH: `${repo.path('bin')}:${repo.path('node_modules/.bin')}:${process.env.PATH ?? '/usr/bin:/bin'}` };
    const run = await runCli(['run-wave', repo.path('docs/IMPL/IMPL-two.yaml'), '--wave', '1', '--model', `script:${scriptPath}`, '--skip-critic', '--timeout', '300'], { cwd: repo.dir, env, timeoutMs: 300_000 });
    // The agent's command found both (before: "hello-tool: command not found", "nm-tool: command not found").
    expect(existsSync(repo.path('src/tools.txt')) ? readFileSync(repo.path('src/tools.txt'), 'utf8') : `(not merged) ${run.stdout.slice(-1500)} ${run.stderr.slice(-1500)}`).toBe('hello-tool-ran\nnm-tool-ran\n');
    // The verify-build gate (test_command) found them too, and the wave verified.
    expect(run.code, `${run.stdout.slice(-2000)}\n${run.stderr.slice(-1500)}`).toBe(0);
    expect(existsSync(marker) ? readFileSync(marker, 'utf8') : '(nothing ran)').toBe('(nothing ran)');
  }, 320_000);
});
