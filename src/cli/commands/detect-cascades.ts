import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { contractsOf, implementerView, mayImplement, tsFunctionMembers } from '../../analysis/implementers.js';
import { findReferences, languageOf, listSymbols, referenceContext, type Reference } from '../../analysis/engine/index.js';
import type { FileSymbol } from '../../analysis/engine/types.js';
import { identifierLines } from '../../analysis/engine/extract.js';
import { requireFormat, requireRepository, toYaml, reportStats, configureEngine } from '../../analysis/engine/cli-support.js';
import { repoContext } from '../../analysis/engine/repo-files.js';
import { ModuleTargets } from '../../analysis/ts-module-targets.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { analysisCall } from '../../analysis/engine/scope.js';

interface Rename {
  old: string;
  new: string;
  scope?: string;
}

interface CascadeCandidate {
  file: string;
  line: number;
  match: string;
  cascade_type: 'syntax' | 'semantic';
  severity: 'high' | 'medium' | 'low';
  reason: string;
}

const identifier = /^[\p{L}_$][\p{L}\p{N}_$]*$/u;
const sourcePathspecs = ['*.ts', '*.mts', '*.cts', '*.tsx', '*.js', '*.mjs', '*.cjs', '*.jsx', '*.go', '*.py', '*.rs', ':(exclude).claude/worktrees', ':(exclude).polywave-state'];

function parseRenames(value: unknown): Rename[] {
  if (typeof value !== 'string') throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: '--renames is required: a JSON array of {"old","new","scope"}' });
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (error) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `invalid --renames JSON: ${(error as Error).message}` });
  }
  if (!Array.isArray(parsed)) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'invalid --renames JSON: expected an array of {"old","new","scope"}' });
  return parsed.map((entry: unknown, index) => {
    const item = entry as Record<string, unknown> | null;
    const old = item?.old;
    const renamed = item?.new;
    const scope = item?.scope;
    if (typeof old !== 'string' || !identifier.test(old) || typeof renamed !== 'string' || (scope !== undefined && typeof scope !== 'string')) {
      throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `invalid --renames entry ${index}: need "old" (an identifier), "new" (a string) and optionally "scope" (a path)` });
    }
    return { old, new: renamed, ...(scope ? { scope: scope.replace(/^\.\//, '').replace(/\/$/, '') } : {}) };
  });
}

const kindReason: Record<Reference['kind'], [CascadeCandidate['severity'], string]> = {
  import: ['high', 'import of renamed symbol'],
  reexport: ['high', 're-export of renamed symbol'],
  type: ['medium', 'type reference to renamed symbol'],
  call: ['medium', 'call of renamed symbol'],
  'method-call': ['medium', 'method call of renamed symbol'],
  other: ['medium', 'reference to renamed symbol'],
};

/**
 * `detect-cascades <root> --renames '[{"old","new","scope"}]' [--format yaml|json]` — every place a
 * rename breaks (syntax: definitions, imports, references, found by the analysis engine in every
 * supported language) or leaves stale text (semantic: the word in a comment or string). With a
 * `scope` (a directory or file), only references that reach a definition of `old` inside it.
 * Prints {cascade_candidates[{file, line, match, cascade_type, severity, reason}]}. Exit 0; 2 on bad input.
 */
export function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  // One analysis call: repository roots and stats counters are this run's only (resident-safe).
  return analysisCall(io.env, () => runCall(args, options, io));
}

