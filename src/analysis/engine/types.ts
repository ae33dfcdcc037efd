/**
 * The public types of the code-analysis engine (src/analysis/engine). Other modules code against
 * these: keep them backward compatible (add optional fields, never rename or remove).
 */

/** A language the engine parses. `tsx` covers .tsx; `javascript` covers .js .mjs .cjs .jsx. */
export type Lang = 'typescript' | 'tsx' | 'javascript' | 'go' | 'python' | 'rust';

export type SymbolKind =
  | 'function'
  | 'method'
  | 'class'
  | 'interface'
  | 'type'
  | 'enum'
  | 'struct'
  | 'trait'
  | 'variable'
  | 'constant'
  | 'module'
  | 'macro'
  /** Go: a struct's named field (`container` is the struct). */
  | 'field';

/** One definition in a file. `line` is 1-based. */
export interface SymbolDef {
  name: string;
  kind: SymbolKind;
  line: number;
  /** 1-based column of the name. */
  column: number;
  /** Visible outside its module: TS/JS `export`, Go capitalised, Python not `_`-prefixed, Rust `pub`. */
  exported: boolean;
  /** For methods (and Go/Rust methods declared on a type): the class/struct/impl type name. */
  container?: string;
  /** TS/JS: the module's default export (`export default function f`, `export default f;`, `export { f as default }`). */
  defaultExport?: true;
}

/** One imported name: `imported` as written in the exporting module, `local` the binding here. */
export interface ImportedName {
  /** The exported name (`default` for a default import, `*` for a namespace/wildcard). */
  imported: string;
  /** The local binding (same as `imported` without an alias; the namespace name for `* as ns`). */
  local: string;
}

/**
 * One import (or re-export) statement. `module` is the specifier as written (`./x.js`, `fmt`,
 * `..pkg.mod`, `crate::a::b`); `resolved` the repository files it names (after module resolution;
 * empty for external modules). Go imports name a package (every file of its directory).
 */
export interface ImportRef {
  module: string;
  line: number;
  names: ImportedName[];
  /** `export {x as y} from 'm'` / `export * from 'm'` (TS/JS), `pub use` (Rust). */
  reexport: boolean;
  /** Filled by analyzeRepo (module resolution over the repository's files). */
  resolved: string[];
}

export type ReferenceKind = 'call' | 'method-call' | 'type' | 'import' | 'reexport' | 'other';

/** One use of a name (never a definition site, a string or a comment). Lines/columns 1-based. */
export interface Reference {
  file: string;
  line: number;
  column: number;
  /** The whole source line, trimmed. */
  context: string;
  kind: ReferenceKind;
  /** The identifier as written (the symbol's name, or a local alias). */
  name: string;
  /** Set when reached through an alias: the local name bound by `import {Foo as Bar}` / `use x::Foo as Bar`. */
  via?: string;
  /** Go: the key of a struct literal (`Options{Timeout: 5}`), a use of the struct's field. */
  fieldKey?: true;
  /** Go, Python: a member of an imported package or module (`pkg.Name`, `module.name`), not of an object. */
  packageMember?: true;
  /** Go: a member of a local named like an imported package (`cfg := cfg.Load(); cfg.Timeout`): an object's. */
  localObject?: true;
}

/** Everything the engine knows about one file. `file` is repo-relative with `/` separators. */
export interface FileAnalysis {
  file: string;
  lang: Lang;
  /** Git blob id of the analysed content (working-tree content when it differs from the index). */
  blob: string;
  symbols: SymbolDef[];
  imports: ImportRef[];
  /** Every identifier use in the file (references to all names, not only exported ones). */
  references: Reference[];
}

export interface RepoAnalysis {
  repoRoot: string;
  files: FileAnalysis[];
  /** Per run: files parsed now vs served from the on-disk cache. */
  stats: AnalysisStats;
}

export interface AnalysisStats {
  parsed: number;
  cached: number;
}

export interface AnalyzeOptions {
  /** Restrict to these repo-relative paths (default: every tracked file in a supported language). */
  files?: string[];
  /** Also analyse untracked, not-ignored files. */
  includeUntracked?: boolean;
}

export interface FindReferencesOptions {
  /** Only references that can reach the definition in this file (imports resolving to it, same Go package, …). */
  definedIn?: string;
  /** Only look in these repo-relative files. */
  files?: string[];
  includeUntracked?: boolean;
}

/** A listed symbol with its file. */
export interface FileSymbol extends SymbolDef {
  file: string;
}

/** File dependency graph: every key depends on the files in its value (repo-relative, sorted). */
export interface DependencyGraph {
  /** For each requested file: the repository files its imports resolve to (not itself). */
  dependsOn: Record<string, string[]>;
  /** For each requested file: repository files (any, not only requested ones) importing it. */
  dependedBy: Record<string, string[]>;
}
