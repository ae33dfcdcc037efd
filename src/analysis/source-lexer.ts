/**
 * A small per-language lexer for code analysis (stubs E20, symbols E41/E25, references, wiring
 * E35). It does not parse: it finds comments and string literals so that the analyses can match
 * their patterns against *code only* (a `TODO` inside a string or a `NewThing` inside a comment is
 * not code) and read comment text and string contents separately.
 *
 * The result keeps offsets: `code` has the same length as the text, comments are blanked
 * (spaces), string literal contents are blanked with their delimiters kept, newlines always kept.
 * So an offset or a line number found in `code` is the same in the text.
 */

/** The languages the analyses distinguish. The first five are the code families; the rest only matter for comment markers. */
export type SourceLanguage =
  | 'typescript'
  | 'javascript'
  | 'go'
  | 'python'
  | 'rust'
  /** `//` and `/* *\/` comments, `"`/`'` strings (C, C++, Java, Kotlin, C#, Swift, SCSS, …). */
  | 'c-like'
  /** `/* *\/` comments only (CSS). */
  | 'css'
  /** `#` comments (shell, Ruby, YAML, TOML, Makefile, Dockerfile, …). */
  | 'hash'
  /** `--` comments (SQL, Lua, Haskell). */
  | 'dash'
  /** `<!-- -->` comments (HTML, XML, SVG, Vue templates). */
  | 'markup'
  /** Prose or unknown: the whole text counts as comment text. */
  | 'text';

/** The four language families the symbol analyses support. */
export type CodeFamily = 'typescript' | 'javascript' | 'go' | 'python' | 'rust';

const extensionLanguages: ReadonlyArray<[RegExp, SourceLanguage]> = [
  [/\.(ts|tsx|mts|cts)$/i, 'typescript'],
  [/\.(js|jsx|mjs|cjs)$/i, 'javascript'],
  [/\.go$/i, 'go'],
  [/\.(py|pyi|pyw)$/i, 'python'],
  [/\.rs$/i, 'rust'],
  [/\.(c|h|cc|cpp|cxx|hh|hpp|hxx|m|mm|java|kt|kts|scala|sc|swift|cs|fs|dart|groovy|gradle|proto|zig|sol|php|scss|less|jsonc|json5)$/i, 'c-like'],
  [/\.css$/i, 'css'],
  [/\.(sh|bash|zsh|fish|ksh|rb|rake|gemspec|pl|pm|r|yaml|yml|toml|cfg|conf|ini|properties|mk|cmake|nix|tf|tfvars|ps1|psm1|dockerfile|env|gitignore|editorconfig|ex|exs|jl|cr|nim|coffee|tcl)$/i, 'hash'],
  [/\.(sql|lua|hs|lhs|elm|ada|adb|ads|vhd|vhdl)$/i, 'dash'],
  [/\.(html|htm|xhtml|xml|svg|vue|svelte|xsl|xslt|plist|csproj|props|targets)$/i, 'markup'],
];

const hashFileNames = /(^|\/)(Makefile|GNUmakefile|makefile|Dockerfile|Containerfile|Rakefile|Gemfile|Vagrantfile|Procfile|CODEOWNERS|BUILD|WORKSPACE|Justfile|justfile)(\.[\w-]+)?$/;

/** The language of a file, from its name. */
export function languageOf(filePath: string): SourceLanguage {
  for (const [pattern, language] of extensionLanguages) if (pattern.test(filePath)) return language;
  if (hashFileNames.test(filePath)) return 'hash';
  return 'text';
}

/** The code family of a file (TS/JS/Go/Python/Rust), or undefined for anything else. */
export function codeFamilyOf(filePath: string): CodeFamily | undefined {
  const language = languageOf(filePath);
  return language === 'typescript' || language === 'javascript' || language === 'go' || language === 'python' || language === 'rust' ? language : undefined;
}

/**
 * True for test files of the four families: Go `_test.go`; TS/JS `*.test.*`, `*.spec.*`,
 * Cypress `*.cy.*`, Angular `*.e2e-spec.*`, `__tests__/`, `__mocks__/`; Python `test_*.py`, `*_test.py`, `conftest.py`,
 * Django's `tests.py` and `tests_*.py`; and anything under a
 * `test/`, `tests/`, `testdata/`, `e2e/` or `benches/` directory.
 */
