// bench:writers — many real CLI processes writing one IMPL manifest at the same time:
// BENCH_REPORTS `polywave set-completion` (default 200) plus BENCH_STATUS `polywave update-status`
// (default 50), all started at once, on a manifest of 234 agents (every ID E5 allows) in a real git
// repository. Prints the wall time, the slowest process, how many failed, and checks the result:
// every report present and exactly as written, the manifest valid, nothing but the manifest
// changed in docs/IMPL/ (no lock or temp file) and in `git status`.
//
//   npm run bench:writers
//   BENCH_REPORTS=60 BENCH_STATUS=15 node bench/manifest-writers.mjs
//   BENCH_JSON=1 node bench/manifest-writers.mjs      # one JSON line (used by the test)
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const bin = path.join(root, 'bin', 'polywave.js');
const { parseImpl } = await import(path.join(root, 'dist/protocol/parse-impl.js'));

const reportCount = Number(process.env.BENCH_REPORTS ?? 200);
const statusCount = Number(process.env.BENCH_STATUS ?? 50);
const jsonOnly = process.env.BENCH_JSON === '1';
const env = { ...process.env, NO_COLOR: '1', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: os.devNull, GIT_AUTHOR_NAME: 'bench', GIT_AUTHOR_EMAIL: 'bench@polywave.invalid', GIT_COMMITTER_NAME: 'bench', GIT_COMMITTER_EMAIL: 'bench@polywave.invalid' };

/** Agent IDs A…Z, A2…Z2, …, A9…Z9 (E5: ^[A-Z][2-9]?$): 234 at most. */
function agentIds(count) {
  const ids = [];
  for (let generation = 1; ids.length < count && generation <= 9; generation += 1) {
    for (let letter = 0; letter < 26 && ids.length < count; letter += 1) ids.push(`${String.fromCharCode(65 + letter)}${generation === 1 ? '' : generation}`);
  }
  return ids;
}

const ids = agentIds(234);
const perWave = 26;
const waveOf = (index) => Math.floor(index / perWave) + 1;
const fileOf = (id) => `src/agents/agent-${id.toLowerCase()}.ts`;
const commitOf = (id) => createHash('sha1').update(`agent-${id}`).digest('hex');

function manifestText() {
  const lines = ['# Many writers, one manifest (bench:writers).', 'title: Many writers', 'feature_slug: bench', 'verdict: SUITABLE', 'test_command: npm test', 'lint_command: npm run lint', 'file_ownership:'];
  ids.forEach((id, index) => lines.push(`    - file: ${fileOf(id)}`, `      agent: ${id}`, `      wave: ${waveOf(index)}`, '      action: new'));
  lines.push('waves:');
  for (let wave = 1; wave <= waveOf(ids.length - 1); wave += 1) {
    lines.push(`    - number: ${wave}`, '      agents:');
    ids.forEach((id, index) => {
      if (waveOf(index) === wave) lines.push(`        - id: ${id}`, `          task: Implement module ${id} in ${fileOf(id)} with its unit tests. # ownership above`, '          files:', `            - ${fileOf(id)}`);
    });
  }
  lines.push('quality_gates:', '    level: standard', '    gates:', '        - type: test', '          command: npm test', '          required: true', 'state: WAVE_EXECUTING', '# reports below', '');
  return lines.join('\n');
}

/**
 * The writers: set-completion for the first `reports` agents; update-status for the agents after
 * them (status partial, their own commit) and, once those run out, for the first agents again with
 * the same status and commit their set-completion writes (so every order gives the same result).
 */
function plannedWriters(reports, statuses) {
  const writers = [];
  ids.slice(0, reports).forEach((id) => {
    writers.push({ kind: 'set-completion', id, args: ['--agent', id, '--status', 'complete', '--commit', commitOf(id), '--files-changed', fileOf(id), '--verification', 'PASS', '--notes', `agent ${id}: done # not a comment`] });
  });
  const fresh = ids.slice(reports);
  for (let index = 0; index < statuses; index += 1) {
    const id = index < fresh.length ? fresh[index] : ids[index - fresh.length];
    const status = index < fresh.length ? 'partial' : 'complete';
    writers.push({ kind: 'update-status', id, args: ['--wave', String(waveOf(ids.indexOf(id))), '--agent', id, '--status', status, '--commit', commitOf(id)] });
  }
  return writers;
}

function expectedReports(writers) {
  const expected = {};
  for (const writer of writers) {
    if (writer.kind === 'set-completion') expected[writer.id] = { status: 'complete', commit: commitOf(writer.id), files_changed: [fileOf(writer.id)], verification: 'PASS', notes: `agent ${writer.id}: done # not a comment` };
  }
  for (const writer of writers) {
    if (writer.kind === 'update-status' && expected[writer.id] === undefined) expected[writer.id] = { status: 'partial', commit: commitOf(writer.id) };
  }
  return expected;
}

