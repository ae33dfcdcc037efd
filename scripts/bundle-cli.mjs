// Bundles the CLI (src/cli/main.ts and every command it loads) into dist/bundle/ with esbuild:
// one entry file plus code-split chunks, so that a call loads a handful of files instead of ~150
// modules (yaml, zod, commander and our own). `bin/polywave.js` runs the bundle; the per-module
// output of `tsc` in dist/ stays what tests, benches and library users import.
//
// yaml, zod and commander are bundled (every call needs them). Every other package stays an
// import resolved at run time: native addons, WebAssembly grammars, the agent SDKs — none of which
// a protocol command loads, and whose own files expect to be found beside them.
// dist/bundle/meta.json (esbuild's metafile) records which sources went into which chunk: the
// start-up test reads it to check what a command loads.
import { mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const outdir = path.join(root, 'dist', 'bundle');
const bundledPackages = new Set(['yaml', 'zod', 'commander']);

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
  plugins: [englishLocaleOnly, externalPackages],
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
