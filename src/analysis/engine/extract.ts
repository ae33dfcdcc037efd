/**
 * Per-file facts from a tree-sitter syntax tree: definitions, imports and every identifier use.
 * Identifier uses and import statements are found with tree-sitter queries (one compiled query per
 * language); definitions by walking the declarations that can hold them (top level, class/impl
 * bodies, Rust inline modules). Strings and comments never yield a reference: only identifier
 * nodes do.
 */
import type { Node, Parser, Query } from 'web-tree-sitter';
import { createParser, queryClass, loadLanguage } from './grammars.js';
import type { ImportedName, Lang, ReferenceKind, SymbolDef, SymbolKind } from './types.js';

/** An import before module resolution (what the cache stores). */
export interface RawImport {
  module: string;
  line: number;
  names: ImportedName[];
  reexport: boolean;
  /** Rust `mod x;` (a file module declaration, resolved relative to the declaring file). */
  modDecl?: boolean;
  /** Python relative-import level (number of leading dots). */
  level?: number;
  /** TS `declare module './m' { … }`: the lines (first, last) of the augmentation block. */
  augments?: [number, number];
  /**
   * Python: an import inside a function or a class body binds its names there only — the spans of text where it does:
   * the function's body (not its defaults and annotations, read in the enclosing scope — X51-18); the class body from
   * the import on, without the bodies of the functions and classes nested in it and its comprehensions (which skip
   * the class's names — X53-03).
   */
  scope?: ImportSpan[];
  /** The statement's 1-based column (two statements on one line: which one a name is in). */
  column?: number;
  /** An alias by assignment read as an import (`const bar = foo`, Python `bar = foo`, foo imported): X66-37. */
  assigned?: true;
  /**
   * Rust: the span (line, column, end line, end column: the end excluded) of the block a `use` declaration is in — an
   * inline module's body, a function's — where it binds its names (from the syntax tree: not its indentation; by
   * position, not whole lines: `} else if Item::new(1)… {` on the line closing a branch is outside it — X63-13);
   * absent for one at the top of the file.
   */
  block?: ImportSpan;
  /** Rust: that block is an inline module's body (`mod tests { use super::Item; }`: `super` is the module around it). */
  inlineModule?: boolean;
  /**
   * Rust: the inline modules the declaration is in, outermost first (`mod a { mod tests { fn f() { use super::x::Y; } } }`:
   * a, tests) — where its `self::`/`super::` paths start, not at the file's module.
   */
  modulePath?: string[];
  /**
   * Rust: the declaration's `#[cfg(…)]` holds only under `cfg(test)` (true: `#[cfg(test)] use mock::Clock;`) or never
   * under it (false: `#[cfg(not(test))] use real::Clock;`) — a test build sees the one, the other build the other (X64-13).
   */
  cfgTest?: boolean;
}

/** A span of text: line, column, end line, end column (1-based; columns as a reference's are counted; the end excluded). */
export type ImportSpan = [line: number, column: number, endLine: number, endColumn: number];

/**
 * What the syntax says about a reference beyond its kind: `f` — a Go struct literal's key
 * (`Options{Timeout: 5}`), a use of the struct's field, not of a value named like it; `p` — a member
 * of an imported package or module (`pkg.Name`, `module.name`, not called): no object's member; `o` (Go) — a member of
 * a local named like an imported package (`for _, cfg := range l { cfg.Timeout }`): no package's.
 */
export type RefFlag = 'f' | 'p' | 'o';

/** Compact reference: [name, line, column, kind, flag]. */
export type RawRef = [string, number, number, ReferenceKind, RefFlag?];

/**
 * What one parse yields; this is what the per-blob cache stores. References are one string
 * (`name\tline\tcolumn\tkind` lines, see {@link encodeRefs}): parsing a cache entry then allocates
 * a handful of objects instead of one array per identifier, and callers decode only the names they
 * look for ({@link decodeRefs}) — a dependency graph never decodes them at all.
 */
export interface FileFacts {
  symbols: SymbolDef[];
  imports: RawImport[];
  refs: string;
  /** Too large to parse (see maxSourceChars in index.ts): references come from a text scan when asked for. */
  tooLarge?: true;
  /** Go: the name in the file's `package` clause (an external test package `x_test` is another package than `x`). */
  package?: string;
  /**
   * Rust: the file's inline modules with a body (`mod tests { … }`) — their names from the file's module down (a, tests)
   * and their bodies' spans: where a reference is, which module's names are in scope there (X63-01/02/08).
   */
  rustModules?: Array<{ path: string[]; span: ImportSpan; block?: ImportSpan }>;
  /**
   * Rust: the file's `impl` and `trait` items — their spans, the trait's name (last segment), the implementing type's
   * name and path as written (`impl Default for Item { … }` → Default, Item): what `Self` is at a reference (X63-12).
   */
  rustImpls?: Array<{ span: ImportSpan; trait?: string; type?: string; path?: string }>;
  /**
   * Rust: the type names bound where the file's module does not bind them, and every `type` alias — `param`, a generic
   * parameter (`fn f<Item: Make>()`, `impl<Item> …`: span = the item owning it, X64-01); `item`, a struct, enum, union
   * or trait declared in a block (`fn f() { struct Item; … }`: span = the block, X64-04); `alias`, `type Item = …;`
   * with its target path as written, generic arguments dropped (`crate::util::Item`; absent when no plain path) — in a
   * block (span = the block, X64-02), in an impl or a trait (span = the impl: `Self::Item`, `assoc`, X64-05) or at a
   * module's level (no span: the module binds it, X64-03). Line and column are the name's.
   */
  rustLocals?: RustLocal[];
  /**
   * Rust: the items (and modules with an inner `#![cfg(…)]`) whose `cfg` holds only under `cfg(test)` (`test`: true) or
   * never under it (false), with their spans: which `#[cfg(test)]`/`#[cfg(not(test))]` declarations a reference sees (X64-13).
   */
  rustCfg?: Array<{ span: ImportSpan; test: boolean }>;
  /**
   * Rust: the file's test-only lines and its `mod x;` declarations ({@link rustTestItems}) — rule E46's test code, kept
   * with the facts so check-test-cascade does not parse each file again per call; absent when it has neither and no
   * `cfg` (or when the facts are of an older format: then they are parsed again).
   */
  rustTests?: RustTestItems;
  /**
   * TS/JS and Python: the module-level aliases by assignment of a name the file declares itself (`export const bar =
   * foo;`, `export { foo as bar }`, Python `bar = foo` with `def foo` in the file): `local` is `of` (X66-37). `exported`:
   * importers can name it (TS/JS an export, Python every module-level name). One of an imported name is a re-export
   * (TS/JS) or an import (Python) of that name in `imports` instead.
   */
  aliases?: Array<{ local: string; of: string; line: number; exported?: true }>;
}

/** One entry of {@link FileFacts.rustLocals}. */
export interface RustLocal {
  name: string;
  kind: 'param' | 'item' | 'alias';
  line: number;
  column: number;
  span?: ImportSpan;
  target?: string;
  /** An impl's or a trait's associated type (`Self::Item` names it). */
  assoc?: true;
}

const kindCode: Record<ReferenceKind, string> = { call: 'c', 'method-call': 'm', type: 't', import: 'i', reexport: 'r', other: 'o' };
const codeKind: Record<string, ReferenceKind> = { c: 'call', m: 'method-call', t: 'type', i: 'import', r: 'reexport', o: 'other' };

export function encodeRefs(refs: readonly RawRef[]): string {
  return refs.map(([name, line, column, kind, flag]) => `${name}\t${line}\t${column}\t${kindCode[kind]}${flag ? `\t${flag}` : ''}`).join('\n');
}

function decodedRef(name: string, line: string | undefined, column: string | undefined, kind: string | undefined, flag: string | undefined): RawRef {
  const ref: RawRef = [name, Number(line), Number(column), codeKind[kind!] ?? 'other'];
  if (flag === 'f' || flag === 'p' || flag === 'o') ref.push(flag);
  return ref;
}

/** The references in `encoded`, or only those named one of `names`. */
export function decodeRefs(encoded: string, names?: ReadonlySet<string>): RawRef[] {
  const result: RawRef[] = [];
  if (encoded === '') return result;
  if (names) {
    // Find each wanted name at a line start without splitting the whole text.
    for (const name of names) {
      const needle = `${name}\t`;
      let from = 0;
      for (;;) {
        const at = encoded.indexOf(needle, from);
        if (at < 0) break;
        from = at + needle.length;
        if (at > 0 && encoded.charCodeAt(at - 1) !== 10) continue;
        const end = encoded.indexOf('\n', at);
        const [, line, column, kind, flag] = encoded.slice(at, end < 0 ? undefined : end).split('\t');
        result.push(decodedRef(name, line, column, kind, flag));
      }
    }
    return result.sort((a, b) => a[1] - b[1] || a[2] - b[2]);
  }
  for (const row of encoded.split('\n')) {
    const [name, line, column, kind, flag] = row.split('\t');
    result.push(decodedRef(name!, line, column, kind, flag));
  }
  return result;
}

/** Identifier-like leaves per language (the reference query). */
const identifierQuery: Record<Lang, string> = {
  typescript:
    '[(identifier) (type_identifier) (property_identifier) (shorthand_property_identifier) (shorthand_property_identifier_pattern)] @ref',
  tsx: '[(identifier) (type_identifier) (property_identifier) (shorthand_property_identifier) (shorthand_property_identifier_pattern)] @ref',
  javascript: '[(identifier) (property_identifier) (shorthand_property_identifier) (shorthand_property_identifier_pattern)] @ref',
  go: '[(identifier) (type_identifier) (field_identifier) (package_identifier)] @ref',
  python: '(identifier) @ref',
  rust: '[(identifier) (type_identifier) (field_identifier)] @ref',
};

/** Import (and re-export) statements per language; TS/JS also `import('x')` and `require('x')` with a literal specifier. */
const dynamicImport = '(call_expression function: (import) arguments: (arguments . (string) @spec)) @require';
const requireCall = '(call_expression function: (identifier) @fn (#eq? @fn "require") arguments: (arguments . (string) @spec)) @require';
/** TS `declare module './m' { … }`: an augmentation of that module (its declarations merge with the module's). */
const augmentation = '(ambient_declaration (module name: (string) @spec) @augment)';
const importQuery: Record<Lang, string> = {
  typescript: `(import_statement) @import (export_statement source: (_)) @reexport ${dynamicImport} ${requireCall} ${augmentation}`,
  tsx: `(import_statement) @import (export_statement source: (_)) @reexport ${dynamicImport} ${requireCall} ${augmentation}`,
  javascript: `(import_statement) @import (export_statement source: (_)) @reexport ${dynamicImport} ${requireCall}`,
  go: '(import_spec) @import',
  python: '(import_statement) @import (import_from_statement) @import',
  rust: '(use_declaration) @import (mod_item name: (identifier) !body) @mod (attribute_item (attribute (identifier) arguments: (token_tree))) @macroUse (extern_crate_declaration alias: (identifier)) @externCrate',
};

/**
 * Local binding sites per language: parameters, variables and the other declarations made inside a
 * function or block. A binding site is never a reference; uses inside the binding's scope name the
 * local, not a module-level symbol, and are dropped too. Capture names say what is bound:
 * - `@param` / `@var` — a value (in Go and Python, whose scopes have one namespace, any use);
 * - `@type` — a type only (TS `interface`/`type`); `@both` — a value and a type (a class, an enum,
 *   Rust's local items);
 * - `@typeparam` — a type parameter: bound in the declaration that owns the parameter list; `@receiverparam`
 *   a Go method's receiver type parameter (`func (l *List[T]) …`): in the method; `@infer` (TS `infer T`): in the
 *   conditional type's true branch; `@mapped` (TS `[K in keyof T]`): in the mapped type;
 * - `@self` — the name of a class or function expression: bound inside that expression only;
 * - `@site` — a declaration that binds no name in any scope a use can see (an object key, a field,
 *   an enum member, a label): not a reference, nothing else dropped;
 * - `@global` — Python `global x`: the function's assignments to `x` bind the module's `x`;
 * - `@augmented` — Python `x += 1`: binds `x` as `@var` does, but its target is a use too (it reads `x` first).
 * (Outside attack X47: each of these was reported as a reference to a module-level name.)
 */
const tsBindings = [
  '(required_parameter pattern: (identifier) @param)',
  '(optional_parameter pattern: (identifier) @param)',
  '(arrow_function parameter: (identifier) @param)',
  '(variable_declarator name: (identifier) @var)',
  '(object_pattern (shorthand_property_identifier_pattern) @var)',
  '(pair_pattern value: (identifier) @var)',
  '(array_pattern (identifier) @var)',
  '(rest_pattern (identifier) @var)',
  '(catch_clause parameter: (identifier) @var)',
  '(function_declaration name: (identifier) @var)',
  '(generator_function_declaration name: (identifier) @var)',
  '(for_in_statement left: (identifier) @var)',
  '(class_declaration name: (type_identifier) @both)',
  '(abstract_class_declaration name: (type_identifier) @both)',
  '(enum_declaration name: (identifier) @both)',
  '(interface_declaration name: (type_identifier) @type)',
  '(type_alias_declaration name: (type_identifier) @type)',
  '(type_parameter name: (type_identifier) @typeparam)',
  '(infer_type (type_identifier) @infer)',
  '(mapped_type_clause name: (type_identifier) @mapped)',
  '(class name: (type_identifier) @self)',
  '(function_expression name: (identifier) @self)',
  '(pair key: (property_identifier) @site)',
  '(property_signature name: (property_identifier) @site)',
  '(method_signature name: (property_identifier) @site)',
  '(abstract_method_signature name: (property_identifier) @site)',
  '(public_field_definition name: (property_identifier) @site)',
  '(method_definition name: (property_identifier) @site)',
  '(enum_body name: (property_identifier) @member)',
  '(enum_assignment name: (property_identifier) @member)',
  '(index_signature name: (identifier) @site)',
].join(' ');
const jsBindings = [
  '(formal_parameters (identifier) @param)',
  '(arrow_function parameter: (identifier) @param)',
  '(variable_declarator name: (identifier) @var)',
  '(object_pattern (shorthand_property_identifier_pattern) @var)',
  '(pair_pattern value: (identifier) @var)',
  '(array_pattern (identifier) @var)',
  '(rest_pattern (identifier) @var)',
  '(catch_clause parameter: (identifier) @var)',
  '(function_declaration name: (identifier) @var)',
  '(generator_function_declaration name: (identifier) @var)',
  '(for_in_statement left: (identifier) @var)',
  '(class_declaration name: (identifier) @var)',
  '(class name: (identifier) @self)',
  '(function_expression name: (identifier) @self)',
  '(pair key: (property_identifier) @site)',
  '(method_definition name: (property_identifier) @site)',
  '(field_definition property: (property_identifier) @site)',
].join(' ');
const bindingQuery: Record<Lang, string> = {
  typescript: tsBindings,
  tsx: tsBindings,
  javascript: jsBindings,
  go: [
    '(parameter_declaration name: (identifier) @param)',
    '(variadic_parameter_declaration name: (identifier) @param)',
    '(short_var_declaration left: (expression_list (identifier) @var))',
    '(var_spec name: (identifier) @var)',
    '(const_spec name: (identifier) @var)',
    '(range_clause left: (expression_list (identifier) @var))',
    '(type_switch_statement alias: (expression_list (identifier) @var))',
    '(receive_statement left: (expression_list (identifier) @var) ":=")',
    '(type_spec name: (type_identifier) @var)',
    '(type_alias name: (type_identifier) @var)',
    '(type_parameter_declaration name: (identifier) @typeparam)',
    '(method_declaration receiver: (parameter_list (parameter_declaration type: (generic_type type_arguments: (type_arguments (type_elem (type_identifier) @receiverparam))))))',
    '(method_declaration receiver: (parameter_list (parameter_declaration type: (pointer_type (generic_type type_arguments: (type_arguments (type_elem (type_identifier) @receiverparam)))))))',
    '(field_declaration name: (field_identifier) @site)',
    '(method_elem name: (field_identifier) @site)',
  ].join(' '),
  python: [
    '(parameters (identifier) @param)',
    '(lambda_parameters (identifier) @param)',
    '(default_parameter name: (identifier) @param)',
    '(typed_parameter (identifier) @param)',
    '(typed_default_parameter name: (identifier) @param)',
    '(list_splat_pattern (identifier) @param)',
    '(dictionary_splat_pattern (identifier) @param)',
    '(assignment left: (identifier) @var)',
    '(augmented_assignment left: (identifier) @augmented)',
    '(pattern_list (identifier) @var)',
    '(tuple_pattern (identifier) @var)',
    '(list_pattern (identifier) @var)',
    '(for_statement left: (identifier) @var)',
    '(for_in_clause left: (identifier) @var)',
    '(function_definition name: (identifier) @var)',
    '(class_definition name: (identifier) @var)',
    '(as_pattern_target (identifier) @var)',
    '(as_pattern_target (tuple (identifier) @var))',
    '(named_expression name: (identifier) @var)',
    '(case_pattern (dotted_name . (identifier) @var .))',
    '(keyword_pattern (dotted_name . (identifier) @var .))',
    '(as_pattern (case_pattern) (identifier) @var)',
    '(splat_pattern (identifier) @var)',
    '(keyword_pattern . (identifier) @site)',
    '(function_definition type_parameters: (type_parameter (type (identifier) @typeparam)))',
    '(class_definition type_parameters: (type_parameter (type (identifier) @typeparam)))',
    '(type_alias_statement left: (type (generic_type (type_parameter (type (identifier) @typeparam)))))',
    '(global_statement (identifier) @global)',
    '(delete_statement (identifier) @var)',
  ].join(' '),
  rust: [
    '(let_declaration pattern: (identifier) @var)',
    '(tuple_pattern (identifier) @var)',
    '(parameter pattern: (identifier) @param)',
    '(closure_parameters (identifier) @param)',
    '(for_expression pattern: (identifier) @var)',
    '(tuple_struct_pattern (identifier) @pattern)',
    '(ref_pattern (identifier) @pattern)',
    '(captured_pattern . (identifier) @pattern)',
    '(match_pattern (identifier) @pattern)',
    '(let_condition pattern: (identifier) @pattern)',
    '(slice_pattern (identifier) @pattern)',
    '(field_pattern name: (shorthand_field_identifier) @var)',
    '(field_pattern pattern: (identifier) @var)',
    '(function_item name: (identifier) @var)',
    '(const_item name: (identifier) @var)',
    '(static_item name: (identifier) @var)',
    '(struct_item name: (type_identifier) @both)',
    '(union_item name: (type_identifier) @both)',
    '(enum_item name: (type_identifier) @type)',
    '(type_item name: (type_identifier) @type)',
    '(trait_item name: (type_identifier) @type)',
    '(mod_item name: (identifier) @type)',
    '(type_parameter name: (type_identifier) @typeparam)',
    '(const_parameter name: (identifier) @typeparam)',
    '(field_declaration name: (field_identifier) @site)',
    '(enum_variant name: (identifier) @site)',
    '(label (identifier) @site)',
    '(lifetime (identifier) @site)',
  ].join(' '),
};

