/**
 * Which methods named like an interface's or trait's method may implement it — by name and shape, not by type
 * checking (nothing here resolves types): a Go or TS type (or class) implements an interface when it has a method of
 * every name the interface declares (one-method interfaces: any method of that name); a Rust type only through an
 * `impl Trait for Type` block in the method's file. Another interface's or trait's own declaration implements nothing.
 * TS/JS: a class's function-valued properties are its methods, a class that `implements` the interface (an object
 * literal in a variable typed as it, or `satisfies` it) may implement it whatever its other members (X57-14).
 * Used by a scoped detect-cascades rename (the Scout's cascade candidates: a renamed interface method breaks every
 * implementation) and by check-test-cascade's test doubles (E46: a test double implementing the changed interface is
 * an orphaned caller) — outside rounds X54-10/04, and X55-04/05: every same-named method was listed, an HTTP client's
 * `Get` for a store's.
 */
import { existsSync, readdirSync, readFileSync, realpathSync, type Dirent } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { listSymbols } from './engine/index.js';
import type { ModuleTargets } from './ts-module-targets.js';
import type { FileSymbol } from './engine/types.js';

/**
 * What {@link mayImplement} needs of a method's file at `file` (repo-relative) of the repository at `root`: the
 * definitions and text of that file — of every `.go` file of its directory for Go (one package).
 */
export async function implementerView(root: string, file: string): Promise<{ symbols: FileSymbol[]; text: string }> {
  const files = file.endsWith('.go')
    ? (() => {
        const dir = path.posix.dirname(file);
        try {
          return readdirSync(path.join(root, dir)).filter((name) => name.endsWith('.go')).map((name) => (dir === '.' ? name : `${dir}/${name}`));
        } catch {
          return [file];
        }
      })()
    : [file];
  const symbols = await listSymbols(root, files).catch(() => [] as FileSymbol[]);
  const text = files.map((name) => {
    try {
      return readFileSync(path.join(root, name), 'utf8');
    } catch {
      return '';
    }
  });
  // (TS/JS: a class's function-valued properties and the members of an object literal typed as an interface count as
  // its methods — X57-14)
  const members = tsLike.test(file) ? tsMemberFunctions(file, text[0]!).filter((member) => !symbols.some((symbol) => symbol.kind === 'method' && symbol.line === member.line && symbol.name === member.name)) : [];
  return { symbols: [...symbols, ...members], text: text.join('\n') };
}

/**
 * TS/JS: the members named `name` in `files` (repo-relative, of the repository at `root`) the engine lists no method
 * for — a class's function-valued property (`get = (key) => …`, `get: Fn = function …`, `get!: (key) => V`) and a
 * member of an object literal typed as an interface (`const c: Cache = { get(key) {…}, put: (…) => … }`, `{…}
 * satisfies Cache`) — as method symbols whose container is the class or the variable (outside round X57-14).
 */
export async function tsFunctionMembers(root: string, files: readonly string[], name: string): Promise<FileSymbol[]> {
  const found: FileSymbol[] = [];
  const mention = new RegExp(`(?<![\\p{L}\\p{N}_$])${name.replace(/\$/g, '\\$')}\\s*[?!]?\\s*[:=(,}]`, 'u');
  for (const file of files.filter((entry) => tsLike.test(entry))) {
    const text = await readFile(path.join(root, file), 'utf8').catch(() => '');
    if (mention.test(text)) found.push(...tsMemberFunctions(file, text).filter((member) => member.name === name));
  }
  return found;
}

const tsLike = /\.(?:[cm]?[jt]sx?)$/;
const identifierPattern = '[\\p{L}_$][\\p{L}\\p{N}_$]*';

