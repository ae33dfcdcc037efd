// bench:sandbox — what the OS sandbox (issue 11) costs.
//  (a) start-up per bash call: `bash -c <cmd>` spawned plainly vs through wrapInSandbox (bubblewrap
//      via sandbox-runtime) with an agent's plan, interleaved, median and p95;
//  (b) bench:parallel's wave (script agents writing, running bash, committing, reporting, then idle
//      to BENCH_AGENT_MS) with the sandbox on and off (POLYWAVE_SANDBOX=off) in the same run,
//      interleaved rounds: the overhead in % of the wave's wall time (target ≤ 10 %).
//
//   npm run bench:sandbox
//   BENCH_CALLS=50 BENCH_AGENTS=8 BENCH_AGENT_MS=2000 BENCH_ROUNDS=3 BENCH_BASH=2 npm run bench:sandbox
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { benchEnv, measureScriptWave, percentile, root } from './support/script-wave.mjs';

const sandbox = await import(path.join(root, 'dist/agents/sandbox/index.js'));
const calls = Number(process.env.BENCH_CALLS ?? 30);
const agents = Number(process.env.BENCH_AGENTS ?? 16);
const agentMs = Number(process.env.BENCH_AGENT_MS ?? 2000);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const bashPerAgent = Number(process.env.BENCH_BASH ?? 2);

const status = await sandbox.sandboxStatus({ env: benchEnv });
if (!status.available) {
  console.error(`bench:sandbox — the OS sandbox is not available here (${status.detail}); missing: ${status.missing.join(', ') || 'nothing'}`);
  process.exit(1);
}

function run(file, args, options) {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(file, args, { ...options, stdio: 'ignore' });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(performance.now() - start) : reject(new Error(`${file} exited ${code}`))));
  });
}

const scratch = mkdtempSync(path.join(os.tmpdir(), 'polywave-bench-sandbox-'));
const worktree = path.join(scratch, 'wt');
const home = path.join(scratch, 'home');
const tmp = path.join(scratch, 'tmp');
for (const dir of [worktree, home, tmp]) mkdirSync(dir, { recursive: true });
const plan = sandbox.agentSandboxPlan({ root: worktree, home, tmp, gitCommonDir: path.join(scratch, '.git'), otherWorktrees: [] });
const env = { ...benchEnv, HOME: home, TMPDIR: tmp };

async function perCall(command) {
  const plain = [];
  const boxed = [];
  const wrapOnly = [];
  for (let index = 0; index < calls; index += 1) {
    plain.push(await run('bash', ['-c', command], { cwd: worktree, env }));
    const start = performance.now();
    const wrapped = await sandbox.wrapInSandbox(plan, command, { cwd: worktree, env });
    wrapOnly.push(performance.now() - start);
    await run(wrapped.file, wrapped.args, { cwd: worktree, env: wrapped.env });
    wrapped.release();
    boxed.push(performance.now() - start);
  }
  return { plain, boxed, wrapOnly };
}

const fmt = (values) => `median ${percentile(values, 0.5).toFixed(0)} ms, p95 ${percentile(values, 0.95).toFixed(0)} ms`;
console.log(`bench:sandbox — ${os.cpus().length} CPUs; sandbox: ${status.mechanism}`);
await sandbox.wrapInSandbox(plan, 'true', { cwd: worktree, env }).then((wrapped) => wrapped.release()); // the one-time proxy start-up
for (const command of ['true', 'node -e 0']) {
  const { plain, boxed, wrapOnly } = await perCall(command);
  const extra = boxed.map((value, index) => value - plain[index]);
  console.log(`(a) bash -c '${command}' × ${calls}: plain ${fmt(plain)}; sandboxed ${fmt(boxed)} (wrapping alone ${fmt(wrapOnly)}) → start-up cost per call ${fmt(extra)}`);
}
rmSync(scratch, { recursive: true, force: true });

const extraSteps = Array.from({ length: bashPerAgent }, () => '      - bash: "node -e \\"process.exit(0)\\""');
const on = [];
const off = [];
for (let round = 0; round < rounds; round += 1) {
  const offEnv = { ...benchEnv, POLYWAVE_SANDBOX: 'off' };
  off.push((await measureScriptWave(agents, { agentMs, extraSteps, env: offEnv })).total);
  on.push((await measureScriptWave(agents, { agentMs, extraSteps })).total);
}
const medianOn = percentile(on, 0.5);
const medianOff = percentile(off, 0.5);
const overhead = (medianOn - medianOff) / medianOff;
console.log(`(b) run-wave of ${agents} script agents (2 writes, ${bashPerAgent} × bash 'node -e …', commit, report, idle to ${agentMs} ms), ${rounds} interleaved rounds:`);
console.log(`    sandbox off: median ${medianOff.toFixed(0)} ms (${off.map((value) => value.toFixed(0)).join(', ')}); sandbox on: median ${medianOn.toFixed(0)} ms (${on.map((value) => value.toFixed(0)).join(', ')})`);
console.log(`    overhead ${(overhead * 100).toFixed(1)}% of the wave's wall time (target ≤ 10%) — ${overhead <= 0.1 ? 'OK' : 'ABOVE TARGET'}`);
await sandbox.resetSandbox?.();
