/**
 * Which repository modules a TS/JS module specifier names, and whether a module provides a name — by text, for
 * detect-cascades' module-mock factories (`jest.mock('@/services', () => ({ hash: … }))`; outside round X57-08/09):
 *  - a relative specifier (`../src/services`) is joined to the importing file's directory;
 *  - a bare one goes through the `compilerOptions.paths` (and `baseUrl`) of the nearest tsconfig.json or jsconfig.json
 *    above the importing file (comments and trailing commas allowed; a relative `extends` followed) — jest's
 *    `moduleNameMapper` and package.json `imports` are not read;
 *  - a module provides a name when it defines it, or re-exports it from a module that does: `export * from './x'`,
 *    `export { name } from './x'`, `import { name } from './x'; export { name }` (a barrel; followed through barrels).
 * Paths are repository-relative without extension (`src/services/index` for the barrel `src/services/index.ts`).
 */
import picomatch from 'picomatch';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const sourceExtensions = ['.ts', '.tsx', '.mts', '.cts', '.js', '.jsx', '.mjs', '.cjs'];
const extension = /\.(?:d\.ts|[cm]?[jt]sx?)$/;

interface PathConfig {
  /** The directory `paths` targets are relative to (repo-relative, '' for the top level). */
  base: string;
  paths: Array<[pattern: string, targets: string[]]>;
  /** `baseUrl` (repo-relative): bare specifiers resolve against it too. */
  baseUrl?: string;
}

/** `text` (JSON with comments and trailing commas, as tsconfig.json allows) parsed; undefined when it is not JSON. */
function parseJsonc(text: string): unknown {
  let out = '';
  for (let index = 0; index < text.length; index += 1) {
    const char = text[index]!;
    if (char === '"') {
      let end = index + 1;
      while (end < text.length && text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      out += text.slice(index, end + 1);
      index = end;
    } else if (char === '/' && text[index + 1] === '/') {
      while (index < text.length && text[index] !== '\n') index += 1;
      out += '\n';
    } else if (char === '/' && text[index + 1] === '*') {
      const close = text.indexOf('*/', index + 2);
      index = close < 0 ? text.length : close + 1;
      out += ' ';
    } else out += char;
  }
  try {
    return JSON.parse(out.replace(/,(\s*[}\]])/g, '$1'));
  } catch {
    return undefined;
  }
}

/** A tsconfig `include`/`exclude` pattern (repo-relative) as a RegExp over repo-relative paths (picomatch; see ModuleTargets.compiles). */
const patternMemo = new Map<string, RegExp>();
function tsconfigPattern(pattern: string): RegExp {
  let compiled = patternMemo.get(pattern);
  if (!compiled) {
    compiled = picomatch.makeRe(pattern, { dot: true });
    patternMemo.set(pattern, compiled);
  }
  return compiled;
}

/** Resolves module specifiers of TS/JS files in the repository at `root` (absolute), with memoised reads. */
export class ModuleTargets {
  private readonly texts = new Map<string, string | undefined>();
  private readonly configs = new Map<string, PathConfig | undefined>();
  private readonly nearest = new Map<string, string | undefined>();

  constructor(private readonly root: string) {}

  /** The repo-relative text of `file`, undefined when it cannot be read. */
  private read(file: string): string | undefined {
    if (!this.texts.has(file)) {
      let text: string | undefined;
      try {
        text = readFileSync(path.join(this.root, file), 'utf8');
      } catch {
        text = undefined;
      }
      this.texts.set(file, text);
    }
    return this.texts.get(file);
  }

