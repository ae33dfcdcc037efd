/**
 * check-callers, analyze-deps and detect-cascades (issue 15) on the per-language fixtures
 * (test/fixtures/analysis/<lang>/, each copied into a temporary git repository and committed),
 * through the CLI's main() in this process (test/support/cli-in-process.ts: same commander, command
 * table and error line as the binary; the WASM grammars stay compiled between calls) and, for the
 * claims about the process (bad input: one coded line, exit 2, no stack trace; the exact bytes of
 * the YAML layout), the real binary. Every answer is asserted exactly; the fixtures are small enough
 * to check each one by hand:
 *  - callers through aliased imports (`as build`), re-exports under another name (`createWidget`,
 *    `create_widget`), method calls (`store.add`), package-qualified calls (`m.MakeWidget`) and
 *    test files; never `makeWidgetFactory`, strings or comments;
 *  - dependency depth/waves, cascade candidates (importers outside --files), cycles (exit 1);
 *  - rename cascades: definitions, imports, references (syntax) and comment/string mentions (semantic).
 * Run `npm run build` first.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { repoRoot, runCli, type CliResult } from './support/cli.js';
import { runCliInProcess } from './support/cli-in-process.js';
import { expectCodedError } from './support/cli-assert.js';
import { analysisFixtureRepo, type AnalysisFixture } from './support/analysis-fixture.js';
import { createTestRepo, type TestRepo } from './support/git-repo.js';
import { dependencyDepths, findCycle } from '../src/cli/commands/analyze-deps.js';
import { engineCounters, rustTestFacts } from '../src/analysis/engine/index.js';

interface Caller {
  file: string;
  line: number;
  context: string;
  column: number;
  kind: string;
  via?: string;
}

/** `check-callers <args…>` in `dir` through the in-process CLI, as {@link callers} lines. */
function checkCallersIn(dir: string): (...args: string[]) => Promise<string[]> {
  return async (...args) => callers(await runCliInProcess(['check-callers', ...args], { cwd: dir }));
}

function callers(result: CliResult): string[] {
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  return (JSON.parse(result.stdout) as Caller[]).map((caller) => `${caller.file}:${caller.line}:${caller.column} ${caller.kind}${caller.via ? ` via ${caller.via}` : ''}`);
}

/** `file:line` of each reference a JSON check-callers answer lists. */
function fileLines(result: CliResult): string[] {
  return (JSON.parse(result.stdout) as Array<{ file: string; line: number }>).map((reference) => `${reference.file}:${reference.line}`);
}

/**
 * `check-callers <symbol> --defined-in <file> --format json` in `dir` (exit 0, nothing on stderr): `file:line` of each
 * reference, or `file:line:column` with `columns`.
 */
async function definedInCallers(dir: string, symbol: string, definedIn: string, columns = false): Promise<string[]> {
  const result = await runCliInProcess(['check-callers', symbol, '--defined-in', definedIn, '--format', 'json'], { cwd: dir });
  expect([result.code, result.stderr]).toEqual([0, '']);
  return (JSON.parse(result.stdout) as Array<{ file: string; line: number; column: number }>).map((reference) => `${reference.file}:${reference.line}${columns ? `:${reference.column}` : ''}`);
}

/** check-test-cascade's stops (exit 1) as `symbol test_file:line`. */
// The Rust crate `tc` of the check-test-cascade cases: its manifest, and an IMPL whose agent A changes `parse()` in src/util.rs.
const tcCargo = '[package]\nname = "tc"\nversion = "0.1.0"\nedition = "2021"\n';
const tcImpl = 'title: t\nfeature_slug: tc\nverdict: SUITABLE\nfile_ownership:\n  - file: src/util.rs\n    agent: A\n    wave: 1\nwaves:\n  - number: 1\n    agents:\n      - id: A\n        task: "Change `parse()` to take a `&str` parameter."\n';

async function testCascadeLines(dir: string, implPath: string): Promise<string[]> {
  const result = await runCliInProcess(['check-test-cascade', implPath, '--repo-dir', dir]);
  expect(result.code, result.stderr).toBe(1);
  return (JSON.parse(result.stdout) as Array<{ symbol: string; test_file: string; line: number }>).map((error) => `${error.symbol} ${error.test_file}:${error.line}`);
}

function cascades(result: CliResult): string[] {
  expect(result.code).toBe(0);
  const parsed = JSON.parse(result.stdout) as { cascade_candidates: Array<{ file: string; line: number; cascade_type: string; severity: string; match: string; reason: string }> };
  return parsed.cascade_candidates.map((candidate) => `${candidate.file}:${candidate.line} ${candidate.cascade_type} ${candidate.severity} ${candidate.match}`);
}

interface LanguageCase {
  lang: AnalysisFixture;
  symbol: string;
  definedIn: string;
  callers: string[];
  method: string;
  methodCallers: string[];
  files: string;
  deps: unknown;
  cycle: string;
  cycleMessage: string;
  renamed: string;
  cascades: string[];
}

const cases: LanguageCase[] = [
  {
    lang: 'ts',
    symbol: 'makeWidget',
    definedIn: 'src/model.ts',
    callers: [
      'src/app.ts:1:10 import via createWidget',
      'src/app.ts:5:40 call via createWidget',
      'src/index.ts:1:10 reexport',
      'src/service.ts:1:10 import',
      'src/service.ts:7:18 call via build',
      'test/model.test.ts:1:10 import',
      'test/model.test.ts:3:1 call',
    ],
    method: 'add',
    methodCallers: ['src/service.ts:8:9 method-call'],
    files: 'src/model.ts,src/index.ts,src/service.ts,src/app.ts',
    deps: {
      nodes: [
        { file: 'src/app.ts', depends_on: ['src/index.ts', 'src/model.ts', 'src/service.ts'], depended_by: [], wave_candidate: 2 },
        { file: 'src/index.ts', depends_on: ['src/model.ts'], depended_by: ['src/app.ts'], wave_candidate: 1 },
        { file: 'src/model.ts', depends_on: [], depended_by: ['src/app.ts', 'src/index.ts', 'src/service.ts'], wave_candidate: 0 },
        { file: 'src/service.ts', depends_on: ['src/model.ts'], depended_by: ['src/app.ts'], wave_candidate: 1 },
      ],
      waves: { '1': ['src/model.ts'], '2': ['src/index.ts', 'src/service.ts'], '3': ['src/app.ts'] },
      cascade_candidates: [{ file: 'test/model.test.ts', reason: 'imports src/model.ts', type: 'importer' }],
    },
    cycle: 'cycle/a.ts,cycle/b.ts,src/model.ts',
    cycleMessage: 'circular dependency detected: cycle/a.ts -> cycle/b.ts -> cycle/a.ts',
    renamed: 'Widget',
    cascades: [
      'src/model.ts:1 syntax high Widget',
      'src/model.ts:5 syntax medium Widget',
      'src/model.ts:10 syntax medium Widget',
      'src/service.ts:1 syntax high Widget',
      'src/service.ts:6 syntax medium Widget',
    ],
  },
  {
    lang: 'js',
    symbol: 'makeWidget',
    definedIn: 'src/model.js',
    callers: [
      'src/app.jsx:1:10 import via createWidget',
      'src/app.jsx:4:32 call via createWidget',
      'src/index.js:1:10 reexport',
      'src/legacy.cjs:3:40 method-call',
      'src/service.mjs:1:10 import',
      'src/service.mjs:6:20 call via build',
      'test/model.test.js:1:10 import',
      'test/model.test.js:3:1 call',
    ],
    method: 'add',
    methodCallers: ['src/service.mjs:6:16 method-call'],
    files: 'src/model.js,src/index.js,src/service.mjs,src/legacy.cjs,src/app.jsx',
    deps: {
      nodes: [
        { file: 'src/app.jsx', depends_on: ['src/index.js', 'src/service.mjs'], depended_by: [], wave_candidate: 2 },
        { file: 'src/index.js', depends_on: ['src/model.js'], depended_by: ['src/app.jsx'], wave_candidate: 1 },
        { file: 'src/legacy.cjs', depends_on: ['src/model.js'], depended_by: [], wave_candidate: 1 },
        { file: 'src/model.js', depends_on: [], depended_by: ['src/index.js', 'src/legacy.cjs', 'src/service.mjs'], wave_candidate: 0 },
        { file: 'src/service.mjs', depends_on: ['src/model.js'], depended_by: ['src/app.jsx'], wave_candidate: 1 },
      ],
      waves: { '1': ['src/model.js'], '2': ['src/index.js', 'src/legacy.cjs', 'src/service.mjs'], '3': ['src/app.jsx'] },
      cascade_candidates: [{ file: 'test/model.test.js', reason: 'imports src/model.js', type: 'importer' }],
    },
    cycle: 'cycle/a.js,cycle/b.js',
    cycleMessage: 'circular dependency detected: cycle/a.js -> cycle/b.js -> cycle/a.js',
    renamed: 'WidgetStore',
    cascades: ['src/model.js:5 syntax high WidgetStore', 'src/service.mjs:1 syntax high WidgetStore', 'src/service.mjs:5 syntax medium WidgetStore'],
  },
  {
    lang: 'go',
    symbol: 'MakeWidget',
    definedIn: 'model/model.go',
    callers: ['model/model_test.go:6:5 call', 'service/service.go:7:9 call'],
    method: 'Add',
    methodCallers: ['service/service.go:8:4 method-call'],
    files: 'model/model.go,service/service.go,cmd/main.go',
    deps: {
      nodes: [
        { file: 'cmd/main.go', depends_on: ['model/model.go', 'service/service.go'], depended_by: [], wave_candidate: 2 },
        { file: 'model/model.go', depends_on: [], depended_by: ['cmd/main.go', 'service/service.go'], wave_candidate: 0 },
        { file: 'service/service.go', depends_on: ['model/model.go'], depended_by: ['cmd/main.go'], wave_candidate: 1 },
      ],
      waves: { '1': ['model/model.go'], '2': ['service/service.go'], '3': ['cmd/main.go'] },
    },
    cycle: 'cyc/a/a.go,cyc/b/b.go',
    cycleMessage: 'circular dependency detected: cyc/a/a.go -> cyc/b/b.go -> cyc/a/a.go',
    renamed: 'Widget',
    cascades: [
      'model/model.go:3 semantic low // Widget is the shared type.',
      'model/model.go:4 syntax high Widget',
      'model/model.go:10 syntax medium Widget',
      'model/model.go:13 semantic low // MakeWidget builds a Widget.',
      'model/model.go:14 syntax medium Widget',
      'model/model.go:15 syntax medium Widget',
      'model/model.go:19 syntax medium Widget',
      'service/service.go:6 syntax medium Widget',
    ],
  },
  {
    lang: 'python',
    symbol: 'make_widget',
    definedIn: 'shop/model.py',
    callers: ['shop/app.py:6:48 call', 'shop/service.py:1:20 import', 'shop/service.py:8:14 call via build', 'tests/test_model.py:1:24 import', 'tests/test_model.py:5:12 call'],
    method: 'add',
    methodCallers: ['shop/service.py:9:11 method-call'],
    files: 'shop/model.py,shop/service.py,shop/app.py',
    deps: {
      nodes: [
        { file: 'shop/app.py', depends_on: ['shop/model.py', 'shop/service.py'], depended_by: [], wave_candidate: 2 },
        { file: 'shop/model.py', depends_on: [], depended_by: ['shop/app.py', 'shop/service.py'], wave_candidate: 0 },
        { file: 'shop/service.py', depends_on: ['shop/model.py'], depended_by: ['shop/app.py'], wave_candidate: 1 },
      ],
      waves: { '1': ['shop/model.py'], '2': ['shop/service.py'], '3': ['shop/app.py'] },
      cascade_candidates: [{ file: 'tests/test_model.py', reason: 'imports shop/model.py', type: 'importer' }],
    },
    cycle: 'cyc/a.py,cyc/b.py',
    cycleMessage: 'circular dependency detected: cyc/a.py -> cyc/b.py -> cyc/a.py',
    renamed: 'Widget',
    cascades: [
      'shop/model.py:1 syntax high Widget',
      'shop/model.py:6 syntax medium Widget',
      'shop/model.py:7 syntax medium Widget',
      'shop/model.py:11 syntax medium Widget',
      'shop/service.py:1 syntax high Widget',
      'shop/service.py:7 syntax medium Widget',
    ],
  },
  {
    lang: 'rust',
    symbol: 'make_widget',
    definedIn: 'src/model.rs',
    callers: [
      'src/lib.rs:6:16 reexport',
      'src/service.rs:1:20 import',
      'src/service.rs:5:18 call via build',
      'src/service.rs:6:15 call via build',
      'tests/model_test.rs:1:18 import',
      // Inside a macro's token tree (`assert_eq!(make_widget(…))`): an identifier, not a parsed call.
      'tests/model_test.rs:5:16 other',
    ],
    method: 'add',
    methodCallers: ['src/service.rs:6:11 method-call'],
    files: 'src/lib.rs,src/model.rs,src/service.rs',
    deps: {
      nodes: [
        { file: 'src/lib.rs', depends_on: ['src/model.rs', 'src/service.rs'], depended_by: [], wave_candidate: 2 },
        { file: 'src/model.rs', depends_on: [], depended_by: ['src/lib.rs', 'src/service.rs'], wave_candidate: 0 },
        { file: 'src/service.rs', depends_on: ['src/model.rs'], depended_by: ['src/lib.rs'], wave_candidate: 1 },
      ],
      waves: { '1': ['src/model.rs'], '2': ['src/service.rs'], '3': ['src/lib.rs'] },
      cascade_candidates: [{ file: 'tests/model_test.rs', reason: 'imports src/model.rs', type: 'importer' }],
    },
    cycle: 'src/cyc_a.rs,src/cyc_b.rs',
    cycleMessage: 'circular dependency detected: src/cyc_a.rs -> src/cyc_b.rs -> src/cyc_a.rs',
    renamed: 'Widget',
    cascades: [
      'src/model.rs:1 syntax high Widget',
      'src/model.rs:6 syntax medium Widget',
      'src/model.rs:9 syntax medium Widget',
      'src/model.rs:10 syntax medium Widget',
      'src/model.rs:14 syntax medium Widget',
      'src/service.rs:1 syntax high Widget',
      'src/service.rs:4 syntax medium Widget',
    ],
  },
];

