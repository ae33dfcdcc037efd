/**
 * pytest fixtures are used by parameter name: `def test_checkout(db):` asks pytest for the fixture `db` defined with
 * `@pytest.fixture` in the test module or a `conftest.py` of its directory or one above. No import names it, and a
 * parameter is a binding to every syntax tree — so the engine finds no use of a fixture (outside round X54-09: renaming
 * one broke every test that requested it, and check-callers / detect-cascades listed none).
 *
 * Here: the definitions of a fixture name — a `def` decorated `@pytest.fixture`, `@fixture` or
 * `@pytest_asyncio.fixture`, registered under its `name=` when the decorator gives one, else under its own name
 * (outside round X57-01/02) — and their uses: the parameters of that name pytest fills (of a test function — `test*`
 * at module level or in a `Test*` class of a `test_*.py` / `*_test.py` module — or of a fixture; not of any other
 * function, not one with a default value, not one `@pytest.mark.parametrize` gives directly: X57-04), and
 * `usefixtures("name")` strings. Each is attributed to the definition pytest picks for it: the test's class (a fixture
 * defined in a class is seen by that class's tests only: X57-15), its module — defined there or imported into it
 * (`from app.fixtures import *` / `import db`: X57-07) —, else the nearest conftest.py above it (likewise, defined or
 * imported). A fixture requesting its own name (`def db(db):`) asks for the next one out. Read from the files' text
 * (statements, tokens, brackets and strings counted; comment lines between a decorator and its `def` skipped: X57-03),
 * not from a syntax tree: the engine's trees do not keep parameters.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Reference } from './engine/types.js';

const testFile = /(?:^|\/)(?:test_[^/]*\.py|[^/]*_test\.py|conftest\.py)$/;
const testModule = /(?:^|\/)(?:test_[^/]*\.py|[^/]*_test\.py)$/;
const fixtureDecorator = /^@\s*(?:(?:pytest|pytest_asyncio)\s*\.\s*)?fixture\b/;
const identifier = /^[\p{L}_][\p{L}\p{N}_]*$/u;

/** The offset of the last character of the string literal whose opening quote is at `at` (its line's end when unterminated). */
function stringEnd(text: string, at: number): number {
  const quote = text[at]!;
  const triple = text[at + 1] === quote && text[at + 2] === quote;
  for (let index = at + (triple ? 3 : 1); index < text.length; index += 1) {
    const char = text[index]!;
    if (char === '\\') index += 1;
    else if (char === quote && (!triple || (text[index + 1] === quote && text[index + 2] === quote))) return triple ? index + 2 : index;
    else if (!triple && char === '\n') return index - 1;
  }
  return text.length - 1;
}

/** The logical lines of `text` (comment and blank lines left out): start offset, end offset, indentation, 1-based line. */
function statements(text: string): Array<{ start: number; end: number; indent: number; line: number }> {
  const found: Array<{ start: number; end: number; indent: number; line: number }> = [];
  let line = 1;
  for (let at = 0; at < text.length; ) {
    let indent = 0;
    let index = at;
    for (; text[index] === ' ' || text[index] === '\t'; index += 1) indent = text[index] === '\t' ? indent + 8 - (indent % 8) : indent + 1;
    if (index >= text.length) break;
    if (text[index] === '\n' || text[index] === '\r' || text[index] === '#') {
      const newline = text.indexOf('\n', index);
      if (newline < 0) break;
      at = newline + 1;
      line += 1;
      continue;
    }
    const start = index;
    const startLine = line;
    let depth = 0;
    for (; index < text.length; index += 1) {
      const char = text[index]!;
      if (char === '"' || char === "'") {
        const end = stringEnd(text, index);
        for (let inner = index; inner <= end; inner += 1) if (text[inner] === '\n') line += 1;
        index = end;
      } else if (char === '#') {
        const newline = text.indexOf('\n', index);
        index = (newline < 0 ? text.length : newline) - 1;
      } else if (char === '\\' && (text[index + 1] === '\n' || (text[index + 1] === '\r' && text[index + 2] === '\n'))) {
        index = text.indexOf('\n', index);
        line += 1;
      } else if (char === '(' || char === '[' || char === '{') depth += 1;
      else if ((char === ')' || char === ']' || char === '}') && depth > 0) depth -= 1;
      else if (char === '\n') {
        line += 1;
        if (depth === 0) break;
      }
    }
    found.push({ start, end: index, indent, line: startLine });
    at = index + 1;
  }
  return found;
}

/** A parameter of a `def` (1-based line and column of its name). */
interface Parameter {
  name: string;
  line: number;
  column: number;
  defaulted: boolean;
}

