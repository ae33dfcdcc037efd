// A wave of script agents on a fresh repository, run through the real run-wave (shared by
// bench:parallel and bench:sandbox): each agent writes its two owned files, optionally runs
// extra steps (bash calls), commits, reports and then idles until `agentMs` after its start.
// Its pieces (the IMPL, the agents' script, starting serve and run-wave processes) also build
// the waves of bench:serve and bench:serve-ui.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const root = path.dirname(path.dirname(path.dirname(fileURLToPath(import.meta.url))));
const { runWave } = await import(path.join(root, 'dist/orchestrator/run-wave.js'));
const { EventBus } = await import(path.join(root, 'dist/engine/events.js'));

export const benchEnv = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: os.devNull,
  GIT_AUTHOR_NAME: 'bench',
  GIT_AUTHOR_EMAIL: 'bench@polywave.invalid',
  GIT_COMMITTER_NAME: 'bench',
  GIT_COMMITTER_EMAIL: 'bench@polywave.invalid',
};

export function agentIds(total) {
  const ids = [];
  for (let generation = 1; ids.length < total; generation += 1) {
    for (let letter = 0; letter < 26 && ids.length < total; letter += 1) ids.push(`${String.fromCharCode(65 + letter)}${generation === 1 ? '' : generation}`);
  }
  return ids;
}

export function sh(script, cwd, env = benchEnv) {
  const result = spawnSync('sh', ['-c', script], { cwd, env, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`${script}\n${result.stderr}`);
  return result.stdout;
}

export const fileOf = (id) => `src/agent-${id}/main.ts`;
export const testOf = (id) => `src/agent-${id}/main.test.ts`;

/** The IMPL of one wave in which each agent owns fileOf(id) and testOf(id) (state WAVE_PENDING). */
export function waveImplYaml(ids, title) {
  return [
    `title: ${title}`,
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
  ].join('\n');
}

/** A script-agents file (`--model script:<file>`): `stepsOf(id)` gives each agent's step lines (6-space indented). */
export function agentScriptYaml(ids, stepsOf) {
  return ['version: 1', 'agents:', ...ids.flatMap((id) => [`  ${id}:`, '    steps:', ...stepsOf(id)]), ''].join('\n');
}

/**
 * A fixed-length agent: its tool calls (the two writes, `extraSteps`, a commit, the report) and
 * then thinking time until `agentMs` after its start — so a wave's wall time minus agentMs is the
 * orchestration.
 */
export function fixedLengthSteps(id, { agentMs, extraSteps = [] }) {
  return [
    `      - write: { path: ${fileOf(id)}, content: "export const value = 1;\\n" }`,
    `      - write: { path: ${testOf(id)}, content: "import { value } from './main';\\n" }`,
    ...extraSteps,
    `      - commit: "feat(${id}): value"`,
    '      - report: { status: complete, verification: PASS }',
    `      - sleep_until_ms: ${agentMs}`,
  ];
}

/**
 * Starts `polywave serve --port 0` on `repo` (one path or several) and `store`; resolves once it printed its URL.
 * `nodeArgs` go before the CLI (e.g. `--cpu-prof`; the profile is written when SIGTERM stops the server).
 */
export function startServe(repo, store, env = benchEnv, nodeArgs = []) {
  return new Promise((resolve, reject) => {
    const repoArgs = [repo].flat().flatMap((dir) => ['--repo', dir]);
    const child = spawn(process.execPath, [...nodeArgs, path.join(root, 'bin', 'polywave.js'), 'serve', '--port', '0', ...repoArgs, '--store', store], { stdio: ['ignore', 'pipe', 'pipe'], env });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk) => {
      out += chunk;
      const match = /(http:\/\/127\.\d+\.\d+\.\d+:\d+)\/\?token=([0-9a-f]{32})/.exec(out);
      if (match) resolve({ child, origin: match[1], base: `${match[1]}/`, url: match[0], token: match[2] });
    });
    child.stderr.setEncoding('utf8').on('data', (chunk) => (out += chunk));
    child.on('exit', (code) => reject(new Error(`serve exited ${code}: ${out}`)));
  });
}

/**
 * Spawns a real `polywave run-wave` process on wave 1 of `implPath` with the script agents of
 * `script`, recording into `store` (spawned, not spawnSync: the caller keeps reading while it runs).
 */
export function spawnRunWave({ implPath, script, store, cwd, env = benchEnv, stdio = ['ignore', 'pipe', 'pipe'] }) {
  return spawn(process.execPath, [path.join(root, 'bin', 'polywave.js'), 'run-wave', implPath, '--wave', '1', '--model', `script:${script}`, '--skip-critic', '--json', '--store', store], { cwd, env, stdio });
}

/**
 * Runs one wave of `agentCount` script agents; `extraSteps` (script-step YAML lines, 6-space
 * indented) run after the writes. `env` overrides the environment (e.g. POLYWAVE_SANDBOX=off).
 * Returns wall times and the launch/end marks.
 */
export async function measureScriptWave(agentCount, { agentMs, extraSteps = [], env = benchEnv, runOptions = {} }) {
  const ids = agentIds(agentCount);
  const directory = mkdtempSync(path.join(os.tmpdir(), 'polywave-bench-wave-'));
  const repo = path.join(directory, 'repo');
  mkdirSync(path.join(repo, 'docs', 'IMPL'), { recursive: true });
  sh('git init -q -b main', repo, env);
  writeFileSync(path.join(repo, 'README.md'), '# bench\n');
  writeFileSync(path.join(repo, 'docs', 'IMPL', 'IMPL-bench.yaml'), waveImplYaml(ids, 'Parallel bench'));
  sh('git add -A && git commit -qm initial', repo, env);
  const scriptPath = path.join(directory, 'agents.yaml');
  writeFileSync(
    scriptPath,
    agentScriptYaml(ids, (id) => fixedLengthSteps(id, { agentMs, extraSteps })),
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
  const result = await runWave({ implPath: path.join(repo, 'docs', 'IMPL', 'IMPL-bench.yaml'), wave: 1, model: `script:${scriptPath}`, concurrency: agentCount, env, events: bus, skipCritic: true, ...runOptions });
  const total = performance.now() - begin;
  if (!result.success) {
    console.error(JSON.stringify({ blocked: result.blocked, failed: result.finalize?.failed_step, agents: result.agents }, null, 2));
    process.exit(1);
  }
  let hook;
  try {
    hook = readFileSync(path.join(repo, '.git', 'hooks', 'pre-commit'), 'utf8');
  } catch {
    hook = undefined;
  }
  rmSync(directory, { recursive: true, force: true });
  const firstLaunch = Math.min(...marks.launches);
  const lastEnd = Math.max(...marks.ends);
  return { total, firstLaunch, lastEnd, begin, startAt, marks, result, hook, agentsPhase: lastEnd - firstLaunch };
}

export function percentile(values, fraction) {
  const sorted = [...values].sort((left, right) => left - right);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1))];
}
