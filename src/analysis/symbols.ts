import { codeFamilyOf, depthAtLineStarts, lexSource, lineAt, lineTextOf, type CodeFamily, type LexedSource } from './source-lexer.js';

/**
 * Top-level symbol extraction for TS/JS, Go, Python and Rust (E41 collisions, E25 exports).
 * Works on the lexer's masked code (comments and string contents blanked), so declarations in
 * comments or strings are never symbols; a line is top-level when it starts at bracket depth 0.
 */

/**
 * What a symbol declares. `const` is any module-level value binding (TS/JS `const`/`let`/`var`,
 * Go `const`/`var`, Python assignments, Rust `const`/`static`); `function` includes Go methods
 * (with `receiver`) and TS/JS `const x = () => …` / `function` expressions.
 */
export type SymbolKind = 'type' | 'interface' | 'class' | 'function' | 'const' | 'enum' | 'struct' | 'trait';

export interface TopLevelSymbol {
  name: string;
  kind: SymbolKind;
  /** 1-based line of the declaration. */
  line: number;
  /**
   * Visible outside its module: TS/JS `export` (also `export { x }`, `export default x`,
   * CommonJS `exports.x`/`module.exports`), Go capitalised, Python not `_`-prefixed (or listed
   * in `__all__` when there is one), Rust `pub` (any `pub(…)` too).
   */
  exported: boolean;
  /** Go methods: the receiver's type name (`func (s *Server) Run()` → `Server`). */
  receiver?: string;
}

/** A member that E25 checks separately: Go exported struct fields, TS/JS `…Props` members. */
export interface MemberSymbol {
  /** The struct / Props type that declares it. */
  owner: string;
  name: string;
  kind: 'field' | 'prop';
  line: number;
  /** Go fields carrying a `json:"…"` tag. */
  hasJsonTag: boolean;
}

/** Top-level symbols of a file (empty for files outside the four families). */
export function extractTopLevelSymbols(filePath: string, text: string): TopLevelSymbol[] {
  const family = codeFamilyOf(filePath);
  if (family === undefined) return [];
  return extractSymbolsFromSource(lexSource(filePath, text));
}

/** {@link extractTopLevelSymbols} for an already lexed file. */
export function extractSymbolsFromSource(source: LexedSource): TopLevelSymbol[] {
  const family = source.language as CodeFamily;
  const context = createContext(source);
  switch (family) {
    case 'typescript':
    case 'javascript':
      return dedupe(extractJavaScript(context));
    case 'go':
      return dedupe(extractGo(context));
    case 'python':
      return dedupe(extractPython(context));
    case 'rust':
      return dedupe(extractRust(context));
    default:
      return [];
  }
}

/** Go exported struct fields and TS/JS `…Props` members (E25 `field_init` candidates). */
export function extractMembers(filePath: string, text: string): MemberSymbol[] {
  const family = codeFamilyOf(filePath);
  if (family === 'go' || family === 'typescript' || family === 'javascript') return extractMembersFromSource(lexSource(filePath, text));
  return [];
}

/** {@link extractMembers} for an already lexed file. */
export function extractMembersFromSource(source: LexedSource): MemberSymbol[] {
  const context = createContext(source);
  if (source.language === 'go') return extractGoFields(context);
  if (source.language === 'typescript' || source.language === 'javascript') return extractPropsMembers(context);
  return [];
}

/**
 * The namespace a symbol lives in for E41: the directory for Go, TS/JS and Rust (`''` at the
 * root), the dotted package path for Python (`app/models/user.py` → `app.models`).
 */
export function packageOf(filePath: string): string {
  const normalized = filePath.replace(/\\/g, '/');
  const slash = normalized.lastIndexOf('/');
  const directory = slash === -1 ? '' : normalized.slice(0, slash);
  if (codeFamilyOf(filePath) === 'python') return directory.split('/').filter((part) => part !== '').join('.');
  return directory;
}

