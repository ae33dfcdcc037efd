// Bundles the CLI (src/cli/main.ts and every command it loads) into dist/bundle/ with esbuild:
// one entry file plus code-split chunks, so that a call loads a handful of files instead of ~150
// modules (yaml, zod, commander and our own). `bin/polywave.js` runs the bundle; the per-module
// output of `tsc` in dist/ stays what tests, benches and library users import.
//
// yaml, js-yaml (the fast read path of manifests), zod and commander are bundled (every call needs them). Every other package stays an
// import resolved at run time: native addons, WebAssembly grammars, the agent SDKs — none of which
// a protocol command loads, and whose own files expect to be found beside them.
// dist/bundle/meta.json (esbuild's metafile) records which sources went into which chunk: the
// start-up test reads it to check what a command loads.
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const outdir = path.join(root, 'dist', 'bundle');
const bundledPackages = new Set(['yaml', 'js-yaml', 'zod', 'commander']);

/** Bare imports of packages outside bundledPackages stay imports (resolved from node_modules). */
const externalPackages = {
  name: 'external-packages',
  setup(context) {
    context.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.path.startsWith('node:')) return { path: args.path, external: true };
      const name = args.path.startsWith('@') ? args.path.split('/').slice(0, 2).join('/') : args.path.split('/')[0];
      return bundledPackages.has(name) ? undefined : { path: args.path, external: true };
    });
  },
};

/**
 * zod's `z` namespace re-exports every locale (`z.locales`, ~370 KB of the 770 KB zod chunk) and
 * we use none but the default English one: the bundle gets `z.locales = { en }` only. Measured:
 * loading the zod chunk costs ~45 ms less CPU per call (of ~100 ms).
 */
const englishLocaleOnly = {
  name: 'zod-english-locale-only',
  setup(context) {
    context.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) => {
      if (!/[\\/]node_modules[\\/]zod[\\/]/.test(args.importer)) return undefined;
      return { path: path.join(path.dirname(args.importer), '..', 'locales', 'en.js'), namespace: 'zod-english-locale-only' };
    });
    context.onLoad({ filter: /.*/, namespace: 'zod-english-locale-only' }, (args) => ({
      contents: `export { default as en } from ${JSON.stringify(args.path)};`,
      resolveDir: path.dirname(args.path),
    }));
  },
};

/**
 * node:child_process and node:crypto load on first use, not at start-up. Loading them costs a
 * call more than anything else Node itself does (child_process pulls in net, dgram, stream
 * internals; crypto its OpenSSL bindings), and `validate`, `check-completion` or `list-impls`
 * never spawn or hash: they came in only through commander (`childProcess.spawn` for executable
 * sub-commands we do not have) and the write path's modules (temp-file names, lock tokens) that
 * the read-only commands import without calling. Measured with `--cpu-prof` on `validate`: the two
 * modules were ~8% of the call's CPU.
 *
 * An import is routed to a facade only when everything it takes is a plain function (a named
 * `import { spawn, execFile } from 'node:child_process'`, or commander's `childProcess.x(...)`);
 * the facade's function of the same name loads the real module on its first call (with
 * util.promisify's custom form kept, as for execFile). Anything else — a default or namespace
 * import, a class, a constant — gets the real module, as before.
 */
const lazyBuiltins = ['child_process', 'crypto'];
const lazyFunctions = new Map(
  lazyBuiltins.map((name) => {
    const real = process.getBuiltinModule(`node:${name}`);
    const functions = Object.keys(real).filter((key) => typeof real[key] === 'function' && /^[a-z]/.test(key));
    return [name, { functions: new Set(functions), promisified: functions.filter((key) => real[key][promisify.custom] !== undefined) }];
  }),
);
/** The names an importer takes from `node:<name>`, or undefined when it takes anything but named functions. */
function takenNames(importer, name, kind) {
  let source;
  try {
    source = readFileSync(importer, 'utf8');
  } catch {
    return undefined;
  }
  const specifier = `['"](?:node:)?${name}['"]`;
  const names = new Set();
  if (kind === 'require-call') {
    // commander: `var childProcess = require("node:child_process")`, used as `childProcess.spawn(…)`.
    const binding = new RegExp(`(?:var|let|const)\\s+(\\w+)\\s*=\\s*(?:__)?require\\(${specifier}\\)`).exec(source)?.[1];
    if (!binding) return undefined;
    const uses = [...source.matchAll(new RegExp(`\\b${binding}\\b(\\.(\\w+))?`, 'g'))];
    // Every use but the declaration must be a property read: `childProcess.spawn`.
    if (uses.filter((use) => use[2] === undefined).length !== 1) return undefined;
    for (const use of uses) if (use[2]) names.add(use[2]);
    return names;
  }
  for (const statement of source.matchAll(new RegExp(`^\\s*(import|export)\\b([^;]*?)\\bfrom\\s*${specifier}`, 'gm'))) {
    const clause = statement[2].trim();
    if (/^type\b/.test(clause)) continue;
    const braces = /^\{([^}]*)\}$/.exec(clause);
    if (statement[1] !== 'import' || !braces) return undefined;
    for (const part of braces[1].split(',').map((item) => item.trim()).filter(Boolean)) {
      if (/^type\s/.test(part)) continue;
      names.add(part.split(/\s+as\s+/)[0].trim());
    }
  }
  if (new RegExp(`(?:import\\(|require\\()\\s*${specifier}`).test(source)) return undefined;
  return names;
}
const lazyBuiltinModules = {
  name: 'lazy-builtins',
  setup(context) {
    const filter = new RegExp(`^(?:node:)?(${lazyBuiltins.join('|')})$`);
    context.onResolve({ filter }, (args) => {
      const name = filter.exec(args.path)[1];
      const names = takenNames(args.importer, name, args.kind);
      const { functions } = lazyFunctions.get(name);
      if (!names || [...names].some((taken) => !functions.has(taken))) return { path: `node:${name}`, external: true };
      return { path: name, namespace: 'lazy-builtin' };
    });
    context.onLoad({ filter: /.*/, namespace: 'lazy-builtin' }, (args) => {
      const { functions, promisified } = lazyFunctions.get(args.path);
      const lines = [
        `let real;`,
        `const load = () => (real ??= process.getBuiltinModule(${JSON.stringify(`node:${args.path}`)}));`,
        ...[...functions].map((key) => `export function ${key}(...args) { return load().${key}(...args); }`),
        ...promisified.map(
          (key) => `Object.defineProperty(${key}, Symbol.for('nodejs.util.promisify.custom'), { get: () => load().${key}[Symbol.for('nodejs.util.promisify.custom')] });`,
        ),
      ];
      return { contents: lines.join('\n'), loader: 'js' };
    });
  },
};