async function runCall(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  configureEngine(io.env);
  const format = requireFormat(options.format, ['yaml', 'json'] as const, 'yaml');
  const renames = parseRenames(options.renames);
  const root = await requireRepository(path.resolve(io.cwd, args[0] ?? (typeof options.repoDir === 'string' ? options.repoDir : '.')));
  for (const rename of renames) {
    if (rename.scope === undefined) continue;
    const normalized = path.posix.normalize(rename.scope.replace(/\\/g, '/'));
    if (path.isAbsolute(rename.scope) || normalized === '..' || normalized.startsWith('../')) {
      throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `--renames scope ${JSON.stringify(rename.scope)}: outside the repository ${root}` });
    }
    if (!existsSync(path.join(root, normalized))) {
      throw new PolywaveError({ code: 'X002_FILE_READ', message: `--renames scope ${JSON.stringify(rename.scope)}: no such file or directory in ${root}` });
    }
    rename.scope = normalized === '.' ? undefined : normalized;
    if (rename.scope === undefined) delete rename.scope;
  }
  const context = await repoContext(root);
  const moduleTargets = new ModuleTargets(root);
  const candidates: CascadeCandidate[] = [];
  const seen = new Set<string>();
  const add = (candidate: CascadeCandidate) => {
    const key = `${candidate.file}:${candidate.line}:${candidate.cascade_type}:${candidate.match}`;
    if (seen.has(key)) return;
    seen.add(key);
    candidates.push(candidate);
  };
  for (const rename of renames) {
    const grep = await context.git.run(['grep', '-z', '-n', '-o', '-w', '-F', '-I', '--no-color', '-e', rename.old, '--', ...sourcePathspecs], { allowExitCodes: [1] });
    const occurrences = new Map<string, number>(); // file:line → count of whole-word occurrences
    const lineText = new Map<string, string>();
    for (const row of grep.stdout.split('\n')) {
      // -z: `file\0line\0match` (paths never quoted)
      const [file, line] = row.split('\0');
      if (file === undefined || line === undefined || !/^\d+$/.test(line)) continue;
      const key = `${file}:${line}`;
      occurrences.set(key, (occurrences.get(key) ?? 0) + 1);
    }
    const filesWithWord = [...new Set([...occurrences.keys()].map((key) => key.slice(0, key.lastIndexOf(':'))))];
    const symbols = (await listSymbols(root, filesWithWord.length > 0 ? filesWithWord : ['.nonexistent'])).filter((symbol) => symbol.name === rename.old);
    const scoped = rename.scope === undefined ? symbols : symbols.filter((symbol) => symbol.file === rename.scope || symbol.file.startsWith(`${rename.scope}/`));
    const definers = rename.scope !== undefined && scoped.length > 0 ? [...new Set(scoped.map((symbol) => symbol.file))] : undefined;
    const references = definers
      ? (await Promise.all(definers.map((definedIn) => findReferences(root, rename.old, { definedIn })))).flat()
      : await findReferences(root, rename.old);
    const syntaxPerLine = new Map<string, number>();
    for (const symbol of scoped) {
      add({ file: symbol.file, line: symbol.line, match: symbol.name, cascade_type: 'syntax', severity: 'high', reason: `${symbol.kind} declaration uses renamed symbol ${rename.old} (now ${rename.new})` });
      syntaxPerLine.set(`${symbol.file}:${symbol.line}`, (syntaxPerLine.get(`${symbol.file}:${symbol.line}`) ?? 0) + 1);
    }
    // A method of an interface or trait in the scope: the methods of that name elsewhere that may implement it must be
    // renamed with it (a Go type stops satisfying the interface, a TS class its `implements`, a Rust impl fails) — by
    // name and shape: a type with every method the interface declares, a Rust `impl Trait for` (implementers.ts;
    // outside rounds X54-10, X55-04).
    const scopedFiles = [...new Set(scoped.map((symbol) => symbol.file))];
    const contracts = scopedFiles.length === 0 ? [] : contractsOf(await listSymbols(root, scopedFiles), root).filter((contract) => contract.methods.has(rename.old));
    if (contracts.length > 0) {
      // (with a TS class's function-valued properties and the members of object literals typed as an interface: X57-14)
      const methods = symbols.filter((symbol) => symbol.kind === 'method' && !scoped.includes(symbol));
      const members = (await tsFunctionMembers(root, filesWithWord, rename.old)).filter((member) => !symbols.some((symbol) => symbol.file === member.file && symbol.line === member.line && symbol.name === member.name));
      const candidates = [...methods, ...members];
      const views = new Map<string, Promise<{ symbols: FileSymbol[]; text: string }>>();
      const contractOrigin = { targets: moduleTargets, files: new Set(scopedFiles.map((file) => file.replace(/\.(?:[cm]?[jt]sx?)$/, ''))), root };
      for (const symbol of candidates) {
        if (!views.has(symbol.file)) views.set(symbol.file, implementerView(root, symbol.file));
        const view = await views.get(symbol.file)!;
        const implemented = contracts.filter((contract) => mayImplement(contract, symbol, view.symbols, view.text, contractOrigin)).map((contract) => contract.name);
        if (implemented.length === 0) continue;
        add({ file: symbol.file, line: symbol.line, match: symbol.name, cascade_type: 'syntax', severity: 'high', reason: `${members.includes(symbol) ? 'member' : 'method'} ${rename.old} of ${symbol.container ?? 'a type'} may implement ${implemented.join(', ')}: rename it with the interface's (now ${rename.new})` });
        syntaxPerLine.set(`${symbol.file}:${symbol.line}`, (syntaxPerLine.get(`${symbol.file}:${symbol.line}`) ?? 0) + 1);
      }
    }
    for (const reference of references) {
      // A use that does not spell the name — through a local alias (`import { hashToken as other }` … `other('c')`, `use
      // m::hash as h;`) or a re-export under another name (`export { hashToken as createToken }`) — needs no edit: the
      // alias survives the rename, and the import or re-export naming the old name is listed on its own line. Listing it
      // as "call of renamed symbol" sent an agent to the line's other, unrelated token of that name (outside round X59-14).
      if (reference.name !== rename.old) continue;
      const [severity, reason] = kindReason[reference.kind];
      add({ file: reference.file, line: reference.line, match: reference.name, cascade_type: 'syntax', severity, reason: `${reason} ${rename.old} (now ${rename.new})` });
      lineText.set(`${reference.file}:${reference.line}`, reference.context);
      if (reference.name === rename.old) syntaxPerLine.set(`${reference.file}:${reference.line}`, (syntaxPerLine.get(`${reference.file}:${reference.line}`) ?? 0) + 1);
    }
    // Whole-word occurrences the syntax trees do not account for: comments and strings.
    const inScope = (file: string) => rename.scope === undefined || definers === undefined || file === rename.scope || file.startsWith(`${rename.scope}/`) || references.some((reference) => reference.file === file);
    // A dotted module path ending in the name (`mock.patch("shop.api.views.compute_total")`, `@patch("pkg.mod.name")`)
    // names the module file it patches: the mention counts when that file is in scope (defines or uses the symbol),
    // whichever file the string is in — a test that imports nothing from it breaks at run time (outside round X54-06).
    const scopeFiles = definers === undefined ? [] : [...new Set([...definers, ...references.map((reference) => reference.file)])];
    const targetsScope = (text: string): boolean =>
      [...text.matchAll(new RegExp(`([A-Za-z_]\\w*(?:\\.[A-Za-z_]\\w*)*)\\.${rename.old.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`, 'g'))].some((match) => {
        const modulePath = match[1]!.replace(/\./g, '/');
        return scopeFiles.some((file) => file === `${modulePath}.py` || file.endsWith(`/${modulePath}.py`) || file === `${modulePath}/__init__.py` || file.endsWith(`/${modulePath}/__init__.py`));
      });
    const allSymbolsPerLine = new Map<string, number>();
    for (const symbol of symbols) allSymbolsPerLine.set(`${symbol.file}:${symbol.line}`, (allSymbolsPerLine.get(`${symbol.file}:${symbol.line}`) ?? 0) + 1);
    const allRefs = await findReferences(root, rename.old, { files: filesWithWord });
    const allRefsPerLine = new Map<string, number>();
    for (const reference of allRefs) if (reference.name === rename.old) allRefsPerLine.set(`${reference.file}:${reference.line}`, (allRefsPerLine.get(`${reference.file}:${reference.line}`) ?? 0) + 1);
    // Per file, the occurrences that are identifiers (a local's binding and its uses, a member's
    // declaration: no reference, but no mention in a comment or string either — outside attack X47).
    const identifiersOf = new Map<string, Promise<Map<number, number>>>();
    const identifiersIn = (file: string): Promise<Map<number, number>> => {
      let found = identifiersOf.get(file);
      if (!found) {
        found = (async () => {
          const lang = languageOf(file);
          const text = lang ? await readFile(path.join(root, file), 'utf8').catch(() => undefined) : undefined;
          return lang && text !== undefined ? identifierLines(lang, text, rename.old) : new Map<number, number>();
        })();
        identifiersOf.set(file, found);
      }
      return found;
    };
    // A module mock's factory (`jest.mock('../crypto', () => ({ hashPassword: jest.fn() }))`, `vi.mock`): its keys stand
    // for the module's exports — after a rename the mocked module lacks the new name and the test breaks at run time.
    // Listed when the mocked path resolves to a file defining the name (the scope's, or any without one): X54-02; or to
    // a barrel re-exporting it from one, through a tsconfig/jsconfig `paths` alias, `vi.mock(import('./x'), …)`: X57-08/09/10.
    const definingFiles = new Set((definers ?? symbols.map((symbol) => symbol.file)).map((file) => file.replace(/\.(?:[cm]?[jt]sx?)$/, '')));
    const provides = (file: string, specifier: string) => moduleTargets.resolve(file, specifier).some((target) => moduleTargets.provides(target, rename.old, definingFiles));
    const mocked = new Set<string>();
    for (const file of filesWithWord.filter((name) => /\.(?:[cm]?[jt]sx?)$/.test(name))) {
      const text = await readFile(path.join(root, file), 'utf8').catch(() => '');
      for (const line of mockFactoryKeyLines(text, rename.old, (specifier) => provides(file, specifier))) {
        const key = `${file}:${line}`;
        if (mocked.has(key)) continue;
        mocked.add(key);
        add({ file, line, match: (text.split(/\r?\n/)[line - 1] ?? '').trim(), cascade_type: 'semantic', severity: 'medium', reason: `module mock's factory provides renamed symbol ${rename.old} (now ${rename.new})` });
      }
    }
    // A jest manual mock beside a module that provides the name (`src/services/__mocks__/crypto.ts` stands for
    // `src/services/crypto.ts` wherever a test calls `jest.mock('…/crypto')` without a factory): its definition of the
    // name is that module's export in the tests and must be renamed with it (outside round X58-18)
    for (const symbol of symbols) {
      const manual = /^(?:(.*)\/)?__mocks__\/([^/]+?)\.(?:[cm]?[jt]sx?)$/.exec(symbol.file);
      if (!manual || symbol.container !== undefined) continue;
      const mockedModule = manual[1] === undefined ? manual[2]! : `${manual[1]}/${manual[2]!}`;
      if (!moduleTargets.provides(mockedModule, rename.old, definingFiles)) continue;
      const key = `${symbol.file}:${symbol.line}`;
      if (mocked.has(key)) continue;
      mocked.add(key);
      add({ file: symbol.file, line: symbol.line, match: symbol.name, cascade_type: 'syntax', severity: 'high', reason: `${symbol.kind} ${rename.old} of the manual mock of ${mockedModule} stands for the renamed symbol in tests: rename it with it (now ${rename.new})` });
      syntaxPerLine.set(key, (syntaxPerLine.get(key) ?? 0) + 1);
    }
    for (const [key, count] of occurrences) {
      if (mocked.has(key)) continue;
      const file = key.slice(0, key.lastIndexOf(':'));
      if (!/\.(?:[cm]?[jt]sx?|go|py|rs)$/.test(file)) continue;
      const line = Number(key.slice(key.lastIndexOf(':') + 1));
      if (!inScope(file) && !(file.endsWith('.py') && targetsScope(lineText.get(key) ?? (await lineOf(root, file, line, rename.old))))) continue;
      const accounted = (allRefsPerLine.get(key) ?? 0) + (allSymbolsPerLine.get(key) ?? 0);
      if (count <= accounted) continue;
      if (count <= Math.max(accounted, (await identifiersIn(file)).get(line) ?? 0)) continue;
      const text = lineText.get(key) ?? (await lineOf(root, file, line, rename.old));
      add({ file, line, match: text, cascade_type: 'semantic', severity: 'low', reason: `comment or string mentions renamed symbol ${rename.old} (now ${rename.new})` });
    }
  }
  candidates.sort((a, b) => (a.file !== b.file ? (a.file < b.file ? -1 : 1) : a.line - b.line || (a.cascade_type < b.cascade_type ? 1 : a.cascade_type > b.cascade_type ? -1 : 0)));
  if (format === 'json') printJson(io, { cascade_candidates: candidates });
  else io.stdout(toYaml({ cascade_candidates: candidates }));
  reportStats(io.env, io.stderr);
  return 0;
}