interface ExtractionContext {
  source: LexedSource;
  depths: Int32Array;
  /** Masked code of a 1-based line. */
  codeLine(line: number): string;
  lineCount: number;
}

function createContext(source: LexedSource): ExtractionContext {
  const depths = depthAtLineStarts(source);
  return {
    source,
    depths,
    codeLine: (line) => lineTextOf(source.code, source.lineStarts, line),
    lineCount: source.lineStarts.length,
  };
}

function dedupe(symbols: TopLevelSymbol[]): TopLevelSymbol[] {
  const seen = new Map<string, TopLevelSymbol>();
  const result: TopLevelSymbol[] = [];
  for (const symbol of symbols) {
    const key = `${symbol.receiver ?? ''}.${symbol.name}/${symbol.kind}`;
    const earlier = seen.get(key);
    if (earlier) {
      earlier.exported ||= symbol.exported;
      continue;
    }
    seen.set(key, symbol);
    result.push(symbol);
  }
  return result.sort((left, right) => left.line - right.line || left.name.localeCompare(right.name));
}

// ---------------------------------------------------------------------------------------------
// TypeScript / JavaScript

const jsIdentifier = '[A-Za-z_$\\u00C0-\\uFFFF][\\w$\\u00C0-\\uFFFF]*';
const jsModifiers = /^(?:(export|default|declare|abstract|async)\s+)/;
const jsDeclaration = new RegExp(`^(function\\s*\\*\\s*|function\\s+|class\\s+|interface\\s+|type\\s+|const\\s+enum\\s+|enum\\s+|const\\s+|let\\s+|var\\s+)(${jsIdentifier})`);
/** Words that follow `class`/`function` without being a name (`export default class extends Base`). */
const jsNotNames = new Set(['extends', 'implements']);

function extractJavaScript(context: ExtractionContext): TopLevelSymbol[] {
  const { source, depths } = context;
  const symbols: TopLevelSymbol[] = [];
  const exportedNames = new Set<string>();

  for (let line = 1; line <= context.lineCount; line += 1) {
    if (depths[line - 1] !== 0) continue;
    const raw = context.codeLine(line);
    let rest = raw.trimStart();
    if (rest === '') continue;
    let exported = false;
    let isDefault = false;
    for (let match = jsModifiers.exec(rest); match; match = jsModifiers.exec(rest)) {
      if (match[1] === 'export') exported = true;
      if (match[1] === 'default') isDefault = true;
      rest = rest.slice(match[0].length);
    }
    const declaration = jsDeclaration.exec(rest);
    if (declaration) {
      const keyword = declaration[1]!.trim().replace(/\s+/g, ' ');
      const name = declaration[2]!;
      if (jsNotNames.has(name)) continue;
      // `type` and `interface` also need a following name and `=`/`{`/`<`/`extends`; `type` alone may be an identifier.
      if (keyword === 'type' && !new RegExp(`^type\\s+${escapeRegExp(name)}\\s*(<|=)`).test(rest)) continue;
      const offset = source.lineStarts[line - 1]! + (raw.length - rest.length) + declaration[0].length;
      symbols.push({ name, kind: jsKind(keyword, source.code, offset), line, exported });
      continue;
    }
    if (!exported) {
      const commonJs = /^(?:module\.)?exports\.([A-Za-z_$][\w$]*)\s*=(?!=)\s*/.exec(rest);
      if (commonJs) {
        const offset = source.lineStarts[line - 1]! + (raw.length - rest.length) + commonJs[0].length;
        symbols.push({ name: commonJs[1]!, kind: isFunctionValue(source.code, offset) ? 'function' : 'const', line, exported: true });
        exportedNames.add(commonJs[1]!);
      }
    }
    if (exported && isDefault) {
      // `export default name;`
      const defaultName = new RegExp(`^(${jsIdentifier})\\s*;?\\s*$`).exec(rest);
      if (defaultName) exportedNames.add(defaultName[1]!);
    }
  }

  // `export { a, b as c }` (without `from`), `module.exports = { a, b }` / `= name`: mark locals exported.
  const code = source.code;
  const lists = /(^|\n)[ \t]*(export\s*\{|module\.exports\s*=\s*\{)([^}]*)\}(\s*from\b)?/g;
  for (let match = lists.exec(code); match; match = lists.exec(code)) {
    if (match[4]) continue;
    const line = lineAt(source, match.index + match[1]!.length);
    if (depths[line - 1] !== 0) continue;
    for (const entry of match[3]!.split(',')) {
      const local = new RegExp(`^\\s*(?:type\\s+)?(${jsIdentifier})`).exec(entry);
      if (local) exportedNames.add(local[1]!);
      const value = new RegExp(`:\\s*(${jsIdentifier})\\s*$`).exec(entry);
      if (value) exportedNames.add(value[1]!);
    }
  }
  const moduleExports = /(^|\n)[ \t]*module\.exports\s*=\s*([A-Za-z_$][\w$]*)\s*;?[ \t]*(?=\n|$)/g;
  for (let match = moduleExports.exec(code); match; match = moduleExports.exec(code)) exportedNames.add(match[2]!);

  for (const symbol of symbols) if (exportedNames.has(symbol.name)) symbol.exported = true;
  return symbols;
}

