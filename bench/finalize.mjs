// bench:finalize — finalize-wave (no gates) against the raw git it has to issue: a plain shell
// loop of `git merge --no-ff` × N, then `git worktree remove` + `git branch -d` × N, measured in
// the same run, each on a fresh repository of the same content with N agent worktrees holding one
// small commit each. Prints the ratio (target ≤ 1.5× at N ≥ 8), ms/agent and the slowest steps.
// These machines are noisy: read ratios, not absolute times.
//
//   npm run bench:finalize                # N = 1, 8, 32, 100
//   BENCH_SIZES=8,32 BENCH_FILES=500 npm run bench:finalize
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const { finalizeWave } = await import(path.join(root, 'dist/engine/finalize-wave.js'));
const { createGit } = await import(path.join(root, 'dist/git/git-cli.js'));

const sizes = (process.env.BENCH_SIZES ?? '1,8,32,100').split(',').map(Number);
const fileCount = Number(process.env.BENCH_FILES ?? 200);
const env = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: os.devNull,
  GIT_AUTHOR_NAME: 'bench',
  GIT_AUTHOR_EMAIL: 'bench@polywave.invalid',
  GIT_COMMITTER_NAME: 'bench',
  GIT_COMMITTER_EMAIL: 'bench@polywave.invalid',
};
delete env.POLYWAVE_ALLOW_MAIN_COMMIT;
delete env.POLYWAVE_TEST_CRASH_AFTER_MERGE;