/** Per position of `text` (TS/JS), the depth of braces around it; strings, template literals and comments skipped. */
function braceDepths(text: string): { depth: Uint16Array; close: Map<number, number> } {
  const depth = new Uint16Array(text.length + 1);
  const close = new Map<number, number>();
  const open: number[] = [];
  for (let index = 0; index < text.length; index += 1) {
    const char = text[index]!;
    depth[index] = open.length;
    let skipTo = -1;
    if (char === '"' || char === "'" || char === '`') {
      let end = index + 1;
      while (end < text.length && text[end] !== char && !(char !== '`' && text[end] === '\n')) end += text[end] === '\\' ? 2 : 1;
      skipTo = end;
    } else if (char === '/' && text[index + 1] === '/') skipTo = text.indexOf('\n', index) < 0 ? text.length : text.indexOf('\n', index);
    else if (char === '/' && text[index + 1] === '*') skipTo = text.indexOf('*/', index + 2) < 0 ? text.length : text.indexOf('*/', index + 2) + 1;
    else if (char === '{') open.push(index);
    else if (char === '}' && open.length > 0) {
      close.set(open.pop()!, index);
      depth[index] = open.length;
    }
    if (skipTo >= 0) {
      for (let at = index + 1; at <= Math.min(skipTo, text.length - 1); at += 1) depth[at] = open.length;
      index = skipTo;
    }
  }
  depth[text.length] = open.length;
  return { depth, close };
}

/** The contracts each class (`implements`) or variable (a type annotation, `satisfies`) of a TS/JS text declares. */
interface Declared {
  contracts: Map<string, Set<string>>;
  /** The classes each class `extends` (last segment of the name). */
  bases: Map<string, Set<string>>;
  /** The variables holding an object literal (their members implement only the declared contract). */
  objects: Set<string>;
  members: Array<{ container: string; name: string; offset: number }>;
}

let lastDeclared: { text: string; declared: Declared } | undefined;

