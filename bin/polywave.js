#!/usr/bin/env node
// Entry point of `polywave` / `polywave-tools`. Kept tiny: `--version` answers without loading
// the CLI; everything else loads the bundled CLI (dist/bundle/, built by `npm run build`), or the
// per-module build in dist/cli/ where no bundle was built or `tsc` ran after it.
// Hooks call the CLI on every write, so the start-up of one call is what this file is about
// (bench/cli-calls.mjs measures it against the Go binary).
import { readFileSync, statSync } from 'node:fs';
import module from 'node:module';
import v8 from 'node:v8';

const argv = process.argv.slice(2);
// `polywave … | head`: the reader went away. No EPIPE stack trace, and no exit either: a command
// that changes things (close-impl: mark, archive, commit) must finish its work, not stop half-done
// at its first write after the reader left (issue 13 N10). The stream is destroyed after the error,
// so the CLI's io drops later writes (src/cli/io.ts); the exit code is the command's own.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error) => {
    if (error && error.code === 'EPIPE') return;
    throw error;
  });
}
if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-V' || argv[0] === 'version')) {
  const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  process.stdout.write(`${manifest.version}\n`);
} else {
  // Node >= 22.1 keeps the compiled code of the CLI between calls (in the OS temp directory).
  module.enableCompileCache?.();
  if (process.versions.node.startsWith('20.')) {
    // A call is short: the optimizing compiler's work on the YAML parser's hot loops does not pay
    // back before the process ends. A larger budget lets only really hot code reach it.
    // Measured on Node 20 (bench/cli-calls.mjs; `validate` on a 1,816-line manifest): ~25% less
    // CPU per call, and no loss on a long run (list-impls over 143 manifests).
    v8.setFlagsFromString('--interrupt-budget=1000000');
  }
  const cli = await import(cliEntry());
  process.exitCode = await cli.main(argv);
  // A kernel lock wait given up after a timeout (N094) stays blocked until the holder lets go: do not wait for it.
  if (cli.abandonedLockWaits?.() > 0) process.exit();
}

/**
 * The bundle, unless it is missing or, in a source checkout, older than the per-module build (then
 * `tsc` ran after it and that one is current). An installed package (no src/) always runs its
 * bundle: npm writes the files in tarball order, so dist/cli/ can be milliseconds newer than
 * dist/bundle/ — which ran the slower per-module build without the list-impls parse cache
 * (outside attack F8: list-impls --include-complete 2.1x Go).
 */
function cliEntry() {
  const bundle = statSync(new URL('../dist/bundle/main.js', import.meta.url), { throwIfNoEntry: false });
  const modules = statSync(new URL('../dist/cli/main.js', import.meta.url), { throwIfNoEntry: false });
  if (bundle && modules && !statSync(new URL('../src/cli/main.ts', import.meta.url), { throwIfNoEntry: false })) return '../dist/bundle/main.js';
  return bundle && (!modules || bundle.mtimeMs >= modules.mtimeMs) ? '../dist/bundle/main.js' : '../dist/cli/main.js';
}