export function isTestFile(filePath: string): boolean {
  const normalized = filePath.replace(/\\/g, '/');
  const base = normalized.slice(normalized.lastIndexOf('/') + 1);
  if (/_test\.go$/.test(base)) return true;
  if (/\.(test|spec|cy|e2e-spec)\.[cm]?[jt]sx?$/i.test(base)) return true;
  if (/^test_.*\.pyi?$/.test(base) || /_test\.pyi?$/.test(base) || base === 'conftest.py' || /^tests(_.*)?\.py$/.test(base)) return true;
  return /(^|\/)(test|tests|testdata|__tests__|__mocks__|e2e|benches)\//.test(normalized);
}

/** A comment: `[start, end)` offsets into the text, delimiters included. */
export interface CommentSpan {
  start: number;
  end: number;
}

/** A string literal: `[start, end)` with delimiters and prefix, and `[contentStart, contentEnd)` between the delimiters. */
export interface StringLiteral {
  start: number;
  end: number;
  contentStart: number;
  contentEnd: number;
}

/** A lexed source file; see the module comment. */
export interface LexedSource {
  readonly path: string;
  readonly language: SourceLanguage;
  readonly text: string;
  /** The text with comments blanked and string contents blanked (delimiters kept); same length and lines. */
  readonly code: string;
  /** Comments in text order. */
  readonly comments: readonly CommentSpan[];
  /** String literals in text order (regular-expression literals are blanked but not listed). */
  readonly strings: readonly StringLiteral[];
  /** Offset of the first character of each line (index 0 = line 1). */
  readonly lineStarts: readonly number[];
}

/** 1-based line of an offset. */
export function lineAt(source: LexedSource, offset: number): number {
  const starts = source.lineStarts;
  let low = 0;
  let high = starts.length - 1;
  while (low < high) {
    const middle = (low + high + 1) >> 1;
    if (starts[middle]! <= offset) low = middle;
    else high = middle - 1;
  }
  return low + 1;
}

/** The text of a 1-based line (without its line break). */
export function lineTextOf(text: string, lineStarts: readonly number[], line: number): string {
  const start = lineStarts[line - 1] ?? text.length;
  const next = lineStarts[line];
  const end = next === undefined ? text.length : next - 1;
  return text.slice(start, end).replace(/\r$/, '');
}

/** The string literal that starts exactly at `offset`, if any (binary search). */
export function stringAt(source: LexedSource, offset: number): StringLiteral | undefined {
  const strings = source.strings;
  let low = 0;
  let high = strings.length - 1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    const start = strings[middle]!.start;
    if (start === offset) return strings[middle];
    if (start < offset) low = middle + 1;
    else high = middle - 1;
  }
  return undefined;
}

/** The raw content of a string literal (escapes not processed). */
export function stringContent(source: LexedSource, literal: StringLiteral): string {
  return source.text.slice(literal.contentStart, literal.contentEnd);
}

/** True when the text looks binary (a NUL in its first 8 000 characters). */
export function isBinaryText(text: string): boolean {
  return text.slice(0, 8000).includes('\0');
}

const enum Char {
  Tab = 9,
  LineFeed = 10,
  CarriageReturn = 13,
  Space = 32,
  Bang = 33,
  DoubleQuote = 34,
  Hash = 35,
  Dollar = 36,
  SingleQuote = 39,
  OpenParen = 40,
  CloseParen = 41,
  Star = 42,
  Dash = 45,
  Dot = 46,
  Slash = 47,
  LessThan = 60,
  GreaterThan = 62,
  OpenBracket = 91,
  Backslash = 92,
  CloseBracket = 93,
  Underscore = 95,
  Backtick = 96,
  OpenBrace = 123,
  CloseBrace = 125,
}

