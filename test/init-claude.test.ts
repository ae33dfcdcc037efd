import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentsBeginMarker, agentsEndMarker } from '../src/cli/init-claude.js';
import { startAnthropicLoopback, toolResults, type LoopbackToolUse, type MessagesRequestBody } from './support/anthropic-loopback.js';
import { binPath, repoRoot, runCli } from './support/cli.js';
import { createTestRepo, type TestRepo } from './support/git-repo.js';
import { makeTempDir } from './support/temp.js';

// `polywave init --claude` / `--codex` through the real CLI (run `npm run build` first), on real
// temporary repositories and config directories; the installed project configuration is then
// loaded by the real Claude Code CLI (Agent SDK, loopback Messages API) to prove that what init
// writes is what Claude Code runs.

const pluginRoot = path.join(repoRoot, 'claude-plugin');
const agentFiles = readdirSync(path.join(pluginRoot, 'agents')).sort();

function snapshot(directory: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (current: string) => {
    if (!existsSync(current)) return;
    for (const name of readdirSync(current).sort()) {
      const full = path.join(current, name);
      if (lstatSync(full).isDirectory()) walk(full);
      else out[path.relative(directory, full)] = readFileSync(full, 'utf8');
    }
  };
  walk(directory);
  return out;
}

interface InstalledFileJson {
  path: string;
  action: string;
}
interface InitJson {
  claude: { scope: string; directory: string; settings_action: string; files: InstalledFileJson[] };
  codex: InstalledFileJson;
  [key: string]: unknown;
}

async function init(args: string[], repo: TestRepo, env: Record<string, string> = {}) {
  const result = await runCli(['init', ...args], { cwd: repo.dir, env: { HOME: path.join(repo.root, 'home'), CLAUDE_CONFIG_DIR: '', ...env } });
  return { ...result, json: result.code === 0 ? (JSON.parse(result.stdout) as InitJson) : undefined };
}

