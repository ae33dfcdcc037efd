/**
 * ESCAPE REPRODUCTION (outside round X46, X46-02). polywave drops a PATH entry that leads into a repository it works on
 * (X42-11/12, X43-01/02, X45-01/02) — but it judged the entry by its DIRECTORIES only. A bin directory outside every
 * repository whose `git` is a symbolic link INTO the checkout (a repository's git wrapper linked into `~/bin`:
 * `ln -s $REPO/tools/git ~/bin/git`; dangling until the file exists) was kept: once agent A's `tools/git` was merged,
 * polywave's own host git — merge, cleanup, state commit — ran the agent's code, outside any sandbox (20+ times in one
 * wave, which still ended WAVE_VERIFIED).
 *
 * Black box through `run-wave` with script agents and `PATH=<bin>:$PATH`, `<bin>/git -> <repo>/tools/git` (absent at the
 * start): A owns `tools/git`, a wrapper that appends a line to a marker file outside the sandbox's reach and then runs
 * the real git. Expected (fixed): the wave completes, and the marker file never appears. Plus the rule itself, on
 * {@link absolutePathEntries}: such an entry is dropped whole (link dangling or not, absolute or relative, through a
 * link on the way), an entry with links elsewhere is kept.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { sandboxStatus } from '../src/sandbox/index.js';
import { absolutePathEntries, distrustSearchRoot } from '../src/sandbox/search-path.js';
import { runCli } from './support/cli.js';
import { createTestRepo } from './support/git-repo.js';
import { oneWaveImplYaml } from './support/one-wave-impl.js';

const available = (await sandboxStatus()).available;

describe('a PATH entry whose program file links into the checkout (X46-02)', () => {
  it('is dropped whole: a link into the repository (dangling or not, relative, through another link), not a link elsewhere', () => {
    const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'pw-x46-pathlink-')));
    const repo = path.join(root, 'repo');
    mkdirSync(path.join(repo, '.git'), { recursive: true });
    mkdirSync(path.join(repo, 'tools'));
    writeFileSync(path.join(repo, 'tools', 'present'), '#!/bin/sh\n');
    distrustSearchRoot(repo);
    const bins = ['dangling', 'present', 'relative', 'via', 'elsewhere', 'plain'].map((name) => path.join(root, `bin-${name}`));
    for (const bin of bins) mkdirSync(bin);
    const [dangling, present, relative, via, elsewhere, plain] = bins as [string, string, string, string, string, string];
    symlinkSync(path.join(repo, 'tools', 'git'), path.join(dangling, 'git'));
    symlinkSync(path.join(repo, 'tools', 'present'), path.join(present, 'bash'));
    symlinkSync(path.join('..', 'repo', 'tools', 'bwrap'), path.join(relative, 'bwrap'));
    // a link to a directory outside, which itself links into the repository's tools
    symlinkSync(path.join(repo, 'tools'), path.join(root, 'tools-link'));
    symlinkSync(path.join(root, 'tools-link', 'git'), path.join(via, 'git'));
    writeFileSync(path.join(root, 'real-tool'), '#!/bin/sh\n');
    symlinkSync(path.join(root, 'real-tool'), path.join(elsewhere, 'tool'));
    writeFileSync(path.join(plain, 'tool'), '#!/bin/sh\n');
    expect(absolutePathEntries([...bins, '/usr/bin'].join(':'))).toBe([elsewhere, plain, '/usr/bin'].join(':'));
  });

  const canUnshare = spawnSync('unshare', ['-m', '--propagation', 'private', 'true']).status === 0;
  const built = path.resolve(import.meta.dirname, '../dist/sandbox/search-path.js');
  it.skipIf(!canUnshare || !existsSync(built))('is dropped whole: a program FILE bind-mounted from the repository (`mount --bind <repo>/tools/git <bin>/git`)', () => {
    const scratch = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'pw-x46-pathmount-')));
    const repo = path.join(scratch, 'repo');
    mkdirSync(path.join(repo, '.git'), { recursive: true });
    mkdirSync(path.join(repo, 'tools'));
    writeFileSync(path.join(repo, 'tools', 'git'), '#!/bin/sh\n');
    for (const bin of ['bin', 'other']) mkdirSync(path.join(scratch, bin));
    writeFileSync(path.join(scratch, 'bin', 'git'), '#!/bin/sh\n');
    const probe = `import(${JSON.stringify(built)}).then((m) => { m.distrustSearchRoot(${JSON.stringify(repo)}); console.log(m.absolutePathEntries(${JSON.stringify(`${scratch}/bin:${scratch}/other`)})); })`;
    const run = spawnSync('unshare', ['-m', '--propagation', 'private', 'sh', '-c', 'mount --bind "$1/repo/tools/git" "$1/bin/git" && exec "$2" -e "$3"', 'sh', scratch, process.execPath, probe], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(run.stdout.trim()).toBe(`${scratch}/other`);
  });

  it.skipIf(!available)("polywave's own host git never runs an agent's tools/git through <bin>/git -> <repo>/tools/git", async () => {
    const impl = oneWaveImplYaml({ title: 'Link', slug: 'link', owned: { A: ['tools/git'], B: ['src/b.ts'] } });
    const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-link.yaml': impl, 'src/index.ts': 'export {};\n' } });
    const scratch = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'pw-x46-pathlink-run-')));
    const bin = path.join(scratch, 'bin');
    mkdirSync(bin);
    symlinkSync(repo.path('tools/git'), path.join(bin, 'git'));
    const marker = path.join(scratch, 'host-git-ran');
    const realGit = ['/usr/bin/git', '/bin/git', '/usr/local/bin/git'].find((file) => existsSync(file)) ?? 'git';
    const wrapper = `#!/bin/sh\necho "agent code ran on the host as git $*" >> '${marker}'\nexec '${realGit}' "$@"\n`;
    const finish = [{ commit: 'feat: work' }, { report: { status: 'complete', verification: 'PASS', notes: 'done' } }];
    const script = {
      version: 1,
      agents: {
        A: { steps: [{ write: { path: 'tools/git', content: wrapper } }, { bash: 'chmod +x tools/git' }, ...finish] },
        B: { steps: [{ write: { path: 'src/b.ts', content: 'export const b = 1;\n' } }, ...finish] },
      },
    };
    const scriptPath = path.join(scratch, 'script.json');
    writeFileSync(scriptPath, JSON.stringify(script));
    const home = path.join(scratch, 'home');
    mkdirSync(home);
    const env: Record<string, string> = { ...(repo.env as Record<string, string>), HOME: home, PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}` };
    const run = await runCli(['run-wave', repo.path('docs/IMPL/IMPL-link.yaml'), '--wave', '1', '--model', `script:${scriptPath}`, '--skip-critic', '--timeout', '60'], { cwd: repo.dir, env, timeoutMs: 240_000 });
    const detail = `${run.stdout.slice(-2000)}\n${run.stderr.slice(-3000)}`;
    expect(run.code, detail).toBe(0);
    // the agent's wrapper was merged (with its mode): the link leads to it now
    expect(await repo.run(['show', 'HEAD:tools/git'])).toContain('agent code ran on the host');
    expect(existsSync(marker) ? readFileSync(marker, 'utf8') : '', 'polywave ran the agent\'s tools/git on the host').toBe('');
  }, 300_000);
});
