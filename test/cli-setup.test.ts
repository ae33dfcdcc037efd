import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { runCli } from './support/cli.js';
import { expectCodedError, expectNoStackTrace, parseStdoutJson } from './support/cli-assert.js';
import { makeTempDir } from './support/temp.js';

// Setup commands end to end: init, verify-install, extract-commands on real directories and
// real git repositories (run `npm run build` first: runCli uses the compiled CLI).

const home = makeTempDir('polywave-setup-home-');
const env = { HOME: home, GIT_CONFIG_NOSYSTEM: '1', GIT_CEILING_DIRECTORIES: path.dirname(home) };

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, ...env } });
}

function writeFiles(root: string, files: Record<string, string>): void {
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    writeFileSync(path.join(root, name), text);
  }
}

/** A directory (a git repository unless `gitRepo: false`) holding `files`. */
function makeProject(name: string, files: Record<string, string>, options: { gitRepo?: boolean } = {}): string {
  const root = path.join(makeTempDir(`polywave-setup-${name}-`), name);
  mkdirSync(root, { recursive: true });
  writeFiles(root, files);
  if (options.gitRepo !== false) git(root, 'init', '--quiet', '--initial-branch=main');
  return root;
}

interface InitJson {
  config_path: string;
  toolchains: Array<{ kind: string; directory: string; markers: string[]; package_manager?: string; commands: Record<string, string> }>;
  commands: Record<string, string>;
  gitignore_updated: boolean;
}

interface VerifyJson {
  checks: Array<{ name: string; status: string; message: string; detail: string }>;
  verdict: string;
  summary: string;
}

function statusOf(report: VerifyJson): Record<string, string> {
  return Object.fromEntries(report.checks.map((check) => [check.name, check.status]));
}

const mixedFiles = {
  'go.mod': 'module example.com/mixed\n\ngo 1.22\n',
  'web/package.json': JSON.stringify({ scripts: { build: 'vite build', test: 'vitest run', lint: 'eslint .' } }),
  'web/pnpm-lock.yaml': 'lockfileVersion: 9\n',
  'ml/pyproject.toml': '[project]\nname = "ml"\n\n[tool.ruff]\n',
};

