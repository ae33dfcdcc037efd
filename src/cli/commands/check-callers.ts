import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { qualifiedUse } from '../../analysis/qualified-uses.js';
import { fixtureDefinitionLines } from '../../analysis/pytest-fixtures.js';
import { findReferences, listSymbols } from '../../analysis/engine/index.js';
import { rustMacroBodiesNaming } from '../../analysis/engine/extract.js';
import { listRepoFiles, repoContext } from '../../analysis/engine/repo-files.js';
import { repoRelative, requireFormat, requireRepository, reportStats, configureEngine } from '../../analysis/engine/cli-support.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { createGit } from '../../git/git-cli.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { analysisCall } from '../../analysis/engine/scope.js';

const identifier = /^[\p{L}_$][\p{L}\p{N}_$]*$/u;

/**
 * `check-callers <symbol> [--repo-dir] [--defined-in file] [--format json|text]` — every real
 * reference to a symbol in the repository's tracked TS/JS/Go/Python/Rust files (working-tree
 * content), from syntax trees: whole identifiers only (never `FooBar`, strings or comments), through
 * aliased imports and re-exports, method calls included, definitions excluded. Never looks inside
 * `.claude/worktrees/` or any other checkout. `Type.Name` keeps member uses only (`x.Name`, Go's `T{Name: …}`);
 * `pkg.Name` keeps uses written `pkg.Name` and uses inside a directory named `pkg`.
 * JSON: `[{file, line, context, column, kind, via?}]` (Go keys first). Exit 0; 2 on bad input.
 */
export function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  // One analysis call: repository roots and stats counters are this run's only (resident-safe).
  return analysisCall(io.env, () => runCall(args, options, io));
}