  /** The `paths`/`baseUrl` of the config file `file` (repo-relative), following a relative `extends` (5 deep). */
  private configFile(file: string, depth = 0): PathConfig | undefined {
    const text = this.read(file);
    const parsed = text === undefined ? undefined : (parseJsonc(text) as { extends?: unknown; compilerOptions?: { baseUrl?: unknown; paths?: unknown } } | undefined);
    if (!parsed || typeof parsed !== 'object') return undefined;
    const dir = path.posix.dirname(file);
    // (`extends` may list several configs, TypeScript ≥ 5.0: a later one overrides an earlier one — X58-08)
    const bases = (Array.isArray(parsed.extends) ? parsed.extends : [parsed.extends]).filter((entry): entry is string => typeof entry === 'string' && entry.startsWith('.'));
    let inherited: PathConfig | undefined;
    if (depth < 5) {
      for (const entry of bases) {
        const config = this.configFile(path.posix.normalize(path.posix.join(dir, entry.endsWith('.json') ? entry : `${entry}.json`)), depth + 1);
        if (!config) continue;
        inherited = { base: config.paths.length > 0 ? config.base : (inherited?.base ?? config.base), paths: config.paths.length > 0 ? config.paths : (inherited?.paths ?? []), ...((config.baseUrl ?? inherited?.baseUrl) !== undefined ? { baseUrl: config.baseUrl ?? inherited?.baseUrl } : {}) };
      }
    }
    const options = parsed.compilerOptions ?? {};
    const ownBaseUrl = typeof options.baseUrl === 'string' ? path.posix.normalize(path.posix.join(dir, options.baseUrl)) : undefined;
    const baseUrl = ownBaseUrl ?? inherited?.baseUrl;
    // (`paths` targets are relative to the effective baseUrl, else to the config file declaring them)
    let paths: Array<[string, string[]]> = [];
    let base = baseUrl ?? dir;
    if (options.paths && typeof options.paths === 'object') {
      paths = Object.entries(options.paths as Record<string, unknown>).map(([pattern, targets]): [string, string[]] => [pattern, Array.isArray(targets) ? targets.filter((target): target is string => typeof target === 'string') : []]);
    } else if (inherited) {
      paths = inherited.paths;
      base = ownBaseUrl ?? inherited.base;
    }
    if (paths.length === 0 && baseUrl === undefined) return undefined;
    return { base, paths, ...(baseUrl !== undefined ? { baseUrl } : {}) };
  }

  /** The config files (repo-relative) a solution-style tsconfig.json `file` references, in order. */
  private references(file: string): string[] {
    const text = this.read(file);
    const parsed = text === undefined ? undefined : (parseJsonc(text) as { references?: unknown } | undefined);
    if (!parsed || !Array.isArray(parsed.references)) return [];
    const dir = path.posix.dirname(file);
    return (parsed.references as Array<{ path?: unknown }>).flatMap((reference) => {
      if (typeof reference?.path !== 'string') return [];
      const target = path.posix.normalize(path.posix.join(dir, reference.path));
      return [target.endsWith('.json') ? target : `${target}/tsconfig.json`];
    });
  }