describe('polywave init', () => {
  it('writes the config, git-ignores .polywave-state/ and prints pure JSON (mixed repository)', async () => {
    const root = makeProject('mixed', mixedFiles);
    const result = await runCli(['init', '--repo', root], { env });
    expect(result.code, result.stderr).toBe(0);
    expectNoStackTrace(result.stderr);
    const output = parseStdoutJson<InitJson>(result);
    expect(output.config_path).toBe(path.join(root, 'polywave.config.json'));
    expect(output.gitignore_updated).toBe(true);
    expect(output.toolchains.map((toolchain) => [toolchain.kind, toolchain.directory, toolchain.package_manager ?? ''])).toEqual([
      ['go', '.', ''],
      ['python', 'ml', ''],
      ['node', 'web', 'pnpm'],
    ]);
    expect(output.commands).toEqual({
      build: 'go build ./... && (cd web && pnpm run build)',
      test: 'go test ./... && (cd ml && pytest) && (cd web && pnpm test)',
      lint: 'go vet ./... && (cd ml && ruff check .) && (cd web && pnpm run lint)',
      format: 'gofmt -l .',
    });
    const config = JSON.parse(readFileSync(output.config_path, 'utf8')) as Record<string, unknown>;
    expect(config).toEqual({
      repos: [{ name: 'mixed', path: root }],
      build_command: output.commands.build,
      test_command: output.commands.test,
      lint_command: output.commands.lint,
      format_command: output.commands.format,
      build: { command: output.commands.build, detected: true },
      test: { command: output.commands.test, detected: true },
    });
    expect(statSync(output.config_path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path.join(root, '.gitignore'), 'utf8')).toBe('.polywave-state/\n');
    expect(git(root, 'check-ignore', '.polywave-state/gate-cache.json').trim()).toBe('.polywave-state/gate-cache.json');
    expect(result.stderr).toContain('polywave init: wrote');
    expect(result.stderr).toContain('node/pnpm (web)');
  });

  it('refuses to overwrite without --force (exit 1, nothing written); --force keeps other keys; .gitignore is idempotent', async () => {
    const root = makeProject('refuse', { 'Cargo.toml': '[package]\nname = "x"\n', '.gitignore': 'target\n# keep me\r\nnode_modules' });
    expect((await runCli(['init'], { cwd: root, env })).code).toBe(0);
    const configPath = path.join(root, 'polywave.config.json');
    const gitignore = readFileSync(path.join(root, '.gitignore'), 'utf8');
    expect(gitignore).toBe('target\n# keep me\r\nnode_modules\r\n.polywave-state/\r\n');

    // A user adds keys of their own.
    const edited = { ...(JSON.parse(readFileSync(configPath, 'utf8')) as Record<string, unknown>), providers: { anthropic: { api_key: 'k' } }, agent: { wave_model: 'm' } };
    writeFileSync(configPath, JSON.stringify(edited, null, 2));
    const before = readFileSync(configPath, 'utf8');

    const refused = await runCli(['init'], { cwd: root, env });
    const error = expectCodedError(refused, { exitCode: 1, code: 'N092_ENGINE_ALREADY_INITIALIZED' });
    expect(error.message).toContain('--force');
    expect(readFileSync(configPath, 'utf8')).toBe(before);
    expect(readFileSync(path.join(root, '.gitignore'), 'utf8')).toBe(gitignore);

    const forced = await runCli(['init', '--force'], { cwd: root, env });
    expect(forced.code, forced.stderr).toBe(0);
    const output = parseStdoutJson<InitJson>(forced);
    expect(output.gitignore_updated).toBe(false);
    expect(readFileSync(path.join(root, '.gitignore'), 'utf8')).toBe(gitignore);
    const config = JSON.parse(readFileSync(configPath, 'utf8')) as Record<string, unknown>;
    expect(config.providers).toEqual({ anthropic: { api_key: 'k' } });
    expect(config.agent).toEqual({ wave_model: 'm' });
    expect(config.build_command).toBe('cargo build');
    expect(config.repos).toEqual([{ name: 'refuse', path: root }]);

    // A second forced run changes nothing in .gitignore either.
    expect(parseStdoutJson<InitJson>(await runCli(['init', '--force', '--repo', '.'], { cwd: root, env })).gitignore_updated).toBe(false);
    expect(readFileSync(path.join(root, '.gitignore'), 'utf8')).toBe(gitignore);
  });

  it('recognises an existing ignore line in another spelling and supplies a missing final newline', async () => {
    const spelled = makeProject('spelled', { 'go.mod': 'module x\n', '.gitignore': '/.polywave-state\n' });
    expect(parseStdoutJson<InitJson>(await runCli(['init'], { cwd: spelled, env })).gitignore_updated).toBe(false);
    expect(readFileSync(path.join(spelled, '.gitignore'), 'utf8')).toBe('/.polywave-state\n');

    // Bytes that are not UTF-8 survive untouched.
    const latin1 = makeProject('latin1', { 'go.mod': 'module x\n' });
    const original = Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a, 0x2a, 0x2e, 0x6c, 0x6f, 0x67]);
    writeFileSync(path.join(latin1, '.gitignore'), original);
    expect((await runCli(['init'], { cwd: latin1, env })).code).toBe(0);
    expect(readFileSync(path.join(latin1, '.gitignore'))).toEqual(Buffer.concat([original, Buffer.from('\n.polywave-state/\n')]));

    // A .gitignore that is a directory: refused before anything is written.
    const odd = makeProject('odd-gitignore', { 'go.mod': 'module x\n', '.gitignore/x': '' });
    expectCodedError(await runCli(['init'], { cwd: odd, env }), { exitCode: 2, code: 'X002_FILE_READ' });
    expect(existsSync(path.join(odd, 'polywave.config.json'))).toBe(false);

    const noNewline = makeProject('no-newline', { 'go.mod': 'module x\n', '.gitignore': 'bin' });
    expect(parseStdoutJson<InitJson>(await runCli(['init'], { cwd: noNewline, env })).gitignore_updated).toBe(true);
    expect(readFileSync(path.join(noNewline, '.gitignore'), 'utf8')).toBe('bin\n.polywave-state/\n');
  });

  it.each([
    ['go', { 'go.mod': 'module x\n' }, { build: 'go build ./...', test: 'go test ./...', lint: 'go vet ./...', format: 'gofmt -l .' }],
    ['rust', { 'Cargo.toml': '[package]\nname = "x"\n' }, { build: 'cargo build', test: 'cargo test', lint: 'cargo clippy -- -D warnings', format: 'cargo fmt --check' }],
    ['python', { 'requirements.txt': 'flask\n', '.flake8': '[flake8]\n' }, { test: 'pytest', lint: 'flake8' }],
    ['node', { 'package.json': '{"scripts":{"test":"node --test"}}', 'yarn.lock': '', 'tsconfig.json': '{}' }, { build: 'yarn tsc --noEmit', test: 'yarn test' }],
    ['make', { Makefile: 'all:\n\tcc main.c\ncheck:\n\t./run-tests\n' }, { build: 'make all', test: 'make check' }],
    ['none', { 'README.md': '# nothing\n' }, {}],
  ])('detects %s', async (name, files, commands) => {
    const root = makeProject(`kind-${name}`, files, { gitRepo: false });
    const result = await runCli(['init', '--repo', root], { env });
    expect(result.code, result.stderr).toBe(0);
    expect(parseStdoutJson<InitJson>(result).commands).toEqual(commands);
  });

  it('exit 2 when --repo is not a directory', async () => {
    const root = makeProject('bad-repo', { 'file.txt': 'x' }, { gitRepo: false });
    expectCodedError(await runCli(['init', '--repo', path.join(root, 'missing')], { env }), { exitCode: 2, code: 'D011_REPO_ROOT_INVALID' });
    expectCodedError(await runCli(['init', '--repo', path.join(root, 'file.txt')], { env }), { exitCode: 2, code: 'D011_REPO_ROOT_INVALID' });
    expect(existsSync(path.join(root, 'polywave.config.json'))).toBe(false);
  });
});