function readPython(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

async function runCall(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  configureEngine(io.env);
  const format = requireFormat(options.format, ['json', 'text'] as const, 'json');
  const raw = (args[0] ?? '').trim();
  // (a Rust raw identifier `r#type` is the name `type`)
  const symbol = (raw.includes('.') ? raw.slice(raw.lastIndexOf('.') + 1) : raw).replace(/^r#(?=[\p{L}_])/u, '');
  // (every segment of a qualified name is one: `.X`, `A..B`, `A.` are no symbol — outside round X51-11)
  if (!identifier.test(symbol) || (raw.includes('.') && !raw.split('.').every((part) => identifier.test(part.replace(/^r#(?=[\p{L}_])/u, ''))))) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `not a symbol name: ${JSON.stringify(args[0] ?? '')} (an identifier, optionally Qualifier.Name)` });
  }
  const base = typeof options.repoDir === 'string' ? path.resolve(io.cwd, options.repoDir) : io.cwd;
  const root = await requireRepository(base);
  const definedIn = typeof options.definedIn === 'string' ? repoRelative(root, base, options.definedIn) : undefined;
  if (definedIn !== undefined && statSync(path.join(root, definedIn), { throwIfNoEntry: false })?.isDirectory()) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `--defined-in ${definedIn}: a directory; name the file that defines the symbol` });
  }
  if (definedIn !== undefined && (await listRepoFiles(await repoContext(root), { only: [definedIn] })).length === 0) {
    throw new PolywaveError({ code: 'X002_FILE_READ', message: `--defined-in ${definedIn}: not a tracked TypeScript/JavaScript/Go/Python/Rust file of ${root}` });
  }
  const qualifier = raw.includes('.') ? raw.slice(0, raw.lastIndexOf('.')).split('.').pop()! : undefined;
  // Rust `Make.build` without --defined-in: the one file that declares a trait, struct or enum `Make` with a method
  // `build` stands in for it — its uses are written `T::build()`, `Item::build()`, `Self::build()`, which only the
  // definition's file lets the engine resolve (outside round X58-16: `check-callers Make.build` listed none of them)
  const rustOwner = definedIn === undefined && qualifier !== undefined && /^\p{Lu}/u.test(qualifier) ? await rustDeclarer(root, qualifier, symbol) : undefined;
  const lookup = definedIn ?? rustOwner;
  const found = await findReferences(root, symbol, lookup === undefined ? {} : { definedIn: lookup });
  // Outside attack X47-24: a --defined-in that names the wrong file answered a confident "no callers".
  // (a pytest fixture registered under another name by `@pytest.fixture(name="client")` is a definition of that name: X57-02)
  if (definedIn !== undefined && !(await listSymbols(root, [definedIn])).some((definition) => definition.name === symbol) && !(definedIn.endsWith('.py') && fixtureDefinitionLines(readPython(path.join(root, definedIn)), symbol).length > 0)) {
    io.stderr(`check-callers: warning: ${definedIn} has no definition of ${symbol}; only what it imports or re-exports under that name is followed — check the path\n`);
  }
  // (Rust: code a `macro_rules!` body generates — a `mod`, a call — is not analysed: say so, X64-06)
  if (lookup?.endsWith('.rs') === true) {
    const holding = await createGit(root).run(['grep', '-l', '-z', '-I', '-w', '--no-color', '--all-match', '-e', 'macro_rules', '-e', symbol, '--', '*.rs'], { allowExitCodes: [1] });
    for (const file of holding.stdout.split('\0').filter((entry) => entry !== '').sort()) {
      let text: string;
      try {
        text = readFileSync(path.join(root, file), 'utf8');
      } catch {
        continue;
      }
      for (const macro of await rustMacroBodiesNaming(text, symbol)) {
        io.stderr(`check-callers: warning: ${file}:${macro.line}: macro_rules! ${macro.name} names ${symbol} — what a macro expands to (its modules, items and calls) is not analysed; callers there are not listed\n`);
      }
    }
  }
  // File lines of this call only: a long-lived process must read an edited file again.
  const lineCache = new Map<string, string[]>();
  // (with a Rust definition's file, the engine has resolved each `X::build` path's type: any of them is the member's)
  const rustChecked = lookup?.endsWith('.rs') === true;
  const references = qualifier === undefined ? found : found.filter((reference) => qualifiedUse(root, qualifier, reference, lineCache, rustChecked));
  if (format === 'text') {
    for (const reference of references) io.stdout(`${reference.file}:${reference.line}:${reference.column}: ${reference.context}\n`);
    reportStats(io.env, io.stderr);
    return 0;
  }
  printJson(
    io,
    references.map((reference) => ({
      file: reference.file,
      line: reference.line,
      context: reference.context,
      column: reference.column,
      kind: reference.kind,
      ...(reference.via === undefined ? {} : { via: reference.via }),
    })),
  );
  reportStats(io.env, io.stderr);
  return 0;
}

/** The one Rust file declaring a trait, struct or enum `owner` with a method `member` (undefined: none, or several). */
async function rustDeclarer(root: string, owner: string, member: string): Promise<string | undefined> {
  const found = await createGit(root).run(['grep', '-l', '-z', '-I', '-E', '--no-color', '-e', `(trait|struct|enum)[[:space:]]+${owner}([^A-Za-z0-9_]|$)`, '--', '*.rs'], { allowExitCodes: [1] });
  const files = found.stdout.split('\0').filter((file) => file !== '' && !file.startsWith('.claude/worktrees/'));
  if (files.length === 0 || files.length > 50) return undefined;
  const symbols = await listSymbols(root, files);
  const owners = new Set(
    symbols
      .filter((definition) => definition.name === member && definition.kind === 'method' && definition.container?.replace(/<.*$/, '') === owner)
      .filter((definition) => symbols.some((type) => type.file === definition.file && type.name === owner && (type.kind === 'trait' || type.kind === 'struct' || type.kind === 'enum')))
      .map((definition) => definition.file),
  );
  return owners.size === 1 ? [...owners][0] : undefined;
}
