import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { combineCommands, detectToolchain, detectToolchains, parseMakefileTargets, pickMakeTarget, scanProject, shellQuote } from './toolchain.js';

const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

/** A real temporary directory holding `files` (path → text). */
function project(files: Record<string, string>): string {
  const root = mkdtempSync(path.join(os.tmpdir(), 'polywave-toolchain-'));
  roots.push(root);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    writeFileSync(path.join(root, name), text);
  }
  return root;
}

describe('detectToolchain (real directories)', () => {
  it('Node: prefers the package scripts and the lock file’s package manager', async () => {
    const root = project({
      'package.json': JSON.stringify({ scripts: { build: 'tsc', test: 'vitest run', lint: 'eslint .', typecheck: 'tsc --noEmit', 'format:check': 'prettier --check .' } }),
      'pnpm-lock.yaml': 'lockfileVersion: 9\n',
      'tsconfig.json': '{}',
    });
    expect(await detectToolchain(root)).toEqual([
      {
        kind: 'node',
        directory: '.',
        markers: ['package.json', 'pnpm-lock.yaml'],
        packageManager: 'pnpm',
        commands: { build: 'pnpm run build', test: 'pnpm test', lint: 'pnpm run lint', typecheck: 'pnpm run typecheck', format: 'pnpm run format:check' },
      },
    ]);
  });

  it('Node without scripts: tsc --noEmit with a tsconfig, eslint with an eslint config, the test runner from dependencies', async () => {
    const root = project({
      'package.json': JSON.stringify({ devDependencies: { vitest: '4.0.0' }, scripts: { test: 'echo "Error: no test specified" && exit 1' } }),
      'tsconfig.json': '{}',
      'eslint.config.js': 'export default [];\n',
      '.prettierrc': '{}',
    });
    const [node] = await detectToolchain(root);
    expect(node?.packageManager).toBe('npm');
    expect(node?.commands).toEqual({ build: 'npx tsc --noEmit', typecheck: 'npx tsc --noEmit', test: 'npx vitest run', lint: 'npx eslint .', format: 'npx prettier --check .' });
  });

  it.each([
    ['yarn.lock', 'yarn', 'yarn test'],
    ['bun.lockb', 'bun', 'bun run test'],
    ['package-lock.json', 'npm', 'npm test'],
  ])('Node package manager from %s', async (lockFile, manager, test) => {
    const root = project({ 'package.json': JSON.stringify({ scripts: { test: 'jest' } }), [lockFile]: '' });
    const [node] = await detectToolchain(root);
    expect(node?.packageManager).toBe(manager);
    expect(node?.commands.test).toBe(test);
  });

  it('Go', async () => {
    const root = project({ 'go.mod': 'module example.com/x\n\ngo 1.22\n', 'main.go': 'package main\n' });
    expect(await detectToolchain(root)).toEqual([
      { kind: 'go', directory: '.', markers: ['go.mod'], commands: { build: 'go build ./...', test: 'go test ./...', lint: 'go vet ./...', format: 'gofmt -l .' } },
    ]);
  });

  it('Rust', async () => {
    const root = project({ 'Cargo.toml': '[package]\nname = "x"\nversion = "0.1.0"\n' });
    expect(await detectToolchain(root)).toEqual([
      { kind: 'rust', directory: '.', markers: ['Cargo.toml'], commands: { build: 'cargo build', test: 'cargo test', lint: 'cargo clippy -- -D warnings', format: 'cargo fmt --check' } },
    ]);
  });

  it('Python: pytest always; ruff, mypy and black only when configured; uv runner from uv.lock', async () => {
    const bare = project({ 'requirements.txt': 'requests\n' });
    expect(await detectToolchain(bare)).toEqual([{ kind: 'python', directory: '.', markers: ['requirements.txt'], commands: { test: 'pytest' } }]);

    const configured = project({
      'pyproject.toml': '[project]\nname = "x"\n\n[tool.ruff]\nline-length = 100\n\n[tool.mypy]\nstrict = true\n\n[tool.black]\n',
      'uv.lock': '',
    });
    expect(await detectToolchain(configured)).toEqual([
      {
        kind: 'python',
        directory: '.',
        markers: ['pyproject.toml', 'uv.lock'],
        commands: { test: 'uv run pytest', lint: 'uv run ruff check .', typecheck: 'uv run mypy .', format: 'uv run black --check .' },
      },
    ]);

    const flake8 = project({ 'setup.py': 'from setuptools import setup\n', 'setup.cfg': '[flake8]\nmax-line-length = 100\n' });
    expect((await detectToolchain(flake8))[0]?.commands).toEqual({ test: 'pytest', lint: 'flake8' });
  });

  it('Makefile targets; a Makefile without recognised targets is no toolchain', async () => {
    const root = project({ Makefile: '.PHONY: build test\nVERSION := 1.0\nbuild:\n\tgo build ./...\ntest: build\n\tgo test ./...\nlint:\n\tgolangci-lint run\nfmt:\n\tgofmt -w .\n' });
    expect(await detectToolchain(root)).toEqual([
      { kind: 'make', directory: '.', markers: ['Makefile'], commands: { build: 'make build', test: 'make test', lint: 'make lint', format: 'make fmt' } },
    ]);
    const unrelated = project({ Makefile: 'deploy:\n\t./deploy.sh\n' });
    expect(await detectToolchain(unrelated)).toEqual([]);
  });

  it('mixed repository: one toolchain per directory, depth ≤ 2, skipped directories ignored', async () => {
    const root = project({
      'go.mod': 'module example.com/mixed\n',
      'web/package.json': JSON.stringify({ scripts: { build: 'vite build', test: 'vitest' } }),
      'web/yarn.lock': '',
      'services/worker/Cargo.toml': '[package]\nname = "worker"\n',
      'tools/py/deep/pyproject.toml': '[project]\nname = "too-deep"\n',
      'node_modules/dep/package.json': '{}',
      'vendor/x/go.mod': 'module vendored\n',
      'dist/package.json': '{}',
    });
    const toolchains = await detectToolchain(root);
    expect(toolchains.map((toolchain) => [toolchain.kind, toolchain.directory])).toEqual([
      ['go', '.'],
      ['rust', 'services/worker'],
      ['node', 'web'],
    ]);
    expect(toolchains[2]?.markers).toEqual(['web/package.json', 'web/yarn.lock']);
    expect(combineCommands(toolchains)).toEqual({
      build: 'go build ./... && (cd services/worker && cargo build) && (cd web && yarn run build)',
      test: 'go test ./... && (cd services/worker && cargo test) && (cd web && yarn test)',
      lint: 'go vet ./... && (cd services/worker && cargo clippy -- -D warnings)',
      format: 'gofmt -l . && (cd services/worker && cargo fmt --check)',
    });
  });

  it('workspace members are covered by the workspace root; a root Makefile target wins when combining', async () => {
    const root = project({
      'package.json': JSON.stringify({ workspaces: ['packages/*'], scripts: { test: 'vitest' } }),
      'package-lock.json': '{}',
      'packages/a/package.json': JSON.stringify({ scripts: { test: 'vitest' } }),
      'Cargo.toml': '[workspace]\nmembers = ["crates/*"]\n',
      'crates/core/Cargo.toml': '[package]\nname = "core"\n',
      Makefile: 'test:\n\tnpm test && cargo test\n',
    });
    const toolchains = await detectToolchain(root);
    expect(toolchains.map((toolchain) => [toolchain.kind, toolchain.directory])).toEqual([
      ['rust', '.'],
      ['node', '.'],
      ['make', '.'],
    ]);
    expect(combineCommands(toolchains).test).toBe('make test');
    expect(combineCommands(toolchains).build).toBe('cargo build');
  });

  it('an empty directory has no toolchain; a missing one is scanned as empty', async () => {
    expect(await detectToolchain(project({}))).toEqual([]);
    expect(await scanProject(path.join(os.tmpdir(), 'polywave-does-not-exist-42'))).toEqual({ files: [], contents: {} });
  });
});