describe('polywave verify-install', () => {
  it('PASS after init in a git repository (exit 0, pure JSON, Go keys)', async () => {
    const root = makeProject('verify-pass', { 'go.mod': 'module x\n' });
    expect((await runCli(['init'], { cwd: root, env })).code).toBe(0);
    const result = await runCli(['verify-install'], { cwd: root, env });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
    const report = parseStdoutJson<VerifyJson>(result);
    expect(statusOf(report)).toEqual({ git_version: 'pass', node_version: 'pass', git_repository: 'pass', config_file: 'pass', configured_repos: 'pass', state_ignored: 'pass' });
    expect(report.verdict).toBe('PASS');
    expect(report.summary).toBe('6 passed');
    for (const check of report.checks) expect(check.detail).toBe(check.message);
    // From a sub-directory the config is found walking up.
    mkdirSync(path.join(root, 'pkg', 'deep'), { recursive: true });
    expect(parseStdoutJson<VerifyJson>(await runCli(['verify-install', '--repo-dir', 'pkg/deep'], { cwd: root, env })).verdict).toBe('PASS');
  });

  it('runtime state committed before it was ignored (an old bug committed the gate cache) → state_ignored warns with the git rm --cached fix', async () => {
    const root = makeProject('verify-tracked', { 'go.mod': 'module x\n', '.polywave-state/gate-cache.json': '{}\n' });
    git(root, 'add', '-A');
    git(root, '-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-qm', 'state committed by mistake');
    expect((await runCli(['init'], { cwd: root, env })).code).toBe(0);
    const report = parseStdoutJson<VerifyJson>(await runCli(['verify-install'], { cwd: root, env }));
    expect(statusOf(report)).toMatchObject({ state_ignored: 'warn' });
    expect(report.checks.find((check) => check.name === 'state_ignored')?.message).toBe(
      'runtime state is tracked by git (.polywave-state/gate-cache.json): ignoring it does not untrack it; run: git rm -r --cached .polywave-state && git commit -m "stop tracking polywave runtime state"',
    );
    git(root, 'rm', '-r', '-q', '--cached', '.polywave-state');
    expect(statusOf(parseStdoutJson<VerifyJson>(await runCli(['verify-install'], { cwd: root, env })))).toMatchObject({ state_ignored: 'pass' });
  });

  it('missing config → FAIL, configured_repos skipped; exit 0 (Go), 1 with --strict', async () => {
    const root = makeProject('verify-missing', { 'go.mod': 'module x\n' });
    const result = await runCli(['verify-install'], { cwd: root, env });
    expect(result.code).toBe(0);
    const report = parseStdoutJson<VerifyJson>(result);
    expect(report.verdict).toBe('FAIL');
    expect(statusOf(report)).toMatchObject({ config_file: 'fail', configured_repos: 'skip', state_ignored: 'warn' });
    expect(report.checks.find((check) => check.name === 'config_file')?.message).toContain('polywave init');
    expect(report.summary).toBe('3 passed, 1 failed, 1 warning, 1 skipped');

    const strict = await runCli(['verify-install', '--strict'], { cwd: root, env });
    expect(strict.code).toBe(1);
    expect(parseStdoutJson<VerifyJson>(strict).verdict).toBe('FAIL');
  });

  it('bad repo paths: missing directory and a directory that is not a git repository → configured_repos fails', async () => {
    const root = makeProject('verify-bad-repos', { 'go.mod': 'module x\n', '.gitignore': '.polywave-state/\n' });
    const plain = makeProject('plain', { 'a.txt': 'x' }, { gitRepo: false });
    writeFileSync(
      path.join(root, 'polywave.config.json'),
      JSON.stringify({ repos: [{ name: 'main', path: root }, { name: 'gone', path: path.join(root, 'nope') }, { name: 'plain', path: plain }] }),
    );
    const result = await runCli(['verify-install'], { cwd: root, env });
    expect(result.code).toBe(0);
    const report = parseStdoutJson<VerifyJson>(result);
    expect(report.verdict).toBe('FAIL');
    const repos = report.checks.find((check) => check.name === 'configured_repos')!;
    expect(repos.status).toBe('fail');
    expect(repos.message).toContain('2/3 repos unusable');
    expect(repos.message).toContain('gone');
    expect(repos.message).toContain('plain');
    expect(repos.message).toContain('not a git repository');
    expect((await runCli(['verify-install', '--strict'], { cwd: root, env })).code).toBe(1);
  });

  it('invalid config JSON or shape → config_file fails', async () => {
    const root = makeProject('verify-invalid', { '.gitignore': '.polywave-state/\n', 'polywave.config.json': '{"repos": [' });
    const report = parseStdoutJson<VerifyJson>(await runCli(['verify-install'], { cwd: root, env }));
    expect(statusOf(report)).toMatchObject({ config_file: 'fail', configured_repos: 'skip' });
    expect(report.checks.find((check) => check.name === 'config_file')?.message).toContain('not valid JSON');

    writeFileSync(path.join(root, 'polywave.config.json'), '{"repos": [{"name": "x"}], "test_command": 3}');
    const shape = parseStdoutJson<VerifyJson>(await runCli(['verify-install'], { cwd: root, env }));
    expect(shape.checks.find((check) => check.name === 'config_file')?.message).toMatch(/repos\[0\]\.path.*test_command/);
  });

  it('empty repos → PARTIAL (warnings only); outside a git repository → git_repository fails, state_ignored skipped', async () => {
    const root = makeProject('verify-partial', { '.gitignore': '.polywave-state/\n', 'polywave.config.json': '{"repos": []}' });
    const partial = parseStdoutJson<VerifyJson>(await runCli(['verify-install'], { cwd: root, env }));
    expect(partial.verdict).toBe('PARTIAL');
    expect(statusOf(partial)).toMatchObject({ config_file: 'warn', configured_repos: 'warn' });

    const outside = makeProject('verify-outside', { 'polywave.config.json': '{"repos": []}' }, { gitRepo: false });
    const report = parseStdoutJson<VerifyJson>(await runCli(['verify-install'], { cwd: outside, env }));
    expect(statusOf(report)).toMatchObject({ git_repository: 'fail', state_ignored: 'skip' });
    expect(report.verdict).toBe('FAIL');
  });

  it('--human prints the Go layout; a missing --repo-dir is exit 2', async () => {
    const root = makeProject('verify-human', { 'go.mod': 'module x\n' });
    const human = await runCli(['verify-install', '--human'], { cwd: root, env });
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^ {2}\[OK\] git_version: /);
    expect(human.stdout).toContain('[FAIL] config_file:');
    expect(human.stdout).toContain('\nVerdict: FAIL\n');
    expectCodedError(await runCli(['verify-install', '--repo-dir', path.join(root, 'missing')], { env }), { exitCode: 2, code: 'D011_REPO_ROOT_INVALID' });
  });
});