function isIdentifierChar(code: number): boolean {
  return (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === Char.Underscore || code === Char.Dollar || code > 127;
}

function isWhitespace(code: number): boolean {
  return code === Char.Space || code === Char.Tab || code === Char.LineFeed || code === Char.CarriageReturn || code === 11 || code === 12;
}

/** Keywords after which a `/` starts a regular expression in JS/TS. */
const regexKeywords = new Set(['return', 'typeof', 'instanceof', 'in', 'of', 'new', 'delete', 'void', 'throw', 'case', 'do', 'else', 'yield', 'await']);

/** Collects comments, strings and blanked ranges while a language lexer walks the text. */
class Scanner {
  readonly comments: CommentSpan[] = [];
  readonly strings: StringLiteral[] = [];
  readonly blanks: Array<[number, number]> = [];
  readonly length: number;

  constructor(readonly text: string) {
    this.length = text.length;
  }

  addComment(start: number, end: number): void {
    this.comments.push({ start, end });
    this.blanks.push([start, end]);
  }

  addString(start: number, end: number, contentStart: number, contentEnd: number): void {
    this.strings.push({ start, end, contentStart, contentEnd });
    if (contentEnd > contentStart) this.blanks.push([contentStart, contentEnd]);
  }

  endOfLine(from: number): number {
    const found = this.text.indexOf('\n', from);
    return found === -1 ? this.length : found;
  }

  /** Scans a one-line quoted string from the opening quote; returns the closing offset or -1 when the line ends first. */
  closeOnLine(open: number, quote: number, escapes: boolean): number {
    const text = this.text;
    for (let index = open + 1; index < this.length; index += 1) {
      const code = text.charCodeAt(index);
      if (code === Char.LineFeed) return -1;
      if (escapes && code === Char.Backslash) {
        if (text.charCodeAt(index + 1) === Char.CarriageReturn && text.charCodeAt(index + 2) === Char.LineFeed) index += 2;
        else index += 1;
        continue;
      }
      if (code === quote) return index;
    }
    return -1;
  }

  /** Scans a quoted string that may span lines; returns the closing offset or the end of the text. */
  closeAnywhere(open: number, quote: number, escapes: boolean): number {
    const text = this.text;
    for (let index = open + 1; index < this.length; index += 1) {
      const code = text.charCodeAt(index);
      if (escapes && code === Char.Backslash) {
        index += 1;
        continue;
      }
      if (code === quote) return index;
    }
    return this.length;
  }

  /** A one-line quoted string: recorded when closed on its line; otherwise not a string (returns open + 1). */
  oneLineString(open: number, quote: number, escapes: boolean, prefixStart = open): number {
    const close = this.closeOnLine(open, quote, escapes);
    if (close === -1) return open + 1;
    this.addString(prefixStart, close + 1, open + 1, close);
    return close + 1;
  }
}

/** Lexes a source text; the language comes from the path unless given. Never throws. */
export function lexSource(filePath: string, text: string, language: SourceLanguage = languageOf(filePath)): LexedSource {
  const scanner = new Scanner(text);
  switch (language) {
    case 'typescript':
    case 'javascript':
      lexJavaScript(scanner);
      break;
    case 'go':
      lexCLike(scanner, { go: true });
      break;
    case 'rust':
      lexRust(scanner);
      break;
    case 'c-like':
      lexCLike(scanner, { go: false });
      break;
    case 'css':
      lexBlockOnly(scanner, '/*', '*/');
      break;
    case 'python':
      lexPython(scanner);
      break;
    case 'hash':
      lexHash(scanner);
      break;
    case 'dash':
      lexDash(scanner);
      break;
    case 'markup':
      lexBlockOnly(scanner, '<!--', '-->');
      break;
    case 'text':
      // Prose: all comment text, nothing blanked (identifiers still count as tokens).
      if (text.length > 0) scanner.comments.push({ start: 0, end: text.length });
      break;
  }
  scanner.strings.sort((left, right) => left.start - right.start);
  return {
    path: filePath,
    language,
    text,
    code: blankRanges(text, scanner.blanks),
    comments: scanner.comments,
    strings: scanner.strings,
    lineStarts: computeLineStarts(text),
  };
}

function lexJavaScript(scanner: Scanner): void {
  const { text, length, blanks, strings } = scanner;
  // Template literals nest: `a ${ b + `c ${d}` } e`. Each entry is the brace depth at which a
  // `${` was opened; the matching `}` resumes the template.
  const templateStack: number[] = [];
  let braceDepth = 0;
  let lastSignificant = -1; // char code of the last code character, -1 at start
  let lastWord = '';
  let index = 0;

  const scanTemplate = (from: number): number => {
    // `from` is just after the backtick or the `}` closing an expression.
    let cursor = from;
    while (cursor < length) {
      const code = text.charCodeAt(cursor);
      if (code === Char.Backslash) {
        cursor += 2;
        continue;
      }
      if (code === Char.Backtick) {
        if (cursor > from) blanks.push([from, cursor]);
        closeTemplate(cursor);
        return cursor + 1;
      }
      if (code === Char.Dollar && text.charCodeAt(cursor + 1) === Char.OpenBrace) {
        if (cursor > from) blanks.push([from, cursor]);
        templateStack.push(braceDepth);
        braceDepth += 1;
        return cursor + 2;
      }
      cursor += 1;
    }
    if (length > from) blanks.push([from, length]);
    closeTemplate(length);
    return length;
  };
  // Whole template literal spans are recorded when the closing backtick is reached.
  const openTemplates: number[] = [];
  const closeTemplate = (closeOffset: number) => {
    const start = openTemplates.pop();
    if (start === undefined) return;
    strings.push({ start, end: Math.min(closeOffset + 1, length), contentStart: start + 1, contentEnd: closeOffset });
  };

  while (index < length) {
    const code = text.charCodeAt(index);
    const next = text.charCodeAt(index + 1);
    if (code === Char.Slash && next === Char.Slash) {
      const end = scanner.endOfLine(index);
      scanner.addComment(index, end);
      index = end;
      continue;
    }
    if (code === Char.Slash && next === Char.Star) {
      const close = text.indexOf('*/', index + 2);
      const end = close === -1 ? length : close + 2;
      scanner.addComment(index, end);
      index = end;
      continue;
    }
    if (code === Char.DoubleQuote || code === Char.SingleQuote) {
      index = scanner.oneLineString(index, code, true);
      lastSignificant = code;
      lastWord = '';
      continue;
    }
    if (code === Char.Backtick) {
      openTemplates.push(index);
      index = scanTemplate(index + 1);
      lastSignificant = Char.Backtick;
      lastWord = '';
      continue;
    }
    if (code === Char.OpenBrace) {
      braceDepth += 1;
    } else if (code === Char.CloseBrace) {
      braceDepth -= 1;
      if (templateStack.length > 0 && templateStack[templateStack.length - 1] === braceDepth) {
        templateStack.pop();
        index = scanTemplate(index + 1);
        lastSignificant = Char.Backtick;
        lastWord = '';
        continue;
      }
    } else if (code === Char.Slash && startsRegex(lastSignificant, lastWord)) {
      const end = scanRegex(scanner, index);
      if (end !== -1) {
        if (end - 1 > index + 1) blanks.push([index + 1, end - 1]);
        index = end;
        // Flags.
        while (index < length && isIdentifierChar(text.charCodeAt(index))) index += 1;
        lastSignificant = Char.Slash;
        lastWord = '';
        continue;
      }
    }
    if (isIdentifierChar(code)) {
      const start = index;
      while (index < length && isIdentifierChar(text.charCodeAt(index))) index += 1;
      lastWord = text.slice(start, index);
      lastSignificant = text.charCodeAt(index - 1);
      continue;
    }
    if (!isWhitespace(code)) {
      lastSignificant = code;
      lastWord = '';
    }
    index += 1;
  }
}

function startsRegex(lastSignificant: number, lastWord: string): boolean {
  if (lastSignificant === -1) return true;
  if (lastWord !== '') return regexKeywords.has(lastWord);
  // After a value (`)`, `]`, a literal) a slash divides; after `<` it closes a JSX tag.
  if (lastSignificant === Char.CloseParen || lastSignificant === Char.CloseBracket || lastSignificant === Char.LessThan) return false;
  if (lastSignificant === Char.DoubleQuote || lastSignificant === Char.SingleQuote || lastSignificant === Char.Backtick || lastSignificant === Char.Slash) return false;
  if (isIdentifierChar(lastSignificant)) return false;
  if (lastSignificant === Char.CloseBrace) return false;
  return true;
}

/** Returns the offset after the closing `/` of a regex literal starting at `open`, or -1 when it is not one. */
function scanRegex(scanner: Scanner, open: number): number {
  const { text, length } = scanner;
  let inClass = false;
  for (let index = open + 1; index < length; index += 1) {
    const code = text.charCodeAt(index);
    if (code === Char.LineFeed) return -1;
    if (code === Char.Backslash) {
      index += 1;
      continue;
    }
    if (code === Char.OpenBracket) inClass = true;
    else if (code === Char.CloseBracket) inClass = false;
    else if (code === Char.Slash && !inClass) return index === open + 1 ? -1 : index + 1;
  }
  return -1;
}

function lexCLike(scanner: Scanner, options: { go: boolean }): void {
  const { text, length } = scanner;
  let index = 0;
  while (index < length) {
    const code = text.charCodeAt(index);
    const next = text.charCodeAt(index + 1);
    if (code === Char.Slash && next === Char.Slash) {
      const end = scanner.endOfLine(index);
      scanner.addComment(index, end);
      index = end;
      continue;
    }
    if (code === Char.Slash && next === Char.Star) {
      const close = text.indexOf('*/', index + 2);
      const end = close === -1 ? length : close + 2;
      scanner.addComment(index, end);
      index = end;
      continue;
    }
    if (code === Char.DoubleQuote) {
      index = scanner.oneLineString(index, code, true);
      continue;
    }
    if (code === Char.SingleQuote) {
      // Go runes / C chars: one line. (Java/Kotlin text blocks `"""` are rare enough to ignore.)
      index = scanner.oneLineString(index, code, true);
      continue;
    }
    if (options.go && code === Char.Backtick) {
      const close = scanner.closeAnywhere(index, Char.Backtick, false);
      scanner.addString(index, Math.min(close + 1, length), index + 1, close);
      index = close + 1;
      continue;
    }
    if (isIdentifierChar(code)) {
      while (index < length && isIdentifierChar(text.charCodeAt(index))) index += 1;
      continue;
    }
    index += 1;
  }
}

function lexRust(scanner: Scanner): void {
  const { text, length } = scanner;
  let index = 0;
  while (index < length) {
    const code = text.charCodeAt(index);
    const next = text.charCodeAt(index + 1);
    if (code === Char.Slash && next === Char.Slash) {
      const end = scanner.endOfLine(index);
      scanner.addComment(index, end);
      index = end;
      continue;
    }
    if (code === Char.Slash && next === Char.Star) {
      // Rust block comments nest.
      let depth = 0;
      let cursor = index;
      while (cursor < length) {
        if (text.startsWith('/*', cursor)) {
          depth += 1;
          cursor += 2;
        } else if (text.startsWith('*/', cursor)) {
          depth -= 1;
          cursor += 2;
          if (depth === 0) break;
        } else {
          cursor += 1;
        }
      }
      scanner.addComment(index, cursor);
      index = cursor;
      continue;
    }
    if (isIdentifierChar(code)) {
      // Raw strings r"…", r#"…"#, byte strings b"…", br#"…"#, raw identifiers r#name.
      const start = index;
      let cursor = index;
      while (cursor < length && isIdentifierChar(text.charCodeAt(cursor))) cursor += 1;
      const word = text.slice(start, cursor);
      if ((word === 'r' || word === 'br' || word === 'cr') && (text.charCodeAt(cursor) === Char.Hash || text.charCodeAt(cursor) === Char.DoubleQuote)) {
        let hashes = 0;
        while (text.charCodeAt(cursor + hashes) === Char.Hash) hashes += 1;
        if (text.charCodeAt(cursor + hashes) === Char.DoubleQuote) {
          const open = cursor + hashes;
          const terminator = `"${'#'.repeat(hashes)}`;
          const close = text.indexOf(terminator, open + 1);
          const contentEnd = close === -1 ? length : close;
          const end = close === -1 ? length : close + terminator.length;
          scanner.addString(start, end, open + 1, contentEnd);
          index = end;
          continue;
        }
      }
      if ((word === 'b' || word === 'c') && text.charCodeAt(cursor) === Char.DoubleQuote) {
        const close = scanner.closeAnywhere(cursor, Char.DoubleQuote, true);
        scanner.addString(start, Math.min(close + 1, length), cursor + 1, close);
        index = close + 1;
        continue;
      }
      if (word === 'b' && text.charCodeAt(cursor) === Char.SingleQuote) {
        index = scanner.oneLineString(cursor, Char.SingleQuote, true, start);
        continue;
      }
      index = cursor;
      continue;
    }
    if (code === Char.DoubleQuote) {
      const close = scanner.closeAnywhere(index, Char.DoubleQuote, true);
      scanner.addString(index, Math.min(close + 1, length), index + 1, close);
      index = close + 1;
      continue;
    }
    if (code === Char.SingleQuote) {
      // A char literal ('a', '\n', '\u{1F600}') or a lifetime ('a, 'static).
      if (next === Char.Backslash) {
        index = scanner.oneLineString(index, Char.SingleQuote, true);
        continue;
      }
      const width = (text.codePointAt(index + 1) ?? 0) > 0xffff ? 2 : 1;
      if (index + 1 < length && next !== Char.LineFeed && text.charCodeAt(index + 1 + width) === Char.SingleQuote) {
        scanner.addString(index, index + 2 + width, index + 1, index + 1 + width);
        index += 2 + width;
        continue;
      }
      index += 1;
      continue;
    }
    index += 1;
  }
}

function lexPython(scanner: Scanner): void {
  const { text, length } = scanner;
  let index = 0;
  while (index < length) {
    const code = text.charCodeAt(index);
    if (code === Char.Hash) {
      const end = scanner.endOfLine(index);
      scanner.addComment(index, end);
      index = end;
      continue;
    }
    if (isIdentifierChar(code)) {
      const start = index;
      let cursor = index;
      while (cursor < length && isIdentifierChar(text.charCodeAt(cursor))) cursor += 1;
      const quote = text.charCodeAt(cursor);
      if ((quote === Char.DoubleQuote || quote === Char.SingleQuote) && cursor - start <= 3 && /^[rRbBuUfFtT]{1,3}$/.test(text.slice(start, cursor))) {
        index = pythonString(scanner, start, cursor);
        continue;
      }
      index = cursor;
      continue;
    }
    if (code === Char.DoubleQuote || code === Char.SingleQuote) {
      index = pythonString(scanner, index, index);
      continue;
    }
    index += 1;
  }
}

function pythonString(scanner: Scanner, prefixStart: number, open: number): number {
  const { text, length } = scanner;
  const quote = text.charCodeAt(open);
  const triple = text.charCodeAt(open + 1) === quote && text.charCodeAt(open + 2) === quote;
  if (triple) {
    const delimiter = text.slice(open, open + 3);
    let cursor = open + 3;
    while (cursor < length) {
      const code = text.charCodeAt(cursor);
      if (code === Char.Backslash) {
        cursor += 2;
        continue;
      }
      if (text.startsWith(delimiter, cursor)) break;
      cursor += 1;
    }
    const contentEnd = Math.min(cursor, length);
    const end = Math.min(cursor + 3, length);
    scanner.addString(prefixStart, end, open + 3, contentEnd);
    return end;
  }
  // Single-quoted: ends on its line (a backslash-newline continues it).
  for (let cursor = open + 1; cursor < length; cursor += 1) {
    const code = text.charCodeAt(cursor);
    if (code === Char.Backslash) {
      cursor += text.charCodeAt(cursor + 1) === Char.CarriageReturn ? 2 : 1;
      continue;
    }
    if (code === Char.LineFeed) {
      // Unterminated: not a string after all (keeps the damage to this line).
      return open + 1;
    }
    if (code === quote) {
      scanner.addString(prefixStart, cursor + 1, open + 1, cursor);
      return cursor + 1;
    }
  }
  return open + 1;
}

function lexHash(scanner: Scanner): void {
  const { text, length } = scanner;
  let index = 0;
  while (index < length) {
    const code = text.charCodeAt(index);
    const previous = index === 0 ? Char.LineFeed : text.charCodeAt(index - 1);
    if (code === Char.Hash && (isWhitespace(previous) || previous === Char.Backtick)) {
      const end = scanner.endOfLine(index);
      scanner.addComment(index, end);
      index = end;
      continue;
    }
    if ((code === Char.DoubleQuote || code === Char.SingleQuote) && !isIdentifierChar(previous)) {
      index = scanner.oneLineString(index, code, code === Char.DoubleQuote);
      continue;
    }
    index += 1;
  }
}

function lexDash(scanner: Scanner): void {
  const { text, length } = scanner;
  let index = 0;
  while (index < length) {
    const code = text.charCodeAt(index);
    if (code === Char.Dash && text.charCodeAt(index + 1) === Char.Dash) {
      const end = scanner.endOfLine(index);
      scanner.addComment(index, end);
      index = end;
      continue;
    }
    if (code === Char.Slash && text.charCodeAt(index + 1) === Char.Star) {
      const close = text.indexOf('*/', index + 2);
      const end = close === -1 ? length : close + 2;
      scanner.addComment(index, end);
      index = end;
      continue;
    }
    if (code === Char.SingleQuote || code === Char.DoubleQuote) {
      index = scanner.oneLineString(index, code, false);
      continue;
    }
    index += 1;
  }
}

function lexBlockOnly(scanner: Scanner, open: string, close: string): void {
  const { text, length } = scanner;
  let index = text.indexOf(open);
  while (index !== -1) {
    const closeAt = text.indexOf(close, index + open.length);
    const end = closeAt === -1 ? length : closeAt + close.length;
    scanner.addComment(index, end);
    index = text.indexOf(open, end);
  }
}


function computeLineStarts(text: string): number[] {
  const starts = [0];
  let index = text.indexOf('\n');
  while (index !== -1) {
    starts.push(index + 1);
    index = text.indexOf('\n', index + 1);
  }
  return starts;
}

/** Replaces every character of the ranges except line breaks with a space. */
function blankRanges(text: string, ranges: Array<[number, number]>): string {
  if (ranges.length === 0) return text;
  ranges.sort((left, right) => left[0] - right[0]);
  const parts: string[] = [];
  let cursor = 0;
  for (const [rangeStart, rangeEnd] of ranges) {
    const start = Math.max(rangeStart, cursor);
    const end = Math.min(rangeEnd, text.length);
    if (end <= start) continue;
    parts.push(text.slice(cursor, start));
    parts.push(text.slice(start, end).replace(/[^\n]/g, ' '));
    cursor = end;
  }
  parts.push(text.slice(cursor));
  return parts.join('');
}

/**
 * Bracket depth (`{[(` minus `)]}`) at the start of every line of the masked code (index 0 =
 * line 1). Top-level declarations are the lines that start at depth 0.
 */
export function depthAtLineStarts(source: LexedSource): Int32Array {
  const depths = new Int32Array(source.lineStarts.length);
  const code = source.code;
  let depth = 0;
  let line = 0;
  for (let index = 0; index < code.length; index += 1) {
    const char = code.charCodeAt(index);
    if (char === Char.LineFeed) {
      line += 1;
      if (line < depths.length) depths[line] = depth;
    } else if (char === Char.OpenBrace || char === Char.OpenBracket || char === Char.OpenParen) {
      depth += 1;
    } else if (char === Char.CloseBrace || char === Char.CloseBracket || char === Char.CloseParen) {
      depth = Math.max(0, depth - 1);
    }
  }
  return depths;
}

/** Identifier tokens of masked code (`[A-Za-z_$][\w$]*`, Unicode letters included). */
export const identifierPattern = /[A-Za-z_$\u00C0-\uFFFF][\w$\u00C0-\uFFFF]*/g;