/** A `def` or `class` statement of a file, with its decorators and where it is. */
interface Definition {
  kind: 'def' | 'class';
  name: string;
  line: number;
  decorators: string[];
  /** The enclosing classes, outermost first (a function's own class for a method). */
  classes: string[];
  /** Inside a function: not seen by pytest. */
  nested: boolean;
  parameters: Parameter[];
  /** A class's bases, by their last name (`mod.Base[T]` → Base). */
  bases: string[];
}

/** A `from module import …` statement at module level. */
interface FromImport {
  module: string;
  /** `*`, or the imported names with their local names. */
  names: Array<{ imported: string; local: string }>;
}

/** What a file says about fixtures: its functions and classes, its usefixtures strings (with the classes they are seen from), its module-level imports. */
interface Outline {
  definitions: Definition[];
  usefixtures: Array<{ name: string; line: number; column: number; classes: string[] }>;
  imports: FromImport[];
}

function lineColumn(text: string): (offset: number) => { line: number; column: number } {
  const starts = [0];
  for (let at = text.indexOf('\n'); at >= 0; at = text.indexOf('\n', at + 1)) starts.push(at + 1);
  return (offset) => {
    let low = 0;
    for (let high = starts.length - 1; low < high; ) {
      const middle = (low + high + 1) >> 1;
      if (starts[middle]! <= offset) low = middle;
      else high = middle - 1;
    }
    return { line: low + 1, column: offset - starts[low]! + 1 };
  };
}

/** The parameters of the list opening after offset `open` (its `(`), to its closing parenthesis. */
function parametersAt(text: string, open: number, position: (offset: number) => { line: number; column: number }): Parameter[] {
  const found: Parameter[] = [];
  let depth = 0;
  let segmentStart = open + 1;
  let defaulted = false;
  for (let at = segmentStart; at < text.length; at += 1) {
    const char = text[at]!;
    if (char === '"' || char === "'") {
      at = stringEnd(text, at);
      continue;
    }
    if (char === '#') {
      const end = text.indexOf('\n', at);
      at = end < 0 ? text.length : end;
      continue;
    }
    if (char === '(' || char === '[' || char === '{') depth += 1;
    else if ((char === ')' || char === ']' || char === '}') && depth > 0) depth -= 1;
    else if (char === '=' && depth === 0) defaulted = true;
    else if ((char === ',' || char === ')') && depth === 0) {
      const segment = text.slice(segmentStart, at);
      const parameter = /^\s*([\p{L}_][\p{L}\p{N}_]*)/u.exec(segment);
      if (parameter) found.push({ name: parameter[1]!, ...position(segmentStart + segment.indexOf(parameter[1]!)), defaulted });
      segmentStart = at + 1;
      defaulted = false;
      if (char === ')') break;
    }
  }
  return found;
}