function jsKind(keyword: string, code: string, valueSearchStart: number): SymbolKind {
  if (keyword.startsWith('function')) return 'function';
  if (keyword === 'class') return 'class';
  if (keyword === 'interface') return 'interface';
  if (keyword === 'type') return 'type';
  if (keyword.endsWith('enum')) return 'enum';
  // const/let/var: a function when the value is one.
  const equals = findAssignment(code, valueSearchStart);
  return equals !== -1 && isFunctionValue(code, equals + 1) ? 'function' : 'const';
}

/** Offset of the `=` that starts a declarator's value (skipping a type annotation), or -1. */
function findAssignment(code: string, from: number): number {
  let depth = 0;
  const limit = Math.min(code.length, from + 2000);
  for (let index = from; index < limit; index += 1) {
    const char = code[index];
    if (char === '(' || char === '[' || char === '{') depth += 1;
    else if (char === ')' || char === ']' || char === '}') {
      depth -= 1;
      if (depth < 0) return -1;
    } else if (depth === 0 && (char === ';' || char === ',')) return -1;
    else if (depth === 0 && char === '=' && code[index + 1] !== '>' && code[index + 1] !== '=' && !'=!<>'.includes(code[index - 1] ?? '')) return index;
  }
  return -1;
}

const functionValue = new RegExp(
  `^\\s*(?:async\\s+)?(?:function\\b|${jsIdentifier}\\s*=>|<[^>]*>\\s*\\(|\\((?:[^()]|\\((?:[^()]|\\([^()]*\\))*\\))*\\)\\s*(?::[^=;{]*)?=>)`,
);

function isFunctionValue(code: string, from: number): boolean {
  return functionValue.test(code.slice(from, from + 1000));
}