describe('polywave init --claude', () => {
  it('project scope: installs the skill, the agents, the launcher and the hooks; a second run changes nothing; the user\'s settings stay', async () => {
    const repo = await createTestRepo();
    const userSettings = { permissions: { allow: ['Bash(npm test)'] }, hooks: { PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: 'echo mine' }] }] } };
    repo.write('.claude/settings.json', `${JSON.stringify(userSettings, null, 2)}\n`);

    const first = await init(['--claude'], repo);
    expect(first.code, first.stderr).toBe(0);
    const claude = first.json!.claude;
    expect(claude).toMatchObject({ scope: 'project', directory: repo.path('.claude'), settings_action: 'updated' });
    expect(claude.files.map((file: { path: string }) => path.relative(repo.path('.claude'), file.path))).toEqual(['skills/polywave/SKILL.md', ...agentFiles.map((name) => `agents/${name}`), 'hooks/polywave-hook.sh']);
    expect(claude.files.every((file: { action: string }) => file.action === 'created')).toBe(true);
    expect(repo.read('.claude/skills/polywave/SKILL.md')).toBe(readFileSync(path.join(pluginRoot, 'skills/polywave/SKILL.md'), 'utf8'));
    expect(statSync(repo.path('.claude/hooks/polywave-hook.sh')).mode & 0o111).not.toBe(0);
    expect(first.stderr).toContain('created   agents/polywave-wave-agent.md');
    expect(existsSync(repo.path('polywave.config.json'))).toBe(false); // --claude writes no config

    const settings = JSON.parse(repo.read('.claude/settings.json'));
    expect(settings.permissions).toEqual(userSettings.permissions);
    expect(settings.hooks.PreToolUse).toHaveLength(2);
    expect(settings.hooks.PreToolUse[0]).toEqual(userSettings.hooks.PreToolUse[0]);
    expect(settings.hooks.PreToolUse[1].hooks[0].command).toBe('sh "$CLAUDE_PROJECT_DIR"/.claude/hooks/polywave-hook.sh pre-tool-use');
    expect(settings.hooks.SubagentStop[0].hooks[0].command).toMatch(/subagent-stop$/);

    const before = snapshot(repo.path('.claude'));
    const second = await init(['--claude'], repo);
    expect(second.code).toBe(0);
    expect(second.json!.claude.settings_action).toBe('unchanged');
    expect(second.json!.claude.files.every((file: { action: string }) => file.action === 'unchanged')).toBe(true);
    expect(snapshot(repo.path('.claude'))).toEqual(before);
  });

  it('a file the user changed is refused (exit 1, listed, nothing written) until --force; a file still as installed is updated silently', async () => {
    const repo = await createTestRepo();
    expect((await init(['--claude'], repo)).code).toBe(0);
    const wave = repo.path('.claude/agents/polywave-wave-agent.md');
    writeFileSync(wave, `${readFileSync(wave, 'utf8')}\nMy own rule.\n`);
    rmSync(repo.path('.claude/skills/polywave/SKILL.md'));
    const before = snapshot(repo.path('.claude'));

    const refused = await init(['--claude'], repo);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toContain('INIT_PLUGIN_FILES_MODIFIED');
    expect(refused.stderr).toContain(wave);
    expect(refused.stderr).not.toMatch(/\n\s+at /);
    expect(snapshot(repo.path('.claude'))).toEqual(before); // the deleted skill is not written back either

    const forced = await init(['--claude', '--force'], repo);
    expect(forced.code, forced.stderr).toBe(0);
    expect(readFileSync(wave, 'utf8')).toBe(readFileSync(path.join(pluginRoot, 'agents/polywave-wave-agent.md'), 'utf8'));
    expect(existsSync(repo.path('.claude/skills/polywave/SKILL.md'))).toBe(true);

    // An upgrade: the installed file is what an older polywave wrote (its hash is on record) → updated without --force.
    const record = JSON.parse(repo.read('.claude/polywave-plugin.json'));
    const older = '---\nname: polywave-scout\n---\nolder prompt\n';
    writeFileSync(repo.path('.claude/agents/polywave-scout.md'), older);
    const { createHash } = await import('node:crypto');
    record.files['agents/polywave-scout.md'] = createHash('sha256').update(older).digest('hex');
    writeFileSync(repo.path('.claude/polywave-plugin.json'), JSON.stringify(record));
    const upgraded = await init(['--claude'], repo);
    expect(upgraded.code, upgraded.stderr).toBe(0);
    expect(upgraded.json!.claude.files.find((file: { path: string }) => file.path.endsWith('polywave-scout.md'))?.action).toBe('updated');
  });

  it('user scope: CLAUDE_CONFIG_DIR, else HOME/.claude; hook commands use the absolute launcher path; nothing in the repository', async () => {
    const repo = await createTestRepo();
    const config = makeTempDir('polywave-claude-config-');
    const viaConfig = await init(['--claude', '--scope', 'user'], repo, { CLAUDE_CONFIG_DIR: config });
    expect(viaConfig.code, viaConfig.stderr).toBe(0);
    expect(viaConfig.json!.claude.directory).toBe(config);
    expect(existsSync(path.join(config, 'agents/polywave-wave-agent.md'))).toBe(true);
    const settings = JSON.parse(readFileSync(path.join(config, 'settings.json'), 'utf8'));
    expect(settings.hooks.PreToolUse[0].hooks[0].command).toBe(`sh ${JSON.stringify(path.join(config, 'hooks/polywave-hook.sh'))} pre-tool-use`);
    expect(existsSync(repo.path('.claude'))).toBe(false);

    const home = path.join(repo.root, 'home');
    const viaHome = await init(['--claude', '--scope', 'user'], repo, { HOME: home });
    expect(viaHome.code, viaHome.stderr).toBe(0);
    expect(viaHome.json!.claude.directory).toBe(path.join(home, '.claude'));
    expect(existsSync(path.join(home, '.claude/skills/polywave/SKILL.md'))).toBe(true);
  });

  it('bad input: a bad --scope, --scope without --claude, broken settings.json, a file where a directory belongs — exit 2, one coded line, nothing written', async () => {
    const repo = await createTestRepo();
    for (const args of [['--claude', '--scope', 'global'], ['--scope', 'user']]) {
      const result = await init(args, repo);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/^polywave: error\[X001_INVALID_INPUT\]: --scope/);
    }
    expect(existsSync(repo.path('.claude'))).toBe(false);
    expect(existsSync(repo.path('polywave.config.json'))).toBe(false);

    repo.write('.claude/settings.json', '{ "hooks": { broken');
    const broken = await init(['--claude'], repo);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toMatch(/X001_INVALID_INPUT.*settings\.json is not valid JSON/);
    expect(readdirSync(repo.path('.claude'))).toEqual(['settings.json']);

    repo.write('.claude/settings.json', '{"hooks": {"PreToolUse": {"not": "an array"}}}');
    expect((await init(['--claude'], repo)).code).toBe(2);
    repo.remove('.claude/settings.json');
    repo.write('.claude/agents', 'a file, not a directory');
    const clash = await init(['--claude'], repo);
    expect(clash.code).toBe(2);
    expect(clash.stderr).toMatch(/X002_FILE_READ/);
    expect(clash.stderr).not.toMatch(/\n\s+at /);
    expect(readdirSync(repo.path('.claude'))).toEqual(['agents']);
  });

  it('init without --claude is unchanged: it writes polywave.config.json and no Claude Code files', async () => {
    const repo = await createTestRepo({ files: { 'package.json': '{"name":"x","scripts":{"test":"node --test"}}\n' } });
    const result = await init([], repo);
    expect(result.code, result.stderr).toBe(0);
    expect(Object.keys(result.json!).sort()).toEqual(['commands', 'config_path', 'gitignore_updated', 'toolchains']);
    expect(existsSync(repo.path('polywave.config.json'))).toBe(true);
    expect(existsSync(repo.path('.claude'))).toBe(false);
    expect(existsSync(repo.path('AGENTS.md'))).toBe(false);
  });
});

