import { readFileSync } from 'node:fs';

/** The package version, read from package.json next to dist/. */
export function readPackageVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return manifest.version;
}
