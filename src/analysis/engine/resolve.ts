/**
 * Module resolution: from an import as written to the repository files it names.
 *
 * - TS/JS: relative specifiers, and bare ones through the nearest tsconfig/jsconfig `paths`/`baseUrl`
 *   (other bare specifiers are packages): the exact file, TypeScript's
 *   `.js`→`.ts`/`.tsx` (`.mjs`→`.mts`, `.cjs`→`.cts`, `.jsx`→`.tsx`) mapping, then each extension,
 *   then `<dir>/index.<ext>`.
 * - Go: an import path under a `go.mod` module path names that package directory: every non-test
 *   `.go` file directly in it.
 * - Python: relative (`from ..a import b`) from the importing file's package; absolute from the
 *   repository root, `src/` or `lib/`; a module is `x.py` or `x/__init__.py`; `from m import n`
 *   also names the submodule `m/n.py` when it exists.
 * - Rust: `mod x;` → `x.rs` or `x/mod.rs` beside the declaring module; `use crate::…`, `self::…`,
 *   `super::…` walk module files from the crate root (the `src/` of the nearest Cargo.toml, or the
 *   nearest directory holding lib.rs/main.rs). External crates resolve to nothing.
 */
import path from 'node:path';
import type { RawImport } from './extract.js';
import type { Lang } from './types.js';

const posix = path.posix;

export interface ResolverInput {
  /** Every tracked (and analysed) path of the repository. */
  files: ReadonlySet<string>;
  /** go.mod files: directory (repo-relative, '' for the root) and module path. */
  goModules: Array<{ dir: string; module: string }>;
  /**
   * Cargo.toml packages: directory and crate name (`-` as `_`), for `use <crate>::…` inside the crate (tests, examples);
   * and the repository packages it depends on by a path (`a = { path = "../a" }`, renamed `alpha = { …, package = "a" }`,
   * `a.workspace = true`): the name its code gives each, and the package's directory (X64-11).
   */
  rustCrates?: Array<{ dir: string; name: string; dependencies?: Array<{ name: string; dir: string }> }>;
  /**
   * TS/JS: the repository modules (repo-relative paths without extension) a bare specifier written in `from` names
   * through the nearest tsconfig/jsconfig `paths`/`baseUrl` (`@/lib` → `src/lib`); none for a package.
   */
  tsPaths?: (from: string, specifier: string) => string[];
  /** Rust: a repository file's text (for the `#[path = "…"]` attributes of its `mod x;` declarations); none: not read. */
  readText?: (file: string) => string | undefined;
  /**
   * Rust: a file's `mod x;` declarations from its syntax tree — each with the inline modules it is in and its `#[path]`
   * (`cfg_attr(test, path = …)`'s too) —; undefined when not known (the grammar not loaded).
   */
  /** The repository's directory (absolute): an absolute `#[path = "/…"]` inside it is that file (X66-03). */
  root?: string;
  rustModDecls?: (file: string) => ReadonlyArray<{ name: string; modulePath: readonly string[]; path?: string; testPath?: string; moduleDir?: readonly string[] }> | undefined;
}

const jsExtensions = ['.ts', '.tsx', '.mts', '.cts', '.d.ts', '.js', '.jsx', '.mjs', '.cjs'];
const jsMapped: Array<[string, string[]]> = [
  ['.js', ['.ts', '.tsx']],
  ['.jsx', ['.tsx']],
  ['.mjs', ['.mts']],
  ['.cjs', ['.cts']],
];

/** A JavaScript file's extension and its declaration file's (`.mjs` before `.js`, which it ends with). */
const declarationTwins: Array<[string, string]> = [
  ['.mjs', '.d.mts'],
  ['.cjs', '.d.cts'],
  ['.js', '.d.ts'],
];

export class ModuleResolver {
  private readonly goPackages = new Map<string, string[]>();
  private readonly goModules: Array<{ dir: string; module: string }>;

  constructor(private readonly input: ResolverInput) {
    for (const file of input.files) {
      if (!file.endsWith('.go') || file.endsWith('_test.go')) continue;
      const dir = posix.dirname(file);
      const key = dir === '.' ? '' : dir;
      const list = this.goPackages.get(key) ?? [];
      list.push(file);
      this.goPackages.set(key, list);
    }
    for (const list of this.goPackages.values()) list.sort();
    // Longest module path first (nested modules win).
    this.goModules = [...input.goModules].sort((a, b) => b.module.length - a.module.length);
  }

  /** The go.mod modules (directory, module path). */
  goModuleList(): ReadonlyArray<{ dir: string; module: string }> {
    return this.goModules;
  }

  /** The Cargo.toml crate names (as code names them). */
  crateNames(): string[] {
    return (this.input.rustCrates ?? []).map((crate) => crate.name);
  }

  private has(file: string): boolean {
    return this.input.files.has(file);
  }

  /** The files `raw` (imported by `from`) names; `from` itself only with `keepSelf` (a Rust path `self::f`, `crate::this::f`). */
  resolve(from: string, lang: Lang, raw: RawImport, keepSelf = false): string[] {
    let result: string[];
    if (lang === 'go') result = this.resolveGo(raw.module);
    else if (lang === 'python') result = this.resolvePython(from, raw);
    else if (lang === 'rust') result = this.resolveRust(from, raw);
    else result = this.resolveJs(from, raw.module);
    return [...new Set(result)].filter((file) => keepSelf || file !== from).sort();
  }

  private resolveJs(from: string, specifier: string): string[] {
    if (!specifier.startsWith('.') && !specifier.startsWith('/')) {
      // (a tsconfig `paths` alias or `baseUrl` module: outside round X58-10 — `import { signIn } from '@/lib'`)
      for (const target of this.input.tsPaths?.(from, specifier) ?? []) {
        const found = this.jsFile(target);
        if (found.length > 0) return found;
      }
      return [];
    }
    const base = posix.normalize(posix.join(posix.dirname(from), specifier));
    if (base.startsWith('../')) return [];
    return this.jsFile(base);
  }

  /** The file a module path `base` (repo-relative, as written: with or without an extension) names, if any. */
  private jsFile(base: string): string[] {
    const candidates = [base];
    for (const [extension, replacements] of jsMapped) {
      if (base.endsWith(extension)) for (const replacement of replacements) candidates.push(base.slice(0, -extension.length) + replacement);
    }
    for (const extension of jsExtensions) candidates.push(base + extension);
    for (const extension of jsExtensions) candidates.push(`${base}/index${extension}`);
    const found = candidates.find((candidate) => this.has(candidate));
    if (!found) return [];
    // (a declaration file beside a JavaScript file, `util.d.ts` beside `util.js`, declares that file's exports: an import
    // naming either reaches both — tsc reads the types of one, node runs the other: outside round X66-46)
    const twin = declarationTwins.find(([code, declaration]) => found.endsWith(code) || found.endsWith(declaration));
    if (twin) {
      const [code, declaration] = twin;
      const other = found.endsWith(declaration) ? found.slice(0, -declaration.length) + code : found.slice(0, -code.length) + declaration;
      if (this.has(other)) return [found, other];
    }
    return [found];
  }