/**
 * The lines of `text` (a TS/JS file) where a `jest.mock`/`vi.mock` (`doMock`, `jest.unstable_mockModule` too) factory
 * provides `name` as a key (`name:`, `name(`, `name,` shorthand), for a mocked module — a string, or Vitest's
 * `import('./x')` — whose specifier `mocks` accepts (it resolves to a module providing `name`).
 */
function mockFactoryKeyLines(text: string, name: string, mocks: (specifier: string) => boolean): number[] {
  const lines: number[] = [];
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  for (const call of text.matchAll(/\b(?:jest|vi)\s*\.\s*(?:(?:do)?[mM]ock|unstable_mockModule)\s*\(\s*(?:import\s*\(\s*(['"`])([^'"`]+)\1\s*\)|(['"`])([^'"`]+)\3)\s*,/g)) {
    if (!mocks(call[2] ?? call[4]!)) continue;
    // The factory: from the comma to the call's closing parenthesis (brackets counted, strings skipped).
    let depth = 1;
    let end = call.index + call[0].length;
    for (; end < text.length && depth > 0; end += 1) {
      const char = text[end]!;
      if (char === '"' || char === "'" || char === '`') {
        const close = text.indexOf(char, end + 1);
        if (close < 0) break;
        end = close;
      } else if (char === '(' || char === '[' || char === '{') depth += 1;
      else if (char === ')' || char === ']' || char === '}') depth -= 1;
    }
    const factory = text.slice(call.index, end);
    // (a quoted key is the same property: `'hashPassword': vi.fn()` — outside round X58-23; so is a computed key of a
    // string literal, `['hashPassword']: vi.fn()` or `['hashPassword']() {}` — X59-19)
    for (const key of factory.matchAll(new RegExp(`(?<![\\p{L}\\p{N}_$.])(?:${escaped}|(['"])${escaped}\\1)(?=\\s*[:(,}])|\\[\\s*(['"\`])${escaped}\\2\\s*\\](?=\\s*[:(])`, 'gu'))) {
      lines.push(text.slice(0, call.index + key.index).split('\n').length);
    }
  }
  return lines;
}

async function lineOf(root: string, file: string, line: number, word: string): Promise<string> {
  const text = await readFile(path.join(root, file), 'utf8').catch(() => '');
  const raw = text.split(/\r?\n/)[line - 1] ?? '';
  return referenceContext(raw, raw.indexOf(word) + 1);
}
