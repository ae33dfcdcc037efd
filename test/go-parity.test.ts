import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { main } from '../src/cli/main.js';
import type { CommandIo } from '../src/cli/io.js';
import { repoRoot } from './support/cli.js';
import { createTestRepo, type TestRepo } from './support/git-repo.js';

// Issue 13, "what it must show" 2: every command the Go reference binary has and we have, run by
// both on the same fixture (two identical real repositories), comparing exit codes and the JSON
// keys (recursively; arrays by the union of their elements' keys). Deliberate differences are
// listed in scripts/compat/parity-exceptions.json and explained in docs/differences.md.
// Skips where ../shared/tools/polywave-tools-go is absent (it is a comparison tool, never a dependency).

const goBinary = path.resolve(repoRoot, '..', 'shared', 'tools', 'polywave-tools-go');
const haveGo = existsSync(goBinary);

interface Exception {
  /** Key paths only polywave prints. */
  extra?: string[];
  /** Go key paths polywave does not print. */
  missing?: string[];
  /** `go:<code> ours:<code>`, when the exit codes differ on purpose. */
  exit?: string;
  /** The outputs are not comparable documents (e.g. Go prints text where we print JSON). */
  format?: string;
  /** Section of docs/differences.md that explains it. */
  doc: string;
}
const exceptions = JSON.parse(readFileSync(path.join(repoRoot, 'scripts', 'compat', 'parity-exceptions.json'), 'utf8')) as Record<string, Exception>;
const differencesDoc = readFileSync(path.join(repoRoot, 'docs', 'differences.md'), 'utf8');

// ---------------------------------------------------------------------------------------------
// fixtures

const manifest = (state: string, extra = '') => `title: Greeting CLI
feature_slug: greet
verdict: SUITABLE
test_command: node -e "process.exit(0)"
lint_command: node -e "process.exit(0)"
state: ${state}
file_ownership:
  - {file: src/cli.ts, agent: A, wave: 1, action: modify}
  - {file: src/extra.ts, agent: B, wave: 1, action: new}
  - {file: src/use.ts, agent: C, wave: 2, action: modify, depends_on: [A]}
interface_contracts:
  - {name: greet, description: greets, definition: "export function greet(name: string): string", location: src/cli.ts}
waves:
  - number: 1
    agents:
      - {id: A, task: "Change \`greet\` in src/cli.ts to use \`helper\`.", files: [src/cli.ts]}
      - {id: B, task: "Create src/extra.ts exporting \`NewExtra\`.", files: [src/extra.ts]}
  - number: 2
    agents:
      - {id: C, task: "Call \`greet\` from src/use.ts.", files: [src/use.ts], dependencies: [A]}
quality_gates:
  level: standard
  gates:
    - {type: build, command: 'node -e "process.exit(0)"', required: true}
    - {type: test, command: 'node -e "process.exit(0)"', required: true}
${extra}`;

const baseFiles: Record<string, string> = {
  'src/cli.ts': 'export function greet(name: string): string {\n  return helper(name);\n}\nfunction helper(name: string): string {\n  return `Hello, ${name}`;\n}\n',
  'src/use.ts': "import { greet } from './cli.js';\nexport const message = greet('world');\n",
  'docs/PROGRAM/PROGRAM-suite.yaml': 'title: Suite\nprogram_slug: suite\nstate: PLANNING\nimpls:\n  - {slug: greet, title: Greeting, tier: 1, status: pending}\ntiers:\n  - {number: 1, impls: [greet]}\ncompletion:\n  tiers_complete: 0\n  tiers_total: 1\n  impls_complete: 0\n  impls_total: 1\n  total_agents: 3\n  total_waves: 2\n',
  'pkg/result/codes.go': '// Package result\n//\n//\tV001-V099: Validation errors\n//\tQ001-Q099: Queue errors\npackage result\n',
  'go.mod': 'module example.com/greet\n\ngo 1.22\n',
  'scaffold.go': 'package greet\n\nimport "fmt"\n\nfunc Hello() string { return fmt.Sprint("hi") }\n',
  'build.log': './main.go:5:2: "os" imported and not used\n',
  'REQUIREMENTS.md': '## F1: greeting\nLocation: src/cli.ts\n',
  // An E20 hit for scan-stubs (a text file: no language scanner looks at it).
  'notes/stub.txt': 'step one\n// TODO: finish step two\n',
  // An IMPL without a build gate: validate-scaffold then uses the repository's detected build command, as Go does.
  'docs/IMPL/IMPL-plain.yaml': 'title: Plain\nfeature_slug: plain\nverdict: SUITABLE\ntest_command: "true"\nlint_command: "true"\nstate: COMPLETE\nfile_ownership:\n  - {file: scaffold.go, agent: A, wave: 1, action: new}\n  - {file: other.go, agent: B, wave: 1, action: new}\nwaves:\n  - number: 1\n    agents:\n      - {id: A, task: a, files: [scaffold.go]}\n      - {id: B, task: b, files: [other.go]}\n',
};