function declaredIn(text: string): Declared {
  if (lastDeclared?.text === text) return lastDeclared.declared;
  const { depth, close } = braceDepths(text);
  const contracts = new Map<string, Set<string>>();
  const bases = new Map<string, Set<string>>();
  const objects = new Set<string>();
  const members: Declared['members'] = [];
  // (`A, ns.B<Map<K, V>>` → A, B: type arguments dropped, innermost first, then the last segment of each name)
  // (a test double's wrapper types name the interface in their argument: `Partial<Cache>`, `jest.Mocked<Cache>`,
  // `DeepMockProxy<Cache>` — X58-13; other generics, `Record<string, Cache>`, do not make the literal a Cache)
  const typeNames = (list: string) => {
    let bare = list.replace(new RegExp(`(?:[\\p{L}_$][\\p{L}\\p{N}_$]*\\s*\\.\\s*)*\\b(?:Partial|Required|Readonly|Mocked|MockedObject|MockedClass|DeepPartial|PartialDeep|DeepMocked|DeepMockProxy|MockProxy|Mock)\\s*<\\s*((?:[\\p{L}_$][\\p{L}\\p{N}_$]*\\s*\\.\\s*)*[\\p{L}_$][\\p{L}\\p{N}_$]*)\\s*>`, 'gu'), '$1');
    for (let previous = ''; previous !== bare; ) [previous, bare] = [bare, bare.replace(/<[^<>]*>/g, '')];
    // (`Cache[]`, `readonly Cache[]`, `Array<Cache>`: the element's type, for an array literal's elements — X59-12)
    bare = bare.replace(/\s*\[\s*\]/g, '');
    const names = bare.split(',').map((entry) => /([\p{L}_$][\p{L}\p{N}_$]*)\s*$/u.exec(entry.trim())?.[1]).filter((entry): entry is string => entry !== undefined);
    // (a type alias of the same text, `type C = Cache;`, names the interface it stands for: outside round X59-12)
    return names.flatMap((entry) => aliases.get(entry) ?? [entry]);
  };
  const aliases = new Map<string, string[]>();
  for (const match of text.matchAll(new RegExp(`\\btype\\s+(${identifierPattern})\\s*=\\s*((?:${identifierPattern}\\s*\\.\\s*)*${identifierPattern}(?:\\s*<[^;=\\n]*>)?)\\s*;`, 'gu'))) {
    if (match[1] !== match[2]) aliases.set(match[1]!, typeNames(match[2]!));
  }
  const declare = (container: string, names: string[]) => {
    const set = contracts.get(container) ?? new Set<string>();
    for (const name of names) set.add(name);
    contracts.set(container, set);
  };
  // The direct members of the body `{` at `start`: `name = …`, `name: …`, `name(…) {`, shorthand `name,`.
  // (`anyValue`: a class that declares `implements` — any property is a member there, whatever holds it: `get =
  // jest.fn()`, `vi.fn()`, `sinon.stub()`, `this.read.bind(this)`, `get!: jest.Mock` — the test double's form, X58-12)
  const membersOf = (container: string, start: number, object: boolean, anyValue = false) => {
    const end = close.get(start);
    if (end === undefined) return;
    const body = text.slice(start + 1, end);
    const level = depth[start]! + 1;
    const member = object
      ? new RegExp(`(?:^|[{,])\\s*(?:async\\s+)?\\*?\\s*(${identifierPattern})\\s*(?=[:(,}]|$)`, 'dgu')
      : anyValue
        ? new RegExp(`(?:^|[;{}\\n])\\s*(?:@[^\\n]*\\n\\s*)*(?:(?:public|private|protected|readonly|override|declare|static)\\s+)*(${identifierPattern})\\s*[?!]?\\s*(?::(?!:)|=(?![=>]))`, 'dgu')
        : new RegExp(`(?:^|[;{}\\n])\\s*(?:@[^\\n]*\\n\\s*)*(?:(?:public|private|protected|readonly|override|declare)\\s+)*(${identifierPattern})\\s*[?!]?\\s*(?::\\s*\\(|(?::[^=;\\n]*)?=\\s*(?:async\\b\\s*)?(?:function\\b|\\(|${identifierPattern}\\s*=>))`, 'dgu');
    for (const match of body.matchAll(member)) {
      const offset = start + 1 + match.indices![1]![0];
      if (depth[offset] !== level) continue;
      members.push({ container, name: match[1]!, offset });
    }
  };
  // (type parameters may hold braces: `class Memo<T extends { id: string }> implements Cache {`, X58-15)
  for (const match of text.matchAll(new RegExp(`\\bclass\\s+(${identifierPattern})\\s*(?:<(?:[^<>]|<(?:[^<>]|<[^<>]*>)*>)*>)?([^{]*)\\{`, 'gu'))) {
    const start = match.index + match[0].length - 1;
    const implemented = /\bimplements\b([\s\S]*)$/.exec(match[2]!);
    if (implemented) declare(match[1]!, typeNames(implemented[1]!));
    // (`extends Repo`, `extends base.Repo<T>`: the class it inherits from — X59-17)
    const extended = /\bextends\b([\s\S]*?)(?:\bimplements\b|$)/.exec(match[2]!);
    if (extended) bases.set(match[1]!, new Set(typeNames(extended[1]!)));
    membersOf(match[1]!, start, false, implemented !== null);
  }
  // (a subclass of a class of the same text that `implements` an interface implements it too — its override of a
  // member must be renamed with it: X56-13; to a fixed point, over chains of subclasses)
  for (let grew = true; grew; ) {
    grew = false;
    for (const [child, parents] of bases) {
      for (const parent of parents) {
        for (const name of contracts.get(parent) ?? []) {
          if (contracts.get(child)?.has(name)) continue;
          declare(child, [name]);
          grew = true;
        }
      }
    }
  }
  // (`const c: Cache = {`, `Object.freeze({` around it — X58-24 —, and a class property typed as the interface,
  // `private fallback: Cache = {` — X58-14)
  // (also a parameter's default, `function mk(cache: Cache = {`, an angle-bracket assertion, `= <Cache>{`, and the
  // elements of an array literal typed as an array of it, `const all: Cache[] = [{ … }, { … }]`: outside round X59-12)
  for (const match of text.matchAll(new RegExp(`(?:\\b(?:const|let|var)\\s+(${identifierPattern})\\s*(?::\\s*([^=;{]+?)\\s*)?|(?:^|[;{}\\n(,])[ \\t]*(?:(?:public|private|protected|readonly|static|override)\\s+)*(${identifierPattern})\\s*[?!]?\\s*:\\s*([^=;{()]+?)\\s*)=\\s*(?:<\\s*([^<>=;{}()]+?)\\s*>\\s*)?(?:Object\\s*\\.\\s*freeze\\s*\\(\\s*)?([{[])`, 'gu'))) {
    const [holder, annotation] = match[3] !== undefined ? [match[3], match[4]] : [match[1]!, match[2]];
    const opening = match.index + match[0].length - 1;
    // (an array literal: its elements that are object literals, `[{` / `, {` at its own level)
    const starts: number[] = [];
    if (match[6] === '[') {
      if (!annotation || !/\[\s*\]\s*$|^\s*(?:Readonly)?Array\s*</u.test(annotation)) continue;
      let level = 0;
      for (let at = opening; at < text.length; at += 1) {
        const char = text[at]!;
        if (char === '{') {
          if (level === 1 && /[[,]\s*$/.test(text.slice(opening, at))) starts.push(at);
          at = close.get(at) ?? text.length;
        } else if (char === '[' || char === '(') level += 1;
        else if (char === ']' || char === ')') level -= 1;
        if (level <= 0 || char === ';') break;
      }
    } else starts.push(opening);
    const start = starts[0];
    const end = start === undefined ? undefined : close.get(start);
    const satisfied = end === undefined || match[6] === '[' ? undefined : /^\s*(?:satisfies|as)\s+([^;,)\n]+)/.exec(text.slice(end + 1));
    const annotated = annotation ? (match[6] === '[' ? typeNames(annotation.replace(/^\s*(?:Readonly)?Array\s*<([\s\S]*)>\s*$/u, '$1')) : typeNames(annotation)) : [];
    const names = [...annotated, ...(match[5] !== undefined ? typeNames(match[5]) : []), ...(satisfied ? typeNames(satisfied[1]!) : [])];
    if (names.length === 0 || starts.length === 0) continue;
    objects.add(holder);
    declare(holder, names);
    for (const at of starts) membersOf(holder, at, true);
  }
  const declared = { contracts, bases, objects, members };
  lastDeclared = { text, declared };
  return declared;
}

