/**
 * Which methods named like an interface's or trait's method may implement it — by name and shape, not by type
 * checking (nothing here resolves types): a Go or TS type (or class) implements an interface when it has a method of
 * every name the interface declares (one-method interfaces: any method of that name); a Rust type only through an
 * `impl Trait for Type` block in the method's file. Another interface's or trait's own declaration implements nothing.
 * Used by a scoped detect-cascades rename and by check-test-cascade's test doubles (outside rounds X54-10/04, and
 * X55-04/05: every same-named method was listed, an HTTP client's `Get` for a store's).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { listSymbols } from './engine/index.js';
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
  return { symbols, text: text.join('\n') };
}

export interface Contract {
  /** The interface or trait. */
  name: string;
  /** The names of the methods it declares. */
  methods: ReadonlySet<string>;
}

/** The contracts among `symbols` (one file's definitions): each interface or trait with its declared method names. */
export function contractsOf(symbols: readonly FileSymbol[]): Contract[] {
  return symbols
    .filter((symbol) => symbol.kind === 'interface' || symbol.kind === 'trait')
    .map((contract) => ({ name: contract.name, methods: new Set(symbols.filter((symbol) => symbol.kind === 'method' && symbol.container === contract.name).map((symbol) => symbol.name)) }));
}

/**
 * Whether `method` may implement `contract`. `fileSymbols`: the definitions `method`'s type can have methods in — its
 * file, or for Go every file of its package (a type's methods may be spread over them: X56-05); `text`: those files'
 * text (a Go struct embedding another type gets its methods; a Rust method must sit in an `impl Trait for` block).
 */
export function mayImplement(contract: Contract, method: FileSymbol, fileSymbols: readonly FileSymbol[], text: string): boolean {
  if (method.kind !== 'method' || method.container === undefined || !contract.methods.has(method.name)) return false;
  const container = method.container.replace(/<.*$/, '');
  if (fileSymbols.some((symbol) => symbol.name === container && (symbol.kind === 'interface' || symbol.kind === 'trait'))) return false;
  if (method.file.endsWith('.rs')) return rustImplBlockOf(text, method.line, contract.name);
  const own = new Set(fileSymbols.filter((symbol) => symbol.kind === 'method' && symbol.container?.replace(/<.*$/, '') === container).map((symbol) => symbol.name));
  if ([...contract.methods].every((name) => own.has(name))) return true;
  // (Go: a struct embedding a type — `struct{ *MemStore }`, a fake `struct{ store.Store }` — has that type's methods too)
  return method.file.endsWith('.go') && goEmbeds(text, container);
}

/** Whether the `impl` block holding line `line` of `text` (a Rust file) implements `trait` (`impl<T> Trait<U> for X`). */
function rustImplBlockOf(text: string, line: number, trait: string): boolean {
  const lines = text.split(/\r?\n/);
  for (let index = Math.min(line, lines.length) - 1; index >= 0; index -= 1) {
    if (!/^\s*(?:unsafe\s+)?impl\b/.test(lines[index]!)) continue;
    const header = lines.slice(index, index + 5).join(' ').split('{')[0]!;
    const name = trait.replace(/[$]/g, '\\$');
    return new RegExp(`^\\s*(?:unsafe\\s+)?impl\\s*(?:<[^{]*?>)?\\s*(?:[A-Za-z_][\\w]*::)*${name}\\s*(?:<[^{]*?>)?\\s+for\\s`).test(header);
  }
  return false;
}

/** Whether `text` (Go) declares `type <name> struct { … }` with an embedded field (a line that is a type alone). */
function goEmbeds(text: string, name: string): boolean {
  const start = new RegExp(`\\btype\\s+${name}\\s*(?:\\[[^\\]]*\\]\\s*)?struct\\s*\\{`).exec(text);
  if (!start) return false;
  const body = text.slice(start.index + start[0].length, text.indexOf('}', start.index + start[0].length));
  return body.split(/[\n;]/).some((field) => /^\s*\*?[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)?(?:\[[^\]]*\])?\s*(?:`[^`]*`)?\s*(?:\/\/.*)?$/.test(field) && field.trim() !== '');
}