type FixtureKind = 'plain' | 'critic' | 'wave1' | 'finished';

/** The agents' branches and worktrees of wave 1 with a commit each (E5 names, as both tools use). */
async function addWaveOne(repo: TestRepo): Promise<Record<string, string>> {
  const commits: Record<string, string> = {};
  for (const [agent, file, text] of [['A', 'src/cli.ts', `${baseFiles['src/cli.ts']}export const version = 2;\n`], ['B', 'src/extra.ts', 'export function NewExtra(): number {\n  return 1;\n}\n']] as const) {
    const worktree = repo.path(`.claude/worktrees/polywave/greet/wave1-agent-${agent}`);
    mkdirSync(path.dirname(worktree), { recursive: true });
    await repo.git.worktreeAdd({ path: worktree, branch: `polywave/greet/wave1-agent-${agent}`, base: 'HEAD', createBranch: true });
    writeFileSync(path.join(worktree, file), text);
    const run = (args: string[]) => spawnSync('git', args, { cwd: worktree, env: repo.env as NodeJS.ProcessEnv, encoding: 'utf8' });
    run(['add', '-A']);
    run(['commit', '-q', '--no-verify', '-m', `agent ${agent}`]);
    commits[agent] = run(['rev-parse', 'HEAD']).stdout.trim();
  }
  return commits;
}

const report = (agent: string, commit: string, files: string) => `  ${agent}: {status: complete, commit: ${commit}, branch: polywave/greet/wave1-agent-${agent}, files_changed: [${files}], verification: PASS}\n`;

/** A fixture repository: `<root>/repo` (root is also HOME for both tools), with what the scenarios' arguments name. */
interface Side {
  root: string;
  dir: string;
  env: Record<string, string | undefined>;
  impl: string;
  worktree: string;
  head: string;
}

async function fixture(kind: FixtureKind): Promise<{ repo: TestRepo; impl: string; worktree: string }> {
  const repo = await createTestRepo({ files: { ...baseFiles, 'docs/IMPL/IMPL-greet.yaml': manifest('WAVE_PENDING', kind === 'critic' ? 'critic_report:\n  verdict: ISSUES\n  summary: fix\n  issue_count: 1\n' : '') } });
  const impl = repo.path('docs/IMPL/IMPL-greet.yaml');
  const worktree = repo.path('.claude/worktrees/polywave/greet/wave1-agent-A');
  if (kind === 'wave1' || kind === 'finished') {
    const commits = await addWaveOne(repo);
    if (kind === 'wave1') {
      writeFileSync(impl, manifest('WAVE_EXECUTING', `completion_reports:\n${report('A', commits.A!, 'src/cli.ts')}${report('B', commits.B!, 'src/extra.ts')}`));
      await repo.commitAll('wave 1 reports');
    } else {
      for (const agent of ['A', 'B']) await repo.run(['merge', '--no-ff', '-q', '-m', `merge ${agent}`, `polywave/greet/wave1-agent-${agent}`]);
      const head = (await repo.run(['rev-parse', 'HEAD'])).trim();
      writeFileSync(impl, manifest('WAVE_VERIFIED', `completion_reports:\n${report('A', commits.A!, 'src/cli.ts')}${report('B', commits.B!, 'src/extra.ts')}  C: {status: complete, commit: ${head}, files_changed: [src/use.ts], verification: PASS}\n`));
      await repo.commitAll('verified');
    }
  }
  return { repo, impl, worktree };
}