/** The string literals of `source` (a call's arguments), with their offsets in it. */
function literals(source: string): Array<{ value: string; offset: number }> {
  return [...source.matchAll(/(['"])([^'"\n]*)\1/g)].map((match) => ({ value: match[2]!, offset: match.index }));
}

/** The last names of the bases listed in `source` (a class header after its `(`), keyword arguments left out. */
function baseNames(source: string): string[] {
  let depth = 0;
  let end = source.length;
  for (let at = 0; at < source.length; at += 1) {
    const char = source[at]!;
    if (char === '(' || char === '[' || char === '{') depth += 1;
    else if (char === ')' || char === ']' || char === '}') {
      if (depth === 0) {
        end = at;
        break;
      }
      depth -= 1;
    }
  }
  return source
    .slice(0, end)
    .replace(/\[[^\]]*\]/g, '')
    .split(',')
    .flatMap((item) => (item.includes('=') ? [] : (/(?:^|\.)\s*([\p{L}_][\p{L}\p{N}_]*)\s*$/u.exec(item)?.slice(1) ?? [])));
}

function outline(text: string): Outline {
  const position = lineColumn(text);
  const result: Outline = { definitions: [], usefixtures: [], imports: [] };
  const stack: Array<{ kind: 'def' | 'class'; name: string; indent: number }> = [];
  let decorators: Array<{ start: number; source: string }> = [];
  let nextUse = text.indexOf('usefixtures');
  const usefixturesIn = (start: number, source: string, classes: string[]) => {
    if (!source.includes('usefixtures')) return;
    for (const call of source.matchAll(/\busefixtures\s*\(([^)]*)\)/g)) {
      for (const literal of literals(call[1]!)) {
        result.usefixtures.push({ name: literal.value, ...position(start + call.index + call[0].indexOf(call[1]!) + literal.offset + 1), classes });
      }
    }
  };
  for (const statement of statements(text)) {
    while (stack.length > 0 && stack[stack.length - 1]!.indent >= statement.indent) stack.pop();
    const first = text[statement.start];
    if (first === '@') {
      decorators.push({ start: statement.start, source: text.slice(statement.start, statement.end) });
      continue;
    }
    // (only a def, a class, an import or a statement naming usefixtures matters)
    const header = first === 'a' || first === 'd' || first === 'c' ? /^(?:(async\s+)?def|class)\s+([\p{L}_][\p{L}\p{N}_]*)\s*(\[[^\]]*\]\s*)?/u.exec(text.slice(statement.start, Math.min(statement.end, statement.start + 2000))) : null;
    while (nextUse >= 0 && nextUse < statement.start) nextUse = text.indexOf('usefixtures', nextUse + 1);
    const source = header || first === 'f' || (nextUse >= 0 && nextUse < statement.end) ? text.slice(statement.start, statement.end) : '';
    const classes = header || source !== '' ? stack.filter((entry) => entry.kind === 'class').map((entry) => entry.name) : [];
    const nested = header ? stack.some((entry) => entry.kind === 'def') : false;
    if (header) {
      const kind = header[0].startsWith('class') ? 'class' : 'def';
      const name = header[2]!;
      const open = statement.start + header[0].length;
      const parameters = kind === 'def' && text[open] === '(' ? parametersAt(text, open, position) : [];
      const bases = kind === 'class' && text[open] === '(' ? baseNames(text.slice(open + 1, statement.end)) : [];
      result.definitions.push({ kind, name, line: statement.line, decorators: decorators.map((decorator) => decorator.source), classes, nested, parameters, bases });
      for (const decorator of decorators) usefixturesIn(decorator.start, decorator.source, kind === 'class' ? [...classes, name] : classes);
      stack.push({ kind, name, indent: statement.indent });
    } else {
      usefixturesIn(statement.start, source, classes);
      const from = stack.length === 0 ? /^from\s+(\.*[\p{L}\p{N}_.]*)\s+import\s+([\s\S]*)$/u.exec(source) : null;
      if (from) {
        const list = from[2]!.replace(/#[^\n]*/g, '').replace(/[()\\]/g, ' ');
        const names = list.split(',').flatMap((item) => {
          const parts = /^\s*([\p{L}_][\p{L}\p{N}_]*|\*)(?:\s+as\s+([\p{L}_][\p{L}\p{N}_]*))?\s*$/u.exec(item);
          return parts ? [{ imported: parts[1]!, local: parts[2] ?? parts[1]! }] : [];
        });
        result.imports.push({ module: from[1]!, names });
      }
    }
    decorators = [];
  }
  return result;
}

/** The names a fixture function is registered under, by its decorators; undefined when it is no fixture. */
function fixtureName(definition: Definition): string | undefined {
  if (definition.kind !== 'def' || definition.nested) return undefined;
  const decorator = definition.decorators.find((source) => fixtureDecorator.test(source));
  if (decorator === undefined) return undefined;
  // (`name=` among the decorator's own arguments, not inside one: `params=[dict(name="x")]`)
  let topLevel = decorator.slice(decorator.indexOf('(') + 1);
  for (let previous = ''; previous !== topLevel; ) {
    previous = topLevel;
    topLevel = topLevel.replace(/\([^()]*\)|\[[^[\]]*\]|\{[^{}]*\}/g, '0');
  }
  return /(?:^|,)\s*name\s*=\s*(['"])([^'"]*)\1/.exec(decorator.includes('(') ? topLevel : '')?.[2] ?? definition.name;
}

/** The argnames a function's `@pytest.mark.parametrize` decorators give directly (not `indirect`): pytest fills them with the values, not fixtures. */
function directlyParametrized(definition: Definition): Set<string> {
  const names = new Set<string>();
  for (const decorator of definition.decorators) {
    const call = /\bparametrize\s*\(\s*(?:argnames\s*=\s*)?/.exec(decorator);
    if (!call) continue;
    const rest = decorator.slice(call.index + call[0].length);
    let argnames: string[];
    if (rest.startsWith('"') || rest.startsWith("'")) argnames = (literals(rest)[0]?.value ?? '').split(',');
    else if (rest.startsWith('[') || rest.startsWith('(')) argnames = literals(rest.slice(0, Math.max(0, rest.search(/[\])]/)))).map((literal) => literal.value);
    else continue;
    const indirect = /\bindirect\s*=\s*(True|\[[^\]]*\]|\([^)]*\))/.exec(rest);
    const indirectNames = indirect === null ? [] : indirect[1] === 'True' ? argnames.map((argname) => argname.trim()) : literals(indirect[1]!).map((literal) => literal.value);
    for (const argname of argnames.map((value) => value.trim())) if (argname !== '' && !indirectNames.includes(argname)) names.add(argname);
  }
  return names;
}

/** Whether pytest calls `definition` with fixtures: a fixture, or a test function of a test module (`test*`, at module level or in `Test*` classes). */
function takesFixtures(file: string, definition: Definition): boolean {
  if (fixtureName(definition) !== undefined) return true;
  return definition.kind === 'def' && !definition.nested && testModule.test(file) && definition.name.startsWith('test') && definition.classes.every((name) => name.startsWith('Test'));
}

/** The lines `name` is defined on as a fixture in `text` (1-based), none when it is not one there. */
export function fixtureDefinitionLines(text: string, name: string): number[] {
  return outline(text)
    .definitions.filter((definition) => fixtureName(definition) === name)
    .map((definition) => definition.line);
}

/**
 * The uses of the fixtures named `name` among `files` (repo-relative Python files of the repository at `root` holding
 * the name; with `definedIn`: of that file's fixture only — none when it defines no fixture of that name). `read`:
 * texts of (some of) those files already read, by repo-relative path (read from disk otherwise).
 */
export function fixtureUsesIn(root: string, files: readonly string[], name: string, definedIn?: string, read?: ReadonlyMap<string, string>): Reference[] {
  if (!identifier.test(name) || (definedIn !== undefined && !definedIn.endsWith('.py'))) return [];
  // (`read`: texts the caller read in this call — findReferences' first call on a tree —, not read again: ~250 files a call)
  const texts = new Map<string, string>();
  const textOf = (file: string): string => {
    let text = texts.get(file) ?? read?.get(file);
    if (text === undefined) {
      try {
        text = readFileSync(path.join(root, file), 'utf8');
      } catch {
        text = '';
      }
      texts.set(file, text);
    }
    return text;
  };
  const outlines = new Map<string, Outline>();
  const outlineOf = (file: string): Outline => {
    let found = outlines.get(file);
    if (found === undefined) {
      found = outline(textOf(file));
      outlines.set(file, found);
    }
    return found;
  };
  // (cheap first: no fixture of that name is possible without `def name` or `name="name"` in a file)
  const mentions = new RegExp(`\\bdef\\s+${name}\\s*[(\\[]|\\bname\\s*=\\s*['"]${name}['"]`, 'u');
  const candidates = files.filter((file) => file.endsWith('.py') && mentions.test(textOf(file)));
  /** Per file defining the fixture: its definitions' lines by the classes they are in ('' for the module). */
  const definitions = new Map<string, Map<string, { line: number; function: string }>>();
  for (const file of candidates) {
    for (const definition of outlineOf(file).definitions) {
      if (fixtureName(definition) !== name) continue;
      let scopes = definitions.get(file);
      if (!scopes) definitions.set(file, (scopes = new Map()));
      scopes.set(definition.classes.join('.'), { line: definition.line, function: definition.name });
    }
  }
  if (definitions.size === 0 || (definedIn !== undefined && !definitions.has(definedIn))) return [];
  const known = new Set(files);
  /** The file a `from module import` in `file` names, among the files defining the fixture. */
  const moduleFile = (file: string, module: string): string | undefined => {
    const dots = /^\.*/.exec(module)![0].length;
    const tail = module.slice(dots).split('.').filter((part) => part !== '').join('/');
    const bases: string[] = [];
    if (dots > 0) {
      let dir = path.posix.dirname(file);
      for (let up = 1; up < dots; up += 1) dir = path.posix.dirname(dir);
      bases.push(dir);
    } else {
      // (the repository root, `src/`, or a directory above the importing file that pytest put on sys.path)
      bases.push('.', 'src');
      for (let dir = path.posix.dirname(file); dir !== '.'; dir = path.posix.dirname(dir)) bases.push(dir);
    }
    for (const base of bases) {
      for (const candidate of tail === '' ? [`${base}/__init__.py`] : [`${base}/${tail}.py`, `${base}/${tail}/__init__.py`]) {
        const normal = path.posix.normalize(candidate);
        if (definitions.get(normal)?.has('')) return normal;
      }
    }
    return undefined;
  };
  /** The file whose fixture the module namespace of `file` holds: defined there, else imported into it. */
  const moduleHolder = new Map<string, string | undefined>();
  const heldBy = (file: string): string | undefined => {
    if (moduleHolder.has(file)) return moduleHolder.get(file);
    let holder: string | undefined = definitions.get(file)?.has('') ? file : undefined;
    if (holder === undefined && (known.has(file) || existsSync(path.join(root, file)))) {
      for (const statement of outlineOf(file).imports) {
        const origin = moduleFile(file, statement.module);
        if (origin === undefined) continue;
        const fixtureFunction = definitions.get(origin)!.get('')!.function;
        const registered = (local: string) => (fixtureFunction === name ? local : name);
        if (statement.names.some((item) => (item.imported === '*' ? !fixtureFunction.startsWith('_') : item.imported === fixtureFunction && registered(item.local) === name))) holder = origin;
      }
    }
    moduleHolder.set(file, holder);
    return holder;
  };
  /**
   * The definition a request in `file` seen from `classes` gets (its file); `outer`: the request is the fixture's own
   * parameter, at the class path `outer` — it asks for the next definition out.
   */
  /** Per file, the classes (by path) and the paths of their bases in the file (a sibling class, else a module-level one). */
  const basesIn = new Map<string, Map<string, string[]>>();
  const basesOf = (file: string): Map<string, string[]> => {
    let found = basesIn.get(file);
    if (found === undefined) {
      found = new Map();
      const classDefinitions = outlineOf(file).definitions.filter((definition) => definition.kind === 'class');
      const paths = new Set(classDefinitions.map((definition) => [...definition.classes, definition.name].join('.')));
      for (const definition of classDefinitions) {
        const bases = definition.bases.flatMap((base) => [[...definition.classes, base].join('.'), base].filter((candidate) => paths.has(candidate)).slice(0, 1));
        found.set([...definition.classes, definition.name].join('.'), bases);
      }
      basesIn.set(file, found);
    }
    return found;
  };
  const resolve = (file: string, classes: readonly string[], outer?: string): string | undefined => {
    const holders: Array<{ file: string; scope: string }> = [];
    // (a class's own fixtures, then its bases' in the same file — depth first —, then the enclosing class's, then the module's)
    const seen = new Set<string>();
    const addClass = (scope: string) => {
      if (seen.has(scope)) return;
      seen.add(scope);
      holders.push({ file, scope });
      for (const base of basesOf(file).get(scope) ?? []) addClass(base);
    };
    for (let depth = classes.length; depth >= 1; depth -= 1) addClass(classes.slice(0, depth).join('.'));
    holders.push({ file, scope: '' });
    for (let dir = path.posix.dirname(file); ; dir = path.posix.dirname(dir)) {
      const conftest = dir === '.' ? 'conftest.py' : `${dir}/conftest.py`;
      if (conftest !== file) holders.push({ file: conftest, scope: '' });
      if (dir === '.') break;
    }
    const from = outer === undefined ? 0 : holders.findIndex((holder) => holder.file === file && holder.scope === outer) + 1;
    for (const holder of holders.slice(from)) {
      if (holder.scope !== '') {
        if (definitions.get(holder.file)?.has(holder.scope)) return holder.file;
        continue;
      }
      const found = heldBy(holder.file);
      if (found !== undefined) return found;
    }
    return undefined;
  };
  const uses: Reference[] = [];
  for (const file of files) {
    if (!file.endsWith('.py')) continue;
    const text = textOf(file);
    // (requests are parameters of tests and fixtures: in a test file, or a module defining fixtures)
    if (!new RegExp(`\\b${name}\\b`, 'u').test(text) || (!testFile.test(file) && !text.includes('fixture'))) continue;
    const { definitions: functions, usefixtures } = outlineOf(file);
    const requests: Array<{ line: number; column: number; classes: string[]; outer?: string }> = [];
    for (const definition of functions) {
      if (!takesFixtures(file, definition)) continue;
      const direct = directlyParametrized(definition);
      for (const parameter of definition.parameters) {
        if (parameter.name !== name || parameter.defaulted || direct.has(name)) continue;
        requests.push({ line: parameter.line, column: parameter.column, classes: definition.classes, outer: fixtureName(definition) === name ? definition.classes.join('.') : undefined });
      }
    }
    if (testFile.test(file)) for (const use of usefixtures) if (use.name === name) requests.push(use);
    const lines = text.split(/\r?\n/);
    for (const request of requests.sort((a, b) => a.line - b.line || a.column - b.column)) {
      const owner = resolve(file, request.classes, request.outer);
      if (owner === undefined || (definedIn !== undefined && owner !== definedIn)) continue;
      uses.push({ file, line: request.line, column: request.column, context: (lines[request.line - 1] ?? '').trim(), kind: 'other', name });
    }
  }
  return uses;
}