function run(args, cwd) {
  return new Promise((resolve) => {
    const start = performance.now();
    const child = spawn(process.execPath, [bin, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk) => (stderr += chunk));
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr, ms: performance.now() - start }));
  });
}

const scratch = mkdtempSync(path.join(os.tmpdir(), 'polywave-bench-writers-'));
try {
  const repo = path.join(scratch, 'repo');
  mkdirSync(path.join(repo, 'docs', 'IMPL'), { recursive: true });
  const manifest = path.join(repo, 'docs', 'IMPL', 'IMPL-bench.yaml');
  writeFileSync(manifest, manifestText());
  for (const args of [['init', '-q', '-b', 'main'], ['add', '-A'], ['commit', '-q', '-m', 'manifest']]) spawnSync('git', args, { cwd: repo, env });

  const writers = plannedWriters(reportCount, statusCount);
  const start = performance.now();
  const results = await Promise.all(writers.map((writer) => run([writer.kind, manifest, ...writer.args], repo)));
  const wallMs = performance.now() - start;

  const failures = results.map((result, index) => ({ ...writers[index], code: result.code, stderr: result.stderr.trim() })).filter((item) => item.code !== 0);
  const parsed = parseImpl(readFileSync(manifest, 'utf8'));
  const reports = parsed.data?.completion_reports ?? {};
  const expected = expectedReports(writers);
  const wrong = Object.keys(expected).filter((id) => JSON.stringify(reports[id]) !== JSON.stringify(expected[id]));
  const extra = Object.keys(reports).filter((id) => !(id in expected));
  const validation = spawnSync(process.execPath, [bin, 'validate', manifest], { cwd: repo, env, encoding: 'utf8' });
  const leftovers = readdirSync(path.dirname(manifest)).filter((name) => name !== 'IMPL-bench.yaml');
  const status = spawnSync('git', ['status', '--porcelain', '--untracked-files=all'], { cwd: repo, env, encoding: 'utf8' }).stdout.trim().split('\n').filter(Boolean);
  const summary = {
    writers: { set_completion: writers.filter((item) => item.kind === 'set-completion').length, update_status: writers.filter((item) => item.kind === 'update-status').length },
    ok: { set_completion: results.filter((result, index) => result.code === 0 && writers[index].kind === 'set-completion').length, update_status: results.filter((result, index) => result.code === 0 && writers[index].kind === 'update-status').length },
    wall_ms: Math.round(wallMs),
    slowest_ms: Math.round(Math.max(...results.map((result) => result.ms))),
    median_ms: Math.round(results.map((result) => result.ms).sort((a, b) => a - b)[Math.floor(results.length / 2)]),
    failures: failures.slice(0, 5).map((item) => `${item.kind} ${item.id}: exit ${item.code}: ${item.stderr.split('\n')[0]}`),
    failure_count: failures.length,
    wrong_reports: wrong.slice(0, 10),
    wrong_report_count: wrong.length,
    extra_reports: extra,
    manifest_valid: !parsed.fatal && parsed.manifest !== null && validation.status === 0,
    docs_impl_leftovers: leftovers,
    git_status: status,
    cpus: os.cpus().length,
  };
  if (jsonOnly) {
    process.stdout.write(`${JSON.stringify(summary)}\n`);
  } else {
    console.log(`${summary.writers.set_completion} set-completion + ${summary.writers.update_status} update-status processes on ${summary.cpus} core(s):`);
    console.log(`  wall ${summary.wall_ms} ms; per process median ${summary.median_ms} ms, slowest ${summary.slowest_ms} ms`);
    console.log(`  succeeded: set-completion ${summary.ok.set_completion}/${summary.writers.set_completion}, update-status ${summary.ok.update_status}/${summary.writers.update_status}`);
    for (const line of summary.failures) console.log(`  FAILED ${line}`);
    console.log(`  reports wrong or missing: ${summary.wrong_report_count}${wrong.length > 0 ? ` (${wrong.slice(0, 10).join(', ')})` : ''}; extra: ${extra.length}; manifest valid: ${summary.manifest_valid}`);
    console.log(`  left in docs/IMPL: ${leftovers.length === 0 ? 'nothing' : leftovers.join(', ')}; git status: ${status.join(' | ')}`);
  }
  process.exitCode = failures.length === 0 && wrong.length === 0 && extra.length === 0 && summary.manifest_valid && leftovers.length === 0 ? 0 : 1;
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