function extractPropsMembers(context: ExtractionContext): MemberSymbol[] {
  const members: MemberSymbol[] = [];
  const { depths } = context;
  for (let line = 1; line <= context.lineCount; line += 1) {
    if (depths[line - 1] !== 0) continue;
    const header = /^\s*(?:export\s+)?(?:declare\s+)?(?:interface|type)\s+([A-Za-z_$][\w$]*Props)\b[^{]*\{\s*$/.exec(context.codeLine(line));
    if (!header) continue;
    for (let inner = line + 1; inner <= context.lineCount && depths[inner - 1]! > 0; inner += 1) {
      if (depths[inner - 1] !== 1) continue;
      const member = /^\s*(?:readonly\s+)?([A-Za-z_$][\w$]*)\s*\??\s*[:(]/.exec(context.codeLine(inner));
      if (member) members.push({ owner: header[1]!, name: member[1]!, kind: 'prop', line: inner, hasJsonTag: false });
    }
  }
  return members;
}

// ---------------------------------------------------------------------------------------------
// Go

const goIdentifier = '[A-Za-z_\\u00C0-\\uFFFF][\\w\\u00C0-\\uFFFF]*';
const goMethod = new RegExp(`^func\\s*\\(\\s*(?:${goIdentifier}\\s+)?\\*?\\s*(${goIdentifier})(?:\\s*\\[[^\\]]*\\])?\\s*\\)\\s*(${goIdentifier})`);
const goFunction = new RegExp(`^func\\s+(${goIdentifier})`);
// `Name[T any] struct`, `Name = Other`, `Name [4]byte` (the optional type-parameter group backs off for an array).
const goTypeSpec = new RegExp(`^(${goIdentifier})(?:\\s*\\[[^\\]]*\\])?\\s+(=\\s*)?(?:(struct|interface)(?![\\w\\u00C0-\\uFFFF]))?`);
const goNames = new RegExp(`^(${goIdentifier}(?:\\s*,\\s*${goIdentifier})*)`);

function isGoExported(name: string): boolean {
  const first = name.charAt(0);
  return first !== first.toLowerCase() && first === first.toUpperCase();
}

function extractGo(context: ExtractionContext): TopLevelSymbol[] {
  const symbols: TopLevelSymbol[] = [];
  const { depths } = context;
  const push = (name: string, kind: SymbolKind, line: number, receiver?: string) => {
    if (name === '_' || (kind === 'function' && receiver === undefined && name === 'init')) return;
    symbols.push({ name, kind, line, exported: isGoExported(name), ...(receiver === undefined ? {} : { receiver }) });
  };
  const typeKind = (spec: RegExpExecArray): SymbolKind => (spec[3] === 'struct' ? 'struct' : spec[3] === 'interface' ? 'interface' : 'type');

  for (let line = 1; line <= context.lineCount; line += 1) {
    if (depths[line - 1] !== 0) continue;
    const text = context.codeLine(line);
    const method = goMethod.exec(text);
    if (method) {
      push(method[2]!, 'function', line, method[1]!);
      continue;
    }
    const fn = goFunction.exec(text);
    if (fn) {
      push(fn[1]!, 'function', line);
      continue;
    }
    const group = /^(type|const|var)\s*\(/.exec(text);
    if (group) {
      for (let inner = line + 1; inner <= context.lineCount && depths[inner - 1]! > 0; inner += 1) {
        if (depths[inner - 1] !== 1) continue;
        const specText = context.codeLine(inner).trimStart();
        if (group[1] === 'type') {
          const spec = goTypeSpec.exec(specText);
          if (spec) push(spec[1]!, typeKind(spec), inner);
        } else {
          const names = goNames.exec(specText);
          if (names) for (const name of names[1]!.split(',')) push(name.trim(), 'const', inner);
        }
      }
      continue;
    }
    const single = /^(type|const|var)\s+(.*)$/.exec(text);
    if (single) {
      if (single[1] === 'type') {
        const spec = goTypeSpec.exec(single[2]!);
        if (spec) push(spec[1]!, typeKind(spec), line);
      } else {
        const names = goNames.exec(single[2]!);
        if (names) for (const name of names[1]!.split(',')) push(name.trim(), 'const', line);
      }
    }
  }
  return symbols;
}

function extractGoFields(context: ExtractionContext): MemberSymbol[] {
  const members: MemberSymbol[] = [];
  const { depths, source } = context;
  const fieldPattern = new RegExp(`^\\s*(${goIdentifier}(?:\\s*,\\s*${goIdentifier})*)\\s+[^\\s,]`);
  const collect = (owner: string, openLine: number, bodyDepth: number) => {
    for (let inner = openLine + 1; inner <= context.lineCount && depths[inner - 1]! >= bodyDepth; inner += 1) {
      if (depths[inner - 1] !== bodyDepth) continue;
      const field = fieldPattern.exec(context.codeLine(inner));
      if (!field) continue;
      const hasJsonTag = /`[^`]*\bjson:"/.test(lineTextOf(source.text, source.lineStarts, inner));
      for (const name of field[1]!.split(',').map((part) => part.trim())) {
        if (isGoExported(name)) members.push({ owner, name, kind: 'field', line: inner, hasJsonTag });
      }
    }
  };
  // `type Point struct{ X, Y int; Label string }` on one line.
  const collectInline = (owner: string, line: number, body: string) => {
    const hasJsonTag = /`[^`]*\bjson:"/.test(lineTextOf(source.text, source.lineStarts, line));
    for (const part of body.split(';')) {
      const field = fieldPattern.exec(part);
      if (!field) continue;
      for (const name of field[1]!.split(',').map((entry) => entry.trim())) {
        if (isGoExported(name)) members.push({ owner, name, kind: 'field', line, hasJsonTag });
      }
    }
  };
  let groupDepth = -1;
  for (let line = 1; line <= context.lineCount; line += 1) {
    const depth = depths[line - 1]!;
    const text = context.codeLine(line);
    if (depth === 0) {
      groupDepth = /^type\s*\(/.test(text) ? 1 : -1;
      const single = new RegExp(`^type\\s+(${goIdentifier})(?:\\s*\\[[^\\]]*\\])?\\s+struct\\s*\\{\\s*$`).exec(text);
      if (single && isGoExported(single[1]!)) collect(single[1]!, line, 1);
      const inline = new RegExp(`^type\\s+(${goIdentifier})(?:\\s*\\[[^\\]]*\\])?\\s+struct\\s*\\{([^{}]*)\\}\\s*$`).exec(text);
      if (inline && isGoExported(inline[1]!)) collectInline(inline[1]!, line, inline[2]!);
      continue;
    }
    if (depth === groupDepth) {
      const spec = new RegExp(`^\\s*(${goIdentifier})(?:\\s*\\[[^\\]]*\\])?\\s+struct\\s*\\{\\s*$`).exec(text);
      if (spec && isGoExported(spec[1]!)) collect(spec[1]!, line, 2);
    }
  }
  return members;
}

// ---------------------------------------------------------------------------------------------
// Python

const pythonKeywords = new Set([
  'False', 'None', 'True', 'and', 'as', 'assert', 'async', 'await', 'break', 'class', 'continue', 'def', 'del', 'elif', 'else', 'except',
  'finally', 'for', 'from', 'global', 'if', 'import', 'in', 'is', 'lambda', 'nonlocal', 'not', 'or', 'pass', 'raise', 'return', 'try',
  'while', 'with', 'yield', 'match', 'case', 'print',
]);

function extractPython(context: ExtractionContext): TopLevelSymbol[] {
  const { source, depths } = context;
  const symbols: TopLevelSymbol[] = [];
  let allNames: Set<string> | undefined;

  for (let line = 1; line <= context.lineCount; line += 1) {
    if (depths[line - 1] !== 0) continue;
    const text = context.codeLine(line);
    if (text === '' || /^\s/.test(text)) continue;
    // `__all__` by any of its usual forms (outside round X66-27): `= [...]`, a tuple `= ('a',)` or `= 'a', 'b'`, `+= [...]`,
    // `= __all__ + [...]`, `.append('a')`, `.extend([...])` — the names are the string literals of the statement.
    const all = /^__all__\s*(?:(\+=)|=(?!=)\s*(__all__\s*\+)?|\.\s*(?:append|extend)\s*(\())/.exec(text);
    if (all) {
      const names = pythonAllNames(source, line, all[0].length - (all[3] ? 1 : 0));
      allNames = all[1] || all[2] || all[3] ? new Set([...(allNames ?? []), ...names]) : names;
      continue;
    }
    const definition = /^(?:async\s+)?def\s+([A-Za-z_]\w*)/.exec(text);
    if (definition) {
      symbols.push({ name: definition[1]!, kind: 'function', line, exported: false });
      continue;
    }
    const klass = /^class\s+([A-Za-z_]\w*)/.exec(text);
    if (klass) {
      symbols.push({ name: klass[1]!, kind: 'class', line, exported: false });
      continue;
    }
    const alias = /^type\s+([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*=(?!=)/.exec(text);
    if (alias) {
      symbols.push({ name: alias[1]!, kind: 'type', line, exported: false });
      continue;
    }
    const assignment = /^([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*(?::[^=]*)?(?:=(?!=)|$)/.exec(text);
    if (assignment && !/^[A-Za-z_]\w*\s*:\s*$/.test(text)) {
      const names = assignment[1]!.split(',').map((name) => name.trim());
      if (names.some((name) => pythonKeywords.has(name))) continue;
      // A bare annotation `x: int` declares; a bare expression `x` does not.
      if (!text.includes('=') && !text.includes(':')) continue;
      for (const name of names) symbols.push({ name, kind: 'const', line, exported: false });
    }
  }
  for (const symbol of symbols) symbol.exported = allNames ? allNames.has(symbol.name) : !symbol.name.startsWith('_');
  return symbols;
}

/**
 * The names of the `__all__` statement of `line` whose value starts `column` characters into it: the string literals up
 * to the end of the statement (its line, or the bracket opened on it that closes last).
 */
function pythonAllNames(source: LexedSource, line: number, column: number): Set<string> {
  const names = new Set<string>();
  const start = source.lineStarts[line - 1]! + column;
  let depth = 0;
  let end = source.code.length;
  for (let index = start; index < source.code.length; index += 1) {
    const char = source.code[index];
    if (char === '[' || char === '(' || char === '{') depth += 1;
    else if (char === ']' || char === ')' || char === '}') depth -= 1;
    else if (char === '\n' && depth <= 0 && !/\\\s*$/.test(source.code.slice(Math.max(start, index - 4), index))) {
      end = index;
      break;
    }
  }
  for (const literal of source.strings) {
    if (literal.start < start) continue;
    if (literal.start > end) break;
    names.add(source.text.slice(literal.contentStart, literal.contentEnd));
  }
  return names;
}

// ---------------------------------------------------------------------------------------------
// Rust

const rustVisibility = /^(pub(?:\s*\([^)]*\))?\s+)?/;

function extractRust(context: ExtractionContext): TopLevelSymbol[] {
  const symbols: TopLevelSymbol[] = [];
  const { depths } = context;
  for (let line = 1; line <= context.lineCount; line += 1) {
    if (depths[line - 1] !== 0) continue;
    // Attributes on the same line (`#[derive(Debug)] pub struct X;`) are not part of the item.
    const text = context.codeLine(line).trimStart().replace(/^(?:#!?\[[^\]]*\]\s*)+/, '');
    const visibility = rustVisibility.exec(text)!;
    const exported = visibility[1] !== undefined;
    const rest = text.slice(visibility[0].length);
    const push = (name: string | undefined, kind: SymbolKind) => {
      if (name === undefined || name === '_') return;
      symbols.push({ name: name.replace(/^r#/, ''), kind, line, exported });
    };
    const fn = /^(?:(?:default|const|async|unsafe|extern(?:\s+"[^"]*")?)\s+)*fn\s+((?:r#)?\w+)/.exec(rest);
    if (fn) {
      push(fn[1], 'function');
      continue;
    }
    const item = /^(struct|union|enum|trait|type)\s+((?:r#)?\w+)/.exec(rest) ?? /^(?:unsafe\s+|auto\s+)*(trait)\s+((?:r#)?\w+)/.exec(rest);
    if (item) {
      const keyword = item[1]!;
      push(item[2], keyword === 'union' ? 'struct' : (keyword as SymbolKind));
      continue;
    }
    const value = /^(?:const\s+((?:r#)?\w+)\s*:|static\s+(?:mut\s+)?((?:r#)?\w+)\s*:)/.exec(rest);
    if (value) push(value[1] ?? value[2], 'const');
  }
  return symbols;
}

// ---------------------------------------------------------------------------------------------

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
