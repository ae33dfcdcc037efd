import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { lexSource } from './source-lexer.js';

/**
 * Import parsing shared by `validate-scaffold` and `check-deps`: the imports of TS/JS, Go,
 * Python and Rust sources (comments and strings skipped by the lexer), and what a repository
 * declares (package.json, go.mod, Cargo.toml).
 */

/** A small file's text (≤ 2 MiB); undefined when missing or unreadable. */
export function readSmall(filePath: string): string | undefined {
  try {
    return statSync(filePath).size < 2 * 1024 * 1024 ? readFileSync(filePath, 'utf8') : undefined;
  } catch {
    return undefined;
  }
}

/** The `import`/`require`/`export … from` specifiers of a TS/JS source (comments ignored). */
export function scriptImports(filePath: string, text: string): string[] {
  const source = lexSource(filePath, text);
  const specifiers: string[] = [];
  const pattern = /\b(?:import|export)\s+(?:type\s+)?(?:[\w*{}\s,$]+\s+from\s+)?(["'])|\b(?:require|import)\s*\(\s*(["'])/g;
  for (const match of source.code.matchAll(pattern)) {
    const quoteOffset = match.index! + match[0].length - 1;
    const literal = source.strings.find((candidate) => candidate.start === quoteOffset);
    if (literal) specifiers.push(text.slice(literal.contentStart, literal.contentEnd));
  }
  return [...new Set(specifiers)];
}

/** The package a bare specifier names (`@scope/name`, `name`). */
export function packageNameOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/** Declared dependencies of every package.json from the file's directory up to the root. */
export function declaredPackages(fromDir: string, root: string): Set<string> {
  const names = new Set<string>();
  for (let directory = fromDir; ; directory = path.dirname(directory)) {
    const text = readSmall(path.join(directory, 'package.json'));
    if (text) {
      try {
        const manifest = JSON.parse(text) as Record<string, unknown>;
        if (typeof manifest.name === 'string') names.add(manifest.name);
        for (const key of ['dependencies', 'devDependencies', 'peerDependencies', 'optionalDependencies']) {
          const section = manifest[key];
          if (section && typeof section === 'object') for (const name of Object.keys(section)) names.add(name);
        }
      } catch {
        // an unparsable package.json declares nothing
      }
    }
    if (directory === root || path.dirname(directory) === directory || !directory.startsWith(root)) break;
  }
  return names;
}

/** The import paths of a Go source. */
export function goImports(text: string): string[] {
  const imports: string[] = [];
  const block = /\bimport\s*\(([\s\S]*?)\)/g;
  for (const match of text.matchAll(block)) for (const line of match[1]!.matchAll(/"([^"]+)"/g)) imports.push(line[1]!);
  for (const match of text.matchAll(/\bimport\s+(?:[\w.]+\s+)?"([^"]+)"/g)) imports.push(match[1]!);
  return [...new Set(imports)];
}

/** go.mod's module path and required module paths (found from the file's directory up). */
export function goModule(fromDir: string, root: string): { module: string; requires: string[]; replaces: string[] } | undefined {
  for (let directory = fromDir; ; directory = path.dirname(directory)) {
    const text = readSmall(path.join(directory, 'go.mod'));
    if (text !== undefined) {
      const module = /^\s*module\s+(\S+)/m.exec(text)?.[1] ?? '';
      const requires: string[] = [];
      const replaces: string[] = [];
      let inRequire = false;
      let inReplace = false;
      for (const raw of text.split('\n')) {
        const line = raw.replace(/\/\/.*$/, '').trim();
        if (/^require\s*\($/.test(line)) inRequire = true;
        else if (/^replace\s*\($/.test(line)) inReplace = true;
        else if (line === ')') inRequire = inReplace = false;
        else if (inRequire && line !== '') requires.push(line.split(/\s+/)[0]!);
        else if (inReplace && line !== '') replaces.push(line.split(/\s+/)[0]!);
        else if (line.startsWith('require ')) requires.push(line.split(/\s+/)[1]!);
        else if (line.startsWith('replace ')) replaces.push(line.split(/\s+/)[1]!);
      }
      return { module, requires, replaces };
    }
    if (directory === root || path.dirname(directory) === directory) return undefined;
  }
}

/** The crates Cargo.toml declares (names with `-` as `_`, the package itself included); undefined without a Cargo.toml. */
export function cargoDependencies(fromDir: string, root: string): Set<string> | undefined {
  for (let directory = fromDir; ; directory = path.dirname(directory)) {
    const text = readSmall(path.join(directory, 'Cargo.toml'));
    if (text !== undefined) {
      const names = new Set<string>();
      const packageName = /^\[package\][\s\S]*?^\s*name\s*=\s*"([^"]+)"/m.exec(text)?.[1];
      if (packageName) names.add(packageName.replace(/-/g, '_'));
      let inDependencies = false;
      for (const raw of text.split('\n')) {
        const line = raw.trim();
        const table = /^\[(.+)\]$/.exec(line);
        if (table) {
          const name = table[1]!.trim();
          inDependencies = /(^|\.)(dev-|build-)?dependencies$/.test(name);
          const inline = /(?:^|\.)(?:dev-|build-)?dependencies\.([\w-]+)$/.exec(name);
          if (inline) names.add(inline[1]!.replace(/-/g, '_'));
          continue;
        }
        if (inDependencies) {
          const key = /^([\w-]+)\s*=/.exec(line)?.[1];
          if (key) names.add(key.replace(/-/g, '_'));
        }
      }
      return names;
    }
    if (directory === root || path.dirname(directory) === directory) return undefined;
  }
}