describe('polywave init --codex (AGENTS.md)', () => {
  it('creates AGENTS.md; keeps every byte outside the markers; replaces only its own section; idempotent', async () => {
    const repo = await createTestRepo();
    const created = await init(['--codex'], repo);
    expect(created.code, created.stderr).toBe(0);
    expect(created.json).toEqual({ codex: { path: repo.path('AGENTS.md'), action: 'created' } });
    expect(repo.read('AGENTS.md').startsWith(agentsBeginMarker)).toBe(true);

    const head = '# Project rules\r\n\r\nUse tabs.\r\nNo trailing newline here';
    const tail = '\n\n## After\nkeep me\n';
    const section = repo.read('AGENTS.md');
    repo.write('AGENTS.md', `${head}\n\n${section.replace('## Polywave', '## Polywave (edited by hand)')}${tail}`);
    const updated = await init(['--codex'], repo);
    expect(updated.json!.codex.action).toBe('updated');
    expect(repo.read('AGENTS.md')).toBe(`${head}\n\n${section}${tail}`);
    const again = await init(['--codex'], repo);
    expect(again.json!.codex.action).toBe('unchanged');

    // Appending to a file without the section: one blank line, then the section; nothing before it changes.
    repo.write('AGENTS.md', 'existing text');
    await init(['--codex'], repo);
    expect(repo.read('AGENTS.md')).toBe(`existing text\n\n${section}`);

    // A begin marker without its end: refused, nothing written.
    repo.write('AGENTS.md', `x\n${agentsBeginMarker}\nhalf\n`);
    const half = await init(['--codex'], repo);
    expect(half.code).toBe(2);
    expect(half.stderr).toContain(agentsEndMarker);
    expect(repo.read('AGENTS.md')).toBe(`x\n${agentsBeginMarker}\nhalf\n`);
  });

  it('--claude --codex together install both', async () => {
    const repo = await createTestRepo();
    const both = await init(['--claude', '--codex'], repo);
    expect(both.code, both.stderr).toBe(0);
    expect(Object.keys(both.json!).sort()).toEqual(['claude', 'codex']);
  });
});

