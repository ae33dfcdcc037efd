// bench:gate-checkout — what the throwaway checkout of post-merge commands costs (issue 11, X3 #18).
// verify-build (its sandboxed test command) on a clone of this repository (its tracked tree, with
// node_modules linked in) run in the checkout itself (POLYWAVE_UNSAFE_GATES_IN_CHECKOUT=1, the old
// behaviour) and in a throwaway checkout (the default), interleaved, BENCH_ROUNDS (5) each: medians.
// The command is `true` by default (the overhead alone); BENCH_COMMAND sets another.
//
//   npm run build && node bench/gate-checkout.mjs
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { benchEnv, percentile, root } from './support/script-wave.mjs';

const { verifyBuild } = await import(path.join(root, 'dist/engine/verify-build.js'));
const { sandboxStatus } = await import(path.join(root, 'dist/sandbox/index.js'));
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const command = process.env.BENCH_COMMAND ?? 'true';

if (!(await sandboxStatus({ env: benchEnv })).available) {
  console.error('bench:gate-checkout — the OS sandbox is not available here');
  process.exit(1);
}
const scratch = mkdtempSync(path.join(os.tmpdir(), 'polywave-bench-checkout-'));
const repo = path.join(scratch, 'repo');
execFileSync('git', ['clone', '--quiet', root, repo], { env: benchEnv });
symlinkSync(path.join(root, 'node_modules'), path.join(repo, 'node_modules'));
const files = execFileSync('git', ['ls-files'], { cwd: repo, encoding: 'utf8' }).split('\n').length - 1;

const times = { inPlace: [], throwaway: [] };
try {
  for (let round = 0; round < rounds; round += 1) {
    for (const mode of round % 2 === 0 ? ['inPlace', 'throwaway'] : ['throwaway', 'inPlace']) {
      const env = { ...benchEnv, ...(mode === 'inPlace' ? { POLYWAVE_UNSAFE_GATES_IN_CHECKOUT: '1' } : {}) };
      const start = performance.now();
      const data = await verifyBuild({ repoDir: repo, testCommand: command, lintCommand: '', env });
      times[mode].push(performance.now() - start);
      if (!data.test_passed) throw new Error(`${mode}: the test command failed: ${data.test_output ?? data.test_error ?? ''}`);
    }
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
const median = (values) => percentile(values, 0.5);
console.log(`bench:gate-checkout — verify-build \`${command}\` on a clone of ${files} tracked files, ${rounds} rounds each`);
console.log(`  in the checkout (old):    median ${median(times.inPlace).toFixed(0)} ms  [${times.inPlace.map((t) => t.toFixed(0)).join(', ')}]`);
console.log(`  throwaway checkout (new): median ${median(times.throwaway).toFixed(0)} ms  [${times.throwaway.map((t) => t.toFixed(0)).join(', ')}]`);
console.log(`  overhead: ${(median(times.throwaway) - median(times.inPlace)).toFixed(0)} ms per command`);
process.exit(0);