/** The members of {@link tsFunctionMembers} in `text` (the file `file`), every name. */
function tsMemberFunctions(file: string, text: string): FileSymbol[] {
  const { members } = declaredIn(text);
  return members.map(({ container, name, offset }) => {
    const before = text.slice(0, offset);
    const line = before.split('\n').length;
    return { file, name, kind: 'method', line, column: offset - before.lastIndexOf('\n'), exported: false, container } satisfies FileSymbol;
  });
}

/** Where a contract is defined, for {@link mayImplement}: the module reader and its files (repo-relative, no extension). */
export interface ContractOrigin {
  targets: ModuleTargets;
  files: ReadonlySet<string>;
  /** The repository's directory (Rust: to read the module a `use` names). */
  root?: string;
}

/** Whether the bare specifier `specifier` names a package installed under `root`'s node_modules (or its `@types`). */
function installedPackage(root: string, specifier: string): boolean {
  if (/^[./]/.test(specifier) || /^[a-z]+:/.test(specifier)) return false;
  const name = /^(@[^/]+\/[^/]+|[^/]+)/.exec(specifier)?.[1];
  if (name === undefined) return false;
  const types = name.startsWith('@') ? name.slice(1).replace('/', '__') : name;
  // (a workspace package linked into node_modules — `@acme/core` → packages/core — is the repository's own: not a package)
  const installed = (where: string) => {
    try {
      return /(?:^|[\\/])node_modules[\\/]/.test(path.relative(root, realpathSync(where)));
    } catch {
      return false;
    }
  };
  return installed(path.join(root, 'node_modules', name)) || installed(path.join(root, 'node_modules', '@types', types));
}

