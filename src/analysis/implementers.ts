/**
 * Which methods named like an interface's or trait's method may implement it — by name and shape, not by type
 * checking (nothing here resolves types): a Go or TS type (or class) implements an interface when it has a method of
 * every name the interface declares (one-method interfaces: any method of that name); a Rust type only through an
 * `impl Trait for Type` block in the method's file. Another interface's or trait's own declaration implements nothing.
 * Used by a scoped detect-cascades rename and by check-test-cascade's test doubles (outside rounds X54-10/04, and
 * X55-04/05: every same-named method was listed, an HTTP client's `Get` for a store's).
 */
import type { FileSymbol } from './engine/types.js';

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
 * Whether `method` (a method definition of `fileSymbols`, the definitions of its file, whose text is `text`) may
 * implement `contract`.
 */
export function mayImplement(contract: Contract, method: FileSymbol, fileSymbols: readonly FileSymbol[], text: string): boolean {
  if (method.kind !== 'method' || method.container === undefined || !contract.methods.has(method.name)) return false;
  const container = method.container.replace(/<.*$/, '');
  if (fileSymbols.some((symbol) => symbol.name === container && (symbol.kind === 'interface' || symbol.kind === 'trait'))) return false;
  if (method.file.endsWith('.rs')) {
    const name = contract.name.replace(/[$]/g, '\\$');
    return new RegExp(`\\bimpl\\b[^{;]*\\b${name}\\b[^{;]*\\bfor\\s+(?:[A-Za-z_][\\w]*::)*${container.replace(/^.*::/, '')}\\b`).test(text);
  }
  const own = new Set(fileSymbols.filter((symbol) => symbol.kind === 'method' && symbol.container?.replace(/<.*$/, '') === container).map((symbol) => symbol.name));
  return [...contract.methods].every((name) => own.has(name));
}
