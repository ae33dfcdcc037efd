import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { listSymbols, rustTestFacts } from '../analysis/engine/index.js';
import type { RustTestItems } from '../analysis/engine/extract.js';
import { contractsOf, implementerView, mayImplement, tsFunctionMembers } from '../analysis/implementers.js';
import { fixtureDefinitionLines } from '../analysis/pytest-fixtures.js';
import { ModuleTargets } from '../analysis/ts-module-targets.js';
import { createGit } from '../git/git-cli.js';
import type { ImplManifest } from '../protocol/schema/impl-schema.js';
import { agentFacts, changedSymbols, type ChangedSymbol } from './changed-symbols.js';
import { createEngineReferenceFinder, hasInlineTests, isTestPath, rustTestCode, listRepoFiles, type ReferenceFinder } from './references.js';

/** One orphaned test caller (Go `TestCascadeError` keys). */
export interface TestCascadeError {
  symbol: string;
  test_file: string;
  line: number;
  context: string;
  /** Agents that change the symbol. */
  agents: string[];
}

/** Options of {@link checkTestCascade}. */
export interface CheckTestCascadeOptions {
  manifest: ImplManifest;
  repoRoot: string;
  finder?: ReferenceFinder;
}

/** `name` as a whole identifier in a pattern: escaped (`$get`), bounded by non-identifier characters (Unicode letters and `$` count: X55-07). */
const word = (name: string) => `(?<![\\p{L}\\p{N}_$])${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\p{L}\\p{N}_$])`;

const definitionOf = (name: string) =>
  new RegExp(
    `(?:\\bfunc\\s+(?:\\([^)]*\\)\\s*)?|\\bfunction\\s*\\*?\\s*|\\bdef\\s+|\\bclass\\s+|\\btype\\s+|\\binterface\\s+|\\bstruct\\s+|\\benum\\s+|\\btrait\\s+|\\bfn\\s+|\\b(?:export\\s+)?(?:const|let)\\s+)${word(name)}|^\\s*(?:(?:public|private|protected|static|async|readonly|abstract|override)\\s+)*${word(name)}\\s*\\(|[{;]\\s*${word(name)}\\s*\\([^()]*\\)\\s*:`,
    'mu',
  );

/** Function or method definitions only (a bare backticked name must be one to count as a changed signature). */
const functionDefinitionOf = (name: string) =>
  new RegExp(`(?:\\bfunc\\s+(?:\\([^)]*\\)\\s*)?|\\bfunction\\s*\\*?\\s*|\\bdef\\s+|\\bfn\\s+)${word(name)}|\\bconst\\s+${word(name)}\\s*=\\s*(?:async\\s*)?(?:\\(|function\\b)`, 'u');

/**
 * The methods named like `symbol` in `files` that may implement the interface or trait `definedIn` declares it in
 * (none when it is no such method): a type with every method the interface declares, a Rust `impl Trait for`
 * (implementers.ts; X55-05: any same-named method was taken). Only files holding the name as a whole word are parsed.
 */
