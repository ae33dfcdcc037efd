import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PolywaveError } from '../errors/polywave-error.js';
import {
  configuredCommands,
  configuredRepos,
  configuredSandbox,
  securityConfigChanges,
  configuredWorktreeSetup,
  configuredWorktreeSetupSettings,
  locateProjectConfig,
  mergeProjectConfig,
  parseProjectConfig,
  readProjectConfig,
  serializeProjectConfig,
  writeProjectConfig,
} from './project-config.js';

const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

function tempDir(): string {
  const root = mkdtempSync(path.join(os.tmpdir(), 'polywave-config-'));
  roots.push(root);
  return root;
}

describe('parseProjectConfig', () => {
  it('accepts the Go shape, keeps unknown keys, no findings', () => {
    const text = JSON.stringify({
      repos: [{ name: 'a', path: '/abs/a', build_command: 'go build ./...' }],
      repo: { path: '' },
      agent: { scout_model: 'm', wave_model: 'm' },
      quality: { require_tests: false },
      providers: { anthropic: { api_key: 'k' } },
      build: { command: 'go build ./...', detected: true },
      lint_command: 'go vet ./...',
    });
    const parsed = parseProjectConfig(text);
    expect(parsed.findings).toEqual([]);
    expect(parsed.config?.providers).toEqual({ anthropic: { api_key: 'k' } });
  });

  it('not JSON or not an object: fatal N014 and no config', () => {
    expect(parseProjectConfig('{oops')).toMatchObject({ config: undefined, findings: [{ code: 'N014_CONFIG_INVALID', severity: 'fatal' }] });
    expect(parseProjectConfig('[1]')).toMatchObject({ config: undefined, findings: [{ code: 'N014_CONFIG_INVALID', message: 'must be a JSON object, found array' }] });
  });

  it('reports wrong shapes with field paths', () => {
    const parsed = parseProjectConfig(JSON.stringify({ repos: [{ name: 'a' }, 'x', { name: 1, path: '/p', test_command: 3 }], lint_command: ['x'], build: 'go build', agent: { wave_model: 1 } }));
    expect(parsed.findings.map((finding) => finding.field)).toEqual(['repos[0].path', 'repos[1]', 'repos[2].name', 'repos[2].test_command', 'lint_command', 'build', 'agent.wave_model']);
    expect(parsed.findings.every((finding) => finding.severity === 'error' && finding.code === 'N014_CONFIG_INVALID')).toBe(true);
    expect(parseProjectConfig('{"repos": {"name": "a"}}').findings[0]?.message).toBe('repos: must be an array of {name, path}, found object');
  });

  it('warns when no repository is configured', () => {
    expect(parseProjectConfig('{}').findings).toMatchObject([{ severity: 'warning', field: 'repos' }]);
    expect(parseProjectConfig('{"repos": [], "repo": {"path": "/legacy"}}').findings).toEqual([]);
  });
});

describe('configured repos and commands', () => {
  it('resolves relative and ~/ paths, migrates the legacy repo form', () => {
    expect(configuredRepos({ repos: [{ name: 'a', path: '../a' }, { name: '', path: '~/b' }] }, '/work/cfg', '/home/u')).toEqual([
      { name: 'a', configuredPath: '../a', path: '/work/a' },
      { name: 'b', configuredPath: '~/b', path: '/home/u/b' },
    ]);
    expect(configuredRepos({ repos: [], repo: { path: '/x/legacy' } }, '/')).toEqual([{ name: 'legacy', configuredPath: '/x/legacy', path: '/x/legacy' }]);
  });

  it('unifies the three Go spellings of the commands, snake_case first', () => {
    expect(configuredCommands({ build: { command: 'b1' }, buildCommand: 'b2', testCommand: 't2', lint_command: 'l1', lintCommand: 'l2' })).toEqual({ build: 'b2', test: 't2', lint: 'l1' });
    expect(configuredCommands({ build_command: 'b0', build: { command: 'b1' }, test: { command: 't1', detected: true } })).toEqual({ build: 'b0', test: 't1' });
  });
});

describe('the sandbox section (issue 11)', () => {
  it('defaults to no network and nothing extra writable', () => {
    expect(configuredSandbox(undefined)).toEqual({ network: { allow: [] }, writable: [], readable: [] });
    expect(configuredSandbox({ repos: [] })).toEqual({ network: { allow: [] }, writable: [], readable: [] });
  });

  it('reads sandbox.network.allow and sandbox.writable', () => {
    const { config, findings } = parseProjectConfig(JSON.stringify({ repos: [{ name: 'a', path: '.' }], sandbox: { network: { allow: ['registry.npmjs.org', ' *.pypi.org '] }, writable: ['~/.npm'], readable: ['~/.config/mytool'] } }));
    expect(findings).toEqual([]);
    expect(configuredSandbox(config)).toEqual({ network: { allow: ['registry.npmjs.org', '*.pypi.org'] }, writable: ['~/.npm'], readable: ['~/.config/mytool'] });
    // Adding to sandbox.readable widens every later sandbox: a merged change of it blocks like sandbox.writable.
    expect(securityConfigChanges({ sandbox: { readable: [] } }, config).widened).toContainEqual({ key: 'sandbox.readable', added: ['~/.config/mytool'] });
    expect(parseProjectConfig(JSON.stringify({ sandbox: { readable: [3] } })).findings.map((finding) => finding.field)).toEqual(['sandbox.readable[0]']);
  });

  it('wrong shapes are N014 errors with the field path', () => {
    const { findings } = parseProjectConfig(JSON.stringify({ repos: [{ name: 'a', path: '.' }], sandbox: { network: { allow: 'registry.npmjs.org' }, writable: ['', 3] } }));
    expect(findings.map((finding) => finding.field)).toEqual(['sandbox.network.allow', 'sandbox.writable[0]', 'sandbox.writable[1]']);
    expect(parseProjectConfig(JSON.stringify({ sandbox: [] })).findings[0]).toMatchObject({ code: 'N014_CONFIG_INVALID', field: 'sandbox' });
  });
});