/**
 * The `name`s of the repository's own package.json files — the root's (a self-reference) and every workspace member's,
 * wherever it sits (four directories deep at most; node_modules and dot-directories skipped) — memoised per root;
 * undefined when the repository is too large to read them all (then no bare specifier is known to be another package's).
 */
const repositoryPackageNames = new Map<string, ReadonlySet<string> | undefined>();
function repositoryPackages(root: string): ReadonlySet<string> | undefined {
  if (repositoryPackageNames.has(root)) return repositoryPackageNames.get(root);
  const names = new Set<string>();
  let budget = 20000;
  const visit = (dir: string, depth: number): boolean => {
    let entries: Dirent[];
    try {
      entries = readdirSync(path.join(root, dir), { withFileTypes: true });
    } catch {
      return true;
    }
    if ((budget -= entries.length) < 0) return false;
    if (entries.some((entry) => entry.name === 'package.json' && entry.isFile())) {
      try {
        const name = (JSON.parse(readFileSync(path.join(root, dir, 'package.json'), 'utf8')) as { name?: unknown }).name;
        if (typeof name === 'string') names.add(name);
      } catch {
        // (an unreadable manifest names no package)
      }
    }
    if (depth >= 4) return true;
    return entries.every((entry) => !entry.isDirectory() || entry.name === 'node_modules' || entry.name.startsWith('.') || visit(path.join(dir, entry.name), depth + 1));
  };
  const answer = visit('.', 0) ? names : undefined;
  repositoryPackageNames.set(root, answer);
  return answer;
}

/**
 * Whether the bare specifier `specifier`, which no tsconfig `paths`/`baseUrl` resolves, is another package's — installed
 * under node_modules or not (a fresh clone before `npm install`): a package name (or a `node:` builtin) that is no package
 * of the repository (a workspace member, the root's own name) and whose first segment names no directory or file at the
 * repository's top or in its `src/` (a bundler's module directories). A specifier that may be the repository's is left to
 * the name (outside round X59-11).
 */