describe('the sawtools name', () => {
  it('node_modules/.bin/sawtools (from the `polywave: file:.` devDependency) runs our CLI, so `command -v sawtools` finds it', () => {
    const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { bin: Record<string, string>; devDependencies: Record<string, string> };
    expect(pkg.bin.sawtools).toBe('bin/polywave-fast');
    expect(pkg.devDependencies.polywave).toBe('file:.');
    const binDir = path.join(repoRoot, 'node_modules', '.bin');
    expect(existsSync(path.join(binDir, 'sawtools'))).toBe(true);
    const found = execFileSync('sh', ['-c', 'command -v sawtools'], { env: { ...process.env, PATH: `${binDir}${path.delimiter}/usr/bin:/bin` } }).toString().trim();
    expect(found).toBe(path.join(binDir, 'sawtools'));
    const version = execFileSync(found, ['--version'], { env: { ...process.env, PATH: `${path.dirname(process.execPath)}${path.delimiter}/usr/bin:/bin` } }).toString().trim();
    expect(version).toBe((JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version);
  });
});

const nativePackage = `@anthropic-ai/claude-agent-sdk-${process.platform}-${process.arch}`;
const noBinary = (() => {
  const require = createRequire(import.meta.url);
  for (const name of [nativePackage, `${nativePackage}-musl`]) {
    try {
      require.resolve(`${name}/claude`);
      return false;
    } catch {
      // next
    }
  }
  return true;
})();

describe.skipIf(noBinary)(noBinary ? `the installed project configuration in Claude Code — SKIPPED: the Claude Code CLI cannot start here (${nativePackage} is not installed)` : 'the installed project configuration in Claude Code', () => {
  it('Claude Code loads what `init --claude` wrote (settingSources: project): skill and agents discovered, the settings.json hook reaches polywave on PATH and blocks an unowned write', { timeout: 120_000 }, async () => {
    const repo = await createTestRepo({ files: {
      'src/base.ts': 'export const base = 1;\n',
      'docs/IMPL/IMPL-demo.yaml': 'title: Demo\nfeature_slug: demo\nverdict: SUITABLE\nstate: REVIEWED\nfile_ownership:\n    - {file: src/a.ts, agent: A, wave: 1, action: new}\n    - {file: src/b.ts, agent: B, wave: 1, action: new}\nwaves:\n    - number: 1\n      agents:\n        - {id: A, task: "Write src/a.ts.", files: [src/a.ts]}\n        - {id: B, task: "Write src/b.ts.", files: [src/b.ts]}\n',
    } });
    expect((await init(['--claude'], repo)).code).toBe(0);
    await repo.commitAll('polywave plugin for Claude Code'); // worktrees get .claude/ too
    execFileSync(process.execPath, [binPath, 'prepare-wave', repo.path('docs/IMPL/IMPL-demo.yaml'), '--wave', '1', '--json-only'], { cwd: repo.dir, env: { ...repo.env }, stdio: 'ignore' });
    const worktree = repo.path('.claude/worktrees/polywave/demo/wave1-agent-A');

    const binDir = path.join(repo.root, 'bin');
    mkdirSync(binDir, { recursive: true });
    writeFileSync(path.join(binDir, 'polywave'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(binPath)} "$@"\n`);
    chmodSync(path.join(binDir, 'polywave'), 0o755);
    const hookLog = path.join(repo.root, 'hook-log.jsonl');
    const home = path.join(repo.root, 'home');
    mkdirSync(path.join(home, '.claude'), { recursive: true });
    mkdirSync(path.join(repo.root, 'tmp'), { recursive: true });

    const attempts: LoopbackToolUse[] = [
      { name: 'Write', input: { file_path: path.join(worktree, 'src/a.ts'), content: 'export const a = 1;\n' } },
      { name: 'Write', input: { file_path: path.join(worktree, 'src/b.ts'), content: 'export const b = 1;\n' } },
    ];
    const api = await startAnthropicLoopback((body) => {
      const step = attempts[toolResults(body).length];
      return step ? { toolUses: [step] } : { text: 'done' };
    });
    try {
      const sdk = await import('@anthropic-ai/claude-agent-sdk');
      const messages: Array<{ type?: string; subtype?: string; agents?: string[]; skills?: string[]; slash_commands?: string[]; error?: string }> = [];
      const stream = sdk.query({
        prompt: 'Implement src/a.ts.',
        options: {
          cwd: worktree,
          settingSources: ['project'],
          permissionMode: 'acceptEdits',
          maxTurns: 6,
          model: 'claude-sonnet-4-5',
          env: {
            PATH: `${binDir}${path.delimiter}${process.env.PATH ?? ''}`,
            HOME: home,
            CLAUDE_CONFIG_DIR: path.join(home, '.claude'),
            TMPDIR: path.join(repo.root, 'tmp'),
            ANTHROPIC_BASE_URL: api.baseURL,
            ANTHROPIC_API_KEY: 'test-key',
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
            CLAUDE_CODE_MAX_RETRIES: '0',
            GIT_CONFIG_NOSYSTEM: '1',
            GIT_CONFIG_GLOBAL: os.devNull,
            POLYWAVE_HOOK_LOG: hookLog,
          },
        },
      });
      try {
        for await (const message of stream) messages.push(message as (typeof messages)[number]);
      } catch (error) {
        messages.push({ type: 'thrown', error: String(error) });
      }
      const initMessage = messages.find((message) => message.type === 'system' && message.subtype === 'init');
      expect(initMessage?.agents).toEqual(expect.arrayContaining(agentFiles.map((file) => file.replace(/\.md$/, ''))));
      expect([...(initMessage?.skills ?? []), ...(initMessage?.slash_commands ?? [])]).toContain('polywave');
      expect(readFileSync(path.join(worktree, 'src/a.ts'), 'utf8')).toBe('export const a = 1;\n');
      expect(existsSync(path.join(worktree, 'src/b.ts'))).toBe(false);
      const log = readFileSync(hookLog, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { event: string; action: string; code?: string });
      expect(log.filter((line) => line.event === 'pre-tool-use').map((line) => `${line.action}:${line.code ?? ''}`)).toEqual(['pass:', 'deny:JAIL_NOT_OWNED']);
      const last = api.requests[api.requests.length - 1] as MessagesRequestBody;
      expect(toolResults(last)[1]!.text).toContain('[polywave E43 JAIL_NOT_OWNED]');
    } finally {
      await api.close();
    }
  });
});