describe('detectToolchains (pure)', () => {
  it('ignores a package.json that is not JSON but still reports node', () => {
    const [node] = detectToolchains({ files: ['package.json'], contents: { 'package.json': '{not json' } });
    expect(node).toEqual({ kind: 'node', directory: '.', markers: ['package.json'], packageManager: 'npm', commands: {} });
  });

  it('takes the package manager from an ancestor lock file (workspace root) or the packageManager field', () => {
    const fromAncestor = detectToolchains({ files: ['pnpm-lock.yaml', 'app/package.json'], contents: { 'app/package.json': '{"scripts":{"build":"x"}}' } });
    expect(fromAncestor[0]?.packageManager).toBe('pnpm');
    expect(fromAncestor[0]?.markers).toEqual(['app/package.json', 'pnpm-lock.yaml']);
    const fromField = detectToolchains({ files: ['package.json'], contents: { 'package.json': '{"packageManager":"yarn@4.1.0"}' } });
    expect(fromField[0]?.packageManager).toBe('yarn');
  });
});

describe('parseMakefileTargets', () => {
  it('reads targets, dependencies and recipes; skips assignments, special and pattern targets, define blocks', () => {
    const text = [
      'SHELL := /bin/bash',
      'X ?= 1',
      'URL = http://example.com:8080',
      '.PHONY: all test',
      'all: build test ## everything',
      'build:',
      '\t@go build ./...',
      '%.o: %.c',
      '\tcc -c $<',
      'define HELP',
      'help: not a target',
      'endef',
      'test lint: build ; echo inline',
      '\t-go test ./...',
      'ci: VERBOSE = 1',
      '$(BIN): main.go',
      '\tgo build -o $(BIN)',
    ].join('\n');
    const targets = parseMakefileTargets(text);
    expect(targets.map((target) => target.name)).toEqual(['all', 'build', 'test', 'lint', 'ci']);
    expect(targets[0]).toEqual({ name: 'all', dependencies: ['build', 'test'], recipe: [] });
    expect(targets[1]?.recipe).toEqual(['go build ./...']);
    expect(targets[2]).toEqual({ name: 'test', dependencies: ['build'], recipe: ['echo inline', 'go test ./...'] });
    expect(targets[4]).toEqual({ name: 'ci', dependencies: [], recipe: [] });
  });

  it('picks targets by name with preferences', () => {
    expect(pickMakeTarget(['all', 'build'], 'build')).toBe('build');
    expect(pickMakeTarget(['all'], 'build')).toBe('all');
    expect(pickMakeTarget(['docker-build', 'build-linux'], 'build')).toBe('build-linux');
    expect(pickMakeTarget(['test-integration', 'test-unit'], 'test')).toBe('test-unit');
    expect(pickMakeTarget(['fmt', 'fmt-check'], 'format')).toBe('fmt-check');
    expect(pickMakeTarget(['deploy'], 'lint')).toBeUndefined();
  });

  it('quotes directories for sh only when needed', () => {
    expect(shellQuote('web/app')).toBe('web/app');
    expect(shellQuote("my app's")).toBe(`'my app'\\''s'`);
  });
});