describe('worktree setup keys (issue 13)', () => {
  it('accepts setup/teardown as a string or argv, setup false, copy lists and worktree_setup; keeps them as written', () => {
    const value = {
      repos: [{ name: 'app', path: '.', setup: ['npm', 'ci'], teardown: 'make stop', copy: ['.env', 'config/*.json'] }],
      setup: false,
      worktree_setup: { base_port: 42000, concurrency: 3, timeout_seconds: 120, defaults: false },
    };
    const { config, findings } = parseProjectConfig(JSON.stringify(value));
    expect(findings).toEqual([]);
    expect(configuredWorktreeSetup(config, { configDir: '/w/app', repoRoot: '/w/app', primary: true })).toEqual({ setup: ['npm', 'ci'], teardown: 'make stop', copy: ['.env', 'config/*.json'] });
    expect(configuredWorktreeSetupSettings(config)).toEqual({ basePort: 42000, concurrency: 3, timeoutSeconds: 120, defaults: false });
    expect(serializeProjectConfig(config!)).toBe(`${JSON.stringify(value, null, 2)}\n`);
  });

  it('wrong shapes are N014 errors with the field path; nothing configured means the defaults', () => {
    const { findings } = parseProjectConfig(JSON.stringify({ repos: [{ name: 'a', path: '.', setup: '', teardown: ['ok', ''], copy: ['', 3] }], copy: {}, worktree_setup: { concurrency: 0, timeout_seconds: 1.5 } }));
    expect(findings.map((finding) => finding.field)).toEqual(['repos[0].setup', 'repos[0].teardown', 'repos[0].copy[0]', 'repos[0].copy[1]', 'copy', 'worktree_setup.concurrency', 'worktree_setup.timeout_seconds']);
    expect(findings.every((finding) => finding.code === 'N014_CONFIG_INVALID' && finding.severity === 'error')).toBe(true);
    expect(configuredWorktreeSetup(undefined, { configDir: '/w', repoRoot: '/w', primary: true })).toEqual({ setup: undefined, copy: [] });
    // A repository not in repos[] and not primary gets nothing from the top level.
    expect(configuredWorktreeSetup({ setup: 'x' }, { configDir: '/w', repoRoot: '/other', primary: false })).toEqual({ setup: undefined, copy: [] });
  });
});

describe('on disk', () => {
  it('locates the config in the start directory or a parent, within the level limit', async () => {
    const root = tempDir();
    const deep = path.join(root, 'a', 'b', 'c');
    mkdirSync(deep, { recursive: true });
    expect(await locateProjectConfig(deep)).toBeUndefined();
    writeFileSync(path.join(root, 'polywave.config.json'), '{}');
    expect(await locateProjectConfig(deep)).toBe(path.join(root, 'polywave.config.json'));
    expect(await locateProjectConfig(deep, { maxLevels: 3 })).toBeUndefined();
    mkdirSync(path.join(root, 'a', 'polywave.config.json'));
    expect(await locateProjectConfig(deep)).toBe(path.join(root, 'polywave.config.json'));
  });

  it('writes atomically with mode 0600 for a new file, keeps the mode of an existing one, reads back', async () => {
    const root = tempDir();
    const filePath = path.join(root, 'polywave.config.json');
    const config = { repos: [{ name: 'r', path: root }], test_command: 'npm test' };
    await writeProjectConfig(filePath, config);
    expect(statSync(filePath).mode & 0o777).toBe(0o600);
    expect(readFileSync(filePath, 'utf8')).toBe(serializeProjectConfig(config));
    expect(readFileSync(filePath, 'utf8').endsWith('}\n')).toBe(true);
    expect(readdirSync(root)).toEqual(['polywave.config.json']);
    const loaded = await readProjectConfig(filePath);
    expect(loaded).toEqual({ path: filePath, config, findings: [] });
  });

  it('missing config → N013 (exit 2); a directory → read error', async () => {
    const root = tempDir();
    await expect(readProjectConfig(path.join(root, 'polywave.config.json'))).rejects.toSatisfy((error: unknown) => PolywaveError.isInstance(error) && error.code === 'N013_CONFIG_NOT_FOUND' && error.exitCode === 2);
    mkdirSync(path.join(root, 'dir.json'));
    await expect(readProjectConfig(path.join(root, 'dir.json'))).rejects.toSatisfy((error: unknown) => PolywaveError.isInstance(error) && error.code === 'X002_FILE_READ');
  });

  it('merge keeps existing keys and their order, updates win', () => {
    expect(Object.keys(mergeProjectConfig({ providers: {}, repos: [], agent: {} }, { repos: [{ name: 'a', path: '/a' }], test_command: 't' }))).toEqual(['providers', 'repos', 'agent', 'test_command']);
  });
});
