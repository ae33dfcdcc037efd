import { stat } from 'node:fs/promises';
import path from 'node:path';

/** A formatter found from the project's marker files. */
export interface DetectedFormatter {
  name: string;
  checkCommand: string;
  fixCommand: string;
}

const formatters: Array<{ markers: string[]; formatter: DetectedFormatter }> = [
  { markers: ['go.mod'], formatter: { name: 'gofmt', checkCommand: 'test -z "$(gofmt -l .)"', fixCommand: 'gofmt -w .' } },
  { markers: ['package.json'], formatter: { name: 'prettier', checkCommand: 'npx prettier --check .', fixCommand: 'npx prettier --write .' } },
  { markers: ['pyproject.toml', 'setup.py'], formatter: { name: 'ruff', checkCommand: 'ruff format --check .', fixCommand: 'ruff format .' } },
  { markers: ['Cargo.toml'], formatter: { name: 'cargo fmt', checkCommand: 'cargo fmt --check', fixCommand: 'cargo fmt' } },
];

/**
 * The formatter for a `type: format` gate without a command (reference §4.3 step 8): go.mod →
 * gofmt, package.json → prettier, pyproject.toml/setup.py → ruff, Cargo.toml → cargo fmt.
 * (`gofmt -l` exits 0 even when files need formatting, so the check fails on any listed file.)
 */
export async function detectFormatter(dir: string): Promise<DetectedFormatter | undefined> {
  for (const { markers, formatter } of formatters) {
    for (const marker of markers) {
      try {
        if ((await stat(path.join(dir, marker))).isFile()) return formatter;
      } catch {
        // not this one
      }
    }
  }
  return undefined;
}