/** Builds a fixture of each kind once (the template); scenarios get copies. */
async function template(kind: FixtureKind): Promise<Side> {
  const { repo, impl, worktree } = await fixture(kind);
  return { root: repo.root, dir: repo.dir, env: repo.env, impl, worktree, head: (await repo.run(['rev-parse', 'HEAD'])).trim() };
}

/**
 * A fresh, pristine copy of a template, removed when the test finishes: the same commits, branches,
 * worktrees and files as a newly built fixture. Linked worktrees store absolute paths (the
 * worktree's `.git` file and `.git/worktrees/<name>/gitdir`): those two are pointed at the copy
 * (`git worktree repair` cannot be used: from a copy it follows the old links and rewrites the
 * template's). The index of each checkout is refreshed, since a copy has new inodes and ctimes.
 */
function copyOf(source: Side): Side {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'polywave-parity-')));
  onTestFinished(() => rmSync(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 }));
  cpSync(source.root, root, { recursive: true, verbatimSymlinks: true });
  const moved = (file: string) => path.join(root, path.relative(source.root, file));
  const dir = moved(source.dir);
  const admin = path.join(dir, '.git', 'worktrees');
  const checkouts = [dir];
  for (const name of existsSync(admin) ? readdirSync(admin) : []) {
    const gitdirFile = path.join(admin, name, 'gitdir');
    const dotGit = moved(readFileSync(gitdirFile, 'utf8').trim());
    writeFileSync(gitdirFile, `${dotGit}\n`);
    writeFileSync(dotGit, `gitdir: ${path.join(admin, name)}\n`);
    checkouts.push(path.dirname(dotGit));
  }
  const git = (cwd: string, args: string[]) => {
    const result = spawnSync('git', args, { cwd, env: source.env as NodeJS.ProcessEnv, encoding: 'utf8' });
    if (result.status !== 0) throw new Error(`git ${args.join(' ')} in ${cwd}: ${result.stderr}`);
    return result.stdout;
  };
  for (const checkout of checkouts) git(checkout, ['update-index', '-q', '--refresh']);
  if (checkouts.length > 1) {
    const listed = git(dir, ['worktree', 'list', '--porcelain']).split('\n').filter((line) => line.startsWith('worktree ')).map((line) => line.slice('worktree '.length));
    if (listed.join('\n') !== checkouts.join('\n')) throw new Error(`copy of ${source.dir}: worktrees ${listed.join(', ')} are not the copy's ${checkouts.join(', ')}`);
  }
  return { root, dir, env: source.env, impl: moved(source.impl), worktree: moved(source.worktree), head: source.head };
}

// ---------------------------------------------------------------------------------------------
// running both tools

interface Outcome {
  code: number;
  stdout: string;
}

function runGo(args: string[], cwd: string, env: Record<string, string | undefined>): Outcome {
  const result = spawnSync(goBinary, args, { cwd, env: env as NodeJS.ProcessEnv, encoding: 'utf8', timeout: 120_000 });
  return { code: result.status ?? -1, stdout: result.stdout };
}

async function runOurs(args: string[], cwd: string, env: Record<string, string | undefined>): Promise<Outcome> {
  let stdout = '';
  const io: CommandIo = { cwd, env, now: () => new Date(), stdout: (text) => (stdout += text), stderr: () => undefined, readStdin: async () => '' };
  return { code: await main(args, io), stdout };
}

/** Key paths of a JSON value: `a`, `a.b`, `list[].c`, … (dynamic map keys included as they come). */
function keyPaths(value: unknown, prefix = ''): Set<string> {
  const paths = new Set<string>();
  if (Array.isArray(value)) {
    for (const item of value) for (const nested of keyPaths(item, `${prefix}[]`)) paths.add(nested);
  } else if (value !== null && typeof value === 'object') {
    for (const [key, nested] of Object.entries(value)) {
      const here = prefix === '' ? key : `${prefix}.${key}`;
      paths.add(here);
      for (const deeper of keyPaths(nested, here)) paths.add(deeper);
    }
  }
  return paths;
}

