import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { repoRoot } from './support/cli.js';

// Outside attack F8 (issue 13): npm writes a package's files in tarball order, so an installed
// package's dist/cli/main.js can be newer than dist/bundle/main.js; bin/polywave.js took that for
// "tsc ran after the bundle" and ran the per-module build (slower, and without the list-impls parse
// cache: list-impls --include-complete 2.1x Go). An installed package (no src/) runs its bundle;
// a source checkout keeps the newer-build rule. Stub entry files: which one ran is what is printed.

describe('bin/polywave.js: which build it runs', () => {
  it('an installed package runs the bundle even when dist/cli is newer; a checkout runs the newer build', () => {
    const pkg = mkdtempSync(path.join(os.tmpdir(), 'polywave-entry-'));
    onTestFinished(() => rmSync(pkg, { recursive: true, force: true }));
    mkdirSync(path.join(pkg, 'bin'));
    copyFileSync(path.join(repoRoot, 'bin', 'polywave.js'), path.join(pkg, 'bin', 'polywave.js'));
    copyFileSync(path.join(repoRoot, 'package.json'), path.join(pkg, 'package.json'));
    for (const [dir, name] of [['bundle', 'bundle'], ['cli', 'modules']] as const) {
      mkdirSync(path.join(pkg, 'dist', dir), { recursive: true });
      writeFileSync(path.join(pkg, 'dist', dir, 'main.js'), `export async function main() { process.stdout.write('${name}\\n'); return 0; }\n`);
    }
    const older = new Date(Date.now() - 60_000);
    utimesSync(path.join(pkg, 'dist', 'bundle', 'main.js'), older, older);
    const run = () => spawnSync(process.execPath, [path.join(pkg, 'bin', 'polywave.js'), 'list-impls'], { encoding: 'utf8' });
    const installed = run();
    expect([installed.status, installed.stdout, installed.stderr]).toEqual([0, 'bundle\n', '']);
    mkdirSync(path.join(pkg, 'src', 'cli'), { recursive: true });
    writeFileSync(path.join(pkg, 'src', 'cli', 'main.ts'), '');
    expect(run().stdout).toBe('modules\n');
  });
});
