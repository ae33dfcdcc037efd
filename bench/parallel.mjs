// bench:parallel — run-wave's parallelism: 16 script agents that each take 2 s (two writes, a
// commit and a completion report through the real jailed tools and locked writer, then idle until
// 2 s after the agent's start),
// launched with --concurrency 16. Prints the agents phase's wall time against the 2 s floor
// (parallel efficiency = 2 s / wall; target ≥ 90 %), the whole run-wave (prepare + agents +
// finalize) and the orchestration overhead around the agents. These machines are noisy.
//
//   npm run bench:parallel
//   BENCH_AGENTS=8 BENCH_AGENT_MS=2000 npm run bench:parallel
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { agentIds, benchEnv as env, fileOf, measureScriptWave, sh, testOf } from './support/script-wave.mjs';

const count = Number(process.env.BENCH_AGENTS ?? 16);
const agentMs = Number(process.env.BENCH_AGENT_MS ?? 2000);
const measure = (agentCount) => measureScriptWave(agentCount, { agentMs });

/**
 * The floor: what 16 agents that commit and get checked must cost on this machine even without
 * polywave — 16 shell jobs in 16 real worktrees (with the same E43 hook installed), each idle for
 * the agent time, then writing its two files, `git add` + `git commit`, and the minimum E42 reads
 * (`status`, `diff base..HEAD`, `rev-parse`) — all at once, like the wave.
 */
async function measureFloor(agentCount, hookSource) {
  const ids = agentIds(agentCount);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'polywave-bench-floor-'));
  const repoDir = path.join(dir, 'repo');
  mkdirSync(repoDir, { recursive: true });
  sh('git init -q -b main && echo "# floor" > README.md && git add -A && git commit -qm initial', repoDir);
  if (hookSource) writeFileSync(path.join(repoDir, '.git', 'hooks', 'pre-commit'), hookSource, { mode: 0o755 });
  const base = sh('git rev-parse HEAD', repoDir).trim();
  for (const id of ids) sh(`git worktree add -q -b polywave/floor/wave1-agent-${id} .claude/worktrees/polywave/floor/wave1-agent-${id}`, repoDir);
  const start = performance.now();
  await Promise.all(
    ids.map(
      (id) =>
        new Promise((resolve, reject) => {
          const script = [`sleep ${agentMs / 1000}`, `mkdir -p src/agent-${id}`, `printf 'export const value = 1;\\n' > ${fileOf(id)}`, `printf "import { value } from './main';\\n" > ${testOf(id)}`, `git add ${fileOf(id)} ${testOf(id)}`, `git commit -qm "feat(${id}): value"`, 'git status --porcelain >/dev/null', `git diff --name-only ${base}..HEAD >/dev/null`, 'git rev-parse HEAD >/dev/null'].join(' && ');
          const child = spawn('sh', ['-c', script], { cwd: path.join(repoDir, '.claude', 'worktrees', 'polywave', 'floor', `wave1-agent-${id}`), env, stdio: 'ignore' });
          child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`floor job ${id} failed (${code})`))));
        }),
    ),
  );
  const wall = performance.now() - start;
  rmSync(dir, { recursive: true, force: true });
  return wall;
}

// One agent alone (same script) gives the per-agent cost on this machine; then the whole wave.
const solo = await measure(1);
const wave = await measure(count);
const floorMs = await measureFloor(count, wave.hook);
const efficiency = agentMs / wave.agentsPhase;
const speedup = (solo.agentsPhase * count) / wave.agentsPhase;
const launchSpread = Math.max(...wave.marks.launches) - wave.firstLaunch;
const agentOwn = wave.result.agents.map((agent) => agent.duration_ms);
console.log(`bench:parallel — ${os.cpus().length} CPUs; ${count} script agents, each ${agentMs} ms (two writes, a commit and a report through the real tools, then idle to ${agentMs} ms), --concurrency ${count}`);
console.log(`one agent alone: ${solo.agentsPhase.toFixed(0)} ms from launch to its E42-checked end`);
console.log(`agents phase of ${count} (first launch → last agent end): ${wave.agentsPhase.toFixed(0)} ms vs ${agentMs} ms floor → parallel efficiency ${(efficiency * 100).toFixed(1)}% (target ≥ 90%) — ${efficiency >= 0.9 ? 'OK' : 'BELOW TARGET'}`);
console.log(`vs running them one after another (${count} × ${solo.agentsPhase.toFixed(0)} ms): speed-up ${speedup.toFixed(1)}× of ${count} → ${((speedup / count) * 100).toFixed(1)}% of linear`);
console.log(`the floor — ${count} shell jobs doing the same git work in ${count} worktrees at once (no polywave): ${floorMs.toFixed(0)} ms → our agents phase is ${(wave.agentsPhase / floorMs).toFixed(2)}× the floor; the floor's own efficiency vs ${agentMs} ms: ${((agentMs / floorMs) * 100).toFixed(1)}%`);
console.log(`launch spread (first → last launch): ${launchSpread.toFixed(0)} ms; per-agent time: min ${Math.min(...agentOwn)} / max ${Math.max(...agentOwn)} ms`);
console.log(`whole run-wave ${wave.total.toFixed(0)} ms: prepare ${(wave.startAt - wave.begin).toFixed(0)} ms, agents ${wave.agentsPhase.toFixed(0)} ms, finalize + bookkeeping ${(wave.total - (wave.lastEnd - wave.begin)).toFixed(0)} ms; orchestration overhead around the ${agentMs} ms of agent work: ${(wave.total - agentMs).toFixed(0)} ms`);
