import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  classifyCiCommands,
  commandsFromMakefile,
  commandsFromPackageJson,
  extractCommands,
  githubWorkflowCommands,
  gitlabCiCommands,
  splitScriptLines,
  toolchainFromCommands,
  type CommandSet,
} from './extract-commands.js';

const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

function project(files: Record<string, string>): string {
  const root = mkdtempSync(path.join(os.tmpdir(), 'polywave-extract-'));
  roots.push(root);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    writeFileSync(path.join(root, name), text);
  }
  return root;
}

function set(partial: Partial<CommandSet> & Pick<CommandSet, 'toolchain' | 'detectionSources'>): CommandSet {
  return { build: '', test: { full: '', focusedPattern: '' }, lint: { check: '', fix: '' }, format: { check: '', fix: '' }, ...partial };
}

const goWorkflow = `name: ci
on: [push]
env:
  GOWORK: "off"
jobs:
  test:
    strategy:
      matrix:
        os: [ubuntu-latest, macos-latest]
    runs-on: \${{ matrix.os }}
    env:
      CGO_ENABLED: 0
      TOKEN: \${{ secrets.TOKEN }}
    steps:
      - uses: actions/checkout@v4
      - run: go mod download
      - run: |
          go build ./...
          # comment
          go test -race \\
            ./...
      - run: go vet ./...
        env:
          CGO_ENABLED: 1
      - run: test -z "$(gofmt -l .)"
  windows:
    runs-on: windows-latest
    steps:
      - run: go test ./... -run TestWindows
`;

describe('CI parsing (pure)', () => {
  it('joins continuation lines and drops comments', () => {
    expect(splitScriptLines('a \\\n  b\n\n# c\nd')).toEqual(['a b', 'd']);
  });

  it('GitHub Actions: run lines with merged env prefixes; jobs of other operating systems skipped; expressions dropped', () => {
    expect(githubWorkflowCommands(goWorkflow, { platform: 'linux' })).toEqual([
      'CGO_ENABLED=0 GOWORK=off go mod download',
      'CGO_ENABLED=0 GOWORK=off go build ./...',
      'CGO_ENABLED=0 GOWORK=off go test -race ./...',
      'CGO_ENABLED=1 GOWORK=off go vet ./...',
      `CGO_ENABLED=0 GOWORK=off test -z "$(gofmt -l .)"`,
    ]);
    expect(githubWorkflowCommands(goWorkflow, { platform: 'win32' })).toEqual(['GOWORK=off go test ./... -run TestWindows']);
  });

  it('never throws on bad YAML or odd shapes', () => {
    for (const text of ['jobs: [', 'jobs:\n  a: 1\n  b:\n    steps: nope', '- just\n- a list', '\u0000binary', '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[']) {
      expect(githubWorkflowCommands(text)).toEqual([]);
      expect(gitlabCiCommands(text)).toEqual([]);
    }
  });

  it('GitLab CI: script lines of visible jobs (string or list), reserved keys and hidden jobs skipped', () => {
    const text = `stages: [test]
variables:
  X: "1"
before_script:
  - npm ci
.template:
  script: echo hidden
lint:
  script:
    - npx eslint .
    - [npx prettier --check .]
test:
  script: npm test
`;
    expect(gitlabCiCommands(text)).toEqual(['npx eslint .', 'npx prettier --check .', 'npm test']);
  });

  it('classifies commands (check vs fix, focused tests, set-up lines ignored)', () => {
    const classified = classifyCiCommands([
      'pip install pytest ruff',
      'npm ci',
      'echo go test',
      'npm run build && npm test',
      'npx eslint . --fix',
      'npx eslint .',
      'npx prettier --write .',
      'npx prettier --check .',
      'go test ./pkg/... -run TestFoo',
    ]);
    expect(classified).toEqual({
      build: 'npm run build && npm test',
      test: { full: 'npm run build && npm test', focusedPattern: 'go test ./pkg/... -run TestFoo' },
      lint: { check: 'npx eslint .', fix: 'npx eslint . --fix' },
      format: { check: 'npx prettier --check .', fix: 'npx prettier --write .' },
    });
  });

  it('infers the toolchain from commands (cargo is not go)', () => {
    expect(toolchainFromCommands(['cargo build', 'cargo test', 'go vet ./...'])).toBe('rust');
    expect(toolchainFromCommands(['GOWORK=off go test ./...'])).toBe('go');
    expect(toolchainFromCommands(['pytest -q'])).toBe('python');
    expect(toolchainFromCommands(['make'])).toBe('');
  });

  it('Makefile and package.json sets', () => {
    expect(commandsFromMakefile('build:\n\tgo build\ntest:\n\tgo test\nfmt-check:\n\tx\nfmt:\n\ty\nlint-fix:\n\tz\n')).toEqual(
      set({ toolchain: 'make', detectionSources: ['Makefile'], build: 'make build', test: { full: 'make test', focusedPattern: '' }, lint: { check: '', fix: 'make lint-fix' }, format: { check: 'make fmt-check', fix: 'make fmt' } }),
    );
    expect(commandsFromMakefile('deploy:\n\t./d.sh\n')).toBeUndefined();
    expect(commandsFromPackageJson('{"scripts":{"build":"tsc","test":"vitest","lint":"eslint .","format":"prettier -w ."},"workspaces":["packages/*"]}', 'pnpm')).toEqual(
      set({
        toolchain: 'pnpm',
        detectionSources: ['package.json'],
        build: 'pnpm run build',
        test: { full: 'pnpm run test', focusedPattern: 'pnpm run test --workspace=packages/*' },
        lint: { check: 'pnpm run lint', fix: '' },
        format: { check: '', fix: 'pnpm run format' },
      }),
    );
    expect(commandsFromPackageJson('{"scripts":{"start":"node ."}}')).toBeUndefined();
    expect(commandsFromPackageJson('not json')).toBeUndefined();
  });
});

