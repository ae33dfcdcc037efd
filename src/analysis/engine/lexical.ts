/**
 * A conservative lexical pre-check before parsing (a cold cache): does a file mention a name only
 * inside comments and plain string literals? Such a file has no reference to it (tree-sitter never
 * makes an identifier there), so {@link findReferences} need not parse it — most of a cold search's
 * files, in a repository that names a symbol in docs, log messages and test strings.
 *
 * The scanner only answers "yes" when it is sure: anything it cannot place for certain — a `/`
 * after `)` or `}` (regex or division?), JSX, an f-string, a keyword before `/`, an unterminated
 * literal, a name inside a template literal or an f-string — makes it answer "no", and the file is
 * parsed as before. test/analysis-engine.test.ts compares its verdicts with the parser's on
 * hand-picked traps in every language.
 */
import type { Lang } from './types.js';

type Range = [start: number, end: number];

const wordChar = (code: number): boolean => (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 95 || code === 36;

/** Keywords after which `/` starts a regular expression (or could): the scanner gives up there. */
const jsKeywords = new Set(['return', 'typeof', 'instanceof', 'in', 'of', 'new', 'delete', 'void', 'throw', 'case', 'do', 'else', 'yield', 'await', 'extends', 'default', 'export', 'as', 'satisfies', 'keyof', 'is']);

/** Comments and plain (non-template) strings and regex literals of a TS/JS file, or undefined when unsure. */
function jsRanges(text: string, jsx: boolean, typescript: boolean): Range[] | undefined {
  const ranges: Range[] = [];
  const n = text.length;
  let i = 0;
  // The last significant code character (or word) before the current position: decides `/`.
  let prev = '';
  let prevWord = '';
  // `${` opens code inside a template; '{' a plain brace. A `}` closing a template's code goes back to its text.
  const braces: Array<'code' | 'template'> = [];
  if (text.startsWith('#!')) {
    const end = text.indexOf('\n');
    ranges.push([0, end < 0 ? n : end]);
    i = end < 0 ? n : end;
  }
  const template = (): boolean => {
    // In template text (not safe: the name there is text, but a scanner mistake would be costly). Ends at ` or ${.
    for (; i < n; i += 1) {
      const c = text[i];
      if (c === '\\') {
        i += 1;
        continue;
      }
      if (c === '`') {
        i += 1;
        prev = '`';
        return true;
      }
      if (c === '$' && text[i + 1] === '{') {
        braces.push('template');
        i += 2;
        prev = '{';
        return true;
      }
    }
    return false;
  };
  while (i < n) {
    const c = text[i]!;
    const code = c.charCodeAt(0);
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i += 1;
      continue;
    }
    if (c === '/' && text[i + 1] === '/') {
      // (JS line terminators end it: LF, CR, U+2028, U+2029 — outside attack X47-01: `// x\rFoo();` calls Foo)
      i = jsLineComment(text, i, ranges);
      continue;
    }
    if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      if (end < 0) return undefined;
      ranges.push([i, end + 2]);
      i = end + 2;
      continue;
    }
    if (c === '"' || c === "'") {
      const start = i;
      for (i += 1; i < n && text[i] !== c; i += 1) {
        if (text[i] === '\\') i += 1;
        else if (text[i] === '\n') return undefined;
      }
      if (i >= n) return undefined;
      i += 1;
      ranges.push([start, i]);
      prev = c;
      prevWord = '';
      continue;
    }
    if (c === '`') {
      i += 1;
      if (!template()) return undefined;
      prevWord = '';
      continue;
    }
    if (c === '/') {
      let regex: boolean;
      if (prev === '') regex = true;
      else if (wordChar(prev.charCodeAt(0))) {
        if (jsKeywords.has(prevWord)) return undefined;
        regex = false;
      } else if (prev === ']') regex = false;
      else if ('(,=:[&|?{;~^%*'.includes(prev) || (prev === '!' && !typescript)) regex = true;
      else return undefined;
      if (!regex) {
        i += 1;
        prev = '/';
        prevWord = '';
        continue;
      }
      const start = i;
      let inClass = false;
      for (i += 1; i < n; i += 1) {
        const r = text[i];
        if (r === '\n') return undefined;
        if (r === '\\') i += 1;
        else if (r === '[') inClass = true;
        else if (r === ']') inClass = false;
        else if (r === '/' && !inClass) break;
      }
      if (i >= n) return undefined;
      i += 1;
      while (i < n && wordChar(text.charCodeAt(i))) i += 1;
      ranges.push([start, i]);
      prev = ')'; // after a regex literal, `/` is division — but `)` makes the scanner give up: safe either way
      prevWord = '';
      continue;
    }
    if (c === '<' && (text.startsWith('<!--', i) || (jsx && /[A-Za-z>/]/.test(text[i + 1] ?? '')))) return undefined;
    if (c === '-' && text.startsWith('-->', i)) return undefined;
    if (c === '{') braces.push('code');
    if (c === '}') {
      if (braces.pop() === 'template') {
        i += 1;
        if (!template()) return undefined;
        prevWord = '';
        continue;
      }
    }
    if (wordChar(code)) {
      const start = i;
      while (i < n && wordChar(text.charCodeAt(i))) i += 1;
      prevWord = text.slice(start, i);
      prev = prevWord[0]!;
      continue;
    }
    if (code > 127) return undefined;
    prev = c;
    prevWord = '';
    i += 1;
  }
  return ranges;
}