/** Nodes that open a scope for local bindings (the file's top level is not one). */
const scopeTypes: Record<Lang, ReadonlySet<string>> = (() => {
  const ts = new Set(['statement_block', 'switch_body', 'function_declaration', 'generator_function_declaration', 'function_expression', 'function', 'generator_function', 'arrow_function', 'method_definition', 'for_statement', 'for_in_statement', 'catch_clause']);
  return {
    typescript: ts,
    tsx: ts,
    javascript: ts,
    go: new Set(['block', 'function_declaration', 'method_declaration', 'func_literal', 'function_type', 'if_statement', 'for_statement', 'expression_switch_statement', 'type_switch_statement', 'select_statement', 'expression_case', 'type_case', 'default_case', 'communication_case']),
    python: new Set(['function_definition', 'lambda', 'list_comprehension', 'set_comprehension', 'dictionary_comprehension', 'generator_expression']),
    rust: new Set(['block', 'function_item', 'closure_expression', 'for_expression', 'function_signature_item']),
  };
})();

/** Parameter lists: a binding inside one belongs to the function that owns the list. */
const parameterListTypes = new Set(['formal_parameters', 'parameters', 'lambda_parameters', 'parameter_list', 'closure_parameters']);

/** Namespaces a binding or a use is in: a bit set (Go and Python scopes have one namespace: a binding there is in both). */
const VALUE = 1;
const TYPE = 2;

/**
 * The namespaces an identifier use can name a local in: values (an identifier), types (a type
 * identifier), or none (0: a member, a keyword argument's name, a segment of a qualified path).
 */
function useSpace(lang: Lang, node: Node): number {
  const type = node.type;
  let space: number;
  if (type === 'identifier' || type === 'shorthand_property_identifier' || type === 'shorthand_property_identifier_pattern') space = VALUE;
  else if (type === 'type_identifier') space = TYPE;
  else return 0;
  const parent = node.parent;
  if (!parent) return space;
  if (lang === 'python' && parent.type === 'attribute' && isField(parent, 'attribute', node)) return 0;
  if (lang === 'python' && parent.type === 'keyword_argument' && isField(parent, 'name', node)) return 0;
  if (lang === 'rust' && (parent.type === 'scoped_identifier' || parent.type === 'scoped_type_identifier')) return 0;
  if (lang === 'go' && parent.type === 'qualified_type' && isField(parent, 'name', node)) return 0;
  if ((lang === 'typescript' || lang === 'tsx') && parent.type === 'nested_type_identifier' && isField(parent, 'name', node)) return 0;
  return space;
}

/** The namespaces a capture of the binding query binds in `lang` (0: a declaration site only). */
function bindingSpace(lang: Lang, capture: string): number {
  const single = lang === 'go' || lang === 'python';
  switch (capture) {
    case 'param':
    case 'var':
    case 'augmented':
    case 'pattern':
      return single ? VALUE | TYPE : VALUE;
    case 'member':
      return VALUE;
    case 'type':
    case 'infer':
    case 'mapped':
      return single ? VALUE | TYPE : TYPE;
    case 'typeparam':
      // (Rust: a const generic parameter is a value)
      return single || lang === 'rust' ? VALUE | TYPE : TYPE;
    case 'both':
    case 'self':
    case 'receiverparam':
      return VALUE | TYPE;
    default:
      return 0;
  }
}

const patternTypes = new Set(['object_pattern', 'pair_pattern', 'array_pattern', 'rest_pattern', 'assignment_pattern']);

/** Whether the program binds `name` to a module at its top level: `import * as name`, `import name = require()`, `const name = require('m')`. */
function namespaceImport(program: Node, name: string): boolean {
  for (const statement of program.namedChildren) {
    if (statement?.type === 'import_statement') {
      const clause = statement.namedChildren.find((child) => child?.type === 'import_clause');
      if (clause?.namedChildren.some((part) => part?.type === 'namespace_import' && part.namedChild(0)?.text === name)) return true;
      const required = statement.namedChildren.find((child) => child?.type === 'import_require_clause');
      if (required?.namedChildren.some((part) => part?.type === 'identifier' && part.text === name)) return true;
    } else if (statement?.type === 'lexical_declaration' || statement?.type === 'variable_declaration') {
      for (const declarator of statement.namedChildren) {
        if (declarator?.type !== 'variable_declarator' || declarator.childForFieldName('name')?.text !== name) continue;
        const value = declarator.childForFieldName('value');
        if (value?.type === 'call_expression' && value.childForFieldName('function')?.text === 'require' && value.childForFieldName('arguments')?.namedChild(0)?.type === 'string') return true;
      }
    }
  }
  return false;
}

/**
 * `import('x').then(({ a, b: c }) => …)` (or `function ({ … })`): the callback's first parameter's object pattern, which
 * destructures the module's exports (X67-05); `call` is the `import('x')` call.
 */
function thenPattern(call: Node): Node | null {
  const member = call.parent;
  if (member?.type !== 'member_expression' || member.childForFieldName('object')?.id !== call.id || member.childForFieldName('property')?.text !== 'then') return null;
  const outer = member.parent;
  if (outer?.type !== 'call_expression' || outer.childForFieldName('function')?.id !== member.id) return null;
  const callback = outer.childForFieldName('arguments')?.namedChild(0);
  if (callback?.type !== 'arrow_function' && callback?.type !== 'function_expression') return null;
  let first = callback.childForFieldName('parameters')?.namedChild(0) ?? null;
  if (first?.type === 'required_parameter') first = first.childForFieldName('pattern');
  return first?.type === 'object_pattern' ? first : null;
}

/** `const { a } = require('x')` / `await import('x')` / `import('x').then(({ a }) => …)`: the names are the module's exports, not locals. */
function bindsModuleExports(node: Node): boolean {
  let ancestor = node.parent;
  if (!ancestor || !patternTypes.has(ancestor.type)) return false;
  let pattern = ancestor;
  while (ancestor && patternTypes.has(ancestor.type)) {
    pattern = ancestor;
    ancestor = ancestor.parent;
  }
  if (ancestor?.type === 'required_parameter') ancestor = ancestor.parent;
  if (ancestor?.type === 'formal_parameters') {
    // (the callback's first parameter: the function, its arguments, the `.then(…)` call, `import('x').then`)
    const call = ancestor.parent?.parent?.parent?.childForFieldName('function')?.childForFieldName('object');
    return call?.type === 'call_expression' && call.childForFieldName('function')?.type === 'import' && thenPattern(call)?.id === pattern.id;
  }
  if (ancestor?.type !== 'variable_declarator') return false;
  let value = ancestor.childForFieldName('value');
  // `const { a, b: c } = ns` at the module's level, ns a namespace import (`import * as ns`, `import ns = require()`,
  // `const ns = require('m')`): a's the module's (X67-04)
  if (value?.type === 'identifier') return ancestor.parent?.parent?.type === 'program' && namespaceImport(ancestor.parent.parent, value.text);
  if (value?.type === 'await_expression') value = value.namedChild(0);
  if (value?.type !== 'call_expression') return false;
  const callee = value.childForFieldName('function');
  return callee?.type === 'import' || (callee?.type === 'identifier' && callee.text === 'require');
}

/** A local binding's scope: the text range it covers and the namespaces it binds there. */
type LocalScope = [from: number, to: number, space: number];
interface Locals {
  /** Binding and declaration sites (start offsets): never references. */
  sites: Set<number>;
  /** Per name, the non-top-level scopes that bind it. */
  scopes: Map<string, LocalScope[]>;
  /** Per name, ranges where it names the module's symbol whatever a scope around them binds (Python `global`). */
  excluded: Map<string, Array<[number, number]>>;
}
interface BindingCapture {
  node: Node;
  name: string;
}

/** Binding sites and, per name, the ranges of the non-top-level scopes that bind it. */
function localBindings(lang: Lang, root: Node, query: Query): Locals {
  return bindingsFrom(
    lang,
    query.captures(root).map((capture) => ({ node: capture.node, name: capture.name })),
  );
}

/**
 * {@link localBindings} for the binding sites named one of `names` only: a binding site is an
 * identifier, so it starts at one of its name's occurrences in the text — the query runs on each
 * occurrence's range instead of the whole tree.
 */
function localBindingsOf(lang: Lang, root: Node, query: Query, source: string, names: ReadonlySet<string>, bindless: readonly Span[] = []): Locals {
  const captures: BindingCapture[] = [];
  const seen = new Set<string>();
  for (const name of names) {
    for (const at of occurrences(source, name)) {
      // (inside a statement that binds nothing the query captures: an error-free Python import)
      if (within(bindless, at - 2, at + name.length)) continue;
      for (const capture of query.captures(root, byteRange(Math.max(0, at - 2), at + name.length))) {
        const node = capture.node;
        const key = `${node.id}:${capture.name}`;
        if (!isOccurrence(node, source, at, name.length) || seen.has(key)) continue;
        seen.add(key);
        captures.push({ node, name: capture.name });
      }
    }
  }
  return bindingsFrom(lang, captures);
}

/**
 * Python: what the import query (`(import_statement) @import (import_from_statement) @import`) matches, found from the
 * text — each statement holds an `import` keyword, whose parent it is — instead of a query over the whole tree;
 * undefined for a tree with a syntax error (a statement's keyword may be missing there: the query decides).
 */
function pythonImportMatches(root: Node, source: string): Array<{ captures: Array<{ name: string; node: Node }> }> | undefined {
  if (!pythonImportQueryIs || root.hasError) return undefined;
  const matches: Array<{ captures: Array<{ name: string; node: Node }> }> = [];
  for (const at of occurrences(source, 'import')) {
    const keyword = root.descendantForIndex(at, at + 6);
    if (!keyword || keyword.type !== 'import' || keyword.isNamed || keyword.startIndex !== at || keyword.endIndex !== at + 6) continue;
    const statement = keyword.parent;
    if (statement && pythonStatements.has(statement.type)) matches.push({ captures: [{ name: 'import', node: statement }] });
  }
  return matches;
}

/** A text range (node indices): `[start, end)`. */
interface Span {
  start: number;
  end: number;
}

/** Python's import statements (the import query's captures). */
const pythonStatements = new Set(['import_statement', 'import_from_statement']);
/** The import query {@link pythonImportMatches} answers for. */
const pythonImportQueryIs = importQuery.python === '(import_statement) @import (import_from_statement) @import';

/**
 * The ranges in text order, overlapping ones and those with only blanks (spaces, tabs, line ends) between them
 * joined: no node starts in such a gap, so a query over a joined span finds the nodes starting in its ranges and
 * no other.
 */
function blankJoined(ranges: readonly Span[], source: string): Span[] {
  const spans: Span[] = [];
  for (const range of [...ranges].sort((a, b) => a.start - b.start)) {
    const last = spans.at(-1);
    if (last && (range.start <= last.end || /^[ \t\r\n]*$/.test(source.slice(last.end, range.start)))) last.end = Math.max(last.end, range.end);
    else spans.push({ start: range.start, end: range.end });
  }
  return spans;
}

/** Whether `[start, end)` lies inside one of the spans. */
function within(spans: readonly Span[], start: number, end: number): boolean {
  for (const span of spans) if (span.start <= start && end <= span.end) return true;
  return false;
}

/**
 * A query range for the text between two node indices: web-tree-sitter's nodes count UTF-16 code
 * units (the parser reads the JS string as UTF-16), its query ranges are passed to the C side as
 * bytes — two per code unit.
 */
function byteRange(start: number, end: number): { startIndex: number; endIndex: number } {
  return { startIndex: start * 2, endIndex: end * 2 };
}

/** Start offsets of `word` in `text` (every occurrence, whole word or not: the syntax tree decides). */
function occurrences(text: string, word: string): number[] {
  const result: number[] = [];
  if (word === '') return result;
  for (let at = text.indexOf(word); at >= 0; at = text.indexOf(word, at + 1)) result.push(at);
  return result;
}

/** Lists of type parameters: their owner (the list's parent) is the parameters' scope (Python's list is `type_parameter`). */
const typeParameterLists = new Set(['type_parameters', 'type_parameter_list']);
/** Rust: an impl's or a trait's members bind no name in the block around them. */
const rustMemberHolders = new Set(['impl_item', 'trait_item', 'declaration_list']);
/** Python comprehensions: their own scope, except for the first iterable (evaluated outside) and `:=` (binds outside). */
const comprehensionTypes = new Set(['list_comprehension', 'set_comprehension', 'dictionary_comprehension', 'generator_expression']);
/** Functions whose parameters (and, in Python, locals) are bound in their body only: defaults, annotations and types are outside. */
const bodyScoped = new Set(['function_definition', 'lambda', 'function_declaration', 'method_declaration', 'func_literal', 'function_item', 'closure_expression']);
/** Declarations whose names a later statement sees, not an earlier one (Go constants and variables, Rust `let`). */
const declaredAfter: Partial<Record<Lang, ReadonlySet<string>>> = {
  go: new Set(['short_var_declaration', 'var_spec', 'const_spec', 'range_clause', 'receive_statement']),
  rust: new Set(['let_declaration']),
};

type Range = [from: number, to: number];

function rangeOf(node: Node | null): Range[] | null {
  return node ? [[node.startIndex, node.endIndex]] : null;
}

/** The nearest ancestor of `node` of one of `types`. */
function ancestorOf(node: Node, types: ReadonlySet<string>): Node | null {
  let ancestor = node.parent;
  while (ancestor && !types.has(ancestor.type)) ancestor = ancestor.parent;
  return ancestor;
}

/** The range a scope node covers for its locals: a function's body only; a comprehension without its first iterable. */
function scopeRanges(lang: Lang, scope: Node): Range[] {
  if (bodyScoped.has(scope.type) && (lang === 'python' || lang === 'go' || lang === 'rust')) {
    const body = scope.childForFieldName('body');
    if (body) return [[body.startIndex, body.endIndex]];
  }
  if (lang === 'python' && comprehensionTypes.has(scope.type)) {
    const first = scope.namedChildren.find((child) => child?.type === 'for_in_clause')?.childForFieldName('right');
    if (first) return [[scope.startIndex, first.startIndex], [first.endIndex, scope.endIndex]];
  }
  if (lang === 'rust' && scope.type === 'for_expression') {
    const body = scope.childForFieldName('body');
    if (body) return [[body.startIndex, body.endIndex]];
  }
  return [[scope.startIndex, scope.endIndex]];
}

/**
 * The text ranges a capture's binding covers, or null when it is a top-level (or member) binding.
 * Follows each language's scope rules where they differ from "the enclosing block": a function's
 * parameters and locals are bound in its body (Python, Go, Rust: defaults, annotations and
 * parameter types are outside); a Go constant or variable and a Rust `let` from the end of their
 * declaration (`x := x`, `let x = x()` read the outer x); a Go type-switch variable in each clause's
 * statements (its case types are outside); Python's `:=` in a comprehension in the enclosing
 * function, a comprehension's first iterable outside it.
 */