  private resolveGo(importPath: string): string[] {
    for (const { dir, module } of this.goModules) {
      if (importPath !== module && !importPath.startsWith(`${module}/`)) continue;
      const rest = importPath.slice(module.length).replace(/^\//, '');
      const packageDir = dir === '' ? rest : rest === '' ? dir : `${dir}/${rest}`;
      return this.goPackages.get(packageDir) ?? [];
    }
    return [];
  }

  private pythonModule(dir: string): string | undefined {
    if (this.has(`${dir}.py`)) return `${dir}.py`;
    if (this.has(`${dir}/__init__.py`)) return `${dir}/__init__.py`;
    return undefined;
  }

  private resolvePython(from: string, raw: RawImport): string[] {
    const parts = raw.module === '' ? [] : raw.module.split('.');
    const bases: string[] = [];
    if ((raw.level ?? 0) > 0) {
      let dir = posix.dirname(from);
      for (let up = 1; up < raw.level!; up += 1) dir = posix.dirname(dir);
      bases.push(dir === '.' ? '' : dir);
    } else bases.push(...this.pythonProjectRoots(from), '', 'src', 'lib', ...this.allPythonProjectRoots());
    const result: string[] = [];
    for (const base of bases) {
      const modulePath = [base, ...parts].filter((part) => part !== '').join('/');
      const module = modulePath === '' ? undefined : this.pythonModule(modulePath);
      if (module) result.push(module);
      for (const name of raw.names) {
        if (name.imported === '*') continue;
        const sub = [modulePath, ...name.imported.split('.')].filter((part) => part !== '').join('/');
        const submodule = this.pythonModule(sub);
        if (submodule) result.push(submodule);
      }
      if (result.length > 0) break;
    }
    return result;
  }

  /**
   * Python: the directories above `from` (nearest first, the repository's top level excluded) holding a project file
   * (`pyproject.toml`, `setup.py`, `setup.cfg`) and their `src/`: absolute imports of a sub-project resolve there
   * (`sub/app/main.py`: `from app.svc import h` is `sub/app/svc/h.py` when `sub/pyproject.toml` exists).
   */
  private pythonProjectRoots(from: string): string[] {
    const roots: string[] = [];
    for (let dir = posix.dirname(from); dir !== '.' && dir !== '' && dir !== '/'; dir = posix.dirname(dir)) {
      if (['pyproject.toml', 'setup.py', 'setup.cfg'].some((name) => this.has(`${dir}/${name}`))) roots.push(dir, `${dir}/src`);
    }
    return roots;
  }

  private pythonRootsCache?: string[];

  /**
   * Every Python project root of the repository (and its `src/`), shortest path first: a monorepo's sub-projects
   * import each other as installed workspace members (`from core.util import helper` in apps/web, `core` in
   * libs/core/src — outside attack X50-11). Tried after the importing file's own roots and the top level.
   */
  private allPythonProjectRoots(): string[] {
    if (!this.pythonRootsCache) {
      const roots: string[] = [];
      for (const file of this.input.files) {
        const name = posix.basename(file);
        if (name !== 'pyproject.toml' && name !== 'setup.py' && name !== 'setup.cfg') continue;
        const dir = posix.dirname(file);
        if (dir !== '.' && !roots.includes(dir)) roots.push(dir);
      }
      roots.sort((a, b) => a.split('/').length - b.split('/').length || (a < b ? -1 : 1));
      this.pythonRootsCache = roots.flatMap((dir) => [dir, `${dir}/src`]);
    }
    return this.pythonRootsCache;
  }

  /** The directory holding a Rust module file's child modules (a crate root's are beside it: `tests/it.rs`'s `mod common;`). */
  private rustModuleDir(file: string): string {
    return rustChildDir(file, this.rustTargetRoot(file) || this.rustPathLoaded(file));
  }

  private readonly rustPathLoadedMemo = new Map<string, boolean>();
  private readonly rustPathStrings = new Map<string, { targets: Set<string>; names: Set<string>; exact: Set<string> }>();

  /**
   * Rust: whether a module file named like a non-mod-rs file (`other/thing.rs`) is loaded by a `#[path = "…"]` of a
   * `mod x;` (the Reference: then it is read like a mod-rs file — its `mod b;` is `other/b.rs`, not `other/thing/b.rs`:
   * X65-58). Only asked of a file its directory's module file does not declare (an ordinary crate's never are).
   */
  private rustPathLoaded(file: string): boolean {
    const known = this.rustPathLoadedMemo.get(file);
    if (known !== undefined) return known;
    this.rustPathLoadedMemo.set(file, false);
    const stem = posix.basename(file, '.rs');
    const answer = file.endsWith('.rs') && stem !== 'mod' && stem !== 'lib' && stem !== 'main' && !this.rustTargetRoot(file) && this.rustLayoutParent(file) === undefined && this.rustPathStringsOf(file).targets.has(file);
    this.rustPathLoadedMemo.set(file, answer);
    return answer;
  }

  /**
   * Rust: the `path = "…"` strings of the package of `file` (its .rs files' texts read once, only when a file its
   * directory's module file does not declare is met): the files they name from their file's directory (`targets`), the
   * files they and `include!("…")`s are known to name (`exact`), and the base names of those whose file is not known.
   */
  private rustPathStringsOf(file: string): { targets: Set<string>; names: Set<string>; exact: Set<string> } {
    const pkg = this.rustPackageDir(file) ?? '';
    let found = this.rustPathStrings.get(pkg);
    if (found) return found;
    found = { targets: new Set(), names: new Set(), exact: new Set() };
    this.rustPathStrings.set(pkg, found);
    const prefix = pkg === '' ? '' : `${pkg}/`;
    for (const candidate of this.input.files) {
      // (Cargo.toml's `[[bin]] path = "tools/gen.rs"` names a crate root; `include!("gen/x.rs")` a file compiled in its includer's)
      if (!(candidate.endsWith('.rs') || posix.basename(candidate) === 'Cargo.toml') || !candidate.startsWith(prefix)) continue;
      const text = this.input.readText?.(candidate) ?? '';
      if (!text.includes('path') && !text.includes('include')) continue;
      // (`include_str!`/`include_bytes!` embed a file's text, compiling nothing; a string in a comment names nothing — X66-28)
      const matches = [...text.matchAll(/\b(path\s*=|include(?:_str|_bytes)?!\s*\()\s*"([^"\\]+)"/g)]
        .filter((match) => !match[1]!.startsWith('include_') && !inComment(text, match.index))
        .map((match) => ({ include: match[1]!.startsWith('include'), value: match[2]! }));
      const naive = (value: string) => this.rustRepoPath(posix.isAbsolute(value) ? value : posix.normalize(posix.join(posix.dirname(candidate), value)));
      // (an `include!("…")` is relative to its file, inline modules or not)
      for (const { value } of matches.filter((match) => match.include)) found.exact.add(naive(value));
      const paths = matches.filter((match) => !match.include).map((match) => match.value);
      if (paths.length === 0) continue;
      for (const value of paths) found.targets.add(naive(value));
      // (a `#[path]` outside inline modules is relative to its file's directory; inside one, to that module's directory —
      // `pub mod inline { #[path = "other.rs"] pub mod inner; }` in src/a.rs is src/a/inline/other.rs, not src/other.rs,
      // which is then no module of the crate (c01): read from the syntax tree's `mod x;` declarations when each string of
      // the file is one of theirs; else only its base name is a clue)
      const inline = /\bmod\s+(?:r#)?[A-Za-z_][A-Za-z0-9_]*\s*\{/.test(text);
      const declared = inline && candidate.endsWith('.rs') ? this.input.rustModDecls?.(candidate) : undefined;
      const written = (declared ?? []).flatMap((decl) => [decl.path, decl.testPath].filter((value): value is string => value !== undefined).map((value) => ({ decl, value })));
      const rest = [...paths];
      for (const { value } of written) if (rest.includes(value)) rest.splice(rest.indexOf(value), 1);
      // (an inline module's own `#[path = "gdir"]` names its directory: every `mod x;` in it is a file there — X66-55)
      const underPathed = (declared ?? []).filter((decl) => decl.moduleDir !== undefined);
      for (const decl of underPathed) for (const value of decl.moduleDir!) if (rest.includes(value)) rest.splice(rest.indexOf(value), 1);
      if (!inline) for (const value of paths) found.exact.add(naive(value));
      else if (declared !== undefined) {
        // (a file loaded by a `#[path]` is read like a mod.rs: its inline modules' directory may be either)
        for (const { decl, value } of written) for (const root of decl.modulePath.length === 0 ? [true] : [true, false]) found.exact.add(this.rustRepoPath(rustModuleCandidates(candidate, decl.name, decl.moduleDir ?? decl.modulePath, value, root)[0]!));
        for (const decl of underPathed) if (decl.path === undefined) for (const root of [true, false]) for (const file of rustModuleCandidates(candidate, decl.name, decl.moduleDir!, undefined, root)) found.exact.add(this.rustRepoPath(posix.normalize(file)));
        // (a string no declaration has — `cfg_attr(feature = "alt", path = "alt.rs")`, a comment —: only its base name is a
        // clue; the declarations' own strings stay exact, not every file of their base name: X66-02)
        for (const value of rest) found.names.add(posix.basename(value));
      } else for (const value of paths) found.names.add(posix.basename(value));
    }
    return found;
  }

  /**
   * Rust: a `#[path]`'s file as a repository path — an absolute one inside the repository made relative (cargo reads
   * `#[path = "/…/repo/src/real/x.rs"]` as that file: X66-03), one outside left absolute (no repository file).
   */
  private rustRepoPath(file: string): string {
    if (!posix.isAbsolute(file)) return file;
    const root = this.input.root;
    if (root === undefined) return file;
    const relative = posix.relative(root, posix.normalize(file));
    return relative === '' || relative.startsWith('..') || posix.isAbsolute(relative) ? file : relative;
  }

  /** Rust: the module file beside or above `file` (x.rs, x/mod.rs, a crate root) that declares it by a `mod name;`, if any. */
  private rustLayoutParent(file: string): string | undefined {
    const { name, candidates } = rustParentCandidates(file);
    return candidates.find((candidate) => candidate !== file && this.has(candidate) && this.rustModDeclarations(candidate).includes(name) && this.rustChild(candidate, this.rustModuleDir(candidate), name)?.file === file);
  }

  private readonly rustOrphans = new Map<string, boolean>();
  private readonly rustInTrees = new Map<string, boolean>();

  /** Rust: whether a module file is known to be in a crate's module tree: a crate root, declared by one that is, or a `#[path]`'s. */
  private rustInTree(file: string): boolean {
    const known = this.rustInTrees.get(file);
    if (known !== undefined) return known;
    this.rustInTrees.set(file, false);
    const parent = this.rustTargetRoot(file) ? undefined : this.rustLayoutParent(file);
    // (tests/common/mod.rs: declared by `mod common;` in a crate root beside its directory, tests/it.rs — X66-07)
    const answer = this.rustTargetRoot(file) || (parent !== undefined ? this.rustInTree(parent) : this.rustPathLoaded(file) || this.rustRootBesideDeclares(file) || this.rustInlineChild(file));
    this.rustInTrees.set(file, answer);
    return answer;
  }

  /** Rust: whether a module file is declared inside inline modules of a file above it ({@link rustInlineParent}). */
  private rustInlineChild(file: string): boolean {
    const { name, candidates } = rustParentCandidates(file);
    const dir = posix.dirname(candidates.at(-1)!) === '.' ? '' : posix.dirname(candidates.at(-1)!);
    // (a path string naming a directory on the way is no declaration here: only `#[path]`-loaded files are owners)
    return this.rustInlineParent(dir, name, { targets: this.rustPathStringsOf(file).targets, names: new Set() }, this.rustPackageDir(file) ?? '');
  }

  /**
   * Rust: whether a crate root (tests/it.rs, src/bin/x.rs, …) in the directory above a module file's declares it by a
   * `mod name;` of its own — tests/common/mod.rs by `mod common;` in tests/it.rs (a crate root's children are beside it).
   */
  private rustRootBesideDeclares(file: string): boolean {
    const { name, candidates } = rustParentCandidates(file);
    const dir = posix.dirname(candidates.at(-1)!) === '.' ? '' : posix.dirname(candidates.at(-1)!);
    return (this.rustFilesByDir().get(dir) ?? []).some((root) => root !== file && this.rustTargetRoot(root) && this.rustModDeclarations(root).includes(name) && this.rustChild(root, this.rustModuleDir(root), name)?.file === file);
  }

  /** Rust: the repository's .rs files by directory ('' for the top level), listed once. */
  private rustFilesByDir(): Map<string, string[]> {
    if (!this.rustRsByDir) {
      this.rustRsByDir = new Map();
      for (const candidate of this.input.files) {
        if (!candidate.endsWith('.rs')) continue;
        const at = posix.dirname(candidate) === '.' ? '' : posix.dirname(candidate);
        const list = this.rustRsByDir.get(at);
        if (list) list.push(candidate);
        else this.rustRsByDir.set(at, [candidate]);
      }
    }
    return this.rustRsByDir;
  }

  /**
   * Rust: whether a module file is in no crate's module tree — the module file of its directory (x.rs, x/mod.rs, a crate
   * root), itself in the tree, does not declare it and no `path = "…"` names a file of its name (a left-over file, or
   * src/other/thing/b.rs when other/thing.rs is loaded by a `#[path]`: X65-58). Cargo never compiles it. False when
   * not known (no such module file: an inline module's directory, a `#[path]`'s).
   */
  rustOrphan(file: string): boolean {
    const known = this.rustOrphans.get(file);
    if (known !== undefined) return known;
    this.rustOrphans.set(file, false);
    let answer = false;
    if (file.endsWith('.rs') && !this.rustTargetRoot(file) && this.rustPackageDir(file) !== undefined && this.input.readText) {
      const parent = this.rustLayoutParent(file);
      if (parent !== undefined) answer = this.rustOrphan(parent);
      else {
        const dir = posix.dirname(file) === '.' ? '' : posix.dirname(file);
        const stem = posix.basename(file, '.rs');
        const parentDir = stem === 'mod' ? (posix.dirname(dir) === '.' ? '' : posix.dirname(dir)) : dir;
        const prefix = parentDir === '' ? '' : `${parentDir}/`;
        const existing = [...(parentDir === '' ? [] : [`${parentDir}.rs`]), `${prefix}mod.rs`, `${prefix}lib.rs`, `${prefix}main.rs`].filter((candidate) => candidate !== file && this.has(candidate));
        const strings = existing.length > 0 ? this.rustPathStringsOf(file) : undefined;
        answer = strings !== undefined ? existing.every((candidate) => this.rustInTree(candidate)) && !strings.exact.has(file) && !strings.names.has(posix.basename(file)) : this.rustUnreachable(file, parentDir);
      }
    }
    this.rustOrphans.set(file, answer);
    return answer;
  }

  private readonly rustInlineNames = new Map<string, Set<string>>();
  private rustRsByDir?: Map<string, string[]>;

  /**
   * Rust: whether a module file in a directory with no module file of its own (src/impls/gone/x.rs, tests/data/fixture.rs
   * — no gone.rs, gone/mod.rs, lib.rs or main.rs) has no way into a crate: no crate root beside it declares it, no module
   * file of a directory above (x.rs, x/mod.rs, a crate root, a `#[path]`-loaded file) writes an inline module of the next
   * directory's name (`mod gone { mod x; }`), no `#[path]`-loaded file is in its directory, and no `path = "…"` /
   * `include!("…")` string of the package names its file or a directory on the way. Cargo never compiles such a file.
   */
  private rustUnreachable(file: string, dir: string): boolean {
    const strings = this.rustPathStringsOf(file);
    const pkg = this.rustPackageDir(file) ?? '';
    const own = posix.basename(file) === 'mod.rs' ? [posix.basename(posix.dirname(file))] : [];
    const name = own[0] ?? posix.basename(file, '.rs');
    // (a `#[path]`-loaded file is read like a mod.rs — its `mod name;` is beside it —, an `include!`d file's likewise: only
    // such a declaration brings in a file of its directory, not the directory itself — src/gen/c.rs beside
    // `#[path = "gen/a.rs"]`'s file: X66-80)
    if (strings.exact.has(file) || [posix.basename(file), ...own].some((base) => strings.names.has(base)) || [...strings.targets, ...strings.exact].some((target) => posix.dirname(target) === (dir === '' ? '.' : dir) && this.has(target) && this.rustModDeclarations(target).includes(name))) return false;
    const byDir = this.rustFilesByDir();
    // (a crate root of `dir` declaring it: tests/it.rs's `mod common;` is tests/common/mod.rs — a crate root's children are beside it)
    if ((byDir.get(dir) ?? []).some((root) => this.rustTargetRoot(root) && this.rustModDeclarations(root).includes(name))) return false;
    return !this.rustInlineParent(dir, name, strings, pkg);
  }

  /**
   * Rust: whether a module file above `dir` (x.rs, x/mod.rs, a crate root, a `#[path]`-loaded file) writes the inline
   * modules from its directory down to `dir` with a `mod name;` in them — `mod inl { pub mod deep; }` in src/lib.rs
   * brings in src/inl/deep.rs, not a left-over src/inl/old.rs beside it (X66-01). `strings`: the package's path strings
   * (their targets are owners too; a base name of `names` on the way is taken as declared).
   */
  private rustInlineParent(dir: string, name: string, strings: { targets: ReadonlySet<string>; names: ReadonlySet<string> }, pkg: string): boolean {
    const byDir = this.rustFilesByDir();
    for (let at = dir, chain: string[] = []; at !== pkg && at !== ''; ) {
      const segment = posix.basename(at);
      chain.unshift(segment);
      if (strings.names.has(segment)) return true;
      const above = posix.dirname(at) === '.' ? '' : posix.dirname(at);
      const prefix = above === '' ? '' : `${above}/`;
      // (the module files whose children are in `above`: above.rs, above/mod.rs, its crate roots, `#[path]`-loaded files there)
      const owners = [...(above === '' ? [] : [`${above}.rs`]), `${prefix}mod.rs`, ...(byDir.get(above) ?? []).filter((candidate) => this.rustTargetRoot(candidate) || strings.targets.has(candidate) || /^(?:lib|main)\.rs$/.test(posix.basename(candidate)))];
      if (owners.some((owner) => this.has(owner) && this.rustInlineNamesOf(owner).has(segment) && this.rustInlineDeclares(owner, chain, name))) return true;
      at = above;
    }
    return false;
  }

  /**
   * Rust: whether a module file writes `mod name;` (no `#[path]`: those are `strings`') inside the inline modules `chain`
   * (`mod inl { mod sub { mod name; } }` for inl, sub) — from its syntax tree; true when that is not at hand.
   */
  private readonly rustDeclsMemo = new Map<string, ReturnType<NonNullable<ResolverInput['rustModDecls']>>>();

  private rustInlineDeclares(owner: string, chain: readonly string[], name: string): boolean {
    if (!this.rustDeclsMemo.has(owner)) this.rustDeclsMemo.set(owner, this.input.rustModDecls?.(owner));
    const declared = this.rustDeclsMemo.get(owner);
    if (declared === undefined) return true;
    return declared.some((decl) => decl.name === name && decl.path === undefined && decl.moduleDir === undefined && decl.modulePath.length === chain.length && decl.modulePath.every((segment, index) => segment.replace(/^r#/, '') === chain[index]));
  }

  /** Rust: the names of the inline modules (`mod x { … }`) written anywhere in a file's text (read once per file). */
  private rustInlineNamesOf(file: string): Set<string> {
    let names = this.rustInlineNames.get(file);
    if (!names) {
      const text = this.input.readText?.(file) ?? '';
      names = new Set(text.includes('mod') ? [...text.matchAll(/\bmod\s+(?:r#)?([A-Za-z_][A-Za-z0-9_]*)\s*\{/g)].map((match) => match[1]!) : []);
      this.rustInlineNames.set(file, names);
    }
    return names;
  }

  /** The directory of the Cargo.toml nearest above `file` ('' for the repository's top level), undefined when none. */
  private rustPackageDir(file: string): string | undefined {
    for (let dir = posix.dirname(file); ; dir = posix.dirname(dir)) {
      const prefix = dir === '.' ? '' : `${dir}/`;
      if (this.has(`${prefix}Cargo.toml`)) return dir === '.' ? '' : dir;
      if (dir === '.' || dir === '' || dir === '/') return undefined;
    }
  }

  /**
   * Rust: whether `file` is the root of a crate of its package by Cargo's target auto-discovery — src/lib.rs,
   * src/main.rs, src/bin/*.rs, src/bin/x/main.rs, tests/*.rs, examples/*.rs, benches/*.rs (or their x/main.rs),
   * build.rs: each binary, integration test, example and bench is a crate of its own (X64-07).
   */
  private readonly rustTargetRoots = new Map<string, boolean>();

  private rustTargetRoot(file: string): boolean {
    let answer = this.rustTargetRoots.get(file);
    if (answer !== undefined) return answer;
    const pkg = this.rustPackageDir(file);
    const rel = pkg === undefined ? undefined : pkg === '' ? file : file.slice(pkg.length + 1);
    answer = rel !== undefined && cargoTargetRoot(rel);
    this.rustTargetRoots.set(file, answer);
    return answer;
  }

  private readonly rustRoots = new Map<string, { dir: string; file: string } | undefined>();

  /**
   * Rust: the root file of the crate `from` is a module of, and the directory of its child modules. A crate root is its
   * own; a module below tests/, examples/, benches/ or src/bin/ (`tests/common/mod.rs`) belongs to the target that
   * declares it (`mod common;` in tests/it.rs — the first such file: X64-07/08); the rest of src/ to the library
   * (src/lib.rs, else src/main.rs), as does a file outside any Cargo package with a lib.rs/main.rs above it.
   */
  private rustCrateRoot(from: string): { dir: string; file: string } | undefined {
    // (a module file of both src/lib.rs and src/main.rs read as the binary's: rustInCrate — X65-23)
    if (this.rustContext !== undefined && this.rustContext.modules.has(from)) return this.rustContext.root;
    if (this.rustRoots.has(from)) return this.rustRoots.get(from);
    let found: { dir: string; file: string } | undefined;
    const pkg = this.rustPackageDir(from);
    if (this.rustTargetRoot(from)) found = { dir: posix.dirname(from) === '.' ? '' : posix.dirname(from), file: from };
    else if (pkg !== undefined) {
      const prefix = pkg === '' ? '' : `${pkg}/`;
      const area = /^((?:src\/bin|tests|examples|benches))\/([^/]+)\//.exec(from.slice(prefix.length));
      if (area) {
        const areaDir = `${prefix}${area[1]!}`;
        const own = `${areaDir}/${area[2]!}/main.rs`;
        if (this.has(own)) found = { dir: posix.dirname(own), file: own };
        else {
          const owner = this.rustAreaOwners(areaDir, area[2]!)[0];
          if (owner) found = { dir: areaDir, file: owner };
        }
      }
    }
    // (a module file only src/main.rs declares beside a src/lib.rs — `mod helpers;`, `#[cfg(test)] mod tests;` in main.rs —
    // is in the binary's crate, not the library's: X65-63)
    if (!found && pkg !== undefined) {
      const prefix = pkg === '' ? '' : `${pkg}/`;
      const top = this.rustMainModules(prefix).get(from);
      if (top !== undefined && !this.rustDeclares(`${prefix}src/lib.rs`, top)) found = { dir: `${prefix}src`, file: `${prefix}src/main.rs` };
    }
    if (!found) {
      let dir = posix.dirname(from);
      for (;;) {
        const prefix = dir === '.' ? '' : `${dir}/`;
        const root = dir === '.' ? '' : dir;
        if (this.has(`${prefix}lib.rs`) || this.has(`${prefix}main.rs`)) {
          found = { dir: root, file: this.has(`${prefix}lib.rs`) ? `${prefix}lib.rs` : `${prefix}main.rs` };
          break;
        }
        if (this.has(`${prefix}Cargo.toml`) && (this.has(`${prefix}src/lib.rs`) || this.has(`${prefix}src/main.rs`))) {
          found = { dir: `${prefix}src`, file: this.has(`${prefix}src/lib.rs`) ? `${prefix}src/lib.rs` : `${prefix}src/main.rs` };
          break;
        }
        if (dir === '.' || dir === '') break;
        dir = posix.dirname(dir);
      }
    }
    this.rustRoots.set(from, found);
    return found;
  }

  /** Rust: the root file of the crate `file` is a module of (see rustCrateRoot), undefined when none. */
  rustCrateOf(file: string): string | undefined {
    return this.rustCrateRoot(file)?.file;
  }

  /**
   * Rust: whether `file` is in an integration test's crate (tests/it.rs, tests/x/main.rs and the modules they declare):
   * cargo builds it with `--test` only, so every line of it is under `cfg(test)` (X65-38).
   */
  rustTestTarget(file: string): boolean {
    const root = this.rustCrateRoot(file)?.file;
    const pkg = root === undefined ? undefined : this.rustPackageDir(root);
    return root !== undefined && pkg !== undefined && /^tests\//.test(pkg === '' ? root : root.slice(pkg.length + 1)) && this.rustTargetRoot(root);
  }

  private readonly rustMainTrees = new Map<string, Map<string, string>>();
  private rustContext: { root: { dir: string; file: string }; modules: { has(file: string): boolean } } | undefined;
  private readonly rustOwners = new Map<string, string[]>();

  /** Rust: the crate roots directly in `areaDir` (tests/, examples/, …) that declare `mod <name>;`, sorted. */
  private rustAreaOwners(areaDir: string, name: string): string[] {
    const key = `${areaDir}\0${name}`;
    let owners = this.rustOwners.get(key);
    if (!owners) {
      const declares = new RegExp(`\\bmod\\s+(?:r#)?${name.replace(/\.rs$/, '')}\\s*;`);
      owners = [...this.input.files].filter((file) => posix.dirname(file) === areaDir && file.endsWith('.rs')).sort().filter((file) => declares.test(this.input.readText?.(file) ?? ''));
      this.rustOwners.set(key, owners);
    }
    return owners;
  }

  /**
   * Rust: the other crates a file is a module of — src/main.rs for a module file both src/lib.rs and src/main.rs declare
   * (`mod user;` in each: X65-23); rustCrateRoot gives the library's.
   */
  rustOtherCrates(file: string): string[] {
    const pkg = this.rustPackageDir(file);
    if (pkg === undefined || this.rustContext !== undefined) return [];
    const prefix = pkg === '' ? '' : `${pkg}/`;
    // (`tests/common/mod.rs`, `mod common;` in tests/a.rs and tests/b.rs: a module of each — X65-15)
    const area = /^((?:src\/bin|tests|examples|benches))\/([^/]+)\//.exec(file.slice(prefix.length));
    if (area && !this.rustTargetRoot(file) && !this.has(`${prefix}${area[1]!}/${area[2]!}/main.rs`)) return this.rustAreaOwners(`${prefix}${area[1]!}`, area[2]!).slice(1);
    const top = this.rustMainModules(prefix).get(file);
    return top !== undefined && this.rustDeclares(`${prefix}src/lib.rs`, top) ? [`${prefix}src/main.rs`] : [];
  }

  /** Rust: `run`'s answer with the module files of `root` (a crate root of rustOtherCrates) read in that crate. */
  rustInCrate<T>(root: string, run: () => T): T {
    const prefix = root.endsWith('src/main.rs') ? root.slice(0, -'src/main.rs'.length) : undefined;
    const dir = posix.dirname(root);
    this.rustContext =
      prefix !== undefined && this.has(`${prefix}src/lib.rs`)
        ? { root: { dir: `${prefix}src`, file: root }, modules: this.rustMainModules(prefix) }
        : { root: { dir, file: root }, modules: { has: (file: string) => file.startsWith(`${dir}/`) && !this.rustTargetRoot(file) && !/\/main\.rs$/.test(file.slice(dir.length + 1)) && this.rustAreaOwners(dir, file.slice(dir.length + 1).split('/')[0]!).includes(root) } };
    try {
      return run();
    } finally {
      this.rustContext = undefined;
    }
  }

  /**
   * Rust: the module files of a package's src/main.rs when it has a src/lib.rs beside it (none otherwise), each with the
   * file of the main.rs module it is under — its `mod x;` declarations followed from main.rs's text, once per package.
   */
  private rustMainModules(prefix: string): Map<string, string> {
    let tree = this.rustMainTrees.get(prefix);
    if (tree) return tree;
    tree = new Map();
    this.rustMainTrees.set(prefix, tree);
    const main = `${prefix}src/main.rs`;
    if (!this.input.readText || !this.has(main) || !this.has(`${prefix}src/lib.rs`)) return tree;
    const pending: Array<[string, string | undefined]> = [[main, undefined]];
    for (let next = pending.pop(); next; next = pending.pop()) {
      const [parent, top] = next;
      for (const name of this.rustModDeclarations(parent)) {
        const child = this.rustChild(parent, this.rustModuleDir(parent), name);
        if (!child || child.file === main || tree.has(child.file)) continue;
        tree.set(child.file, top ?? child.file);
        pending.push([child.file, top ?? child.file]);
      }
    }
    return tree;
  }

  private readonly rustModNames = new Map<string, string[]>();

  /** Rust: the names of the `mod x;` declarations in a file's text (read once per file). */
  private rustModDeclarations(file: string): string[] {
    let names = this.rustModNames.get(file);
    if (!names) {
      const text = this.input.readText?.(file) ?? '';
      names = text.includes('mod') ? [...text.matchAll(/\bmod\s+(?:r#)?([A-Za-z_][A-Za-z0-9_]*)\s*;/g)].map((match) => match[1]!) : [];
      this.rustModNames.set(file, names);
    }
    return names;
  }

  /** Rust: whether a module file `parent` declares the module file `child` by a `mod x;` of its own. */
  private rustDeclares(parent: string, child: string): boolean {
    return this.has(parent) && this.rustModDeclarations(parent).some((name) => this.rustChild(parent, this.rustModuleDir(parent), name)?.file === child);
  }

  private readonly rustPathAttributes = new Map<string, Map<string, string>>();
  private readonly rustInlineOnly = new Map<string, Set<string>>();

  /**
   * Rust: the file of the child module `name` of the module file `parent` — by its `#[path = "…"]` attribute when
   * `parent` declares `mod name;` with one (relative to `parent`'s directory: X63-11), else `x.rs`/`x/mod.rs` in `dir`.
   * The module file of a `#[path]` is read like a `mod.rs`: its own children are beside it.
   */
  /** Rust: the `#[path = "…"]` of the top-level `mod name;` of `parent` (from its text), if any. */
  private rustPathAttribute(parent: string, name: string): string | undefined {
    if (!this.input.readText) return undefined;
    let attributes = this.rustPathAttributes.get(parent);
    if (!attributes) {
      attributes = new Map();
      const text = this.input.readText(parent) ?? '';
      if (text.includes('path')) {
        for (const match of text.matchAll(/#\[\s*path\s*=\s*"([^"\\]+)"\s*\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\s*\([^)]*\))?\s+)?mod\s+(?:r#)?([A-Za-z_][A-Za-z0-9_]*)\s*;/g)) attributes.set(match[2]!, match[1]!);
      }
      this.rustPathAttributes.set(parent, attributes);
    }
    // (a declaration per build — `#[cfg(test)] #[path = "mock_util.rs"] mod util;` + `#[cfg(not(test))] mod util;`, or
    // `#[cfg_attr(test, path = "mock_util.rs")] mod util;` —: the build's file — X65-61)
    const builds = this.rustBuildPaths(parent, name);
    if (builds !== undefined) {
      if (this.rustBuild !== undefined) return builds[this.rustBuild ? 1 : 0] ?? undefined;
      this.rustBuildChoiceCount += 1;
    }
    return attributes.get(name);
  }

  private readonly rustBuildDeclarations = new Map<string, Map<string, [string | null | undefined, string | null | undefined]>>();
  /** Rust: the build lookups are asked in (rustInBuild), and how many build-dependent module files were met without one. */
  private rustBuild: boolean | undefined;
  private rustBuildChoiceCount = 0;

  /**
   * Rust: the `#[path]` of the module `name` of `parent` in the non-test and in the test build (null: the default
   * file) when they differ — a cfg(test)/cfg(not(test)) pair of `mod name;` declarations, or a `cfg_attr(test, path = …)`
   * / `cfg_attr(not(test), path = …)` —, else undefined (one file in both).
   */
  private rustBuildPaths(parent: string, name: string): [string | null | undefined, string | null | undefined] | undefined {
    let declarations = this.rustBuildDeclarations.get(parent);
    if (!declarations) {
      declarations = new Map();
      const text = this.input.readText?.(parent) ?? '';
      if (text.includes('test')) {
        for (const match of text.matchAll(/((?:#\[[^\]]*\]\s*)*)(?:pub(?:\s*\([^)]*\))?\s+)?\bmod\s+(?:r#)?([A-Za-z_][A-Za-z0-9_]*)\s*;/g)) {
          const attributes = match[1]!;
          if (!attributes.includes('test')) {
            if (!declarations.has(match[2]!)) declarations.set(match[2]!, [undefined, undefined]);
            const entry = declarations.get(match[2]!)!;
            const path = /#\[\s*path\s*=\s*"([^"\\]+)"\s*\]/.exec(attributes)?.[1] ?? null;
            if (entry[0] === undefined) entry[0] = path;
            if (entry[1] === undefined) entry[1] = path;
            continue;
          }
          const cfg = /#\[\s*cfg\s*\(\s*test\s*\)\s*\]/.test(attributes) ? true : /#\[\s*cfg\s*\(\s*not\s*\(\s*test\s*\)\s*\)\s*\]/.test(attributes) ? false : undefined;
          const path = /#\[\s*path\s*=\s*"([^"\\]+)"\s*\]/.exec(attributes)?.[1] ?? null;
          const testPath = /#\[\s*cfg_attr\s*\(\s*test\s*,\s*path\s*=\s*"([^"\\]+)"\s*\)\s*\]/.exec(attributes)?.[1];
          const otherPath = /#\[\s*cfg_attr\s*\(\s*not\s*\(\s*test\s*\)\s*,\s*path\s*=\s*"([^"\\]+)"\s*\)\s*\]/.exec(attributes)?.[1];
          if (!declarations.has(match[2]!)) declarations.set(match[2]!, [undefined, undefined]);
          const entry = declarations.get(match[2]!)!;
          if (cfg !== true && entry[0] === undefined) entry[0] = otherPath ?? path;
          if (cfg !== false && entry[1] === undefined) entry[1] = testPath ?? path;
        }
      }
      this.rustBuildDeclarations.set(parent, declarations);
    }
    const entry = declarations.get(name);
    return entry !== undefined && entry[0] !== entry[1] ? entry : undefined;
  }

  private readonly rustModuleBuilds = new Map<string, boolean | undefined>();

  /**
   * Rust: whether a module file is in the test build only (true), the non-test build only (false) or both (undefined) by
   * the `mod x;` declarations above it — `#[cfg(not(test))] pub mod real;` in lib.rs, then a plain `pub mod deeper;` in
   * real.rs: deeper.rs is non-test only (X65-22). Its parent is the module file its directory belongs to (x.rs, x/mod.rs,
   * a crate root beside it); a file whose parent declares it under another name (`#[path]`) or is not found: undefined.
   */
  rustModuleBuild(file: string): boolean | undefined {
    if (this.rustModuleBuilds.has(file)) return this.rustModuleBuilds.get(file);
    this.rustModuleBuilds.set(file, undefined);
    let answer: boolean | undefined;
    if (!this.rustTargetRoot(file) && file.endsWith('.rs')) {
      const { name, candidates } = rustParentCandidates(file);
      const parent = candidates.find((candidate) => this.has(candidate) && this.rustChild(candidate, this.rustModuleDir(candidate), name)?.file === file && this.rustModDeclarations(candidate).includes(name));
      if (parent !== undefined) {
        this.rustBuildPaths(parent, name);
        const entry = this.rustBuildDeclarations.get(parent)?.get(name);
        const up = this.rustModuleBuild(parent);
        const nonTest = (entry === undefined || entry[0] !== undefined) && up !== true;
        const test = (entry === undefined || entry[1] !== undefined) && up !== false;
        answer = nonTest && !test ? false : test && !nonTest ? true : undefined;
      }
    }
    this.rustModuleBuilds.set(file, answer);
    return answer;
  }

  /** Rust: `run`'s answer with the module files of cfg'd `mod` pairs taken in one build (undefined: both, as before). */
  rustInBuild<T>(build: boolean | undefined, run: () => T): T {
    const before = this.rustBuild;
    this.rustBuild = build;
    try {
      return run();
    } finally {
      this.rustBuild = before;
    }
  }

  /** Rust: how many build-dependent module files were met outside rustInBuild's one build (X65-61). */
  rustBuildChoices(): number {
    return this.rustBuildChoiceCount;
  }

  private rustChild(parent: string | undefined, dir: string, name: string): { file: string; dir: string } | undefined {
    if (parent !== undefined && this.input.readText) {
      // (a module the parent writes inline only, `mod util { pub use cr::item::Item; }` in src/main.rs: its items are
      // in that file, not src/util.rs — the library's — X64-07)
      let inline = this.rustInlineOnly.get(parent);
      if (!inline) {
        inline = new Set();
        const text = this.input.readText(parent) ?? '';
        const declared = new Set([...text.matchAll(/\bmod\s+(?:r#)?([A-Za-z_][A-Za-z0-9_]*)\s*;/g)].map((match) => match[1]!));
        for (const match of text.matchAll(/\bmod\s+(?:r#)?([A-Za-z_][A-Za-z0-9_]*)\s*\{/g)) if (!declared.has(match[1]!)) inline.add(match[1]!);
        this.rustInlineOnly.set(parent, inline);
      }
      if (inline.has(name)) return undefined;
      const written = this.rustPathAttribute(parent, name);
      if (written !== undefined) {
        const target = this.rustRepoPath(posix.isAbsolute(written) ? written : posix.normalize(posix.join(posix.dirname(parent), written)));
        if (this.has(target)) return { file: target, dir: posix.dirname(target) === '.' ? '' : posix.dirname(target) };
        // (an absolute path outside the repository: that file, not the default one — X66-03)
        if (posix.isAbsolute(written)) return undefined;
      }
    }
    const file = this.rustModuleFile(dir, name);
    return file ? { file, dir: this.rustModuleDir(file) } : undefined;
  }

  private rustModuleFile(dir: string, name: string): string | undefined {
    const prefix = dir === '' ? '' : `${dir}/`;
    if (this.has(`${prefix}${name}.rs`)) return `${prefix}${name}.rs`;
    if (this.has(`${prefix}${name}/mod.rs`)) return `${prefix}${name}/mod.rs`;
    return undefined;
  }

  private resolveRust(from: string, raw: RawImport): string[] {
    if (raw.modDecl) {
      // (`mod outer { mod item; }`: outer/item.rs below this module's directory; the rule E46's test module files
      // follow too — rustModuleCandidates; a `#[path]` naming no file: the default place, as before)
      const inline = raw.modulePath ?? [];
      const attribute = inline.length === 0 ? this.rustPathAttribute(from, raw.module) : undefined;
      const found = rustModuleCandidates(from, raw.module, inline, attribute, this.rustTargetRoot(from) || this.rustPathLoaded(from)).map((candidate) => this.rustRepoPath(candidate)).find((candidate) => this.has(candidate));
      if (found !== undefined || attribute === undefined || posix.isAbsolute(attribute)) return found === undefined ? [] : [found];
      const fallback = rustModuleCandidates(from, raw.module, inline, undefined, this.rustTargetRoot(from) || this.rustPathLoaded(from)).find((candidate) => this.has(candidate));
      return fallback === undefined ? [] : [fallback];
    }
    const segments = raw.module === '' ? [] : raw.module.split('::');
    const result: string[] = [];
    const paths = raw.names.length === 0 ? [segments] : raw.names.map((name) => [...segments, ...name.imported.split('::').filter((part) => part !== '*')]);
    for (const full of paths) {
      const end = this.rustWalk(from, raw, full);
      if (end) result.push(end.file);
    }
    return result;
  }

  /**
   * Rust: the module file the path `raw` names (its module and its first name: `crate::item::a::Item`) leads to, and the
   * segments left after it (`a`, `Item`: an inline module of that file, an item) — undefined when it leaves the
   * repository (another crate's).
   */
  rustPathEnd(from: string, raw: RawImport): { file: string; rest: string[] } | undefined {
    const segments = raw.module === '' ? [] : raw.module.split('::');
    const written = [...segments, ...(raw.names[0]?.imported.split('::').filter((part) => part !== '*') ?? [])];
    const full = written[0] === '' && written.length > 1 ? written.slice(1) : written;
    const end = this.rustWalk(from, raw, written);
    return end ? { file: end.file, rest: [...(end.inline ?? []), ...full.slice(end.index)] } : undefined;
  }

  private rustWalk(from: string, raw: RawImport, path: string[]): { file: string; index: number; inline?: string[] } | undefined {
    // (`::cr::item::Item`: the 2018 extern-crate path — a crate's name follows: X63-15)
    const full = path[0] === '' && path.length > 1 ? path.slice(1) : path;
    let dir: string | undefined;
    let index = 0;
    let file: string | undefined;
    // (the inline modules of `file` the path's `super` climbed into: `mod inner { mod tests2; }` in src/m/mod.rs)
    let inlineUp: string[] = [];
    if (full[0] === 'crate') {
      const root = this.rustCrateRoot(from);
      if (root === undefined) return undefined;
      dir = root.dir;
      index = 1;
      file = root.file;
    } else if (full[0] === 'self' || full[0] === 'super') {
      dir = this.rustModuleDir(from);
      file = from;
      // (in an inline module, `self` is that module and `super` the one around it — the file's module only once
      // the path has climbed out of the inline ones; an inline module `m` of this file is the directory `m` below
      // its module's, its items in this file: `mod tests { use super::item::Item; }` in lib.rs is src/item.rs)
      const inline = [...(raw.modulePath ?? [])];
      while (full[index] === 'self' || full[index] === 'super') {
        if (full[index] === 'super' && inline.length > 0) inline.pop();
        else if (full[index] === 'super') {
          const parent = posix.dirname(dir === '' ? '.' : dir);
          const parentDir = parent === '.' ? '' : parent;
          // (climbing out to the crate root's directory: that root — tests/it.rs for `super` in tests/common/mod.rs, X64-08)
          const root = this.rustCrateRoot(from);
          file = root !== undefined && root.dir === parentDir ? root.file : (this.rustModuleFile(posix.dirname(parentDir === '' ? '.' : parentDir).replace(/^\.$/, ''), posix.basename(parentDir)) ?? this.rustCrateRootFile(parentDir));
          inlineUp = [];
          // (no module file there: the parent is an inline module of a file above — `pub mod inner { mod tests2; }` in
          // src/m/mod.rs: `super::Item` in src/m/inner/tests2.rs is that inline module's — X65-25)
          for (let up = parentDir, names: string[] = []; file === undefined && up !== ''; ) {
            names.unshift(posix.basename(up));
            const above = posix.dirname(up) === '.' ? '' : posix.dirname(up);
            file = root !== undefined && root.dir === above ? root.file : (this.rustModuleFile(posix.dirname(above === '' ? '.' : above).replace(/^\.$/, ''), posix.basename(above)) ?? this.rustCrateRootFile(above));
            if (file !== undefined) inlineUp = [...names];
            up = above;
          }
          dir = parentDir;
        }
        index += 1;
      }
      for (const name of inline) dir = dir === '' ? name : `${dir}/${name}`;
    } else {
      // (`extern crate self as cr2;` in the crate's root: `cr2::…` is `crate::…` in each of its modules; `extern crate
      // cr as c2;` there: `c2::…` is `cr::…` — the root's extern crates are in every module's scope: X64-15)
      const root = this.rustCrateRoot(from);
      const alias = root === undefined ? undefined : this.rustExternAliases(root.file).get(full[0]!);
      if (alias !== undefined && alias !== full[0]) return this.rustWalk(from, raw, [alias === 'self' ? 'crate' : alias, ...full.slice(1)]);
      // (a dependency only when no child module of this one has the name: the module's items shadow the extern prelude —
      // but not after a leading `::`, which names an extern crate only: `::a::Item` beside a local `mod a;`)
      const child = full !== path ? undefined : this.rustChild((raw.modulePath ?? []).length === 0 ? from : undefined, this.rustModuleDir(from), full[0]!);
      const crate = this.input.rustCrates?.find((entry) => entry.name === full[0] && (entry.dir === '' || from.startsWith(`${entry.dir}/`))) ?? (child ? undefined : this.rustDependency(from, full[0]!));
      const crateRoot = crate ? (crate.dir === '' ? 'src' : `${crate.dir}/src`) : undefined;
      if (crateRoot !== undefined && (this.has(`${crateRoot}/lib.rs`) || this.has(`${crateRoot}/main.rs`))) {
        // `use <this crate>::…` from tests/, examples/, benches/ (or the crate itself).
        dir = crateRoot;
        index = 1;
        file = this.has(`${crateRoot}/lib.rs`) ? `${crateRoot}/lib.rs` : `${crateRoot}/main.rs`;
      } else if (child) {
        // 2018 uniform paths: `use model::x` where `model` is a child module of this one (by its `#[path]` too:
        // `#[path = "../../util.rs"] mod util;` then `util::Item::new(5)`).
        dir = this.rustModuleDir(from);
        file = from;
      } else return undefined;
    }
    for (; index < full.length; index += 1) {
      // (an inline module's child, `mod tests { mod deep; }`: not the file's `#[path]`s)
      const next = this.rustChild(file !== undefined && (file !== from || (raw.modulePath ?? []).length === 0) ? file : undefined, dir, full[index]!);
      if (!next) break;
      file = next.file;
      dir = next.dir;
      inlineUp = [];
    }
    return file ? { file, index, ...(inlineUp.length > 0 ? { inline: inlineUp } : {}) } : undefined;
  }

  /**
   * Rust: the repository crate `name` names in `from` as a dependency — its package's path dependency of that name (a
   * renamed one by its new name), else a workspace member of that crate name (`a::util::Item::new(2)` in crate b: X64-11).
   */
  private rustDependency(from: string, name: string): { dir: string } | undefined {
    const crates = this.input.rustCrates ?? [];
    const pkg = this.rustPackageDir(from);
    const own = pkg === undefined ? undefined : crates.find((entry) => entry.dir === pkg);
    const declared = own?.dependencies?.find((dependency) => dependency.name === name);
    if (declared) return { dir: declared.dir };
    if (own?.dependencies?.some((dependency) => crates.find((entry) => entry.dir === dependency.dir)?.name === name)) return undefined;
    return crates.find((entry) => entry.name === name && entry !== own);
  }

  private readonly rustExterns = new Map<string, Map<string, string>>();

  /** Rust: the `extern crate x as y;` declarations of a (crate root) file, alias → crate name (`self` for its own crate). */
  private rustExternAliases(file: string): Map<string, string> {
    let aliases = this.rustExterns.get(file);
    if (!aliases) {
      aliases = new Map();
      const text = this.input.readText?.(file) ?? '';
      if (text.includes('extern')) for (const match of text.matchAll(/\bextern\s+crate\s+(?:r#)?([A-Za-z_][A-Za-z0-9_]*)\s+as\s+(?:r#)?([A-Za-z_][A-Za-z0-9_]*)\s*;/g)) aliases.set(match[2]!, match[1]!);
      this.rustExterns.set(file, aliases);
    }
    return aliases;
  }

  private rustCrateRootFile(dir: string): string | undefined {
    const prefix = dir === '' ? '' : `${dir}/`;
    return ['lib.rs', 'main.rs', 'mod.rs'].map((name) => `${prefix}${name}`).find((candidate) => this.has(candidate));
  }
}

/** Rust: whether `index` of `text` is in a line comment or an unclosed block comment (a rough reading: strings aside). */
function inComment(text: string, index: number): boolean {
  const lineStart = text.lastIndexOf('\n', index - 1) + 1;
  if (text.slice(lineStart, index).includes('//')) return true;
  const open = text.lastIndexOf('/*', index);
  return open >= 0 && text.lastIndexOf('*/', index) < open;
}

/**
 * Rust: whether a path relative to its package's directory is a crate root by Cargo's target auto-discovery — src/lib.rs,
 * src/main.rs, src/bin/*.rs, src/bin/x/main.rs, tests/*.rs, examples/*.rs, benches/*.rs (or their x/main.rs),
 * build.rs: each binary, integration test, example and bench is a crate of its own (X64-07).
 */
export function cargoTargetRoot(relative: string): boolean {
  return /^(?:src\/(?:lib|main)\.rs|build\.rs|(?:src\/bin|tests|examples|benches)\/[^/]+\.rs|(?:src\/bin|tests|examples|benches)\/[^/]+\/main\.rs)$/.test(relative);
}

/** Rust: the directory of a module file's child modules — beside a crate root (`crateRoot`) or a mod.rs/lib.rs/main.rs, else named like the file. */
function rustChildDir(file: string, crateRoot: boolean): string {
  const dir = posix.dirname(file);
  const stem = posix.basename(file, '.rs');
  const base = stem === 'mod' || stem === 'lib' || stem === 'main' || crateRoot ? dir : `${dir}/${stem}`;
  return base === '.' ? '' : base.replace(/^\.\//, '');
}

/**
 * Rust: where the module of a `mod name;` written in `file` (inside its inline modules `modulePath`, outermost first)
 * may be, the first that exists being it: by its `#[path = "…"]` (`attributePath`: relative to the file's directory at
 * its top level, to the inline modules' directory inside them — X63-11), else `name.rs` or `name/mod.rs` in the
 * module's directory ({@link rustChildDir}; `crateRoot`: `file` is a crate root). One rule for the resolver's `mod x;`
 * and E46's test module files (references.ts).
 */
export function rustModuleCandidates(file: string, name: string, modulePath: readonly string[], attributePath: string | undefined, crateRoot: boolean): string[] {
  // (an absolute `#[path]` is that file: X66-03)
  if (attributePath !== undefined && posix.isAbsolute(attributePath)) return [posix.normalize(attributePath)];
  const moduleDir = [rustChildDir(file, crateRoot), ...modulePath].filter((part) => part !== '').join('/');
  if (attributePath !== undefined) return [posix.normalize(posix.join(modulePath.length === 0 ? posix.dirname(file) : moduleDir === '' ? '.' : moduleDir, attributePath))];
  const prefix = moduleDir === '' ? '' : `${moduleDir}/`;
  return [`${prefix}${name}.rs`, `${prefix}${name}/mod.rs`];
}

/**
 * The library crate's name declared by a Cargo.toml text, as code names the crate (`-` → `_`): its `[lib] name` when
 * it has one (`[package] name = "cr"` with `[lib] name = "corelib"`: tests say `use corelib::…` — X63-04), else the
 * package name.
 */
export function cargoCrateName(text: string): string | undefined {
  const name = (table: string) => {
    const section = new RegExp(`^\\s*\\[${table}\\][^\\n]*\\n([\\s\\S]*?)(?=^\\s*\\[|(?![\\s\\S]))`, 'm').exec(text)?.[1] ?? '';
    return /^\s*name\s*=\s*["']([^"']+)["']/m.exec(section)?.[1]?.replace(/-/g, '_');
  };
  return name('lib') ?? name('package');
}

/**
 * The dependencies a Cargo.toml text declares (any `[dependencies]`, `[dev-dependencies]`, `[build-dependencies]`,
 * `[target.….dependencies]` table, inline `a = { path = "../a" }` / `a.path = "../a"` or `[dependencies.a]`), and its
 * `[workspace.dependencies]` (`workspace: true` on those): the key as written, its `path`, `package`, `workspace = true`.
 */
export function cargoDependencies(text: string): Array<{ name: string; path?: string; package?: string; inherited?: boolean; workspace?: boolean }> {
  const found: Array<{ name: string; path?: string; package?: string; inherited?: boolean; workspace?: boolean }> = [];
  const fields = (body: string, into: { path?: string; package?: string; inherited?: boolean }) => {
    const path = /(?:^|[\s{,])path\s*=\s*["']([^"']+)["']/.exec(body)?.[1];
    const pkg = /(?:^|[\s{,])package\s*=\s*["']([^"']+)["']/.exec(body)?.[1];
    if (path !== undefined) into.path = path;
    if (pkg !== undefined) into.package = pkg;
    if (/(?:^|[\s{,])workspace\s*=\s*true\b/.test(body)) into.inherited = true;
  };
  const table = /^(?:target\.(?:'[^']*'|"[^"]*"|[^.\]]+)\.)?(?:dev-|build-)?dependencies$/;
  let section = '';
  let current: { name: string; path?: string; package?: string; inherited?: boolean; workspace?: boolean } | undefined;
  for (const line of text.split(/\r?\n/)) {
    const header = /^\s*\[\s*([^\]]+?)\s*\]\s*(?:#.*)?$/.exec(line);
    if (header) {
      section = header[1]!;
      current = undefined;
      const dotted = /^(.*)\.([A-Za-z0-9_-]+)$/.exec(section);
      if (dotted && (table.test(dotted[1]!) || dotted[1] === 'workspace.dependencies')) {
        current = { name: dotted[2]!, ...(dotted[1] === 'workspace.dependencies' ? { workspace: true } : {}) };
        found.push(current);
      }
      continue;
    }
    if (current) {
      fields(line, current);
      continue;
    }
    if (!table.test(section) && section !== 'workspace.dependencies') continue;
    const entry = /^\s*([A-Za-z0-9_-]+)\s*(?:\.\s*(path|package|workspace)\s*)?=\s*(.*)$/.exec(line);
    if (!entry) continue;
    let dependency = found.find((candidate) => candidate.name === entry[1] && (candidate.workspace === true) === (section === 'workspace.dependencies'));
    if (!dependency) {
      dependency = { name: entry[1]!, ...(section === 'workspace.dependencies' ? { workspace: true } : {}) };
      found.push(dependency);
    }
    fields(entry[2] === undefined ? entry[3]! : `${entry[2]} = ${entry[3]!}`, dependency);
  }
  return found;
}

/** The module path declared by a go.mod text. */
export function goModulePath(text: string): string | undefined {
  return /^\s*module\s+("?)([^\s"]+)\1/m.exec(text)?.[2];
}

/**
 * Rust: the module name `file` has (its stem, or its directory's for a `mod.rs`) and the files that could declare it by
 * a `mod name;` by the file layout — `<parent>.rs`, `<parent>/mod.rs`, `lib.rs`, `main.rs` of the directory above.
 */
function rustParentCandidates(file: string): { name: string; candidates: string[] } {
  const dir = posix.dirname(file) === '.' ? '' : posix.dirname(file);
  const stem = posix.basename(file, '.rs');
  const name = stem === 'mod' ? posix.basename(dir) : stem;
  const parentDir = stem === 'mod' ? (posix.dirname(dir) === '.' ? '' : posix.dirname(dir)) : dir;
  const prefix = parentDir === '' ? '' : `${parentDir}/`;
  return { name, candidates: [...(parentDir === '' ? [] : [`${parentDir}.rs`]), `${prefix}mod.rs`, `${prefix}lib.rs`, `${prefix}main.rs`] };
}
