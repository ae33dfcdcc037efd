// Builds polywave serve's UI (web/, Preact + TypeScript) into dist/web/ with Vite's JS API:
// index.html plus content-hashed assets. `npm run build` runs this at every test start, so it is
// skipped when nothing it reads changed since the last build: a hash of web/**, this script and
// package-lock.json is kept in dist/web/.build-hash. `--force` builds anyway.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const webRoot = path.join(root, 'web');
const outDir = path.join(root, 'dist', 'web');
const stampFile = path.join(outDir, '.build-hash');

function* files(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* files(full);
    else if (entry.isFile()) yield full;
  }
}

/** One hash over the sources the build reads (names and contents). */
export function sourceHash() {
  const hash = createHash('sha256');
  const inputs = [...files(webRoot), path.join(root, 'package-lock.json'), fileURLToPath(import.meta.url)];
  for (const file of inputs) {
    if (!existsSync(file)) continue;
    hash.update(path.relative(root, file)).update('\0').update(readFileSync(file)).update('\0');
  }
  return hash.digest('hex');
}

/** The Vite configuration of the UI (also used by `vite dev` through web/vite.config.mjs). */
export async function viteConfig() {
  const { default: preact } = await import('@preact/preset-vite');
  return {
    root: webRoot,
    base: '/',
    configFile: false,
    logLevel: 'warn',
    // prefresh (hot reload) is for `vite dev` only; devtools stay out of the bundle.
    plugins: [preact({ prefreshEnabled: false, devToolsEnabled: false, prerender: { enabled: false } })],
    build: {
      outDir,
      emptyOutDir: true,
      assetsDir: 'assets',
      sourcemap: false,
      target: 'es2022',
      reportCompressedSize: false,
      chunkSizeWarningLimit: 400,
    },
  };
}

export async function buildWeb({ force = false } = {}) {
  const hash = sourceHash();
  if (!force && existsSync(stampFile) && existsSync(path.join(outDir, 'index.html')) && readFileSync(stampFile, 'utf8').trim() === hash) {
    return { skipped: true, outDir };
  }
  const { build } = await import('vite');
  const started = performance.now();
  await build(await viteConfig());
  writeFileSync(stampFile, `${hash}\n`);
  return { skipped: false, outDir, ms: Math.round(performance.now() - started) };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const result = await buildWeb({ force: process.argv.includes('--force') });
  const size = result.skipped ? '' : ` (${readdirSync(path.join(outDir, 'assets')).map((name) => `${name} ${Math.round(statSync(path.join(outDir, 'assets', name)).size / 1024)} KB`).join(', ')})`;
  console.log(result.skipped ? 'web UI: unchanged, build skipped' : `web UI: built into dist/web in ${result.ms} ms${size}`);
}