/**
 * `import { z } from 'zod'` keeps every schema type, check and helper of zod's classic API in the
 * bundle: `z` is one namespace object that esbuild cannot look into. Our sources only read
 * `z.object`, `z.string`, … from it, so each is given the namespace itself
 * (`import * as z from 'zod/v4/classic/external.js'`, the module `z` is made of): esbuild then keeps
 * the parts used. A source that uses `z` any other way keeps all of it, as before.
 */
const zodNamespace = path.join(root, 'node_modules', 'zod', 'v4', 'classic', 'external.js');
const zodUsedParts = {
  name: 'zod-used-parts',
  setup(context) {
    context.onLoad({ filter: /[\\/]src[\\/].*\.ts$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      const pattern = /^import \{ z \} from 'zod';$/m;
      if (!pattern.test(source)) return undefined;
      return { contents: source.replace(pattern, `import * as z from ${JSON.stringify(zodNamespace)};`), loader: 'ts', resolveDir: path.dirname(args.path) };
    });
  },
};

const result = await build({
  absWorkingDir: root,
  entryPoints: { main: 'src/cli/main.ts' },
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.19',
  // Chunks beside the entry, at the depth of dist/cli/: `new URL('../../package.json', import.meta.url)`
  // finds package.json from any of them.
  chunkNames: '[name]-[hash]',
  sourcemap: 'linked',
  metafile: true,
  write: false,
  logLevel: 'warning',
  // CommonJS packages (yaml, commander) require Node built-ins: give the ESM chunks a real `require`.
  banner: { js: "import { createRequire as __polywaveCreateRequire } from 'node:module';\nconst require = __polywaveCreateRequire(import.meta.url);" },
  plugins: [englishLocaleOnly, zodUsedParts, lazyBuiltinModules, externalPackages],
});
// Replaced in place, never emptied first: a CLI process started from the previous build (a test, a
// hook, another build's tests on the same checkout) may still import its chunks lazily. Chunk names
// are content hashes, so a file of the new build is new or byte-identical; each is written to a temp
// file and renamed (main.js last), and files of older builds are removed only once they are an hour old
// (a clean clone has none; `npm run build` on a working checkout keeps at most an hour of old chunks).
mkdirSync(outdir, { recursive: true });
const written = new Set(['meta.json']);
const writeAtomic = (file, contents) => {
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, contents);
  renameSync(temp, file);
  written.add(path.basename(file));
};
const entry = path.join(outdir, 'main.js');
for (const file of result.outputFiles.filter((output) => output.path !== entry)) writeAtomic(file.path, file.contents);
writeAtomic(path.join(outdir, 'meta.json'), JSON.stringify(result.metafile));
for (const file of result.outputFiles.filter((output) => output.path === entry)) writeAtomic(file.path, file.contents);
const staleBefore = Date.now() - 60 * 60_000;
for (const name of readdirSync(outdir)) {
  if (written.has(name)) continue;
  const file = path.join(outdir, name);
  try {
    const age = statSync(file).mtimeMs;
    // Another build's temp file is renamed within seconds; one a minute old was left by a killed build.
    if (age < staleBefore || (name.endsWith('.tmp') && age < Date.now() - 60_000)) rmSync(file, { force: true });
  } catch {
    // removed by a concurrent build
  }
}
