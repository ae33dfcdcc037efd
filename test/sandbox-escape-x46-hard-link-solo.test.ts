/**
 * ESCAPE REPRODUCTION (outside round X46, X46-05). A file of the main checkout with another HARD link outside it — here
 * a program in a bin directory on PATH, `ln $REPO/tools/git <bin>/git` (a dotfile linked into a dotfiles repository is
 * the same shape) — shares its content with that path. A solo wave's agent works in the main checkout and writes in
 * place: its `write_file` of `tools/git` changed `<bin>/git` at once, and polywave's own host git ran the agent's code
 * (10+ times in the wave, which ended WAVE_VERIFIED). X46-02's PATH check cannot see a hard link from the bin directory.
 *
 * Black box through `run-wave` with a script agent (a solo wave: one agent, two owned files), `PATH=<bin>:$PATH`: A writes
 * `tools/git` (a wrapper that appends to a marker file outside the sandbox's reach) with write_file and again in place
 * from python, then writes and commits its other file. Expected (fixed): such a file is read-only in its sandbox — both
 * writes fail, `<bin>/git` is unchanged, the marker never appears — and the wave still completes with its other file.
 */
import { chmodSync, existsSync, linkSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { sandboxStatus } from '../src/sandbox/index.js';
import { runCli } from './support/cli.js';
import { createTestRepo } from './support/git-repo.js';

const available = (await sandboxStatus()).available;

const impl = [
  'title: Hard link',
  'feature_slug: hardlink',
  'verdict: SUITABLE',
  'state: WAVE_PENDING',
  'test_command: "true"',
  'file_ownership:',
  '    - file: tools/git',
  '      agent: A',
  '      wave: 1',
  '      action: modify',
  '    - file: src/a.ts',
  '      agent: A',
  '      wave: 1',
  '      action: new',
  'waves:',
  '    - number: 1',
  '      agents:',
  '        - id: A',
  '          task: Implement src/a.ts and update tools/git.',
  '          files:',
  '            - tools/git',
  '            - src/a.ts',
  '',
].join('\n');

describe.skipIf(!available)('a checkout file hard-linked from a bin directory on PATH, written by a solo agent (X46-05)', () => {
  it("is read-only to the agent: polywave's own host git never runs the agent's code through <bin>/git", async () => {
    const realGit = ['/usr/bin/git', '/bin/git', '/usr/local/bin/git'].find((file) => existsSync(file)) ?? 'git';
    const original = `#!/bin/sh\nexec '${realGit}' "$@"\n`;
    const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-hardlink.yaml': impl, 'src/index.ts': 'export {};\n', 'tools/git': original } });
    chmodSync(repo.path('tools/git'), 0o755);
    await repo.commitAll('tools/git executable');
    const scratch = realpathSync(mkdtempSync(path.join(repo.root, 'x46-hardlink-')));
    const bin = path.join(scratch, 'bin');
    mkdirSync(bin);
    linkSync(repo.path('tools/git'), path.join(bin, 'git'));
    const marker = path.join(scratch, 'host-git-ran');
    const wrapper = `#!/bin/sh\necho "agent code ran on the host as git $*" >> '${marker}'\nexec '${realGit}' "$@"\n`;
    const inPlace = `python3 -c "open('tools/git', 'r+').write(open('src/a.ts').read())"`;
    const script = {
      version: 1,
      agents: {
        A: {
          steps: [
            { write: { path: 'tools/git', content: wrapper } },
            { write: { path: 'src/a.ts', content: wrapper } },
            { bash: inPlace },
            { write: { path: 'src/a.ts', content: 'export const a = 1;\n' } },
            { commit: 'feat(A): a' },
            { report: { status: 'complete', verification: 'PASS', notes: 'done' } },
          ],
        },
      },
    };
    const scriptPath = path.join(scratch, 'script.json');
    writeFileSync(scriptPath, JSON.stringify(script));
    const home = path.join(scratch, 'home');
    mkdirSync(home);
    const env: Record<string, string> = { ...(repo.env as Record<string, string>), HOME: home, PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}` };
    const run = await runCli(['run-wave', repo.path('docs/IMPL/IMPL-hardlink.yaml'), '--wave', '1', '--model', `script:${scriptPath}`, '--skip-critic', '--timeout', '60'], { cwd: repo.dir, env, timeoutMs: 240_000 });
    const detail = `${run.stdout.slice(-2000)}\n${run.stderr.slice(-3000)}`;
    expect(readFileSync(path.join(bin, 'git'), 'utf8'), detail).toBe(original);
    expect(existsSync(marker) ? readFileSync(marker, 'utf8') : '', "polywave ran the agent's tools/git on the host").toBe('');
    expect(run.code, detail).toBe(0);
    expect(await repo.run(['show', 'HEAD:src/a.ts'])).toBe('export const a = 1;\n');
    expect(await repo.run(['show', 'HEAD:tools/git'])).toBe(original);
  }, 300_000);
});