describe('polywave extract-commands', () => {
  const workflow = 'jobs:\n  ci:\n    runs-on: ubuntu-latest\n    steps:\n      - run: cargo build --locked\n      - run: cargo test --all\n      - run: cargo fmt -- --check\n';

  it('JSON with the Go field names; YAML (default) with the keys lower-cased', async () => {
    const root = makeProject('extract', { 'Cargo.toml': '[package]\nname = "x"\n', '.github/workflows/ci.yml': workflow }, { gitRepo: false });
    const json = await runCli(['extract-commands', root, '--format', 'json'], { env });
    expect(json.code, json.stderr).toBe(0);
    expect(json.stderr).toBe('');
    expect(parseStdoutJson(json)).toEqual({
      Toolchain: 'rust',
      Commands: { Build: 'cargo build --locked', Test: { Full: 'cargo test --all', FocusedPattern: '' }, Lint: { Check: '', Fix: '' }, Format: { Check: 'cargo fmt -- --check', Fix: '' } },
      DetectionSources: ['.github/workflows/ci.yml'],
    });

    const yaml = await runCli(['extract-commands', '.'], { cwd: root, env });
    expect(yaml.code, yaml.stderr).toBe(0);
    expect(parseYaml(yaml.stdout)).toEqual({
      toolchain: 'rust',
      commands: { build: 'cargo build --locked', test: { full: 'cargo test --all', focusedpattern: '' }, lint: { check: '', fix: '' }, format: { check: 'cargo fmt -- --check', fix: '' } },
      detectionsources: ['.github/workflows/ci.yml'],
    });
    expect(yaml.stdout).toContain('\n    test:\n        full: cargo test --all\n');
  });

  it('language defaults when there is no CI or build file; package.json scripts; broken CI YAML is skipped', async () => {
    const goRoot = makeProject('extract-go', { 'go.mod': 'module x\n', '.github/workflows/bad.yml': 'jobs: [\n' }, { gitRepo: false });
    const goSet = parseStdoutJson<{ Toolchain: string; Commands: { Build: string }; DetectionSources: string[] }>(await runCli(['extract-commands', goRoot, '--format', 'json'], { env }));
    expect(goSet).toMatchObject({ Toolchain: 'go', Commands: { Build: 'go build ./...' }, DetectionSources: ['go.mod'] });

    const nodeRoot = makeProject('extract-node', { 'package.json': '{"scripts":{"build":"tsc","test":"vitest"}}', 'bun.lockb': '' }, { gitRepo: false });
    const nodeSet = parseStdoutJson<{ Toolchain: string; Commands: { Build: string; Test: { Full: string } } }>(await runCli(['extract-commands', nodeRoot, '--format', 'json'], { env }));
    expect(nodeSet).toMatchObject({ Toolchain: 'bun', Commands: { Build: 'bun run build', Test: { Full: 'bun run test' } } });
  });

  it('exit 1 when no toolchain is found; exit 2 for a bad format or root', async () => {
    const empty = makeProject('extract-empty', { 'notes.txt': 'x' }, { gitRepo: false });
    const none = await runCli(['extract-commands', empty], { env });
    expectCodedError(none, { exitCode: 1, code: 'E005_NO_TOOLCHAIN' });
    expectCodedError(await runCli(['extract-commands', empty, '--format', 'xml'], { env }), { exitCode: 2, code: 'X001_INVALID_INPUT' });
    expectCodedError(await runCli(['extract-commands', path.join(empty, 'missing')], { env }), { exitCode: 2, code: 'D011_REPO_ROOT_INVALID' });
    expectCodedError(await runCli(['extract-commands'], { env }), { exitCode: 2, code: 'X001_INVALID_INPUT' });
  });

  it('after init, the config commands win (priority 200) and both tools’ key spellings are honoured', async () => {
    const root = makeProject('extract-after-init', { 'go.mod': 'module x\n' });
    expect((await runCli(['init'], { cwd: root, env })).code).toBe(0);
    const set = parseStdoutJson<{ Toolchain: string; Commands: { Test: { Full: string }; Lint: { Check: string } }; DetectionSources: string[] }>(await runCli(['extract-commands', root, '--format', 'json'], { env }));
    expect(set).toMatchObject({ Toolchain: 'go', Commands: { Test: { Full: 'go test ./...' }, Lint: { Check: 'go vet ./...' } }, DetectionSources: ['polywave.config.json'] });
  });
});
