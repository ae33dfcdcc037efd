// bench:sandbox — what the OS sandbox (issue 11) costs.
//  (a) start-up per bash call: `bash -c <cmd>` spawned plainly vs through wrapInSandbox (bubblewrap
//      via sandbox-runtime) with an agent's plan, interleaved, median and p95 — with no host allowed
//      (the default: no network, no proxy) and, for `true`, with one host allowed (through the proxy);
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

/** `bash -c command` plainly and through each plan's sandbox, interleaved call by call. */
async function perCall(command, plans) {
  const plain = [];
  const boxed = plans.map(() => []);
  const wrapOnly = plans.map(() => []);
  const isolated = plans.map(() => undefined);
  for (let index = 0; index < calls; index += 1) {
    plain.push(await run('bash', ['-c', command], { cwd: worktree, env }));
    for (const [which, withPlan] of plans.entries()) {
      const start = performance.now();
      const wrapped = await sandbox.wrapInSandbox(withPlan, command, { cwd: worktree, env });
      isolated[which] = wrapped.isolated;
      wrapOnly[which].push(performance.now() - start);
      await run(wrapped.file, wrapped.args, { cwd: worktree, env: wrapped.env });
      wrapped.release();
      boxed[which].push(performance.now() - start);
    }
  }
  return { plain, boxed, wrapOnly, isolated };
}

const fmt = (values) => `median ${percentile(values, 0.5).toFixed(0)} ms, p95 ${percentile(values, 0.95).toFixed(0)} ms`;
console.log(`bench:sandbox — ${os.cpus().length} CPUs; sandbox: ${status.mechanism}`);
const proxied = { ...plan, allowedHosts: ['registry.npmjs.org'] };
// The one-time start-ups: the host, and (for a plan with hosts) its proxy.
for (const each of [plan, proxied]) await sandbox.wrapInSandbox(each, 'true', { cwd: worktree, env }).then((wrapped) => wrapped.release());
for (const [command, plans] of [['true', [plan, proxied]], ['node -e 0', [plan]]]) {
  const { plain, boxed, wrapOnly, isolated } = await perCall(command, plans);
  console.log(`(a) bash -c '${command}' × ${calls}, interleaved: plain ${fmt(plain)}`);
  for (const [which, withPlan] of plans.entries()) {
    const extra = boxed[which].map((value, index) => value - plain[index]);
    const network = withPlan.allowedHosts.length === 0 ? `no host allowed (${isolated[which] ? 'no network, no proxy' : 'through the proxy'})` : `${withPlan.allowedHosts.length} host allowed (through the proxy)`;
    console.log(`    sandboxed, ${network}: ${fmt(boxed[which])} (wrapping alone ${fmt(wrapOnly[which])}) → start-up cost per call ${fmt(extra)}`);
  }
}
rmSync(scratch, { recursive: true, force: true });

const extraSteps = Array.from({ length: bashPerAgent }, () => '      - bash: "node -e \\"process.exit(0)\\""');
const on = [];
const off = [];
for (let round = 0; round < rounds; round += 1) {
  const offEnv = { ...benchEnv, POLYWAVE_SANDBOX: 'off' };
  // Off first in even rounds, on first in odd ones: a load that drifts during a round favours neither.
  const order = [
    async () => off.push((await measureScriptWave(agents, { agentMs, extraSteps, env: offEnv })).total),
    async () => on.push((await measureScriptWave(agents, { agentMs, extraSteps })).total),
  ];
  if (round % 2 === 1) order.reverse();
  for (const measure of order) await measure();
}
const medianOn = percentile(on, 0.5);
const medianOff = percentile(off, 0.5);
const overhead = (medianOn - medianOff) / medianOff;
// The same pair of waves within a round saw about the same load: their ratio, median over the rounds.
const paired = percentile(
  on.map((value, index) => value / off[index] - 1),
  0.5,
);
console.log(`(b) run-wave of ${agents} script agents (2 writes, ${bashPerAgent} × bash 'node -e …', commit, report, idle to ${agentMs} ms), ${rounds} interleaved rounds:`);
console.log(`    sandbox off: median ${medianOff.toFixed(0)} ms (${off.map((value) => value.toFixed(0)).join(', ')}); sandbox on: median ${medianOn.toFixed(0)} ms (${on.map((value) => value.toFixed(0)).join(', ')})`);
console.log(`    overhead ${(overhead * 100).toFixed(1)}% of the wave's wall time (target ≤ 10%) — ${overhead <= 0.1 ? 'OK' : 'ABOVE TARGET'}; per round (on/off of the same round, median): ${(paired * 100).toFixed(1)}%`);
console.log(`    load average now: ${os.loadavg().map((value) => value.toFixed(1)).join(', ')} (other work on the machine moves both columns)`);
await sandbox.resetSandbox?.();