describe.each(cases)('$lang fixture', (language) => {
  // The three tests only read the fixture: one repository per language serves them all.
  let repo: TestRepo;
  beforeAll(async () => {
    repo = await analysisFixtureRepo(language.lang);
  });

  it('check-callers: aliased imports, re-exports, method calls, test files; whole names only', async () => {
    expect(callers(await runCliInProcess(['check-callers', language.symbol], { cwd: repo.dir }))).toEqual(language.callers);
    expect(callers(await runCliInProcess(['check-callers', language.symbol, '--repo-dir', repo.dir, '--defined-in', language.definedIn]))).toEqual(language.callers);
    expect(callers(await runCliInProcess(['check-callers', language.method, '--repo-dir', repo.dir]))).toEqual(language.methodCallers);
  });

  it('analyze-deps: depth, waves, cascade candidates; a cycle is exit 1 naming it', async () => {
    const result = await runCliInProcess(['analyze-deps', repo.dir, '--files', language.files, '--format', 'json']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual(language.deps);
    const cycle = await runCliInProcess(['analyze-deps', repo.dir, '--files', language.cycle]);
    expect(expectCodedError(cycle, { exitCode: 1 }).message).toBe(language.cycleMessage);
  });

  it('detect-cascades: every definition, import and reference of the renamed symbol', async () => {
    const result = await runCliInProcess(['detect-cascades', repo.dir, '--renames', JSON.stringify([{ old: language.renamed, new: 'Item' }]), '--format', 'json']);
    expect(cascades(result)).toEqual(language.cascades);
  });
});

describe('check-callers', () => {
  it('prints the Go keys first plus column/kind/via, as JSON by default and file:line:column text', async () => {
    const repo = await analysisFixtureRepo('ts');
    const json = await runCliInProcess(['check-callers', 'makeWidget'], { cwd: repo.dir });
    expect((JSON.parse(json.stdout) as Caller[]).slice(3, 5)).toEqual([
      { file: 'src/service.ts', line: 1, context: "import { makeWidget as build, type Widget, WidgetStore } from './model.js';", column: 10, kind: 'import' },
      { file: 'src/service.ts', line: 7, context: 'const widget = build(label);', column: 18, kind: 'call', via: 'build' },
    ]);
    const text = await runCliInProcess(['check-callers', 'makeWidget', '--format', 'text'], { cwd: repo.dir });
    expect(text.stdout.split('\n').slice(0, 2)).toEqual(["src/app.ts:1:10: import { createWidget } from './index.js';", "src/app.ts:5:40: export const makeWidgetFactory = () => createWidget('x');"]);
  });

  it('never reads .claude/worktrees (tracked or a real worktree), reads uncommitted working-tree content, skips untracked files', async () => {
    const repo = await analysisFixtureRepo('ts');
    repo.write('.claude/worktrees/tracked/src/x.ts', "import { makeWidget } from '../../../../src/model.js';\nmakeWidget('w');\n");
    await repo.commitAll('a tracked copy under .claude/worktrees');
    await repo.run(['worktree', 'add', '-q', '-b', 'agent-a', '.claude/worktrees/agent-a']);
    repo.write('.claude/worktrees/agent-a/src/extra.ts', "import { makeWidget } from './model.js';\nmakeWidget('agent');\n");
    repo.write('src/untracked.ts', "import { makeWidget } from './model.js';\nmakeWidget('u');\n");
    repo.write('test/model.test.ts', "import { makeWidget } from '../src/model.js';\n\nmakeWidget('t');\nmakeWidget('dirty');\n");
    expect(callers(await runCliInProcess(['check-callers', 'makeWidget'], { cwd: repo.dir }))).toEqual([
      'src/app.ts:1:10 import via createWidget',
      'src/app.ts:5:40 call via createWidget',
      'src/index.ts:1:10 reexport',
      'src/service.ts:1:10 import',
      'src/service.ts:7:18 call via build',
      'test/model.test.ts:1:10 import',
      'test/model.test.ts:3:1 call',
      'test/model.test.ts:4:1 call',
    ]);
  });

  it('--defined-in follows barrels that never name the symbol (export *, Python package __init__)', async () => {
    const ts = await analysisFixtureRepo('ts');
    ts.write('src/barrel.ts', "export * from './model.js';\n");
    ts.write('src/user.ts', "import { makeWidget } from './barrel.js';\nmakeWidget('b');\n");
    ts.write('other/model.ts', 'export function makeWidget(): void {}\n');
    ts.write('other/use.ts', "import { makeWidget } from './model.js';\nmakeWidget();\n");
    await ts.commitAll('barrel and an unrelated makeWidget');
    const viaBarrel = callers(await runCliInProcess(['check-callers', 'makeWidget', '--defined-in', 'src/model.ts'], { cwd: ts.dir }));
    expect(viaBarrel.filter((line) => line.startsWith('src/user.ts') || line.startsWith('other/'))).toEqual(['src/user.ts:1:10 import', 'src/user.ts:2:1 call']);
    expect(callers(await runCliInProcess(['check-callers', 'makeWidget', '--defined-in', 'other/model.ts'], { cwd: ts.dir }))).toEqual(['other/use.ts:1:10 import', 'other/use.ts:2:1 call']);

    const python = await analysisFixtureRepo('python');
    python.write('shop/__init__.py', 'from .model import make_widget\n');
    python.write('tests/test_pkg.py', 'from shop import make_widget\n\nmake_widget("p")\n');
    await python.commitAll('package re-export');
    const viaPackage = callers(await runCliInProcess(['check-callers', 'make_widget', '--defined-in', 'shop/model.py'], { cwd: python.dir }));
    expect(viaPackage.filter((line) => line.startsWith('tests/test_pkg.py') || line.startsWith('shop/__init__.py'))).toEqual([
      'shop/__init__.py:1:20 import',
      'tests/test_pkg.py:1:18 import',
      'tests/test_pkg.py:3:1 call',
    ]);
  });

  it('--defined-in a file without a definition of the symbol says so on stderr (outside attack X47-24), the answer unchanged', async () => {
    const ts = await analysisFixtureRepo('ts');
    ts.write('src/plain.ts', "import './model.js';\nexport const unrelated = 1;\n");
    await ts.commitAll('a file that defines nothing of the name');
    const wrong = await runCliInProcess(['check-callers', 'makeWidget', '--defined-in', 'src/plain.ts'], { cwd: ts.dir });
    expect(wrong.code).toBe(0);
    expect(wrong.stderr).toBe('check-callers: warning: src/plain.ts has no definition of makeWidget; only what it imports or re-exports under that name is followed — check the path\n');
    expect(JSON.parse(wrong.stdout)).toEqual([]);
    // the file that defines it: no warning
    expect(callers(await runCliInProcess(['check-callers', 'makeWidget', '--defined-in', 'src/model.ts'], { cwd: ts.dir })).length).toBeGreaterThan(0);
  });

  it('Python: an attribute of an object no import binds (`car.make`, `self.make`) is not the module-level `make` (outside attack X47-22)', async () => {
    const python = await analysisFixtureRepo('python');
    python.write('pkg/__init__.py', '');
    python.write('pkg/defs.py', 'class Car:\n    def __init__(self, make):\n        self.make = make\n\ndef make(kind):\n    return Car(kind)\n');
    python.write(
      'tests/test_cars.py',
      [
        'import pkg.defs',
        'from pkg import defs',
        'from pkg.defs import Car, make',
        'import pkg.defs as d2',
        '',
        'def test_car():',
        '    car = Car(make="Toyota")',
        '    assert car.make == "Toyota"',
        '    assert self_like().make is not None',
        '    make("a")',
        '    defs.make("b")',
        '    pkg.defs.make("c")',
        '    d2.make("d")',
        '',
      ].join('\n'),
    );
    python.write(
      'IMPL.yaml',
      ['title: t', 'feature_slug: t', 'verdict: SUITABLE', 'test_command: pytest', 'lint_command: ruff', 'file_ownership:', '    - file: pkg/defs.py', '      agent: A', '      wave: 1', '      action: modify', 'waves:', '    - number: 1', '      agents:', '        - id: A', '          task: Change the signature of `make()` to add a `year` parameter in pkg/defs.py.', '          files:', '            - pkg/defs.py', ''].join('\n'),
    );
    await python.commitAll('attributes named like a module-level function');
    const found = callers(await runCliInProcess(['check-callers', 'make', '--defined-in', 'pkg/defs.py'], { cwd: python.dir })).filter((line) => line.startsWith('tests/'));
    // kept: the import, the call, the calls through names an import binds, and `f().make` (its start is no name); dropped: `car.make`
    expect(found).toEqual(['tests/test_cars.py:3:27 import', 'tests/test_cars.py:9:24 other', 'tests/test_cars.py:10:5 call', 'tests/test_cars.py:11:10 method-call', 'tests/test_cars.py:12:14 call', 'tests/test_cars.py:13:8 call']);
    // check-test-cascade names the real calls, never `Car(make=…)` (line 7) nor `car.make` (line 8)
    const cascade = await runCliInProcess(['check-test-cascade', 'IMPL.yaml', '--repo-dir', '.'], { cwd: python.dir });
    expect((JSON.parse(cascade.stdout) as Array<{ line: number }>).map((entry) => entry.line)).toEqual([9, 10, 11, 12, 13]);
    // `self.make` inside the defining module is the attribute, not the function
    expect(callers(await runCliInProcess(['check-callers', 'make', '--defined-in', 'pkg/defs.py'], { cwd: python.dir })).filter((line) => line.startsWith('pkg/defs.py:3:'))).toEqual([]);
  });

  it('parameters and locals that shadow the symbol are neither callers nor references (TS, Python, Go, Rust)', async () => {
    const ts = await analysisFixtureRepo('ts');
    ts.write('src/shadow-lib.ts', 'export function shadowFn(x: number) { return x; }\n');
    ts.write(
      'src/shadow-mixed.ts',
      [
        "import { shadowFn } from './shadow-lib';",
        'shadowFn(1);',
        'export function apply(shadowFn: (n: number) => number) { return shadowFn(2); }',
        'export function g() { const shadowFn = 3; return shadowFn; }',
        'export const h = ({ shadowFn }: { shadowFn: number }) => shadowFn;',
        'export function k() { return shadowFn(4); }',
        '',
      ].join('\n'),
    );
    await ts.commitAll('shadowing locals');
    expect(callers(await runCliInProcess(['check-callers', 'shadowFn', '--defined-in', 'src/shadow-lib.ts'], { cwd: ts.dir }))).toEqual([
      'src/shadow-mixed.ts:1:10 import',
      'src/shadow-mixed.ts:2:1 call',
      // (5:35, the property declared in the type literal, is a declaration of a property: no reference — X47)
      'src/shadow-mixed.ts:6:30 call',
    ]);

    const python = await analysisFixtureRepo('python');
    python.write('calc/__init__.py', '');
    python.write('calc/core.py', 'def compute(v):\n    return v\n');
    python.write('use_calc.py', 'from calc.core import compute\ncompute(1)\ndef g(compute): return compute(5)\ndef h(): return compute(6)\ncompute = lambda v: v\nobj.compute(8)\n');
    await python.commitAll('shadowing parameter');
    // (`obj.compute(8)`: a method of an object no import binds, not the module-level function — X47-22)
    expect(callers(await runCliInProcess(['check-callers', 'compute', '--defined-in', 'calc/core.py'], { cwd: python.dir }))).toEqual([
      'use_calc.py:1:23 import',
      'use_calc.py:2:1 call',
      'use_calc.py:4:17 call',
    ]);

    const go = await analysisFixtureRepo('go');
    go.write('sa/sa.go', 'package sa\n\nfunc Do() int { return 1 }\n');
    go.write('sb/sb.go', 'package sb\n\nimport "example.com/shop/sa"\n\nfunc Do2() int { return Do() }\n\nfunc Use() int {\n\tDo := func() int { return 2 }\n\treturn Do() + sa.Do()\n}\n\nfunc Do() int { return 3 }\n');
    await go.commitAll('local Do and an unqualified Do in another package');
    expect(callers(await runCliInProcess(['check-callers', 'Do', '--defined-in', 'sa/sa.go'], { cwd: go.dir }))).toEqual(['sb/sb.go:9:19 call']);

    const rust = await analysisFixtureRepo('rust');
    rust.write('src/shadow.rs', 'pub fn total() -> i32 { 1 }\n\nfn show() {\n    let total = 5;\n    println!("{}", total);\n}\n\nfn other() -> i32 {\n    total()\n}\n');
    await rust.commitAll('let shadows a function');
    expect(callers(await runCliInProcess(['check-callers', 'total', '--defined-in', 'src/shadow.rs'], { cwd: rust.dir }))).toEqual(['src/shadow.rs:9:5 call']);
  });

  it('TS --defined-in: `import x = require()` and a namespace import of a barrel that renames the symbol (X47)', async () => {
    const ts = await analysisFixtureRepo('ts');
    ts.write('src/rq-lib.ts', 'export function rqThing(): number { return 1; }\n');
    ts.write('src/rq-barrel.ts', "export { rqThing as rqAlias } from './rq-lib';\n");
    ts.write('src/rq-a.ts', "import lib = require('./rq-lib');\nexport const a = lib.rqThing();\n");
    ts.write('src/rq-b.ts', "import * as ns from './rq-barrel';\nexport const b = ns.rqAlias();\n");
    // a namespace re-exported under a name (`export * as inner`), used through a namespace import of that barrel (X49-09)
    ts.write('src/rq-barrel2.ts', "export * as inner from './rq-barrel';\n");
    ts.write('src/rq-d.ts', "import * as ns2 from './rq-barrel2';\nexport const d = ns2.inner.rqAlias();\n");
    // an rqAlias of another module's namespace, and one that is no namespace's, are not it
    ts.write('src/rq-c.ts', "import * as other from './model';\nconst rqAlias = () => 2;\nexport const c = other.rqAlias() + rqAlias();\n");
    await ts.commitAll('require-import and namespace of a renaming barrel');
    expect(callers(await runCliInProcess(['check-callers', 'rqThing', '--defined-in', 'src/rq-lib.ts'], { cwd: ts.dir }))).toEqual([
      'src/rq-a.ts:2:22 method-call',
      'src/rq-b.ts:2:21 method-call via rqAlias',
      'src/rq-barrel.ts:1:10 reexport',
      'src/rq-d.ts:2:28 method-call via rqAlias',
    ]);
  });

  it('TS --defined-in: the same name imported from another module, a namespace of another module, an augmentation of another module are not it (X49-07)', async () => {
    const ts = await analysisFixtureRepo('ts');
    ts.write('src/sn-defs.ts', 'export function snFoo() { return 1; }\nexport interface SnI { a: number }\n');
    ts.write('src/sn-other.ts', 'export function snFoo() { return 2; }\nexport interface SnI { b: number }\n');
    ts.write('src/sn-use.ts', "import { snFoo } from './sn-other';\nimport { snFoo as f } from './sn-defs';\nimport * as d from './sn-defs';\nimport * as o from './sn-other';\nexport const a = snFoo() + f() + d.snFoo() + o.snFoo();\n");
    ts.write('src/sn-aug.ts', "import { snFoo } from './sn-defs';\nexport const b = snFoo();\ndeclare module './sn-other' {\n  interface SnI { c: number }\n}\n");
    await ts.commitAll('one name in two modules');
    expect(callers(await runCliInProcess(['check-callers', 'snFoo', '--defined-in', 'src/sn-defs.ts'], { cwd: ts.dir }))).toEqual([
      'src/sn-aug.ts:1:10 import',
      'src/sn-aug.ts:2:18 call',
      // (not `import { snFoo } from './sn-other'`: an import statement's names are its module's)
      'src/sn-use.ts:2:10 import',
      'src/sn-use.ts:5:28 call via f',
      'src/sn-use.ts:5:36 method-call',
    ]);
    expect(callers(await runCliInProcess(['check-callers', 'snFoo', '--defined-in', 'src/sn-other.ts'], { cwd: ts.dir }))).toEqual([
      'src/sn-use.ts:1:10 import',
      'src/sn-use.ts:5:18 call',
      'src/sn-use.ts:5:48 method-call',
    ]);
    // the augmentation's interface is other's, not the definition's
    expect(callers(await runCliInProcess(['check-callers', 'SnI', '--defined-in', 'src/sn-defs.ts'], { cwd: ts.dir }))).toEqual([]);
    expect(callers(await runCliInProcess(['check-callers', 'SnI', '--defined-in', 'src/sn-other.ts'], { cwd: ts.dir }))).toEqual(['src/sn-aug.ts:4:13 type']);
  });

  it('TS --defined-in: a module that re-exports the symbol as its default (`export { X as default }`, `export default X`) binds its importers (X47)', async () => {
    const ts = await analysisFixtureRepo('ts');
    ts.write('src/dx-lib.ts', 'export function dxThing(): number { return 1; }\nexport default function dxMain(): number { return 2; }\n');
    ts.write('src/dx-a.ts', "import { dxThing as inner } from './dx-lib';\nexport { inner as default };\n");
    ts.write('src/dx-b.ts', "import anyName from './dx-a';\nexport const b = anyName();\n");
    ts.write('src/dx-c.ts', "import dxMain from './dx-lib';\nexport default dxMain;\n");
    ts.write('src/dx-d.ts', "import again from './dx-c';\nexport const d = again();\n");
    await ts.commitAll('default re-exports of a named export and of a default');
    expect(callers(await runCliInProcess(['check-callers', 'dxThing', '--defined-in', 'src/dx-lib.ts'], { cwd: ts.dir }))).toEqual([
      'src/dx-a.ts:1:10 import',
      'src/dx-a.ts:2:10 other via inner',
      'src/dx-b.ts:1:8 import via anyName',
      'src/dx-b.ts:2:18 call via anyName',
    ]);
    expect(callers(await runCliInProcess(['check-callers', 'dxMain', '--defined-in', 'src/dx-lib.ts'], { cwd: ts.dir }))).toEqual([
      'src/dx-c.ts:1:8 import',
      'src/dx-c.ts:2:16 other',
      'src/dx-d.ts:1:8 import via again',
      'src/dx-d.ts:2:18 call via again',
    ]);
  });

  it('Rust --defined-in: a path names the module (`crate::a::f()`, `super::a::f()`) without a `use`; a path to another module does not (X47)', async () => {
    const rust = await analysisFixtureRepo('rust');
    rust.write('src/lib.rs', 'pub mod pa;\npub mod pb;\npub mod pc;\n');
    rust.write('src/pa.rs', 'pub fn pick() -> u32 { 1 }\n\npub fn again() -> u32 { self::pick() + pick() }\n');
    rust.write('src/pb.rs', 'pub fn pick() -> u32 { 2 }\n\npub fn both() -> u32 { pick() + crate::pa::pick() + super::pa::pick() }\n');
    rust.write('src/pc.rs', 'use crate::pa::pick;\n\npub fn mixed() -> u32 { pick() + crate::pb::pick() + Vec::<u32>::new().len() as u32 }\n');
    await rust.commitAll('paths without use');
    expect(callers(await runCliInProcess(['check-callers', 'pick', '--defined-in', 'src/pa.rs'], { cwd: rust.dir }))).toEqual([
      'src/pa.rs:3:31 call',
      'src/pa.rs:3:40 call',
      'src/pb.rs:3:44 call',
      'src/pb.rs:3:64 call',
      'src/pc.rs:1:16 import',
      'src/pc.rs:3:25 call',
    ]);
    expect(callers(await runCliInProcess(['check-callers', 'pick', '--defined-in', 'src/pb.rs'], { cwd: rust.dir }))).toEqual(['src/pb.rs:3:24 call', 'src/pc.rs:3:45 call']);
    // a raw identifier is its name: `r#type` is `type` (asked for either way), through a path and a `use … as`
    rust.write('src/pd.rs', 'pub fn r#type() -> u32 { 3 }\n');
    rust.write('src/pe.rs', 'use crate::pd::r#type as kind;\n\npub fn e() -> u32 { crate::pd::r#type() + kind() }\n');
    rust.write('src/lib.rs', 'pub mod pa;\npub mod pb;\npub mod pc;\npub mod pd;\npub mod pe;\n');
    await rust.commitAll('raw identifiers');
    // a path through a module a `use` binds (`use crate::pa;`, `as`, `{self}`) — outside attack X50-04
    rust.write('src/pf.rs', 'use crate::pa;\nuse crate::pa as alpha;\nuse crate::pb::{self};\n\npub fn f() -> u32 { pa::pick() + alpha::pick() + pb::pick() }\n');
    // and a type's associated function of the same name (`K::pick()`) is not the module's function
    rust.write('src/pa.rs', 'pub fn pick() -> u32 { 1 }\n\npub fn again() -> u32 { self::pick() + pick() }\npub struct K;\n');
    rust.write('src/pg.rs', 'use crate::pa;\nuse crate::pa::K;\nimpl K {\n    pub fn pick() -> u32 { 5 }\n}\npub fn g() -> u32 { K::pick() + pa::pick() }\n');
    rust.write('src/lib.rs', 'pub mod pa;\npub mod pb;\npub mod pc;\npub mod pd;\npub mod pe;\npub mod pf;\npub mod pg;\n');
    await rust.commitAll('module paths bound by use');
    expect(callers(await runCliInProcess(['check-callers', 'pick', '--defined-in', 'src/pa.rs'], { cwd: rust.dir })).filter((line) => line.startsWith('src/pf.rs') || line.startsWith('src/pg.rs'))).toEqual([
      'src/pf.rs:5:25 call',
      'src/pf.rs:5:41 call',
      'src/pg.rs:6:37 call',
    ]);
    const raw = ['src/pe.rs:1:16 import', 'src/pe.rs:3:32 call', 'src/pe.rs:3:43 call via kind'];
    expect(callers(await runCliInProcess(['check-callers', 'type', '--defined-in', 'src/pd.rs'], { cwd: rust.dir }))).toEqual(raw);
    expect(callers(await runCliInProcess(['check-callers', 'r#type', '--defined-in', 'src/pd.rs'], { cwd: rust.dir }))).toEqual(raw);
  });

  it('Python --defined-in: an alias through `from pkg import *`, and absolute imports inside a sub-project (X47)', async () => {
    const python = await analysisFixtureRepo('python');
    python.write('star/__init__.py', 'from .core import compute as calc\n');
    python.write('star/core.py', 'def compute(v):\n    return v\n');
    python.write('star_use.py', 'from star import *\ncalc(1)\n');
    python.write('other_use.py', 'from json import *\ncalc(2)\n');
    python.write('sub/pyproject.toml', '[project]\nname = "subapp"\n');
    python.write('sub/subapp/__init__.py', '');
    python.write('sub/subapp/svc.py', 'def helper():\n    return 1\n');
    python.write('sub/subapp/main.py', 'from subapp.svc import helper\nhelper()\n');
    await python.commitAll('a star import of an aliasing package; a sub-project');
    expect(callers(await runCliInProcess(['check-callers', 'compute', '--defined-in', 'star/core.py'], { cwd: python.dir }))).toEqual(['star/__init__.py:1:19 import', 'star_use.py:2:1 call via calc']);
    expect(callers(await runCliInProcess(['check-callers', 'helper', '--defined-in', 'sub/subapp/svc.py'], { cwd: python.dir }))).toEqual(['sub/subapp/main.py:1:24 import', 'sub/subapp/main.py:2:1 call']);
    // a sibling sub-project imports it as an installed workspace member (X50-11)
    python.write('apps/web/pyproject.toml', '[project]\nname = "web"\n');
    python.write('apps/web/web/views.py', 'from subapp.svc import helper\n\ndef view():\n    return helper()\n');
    await python.commitAll('a sibling sub-project');
    expect(callers(await runCliInProcess(['check-callers', 'helper', '--defined-in', 'sub/subapp/svc.py'], { cwd: python.dir }))).toEqual([
      'apps/web/web/views.py:1:24 import',
      'apps/web/web/views.py:4:12 call',
      'sub/subapp/main.py:1:24 import',
      'sub/subapp/main.py:2:1 call',
    ]);
  });

  it('Go --defined-in: an unaliased import binds the package clause name (X49-01/05); a promoted embedded field is the type (X49-03)', async () => {
    const go = await analysisFixtureRepo('go');
    go.write('internal/util/defs.go', 'package utility\n\ntype Box struct{ N int }\n\nfunc Make() Box { return Box{} }\n');
    go.write('internal/util/ext_test.go', 'package utility_test\n\nimport "example.com/shop/internal/util"\n\nvar _ = utility.Make()\n');
    go.write('app/plain.go', 'package app\n\nimport "example.com/shop/internal/util"\n\nfunc A() int { return utility.Make().N }\n');
    go.write('app/embed.go', 'package app\n\nimport "example.com/shop/internal/util"\n\ntype W struct {\n\tutility.Box\n}\n\nfunc B(w W) int { return w.Box.N }\n');
    await go.commitAll('a package whose name is not its directory');
    expect(callers(await runCliInProcess(['check-callers', 'Make', '--defined-in', 'internal/util/defs.go'], { cwd: go.dir }))).toEqual(['app/plain.go:5:31 call', 'internal/util/ext_test.go:5:17 call']);
    expect(callers(await runCliInProcess(['check-callers', 'Box', '--defined-in', 'internal/util/defs.go'], { cwd: go.dir }))).toEqual([
      'app/embed.go:6:10 type',
      'app/embed.go:9:28 other',
      'internal/util/defs.go:5:13 type',
      'internal/util/defs.go:5:26 type',
    ]);
  });

  it('Go struct fields: a field is a definition, a struct literal key uses the field and nothing named like it, Type.Field keeps member uses', async () => {
    const go = await analysisFixtureRepo('go');
    go.write('sa/opts.go', 'package sa\n\ntype Options struct {\n\tTimeout int\n\tRetries, Depth int\n\tName\n}\n\ntype Name string\n');
    go.write(
      'sa/vars.go',
      'package sa\n\nvar Timeout = 5\n\nfunc Retries() int { return 3 }\n\nfunc Local() Options { return Options{Timeout: Timeout, Retries: Retries()} }\n\nfunc Keys() map[int]string { return map[int]string{Timeout: "t"} }\n\ntype Index []string\n\nfunc Ix() Index { return Index{Timeout: "t"} }\n',
    );
    go.write(
      'sb/sb.go',
      'package sb\n\nimport "example.com/shop/sa"\n\nvar all = []sa.Options{{Timeout: 1}, {Retries: 2}}\nvar byName = map[string]*sa.Options{"a": {Timeout: 3}}\n\nfunc Get(o sa.Options) int { return o.Timeout + sa.Timeout }\n\nvar fns = map[string]func() int{"r": sa.Retries}\n',
    );
    await go.commitAll('a struct whose fields are named like package-level names');
    const run = checkCallersIn(go.dir);
    // every use of the name (the plain answer is a superset)
    expect(await run('Timeout')).toEqual(['sa/vars.go:7:39 other', 'sa/vars.go:7:48 other', 'sa/vars.go:9:52 other', 'sa/vars.go:13:32 other', 'sb/sb.go:5:25 other', 'sb/sb.go:6:43 other', 'sb/sb.go:8:39 other', 'sb/sb.go:8:52 other']);
    // the variable: its value uses, a map's and a slice's keys (expressions), sa.Timeout; no struct key, no o.Timeout
    expect(await run('Timeout', '--defined-in', 'sa/vars.go')).toEqual(['sa/vars.go:7:48 other', 'sa/vars.go:9:52 other', 'sa/vars.go:13:32 other', 'sb/sb.go:8:52 other']);
    // the field: struct literal keys (written and elided types) and o.Timeout; not the variable, not sa.Timeout
    expect(await run('Timeout', '--defined-in', 'sa/opts.go')).toEqual(['sa/vars.go:7:39 other', 'sb/sb.go:5:25 other', 'sb/sb.go:6:43 other', 'sb/sb.go:8:39 other']);
    expect(await run('Retries', '--defined-in', 'sa/opts.go')).toEqual(['sa/vars.go:7:57 other', 'sb/sb.go:5:39 other']);
    expect(await run('Retries', '--defined-in', 'sa/vars.go')).toEqual(['sa/vars.go:7:66 call', 'sb/sb.go:10:41 other']);
    // Type.Field, without --defined-in: member uses and struct keys, not the package's own sa.Timeout / sa.Retries
    expect(await run('Options.Timeout')).toEqual(['sa/vars.go:7:39 other', 'sb/sb.go:5:25 other', 'sb/sb.go:6:43 other', 'sb/sb.go:8:39 other']);
    expect(await run('Options.Retries')).toEqual(['sa/vars.go:7:57 other', 'sb/sb.go:5:39 other']);
    // a field is listed as a definition: no "no definition" warning, and detect-cascades names it
    const depth = await runCliInProcess(['check-callers', 'Depth', '--defined-in', 'sa/opts.go'], { cwd: go.dir });
    expect(depth.stderr).toBe('');
    const cascades = await runCliInProcess(['detect-cascades', '.', '--renames', JSON.stringify([{ old: 'Retries', new: 'Attempts' }]), '--format', 'json'], { cwd: go.dir });
    expect(cascades.code).toBe(0);
    expect(cascades.stdout).toContain('sa/opts.go');
  });

  it('Python: an import inside a function binds its names in that function only, where it hides the module-level one', async () => {
    const python = await analysisFixtureRepo('python');
    python.write('shop/first.py', 'class Foo:\n    pass\n');
    python.write('shop/second.py', 'class Foo:\n    pass\n');
    python.write(
      'shop/lazy.py',
      [
        'from shop.second import Foo',
        '',
        '',
        'def lazy():',
        '    from shop.first import Foo',
        '    return Foo()',
        '',
        '',
        'def plain():',
        '    return Foo()',
        '',
        '',
        'def aliased():',
        '    from shop.first import Foo as A',
        '',
        '    def inner():',
        '        return A(), Foo()',
        '    return inner',
        '',
      ].join('\n'),
    );
    // a package whose __init__ imports inside a function re-exports nothing
    python.write('shop/__init__.py', 'def load():\n    from .first import Foo\n    return Foo\n');
    python.write('tests/test_lazy.py', 'from shop import Foo\n\nFoo()\n');
    await python.commitAll('function-local imports');
    const run = checkCallersIn(python.dir);
    expect(await run('Foo', '--defined-in', 'shop/first.py')).toEqual([
      'shop/__init__.py:2:24 import',
      'shop/__init__.py:3:12 other',
      'shop/lazy.py:5:28 import',
      'shop/lazy.py:6:12 call',
      'shop/lazy.py:14:28 import',
      'shop/lazy.py:17:16 call via A',
    ]);
    expect(await run('Foo', '--defined-in', 'shop/second.py')).toEqual(['shop/lazy.py:1:25 import', 'shop/lazy.py:10:12 call', 'shop/lazy.py:17:21 call']);
  });

  it('Go: an unaliased import binds the name its path implies (go-utils → utils, …/v2 → the element before, yaml.v3 → yaml): a call, on either path (X50-01)', async () => {
    const go = await analysisFixtureRepo('go');
    go.write('internal/go-utils/utils.go', 'package utils\n\nfunc Retry() int { return 1 }\n');
    go.write('internal/lib/v2/lib.go', 'package lib\n\nfunc Retry() int { return 2 }\n');
    go.write('app/svc.go', 'package app\n\nimport (\n\t"example.com/shop/internal/go-utils"\n\t"example.com/shop/internal/lib/v2"\n)\n\nfunc Run(x interface{ Retry() int }) int { return utils.Retry() + lib.Retry() + x.Retry() }\n');
    await go.commitAll('packages named unlike their directories');
    const plain = callers(await runCliInProcess(['check-callers', 'Retry'], { cwd: go.dir }));
    expect(plain).toEqual(['app/svc.go:8:57 call', 'app/svc.go:8:71 call', 'app/svc.go:8:83 method-call']);
    expect(callers(await runCliInProcess(['check-callers', 'Retry', '--defined-in', 'internal/go-utils/utils.go'], { cwd: go.dir }))).toEqual(['app/svc.go:8:57 call']);
    expect(callers(await runCliInProcess(['check-callers', 'Retry', '--defined-in', 'internal/lib/v2/lib.go'], { cwd: go.dir }))).toEqual(['app/svc.go:8:71 call']);
  });

  it('outside round X51, Go: elided literals under a type of another file, locals named like their package, embedded field keys, nested struct fields, malformed names', async () => {
    const go = await analysisFixtureRepo('go');
    go.write('cfg/cfg.go', 'package cfg\n\ntype Options struct {\n\tTimeout int\n\tServer  struct {\n\t\tPort int\n\t}\n}\n\ntype List []Options\n\ntype Base struct{ ID int }\n\ntype User struct {\n\tBase\n\tName string\n}\n');
    go.write('cfg/use.go', 'package cfg\n\nvar e = List{{Timeout: 5}}\nvar u = User{Base: Base{ID: 1}, Name: "n"}\n');
    go.write('srv/srv.go', 'package srv\n\ntype Server struct{ Addr string }\n\nfunc (s *Server) Start() {}\n');
    go.write(
      'app/main.go',
      'package app\n\nimport (\n\t"example.com/shop/cfg"\n\t"example.com/shop/srv"\n)\n\nfunc Main() int {\n\tl := cfg.List{{Timeout: 3}}\n\t_ = l\n\tcfg := cfg.Options{Timeout: 2}\n\treturn cfg.Timeout + cfg.Server.Port\n}\n\nfunc Serve(srv *srv.Server) string {\n\tsrv.Start()\n\treturn srv.Addr\n}\n',
    );
    await go.commitAll('X51 Go cases');
    const run = checkCallersIn(go.dir);
    // X51-01/17: `List{{Timeout: 5}}`, `cfg.List{{…}}` (List declared elsewhere); X51-02: `cfg.Timeout` with cfg a local
    const timeout = ['app/main.go:9:17 other', 'app/main.go:11:21 other', 'app/main.go:12:13 other', 'cfg/use.go:3:15 other'];
    expect(await run('Timeout', '--defined-in', 'cfg/cfg.go')).toEqual(timeout);
    expect(await run('Options.Timeout')).toEqual(timeout);
    // X51-03: an embedded field's key is named by its type
    expect(await run('Base', '--defined-in', 'cfg/cfg.go')).toEqual(['cfg/cfg.go:15:2 type', 'cfg/use.go:4:14 other', 'cfg/use.go:4:20 type']);
    // X51-09: a parameter named like its type's package is the object
    expect(await run('Start', '--defined-in', 'srv/srv.go')).toEqual(['app/main.go:16:6 method-call']);
    expect(await run('Server.Addr')).toEqual(['app/main.go:17:13 other']);
    // X51-15: a nested anonymous struct's field is a definition (no warning)
    const port = await runCliInProcess(['check-callers', 'Port', '--defined-in', 'cfg/cfg.go'], { cwd: go.dir });
    expect(callers(port)).toEqual(['app/main.go:12:34 other']);
    // X51-11: a qualified name's every segment is an identifier
    for (const bad of ['.X', 'A..B', 'A.']) expectCodedError(await runCliInProcess(['check-callers', bad], { cwd: go.dir }), { code: 'X001_INVALID_INPUT' });
  });

  it('outside round X51, Python: `global` with a function import, a name-aware __init__ re-export, a parameter named like a module, a class in a module path', async () => {
    const python = await analysisFixtureRepo('python');
    python.write('shop/models.py', 'class Foo:\n    pass\n\n\ndef helper():\n    return 1\n\n\nclass Config:\n    timeout = 1\n\n    def load(self):\n        return self\n');
    python.write('shop/__init__.py', 'from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .models import Foo\n\n\ndef lazy():\n    from .models import helper\n    return helper()\n');
    python.write('app.py', 'from shop import helper as shop_helper\n\nshop_helper()\n');
    python.write('lazy.py', 'Config = None\n\n\ndef _load():\n    global Config\n    from shop.models import Config\n\n\ndef make():\n    _load()\n    return Config()\n');
    python.write('config.py', 'timeout = 3\n');
    python.write('runner.py', 'import config\nimport shop\nfrom shop.models import Config\n\n\ndef run(config: Config):\n    return config.timeout, config.load(), shop.models.Config.timeout\n');
    await python.commitAll('X51 Python cases');
    const run = checkCallersIn(python.dir);
    // X51-04: `from .models import Foo` at module level does not make __init__ a source of `helper`
    expect(await run('helper', '--defined-in', 'shop/models.py')).toEqual(['shop/__init__.py:7:25 import', 'shop/__init__.py:8:12 call']);
    // X51-07: `global Config` — the function's import binds the module's name
    expect((await run('Config', '--defined-in', 'shop/models.py')).filter((line) => line.startsWith('lazy.py'))).toEqual(['lazy.py:5:12 other', 'lazy.py:6:29 import', 'lazy.py:11:12 call']);
    // X51-08: the parameter `config` is the object, not the module; X51-16: `shop.models.Config.timeout` is a class's attribute
    expect(await run('Config.timeout')).toEqual(['runner.py:7:19 other', 'runner.py:7:62 other']);
    expect(await run('Config.load')).toEqual(['runner.py:7:35 method-call']);
    // X51-13: `from shop import other as models` binds the module other, whatever shop's __init__ re-exports
    python.write('shop/other.py', 'class Foo:\n    pass\n');
    python.write('shop/__init__.py', 'from .models import Foo\n');
    python.write('aliased.py', 'from shop import models\n\n\ndef h():\n    from shop import other as models\n    return models.Foo()\n\n\ndef k():\n    return models.Foo()\n');
    await python.commitAll('a submodule imported under another module\'s name');
    expect((await run('Foo', '--defined-in', 'shop/models.py')).filter((line) => line.startsWith('aliased.py'))).toEqual(['aliased.py:10:19 method-call']);
  });

  it('outside round X51, TS: a re-export of the definition beside a foreign import, a namespace import\'s member, two statements on one line', async () => {
    const ts = await analysisFixtureRepo('ts');
    ts.write('src/x51-defs.ts', 'export class Foo {\n  timeout = 5;\n  load() { return this.timeout; }\n}\n');
    ts.write('src/x51-other.ts', 'export class Foo {}\nexport const timeout = 3;\n');
    ts.write('src/x51-user2.ts', "import { Foo as F } from './x51-defs';\nimport { Foo } from './x51-other';\nexport const c = new F();\nexport const d = new Foo();\nexport { Foo as DefsFoo } from './x51-defs';\n");
    ts.write('src/x51-user3.ts', "import * as settings from './x51-other';\nimport { Foo } from './x51-defs';\nexport function f(c?: Foo) {\n  return c?.timeout ?? settings.timeout;\n}\n");
    ts.write('src/x51-user4.ts', "import { Foo } from './x51-other'; import { Foo as G } from './x51-defs';\nexport const g = new G();\n");
    await ts.commitAll('X51 TS cases');
    const run = checkCallersIn(ts.dir);
    expect((await run('Foo', '--defined-in', 'src/x51-defs.ts')).filter((line) => line.startsWith('src/x51-'))).toEqual([
      'src/x51-user2.ts:1:10 import',
      'src/x51-user2.ts:3:22 call via F',
      'src/x51-user2.ts:5:10 reexport', // X51-05
      'src/x51-user3.ts:2:10 import',
      'src/x51-user3.ts:3:23 type',
      'src/x51-user4.ts:1:45 import', // X51-14
      'src/x51-user4.ts:2:22 call via G',
    ]);
    expect((await run('Foo', '--defined-in', 'src/x51-other.ts')).filter((line) => line.startsWith('src/x51-'))).toEqual(['src/x51-user2.ts:2:10 import', 'src/x51-user2.ts:4:22 call', 'src/x51-user4.ts:1:10 import']);
    // X51-06: `settings.timeout` is the module's export
    expect((await run('Foo.timeout')).filter((line) => line.startsWith('src/x51-'))).toEqual(['src/x51-defs.ts:3:24 other', 'src/x51-user3.ts:4:13 other']);
  });

  it('Rust --defined-in: one use tree naming the same name from two modules is one import per module (X51-10)', async () => {
    const rust = await analysisFixtureRepo('rust');
    rust.write('src/x51defs.rs', 'pub struct Foo;\nimpl Foo {\n    pub fn new() -> Foo {\n        Foo\n    }\n}\n');
    rust.write('src/x51other.rs', 'pub struct Foo;\nimpl Foo {\n    pub fn new() -> Foo {\n        Foo\n    }\n}\n');
    rust.write('src/x51user.rs', 'use crate::{\n    x51other::Foo,\n    x51defs::{Foo as F},\n};\npub fn a() {\n    let _o = Foo::new();\n    let _f = F::new();\n}\n');
    rust.write('src/lib.rs', `${rust.read('src/lib.rs')}pub mod x51defs;\npub mod x51other;\npub mod x51user;\n`);
    await rust.commitAll('a use tree into two modules');
    const run = async (definedIn: string) => callers(await runCliInProcess(['check-callers', 'Foo', '--defined-in', definedIn], { cwd: rust.dir })).filter((line) => line.startsWith('src/x51user'));
    expect(await run('src/x51defs.rs')).toEqual(['src/x51user.rs:3:15 import', 'src/x51user.rs:7:14 type via F']);
    expect(await run('src/x51other.rs')).toEqual(['src/x51user.rs:2:15 import', 'src/x51user.rs:6:14 type']);
  });

  it('outside round X52, Go: an aliased import binds its alias only, an unaliased one its package clause only, a local named like the package is an object', async () => {
    const go = await analysisFixtureRepo('go');
    go.write('go-utils/u.go', 'package utils\n\nfunc Retry() int { return 1 }\n');
    go.write('go-strutil/s.go', 'package stringutil\n\nfunc Retry() int { return 2 }\n');
    go.write('app/thing.go', 'package app\n\ntype Thing struct{}\n\nfunc (Thing) Retry() int { return 3 }\n\nvar strutil Thing\n\nvar utils Thing\n');
    go.write('app/alias.go', 'package app\n\nimport u "example.com/shop/go-utils"\n\nfunc A() int { return u.Retry() + utils.Retry() }\n');
    go.write('app/c.go', 'package app\n\nimport "example.com/shop/go-strutil"\n\nfunc C() int { return strutil.Retry() + stringutil.Retry() }\n');
    go.write('cfg/cfg.go', 'package cfg\n\ntype Options struct{ Timeout int }\n\nfunc Load() Options { return Options{Timeout: Timeout} }\n');
    go.write('cfg/vars.go', 'package cfg\n\nvar Timeout = 5\n');
    go.write('app/loop.go', 'package app\n\nimport "example.com/shop/cfg"\n\nfunc L(list []cfg.Options) int {\n\tn := cfg.Timeout\n\tfor _, cfg := range list {\n\t\tn += cfg.Timeout\n\t}\n\treturn n\n}\n');
    await go.commitAll('X52 Go cases');
    const run = checkCallersIn(go.dir);
    // X52-06: `utils.Retry()` is the package-level variable's method (the import binds u)
    expect(await run('Retry', '--defined-in', 'go-utils/u.go')).toEqual(['app/alias.go:5:25 call']);
    // X52-08: the unaliased import binds stringutil (its package clause), not strutil
    expect(await run('Retry', '--defined-in', 'go-strutil/s.go')).toEqual(['app/c.go:5:52 call']);
    // X52-12: a range variable named like the package is the loop's Options
    expect(await run('Timeout', '--defined-in', 'cfg/vars.go').then((lines) => lines.filter((line) => line.startsWith('app/')))).toEqual(['app/loop.go:6:11 other']);
    expect(await run('Timeout', '--defined-in', 'cfg/cfg.go').then((lines) => lines.filter((line) => line.startsWith('app/')))).toEqual(['app/loop.go:8:12 other']);
  });

  it('outside round X52, Python: PEP 562 __getattr__ lends its imports; `from . import defs` then `Engine = defs.Engine` re-exports', async () => {
    const python = await analysisFixtureRepo('python');
    python.write('lazy/__init__.py', 'def __getattr__(name):\n    if name == "Engine":\n        from .defs import Engine\n        return Engine\n    raise AttributeError(name)\n');
    python.write('lazy/defs.py', 'class Engine:\n    pass\n');
    python.write('p1/__init__.py', 'from . import defs\n\nEngine = defs.Engine\n');
    python.write('p1/defs.py', 'class Engine:\n    pass\n');
    python.write('use_engines.py', 'from lazy import Engine as LazyEngine\nfrom p1 import Engine as E1\n\nLazyEngine()\nE1()\n');
    await python.commitAll('X52 Python cases');
    const run = checkCallersIn(python.dir);
    expect((await run('Engine', '--defined-in', 'lazy/defs.py')).filter((line) => line.startsWith('use_engines'))).toEqual(['use_engines.py:1:18 import', 'use_engines.py:4:1 call via LazyEngine']);
    expect((await run('Engine', '--defined-in', 'p1/defs.py')).filter((line) => line.startsWith('use_engines'))).toEqual(['use_engines.py:2:16 import', 'use_engines.py:5:1 call via E1']);
    // X53-05: only `Engine = defs.Engine` at module level re-exports (not `= other.Engine`, a class of its own, a function's
    // local); X53-09: a __getattr__ under a module-level `if` is the module's
    python.write('p2/__init__.py', 'from . import defs, other\n\nEngine = other.Engine\n');
    python.write('p2/defs.py', 'class Engine:\n    pass\n');
    python.write('p2/other.py', 'class Engine:\n    pass\n');
    python.write('p3/__init__.py', 'from . import defs\n\n\nclass Engine:\n    pass\n\n\nx = defs.Engine\n');
    python.write('p3/defs.py', 'class Engine:\n    pass\n');
    python.write('p4/__init__.py', 'from . import defs\n\n\ndef f():\n    Engine = defs.Engine\n    return Engine\n');
    python.write('p4/defs.py', 'class Engine:\n    pass\n');
    python.write('q/__init__.py', 'import sys\n\nif sys.version_info >= (3, 7):\n    def __getattr__(name):\n        from .defs import Engine\n        return Engine\n');
    python.write('q/defs.py', 'class Engine:\n    pass\n');
    python.write('more_engines.py', 'from p2 import Engine as E2\nfrom p3 import Engine as E3\nfrom p4 import Engine as E4\nfrom q import Engine as Q\n\nE2(); E3(); E4(); Q()\n');
    await python.commitAll('X53 Python cases');
    for (const pkg of ['p2', 'p3', 'p4']) expect((await run('Engine', '--defined-in', `${pkg}/defs.py`)).filter((line) => line.startsWith('more_engines'))).toEqual([]);
    expect((await run('Engine', '--defined-in', 'q/defs.py')).filter((line) => line.startsWith('more_engines'))).toEqual(['more_engines.py:4:15 import', 'more_engines.py:6:19 call via Q']);
  });

  it('outside round X52, TS: `import { default as h }` from a barrel that re-exports the definition under a name is the barrel\'s own default', async () => {
    const ts = await analysisFixtureRepo('ts');
    ts.write('src/x52-greet.ts', 'export default function greet(): number { return 1; }\n');
    ts.write('src/x52-arrow.ts', 'const helper = () => 2;\nexport default helper;\n');
    ts.write('src/x52-barrel.ts', "export { default as hello } from './x52-greet';\nimport helper from './x52-arrow';\nexport default helper;\n");
    ts.write('src/x52-app.ts', "import g from './x52-greet';\nimport { hello, default as h2 } from './x52-barrel';\nexport const all = [g(), hello(), h2()];\n");
    await ts.commitAll('X52 TS case');
    const expected = ['src/x52-app.ts:1:8 import via g', 'src/x52-app.ts:2:10 import via hello', 'src/x52-app.ts:3:21 call via g', 'src/x52-app.ts:3:26 call via hello', 'src/x52-barrel.ts:1:10 reexport via default'];
    const only = (lines: string[]) => lines.filter((line) => line.startsWith('src/x52-'));
    expect(only(callers(await runCliInProcess(['check-callers', 'greet', '--defined-in', 'src/x52-greet.ts'], { cwd: ts.dir })))).toEqual(expected);
    expect(only(callers(await runCliInProcess(['check-callers', 'greet'], { cwd: ts.dir })))).toEqual(expected);
  });

  it('outside round X53, Python: a class body\'s own import binds in that body from the import on (X53-03); a one-line def\'s defaults and annotations are not its body\'s (X51-18)', async () => {
    const python = await analysisFixtureRepo('python');
    python.write('pkg/__init__.py', '');
    python.write('pkg/models.py', 'class Foo:\n    pass\n');
    python.write('pkg/other.py', 'class Foo:\n    pass\n');
    python.write(
      'scoped.py',
      [
        'from pkg.models import Foo',
        'def f(x=Foo()): from pkg.other import Foo; return Foo(), x',
        'def g(',
        '    x=Foo(),',
        '):',
        '    from pkg.other import Foo',
        '    return Foo(), x',
        'class K:',
        '    def m(self, y: Foo = None): from pkg.other import Foo; return Foo()',
        'class H:',
        '    a = Foo',
        '    from pkg.other import Foo',
        '    b = Foo',
        '    def m(self):',
        '        return Foo',
        '    c = [Foo for _ in range(2)]',
        'd = Foo',
        '',
      ].join('\n'),
    );
    // X53-03 as found: an import binding the name to a module — there the name is the module, `Foo.Foo` the definition
    python.write('modules.py', 'class H:\n    import pkg.models as Foo\n    p = Foo\n    q = Foo.Foo\n');
    // two imports in one class body bind in order (a comprehension's first iterable is read in the class body)
    python.write('ordered.py', 'class E:\n    from pkg.other import Foo\n    f = Foo\n    from pkg.models import Foo\n    g = Foo\n    h = [x for x in Foo]\n');
    await python.commitAll('X53-03 and X51-18 cases');
    const run = checkCallersIn(python.dir);
    // the class's import is not seen by its methods or comprehensions (they skip the class's names), nor after the class
    expect(await run('Foo', '--defined-in', 'pkg/models.py')).toEqual([
      'modules.py:4:13 other',
      'ordered.py:4:28 import',
      'ordered.py:5:9 other',
      'ordered.py:6:21 other',
      'scoped.py:1:24 import',
      'scoped.py:2:9 call',
      'scoped.py:4:7 call',
      'scoped.py:9:20 type',
      'scoped.py:11:9 other',
      'scoped.py:15:16 other',
      'scoped.py:16:10 other',
      'scoped.py:17:5 other',
    ]);
    expect(await run('Foo', '--defined-in', 'pkg/other.py')).toEqual([
      'ordered.py:2:27 import',
      'ordered.py:3:9 other',
      'scoped.py:2:39 import',
      'scoped.py:2:51 call',
      'scoped.py:6:27 import',
      'scoped.py:7:12 call',
      'scoped.py:9:55 import',
      'scoped.py:9:67 call',
      'scoped.py:12:27 import',
      'scoped.py:13:9 other',
    ]);
  });

  it('outside round X53, TS: a barrel\'s `export default g.default` after `import * as g` is the definition\'s default (X53-06); a module\'s own `const greet` exported as default is not it, `ns.default()` of a namespace whose default is the definition is (X53-10)', async () => {
    const ts = await analysisFixtureRepo('ts');
    ts.write('src/x53-greet.ts', 'export default function greet(): number { return 1; }\n');
    ts.write('src/x53-b5.ts', "import * as g from './x53-greet';\nexport default g.default;\n");
    ts.write('src/x53-lib2.ts', "import g from './x53-greet';\nconst greet = () => g() + 1;\nexport default greet;\nexport { greet as again };\n");
    ts.write('src/x53-lib.ts', "import greet from './x53-greet';\nexport default greet;\n");
    ts.write('src/x53-app.ts', "import { default as h5 } from './x53-b5';\nimport h2 from './x53-lib2';\nimport * as ns from './x53-lib';\nexport const all = [h5(), h2(), ns.default()];\n");
    await ts.commitAll('X53 TS cases');
    const only = (lines: string[]) => lines.filter((line) => line.startsWith('src/x53-'));
    const run = checkCallersIn(ts.dir);
    // (and X53-10's `ns.default()`: the namespace's default member, the definition through lib's `export default greet`)
    expect(only(await run('greet', '--defined-in', 'src/x53-greet.ts'))).toEqual([
      'src/x53-app.ts:1:10 import via default',
      'src/x53-app.ts:4:21 call via h5',
      'src/x53-app.ts:4:36 method-call via default',
      'src/x53-b5.ts:2:18 reexport via default',
      'src/x53-lib.ts:1:8 import',
      'src/x53-lib.ts:2:16 other',
      'src/x53-lib2.ts:1:8 import via g',
      'src/x53-lib2.ts:2:21 call via g',
    ]);
    // (without --defined-in, by name: lib2's own greet too)
    expect(only(await run('greet'))).toEqual([
      'src/x53-app.ts:1:10 import via default',
      'src/x53-app.ts:2:8 import via h2',
      'src/x53-app.ts:4:21 call via h5',
      'src/x53-app.ts:4:27 call via h2',
      'src/x53-app.ts:4:36 method-call via default',
      'src/x53-b5.ts:2:18 reexport via default',
      'src/x53-lib.ts:1:8 import',
      'src/x53-lib.ts:2:16 other',
      'src/x53-lib2.ts:1:8 import via g',
      'src/x53-lib2.ts:2:21 call via g',
      'src/x53-lib2.ts:3:16 other',
      'src/x53-lib2.ts:4:10 other',
    ]);
    expect(only(await run('greet', '--defined-in', 'src/x53-lib2.ts'))).toEqual(['src/x53-app.ts:2:8 import via h2', 'src/x53-app.ts:4:27 call via h2', 'src/x53-lib2.ts:3:16 other', 'src/x53-lib2.ts:4:10 other']);
  });

  it('a reference on a huge line carries a window of it, not the whole line (X50-07: 4,000 references on a 51 KB line printed 204 MB)', async () => {
    const ts = await analysisFixtureRepo('ts');
    ts.write('src/huge-lib.ts', 'export function hugeFn(n: number): number { return n; }\n');
    ts.write('src/huge.ts', `import { hugeFn } from './huge-lib';\nexport const all = [${Array.from({ length: 2000 }, (_, i) => `hugeFn(${i})`).join(', ')}];\n`);
    await ts.commitAll('a generated line');
    const result = await runCliInProcess(['check-callers', 'hugeFn', '--defined-in', 'src/huge-lib.ts'], { cwd: ts.dir });
    expect(result.code).toBe(0);
    const found = JSON.parse(result.stdout) as Array<{ line: number; column: number; context: string }>;
    expect(found).toHaveLength(2001);
    for (const entry of found) {
      expect(entry.context.length).toBeLessThanOrEqual(402);
      expect(entry.context).toContain('hugeFn');
    }
    // the window holds the reference itself: the last call's number is in the last reference's context
    expect(found.at(-1)!.context).toContain('hugeFn(1999)');
    expect(result.stdout.length).toBeLessThan(2_000_000);
  });

  it('Go --defined-in: only qualifiers bound to the defining package, dot imports, not an external _test package (X47)', async () => {
    const go = await analysisFixtureRepo('go');
    go.write('sa/sa.go', 'package sa\n\nfunc Do() int { return 1 }\n');
    go.write('sa/more.go', 'package sa\n\ntype T struct{}\n\nfunc (T) Do() int { return 4 }\n\nfunc More(t T) int { return Do() + t.Do() }\n');
    go.write('sa/sa_test.go', 'package sa_test\n\nimport "example.com/shop/sa"\n\nfunc Do() int { return 3 }\n\nfunc Both() int { return Do() + sa.Do() }\n');
    go.write('sc/sc.go', 'package sc\n\nfunc Do() int { return 2 }\n');
    go.write('sb/sb.go', 'package sb\n\nimport (\n\t"example.com/shop/sa"\n\to "example.com/shop/sc"\n)\n\nfunc Use(v interface{ Do() int }) int { return sa.Do() + o.Do() + v.Do() }\n');
    go.write('sb/dot.go', 'package sb\n\nimport . "example.com/shop/sa"\n\nfunc Dot() int { return Do() }\n');
    // a selector continued on the next line
    go.write('sb/cont.go', 'package sb\n\nimport "example.com/shop/sa"\n\nfunc Cont() int {\n\treturn sa.\n\t\tDo()\n}\n');
    await go.commitAll('packages with a Do each, a dot import, an external test package');
    // not: more.go's `t.Do()` (a method), sa_test.go's own `Do()`, sb.go's `o.Do()` (package sc) and `v.Do()`
    expect(callers(await runCliInProcess(['check-callers', 'Do', '--defined-in', 'sa/sa.go'], { cwd: go.dir }))).toEqual(['sa/more.go:7:29 call', 'sa/sa_test.go:7:36 call', 'sb/cont.go:7:3 call', 'sb/dot.go:5:25 call', 'sb/sb.go:8:51 call']);
    expect(callers(await runCliInProcess(['check-callers', 'Do', '--defined-in', 'sc/sc.go'], { cwd: go.dir }))).toEqual(['sb/sb.go:8:60 call']);
    // a method: any `x.Do()` may call it (no types), an unqualified `Do` never does outside its package
    expect(callers(await runCliInProcess(['check-callers', 'Do', '--defined-in', 'sa/more.go'], { cwd: go.dir })).filter((line) => line.includes('method-call'))).toEqual(['sa/more.go:7:38 method-call', 'sb/sb.go:8:69 method-call']);
  });

  it('a qualified symbol narrows the answer: Type.Method member calls only, pkg.Func written pkg.Func or inside pkg', async () => {
    const go = await analysisFixtureRepo('go');
    go.write('sa/sa.go', 'package sa\n\ntype T struct{}\n\nfunc (T) Do() int { return 1 }\n\nfunc Do() int { return 2 }\n\nfunc Both() int { return Do() + T{}.Do() }\n');
    go.write('sb/sb.go', 'package sb\n\nimport "example.com/shop/sa"\n\nfunc Use(t sa.T) int { return sa.Do() + t.Do() }\n');
    await go.commitAll('a function and a method named Do');
    expect(callers(await runCliInProcess(['check-callers', 'Do'], { cwd: go.dir }))).toEqual(['sa/sa.go:9:26 call', 'sa/sa.go:9:37 method-call', 'sb/sb.go:5:34 call', 'sb/sb.go:5:43 method-call']);
    expect(callers(await runCliInProcess(['check-callers', 'T.Do'], { cwd: go.dir }))).toEqual(['sa/sa.go:9:37 method-call', 'sb/sb.go:5:43 method-call']);
    expect(callers(await runCliInProcess(['check-callers', 'sa.Do'], { cwd: go.dir }))).toEqual(['sa/sa.go:9:26 call', 'sa/sa.go:9:37 method-call', 'sb/sb.go:5:34 call']);
    // Rust: `Type::method(&x)` is the method too (X47)
    const rust = await analysisFixtureRepo('rust');
    rust.write('src/model.rs', 'pub struct W;\nimpl W {\n    pub fn make(&self) -> u32 { 1 }\n}\npub fn make() -> u32 { 2 }\npub fn z(w: &W) -> u32 { W::make(w) + w.make() + make() }\n');
    await rust.commitAll('an associated function called through its type');
    expect(callers(await runCliInProcess(['check-callers', 'W.make'], { cwd: rust.dir }))).toEqual(['src/model.rs:6:29 call', 'src/model.rs:6:41 method-call']);
  });

  it('a file over 2,000,000 characters is not parsed but scanned as text: whole words, kind other', async () => {
    const repo = await analysisFixtureRepo('ts');
    const padding = `${'const pad = 1;\n'.repeat(140_000)}`; // 2,100,000 characters
    repo.write('src/big.js', `${padding}hugeCall(1); hugeCallX(2);\nconst a = { hugeCall };\n`);
    await repo.commitAll('a generated giant');
    expect(callers(await runCliInProcess(['check-callers', 'hugeCall'], { cwd: repo.dir }))).toEqual(['src/big.js:140001:1 other', 'src/big.js:140002:13 other']);
  });

  it('bad input: one error line, exit 2', async () => {
    const repo = await analysisFixtureRepo('ts');
    expect(expectCodedError(await runCli(['check-callers', 'not a name'], { cwd: repo.dir }), { exitCode: 2 }).code).toBe('X001_INVALID_INPUT');
    expect(expectCodedError(await runCliInProcess(['check-callers', 'x', '--format', 'xml'], { cwd: repo.dir }), { exitCode: 2 }).code).toBe('X001_INVALID_INPUT');
    expect(expectCodedError(await runCliInProcess(['check-callers', 'x', '--repo-dir', repo.path('nope')]), { exitCode: 2 }).code).toBe('D011_REPO_ROOT_INVALID');
    expect(expectCodedError(await runCliInProcess(['check-callers', 'x', '--repo-dir', repo.root]), { exitCode: 2 }).code).toBe('D011_REPO_ROOT_INVALID');
    expect(expectCodedError(await runCliInProcess(['check-callers', 'x', '--defined-in', 'src/nope.ts'], { cwd: repo.dir }), { exitCode: 2 }).code).toBe('X002_FILE_READ');
    const directory = expectCodedError(await runCliInProcess(['check-callers', 'x', '--defined-in', 'src'], { cwd: repo.dir }), { exitCode: 2 });
    expect([directory.code, directory.message]).toEqual(['X001_INVALID_INPUT', '--defined-in src: a directory; name the file that defines the symbol']);
  });
});

describe('analyze-deps', () => {
  it('--files names a path with a comma of its own (the pieces that are no file are joined with the next ones)', async () => {
    const repo = await analysisFixtureRepo('ts');
    repo.write('src/we,ird/w.ts', "import { Widget } from '../model.js';\nexport const w: Widget | undefined = undefined;\n");
    await repo.commitAll('a directory with a comma');
    const result = await runCliInProcess(['analyze-deps', '.', '--files', 'src/we,ird/w.ts,src/model.ts', '--format', 'json'], { cwd: repo.dir });
    expect(result.code, result.stderr).toBe(0);
    expect((JSON.parse(result.stdout) as { nodes: Array<{ file: string; depends_on: string[] }> }).nodes.map((node) => `${node.file} <- ${node.depends_on.join(' ')}`)).toEqual(['src/model.ts <- ', 'src/we,ird/w.ts <- src/model.ts']);
    // a piece that joins into no file is still an error naming it
    expect(expectCodedError(await runCliInProcess(['analyze-deps', '.', '--files', 'src/we,nothing.ts'], { cwd: repo.dir }), { exitCode: 2 }).message).toMatch(/^src\/we: /);
  });

  it('prints YAML by default (integer wave keys, Go layout)', async () => {
    const repo = await analysisFixtureRepo('go');
    const result = await runCli(['analyze-deps', '.', '--files', 'service/service.go,model/model.go'], { cwd: repo.dir });
    expect(result.stdout).toBe(
      [
        'nodes:',
        '    - file: model/model.go',
        '      depends_on: []',
        '      depended_by:',
        '          - service/service.go',
        '      wave_candidate: 0',
        '    - file: service/service.go',
        '      depends_on:',
        '          - model/model.go',
        '      depended_by: []',
        '      wave_candidate: 1',
        'waves:',
        '    1:',
        '        - model/model.go',
        '    2:',
        '        - service/service.go',
        'cascade_candidates:',
        '    - file: cmd/main.go',
        '      reason: imports model/model.go, service/service.go',
        '      type: importer',
        '',
      ].join('\n'),
    );
  });

  it('bad input: missing --files, unknown file, unsupported file — exit 2', async () => {
    const repo = await analysisFixtureRepo('ts');
    expect(expectCodedError(await runCli(['analyze-deps', repo.dir]), { exitCode: 2 }).code).toBe('X001_INVALID_INPUT');
    expect(expectCodedError(await runCliInProcess(['analyze-deps', repo.dir, '--files', 'src/missing.ts']), { exitCode: 2 }).code).toBe('X002_FILE_READ');
    expect(expectCodedError(await runCliInProcess(['analyze-deps', repo.dir, '--files', 'README.md']), { exitCode: 2 }).code).toBe('X001_INVALID_INPUT');
    expect(expectCodedError(await runCliInProcess(['analyze-deps', repo.dir, '--files', '../x.ts']), { exitCode: 2 }).code).toBe('X001_INVALID_INPUT');
    // An untracked file's imports would be ignored: it is an error, not a silent wave 1.
    repo.write('src/fresh.ts', "import { run } from './service.js';\nrun(undefined as never);\n");
    const untracked = expectCodedError(await runCliInProcess(['analyze-deps', repo.dir, '--files', 'src/fresh.ts,src/service.ts']), { exitCode: 2 });
    expect([untracked.code, untracked.message]).toEqual(['X002_FILE_READ', 'src/fresh.ts: not tracked by git (git add it first; analyze-deps reads tracked files only)']);
    // Agent worktrees are never analysed, and the error says so.
    repo.write('.claude/worktrees/agent-a/src/x.ts', 'export const x = 1;\n');
    const excluded = expectCodedError(await runCliInProcess(['analyze-deps', repo.dir, '--files', '.claude/worktrees/agent-a/src/x.ts']), { exitCode: 2 });
    expect([excluded.code, excluded.message]).toEqual([
      'X001_INVALID_INPUT',
      '.claude/worktrees/agent-a/src/x.ts: excluded from analysis (agent worktrees, .polywave-state, node_modules, vendor and the Cargo build output under target are never analysed)',
    ]);
  });
});

describe('analyze-deps graph walks', () => {
  // A real 8,001-file repository takes about a minute to parse cold on the shared machine; the walks
  // themselves are what overflowed the call stack, so they are tested directly on a long chain.
  const files = Array.from({ length: 20_001 }, (_, index) => `f${String(index).padStart(5, '0')}.js`);
  const index = new Map(files.map((file, position) => [file, position]));
  it('a cycle through 20,001 files is found without recursion (V007, not a stack overflow)', () => {
    const cycle = findCycle(files, (file) => [files[(index.get(file)! + 1) % files.length]!]);
    expect(cycle?.length).toBe(20_002);
    expect([cycle![0], cycle![1], cycle![20_000], cycle![20_001]]).toEqual(['f00000.js', 'f00001.js', 'f20000.js', 'f00000.js']);
  });
  it('depths of a 20,001-file chain without recursion', () => {
    const depths = dependencyDepths(files, (file) => (index.get(file)! + 1 < files.length ? [files[index.get(file)! + 1]!] : []));
    expect([depths.get('f00000.js'), depths.get('f10000.js'), depths.get('f20000.js')]).toEqual([20_000, 10_000, 0]);
    expect(findCycle(files, (file) => (index.get(file)! + 1 < files.length ? [files[index.get(file)! + 1]!] : []))).toBeUndefined();
    // Diamond: longest chain wins.
    const diamond = dependencyDepths(['a', 'b', 'c', 'd'], (file) => ({ a: ['b', 'c'], b: ['d'], c: [], d: [] })[file]!);
    expect(Object.fromEntries(diamond)).toEqual({ a: 2, b: 1, c: 0, d: 0 });
  });
});

describe('detect-cascades', () => {
  it('comments and strings are semantic (low); a scope limits references to that definition', async () => {
    const repo = await analysisFixtureRepo('ts');
    const all = await runCliInProcess(['detect-cascades', repo.dir, '--renames', '[{"old":"makeWidget","new":"buildWidget","scope":"src"}]', '--format', 'json']);
    // (the uses through an alias — `createWidget` re-exported, `build` imported `as` — need no edit: X59-14)
    expect(cascades(all)).toEqual([
      'src/index.ts:1 syntax high makeWidget',
      'src/model.ts:5 syntax high makeWidget',
      'src/service.ts:1 syntax high makeWidget',
      'src/service.ts:3 semantic low // makeWidget is called through its alias',
      "src/service.ts:4 semantic low const label = 'makeWidget';",
      'test/model.test.ts:1 syntax high makeWidget',
      'test/model.test.ts:3 syntax medium makeWidget',
    ]);
    const first = (JSON.parse(all.stdout) as { cascade_candidates: Array<Record<string, unknown>> }).cascade_candidates[1];
    expect(first).toEqual({ file: 'src/model.ts', line: 5, match: 'makeWidget', cascade_type: 'syntax', severity: 'high', reason: 'function declaration uses renamed symbol makeWidget (now buildWidget)' });
    const yaml = await runCliInProcess(['detect-cascades', repo.dir, '--renames', '[{"old":"WidgetStore","new":"Shelf"}]']);
    expect(yaml.stdout.split('\n').slice(0, 7)).toEqual([
      'cascade_candidates:',
      '    - file: src/app.ts',
      '      line: 3',
      '      match: WidgetStore',
      '      cascade_type: syntax',
      '      severity: high',
      '      reason: import of renamed symbol WidgetStore (now Shelf)',
    ]);
  });

  it('a use through an alias needs no edit: `import { hashToken as other }` … `other(…)` and a re-export under another name are not listed, and a line\'s other `hashToken` (another module\'s) is not taken for it (outside round X59-14)', async () => {
    const repo = await createTestRepo({
      files: {
        'src/services/token.ts': 'export function hashToken(t: string): string {\n  return t;\n}\n',
        'src/other/token.ts': 'export function hashToken(t: string): number {\n  return t.length;\n}\n',
        'src/other/index.ts': "export { hashToken as tokenLength } from './token';\n",
        'src/app.ts': "import { hashToken } from './services/token';\nimport { hashToken as other } from './other/token';\nimport { tokenLength } from './other';\n\nexport const go = () => [hashToken('b'), other('c'), tokenLength('d')];\n",
      },
    });
    const result = await runCliInProcess(['detect-cascades', repo.dir, '--renames', JSON.stringify([{ old: 'hashToken', new: 'hashTok', scope: 'src/other/token.ts' }]), '--format', 'json']);
    expect(cascades(result)).toEqual(['src/app.ts:2 syntax high hashToken', 'src/other/index.ts:1 syntax high hashToken', 'src/other/token.ts:1 syntax high hashToken']);
  });

  it('with a scope, a mock.patch("pkg.mod.name") string naming a module of the scope counts in a test that imports nothing from it; one naming another module does not (outside round X54-06)', async () => {
    const repo = await createTestRepo({
      files: {
        'src/shop/__init__.py': '',
        'src/shop/services/__init__.py': '',
        'src/shop/services/pricing.py': 'def compute_total(items):\n    return sum(items)\n',
        'src/shop/api/__init__.py': '',
        'src/shop/api/views.py': 'from shop.services.pricing import compute_total\n\n\ndef checkout(items):\n    return compute_total(items)\n',
        'src/shop/other.py': 'def compute_total():\n    return 0\n',
        'tests/test_views.py': 'from unittest import mock\n\nfrom shop.api.views import checkout\n\n\n@mock.patch("shop.api.views.compute_total")\ndef test_checkout(total):\n    checkout([1])\n\n\n@mock.patch("shop.services.pricing.compute_total", return_value=3)\ndef test_pricing(total):\n    checkout([1])\n\n\n@mock.patch("shop.other.compute_total")\ndef test_other(total):\n    checkout([1])\n',
      },
    });
    const result = await runCliInProcess(['detect-cascades', repo.dir, '--renames', JSON.stringify([{ old: 'compute_total', new: 'order_total', scope: 'src/shop/services/pricing.py' }]), '--format', 'json']);
    expect(result.code, result.stderr).toBe(0);
    expect(cascades(result)).toEqual([
      'src/shop/api/views.py:1 syntax high compute_total',
      'src/shop/api/views.py:5 syntax medium compute_total',
      'src/shop/services/pricing.py:1 syntax high compute_total',
      'tests/test_views.py:6 semantic low @mock.patch("shop.api.views.compute_total")',
      'tests/test_views.py:11 semantic low @mock.patch("shop.services.pricing.compute_total", return_value=3)',
    ]);
  });

  it('an interface or trait method is a definition: check-callers --defined-in answers without a warning, the declaration is no reference, and a scoped rename lists the methods that may implement it (outside round X54-10)', async () => {
    const repo = await createTestRepo({
      files: {
        'go.mod': 'module example.com/svc\n\ngo 1.22\n',
        'store/store.go': 'package store\n\ntype Store interface {\n\tPut(key string) error\n\tGet(key string) string\n}\n',
        'store/mem.go': 'package store\n\ntype Mem struct{}\n\nfunc (m *Mem) Put(key string) error { return nil }\n\nfunc (m *Mem) Get(key string) string { return "" }\n',
        'service/service.go': 'package service\n\nimport "example.com/svc/store"\n\nfunc Save(s store.Store) error {\n\treturn s.Put("k")\n}\n',
        'service/service_test.go': 'package service\n\ntype fake struct{}\n\nfunc (f *fake) Put(key string) error { return nil }\n\nfunc (f *fake) Get(key string) string { return "" }\n',
        // (a type with a Put but no Get does not implement Store: not listed — outside round X55-04)
        'cache/cache.go': 'package cache\n\ntype Cache struct{}\n\nfunc (c *Cache) Put(key string) error { return nil }\n',
        'Cargo.toml': '[package]\nname = "kv"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod kv;\npub mod other;\n',
        // (another trait declaring `fetch`, its impl, and a plain method: none implements Kv)
        'src/other.rs': 'use crate::kv::Kv;\n\npub trait Source {\n    fn fetch(&self, key: &str) -> String;\n}\n\npub struct Web;\n\nimpl Source for Web {\n    fn fetch(&self, key: &str) -> String {\n        key.into()\n    }\n}\n\npub struct Cached<S>(S);\n\nimpl<S: Kv> Source for Cached<S> {\n    fn fetch(&self, key: &str) -> String {\n        self.0.fetch(key)\n    }\n}\n\nimpl Kv for Web {\n    fn fetch(&self, key: &str) -> String {\n        key.into()\n    }\n}\n',
        'src/kv.rs': 'pub trait Kv {\n    fn fetch(&self, key: &str) -> String;\n}\n\npub struct Mem;\n\nimpl Kv for Mem {\n    fn fetch(&self, key: &str) -> String {\n        key.to_string()\n    }\n}\n\npub fn first(kv: &dyn Kv) -> String {\n    kv.fetch("a")\n}\n',
        'web/cache.ts': 'export interface Cache {\n  lookup(key: string): string;\n}\n\nexport function use(c: Cache): string {\n  return c.lookup(\'k\');\n}\n',
      },
    });
    const go = await runCliInProcess(['check-callers', 'Put', '--defined-in', 'store/store.go', '--format', 'json'], { cwd: repo.dir });
    expect([go.code, go.stderr]).toEqual([0, '']);
    expect(fileLines(go)).toEqual(['service/service.go:6']);
    const rust = await runCliInProcess(['check-callers', 'fetch', '--defined-in', 'src/kv.rs', '--format', 'json'], { cwd: repo.dir });
    expect([rust.code, rust.stderr]).toEqual([0, '']);
    // (other.rs:19 `self.0.fetch(key)` calls Kv's fetch: `S: Kv`)
    expect(fileLines(rust)).toEqual(['src/kv.rs:14', 'src/other.rs:19']);
    const ts = await runCliInProcess(['check-callers', 'lookup', '--defined-in', 'web/cache.ts', '--format', 'json'], { cwd: repo.dir });
    expect([ts.code, ts.stderr]).toEqual([0, '']);
    expect(fileLines(ts)).toEqual(['web/cache.ts:6']);
    const rename = await runCliInProcess(['detect-cascades', repo.dir, '--renames', JSON.stringify([{ old: 'Put', new: 'Save', scope: 'store/store.go' }]), '--format', 'json']);
    expect(cascades(rename)).toEqual([
      'service/service.go:6 syntax medium Put',
      'service/service_test.go:5 syntax high Put',
      'store/mem.go:5 syntax high Put',
      'store/store.go:4 syntax high Put',
    ]);
    const trait = await runCliInProcess(['detect-cascades', repo.dir, '--renames', JSON.stringify([{ old: 'fetch', new: 'load', scope: 'src/kv.rs' }]), '--format', 'json']);
    // (another trait's impl — also one bounded by Kv, `impl<S: Kv> Source for Cached<S>` — is not Kv's: X56-09)
    expect(cascades(trait).filter((line) => line.includes(' syntax high '))).toEqual(['src/kv.rs:2 syntax high fetch', 'src/kv.rs:8 syntax high fetch', 'src/other.rs:24 syntax high fetch']);
    expect((JSON.parse(rename.stdout) as { cascade_candidates: Array<{ file: string; reason: string }> }).cascade_candidates.find((candidate) => candidate.file === 'store/mem.go')?.reason).toBe("method Put of Mem may implement Store: rename it with the interface's (now Save)");
  });

  it('CommonJS `exports.x = function x` and `module.exports.y = …` define x and y: --defined-in answers without a warning, the assignment is no reference (outside round X54-01)', async () => {
    const repo = await createTestRepo({
      files: {
        'legacy/logger.js': "exports.createLogger = function createLogger(name) {\n  return name;\n};\nmodule.exports.level = 'info';\n",
        'legacy/server.js': "const logger = require('./logger');\nconst { createLogger, level } = require('./logger');\n\nlogger.createLogger('a');\ncreateLogger(level);\n",
        'legacy/app.js': 'module.exports = function start() {\n  return 1;\n};\n',
        'legacy/app.test.js': "const start = require('./app');\n\ntest('starts', () => {\n  start();\n});\n",
      },
    });
    // `const start = require('./app')` binds the module's export, no declaration of the test's own (outside round X55-06:
    // it was taken for one, and the call was dropped).
    const start = await runCliInProcess(['check-callers', 'start', '--defined-in', 'legacy/app.js', '--format', 'json'], { cwd: repo.dir });
    expect(fileLines(start)).toEqual(['legacy/app.test.js:4']);
    const result = await runCliInProcess(['check-callers', 'createLogger', '--defined-in', 'legacy/logger.js', '--format', 'json'], { cwd: repo.dir });
    expect([result.code, result.stderr]).toEqual([0, '']);
    expect(fileLines(result)).toEqual(['legacy/server.js:2', 'legacy/server.js:4', 'legacy/server.js:5']);
    const level = await runCliInProcess(['check-callers', 'level', '--defined-in', 'legacy/logger.js', '--format', 'json'], { cwd: repo.dir });
    expect([level.code, level.stderr]).toEqual([0, '']);
    expect(fileLines(level)).toEqual(['legacy/server.js:2', 'legacy/server.js:5']);
  });

  it('Python: a class method called through a module (`shop.Product.from_dict()`, `pm.Product.from_dict()`) is a method call, kept by `Product.from_dict` and by --defined-in (outside round X54-05)', async () => {
    const repo = await createTestRepo({
      files: {
        'shop/__init__.py': 'from .models import Product\n',
        'shop/models.py': 'class Product:\n    @classmethod\n    def from_dict(cls, data):\n        return cls()\n',
        'shop/tools.py': 'def from_dict(data):\n    return data\n',
        'tests/test_product.py': 'import shop\nimport shop.models as pm\nimport shop.tools as tools\n\n\ndef test_variants():\n    a = shop.Product.from_dict({})\n    b = pm.Product.from_dict({})\n    c = tools.from_dict({})\n',
      },
    });
    const plain = await runCliInProcess(['check-callers', 'from_dict', '--format', 'json'], { cwd: repo.dir });
    expect((JSON.parse(plain.stdout) as Array<{ file: string; line: number; kind: string }>).map((reference) => `${reference.file}:${reference.line} ${reference.kind}`)).toEqual(['tests/test_product.py:7 method-call', 'tests/test_product.py:8 method-call', 'tests/test_product.py:9 call']);
    // (with --defined-in too: the chain's root `shop` is no source of `from_dict`, but the call is the class's method's)
    const defined = await runCliInProcess(['check-callers', 'from_dict', '--defined-in', 'shop/models.py', '--format', 'json'], { cwd: repo.dir });
    expect(fileLines(defined)).toEqual(['tests/test_product.py:7', 'tests/test_product.py:8']);
    const qualified = await runCliInProcess(['check-callers', 'Product.from_dict', '--format', 'json'], { cwd: repo.dir });
    expect(fileLines(qualified)).toEqual(['tests/test_product.py:7', 'tests/test_product.py:8']);
  });

  it('pytest fixtures are used by parameter name: requests in the conftest\'s subtree, usefixtures strings, a closer override taking its subtree; a parameter of another function is none (outside round X54-09)', async () => {
    const repo = await createTestRepo({
      files: {
        'app/db.py': 'def connect(db):\n    return db\n',
        'tests/conftest.py': 'import pytest\n\n\n@pytest.fixture\ndef db():\n    return {}\n\n\n@pytest.fixture(scope="session")\ndef client(db):\n    return db\n',
        'tests/test_api.py': 'import pytest\n\n\ndef test_get(client, db):\n    assert db == {}\n\n\n@pytest.mark.usefixtures("db")\ndef test_ping():\n    pass\n',
        'tests/slow/conftest.py': 'import pytest\n\n\n@pytest.fixture\ndef db(db):\n    return dict(db, slow=True)\n',
        'tests/slow/test_big.py': 'def test_big(db):\n    assert db["slow"]\n',
        'other/test_misc.py': 'def test_misc(db):\n    assert db\n',
      },
    });
    const refs = async (...args: string[]) => {
      const result = await runCliInProcess(['check-callers', ...args, '--format', 'json'], { cwd: repo.dir });
      expect(result.code, result.stderr).toBe(0);
      return (JSON.parse(result.stdout) as Array<{ file: string; line: number; column: number }>).map((reference) => `${reference.file}:${reference.line}:${reference.column}`);
    };
    // The outer fixture: its own conftest's client, test_api's parameter and usefixtures string, and the override's
    // `def db(db):` (it asks for the outer one) — not test_big (the override's), not other/ (no conftest reaches it),
    // not app/db.py's parameter (no test file).
    expect(await refs('db', '--defined-in', 'tests/conftest.py')).toEqual(['tests/conftest.py:10:12', 'tests/slow/conftest.py:5:8', 'tests/test_api.py:4:22', 'tests/test_api.py:8:27']);
    expect(await refs('db', '--defined-in', 'tests/conftest.py'), 'a second call (facts cached)').toEqual(['tests/conftest.py:10:12', 'tests/slow/conftest.py:5:8', 'tests/test_api.py:4:22', 'tests/test_api.py:8:27']);
    expect(await refs('db', '--defined-in', 'tests/slow/conftest.py')).toEqual(['tests/slow/test_big.py:1:14']);
    expect(await refs('client', '--defined-in', 'tests/conftest.py')).toEqual(['tests/test_api.py:4:14']);
    // No fixture of that name: nothing (a plain function's parameters are no uses of anything).
    expect(await refs('connect')).toEqual([]);
    const rename = await runCliInProcess(['detect-cascades', repo.dir, '--renames', JSON.stringify([{ old: 'client', new: 'api', scope: 'tests/conftest.py' }]), '--format', 'json']);
    expect(cascades(rename)).toEqual(['tests/conftest.py:10 syntax high client', 'tests/test_api.py:4 syntax medium client']);
  });

  it('Rust `new --defined-in item.rs`: `Item::new()`, `Self::new()` and the type under an alias, not another type\'s `Store::new()` (outside round X54-08)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "shop"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod item;\npub mod store;\n',
        'src/item.rs': 'pub struct Item;\n\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n    pub fn twice() -> (Item, Item) {\n        (Self::new(), Item::new())\n    }\n}\n',
        'src/store.rs': 'use crate::item::Item as Thing;\n\npub struct Store;\n\nimpl Store {\n    pub fn new() -> Store {\n        let _t = Thing::new();\n        Store\n    }\n}\n\npub fn make() -> Store {\n    Store::new()\n}\n',
      },
    });
    const result = await runCliInProcess(['check-callers', 'new', '--defined-in', 'src/item.rs', '--format', 'json'], { cwd: repo.dir });
    expect([result.code, result.stderr]).toEqual([0, '']);
    expect((JSON.parse(result.stdout) as Array<{ file: string; line: number; column: number }>).map((reference) => `${reference.file}:${reference.line}:${reference.column}`)).toEqual(['src/item.rs:8:16', 'src/item.rs:8:29', 'src/store.rs:7:25']);
    const store = await runCliInProcess(['check-callers', 'new', '--defined-in', 'src/store.rs', '--format', 'json'], { cwd: repo.dir });
    expect(fileLines(store)).toEqual(['src/store.rs:13']);
  });

  it('Rust `build --defined-in` a trait: `T::build()` on a type parameter bounded by it and `Item::build()` on a type that implements it, not another type\'s own `build` (outside round X57-13)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "mk"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod item;\npub mod make;\npub mod widgets;\n',
        'src/item.rs': 'pub struct Item(pub u32);\n',
        'src/make.rs': 'pub trait Make {\n    fn build(id: u32) -> Self;\n}\n\npub fn twice<T: Clone + Make>() -> (T, T) {\n    (T::build(1), T::build(2))\n}\n\npub fn via<M>() -> M where M: ?Sized + crate::make::Make {\n    M::build(3)\n}\n\npub fn other<U: Clone, V: Make>() -> V {\n    let _u: Option<U> = None;\n    U::build(7)\n}\n',
        'src/widgets.rs': 'use crate::make::Make as Mk;\nuse crate::item::Item;\n\nimpl Mk for Item {\n    fn build(id: u32) -> Self { Item(id) }\n}\n\npub struct Gadget;\nimpl Gadget {\n    pub fn build(_x: u32) -> Self { Gadget }\n}\n\npub fn go() -> Item {\n    let _g = Gadget::build(0);\n    let _c = Item::build(6);\n    Item::build(8)\n}\n',
      },
    });
    const result = await runCliInProcess(['check-callers', 'build', '--defined-in', 'src/make.rs', '--format', 'json'], { cwd: repo.dir });
    expect([result.code, result.stderr]).toEqual([0, '']);
    // (make.rs:15 `U::build(7)`: U is bounded by Clone only — no use; widgets.rs:14 `Gadget::build`: Gadget's own)
    expect(fileLines(result)).toEqual(['src/make.rs:6', 'src/make.rs:6', 'src/make.rs:10', 'src/widgets.rs:15', 'src/widgets.rs:16']);
    const cascades = await runCliInProcess(['detect-cascades', '--renames', JSON.stringify([{ old: 'build', new: 'make', scope: 'src/make.rs' }]), '--format', 'json'], { cwd: repo.dir });
    expect([cascades.code, cascades.stderr]).toEqual([0, '']);
    const listed = (JSON.parse(cascades.stdout) as { cascade_candidates: Array<{ file: string; line: number }> }).cascade_candidates.map((candidate) => `${candidate.file}:${candidate.line}`);
    expect(listed).toEqual(expect.arrayContaining(['src/make.rs:6', 'src/make.rs:10', 'src/widgets.rs:15', 'src/widgets.rs:16']));
    expect(listed).not.toContain('src/widgets.rs:14');
    expect(listed).not.toContain('src/make.rs:15');
  });

  it('Rust `build --defined-in` a trait: bounds through a subtrait, a re-exported alias of the trait and a bound list with generic traits (outside round X58-01/02/22)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "mk"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod make;\npub mod named;\npub mod generic;\npub mod parse;\npub mod other;\n\npub use make::Make as Buildable;\n',
        'src/make.rs': 'pub trait Make {\n    fn build(id: u32) -> Self;\n}\n\npub trait MakeNamed: Make + Clone {\n    fn name() -> String;\n}\n',
        'src/named.rs': 'use crate::make::MakeNamed;\n\npub fn named<N: MakeNamed>() -> N {\n    N::build(6)\n}\n',
        'src/generic.rs': 'use crate::Buildable;\n\npub fn one<B: Buildable>() -> B {\n    B::build(5)\n}\n',
        'src/parse.rs': 'use crate::make::Make;\n\npub fn many<U>(n: u32) -> Vec<U>\nwhere\n    U: Into<String> + Make,\n{\n    (0..n).map(U::build).collect()\n}\n',
        'src/other.rs': 'pub trait Other {\n    fn build(id: u32) -> Self;\n}\n\npub fn other<O: Other + Clone>() -> O {\n    O::build(7)\n}\n',
      },
    });
    // (other.rs: O is bounded by another trait with a build of its own — not a use)
    expect(await definedInCallers(repo.dir, 'build', 'src/make.rs')).toEqual(['src/generic.rs:4', 'src/named.rs:4', 'src/parse.rs:7']);
  });

  it('check-test-cascade: a task naming a Rust trait\'s method `Make::build()` finds the tests calling it through `T::build()`, a subtrait bound and an implementing type (outside round X58-16: a false pass); so does check-callers Make.build', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "mk"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod make;\npub mod item;\n',
        'src/make.rs': 'pub trait Make {\n    fn build(id: u32) -> Self;\n}\n\npub trait MakeNamed: Make {}\n',
        'src/item.rs': 'use crate::make::Make;\n\npub struct Item {\n    pub id: u32,\n}\n\nimpl Make for Item {\n    fn build(id: u32) -> Self {\n        Item { id }\n    }\n}\n',
        'tests/it.rs': 'use mk::item::Item;\nuse mk::make::{Make, MakeNamed};\n\nfn one<T: Make>() -> T {\n    T::build(1)\n}\n\nfn two<N: MakeNamed>() -> N {\n    N::build(2)\n}\n\n#[test]\nfn builds() {\n    assert_eq!(Item::build(4).id, 4);\n    let _ = (one::<Item>(), two::<Item>);\n}\n',
        'docs/IMPL/IMPL-mk.yaml': 'title: t\nfeature_slug: mk\nverdict: SUITABLE\nfile_ownership:\n  - file: src/make.rs\n    agent: A\n    wave: 1\n  - file: src/item.rs\n    agent: A\n    wave: 1\nwaves:\n  - number: 1\n    agents:\n      - id: A\n        task: "Change `Make::build()` to take a `&Config` parameter and update every impl."\n',
      },
    });
    expect(await testCascadeLines(repo.dir, repo.path('docs/IMPL/IMPL-mk.yaml'))).toEqual(['Make.build tests/it.rs:5', 'Make.build tests/it.rs:9', 'Make.build tests/it.rs:14']);
    // check-callers Make.build without --defined-in: the one file declaring trait Make with a build stands in for it
    const callers = await runCliInProcess(['check-callers', 'Make.build', '--format', 'json'], { cwd: repo.dir });
    expect([callers.code, callers.stderr]).toEqual([0, '']);
    expect(fileLines(callers)).toEqual(['tests/it.rs:5', 'tests/it.rs:9', 'tests/it.rs:14']);
  });

  it('check-test-cascade: library code after a closed `#[cfg(test)] mod tests { … }` is not test code; the module\'s own lines are, braces in its strings and comments too (outside round X62-10)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': tcCargo,
        'src/lib.rs': 'pub mod util;\npub mod app;\n',
        'src/util.rs': 'pub fn parse(x: u32) -> u32 {\n    x\n}\n',
        'src/app.rs': 'use crate::util::parse;\n\npub fn early() -> u32 {\n    parse(1)\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n    const FIXTURE: &str = "}}} {";\n    // a closing brace in a comment: }\n    #[test]\n    fn t() {\n        assert_eq!(parse(2), 2);\n    }\n}\n\npub fn late<\'a>(_s: &\'a str) -> u32 {\n    parse(3)\n}\n',
        'docs/IMPL/IMPL-tc.yaml': tcImpl,
      },
    });
    expect(await testCascadeLines(repo.dir, repo.path('docs/IMPL/IMPL-tc.yaml'))).toEqual(['parse src/app.rs:14']);
  });

  it('check-test-cascade: `#[cfg(test)]` on an element inside `vec![…]` makes that element test code, through its `,` — not the elements after it (outside round X65-17)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': tcCargo,
        'src/lib.rs': 'pub mod util;\npub mod app;\n',
        'src/util.rs': 'pub fn parse(x: u32) -> u32 {\n    x\n}\n',
        'src/app.rs': 'pub fn g() -> u32 {\n    let v = vec![\n        #[cfg(test)]\n        crate::util::parse(6),\n        crate::util::parse(\n            7,\n        ),\n    ];\n    v[0]\n}\n',
        'docs/IMPL/IMPL-tc.yaml': tcImpl,
      },
    });
    // = cargo (rename util.rs's `fn parse`: errors of `cargo check --tests` minus those of `--lib --bins`): app.rs:4
    expect(await testCascadeLines(repo.dir, repo.path('docs/IMPL/IMPL-tc.yaml'))).toEqual(['parse src/app.rs:4']);
  });

  it('Rust --defined-in: `#[cfg(test)]` / `#[cfg(not(test))]` on an element inside `vec![…]` puts that element in one build — its `Item` is the build\'s `use` (check-callers reads cfg in macro tokens as check-test-cascade does: outside round X65-17)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod user;\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/user.rs': '#[cfg(test)]\nuse crate::item::Item;\n#[cfg(not(test))]\nuse crate::util::Item;\npub fn g() -> Vec<u32> {\n    vec![\n        #[cfg(test)]\n        {\n            let _ = Item::new();\n            1\n        },\n        #[cfg(not(test))]\n        Item::new(2).0,\n        3,\n    ]\n}\n',
      },
    });
    // = cargo (`check --all-targets`, util.rs's / item.rs's `fn new` renamed): user.rs:13:15 / user.rs:9:27
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/user.rs:13:15']);
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs', true)).toEqual(['src/user.rs:9:27']);
  });

  it('check-test-cascade: a Rust item is test code when its cfg can only hold under test — `#[cfg(all(test, feature = "x"))]`, `#[cfg( test )]` — through the item\'s end, a `;` in its signature too (outside round X63-05/06)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "tc"\nversion = "0.1.0"\nedition = "2021"\n\n[features]\nx = []\n',
        'src/lib.rs': 'pub mod util;\npub mod a;\npub mod b;\npub mod f;\n',
        'src/util.rs': 'pub fn parse() -> u32 {\n    1\n}\n',
        'src/a.rs': 'pub fn lib_a() {}\n\n#[cfg(all(test, feature = "x"))]\nmod tests {\n    #[test]\n    fn t() {\n        crate::util::parse();\n    }\n}\n',
        'src/b.rs': 'pub fn lib_b() {}\n\n#[cfg( test )]\nfn helper() -> [u32; 1] {\n    [crate::util::parse()]\n}\n\npub fn late() -> u32 {\n    crate::util::parse()\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {\n        assert_eq!(super::helper()[0], 1);\n    }\n}\n',
        'src/f.rs': '#[cfg(any(test, feature = "x"))]\npub fn helper() -> u32 {\n    crate::util::parse()\n}\n\n#[cfg(not(test))]\npub fn prod() -> u32 {\n    crate::util::parse()\n}\n',
        'docs/IMPL/IMPL-tc.yaml': tcImpl,
      },
    });
    // = cargo: with parse renamed, `cargo check --lib --tests --features x` errors at a.rs:7, b.rs:5, b.rs:9, f.rs:3,
    // f.rs:8 and `cargo check --lib --features x` at b.rs:9, f.rs:3, f.rs:8 — the test build's own are a.rs:7, b.rs:5
    // (`any(test, feature = "x")` is library code behind a feature as well: not test code)
    expect(await testCascadeLines(repo.dir, repo.path('docs/IMPL/IMPL-tc.yaml'))).toEqual(['parse src/a.rs:7', 'parse src/b.rs:5']);
  });

  it('check-test-cascade: the file of a `#[cfg(test)] mod unit;` is test code, every line — the modules it declares too — and so is a file starting with `#![cfg(test)]` (outside round X63-07)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': tcCargo,
        'src/lib.rs': 'pub mod util;\npub mod c;\nmod g;\n',
        'src/util.rs': 'pub fn parse() -> u32 {\n    1\n}\n',
        'src/c.rs': 'pub fn lib_c() -> u32 {\n    crate::util::parse()\n}\n\n#[cfg(test)]\nmod unit;\n',
        'src/c/unit.rs': 'mod deep;\n\n#[test]\nfn t() {\n    crate::util::parse();\n}\n',
        'src/c/unit/deep.rs': '#[test]\nfn d() {\n    assert_eq!(crate::util::parse(), 1);\n}\n',
        'src/g.rs': '#![cfg(test)]\n\n#[test]\nfn g() {\n    crate::util::parse();\n}\n',
        'docs/IMPL/IMPL-tc.yaml': tcImpl,
      },
    });
    // = cargo: with parse renamed, `cargo check --lib --tests` errors at c.rs:2, c/unit.rs:5, c/unit/deep.rs:3, g.rs:5;
    // `cargo check --lib` at c.rs:2 only
    expect(await testCascadeLines(repo.dir, repo.path('docs/IMPL/IMPL-tc.yaml'))).toEqual(['parse src/c/unit.rs:5', 'parse src/c/unit/deep.rs:3', 'parse src/g.rs:5']);
  });

  it('check-test-cascade: a cfg that is false whenever `test` is — `not(any(not(test), feature = "x"))` — is test code (not `any()`, which holds in no build), and so is the file a `#[cfg_attr(test, path = "h_test.rs")] mod h;` makes the module under test (X64-09, X64-10)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "tc"\nversion = "0.1.0"\nedition = "2021"\n\n[features]\nx = []\n',
        'src/lib.rs': 'pub mod util;\npub mod a;\n#[cfg_attr(test, path = "h_test.rs")]\nmod h;\npub fn use_h() -> u32 {\n    h::h()\n}\n',
        'src/util.rs': 'pub fn parse() -> u32 {\n    1\n}\n',
        'src/a.rs': 'pub fn lib_a() {}\n\n#[cfg(not(any(not(test), feature = "x")))]\nfn neg() -> u32 {\n    crate::util::parse()\n}\n\n#[cfg(any())]\nfn never() -> u32 {\n    crate::util::parse()\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {\n        assert_eq!(super::neg(), 1);\n    }\n}\n',
        'src/h.rs': 'pub fn h() -> u32 {\n    crate::util::parse()\n}\n',
        'src/h_test.rs': 'pub fn h() -> u32 {\n    crate::util::parse() + 1\n}\n',
        'docs/IMPL/IMPL-tc.yaml': tcImpl,
      },
    });
    // = cargo: with parse renamed, `cargo check --tests` errors minus `cargo check --lib` errors: a.rs:5, h_test.rs:2
    expect(await testCascadeLines(repo.dir, repo.path('docs/IMPL/IMPL-tc.yaml'))).toEqual(['parse src/a.rs:5', 'parse src/h_test.rs:2']);
  });

  it('check-test-cascade (rule E46): a Rust file\'s test-only lines and `mod x;` declarations come from the per-blob facts cache — parsed once per content, not on every call', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': tcCargo,
        'src/lib.rs': 'pub mod a;\n#[cfg_attr(test, path = "h_test.rs")]\nmod h;\n',
        'src/a.rs': 'pub fn lib_a() {}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {}\n}\n\n#[cfg(test)]\nmod unit;\n',
      },
    });
    const first = await rustTestFacts(repo.dir, ['src/a.rs', 'src/lib.rs']);
    expect([...first.entries()].sort()).toEqual([
      ['src/a.rs', { whole: false, ranges: [[3, 7], [9, 10]], modDecls: [{ name: 'unit', line: 10, modulePath: [] }] }],
      ['src/lib.rs', { whole: false, ranges: [], modDecls: [{ name: 'a', line: 1, modulePath: [] }, { name: 'h', line: 3, modulePath: [], testPath: 'h_test.rs' }] }],
    ]);
    const parsed = engineCounters.parsed;
    expect([...(await rustTestFacts(repo.dir, ['src/a.rs', 'src/lib.rs'])).entries()].sort()).toEqual([...first.entries()].sort());
    expect(engineCounters.parsed).toBe(parsed);
  });

  it('Rust --defined-in: a `macro_rules!` body naming the method (a generated `mod` calling `Item::new(1)`) is not expanded — check-callers warns on stderr instead of answering silently (X64-06)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\nuse crate::item::Item;\nmacro_rules! gen {\n    ($name:ident) => {\n        pub mod $name {\n            use crate::util::Item;\n            pub fn f() {\n                let _ = Item::new(1);\n            }\n        }\n    };\n}\ngen!(g1);\npub fn g() {\n    let _ = Item::new();\n}\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
      },
    });
    // (cargo: with util.rs's `fn new` renamed, E0599 at lib.rs:9:31 — inside the macro's expansion, which is not analysed)
    const result = await runCliInProcess(['check-callers', 'new', '--defined-in', 'src/util.rs', '--format', 'json'], { cwd: repo.dir });
    expect([result.code, JSON.parse(result.stdout)]).toEqual([0, []]);
    expect(result.stderr).toBe('check-callers: warning: src/lib.rs:4: macro_rules! gen names new — what a macro expands to (its modules, items and calls) is not analysed; callers there are not listed\n');
  });

  it('Rust --defined-in: Self:: in a subtrait\'s default method, calls through a blanket impl, and a module path segment named like the function (outside round X58-25/26/27)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "mk"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod make;\npub mod named;\npub mod seed;\npub mod settings;\npub mod render;\npub mod page;\n',
        'src/make.rs': 'pub trait Make {\n    fn build(id: u32) -> Self;\n}\n',
        'src/named.rs': 'use crate::make::Make;\n\npub trait MakeNamed: Make + Sized {\n    fn fresh() -> Self {\n        Self::build(0)\n    }\n}\n',
        'src/seed.rs': 'pub trait Seed {\n    fn seed(n: u32) -> Self;\n}\n\nimpl<T: Default> Seed for T {\n    fn seed(_n: u32) -> Self {\n        T::default()\n    }\n}\n',
        'src/settings.rs': 'use crate::seed::Seed;\n\n#[derive(Default)]\npub struct Settings;\n\npub fn both() -> (Settings, String) {\n    (Settings::seed(1), String::seed(2))\n}\n',
        'src/render.rs': 'pub fn render(x: u32) -> String {\n    x.to_string()\n}\n',
        'src/page.rs': 'use crate::render;\n\npub fn page() -> String {\n    render::render(1)\n}\n',
      },
    });
    const callers = (symbol: string, definedIn: string) => definedInCallers(repo.dir, symbol, definedIn, true);
    expect(await callers('build', 'src/make.rs')).toEqual(['src/named.rs:5:15']);
    // (settings.rs:1 `crate::seed::Seed`: the module seed, not the method)
    expect(await callers('seed', 'src/seed.rs')).toEqual(['src/settings.rs:7:16', 'src/settings.rs:7:33']);
    // (page.rs:1 `use crate::render;` imports the module; page.rs:4's first `render` is that module)
    expect(await callers('render', 'src/render.rs')).toEqual(['src/page.rs:4:13']);
  });

  it('detect-cascades (Rust): an impl of the trait under the file\'s alias for it (`use crate::make::Make as Constructible;`) may implement it (outside rounds X56-10, X58-20)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "mk"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod make;\npub mod gadget;\n',
        'src/make.rs': 'pub trait Make {\n    fn build(id: u32) -> Self;\n}\n',
        'src/gadget.rs': 'use crate::make::Make as Constructible;\n\npub struct Gadget;\n\nimpl Constructible for Gadget {\n    fn build(_id: u32) -> Self {\n        Gadget\n    }\n}\n\npub struct Other;\n\nimpl Other {\n    pub fn build(_id: u32) -> Self {\n        Other\n    }\n}\n',
      },
    });
    const result = await runCliInProcess(['detect-cascades', '--renames', JSON.stringify([{ old: 'build', new: 'make', scope: 'src/make.rs' }]), '--format', 'json'], { cwd: repo.dir });
    expect([result.code, result.stderr]).toEqual([0, '']);
    const listed = (JSON.parse(result.stdout) as { cascade_candidates: Array<{ file: string; line: number; severity: string }> }).cascade_candidates.map((candidate) => `${candidate.file}:${candidate.line} ${candidate.severity}`);
    expect(listed).toEqual(['src/gadget.rs:6 high', 'src/make.rs:2 high']);
  });

  it('Rust --defined-in: `Self::` is the enclosing impl\'s type, a facade\'s `pub use item::Item` is followed, an inline module\'s own `use` decides inside it (outside round X59-03/15/16)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "rs5"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod util;\npub mod shop;\npub mod b;\n',
        'src/util.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Self {\n        Item\n    }\n}\npub struct Other;\nimpl Other {\n    pub fn make() -> (Self, Item) {\n        (Self::new(), Item::new())\n    }\n    fn new() -> Self {\n        Other\n    }\n}\n',
        'src/shop/mod.rs': 'mod item;\npub use item::Item;\n',
        'src/shop/item.rs': 'pub struct Item {\n    pub id: u32,\n}\nimpl Item {\n    pub fn new(id: u32) -> Self {\n        Self { id }\n    }\n    pub fn copy(&self) -> Self {\n        Self::new(self.id)\n    }\n}\n',
        'src/b.rs': 'use crate::shop::Item;\nuse crate::util;\npub fn b() -> (Item, util::Item) {\n    (Item::new(1), util::Item::new())\n}\n#[cfg(test)]\nmod tests {\n    use crate::util::Item;\n    #[test]\n    fn t() {\n        let _ = Item::new();\n    }\n}\n',
      },
    });
    // (util.rs:10 `Self::new()` is Other's own `new` — util.rs defines both: by the file, it counts; shop's Self::new does not)
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/b.rs:4:32', 'src/b.rs:11:23', 'src/util.rs:10:16', 'src/util.rs:10:29']);
    expect(await definedInCallers(repo.dir, 'new', 'src/shop/item.rs', true)).toEqual(['src/b.rs:4:12', 'src/shop/item.rs:9:15']);
  });

  it('Rust --defined-in: a `use` binds in the block it is in, by the syntax tree (a closed `mod sub { use crate::util::Item; }` is not a later `mod tests2 { use super::*; … }`\'s; a multi-line grouped `use crate::{ util::{self as u, Item}, };`; strings, comments and attributes at column 0, one-line and unindented modules, a function body\'s `use`, a `use` after its reference, `use super::Item` in an inline module: outside round X62)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "rs3"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod make;\npub mod inner;\npub mod nest;\npub mod a2;\npub mod a3;\npub mod a4;\npub mod a5;\npub mod a10;\npub mod c1;\npub mod d1;\npub mod a8;\n',
        'src/make.rs': 'pub trait Make {\n    fn build(id: u32) -> Self;\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new(_id: u32) -> Self {\n        Item\n    }\n}\n',
        'src/util.rs': 'pub struct Item;\nimpl Item {\n    pub fn new(_id: u32) -> Self {\n        Item\n    }\n}\n',
        'src/inner.rs': 'use crate::item::Item;\npub fn top() -> Item {\n    Item::new(1)\n}\npub mod sub {\n    use crate::util::Item;\n    pub fn low() -> Item {\n        Item::new(2)\n    }\n}\npub mod tests2 {\n    use super::*;\n    pub fn again() -> Item {\n        Item::new(3)\n    }\n}\n',
        'src/nest.rs': 'use crate::{\n    make::{Make as Mk},\n    util::{self as u, Item},\n};\npub fn n<T: Mk>() -> (T, Item, u::Item) {\n    (T::build(1), Item::new(2), u::Item::new(3))\n}\n',
        'src/a2.rs': 'use crate::item::Item;\npub fn f() -> u32 {\n    use crate::util::Item;\n    let _x = Item::new(20);\n    0\n}\npub fn g() -> Item {\n    Item::new(21)\n}\n',
        'src/a3.rs': 'use crate::item::Item;\npub mod sub {\n    use crate::util::Item;\n    pub const HELP: &str = "first\nsecond";\n    pub fn low() -> Item {\n        Item::new(30)\n    }\n}\npub fn top() -> Item {\n    Item::new(31)\n}\n',
        'src/a4.rs': 'use crate::item::Item;\n#[cfg(test)]\nmod tests {\n    use crate::util::Item;\n// a note at column 0\n    #[test]\n    fn t() {\n        let _ = Item::new(40);\n    }\n}\npub mod more {\n    use crate::util::Item;\n#[allow(dead_code)]\n    pub fn h() -> Item {\n        Item::new(41)\n    }\n}\npub fn top() -> Item {\n    Item::new(42)\n}\n',
        'src/a5.rs': 'use crate::item::Item;\npub mod sub {\n    pub fn low() -> Item {\n        Item::new(50)\n    }\n    use crate::util::Item;\n}\npub fn top() -> Item {\n    Item::new(51)\n}\n',
        'src/a10.rs': 'use crate::item::Item;\npub mod sub {\nuse crate::util::Item;\npub fn low() -> Item { Item::new(100) }\n}\npub fn top() -> Item {\n    Item::new(101)\n}\n',
        'src/a8.rs': 'use crate::util::Item;\npub mod a {\n    use crate::item::Item;\n    pub mod b {\n        use super::Item;\n        pub fn f() -> Item {\n            Item::new(80)\n        }\n    }\n}\n#[cfg(test)]\nmod tests {\n    use super::{Item};\n    #[test]\n    fn t() {\n        let _ = Item::new(81);\n    }\n}\npub mod c {\n    pub mod util2 {\n        pub use crate::item::Item;\n    }\n    use self::util2::Item;\n    pub fn g() -> Item {\n        Item::new(82)\n    }\n}\npub fn top() -> Item {\n    Item::new(83)\n}\n',
        'src/c1.rs': 'use crate::item::Item;\n\npub struct Holder;\n\nimpl Holder {\n    pub fn make() -> u32 {\n        use crate::util::Item;\n        let _ = Item::new(300);\n        0\n    }\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use crate::util::Item;\n\n    const INPUT: &str = r#"\nname = "x"\nid = 1\n"#;\n\n    #[test]\n    fn parses() {\n        assert!(!INPUT.is_empty());\n        let _ = Item::new(301);\n    }\n}\n',
        'src/d1.rs': 'use crate::item::Item;\npub mod sub { use crate::util::Item; pub fn low() -> Item { Item::new(500) } }\npub mod tests2 {\n    use super::*;\n    pub fn again() -> Item {\n        Item::new(501)\n    }\n}\n',
      },
    });
    // (the right answers checked with cargo: util.rs's `new` renamed, E0599 exactly at the calls listed for util.rs)
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs')).toEqual(['src/a10.rs:7', 'src/a2.rs:8', 'src/a3.rs:11', 'src/a4.rs:19', 'src/a5.rs:9', 'src/a8.rs:7', 'src/a8.rs:25', 'src/d1.rs:6', 'src/inner.rs:3', 'src/inner.rs:14']);
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs')).toEqual(['src/a10.rs:4', 'src/a2.rs:4', 'src/a3.rs:7', 'src/a4.rs:8', 'src/a4.rs:15', 'src/a5.rs:4', 'src/a8.rs:16', 'src/a8.rs:29', 'src/c1.rs:8', 'src/c1.rs:26', 'src/d1.rs:2', 'src/inner.rs:8', 'src/nest.rs:6', 'src/nest.rs:6']);
  });

  it('Rust: in an inline module `self::`/`super::` start at that module — `use super::item::Item;` in lib.rs\'s `mod tests` is crate::item, a function\'s `use super::Item;` there is the file module\'s Item; `mod outer { pub mod deep; }` is outer/deep.rs below the module\'s directory', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "rs4"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod s1;\n#[cfg(test)]\nmod tests {\n    use super::item::Item;\n    #[test]\n    fn t() {\n        let _ = Item::new(1);\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new(_id: u32) -> Self {\n        Item\n    }\n}\n',
        'src/util.rs': 'pub struct Item;\nimpl Item {\n    pub fn new(_id: u32) -> Self {\n        Item\n    }\n}\n',
        'src/s1.rs': 'pub mod item;\nuse crate::util::Item;\npub fn top() -> Item {\n    Item::new(2)\n}\n#[cfg(test)]\nmod tests {\n    use super::item::Item;\n    #[test]\n    fn t() {\n        let _ = Item::new(3);\n    }\n    #[test]\n    fn u() {\n        use super::Item;\n        let _ = Item::new(4);\n    }\n}\npub mod outer {\n    pub mod deep;\n}\n',
        'src/s1/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new(_id: u32) -> Self {\n        Item\n    }\n}\n',
        'src/s1/outer/deep.rs': 'pub fn d() -> u32 {\n    5\n}\n',
      },
    });
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs')).toEqual(['src/lib.rs:9']);
    expect(await definedInCallers(repo.dir, 'new', 'src/s1/item.rs')).toEqual(['src/s1.rs:11']);
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs')).toEqual(['src/s1.rs:4', 'src/s1.rs:16']);
    const deps = await runCliInProcess(['analyze-deps', repo.dir, '--files', 'src/s1.rs,src/s1/outer/deep.rs', '--format', 'json']);
    expect(deps.code).toBe(0);
    const graph = JSON.parse(deps.stdout) as { nodes: Array<{ file: string; depends_on: string[] }> };
    expect(graph.nodes.find((node) => node.file === 'src/s1.rs')?.depends_on).toEqual(['src/s1/outer/deep.rs']);
  });

  it('Rust --defined-in: a turbofish\'s generic arguments are not the path\'s type — `Vec::<Item>::new()`, `HashMap::<u32, Item>::new()`, `RefCell::<Option<Item>>::new(None)`, `<Vec<Item>>::new()` are Vec\'s, HashMap\'s, RefCell\'s `new`; `Wrap::<Item>::new(…)` is Wrap\'s; `<crate::item::Item>::new()` is item.rs\'s (outside round X64-14)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod user;\npub mod gen;\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/gen.rs': 'pub struct Wrap<T>(pub T);\nimpl<T> Wrap<T> {\n    pub fn new(v: T) -> Self {\n        Wrap(v)\n    }\n}\npub mod inner {\n    pub struct G<T>(pub T);\n    impl<T> G<T> {\n        pub fn new(v: T) -> Self {\n            G(v)\n        }\n    }\n}\n',
        'src/user.rs': 'use crate::util::Item;\nuse std::collections::HashMap;\nuse crate::gen::Wrap;\npub fn f() {\n    let _ = Vec::<Item>::new();\n    let _: HashMap<u32, Item> = HashMap::<u32, Item>::new();\n    let _ = std::cell::RefCell::<Option<Item>>::new(None);\n    let _ = Box::<Option<Item>>::new(Some(Item::new(1)));\n    let _ = Box::<fn() -> Item>::new(|| Item::new(4));\n    let _ = Wrap::<Item>::new(Item::new(2));\n    let _ = crate::gen::Wrap::<Vec<Item>>::new(Vec::<Item>::new());\n    let _ = crate::gen::inner::G::<Item>::new(Item::new(3));\n    let _ = Vec::<Item>::with_capacity(3);\n    let _ = <Vec<Item>>::new();\n    let _ = Vec :: < Item > :: new();\n    let _ = <crate::util::Item>::new(5);\n    let _ = <crate::item::Item>::new();\n}\n',
      },
    });
    // = cargo: with util.rs's `fn new` renamed, E0599 at user.rs:8:49, 9:47, 10:37 and 12:53 (the calls inside the arguments)
    // and 16:34; with gen.rs's two `fn new`s renamed, at user.rs:10:27, 11:44 and 12:43; with item.rs's, at user.rs:17:34
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/user.rs:8:49', 'src/user.rs:9:47', 'src/user.rs:10:37', 'src/user.rs:12:53', 'src/user.rs:16:34']);
    expect(await definedInCallers(repo.dir, 'new', 'src/gen.rs', true)).toEqual(['src/user.rs:10:27', 'src/user.rs:11:44', 'src/user.rs:12:43']);
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs', true)).toEqual(['src/user.rs:17:34']);
  });

  it('Rust --defined-in: a `type` alias named like its target (`type Item = util::Item;`, lib.rs\'s `pub type Item = …`, a facade\'s) stands for the target, in the module and through `use`s and paths (outside round X64-03)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod user;\npub mod user2;\npub mod facade;\npub type Item = util::Item;\n',
        'src/facade.rs': 'pub type Item = crate::item::Item;\n',
        'src/user.rs': 'use crate::util;\ntype Item = util::Item;\npub type Alias2 = crate::item::Item;\npub fn f() {\n    let _ = Item::new(1);\n    let _ = Alias2::new();\n}\npub mod inner {\n    use super::Item as X;\n    type Y = super::Alias2;\n    pub fn g() {\n        let _ = X::new(1);\n        let _ = Y::new();\n        let _ = super::Item::new(2);\n    }\n    pub mod deeper {\n        pub type Item = crate::item::Item;\n        pub fn h() {\n            let _ = Item::new();\n        }\n    }\n}\n',
        'src/user2.rs': 'use crate::facade::Item;\nuse crate::Item as Top;\npub fn k() {\n    let _ = Item::new();\n    let _ = Top::new(5);\n    let _ = crate::facade::Item::new();\n    let _ = crate::Item::new(6);\n    let _ = crate::user::inner::deeper::Item::new();\n}\n',
      },
    });
    // = cargo: with util.rs's `fn new` renamed, E0599 at user.rs:5:19, 12:20, 14:30, user2.rs:5:18 and 7:26; with item.rs's,
    // at user.rs:6:21, 13:20, 19:27, user2.rs:4:19, 6:34 and 8:47
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/user.rs:5:19', 'src/user.rs:12:20', 'src/user.rs:14:30', 'src/user2.rs:5:18', 'src/user2.rs:7:26']);
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs', true)).toEqual(['src/user.rs:6:21', 'src/user.rs:13:20', 'src/user.rs:19:27', 'src/user2.rs:4:19', 'src/user2.rs:6:34', 'src/user2.rs:8:47']);
  });

  it('Rust --defined-in: a generic parameter named like the type (`fn f<Item: Make>()`, `impl<Item: Make>`), a struct or enum declared in a function, a function\'s `type Item = …;` and an impl\'s associated type (`Self::Item::new()`) shadow the module\'s `use` (outside round X64-01/02/04/05)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod gen;\npub mod local;\npub mod assoc;\n',
        'src/gen.rs': 'use crate::util::Item;\npub trait Make {\n    fn new() -> Self;\n}\nimpl Make for crate::item::Item {\n    fn new() -> Self {\n        crate::item::Item\n    }\n}\npub fn f<Item: Make>() -> Item {\n    Item::new()\n}\npub fn g() {\n    let _ = Item::new(1);\n}\npub fn h() -> crate::item::Item {\n    f::<crate::item::Item>()\n}\npub struct Holder<Item> {\n    pub x: Item,\n}\nimpl<Item: Make> Holder<Item> {\n    pub fn mk() -> Self {\n        Holder { x: Item::new() }\n    }\n    pub fn other() -> u32 {\n        use crate::util::Item;\n        Item::new(2).0\n    }\n}\npub fn w<T>() -> crate::util::Item\nwhere\n    T: Make,\n{\n    let _ = T::new();\n    Item::new(3)\n}\n',
        'src/local.rs': 'use crate::item::Item;\npub fn f() {\n    type Item = crate::util::Item;\n    let _ = Item::new(1);\n}\npub fn g() {\n    let _ = Item::new();\n}\npub fn h() {\n    struct Item;\n    impl Item {\n        fn new() -> Item {\n            Item\n        }\n    }\n    let _ = Item::new();\n    {\n        use crate::util::Item;\n        let _ = Item::new(2);\n    }\n}\npub fn k() {\n    enum Item {\n        A,\n    }\n    impl Item {\n        fn new(_v: u32) -> Item {\n            Item::A\n        }\n    }\n    let _ = Item::new(5);\n    let c = || {\n        type Item = crate::util::Item;\n        Item::new(6)\n    };\n    let _ = c();\n}\npub mod inner {\n    pub fn m() {\n        type U = crate::util::Item;\n        let _ = U::new(7);\n        mod nested {\n            pub fn n() {\n                let _ = crate::item::Item::new();\n            }\n        }\n        nested::n();\n    }\n}\n',
        'src/assoc.rs': 'use crate::util::Item;\npub trait Tr {\n    type Item;\n    fn go() -> u32;\n}\npub struct Z;\nimpl Tr for Z {\n    type Item = crate::item::Item;\n    fn go() -> u32 {\n        let _ = Self::Item::new();\n        let _ = Item::new(3);\n        0\n    }\n}\npub struct Y;\nimpl Tr for Y {\n    type Item = crate::util::Item;\n    fn go() -> u32 {\n        Self::Item::new(4).0\n    }\n}\npub trait Tr2 {\n    type Item: Default;\n    fn go2() -> Self::Item {\n        Self::Item::default()\n    }\n}\n',
      },
    });
    // = cargo: with util.rs's `fn new` renamed, E0599 at assoc.rs:11:23, 19:21, gen.rs:14:19, 28:15, 36:11, local.rs:4:19,
    // 19:23, 34:15 and 41:20; with item.rs's, at assoc.rs:10:29, local.rs:7:19 and 44:44
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/assoc.rs:11:23', 'src/assoc.rs:19:21', 'src/gen.rs:14:19', 'src/gen.rs:28:15', 'src/gen.rs:36:11', 'src/local.rs:4:19', 'src/local.rs:19:23', 'src/local.rs:34:15', 'src/local.rs:41:20']);
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs', true)).toEqual(['src/assoc.rs:10:29', 'src/local.rs:7:19', 'src/local.rs:44:44']);
    // (gen.rs's trait `Make` and its `impl Make for crate::item::Item`, both renamed: the bounded parameters' calls gen.rs:11:11,
    // 24:27 and 35:16 — not gen.rs's `Item::new(1)`, util.rs's by its `use`, though the impl's type is named Item too)
    expect(await definedInCallers(repo.dir, 'new', 'src/gen.rs', true)).toEqual(['src/gen.rs:11:11', 'src/gen.rs:24:27', 'src/gen.rs:35:16']);
  });

  it('Rust --defined-in: `#[cfg(test)] use A::Item;` beside `#[cfg(not(test))] use B::Item;` — test-only code sees the first, code without test the second, code in both builds either (check-callers counts both builds), in either order and in a block; check-test-cascade lists the test caller (outside round X64-13)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod user;\npub mod user2;\n',
        'src/user.rs': '#[cfg(not(test))]\nuse crate::item::Item;\n#[cfg(test)]\nuse crate::util::Item;\npub fn both() {\n    let _ = Item::new;\n}\n#[cfg(test)]\nmod tests {\n    use super::*;\n    #[test]\n    fn t() {\n        let _ = Item::new(1);\n    }\n}\n#[cfg(not(test))]\npub fn lib_only() {\n    let _ = Item::new();\n}\npub fn block() {\n    #[cfg(test)]\n    use crate::item::Item as B;\n    #[cfg(not(test))]\n    use crate::util::Item as B;\n    let _ = B::new;\n}\n',
        'src/user2.rs': '#[cfg(test)]\nuse crate::util::Item;\n#[cfg(not(test))]\nuse crate::item::Item;\n#[cfg(test)]\npub fn f() {\n    let _ = Item::new(1);\n}\n#[cfg(not(test))]\npub fn f() {\n    let _ = Item::new();\n}\n',
        'tests/it.rs': '#[test]\nfn t() {\n    cr::user::both();\n    cr::user::block();\n}\n',
        'docs/IMPL/IMPL-tc.yaml': 'title: t\nfeature_slug: tc\nverdict: SUITABLE\nfile_ownership:\n  - file: src/util.rs\n    agent: A\n    wave: 1\nwaves:\n  - number: 1\n    agents:\n      - id: A\n        task: "Change `Item::new()` to take a `&str` parameter."\n',
      },
    });
    // = cargo (`cargo check --tests`: the test build and, for tests/it.rs, the library's): with util.rs's `fn new` renamed,
    // errors at user.rs:6:19, 13:23, 25:16 and user2.rs:7:19; with item.rs's, at user.rs:6:19, 18:19, 25:16 and user2.rs:11:19
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/user.rs:6:19', 'src/user.rs:13:23', 'src/user.rs:25:16', 'src/user2.rs:7:19']);
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs', true)).toEqual(['src/user.rs:6:19', 'src/user.rs:18:19', 'src/user.rs:25:16', 'src/user2.rs:11:19']);
    // (`--tests` errors less `--lib` errors: user.rs:6, 13 and user2.rs:7 — of which 13 and user2.rs:7 are in test code, user.rs's
    // `mod tests` and user2.rs's `#[cfg(test)] fn f`; user.rs:6 is library code, `both()`, whose Item differs under test)
    expect(await testCascadeLines(repo.dir, repo.path('docs/IMPL/IMPL-tc.yaml'))).toEqual(['Item.new src/user.rs:13', 'Item.new src/user2.rs:7']);
  });

  it('Rust --defined-in: the file of a `#[cfg(test)] mod tests;` is in test builds only — its `use super::*;` sees the parent\'s `#[cfg(test)] use`, not its `#[cfg(not(test))] use` — and `use super::*;` brings the parent\'s private `use`s (outside round X64-13)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod other;\n#[cfg(not(test))]\nuse crate::item::Item;\n#[cfg(test)]\nuse crate::util::Item;\npub fn lib_fn() {\n    let _ = Item::new;\n}\n#[cfg(test)]\nmod tests;\n',
        'src/tests.rs': 'use super::*;\n#[test]\nfn t() {\n    let _ = Item::new(1);\n    lib_fn();\n}\n',
        'src/other.rs': 'use crate::item::Item;\npub fn o() -> Item {\n    Item::new()\n}\n#[cfg(test)]\nmod tests;\n',
        'src/other/tests.rs': 'use super::*;\n#[test]\nfn t() {\n    let _ = Item::new();\n    let _ = o();\n}\n',
        'tests/it.rs': '#[test]\nfn t() {\n    cr::lib_fn();\n}\n',
      },
    });
    // = cargo (`cargo check --tests`: the test build and, for tests/it.rs, the library's): with util.rs's `fn new` renamed,
    // errors at lib.rs:9:19 and tests.rs:4:19; with item.rs's, at lib.rs:9:19, other.rs:3:11 and other/tests.rs:4:19
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/lib.rs:9:19', 'src/tests.rs:4:19']);
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs', true)).toEqual(['src/lib.rs:9:19', 'src/other.rs:3:11', 'src/other/tests.rs:4:19']);
  });

  it('Rust --defined-in: a `#[test]`/`#[tokio::test]` fn outside `cfg(test)` and every line of an integration test exist in the test build only — they see the `#[cfg(test)] use`, not the `#[cfg(not(test))] use`; check-test-cascade lists them, and the default file of `#[cfg_attr(not(test), path = "h_real.rs")] mod h;` (outside round X65-02, X65-10, X65-38)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\n#[cfg_attr(not(test), path = "h_real.rs")]\nmod h;\npub use h::hh;\n#[cfg(not(test))]\nuse crate::util::Item;\n#[cfg(test)]\nuse crate::item::Item;\n#[cfg(not(test))]\npub fn f() -> Item {\n    Item::new(1)\n}\n#[test]\nfn t() {\n    let _ = Item::new();\n    let _ = crate::util::Item::new(2);\n}\nmod m {\n    #[tokio::test]\n    async fn t2() {\n        let _ = super::Item::new();\n    }\n}\n',
        'src/h.rs': 'pub fn hh() -> u32 {\n    crate::util::Item::new(4).0\n}\n',
        'src/h_real.rs': 'pub fn hh() -> u32 {\n    crate::util::Item::new(5).0 + 1\n}\n',
        'tests/it.rs': '#[cfg(not(test))]\nuse cr::util::Item;\n#[cfg(test)]\nuse cr::item::Item;\npub fn helper() {\n    let _f = Item::new;\n}\n#[test]\nfn t() {\n    helper();\n}\n',
        'docs/IMPL/IMPL-tc.yaml': 'title: t\nfeature_slug: tc\nverdict: SUITABLE\nfile_ownership:\n  - file: src/util.rs\n    agent: A\n    wave: 1\nwaves:\n  - number: 1\n    agents:\n      - id: A\n        task: "Change `Item::new()` to take a `&str` parameter."\n',
      },
    });
    // = cargo (`check --all-targets`; `#[tokio::test]` as `#[test]`): with util.rs's `fn new` renamed, errors at h.rs:2:24,
    // h_real.rs:2:24, lib.rs:12:11 and 17:32 — not lib.rs:16 or 22 (the `#[test]` fns see item.rs's Item) nor tests/it.rs:6
    // (never built without `cfg(test)`); with item.rs's, at lib.rs:16:19, 22:30 and tests/it.rs:6:20
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/h.rs:2:24', 'src/h_real.rs:2:24', 'src/lib.rs:12:11', 'src/lib.rs:17:32']);
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs', true)).toEqual(['src/lib.rs:16:19', 'src/lib.rs:22:30', 'tests/it.rs:6:20']);
    // (`check --tests` errors less `check --lib --bins` errors: h.rs:2 — the module under test — and lib.rs:17, in the `#[test] fn`)
    expect(await testCascadeLines(repo.dir, repo.path('docs/IMPL/IMPL-tc.yaml'))).toEqual(['Item.new src/h.rs:2', 'Item.new src/lib.rs:17']);
  });

  it('Rust --defined-in: an integration test and a binary link the library\'s non-test build — its `#[cfg(test)] pub use crate::util::Item;` is not there for them, `#[cfg(not(test))] pub use crate::item::Item;` is (outside round X65-01)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\n#[cfg(test)]\npub use crate::util::Item;\n#[cfg(not(test))]\npub use crate::item::Item;\npub struct Other;\nimpl Other {\n    pub fn new() -> Other {\n        Other\n    }\n}\n',
        'src/main.rs': 'fn main() {\n    let _ = cr::Item::new();\n}\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {\n        let _ = cr::Item::new();\n    }\n}\n',
        'tests/it.rs': 'use cr::Item;\n#[test]\nfn t() {\n    let _ = Item::new();\n    let _ = cr::Item::new();\n}\n',
      },
    });
    // = cargo (`check --all-targets`): with util.rs's `fn new` renamed, no error; with item.rs's, main.rs:2:23, 8:27 and
    // tests/it.rs:4:19, 5:23 — `cfg(test)` is set for the crate under test only, not for the library they link
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual([]);
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs', true)).toEqual(['src/main.rs:2:23', 'src/main.rs:8:27', 'tests/it.rs:4:19', 'tests/it.rs:5:23']);
  });

  it('Rust --defined-in: code in both builds names the definition when either build does — a cfg(test)/cfg(not(test)) pair of globs, a `#[cfg(test)] use` beside an unconditional glob, a cfg(test)/cfg(not(test)) pair of type aliases (outside round X65-41, X65-42, X65-60)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod user;\npub mod user2;\npub mod user3;\n',
        'src/user.rs': '#[cfg(test)]\nuse crate::item::*;\n#[cfg(not(test))]\nuse crate::util::*;\npub fn both() {\n    let _f = Item::new;\n}\npub mod inner {\n    #[cfg(not(test))]\n    pub use crate::util::Item;\n    #[cfg(test)]\n    pub use crate::item::*;\n    pub fn both2() {\n        let _g = Item::new;\n    }\n}\n',
        'src/user2.rs': '#[cfg(test)]\nuse crate::item::Item;\nuse crate::util::*;\npub fn both() {\n    let _f = Item::new;\n}\n',
        'src/user3.rs': '#[cfg(test)]\ntype Item = crate::item::Item;\n#[cfg(not(test))]\ntype Item = crate::util::Item;\npub fn both() {\n    let _f = Item::new;\n}\n#[cfg(not(test))]\npub fn nt() -> u32 {\n    Item::new(1).0\n}\n#[cfg(test)]\npub fn t() {\n    let _ = Item::new();\n}\n',
      },
    });
    // = cargo (`check --all-targets`): with util.rs's `fn new` renamed, errors at user.rs:6:20, 14:24, user2.rs:5:20, user3.rs:6:20
    // and 10:11; with item.rs's, at user.rs:6:20, 14:24, user2.rs:5:20, user3.rs:6:20 and 14:19
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/user.rs:6:20', 'src/user.rs:14:24', 'src/user2.rs:5:20', 'src/user3.rs:6:20', 'src/user3.rs:10:11']);
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs', true)).toEqual(['src/user.rs:6:20', 'src/user.rs:14:24', 'src/user2.rs:5:20', 'src/user3.rs:6:20', 'src/user3.rs:14:19']);
  });

  it('Rust --defined-in: module files only src/main.rs declares (`mod helpers;`, `#[cfg(test)] mod tests;`) are in the binary\'s crate — `crate::` there is main.rs, `super::` in src/tests.rs main.rs — not the library\'s; check-test-cascade follows (outside round X65-63)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\n',
        'src/main.rs': 'mod util {\n    pub use cr::item::Item;\n}\n#[cfg(test)]\nmod tests;\nmod helpers;\nfn main() {\n    helpers::h();\n}\n',
        'src/helpers.rs': 'use crate::util::Item;\npub fn h() {\n    let _ = Item::new();\n}\n',
        'src/tests.rs': '#[test]\nfn t() {\n    let _ = crate::util::Item::new();\n    let _ = super::util::Item::new();\n    let _ = cr::util::Item::new(1);\n}\n',
        'docs/IMPL/IMPL-tc.yaml': 'title: t\nfeature_slug: tc\nverdict: SUITABLE\nfile_ownership:\n  - file: src/util.rs\n    agent: A\n    wave: 1\nwaves:\n  - number: 1\n    agents:\n      - id: A\n        task: "Change `Item::new()` to take a `&str` parameter."\n',
      },
    });
    // = cargo (`check --all-targets`): with util.rs's `fn new` renamed, an error at tests.rs:5:29 only (main.rs's inline `mod util`
    // is item.rs's Item); with item.rs's, at helpers.rs:3:19, tests.rs:3:32 and 4:32
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/tests.rs:5:29']);
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs', true)).toEqual(['src/helpers.rs:3:19', 'src/tests.rs:3:32', 'src/tests.rs:4:32']);
    // (`check --tests` errors less `check --lib --bins` errors: tests.rs:5)
    expect(await testCascadeLines(repo.dir, repo.path('docs/IMPL/IMPL-tc.yaml'))).toEqual(['Item.new src/tests.rs:5']);
  });

  it('Rust --defined-in: a module file both src/lib.rs and src/main.rs declare (`mod user;` in each) is read in both crates — in the binary\'s, `crate::item`/`super::item` is main.rs\'s inline `mod item` (outside round X65-23)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod user;\n',
        'src/main.rs': 'mod user;\nmod item {\n    pub use cr::util::Item;\n}\nfn main() {\n    user::f();\n}\n',
        'src/user.rs': 'use crate::item::Item as It;\npub fn f() {\n    let _f = crate::item::Item::new;\n    let _g = super::item::Item::new;\n    let _h = It::new;\n}\n',
      },
    });
    // = cargo (`check --all-targets`): with util.rs's `fn new` renamed, errors at user.rs:3:33, 4:33 and 5:18 (the binary's build);
    // with item.rs's, at the same three (the library's build)
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/user.rs:3:33', 'src/user.rs:4:33', 'src/user.rs:5:18']);
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs', true)).toEqual(['src/user.rs:3:33', 'src/user.rs:4:33', 'src/user.rs:5:18']);
  });

  it('Rust --defined-in: a `tests/common/mod.rs` two integration tests declare is read in each test\'s crate — `super::util` is a.rs\'s inline `mod util` in one, b.rs\'s in the other (outside round X65-15)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\n',
        'tests/a.rs': 'mod common;\nmod util {\n    pub use cr::item::Item;\n}\n#[test]\nfn t() {\n    let _ = common::f();\n}\n',
        'tests/b.rs': 'mod common;\nmod util {\n    pub use cr::util::Item;\n}\n#[test]\nfn t() {\n    let _ = common::f();\n}\n',
        'tests/common/mod.rs': 'pub fn f() -> u32 {\n    let g = super::util::Item::new;\n    let _ = g;\n    0\n}\n',
      },
    });
    // = cargo (`check --all-targets`): with util.rs's `fn new` renamed, an error at tests/common/mod.rs:2:32 (in b's build); with
    // item.rs's, the same (in a's build)
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['tests/common/mod.rs:2:32']);
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs', true)).toEqual(['tests/common/mod.rs:2:32']);
  });

  it('Rust --defined-in: a file loaded by `#[path = "other/thing.rs"]` is read like a mod.rs — its `mod b;` is src/other/b.rs, and src/other/thing/b.rs, like a left-over src/old.rs no module declares, is in no crate: not compiled, no caller (outside round X65-58)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/impls/a.rs': 'pub fn f() {\n    let _ = crate::util::Item::new(1);\n}\n',
        'src/impls/mod.rs': 'pub mod a;\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\n#[path = "impls/mod.rs"]\npub mod x;\n#[path = "other/thing.rs"]\npub mod y;\n',
        'src/old.rs': 'pub fn f() {\n    let _ = crate::util::Item::new(9);\n}\n',
        'src/other/b.rs': 'pub fn f() {\n    let _ = crate::item::Item::new();\n}\n',
        'src/other/thing.rs': 'pub mod b;\n',
        'src/other/thing/b.rs': 'pub fn f() {\n    let _ = crate::util::Item::new(2);\n}\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
      },
    });
    // = cargo (rename util.rs's / item.rs's `fn new`)
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/impls/a.rs:2:32']);
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs', true)).toEqual(['src/other/b.rs:2:32']);
  });

  it('Rust --defined-in: a left-over file in a directory with no module file — src/impls/gone/x.rs, src/gen/deep/z.rs, tests/data/fixture.rs — is in no crate, no caller; an inline module\'s file (`pub mod inl { pub mod deep; }`) and an `include!("gen/inc.rs")` are compiled (outside round X65-58, its limit)', async () => {
    const util = 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n';
    const item = 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n';
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\n#[path = "impls/mod.rs"]\npub mod x;\ninclude!("gen/inc.rs");\n',
        'src/util.rs': util,
        'src/item.rs': item,
        'src/impls/mod.rs': 'pub mod a;\npub mod inl {\n    pub mod deep;\n}\n',
        'src/impls/a.rs': 'pub fn f() {\n    let _ = crate::util::Item::new(1);\n}\n',
        'src/impls/inl/deep.rs': 'pub fn f() {\n    let _ = crate::util::Item::new(2);\n    let _ = crate::item::Item::new();\n}\n',
        'src/impls/gone/x.rs': 'pub fn f() {\n    let _ = crate::util::Item::new(3);\n    let _ = crate::item::Item::new();\n}\n',
        'src/gen/deep/z.rs': 'pub fn f() {\n    let _ = crate::util::Item::new(4);\n}\n',
        'src/gen/inc.rs': 'pub fn inc() {\n    let _ = crate::util::Item::new(5);\n}\n',
        'tests/data/fixture.rs': 'pub fn f() {\n    let _ = cr::util::Item::new(6);\n    let _ = cr::item::Item::new();\n}\n',
      },
    });
    // = cargo (`check --all-targets`, util.rs's / item.rs's `fn new` renamed): errors at gen/inc.rs:2:32, impls/a.rs:2:32,
    // impls/inl/deep.rs:2:32 / impls/inl/deep.rs:3:32 — none in impls/gone/, gen/deep/ or tests/data/ (never compiled)
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/gen/inc.rs:2:32', 'src/impls/a.rs:2:32', 'src/impls/inl/deep.rs:2:32']);
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs', true)).toEqual(['src/impls/inl/deep.rs:3:32']);
  });

  it('Rust --defined-in: an inline module brings in the files its `mod x;` declarations name, not every file of its directory — src/inl/old.rs, src/inl/sub/gone.rs and src/inl/deep/x.rs are left-overs (outside round X66-01)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod util;\npub mod inl {\n    pub mod deep;\n    pub mod sub {\n        pub mod leaf;\n    }\n}\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/inl/deep.rs': 'pub fn f() {\n    let _ = crate::util::Item::new(1);\n}\n',
        'src/inl/old.rs': 'pub fn f() {\n    let _ = crate::util::Item::new(2);\n}\n',
        'src/inl/sub/leaf/mod.rs': 'pub fn f() {\n    let _ = crate::util::Item::new(3);\n}\n',
        'src/inl/sub/gone.rs': 'pub fn f() {\n    let _ = crate::util::Item::new(4);\n}\n',
        'src/inl/deep/x.rs': 'pub fn f() {\n    let _ = crate::util::Item::new(5);\n}\n',
      },
    });
    // = cargo (`check --all-targets`, util.rs's `fn new` renamed): inl/deep.rs:2:32, inl/sub/leaf/mod.rs:2:32 — nothing in
    // the three files no `mod` declares (never compiled)
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/inl/deep.rs:2:32', 'src/inl/sub/leaf/mod.rs:2:32']);
  });

  it('Rust --defined-in: a `#[path = "gen/a.rs"]` module\'s `mod b;` is src/gen/b.rs — a left-over src/gen/c.rs beside them is in no crate (outside round X66-80)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/lib.rs': 'pub mod util;\n#[path = "gen/a.rs"]\npub mod a;\n',
        'src/gen/a.rs': 'pub mod b;\npub fn f() {\n    let _ = crate::util::Item::new(1);\n}\n',
        'src/gen/b.rs': 'pub fn f() {\n    let _ = crate::util::Item::new(2);\n}\n',
        'src/gen/c.rs': 'pub fn f() {\n    let _ = crate::util::Item::new(3);\n}\n',
      },
    });
    // = cargo (`check --all-targets`, util.rs's `fn new` renamed): gen/a.rs:3:32, gen/b.rs:2:32
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/gen/a.rs:3:32', 'src/gen/b.rs:2:32']);
  });

  it('Rust --defined-in: `#[path = "gdir"] pub mod g { pub mod x; }` is src/gdir/x.rs — not src/g/x.rs, a left-over src/gdir/y.rs or a src/other/gdir/z.rs of the same directory name (outside round X66-55)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/lib.rs': 'pub mod util;\n#[path = "gdir"]\npub mod g {\n    pub mod x;\n}\n',
        'src/gdir/x.rs': 'pub fn f() {\n    let _ = crate::util::Item::new(1);\n}\n',
        'src/gdir/y.rs': 'pub fn f() {\n    let _ = crate::util::Item::new(2);\n}\n',
        'src/other/gdir/z.rs': 'pub fn f() {\n    let _ = crate::util::Item::new(3);\n}\n',
        'src/g/x.rs': 'pub fn f() {\n    let _ = crate::util::Item::new(4);\n}\n',
      },
    });
    // = cargo (`check --all-targets`, util.rs's `fn new` renamed): gdir/x.rs:2:32 only
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/gdir/x.rs:2:32']);
  });

  it('Rust --defined-in: a `cfg_attr(feature = "alt", path = "alt.rs")` beside an inline module\'s `#[path = "helper.rs"] mod h;` no longer makes every helper.rs of the package a module — src/old/helper.rs and src/x/helper.rs are left-overs (outside round X66-02)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/lib.rs': 'pub mod util;\npub mod old;\n#[cfg_attr(feature = "alt", path = "alt.rs")]\npub mod b;\npub mod inl {\n    #[path = "helper.rs"]\n    pub mod h;\n}\n',
        'src/b.rs': '',
        'src/inl/helper.rs': 'pub fn f() {\n    let _ = crate::util::Item::new(1);\n}\n',
        'src/old.rs': 'pub fn g() {}\n',
        'src/old/helper.rs': 'pub fn f() {\n    let _ = crate::util::Item::new(2);\n}\n',
        'src/x/helper.rs': 'pub fn f() {\n    let _ = crate::util::Item::new(3);\n}\n',
      },
    });
    // = cargo (`check --all-targets`, util.rs's `fn new` renamed): inl/helper.rs:2:32 only
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/inl/helper.rs:2:32']);
  });

  it('Rust --defined-in: an absolute `#[path = "<repo>/src/real/x.rs"]` is that file — not src/x.rs; one outside the repository is no repository file, not src/y.rs (outside round X66-03)', async () => {
    const call = (n: number) => `pub fn f() {\n    let _ = crate::util::Item::new(${n});\n}\n`;
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/real/x.rs': call(1),
        'src/x.rs': call(2),
        'src/y.rs': call(3),
        'src/real/z.rs': call(4),
      },
    });
    repo.write('src/lib.rs', `pub mod util;\n#[path = "${repo.path('src/real/x.rs')}"]\npub mod x;\n#[path = "${repo.sibling('elsewhere/y.rs')}"]\npub mod y;\n`);
    await repo.commitAll('lib');
    // = cargo (`check --all-targets`, util.rs's `fn new` renamed, a fn-less elsewhere/y.rs beside the repository): real/x.rs:2:32
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/real/x.rs:2:32']);
  });

  it('Rust --defined-in: an `include_str!("gen/data.rs")` compiles nothing and an `include!` in a comment names nothing — src/gen/data.rs and src/gen/x.rs are left-overs, `include!("gen/inc.rs")` is compiled (outside round X66-28)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/lib.rs': 'pub mod util;\npub const S: &str = include_str!("gen/data.rs");\n// include!("gen/x.rs");\ninclude!("gen/inc.rs");\n',
        'src/gen/data.rs': 'pub fn f() {\n    let _ = crate::util::Item::new(1);\n}\n',
        'src/gen/x.rs': 'pub fn f() {\n    let _ = crate::util::Item::new(2);\n}\n',
        'src/gen/inc.rs': 'pub fn inc() {\n    let _ = crate::util::Item::new(3);\n}\n',
      },
    });
    // = cargo (`check --all-targets`, util.rs's `fn new` renamed): gen/inc.rs:2:32 only
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/gen/inc.rs:2:32']);
  });

  it('Rust --defined-in: a left-over file beside tests/common/mod.rs (declared by `mod common;` in tests/it.rs) is in no crate; the module mod.rs declares is (outside round X66-07)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod util;\n',
        'src/util.rs': 'pub fn new() {}\n',
        'tests/it.rs': 'mod common;\n#[test]\nfn t() {\n    common::f();\n    common::used::h();\n}\n',
        'tests/common/mod.rs': 'pub mod used;\npub fn f() {\n    cr::util::new();\n}\n',
        'tests/common/used.rs': 'pub fn h() {\n    cr::util::new();\n}\n',
        'tests/common/helpers.rs': 'pub fn g() {\n    cr::util::new();\n}\n',
      },
    });
    // = cargo (`check --all-targets`, util.rs's `fn new` renamed): tests/common/mod.rs:3:15, tests/common/used.rs:2:15
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['tests/common/mod.rs:3:15', 'tests/common/used.rs:2:15']);
  });

  it('Rust --defined-in: `pub mod inline { #[path = "other.rs"] pub mod inner; }` in src/a.rs is src/a/inline/other.rs — a src/other.rs beside it is in no crate, no caller (outside round X65-46, c01)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod a;\npub mod inl {\n    #[path = "z.rs"]\n    pub mod q;\n}\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/a.rs': 'pub mod inline {\n    #[path = "other.rs"]\n    pub mod inner;\n}\n',
        'src/a/inline/other.rs': 'use crate::util::Item;\npub fn f() {\n    let _ = Item::new(1);\n}\n',
        'src/other.rs': 'use crate::item::Item;\npub fn f() {\n    let _ = Item::new();\n}\n',
        'src/inl/z.rs': 'pub fn k() {\n    let _ = super::super::util::Item::new(5);\n    let _ = crate::item::Item::new();\n}\n',
        'src/z.rs': 'pub fn k() {\n    let _ = crate::item::Item::new();\n}\n',
      },
    });
    // = cargo (`check --all-targets`, util.rs's / item.rs's `fn new` renamed): a/inline/other.rs:3:19, inl/z.rs:2:39 /
    // inl/z.rs:3:32 — none in src/other.rs or src/z.rs (never compiled)
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/a/inline/other.rs:3:19', 'src/inl/z.rs:2:39']);
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs', true)).toEqual(['src/inl/z.rs:3:32']);
  });

  it('check-test-cascade: a test in a left-over file of a directory with no module file (src/legacy/old/t.rs, tests/data/f.rs) is no orphaned test caller — cargo never compiles it (outside round X65-58, its limit)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': tcCargo,
        'src/lib.rs': 'pub mod util;\npub mod app;\n',
        'src/util.rs': 'pub fn parse(x: u32) -> u32 {\n    x\n}\n',
        'src/app.rs': 'pub fn g() -> u32 {\n    crate::util::parse(1)\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {\n        crate::util::parse(2);\n    }\n}\n',
        'src/legacy/old/t.rs': '#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {\n        crate::util::parse(3);\n    }\n}\n',
        'tests/data/f.rs': '#[test]\nfn t() {\n    tc::util::parse(4);\n}\n',
        'docs/IMPL/IMPL-tc.yaml': tcImpl,
      },
    });
    // = cargo (rename util.rs's `fn parse`: errors of `cargo check --tests` minus those of `--lib --bins`): app.rs:9
    expect(await testCascadeLines(repo.dir, repo.path('docs/IMPL/IMPL-tc.yaml'))).toEqual(['parse src/app.rs:9']);
  });

  it('check-test-cascade: a `#[cfg(test)]` item in a macro invocation or a macro_rules! body is that item only — the `pub fn` after it is library code (outside round X66-05/06)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': tcCargo,
        'src/lib.rs': 'pub mod util;\npub mod app;\n',
        'src/util.rs': 'pub fn parse(x: u32) -> u32 {\n    x\n}\n',
        'src/app.rs': 'macro_rules! items {\n    ($($i:item)*) => {\n        $($i)*\n    };\n}\n\nitems! {\n    #[cfg(test)]\n    fn helper() -> u32 {\n        crate::util::parse(1)\n    }\n    pub fn g() -> u32 {\n        crate::util::parse(2)\n    }\n}\n\nmacro_rules! gen {\n    () => {\n        #[cfg(test)]\n        fn t2() -> u32 {\n            crate::util::parse(3)\n        }\n        pub fn h() -> u32 {\n            crate::util::parse(4)\n        }\n    };\n}\ngen!();\n',
        'docs/IMPL/IMPL-tc.yaml': tcImpl,
      },
    });
    // = cargo (rename util.rs's `fn parse`: errors of `cargo check --tests` minus those of `--lib`): app.rs:10 and app.rs:21
    expect(await testCascadeLines(repo.dir, repo.path('docs/IMPL/IMPL-tc.yaml'))).toEqual(['parse src/app.rs:10', 'parse src/app.rs:21']);
  });

  it('check-test-cascade: a module file declared twice — `#[cfg(test)] #[path = "shared.rs"] mod shared_t;` and `#[path = "shared.rs"] pub mod shared;` — is library code too, not test code (outside round X65-20)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\n#[cfg(test)]\n#[path = "shared.rs"]\nmod shared_t;\n#[path = "shared.rs"]\npub mod shared;\n',
        'src/shared.rs': '#[cfg(not(test))]\nuse crate::util::Item;\n#[cfg(test)]\nuse crate::item::Item;\npub fn g() -> u32 {\n    let _f = Item::new;\n    let _ = crate::util::Item::new(1);\n    0\n}\n',
        'docs/IMPL/IMPL-tc.yaml': 'title: t\nfeature_slug: tc\nverdict: SUITABLE\nfile_ownership:\n  - file: src/util.rs\n    agent: A\n    wave: 1\nwaves:\n  - number: 1\n    agents:\n      - id: A\n        task: "Change `Item::new()` to take a `&str` parameter."\n',
      },
    });
    // = cargo: with util.rs's `fn new` renamed, `check --all-targets` errors at shared.rs:6:20 and 7:32, in the non-test build
    // (`pub mod shared`) — `check --tests` errors less `check --lib --bins` errors: none, no orphaned test caller
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/shared.rs:6:20', 'src/shared.rs:7:32']);
    const cascade = await runCliInProcess(['check-test-cascade', repo.path('docs/IMPL/IMPL-tc.yaml'), '--repo-dir', repo.dir]);
    expect(cascade.code, cascade.stdout).toBe(0);
  });

  it('Rust --defined-in: `#[cfg(test)] #[path = "mock_util.rs"] pub mod util;` + `#[cfg(not(test))] pub mod util;`, and `#[cfg_attr(test, path = "mock_util.rs")] pub mod util;` — `crate::util` is the mock in the test build, util.rs in the other; code in both builds calls both (outside round X65-61)', async () => {
    const pair = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/mock_util.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\n#[cfg(test)]\n#[path = "mock_util.rs"]\npub mod util;\n#[cfg(not(test))]\npub mod util;\npub mod user;\n',
        'src/user.rs': 'use crate::util::Item;\npub fn both() {\n    let _f = Item::new;\n    let _g = crate::util::Item::new;\n}\n#[cfg(not(test))]\npub fn nt() -> u32 {\n    Item::new(1).0\n}\n',
      },
    });
    // = cargo (`check --all-targets`): with util.rs's `fn new` renamed, errors at user.rs:3:20, 4:33 and 8:11 (the
    // `cfg(not(test))` fn); with mock_util.rs's, at user.rs:3:20 and 4:33
    expect(await definedInCallers(pair.dir, 'new', 'src/util.rs', true)).toEqual(['src/user.rs:3:20', 'src/user.rs:4:33', 'src/user.rs:8:11']);
    expect(await definedInCallers(pair.dir, 'new', 'src/mock_util.rs', true)).toEqual(['src/user.rs:3:20', 'src/user.rs:4:33']);
    const attribute = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/mock_util.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\n#[cfg_attr(test, path = "mock_util.rs")]\npub mod util;\npub mod user;\n',
        'src/user.rs': 'use crate::util::Item;\npub fn both() {\n    let _f = Item::new;\n    let _g = crate::util::Item::new;\n}\n#[cfg(not(test))]\npub fn nt() -> u32 {\n    Item::new(1).0\n}\n',
      },
    });
    // = cargo: the same with `cfg_attr(test, path = …)`
    expect(await definedInCallers(attribute.dir, 'new', 'src/util.rs', true)).toEqual(['src/user.rs:3:20', 'src/user.rs:4:33', 'src/user.rs:8:11']);
    expect(await definedInCallers(attribute.dir, 'new', 'src/mock_util.rs', true)).toEqual(['src/user.rs:3:20', 'src/user.rs:4:33']);
  });

  it('Rust --defined-in: a module file\'s build passes down through `mod x;` files — `#[cfg(not(test))] pub mod real;` (or `#[cfg(test)]`) in lib.rs, a plain `pub mod deeper;` in real.rs: deeper.rs is in that build only and sees its `use` (outside round X65-22)', async () => {
    const nonTest = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\n#[cfg(not(test))]\npub mod real;\n',
        'src/real.rs': 'pub mod deeper;\n',
        'src/real/deeper.rs': '#[cfg(test)]\nuse crate::util::Item;\n#[cfg(not(test))]\nuse crate::item::Item;\npub fn g() {\n    let _f = Item::new;\n}\n',
      },
    });
    // = cargo (`check --all-targets`): with util.rs's `fn new` renamed, no error; with item.rs's, real/deeper.rs:6:20
    expect(await definedInCallers(nonTest.dir, 'new', 'src/util.rs', true)).toEqual([]);
    expect(await definedInCallers(nonTest.dir, 'new', 'src/item.rs', true)).toEqual(['src/real/deeper.rs:6:20']);
    const test = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\n#[cfg(test)]\npub mod real;\n',
        'src/real.rs': 'pub mod deeper;\n',
        'src/real/deeper.rs': '#[cfg(not(test))]\nuse crate::util::Item;\n#[cfg(test)]\nuse crate::item::Item;\npub fn g() {\n    let _f = Item::new;\n}\n',
      },
    });
    // = cargo: the mirror (`#[cfg(test)] pub mod real;`, deeper.rs `#[cfg(not(test))] use crate::util::Item; #[cfg(test)] use crate::item::Item;`)
    expect(await definedInCallers(test.dir, 'new', 'src/util.rs', true)).toEqual([]);
    expect(await definedInCallers(test.dir, 'new', 'src/item.rs', true)).toEqual(['src/real/deeper.rs:6:20']);
  });

  it('Rust --defined-in: `<Self as Tr>::Item::new()` / `<Z as Tr>::Item::new()` is the associated type of the impl of Tr for that type (`type Item = crate::item::Item;`), not the module\'s `Item` (outside round X65-04)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\nuse crate::util::Item;\npub trait Tr {\n    type Item;\n    fn go() -> u32;\n}\npub struct Z;\nimpl Tr for Z {\n    type Item = crate::item::Item;\n    fn go() -> u32 {\n        let _ = <Self as Tr>::Item::new();\n        let _ = <Z as Tr>::Item::new();\n        let _: <Self as Tr>::Item = <Self as Tr>::Item::new();\n        0\n    }\n}\npub fn f() {\n    let _ = <Z as Tr>::Item::new();\n    let _ = Item::new(1);\n}\n',
      },
    });
    // = cargo (`check --all-targets`): with util.rs's `fn new` renamed, an error at lib.rs:20:19 only; with item.rs's, at
    // lib.rs:12:37, 13:34, 14:57 and 19:30
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/lib.rs:20:19']);
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs', true)).toEqual(['src/lib.rs:12:37', 'src/lib.rs:13:34', 'src/lib.rs:14:57', 'src/lib.rs:19:30']);
  });

  it('Rust --defined-in: `super::Item` and `use super::*;` in a module file whose parent is an inline module of another file (`pub mod inner { use crate::util::Item; mod tests2; }` in src/m/mod.rs) are that inline module\'s, its private `use` included (outside round X65-25)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod m;\n',
        'src/m/mod.rs': 'pub mod inner {\n    use crate::util::Item;\n    mod tests2;\n    pub fn v() {\n        let _f = Item::new;\n    }\n}\n',
        'src/m/inner/tests2.rs': 'use super::*;\npub fn t() {\n    let _ = Item::new(1);\n    let _ = super::Item::new(2);\n}\n',
      },
    });
    // = cargo (`check --all-targets`): with util.rs's `fn new` renamed, errors at m/inner/tests2.rs:3:19, 4:26 and m/mod.rs:5:24;
    // with item.rs's, none
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/m/inner/tests2.rs:3:19', 'src/m/inner/tests2.rs:4:26', 'src/m/mod.rs:5:24']);
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs', true)).toEqual([]);
  });

  it('Rust --defined-in: a generic parameter\'s associated type bound in its item — `fn f<T: Tr<Item = crate::util::Item>>()` — is the bound type for `T::Item::new()` and `<T as Tr>::Item::new()`; `<Z as Tr>::Item` is the impl\'s (outside round X65-51)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\nuse crate::item::Item;\npub trait Tr {\n    type Item;\n}\npub struct Z;\nimpl Tr for Z {\n    type Item = crate::util::Item;\n}\npub fn f<T: Tr<Item = crate::util::Item>>() {\n    let _ = T::Item::new(1);\n    let _ = <T as Tr>::Item::new(2);\n    let _ = <Z as Tr>::Item::new(3);\n    let _ = Item::new();\n}\n',
      },
    });
    // = cargo (`check --all-targets`): with util.rs's `fn new` renamed, errors at lib.rs:12:22, 13:30 and 14:30; with item.rs's,
    // at lib.rs:15:19
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/lib.rs:12:22', 'src/lib.rs:13:30', 'src/lib.rs:14:30']);
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs', true)).toEqual(['src/lib.rs:15:19']);
  });

  it('Rust --defined-in: an inherent impl in another file than its type (`use crate::model::Item; impl Item { pub fn new… }` in imp.rs) is model.rs\'s Item\'s method — its callers name model.rs\'s Item; in the definition\'s file a `use` of the name is the type\'s, not the definition\'s by its name alone', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod model;\npub mod imp;\npub mod user;\npub mod other;\n',
        'src/model.rs': 'pub struct Item(pub u32);\n',
        'src/imp.rs': 'use crate::model::Item;\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n    pub fn twice(v: u32) -> Item {\n        Self::new(v * 2)\n    }\n}\npub fn here() -> Item {\n    Item::new(3)\n}\n',
        'src/other.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/user.rs': 'use crate::model::Item;\nuse crate::other::Item as Other;\npub fn f() {\n    let _ = Item::new(1);\n    let _ = crate::model::Item::new(2);\n    let _ = Other::new();\n    let _ = crate::other::Item::new();\n}\n',
      },
    });
    // = cargo: with imp.rs's `fn new` renamed, E0599 at imp.rs:7:15, 11:11, user.rs:4:19 and 5:33; with other.rs's, at user.rs:6:20 and 7:33
    expect(await definedInCallers(repo.dir, 'new', 'src/imp.rs', true)).toEqual(['src/imp.rs:7:15', 'src/imp.rs:11:11', 'src/user.rs:4:19', 'src/user.rs:5:33']);
    expect(await definedInCallers(repo.dir, 'new', 'src/other.rs', true)).toEqual(['src/user.rs:6:20', 'src/user.rs:7:33']);
  });

  it('Rust --defined-in: 600 nested inline modules, each with `use super::*;`, answer in well under 5 s (outside round X64-16: the modules around each `use` asked level by level of the tree, cubic — 400 levels took 5.4 s, 800 took 39 s)', async () => {
    const depth = 600;
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod deep;\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/deep.rs': `use crate::util::Item;\n${'pub mod m {\n    use super::*;\n'.repeat(depth)}pub fn f() { let _ = Item::new(1); }\n${'}'.repeat(depth)}\n`,
      },
    });
    const started = performance.now();
    // = cargo (checked at 400 levels): with util.rs's `fn new` renamed, E0599 at the one call, deep.rs:1202:28
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual([`src/deep.rs:${2 * depth + 2}:28`]);
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it('Rust --defined-in: a `use` block ends at its closing brace, not its line — `} else if Item::new(1).0 > 0 {` after a branch with its own `use` is the outer `use`\'s Item (outside round X63-13)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod other;\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/other.rs': 'use crate::util::Item;\n\npub fn f(flag: bool) -> u32 {\n    if flag {\n        use crate::item::Item;\n        let _ = Item::new();\n        0\n    } else if Item::new(1).0 > 0 {\n        1\n    } else {\n        2\n    }\n}\n\npub fn g() -> u32 {\n    let c = || {\n        use crate::item::Item;\n        Item::new()\n    }; let v = Item::new(2).0;\n    let _ = c();\n    v\n}\n',
      },
    });
    // = cargo: with util.rs's `fn new` renamed, E0599 at other.rs:8:21 and other.rs:19:22
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/other.rs:8:21', 'src/other.rs:19:22']);
  });

  it('Rust --defined-in: a `use` in an inline module or a function body wins over the file\'s own top-level item of that name (outside round X63-01)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n\n#[cfg(test)]\nmod tests {\n    use crate::item::Item;\n    #[test]\n    fn t() {\n        let _ = Item::new();\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n\n#[cfg(test)]\nmod tests {\n    use crate::util::Item;\n    #[test]\n    fn t() {\n        let _ = Item::new(3);\n    }\n}\n\npub fn other() -> u32 {\n    use crate::util::Item;\n    Item::new(4).0\n}\n',
      },
    });
    // = cargo: with util.rs's `fn new` renamed, E0599 at item.rs:13:23 and item.rs:19:11 (none in util.rs's tests)
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/item.rs:13:23', 'src/item.rs:19:11']);
  });

  it('Rust --defined-in: an inline module does not see the file\'s `use`; an inner glob `use crate::item::*;` or an inner item of the name shadows the outer `use`; `use super::*;` brings the file\'s (outside round X63-08)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod other;\npub mod other2;\npub mod other3;\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/other.rs': 'use crate::util::Item;\n\npub fn lib() -> Item {\n    Item::new(1)\n}\n\n#[cfg(test)]\nmod tests {\n    use crate::item::*;\n    #[test]\n    fn t() {\n        let _ = Item::new();\n    }\n}\n',
        'src/other2.rs': 'use crate::util::Item;\n\npub fn lib() -> Item {\n    Item::new(1)\n}\n\npub fn f() {\n    use crate::item::*;\n    let _ = Item::new();\n}\n',
        'src/other3.rs': 'use crate::util::Item;\n\npub fn lib() -> Item {\n    Item::new(1)\n}\n\npub mod legacy {\n    pub struct Item;\n    impl Item {\n        pub fn new() -> Item {\n            Item\n        }\n    }\n    pub fn f() {\n        let _ = Item::new();\n    }\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n    #[test]\n    fn t() {\n        let _ = Item::new(2);\n    }\n}\n',
      },
    });
    // = cargo: with util.rs's `fn new` renamed, E0599 at other.rs:4:11, other2.rs:4:11, other3.rs:4:11 and other3.rs:24:23
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/other.rs:4:11', 'src/other2.rs:4:11', 'src/other3.rs:4:11', 'src/other3.rs:24:23']);
  });

  it('Rust --defined-in: `use super::super::X;` in a nested inline module is the file\'s `use` of X (outside round X63-09)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod other;\npub mod other2;\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/other.rs': 'use crate::item::Item;\n\npub fn lib() -> Item {\n    Item::new()\n}\n\n#[cfg(test)]\nmod tests {\n    mod deeper {\n        use super::super::Item;\n        #[test]\n        fn t() {\n            let _ = Item::new();\n        }\n    }\n}\n',
        'src/other2.rs': 'use crate::util::Item as Thing;\n\npub fn lib() -> Thing {\n    Thing::new(1)\n}\n\n#[cfg(test)]\nmod tests {\n    use super::Thing;\n    #[test]\n    fn t() {\n        let _ = Thing::new(2);\n    }\n    mod deeper {\n        use super::super::Thing;\n        #[test]\n        fn t() {\n            let _ = Thing::new(3);\n        }\n    }\n}\n',
      },
    });
    // = cargo: with util.rs's `fn new` renamed, E0599 at other2.rs:4:12, 12:24 and 18:28 (none in other.rs: item.rs's Item)
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/other2.rs:4:12', 'src/other2.rs:12:24', 'src/other2.rs:18:28']);
  });

  it('Rust --defined-in: a `super::Item::new()` path expression in an inline module starts at that module (outside round X63-02)', async () => {
    const first = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub use item::Item;\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn a() {\n        let _ = super::Item::new(1);\n    }\n    mod deeper {\n        #[test]\n        fn b() {\n            let _ = super::super::Item::new(2);\n        }\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
      },
    });
    // = cargo: with util.rs's `fn new` renamed, E0599 at util.rs:12:30 and util.rs:17:41
    expect(await definedInCallers(first.dir, 'new', 'src/util.rs', true)).toEqual(['src/util.rs:12:30', 'src/util.rs:17:41']);
    const second = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub use util::Item;\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn a() {\n        let _ = super::Item::new();\n    }\n}\n',
      },
    });
    // = cargo: no error (item.rs's tests call item.rs's Item, although lib.rs re-exports util.rs's)
    expect(await definedInCallers(second.dir, 'new', 'src/util.rs', true)).toEqual([]);
  });

  it('Rust --defined-in: a path through an inline module of a non-root file (`a::Item`, `crate::item::a::Item`, `use self::reexp::Item;`) is that module\'s, not another crate\'s (outside round X63-03)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod other;\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n\npub mod a {\n    pub use crate::util::Item;\n}\n\npub fn g() {\n    let _ = a::Item::new(5);\n    let _ = self::a::Item::new(6);\n}\n\npub mod wrap {\n    pub mod reexp {\n        pub use crate::util::Item;\n    }\n    use self::reexp::Item;\n    pub fn f() {\n        let _ = Item::new(1);\n    }\n}\n',
        'src/other.rs': 'pub fn h() {\n    let _ = crate::item::a::Item::new(6);\n    let _ = crate::item::Item::new();\n}\n',
      },
    });
    // = cargo: with util.rs's `fn new` renamed, E0599 at item.rs:13:22, item.rs:14:28, item.rs:23:23 and other.rs:2:35
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/item.rs:13:22', 'src/item.rs:14:28', 'src/item.rs:23:23', 'src/other.rs:2:35']);
  });

  it('Rust --defined-in: renamed re-exports — `pub use crate::util::Item as Inner;` in a facade module that does not name the method, a `use … as X` of lib.rs\'s alias, `use super::super::Thing as T2;` of a renamed `use` — are the type\'s names (outside round X63-14, X63-09)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod util;\npub mod item;\npub mod kind;\npub mod other;\npub mod other2;\npub use util::Item as UtilItem;\npub use item::Item as ItemItem;\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/kind.rs': 'pub use crate::util::Item as Inner;\npub use crate::item::Item as Inner2;\n',
        'src/other.rs': 'use crate::kind::Inner;\nuse crate::UtilItem as X;\nuse crate::ItemItem as Y;\n\npub fn t() {\n    let _ = Inner::new(4);\n    let _ = crate::kind::Inner::new(5);\n    let _ = X::new(3);\n    let _ = Y::new();\n    let _ = crate::kind::Inner2::new();\n}\n',
        'src/other2.rs': 'use crate::util::Item as Thing;\n\npub fn lib() -> Thing {\n    Thing::new(1)\n}\n\n#[cfg(test)]\nmod tests {\n    use super::Thing;\n    #[test]\n    fn t() {\n        let _ = Thing::new(2);\n    }\n    mod deeper {\n        use super::super::Thing as T2;\n        #[test]\n        fn t() {\n            let _ = T2::new(3);\n        }\n    }\n}\n',
      },
    });
    // = cargo: with util.rs's `fn new` renamed, E0599 at other.rs:6:20, 7:33, 8:16 and other2.rs:4:12, 12:24, 18:25
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/other.rs:6:20', 'src/other.rs:7:33', 'src/other.rs:8:16', 'src/other2.rs:4:12', 'src/other2.rs:12:24', 'src/other2.rs:18:25']);
  });

  it('Rust --defined-in: a Cargo.toml `[lib] name` is the crate\'s name in its tests (`use corelib::…`), not the package name (outside round X63-04)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n\n[lib]\nname = "corelib"\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'tests/it.rs': 'use corelib::item::Item;\nuse corelib::util::Item as U;\n\n#[test]\nfn t() {\n    let _ = Item::new();\n    let _ = U::new(1);\n    let _ = corelib::util::Item::new(2);\n    let _ = corelib::item::Item::new();\n}\n',
      },
    });
    // = cargo: with util.rs's `fn new` renamed, E0599 at tests/it.rs:7:16 and tests/it.rs:8:34
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['tests/it.rs:7:16', 'tests/it.rs:8:34']);
  });

  it('Rust --defined-in: a leading `::` (`use ::cr::item::Item as Other;`, `::cr::util::Item::new(7)`) names the crate, and so does an `extern crate cr as c2;` alias (outside round X63-15)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'tests/it.rs': 'use ::cr::item::Item as Other;\n\n#[test]\nfn t() {\n    let _ = Other::new();\n    let _ = ::cr::util::Item::new(7);\n    let _ = ::cr::item::Item::new();\n}\n',
        'tests/it2.rs': 'extern crate cr as c2;\n\n#[test]\nfn t() {\n    let _ = c2::util::Item::new(7);\n    let _ = c2::item::Item::new();\n}\n',
      },
    });
    // = cargo: with util.rs's `fn new` renamed, E0599 at tests/it.rs:6:31 and tests/it2.rs:5:29
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['tests/it.rs:6:31', 'tests/it2.rs:5:29']);
  });

  it('Rust --defined-in: a binary-only crate (src/main.rs declaring the modules), src/bin/tool/main.rs\'s `mod helper;` beside it, and a child module by its `#[path = "../../util.rs"]` named by a bare path `util::Item::new(5)` (outside round X64, beside X64-07)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/main.rs': 'mod item;\nmod util;\nmod user;\nfn main() {\n    let _ = crate::util::Item::new(1);\n    let _ = user::f();\n}\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/user.rs': 'use crate::item::Item;\nuse super::util;\npub fn f() -> u32 {\n    let _ = Item::new();\n    let _ = util::Item::new(2);\n    let _ = crate::util::Item::new(3);\n    0\n}\n#[cfg(test)]\nmod tests {\n    use super::super::util::Item;\n    #[test]\n    fn t() {\n        let _ = Item::new(4);\n    }\n}\n',
        'src/bin/tool/main.rs': 'mod helper;\nfn main() {\n    let _ = helper::g();\n}\n',
        'src/bin/tool/helper.rs': '#[path = "../../util.rs"]\nmod util;\npub fn g() -> u32 {\n    let _ = util::Item::new(5);\n    let _ = self::util::Item::new(6);\n    let _ = crate::helper::util::Item::new(7);\n    0\n}\n',
      },
    });
    // = cargo (`cargo check --tests --keep-going`): with util.rs's `fn new` renamed, E0599 at bin/tool/helper.rs:4:25,
    // 5:31, 6:40, main.rs:5:32, user.rs:5:25, 6:32, 14:23
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/bin/tool/helper.rs:4:25', 'src/bin/tool/helper.rs:5:31', 'src/bin/tool/helper.rs:6:40', 'src/main.rs:5:32', 'src/user.rs:5:25', 'src/user.rs:6:32', 'src/user.rs:14:23']);
  });

  it('Rust --defined-in: `extern crate self as cr2;` in lib.rs makes `cr2::util::Item` the crate\'s own path in its modules (X64-15)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod user;\nextern crate self as cr2;\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/user.rs': 'use cr2::util::Item as W;\npub fn f() {\n    let _ = cr2::util::Item::new(6);\n    let _ = cr2::item::Item::new();\n    let _ = W::new(8);\n}\n',
      },
    });
    // = cargo: with util.rs's `fn new` renamed, E0599 at user.rs:3:30 and user.rs:5:16
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/user.rs:3:30', 'src/user.rs:5:16']);
  });

  it('Rust --defined-in: a renamed re-export chain is followed to its end — six `pub use self::A4 as A5;` in one file, a facade per file over four files, lib.rs\'s `pub use l4::D as Top;`, the path `crate::l3::C::new(3)` (X64-12)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/big.rs': 'pub use crate::util::Item as A0;\npub use self::A0 as A1;\npub use self::A1 as A2;\npub use self::A2 as A3;\npub use self::A3 as A4;\npub use self::A4 as A5;\npub fn f() {\n    let _ = A0::new(0);\n    let _ = A1::new(1);\n    let _ = A2::new(2);\n    let _ = A3::new(3);\n    let _ = A4::new(4);\n    let _ = A5::new(5);\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod l1;\npub mod l2;\npub mod l3;\npub mod l4;\npub mod user;\npub mod big;\npub use l4::D as Top;\n',
        'src/l1.rs': 'pub use crate::util::Item as A;\n',
        'src/l2.rs': 'pub use crate::l1::A as B;\n',
        'src/l3.rs': 'pub use crate::l2::B as C;\n',
        'src/l4.rs': 'pub use crate::l3::C as D;\n',
        'src/user.rs': 'use crate::l4::D;\nuse crate::Top;\nuse crate::item::Item;\npub fn f() {\n    let _ = D::new(1);\n    let _ = Top::new(2);\n    let _ = crate::l3::C::new(3);\n    let _ = Item::new();\n}\n',
      },
    });
    // = cargo: with util.rs's `fn new` renamed, E0599 at big.rs:8:17 … big.rs:13:17 and user.rs:5:16, 6:18, 7:27
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/big.rs:8:17', 'src/big.rs:9:17', 'src/big.rs:10:17', 'src/big.rs:11:17', 'src/big.rs:12:17', 'src/big.rs:13:17', 'src/user.rs:5:16', 'src/user.rs:6:18', 'src/user.rs:7:27']);
  });

  it('Rust --defined-in: 2,000 module files each with a `#[cfg(test)] mod tests;` file and a cfg(test)/cfg(not(test)) `use` pair answer in linear time — each cfg\'d `mod` resolved once, not once per file (X65-64)', async () => {
    const count = 2_000;
    const files: Record<string, string> = {
      'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
      'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
      'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
      'src/lib.rs': `pub mod item;\npub mod util;\n${Array.from({ length: count }, (_, index) => `pub mod m${index};\n`).join('')}`,
    };
    for (let index = 0; index < count; index += 1) {
      files[`src/m${index}.rs`] = '#[cfg(not(test))]\nuse crate::util::Item;\n#[cfg(test)]\nuse crate::item::Item;\n#[cfg(test)]\nmod tests;\npub fn f() {\n    let _f = Item::new;\n}\n';
      files[`src/m${index}/tests.rs`] = 'use super::*;\n#[test]\nfn t() {\n    let _ = Item::new();\n    let _ = crate::util::Item::new(1);\n}\n';
    }
    const repo = await createTestRepo({ files });
    await definedInCallers(repo.dir, 'new', 'src/util.rs');
    // (the CPU time this test's process — its parse workers included — spends on the warm run, not the wall-clock time:
    // the same bound whatever else the machine runs; the wall clock failed it at load 14)
    const started = process.cpuUsage();
    const found = await definedInCallers(repo.dir, 'new', 'src/util.rs');
    const used = process.cpuUsage(started);
    // (= cargo: mN.rs:8 in the library's build, mN/tests.rs:5 — 2.2 s warm here with the index, 9.9 s before, growing ~N²)
    expect(found.length).toBe(2 * count);
    expect(found.filter((reference) => reference.endsWith('/tests.rs:5')).length).toBe(count);
    expect(found.filter((reference) => /^src\/m\d+\.rs:8$/.test(reference)).length).toBe(count);
    expect((used.user + used.system) / 1_000).toBeLessThan(5_000);
  }, 120_000);

  it('Rust --defined-in: a facade that does not name the method is read from its syntax tree — a prelude glob `pub use crate::item::*;`, `#[doc(inline)] pub use …` on one line, a `pub use crate::item::{ Item, };` over lines (X65-47)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod prelude;\npub mod p2;\npub mod p3;\npub mod user;\n',
        'src/p2.rs': '#[doc(inline)] pub use crate::item::Item;\n',
        'src/p3.rs': 'pub use crate::item::{\n    Item,\n};\n',
        'src/prelude.rs': 'pub use crate::item::*;\n',
        'src/user.rs': 'pub fn f() {\n    let _ = crate::prelude::Item::new();\n    let _ = crate::p2::Item::new();\n    let _ = crate::p3::Item::new();\n}\npub mod g {\n    use crate::prelude::*;\n    pub fn h() {\n        let _ = Item::new();\n    }\n}\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
      },
    });
    // = cargo (rename `fn new` in util.rs: nothing; in item.rs: these four)
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual([]);
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs', true)).toEqual(['src/user.rs:2:35', 'src/user.rs:3:30', 'src/user.rs:4:30', 'src/user.rs:9:23']);
  });

  it('Rust --defined-in: an unloaded file\'s inline modules — `crate::m::n::Item`, a glob of `m::n`, an indented alias in `mod a { mod b { … } }`, a re-export in `pub mod n` that is not the file\'s own (X65-18/19)', async () => {
    const c04 = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod m;\npub mod user;\npub mod a {\n    pub type Item = super::util::Item;\n    pub mod b {\n        pub type Item = super::super::item::Item;\n    }\n}\n',
        'src/m.rs': 'pub type Item = crate::util::Item;\npub mod n {\n    pub type Item = crate::item::Item;\n}\n',
        'src/user.rs': 'use crate::m::Item as X;\nuse crate::m::n::*;\npub fn f() {\n    let _ = X::new(1);\n    let _ = Item::new();\n    let _ = crate::a::Item::new(2);\n    let _ = crate::a::b::Item::new();\n    let _ = crate::m::n::Item::new();\n    let _ = super::m::Item::new(3);\n}\npub mod inner {\n    use crate::a::*;\n    pub fn g() {\n        let _ = Item::new(4);\n        let _ = b::Item::new();\n        let _ = self::super::X::new(5);\n    }\n}\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
      },
    });
    // = cargo (rename util.rs's `fn new`)
    expect(await definedInCallers(c04.dir, 'new', 'src/util.rs', true)).toEqual(['src/user.rs:4:16', 'src/user.rs:6:29', 'src/user.rs:9:29', 'src/user.rs:14:23', 'src/user.rs:16:33']);
    const c05 = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod m;\npub mod user;\n',
        'src/m.rs': 'pub mod n {\n    pub use crate::item::Item;\n}\npub use crate::util::Item;\n',
        'src/user.rs': 'pub fn f() {\n    let _ = crate::m::Item::new(1);\n    let _ = crate::m::n::Item::new();\n}\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
      },
    });
    // = cargo, both ways
    expect(await definedInCallers(c05.dir, 'new', 'src/util.rs', true)).toEqual(['src/user.rs:2:29']);
    expect(await definedInCallers(c05.dir, 'new', 'src/item.rs', true)).toEqual(['src/user.rs:3:32']);
  });

  it('Rust --defined-in: an unloaded facade\'s grouped re-export `pub use crate::item::{self as it, Item};` and `pub use crate::{item::Item as Other, util::Item};` — `Other` is item.rs\'s (X65-29, X65-45 c10)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod m;\npub mod n;\npub mod o;\npub mod user;\n',
        'src/m.rs': 'pub use crate::item::{self as it, Item};\n',
        'src/n.rs': 'mod inner {\n    pub use crate::item::Item;\n}\npub use self::inner::Item;\n',
        'src/o.rs': 'pub use crate::{item::Item as Other, util::Item};\n',
        'src/user.rs': 'pub fn f() {\n    let _ = crate::m::Item::new();\n    let _ = crate::n::Item::new();\n    let _ = crate::o::Item::new(1);\n    let _ = crate::o::Other::new();\n}\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
      },
    });
    // = cargo (rename util.rs's `fn new`)
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/user.rs:4:29']);
    // = cargo (rename item.rs's `fn new`): `crate::o::Other::new()` is item.rs's by the renaming inside o.rs's braces
    // (outside round X65-45, c10)
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs', true)).toEqual(['src/user.rs:2:29', 'src/user.rs:3:29', 'src/user.rs:5:30']);
  });

  it('Rust --defined-in: a glob of a module without the name, or a glob cycle, before the glob that has it — the next glob decides (X65-06/49)', async () => {
    const a06 = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/a.rs': 'pub use crate::b::*;\n',
        'src/b.rs': 'pub use crate::a::*;\n',
        'src/c.rs': 'pub use crate::d::*;\npub use crate::util::Item;\n',
        'src/d.rs': 'pub use crate::c::*;\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod a;\npub mod b;\npub mod c;\npub mod d;\npub mod user;\n',
        'src/user.rs': 'use crate::a::*;\nuse crate::item::*;\npub fn f() {\n    let _ = Item::new();\n}\npub mod m {\n    use crate::b::*;\n    use crate::d::*;\n    pub fn g() {\n        let _ = Item::new(1);\n        let _ = crate::d::Item::new(2);\n    }\n}\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
      },
    });
    // = cargo, both ways: the a↔b glob cycle binds no `Item`; user.rs:4 is item.rs's
    expect(await definedInCallers(a06.dir, 'new', 'src/util.rs', true)).toEqual(['src/user.rs:10:23', 'src/user.rs:11:33']);
    expect(await definedInCallers(a06.dir, 'new', 'src/item.rs', true)).toEqual(['src/user.rs:4:19']);
    const a06c = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/a.rs': 'pub use crate::b::*;\n',
        'src/b.rs': 'pub fn z() {}\n',
        'src/c.rs': 'pub use crate::d::*;\npub use crate::util::Item;\n',
        'src/d.rs': 'pub use crate::c::*;\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod a;\npub mod b;\npub mod c;\npub mod d;\npub mod user;\n',
        'src/user.rs': 'use crate::b::*;\nuse crate::item::*;\npub fn f() {\n    let _ = Item::new();\n}\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
      },
    });
    expect(await definedInCallers(a06c.dir, 'new', 'src/util.rs', true)).toEqual([]);
    expect(await definedInCallers(a06c.dir, 'new', 'src/item.rs', true)).toEqual(['src/user.rs:4:19']);
    const a18 = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/a.rs': '// new\npub use crate::b::*;\npub use crate::util::*;\n',
        'src/b.rs': '// new\npub use crate::a::*;\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod a;\npub mod b;\npub mod user;\n',
        'src/user.rs': 'use crate::a::*;\npub fn f() {\n    let _ = Item::new(1);\n}\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
      },
    });
    // (a's `Item` comes from its second glob, `crate::util::*`, after the cycle through b is cut)
    expect(await definedInCallers(a18.dir, 'new', 'src/util.rs', true)).toEqual(['src/user.rs:3:19']);
    expect(await definedInCallers(a18.dir, 'new', 'src/item.rs', true)).toEqual([]);
  });

  it('Rust --defined-in: a chain of 1,500 facade files that do not name the method, `pub use crate::f{i-1}::Item;` each, is followed once per file — right both ways past 1,000 hops, in linear time (X65-48)', async () => {
    const count = 1_500;
    const files: Record<string, string> = {
      'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
      'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
      'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
      'src/f0.rs': 'pub use crate::util::Item;\n',
      'src/lib.rs': `pub mod item;\npub mod util;\npub mod user;\n${Array.from({ length: count }, (_, index) => `pub mod f${index};\n`).join('')}`,
      // (the deepest first: no shorter chain is known when it is walked)
      'src/user.rs': `pub fn g() {\n${Array.from({ length: count / 5 }, (_, index) => `    let _ = crate::f${count - 1 - 5 * index}::Item::new(${index});\n`).join('')}}\n`,
    };
    for (let index = 1; index < count; index += 1) files[`src/f${index}.rs`] = `pub use crate::f${index - 1}::Item;\n`;
    const repo = await createTestRepo({ files });
    // = cargo (p04 of X65: every reference is util.rs's `Item`)
    expect((await definedInCallers(repo.dir, 'new', 'src/util.rs')).length).toBe(count / 5);
    const started = performance.now();
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs')).toEqual([]);
    expect(performance.now() - started).toBeLessThan(5_000);
  }, 120_000);

  it('Rust --defined-in: a path\'s first segment is the module the scope around the reference binds it to — a block\'s or an inline module\'s `use crate::item as util;`, not the file\'s `use crate::util;` (X65-56)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod user;\n',
        'src/user.rs': 'pub fn f() {\n    let _ = util::Item::new(1);\n}\nuse crate::util;\npub fn g() {\n    use crate::item as util;\n    let _ = util::Item::new();\n}\npub mod m {\n    use crate::item as util;\n    pub fn h() {\n        let _ = util::Item::new();\n    }\n    pub fn k() {\n        use crate::util as util;\n        let _ = util::Item::new(2);\n    }\n}\npub fn z() {\n    let _ = util::Item::new(3);\n}\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
      },
    });
    // = cargo, both ways
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/user.rs:2:25', 'src/user.rs:16:29', 'src/user.rs:20:25']);
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs', true)).toEqual(['src/user.rs:7:25', 'src/user.rs:12:29']);
  });

  it('Rust --defined-in: `Self::new()` in an impl whose type is a renamed import or a type alias (`impl U`, `impl Al`, `impl Default for U`) is that type\'s, and `impl super::super::u::Item` is read from the inline module it is written in (X65-30/39)', async () => {
    const c11 = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod user;\n',
        'src/user.rs': 'use crate::util::Item as U;\npub type Al = crate::util::Item;\ntype Bl = crate::item::Item;\nimpl Al {\n    pub fn mk() -> Self {\n        Self::new(1)\n    }\n}\nimpl U {\n    pub fn mk2() -> Self {\n        Self::new(2)\n    }\n}\nimpl Bl {\n    pub fn mk3() -> Self {\n        Self::new()\n    }\n}\nimpl Default for U {\n    fn default() -> Self {\n        Self::new(3)\n    }\n}\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
      },
    });
    // = cargo, both ways
    expect(await definedInCallers(c11.dir, 'new', 'src/util.rs', true)).toEqual(['src/user.rs:6:15', 'src/user.rs:11:15', 'src/user.rs:21:15']);
    expect(await definedInCallers(c11.dir, 'new', 'src/item.rs', true)).toEqual(['src/user.rs:16:15']);
    const c15 = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod user;\npub use crate::util as u2;\n',
        'src/user.rs': 'use crate::util as u;\nuse crate::item as util;\nimpl u::Item {\n    pub fn z1() -> Self {\n        Self::new(1)\n    }\n}\nimpl crate::u2::Item {\n    pub fn z2() -> Self {\n        Self::new(2)\n    }\n}\nimpl util::Item {\n    pub fn z3() -> Self {\n        Self::new()\n    }\n}\npub mod a {\n    pub mod b {\n        impl super::super::u::Item {\n            pub fn z4() -> Self {\n                Self::new(4)\n            }\n        }\n        impl super::super::util::Item {\n            pub fn z5() -> Self {\n                Self::new()\n            }\n        }\n    }\n}\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
      },
    });
    // = cargo (rename util.rs's `fn new`)
    expect(await definedInCallers(c15.dir, 'new', 'src/util.rs', true)).toEqual(['src/user.rs:5:15', 'src/user.rs:10:15', 'src/user.rs:22:23']);
  });

  it('Rust --defined-in: `type Item = Item;` in a trait impl is the module\'s `Item` (X65-13); an alias of an alias or of a renamed import, `type A = crate::item::Item; type Item = A;`, is followed to its end (X65-03)', async () => {
    const c03 = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/imp.rs': 'use crate::item::Item;\nuse crate::tr::Tr;\nimpl Tr for crate::util::Item {\n    type Item = Item;\n    fn go() -> u32 {\n        let _ = Self::new(1);\n        let _ = Self::Item::new();\n        let _ = Item::new();\n        let f = || Self::Item::new();\n        let _ = f();\n        0\n    }\n}\npub struct Z;\nimpl Tr for Z {\n    type Item = crate::util::Item;\n    fn go() -> u32 {\n        let _ = Self::Item::new(2);\n        let _ = Item::new();\n        {\n            use crate::util::Item;\n            let _ = Item::new(3);\n        }\n        0\n    }\n}\nimpl Z {\n    pub fn k() -> Item {\n        Item::new()\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod tr;\npub mod imp;\n',
        'src/tr.rs': 'pub trait Tr {\n    type Item;\n    fn go() -> u32;\n}\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
      },
    });
    // = cargo, both ways
    expect(await definedInCallers(c03.dir, 'new', 'src/util.rs', true)).toEqual(['src/imp.rs:6:23', 'src/imp.rs:18:29', 'src/imp.rs:22:27']);
    expect(await definedInCallers(c03.dir, 'new', 'src/item.rs', true)).toEqual(['src/imp.rs:7:29', 'src/imp.rs:8:23', 'src/imp.rs:9:32', 'src/imp.rs:19:23', 'src/imp.rs:29:15']);
    const a03 = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\nuse crate::util::Item;\npub fn f() {\n    type A = crate::item::Item;\n    type Item = A;\n    let _ = Item::new();\n}\npub fn g<const Item: usize>() -> usize {\n    let _ = Item::new(1);\n    Item\n}\npub fn h() {\n    let _ = Item::new(2);\n    let _ = g::<3>();\n}\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
      },
    });
    expect(await definedInCallers(a03.dir, 'new', 'src/util.rs', true)).toEqual(['src/lib.rs:10:19', 'src/lib.rs:14:19']);
    expect(await definedInCallers(a03.dir, 'new', 'src/item.rs', true)).toEqual(['src/lib.rs:7:19']);
    const a03b = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod user;\npub mod user2;\n',
        'src/user.rs': 'type A = crate::item::Item;\ntype Item = A;\npub fn f() {\n    let _ = Item::new();\n}\n',
        'src/user2.rs': 'use crate::item::Item as B;\npub type Item = B;\npub fn f() {\n    let _ = Item::new();\n}\npub mod inner {\n    use crate::util::Item as C;\n    pub fn g() {\n        type Item = C;\n        let _ = Item::new(1);\n    }\n}\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
      },
    });
    expect(await definedInCallers(a03b.dir, 'new', 'src/util.rs', true)).toEqual(['src/user2.rs:10:23']);
    expect(await definedInCallers(a03b.dir, 'new', 'src/item.rs', true)).toEqual(['src/user.rs:4:19', 'src/user2.rs:4:19']);
  });

  it('Rust --defined-in: `Self::Out::new()` and `<Self as Tr>::Out::new()` with `type Out = Self;` in the impl are the impl type\'s (X65-55, c20)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub trait Tr {\n    type Out;\n    fn go() -> u32;\n}\nimpl Tr for crate::util::Item {\n    type Out = Self;\n    fn go() -> u32 {\n        let _ = Self::Out::new(1);\n        let _ = <Self as Tr>::Out::new(2);\n        0\n    }\n}\nimpl Tr for crate::item::Item {\n    type Out = Self;\n    fn go() -> u32 {\n        let _ = Self::Out::new();\n        0\n    }\n}\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
      },
    });
    // = cargo (rename util.rs's `fn new`)
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/lib.rs:10:28', 'src/lib.rs:11:36']);
    // = cargo (rename item.rs's `fn new`): `<Self as Tr>::Out::new(2)` at 11:36 is util.rs's too — the impl's `type Out =
    // Self;` read at the alias (outside round X65-55, c20)
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs', true)).toEqual(['src/lib.rs:18:28']);
  });

  it('Rust --defined-in: `::me::util::Item::new()` for `extern crate self as me;` beside a local `mod me` is the crate\'s — a leading `::` skips the module (outside round X65-28)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod user;\nextern crate self as me;\n',
        'src/user.rs': 'mod me {\n    pub use crate::item::Item;\n    pub mod util {\n        pub use crate::item::Item;\n    }\n}\npub fn f() {\n    let _ = me::Item::new();\n    let _ = me::util::Item::new();\n    let _ = ::me::util::Item::new(1);\n    let _ = crate::me::util::Item::new(2);\n    let _ = self::me::util::Item::new();\n}\npub mod sub {\n    pub fn g() {\n        let _ = me::util::Item::new(3);\n        let _ = super::me::util::Item::new();\n    }\n}\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
      },
    });
    // = cargo (rename util.rs's / item.rs's `fn new`)
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/user.rs:10:31', 'src/user.rs:11:36', 'src/user.rs:16:33']);
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs', true)).toEqual(['src/user.rs:8:23', 'src/user.rs:9:29', 'src/user.rs:12:35', 'src/user.rs:17:40']);
  });

  it('Rust --defined-in: a `mod util { … }` declared in a function\'s body names `util::` in that body only — elsewhere the file\'s `use crate::util;` does (X65-57)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod user;\n',
        'src/user.rs': 'use crate::util;\npub fn g() {\n    mod util {\n        pub use crate::item::Item;\n    }\n    let _ = util::Item::new();\n}\npub fn h() {\n    let _ = util::Item::new(1);\n}\npub mod m {\n    pub fn k() {\n        let _ = super::util::Item::new(2);\n        let _ = crate::util::Item::new(3);\n    }\n}\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
      },
    });
    // = cargo, both ways
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/user.rs:9:25', 'src/user.rs:13:36', 'src/user.rs:14:36']);
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs', true)).toEqual(['src/user.rs:6:25']);
  });

  it('Rust --defined-in: a renaming `use crate::item::Item as Other;` inside one block is that block\'s only — `Other::new()` elsewhere and `super::Other::new()` are what their scope binds (X65-62)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod user;\npub mod user2;\n',
        'src/user.rs': 'use crate::item::Item as Other;\nuse crate::util::Other as Item;\npub fn f() {\n    let _ = Item::new();\n    let _ = Other::new();\n    let _ = crate::util::Item::new(1);\n}\n',
        'src/user2.rs': 'use crate::util::*;\npub fn g() {\n    let _ = Item::new(2);\n    let _ = Other::new();\n    {\n        use crate::item::Item as Other;\n        let _ = Other::new();\n    }\n}\npub mod m {\n    use crate::item::*;\n    pub fn h() {\n        let _ = Item::new();\n        let _ = super::Other::new();\n    }\n}\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\npub struct Other;\nimpl Other {\n    pub fn new() -> Other {\n        Other\n    }\n}\n',
      },
    });
    // = cargo, both ways (util.rs's `new`s of Item and Other renamed / item.rs's)
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/user.rs:4:19', 'src/user.rs:6:32', 'src/user2.rs:3:19', 'src/user2.rs:4:20', 'src/user2.rs:14:31']);
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs', true)).toEqual(['src/user.rs:5:20', 'src/user2.rs:7:24', 'src/user2.rs:13:23']);
  });

  it('Rust --defined-in: a renamed import reached by a path, `self::super::X::new(5)` in `mod inner` for the file\'s `use crate::m::Item as X;`, is looked up by its own name X where the path leads; `b::` for an inline module a glob brings (X65-45, c04)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod m;\npub mod user;\npub mod a {\n    pub type Item = super::util::Item;\n    pub mod b {\n        pub type Item = super::super::item::Item;\n    }\n}\n',
        'src/m.rs': 'pub type Item = crate::util::Item;\npub mod n {\n    pub type Item = crate::item::Item;\n}\n',
        'src/user.rs': 'use crate::m::Item as X;\nuse crate::m::n::*;\npub fn f() {\n    let _ = X::new(1);\n    let _ = Item::new();\n    let _ = crate::a::Item::new(2);\n    let _ = crate::a::b::Item::new();\n    let _ = crate::m::n::Item::new();\n    let _ = super::m::Item::new(3);\n}\npub mod inner {\n    use crate::a::*;\n    pub fn g() {\n        let _ = Item::new(4);\n        let _ = b::Item::new();\n        let _ = self::super::X::new(5);\n    }\n}\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
      },
    });
    // (= cargo: 16:33 is util.rs's Item through m.rs's alias; 15:26 `b::Item::new()` is the inline module `a::b` the glob
    // `use crate::a::*;` brings)
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs', true)).toEqual(['src/user.rs:5:19', 'src/user.rs:7:32', 'src/user.rs:8:32', 'src/user.rs:15:26']);
  });

  it('Rust --defined-in: a module re-exported under another name — `pub use crate::item as util;` in a facade, `pub use self::u2 as u3;` at the root — is followed in a path, through a glob that brings it and in a renaming `use crate::u3::Item as I3;` (X65-34, X65-45 c12)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/fac.rs': 'pub use crate::item as util;\npub use crate::u3 as item;\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod user;\npub mod fac;\npub use crate::util as u2;\npub use self::u2 as u3;\n',
        'src/user.rs': 'use crate::item as util;\nuse crate::u3::Item as I3;\npub fn f() {\n    let _ = util::Item::new();\n    let _ = crate::u2::Item::new(1);\n    let _ = crate::u3::Item::new(2);\n    let _ = I3::new(3);\n    let _ = crate::fac::util::Item::new();\n    let _ = crate::fac::item::Item::new(4);\n    let _ = super::fac::item::Item::new(5);\n}\npub mod inner {\n    use crate::fac::*;\n    pub fn g() {\n        let _ = item::Item::new(6);\n        let _ = util::Item::new();\n    }\n}\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
      },
    });
    // = cargo (rename util.rs's `fn new`)
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/user.rs:5:30', 'src/user.rs:6:30', 'src/user.rs:7:17', 'src/user.rs:9:37', 'src/user.rs:10:37', 'src/user.rs:15:29']);
    // = cargo (rename item.rs's `fn new`): `I3::new(3)` at 7:17, `use crate::u3::Item as I3;` through the root's
    // re-exported module, is util.rs's (outside round X65-45, c12)
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs', true)).toEqual(['src/user.rs:4:25', 'src/user.rs:8:37', 'src/user.rs:16:29']);
    const c15 = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod user;\npub use crate::util as u2;\n',
        'src/user.rs': 'use crate::util as u;\nuse crate::item as util;\nimpl u::Item {\n    pub fn z1() -> Self {\n        Self::new(1)\n    }\n}\nimpl crate::u2::Item {\n    pub fn z2() -> Self {\n        Self::new(2)\n    }\n}\nimpl util::Item {\n    pub fn z3() -> Self {\n        Self::new()\n    }\n}\npub mod a {\n    pub mod b {\n        impl super::super::u::Item {\n            pub fn z4() -> Self {\n                Self::new(4)\n            }\n        }\n        impl super::super::util::Item {\n            pub fn z5() -> Self {\n                Self::new()\n            }\n        }\n    }\n}\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
      },
    });
    // = cargo (rename item.rs's `fn new`: `impl crate::u2::Item` is util.rs's)
    expect(await definedInCallers(c15.dir, 'new', 'src/item.rs', true)).toEqual(['src/user.rs:15:15', 'src/user.rs:27:23']);
  });

  it('Rust --defined-in: a workspace sibling crate by its path — `a::util::Item::new(2)`, `::a::util::…`, `a::Item::new(5)`, `use a::util;` then `util::Item::new(7)` — and a renamed dependency (`alpha.workspace = true`, `alpha = { path = "a", package = "a" }`); a local `mod a` shadows the dependency `a` (X64-11)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[workspace]\nmembers = ["a", "b", "c", "d"]\nresolver = "2"\n\n[workspace.dependencies]\nalpha = { path = "a", package = "a" }\n',
        'a/Cargo.toml': '[package]\nname = "a"\nversion = "0.1.0"\nedition = "2021"\n',
        'a/src/lib.rs': 'pub mod util;\npub use util::Item;\npub fn f() {\n    let _ = crate::util::Item::new(1);\n}\n',
        'a/src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'b/Cargo.toml': '[package]\nname = "b"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\na = { path = "../a" }\n',
        'b/src/lib.rs': 'pub mod util;\npub mod user;\npub fn g() {\n    let _ = crate::util::Item::new();\n    let _ = a::util::Item::new(2);\n    let _ = util::Item::new();\n}\npub mod user2;\n',
        'b/src/user.rs': 'use a::Item as AItem;\nuse crate::util::Item;\npub fn h() {\n    let _ = Item::new();\n    let _ = AItem::new(3);\n    let _ = ::a::util::Item::new(4);\n}\n',
        'b/src/user2.rs': 'use a::util::Item;\nuse a::util;\npub fn k() {\n    let _ = Item::new(6);\n    let _ = util::Item::new(7);\n}\n',
        'b/src/util.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'b/tests/it.rs': 'use b::util::Item;\n#[test]\nfn t() {\n    let _ = Item::new();\n    let _ = a::Item::new(5);\n}\n',
        'c/Cargo.toml': '[package]\nname = "c"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\nalpha.workspace = true\n',
        'c/src/lib.rs': 'pub fn k() {\n    let _ = alpha::util::Item::new(8);\n    let _ = ::alpha::Item::new(9);\n}\n',
        'd/Cargo.toml': '[package]\nname = "d"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\na = { path = "../a" }\n',
        'd/src/a.rs': 'pub mod util {\n    pub struct Item;\n    impl Item {\n        pub fn new() -> Item {\n            Item\n        }\n    }\n}\n',
        'd/src/lib.rs': 'pub mod a;\npub fn k() {\n    let _ = a::util::Item::new();\n}\n',
      },
    });
    // = cargo (`#[deprecated]` on a/src/util.rs's `new`, `cargo check --tests`: the "use of deprecated" locations)
    expect(await definedInCallers(repo.dir, 'new', 'a/src/util.rs', true)).toEqual(['a/src/lib.rs:4:32', 'b/src/lib.rs:5:28', 'b/src/user.rs:5:20', 'b/src/user.rs:6:30', 'b/src/user2.rs:4:19', 'b/src/user2.rs:5:25', 'b/tests/it.rs:5:22', 'c/src/lib.rs:2:32', 'c/src/lib.rs:3:28']);
  });

  it('Rust --defined-in: `::a::Item::new()` and `use ::a::util::Item;` beside a local `mod a;` (a file) name the workspace dependency `a` — a leading `::` skips the module; `a::…`, `crate::a::…`, `self::a::…` are the module (outside round X65-28, its limit)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[workspace]\nmembers = ["a", "b"]\nresolver = "2"\n',
        'a/Cargo.toml': '[package]\nname = "a"\nversion = "0.1.0"\nedition = "2021"\n',
        'a/src/lib.rs': 'pub mod util;\npub use util::Item;\n',
        'a/src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'b/Cargo.toml': '[package]\nname = "b"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\na = { path = "../a" }\n',
        'b/src/lib.rs': 'pub mod util;\npub mod a;\npub mod user;\npub fn g() {\n    let _ = a::Item::new();\n    let _ = ::a::Item::new(3);\n    let _ = ::a::util::Item::new(4);\n}\n',
        'b/src/a.rs': 'pub use crate::util::Item;\n',
        'b/src/user.rs': 'use ::a::util::Item;\nmod a;\npub fn h() {\n    let _ = Item::new(1);\n    let _ = a::Item::new();\n    let _ = ::a::Item::new(2);\n    let _ = crate::a::Item::new();\n    let _ = self::a::Item::new();\n}\n',
        'b/src/user/a.rs': 'pub use crate::util::Item;\n',
        'b/src/util.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
      },
    });
    // = cargo (`check --all-targets`, a/src/util.rs's / b/src/util.rs's `fn new` renamed)
    expect(await definedInCallers(repo.dir, 'new', 'a/src/util.rs', true)).toEqual(['b/src/lib.rs:6:24', 'b/src/lib.rs:7:30', 'b/src/user.rs:4:19', 'b/src/user.rs:6:24']);
    expect(await definedInCallers(repo.dir, 'new', 'b/src/util.rs', true)).toEqual(['b/src/lib.rs:5:22', 'b/src/user.rs:5:22', 'b/src/user.rs:7:29', 'b/src/user.rs:8:28']);
  });

  it('Rust --defined-in: `Self::new()` in a one-line impl or an unindented impl body is the impl\'s type, from the syntax tree (outside round X63-12)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod other;\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\nimpl Default for Item { fn default() -> Self { Self::new() } }\n',
        'src/other.rs': 'pub struct Item;\nimpl Item {\nfn new() -> Item {\n    Item\n}\n}\nimpl Default for Item {\nfn default() -> Self { Self::new() }\n}\n\npub struct Wrap(pub u32);\nimpl Wrap {\n    pub fn make() -> crate::util::Item { crate::util::Item::new(1) }\n}\nimpl From<u32> for crate::util::Item { fn from(v: u32) -> Self { Self::new(v) } }\n',
      },
    });
    // = cargo: with util.rs's `fn new` renamed, E0599 at other.rs:13:61 and other.rs:15:72 (none in item.rs, other.rs:8)
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/other.rs:13:61', 'src/other.rs:15:72']);
  });

  it('Rust --defined-in: `#[path = "other/helpers.rs"] pub mod util;` makes crate::util that file, not a stale src/util.rs (outside round X63-11)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod item;\n#[path = "other/helpers.rs"]\npub mod util;\npub mod user;\n',
        'src/other/helpers.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/user.rs': 'use crate::util::Item;\nuse crate::item::Item as Other;\npub fn f() {\n    let _ = Item::new(2);\n    let _ = Other::new();\n    let _ = crate::util::Item::new(3);\n}\n',
      },
    });
    // = cargo: with helpers.rs's `fn new` renamed, E0599 at user.rs:4:19 and user.rs:6:32; with util.rs's, none (not compiled)
    expect(await definedInCallers(repo.dir, 'new', 'src/other/helpers.rs', true)).toEqual(['src/user.rs:4:19', 'src/user.rs:6:32']);
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual([]);
  });

  it('Rust --defined-in: `crate::` in src/main.rs, src/bin/*.rs, tests/*.rs and tests/common/mod.rs is that binary\'s or test\'s crate (its inline `mod util`), and `super::` in tests/common/mod.rs is the test crate\'s root (X64-07, X64-08)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "cr"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\n',
        'src/util.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(v: u32) -> Item {\n        Item(v)\n    }\n}\n',
        'src/item.rs': 'pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\n',
        'src/main.rs': 'mod util {\n    pub use cr::item::Item;\n}\nfn main() {\n    let _ = util::Item::new();\n    let _ = crate::util::Item::new();\n    let _ = cr::util::Item::new(1);\n}\n',
        'src/bin/tool.rs': 'mod item {\n    pub use cr::util::Item;\n}\nuse item::Item;\nfn main() {\n    let _ = Item::new(1);\n    let _ = crate::item::Item::new(2);\n    let _ = cr::item::Item::new();\n}\n',
        'tests/it.rs': 'mod common;\nmod util {\n    pub struct Item;\n    impl Item {\n        pub fn new() -> Item {\n            Item\n        }\n    }\n}\n#[test]\nfn t() {\n    let _ = crate::util::Item::new();\n    let _ = util::Item::new();\n    let _ = cr::util::Item::new(1);\n    let _ = common::f();\n}\n',
        'tests/common/mod.rs': 'use super::util::Item;\npub fn f() -> u32 {\n    let _ = Item::new();\n    let _ = crate::util::Item::new();\n    let _ = self::g();\n    0\n}\nfn g() -> u32 {\n    use cr::util::Item;\n    let _ = Item::new(7);\n    0\n}\n',
        'tests/other.rs': 'use cr::util::Item;\nmod util {\n    pub use cr::item::Item;\n}\n#[test]\nfn t() {\n    let _ = Item::new(1);\n    let _ = crate::util::Item::new();\n    let _ = util::Item::new();\n}\n',
      },
    });
    // = cargo (`cargo check --tests --keep-going`): with util.rs's `fn new` renamed, E0599 at bin/tool.rs:6:19, 7:32,
    // main.rs:7:29, tests/common/mod.rs:10:19, tests/it.rs:14:29, tests/other.rs:7:19
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/bin/tool.rs:6:19', 'src/bin/tool.rs:7:32', 'src/main.rs:7:29', 'tests/common/mod.rs:10:19', 'tests/it.rs:14:29', 'tests/other.rs:7:19']);
  });

  it('Rust --defined-in: the definition\'s type re-exported under another name or aliased (`pub use item::Item as Thing;`, `pub type ItemAlias = item::Item;`), for its own method and a trait\'s (outside round X59-02)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "kit"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod item;\npub mod make;\npub mod alias;\n\npub use item::Item as Thing;\npub type ItemAlias = item::Item;\n',
        'src/make.rs': 'pub trait Make {\n    fn build(id: u32) -> Self;\n}\n',
        'src/item.rs': 'use crate::make::Make;\n\npub struct Item(pub u32);\n\nimpl Item {\n    pub fn new(id: u32) -> Self {\n        Item(id)\n    }\n}\n\nimpl Make for Item {\n    fn build(id: u32) -> Self {\n        Item(id)\n    }\n}\n',
        'src/alias.rs': 'use crate::Thing;\nuse crate::ItemAlias;\n\npub fn all() -> (Thing, ItemAlias) {\n    (Thing::new(1), ItemAlias::new(2))\n}\n',
        'tests/it.rs': 'use kit::make::Make;\nuse kit::Thing;\n\n#[test]\nfn t() {\n    let _a = Thing::build(1);\n    let _b = kit::ItemAlias::build(2);\n}\n',
      },
    });
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs')).toEqual(['src/alias.rs:5', 'src/alias.rs:5']);
    expect(await definedInCallers(repo.dir, 'build', 'src/make.rs')).toEqual(['tests/it.rs:6', 'tests/it.rs:7']);
  });

  it('Rust --defined-in: a crate root\'s `pub use item::Item as Thing;` / `pub type ItemAlias = item::Item;` names the module its path leads to — another module\'s `Item` (`pub type UtilAlias = util::Item;`) is not the definition\'s, for its own method and a trait\'s (outside round X59-02; cargo check --all-targets clean)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "kit"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod make;\npub mod alias;\n\npub use item::Item as Thing;\npub type ItemAlias = item::Item;\npub type UtilAlias = util::Item;\n',
        'src/make.rs': 'pub trait Make {\n    fn build(id: u32) -> Self;\n}\n',
        'src/item.rs': 'use crate::make::Make;\n\npub struct Item(pub u32);\n\nimpl Item {\n    pub fn new(id: u32) -> Self {\n        Item(id)\n    }\n}\n\nimpl Make for Item {\n    fn build(id: u32) -> Self {\n        Item(id)\n    }\n}\n',
        'src/util.rs': 'pub struct Item;\n\nimpl Item {\n    pub fn new(_id: u32) -> Self {\n        Item\n    }\n    pub fn build(_id: u32) -> Self {\n        Item\n    }\n}\n',
        'src/alias.rs': 'use crate::Thing;\nuse crate::ItemAlias;\nuse crate::UtilAlias;\n\npub fn all() -> (Thing, ItemAlias, UtilAlias, UtilAlias) {\n    (Thing::new(1), ItemAlias::new(2), UtilAlias::new(3), UtilAlias::build(4))\n}\n',
        'tests/it.rs': 'use kit::make::Make;\nuse kit::Thing;\n\n#[test]\nfn t() {\n    let _a = Thing::build(1);\n    let _b = kit::ItemAlias::build(2);\n    let _c = kit::UtilAlias::new(3);\n}\n',
      },
    });
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs', true)).toEqual(['src/alias.rs:6:13', 'src/alias.rs:6:32']);
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/alias.rs:6:51', 'tests/it.rs:8:30']);
    expect(await definedInCallers(repo.dir, 'build', 'src/make.rs', true)).toEqual(['tests/it.rs:6:21', 'tests/it.rs:7:30']);
    expect(await definedInCallers(repo.dir, 'build', 'src/util.rs', true)).toEqual(['src/alias.rs:6:70']);
  });

  it('Rust --defined-in: a renaming `use crate::item::Item as It;` names the module it leads to — `It::new` is item.rs\'s, not that of another file\'s `Item` (outside round X59-04)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "rs3"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod alias;\n',
        'src/item.rs': 'pub struct Item(pub u32);\nimpl Item {\n    pub fn new(id: u32) -> Self {\n        Item(id)\n    }\n}\n',
        'src/util.rs': 'pub struct Item;\nimpl Item {\n    pub fn new(_id: u32) -> Self {\n        Item\n    }\n}\n',
        'src/alias.rs': 'use crate::item::Item as It;\nuse crate::util::Item as Ut;\nuse crate::item;\npub fn all() -> (It, Ut, item::Item) {\n    (It::new(3), Ut::new(4), item::Item::new(5))\n}\n',
      },
    });
    expect(await definedInCallers(repo.dir, 'new', 'src/item.rs', true)).toEqual(['src/alias.rs:5:10', 'src/alias.rs:5:42']);
    expect(await definedInCallers(repo.dir, 'new', 'src/util.rs', true)).toEqual(['src/alias.rs:5:22']);
  });

  it('Rust --defined-in, detect-cascades, check-test-cascade: a second trait of the same name in another module (`other::Make`) is not the definition\'s — by the file\'s own items and its `use` (outside rounds X59-01/08)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "kit"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod make;\npub mod other;\npub mod engine;\npub mod bounds;\npub mod more;\npub mod impls;\n',
        'src/impls.rs': 'use crate::other::Make as O;\npub struct W;\nimpl O for W {\n    fn build(_id: u32) -> Self {\n        W\n    }\n}\npub struct Q;\nimpl crate::other::Make for Q {\n    fn build(_id: u32) -> Self {\n        Q\n    }\n}\npub struct G;\nimpl crate::make::Make for G {\n    fn build(_id: u32) -> Self {\n        G\n    }\n}\n',
        'src/make.rs': 'pub trait Make {\n    fn build(id: u32) -> Self;\n}\n',
        'src/other.rs': 'pub trait Make {\n    fn build(id: u32) -> Self;\n}\nimpl Make for u32 {\n    fn build(id: u32) -> Self {\n        id\n    }\n}\npub fn twice<T: Make>() -> T {\n    T::build(2)\n}\n',
        'src/engine.rs': 'use crate::other::Make;\npub fn run<T: Make>() -> T {\n    T::build(9)\n}\npub fn as_trait<T: Make>() -> T {\n    <T as Make>::build(8)\n}\n',
        'src/bounds.rs': 'use crate::make::Make;\npub fn one<T: Make>() -> T {\n    T::build(1)\n}\npub fn two<T: Make>() -> T {\n    <T as Make>::build(2)\n}\n',
        'src/more.rs': 'use crate::make::Make as M;\nuse crate::other::Make as O;\npub fn m<T: M>() -> T {\n    T::build(3)\n}\npub fn o<U: O>() -> U {\n    U::build(4)\n}\n',
        'tests/other.rs': 'use kit::other::Make;\n#[test]\nfn t3() {\n    assert_eq!(u32::build(7), 7);\n}\n',
        'docs/IMPL/IMPL-kit.yaml': 'title: t\nfeature_slug: kit\nverdict: SUITABLE\nfile_ownership:\n  - file: src/make.rs\n    agent: A\n    wave: 1\nwaves:\n  - number: 1\n    agents:\n      - id: A\n        task: "Change `Make::build()` to take a `&Config` parameter and update every impl."\n',
      },
    });
    // (a bound is read per file and type parameter name: more.rs's `U: O` is other's, `T: M` make's)
    expect(await definedInCallers(repo.dir, 'build', 'src/make.rs')).toEqual(['src/bounds.rs:3', 'src/bounds.rs:6', 'src/more.rs:4']);
    expect(await definedInCallers(repo.dir, 'build', 'src/other.rs')).toEqual(['src/engine.rs:3', 'src/engine.rs:6', 'src/more.rs:7', 'src/other.rs:10', 'tests/other.rs:4']);
    // (other.rs:5 implements other.rs's own Make, impls.rs:4 and :10 too — through an alias and a path: no "may
    // implement" for make.rs's; impls.rs:16, `impl crate::make::Make for G`, does)
    const result = await runCliInProcess(['detect-cascades', '--renames', JSON.stringify([{ old: 'build', new: 'make', scope: 'src/make.rs' }]), '--format', 'json'], { cwd: repo.dir });
    expect(cascades(result).filter((entry) => entry.includes(' syntax ')).map((entry) => entry.split(' ')[0])).toEqual(['src/bounds.rs:3', 'src/bounds.rs:6', 'src/impls.rs:16', 'src/make.rs:2', 'src/more.rs:4']);
    const other = await runCliInProcess(['detect-cascades', '--renames', JSON.stringify([{ old: 'build', new: 'make', scope: 'src/other.rs' }]), '--format', 'json'], { cwd: repo.dir });
    expect(cascades(other).filter((entry) => entry.includes(' high ')).map((entry) => entry.split(' ')[0])).toEqual(['src/impls.rs:4', 'src/impls.rs:10', 'src/other.rs:2', 'src/other.rs:5']);
    // (check-test-cascade: tests/other.rs calls other's Make, unaffected — no stop)
    const cascade = await runCliInProcess(['check-test-cascade', repo.path('docs/IMPL/IMPL-kit.yaml'), '--repo-dir', repo.dir]);
    expect([cascade.code, cascade.stdout.trim()]).toEqual([0, '[]']);
  });

  it('Rust macros: `src/lib.rs` and `src/main.rs` are two crates — each one\'s `macro_rules!` reaches its own modules, not the other\'s (outside round X59-05)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "mac"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'macro_rules! trace {\n    ($($t:tt)*) => { let _ = format!($($t)*); };\n}\npub mod core;\n\npub fn lib_fn() {\n    trace!("lib");\n}\n',
        'src/core.rs': 'pub fn core() {\n    trace!("core");\n}\n',
        'src/main.rs': 'macro_rules! trace {\n    ($($t:tt)*) => { println!($($t)*) };\n}\nmod cli;\n\nfn main() {\n    trace!("main");\n    cli::go();\n}\n',
        'src/cli.rs': 'pub fn go() {\n    trace!("cli");\n}\n',
      },
    });
    expect(await definedInCallers(repo.dir, 'trace', 'src/lib.rs')).toEqual(['src/core.rs:2', 'src/lib.rs:7']);
    expect(await definedInCallers(repo.dir, 'trace', 'src/main.rs')).toEqual(['src/cli.rs:2', 'src/main.rs:7']);
  });

  it('Rust macros: a child module that redefines the macro before its `mod` lines — its child modules\' uses are its own, the parent\'s own uses never its (outside round X59-06)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "mac"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'macro_rules! trace {\n    ($($t:tt)*) => { let _ = format!($($t)*); };\n}\npub mod core;\npub mod net;\n\npub fn lib_fn() {\n    trace!("lib");\n}\n',
        'src/core.rs': 'pub fn core() {\n    trace!("core");\n}\n',
        // (`mod early;` before the redefinition: early.rs still sees lib's macro)
        'src/net/mod.rs': 'pub mod early;\nmacro_rules! trace {\n    ($($t:tt)*) => { let _ = ($($t)*); };\n}\npub mod conn;\n\npub fn net() {\n    trace!("net");\n}\n',
        'src/net/conn.rs': 'pub fn conn() {\n    trace!("conn");\n}\n',
        'src/net/early.rs': 'pub fn early() {\n    trace!("early");\n}\n',
      },
    });
    expect(await definedInCallers(repo.dir, 'trace', 'src/lib.rs')).toEqual(['src/core.rs:2', 'src/lib.rs:8', 'src/net/early.rs:2']);
    // (net's own children by directory, as before: early.rs, declared before net's macro, is still counted — a limit)
    expect((await definedInCallers(repo.dir, 'trace', 'src/net/mod.rs')).filter((line) => !line.startsWith('src/net/early.rs'))).toEqual(['src/net/conn.rs:2', 'src/net/mod.rs:8']);
  });

  it('Rust macros: `#[macro_use(ensure)] extern crate mac;` imports `ensure` — the name in the list is listed; `src/bin/*.rs` are crates of their own, reached by an import only (outside round X59-07)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "mac"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': '#[macro_export]\nmacro_rules! ensure {\n    ($e:expr) => { assert!($e) };\n}\nmacro_rules! trace {\n    ($($t:tt)*) => {};\n}\npub mod core;\n',
        'src/core.rs': 'pub fn run() {\n    ensure!(1 > 0);\n    trace!("core");\n}\n',
        'src/main.rs': 'use mac::ensure;\n\nfn main() {\n    ensure!(true);\n}\n',
        'src/bin/tool.rs': '#[macro_use(ensure)]\nextern crate mac;\n\nfn main() {\n    ensure!(true);\n}\n',
        'src/bin/all.rs': '#[macro_use]\nextern crate mac;\n\nfn main() {\n    ensure!(true);\n}\n',
        // (its own `trace`, from its `#[macro_use] mod macros;`: not lib.rs's, whose `trace` is no export)
        'src/bin/own/main.rs': '#[macro_use]\nmod macros;\n\nfn main() {\n    trace!("own");\n}\n',
        'src/bin/own/macros.rs': 'macro_rules! trace {\n    ($($t:tt)*) => {};\n}\n',
      },
    });
    expect(await definedInCallers(repo.dir, 'trace', 'src/lib.rs')).toEqual(['src/core.rs:3']);
    expect(await definedInCallers(repo.dir, 'ensure', 'src/lib.rs')).toEqual(['src/bin/all.rs:5', 'src/bin/tool.rs:1', 'src/bin/tool.rs:5', 'src/core.rs:2', 'src/main.rs:1', 'src/main.rs:4']);
    const rename = await runCliInProcess(['detect-cascades', repo.dir, '--renames', JSON.stringify([{ old: 'ensure', new: 'ensure2', scope: 'src/lib.rs' }]), '--format', 'json']);
    expect(cascades(rename).filter((line) => line.startsWith('src/bin/'))).toEqual(['src/bin/all.rs:5 syntax medium ensure', 'src/bin/tool.rs:1 syntax high ensure', 'src/bin/tool.rs:5 syntax medium ensure']);
  });

  it('Rust `new --defined-in item.rs`: another module\'s own `struct Item` is another type — its `Item::new()` is no use, `crate::item::Item::new()` there is (outside round X57-11)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "shelf"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod item;\npub mod util;\npub mod store;\n',
        'src/item.rs': 'pub struct Item { pub id: u32 }\n\nimpl Item {\n    pub fn new(id: u32) -> Self { Item { id } }\n}\n',
        'src/util.rs': 'pub struct Item;\nimpl Item { pub fn new(_id: u32) -> Self { Item } }\npub fn make() -> Item { Item::new(9) }\npub fn real() -> crate::item::Item { crate::item::Item::new(1) }\n',
        'src/store.rs': 'use crate::item::Item;\n\npub fn one() -> Item {\n    Item::new(2)\n}\n',
      },
    });
    const result = await runCliInProcess(['check-callers', 'new', '--defined-in', 'src/item.rs', '--format', 'json'], { cwd: repo.dir });
    expect([result.code, result.stderr]).toEqual([0, '']);
    expect(fileLines(result)).toEqual(['src/store.rs:4', 'src/util.rs:4']);
  });

  it('Rust --defined-in: the type a file means by `Item` decides — its import, a path to another module, `super::`, an inline module\'s own type (outside round X58-03/19/21)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "shelf"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod item;\npub mod make;\npub mod util;\npub mod report;\npub mod store;\npub mod convert;\npub mod shop;\n',
        'src/item.rs': 'use crate::make::Make;\n\npub struct Item(pub u32);\n\nimpl Item {\n    pub fn new(id: u32) -> Self { Item(id) }\n}\n\nimpl Make for Item {\n    fn build(id: u32) -> Self { Item::new(id) }\n}\n',
        'src/make.rs': 'pub trait Make {\n    fn build(id: u32) -> Self;\n}\n',
        'src/util.rs': 'pub struct Item(pub u32);\n\nimpl Item {\n    pub fn new(id: u32) -> Self { Item(id) }\n    pub fn build(id: u32) -> Self { Item(id) }\n}\n',
        'src/report.rs': 'use crate::util::Item;\n\npub fn report() -> Item {\n    let _a = Item::new(7);\n    Item::build(8)\n}\n',
        'src/store.rs': 'use crate::item::Item;\nuse crate::make::Make;\n\npub fn fill() -> Vec<Item> {\n    let _other = crate::util::Item::new(5);\n    let _other2 = crate::util::Item::build(6);\n    vec![Item::new(3), Item::build(4)]\n}\n',
        'src/convert.rs': 'use crate::item::Item;\n\npub fn convert(old: legacy::Item) -> Item {\n    Item::new(old.0)\n}\n\npub mod legacy {\n    pub struct Item(pub u32);\n\n    impl Item {\n        pub fn new(id: u32) -> Self {\n            Item(id)\n        }\n    }\n}\n',
        'src/shop/mod.rs': 'pub mod cart;\n\npub struct Item;\n\nimpl Item {\n    pub fn new(_id: u32) -> Self { Item }\n}\n',
        'src/shop/cart.rs': 'pub fn both() -> (super::Item, crate::item::Item) {\n    (super::Item::new(1), crate::item::Item::new(2))\n}\n',
      },
    });
    const callers = (symbol: string, definedIn: string) => definedInCallers(repo.dir, symbol, definedIn, true);
    // (util's Item through report.rs's import and store.rs's path, shop's Item through super:: — not item.rs's)
    expect(await callers('new', 'src/item.rs')).toEqual(['src/convert.rs:4:11', 'src/item.rs:10:39', 'src/shop/cart.rs:2:46', 'src/store.rs:7:16']);
    expect(await callers('build', 'src/make.rs')).toEqual(['src/store.rs:7:30']);
  });

  it('Rust: `#[macro_use] mod macros;` puts the macros in textual scope — bare invocations in the crate\'s later modules are uses with --defined-in, not another crate\'s (outside round X57-12)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "shelf"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': '#[macro_use]\nmod macros;\npub mod store;\n\npub fn demo() -> Vec<u32> {\n    items![1, 2]\n}\n',
        'src/macros.rs': 'macro_rules! items {\n    ($($x:expr),*) => { vec![$($x),*] };\n}\n',
        'src/store.rs': 'pub struct Store { pub items: Vec<u32> }\n\npub fn fill(s: &mut Store) {\n    s.items.extend(items![8]);\n}\n',
        'other/Cargo.toml': '[package]\nname = "other"\nversion = "0.1.0"\nedition = "2021"\n',
        'other/src/lib.rs': 'macro_rules! items {\n    () => { Vec::<u32>::new() };\n}\n\npub fn none() -> Vec<u32> {\n    items![]\n}\n',
      },
    });
    const result = await runCliInProcess(['check-callers', 'items', '--defined-in', 'src/macros.rs', '--format', 'json'], { cwd: repo.dir });
    expect([result.code, result.stderr]).toEqual([0, '']);
    expect(fileLines(result)).toEqual(['src/lib.rs:6', 'src/store.rs:4']);
  });

  it('Rust macros with --defined-in: a macro_rules! in lib.rs reaches its later modules, #[macro_use] chains up, #[macro_use] extern crate brings exported macros, a module\'s own macro shadows (outside round X58-04/05/06/07)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[workspace]\nmembers = ["shelfcore", "app"]\nresolver = "2"\n',
        'shelfcore/Cargo.toml': '[package]\nname = "shelfcore"\nversion = "0.1.0"\nedition = "2021"\n',
        'shelfcore/src/lib.rs': 'macro_rules! log_line {\n    ($($t:tt)*) => { println!($($t)*) };\n}\n\n#[macro_use]\nmod checks;\n#[macro_use]\nmod util;\npub mod engine;\npub mod report;\n\npub fn start() {\n    log_line!("start");\n}\n',
        'shelfcore/src/engine.rs': 'pub fn run(id: u32) -> u32 {\n    log_line!("run {}", id);\n    ensure_id!(id);\n    quick!(id)\n}\n',
        'shelfcore/src/report.rs': 'macro_rules! log_line {\n    ($($t:tt)*) => {};\n}\n\npub fn report() {\n    log_line!("quiet");\n}\n',
        'shelfcore/src/util/mod.rs': '#[macro_use]\nmod helpers;\n\npub fn twice(x: u32) -> u32 {\n    quick!(x) * 2\n}\n',
        'shelfcore/src/util/helpers.rs': 'macro_rules! quick {\n    ($x:expr) => { $x + 1 };\n}\n',
        'shelfcore/src/checks.rs': '#[macro_export]\nmacro_rules! ensure_id {\n    ($id:expr) => { assert!($id > 0, "bad id") };\n}\n',
        'shelfcore/tests/it.rs': '#[macro_use]\nextern crate shelfcore;\n\n#[test]\nfn ids() {\n    ensure_id!(3);\n}\n',
        'app/Cargo.toml': '[package]\nname = "app"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\nshelfcore = { path = "../shelfcore" }\n',
        'app/src/main.rs': '#[macro_use]\nextern crate shelfcore;\n\nmod cmd;\n\nfn main() {\n    ensure_id!(1);\n    cmd::go();\n}\n',
        'app/src/cmd.rs': 'pub fn go() {\n    ensure_id!(2);\n}\n',
        'other/Cargo.toml': '[package]\nname = "other"\nversion = "0.1.0"\nedition = "2021"\n',
        'other/src/main.rs': 'macro_rules! ensure_id {\n    ($id:expr) => {};\n}\n\nfn main() {\n    ensure_id!(4);\n}\n',
      },
    });
    const callers = (symbol: string, definedIn: string) => definedInCallers(repo.dir, symbol, definedIn);
    // (report.rs's own log_line shadows lib.rs's there: X58-04)
    expect(await callers('log_line', 'shelfcore/src/lib.rs')).toEqual(['shelfcore/src/engine.rs:2', 'shelfcore/src/lib.rs:13']);
    expect(await callers('quick', 'shelfcore/src/util/helpers.rs')).toEqual(['shelfcore/src/engine.rs:4', 'shelfcore/src/util/mod.rs:5']);
    // (other/ defines its own ensure_id and has no extern crate: not a use)
    expect(await callers('ensure_id', 'shelfcore/src/checks.rs')).toEqual(['app/src/cmd.rs:2', 'app/src/main.rs:7', 'shelfcore/src/engine.rs:3', 'shelfcore/tests/it.rs:6']);
  });

  it('Rust: a #[macro_export] macro is an item of the crate root — its imports and invocations with --defined-in its file, not a field named like it (outside round X54-11)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "inv"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'mod macros;\npub mod store;\n',
        'src/macros.rs': '#[macro_export]\nmacro_rules! items {\n    ($($x:expr),*) => { vec![$($x),*] };\n}\n',
        'src/store.rs': 'pub struct Store {\n    pub items: Vec<i32>,\n}\n\nimpl Store {\n    pub fn len(&self) -> usize {\n        self.items.len()\n    }\n}\n',
        'tests/it.rs': 'use inv::items;\n\n#[test]\nfn builds() {\n    assert_eq!(items![1, 2].len(), 2);\n}\n',
      },
    });
    const result = await runCliInProcess(['check-callers', 'items', '--defined-in', 'src/macros.rs', '--format', 'json'], { cwd: repo.dir });
    expect([result.code, result.stderr]).toEqual([0, '']);
    expect(fileLines(result)).toEqual(['tests/it.rs:1', 'tests/it.rs:5']);
  });

  it('a qualified check-callers on a file with a 200 KB line answers in well under a second per use (outside round X55-03: seconds per reference)', async () => {
    const repo = await createTestRepo({
      files: {
        'Cargo.toml': '[package]\nname = "big"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': `pub struct Item;\nimpl Item {\n    pub fn new() -> Item {\n        Item\n    }\n}\npub fn all() -> Vec<(Item, &'static str)> {\n    vec![(Item::new(), "${'x'.repeat(200_000)}"), (Item::new(), ""), (Item::new(), "")]\n}\n`,
      },
    });
    const started = performance.now();
    const result = await runCliInProcess(['check-callers', 'Item.new', '--format', 'json'], { cwd: repo.dir });
    expect((JSON.parse(result.stdout) as unknown[]).length).toBe(3);
    expect(performance.now() - started).toBeLessThan(5_000);
    // (and with --defined-in, whose Rust path checks read the text before each use: 61 s before they were bounded)
    const again = performance.now();
    expect(await definedInCallers(repo.dir, 'new', 'src/lib.rs')).toEqual(['src/lib.rs:8', 'src/lib.rs:8', 'src/lib.rs:8']);
    expect(performance.now() - again).toBeLessThan(5_000);
  });

  it('a rename lists the key of a module mock\'s factory for the renamed module, not for another module (outside round X54-02)', async () => {
    const repo = await createTestRepo({
      files: {
        'src/crypto.ts': 'export function hashPassword(text: string): string {\n  return text;\n}\n',
        'src/other.ts': 'export function hashPassword(): string {\n  return "";\n}\n',
        'src/users.ts': "import { hashPassword } from './crypto';\n\nexport function save(p: string): string {\n  return hashPassword(p);\n}\n",
        'test/users.test.ts': "import { save } from '../src/users';\n\nvi.mock('../src/crypto', () => ({\n  hashPassword: vi.fn(() => 'h'),\n}));\nvi.mock('../src/other', () => ({ hashPassword: () => 'x' }));\n\ntest('saves', () => {\n  save('a');\n});\n",
      },
    });
    const result = await runCliInProcess(['detect-cascades', repo.dir, '--renames', JSON.stringify([{ old: 'hashPassword', new: 'hashSecret', scope: 'src/crypto.ts' }]), '--format', 'json']);
    expect(cascades(result)).toEqual([
      'src/crypto.ts:1 syntax high hashPassword',
      'src/users.ts:1 syntax high hashPassword',
      'src/users.ts:4 syntax medium hashPassword',
      "test/users.test.ts:4 semantic medium hashPassword: vi.fn(() => 'h'),",
    ]);
  });

  it('paths with spaces and non-ASCII letters (git grep -z, never quoted paths)', async () => {
    const repo = await analysisFixtureRepo('ts');
    repo.write('src/ü dir/x.ts', "import { WidgetStore } from '../model.js';\nnew WidgetStore(); // WidgetStore\n");
    await repo.commitAll('odd path');
    const result = await runCliInProcess(['detect-cascades', repo.dir, '--renames', '[{"old":"WidgetStore","new":"Shelf"}]', '--format', 'json']);
    expect(cascades(result).filter((line) => line.startsWith('src/ü'))).toEqual([
      'src/ü dir/x.ts:1 syntax high WidgetStore',
      'src/ü dir/x.ts:2 syntax medium WidgetStore',
      'src/ü dir/x.ts:2 semantic low new WidgetStore(); // WidgetStore',
    ]);
  });

  it('bad --renames: exit 2', async () => {
    const repo = await analysisFixtureRepo('ts');
    expect(expectCodedError(await runCli(['detect-cascades', repo.dir, '--renames', 'bad']), { exitCode: 2 }).message).toMatch(/^invalid --renames JSON: /);
    expect(expectCodedError(await runCliInProcess(['detect-cascades', repo.dir, '--renames', '[{"old":"a b","new":"c"}]']), { exitCode: 2 }).code).toBe('X001_INVALID_INPUT');
    expect(expectCodedError(await runCliInProcess(['detect-cascades', repo.dir, '--renames', '{}']), { exitCode: 2 }).code).toBe('X001_INVALID_INPUT');
    // A scope that does not exist, or one outside the repository, is an error (never silently ignored).
    const missing = expectCodedError(await runCliInProcess(['detect-cascades', repo.dir, '--renames', '[{"old":"foo","new":"bar","scope":"nope/"}]']), { exitCode: 2 });
    expect(missing.code).toBe('X002_FILE_READ');
    expect(missing.message).toMatch(/^--renames scope "nope": no such file or directory in \//);
    const outside = expectCodedError(await runCliInProcess(['detect-cascades', repo.dir, '--renames', '[{"old":"foo","new":"bar","scope":"../../etc"}]']), { exitCode: 2 });
    expect(outside.code).toBe('X001_INVALID_INPUT');
    expect(outside.message).toMatch(/^--renames scope "\.\.\/\.\.\/etc": outside the repository \//);
  });
});