function bindingScope(lang: Lang, node: Node, capture: string, classes?: Map<number, PythonClass>): Range[] | null {
  if (capture === 'self') return rangeOf(node.parent);
  if (capture === 'infer') return rangeOf(ancestorOf(node, new Set(['conditional_type']))?.childForFieldName('consequence') ?? null);
  if (capture === 'mapped') return rangeOf(ancestorOf(node, new Set(['object_type', 'mapped_type'])));
  if (capture === 'receiverparam') return rangeOf(ancestorOf(node, new Set(['method_declaration'])));
  // A TS enum's member: in the enum's body (`B = A + 1` reads the member A).
  if (capture === 'member') return rangeOf(ancestorOf(node, new Set(['enum_body'])));
  // A Rust pattern's name: the type of `Some(x)` is no binding, nor is a capitalised name (a constant or a variant).
  if (capture === 'pattern' && (isField(node.parent!, 'type', node) || /^[A-Z]/.test(node.text))) return null;
  if (capture === 'typeparam') {
    let list: Node | null = node.parent;
    while (list && !(lang === 'python' ? list.type === 'type_parameter' : typeParameterLists.has(list.type))) list = list.parent;
    let owner = list?.parent ?? null;
    // Python `type Alias[T] = …`: the parameters sit in the alias's generic type (and Rust's `const N` in its own node).
    while (owner && (owner.type === 'generic_type' || owner.type === 'type')) owner = owner.parent;
    return rangeOf(owner);
  }
  if (lang === 'go' && capture === 'var' && node.parent?.parent?.type === 'type_switch_statement') {
    // `switch x := v.(type) { case T: … }`: x is declared at the end of each case's type list.
    const ranges: Range[] = [];
    for (const clause of node.parent.parent.namedChildren) {
      const statements = clause?.namedChildren.find((child) => child?.type === 'statement_list');
      if (statements) ranges.push([statements.startIndex, statements.endIndex]);
    }
    return ranges;
  }
  const scopeSet = scopeTypes[lang];
  let ancestor: Node | null = node.parent;
  // Go and Rust: a variable is seen from the end of its declaration on.
  let from: number | undefined;
  const after = declaredAfter[lang];
  if (ancestor && after?.has(ancestor.type)) from = ancestor.endIndex;
  // A declaration's own name belongs to the enclosing scope, not to the function, class or item it names.
  if (ancestor && isField(ancestor, 'name', node)) ancestor = ancestor.parent;
  const walrus = lang === 'python' && node.parent?.type === 'named_expression';
  let inParameters = false;
  for (; ancestor; ancestor = ancestor.parent) {
    if (after?.has(ancestor.type) && from === undefined) from = ancestor.endIndex;
    if (parameterListTypes.has(ancestor.type)) inParameters = true;
    if (scopeSet.has(ancestor.type) && !(walrus && comprehensionTypes.has(ancestor.type))) break;
    // Python: a class body is no function scope — its names are the class's attributes, seen by the class body's own
    // later statements (not by its methods: a function nested in it skips the class's namespace).
    if (lang === 'python' && ancestor.type === 'class_definition' && !inParameters) {
      // (`global LIMIT` in the class body: its assignments are the module's — X52-04)
      const known = pythonClass(ancestor, classes);
      return known.globals.has(nameOf(node)) ? null : pythonClassRanges(ancestor, node, known);
    }
    if (lang === 'rust' && rustMemberHolders.has(ancestor.type)) return null;
    // Rust: `if let` / `while let` bind in their block, a match arm's pattern in the arm.
    if (lang === 'rust' && ancestor.type === 'let_condition') {
      const owner = ancestorOf(ancestor, new Set(['if_expression', 'while_expression']));
      return rangeOf(owner?.childForFieldName(owner.type === 'if_expression' ? 'consequence' : 'body') ?? null) ?? [];
    }
    if (lang === 'rust' && ancestor.type === 'match_arm') return [[ancestor.startIndex, ancestor.endIndex]];
  }
  if (!ancestor) return null;
  // TS: a namespace's exported member is bound in every block of that namespace in the file (they merge)
  if ((lang === 'typescript' || lang === 'tsx') && ancestor.type === 'statement_block' && ancestor.parent?.type === 'internal_module' && exportedIn(node, ancestor)) return namespaceBodies(ancestor.parent);
  // TS: a declaration in `declare module 'x' { … }` or `declare global { … }` augments the module's own (a reference).
  if ((lang === 'typescript' || lang === 'tsx') && (capture === 'type' || capture === 'both') && ancestor.type === 'statement_block' && (ancestor.parent?.type === 'ambient_declaration' || (ancestor.parent?.type === 'module' && ancestor.parent.childForFieldName('name')?.type === 'string'))) return [];
  // Go: a local type is seen from its name on.
  if (lang === 'go' && node.type === 'type_identifier') from = node.startIndex;
  const ranges = scopeRanges(lang, ancestor);
  return from === undefined ? ranges : ranges.flatMap(([start, end]): Range[] => (end <= from! ? [] : [[Math.max(start, from!), end]]));
}

/** TS: whether the declaration binding `node` is exported from `block` (`export const x`, `export function f`). */
function exportedIn(node: Node, block: Node): boolean {
  let statement: Node = node;
  while (statement.parent && statement.parent.id !== block.id) statement = statement.parent;
  return statement.type === 'export_statement';
}

/** TS: the bodies of every `namespace N { … }` block of `module`'s name beside it (merged declarations: one namespace). */
function namespaceBodies(module: Node): Range[] {
  const name = module.childForFieldName('name')?.text;
  const holder = module.parent?.type === 'expression_statement' || module.parent?.type === 'export_statement' || module.parent?.type === 'ambient_declaration' ? module.parent : module;
  const ranges: Range[] = [];
  for (const child of holder.parent?.namedChildren ?? []) {
    let sibling: Node | null = child;
    if (sibling && (sibling.type === 'expression_statement' || sibling.type === 'ambient_declaration')) sibling = sibling.namedChild(0);
    else if (sibling?.type === 'export_statement') sibling = sibling.childForFieldName('declaration');
    if (sibling?.type !== 'internal_module' || sibling.childForFieldName('name')?.text !== name) continue;
    const body = sibling.childForFieldName('body');
    if (body) ranges.push([body.startIndex, body.endIndex]);
  }
  return ranges.length > 0 ? ranges : [[module.endIndex, module.endIndex]];
}

const pythonNested = new Set(['function_definition', 'lambda', 'class_definition']);

/**
 * Python: the text a class-body binding covers — the class body from the end of the statement that binds it on
 * (a class body runs top to bottom: an earlier read is the module's name), without the bodies of the functions,
 * lambdas and classes nested in it and without comprehensions (their own scopes, which skip the class's).
 */
/** What every binding of one Python class body shares, read once per class: its holes, its `global` names, its `del`s. */
interface PythonClass {
  /** Nested function, lambda and class bodies, comprehensions but their first iterable (sorted). */
  holes: Range[];
  globals: Set<string>;
  /** Each `del` statement of the body (any depth) with the plain names it deletes. */
  deletions: Array<{ start: number; names: Set<string> }>;
}

function pythonClass(classNode: Node, known?: Map<number, PythonClass>): PythonClass {
  const cached = known?.get(classNode.id);
  if (cached) return cached;
  const body = classNode.childForFieldName('body');
  const holes: Range[] = [];
  const visit = (node: Node): void => {
    for (const child of node.namedChildren) {
      if (!child) continue;
      if (comprehensionTypes.has(child.type)) {
        // (its first iterable is read in the class body: X52-02)
        const first = child.namedChildren.find((part) => part?.type === 'for_in_clause')?.childForFieldName('right');
        if (first) holes.push([child.startIndex, first.startIndex], [first.endIndex, child.endIndex]);
        else holes.push([child.startIndex, child.endIndex]);
      } else if (pythonNested.has(child.type)) {
        const inner = child.childForFieldName('body');
        if (inner) holes.push([inner.startIndex, inner.endIndex]);
        // (defaults, decorators and bases are read in the class body)
        for (const part of child.namedChildren) if (part && part.startIndex !== inner?.startIndex) visit(part);
      } else visit(child);
    }
  };
  if (body) visit(body);
  holes.sort((a, b) => a[0] - b[0]);
  const deletions = (body?.descendantsOfType('delete_statement') ?? []).flatMap((deletion) => {
    if (!deletion) return [];
    const names = new Set<string>();
    for (const target of deletion.namedChildren) if (target?.type === 'identifier') names.add(target.text);
    for (const target of deletion.descendantsOfType('identifier')) if (target?.parent?.type === 'expression_list') names.add(target.text);
    return [{ start: deletion.startIndex, names }];
  });
  const facts: PythonClass = { holes, globals: pythonGlobals(classNode), deletions };
  known?.set(classNode.id, facts);
  return facts;
}

function pythonClassRanges(classNode: Node, binding: Node, facts: PythonClass): Range[] {
  const body = classNode.childForFieldName('body');
  // (a list that covers nothing, never an empty one: that would make the binding a reference)
  if (!body) return [[classNode.endIndex, classNode.endIndex]];
  // (an annotation without a value — `LIMIT: int` — binds nothing in a class body: X52-01)
  const assignment = binding.parent;
  if (assignment?.type === 'assignment' && isField(assignment, 'left', binding) && !assignment.childForFieldName('right')) return [[body.endIndex, body.endIndex]];
  // From the end of the simple statement that binds it — inside a class-level `if`/`try` too (X52-03); the first
  // statement starts where the body does: compared by node, not position (X52-09)
  let statement: Node = binding;
  while (statement.parent && statement.parent.id !== body.id && statement.parent.type !== 'block') statement = statement.parent;
  const none: Range[] = [[body.endIndex, body.endIndex]];
  // (`del Foo` unbinds: the class's name no longer, the module's again — X53-04)
  if (binding.parent?.type === 'delete_statement' || binding.parent?.parent?.type === 'delete_statement') return none;
  let from = Math.max(body.startIndex, statement.endIndex);
  let until = body.endIndex;
  const own: Range[] = [];
  // `except E as Foo:` binds in its handler only (Python deletes the name at the handler's end — X53-02)
  const handler = ancestorOf(binding, new Set(['except_clause', 'block']));
  if (handler?.type === 'except_clause') {
    const block = handler.namedChildren.find((child) => child?.type === 'block');
    if (!block) return none;
    from = block.startIndex;
    until = block.endIndex;
  } else if (pythonCompound.has(statement.type)) {
    // a binding in a compound statement's header (`if (Foo := …):`, `for Foo in …:`, `with … as Foo:`, `case [Foo]:`)
    // is seen from its body on (X53-01/08)
    const block = statement.namedChildren.find((child) => child?.type === 'block' && child.startIndex >= binding.endIndex);
    if (block) from = block.startIndex;
    // (a `for` target is not bound in the loop's `else` either: the else runs after an empty iterable too)
    const target = statement.type === 'for_statement' ? statement.childForFieldName('left') : null;
    const orElse = target && target.startIndex <= binding.startIndex && binding.endIndex <= target.endIndex ? statement.childForFieldName('alternative') : null;
    if (orElse) own.push([orElse.startIndex, orElse.endIndex]);
  }
  // an `if` branch's binding is not seen in the branches after it (X53-11), nor a loop body's in the loop's `else` (which
  // runs when the body never ran too: a false first test, an empty iterable)
  for (let block = ancestorOf(binding, new Set(['block'])); block && block.id !== body.id; block = ancestorOf(block, new Set(['block']))) {
    const owner = block.parent;
    if ((owner?.type === 'while_statement' || owner?.type === 'for_statement') && isField(owner, 'body', block)) {
      const orElse = owner.childForFieldName('alternative');
      if (orElse) own.push([orElse.startIndex, orElse.endIndex]);
      continue;
    }
    const ifStatement = owner?.type === 'if_statement' ? owner : owner?.type === 'elif_clause' ? owner.parent : null;
    if (!ifStatement || ifStatement.type !== 'if_statement') continue;
    for (const branch of ifStatement.childrenForFieldName('alternative')) if (branch && branch.startIndex > block.startIndex) own.push([branch.startIndex, branch.endIndex]);
  }
  // a later `del Foo` of the class body ends it
  for (const deletion of facts.deletions) if (deletion.start >= from && deletion.start < until && deletion.names.has(binding.text)) until = deletion.start;
  const ranges = rangesWithout(from, until, [...facts.holes, ...own]);
  return ranges.length > 0 ? ranges : none;
}

/** The text from `from` to `until` without the `holes` (any order, overlapping or not). */
function rangesWithout(from: number, until: number, holes: readonly Range[]): Range[] {
  const ranges: Range[] = [];
  for (const [start, end] of [...holes].sort((a, b) => a[0] - b[0])) {
    if (end <= from) continue;
    if (start >= until) break;
    if (start > from) ranges.push([from, start]);
    from = Math.max(from, end);
  }
  if (from < until) ranges.push([from, until]);
  return ranges;
}

/** Python compound statements: a binding in their header is seen from their body on. */
const pythonCompound = new Set(['if_statement', 'while_statement', 'for_statement', 'with_statement', 'case_clause']);

function bindingsFrom(lang: Lang, captures: readonly BindingCapture[]): Locals {
  const classes = new Map<number, PythonClass>();
  const sites = new Set<number>();
  const scopes = new Map<string, LocalScope[]>();
  const excluded = new Map<string, Range[]>();
  for (const capture of captures) {
    const { node, name } = capture;
    if (name === 'global') {
      // Python `global x` in a function: x there is the module's, whatever the function or one around it binds.
      const scope = bindingScope(lang, node, 'var');
      if (scope) excluded.set(nameOf(node), [...(excluded.get(nameOf(node)) ?? []), ...scope]);
      continue;
    }
    if ((lang === 'typescript' || lang === 'tsx' || lang === 'javascript') && bindsModuleExports(node)) continue;
    const space = bindingSpace(lang, name);
    const ranges = space === 0 ? null : bindingScope(lang, node, name, classes);
    // (an empty list: no binding at all — a TS module augmentation's declaration is a reference)
    if (ranges?.length === 0) continue;
    // (`Foo += 1` reads Foo before it binds it: a use of whatever Foo is there — X52-10)
    if (name !== 'augmented') sites.add(node.startIndex);
    if (!ranges) continue;
    const list = scopes.get(nameOf(node)) ?? [];
    for (const [from, to] of ranges) list.push([from, to, space]);
    scopes.set(nameOf(node), list);
  }
  return { sites, scopes, excluded };
}

interface LangTools {
  parser: Parser;
  identifiers: Query;
  imports: Query;
  bindings: Query;
}

const tools = new Map<Lang, Promise<LangTools>>();
/** The languages whose tools are loaded: what {@link extractFactsNow} can parse without waiting. */
const readyTools = new Map<Lang, LangTools>();

function langTools(lang: Lang): Promise<LangTools> {
  let loading = tools.get(lang);
  if (!loading) {
    loading = (async () => {
      const QueryClass = await queryClass();
      const language = await loadLanguage(lang);
      const loaded: LangTools = {
        parser: await createParser(lang),
        identifiers: new QueryClass(language, identifierQuery[lang]),
        imports: new QueryClass(language, importQuery[lang]),
        bindings: new QueryClass(language, bindingQuery[lang]),
      };
      readyTools.set(lang, loaded);
      return loaded;
    })();
    loading.catch(() => tools.delete(lang));
    tools.set(lang, loading);
  }
  return loading;
}

/**
 * Loads the tree-sitter runtime, every grammar and its compiled queries ahead of any call (the
 * resident server, once started): a first cold call then pays for parsing only, not for 50–150 ms
 * of grammar load and query compilation per language. One language at a time, yielding between
 * them so a request that arrives meanwhile is not held up by more than one language's load.
 */
export async function preloadLanguages(langs: readonly Lang[] = ['typescript', 'tsx', 'javascript', 'go', 'python', 'rust']): Promise<void> {
  for (const lang of langs) {
    await new Promise((resolve) => setImmediate(resolve));
    await langTools(lang).catch(() => undefined);
  }
}

/**
 * What to extract: everything (default), or a part that is cheaper to get and cached apart from
 * the full facts (index.ts):
 * - `{ imports: true }` — imports only (no symbols, no references): what a dependency graph reads;
 * - `{ refsFor: [w…] }` — definitions and imports in full, but only the references named one of
 *   `w…` or the local name of one of the file's imports, and every reference inside an import or
 *   re-export statement: exactly what {@link findReferences} reads of a file when it looks for `w`.
 *   They are found from the words' occurrences in the text (tree-sitter queries restricted to
 *   each occurrence's range) instead of walking every identifier of the file.
 */
export type ExtractPart = { imports: true } | { refsFor: readonly string[] };

/** Parses `source` as `lang` and extracts its facts (or the `part` of them asked for). */
export async function extractFacts(lang: Lang, source: string, part?: ExtractPart): Promise<FileFacts> {
  return extractWith(await langTools(lang), lang, source, part);
}

/** Loads `lang`'s tools (grammar, queries) if not loaded yet: then {@link extractFactsNow} parses it. */
export async function loadLanguageTools(lang: Lang): Promise<void> {
  await langTools(lang);
}

/** {@link extractFacts} without waiting: undefined when `lang`'s tools are not loaded yet. */
export function extractFactsNow(lang: Lang, source: string, part?: ExtractPart): FileFacts | undefined {
  const ready = readyTools.get(lang);
  return ready ? extractWith(ready, lang, source, part) : undefined;
}

