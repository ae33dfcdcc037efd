// bench:parallel — run-wave's parallelism: 16 script agents that each take 2 s (thinking time split
// around a small write + commit, then a completion report — real jailed tools, locked writer),
// launched with --concurrency 16. Prints the agents phase's wall time against the 2 s floor
// (parallel efficiency = 2 s / wall; target ≥ 90 %), the whole run-wave (prepare + agents +
// finalize) and the orchestration overhead around the agents. These machines are noisy.
//
//   npm run bench:parallel
//   BENCH_AGENTS=8 BENCH_AGENT_MS=2000 npm run bench:parallel
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const { runWave } = await import(path.join(root, 'dist/orchestrator/run-wave.js'));
const { EventBus } = await import(path.join(root, 'dist/engine/events.js'));

const count = Number(process.env.BENCH_AGENTS ?? 16);
const agentMs = Number(process.env.BENCH_AGENT_MS ?? 2000);
const env = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: os.devNull,
  GIT_AUTHOR_NAME: 'bench',
  GIT_AUTHOR_EMAIL: 'bench@polywave.invalid',
  GIT_COMMITTER_NAME: 'bench',
  GIT_COMMITTER_EMAIL: 'bench@polywave.invalid',
};

function agentIds(total) {
  const ids = [];
  for (let generation = 1; ids.length < total; generation += 1) {
    for (let letter = 0; letter < 26 && ids.length < total; letter += 1) ids.push(`${String.fromCharCode(65 + letter)}${generation === 1 ? '' : generation}`);
  }
  return ids;
}

function sh(script, cwd) {
  const result = spawnSync('sh', ['-c', script], { cwd, env, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`${script}\n${result.stderr}`);
  return result.stdout;
}

const ids = agentIds(count);
const fileOf = (id) => `src/agent-${id}/main.ts`;
const testOf = (id) => `src/agent-${id}/main.test.ts`;
const directory = mkdtempSync(path.join(os.tmpdir(), 'polywave-bench-parallel-'));
const repo = path.join(directory, 'repo');
mkdirSync(path.join(repo, 'docs', 'IMPL'), { recursive: true });
sh('git init -q -b main', repo);
writeFileSync(path.join(repo, 'README.md'), '# bench\n');
writeFileSync(
  path.join(repo, 'docs', 'IMPL', 'IMPL-bench.yaml'),
  [
    'title: Parallel bench',
    'feature_slug: bench',
    'verdict: SUITABLE',
    'state: WAVE_PENDING',
    'file_ownership:',
    ...ids.flatMap((id) => [fileOf(id), testOf(id)].flatMap((file) => [`    - file: ${file}`, `      agent: ${id}`, '      wave: 1', '      action: new'])),
    'interface_contracts:',
    '    - name: Api',
    '      definition: "export interface Api { run(): void }"',
    '      location: src/api.ts',
    'waves:',
    '    - number: 1',
    '      agents:',
    ...ids.flatMap((id) => [`        - id: ${id}`, `          task: Implement ${fileOf(id)} with a test.`, '          files:', `            - ${fileOf(id)}`, `            - ${testOf(id)}`]),
    '',
  ].join('\n'),
);
sh('git add -A && git commit -qm initial', repo);
const scriptPath = path.join(directory, 'agents.yaml');
writeFileSync(
  scriptPath,
  [
    'version: 1',
    'agents:',
    ...ids.flatMap((id) => [
      `  ${id}:`,
      '    steps:',
      // Like a model: thinking time between tool calls (half before the edits, half after the commit).
      `      - sleep_ms: ${Math.round(agentMs / 2)}`,
      `      - write: { path: ${fileOf(id)}, content: "export const value = 1;\\n" }`,
      `      - write: { path: ${testOf(id)}, content: "import { value } from './main';\\n" }`,
      `      - commit: "feat(${id}): value"`,
      `      - sleep_ms: ${agentMs - Math.round(agentMs / 2)}`,
      '      - report: { status: complete, verification: PASS }',
    ]),
    '',
  ].join('\n'),
);

const bus = new EventBus();
const marks = { launches: [], ends: [] };
let startAt = 0;
bus.subscribe((event) => {
  if (event.type === 'agent-launch') marks.launches.push(performance.now());
  if (event.type === 'agent-end') marks.ends.push(performance.now());
  if (event.type === 'wave-run-start') startAt = performance.now();
});
const begin = performance.now();
const result = await runWave({ implPath: path.join(repo, 'docs', 'IMPL', 'IMPL-bench.yaml'), wave: 1, model: `script:${scriptPath}`, concurrency: count, env, events: bus, skipCritic: true });
const total = performance.now() - begin;
if (!result.success) {
  console.error(JSON.stringify({ blocked: result.blocked, failed: result.finalize?.failed_step }, null, 2));
  process.exit(1);
}
const firstLaunch = Math.min(...marks.launches);
const lastEnd = Math.max(...marks.ends);
const agentsPhase = lastEnd - firstLaunch;
const efficiency = agentMs / agentsPhase;
const launchSpread = Math.max(...marks.launches) - firstLaunch;
const agentOwn = result.agents.map((agent) => agent.duration_ms);
console.log(`bench:parallel — ${os.cpus().length} CPUs; ${count} script agents × ${agentMs} ms (sleep) + write/commit/report each, --concurrency ${count}`);
console.log(`agents phase (first launch → last agent end): ${agentsPhase.toFixed(0)} ms vs ${agentMs} ms floor → parallel efficiency ${(efficiency * 100).toFixed(1)}% (target ≥ 90%) — ${efficiency >= 0.9 ? 'OK' : 'BELOW TARGET'}`);
console.log(`launch spread (first → last launch): ${launchSpread.toFixed(0)} ms; per-agent time: min ${Math.min(...agentOwn)} / max ${Math.max(...agentOwn)} ms (each includes the ${agentMs} ms sleep)`);
console.log(`whole run-wave ${total.toFixed(0)} ms: prepare ${(startAt - begin).toFixed(0)} ms, agents ${agentsPhase.toFixed(0)} ms, finalize + bookkeeping ${(total - (lastEnd - begin)).toFixed(0)} ms; orchestration overhead around the ${agentMs} ms of agent work: ${(total - agentMs).toFixed(0)} ms`);
rmSync(directory, { recursive: true, force: true });