function otherPackage(root: string, specifier: string): boolean {
  if (specifier.startsWith('node:')) return true;
  if (installedPackage(root, specifier)) return true;
  const name = /^((?:@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*)(?:\/|$)/i.exec(specifier)?.[1];
  if (name === undefined) return false;
  const packages = repositoryPackages(root);
  if (packages === undefined || packages.has(name)) return false;
  const first = name.split('/')[0]!;
  return !existsSync(path.join(root, first)) && !existsSync(path.join(root, 'src', first));
}

/** Whether `text` (the file `file`) imports `name` from a repository module that does not provide the contract's. */
function importsNameElsewhere(text: string, file: string, name: string, origin: ContractOrigin): boolean {
  const escaped = name.replace(/\$/g, '\\$');
  for (const match of text.matchAll(/\bimport\s+(?:type\s+)?(?:[\p{L}_$][\p{L}\p{N}_$]*\s*,\s*)?\{([^}]*)\}\s*from\s*(['"])([^'"]+)\2/gu)) {
    const binds = match[1]!.split(',').some((entry) => new RegExp(`^\\s*(?:type\\s+)?(?:[\\p{L}_$][\\p{L}\\p{N}_$]*\\s+as\\s+)?${escaped}\\s*$`, 'u').test(entry));
    if (!binds) continue;
    const targets = origin.targets.resolve(file, match[3]!);
    // (a bare specifier no tsconfig `paths` resolves that names another package, installed under node_modules or not —
    // `import type { Cache } from 'cache-manager'` — is that package's interface, not the contract: outside round X59-11)
    if (targets.length === 0) return origin.root !== undefined && !/^\.{0,2}\//.test(match[3]!) && otherPackage(origin.root, match[3]!);
    return !targets.some((target) => origin.targets.provides(target, name, origin.files));
  }
  return false;
}

export interface Contract {
  /** The interface or trait. */
  name: string;
  /** The file declaring it (repo-relative), when known. */
  file?: string;
  /** A TS abstract class (its abstract methods): implemented only by a class that `extends` it (X59-17). */
  abstract?: boolean;
  /** The names of the methods it declares. */
  methods: ReadonlySet<string>;
}

/**
 * The contracts among `symbols` (one file's definitions): each interface or trait with its declared method names — and,
 * with `root` (the repository the files are read from), each TS abstract class with its abstract methods (outside
 * round X59-17: a subclass's implementation of an abstract member must be renamed with it).
 */
export function contractsOf(symbols: readonly FileSymbol[], root?: string): Contract[] {
  const contracts: Contract[] = symbols
    .filter((symbol) => symbol.kind === 'interface' || symbol.kind === 'trait')
    .map((contract) => ({ name: contract.name, file: contract.file, methods: new Set(symbols.filter((symbol) => symbol.kind === 'method' && symbol.container === contract.name).map((symbol) => symbol.name)) }));
  if (root === undefined) return contracts;
  const texts = new Map<string, string[]>();
  const lineOf = (file: string, line: number): string => {
    if (!texts.has(file)) {
      try {
        texts.set(file, readFileSync(path.join(root, file), 'utf8').split(/\r?\n/));
      } catch {
        texts.set(file, []);
      }
    }
    return texts.get(file)![line - 1] ?? '';
  };
  for (const symbol of symbols) {
    if (symbol.kind !== 'class' || !tsLike.test(symbol.file) || !/\babstract\s+class\b/.test(lineOf(symbol.file, symbol.line))) continue;
    const methods = symbols.filter((member) => member.kind === 'method' && member.container === symbol.name && member.file === symbol.file && new RegExp(`\\babstract\\b[^(]*?(?<![\\p{L}\\p{N}_$])${member.name.replace(/\$/g, '\\$')}\\s*[?!]?\\s*[(<:]`, 'u').test(lineOf(member.file, member.line)));
    if (methods.length > 0) contracts.push({ name: symbol.name, file: symbol.file, abstract: true, methods: new Set(methods.map((member) => member.name)) });
  }
  return contracts;
}

/**
 * Whether `method` may implement `contract`. `fileSymbols`: the definitions `method`'s type can have methods in — its
 * file, or for Go every file of its package (a type's methods may be spread over them: X56-05); `text`: those files'
 * text (a Go struct embedding another type gets its methods; a Rust method must sit in an `impl Trait for` block).
 */
export function mayImplement(contract: Contract, method: FileSymbol, fileSymbols: readonly FileSymbol[], text: string, origin?: ContractOrigin): boolean {
  if (method.kind !== 'method' || method.container === undefined || !contract.methods.has(method.name)) return false;
  if (contract.abstract && !tsLike.test(method.file)) return false;
  const container = method.container.replace(/<.*$/, '');
  if (fileSymbols.some((symbol) => symbol.name === container && (symbol.kind === 'interface' || symbol.kind === 'trait'))) return false;
  if (method.file.endsWith('.rs')) {
    const impl = rustImplBlockOf(text, method.line, contract.name);
    return impl !== undefined && !rustNamesOtherTrait(contract, method.file, fileSymbols, text, impl, origin?.root);
  }
  if (tsLike.test(method.file)) {
    // (the file's own `Cache` imported from a module that leads elsewhere — another library's interface of that name —
    // is not the contract: outside round X58-11; an unresolved alias or a package not installed leaves it to the name)
    if (origin && importsNameElsewhere(text, method.file, contract.name, origin)) return false;
    // (TS: a class that `implements` the interface, an object literal typed as it — X57-14; an object typed otherwise
    // implements nothing by shape)
    const declared = declaredIn(text);
    // (an abstract class's abstract method: implemented by a class that `extends` it — by name, not by shape: X59-17)
    if (contract.abstract) return declared.bases.get(container)?.has(contract.name) ?? false;
    if (declared.contracts.get(container)?.has(contract.name)) return true;
    if (declared.objects.has(container)) return false;
  }
  const own = new Set(fileSymbols.filter((symbol) => symbol.kind === 'method' && symbol.container?.replace(/<.*$/, '') === container).map((symbol) => symbol.name));
  if ([...contract.methods].every((name) => own.has(name))) return true;
  // (Go: a struct embedding a type — `struct{ *MemStore }`, a fake `struct{ store.Store }` — has that type's methods too)
  return method.file.endsWith('.go') && goEmbeds(text, container);
}

/**
 * The `impl` block holding line `line` of `text` (a Rust file), when it implements `trait` (`impl<T> Trait<U> for X`,
 * or the file's alias for it): the trait as the header writes it (`Make`, `crate::make::Make`, `Constructible`) and the
 * module path of the `use` that gives an alias (`crate::make`). undefined when it implements no such trait.
 */
function rustImplBlockOf(text: string, line: number, trait: string): { written: string; aliasOf?: string } | undefined {
  const lines = text.split(/\r?\n/);
  for (let index = Math.min(line, lines.length) - 1; index >= 0; index -= 1) {
    if (!/^\s*(?:unsafe\s+)?impl\b/.test(lines[index]!)) continue;
    const header = lines.slice(index, index + 5).join(' ').split('{')[0]!;
    // (the trait under the file's own name for it, `use crate::make::Make as Constructible;`: outside rounds X56-10, X58-20)
    const aliases = new Map([...text.matchAll(new RegExp(`\\buse\\s+([\\w:]*?)\\b${trait}\\s+as\\s+([A-Za-z_]\\w*)\\s*;`, 'g'))].map((match) => [match[2]!, match[1]!.replace(/::$/, '')]));
    const name = [trait, ...aliases.keys()].map((entry) => entry.replace(/[$]/g, '\\$')).join('|');
    const match = new RegExp(`^\\s*(?:unsafe\\s+)?impl\\s*(?:<[^{]*?>)?\\s*((?:[A-Za-z_][\\w]*::)*(${name}))\\s*(?:<[^{]*?>)?\\s+for\\s`).exec(header);
    if (!match) return undefined;
    const alias = match[2] !== trait ? aliases.get(match[2]!) : undefined;
    return { written: match[1]!, ...(alias !== undefined ? { aliasOf: alias } : {}) };
  }
  return undefined;
}

/**
 * Rust: whether the impl found by {@link rustImplBlockOf} in `file` (its definitions `fileSymbols`, its text `text`)
 * names another trait than the contract — a path to a module of the repository defining a trait of that name of its own
 * (`impl other::Make for`, an alias `use crate::other::Make as O;`), or the bare name where the file defines that trait
 * itself or its `use` names such a module (`use crate::other::Make;`, `use kit::other::{Make, …};`): outside round
 * X59-01. A re-export, another crate's path, a glob are not followed (the name decides, as before).
 */
function rustNamesOtherTrait(contract: Contract, file: string, fileSymbols: readonly FileSymbol[], text: string, impl: { written: string; aliasOf?: string }, root: string | undefined): boolean {
  if (contract.file === undefined || file === contract.file) return false;
  const name = contract.name.replace(/[$]/g, '\\$');
  // (whether the module `segments` names is a repository file other than the contract's that defines the trait)
  const otherModule = (segments: readonly string[]): boolean => {
    if (root === undefined || segments.length === 0) return false;
    const target = rustModuleFile(root, file, segments);
    if (target === undefined || target === contract.file) return false;
    let targetText: string;
    try {
      targetText = readFileSync(path.join(root, target), 'utf8');
    } catch {
      return false;
    }
    return new RegExp(`^(?:pub(?:\\([^)]*\\))?\\s+)?(?:unsafe\\s+)?trait\\s+${name}\\b`, 'm').test(targetText);
  };
  if (impl.written.includes('::')) return otherModule(impl.written.split('::').slice(0, -1));
  if (impl.aliasOf !== undefined) return otherModule(impl.aliasOf === '' ? [] : impl.aliasOf.split('::'));
  if (fileSymbols.some((symbol) => symbol.file === file && symbol.kind === 'trait' && symbol.name === contract.name && symbol.container === undefined)) return true;
  for (const match of text.matchAll(new RegExp(`^\\s*(?:pub(?:\\([^)]*\\))?\\s+)?use\\s+((?:[A-Za-z_]\\w*::)+)(?:${name}\\s*;|\\{[^}]*(?<![\\w:])${name}\\s*[,}])`, 'gm'))) {
    return otherModule(match[1]!.replace(/::$/, '').split('::'));
  }
  return false;
}

/** Rust: the file (repo-relative) of the module `segments` names from `file` (`crate::a::b`, `kit::a`, `super::a`), undefined when not found. */
function rustModuleFile(root: string, file: string, segments: readonly string[]): string | undefined {
  const exists = (relative: string) => existsSync(path.join(root, relative));
  // (the crate's `src/`: the nearest directory up with a Cargo.toml)
  let crateDir: string | undefined;
  let crateName: string | undefined;
  for (let dir = path.posix.dirname(file); ; dir = path.posix.dirname(dir)) {
    const manifest = dir === '.' ? 'Cargo.toml' : `${dir}/Cargo.toml`;
    if (exists(manifest)) {
      crateDir = dir === '.' ? 'src' : `${dir}/src`;
      try {
        crateName = /^\s*name\s*=\s*["']([^"']+)["']/m.exec(readFileSync(path.join(root, manifest), 'utf8'))?.[1]?.replace(/-/g, '_');
      } catch {
        crateName = undefined;
      }
      break;
    }
    if (dir === '.' || dir === '/' || dir === '') break;
  }
  if (crateDir === undefined) return undefined;
  // (the directory of the file's own module's children: `src/a.rs` → src/a, `src/a/mod.rs` → src/a, a crate root → src)
  const moduleDir = (of: string) => (/(?:^|\/)(?:mod|lib|main)\.rs$/.test(of) ? path.posix.dirname(of) : of.replace(/\.rs$/, ''));
  let dir: string;
  let rest = [...segments];
  if (rest[0] === 'crate') {
    dir = crateDir;
    rest = rest.slice(1);
  } else if (rest[0] === 'self') {
    dir = moduleDir(file);
    rest = rest.slice(1);
  } else if (rest[0] === 'super') {
    dir = moduleDir(file);
    while (rest[0] === 'super') {
      dir = path.posix.dirname(dir);
      rest = rest.slice(1);
    }
  } else {
    // (the crate's own name — another crate's path leads nowhere here)
    if (rest[0] !== crateName) return undefined;
    dir = crateDir;
    rest = rest.slice(1);
  }
  let found: string | undefined = rest.length === 0 ? undefined : '';
  for (const segment of rest) {
    found = [`${dir}/${segment}.rs`, `${dir}/${segment}/mod.rs`].find(exists);
    if (found === undefined) return undefined;
    dir = `${dir}/${segment}`;
  }
  return found === '' ? undefined : found;
}

/** Whether `text` (Go) declares `type <name> struct { … }` with an embedded field (a line that is a type alone). */
function goEmbeds(text: string, name: string): boolean {
  const start = new RegExp(`\\btype\\s+${name}\\s*(?:\\[[^\\]]*\\]\\s*)?struct\\s*\\{`).exec(text);
  if (!start) return false;
  const body = text.slice(start.index + start[0].length, text.indexOf('}', start.index + start[0].length));
  return body.split(/[\n;]/).some((field) => /^\s*\*?[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)?(?:\[[^\]]*\])?\s*(?:`[^`]*`)?\s*(?:\/\/.*)?$/.test(field) && field.trim() !== '');
}