async function implementationsIn(repoRoot: string, definedIn: string, symbol: Pick<ChangedSymbol, 'name' | 'symbol'>, files: readonly string[]): Promise<Array<{ file: string; line: number }>> {
  const qualifier = symbol.symbol.includes('.') ? symbol.symbol.split('.')[0] : undefined;
  const contracts = contractsOf(await listSymbols(repoRoot, [definedIn]).catch(() => []), repoRoot).filter((contract) => contract.methods.has(symbol.name) && (qualifier === undefined || contract.name === qualifier));
  if (contracts.length === 0 || files.length === 0) return [];
  // (past a few hundred files the whole tree is searched and the answer filtered: a command line has a limit)
  const wanted = new Set(files);
  const pathspecs = files.length <= 500 ? files.map((file) => `:(literal)${file}`) : [];
  const found = await createGit(repoRoot).run(['grep', '--untracked', '-l', '-z', '-w', '-F', '-I', '--no-color', '-e', symbol.name, '--', ...pathspecs], { allowExitCodes: [1] });
  const holding = found.stdout.split('\0').filter((file) => wanted.has(file));
  if (holding.length === 0) return [];
  const symbols = await listSymbols(repoRoot, holding);
  const result: Array<{ file: string; line: number }> = [];
  // (with a TS class's function-valued properties and the members of object literals typed as an interface: X57-14)
  const members = (await tsFunctionMembers(repoRoot, holding, symbol.name)).filter((member) => !symbols.some((entry) => entry.file === member.file && entry.line === member.line && entry.name === member.name));
  const origin = { targets: new ModuleTargets(repoRoot), files: new Set([definedIn.replace(/\.(?:[cm]?[jt]sx?)$/, '')]), root: repoRoot };
  for (const method of [...symbols.filter((entry) => entry.kind === 'method' && entry.name === symbol.name), ...members]) {
    const view = await implementerView(repoRoot, method.file);
    if (contracts.some((contract) => mayImplement(contract, method, view.symbols, view.text, origin))) result.push({ file: method.file, line: method.line });
  }
  return result;
}

async function readText(repoRoot: string, file: string): Promise<string | undefined> {
  return readFile(path.join(repoRoot, file), 'utf8').catch(() => undefined);
}

/**
 * The file defining a changed symbol: the contract's location, else the first (non-test) file
 * one of its changing agents owns that holds a definition of the name. Undefined when none does:
 * then the symbol is not one the agents change (stdlib, other packages) and is not searched.
 */
export async function definingFile(repoRoot: string, manifest: ImplManifest, symbol: Pick<ChangedSymbol, 'name' | 'agents' | 'location' | 'confirmed'>): Promise<string | undefined> {
  if (symbol.location) return symbol.location;
  const owned = agentFacts(manifest)
    .filter((fact) => symbol.agents.includes(fact.id))
    .flatMap((fact) => fact.files)
    // (a conftest.py is a test path but where pytest fixtures are defined: outside round X57-06)
    .filter((file) => !isTestPath(file) || /(?:^|\/)conftest\.py$/.test(file));
  for (const file of owned) {
    const text = await readText(repoRoot, file);
    if (text !== undefined && (symbol.confirmed ? definitionOf(symbol.name) : functionDefinitionOf(symbol.name)).test(text)) return file;
    // (a pytest fixture registered under the name by `@pytest.fixture(name="client")`: X57-02)
    if (text !== undefined && file.endsWith('.py') && fixtureDefinitionLines(text, symbol.name).length > 0) return file;
  }
  return undefined;
}

/**
 * E46's test files of the repository: test paths (every line), Rust sources with test-only items (their lines), and
 * the module files of test-only `mod x;` declarations and of `#![cfg(test)]` files (every line: X63-07).
 */
async function testFiles(repoRoot: string): Promise<Map<string, 'all' | Array<[number, number]>>> {
  const result = new Map<string, 'all' | Array<[number, number]>>();
  const files = await listRepoFiles(repoRoot);
  const known = new Set(files);
  const exists = (file: string) => known.has(file);
  const modules: string[] = [];
  const nonTest = new Set<string>();
  // (E46's Rust test code from the per-blob facts cache — rustTestFacts —, one batch: not a parse per file per call)
  const inline: Array<[string, string]> = [];
  for (const file of files) {
    if (isTestPath(file)) {
      result.set(file, 'all');
      continue;
    }
    if (!file.endsWith('.rs')) continue;
    const text = await readText(repoRoot, file);
    if (text === undefined || !hasInlineTests(file, text)) continue;
    inline.push([file, text]);
  }
  const cached = await rustTestFacts(repoRoot, inline.map(([file]) => file)).catch(() => new Map<string, RustTestItems>());
  for (const [file, text] of inline) {
    const code = await rustTestCode(file, text, exists, false, cached.get(file));
    if (code.ranges.length > 0) result.set(file, code.ranges);
    modules.push(...code.moduleFiles);
    for (const built of code.buildFiles ?? []) nonTest.add(built);
  }
  // (a test module's file is test code, and so are the modules it declares — not a file another declaration of these
  // files puts in the non-test build: X65-20)
  const seen = new Set<string>(nonTest);
  for (let file = modules.shift(); file !== undefined; file = modules.shift()) {
    if (seen.has(file)) continue;
    seen.add(file);
    result.set(file, 'all');
    const text = await readText(repoRoot, file);
    if (text !== undefined && /\bmod\b/.test(text)) modules.push(...(await rustTestCode(file, text, exists, true, (await rustTestFacts(repoRoot, [file]).catch(() => undefined))?.get(file))).moduleFiles);
  }
  return result;
}