function sh(script, cwd) {
  const result = spawnSync('sh', ['-c', script], { cwd, env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (result.status !== 0) throw new Error(`${script.slice(0, 200)}\n${result.stderr}`);
  return result.stdout;
}

/** Agent IDs A…Z, A2…Z2, … (E5: ^[A-Z][2-9]?$). */
function agentIds(count) {
  const ids = [];
  for (let generation = 1; ids.length < count; generation += 1) {
    for (let letter = 0; letter < 26 && ids.length < count; letter += 1) ids.push(`${String.fromCharCode(65 + letter)}${generation === 1 ? '' : generation}`);
  }
  return ids;
}

const branchOf = (id) => `polywave/bench/wave1-agent-${id}`;
const worktreeOf = (id) => `.claude/worktrees/polywave/bench/wave1-agent-${id}`;
const fileOf = (id) => `src/agent-${id}/main.ts`;

function implYaml(ids, base, commits) {
  // Two files per agent (one agent owning one file is V047_TRIVIAL_SCOPE); each commits one.
  const rows = ids.flatMap((id) => [fileOf(id), `src/agent-${id}/main.test.ts`].flatMap((file) => [`    - file: ${file}`, `      agent: ${id}`, '      wave: 1', '      action: new']));
  const agents = ids.flatMap((id) => [`        - id: ${id}`, `          task: Implement ${fileOf(id)} with tests.`, '          files:', `            - ${fileOf(id)}`, `            - src/agent-${id}/main.test.ts`]);
  const reports = ids.flatMap((id) => [
    `    ${id}:`,
    '        status: complete',
    `        branch: ${branchOf(id)}`,
    `        commit: ${commits.get(id)}`,
    '        files_created:',
    `            - ${fileOf(id)}`,
    '        verification: PASS',
  ]);
  return [
    'title: Bench feature',
    'feature_slug: bench',
    'verdict: SUITABLE',
    'state: WAVE_EXECUTING',
    'file_ownership:',
    ...rows,
    'interface_contracts:',
    '    - name: Api',
    '      definition: "export interface Api { run(): void }"',
    '      location: src/api.ts',
    'waves:',
    '    - number: 1',
    ...(base ? [`      base_commit: ${base}`] : []),
    '      agents:',
    ...agents,
    'critic_report:',
    '    verdict: PASS',
    '    summary: bench',
    ...(commits.size > 0 ? ['completion_reports:', ...reports] : []),
    '',
  ].join('\n');
}

/**
 * A fresh repository (`fileCount` source files, the IMPL committed) with N agent worktrees, each
 * holding one commit of its own file, the reports written — the state finalize-wave starts from.
 */
function freshWave(count) {
  const directory = mkdtempSync(path.join(os.tmpdir(), 'polywave-bench-'));
  const repo = path.join(directory, 'repo');
  sh(`git init -q -b main "${repo}"`, directory);
  for (let index = 0; index < fileCount; index += 1) {
    const file = path.join(repo, 'src', `dir${index % 10}`, `file${index}.ts`);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, `export const value${index} = ${index};\n`.repeat(20));
  }
  const ids = agentIds(count);
  const implPath = path.join(repo, 'docs', 'IMPL', 'IMPL-bench.yaml');
  mkdirSync(path.dirname(implPath), { recursive: true });
  writeFileSync(implPath, implYaml(ids, undefined, new Map()));
  writeFileSync(path.join(repo, '.git', 'info', 'exclude'), '/.claude/worktrees/\n/.polywave-state/\n');
  sh('git add -A && git commit -q --no-verify -m init', repo);
  const base = sh('git rev-parse HEAD', repo).trim();
  sh(ids.map((id) => `git worktree add -q -b ${branchOf(id)} ${worktreeOf(id)} ${base}`).join('\n'), repo);
  const commits = new Map();
  for (const id of ids) {
    const worktree = path.join(repo, worktreeOf(id));
    mkdirSync(path.join(worktree, path.dirname(fileOf(id))), { recursive: true });
    writeFileSync(path.join(worktree, fileOf(id)), `export function run${id}(): string {\n  return '${id}';\n}\n`);
  }
  sh(ids.map((id) => `git -C ${worktreeOf(id)} add -A && git -C ${worktreeOf(id)} commit -q --no-verify -m "agent ${id}"`).join('\n'), repo);
  for (const id of ids) commits.set(id, sh(`git rev-parse ${branchOf(id)}`, repo).trim());
  writeFileSync(implPath, implYaml(ids, base, commits));
  return { directory, repo, ids, implPath };
}

async function timeFinalize(count) {
  const { directory, repo, ids, implPath } = freshWave(count);
  try {
    const start = performance.now();
    const result = await finalizeWave({ implPath, wave: 1, env, gitAt: (dir) => createGit(dir, { env }) });
    const ms = performance.now() - start;
    if (!result.success) throw new Error(`finalize-wave failed: ${JSON.stringify(result.failed_step)}`);
    const merges = sh('git rev-list --merges --count HEAD', repo).trim();
    if (Number(merges) !== ids.length) throw new Error(`expected ${ids.length} merges, got ${merges}`);
    const steps = Object.fromEntries(result.steps.map((step) => [step.step, step.duration_ms]));
    if (process.env.BENCH_DEBUG) console.error(`N=${count}: ${ms.toFixed(0)} ms: ${result.steps.map((step) => `${step.step} ${step.duration_ms}`).join(', ')}`);
    return { ms, steps };
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

function timeShellLoop(count) {
  const { directory, repo, ids } = freshWave(count);
  try {
    const merges = ids.map((id) => `git merge --no-ff -q -m "Merge ${branchOf(id)}" ${branchOf(id)}`);
    const cleanup = ids.flatMap((id) => [`git worktree remove ${worktreeOf(id)}`, `git branch -q -d ${branchOf(id)}`]);
    const start = performance.now();
    sh(merges.join('\n'), repo);
    const merged = performance.now();
    sh(cleanup.join('\n'), repo);
    const end = performance.now();
    return { ms: end - start, mergeMs: merged - start, cleanupMs: end - merged };
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

// Warm-up (module loading and JIT are not what we measure).
await timeFinalize(2);

console.log(`bench:finalize — ${os.cpus().length} CPUs, git ${sh('git --version', root).trim().replace('git version ', '')}, repo of ${fileCount} files; finalize-wave without gates (in-process API) vs a shell loop of git merge --no-ff + worktree remove + branch -d`);
console.log('    N | shell loop ms | ms/agent | finalize-wave ms | ms/agent | ratio');
const rows = [];
for (const count of sizes) {
  const rounds = Number(process.env.BENCH_ROUNDS ?? (count <= 8 ? 3 : 1));
  const shell = [];
  const ours = [];
  let steps;
  let split;
  for (let round = 0; round < rounds; round += 1) {
    split = timeShellLoop(count);
    shell.push(split.ms);
    const measured = await timeFinalize(count);
    ours.push(measured.ms);
    steps = measured.steps;
  }
  const shellMs = median(shell);
  const oursMs = median(ours);
  rows.push({ count, shellMs, oursMs, steps, split });
  console.log(
    `${String(count).padStart(5)} | ${shellMs.toFixed(0).padStart(13)} | ${(shellMs / count).toFixed(1).padStart(8)} | ${oursMs.toFixed(0).padStart(16)} | ${(oursMs / count).toFixed(1).padStart(8)} | ${(oursMs / shellMs).toFixed(2)}×`,
  );
}
for (const row of rows) {
  const top = Object.entries(row.steps).sort((left, right) => right[1] - left[1]).slice(0, 8);
  const stepSum = Object.values(row.steps).reduce((sum, ms) => sum + ms, 0);
  console.log(`N=${row.count}: steps total ${stepSum} ms of ${row.oursMs.toFixed(0)}; slowest ${top.map(([name, ms]) => `${name} ${ms}`).join(', ')} ms; shell loop: merges ${row.split.mergeMs.toFixed(0)}, worktree remove + branch -d ${row.split.cleanupMs.toFixed(0)} ms`);
}
const target = rows.filter((row) => row.count >= 8);
if (target.length > 0) {
  const worst = Math.max(...target.map((row) => row.oursMs / row.shellMs));
  console.log(`worst ratio at N ≥ 8: ${worst.toFixed(2)}× (target ≤ 1.5×) — ${worst <= 1.5 ? 'OK' : 'ABOVE TARGET'}`);
}
