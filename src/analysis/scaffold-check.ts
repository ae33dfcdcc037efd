import { execFile } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { runSandboxedShell } from '../gates/sandboxed-shell.js';
import { cargoDependencies, declaredPackages, goImports, goModule, packageNameOf, readSmall, scriptImports } from './imports.js';
import { codeFamilyOf, lexSource, lineAt, type CodeFamily } from './source-lexer.js';
import { createParser, languageOf } from './engine/grammars.js';

/**
 * `validate-scaffold` (E22): checks one scaffold file before the Scaffold Agent commits it —
 * syntax, imports, type references, build — in TypeScript/JavaScript, Go, Python and Rust.
 * Each step is PASS, FAIL or SKIP (with the reason in `errors`), Go's `ValidationResult` shape.
 */

export type StepStatus = 'PASS' | 'FAIL' | 'SKIP';

export interface ScaffoldStep {
  status: StepStatus;
  errors?: string[];
  fixes?: string[];
  /** Only when true (Go's YAML omits a false one). */
  auto_fixable?: boolean;
}

export interface ScaffoldCheck {
  syntax: ScaffoldStep;
  imports: ScaffoldStep;
  type_references: ScaffoldStep;
  build: ScaffoldStep;
}

export interface ScaffoldCheckOptions {
  /** Absolute path of the scaffold file. */
  file: string;
  /** Repository root (imports resolve against it; the build runs there). */
  root: string;
  /** The build command (from the IMPL's build gate or the repository's detected commands); none → build SKIP. */
  buildCommand?: string;
  /** Build time limit (default 10 minutes). */
  buildTimeoutMs?: number;
  env?: Readonly<Record<string, string | undefined>>;
  signal?: AbortSignal;
}

/** FAIL if any step failed, else PASS if any passed, else SKIP (Go's `OverallStatus`). */
export function overallStatus(check: ScaffoldCheck): StepStatus {
  const steps = [check.syntax, check.imports, check.type_references, check.build];
  if (steps.some((step) => step.status === 'FAIL')) return 'FAIL';
  return steps.some((step) => step.status === 'PASS') ? 'PASS' : 'SKIP';
}

// ---------------------------------------------------------------------------------------------
// syntax

const closers: Record<string, string> = { ')': '(', ']': '[', '}': '{' };

/** Unbalanced brackets in the code (comments and strings blanked by the lexer), with lines. */
export function bracketErrors(filePath: string, text: string): string[] {
  const source = lexSource(filePath, text);
  const stack: Array<{ char: string; offset: number }> = [];
  const errors: string[] = [];
  for (let offset = 0; offset < source.code.length && errors.length < 5; offset += 1) {
    const char = source.code[offset]!;
    if (char === '(' || char === '[' || char === '{') stack.push({ char, offset });
    else if (char in closers) {
      const open = stack.pop();
      if (!open) errors.push(`${filePath}:${lineAt(source, offset)}: unexpected '${char}'`);
      else if (open.char !== closers[char]) errors.push(`${filePath}:${lineAt(source, offset)}: '${char}' closes '${open.char}' opened on line ${lineAt(source, open.offset)}`);
    }
  }
  for (const open of stack.slice(0, 5 - errors.length)) errors.push(`${filePath}:${lineAt(source, open.offset)}: '${open.char}' is never closed`);
  return errors;
}

