import { copyFileSync, lstatSync, mkdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { corpusRoot, runCli } from './support/cli.js';
import { runCliInProcess } from './support/cli-in-process.js';
import { expectCodedError } from './support/cli-assert.js';
import { createTestRepo, type TestRepo } from './support/git-repo.js';
import { makeTempDir } from './support/temp.js';

// Commands run through the CLI's main() in this process (test/support/cli-in-process.ts: the same
// commander, command table and one-line errors as the binary, grammars compiled once); the real
// binary (runCli) where the claim is about the process: one bad-input call per command (one coded
// line, exit 2, no stack trace) and the eight concurrent solve processes.
const corpus = (name: string) => path.join(corpusRoot, 'polywave-go', 'IMPL', 'complete', name);

/** A test repository holding `files` and the given IMPL text (or a corpus IMPL copied in). */
async function repoWith(files: Record<string, string>, impl: { name: string; text?: string; corpusFile?: string }): Promise<{ repo: TestRepo; implPath: string }> {
  const repo = await createTestRepo({ files });
  const implPath = repo.path(`docs/IMPL/${impl.name}`);
  mkdirSync(path.dirname(implPath), { recursive: true });
  if (impl.corpusFile) copyFileSync(impl.corpusFile, implPath);
  else repo.write(`docs/IMPL/${impl.name}`, impl.text!);
  await repo.commitAll('fixture');
  return { repo, implPath };
}

const json = (stdout: string): unknown => JSON.parse(stdout);

describe('check-test-cascade (E46): real references per language', () => {
  it('X66-62: Django `tests.py`, `tests_*.py` (unittest discover\'s `test*.py`), Cypress `*.cy.ts`, Angular `*.e2e-spec.ts` are test files — pytest/unittest and tsc fail each after the change', async () => {
    const { repo, implPath } = await repoWith(
      {
        'shop/__init__.py': '',
        'shop/db.py': 'def connect():\n    return 1\n',
        'orders/__init__.py': '',
        'orders/tests.py': 'from unittest import TestCase\nfrom shop.db import connect\n\n\nclass T(TestCase):\n    def test_c(self):\n        self.assertEqual(connect(), 1)\n',
        'orders/tests_models.py': 'from shop.db import connect\n\n\ndef test_y():\n    assert connect() == 1\n',
        'orders/testing_utils_test.py': 'from shop.db import connect\n\n\ndef test_x():\n    assert connect() == 1\n',
        'src/config.ts': 'export function loadConfig(name: string): string {\n  return name;\n}\n',
        'cypress/e2e/login.cy.ts': "import { loadConfig } from '../../src/config';\n\nloadConfig('a');\n",
        'src/app.e2e-spec.ts': "import { loadConfig } from './config';\n\nloadConfig('b');\n",
      },
      {
        name: 'IMPL-test-names.yaml',
        text: 'title: t\nfeature_slug: t\nverdict: SUITABLE\nfile_ownership:\n  - file: shop/db.py\n    agent: A\n    wave: 1\n  - file: src/config.ts\n    agent: A\n    wave: 1\nwaves:\n  - number: 1\n    agents:\n      - id: A\n        task: Add a `timeout` parameter to `connect()` in shop/db.py and an `options` parameter to `loadConfig()` in src/config.ts.\n',
      },
    );
    const result = await runCliInProcess(['check-test-cascade', implPath, '--repo-dir', repo.dir]);
    expect(result.code, result.stderr).toBe(1);
    expect((json(result.stdout) as Array<{ test_file: string; line: number }>).map((error) => `${error.test_file}:${error.line}`).sort()).toEqual([
      'cypress/e2e/login.cy.ts:3',
      'orders/testing_utils_test.py:5',
      'orders/tests.py:7',
      'orders/tests_models.py:5',
      'src/app.e2e-spec.ts:3',
    ]);
  });

  it('Go: a method whose interface changes — member calls in unowned test files of the package, not comments, not owned tests', async () => {
    const { repo, implPath } = await repoWith(
      {
        'go.mod': 'module example.com/m\n\ngo 1.22\n',
        'store/store.go': 'package store\n\ntype Store interface {\n\tLoad(key string) (string, error)\n}\n',
        'store/mem.go': 'package store\n\ntype Mem struct{}\n\nfunc (m *Mem) Load(key string) (string, error) { return "", nil }\n',
        'store/mem_test.go': 'package store\n\nimport "testing"\n\nfunc TestMem(t *testing.T) {\n\tm := &Mem{}\n\t// Load is called below\n\tm.Load("k")\n}\n',
        'store/owned_test.go': 'package store\n\nimport "testing"\n\nfunc TestOwned(t *testing.T) { (&Mem{}).Load("x") }\n',
        'api/api_test.go': 'package api\n\nimport "testing"\n\nfunc TestNothing(t *testing.T) { t.Log("Load") }\n',
      },
      {
        name: 'IMPL-go.yaml',
        text: 'title: go\nfeature_slug: go\nverdict: SUITABLE\nfile_ownership:\n  - file: store/store.go\n    agent: A\n    wave: 1\n  - file: store/owned_test.go\n    agent: A\n    wave: 1\ninterface_contracts:\n  - name: Store.Load\n    description: change return type to Result\n    definition: "Load(key string) Result[string]"\n    location: store/store.go\nwaves:\n  - number: 1\n    agents:\n      - id: A\n        task: Migrate `Store.Load` to Result.\n',
      },
    );
    const result = await runCliInProcess(['check-test-cascade', implPath, '--repo-dir', repo.dir]);
    expect(result.code, result.stderr).toBe(1);
    expect(json(result.stdout)).toEqual([{ symbol: 'Store.Load', test_file: 'store/mem_test.go', line: 8, context: 'm.Load("k")', agents: ['A'] }]);
  });

  it('Go: an external test package, a dot import and a package named unlike its directory are orphaned callers too (X49-11)', async () => {
    const { repo, implPath } = await repoWith(
      {
        'go.mod': 'module example.com/m\n\ngo 1.22\n',
        'internal/util/defs.go': 'package utility\n\ntype Foo struct{ N int }\n\nfunc Make() Foo { return Foo{} }\n',
        'internal/util/ext_test.go': 'package utility_test\n\nimport (\n\t"testing"\n\n\t"example.com/m/internal/util"\n)\n\nfunc TestExt(t *testing.T) {\n\t_ = utility.Make()\n}\n',
        'app/app_test.go': 'package app\n\nimport (\n\t"testing"\n\n\t"example.com/m/internal/util"\n)\n\nfunc TestApp(t *testing.T) {\n\tif utility.Make().N != 0 {\n\t\tt.Fail()\n\t}\n}\n',
        'dot/dot_test.go': 'package dot\n\nimport (\n\t"testing"\n\n\t. "example.com/m/internal/util"\n)\n\nfunc TestDot(t *testing.T) {\n\t_ = Make()\n}\n',
      },
      {
        name: 'IMPL-go-ext.yaml',
        text: 'title: t\nfeature_slug: t\nverdict: SUITABLE\nfile_ownership:\n  - file: internal/util/defs.go\n    agent: A\n    wave: 1\nwaves:\n  - number: 1\n    agents:\n      - id: A\n        task: Change the signature of `Make()` to add a `size` parameter in internal/util/defs.go.\n',
      },
    );
    const result = await runCliInProcess(['check-test-cascade', implPath, '--repo-dir', repo.dir]);
    expect(result.code, result.stderr).toBe(1);
    expect((json(result.stdout) as Array<{ test_file: string; line: number }>).map((entry) => `${entry.test_file}:${entry.line}`)).toEqual(['app/app_test.go:10', 'dot/dot_test.go:10', 'internal/util/ext_test.go:10']);
  });

  it('TypeScript: an aliased import in a test file is found; a same-named function of another module and a comment are not', async () => {
    const { repo, implPath } = await repoWith(
      {
        'src/config.ts': 'export function loadConfig(path: string): string {\n  return path;\n}\n',
        'src/other.ts': 'export function loadConfig(): number {\n  return 1;\n}\n',
        'test/config.test.ts': "import { loadConfig as load } from '../src/config.js';\n\ntest('x', () => {\n  expect(load('a')).toBe('a');\n});\n",
        'test/other.test.ts': "import { loadConfig } from '../src/other.js';\n// loadConfig from config is not used here\ntest('y', () => loadConfig());\n",
      },
      {
        name: 'IMPL-ts.yaml',
        text: 'title: ts\nfeature_slug: ts\nverdict: SUITABLE\nfile_ownership:\n  - file: src/config.ts\n    agent: A\n    wave: 1\nwaves:\n  - number: 1\n    agents:\n      - id: A\n        task: Change signature of `loadConfig` in src/config.ts to take options.\n',
      },
    );
    const result = await runCliInProcess(['check-test-cascade', implPath, '--repo-dir', repo.dir]);
    expect(result.code, result.stderr).toBe(1);
    expect(json(result.stdout)).toEqual([{ symbol: 'loadConfig', test_file: 'test/config.test.ts', line: 4, context: "expect(load('a')).toBe('a');", agents: ['A'] }]);
  });

  it('Python: a test importing the module is an orphan; a test defining its own function of that name is not', async () => {
    const { repo, implPath } = await repoWith(
      {
        'pkg/__init__.py': '',
        'pkg/lock.py': 'def parse_lock(path):\n    return []\n',
        'tests/test_lock.py': 'from pkg.lock import parse_lock\n\n\ndef test_parse():\n    assert parse_lock("x") == []\n',
        'tests/test_other.py': 'def parse_lock(p):\n    return p\n\n\ndef test_local():\n    assert parse_lock(1) == 1\n',
      },
      {
        name: 'IMPL-py.yaml',
        text: 'title: py\nfeature_slug: py\nverdict: SUITABLE\nfile_ownership:\n  - file: pkg/lock.py\n    agent: A\n    wave: 1\nwaves:\n  - number: 1\n    agents:\n      - id: A\n        task: Add a `strict` parameter to `parse_lock()`.\n',
      },
    );
    const result = await runCliInProcess(['check-test-cascade', implPath, '--repo-dir', repo.dir]);
    expect(result.code, result.stderr).toBe(1);
    expect(json(result.stdout)).toEqual([{ symbol: 'parse_lock', test_file: 'tests/test_lock.py', line: 5, context: 'assert parse_lock("x") == []', agents: ['A'] }]);
  });

  it('Rust: an integration test under tests/ and the #[cfg(test)] module of a source file; `pub mod parse;` is not a caller', async () => {
    const { repo, implPath } = await repoWith(
      {
        'Cargo.toml': '[package]\nname = "lockfile"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod parse;\npub mod run;\n',
        'src/parse.rs': 'pub fn parse_lock(text: &str) -> Vec<String> {\n    vec![text.to_string()]\n}\n',
        'src/run.rs': 'use crate::parse::parse_lock;\n\npub fn run() -> usize {\n    parse_lock("c").len()\n}\n\n#[cfg(test)]\nmod tests {\n    use crate::parse::parse_lock;\n    #[test]\n    fn runs() {\n        assert_eq!(parse_lock("b").len(), super::run());\n    }\n}\n',
        'tests/parse.rs': 'use lockfile::parse::parse_lock;\n\n#[test]\nfn parses() {\n    assert_eq!(parse_lock("a").len(), 1);\n}\n',
      },
      {
        name: 'IMPL-rs.yaml',
        text: 'title: rs\nfeature_slug: rs\nverdict: SUITABLE\nfile_ownership:\n  - file: src/parse.rs\n    agent: A\n    wave: 1\nwaves:\n  - number: 1\n    agents:\n      - id: A\n        task: Add a `strict` parameter to `parse_lock()`.\n',
      },
    );
    const result = await runCliInProcess(['check-test-cascade', implPath, '--repo-dir', repo.dir]);
    expect(result.code, result.stderr).toBe(1);
    expect(json(result.stdout)).toEqual([
      { symbol: 'parse_lock', test_file: 'src/run.rs', line: 12, context: 'assert_eq!(parse_lock("b").len(), super::run());', agents: ['A'] },
      { symbol: 'parse_lock', test_file: 'tests/parse.rs', line: 5, context: 'assert_eq!(parse_lock("a").len(), 1);', agents: ['A'] },
    ]);
  });

  it('JavaScript: a spec file importing through a re-exporting index is found', async () => {
    const { repo, implPath } = await repoWith(
      {
        'package.json': '{"type": "module"}\n',
        'lib/slug.js': 'export function slugify(text) {\n  return text.toLowerCase();\n}\n',
        'lib/index.js': "export { slugify } from './slug.js';\n",
        'lib/index.spec.js': "import { slugify } from './index.js';\n\nit('slugs', () => {\n  slugify('A');\n});\n",
      },
      {
        name: 'IMPL-js.yaml',
        text: 'title: js\nfeature_slug: js\nverdict: SUITABLE\nfile_ownership:\n  - file: lib/slug.js\n    agent: A\n    wave: 1\nwaves:\n  - number: 1\n    agents:\n      - id: A\n        task: Rename the options of `slugify()` (new signature).\n',
      },
    );
    const result = await runCliInProcess(['check-test-cascade', implPath, '--repo-dir', repo.dir]);
    expect(result.code, result.stderr).toBe(1);
    expect(json(result.stdout)).toEqual([{ symbol: 'slugify', test_file: 'lib/index.spec.js', line: 4, context: "slugify('A');", agents: ['A'] }]);
  });

  it('ordinary task wordings of a signature change are taken for one: a qualified type in backticks, a file path, take / argument / to return / async (outside round X54-03); everyday wordings do not (X55-02)', async () => {
    const files = {
      'go.mod': 'module example.com/m\n\ngo 1.22\n',
      'store/store.go': 'package store\n\ntype Mem struct{}\n\nfunc NewMemStore() *Mem { return &Mem{} }\n',
      'store/mem_test.go': 'package store\n\nimport "testing"\n\nfunc TestMem(t *testing.T) {\n\t_ = NewMemStore()\n}\n',
    };
    const wordings = [
      'Add a `ctx context.Context` parameter to `NewMemStore()`.',
      'Add a `logger *slog.Logger` parameter to `NewMemStore()` in store/store.go.',
      'Make `NewMemStore()` take a `capacity int`.',
      'Make `NewMemStore()` take a capacity parameter.',
      // (outside round X56-02/12: missed by the X55 fix)
      'Make `NewMemStore()` take a capacity.',
      'Make `NewMemStore()` return an error as well.',
      '`NewMemStore()` should now take a context as its first argument.',
      "Fix `NewMemStore()` so it doesn't panic and add a `ctx` parameter.",
      'Add an optional `capacity` argument to `NewMemStore()`.',
      'Change `NewMemStore()` in store/store.go to return `(*Mem, error)`.',
    ];
    for (const [index, task] of wordings.entries()) {
      const { repo, implPath } = await repoWith(files, {
        name: `IMPL-w${index}.yaml`,
        text: `title: w\nfeature_slug: w\nverdict: SUITABLE\nfile_ownership:\n  - file: store/store.go\n    agent: A\n    wave: 1\nwaves:\n  - number: 1\n    agents:\n      - id: A\n        task: ${JSON.stringify(task)}\n`,
      });
      const result = await runCliInProcess(['check-test-cascade', implPath, '--repo-dir', repo.dir]);
      expect([result.code, json(result.stdout)], task).toEqual([1, [{ symbol: 'NewMemStore', test_file: 'store/mem_test.go', line: 6, context: '_ = NewMemStore()', agents: ['A'] }]]);
    }
    // Everyday wordings that change no signature (outside round X55-02: they failed a wave): two sentences, a clause
    // after `;` or `:`, a negation, "make sure", "return early", "take the lock", the argument parser.
    const unchanged = [
      'Add logging to `NewMemStore()`. Document every parameter.',
      'Make `NewMemStore()` return early when the map is already allocated.',
      'Add a doc comment to `NewMemStore()`; its arguments stay the same.',
      'Refactor `NewMemStore()` internals without changing its parameters.',
      'Change `NewMemStore()` to take the lock before allocating.',
      'Make sure `NewMemStore()` still returns the same value.',
      'Update `NewMemStore()` docs: it returns a *Mem.',
      'Update `NewMemStore()` to handle edge cases for the argument parser.',
      // (outside round X56-04: values are no types, and kept signatures are kept)
      'Make `NewMemStore()` return `nil` when closed.',
      'Do not add parameters to `NewMemStore()`.',
      '`NewMemStore()` must keep its current signature.',
      'Have `NewMemStore()` take a snapshot before writing.',
    ];
    for (const [index, task] of unchanged.entries()) {
      const { repo, implPath } = await repoWith(files, { name: `IMPL-none${index}.yaml`, text: `title: w\nfeature_slug: w\nverdict: SUITABLE\nfile_ownership:\n  - file: store/store.go\n    agent: A\n    wave: 1\nwaves:\n  - number: 1\n    agents:\n      - id: A\n        task: ${JSON.stringify(task)}\n` });
      const none = await runCliInProcess(['check-test-cascade', implPath, '--repo-dir', repo.dir]);
      expect([none.code, none.stdout], task).toEqual([0, '[]\n']);
    }
  });

  it('Rust `Type::new()` in a task: its calls through the type and inside assert_eq! are orphaned callers, as check-callers Type.new lists them (outside round X54-07)', async () => {
    const { repo, implPath } = await repoWith(
      {
        'Cargo.toml': '[package]\nname = "shop"\nversion = "0.1.0"\nedition = "2021"\n',
        'src/lib.rs': 'pub mod item;\npub mod store;\n',
        'src/item.rs': 'pub struct Item { pub name: String }\n\nimpl Item {\n    pub fn new(name: &str) -> Item {\n        Item { name: name.to_string() }\n    }\n    pub fn is_empty(&self) -> bool {\n        self.name.is_empty()\n    }\n}\n',
        'src/store.rs': 'use crate::item::Item;\n\npub struct Other;\nimpl Other {\n    pub fn new() -> Other { Other }\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n    #[test]\n    fn stores() {\n        let item = Item::new("a");\n        assert_eq!(Item::new("b").is_empty(), false);\n        let _ = Other::new();\n        drop(item);\n    }\n}\n',
        'tests/items.rs': 'use shop::item::Item;\n\n#[test]\nfn builds() {\n    assert!(!Item::new("x").is_empty());\n}\n',
      },
      {
        name: 'IMPL-rs-new.yaml',
        text: 'title: rs\nfeature_slug: rs\nverdict: SUITABLE\nfile_ownership:\n  - file: src/item.rs\n    agent: A\n    wave: 1\nwaves:\n  - number: 1\n    agents:\n      - id: A\n        task: Add a `price` parameter to `Item::new()`.\n',
      },
    );
    const result = await runCliInProcess(['check-test-cascade', implPath, '--repo-dir', repo.dir]);
    expect(result.code, result.stderr).toBe(1);
    expect(json(result.stdout)).toEqual([
      { symbol: 'Item.new', test_file: 'src/store.rs', line: 13, context: 'let item = Item::new("a");', agents: ['A'] },
      { symbol: 'Item.new', test_file: 'src/store.rs', line: 14, context: 'assert_eq!(Item::new("b").is_empty(), false);', agents: ['A'] },
      { symbol: 'Item.new', test_file: 'tests/items.rs', line: 5, context: 'assert!(!Item::new("x").is_empty());', agents: ['A'] },
    ]);
  });

  it('Go: a test double implementing a changed interface method is an orphan too (outside round X54-04)', async () => {
    const { repo, implPath } = await repoWith(
      {
        'go.mod': 'module example.com/svc\n\ngo 1.22\n',
        'store/store.go': 'package store\n\ntype Store interface {\n\tPut(key string) error\n\tLen() int\n}\n',
        'service/service_test.go': 'package service\n\nimport "example.com/svc/store"\n\ntype fake struct{}\n\nfunc (f *fake) Put(key string) error { return nil }\n\nfunc (f *fake) Len() int { return 0 }\n\nvar _ store.Store = (*fake)(nil)\n',
        // (a fake of another interface with a Put and no Len: not Store's — outside round X55-05)
        'client/client_test.go': 'package client\n\ntype fakeSink struct{}\n\nfunc (f fakeSink) Put(key string) error { return nil }\n',
        // (a fake embedding the interface, and one whose methods are in two files of the package: both Store's — X56-05)
        'service/stub_test.go': 'package service\n\nimport "example.com/svc/store"\n\ntype stub struct{ store.Store }\n\nfunc (s stub) Put(key string) error { return nil }\n',
        'service/rec_test.go': 'package service\n\ntype rec struct{}\n\nfunc (r *rec) Put(key string) error { return nil }\n',
        'service/rec_len_test.go': 'package service\n\nfunc (r *rec) Len() int { return 0 }\n',
        'other/other_test.go': 'package other\n\ntype Box struct{}\n\nfunc (b *Box) Get() {}\n',
      },
      {
        name: 'IMPL-fake.yaml',
        text: 'title: f\nfeature_slug: f\nverdict: SUITABLE\nfile_ownership:\n  - file: store/store.go\n    agent: A\n    wave: 1\nwaves:\n  - number: 1\n    agents:\n      - id: A\n        task: Add a `ctx context.Context` parameter to `Store.Put`.\n',
      },
    );
    const result = await runCliInProcess(['check-test-cascade', implPath, '--repo-dir', repo.dir]);
    expect(result.code, result.stderr).toBe(1);
    expect((json(result.stdout) as Array<{ test_file: string; line: number }>).map((error) => `${error.test_file}:${error.line}`)).toEqual(['service/rec_test.go:5', 'service/service_test.go:7', 'service/stub_test.go:7']);
  });

  it('TS names with `$` and Unicode letters, and a one-line interface\'s methods, are changed symbols too (outside round X55-07)', async () => {
    const { repo, implPath } = await repoWith(
      {
        'src/api.ts': 'export function $get(key: string): string {\n  return key;\n}\nexport interface Störe { put(k: string): void; get(k: string): string; }\n',
        'test/api.test.ts': "import { $get, type Störe } from '../src/api';\n\nclass Fake implements Störe { put(k: string): void {} get(k: string): string { return k; } }\ntest('x', () => { $get('a'); new Fake().put('b'); });\n",
      },
      {
        name: 'IMPL-odd.yaml',
        text: 'title: o\nfeature_slug: o\nverdict: SUITABLE\nfile_ownership:\n  - file: src/api.ts\n    agent: A\n    wave: 1\nwaves:\n  - number: 1\n    agents:\n      - id: A\n        task: "Add a `strict` parameter to `$get()` and to `Störe.put`."\n',
      },
    );
    const result = await runCliInProcess(['check-test-cascade', implPath, '--repo-dir', repo.dir]);
    expect(result.code, result.stderr).toBe(1);
    expect((json(result.stdout) as Array<{ symbol: string; line: number }>).map((error) => `${error.symbol}:${error.line}`)).toEqual(['Störe.put:3', '$get:4']);
  });

  it('Python: a changed pytest fixture of a conftest.py — the unowned tests that request it are orphans (outside round X57-06)', async () => {
    const { repo, implPath } = await repoWith(
      {
        'tests/conftest.py': 'import pytest\n\n\n@pytest.fixture\ndef db():\n    return {}\n',
        'tests/test_models.py': 'def test_save(db):\n    assert db == {}\n',
      },
      {
        name: 'IMPL-fixture.yaml',
        text: 'title: f\nfeature_slug: f\nverdict: SUITABLE\nfile_ownership:\n  - file: tests/conftest.py\n    agent: A\n    wave: 1\nwaves:\n  - number: 1\n    agents:\n      - id: A\n        task: Make `db()` in tests/conftest.py return a `Session` instead of a dict.\n',
      },
    );
    const result = await runCliInProcess(['check-test-cascade', implPath, '--repo-dir', repo.dir]);
    expect(result.code, result.stderr).toBe(1);
    expect(json(result.stdout)).toEqual([{ symbol: 'db', test_file: 'tests/test_models.py', line: 1, context: 'def test_save(db):', agents: ['A'] }]);
  });

  it('no changed signature → [] and exit 0; not a git repository → D011, exit 2', async () => {
    const { repo, implPath } = await repoWith({ 'a.go': 'package a\n' }, { name: 'IMPL-none.yaml', text: 'title: n\nfeature_slug: n\nverdict: SUITABLE\nwaves:\n  - number: 1\n    agents:\n      - id: A\n        task: add docs\n' });
    const ok = await runCliInProcess(['check-test-cascade', implPath, '--repo-dir', repo.dir]);
    expect([ok.code, ok.stdout]).toEqual([0, '[]\n']);
    expectCodedError(await runCli(['check-test-cascade', implPath, '--repo-dir', path.join(repo.root)]), { code: 'D011_REPO_ROOT_INVALID' });
  });
});

describe('historical cases from the corpus (the real IMPL manifests, source slices rebuilt from what they say)', () => {
  it('IMPL-deps-review-fixes: Agent B migrated LockFileParser.Parse; cargolock/gosum/packagelock/poetrylock _test.go were in nobody\'s ownership (E46 cites the 30 min of post-merge fixes) — check-test-cascade names exactly those 4', async () => {
    const parser = (name: string) => `package deps\n\ntype ${name} struct{}\n\nfunc (p *${name}) Parse(filePath string) ([]PackageInfo, error) { return nil, nil }\n`;
    const test = (name: string, file: string) => `package deps\n\nimport "testing"\n\nfunc Test${name}(t *testing.T) {\n\tparser := &${name}{}\n\tpkgs, err := parser.Parse("testdata/${file}")\n\t_ = pkgs\n\t_ = err\n}\n`;
    const files: Record<string, string> = {
      'pkg/deps/types.go': 'package deps\n\ntype PackageInfo struct{ Name string }\n\ntype LockFileParser interface {\n\tParse(filePath string) ([]PackageInfo, error)\n\tDetect(filePath string) bool\n}\n',
      'pkg/deps/checker.go': 'package deps\n\nfunc CheckDeps(implPath string, wave int) error {\n\tvar parsers []LockFileParser\n\tfor _, parser := range parsers {\n\t\tparser.Parse(implPath)\n\t}\n\treturn nil\n}\n',
      'pkg/deps/checker_test.go': 'package deps\n\nimport "testing"\n\nfunc TestCheckDeps(t *testing.T) { _ = CheckDeps("x", 1) }\n',
    };
    for (const [file, type] of [['gosum', 'GoSumParser'], ['packagelock', 'PackageLockParser'], ['cargolock', 'CargoLockParser'], ['poetrylock', 'PoetryLockParser']] as const) {
      files[`pkg/deps/${file}.go`] = parser(type);
      files[`pkg/deps/${file}_test.go`] = test(type, file);
    }
    const { repo, implPath } = await repoWith(files, { name: 'IMPL-deps-review-fixes.yaml', corpusFile: corpus('IMPL-deps-review-fixes.yaml') });
    const result = await runCliInProcess(['check-test-cascade', implPath, '--repo-dir', repo.dir]);
    expect(result.code, result.stderr).toBe(1);
    const errors = json(result.stdout) as Array<{ symbol: string; test_file: string; line: number; agents: string[] }>;
    expect(errors.map((error) => [error.symbol, error.test_file, error.line, error.agents])).toEqual(
      ['cargolock', 'gosum', 'packagelock', 'poetrylock'].map((file) => ['LockFileParser.Parse', `pkg/deps/${file}_test.go`, 7, ['B', 'D', 'E', 'F']]),
    );
  });

  it('IMPL-logging-injection-remaining: Agent E added a logger parameter to protocol.Cleanup; its completion notes say pkg/protocol/cleanup_test.go (unowned) still used the old signature — check-test-cascade finds it', async () => {
    const { repo, implPath } = await repoWith(
      {
        'pkg/protocol/cleanup.go': 'package protocol\n\ntype CleanupData struct{}\n\nfunc Cleanup(manifestPath string, waveNum int, repoDir string) (CleanupData, error) {\n\treturn CleanupData{}, nil\n}\n',
        'pkg/protocol/cleanup_test.go': 'package protocol\n\nimport "testing"\n\nfunc TestCleanup(t *testing.T) {\n\tif _, err := Cleanup("IMPL.yaml", 1, t.TempDir()); err != nil {\n\t\tt.Fatal(err)\n\t}\n}\n',
      },
      { name: 'IMPL-logging-injection-remaining.yaml', corpusFile: corpus('IMPL-logging-injection-remaining.yaml') },
    );
    const result = await runCliInProcess(['check-test-cascade', implPath, '--repo-dir', repo.dir]);
    expect(result.code, result.stderr).toBe(1);
    expect(json(result.stdout)).toEqual([
      { symbol: 'Cleanup', test_file: 'pkg/protocol/cleanup_test.go', line: 6, context: 'if _, err := Cleanup("IMPL.yaml", 1, t.TempDir()); err != nil {', agents: ['E'] },
    ]);
  });

  it('IMPL-between-wave-integration-hotfix: wave-1 Agent C stubbed CallerCascadeClassification in finalize_steps.go while Agent B defined it in caller_cascade.go (C\'s notes: "avoid duplicate type declarations") — detect-shared-types flags it; detect-scaffolds post-agent finds the duplicate on the branches', async () => {
    const { repo, implPath } = await repoWith({ 'pkg/engine/finalize_steps.go': 'package engine\n' }, { name: 'IMPL-between-wave-integration-hotfix.yaml', corpusFile: corpus('IMPL-between-wave-integration-hotfix.yaml') });
    const shared = await runCliInProcess(['detect-shared-types', implPath, '--format', 'json']);
    expect(shared.code, shared.stderr).toBe(0);
    expect(json(shared.stdout)).toEqual({
      shared_types: [
        {
          type_name: 'CallerCascadeClassification',
          defining_agent: 'B',
          defining_file: 'pkg/engine/caller_cascade.go',
          referencing_agents: ['B', 'C'],
          referencing_files: ['pkg/engine/finalize_steps.go', 'pkg/engine/finalize_steps_step_test.go'],
          reason: 'Agents [B C] reference type from pkg/engine/caller_cascade.go (owned by agent B)',
        },
      ],
    });
    // What the agents then did, on their E5 branches.
    const slug = 'between-wave-integration-hotfix';
    await repo.run(['checkout', '-q', '-b', `polywave/${slug}/wave1-agent-B`, 'main']);
    repo.write('pkg/engine/caller_cascade.go', 'package engine\n\ntype CallerCascadeError struct{ File string }\n\ntype CallerCascadeClassification struct{ Errors []CallerCascadeError }\n');
    await repo.commitAll('B');
    await repo.run(['checkout', '-q', '-b', `polywave/${slug}/wave1-agent-C`, 'main']);
    repo.write('pkg/engine/finalize_steps.go', 'package engine\n\n// temporary stubs until B merges\ntype CallerCascadeError struct{ File string }\n\ntype CallerCascadeClassification struct{ Errors []CallerCascadeError }\n\nfunc StepClassifyCallerCascade() {}\n');
    await repo.commitAll('C');
    await repo.run(['checkout', '-q', 'main']);
    const post = await runCliInProcess(['detect-scaffolds', implPath, '--stage', 'post-agent', '--wave', '1', '--repo-dir', repo.dir]);
    expect(post.code, post.stderr).toBe(1);
    expect((json(post.stdout) as { conflicts: Array<{ type_name: string; agents: string[]; files: string[] }> }).conflicts.map(({ type_name, agents, files }) => ({ type_name, agents, files }))).toEqual([
      { type_name: 'CallerCascadeClassification', agents: ['B', 'C'], files: ['pkg/engine/caller_cascade.go', 'pkg/engine/finalize_steps.go'] },
      { type_name: 'CallerCascadeError', agents: ['B', 'C'], files: ['pkg/engine/caller_cascade.go', 'pkg/engine/finalize_steps.go'] },
    ]);
  });
  it('X66-23: English words after a type keyword are no types — IMPL-engine-unification ("… the canonical unified type" / "The CLI must …"), IMPL-integration-agent ("## Changes to IMPLManifest struct" / "Add these fields …"), IMPL-suitability-review-fixes ("… zero-initialized struct" / "All three cases …")', async () => {
    const sharedTypes = async (name: string) => {
      const result = await runCliInProcess(['detect-shared-types', corpus(name), '--format', 'json']);
      expect(result.code, result.stderr).toBe(0);
      return (json(result.stdout) as { shared_types: Array<{ type_name: string; referencing_agents: string[] }> }).shared_types.map((type) => [type.type_name, type.referencing_agents]);
    };
    expect(await sharedTypes('IMPL-engine-unification.yaml')).toEqual([]);
    expect(await sharedTypes('IMPL-integration-agent.yaml')).toEqual([]);
    expect(await sharedTypes('IMPL-suitability-review-fixes.yaml')).toEqual([['Requirement', ['A', 'B', 'C']]]);
    const scaffolds = await runCliInProcess(['detect-scaffolds', corpus('IMPL-integration-agent.yaml'), '--stage', 'pre-agent']);
    expect(scaffolds.code, scaffolds.stderr).toBe(0);
    expect(json(scaffolds.stdout)).toEqual({ scaffolds_needed: [] });
  });

  it('X66-23: a capitalised sentence start in a TypeScript agent\'s task ("Status updates are logged.") does not share a Rust contract\'s `enum Status` — that file cannot import it', async () => {
    const { implPath } = await repoWith(
      {},
      {
        name: 'IMPL-shared-types.yaml',
        text: [
          'title: shared types',
          'feature_slug: shared-types',
          'verdict: SUITABLE',
          'file_ownership:',
          '  - { file: src/models.ts, agent: A, wave: 1 }',
          '  - { file: src/service.ts, agent: B, wave: 1 }',
          '  - { file: src/cart.rs, agent: E, wave: 1 }',
          '  - { file: src/cart_view.rs, agent: F, wave: 1 }',
          'interface_contracts:',
          '  - { name: User, description: the user record, definition: "export interface User { id: string }", location: src/models.ts }',
          '  - { name: Status, description: order status, definition: "pub enum Status { Open, Closed }", location: src/cart.rs }',
          'waves:',
          '  - number: 1',
          '    agents:',
          '      - { id: A, task: Create the `User` interface in src/models.ts. }',
          '      - { id: B, task: Implement `UserService` in src/service.ts for a `User`. Status updates are logged. }',
          '      - { id: E, task: Implement the cart in src/cart.rs with its Status enum. }',
          '      - { id: F, task: Render the cart and its Status in src/cart_view.rs. }',
          '',
        ].join('\n'),
      },
    );
    const result = await runCliInProcess(['detect-shared-types', implPath, '--format', 'json']);
    expect(result.code, result.stderr).toBe(0);
    expect((json(result.stdout) as { shared_types: Array<{ type_name: string; referencing_agents: string[] }> }).shared_types.map((type) => [type.type_name, type.referencing_agents])).toEqual([['Status', ['E', 'F']], ['User', ['A', 'B']]]);
  });
});

describe('detect-scaffolds pre-agent: the code side (real references between two agents of a wave)', () => {
  it('a type one agent changes and another agent\'s file uses is a scaffold candidate; a type nobody else uses is not', async () => {
    const { repo, implPath } = await repoWith(
      {
        'src/model.ts': 'export interface Order {\n  id: string;\n}\n\nexport interface Invoice {\n  total: number;\n}\n',
        'src/checkout.ts': "import type { Order } from './model.js';\n\nexport function checkout(order: Order): string {\n  return order.id;\n}\n",
      },
      {
        name: 'IMPL-scaffold.yaml',
        text: 'title: s\nfeature_slug: s\nverdict: SUITABLE\nfile_ownership:\n  - {file: src/model.ts, agent: A, wave: 1}\n  - {file: src/checkout.ts, agent: B, wave: 1}\nwaves:\n  - number: 1\n    agents:\n      - {id: A, task: "Add a `discount` field to `Order` and `Invoice`."}\n      - {id: B, task: "Apply discounts at checkout."}\n',
      },
    );
    const result = await runCliInProcess(['detect-scaffolds', implPath, '--stage', 'pre-agent', '--repo-dir', repo.dir]);
    expect(result.code, result.stderr).toBe(0);
    expect(json(result.stdout)).toEqual({
      scaffolds_needed: [
        {
          type_name: 'Order',
          locations: ['src/model.ts', 'src/checkout.ts'],
          suggested_file: 'src/model.ts',
          definition: 'interface Order (src/model.ts:1) — used by src/checkout.ts; freeze it as a contract or scaffold it before the wave',
          agents: ['A', 'B'],
        },
      ],
    });
    expectCodedError(await runCli(['detect-scaffolds', implPath, '--stage', 'mid-agent']), { code: 'X001_INVALID_INPUT' });
  });
});

const solveImpl = `title: solve
feature_slug: solve
verdict: SUITABLE
# who owns what
file_ownership:
    - file: a.go
      agent: A
      wave: 1
    - file: b.go
      agent: B
      wave: 1
waves:
    - number: 1
      agents:
        # A goes first
        - id: A
          task: |
            build a
        - id: B  # needs A
          task: build b
          dependencies: [A]
`;

describe('solve', () => {
  let repo: TestRepo;
  let implPath: string;
  beforeAll(async () => {
    ({ repo, implPath } = await repoWith({}, { name: 'IMPL-solve.yaml', text: solveImpl }));
  });

  it('--dry-run prints the change and leaves the file byte-identical', async () => {
    const result = await runCliInProcess(['solve', implPath, '--dry-run']);
    expect([result.code, result.stdout]).toEqual([0, 'solver: agent B: wave 1 → wave 2\nⓘ Dry run — no changes written\n']);
    expect(readFileSync(implPath, 'utf8')).toBe(solveImpl);
  });

  it('rewrites the wave membership, moving the agent block with its comments; ownership follows; a second run is a no-op', async () => {
    const result = await runCliInProcess(['solve', implPath]);
    expect([result.code, result.stdout]).toEqual([0, 'solver: agent B: wave 1 → wave 2\n✓ Manifest updated with 1 wave reassignments (2 agents, 2 waves)\n']);
    expect(readFileSync(implPath, 'utf8')).toBe(
      solveImpl.replace('      agent: B\n      wave: 1', '      agent: B\n      wave: 2').replace('        - id: B  # needs A', '    - number: 2\n      agents:\n        - id: B  # needs A'),
    );
    const again = await runCliInProcess(['solve', implPath]);
    expect([again.code, again.stdout]).toEqual([0, '✓ All wave assignments are optimal (2 agents, 2 waves)\n']);
  });

  it('a dependency cycle is SOLVER_CYCLE (exit 1), an unparseable manifest exit 2 — nothing written', async () => {
    const cyclic = solveImpl.replace('          task: |\n            build a\n', '          task: |\n            build a\n          dependencies: [B]\n');
    repo.write('docs/IMPL/IMPL-cycle.yaml', cyclic);
    expectCodedError(await runCliInProcess(['solve', repo.path('docs/IMPL/IMPL-cycle.yaml')]), { code: 'SOLVER_CYCLE', exitCode: 1 });
    expect(repo.read('docs/IMPL/IMPL-cycle.yaml')).toBe(cyclic);
    repo.write('docs/IMPL/IMPL-broken.yaml', 'title: [unclosed\n');
    expectCodedError(await runCli(['solve', repo.path('docs/IMPL/IMPL-broken.yaml')]), { exitCode: 2 });
    expect(repo.read('docs/IMPL/IMPL-broken.yaml')).toBe('title: [unclosed\n');
  });
});

describe('suggest-wave-structure, detect-wiring, analyze-suitability, pre-wave-validate', () => {
  const impl = `title: w
feature_slug: w
verdict: SUITABLE
file_ownership:
  - file: lib/parse.ts
    agent: A
    wave: 2
  - file: lib/use.ts
    agent: B
    wave: 1
  - file: lib/main.ts
    agent: C
    wave: 2
interface_contracts:
  - name: parseInput
    description: change signature to take options
    definition: "export function parseInput(text: string, options: Options): Result"
    location: lib/parse.ts
waves:
  - number: 1
    agents:
      - id: B
        task: keep using it
  - number: 2
    agents:
      - id: A
        task: Update signature of \`parseInput\`.
        dependencies: [B]
      - id: C
        task: The entry point calls \`parseInput()\` after reading stdin.
`;
  let repo: TestRepo;
  let implPath: string;
  beforeAll(async () => {
    ({ repo, implPath } = await repoWith(
      {
        'lib/parse.ts': 'export function parseInput(text: string): string {\n  return text;\n}\n',
        'lib/use.ts': "import { parseInput } from './parse.js';\nexport const used = parseInput('x');\n",
        'lib/main.ts': "// parseInput is mentioned in a comment only\nexport const main = 1;\n",
        'lib/parse.test.ts': "import { parseInput } from './parse.js';\ntest('p', () => parseInput('y'));\n",
      },
      { name: 'IMPL-w.yaml', text: impl },
    ));
  });

  it('suggest-wave-structure: the wave-1 caller is a problem; the comment-only file is not a caller', async () => {
    const result = await runCliInProcess(['suggest-wave-structure', implPath, '--repo-dir', repo.dir]);
    expect(result.code, result.stderr).toBe(1);
    expect(json(result.stdout)).toEqual([
      { symbol: 'parseInput', changed_in_wave: 2, caller_wave: 1, caller_files: ['lib/use.ts'], message: 'symbol "parseInput" is changed in wave 2 but called from wave 1 (earlier wave); move callers to wave 2 or later' },
    ]);
  });

  it('detect-wiring: C calls A\'s contract function → one declaration (YAML default, JSON on request)', async () => {
    const result = await runCliInProcess(['detect-wiring', implPath, '--format', 'json']);
    expect(json(result.stdout)).toEqual({ wiring: [{ symbol: 'parseInput', defined_in: 'lib/parse.ts', must_be_called_from: 'lib/main.ts', agent: 'C', wave: 2, integration_pattern: 'call' }] });
    const yaml = await runCliInProcess(['detect-wiring', implPath]);
    expect(yaml.stdout).toBe('wiring:\n    - symbol: parseInput\n      defined_in: lib/parse.ts\n      must_be_called_from: lib/main.ts\n      agent: C\n      wave: 2\n      integration_pattern: call\n');
    expectCodedError(await runCli(['detect-wiring', implPath, '--format', 'xml']), { code: 'X001_INVALID_INPUT' });
  });

  it('X66-22: detect-wiring — "must not call `saveUser`", "does not use `loadUser`", "instead of calling" are no obligations; "replace the calls to `legacyLoad` with `loadUser`" is one', async () => {
    const { implPath: wiringImpl } = await repoWith(
      {},
      {
        name: 'IMPL-wiring.yaml',
        text: [
          'title: wiring',
          'feature_slug: wiring',
          'verdict: SUITABLE',
          'file_ownership:',
          '  - { file: src/store.ts, agent: A, wave: 1 }',
          '  - { file: src/service.ts, agent: B, wave: 2 }',
          '  - { file: src/c.ts, agent: C, wave: 2 }',
          '  - { file: src/d.ts, agent: D, wave: 2 }',
          '  - { file: src/e.ts, agent: E, wave: 2 }',
          '  - { file: src/f.ts, agent: F, wave: 2 }',
          'interface_contracts:',
          '  - { name: loadUser, description: loads, definition: "export function loadUser(id: string): Promise<User>", location: src/store.ts }',
          '  - { name: saveUser, description: saves, definition: "export function saveUser(u: User): Promise<void>", location: src/store.ts }',
          '  - { name: legacyLoad, description: old, definition: "export function legacyLoad(id: string): User", location: src/store.ts }',
          'waves:',
          '  - number: 1',
          '    agents:',
          '      - { id: A, task: "Add `loadUser` and `saveUser` to src/store.ts and remove `legacyLoad`." }',
          '  - number: 2',
          '    agents:',
          '      - { id: B, task: "Implement `UserService` in src/service.ts. It must not call `saveUser` directly; it delegates persistence to the queue." }',
          '      - { id: C, task: "In src/c.ts, replace the calls to `legacyLoad` with `loadUser`." }',
          '      - { id: D, task: "src/d.ts delegates to `loadUser` for fetching; if the cache is not warm, it calls `saveUser`." }',
          '      - { id: E, task: "src/e.ts does not use `loadUser` (it is server-only)." }',
          '      - { id: F, task: "In src/f.ts, read from the cache instead of calling `loadUser`; never invokes saveUser()." }',
          '',
        ].join('\n'),
      },
    );
    const result = await runCliInProcess(['detect-wiring', wiringImpl, '--format', 'json']);
    expect(result.code, result.stderr).toBe(0);
    expect((json(result.stdout) as { wiring: Array<{ symbol: string; agent: string }> }).wiring.map((row) => [row.agent, row.symbol])).toEqual([
      ['C', 'loadUser'],
      ['D', 'loadUser'],
      ['D', 'saveUser'],
    ]);
  });

  it('pre-wave-validate step 3: the unowned test file is a test_cascade error and makes the exit 1', async () => {
    const result = await runCliInProcess(['pre-wave-validate', implPath, '--wave', '1', '--repo-dir', repo.dir]);
    expect(result.code).toBe(1);
    const output = json(result.stdout) as { test_cascade: unknown; wave_structure: { passed: boolean } };
    expect(output.test_cascade).toEqual({ passed: false, errors: [{ symbol: 'parseInput', test_file: 'lib/parse.test.ts', line: 2, context: "test('p', () => parseInput('y'));", agents: ['A'] }] });
    expect(output.wave_structure.passed).toBe(false);
    const finalize = await runCliInProcess(['finalize-scout', implPath, '--repo-dir', repo.dir]);
    const finalized = json(finalize.stdout) as { passed: boolean; failed_step?: string; test_cascade: unknown };
    expect([finalize.code, finalized.passed, finalized.failed_step, finalized.test_cascade]).toEqual([1, false, 'pre_wave_checks', output.test_cascade]);
  });

  it('analyze-suitability: DONE / PARTIAL / TODO with evidence; no requirement → S003 exit 2', async () => {
    repo.write('svc/done.go', `package svc\n\nfunc Done() int { return 1 }\n`);
    repo.write('svc/done_test.go', `package svc\n${'// line\n'.repeat(120)}`);
    repo.write('svc/half.py', 'def half():\n    # TODO: finish\n    return None\n');
    repo.write('REQ.md', '## F1: done thing\nLocation: svc/done.go\n\n## F2: half thing\nLocation: `svc/half.py`\n\n## F3: missing\nLocation: svc/none.rs\n');
    const result = await runCliInProcess(['analyze-suitability', '--requirements', 'REQ.md', '--repo-root', '.'], { cwd: repo.dir });
    expect(result.code, result.stderr).toBe(0);
    const output = json(result.stdout) as { pre_implementation: { item_status: Array<{ id: string; status: string; missing: string[] }>; done: number; partial: number; todo: number; time_saved_minutes: number } };
    expect(output.pre_implementation.item_status.map((item) => [item.id, item.status, item.missing])).toEqual([
      ['F1', 'DONE', []],
      ['F2', 'PARTIAL', ['contains TODO/FIXME/stub markers']],
      ['F3', 'TODO', ['file does not exist']],
    ]);
    expect([output.pre_implementation.done, output.pre_implementation.partial, output.pre_implementation.todo, output.pre_implementation.time_saved_minutes]).toEqual([1, 1, 1, 10]);
    repo.write('EMPTY.md', '# nothing\n');
    expectCodedError(await runCli(['analyze-suitability', '--requirements', 'EMPTY.md'], { cwd: repo.dir }), { code: 'S003_NO_REQUIREMENTS' });
  });

  it('analyze-suitability: a Rust file\'s inline tests count their own lines — library code after a closed `#[cfg(test)] mod tests { … }` is not test coverage', async () => {
    const library = (name: string) => Array.from({ length: 70 }, (_, index) => `pub fn ${name}${index}() -> u32 {\n    ${index}\n}`).join('\n');
    repo.write('rs/small.rs', `pub fn f() -> u32 {\n    1\n}\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {\n        assert_eq!(super::f(), 1);\n    }\n}\n${library('g')}\n`);
    repo.write('rs/big.rs', `pub fn f() -> u32 {\n    1\n}\n#[cfg(test)]\nmod tests {\n${Array.from({ length: 40 }, (_, index) => `    #[test]\n    fn t${index}() {\n        assert_eq!(super::f(), 1);\n    }`).join('\n')}\n}\n${library('h')}\n`);
    repo.write('REQ-RS.md', '## R1: small tests\nLocation: rs/small.rs\n\n## R2: big tests\nLocation: rs/big.rs\n');
    const result = await runCliInProcess(['analyze-suitability', '--requirements', 'REQ-RS.md', '--repo-root', '.'], { cwd: repo.dir });
    expect(result.code, result.stderr).toBe(0);
    const output = json(result.stdout) as { pre_implementation: { item_status: Array<{ id: string; status: string; test_coverage: string; evidence: string[] }> } };
    expect(output.pre_implementation.item_status.map((item) => [item.id, item.status, item.test_coverage, item.evidence.find((entry) => entry.startsWith('inline'))])).toEqual([
      ['R1', 'PARTIAL', 'low', 'inline #[cfg(test)] module (7 lines)'],
      ['R2', 'DONE', 'high', 'inline #[cfg(test)] module (163 lines)'],
    ]);
  });

  it('analyze-suitability: a Rust file\'s test-only items from the syntax tree — `cfg(all(test, …))`, a `;` in the signature, nested `#[cfg(test)]` items counted once (outside round X63-05/06/10)', async () => {
    const tests = (indent: string) => Array.from({ length: 5 }, (_, index) => `${indent}#[test]\n${indent}fn t${index}() {\n${indent}    assert_eq!(crate::util::parse("a"), 1);\n${indent}}`).join('\n');
    // (lines 5–53 of 53 are test code: `cargo test` runs the 10 tests of m1 and m2)
    repo.write('rs2/nested.rs', `pub fn parse(s: &str) -> u32 {\n    s.len() as u32\n}\n\n#[cfg(test)]\nmod tests {\n${[1, 2].map((k) => `    #[cfg(test)]\n    mod m${k} {\n${tests('        ')}\n    }`).join('\n')}\n}\n`);
    // (a 4-line helper with `[&'static str; 3]` in its signature, and a 51-line `cfg(all(test, not(miri)))` module: 55 lines)
    repo.write('rs2/conv.rs', `pub fn conv() -> u32 {\n    1\n}\n\n#[cfg(test)]\nfn table() -> [&'static str; 3] {\n    ["a", "b", "c"]\n}\n\n#[cfg(all(test, not(miri)))]\nmod tests {\n${Array.from({ length: 12 }, (_, index) => `    #[test]\n    fn t${index}() {\n        assert_eq!(super::conv(), 1);\n    }\n`).join('')}}\n`);
    repo.write('REQ-RS2.md', '## R1: nested\nLocation: rs2/nested.rs\n\n## R2: conv\nLocation: rs2/conv.rs\n');
    const result = await runCliInProcess(['analyze-suitability', '--requirements', 'REQ-RS2.md', '--repo-root', '.'], { cwd: repo.dir });
    expect(result.code, result.stderr).toBe(0);
    const output = json(result.stdout) as { pre_implementation: { item_status: Array<{ id: string; status: string; test_coverage: string; evidence: string[] }> } };
    expect(output.pre_implementation.item_status.map((item) => [item.id, item.status, item.test_coverage, item.evidence.find((entry) => entry.startsWith('inline'))])).toEqual([
      ['R1', 'PARTIAL', 'low', 'inline #[cfg(test)] module (49 lines)'],
      ['R2', 'DONE', 'medium', 'inline #[cfg(test)] module (55 lines)'],
    ]);
  });

  it('analyze-suitability: a Rust `#[cfg(test)] mod tests;` counts its module file\'s lines (outside round X63-07)', async () => {
    // (`cargo test` runs the 30 tests of rs3/parse/tests.rs)
    repo.write('rs3/parse.rs', 'pub fn parse(s: &str) -> u32 {\n    s.len() as u32\n}\n\n#[cfg(test)]\nmod tests;\n');
    repo.write('rs3/parse/tests.rs', Array.from({ length: 30 }, (_, index) => `#[test]\nfn t${index}() {\n    assert_eq!(super::parse("a"), 1);\n}\n`).join(''));
    repo.write('REQ-RS3.md', '## R1: parse\nLocation: rs3/parse.rs\n');
    const result = await runCliInProcess(['analyze-suitability', '--requirements', 'REQ-RS3.md', '--repo-root', '.'], { cwd: repo.dir });
    expect(result.code, result.stderr).toBe(0);
    const output = json(result.stdout) as { pre_implementation: { item_status: Array<{ id: string; status: string; test_coverage: string; evidence: string[] }> } };
    expect(output.pre_implementation.item_status.map((item) => [item.id, item.status, item.test_coverage, item.evidence.filter((entry) => entry.includes('cfg(test)'))])).toEqual([
      ['R1', 'DONE', 'high', ['inline #[cfg(test)] module (2 lines)', '#[cfg(test)] module file rs3/parse/tests.rs (121 lines)']],
    ]);
  });
});

describe('E11b conflict-pattern classification', () => {
  const impl = (rows: string) => `title: e11b
feature_slug: e11b
verdict: SUITABLE
file_ownership:
${rows}waves:
  - number: 1
    agents:
      - id: A
        task: Add TestAlpha to pkg/finalize_test.go. Register the alpha route in pkg/routes.go. Change the signature of Parse in pkg/parse.go.
  - number: 2
    agents:
      - id: B
        task: Add TestBeta to pkg/finalize_test.go. Register the beta route in pkg/routes.go.
        dependencies: [A]
`;

  it('the suggested pattern per shared file: test append, registry append, mixed', async () => {
    const { sharedFiles } = await import('../src/scout-tools/conflict-patterns.js');
    const { parseImpl } = await import('../src/protocol/parse-impl.js');
    const manifest = parseImpl(
      impl('  - {file: pkg/finalize_test.go, agent: A, wave: 1}\n  - {file: pkg/finalize_test.go, agent: B, wave: 2}\n  - {file: pkg/routes.go, agent: A, wave: 1}\n  - {file: pkg/routes.go, agent: B, wave: 2}\n  - {file: pkg/parse.go, agent: A, wave: 1}\n  - {file: pkg/parse.go, agent: B, wave: 2}\n'),
    ).manifest!;
    expect(sharedFiles(manifest).map((shared) => [shared.file, shared.suggested, shared.decision, shared.agents.map((agent) => agent.change)])).toEqual([
      ['pkg/finalize_test.go', 'test-append', 'same-wave-permitted', ['append', 'append']],
      ['pkg/parse.go', 'mixed', 'sequence', ['edit', 'append']],
      ['pkg/routes.go', 'registry-append', 'same-wave-permitted', ['append', 'append']],
    ]);
  });

  it('validate checks the recorded conflict_pattern: enum, agreement, test-append on a test file, single owner', async () => {
    const { repo } = await repoWith({}, { name: 'IMPL-ok.yaml', text: impl('  - {file: pkg/finalize_test.go, agent: A, wave: 1, conflict_pattern: test-append}\n  - {file: pkg/finalize_test.go, agent: B, wave: 2, conflict_pattern: test-append}\n') });
    const ok = await runCliInProcess(['validate', repo.path('docs/IMPL/IMPL-ok.yaml')]);
    expect([ok.code, (json(ok.stdout) as { error_count: number }).error_count], ok.stdout).toEqual([0, 0]);
    repo.write(
      'docs/IMPL/IMPL-bad.yaml',
      impl(
        '  - {file: pkg/finalize_test.go, agent: A, wave: 1, conflict_pattern: test-append}\n  - {file: pkg/finalize_test.go, agent: B, wave: 2, conflict_pattern: line-edit}\n  - {file: pkg/routes.go, agent: A, wave: 1, conflict_pattern: test-append}\n  - {file: pkg/routes.go, agent: B, wave: 2, conflict_pattern: test-append}\n  - {file: pkg/parse.go, agent: A, wave: 1, conflict_pattern: sideways}\n',
      ),
    );
    const bad = await runCliInProcess(['validate', repo.path('docs/IMPL/IMPL-bad.yaml')]);
    expect(bad.code).toBe(1);
    const verdict = json(bad.stdout) as { errors: Array<{ code: string; line?: number }>; warnings: Array<{ code: string }> };
    expect(verdict.errors.filter((finding) => finding.code.startsWith('E11B') || finding.code === 'V036_INVALID_ENUM').map((finding) => [finding.code, finding.line])).toEqual([
      ['V036_INVALID_ENUM', 9],
      ['E11B_PATTERN_DISAGREES', 5],
    ]);
    expect(verdict.warnings.filter((finding) => finding.code.startsWith('E11B')).map((finding) => finding.code)).toEqual(['E11B_TEST_APPEND_NOT_TEST', 'E11B_NOT_SHARED']);
  });
});

describe('scout tools under attack (regressions)', () => {
  it('analyze-suitability: a Location outside --repo-root (absolute, .. escaping, symlinked file or directory) is TODO "location outside the repository", nothing read', async () => {
    const outside = makeTempDir('polywave-outside-');
    const secret = `def secret():\n${'    x = 1\n'.repeat(30)}`;
    writeFileSync(path.join(outside, 'secret.py'), secret);
    writeFileSync(path.join(outside, 'test_ok.py'), '# long test\n'.repeat(150));
    const { repo } = await repoWith({ 'svc/ok.py': `def ok():\n${'    y = 2\n'.repeat(6)}` }, { name: 'IMPL-x.yaml', text: solveImpl });
    symlinkSync(path.join(outside, 'secret.py'), repo.path('svc/link.py'));
    symlinkSync(outside, repo.path('ext'));
    // A conventional test file that is a symlink to outside is not read either (coverage stays none).
    symlinkSync(path.join(outside, 'test_ok.py'), repo.path('svc/test_ok.py'));
    const climb = path.relative(repo.dir, path.join(outside, 'secret.py'));
    expect(climb.startsWith('..')).toBe(true);
    repo.write(
      'REQ.md',
      [
        '## R1: inside, through a harmless ..',
        'Location: svc/../svc/ok.py',
        '## R2: absolute',
        `Location: ${path.join(outside, 'secret.py')}`,
        '## R3: climbing out',
        `Location: ${climb}`,
        '## R4: outside',
        'Location: ../../../../etc/passwd',
        '## R5: symlinked file',
        'Location: svc/link.py',
        '## R6: symlinked directory',
        'Location: ext/secret.py',
        '',
      ].join('\n'),
    );
    const result = await runCliInProcess(['analyze-suitability', '--requirements', 'REQ.md', '--repo-root', '.'], { cwd: repo.dir });
    expect(result.code, result.stderr).toBe(0);
    const output = json(result.stdout) as { pre_implementation: { item_status: Array<{ id: string; status: string; missing: string[]; evidence: string[]; test_coverage?: string }>; todo: number; partial: number } };
    const outsideItem = (id: string, file: string) => [id, 'TODO', file, ['location outside the repository'], []];
    expect(output.pre_implementation.item_status.map((item) => [item.id, item.status, (item as { file?: string }).file, item.missing, item.evidence])).toEqual([
      ['R1', 'PARTIAL', 'svc/../svc/ok.py', ['insufficient test coverage'], ['defines ok', '7 code line(s)']],
      outsideItem('R2', path.join(outside, 'secret.py')),
      outsideItem('R3', climb),
      outsideItem('R4', '../../../../etc/passwd'),
      outsideItem('R5', 'svc/link.py'),
      outsideItem('R6', 'ext/secret.py'),
    ]);
    expect(output.pre_implementation.item_status[0]!.test_coverage).toBe('none');
    expect(result.stdout).not.toContain('defines secret');
    expect([output.pre_implementation.todo, output.pre_implementation.partial]).toEqual([5, 1]);
  });

  it('solve on a symlinked manifest writes through the link: the link stays, the real file is solved', async () => {
    const { repo } = await repoWith({}, { name: 'IMPL-other.yaml', text: solveImpl });
    repo.write('docs/real/IMPL-real.yaml', solveImpl);
    const link = repo.path('docs/IMPL/IMPL-link.yaml');
    symlinkSync('../real/IMPL-real.yaml', link);
    const result = await runCliInProcess(['solve', link]);
    expect([result.code, result.stdout], result.stderr).toEqual([0, 'solver: agent B: wave 1 → wave 2\n✓ Manifest updated with 1 wave reassignments (2 agents, 2 waves)\n']);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readlinkSync(link)).toBe('../real/IMPL-real.yaml');
    expect(repo.read('docs/real/IMPL-real.yaml')).toBe(
      solveImpl.replace('      agent: B\n      wave: 1', '      agent: B\n      wave: 2').replace('        - id: B  # needs A', '    - number: 2\n      agents:\n        - id: B  # needs A'),
    );
    const again = await runCliInProcess(['solve', repo.path('docs/real/IMPL-real.yaml')]);
    expect([again.code, again.stdout]).toEqual([0, '✓ All wave assignments are optimal (2 agents, 2 waves)\n']);
  });

  it('solve keeps a UTF-8 byte order mark', async () => {
    const { implPath } = await repoWith({}, { name: 'IMPL-bom.yaml', text: `\uFEFF${solveImpl}` });
    expect([...readFileSync(implPath).subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
    const result = await runCliInProcess(['solve', implPath]);
    expect([result.code, result.stdout], result.stderr).toEqual([0, 'solver: agent B: wave 1 → wave 2\n✓ Manifest updated with 1 wave reassignments (2 agents, 2 waves)\n']);
    const expected = solveImpl.replace('      agent: B\n      wave: 1', '      agent: B\n      wave: 2').replace('        - id: B  # needs A', '    - number: 2\n      agents:\n        - id: B  # needs A');
    expect(readFileSync(implPath).equals(Buffer.from(`\uFEFF${expected}`, 'utf8'))).toBe(true);
  });

  it('solve names a self-dependency as such; a real cycle names its members and the agents it blocks', async () => {
    const selfDependent = solveImpl
      .replace('dependencies: [A]', 'dependencies: [B]')
      .replace('          dependencies: [B]\n', '          dependencies: [B]\n        - id: C\n          task: build c\n          dependencies: [B]\n');
    const { repo, implPath } = await repoWith({}, { name: 'IMPL-self.yaml', text: selfDependent });
    const self = expectCodedError(await runCliInProcess(['solve', implPath]), { code: 'SOLVER_CYCLE', exitCode: 1 });
    expect(self.message).toBe('cannot solve: dependency cycle: agent B depends on itself (C waits on it) (I6)');
    expect(repo.read('docs/IMPL/IMPL-self.yaml')).toBe(selfDependent);
    const cyclic = selfDependent.replace('dependencies: [B]', 'dependencies: [A]').replace('          task: |\n            build a\n', '          task: |\n            build a\n          dependencies: [B]\n');
    repo.write('docs/IMPL/IMPL-cycle.yaml', cyclic);
    const cycle = expectCodedError(await runCliInProcess(['solve', repo.path('docs/IMPL/IMPL-cycle.yaml')]), { code: 'SOLVER_CYCLE', exitCode: 1 });
    expect(cycle.message).toBe('cannot solve: dependency cycle: agents A, B depend on each other (C waits on them) (I6)');
  });

  it('eight concurrent solve runs: one writes and prints its moves, seven find it optimal — the printed plan is what was written', async () => {
    const { repo, implPath } = await repoWith({}, { name: 'IMPL-race.yaml', text: solveImpl });
    const results = await Promise.all(Array.from({ length: 8 }, () => runCli(['solve', implPath])));
    expect(results.map((result) => result.code)).toEqual(Array(8).fill(0));
    expect(results.map((result) => result.stdout).sort()).toEqual([
      'solver: agent B: wave 1 → wave 2\n✓ Manifest updated with 1 wave reassignments (2 agents, 2 waves)\n',
      ...Array(7).fill('✓ All wave assignments are optimal (2 agents, 2 waves)\n'),
    ].sort());
    expect(repo.read('docs/IMPL/IMPL-race.yaml')).toContain('    - number: 2\n      agents:\n        - id: B  # needs A');
  });
});