function extractWith(ready: LangTools, lang: Lang, source: string, part?: ExtractPart): FileFacts {
  const { parser, identifiers, imports: importsQuery, bindings } = ready;
  const tree = parser.parse(source);
  if (!tree) throw new Error('tree-sitter returned no tree');
  try {
    const root = tree.rootNode;
    const symbols: SymbolDef[] = [];
    const definitionSites = new Set<number>();
    const addSymbol = (nameNode: Node | null, kind: SymbolKind, exported: boolean, container?: string, defaultExport?: boolean): void => {
      if (!nameNode) return;
      // (`module.exports = { name }` defines the export and uses the local `name`: both — X59-13)
      if (nameNode.type !== 'shorthand_property_identifier') definitionSites.add(nameNode.startIndex);
      const symbol: SymbolDef = { name: nameOf(nameNode), kind, line: nameNode.startPosition.row + 1, column: nameNode.startPosition.column + 1, exported };
      if (container !== undefined) symbol.container = container;
      if (defaultExport) symbol.defaultExport = true;
      symbols.push(symbol);
    };
    if (!part || !('imports' in part)) collectDefinitions(lang, root, addSymbol);

    const imports: RawImport[] = [];
    // A text index's line and column, counted as a reference's are (below)
    let lineStarts: number[] | undefined;
    const pointAt = (index: number): [number, number] => {
      lineStarts ??= [0, ...occurrences(source, '\n').map((at) => at + 1)];
      let low = 0;
      for (let high = lineStarts.length - 1; low < high; ) {
        const middle = (low + high + 1) >> 1;
        if (lineStarts[middle]! <= index) low = middle;
        else high = middle - 1;
      }
      return [low + 1, index - lineStarts[low]! + (low === 0 && source.charCodeAt(0) === 0xfeff ? 0 : 1)];
    };
    const importRanges: Array<{ start: number; end: number; kind: ReferenceKind; bindsNothing?: boolean }> = [];
    const skip = new Set<number>();
    const packageNames = new Set<string>();
    for (const match of lang === 'python' ? (pythonImportMatches(root, source) ?? importsQuery.matches(root)) : importsQuery.matches(root)) {
      const capture = match.captures.find((entry) => entry.name === 'import' || entry.name === 'reexport' || entry.name === 'mod' || entry.name === 'require' || entry.name === 'augment' || entry.name === 'macroUse' || entry.name === 'externCrate');
      if (!capture) continue;
      const node = capture.node;
      const parsed = parseImport(lang, capture.name, node, match.captures.find((entry) => entry.name === 'spec')?.node, skip, pointAt);
      if (!parsed) continue;
      const statement = Array.isArray(parsed) ? parsed : [parsed];
      for (const raw of statement) {
        raw.column ??= node.startPosition.column + 1;
        imports.push(raw);
        // (TS/JS: `import * as ns` — its members are flagged, its calls stay `method-call`s)
        for (const name of raw.names) if ((name.imported === '*' && name.local !== '*' && !raw.reexport) || lang === 'go') packageNames.add(name.local);
      }
      if (capture.name === 'require') {
        // `const { a, b: c } = require('m')` (or `= await import('m')`): the pattern is an import's names — kind `import`,
        // not a call site (check-test-cascade reported such lines as callers: X67-13)
        let holder = node.parent;
        if (holder?.type === 'await_expression') holder = holder.parent;
        const pattern = holder?.type === 'variable_declarator' ? holder.childForFieldName('name') : thenPattern(node);
        if (pattern?.type === 'object_pattern') importRanges.push({ start: pattern.startIndex, end: pattern.endIndex, kind: 'import' });
      }
      if (capture.name === 'require' || capture.name === 'mod' || capture.name === 'augment' || capture.name === 'externCrate') continue;
      // (Python: an import statement parsed without an error holds dotted names, aliases and their identifiers only —
      // never a node the binding query captures: {@link localBindingsOf} skips its occurrences)
      const bindsNothing = lang === 'python' && pythonStatements.has(node.type) && !node.hasError;
      importRanges.push({ start: node.startIndex, end: node.endIndex, kind: statement[0]!.reexport ? 'reexport' : 'import', ...(bindsNothing ? { bindsNothing } : {}) });
    }
    const aliases: NonNullable<FileFacts['aliases']> = [];
    if (lang === 'typescript' || lang === 'tsx' || lang === 'javascript') imports.push(...localReexports(root, imports, importRanges, aliases, skip));
    if (lang === 'python') imports.push(...pythonAssignedAliases(root, imports, aliases));
    const goPackage = lang === 'go' ? root.namedChildren.find((child) => child?.type === 'package_clause')?.namedChild(0)?.text : undefined;
    // (Rust scopes: not for the imports-only part — a dependency graph reads none)
    const importsOnly = part !== undefined && 'imports' in part;
    const rustModules: NonNullable<FileFacts['rustModules']> = [];
    if (lang === 'rust' && !importsOnly) {
      for (const module of root.descendantsOfType('mod_item')) {
        const body = module?.childForFieldName('body');
        if (!module || !body) continue;
        // (`block`: a module declared in a function's body — `fn g() { mod util { … } }` — is a name of that block only: X65-57)
        const around = module.parent?.type === 'block' ? module.parent : undefined;
        rustModules.push({ path: [...inlineModulesAround(module), module.childForFieldName('name')?.text.replace(/^r#/, '') ?? ''], span: [...pointAt(body.startIndex), ...pointAt(body.endIndex)], ...(around ? { block: [...pointAt(around.startIndex), ...pointAt(around.endIndex)] as ImportSpan } : {}) });
      }
    }
    const rustImpls: NonNullable<FileFacts['rustImpls']> = [];
    if (lang === 'rust' && !importsOnly) {
      const bare = (node: Node | null) => node?.text.replace(/<[\s\S]*$/, '').replace(/\s+/g, '').replace(/r#/g, '');
      for (const item of root.descendantsOfType(['impl_item', 'trait_item'])) {
        if (!item) continue;
        const span: ImportSpan = [...pointAt(item.startIndex), ...pointAt(item.endIndex)];
        if (item.type === 'trait_item') {
          const name = bare(item.childForFieldName('name'));
          if (name) rustImpls.push({ span, trait: name });
          continue;
        }
        const entry: NonNullable<FileFacts['rustImpls']>[number] = { span };
        const trait = bare(item.childForFieldName('trait'));
        if (trait) entry.trait = trait.split('::').at(-1)!;
        const typeNode = item.childForFieldName('type');
        const path = bare(typeNode?.type === 'generic_type' ? typeNode.childForFieldName('type') : typeNode);
        if (path && /^(?:[A-Za-z_][A-Za-z0-9_]*::)*[A-Za-z_][A-Za-z0-9_]*$/.test(path)) {
          entry.path = path;
          entry.type = path.split('::').at(-1)!;
        }
        rustImpls.push(entry);
      }
    }
    const rustLocals: RustLocal[] = [];
    if (lang === 'rust' && !importsOnly) {
      const spanOf = (node: Node): ImportSpan => [...pointAt(node.startIndex), ...pointAt(node.endIndex)];
      const local = (name: Node | null, kind: RustLocal['kind'], span?: ImportSpan): RustLocal | undefined => {
        if (!name) return undefined;
        const entry: RustLocal = { name: nameOf(name), kind, line: name.startPosition.row + 1, column: pointAt(name.startIndex)[1] };
        if (span) entry.span = span;
        rustLocals.push(entry);
        return entry;
      };
      for (const node of root.descendantsOfType(['type_parameters', 'struct_item', 'enum_item', 'union_item', 'trait_item', 'type_item', 'associated_type'])) {
        if (!node) continue;
        const holder = node.parent;
        if (!holder) continue;
        if (node.type === 'type_parameters') {
          const span = spanOf(holder);
          for (const parameter of node.namedChildren) if (parameter?.type === 'type_parameter') local(parameter.childForFieldName('name'), 'param', span);
          continue;
        }
        const owner = holder.type === 'declaration_list' ? holder.parent : null;
        const assoc = owner?.type === 'impl_item' || owner?.type === 'trait_item';
        if (node.type === 'associated_type') {
          // (a trait's `type Item: Make;`: a type parameter of each impl, not a module's type)
          if (assoc) local(node.childForFieldName('name'), 'param', spanOf(owner!))!.assoc = true;
          continue;
        }
        const inBlock = holder.type === 'block';
        if (node.type !== 'type_item') {
          if (inBlock) local(node.childForFieldName('name'), 'item', spanOf(holder));
          continue;
        }
        const entry = local(node.childForFieldName('name'), 'alias', inBlock ? spanOf(holder) : assoc ? spanOf(owner!) : undefined);
        if (!entry) continue;
        if (assoc) entry.assoc = true;
        let target = node.childForFieldName('type');
        if (target?.type === 'generic_type') target = target.childForFieldName('type');
        const path = target?.text.replace(/\s+/g, '').replace(/r#/g, '').replace(/^::/, '');
        if (path && /^(?:[A-Za-z_][A-Za-z0-9_]*::)*[A-Za-z_][A-Za-z0-9_]*$/.test(path)) entry.target = path;
      }
    }
    const rustCfg = lang === 'rust' && !importsOnly ? rustCfgItems(root, source, pointAt) : [];
    // (E46's test code: the test-only items and the `mod x;` declarations)
    const testItems = lang === 'rust' && !importsOnly ? rustTestItemsOf(root, source) : undefined;
    const rustTests = testItems && (testItems.ranges.length > 0 || testItems.modDecls.length > 0 || source.includes('cfg')) ? testItems : undefined;
    const withPackage = <T extends FileFacts>(facts: T): T => {
      const withModules =
        rustModules.length === 0 && rustImpls.length === 0 && rustLocals.length === 0 && rustCfg.length === 0 && !rustTests
          ? facts
          : { ...facts, ...(rustModules.length > 0 ? { rustModules } : {}), ...(rustImpls.length > 0 ? { rustImpls } : {}), ...(rustLocals.length > 0 ? { rustLocals } : {}), ...(rustCfg.length > 0 ? { rustCfg } : {}), ...(rustTests ? { rustTests } : {}) };
      const withAliases = aliases.length === 0 ? withModules : { ...withModules, aliases };
      return goPackage === undefined ? withAliases : { ...withAliases, package: goPackage };
    };
    if (importsOnly) return withPackage({ symbols, imports, refs: '' });

    let locals: Locals;
    let identifierNodes: Node[];
    if (part) {
      // The identifiers a full walk would capture, limited to the names asked for, the imports' local names and the import statements.
      const names = new Set(part.refsFor);
      for (const raw of imports) for (const name of raw.names) if (name.local !== '*') names.add(name.local);
      for (const alias of aliases) names.add(alias.local);
      const found = new Map<number, Node>();
      const keep = (node: Node) => {
        if (!found.has(node.id)) found.set(node.id, node);
      };
      // Every identifier of the import statements is kept (one query per run of statements with only blanks between
      // them): an occurrence inside one needs no query of its own.
      const spans = blankJoined(importRanges, source);
      for (const name of names) {
        for (const at of occurrences(source, name)) {
          if (within(spans, at - 2, at + name.length)) continue;
          for (const capture of identifiers.captures(root, byteRange(Math.max(0, at - 2), at + name.length))) if (isOccurrence(capture.node, source, at, name.length)) keep(capture.node);
        }
      }
      for (const span of spans) for (const capture of identifiers.captures(root, byteRange(span.start, span.end))) if (capture.node.startIndex >= span.start && capture.node.startIndex < span.end) keep(capture.node);
      identifierNodes = [...found.values()].sort((a, b) => a.startIndex - b.startIndex || a.endIndex - b.endIndex);
      const bindless = blankJoined(
        importRanges.filter((range) => range.bindsNothing === true),
        source,
      );
      locals = localBindingsOf(lang, root, bindings, source, new Set(identifierNodes.map(nameOf)), bindless);
    } else {
      locals = localBindings(lang, root, bindings);
      identifierNodes = identifiers.captures(root).map((capture) => capture.node);
    }
    // (Go: a package-level name of the file cannot share the file block's import name — the import's assumed name was wrong, X52-08)
    if (lang === 'go') for (const symbol of symbols) if (symbol.container === undefined) packageNames.delete(symbol.name);
    const refs: RawRef[] = [];
    const bom = source.charCodeAt(0) === 0xfeff;
    // An identifier naming an imported package or module — unless a local of that name is bound where it is
    // (`cfg := cfg.Load()`, `func f(srv *srv.Server)`, `def run(config: Config)`: outside round X51-02/08/09)
    const isPackage = (object: Node): boolean => {
      if (!packageNames.has(object.text)) return false;
      const start = object.startIndex;
      return !(locals.scopes.get(object.text) ?? []).some(([from, to, bound]) => start >= from && start < to && (bound & VALUE) !== 0);
    };
    let goTypes: Map<string, Node> | undefined;
    for (const node of identifierNodes) {
      const start = node.startIndex;
      if (definitionSites.has(start) || skip.has(start) || locals.sites.has(start)) continue;
      // `Car(make="Toyota")`: a keyword argument's name is the callee's parameter, no use of a `make` in scope
      // (outside attack X47-04/22: E46's check-test-cascade failed a wave on it as an orphaned caller of `make()`)
      if (lang === 'python' && node.parent?.type === 'keyword_argument' && isField(node.parent, 'name', node)) continue;
      const localScopes = locals.scopes.get(nameOf(node));
      if (localScopes) {
        const space = useSpace(lang, node);
        const global = locals.excluded.get(nameOf(node))?.find(([from, to]) => start >= from && start < to);
        if (space !== 0 && localScopes.some(([from, to, bound]) => start >= from && start < to && (bound & space) !== 0 && !(global && from <= global[0] && global[1] <= to))) continue;
      }
      let kind: ReferenceKind | undefined;
      for (const range of importRanges) {
        if (start >= range.start && start < range.end) {
          kind = range.kind;
          break;
        }
      }
      if (lang === 'go' && kind !== undefined) continue; // Go imports name packages, not symbols
      kind ??= classify(lang, node, isPackage);
      // (a byte order mark is not a column: outside attack X47-18, the context line never shows it)
      const column = node.startPosition.row === 0 && bom ? node.startPosition.column : node.startPosition.column + 1;
      const ref: RawRef = [nameOf(node), node.startPosition.row + 1, column, kind];
      if (lang === 'go' && goStructKey(node, () => (goTypes ??= goFileTypes(root)))) ref.push('f');
      else if (kind === 'other' && packageMember(lang, node, isPackage)) ref.push('p');
      else if (lang === 'go' && packageMember(lang, node, (object) => packageNames.has(object.text) && !isPackage(object))) ref.push('o');
      refs.push(ref);
    }
    return withPackage({ symbols, imports, refs: encodeRefs(refs) });
  } finally {
    tree.delete();
  }
}

const memberObject: Record<string, [string, string]> = { selector_expression: ['field', 'operand'], attribute: ['attribute', 'object'], member_expression: ['property', 'object'] };

/**
 * Whether `node` is the member in `pkg.Name` (Go), `module.name` / `pkg.sub.name` (Python: a chain of lower-case
 * names — `pkg.colors.Config.timeout` is a class's attribute), `ns.name` (TS/JS, `import * as ns`), the package,
 * module or namespace bound by an import.
 */
function packageMember(lang: Lang, node: Node, isPackage: (object: Node) => boolean): boolean {
  const parent = node.parent;
  const fields = parent ? memberObject[parent.type] : undefined;
  if (!fields || !isField(parent!, fields[0], node)) return false;
  let object = parent!.childForFieldName(fields[1]);
  if (lang === 'python') {
    while (object?.type === 'attribute') {
      if (/^[A-Z]/.test(object.childForFieldName('attribute')?.text ?? '')) return false;
      object = object.childForFieldName('object');
    }
  }
  return object?.type === 'identifier' && isPackage(object);
}

/** Go: the types the file declares (any depth), by name. */
function goFileTypes(root: Node): Map<string, Node> {
  const types = new Map<string, Node>();
  for (const spec of root.descendantsOfType(['type_spec', 'type_alias'])) {
    const name = spec?.childForFieldName('name');
    const type = spec?.childForFieldName('type');
    if (name && type && !types.has(name.text)) types.set(name.text, type);
  }
  return types;
}

const goSequenceTypes = new Set(['slice_type', 'array_type', 'implicit_length_array_type']);

/** Go: a type as far as the file tells — through parentheses, a pointer, type arguments and the file's own named types. */
function goUnderlying(type: Node | null | undefined, fileTypes: () => Map<string, Node>): Node | undefined {
  for (let depth = 0; type && depth < 16; depth += 1) {
    if (type.type === 'parenthesized_type' || type.type === 'pointer_type') type = type.namedChild(0);
    else if (type.type === 'generic_type') type = type.childForFieldName('type');
    else if (type.type === 'type_identifier' && fileTypes().has(type.text)) type = fileTypes().get(type.text);
    else return type;
  }
  return undefined;
}

/** Go: the type of a literal's `{…}` — written (`T{…}`) or elided inside a slice, array or map literal (`[]T{{…}}`). */
function goLiteralType(value: Node | null, fileTypes: () => Map<string, Node>, depth = 0): Node | undefined {
  if (value?.type !== 'literal_value' || depth > 32) return undefined;
  const holder = value.parent;
  if (holder?.type === 'composite_literal') return goUnderlying(holder.childForFieldName('type'), fileTypes);
  if (holder?.type !== 'literal_element') return undefined;
  const container = holder.parent;
  const outer = goLiteralType(container?.type === 'keyed_element' ? container.parent : container, fileTypes, depth + 1);
  if (outer?.type === 'map_type') return goUnderlying(outer.childForFieldName(container?.type === 'keyed_element' && isField(container, 'key', holder) ? 'key' : 'value'), fileTypes);
  if (outer && goSequenceTypes.has(outer.type)) return goUnderlying(outer.childForFieldName('element'), fileTypes);
  // A named type declared in another file (or package) holding a literal whose type is elided: a slice, array or map
  // type (only those elide), whose element is taken for a struct like any unknown named type (X51-01/17)
  if (outer?.type === 'type_identifier' || outer?.type === 'qualified_type') return outer;
  return undefined;
}

/**
 * Go: whether an identifier is the key of a struct literal (`S{Name: 1}`, `[]S{{Name: 1}}`): a field
 * name. A map literal's key (`map[K]V{Name: 1}`) is an expression, a slice's an index; a named type
 * the file does not declare is taken for a struct (the grammar cannot tell them apart).
 */
function goStructKey(node: Node, fileTypes: () => Map<string, Node>): boolean {
  const element = node.parent;
  if (node.type !== 'identifier' || element?.type !== 'literal_element') return false;
  const keyed = element.parent;
  if (keyed?.type !== 'keyed_element' || !isField(keyed, 'key', element)) return false;
  const type = goLiteralType(keyed.parent, fileTypes);
  return type !== undefined && (type.type === 'struct_type' || type.type === 'type_identifier' || type.type === 'qualified_type');
}

/** Leaves that hold text rather than code: a word in one is a mention, not an identifier. */
const literalLeaf = /comment|string|char|regex|escape|heredoc|template/;

/**
 * Per line (1-based), how many of `name`'s whole-word occurrences in `source` are code of the syntax
 * tree — an identifier, a label, a private name `#name`, a pattern's field name —, references or not
 * (a local's binding and uses, a member's declaration). What is left of a line's whole-word
 * occurrences is in comments and strings (detect-cascades' semantic candidates).
 */
export async function identifierLines(lang: Lang, source: string, name: string): Promise<Map<number, number>> {
  const { parser } = await langTools(lang);
  const tree = parser.parse(source);
  if (!tree) throw new Error('tree-sitter returned no tree');
  try {
    const lines = new Map<number, number>();
    for (const at of occurrences(source, name)) {
      const node = tree.rootNode.descendantForIndex(at, at + name.length);
      if (!node || node.childCount > 0 || literalLeaf.test(node.type)) continue;
      // the leaf holds the word as a whole (`#name`, `'name` are the word with a sigil)
      const offset = at - node.startIndex;
      if (offset < 0 || node.text.slice(offset, offset + name.length) !== name || /[\p{L}\p{N}_$]/u.test(node.text.charAt(offset + name.length))) continue;
      const line = node.startPosition.row + 1;
      lines.set(line, (lines.get(line) ?? 0) + 1);
    }
    return lines;
  } finally {
    tree.delete();
  }
}

/** A `cfg` predicate: `test`, `all(…)`, `any(…)`, `not(…)`, or anything else (`feature = "x"`, `unix`: its text is its `key`). */
type CfgPredicate = { op: 'test' } | { op: 'other'; key: string } | { op: 'all' | 'any'; items: CfgPredicate[] } | { op: 'not'; item: CfgPredicate };

/** Parses the text of a `cfg` attribute's arguments (`(all(test, feature = "x"))`); undefined when it is not one predicate. */
function cfgPredicate(text: string): CfgPredicate | undefined {
  const tokens = [...text.matchAll(/r(#*)"[\s\S]*?"\1|"(?:[^"\\]|\\[\s\S])*"|[A-Za-z_][A-Za-z0-9_]*|\S/g)].map((match) => match[0]);
  let at = 0;
  const predicate = (): CfgPredicate => {
    const word = tokens[at++] ?? '';
    if (tokens[at] === '(') {
      at += 1;
      const items: CfgPredicate[] = [];
      while (at < tokens.length && tokens[at] !== ')') {
        items.push(predicate());
        if (tokens[at] === ',') at += 1;
      }
      at += 1;
      if (word === 'all' || word === 'any') return { op: word, items };
      if (word === 'not' && items.length === 1) return { op: 'not', item: items[0]! };
      // (an unknown form: an option of its own — it may hold or not)
      return { op: 'other', key: `${word}(${at})` };
    }
    if (tokens[at] === '=') {
      at += 2;
      return { op: 'other', key: `${word}=${tokens[at - 1] ?? ''}` };
    }
    return word === 'test' ? { op: 'test' } : { op: 'other', key: word };
  };
  if (tokens[0] !== '(') return undefined;
  at = 1;
  const result = predicate();
  return tokens[at] === ')' ? result : undefined;
}

/**
 * True when the predicate can only hold under `cfg(test)` — it is false whenever `test` is, whatever the other options
 * (features, `unix`, …) are: `test`, `all(test, …)`, `any(all(test, a), test)`, `not(not(test))`,
 * `not(any(not(test), feature = "x"))` (X64-09), and true in some test build. Decided by evaluating it under every
 * assignment of `test` and its other options (a cfg names a handful); past 12 of them, by its form alone (X63-06).
 */
function requiresTest(predicate: CfgPredicate): boolean {
  const keys: string[] = [];
  const collect = (node: CfgPredicate): void => {
    if (node.op === 'other') {
      if (!keys.includes(node.key)) keys.push(node.key);
    } else if (node.op === 'all' || node.op === 'any') node.items.forEach(collect);
    else if (node.op === 'not') collect(node.item);
  };
  collect(predicate);
  if (keys.length > 12) return requiresTestByForm(predicate);
  // (bit 0 of `options`: test; a predicate that holds in no build, `any()`, is no test code either)
  const holds = (node: CfgPredicate, options: number): boolean => {
    if (node.op === 'test') return (options & 1) !== 0;
    if (node.op === 'other') return (options & (2 << keys.indexOf(node.key))) !== 0;
    if (node.op === 'not') return !holds(node.item, options);
    return node.op === 'all' ? node.items.every((item) => holds(item, options)) : node.items.some((item) => holds(item, options));
  };
  let underTest = false;
  for (let options = 0; options < 2 << keys.length; options += 1) {
    if (holds(predicate, options)) {
      if ((options & 1) === 0) return false;
      underTest = true;
    }
  }
  return underTest;
}

/** {@link requiresTest} by the predicate's form: `test`, `all(test, …)`, `any(all(test, a), test)`, `not(not(test))`. */
function requiresTestByForm(predicate: CfgPredicate): boolean {
  if (predicate.op === 'test') return true;
  if (predicate.op === 'all') return predicate.items.some(requiresTestByForm);
  if (predicate.op === 'any') return predicate.items.length > 0 && predicate.items.every(requiresTestByForm);
  if (predicate.op === 'not') return forbidsTest(predicate.item);
  return false;
}

/** True when the predicate cannot hold under `cfg(test)` (`not(test)`). */
function forbidsTest(predicate: CfgPredicate): boolean {
  if (predicate.op === 'all') return predicate.items.some(forbidsTest);
  if (predicate.op === 'any') return predicate.items.every(forbidsTest);
  if (predicate.op === 'not') return requiresTestByForm(predicate.item);
  return false;
}

/** Rust test code of one file (see {@link rustTestItems}). */
export interface RustTestItems {
  /** A `#![cfg(test)]` at the top of the file: every line is test code. */
  whole: boolean;
  /** The lines (first, last) of the test-only items, merged: nested and adjacent items are one range, none counted twice. */
  ranges: Array<[number, number]>;
  /**
   * Every `mod x;` declaration of the file: its line, the inline modules it is in (outermost first), its `#[path]`, and
   * the path a test-only `#[cfg_attr(test, path = "x_test.rs")]` gives it under test (X64-10), and whether a
   * `#[cfg_attr(not(test), path = "x_real.rs")]` leaves it its other file under test only (`testDefault`: X65-10).
   */
  modDecls: Array<{ name: string; line: number; modulePath: string[]; path?: string; testPath?: string; testDefault?: boolean; moduleDir?: string[] }>;
}

const rustNonItems = new Set(['attribute_item', 'line_comment', 'block_comment']);

/** The `#[name = "value"]`/`#[name(…)]` attributes written before `node` (its preceding attribute siblings). */
function rustAttributesBefore(node: Node): Node[] {
  const result: Node[] = [];
  for (let sibling = node.previousNamedSibling; sibling && rustNonItems.has(sibling.type); sibling = sibling.previousNamedSibling) {
    if (sibling.type === 'attribute_item') result.push(sibling);
  }
  return result;
}

/**
 * Rust: the test-only code of a source file, from its syntax tree — every item whose `cfg` attribute can only hold under
 * `cfg(test)` (`#[cfg(test)]`, `#[cfg(all(test, feature = "x"))]`, `#[cfg( test )]`; not `any(test, feature = "x")`,
 * which is library code behind a feature as well), from the attribute to the end of the item the attribute is on (the
 * item's node: a `;` in its signature, `-> [u32; 1]`, does not end it); an inner `#![cfg(test)]` makes its module test
 * code (at the top of the file: the whole file). The `mod x;` declarations come with it: a test-only one's module file
 * is test code (references.ts).
 */
export async function rustTestItems(source: string): Promise<RustTestItems> {
  const { parser } = await langTools('rust');
  const tree = parser.parse(source);
  if (!tree) throw new Error('tree-sitter returned no tree');
  try {
    return rustTestItemsOf(tree.rootNode, source);
  } finally {
    tree.delete();
  }
}

/** Rust: the `mod x;` declarations of a source ({@link RustTestItems}' `modDecls`) without waiting: undefined when Rust's tools are not loaded yet. */
export function rustModDeclsNow(source: string): RustTestItems['modDecls'] | undefined {
  const ready = readyTools.get('rust');
  if (!ready) return undefined;
  const tree = ready.parser.parse(source);
  if (!tree) return undefined;
  try {
    return rustTestItemsOf(tree.rootNode, source).modDecls;
  } finally {
    tree.delete();
  }
}

/**
 * Rust: the `macro_rules!` definitions of a source whose body names `word` as a token (not the macro's own name): what
 * such a macro generates — a `mod`, an `impl`, a call `Item::new(1)` — is no syntax until it is expanded, and the engine
 * does not expand macros: check-callers says so rather than answer silently (X64-06). Each as the macro's name and line.
 */
export async function rustMacroBodiesNaming(source: string, word: string): Promise<Array<{ name: string; line: number }>> {
  if (!source.includes('macro_rules') || !source.includes(word)) return [];
  const { parser } = await langTools('rust');
  const tree = parser.parse(source);
  if (!tree) return [];
  try {
    const found: Array<{ name: string; line: number }> = [];
    for (const definition of tree.rootNode.descendantsOfType('macro_definition')) {
      const name = definition?.childForFieldName('name');
      if (!definition || !name || nameOf(name) === word) continue;
      const named = occurrences(source.slice(definition.startIndex, definition.endIndex), word).some((at) => {
        const leaf = definition.descendantForIndex(definition.startIndex + at, definition.startIndex + at + word.length);
        return leaf !== null && leaf.startIndex === definition.startIndex + at && leaf.endIndex === definition.startIndex + at + word.length && leaf.type === 'identifier';
      });
      if (named) found.push({ name: nameOf(name), line: definition.startPosition.row + 1 });
    }
    return found;
  } finally {
    tree.delete();
  }
}

/**
 * Rust: a `#[cfg(…)]` written in a macro's tokens, from its `cfg` identifier — `vec![#[cfg(test)] crate::util::Item::new(6).0,
 * 1]`: there the attribute is `#` then `[cfg(test)]`, and the element it is on the tokens after it up to the next `,` or `;`
 * of that token tree (X65-17): its predicate and the first (`#`) and last tokens of the attribute and its element.
 */
function rustMacroCfg(name: Node): { predicate: CfgPredicate; first: Node; last: Node } | undefined {
  const attribute = name.parent;
  const holder = attribute?.parent;
  const hash = attribute?.previousSibling;
  if (name.type !== 'identifier' || name.text !== 'cfg' || attribute?.type !== 'token_tree' || attribute.firstNamedChild?.id !== name.id || holder?.type !== 'token_tree' || hash?.type !== '#') return undefined;
  const predicate = cfgPredicate(attribute.namedChildren.find((child) => child?.type === 'token_tree')?.text ?? '');
  if (!predicate) return undefined;
  let last: Node = attribute;
  // (an item ends with its `{ … }` — `items! { #[cfg(test)] fn helper() { … } pub fn g() { … } }`: g is no test code,
  // nor the rest of a macro_rules! body — X66-05/06; `#[cfg(test)] use a::{b, c};` ends at its `;` on that line anyway)
  for (let next = attribute.nextSibling; next && next.type !== ',' && next.type !== ';' && next.id !== holder.lastChild?.id; next = next.nextSibling) {
    last = next;
    if (next.type === 'token_tree' && next.firstChild?.type === '{') break;
  }
  return { predicate, first: hash, last };
}

/** {@link rustTestItems} of a parsed file (extractFacts keeps them in the cached facts: rule E46's test code). */
function rustTestItemsOf(root: Node, source: string): RustTestItems {
  let whole = false;
  const ranges: Array<[number, number]> = [];
  for (const at of occurrences(source, 'cfg')) {
    const name = root.descendantForIndex(at, at + 3);
    const attribute = name?.parent;
    const holder = attribute?.parent;
    const inMacro = name ? rustMacroCfg(name) : undefined;
    if (inMacro) {
      if (requiresTest(inMacro.predicate)) ranges.push([inMacro.first.startPosition.row + 1, inMacro.last.endPosition.row + 1]);
      continue;
    }
    if (!name || name.type !== 'identifier' || name.text !== 'cfg' || attribute?.type !== 'attribute' || attribute.firstNamedChild?.id !== name.id || !holder) continue;
    const predicate = cfgPredicate(attribute.namedChildren.find((child) => child.type === 'token_tree')?.text ?? '');
    if (!predicate || !requiresTest(predicate)) continue;
    if (holder.type === 'inner_attribute_item') {
      const scope = holder.parent;
      if (!scope || scope.type === 'source_file') whole = true;
      else ranges.push([(scope.parent ?? scope).startPosition.row + 1, scope.endPosition.row + 1]);
      continue;
    }
    if (holder.type !== 'attribute_item') continue;
    let item = holder.nextNamedSibling;
    while (item && rustNonItems.has(item.type)) item = item.nextNamedSibling;
    ranges.push([holder.startPosition.row + 1, (item ?? holder).endPosition.row + 1]);
  }
  // (and each `#[test]`/`#[bench]`/`#[tokio::test]` fn: test code without a `cfg` — X65-10)
  for (const holder of rustTestAttributes(root, source)) ranges.push([holder.startPosition.row + 1, (rustItemAfter(holder) ?? holder).endPosition.row + 1]);
  const lineCount = root.endPosition.row + 1;
  if (whole) ranges.splice(0, ranges.length, [1, lineCount]);
  ranges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const merged: Array<[number, number]> = [];
  for (const range of ranges) {
    const last = merged.at(-1);
    if (last && range[0] <= last[1] + 1) last[1] = Math.max(last[1], range[1]);
    else merged.push([range[0], range[1]]);
  }
  const modDecls: RustTestItems['modDecls'] = [];
  for (const at of occurrences(source, 'mod')) {
    const keyword = root.descendantForIndex(at, at + 3);
    const item = keyword?.parent;
    if (!keyword || keyword.type !== 'mod' || item?.type !== 'mod_item' || item.childForFieldName('body')) continue;
    const name = item.childForFieldName('name')?.text;
    if (!name) continue;
    const modulePath: string[] = [];
    // (`#[path = "gdir"] mod g { mod x; }`: the inline module's directory is the attribute's, src/gdir/x.rs — X66-55)
    const moduleDir: string[] = [];
    let pathed = false;
    for (let around = item.parent; around; around = around.parent) {
      if (around.type !== 'mod_item') continue;
      const own = around.childForFieldName('name')?.text ?? '';
      const written = rustAttributesBefore(around).map((attribute) => /^#\[\s*path\s*=\s*"((?:[^"\\]|\\.)*)"\s*\]$/.exec(attribute.text)?.[1]).find((value) => value !== undefined);
      modulePath.unshift(own);
      moduleDir.unshift(written ?? own.replace(/^r#/, ''));
      if (written !== undefined) pathed = true;
    }
    const decl: RustTestItems['modDecls'][number] = { name: name.replace(/^r#/, ''), line: item.startPosition.row + 1, modulePath, ...(pathed ? { moduleDir } : {}) };
    for (const attribute of rustAttributesBefore(item)) {
      const path = /^#\[\s*path\s*=\s*"((?:[^"\\]|\\.)*)"\s*\]$/.exec(attribute.text)?.[1];
      if (path !== undefined) decl.path = path;
      // (`#[cfg_attr(test, path = "h_test.rs")] mod h;`: that file is the module in test builds only — test code)
      const conditional = /^#\[\s*cfg_attr\s*\(([\s\S]*),\s*path\s*=\s*"((?:[^"\\]|\\.)*)"\s*\)\s*\]$/.exec(attribute.text);
      const condition = conditional ? cfgPredicate(`(${conditional[1]!})`) : undefined;
      if (conditional && condition && requiresTest(condition)) decl.testPath = conditional[2]!;
      // (`#[cfg_attr(not(test), path = "h_real.rs")] mod h;`: the file without that path, h.rs, is the module under test
      // only — X65-10)
      if (conditional && condition && forbidsTest(condition)) decl.testDefault = true;
    }
    modDecls.push(decl);
  }
  return { whole, ranges: merged, modDecls };
}

/** An identifier's name: its text, without Rust's raw-identifier prefix (`r#match` is the name `match`). */
function nameOf(node: Node): string {
  const text = node.text;
  return text.charCodeAt(0) === 114 && text.charCodeAt(1) === 35 ? text.slice(2) : text;
}

/** Whether `node` is the identifier occurrence of a word found at `at` (`r#word` for a Rust raw identifier). */
function isOccurrence(node: Node, source: string, at: number, length: number): boolean {
  return node.endIndex === at + length && (node.startIndex === at || (node.startIndex === at - 2 && source.startsWith('r#', at - 2)));
}

function isField(parent: Node, field: string, node: Node): boolean {
  const child = parent.childForFieldName(field);
  return child !== null && child.startIndex === node.startIndex && child.endIndex === node.endIndex;
}

const callTypes = new Set(['call_expression', 'call', 'new_expression']);

function calleeOf(node: Node): Node | null {
  const parent = node.parent;
  if (!parent || !callTypes.has(parent.type)) return null;
  return isField(parent, parent.type === 'new_expression' ? 'constructor' : 'function', node) ? parent : null;
}

function classify(lang: Lang, node: Node, isPackage: (object: Node) => boolean): ReferenceKind {
  const parent = node.parent;
  if (!parent) return 'other';
  if (calleeOf(node)) return 'call';
  const memberField: Record<string, string> = {
    member_expression: 'property',
    selector_expression: 'field',
    attribute: 'attribute',
    field_expression: 'field',
  };
  const field = memberField[parent.type];
  if (field !== undefined && isField(parent, field, node)) {
    if (!calleeOf(parent)) return node.type === 'type_identifier' ? 'type' : 'other';
    let object = parent.childForFieldName(parent.type === 'selector_expression' ? 'operand' : 'object');
    // `pkg.Func()` (Go) and `module.func()` / `pkg.module.func()` (Python) call a function, not a method — but
    // `shop.Product.from_dict()` / `pm.Product.from_dict()` call a class's method (a capitalised segment: a class, as
    // packageMember reads the chain; outside round X54-05).
    while (lang === 'python' && object?.type === 'attribute') {
      if (/^[A-Z]/.test(object.childForFieldName('attribute')?.text ?? '')) return 'method-call';
      object = object.childForFieldName('object');
    }
    if ((lang === 'go' || lang === 'python') && object?.type === 'identifier' && isPackage(object)) return 'call';
    return 'method-call';
  }
  if (parent.type === 'scoped_identifier' && isField(parent, 'name', node)) return calleeOf(parent) ? 'call' : 'other';
  if (parent.type === 'scoped_identifier' && isField(parent, 'path', node)) return /^[A-Z]/.test(node.text) ? 'type' : 'other';
  if (node.type === 'type_identifier') return 'type';
  if (parent.type === 'extends_clause' || parent.type === 'class_heritage' || parent.type === 'nested_type_identifier') return 'type';
  if (lang === 'python') {
    if (parent.type === 'argument_list' && parent.parent?.type === 'class_definition') return 'type';
    for (let ancestor: Node | null = parent, depth = 0; ancestor && depth < 6; ancestor = ancestor.parent, depth += 1) {
      if (ancestor.type === 'type') return 'type';
      if (ancestor.type === 'block' || ancestor.type === 'module') break;
    }
  }
  return 'other';
}

type AddSymbol = (nameNode: Node | null, kind: SymbolKind, exported: boolean, container?: string, defaultExport?: boolean) => void;

function collectDefinitions(lang: Lang, root: Node, add: AddSymbol): void {
  if (lang === 'go') goDefinitions(root, add);
  else if (lang === 'python') pythonDefinitions(root, add, undefined);
  else if (lang === 'rust') rustDefinitions(root, add);
  else jsDefinitions(root, add);
}

function jsDefinitions(root: Node, add: AddSymbol): void {
  const exportedLocal = new Set<string>();
  // Local names that are the module's default export: `export default name;`, `export { name as default }`.
  const defaultLocal = new Set<string>();
  for (const statement of root.namedChildren) {
    if (!statement) continue;
    if (statement.type === 'export_statement' && !statement.childForFieldName('source') && !statement.childForFieldName('declaration')) {
      const clause = statement.namedChildren.find((child) => child?.type === 'export_clause');
      for (const specifier of clause?.namedChildren ?? []) {
        const name = specifier?.childForFieldName('name');
        if (name) exportedLocal.add(name.text);
        if (name && specifier!.childForFieldName('alias')?.text === 'default') defaultLocal.add(name.text);
      }
      const value = statement.childForFieldName('value');
      if (value?.type === 'identifier') {
        exportedLocal.add(value.text);
        defaultLocal.add(value.text);
      }
      // TS `export = name;`: the module is name — its default for `import x from` / `import x = require()` (X67-08)
      const assigned = statement.children.some((child) => child?.type === '=') ? statement.namedChildren.find((child) => child?.type === 'identifier') : undefined;
      if (assigned) {
        exportedLocal.add(assigned.text);
        defaultLocal.add(assigned.text);
      }
    }
    // CommonJS `module.exports = name;`: the same (X67-08)
    const assignment = statement.type === 'expression_statement' ? statement.namedChild(0) : null;
    if (assignment?.type === 'assignment_expression' && assignment.childForFieldName('left')?.text === 'module.exports' && assignment.childForFieldName('right')?.type === 'identifier') {
      exportedLocal.add(assignment.childForFieldName('right')!.text);
      defaultLocal.add(assignment.childForFieldName('right')!.text);
    }
  }
  const start = (statement: Node, exported: boolean, isDefault = false): void => {
    const declaration = statement;
    const name = declaration.childForFieldName('name');
    const isExported = (text: string | undefined) => exported || (text !== undefined && exportedLocal.has(text));
    const asDefault = isDefault || (name !== null && defaultLocal.has(name.text));
    switch (declaration.type) {
      case 'function_declaration':
      case 'generator_function_declaration':
      case 'function_signature':
      case 'function_expression':
      case 'generator_function':
        add(name, 'function', isExported(name?.text), undefined, asDefault);
        break;
      case 'class_declaration':
      case 'class':
      case 'abstract_class_declaration': {
        add(name, 'class', isExported(name?.text), undefined, asDefault);
        const body = declaration.childForFieldName('body');
        for (const member of body?.namedChildren ?? []) {
          if (member && (member.type === 'method_definition' || member.type === 'abstract_method_signature' || member.type === 'method_signature')) {
            add(member.childForFieldName('name'), 'method', isExported(name?.text), name?.text);
          }
        }
        break;
      }
      case 'interface_declaration': {
        add(name, 'interface', isExported(name?.text));
        // Its methods are definitions (a rename's declaration line; `check-callers put --defined-in` finds one): X54-10.
        for (const member of declaration.childForFieldName('body')?.namedChildren ?? []) {
          if (member?.type === 'method_signature') add(member.childForFieldName('name'), 'method', isExported(name?.text), name?.text);
        }
        break;
      }
      case 'type_alias_declaration':
        add(name, 'type', isExported(name?.text));
        break;
      case 'enum_declaration':
        add(name, 'enum', isExported(name?.text));
        break;
      case 'internal_module':
      case 'module':
        add(name, 'module', isExported(name?.text));
        // (an ambient module, `declare module 'shop' { export interface Foo … }`: its declarations are that module's
        // exports — definitions, not references: X66-41)
        // (not an augmentation of a file of the repository, `declare module './defs'`: its names are that file's — X49-07)
        if (declaration.type === 'module' && name?.type === 'string' && !/^['"]\.{0,2}\//.test(name.text)) {
          for (const child of declaration.childForFieldName('body')?.namedChildren ?? []) {
            const inner = child?.type === 'export_statement' ? child.childForFieldName('declaration') : child;
            if (inner) start(inner, true);
          }
        }
        break;
      case 'lexical_declaration':
      case 'variable_declaration': {
        const constant = declaration.child(0)?.text === 'const';
        for (const declarator of declaration.namedChildren) {
          if (declarator?.type !== 'variable_declarator') continue;
          const target = declarator.childForFieldName('name');
          if (target?.type === 'identifier') add(target, constant ? 'constant' : 'variable', isExported(target.text), undefined, defaultLocal.has(target.text));
        }
        break;
      }
      case 'ambient_declaration':
        for (const child of declaration.namedChildren) if (child) start(child, exported);
        break;
      case 'expression_statement': {
        // CommonJS: `exports.x = …`, `module.exports.x = …` define x (outside round X54-01: `--defined-in` the file warned
        // "no definition", `exports.x` was a reference). (`module.exports = function start() {}` does not: its importers'
        // `const start = require('./m')` binds the module, which nothing here follows as a definition's name.)
        const assignment = declaration.namedChild(0);
        if (assignment?.type !== 'assignment_expression') break;
        const left = assignment.childForFieldName('left');
        const right = assignment.childForFieldName('right');
        if (left?.type !== 'member_expression') break;
        const object = left.childForFieldName('object');
        const property = left.childForFieldName('property');
        const kind: SymbolKind = right && /^(?:function_expression|function|arrow_function|generator_function)$/.test(right.type) ? 'function' : right?.type === 'class' ? 'class' : 'variable';
        if (property?.type === 'property_identifier' && (object?.text === 'exports' || object?.text === 'module.exports')) add(property, kind, true);
        // `module.exports = function compute() {}` (or a named class): the module is compute — its default (X67-08)
        if (object?.text === 'module' && property?.text === 'exports' && (right?.type === 'function_expression' || right?.type === 'generator_function' || right?.type === 'class')) {
          const name = right.childForFieldName('name');
          if (name) add(name, kind, true, undefined, true);
        }
        // `module.exports = { x: …, y, z() {} }` defines x, y and z — the common form of a hand-written CommonJS jest
        // manual mock (outside round X59-13). A shorthand `{ y }` is the export of the local y (defined here too).
        if (object?.text === 'module' && property?.text === 'exports' && right?.type === 'object') {
          for (const entry of right.namedChildren) {
            if (entry?.type === 'shorthand_property_identifier') add(entry, 'variable', true);
            else if (entry?.type === 'method_definition') add(entry.childForFieldName('name'), 'function', true);
            else if (entry?.type === 'pair') {
              const key = entry.childForFieldName('key');
              const value = entry.childForFieldName('value');
              const valueKind: SymbolKind = value && /^(?:function_expression|function|arrow_function|generator_function)$/.test(value.type) ? 'function' : value?.type === 'class' ? 'class' : 'variable';
              // (a quoted key is the same property: `'x': …`)
              const keyName = key?.type === 'string' ? key.namedChildren.find((child) => child?.type === 'string_fragment') : key;
              if (keyName?.type === 'property_identifier' || keyName?.type === 'string_fragment') add(keyName, valueKind, true);
            }
          }
        }
        break;
      }
      default:
        break;
    }
  };
  for (const statement of root.namedChildren) {
    if (!statement) continue;
    if (statement.type === 'export_statement') {
      const isDefault = statement.children.some((child) => child?.type === 'default');
      const declaration = statement.childForFieldName('declaration') ?? (isDefault ? statement.childForFieldName('value') : null);
      if (declaration) start(declaration, true, isDefault);
    } else start(statement, false);
  }
}

function goExported(name: string): boolean {
  return /^\p{Lu}/u.test(name);
}

function goDefinitions(root: Node, add: AddSymbol): void {
  const named = (node: Node | null, kind: SymbolKind, container?: string) => add(node, kind, node ? goExported(node.text) : false, container);
  for (const declaration of root.namedChildren) {
    if (!declaration) continue;
    switch (declaration.type) {
      case 'function_declaration':
        named(declaration.childForFieldName('name'), 'function');
        break;
      case 'method_declaration': {
        const receiver = declaration.childForFieldName('receiver');
        const typeNode = receiver?.descendantsOfType('type_identifier')[0];
        named(declaration.childForFieldName('name'), 'method', typeNode?.text);
        break;
      }
      case 'type_declaration':
        for (const spec of declaration.namedChildren) {
          if (!spec || (spec.type !== 'type_spec' && spec.type !== 'type_alias')) continue;
          const typeNode = spec.childForFieldName('type');
          const type = typeNode?.type;
          const name = spec.childForFieldName('name');
          named(name, type === 'struct_type' ? 'struct' : type === 'interface_type' ? 'interface' : 'type');
          // An interface's methods (X54-10: a rename's declaration line, the definition `--defined-in` names)
          if (type === 'interface_type' && name) {
            for (const method of typeNode!.namedChildren) if (method?.type === 'method_elem') named(method.childForFieldName('name'), 'method', name.text);
          }
          // A struct's named fields (not embedded ones: their name is the type's, used as such)
          if (type === 'struct_type' && name) {
            // (and a nested anonymous struct's: `Server struct { Port int }` — X51-15)
            for (const field of typeNode!.descendantsOfType('field_declaration')) {
              if (field?.parent?.parent?.type !== 'struct_type') continue;
              for (const fieldName of field.childrenForFieldName('name')) if (fieldName) named(fieldName, 'field', name.text);
            }
          }
        }
        break;
      case 'const_declaration':
      case 'var_declaration':
        for (const spec of declaration.descendantsOfType(declaration.type === 'const_declaration' ? 'const_spec' : 'var_spec')) {
          for (const name of spec?.childrenForFieldName('name') ?? []) if (name) named(name, declaration.type === 'const_declaration' ? 'constant' : 'variable');
        }
        break;
      default:
        break;
    }
  }
}

function pythonDefinitions(block: Node, add: AddSymbol, container: string | undefined): void {
  for (let statement of block.namedChildren) {
    if (!statement) continue;
    if (statement.type === 'decorated_definition') statement = statement.childForFieldName('definition') ?? statement;
    const name = statement.childForFieldName('name');
    const exported = name !== null && !name.text.startsWith('_');
    if (statement.type === 'function_definition') add(name, container ? 'method' : 'function', container ? exported && !container.startsWith('_') : exported, container);
    else if (statement.type === 'class_definition' && container === undefined) {
      add(name, 'class', exported);
      const body = statement.childForFieldName('body');
      if (body && name) pythonDefinitions(body, add, name.text);
    } else if (statement.type === 'expression_statement' && container === undefined) {
      const assignment = statement.namedChild(0);
      const target = assignment?.type === 'assignment' ? assignment.childForFieldName('left') : null;
      if (target?.type === 'identifier') add(target, /^[A-Z][A-Z0-9_]*$/.test(target.text) ? 'constant' : 'variable', !target.text.startsWith('_'));
    }
  }
}

const rustKinds: Record<string, SymbolKind> = {
  function_item: 'function',
  function_signature_item: 'function',
  struct_item: 'struct',
  enum_item: 'enum',
  union_item: 'struct',
  trait_item: 'trait',
  type_item: 'type',
  const_item: 'constant',
  static_item: 'variable',
  mod_item: 'module',
  macro_definition: 'macro',
};

function rustDefinitions(block: Node, add: AddSymbol): void {
  for (const item of block.namedChildren) {
    if (!item) continue;
    const isPub = item.namedChildren.some((child) => child?.type === 'visibility_modifier');
    const kind = rustKinds[item.type];
    if (kind) {
      add(item.childForFieldName('name'), kind, isPub || item.type === 'macro_definition');
      if (item.type === 'mod_item') {
        const body = item.childForFieldName('body');
        if (body) rustDefinitions(body, add);
      }
      if (item.type === 'trait_item') {
        // A trait's methods, declared or with a default body, are definitions (X54-08/10): `fn get(&self)` is no reference.
        const trait = item.childForFieldName('name')?.text;
        for (const member of item.childForFieldName('body')?.namedChildren ?? []) {
          if (member?.type === 'function_signature_item' || member?.type === 'function_item') add(member.childForFieldName('name'), 'method', isPub, trait);
        }
      }
    } else if (item.type === 'impl_item') {
      const typeNode = item.childForFieldName('type');
      const container = typeNode?.type === 'generic_type' ? typeNode.childForFieldName('type')?.text : typeNode?.text;
      const viaTrait = item.childForFieldName('trait') !== null;
      for (const member of item.childForFieldName('body')?.namedChildren ?? []) {
        if (member?.type !== 'function_item') continue;
        const memberPub = member.namedChildren.some((child) => child?.type === 'visibility_modifier');
        add(member.childForFieldName('name'), 'method', memberPub || viaTrait, container);
      }
    }
  }
}

function stringValue(node: Node | null | undefined): string | undefined {
  if (!node) return undefined;
  const text = node.text;
  const quote = text[0];
  if (quote === '"' || quote === "'" || quote === '`') return text.slice(1, -1);
  return text;
}

const pythonCodeBlocks = new Set(['function_definition', 'class_definition']);

/** Python: the names a function or class body declares `global` (itself, not the functions and classes nested in it). */
function pythonGlobals(fn: Node): Set<string> {
  const names = new Set<string>();
  for (const statement of fn.descendantsOfType('global_statement')) {
    if (!statement || ancestorOf(statement, pythonCodeBlocks)?.id !== fn.id) continue;
    for (const name of statement.namedChildren) if (name?.type === 'identifier') names.add(name.text);
  }
  return names;
}

/**
 * Go: the package name an unaliased import binds, as far as its path tells (the convention goimports assumes):
 * the last element, the one before a major version (`…/v2`), without a `go-` prefix, up to the first character
 * that is no identifier's (`go-utils` → `utils`, `gopkg.in/yaml.v3` → `yaml`). The package clause decides where the
 * package is in the repository (findReferences with definedIn).
 */
export function goAssumedName(importPath: string): string {
  const parts = importPath.split('/');
  let base = parts.at(-1)!;
  if (/^v\d+$/.test(base) && parts.length > 1) base = parts.at(-2)!;
  if (base.startsWith('go-')) base = base.slice(3);
  const cut = base.search(/[^\p{L}\p{N}_]/u);
  return cut > 0 ? base.slice(0, cut) : base;
}

function parseImport(lang: Lang, captureName: string, node: Node, spec: Node | undefined, skip: Set<number>, pointAt: (index: number) => [number, number]): RawImport | RawImport[] | undefined {
  const line = node.startPosition.row + 1;
  if (lang === 'go') {
    const path = stringValue(node.childForFieldName('path'));
    if (path === undefined) return undefined;
    const alias = node.childForFieldName('name')?.text;
    return { module: path, line, names: [{ imported: '*', local: alias ?? goAssumedName(path) }], reexport: false };
  }
  if (lang === 'python') {
    const statement = parsePythonImport(node, line, skip);
    const parsed = Array.isArray(statement) ? statement[0] : statement;
    const owner = ancestorOf(node, pythonCodeBlocks);
    const body = owner?.childForFieldName('body');
    // (`global Config` then `from .cfg import Config`: the function binds the module's name — the lazy-import idiom, X51-07;
    // a module's `def __getattr__(name)` (PEP 562) imports what the module lends as its attributes — X52-11)
    const lazyAttributes = owner?.type === 'function_definition' && owner.childForFieldName('name')?.text === '__getattr__' && ancestorOf(owner, pythonCodeBlocks) === null;
    const globals = parsed && body && !lazyAttributes ? pythonGlobals(owner!) : undefined;
    for (const raw of Array.isArray(statement) ? statement : parsed ? [parsed] : []) {
      if (!(body && globals && !raw.names.some((name) => globals.has(name.local)))) continue;
      // (a function's body by position, not by lines: `def f(x=Foo()): import …` on one line — X51-18; a class body from
      // the import on, as its other bindings — X53-03)
      const ranges: Range[] = owner!.type === 'class_definition' ? rangesWithout(node.startIndex, body.endIndex, pythonClass(owner!).holes) : [[body.startIndex, body.endIndex]];
      raw.scope = ranges.map(([from, to]): ImportSpan => [...pointAt(from), ...pointAt(to)]);
    }
    return statement;
  }
  if (lang === 'rust') return parseRustImport(captureName, node, line, skip, pointAt);
  // TS / JS
  if (captureName === 'augment') {
    const module = stringValue(spec);
    return module === undefined ? undefined : { module, line, names: [], reexport: false, augments: [line, node.endPosition.row + 1] };
  }
  if (captureName === 'require') {
    const module = stringValue(spec);
    if (module === undefined) return undefined;
    // `const { a, b: c } = require('m')` / `= await import('m')`: the destructured names are imported (c is an alias of b).
    let holder = node.parent;
    if (holder?.type === 'await_expression') holder = holder.parent;
    const pattern = holder?.type === 'variable_declarator' ? holder.childForFieldName('name') : thenPattern(node);
    if (holder?.type !== 'variable_declarator') holder = null;
    const names: ImportedName[] = [];
    if (pattern?.type === 'object_pattern') {
      for (const part of pattern.namedChildren) {
        if (part?.type === 'shorthand_property_identifier_pattern') names.push({ imported: part.text, local: part.text });
        else if (part?.type === 'pair_pattern') {
          const key = part.childForFieldName('key');
          const value = part.childForFieldName('value');
          if (key && value?.type === 'identifier') {
            skip.add(value.startIndex);
            names.push({ imported: key.text, local: value.text });
          }
        }
      }
    }
    // `const x = require('m')`: x is the module's `module.exports` — its default where that is one name
    // (`module.exports = compute`, TS `export = compute`: X67-08)
    if (names.length === 0 && pattern?.type === 'identifier' && node.childForFieldName('function')?.type === 'identifier') return { module, line, names: [{ imported: '*', local: '*' }, { imported: 'default', local: pattern.text }], reexport: false };
    // (a destructuring's statement starts at its declaration, before its names: which statement an import-kind name is
    // in — X67-13)
    if (names.length > 0 && holder) return { module, line: holder.startPosition.row + 1, column: holder.startPosition.column + 1, names, reexport: false };
    return { module, line, names: names.length > 0 ? names : [{ imported: '*', local: '*' }], reexport: false };
  }
  // TS `import x = require('m')`: x is the module (as a namespace import).
  const requireClause = node.namedChildren.find((child) => child?.type === 'import_require_clause');
  if (requireClause) {
    const required = stringValue(requireClause.childForFieldName('source'));
    const local = requireClause.namedChildren.find((child) => child?.type === 'identifier');
    // (and its default: what the module's `export =` is — X67-08)
    return required === undefined || !local ? undefined : { module: required, line, names: [{ imported: '*', local: local.text }, { imported: 'default', local: local.text }], reexport: false };
  }
  const module = stringValue(node.childForFieldName('source'));
  if (module === undefined) return undefined;
  const names: ImportedName[] = [];
  if (captureName === 'reexport') {
    const clause = node.namedChildren.find((child) => child?.type === 'export_clause');
    const namespace = node.namedChildren.find((child) => child?.type === 'namespace_export');
    if (clause) {
      for (const specifier of clause.namedChildren) {
        const name = specifier?.childForFieldName('name');
        if (!name) continue;
        const alias = specifier!.childForFieldName('alias');
        if (alias) skip.add(alias.startIndex);
        names.push({ imported: name.text, local: alias?.text ?? name.text });
      }
    } else if (namespace) {
      const alias = namespace.namedChild(0);
      if (alias) skip.add(alias.startIndex);
      names.push({ imported: '*', local: alias?.text ?? '*' });
    } else names.push({ imported: '*', local: '*' });
    return { module, line, names, reexport: true };
  }
  const clause = node.namedChildren.find((child) => child?.type === 'import_clause');
  for (const part of clause?.namedChildren ?? []) {
    if (!part) continue;
    if (part.type === 'identifier') names.push({ imported: 'default', local: part.text });
    else if (part.type === 'namespace_import') {
      const local = part.namedChild(0);
      if (local) names.push({ imported: '*', local: local.text });
    } else if (part.type === 'named_imports') {
      for (const specifier of part.namedChildren) {
        const name = specifier?.childForFieldName('name');
        if (!name) continue;
        const alias = specifier!.childForFieldName('alias');
        if (alias) skip.add(alias.startIndex);
        names.push({ imported: name.text, local: alias?.text ?? name.text });
      }
    }
  }
  return { module, line, names, reexport: false };
}

/**
 * TS/JS `export { b as c }` / `export default b` without `from`, where `b` is bound by an import (`import { a as b }
 * from './m'`): a re-export of `./m`'s `a` as `c` (or `default`), as `export { a as c } from './m'` would be; and
 * `export default ns.a` with `ns` a namespace import (`import * as ns from './m'`), a re-export of `./m`'s `a` as
 * `default` whose names are a re-export statement's (added to `ranges` — X53-06). Only an imported binding: a module's
 * own `const b` exported is no re-export.
 */
function localReexports(root: Node, imports: readonly RawImport[], ranges: Array<{ start: number; end: number; kind: ReferenceKind }>, aliases: NonNullable<FileFacts['aliases']>, skip: Set<number>): RawImport[] {
  const bound = new Map<string, { module: string; imported: string }>();
  for (const raw of imports) if (!raw.reexport) for (const name of raw.names) if (name.local !== '*') bound.set(name.local, { module: raw.module, imported: name.imported });
  const result: RawImport[] = [];
  /** `require('m')` (parenthesised or not): m. */
  const required = (node: Node | null): string | undefined => {
    while (node?.type === 'parenthesized_expression') node = node.namedChild(0);
    if (node?.type !== 'call_expression' || node.childForFieldName('function')?.text !== 'require') return undefined;
    const spec = node.childForFieldName('arguments')?.namedChild(0);
    return spec?.type === 'string' ? stringValue(spec) : undefined;
  };
  /**
   * What a value expression is, when it is an imported binding: an imported name (`foo`), a member of an imported
   * module (`ns.foo` after `import * as ns` / `const ns = require('m')`, `require('m').foo`: X67-03) — that module's foo.
   */
  const valueOf = (value: Node | null): { module: string; imported: string } | undefined => {
    while (value?.type === 'parenthesized_expression') value = value.namedChild(0);
    if (value?.type === 'identifier') return bound.get(value.text);
    if (value?.type !== 'member_expression') return undefined;
    const property = value.childForFieldName('property');
    if (property?.type !== 'property_identifier') return undefined;
    const object = value.childForFieldName('object');
    const module = object?.type === 'identifier' ? (bound.get(object.text)?.imported === '*' ? bound.get(object.text)!.module : undefined) : required(object);
    return module === undefined ? undefined : { module, imported: property.text };
  };
  // Aliases by assignment at the module's level (X66-37): `const bar = foo` (exported or not) makes bar what foo is —
  // an imported binding (`export const bar = foo` then re-exports it as `export { foo as bar } from` would), or the
  // module's own declaration (recorded in `aliases`: `export const bar = foo`, `export { foo as bar }`, `const bar = foo;
  // export { bar }`). Also a member of an imported module (`const bar = ns.foo`, `const bar = require('m').foo`: X67-03),
  // and `const ns = require('m')` binds ns to the module (as `import * as ns`).
  const own = new Map<string, NonNullable<FileFacts['aliases']>[number]>();
  for (const statement of root.namedChildren) {
    const declaration = statement?.type === 'export_statement' ? statement.childForFieldName('declaration') : statement;
    if (declaration?.type !== 'lexical_declaration' && declaration?.type !== 'variable_declaration') continue;
    for (const declarator of declaration.namedChildren) {
      if (declarator?.type !== 'variable_declarator') continue;
      const name = declarator.childForFieldName('name');
      const value = declarator.childForFieldName('value');
      // `const { a, b: c } = ns` with ns a namespace import: imports of a (as a) and b (as c) from its module (X67-04)
      const namespace = name?.type === 'object_pattern' && value?.type === 'identifier' ? bound.get(value.text) : undefined;
      if (namespace?.imported === '*' && name) {
        const names: ImportedName[] = [];
        for (const part of name.namedChildren) {
          if (part?.type === 'shorthand_property_identifier_pattern') names.push({ imported: part.text, local: part.text });
          else if (part?.type === 'pair_pattern' && part.childForFieldName('value')?.type === 'identifier') {
            // (the alias is the binding, not a use; the pattern is the import's names, as a destructuring require's — X67-13)
            skip.add(part.childForFieldName('value')!.startIndex);
            names.push({ imported: part.childForFieldName('key')!.text, local: part.childForFieldName('value')!.text });
          }
        }
        ranges.push({ start: name.startIndex, end: name.endIndex, kind: 'import' });
        if (names.length > 0) result.push({ module: namespace.module, line: declarator.startPosition.row + 1, column: declarator.startPosition.column + 1, names, reexport: false, assigned: true });
        for (const entry of names) bound.set(entry.local, { module: namespace.module, imported: entry.imported });
        continue;
      }
      if (name?.type !== 'identifier' || !value || name.text === value.text) continue;
      const module = required(value);
      if (module !== undefined) {
        bound.set(name.text, { module, imported: '*' });
        continue;
      }
      const line = declarator.startPosition.row + 1;
      const from = valueOf(value);
      if (from) {
        bound.set(name.text, from);
        // (bar is bound to it in the module too: its uses there are the name's, as an import's)
        result.push({ module: from.module, line, column: declarator.startPosition.column + 1, names: [{ imported: from.imported, local: name.text }], reexport: false, assigned: true });
        if (statement !== declaration) result.push({ module: from.module, line, names: [{ imported: from.imported, local: name.text }], reexport: true });
        continue;
      }
      if (value.type !== 'identifier') continue;
      const of = own.get(value.text)?.of ?? value.text;
      const alias: NonNullable<FileFacts['aliases']>[number] = { local: name.text, of, line };
      if (statement !== declaration) alias.exported = true;
      own.set(name.text, alias);
      aliases.push(alias);
    }
  }
  const add = (local: string, exportedAs: string, line: number) => {
    const from = bound.get(local);
    if (from) result.push({ module: from.module, line, names: [{ imported: from.imported, local: exportedAs }], reexport: true });
    else if (exportedAs === 'default') return;
    else if (own.has(local) && exportedAs === local) own.get(local)!.exported = true;
    else if (exportedAs !== local) aliases.push({ local: exportedAs, of: own.get(local)?.of ?? local, line, exported: true });
  };
  /** CommonJS: `exports.name = value` / `module.exports = { name: value }` (X67-01): an imported value re-exported as name. */
  const exportValue = (exportedAs: string, value: Node | null, line: number) => {
    while (value?.type === 'parenthesized_expression') value = value.namedChild(0);
    const from = value?.type === 'shorthand_property_identifier' ? bound.get(value.text) : valueOf(value);
    if (from) {
      if (from.imported !== '*') result.push({ module: from.module, line, names: [{ imported: from.imported, local: exportedAs }], reexport: true });
    } else if (value?.type === 'identifier' && value.text !== exportedAs) add(value.text, exportedAs, line);
  };
  for (const statement of root.namedChildren) {
    if (statement?.type === 'expression_statement') {
      const assignment = statement.namedChild(0);
      if (assignment?.type !== 'assignment_expression') continue;
      const left = assignment.childForFieldName('left');
      const right = assignment.childForFieldName('right');
      if (left?.type !== 'member_expression') continue;
      const object = left.childForFieldName('object')?.text;
      const property = left.childForFieldName('property');
      const line = statement.startPosition.row + 1;
      if (object === 'module' && property?.text === 'exports') {
        // `module.exports = require('m')`: every export of m is this module's (as `export * from 'm'`: X67-02)
        const module = required(right);
        if (module !== undefined) result.push({ module, line, names: [{ imported: '*', local: '*' }], reexport: true });
        // `module.exports = compute` with compute imported: a re-export of it as the module's default (X67-08)
        else if (right?.type === 'identifier' || right?.type === 'member_expression') exportValue('default', right, line);
        else if (right?.type === 'object') {
          for (const entry of right.namedChildren) {
            if (entry?.type === 'shorthand_property_identifier') exportValue(entry.text, entry, line);
            else if (entry?.type === 'pair') {
              const key = entry.childForFieldName('key');
              const keyName = key?.type === 'string' ? key.namedChildren.find((child) => child?.type === 'string_fragment') : key;
              if (keyName?.type === 'property_identifier' || keyName?.type === 'string_fragment') exportValue(keyName.text, entry.childForFieldName('value'), line);
            }
          }
        }
      } else if ((object === 'exports' || object === 'module.exports') && property?.type === 'property_identifier') exportValue(property.text, right, line);
      continue;
    }
    if (statement?.type !== 'export_statement' || statement.childForFieldName('source') || statement.childForFieldName('declaration')) continue;
    const line = statement.startPosition.row + 1;
    const clause = statement.namedChildren.find((child) => child?.type === 'export_clause');
    for (const specifier of clause?.namedChildren ?? []) {
      const name = specifier?.childForFieldName('name');
      if (name) add(name.text, specifier!.childForFieldName('alias')?.text ?? name.text, line);
    }
    const value = statement.childForFieldName('value');
    if (value?.type === 'identifier') add(value.text, 'default', line);
    const object = value?.type === 'member_expression' ? value.childForFieldName('object') : null;
    const property = value?.childForFieldName('property');
    const namespace = object?.type === 'identifier' ? bound.get(object.text) : undefined;
    if (namespace?.imported === '*' && property?.type === 'property_identifier') {
      result.push({ module: namespace.module, line, names: [{ imported: property.text, local: 'default' }], reexport: true });
      ranges.push({ start: value!.startIndex, end: value!.endIndex, kind: 'reexport' });
    }
  }
  return result;
}

/**
 * Python: module-level aliases by assignment, `bar = foo` (X66-37) — of a name a module-level `from m import foo`
 * binds: an import of it under the new name (`from m import foo as bar`, at the assignment's line); of the module's own
 * `foo`: recorded in `aliases` (every module-level name can be imported).
 */
function pythonAssignedAliases(root: Node, imports: readonly RawImport[], aliases: NonNullable<FileFacts['aliases']>): RawImport[] {
  const result: RawImport[] = [];
  const bound = new Map<string, { raw: RawImport; imported: string }>();
  for (const raw of imports) if (!raw.reexport && raw.scope === undefined) for (const name of raw.names) if (name.imported !== '*' && name.local !== '*') bound.set(name.local, { raw, imported: name.imported });
  // The names module-level imports bind to a module: `import pkg.mod as m` (pkg.mod), `import pkg` (pkg; `import pkg.mod`
  // binds pkg), `from pkg import mod` (pkg.mod: a name of pkg that is no submodule resolves to nothing).
  const modules = new Map<string, { module: string; level: number }>();
  for (const raw of imports) {
    if (raw.reexport || raw.scope !== undefined || raw.assigned) continue;
    for (const name of raw.names) {
      if (name.local === '*') continue;
      if (name.imported === '*') modules.set(name.local, { module: raw.module.startsWith(`${name.local}.`) ? name.local : raw.module, level: raw.level ?? 0 });
      else if (!name.imported.includes('.')) modules.set(name.local, { module: raw.module === '' ? name.imported : `${raw.module}.${name.imported}`, level: raw.level ?? 0 });
    }
  }
  for (const statement of root.namedChildren) {
    if (statement?.type !== 'expression_statement' || statement.namedChildCount !== 1) continue;
    const assignment = statement.namedChild(0);
    if (assignment?.type !== 'assignment') continue;
    const left = assignment.childForFieldName('left');
    const right = assignment.childForFieldName('right');
    if (left?.type !== 'identifier') continue;
    const line = statement.startPosition.row + 1;
    // `bar = mod.foo` with mod an imported module (`import pkg.mod as mod`, `from pkg import mod`, `from . import mod`):
    // an import of mod's foo as bar (X67-03; `foo = mod.foo`, the same name, is read as a re-export of the module's
    // attribute: X52-13)
    const object = right?.type === 'attribute' ? right.childForFieldName('object') : undefined;
    const attribute = right?.type === 'attribute' ? right.childForFieldName('attribute') : undefined;
    if (object?.type === 'identifier' && attribute?.type === 'identifier' && attribute.text !== left.text) {
      const from = modules.get(object.text);
      if (from) {
        const raw: RawImport = { module: from.module, line, names: [{ imported: attribute.text, local: left.text }], reexport: false, column: statement.startPosition.column + 1, assigned: true, level: from.level };
        result.push(raw);
        bound.set(left.text, { raw, imported: attribute.text });
      }
      continue;
    }
    if (right?.type !== 'identifier' || left.text === right.text) continue;
    const from = bound.get(right.text);
    if (from) {
      const raw: RawImport = { module: from.raw.module, line, names: [{ imported: from.imported, local: left.text }], reexport: false, column: statement.startPosition.column + 1, assigned: true };
      if (from.raw.level !== undefined) raw.level = from.raw.level;
      result.push(raw);
      bound.set(left.text, { raw, imported: from.imported });
      continue;
    }
    const of = aliases.find((alias) => alias.local === right.text)?.of ?? right.text;
    aliases.push({ local: left.text, of, line, exported: true });
  }
  return result;
}

function parsePythonImport(node: Node, line: number, skip: Set<number>): RawImport | RawImport[] | undefined {
  const names: ImportedName[] = [];
  const nameOf = (child: Node): ImportedName | undefined => {
    if (child.type === 'dotted_name') return { imported: child.text, local: child.text };
    if (child.type === 'aliased_import') {
      const name = child.childForFieldName('name');
      const alias = child.childForFieldName('alias');
      if (alias) skip.add(alias.startIndex);
      return name ? { imported: name.text, local: alias?.text ?? name.text } : undefined;
    }
    return undefined;
  };
  if (node.type === 'import_statement') {
    // `import a.b as c` / `import a.b`: the module itself is bound (as a namespace); `import a.b, a.c`: each of them
    // (only the first was read)
    const result: RawImport[] = [];
    for (const child of node.childrenForFieldName('name')) {
      const entry = child ? nameOf(child) : undefined;
      if (!entry) continue;
      const local = entry.local === entry.imported ? entry.imported.split('.')[0]! : entry.local;
      result.push({ module: entry.imported, line, names: [{ imported: '*', local }], reexport: false, level: 0 });
    }
    return result.length === 0 ? undefined : result.length === 1 ? result[0] : result;
  }
  const moduleNode = node.childForFieldName('module_name');
  if (!moduleNode) return undefined;
  let level = 0;
  let module = moduleNode.text;
  if (moduleNode.type === 'relative_import') {
    const prefix = moduleNode.namedChildren.find((child) => child?.type === 'import_prefix');
    level = prefix?.text.length ?? 0;
    module = moduleNode.namedChildren.find((child) => child?.type === 'dotted_name')?.text ?? '';
  }
  for (const child of node.childrenForFieldName('name')) {
    const entry = child ? nameOf(child) : undefined;
    if (entry) names.push(entry);
  }
  if (node.namedChildren.some((child) => child?.type === 'wildcard_import')) names.push({ imported: '*', local: '*' });
  return { module, line, names, reexport: false, level };
}

/** A Rust path's segments, raw identifiers by their names (`a::r#type` → a, type). */
function pathParts(text: string): string[] {
  return text.split('::').map((part) => part.trim().replace(/^r#/, ''));
}

/** Rust: the names of the inline modules around `node`, outermost first (`mod a { mod b { … } }` → a, b). */
function inlineModulesAround(node: Node): string[] {
  let modules = inlineModules.get(node.tree);
  if (!modules) inlineModules.set(node.tree, (modules = rustInlineModules(node.tree.rootNode)));
  // (the last module starting before the node, then up its enclosing ones: the first that holds the node is the innermost)
  const at = node.startIndex;
  let low = 0;
  for (let high = modules.length; low < high; ) {
    const middle = (low + high) >> 1;
    if (modules[middle]!.start < at) low = middle + 1;
    else high = middle;
  }
  for (let index = low - 1; index >= 0; index = modules[index]!.parent) if (at < modules[index]!.end) return [...modules[index]!.path];
  return [];
}

/** Rust: per syntax tree, its inline modules with a body ({@link rustInlineModules}). */
const inlineModules = new WeakMap<object, Array<{ start: number; end: number; path: string[]; parent: number }>>();

/**
 * Rust: a tree's `mod_item`s with a body in document order — each one's text range, its path (the names of the modules
 * around it, outermost first, then its own) and the index of the module around it (-1: none) — in one pass: a node's
 * `parent` walks down from the root, so asking it level by level for each `use` and `mod` was cubic in the nesting
 * (800 nested `mod m { use super::*; … }`: 39 s — outside round X64-16).
 */
function rustInlineModules(root: Node): Array<{ start: number; end: number; path: string[]; parent: number }> {
  const modules: Array<{ start: number; end: number; path: string[]; parent: number }> = [];
  const open: number[] = [];
  for (const module of root.descendantsOfType('mod_item')) {
    if (!module || !module.childForFieldName('body')) continue;
    while (open.length > 0 && modules[open.at(-1)!]!.end <= module.startIndex) open.pop();
    const parent = open.at(-1) ?? -1;
    const name = module.childForFieldName('name')?.text.replace(/^r#/, '') ?? '';
    modules.push({ start: module.startIndex, end: module.endIndex, path: [...(parent >= 0 ? modules[parent]!.path : []), name], parent });
    open.push(modules.length - 1);
  }
  return modules;
}

/** Rust: whether `#[cfg(…)]` attributes make what they are on test-only (true), absent under test (false), or neither. */
function cfgUnderTest(attributes: readonly Node[]): boolean | undefined {
  let answer: boolean | undefined;
  for (const attribute of attributes) {
    const text = /^#!?\[\s*cfg\s*(\([\s\S]*\))\s*\]$/.exec(attribute.text)?.[1];
    const predicate = text === undefined ? undefined : cfgPredicate(text);
    if (!predicate) continue;
    if (requiresTest(predicate)) answer = true;
    else if (forbidsTest(predicate) && answer === undefined) answer = false;
  }
  return answer;
}

/**
 * Rust: the items whose `#[cfg(…)]` holds only under test or never under it, and the modules (or the file) an inner
 * `#![cfg(…)]` of that kind is at the top of — {@link FileFacts.rustCfg} (X64-13).
 */
function rustCfgItems(root: Node, source: string, pointAt: (index: number) => [number, number]): NonNullable<FileFacts['rustCfg']> {
  const items: NonNullable<FileFacts['rustCfg']> = [];
  for (const at of occurrences(source, 'cfg')) {
    const name = root.descendantForIndex(at, at + 3);
    const attribute = name?.parent;
    const holder = attribute?.parent;
    // (in a macro's tokens — `vec![#[cfg(test)] { Item::new() }, …]` —: the element it is on, as check-test-cascade reads it)
    const inMacro = name ? rustMacroCfg(name) : undefined;
    if (inMacro) {
      const test = requiresTest(inMacro.predicate) ? true : forbidsTest(inMacro.predicate) ? false : undefined;
      if (test !== undefined) items.push({ span: [...pointAt(inMacro.first.startIndex), ...pointAt(inMacro.last.endIndex)], test });
      continue;
    }
    if (!name || name.type !== 'identifier' || name.text !== 'cfg' || attribute?.type !== 'attribute' || attribute.firstNamedChild?.id !== name.id || !holder) continue;
    const test = cfgUnderTest([holder]);
    if (test === undefined) continue;
    let item: Node | null;
    if (holder.type === 'inner_attribute_item') item = holder.parent?.type === 'declaration_list' ? holder.parent.parent : holder.parent;
    else if (holder.type === 'attribute_item') {
      item = holder.nextNamedSibling;
      while (item && rustNonItems.has(item.type)) item = item.nextNamedSibling;
    } else continue;
    if (item) items.push({ span: [...pointAt(item.startIndex), ...pointAt(item.endIndex)], test });
  }
  // (a `#[test]`/`#[bench]`/`#[tokio::test]` fn exists in the test build only, like a `#[cfg(test)]` one: X65-02/38)
  for (const holder of rustTestAttributes(root, source)) {
    const item = rustItemAfter(holder);
    if (item) items.push({ span: [...pointAt(item.startIndex), ...pointAt(item.endIndex)], test: true });
  }
  return items;
}

/** Rust: the item an outer attribute is on (the next sibling that is not an attribute or a comment). */
function rustItemAfter(holder: Node): Node | null {
  let item = holder.nextNamedSibling;
  while (item && rustNonItems.has(item.type)) item = item.nextNamedSibling;
  return item;
}

/**
 * Rust: the outer attributes that make a fn test-only without a `cfg` — `#[test]`, `#[bench]`, and a test macro's
 * `#[tokio::test]`, `#[tokio::test(flavor = "multi_thread")]` (a path ending in `test`): libtest's harness keeps such
 * fns in the test build only (X65-02/10/38).
 */
function rustTestAttributes(root: Node, source: string): Node[] {
  const result: Node[] = [];
  for (const word of ['test', 'bench']) {
    for (const at of occurrences(source, word)) {
      const name = root.descendantForIndex(at, at + word.length);
      if (!name || name.type !== 'identifier' || name.startIndex !== at || name.text !== word) continue;
      const scoped = name.parent?.type === 'scoped_identifier' && name.parent.childForFieldName('name')?.id === name.id ? name.parent : undefined;
      if (scoped && word !== 'test') continue;
      const head = scoped ?? name;
      const attribute = head.parent;
      if (attribute?.type !== 'attribute' || attribute.firstNamedChild?.id !== head.id || attribute.parent?.type !== 'attribute_item') continue;
      result.push(attribute.parent);
    }
  }
  return result;
}

function parseRustImport(captureName: string, node: Node, line: number, skip: Set<number>, pointAt: (index: number) => [number, number]): RawImport | RawImport[] | undefined {
  if (captureName === 'mod') {
    const name = node.childForFieldName('name');
    const modulePath = inlineModulesAround(node);
    // (`#[cfg(test)] mod tests;`: the module's file is in test builds only — X64-13)
    const cfgTest = cfgUnderTest(rustAttributesBefore(node));
    return name ? { module: name.text, line, names: [], reexport: false, modDecl: true, ...(modulePath.length > 0 ? { modulePath } : {}), ...(cfgTest === undefined ? {} : { cfgTest }) } : undefined;
  }
  if (captureName === 'externCrate') {
    // (`extern crate cr as c2;`: `c2::util::Item` is `cr::util::Item` — like a `use cr as c2;`: X63-15)
    const name = node.childForFieldName('name')?.text.replace(/^r#/, '');
    const alias = node.childForFieldName('alias')?.text.replace(/^r#/, '');
    return name && alias ? { module: '', line, names: [{ imported: name, local: alias }], reexport: false } : undefined;
  }
  if (captureName === 'macroUse') {
    // `#[macro_use(ensure, other)] extern crate mac;` imports those macros of mac, like `use mac::ensure;` (the
    // Reference, "The macro_use attribute": the list names the macros to import — outside round X59-07)
    const attribute = node.namedChildren.find((child) => child?.type === 'attribute');
    if (attribute?.namedChild(0)?.text !== 'macro_use') return undefined;
    let item = node.nextNamedSibling;
    while (item && (item.type === 'attribute_item' || item.type === 'line_comment' || item.type === 'block_comment')) item = item.nextNamedSibling;
    const crate = item?.type === 'extern_crate_declaration' ? item.childForFieldName('name')?.text : undefined;
    const list = attribute.childForFieldName('arguments');
    if (crate === undefined || !list) return undefined;
    const names = list.namedChildren.filter((child) => child?.type === 'identifier').map((child) => ({ imported: nameOf(child!), local: nameOf(child!) }));
    return names.length === 0 ? undefined : { module: crate.replace(/^r#/, ''), line, names, reexport: false };
  }
  const isPub = node.namedChildren.some((child) => child?.type === 'visibility_modifier');
  const argument = node.childForFieldName('argument');
  const enclosing = node.parent;
  const block: { block?: ImportSpan; inlineModule?: boolean; modulePath?: string[] } = enclosing && enclosing.type !== 'source_file' ? { block: [...pointAt(enclosing.startIndex), ...pointAt(enclosing.endIndex)], ...(enclosing.type === 'declaration_list' && enclosing.parent?.type === 'mod_item' ? { inlineModule: true } : {}) } : {};
  const modulePath = inlineModulesAround(node);
  if (modulePath.length > 0) block.modulePath = modulePath;
  if (!argument) return undefined;
  // (`#[cfg(test)] use mock::Clock;` beside `#[cfg(not(test))] use real::Clock;`: X64-13)
  const cfgTest = cfgUnderTest(rustAttributesBefore(node));
  const cfg = cfgTest === undefined ? {} : { cfgTest };
  // Flatten the use tree into (path, name, alias) leaves; the module is the common path prefix.
  const leaves: Array<{ path: string[]; local: string; at: [number, number] }> = [];
  const at = (tree: Node): [number, number] => [tree.startPosition.row + 1, tree.startPosition.column + 1];
  const walk = (tree: Node, prefix: string[]): void => {
    switch (tree.type) {
      case 'identifier':
      case 'crate':
      case 'self':
      case 'super':
        leaves.push({ path: [...prefix, nameOf(tree)], local: nameOf(tree), at: at(tree) });
        break;
      case 'scoped_identifier': {
        const name = tree.childForFieldName('name');
        leaves.push({ path: [...prefix, ...pathParts(tree.text)], local: name ? nameOf(name) : tree.text, at: at(tree) });
        break;
      }
      case 'use_as_clause': {
        const path = tree.childForFieldName('path');
        const alias = tree.childForFieldName('alias');
        if (alias) skip.add(alias.startIndex);
        if (path) leaves.push({ path: [...prefix, ...pathParts(path.text)], local: alias ? nameOf(alias) : path.text, at: at(tree) });
        break;
      }
      case 'use_wildcard': {
        const path = tree.namedChild(0);
        leaves.push({ path: [...prefix, ...(path ? pathParts(path.text) : []), '*'], local: '*', at: at(tree) });
        break;
      }
      case 'scoped_use_list': {
        const path = tree.childForFieldName('path');
        const next = [...prefix, ...(path ? pathParts(path.text) : [])];
        const list = tree.childForFieldName('list');
        for (const child of list?.namedChildren ?? []) if (child) walk(child, next);
        break;
      }
      case 'use_list':
        for (const child of tree.namedChildren) if (child) walk(child, prefix);
        break;
      default:
        break;
    }
  };
  walk(argument, []);
  if (leaves.length === 0) return undefined;
  // One ImportRef per use declaration: the module is the longest common prefix of the leaves' parents.
  let common = leaves[0]!.path.slice(0, -1);
  for (const leaf of leaves.slice(1)) {
    let length = 0;
    while (length < common.length && length < leaf.path.length - 1 && common[length] === leaf.path[length]) length += 1;
    common = common.slice(0, length);
  }
  const names = leaves.map((leaf) => ({ imported: leaf.path.slice(common.length).join('::'), local: leaf.local }));
  const raw: RawImport = { module: common.join('::'), line, names, reexport: isPub, ...block, ...cfg };
  // (a use tree reaching into several modules: one import per module, where its first name is — X51-10)
  const groups = new Map<string, typeof leaves>();
  for (const leaf of leaves) {
    const module = leaf.path.slice(0, -1).join('::');
    groups.set(module, [...(groups.get(module) ?? []), leaf]);
  }
  if (groups.size <= 1) return raw;
  return [...groups].map(([module, group]) => ({ module, line: group[0]!.at[0], column: group[0]!.at[1], names: group.map((leaf) => ({ imported: leaf.path.at(-1)!, local: leaf.local })), reexport: isPub, ...block, ...cfg }));
}

/** Bumped whenever the facts' shape or meaning changes (with the queries, it keys the cache). */
const factsFormat = 54;

/** A string that changes whenever the extraction can give a different answer. */
export function engineFingerprint(): string {
  return JSON.stringify({ factsFormat, identifierQuery, importQuery, bindingQuery });
}
