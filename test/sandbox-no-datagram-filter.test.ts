/**
 * Fail closed without polywave's second seccomp filter (issue 11, outside attack X2 #6): where it is
 * built (Linux x64/arm64) but was not — no C compiler at install — sandbox-runtime's own filter would
 * let socketpair(AF_UNIX, SOCK_DGRAM) through to any host datagram socket. The sandbox is then
 * reported unavailable (agents refuse to start: SANDBOX_UNAVAILABLE) unless the user opts out.
 * Runs on a copy of dist/sandbox without dist/native (`npm run build` first), nothing installed touched.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { makeTempDir } from './support/temp.js';

const packageRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const supported = process.platform === 'linux' && ['x64', 'arm64'].includes(process.arch) && existsSync(path.join(packageRoot, 'dist', 'native', 'polywave-seccomp'));

describe.runIf(supported)('the sandbox without polywave-seccomp', () => {
  it('is not available (the message says how to build it), unless POLYWAVE_SANDBOX_NO_DATAGRAM_FILTER=1; with the filter built it is', () => {
    const copy = makeTempDir('polywave-no-filter-');
    mkdirSync(path.join(copy, 'node_modules'));
    for (const name of readdirSync(path.join(packageRoot, 'node_modules'))) {
      if (!name.startsWith('.')) symlinkSync(path.join(packageRoot, 'node_modules', name), path.join(copy, 'node_modules', name));
    }
    for (const dir of ['sandbox', 'errors']) cpSync(path.join(packageRoot, 'dist', dir), path.join(copy, 'dist', dir), { recursive: true });
    writeFileSync(path.join(copy, 'package.json'), '{"type":"module"}\n');
    const statusIn = (root: string, env: Record<string, string>) => {
      const program = `const { sandboxStatus } = await import(process.env.ROOT + '/dist/sandbox/sandbox-status.js'); console.log(JSON.stringify(await sandboxStatus())); process.exit(0);`;
      const result = spawnSync(process.execPath, ['--input-type=module', '-e', program], { cwd: root, env: { ...process.env, POLYWAVE_SANDBOX: '', POLYWAVE_SANDBOX_NO_DATAGRAM_FILTER: '', ...env, ROOT: root }, encoding: 'utf8', timeout: 60_000 });
      return JSON.parse(result.stdout.trim().split('\n').pop() ?? '{}') as { available: boolean; detail: string; missing: string[] };
    };
    const refused = statusIn(copy, {});
    expect(refused.available).toBe(false);
    expect(refused.missing).toEqual(['gcc']);
    expect(refused.detail).toMatch(/polywave's own seccomp filter \(dist\/native\/polywave-seccomp\) was not built .*npm rebuild polywave.*POLYWAVE_SANDBOX_NO_DATAGRAM_FILTER=1/);
    // The explicit opt-out (the risk accepted): a working sandbox, as before the check.
    expect(statusIn(copy, { POLYWAVE_SANDBOX_NO_DATAGRAM_FILTER: '1' }).available).toBe(true);
    // The installed package, filter built: available.
    expect(statusIn(packageRoot, {}).available).toBe(true);
  }, 60_000);
});