function run(command: string, args: readonly string[], options: { cwd: string; env?: Readonly<Record<string, string | undefined>>; input?: string }): Promise<{ code: number; output: string } | undefined> {
  return new Promise((resolve) => {
    const child = execFile(command, args, { cwd: options.cwd, env: options.env as NodeJS.ProcessEnv, timeout: 60_000, maxBuffer: 8 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error && (error as NodeJS.ErrnoException).code === 'ENOENT') return resolve(undefined);
      const code = error ? (typeof (error as { code?: unknown }).code === 'number' ? ((error as { code: number }).code) : 1) : 0;
      resolve({ code, output: `${stdout}${stderr}`.trim() });
    });
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}

/** The TypeScript compiler of the repository (or polywave's own dev install), for syntax diagnostics. */
/**
 * polywave's own TypeScript (a development install has it), never the repository's: requiring a module
 * from the checkout's `node_modules` runs that code in the orchestrator, unsandboxed — and a worktree's
 * `node_modules` comes from a sandboxed install that runs the repository's scripts (outside attack X21-12:
 * the same for Python's `ast`). Without it the syntax comes from tree-sitter ({@link treeSitterSyntaxErrors}).
 */
function loadTypeScript(): { transpileModule: (text: string, options: object) => { diagnostics?: Array<{ start?: number; messageText: unknown }> } } | undefined {
  for (const base of [import.meta.url]) {
    try {
      const required = createRequire(base)('typescript') as { transpileModule?: unknown };
      if (typeof required.transpileModule === 'function') return required as never;
    } catch {
      // not installed there
    }
  }
  return undefined;
}

/** Syntax errors by tree-sitter's grammar (its ERROR and MISSING nodes), for TypeScript/JavaScript without polywave's own TypeScript. */
async function treeSitterSyntaxErrors(file: string, relative: string, text: string): Promise<{ code: number; output: string } | undefined> {
  const lang = languageOf(file) ?? 'typescript';
  let parser;
  try {
    parser = await createParser(lang);
  } catch {
    return undefined;
  }
  try {
    const tree = parser.parse(text);
    if (!tree) return undefined;
    const messages: string[] = [];
    const visit = (node: import('web-tree-sitter').Node): void => {
      if (messages.length >= 20) return;
      if (node.isError || node.isMissing) {
        messages.push(`${relative}:${node.startPosition.row + 1}:${node.startPosition.column + 1}: ${node.isMissing ? `missing ${node.type}` : 'syntax error'}`);
        return;
      }
      if (!node.hasError) return;
      for (const child of node.children) if (child) visit(child);
    };
    visit(tree.rootNode);
    tree.delete();
    return { code: messages.length > 0 ? 1 : 0, output: messages.join('\n') };
  } finally {
    parser.delete();
  }
}

async function checkSyntax(options: ScaffoldCheckOptions, family: CodeFamily | undefined, text: string): Promise<ScaffoldStep> {
  const relative = path.relative(options.root, options.file) || path.basename(options.file);
  if (family === undefined) {
    if (!/\.json$/i.test(options.file)) return { status: 'SKIP', errors: [`no syntax check for ${path.extname(options.file) || 'extension-less'} files`] };
    try {
      JSON.parse(text);
      return { status: 'PASS' };
    } catch (error) {
      return { status: 'FAIL', errors: [`${relative}: ${error instanceof Error ? error.message : String(error)}`], fixes: ['Fix the JSON syntax'] };
    }
  }
  const brackets = bracketErrors(relative, text);
  if (brackets.length > 0) return { status: 'FAIL', errors: brackets, fixes: ['Balance the brackets at the reported lines'] };
  // A real parser where one is installed: gofmt, python3, node, TypeScript, rustfmt.
  let parsed: { code: number; output: string } | undefined;
  // Every parser from `/`, on the file's absolute path (outside attack X22-02: rustup's proxy, started in the
  // repository, followed its rust-toolchain.toml `path =` to a rustfmt of the repository's; X23-02: started in
  // os.tmpdir() instead, it followed a `/tmp/rust-toolchain.toml` any local user can write — rustup and pyenv
  // search the working directory and every parent; `/` has none but itself, writable by root alone).
  const file = path.resolve(options.root, options.file);
  const neutral = path.parse(file).root;
  if (family === 'go') parsed = await run('gofmt', ['-e', '-l', file], { cwd: neutral, ...(options.env ? { env: options.env } : {}) });
  // Isolated (-I: neither the working directory nor PYTHON* variables on sys.path) and run from a directory of
  // no repository (outside attack X21-12: with `-c` and cwd = the repository, its `ast.py` ran on the host).
  else if (family === 'python') parsed = await run('python3', ['-I', '-c', 'import ast,sys; ast.parse(open(sys.argv[1], encoding="utf-8").read(), sys.argv[1])', file], { cwd: neutral, ...(options.env ? { env: options.env } : {}) });
  else if (family === 'rust') parsed = await run('rustfmt', ['--edition', '2021', '--check', file], { cwd: neutral, ...(options.env ? { env: options.env } : {}) });
  else if (family === 'typescript' || family === 'javascript') {
    const typescript = loadTypeScript();
    if (!typescript) parsed = await treeSitterSyntaxErrors(options.file, relative, text);
    if (typescript) {
      const result = typescript.transpileModule(text, { reportDiagnostics: true, fileName: options.file, compilerOptions: { jsx: 1 } });
      const messages = (result.diagnostics ?? []).map((diagnostic) => {
        const message = typeof diagnostic.messageText === 'string' ? diagnostic.messageText : String((diagnostic.messageText as { messageText?: string }).messageText ?? diagnostic.messageText);
        const line = diagnostic.start === undefined ? undefined : text.slice(0, diagnostic.start).split('\n').length;
        return `${relative}${line ? `:${line}` : ''}: ${message}`;
      });
      parsed = { code: messages.length > 0 ? 1 : 0, output: messages.join('\n') };
    }
  }
  // rustfmt exits 1 when it would reformat: only parse errors ("error") count.
  if (parsed && family === 'rust' && parsed.code !== 0 && !/^error/m.test(parsed.output)) parsed = { code: 0, output: '' };
  if (parsed && parsed.code !== 0) return { status: 'FAIL', errors: parsed.output.split('\n').filter((line) => line.trim() !== '').slice(0, 20), fixes: ['Fix the syntax error at the reported location'] };
  return { status: 'PASS' };
}

// ---------------------------------------------------------------------------------------------
// imports

const scriptExtensions = ['.ts', '.tsx', '.mts', '.cts', '.js', '.jsx', '.mjs', '.cjs', '.d.ts', '.json'];

function resolvesRelative(fromFile: string, specifier: string): boolean {
  const base = path.resolve(path.dirname(fromFile), specifier);
  const candidates = [base, ...scriptExtensions.map((extension) => base + extension), ...scriptExtensions.map((extension) => path.join(base, `index${extension}`))];
  // `./x.js` written for `./x.ts` (NodeNext style).
  const swapped = base.replace(/\.(c|m)?js$/, '');
  if (swapped !== base) candidates.push(...['.ts', '.tsx', '.mts', '.cts'].map((extension) => swapped + extension));
  return candidates.some((candidate) => existsSync(candidate) && statSync(candidate).isFile());
}

function missingScriptImports(file: string, root: string, text: string): string[] {
  const builtins = new Set(builtinModules);
  const declared = declaredPackages(path.dirname(file), root);
  const missing: string[] = [];
  for (const specifier of scriptImports(file, text)) {
    if (specifier.startsWith('.') || specifier.startsWith('/')) {
      if (!resolvesRelative(file, specifier)) missing.push(specifier);
      continue;
    }
    if (specifier.startsWith('node:') || builtins.has(specifier) || builtins.has(specifier.split('/')[0]!)) continue;
    const name = packageNameOf(specifier);
    if (declared.has(name) || existsSync(path.join(root, 'node_modules', name))) continue;
    if (specifier.startsWith('#') || specifier.startsWith('~') || specifier.startsWith('@/')) continue; // import maps / path aliases
    missing.push(specifier);
  }
  return missing;
}

function missingGoImports(file: string, root: string, text: string): string[] | undefined {
  const module = goModule(path.dirname(file), root);
  if (!module) return undefined;
  const within = (importPath: string, prefix: string) => importPath === prefix || importPath.startsWith(`${prefix}/`);
  return goImports(text).filter((importPath) => {
    const first = importPath.split('/')[0]!;
    if (!first.includes('.') || importPath === 'C') return false; // standard library, cgo
    if (module.module !== '' && within(importPath, module.module)) return false;
    return ![...module.requires, ...module.replaces].some((required) => within(importPath, required));
  });
}

function missingPythonImports(file: string, root: string, text: string): string[] {
  const source = lexSource(file, text);
  const missing: string[] = [];
  for (const match of source.code.matchAll(/^[ \t]*from[ \t]+(\.+)([\w.]*)[ \t]+import\b/gm)) {
    let directory = path.dirname(file);
    for (let level = 1; level < match[1]!.length; level += 1) directory = path.dirname(directory);
    const parts = match[2] ? match[2].split('.') : [];
    const target = path.join(directory, ...parts);
    if (parts.length > 0 && !existsSync(`${target}.py`) && !existsSync(path.join(target, '__init__.py')) && !existsSync(target)) missing.push(`${match[1]}${match[2]}`);
    if (!directory.startsWith(root)) missing.push(`${match[1]}${match[2]}`);
  }
  return [...new Set(missing)];
}

function missingRustImports(file: string, root: string, text: string): string[] | undefined {
  const dependencies = cargoDependencies(path.dirname(file), root);
  if (!dependencies) return undefined;
  const source = lexSource(file, text);
  const local = new Set(['std', 'core', 'alloc', 'crate', 'self', 'super', 'proc_macro', 'test']);
  for (const match of source.code.matchAll(/\bmod\s+(\w+)\s*[;{]/g)) local.add(match[1]!);
  const missing = new Set<string>();
  for (const match of source.code.matchAll(/^[ \t]*(?:pub(?:\([^)]*\))?[ \t]+)?use[ \t]+:{0,2}(\w+)/gm)) {
    const crate = match[1]!;
    if (!local.has(crate) && !dependencies.has(crate)) missing.add(crate);
  }
  for (const match of source.code.matchAll(/\bextern\s+crate\s+(\w+)/g)) if (!local.has(match[1]!) && !dependencies.has(match[1]!)) missing.add(match[1]!);
  return [...missing];
}

function checkImports(options: ScaffoldCheckOptions, family: CodeFamily | undefined, text: string): ScaffoldStep {
  let missing: string[] | undefined;
  let skipReason = '';
  if (family === 'typescript' || family === 'javascript') missing = missingScriptImports(options.file, options.root, text);
  else if (family === 'go') {
    missing = missingGoImports(options.file, options.root, text);
    if (!missing) skipReason = `no go.mod between ${path.dirname(options.file)} and ${options.root}`;
  } else if (family === 'python') missing = missingPythonImports(options.file, options.root, text);
  else if (family === 'rust') {
    missing = missingRustImports(options.file, options.root, text);
    if (!missing) skipReason = `no Cargo.toml between ${path.dirname(options.file)} and ${options.root}`;
  } else skipReason = `imports are not checked for ${path.extname(options.file) || 'this kind of'} files`;
  if (!missing) return { status: 'SKIP', errors: [skipReason] };
  if (missing.length === 0) return { status: 'PASS' };
  const fix = family === 'go' ? `go get ${missing.join(' ')}` : family === 'rust' ? `add ${missing.join(', ')} to [dependencies] in Cargo.toml` : family === 'python' ? 'create the imported modules or fix the relative import' : 'install the packages or fix the relative import paths';
  return { status: 'FAIL', errors: missing.map((specifier) => `unresolved import: ${specifier}`), fixes: [fix], ...(family === 'go' || family === 'rust' ? { auto_fixable: true } : {}) };
}

// ---------------------------------------------------------------------------------------------

/**
 * Runs the four steps. Syntax failure stops there (like Go: a file that does not parse has no
 * imports to check). Type references are checked by the build (the compiler resolves them); the
 * step is SKIP with that reason when a build command exists, else SKIP "no build command".
 */
export async function checkScaffold(options: ScaffoldCheckOptions): Promise<ScaffoldCheck> {
  const text = readSmall(options.file);
  if (text === undefined) throw new Error(`cannot read ${options.file}`);
  const family = codeFamilyOf(options.file);
  const result: ScaffoldCheck = { syntax: { status: 'SKIP' }, imports: { status: 'SKIP' }, type_references: { status: 'SKIP' }, build: { status: 'SKIP' } };
  result.syntax = await checkSyntax(options, family, text);
  if (result.syntax.status === 'FAIL') return result;
  result.imports = checkImports(options, family, text);

  const command = options.buildCommand?.trim() ?? '';
  if (command === '') {
    result.type_references = { status: 'SKIP', errors: ['no build command: type references are checked by the build'] };
    result.build = { status: 'SKIP', errors: ['no build command found (IMPL build gate, polywave.config.json, CI, Makefile, package.json)'] };
    return result;
  }
  // Agent-written scaffolds: the build runs as a gate does (sandboxed, no credentials; X3 #20).
  const outcome = await runSandboxedShell(command, {
    cwd: options.root,
    timeoutMs: options.buildTimeoutMs ?? 10 * 60_000,
    logPath: path.join(os.tmpdir(), `polywave-scaffold-build-${process.pid}-${Date.now()}.log`),
    ...(options.env ? { env: options.env } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const passed = outcome.exitCode === 0 && !outcome.timedOut;
  result.type_references = { status: 'SKIP', errors: [`checked by the build (${command})`] };
  result.build = passed
    ? { status: 'PASS' }
    : {
        status: 'FAIL',
        errors: [outcome.timedOut ? `build timed out: ${command}` : `build failed (exit ${outcome.exitCode}): ${command}`, ...outcome.output.split('\n').slice(-60)].filter((line) => line.trim() !== ''),
        fixes: ['Fix the compilation errors in the scaffold'],
      };
  return result;
}