/**
 * E46 (check-test-cascade, and step 3 of pre-wave-validate): for every symbol whose signature
 * the manifest changes (changed-symbols.ts), the test files that really reference it — code
 * identifiers, scope-resolved against the defining file, in Go, TS/JS, Python and Rust — and are
 * in nobody's `file_ownership`. Each reference line is one error, sorted by test file, line,
 * symbol. `.claude/worktrees/`, vendored and generated trees are never searched.
 */
export async function checkTestCascade(options: CheckTestCascadeOptions): Promise<TestCascadeError[]> {
  const { manifest, repoRoot } = options;
  const symbols = changedSymbols(manifest);
  if (symbols.length === 0) return [];
  const finder = options.finder ?? createEngineReferenceFinder();
  const owned = new Set(manifest.file_ownership.map((row) => row.file ?? ''));
  const tests = await testFiles(repoRoot);
  const testLine = (file: string, line: number) => {
    const lines = tests.get(file);
    return lines === 'all' || (lines ?? []).some(([first, last]) => first <= line && line <= last);
  };
  const candidates = [...tests.keys()].filter((file) => !owned.has(file));
  if (candidates.length === 0) return [];
  const errors: TestCascadeError[] = [];
  for (const symbol of symbols) {
    const definedIn = await definingFile(repoRoot, manifest, symbol);
    // A name the changing agents neither own a definition of nor have a contract for is not theirs to change (`t.TempDir()` in a task).
    if (definedIn === undefined) continue;
    const references = await finder.findReferences(repoRoot, symbol.name, { files: candidates, ...(definedIn ? { definedIn } : {}), ...(symbol.member ? { memberOnly: true, memberOf: symbol.symbol.split('.')[0]! } : {}) });
    for (const reference of references) {
      if (!testLine(reference.file, reference.line) || reference.kind === 'import' || reference.kind === 'reexport') continue;
      errors.push({ symbol: symbol.symbol, test_file: reference.file, line: reference.line, context: reference.context, agents: symbol.agents });
    }
    // A method of an interface or trait: a test double's method of that name (`func (f *fakeStore) Put`) stops
    // implementing it — the test no longer compiles (outside round X54-04). By name, as detect-cascades does.
    for (const fake of await implementationsIn(repoRoot, definedIn, symbol, candidates)) {
      if (!testLine(fake.file, fake.line)) continue;
      const text = (await readText(repoRoot, fake.file))?.split(/\r?\n/)[fake.line - 1]?.trim() ?? '';
      errors.push({ symbol: symbol.symbol, test_file: fake.file, line: fake.line, context: text, agents: symbol.agents });
    }
  }
  errors.sort((a, b) => a.test_file.localeCompare(b.test_file) || a.line - b.line || a.symbol.localeCompare(b.symbol));
  // One line calling `x.Parse` is one orphan even when both `Parse` and `LockFileParser.Parse` are listed as changed.
  const seen = new Set<string>();
  return errors.filter((error) => {
    const key = `${error.test_file}:${error.line}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