  /**
   * The `files`/`include`/`exclude` of the config file `file` (its own, else inherited through a relative `extends`,
   * relative to the config declaring them), as `[files, include, exclude]` of repo-relative paths and patterns.
   */
  private fileSet(file: string, depth = 0): { files?: string[]; include?: string[]; exclude?: string[] } {
    const text = this.read(file);
    const parsed = text === undefined ? undefined : (parseJsonc(text) as { extends?: unknown; files?: unknown; include?: unknown; exclude?: unknown } | undefined);
    if (!parsed || typeof parsed !== 'object') return {};
    const dir = path.posix.dirname(file);
    const list = (value: unknown) => (Array.isArray(value) ? value.filter((entry): entry is string => typeof entry === 'string').map((entry) => path.posix.normalize(path.posix.join(dir, entry)).replace(/^\.\//, '')) : undefined);
    let inherited: { files?: string[]; include?: string[]; exclude?: string[] } = {};
    if (depth < 5) {
      const bases = (Array.isArray(parsed.extends) ? parsed.extends : [parsed.extends]).filter((entry): entry is string => typeof entry === 'string' && entry.startsWith('.'));
      for (const entry of bases) {
        const base = this.fileSet(path.posix.normalize(path.posix.join(dir, entry.endsWith('.json') ? entry : `${entry}.json`)), depth + 1);
        inherited = { ...inherited, ...Object.fromEntries(Object.entries(base).filter(([, value]) => value !== undefined)) };
      }
    }
    const files = list(parsed.files) ?? inherited.files;
    const include = list(parsed.include) ?? inherited.include ?? (files === undefined && depth === 0 ? [dir === '.' ? '**/*' : `${dir}/**/*`] : undefined);
    const exclude = list(parsed.exclude) ?? inherited.exclude;
    return { ...(files ? { files } : {}), ...(include ? { include } : {}), ...(exclude ? { exclude } : {}) };
  }

  /**
   * Whether the config file `config` compiles `file` (repo-relative): listed in its `files`, or matched by an `include`
   * pattern (everything under its directory when it has neither) and no `exclude` one — tsc's wildcards: `*` and `?`
   * inside a segment, `**` and a slash any directories, a pattern without a wildcard in its last segment naming a directory or a
   * file.
   */
  private compiles(config: string, file: string): boolean {
    const { files, include, exclude } = this.fileSet(config);
    if (files?.includes(file)) return true;
    const matches = (pattern: string) => {
      const last = pattern.slice(pattern.lastIndexOf('/') + 1);
      const patterns = /[*?]/.test(last) ? [pattern] : [pattern, `${pattern}/**/*`];
      return patterns.some((entry) => tsconfigPattern(entry).test(file));
    };
    return (include ?? []).some(matches) && !(exclude ?? []).some(matches);
  }

  /**
   * A solution-style tsconfig.json (`"files": [], "references": [{ "path": "./tsconfig.app.json" }, …]`, create-vite's
   * layout): the `paths` of the referenced config that compiles `from` (its `files`/`include`/`exclude`: tsserver's
   * project for a file — outside round X59-10); when none does (or no file is given), the referenced configs' together
   * (X58-09).
   */
  private referencedConfigs(file: string, from?: string): PathConfig | undefined {
    const referenced = this.references(file);
    if (referenced.length === 0) return undefined;
    if (from !== undefined) {
      const owner = referenced.find((config) => this.read(config) !== undefined && this.compiles(config, from));
      if (owner !== undefined) return this.configFile(owner, 1);
    }
    let merged: PathConfig | undefined;
    for (const target of referenced) {
      const config = this.configFile(target, 1);
      if (!config) continue;
      merged = merged ? { base: merged.base, paths: [...merged.paths, ...config.paths.map(([pattern, targets]): [string, string[]] => [pattern, targets.map((entry) => path.posix.join(path.posix.relative(merged!.base, config.base) || '.', entry))])], ...((merged.baseUrl ?? config.baseUrl) !== undefined ? { baseUrl: merged.baseUrl ?? config.baseUrl } : {}) } : config;
    }
    return merged;
  }

  /** The nearest tsconfig.json or jsconfig.json (repo-relative) in `dir` (repo-relative) or above. */
  private nearestConfig(dir: string): string | undefined {
    const key = dir === '.' ? '' : dir;
    if (this.nearest.has(key)) return this.nearest.get(key);
    let found: string | undefined;
    const prefix = key === '' ? '' : `${key}/`;
    if (this.read(`${prefix}tsconfig.json`) !== undefined) found = `${prefix}tsconfig.json`;
    else if (this.read(`${prefix}jsconfig.json`) !== undefined) found = `${prefix}jsconfig.json`;
    else if (key !== '') found = this.nearestConfig(path.posix.dirname(key));
    this.nearest.set(key, found);
    return found;
  }

  /**
   * The path configuration of the nearest tsconfig.json or jsconfig.json above the file `file` (repo-relative): its own,
   * else — a solution-style one — the referenced project's that compiles the file (X59-10).
   */
  private configFor(file: string): PathConfig | undefined {
    const config = this.nearestConfig(path.posix.dirname(file));
    if (config === undefined) return undefined;
    const own = this.configs.has(config) ? this.configs.get(config) : this.configFile(config);
    this.configs.set(config, own);
    if (own !== undefined || !config.endsWith('tsconfig.json') || this.references(config).length === 0) return own;
    return this.referencedConfigs(config, file);
  }

  /**
   * The words of every `paths` alias (in the config files `configs`, repo-relative) that can name the module `target`
   * (a repo-relative path without extension): `"@auth": ["lib/session.ts"]` → `auth` for `lib/session`,
   * `"@acme/core": ["packages/core/src"]` → `acme`, `core` for `packages/core/src/index`. An importer writing the alias
   * contains them where the file's own name may be absent (analyze-deps' lexical pre-filter: outside round X59-18).
   */
  aliasWords(target: string, configs: readonly string[]): string[] {
    const words = new Set<string>();
    const names = [target, ...(/(?:^|\/)index$/.test(target) ? [target.replace(/\/?index$/, '')] : [])];
    for (const file of configs) {
      const config = this.configFile(file) ?? this.referencedConfigs(file);
      for (const [pattern, replacements] of config?.paths ?? []) {
        const matches = replacements.some((replacement) => {
          const full = path.posix.normalize(path.posix.join(config!.base, replacement)).replace(extension, '').replace(/^\.\//, '');
          const star = full.indexOf('*');
          return names.some((name) => (star < 0 ? full === name : name.startsWith(full.slice(0, star)) && name.endsWith(full.slice(star + 1))));
        });
        if (matches) for (const word of pattern.split(/[^A-Za-z0-9_]+/)) if (word !== '') words.add(word);
      }
    }
    return [...words];
  }

  /** The repo-relative module paths (without extension) `specifier`, written in `file`, may name. */
  resolve(file: string, specifier: string): string[] {
    const inRepo = (target: string) => {
      const normalized = path.posix.normalize(target).replace(extension, '');
      return normalized === '..' || normalized.startsWith('../') || path.posix.isAbsolute(normalized) ? [] : [normalized.replace(/^\.\//, '')];
    };
    if (/^\.{1,2}(?:\/|$)/.test(specifier)) return inRepo(path.posix.join(path.posix.dirname(file), specifier));
    const config = this.configFor(file);
    if (!config) return [];
    const targets: string[] = [];
    // (TypeScript takes the one pattern that matches with the longest prefix before its `*` — an exact pattern first —
    // and tries its substitutions in order: `@/lib/*` beats `@/*`, outside round X59-09)
    let best: { prefix: number; replacements: string[]; captured: string } | undefined;
    for (const [pattern, replacements] of config.paths) {
      const star = pattern.indexOf('*');
      let captured: string | undefined;
      if (star < 0) captured = pattern === specifier ? '' : undefined;
      else if (specifier.length >= pattern.length - 1 && specifier.startsWith(pattern.slice(0, star)) && specifier.endsWith(pattern.slice(star + 1))) {
        captured = specifier.slice(star, specifier.length - (pattern.length - star - 1));
      }
      if (captured === undefined) continue;
      const prefix = star < 0 ? Number.MAX_SAFE_INTEGER : star;
      if (!best || prefix > best.prefix) best = { prefix, replacements, captured };
    }
    for (const replacement of best?.replacements ?? []) targets.push(...inRepo(path.posix.join(config.base, replacement.replace('*', best!.captured))));
    if (config.baseUrl !== undefined) targets.push(...inRepo(path.posix.join(config.baseUrl, specifier)));
    return targets;
  }

  /** The repo-relative source file (with extension) of module `target` (a path without extension), if any. */
  private fileOf(target: string): string | undefined {
    for (const candidate of [target, `${target}/index`]) {
      for (const ext of sourceExtensions) if (this.read(`${candidate}${ext}`) !== undefined) return `${candidate}${ext}`;
    }
    return undefined;
  }

  /**
   * Whether module `target` (repo-relative, without extension) provides `name`: it is one of `definers` (paths without
   * extension; `dir/index` stands for `dir`) or re-exports `name` from one that does (through barrels).
   */
  provides(target: string, name: string, definers: ReadonlySet<string>, seen = new Set<string>()): boolean {
    if (definers.has(target) || definers.has(`${target}/index`)) return true;
    const file = this.fileOf(target);
    if (file === undefined || seen.has(file)) return false;
    seen.add(file);
    const text = this.read(file) ?? '';
    const from = (specifier: string) => this.resolve(file, specifier).some((module) => this.provides(module, name, definers, seen));
    const lists = (names: string) => names.split(',').some((entry) => new RegExp(`^\\s*(?:type\\s+)?${name.replace(/\$/g, '\\$')}(?:\\s+as\\s+${name.replace(/\$/g, '\\$')})?\\s*$`).test(entry.replace(/\/\/.*$|\/\*[\s\S]*?\*\//gm, '')));
    for (const match of text.matchAll(/\bexport\s*\*\s*from\s*(['"])([^'"]+)\1/g)) if (from(match[2]!)) return true;
    for (const match of text.matchAll(/\bexport\s*(?:type\s*)?\{([^}]*)\}\s*from\s*(['"])([^'"]+)\2/g)) if (lists(match[1]!) && from(match[3]!)) return true;
    // `import { name } from './x'; export { name };`
    if ([...text.matchAll(/\bexport\s*(?:type\s*)?\{([^}]*)\}(?!\s*from)/g)].some((match) => lists(match[1]!))) {
      for (const match of text.matchAll(/\bimport\s*(?:type\s*)?\{([^}]*)\}\s*from\s*(['"])([^'"]+)\2/g)) if (lists(match[1]!) && from(match[3]!)) return true;
    }
    return false;
  }
}