// The Go reference (a comparison tool, never a dependency): skipped where it is absent.
const goBinary = path.resolve(repoRoot, '..', 'shared', 'tools', 'polywave-tools-go');

describe.skipIf(!existsSync(goBinary))('against the Go polywave-tools', () => {
  it('check-callers: same leading keys; Go adds the definition, comments, a string, TestMakeWidget and MakeWidgetFactory (substrings)', async () => {
    const repo = await analysisFixtureRepo('go');
    const go = spawnSync(goBinary, ['check-callers', 'MakeWidget', '--repo-dir', repo.dir], { encoding: 'utf8' });
    expect(go.status).toBe(0);
    const goCallers = JSON.parse(go.stdout) as Array<Record<string, unknown>>;
    const ours = JSON.parse((await runCliInProcess(['check-callers', 'MakeWidget'], { cwd: repo.dir })).stdout) as Array<Record<string, unknown>>;
    expect(Object.keys(goCallers[0]!)).toEqual(['file', 'line', 'context']);
    expect(Object.keys(ours[0]!).slice(0, 3)).toEqual(['file', 'line', 'context']);
    const where = (entry: Record<string, unknown>) => `${String(entry.file)}:${String(entry.line)}`;
    const goLines = goCallers.map(where);
    const ourLines = ours.map(where);
    expect(ourLines.every((line) => goLines.includes(line))).toBe(true);
    expect(goLines.filter((line) => !ourLines.includes(line)).sort()).toEqual([
      'model/model.go:13', // comment
      'model/model.go:14', // the definition
      'model/model_test.go:5', // TestMakeWidget (substring)
      'model/model_test.go:7', // a string
      'service/service.go:12', // MakeWidgetFactory
      'service/service.go:5', // comment
    ]);
  });

  it('analyze-deps on Go files: the same graph and waves', async () => {
    const repo = await analysisFixtureRepo('go');
    const files = 'model/model.go,service/service.go,cmd/main.go';
    const go = spawnSync(goBinary, ['analyze-deps', '.', '--files', files, '--format', 'json'], { encoding: 'utf8', cwd: repo.dir });
    expect(go.status).toBe(0);
    const ours = JSON.parse((await runCliInProcess(['analyze-deps', repo.dir, '--files', files, '--format', 'json'])).stdout) as { nodes: unknown; waves: unknown };
    const goResult = JSON.parse(go.stdout) as { nodes: Array<Record<string, unknown>>; waves: unknown };
    // Go prints null for an empty list.
    const normalized = goResult.nodes.map((node) => ({ ...node, depends_on: node.depends_on ?? [], depended_by: node.depended_by ?? [] }));
    expect(ours.nodes).toEqual(normalized);
    expect(ours.waves).toEqual(goResult.waves);
  });
});