/** Does an exception pattern cover a key path (`steps*` covers `steps`, `steps[].step`, …)? */
function covers(pattern: string, key: string): boolean {
  return pattern.endsWith('*') ? key.startsWith(pattern.slice(0, -1)) : key === pattern;
}

/** The document a command printed: JSON (first `{`/`[` line on: Go logs lines before it on some commands), else YAML. */
function document(stdout: string, format: 'json' | 'yaml'): unknown {
  if (format === 'yaml') return parseYaml(stdout) as unknown;
  const start = stdout.search(/^[[{]/m);
  return JSON.parse(start >= 0 ? stdout.slice(start) : stdout) as unknown;
}

interface Scenario {
  /** The compat table's command name. */
  command: string;
  fixture: FixtureKind;
  args: (context: { impl: string; worktree: string; head: string; dir: string }) => string[];
  format?: 'json' | 'yaml' | 'text';
  /** Run from the directory above the repository (with `--repo-dir` in args) instead of in it. */
  outside?: boolean;
  /** Top-level keys whose JSON type must be Go's (a number stays a number). */
  types?: string[];
  /** Top-level keys whose values must be Go's (each side's fixture root written as `<root>`). */
  same?: string[];
}

const scenarios: Scenario[] = [
  { command: 'analyze-suitability', fixture: 'plain', args: () => ['analyze-suitability', '--requirements', 'REQUIREMENTS.md'] },
  { command: 'check-test-cascade', fixture: 'plain', args: ({ impl }) => ['check-test-cascade', impl] },
  { command: 'detect-scaffolds', fixture: 'plain', args: ({ impl }) => ['detect-scaffolds', impl, '--stage', 'pre-agent'] },
  { command: 'detect-shared-types', fixture: 'plain', args: ({ impl }) => ['detect-shared-types', impl, '--format', 'json'] },
  { command: 'detect-wiring', fixture: 'plain', args: ({ impl }) => ['detect-wiring', impl, '--format', 'json'] },
  { command: 'check-callers', fixture: 'plain', args: () => ['check-callers', 'greet'] },
  { command: 'analyze-deps', fixture: 'plain', args: () => ['analyze-deps', '.', '--files', 'src/cli.ts', '--format', 'json'] },
  { command: 'detect-cascades', fixture: 'plain', args: () => ['detect-cascades', '.', '--renames', '[{"old":"greet","new":"hello","scope":"src"}]'], format: 'text' },
  { command: 'interview', fixture: 'plain', args: ({ impl }) => ['interview', '--resume', impl], format: 'text' },
  { command: 'solve', fixture: 'plain', args: ({ impl }) => ['solve', impl, '--dry-run'], format: 'text' },
  { command: 'suggest-wave-structure', fixture: 'plain', args: ({ impl }) => ['suggest-wave-structure', impl] },
  { command: 'agent-status', fixture: 'wave1', args: ({ impl }) => ['agent-status', impl, '--json'] },
  { command: 'amend-impl', fixture: 'plain', args: ({ impl }) => ['amend-impl', impl, '--add-wave'] },
  { command: 'assign-agent-ids', fixture: 'plain', args: () => ['assign-agent-ids', '--count', '3'], format: 'text' },
  { command: 'build-retry-context', fixture: 'wave1', args: ({ impl }) => ['build-retry-context', impl, '--agent', 'A'] },
  { command: 'check-completion', fixture: 'wave1', args: ({ impl }) => ['check-completion', impl, '--agent', 'A'] },
  { command: 'check-conflicts', fixture: 'wave1', args: ({ impl }) => ['check-conflicts', impl] },
  { command: 'check-deps', fixture: 'plain', args: ({ impl }) => ['check-deps', impl, '--wave', '1'] },
  { command: 'check-impl-conflicts', fixture: 'plain', args: () => ['check-impl-conflicts', '--impls', 'greet'] },
  { command: 'check-program-conflicts', fixture: 'plain', args: () => ['check-program-conflicts', 'docs/PROGRAM/PROGRAM-suite.yaml', '--tier', '1'] },
  { command: 'check-type-collisions', fixture: 'wave1', args: ({ impl }) => ['check-type-collisions', impl, '--wave', '1'] },
  { command: 'cleanup', fixture: 'finished', args: ({ impl }) => ['cleanup', impl, '--wave', '1'] },
  { command: 'cleanup-stale', fixture: 'wave1', args: () => ['cleanup-stale', '--all', '--dry-run'] },
  { command: 'close-impl', fixture: 'finished', args: ({ impl }) => ['close-impl', impl, '--date', '2026-01-02'] },
  { command: 'create-program', fixture: 'plain', args: () => ['create-program', '--from-impls', 'greet,plain'] },
  { command: 'create-program-worktrees', fixture: 'plain', args: () => ['create-program-worktrees', 'docs/PROGRAM/PROGRAM-suite.yaml', '--tier', '1'] },
  { command: 'create-worktrees', fixture: 'plain', args: ({ impl }) => ['create-worktrees', impl, '--wave', '1'] },
  { command: 'diagnose-build-failure', fixture: 'plain', args: () => ['diagnose-build-failure', 'build.log', '--language', 'go'], format: 'yaml' },
  { command: 'extract-commands', fixture: 'plain', args: () => ['extract-commands', '.', '--format', 'json'] },
  { command: 'extract-context', fixture: 'plain', args: ({ impl }) => ['extract-context', impl, '--agent', 'A'] },
  { command: 'finalize-scout', fixture: 'plain', args: ({ impl }) => ['finalize-scout', impl] },
  { command: 'freeze-check', fixture: 'plain', args: ({ impl }) => ['freeze-check', impl] },
  { command: 'freeze-contracts', fixture: 'plain', args: () => ['freeze-contracts', 'docs/PROGRAM/PROGRAM-suite.yaml', '--tier', '1'] },
  { command: 'install-hooks', fixture: 'plain', args: () => ['install-hooks'], format: 'text' },
  { command: 'journal-init', fixture: 'plain', args: ({ impl }) => ['journal-init', impl, '--wave', '1', '--agent', 'A'] },
  { command: 'list-error-ranges', fixture: 'plain', args: () => ['list-error-ranges'] },
  { command: 'list-impls', fixture: 'plain', args: () => ['list-impls'] },
  { command: 'list-programs', fixture: 'plain', args: () => ['list-programs'] },
  { command: 'mark-complete', fixture: 'finished', args: ({ impl }) => ['mark-complete', impl, '--date', '2026-01-02'] },
  { command: 'merge-agents', fixture: 'wave1', args: ({ impl }) => ['merge-agents', impl, '--wave', '1'] },
  { command: 'populate-integration-checklist', fixture: 'plain', args: ({ impl }) => ['populate-integration-checklist', impl] },
  { command: 'pre-commit-check', fixture: 'plain', args: () => ['pre-commit-check'], format: 'text' },
  { command: 'pre-wave-gate', fixture: 'plain', args: ({ impl }) => ['pre-wave-gate', impl] },
  { command: 'pre-wave-validate', fixture: 'plain', args: ({ impl }) => ['pre-wave-validate', impl, '--wave', '1'] },
  { command: 'predict-conflicts', fixture: 'wave1', args: ({ impl }) => ['predict-conflicts', impl, '--wave', '1'], types: ['conflicts_detected'], same: ['conflicts_detected'] },
  { command: 'queue', fixture: 'plain', args: () => ['queue', 'list'] },
  { command: 'queue add', fixture: 'plain', args: () => ['queue', 'add', '--title', 'Dark mode'] },
  { command: 'queue list', fixture: 'plain', args: () => ['queue', 'list'] },
  { command: 'queue next', fixture: 'plain', args: () => ['queue', 'next'] },
  { command: 'reconcile-state', fixture: 'wave1', args: ({ impl }) => ['reconcile-state', impl] },
  // From outside the repository: the slug is looked up under the global --repo-dir, as Go does.
  { command: 'resolve-impl', fixture: 'plain', args: ({ dir }) => ['--repo-dir', dir, 'resolve-impl', '--impl', 'greet'], outside: true, same: ['impl_path', 'slug', 'resolution_method'] },
  { command: 'resume-detect', fixture: 'wave1', args: () => ['resume-detect'] },
  { command: 'retry', fixture: 'plain', args: ({ impl }) => ['retry', impl, '--wave', '1', '--gate-type', 'build', '--max-retries', '0'] },
  { command: 'run-gates', fixture: 'plain', args: ({ impl }) => ['run-gates', impl] },
  { command: 'run-integration-wave', fixture: 'plain', args: ({ impl }) => ['run-integration-wave', impl, '--wave', '1'] },
  // A deleted file (as a diff's file list names it) and a directory are skipped, as Go skips them.
  { command: 'scan-stubs', fixture: 'plain', args: () => ['scan-stubs', 'notes/stub.txt', 'src/gone.ts', 'src', 'src/cli.ts'], same: ['hits'] },
  { command: 'set-completion', fixture: 'plain', args: ({ impl, head }) => ['set-completion', impl, '--agent', 'A', '--status', 'complete', '--commit', head, '--files-changed', 'src/cli.ts', '--verification', 'PASS'] },
  { command: 'set-critic-verdict', fixture: 'critic', args: ({ impl }) => ['set-critic-verdict', impl, '--verdict', 'pass'] },
  { command: 'set-impl-state', fixture: 'plain', args: ({ impl }) => ['set-impl-state', impl, '--state', 'WAVE_EXECUTING'] },
  { command: 'set-injection-method', fixture: 'plain', args: ({ impl }) => ['set-injection-method', impl, '--method', 'hook'] },
  { command: 'tier-gate', fixture: 'plain', args: () => ['tier-gate', 'docs/PROGRAM/PROGRAM-suite.yaml', '--tier', '1'] },
  { command: 'update-context', fixture: 'finished', args: ({ impl }) => ['update-context', impl] },
  { command: 'update-agent-prompt', fixture: 'plain', args: ({ impl }) => ['update-agent-prompt', impl, '--agent', 'A', '--prompt', 'Change `greet` in src/cli.ts.'] },
  { command: 'update-program-impl', fixture: 'plain', args: () => ['update-program-impl', 'docs/PROGRAM/PROGRAM-suite.yaml', '--impl', 'greet', '--status', 'scouting'] },
  { command: 'update-program-state', fixture: 'plain', args: () => ['update-program-state', 'docs/PROGRAM/PROGRAM-suite.yaml', '--state', 'VALIDATING'] },
  { command: 'update-status', fixture: 'wave1', args: ({ impl }) => ['update-status', impl, '--wave', '1', '--agent', 'A', '--status', 'complete'] },
  { command: 'validate', fixture: 'plain', args: ({ impl }) => ['validate', impl] },
  { command: 'validate-briefs', fixture: 'plain', args: ({ impl }) => ['validate-briefs', impl] },
  { command: 'validate-integration', fixture: 'wave1', args: ({ impl }) => ['validate-integration', impl, '--wave', '1'] },
  { command: 'validate-program', fixture: 'plain', args: () => ['validate-program', 'docs/PROGRAM/PROGRAM-suite.yaml'] },
  { command: 'validate-scaffold', fixture: 'plain', args: () => ['validate-scaffold', 'scaffold.go', '--impl-doc', 'docs/IMPL/IMPL-plain.yaml'], format: 'yaml' },
  { command: 'validate-scaffolds', fixture: 'plain', args: ({ impl }) => ['validate-scaffolds', impl] },
  { command: 'verify-build', fixture: 'plain', args: ({ impl }) => ['verify-build', impl] },
  { command: 'verify-commits', fixture: 'wave1', args: ({ impl }) => ['verify-commits', impl, '--wave', '1'] },
  { command: 'verify-hook-installed', fixture: 'wave1', args: ({ worktree }) => ['verify-hook-installed', worktree] },
  { command: 'verify-isolation', fixture: 'wave1', args: ({ worktree }) => ['verify-isolation', '--branch', 'polywave/greet/wave1-agent-A', '--cwd', worktree] },
  { command: 'version', fixture: 'plain', args: () => ['version'], format: 'text' },
];

describe('exception list stays true', () => {
  it('every exception names a scenario and is explained in docs/differences.md', () => {
    const names = new Set(scenarios.map((scenario) => scenario.command));
    for (const [command, exception] of Object.entries(exceptions)) {
      expect(names.has(command), `${command}: no such scenario`).toBe(true);
      expect(differencesDoc.includes(exception.doc), `${command}: docs/differences.md has no "${exception.doc}"`).toBe(true);
    }
  });

  it('every present Go command of the binary has a scenario', () => {
    const compat = JSON.parse(readFileSync(path.join(repoRoot, 'docs', 'compat.json'), 'utf8')) as { rows: Array<{ command: string; status: string; source: string }> };
    const shared = compat.rows.filter((row) => row.status === 'present' && row.source === 'binary').map((row) => row.command).sort();
    expect(scenarios.map((scenario) => scenario.command).sort()).toEqual(shared);
  });
});

describe.skipIf(!haveGo)('JSON keys and exit codes: polywave vs the Go polywave-tools on the same fixture', () => {
  // Each fixture kind is built once; every scenario runs each tool on its own fresh copy (many commands write).
  const templates = new Map<FixtureKind, Side>();
  beforeAll(async () => {
    for (const kind of ['plain', 'critic', 'wave1', 'finished'] as const) templates.set(kind, await template(kind));
  });

  it.each(scenarios.map((scenario) => [scenario.command, scenario] as const))('%s', async (_name, scenario) => {
    const goSide = copyOf(templates.get(scenario.fixture)!);
    const ourSide = copyOf(templates.get(scenario.fixture)!);
    const env = (side: Side) => ({ ...side.env, HOME: side.root, NO_COLOR: '1' });
    const go = runGo(scenario.args(goSide), scenario.outside ? goSide.root : goSide.dir, env(goSide));
    const ours = await runOurs(scenario.args(ourSide), scenario.outside ? ourSide.root : ourSide.dir, env(ourSide));
    const exception = exceptions[scenario.command];
    const label = `${scenario.command}\ngo (exit ${go.code}): ${go.stdout.slice(0, 1500)}\nours (exit ${ours.code}): ${ours.stdout.slice(0, 1500)}`;

    if (exception?.exit) expect(`go:${go.code} ours:${ours.code}`, label).toBe(exception.exit);
    else expect(ours.code, label).toBe(go.code);

    const format = scenario.format ?? 'json';
    // Not comparable documents (documented): only the exit codes above are compared.
    if (exception?.format) return;
    if (format === 'text') {
      expect(go.stdout.trim() === '', label).toBe(ours.stdout.trim() === '');
      return;
    }
    const goDocument = document(go.stdout, format) as Record<string, unknown>;
    const ourDocument = document(ours.stdout, format) as Record<string, unknown>;
    const kind = (value: unknown) => (value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value);
    for (const key of scenario.types ?? []) expect(`${key}: ${kind(ourDocument[key])}`, label).toBe(`${key}: ${kind(goDocument[key])}`);
    const rooted = (value: unknown, side: Side) => JSON.parse(JSON.stringify(value ?? null).split(side.root).join('<root>')) as unknown;
    for (const key of scenario.same ?? []) expect(rooted(ourDocument[key], ourSide), `${label}\nkey ${key}`).toEqual(rooted(goDocument[key], goSide));
    const goKeys = keyPaths(goDocument);
    const ourKeys = keyPaths(ourDocument);
    const extra = [...ourKeys].filter((key) => !goKeys.has(key)).sort();
    const missing = [...goKeys].filter((key) => !ourKeys.has(key)).sort();
    // Documented keys (a pattern ending in `*` covers a whole subtree) are allowed — and must occur, so the list stays true.
    const unexplained = (keys: string[], patterns: string[] = []) => keys.filter((key) => !patterns.some((pattern) => covers(pattern, key)));
    const unused = (keys: string[], patterns: string[] = []) => patterns.filter((pattern) => !keys.some((key) => covers(pattern, key)));
    expect({ extra: unexplained(extra, exception?.extra), missing: unexplained(missing, exception?.missing) }, label).toEqual({ extra: [], missing: [] });
    expect({ extra: unused(extra, exception?.extra), missing: unused(missing, exception?.missing) }, `${label}\nexceptions that no longer apply`).toEqual({ extra: [], missing: [] });
  });
});