describe('extractCommands (real directories, priority order)', () => {
  it('language defaults: Go, Rust, Python as the Go tool prints them', async () => {
    expect(await extractCommands(project({ 'go.mod': 'module x\n' }))).toEqual(
      set({
        toolchain: 'go',
        detectionSources: ['go.mod'],
        build: 'go build ./...',
        test: { full: 'go test ./...', focusedPattern: 'go test ./{package} -run {TestPrefix}' },
        lint: { check: 'go vet ./...', fix: '' },
        format: { check: '', fix: 'gofmt -w .' },
      }),
    );
    expect(await extractCommands(project({ 'Cargo.toml': '[package]\nname="x"\n' }))).toEqual(
      set({
        toolchain: 'rust',
        detectionSources: ['Cargo.toml'],
        build: 'cargo build',
        test: { full: 'cargo test', focusedPattern: 'cargo test {module_name}' },
        lint: { check: 'cargo clippy -- -D warnings', fix: '' },
        format: { check: 'cargo fmt -- --check', fix: 'cargo fmt' },
      }),
    );
    expect(await extractCommands(project({ 'pyproject.toml': '[project]\nname="x"\n' }))).toEqual(
      set({ toolchain: 'python', detectionSources: ['pyproject.toml'], test: { full: 'pytest', focusedPattern: 'pytest {path}' }, lint: { check: 'ruff check .', fix: '' }, format: { check: '', fix: 'black .' } }),
    );
  });

  it('Node without scripts uses detected tools instead of scripts that do not exist', async () => {
    const result = await extractCommands(project({ 'package.json': '{"name":"x"}', 'tsconfig.json': '{}' }));
    expect(result).toEqual(set({ toolchain: 'node', detectionSources: ['package.json'], build: 'npx tsc --noEmit' }));
  });

  it('package.json (40) < Makefile (50) < GitLab CI (90) < GitHub Actions (100) < polywave.config.json (200)', async () => {
    const files: Record<string, string> = {
      'go.mod': 'module x\n',
      'package.json': '{"scripts":{"test":"jest"}}',
    };
    const root = project(files);
    expect((await extractCommands(root))?.toolchain).toBe('npm');

    writeFileSync(path.join(root, 'Makefile'), 'test:\n\tgo test ./...\n');
    expect((await extractCommands(root))?.detectionSources).toEqual(['Makefile']);

    writeFileSync(path.join(root, '.gitlab-ci.yml'), 'test:\n  script: go test ./...\n');
    expect((await extractCommands(root))?.detectionSources).toEqual(['.gitlab-ci.yml']);

    mkdirSync(path.join(root, '.github', 'workflows'), { recursive: true });
    writeFileSync(path.join(root, '.github', 'workflows', 'ci.yml'), goWorkflow);
    writeFileSync(path.join(root, '.github', 'workflows', 'broken.yaml'), 'jobs: [');
    writeFileSync(path.join(root, '.github', 'workflows', 'release.yml'), 'jobs:\n  r:\n    steps:\n      - run: echo release\n');
    const fromCi = await extractCommands(root, { platform: 'linux' });
    expect(fromCi).toEqual(
      set({
        toolchain: 'go',
        detectionSources: ['.github/workflows/ci.yml'],
        build: 'CGO_ENABLED=0 GOWORK=off go build ./...',
        test: { full: 'CGO_ENABLED=0 GOWORK=off go test -race ./...', focusedPattern: '' },
        lint: { check: 'CGO_ENABLED=1 GOWORK=off go vet ./...', fix: '' },
        format: { check: `CGO_ENABLED=0 GOWORK=off test -z "$(gofmt -l .)"`, fix: '' },
      }),
    );

    writeFileSync(path.join(root, 'polywave.config.json'), JSON.stringify({ repos: [], test_command: 'make test', lintCommand: 'golangci-lint run' }));
    expect(await extractCommands(root)).toEqual(
      set({ toolchain: 'go', detectionSources: ['polywave.config.json'], test: { full: 'make test', focusedPattern: '' }, lint: { check: 'golangci-lint run', fix: '' } }),
    );

    // A malformed config is skipped, as in Go.
    writeFileSync(path.join(root, 'polywave.config.json'), '{oops');
    expect((await extractCommands(root))?.detectionSources).toEqual(['.github/workflows/ci.yml']);
  });

  it('nothing found → undefined', async () => {
    expect(await extractCommands(project({ 'README.md': '# hi\n' }))).toBeUndefined();
    expect(await extractCommands(project({ 'sub/go.mod': 'module x\n' }))).toBeUndefined();
  });
});
