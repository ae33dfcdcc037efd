#!/usr/bin/env node
// Entry point of `polywave` / `polywave-tools`. Kept tiny: `--version` answers without loading
// the CLI; everything else loads the compiled CLI lazily.
import { readFileSync } from 'node:fs';

const argv = process.argv.slice(2);
if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-V' || argv[0] === 'version')) {
  const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  process.stdout.write(`${manifest.version}\n`);
} else {
  const { main } = await import('../dist/cli/main.js');
  process.exitCode = await main(argv);
}
