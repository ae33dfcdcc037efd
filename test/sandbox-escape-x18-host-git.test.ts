/**
 * ESCAPE REPRODUCTION (outside attack X18-08/09/16, 2026-12-03): git run OUTSIDE the sandbox with an agent's
 * environment (git_commit's `git add`/`git commit`, the bash tool's audit) read the agent's private HOME — which
 * the agent writes. With no ~/.gitconfig for the user (CI, containers), the agent's `$HOME/.gitconfig` defined a
 * clean filter and `$HOME/.config/git/attributes` mapped its owned file to it: `git add` ran the filter on the host,
 * as the orchestrator, and the wave ended WAVE_VERIFIED. With a ~/.gitconfig that includes `~/.gitconfig.local`
 * (a dotfiles habit), `~` meant the agent's HOME too.
 *
 * Now that git runs with the orchestrator's HOME (POLYWAVE_HOST_HOME, src/git/harden.ts): the filter never runs
 * on the host. The attack runs from a file the agent wrote (`bash src/a.ts`), so only the OS sandbox and polywave's
 * own git judge it, in both configurations.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { sandboxStatus } from '../src/sandbox/index.js';
import { runCli } from './support/cli.js';
import { createTestRepo } from './support/git-repo.js';

const available = (await sandboxStatus()).available;

const implYaml = [
  'title: Host git',
  'feature_slug: hostgit',
  'verdict: SUITABLE',
  'state: WAVE_PENDING',
  'test_command: "true"',
  'file_ownership:',
  ...['a', 'b'].flatMap((id) => [`    - file: src/${id}.ts`, `      agent: ${id.toUpperCase()}`, '      wave: 1', '      action: new']),
  'waves:',
  '    - number: 1',
  '      agents:',
  ...['a', 'b'].flatMap((id) => [`        - id: ${id.toUpperCase()}`, `          task: Write src/${id}.ts.`, '          files:', `            - src/${id}.ts`]),
  '',
].join('\n');

describe('git outside the sandbox never reads the agent-written HOME (X18-08/09/16)', () => {
  for (const variant of ['no ~/.gitconfig', '~/.gitconfig includes ~/.gitconfig.local'] as const) {
    it.skipIf(!available)(`a filter defined in the agent's HOME does not run on the host: ${variant}`, async () => {
      const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-hostgit.yaml': implYaml, 'src/index.ts': 'export {};\n' } });
      const home = repo.sibling('home');
      mkdirSync(home);
      const marker = path.join(repo.sibling('outside'), 'ran-on-host');
      mkdirSync(path.dirname(marker));
      const env: Record<string, string> = { ...(repo.env as Record<string, string>), HOME: home };
      delete env.GIT_CONFIG_GLOBAL;
      delete env.GIT_CONFIG_NOSYSTEM;
      const local = variant !== 'no ~/.gitconfig';
      if (local) writeFileSync(path.join(home, '.gitconfig'), '[include]\n\tpath = ~/.gitconfig.local\n[user]\n\tname = T\n\temail = t@example.invalid\n');
      const payload = [
        `cat > "$HOME/f.sh" <<'EOS'`,
        '#!/bin/sh',
        `touch ${marker}`,
        'cat',
        'EOS',
        'chmod +x "$HOME/f.sh"',
        `printf '[filter "x18"]\\n\\tclean = %s\\n[core]\\n\\tattributesFile = %s\\n' "$HOME/f.sh" "$HOME/attrs" > "$HOME/${local ? '.gitconfig.local' : '.gitconfig'}"`,
        'mkdir -p "$HOME/.config/git"',
        `echo 'src/a.ts filter=x18' > "$HOME/.config/git/attributes"`,
        `echo 'src/a.ts filter=x18' > "$HOME/attrs"`,
        'true',
      ].join('\n');
      const script = {
        version: 1,
        agents: {
          A: {
            steps: [
              { write: { path: 'src/a.ts', content: payload } },
              { bash: 'bash src/a.ts' },
              { write: { path: 'src/a.ts', content: "export const a = 'a';\n" } },
              { bash: 'git status --short >/dev/null; true' },
              { commit: 'feat(A): a' },
              { report: { status: 'complete', verification: 'PASS', notes: 'done' } },
            ],
          },
          B: { steps: [{ write: { path: 'src/b.ts', content: "export const b = 'b';\n" } }, { commit: 'feat(B): b' }, { report: { status: 'complete', verification: 'PASS', notes: 'done' } }] },
        },
      };
      const scriptPath = path.join(repo.sibling('outside'), 'script.json');
      writeFileSync(scriptPath, JSON.stringify(script));
      const cli = await runCli(['run-wave', repo.path('docs/IMPL/IMPL-hostgit.yaml'), '--wave', '1', '--model', `script:${scriptPath}`, '--skip-critic', '--timeout', '120'], { cwd: repo.dir, env, timeoutMs: 180_000 });
      expect(existsSync(marker), `the agent's filter ran on the host (run-wave exit ${cli.code})`).toBe(false);
      // the agent's legitimate work still landed
      expect(cli.code, cli.stderr).toBe(0);
      expect(await repo.run(['show', 'HEAD:src/a.ts'])).toBe("export const a = 'a';\n");
    }, 240_000);
  }
});
