/**
 * pytest fixtures are used by parameter name: `def test_checkout(db):` asks pytest for the fixture `db` defined with
 * `@pytest.fixture` in the test module or a `conftest.py` of its directory or one above. No import names it, and a
 * parameter is a binding to every syntax tree — so the engine finds no use of a fixture (outside round X54-09: renaming
 * one broke every test that requested it, and check-callers / detect-cascades listed none).
 *
 * Here: the definitions of a name that are fixtures (a `def` whose decorators include `@pytest.fixture` or
 * `@fixture`, without a `name=` giving it another name), and their uses — a parameter of that name of a function in a
 * Python test file (`test_*.py`, `*_test.py`, `conftest.py`) the fixture reaches (its own module; for a conftest.py,
 * its directory and below), and `@pytest.mark.usefixtures("name")` — each attributed to the nearest definition, as
 * pytest overrides a fixture by a closer one. Read from the files' text (tokens, brackets and strings counted), not
 * from a syntax tree: the engine's trees do not keep parameters.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Reference } from './engine/types.js';

const testFile = /(?:^|\/)(?:test_[^/]*\.py|[^/]*_test\.py|conftest\.py)$/;

/** The lines `name` is defined on as a fixture in `text` (1-based), none when it is not one there. */
export function fixtureDefinitionLines(text: string, name: string): number[] {
  const lines = text.split(/\r?\n/);
  const found: number[] = [];
  const def = new RegExp(`^\\s*(?:async\\s+)?def\\s+${name}\\s*\\(`);
  for (let index = 0; index < lines.length; index += 1) {
    if (!def.test(lines[index]!)) continue;
    // The decorators directly above (one per line, or spread over lines: read back to the first that is none).
    let decorators = '';
    for (let above = index - 1; above >= 0 && above >= index - 30; above -= 1) {
      const line = lines[above]!;
      if (/^\s*(?:#.*)?$/.test(line)) break;
      decorators = `${line}\n${decorators}`;
      if (/^\s*@/.test(line) && !/^\s*@/.test(lines[above - 1] ?? '') && !/[(,]\s*$/.test(lines[above - 1] ?? '')) break;
    }
    if (!/@\s*(?:pytest\s*\.\s*)?fixture\b/.test(decorators)) continue;
    const renamed = /\bname\s*=\s*(['"])([^'"]*)\1/.exec(decorators);
    if (renamed && renamed[2] !== name) continue;
    found.push(index + 1);
  }
  return found;
}

/** Where `name` is requested in `text`: parameters of functions, and `usefixtures("name")` strings (1-based line, column). */
export function fixtureRequests(text: string, name: string): Array<{ line: number; column: number }> {
  const found: Array<{ line: number; column: number }> = [];
  const starts = [0];
  for (let at = text.indexOf('\n'); at >= 0; at = text.indexOf('\n', at + 1)) starts.push(at + 1);
  const position = (offset: number) => {
    let low = 0;
    for (let high = starts.length - 1; low < high; ) {
      const middle = (low + high + 1) >> 1;
      if (starts[middle]! <= offset) low = middle;
      else high = middle - 1;
    }
    return { line: low + 1, column: offset - starts[low]! + 1 };
  };
  for (const match of text.matchAll(/\bdef\s+[\p{L}_][\p{L}\p{N}_]*\s*(?:\[[^\]]*\]\s*)?\(/gu)) {
    // The parameter list up to its closing parenthesis: nested brackets and strings skipped, top-level commas split it.
    let depth = 0;
    let segmentStart = match.index + match[0].length;
    for (let at = segmentStart; at < text.length; at += 1) {
      const char = text[at]!;
      if (char === '"' || char === "'") {
        const close = text.indexOf(char, at + 1);
        if (close < 0) break;
        at = close;
        continue;
      }
      if (char === '#') {
        const end = text.indexOf('\n', at);
        at = end < 0 ? text.length : end;
        continue;
      }
      if (char === '(' || char === '[' || char === '{') depth += 1;
      else if ((char === ')' || char === ']' || char === '}') && depth > 0) depth -= 1;
      else if ((char === ',' || char === ')') && depth === 0) {
        const segment = text.slice(segmentStart, at);
        const parameter = /^\s*([\p{L}_][\p{L}\p{N}_]*)/u.exec(segment);
        if (parameter && parameter[1] === name) found.push(position(segmentStart + segment.indexOf(name)));
        segmentStart = at + 1;
        if (char === ')') break;
      }
    }
  }
  for (const match of text.matchAll(/\busefixtures\s*\(([^)]*)\)/g)) {
    for (const literal of match[1]!.matchAll(/(['"])([^'"]*)\1/g)) {
      if (literal[2] === name) found.push(position(match.index + match[0].indexOf(literal[0]) + 1));
    }
  }
  return found.sort((a, b) => a.line - b.line || a.column - b.column);
}

/**
 * The uses of the fixtures named `name` among `files` (repo-relative Python files of the repository at `root` holding
 * the name; with `definedIn`: of that file's fixture only — none when it defines no fixture of that name).
 */
export function fixtureUsesIn(root: string, files: readonly string[], name: string, definedIn?: string): Reference[] {
  if (!/^[\p{L}_][\p{L}\p{N}_]*$/u.test(name) || (definedIn !== undefined && !definedIn.endsWith('.py'))) return [];
  const texts = new Map<string, string>();
  const textOf = (file: string): string => {
    let text = texts.get(file);
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
  // Every definition of the fixture (an override in a closer conftest or module takes its subtree from the outer one).
  const definers = files.filter((file) => fixtureDefinitionLines(textOf(file), name).length > 0);
  if (definers.length === 0 || (definedIn !== undefined && !definers.includes(definedIn))) return [];
  /** The definition a request in `file` gets: its own module's, else the nearest conftest.py above it (`outer`: above `file`'s own). */
  const nearest = (file: string, outer = false): string | undefined => {
    if (!outer && definers.includes(file)) return file;
    let dir = path.posix.dirname(file);
    // (a conftest.py overriding a fixture asks, with `def db(db):`, for the one above its own directory)
    if (outer && path.posix.basename(file) === 'conftest.py') {
      if (dir === '.') return undefined;
      dir = path.posix.dirname(dir);
    }
    for (; ; dir = path.posix.dirname(dir)) {
      const conftest = dir === '.' ? 'conftest.py' : `${dir}/conftest.py`;
      if (conftest !== file && definers.includes(conftest)) return conftest;
      if (dir === '.') return undefined;
    }
  };
  const uses: Reference[] = [];
  for (const file of files) {
    if (!testFile.test(file) && !definers.includes(file)) continue;
    const text = textOf(file);
    const lines = text.split(/\r?\n/);
    const definitionLines = new Set(fixtureDefinitionLines(text, name));
    for (const { line, column } of fixtureRequests(text, name)) {
      const owner = nearest(file, definitionLines.has(line));
      if (owner === undefined || (definedIn !== undefined && owner !== definedIn)) continue;
      uses.push({ file, line, column, context: (lines[line - 1] ?? '').trim(), kind: 'other', name });
    }
  }
  return uses;
}