/** A comment from `at` to the end of its line, added to `ranges`; returns where scanning goes on. */
function lineComment(text: string, at: number, ranges: Range[]): number {
  const end = text.indexOf('\n', at);
  const stop = end < 0 ? text.length : end;
  ranges.push([at, stop]);
  return stop;
}

/** A JS/TS `//` comment: it ends at any ECMAScript line terminator (LF, CR, U+2028, U+2029), as tree-sitter's grammars end it. */
function jsLineComment(text: string, at: number, ranges: Range[]): number {
  const end = text.slice(at).search(/[\n\r\u2028\u2029]/);
  const stop = end < 0 ? text.length : at + end;
  ranges.push([at, stop]);
  return stop;
}

/** The end of the identifier (or string prefix) at `at`: word characters and any non-ASCII. */
function identifierEnd(text: string, at: number): number {
  let i = at;
  while (i < text.length && (wordChar(text.charCodeAt(i)) || text.charCodeAt(i) > 127)) i += 1;
  return i;
}

/** Go: comments, interpreted and raw strings, runes. */
function goRanges(text: string): Range[] | undefined {
  const ranges: Range[] = [];
  const n = text.length;
  for (let i = 0; i < n; ) {
    const c = text[i];
    if (c === '/' && text[i + 1] === '/') i = lineComment(text, i, ranges);
    else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      if (end < 0) return undefined;
      ranges.push([i, end + 2]);
      i = end + 2;
    } else if (c === '`') {
      const end = text.indexOf('`', i + 1);
      if (end < 0) return undefined;
      ranges.push([i, end + 1]);
      i = end + 1;
    } else if (c === '"' || c === "'") {
      const start = i;
      for (i += 1; i < n && text[i] !== c; i += 1) {
        if (text[i] === '\\') i += 1;
        else if (text[i] === '\n') return undefined;
      }
      if (i >= n) return undefined;
      i += 1;
      ranges.push([start, i]);
    } else i += 1;
  }
  return ranges;
}

/** Python: `#` comments and strings of any prefix but f (an f-string holds code: the scanner gives up). */
function pythonRanges(text: string): Range[] | undefined {
  const ranges: Range[] = [];
  const n = text.length;
  for (let i = 0; i < n; ) {
    const c = text[i]!;
    if (c === '#') {
      i = lineComment(text, i, ranges);
      continue;
    }
    if (wordChar(c.charCodeAt(0)) || c.charCodeAt(0) > 127) {
      const start = i;
      i = identifierEnd(text, i);
      const word = text.slice(start, i);
      if ((text[i] === '"' || text[i] === "'") && /^(?:[rRbBuU]|[rR][bB]|[bB][rR]|[fF][rRbB]?|[rR][fF])$/.test(word)) {
        if (/[fF]/.test(word)) return undefined;
        const end = pythonString(text, i);
        if (end === undefined) return undefined;
        ranges.push([start, end]);
        i = end;
      }
      continue;
    }
    if (c === '"' || c === "'") {
      const end = pythonString(text, i);
      if (end === undefined) return undefined;
      ranges.push([i, end]);
      i = end;
      continue;
    }
    i += 1;
  }
  return ranges;
}

function pythonString(text: string, at: number): number | undefined {
  const quote = text[at]!;
  const triple = text.startsWith(quote.repeat(3), at);
  const close = triple ? quote.repeat(3) : quote;
  for (let i = at + close.length; i < text.length; i += 1) {
    if (text[i] === '\\') {
      i += 1;
      continue;
    }
    if (!triple && text[i] === '\n') return undefined;
    if (text.startsWith(close, i)) return i + close.length;
  }
  return undefined;
}

/** Rust: line/doc comments, nested block comments, (byte, C, raw) strings, char literals (not lifetimes). */
function rustRanges(text: string): Range[] | undefined {
  const ranges: Range[] = [];
  const n = text.length;
  for (let i = 0; i < n; ) {
    const c = text[i]!;
    if (c === '/' && text[i + 1] === '/') {
      i = lineComment(text, i, ranges);
      continue;
    }
    if (c === '/' && text[i + 1] === '*') {
      let depth = 0;
      const start = i;
      for (; i < n; ) {
        if (text[i] === '/' && text[i + 1] === '*') {
          depth += 1;
          i += 2;
        } else if (text[i] === '*' && text[i + 1] === '/') {
          depth -= 1;
          i += 2;
          if (depth === 0) break;
        } else i += 1;
      }
      if (depth !== 0) return undefined;
      ranges.push([start, i]);
      continue;
    }
    if (wordChar(c.charCodeAt(0)) || c.charCodeAt(0) > 127) {
      const start = i;
      i = identifierEnd(text, i);
      const word = text.slice(start, i);
      if (/^(?:r|br|cr)$/.test(word) && (text[i] === '"' || text[i] === '#')) {
        let hashes = 0;
        while (text[i + hashes] === '#') hashes += 1;
        if (text[i + hashes] !== '"') continue; // r#ident: a raw identifier
        const close = `"${'#'.repeat(hashes)}`;
        const end = text.indexOf(close, i + hashes + 1);
        if (end < 0) return undefined;
        i = end + close.length;
        ranges.push([start, i]);
      } else if (/^(?:b|c)$/.test(word) && text[i] === '"') {
        const end = rustString(text, i);
        if (end === undefined) return undefined;
        ranges.push([start, end]);
        i = end;
      } else if (word === 'b' && text[i] === "'") {
        const end = rustChar(text, i);
        if (end === undefined) return undefined;
        ranges.push([start, end]);
        i = end;
      }
      continue;
    }
    if (c === '"') {
      const end = rustString(text, i);
      if (end === undefined) return undefined;
      ranges.push([i, end]);
      i = end;
      continue;
    }
    if (c === "'") {
      const end = rustChar(text, i);
      if (end !== undefined) {
        ranges.push([i, end]);
        i = end;
      } else i += 1; // a lifetime or label: `'a`
      continue;
    }
    i += 1;
  }
  return ranges;
}

function rustString(text: string, at: number): number | undefined {
  for (let i = at + 1; i < text.length; i += 1) {
    if (text[i] === '\\') i += 1;
    else if (text[i] === '"') return i + 1;
  }
  return undefined;
}

/** The end of a char literal at `at` (`'x'`, `'\n'`, `'\u{1F600}'`, one code point), or undefined for a lifetime. */
function rustChar(text: string, at: number): number | undefined {
  if (text[at + 1] === '\\') {
    const end = text.indexOf("'", at + 3);
    return end < 0 || end - at > 12 || text.slice(at, end).includes('\n') ? undefined : end + 1;
  }
  const point = text.codePointAt(at + 1);
  if (point === undefined || point === 10) return undefined;
  const width = point > 0xffff ? 2 : 1;
  return text[at + 1 + width] === "'" ? at + 2 + width : undefined;
}

/** The comment/string ranges of `text` in `lang`, or undefined where the scanner is unsure. */
export function literalRanges(lang: Lang, text: string, file: string): Range[] | undefined {
  switch (lang) {
    case 'go':
      return goRanges(text);
    case 'python':
      return pythonRanges(text);
    case 'rust':
      return rustRanges(text);
    case 'typescript':
      return jsRanges(text, false, true);
    case 'tsx':
      return jsRanges(text, true, true);
    case 'javascript':
      return jsRanges(text, true, file.endsWith('.ts'));
  }
}

/**
 * True when every occurrence of each of `names` in `text` (as a substring: longer identifiers
 * included) lies inside a comment or a plain string literal — so parsing cannot find a reference.
 * False when any occurrence is in code, there is none at all, or the scanner is unsure.
 */
export function onlyInLiterals(lang: Lang, text: string, file: string, names: readonly string[]): boolean {
  const offsets: Array<[number, number]> = [];
  for (const name of names) {
    if (name === '') return false;
    for (let at = text.indexOf(name); at >= 0; at = text.indexOf(name, at + 1)) offsets.push([at, at + name.length]);
  }
  if (offsets.length === 0) return false;
  const ranges = literalRanges(lang, text, file);
  if (!ranges) return false;
  offsets.sort((a, b) => a[0] - b[0]);
  let r = 0;
  for (const [start, end] of offsets) {
    while (r < ranges.length && ranges[r]![1] <= start) r += 1;
    const range = ranges[r];
    if (!range || range[0] > start || range[1] < end) return false;
  }
  return true;
}
