// bench:cli — the price of one CLI call, as hooks pay it on every write: `validate`,
// `check-completion`, `scan-stubs` and `list-impls`, ours (`node bin/polywave.js …`) and the Go
// reference binary on the same input, interleaved run by run (A B, then B A, …) so that the noise
// of a shared machine falls on both. Prints median and p95 wall time per command, the ratio of the
// medians (ours / Go) per command and overall (geometric mean of the four), and the floor: an empty
// `node` start. Where bash is there, each run also reports its CPU time (user + system), a
// steadier measure than wall time on a machine others are using. Without the Go binary it prints
// our numbers only.
//
// Resident column: the native client (dist/native/polywave-client, `npm run build` compiles it when a
// C compiler is there) against a warm `polywave resident` server on a socket in a temporary
// directory, started before the runs and stopped after them; interleaved with the other two. The
// server's CPU is not in the client's CPU time: compare wall times; the server's own CPU per call
// (process.cpuUsage deltas over the command's runs, read through `resident status`) is printed beside.
//
// Installed column: the `polywave` bin as npm installs it (a link named polywave to bin/polywave-fast, the
// compiled client after a build), with its default socket (under a TMPDIR of this run, so no server is left
// behind), not forced and outside CI: the first call finds no server and starts none, the second starts one —
// the rows are "second call on" (two untimed calls, then the server answers). The ratio to Go is printed.
//
// Hook row: `hook pre-tool-use` with a Claude Code payload on stdin (a wave agent's write outside its
// worktree: denied), as the plugin's hooks call it on every tool call — Go has no `hook` command, so
// ours cold against resident only. Last lines: the native client without a server
// (POLYWAVE_RESIDENT=0: it runs node itself), the price of the fallback.
//
//   BENCH_RUNS=N (default 21)   POLYWAVE_GO_TOOLS=path (default ../shared/tools/polywave-tools-go)
//   POLYWAVE_CORPUS=dir (default ../shared/corpus)
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const corpus = process.env.POLYWAVE_CORPUS ?? path.resolve(root, '..', 'shared', 'corpus');
const goBinary = process.env.POLYWAVE_GO_TOOLS ?? path.resolve(root, '..', 'shared', 'tools', 'polywave-tools-go');
const runs = Number(process.env.BENCH_RUNS ?? 21);
const implDir = path.join(corpus, 'polywave-go', 'IMPL');
const largest = path.join(implDir, 'complete', 'IMPL-engine-review-fixes.yaml');
if (!existsSync(largest)) {
  console.log(`bench:cli skipped: corpus manifest ${largest} not found`);
  process.exit(0);
}
const haveGoBinary = existsSync(goBinary);
const haveGo = haveGoBinary;

// scan-stubs input: a fixed set of files with E20 hits (TODO/FIXME, which both tools report the
// same way), given as paths relative to their directory, written once.
const scratch = mkdtempSync(path.join(tmpdir(), 'polywave-bench-cli-'));
const stubFiles = [];
for (let index = 0; index < 8; index += 1) {
  const file = path.join(scratch, `file${index}.ts`);
  const lines = [];
  for (let line = 0; line < 200; line += 1) {
    lines.push(line % 50 === 7 ? `  // TODO: finish step ${line}` : line % 61 === 3 ? `  // FIXME: check ${line}` : `  const value${line} = compute(${line});`);
  }
  writeFileSync(file, `export function work${index}() {\n${lines.join('\n')}\n}\n`);
  stubFiles.push(path.basename(file));
}

const cases = [
  { name: 'validate', args: ['validate', largest] },
  { name: 'check-completion', args: ['check-completion', largest, '--agent', 'L'] },
  { name: 'scan-stubs', args: ['scan-stubs', ...stubFiles], cwd: scratch },
  { name: 'list-impls', args: ['list-impls', '--dir', implDir] },
];
// Not in the overall ratio: the same command over the whole archive (141 manifests in one call),
// as a hook repeats it (parse results kept between calls: list-impls-cache.ts) and cold.
const hookPayload = JSON.stringify({ hook_event_name: 'PreToolUse', tool_name: 'Write', tool_input: { file_path: path.join(scratch, 'outside.ts'), content: 'x' }, agent_type: 'polywave-wave-agent', cwd: scratch });
const hookCase = { name: 'hook pre-tool-use (stdin)', args: ['hook', 'pre-tool-use'], cwd: scratch, input: hookPayload, noGo: true };
// The package as npm installs it (outside attack F8): no src/, and dist/cli/ written a moment after
// dist/bundle/ (tarball order) — bin/polywave.js must still run the bundle (and its parse cache).
const npmLayout = path.join(scratch, 'npm-layout');
mkdirSync(path.join(npmLayout, 'bin'), { recursive: true });
mkdirSync(path.join(npmLayout, 'dist', 'cli'), { recursive: true });
writeFileSync(path.join(npmLayout, 'bin', 'polywave.js'), readFileSync(path.join(root, 'bin', 'polywave.js')));
writeFileSync(path.join(npmLayout, 'package.json'), readFileSync(path.join(root, 'package.json')));
symlinkSync(path.join(root, 'dist', 'bundle'), path.join(npmLayout, 'dist', 'bundle'));
writeFileSync(path.join(npmLayout, 'dist', 'cli', 'main.js'), `export * from ${JSON.stringify(new URL(path.join(root, 'dist', 'cli', 'main.js'), 'file://').href)};\n`);
const extraCases = [
  { name: 'list-impls --include-complete', args: ['list-impls', '--dir', implDir, '--include-complete'] },
  { name: '  same, npm-installed layout', args: ['list-impls', '--dir', implDir, '--include-complete'], bin: path.join(npmLayout, 'bin', 'polywave.js') },
  { name: '  same, cold (no parse cache)', args: ['list-impls', '--dir', implDir, '--include-complete'], env: { POLYWAVE_NO_CACHE: '1' } },
  hookCase,
];

const client = path.join(root, 'dist', 'native', 'polywave-client');
const haveResident = existsSync(client) && process.platform !== 'win32';
const residentSocket = path.join(scratch, 'resident', 'r.sock');
const residentEnv = { POLYWAVE_RESIDENT_SOCKET: residentSocket };
const resident = ({ args, cwd, env, input }) => ({ command: client, args, cwd, input, env: { ...env, ...residentEnv } });
function residentStatus() {
  const result = spawnSync(process.execPath, [path.join(root, 'bin', 'polywave.js'), 'resident', 'status', '--json'], { encoding: 'utf8', env: { ...process.env, ...residentEnv } });
  try {
    return JSON.parse(result.stdout);
  } catch {
    return {};
  }
}
if (haveResident) {
  mkdirSync(path.dirname(residentSocket), { mode: 0o700 });
  spawnSync(process.execPath, [path.join(root, 'bin', 'polywave.js'), 'resident', 'start', '--idle-timeout', '600'], { env: { ...process.env, ...residentEnv }, stdio: 'ignore' });
}

// The installed bin name: `polywave` → bin/polywave-fast (compiled: not the `#!` Node form).
const fastBin = path.join(root, 'bin', 'polywave-fast');
const haveInstalled = haveResident && existsSync(fastBin) && readFileSync(fastBin).subarray(0, 2).toString('latin1') !== '#!';
const installedBin = path.join(scratch, 'bin', 'polywave');
const installedEnv = {
  TMPDIR: path.join(scratch, 'tmp'),
  XDG_RUNTIME_DIR: '',
  POLYWAVE_RESIDENT_SOCKET: '',
  POLYWAVE_RESIDENT: '',
  NODE_OPTIONS: '',
  CI: '',
  GITHUB_ACTIONS: '',
  GITLAB_CI: '',
  BUILDKITE: '',
  JENKINS_URL: '',
  TF_BUILD: '',
};
const installed = ({ args, cwd, env, input }) => ({ command: installedBin, args, cwd, input, env: { ...env, ...installedEnv } });
function installedStatus() {
  const result = spawnSync(process.execPath, [path.join(root, 'bin', 'polywave.js'), 'resident', 'status', '--json'], { encoding: 'utf8', env: { ...process.env, ...installedEnv } });
  try {
    return JSON.parse(result.stdout);
  } catch {
    return {};
  }
}

const ours = ({ args, cwd, env, input, bin }) => ({ command: process.execPath, args: [bin ?? path.join(root, 'bin', 'polywave.js'), ...args], cwd, env, input });
const go = ({ args, cwd }) => ({ command: goBinary, args, cwd });

// The child's CPU time comes from bash's `time` keyword (millisecond resolution; GNU time prints
// centiseconds, too coarse for a 20 ms Go call). Both tools pay the same extra bash start.
const timeFile = path.join(scratch, 'time.txt');
const timedScript = 'TIMEFORMAT="%3U %3S"; { time "$@" >&3 2>&4; } 3>&1 4>&2 2>"$POLYWAVE_BENCH_TIME"';
const timeEnvironment = { ...process.env, POLYWAVE_BENCH_TIME: timeFile };
const bashTime = process.platform !== 'win32' && spawnSync('bash', ['-c', timedScript, 'bash', 'true'], { env: timeEnvironment }).status === 0;

let installedStarted = false;
if (haveInstalled) {
  mkdirSync(path.dirname(installedBin));
  mkdirSync(installedEnv.TMPDIR);
  symlinkSync(fastBin, installedBin);
  // first call: no server, none started (marker); second: starts one; then wait until it answers
  for (let call = 0; call < 2; call += 1) spawnSync(installedBin, cases[0].args, { env: { ...process.env, ...installedEnv }, stdio: 'ignore' });
  for (let waited = 0; waited < 15_000 && !installedStarted; waited += 100) {
    installedStarted = installedStatus().running === true;
    if (!installedStarted) spawnSync('sleep', ['0.1']);
  }
  if (!installedStarted) console.log('bench:cli: the installed `polywave` did not start a server on its second call');
}

function runOnce({ command, args, cwd, env, input }) {
  const [file, fileArgs] = bashTime ? ['bash', ['-c', timedScript, 'bash', command, ...args]] : [command, args];
  const start = performance.now();
  const result = spawnSync(file, fileArgs, { encoding: 'utf8', cwd: cwd ?? root, env: { ...timeEnvironment, ...env }, input: input ?? '', maxBuffer: 64 * 1024 * 1024 });
  const ms = performance.now() - start;
  if (result.error) throw result.error;
  const cpu = bashTime ? readFileSync(timeFile, 'utf8').trim().split(' ').reduce((sum, seconds) => sum + Number(seconds) * 1000, 0) : undefined;
  return { ms, cpu, code: result.status, stdout: result.stdout };
}

function quantile(values, q) {
  const sorted = [...values].sort((left, right) => left - right);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}

function measure(testCase) {
  const haveGo = haveGoBinary && !testCase.noGo;
  const samples = { ours: [], go: [], resident: [], installed: [] };
  const cpu = { ours: [], go: [], resident: [], installed: [] };
  const codes = { ours: new Set(), go: new Set(), resident: new Set(), installed: new Set() };
  let sameOutput = true;
  let sameResident = true;
  // One untimed warm-up each (file cache), then interleaved runs, alternating who goes first.
  const warmOurs = runOnce(ours(testCase));
  const warmGo = haveGo ? runOnce(go(testCase)) : undefined;
  if (warmGo && warmGo.stdout !== warmOurs.stdout) sameOutput = false;
  if (haveResident && runOnce(resident(testCase)).stdout !== warmOurs.stdout) sameResident = false;
  if (installedStarted && runOnce(installed(testCase)).stdout !== warmOurs.stdout) sameResident = false;
  const who = ['ours', ...(haveGo ? ['go'] : []), ...(haveResident ? ['resident'] : []), ...(installedStarted ? ['installed'] : [])];
  const spec = { ours, go, resident, installed };
  const before = haveResident ? residentStatus() : {};
  for (let run = 0; run < runs; run += 1) {
    // rotate who goes first
    const order = who.map((_, index) => who[(index + run) % who.length]);
    for (const name of order) {
      const result = runOnce(spec[name](testCase));
      samples[name].push(result.ms);
      if (result.cpu !== undefined) cpu[name].push(result.cpu);
      codes[name].add(result.code);
    }
  }
  const after = haveResident ? residentStatus() : {};
  const served = (after.requests ?? 0) - (before.requests ?? 0);
  const serverCpu = served > 0 ? (after.cpu_user_us + after.cpu_system_us - before.cpu_user_us - before.cpu_system_us) / 1000 / served : undefined;
  return { samples, cpu, codes, sameOutput, sameResident, serverCpu, served };
}

const floor = [];
for (let run = 0; run < runs; run += 1) floor.push(runOnce({ command: process.execPath, args: ['-e', '0'] }));

const format = (ms) => `${ms.toFixed(1).padStart(7)} ms`;
const geometricMean = (values) => Math.exp(values.reduce((sum, value) => sum + Math.log(value), 0) / values.length);
console.log(`bench:cli — ${runs} interleaved runs per command; node ${process.version}; Go binary: ${haveGo ? goBinary : 'absent (ours only)'}`);
console.log(`floor: node -e 0  median ${format(quantile(floor.map((run) => run.ms), 0.5))}  p95 ${format(quantile(floor.map((run) => run.ms), 0.95))}` + (bashTime ? `  cpu ${format(quantile(floor.map((run) => run.cpu), 0.5))}` : ''));
console.log(
  'command                        wall: ours median      p95 |   Go median      p95 | ratio' + (bashTime ? ' || cpu: ours median   Go median | ratio' : '') + '  exit ours/Go  same stdout',
);
const ratios = [];
const cpuRatios = [];
const floorRatios = [];
const floorCpuRatios = [];
const floorMedian = quantile(floor.map((run) => run.ms), 0.5);
const aboveFloor = [];
const residentRatios = [];
const installedRatios = [];
for (const testCase of [...cases, ...extraCases]) {
  const { samples, cpu, codes, sameOutput, sameResident, serverCpu, served } = measure(testCase);
  const haveGo = haveGoBinary && !testCase.noGo;
  const oursMedian = quantile(samples.ours, 0.5);
  const columns = [testCase.name.padEnd(30), '     ', format(oursMedian), format(quantile(samples.ours, 0.95))];
  if (haveGo) {
    const goMedian = quantile(samples.go, 0.5);
    const ratio = oursMedian / goMedian;
    if (cases.includes(testCase)) {
      ratios.push(ratio);
      floorRatios.push(floorMedian / goMedian);
    }
    columns.push('|', format(goMedian), format(quantile(samples.go, 0.95)), '|', `${ratio.toFixed(2)}×`.padStart(6));
    if (bashTime) {
      const cpuRatio = quantile(cpu.ours, 0.5) / quantile(cpu.go, 0.5);
      if (cases.includes(testCase)) {
        cpuRatios.push(cpuRatio);
        floorCpuRatios.push(quantile(floor.map((run) => run.cpu), 0.5) / quantile(cpu.go, 0.5));
      }
      columns.push('||     ', format(quantile(cpu.ours, 0.5)), ' ', format(quantile(cpu.go, 0.5)), '|', `${cpuRatio.toFixed(2)}×`.padStart(6));
    }
    columns.push(`  ${[...codes.ours].join(',')}/${[...codes.go].join(',')}`.padEnd(13), sameOutput ? 'yes' : 'no');
  } else if (bashTime) {
    columns.push('|| cpu', format(quantile(cpu.ours, 0.5)));
  }
  console.log(columns.join(' '));
  if (haveResident) {
    const residentMedian = quantile(samples.resident, 0.5);
    const line = ['  resident (native client)'.padEnd(30), '     ', format(residentMedian), format(quantile(samples.resident, 0.95))];
    if (haveGo) {
      const ratio = residentMedian / quantile(samples.go, 0.5);
      if (cases.includes(testCase)) residentRatios.push(ratio);
      line.push('| wall / Go', `${ratio.toFixed(2)}×`.padStart(6));
    }
    line.push(`| / ours-cold ${(residentMedian / oursMedian).toFixed(2)}×`);
    if (bashTime) line.push(`|| client cpu ${format(quantile(cpu.resident, 0.5))}`);
    line.push(`| server cpu/call ${serverCpu === undefined ? '   n/a' : format(serverCpu)} (${served} served)`, `  exit ${[...codes.resident].join(',')}`, `same stdout as ours ${sameResident ? 'yes' : 'no'}`);
    console.log(line.join(' '));
  }
  if (installedStarted) {
    const installedMedian = quantile(samples.installed, 0.5);
    const line = ['  installed `polywave` (bin)'.padEnd(30), '     ', format(installedMedian), format(quantile(samples.installed, 0.95))];
    if (haveGo) {
      const ratio = installedMedian / quantile(samples.go, 0.5);
      if (cases.includes(testCase)) installedRatios.push(ratio);
      line.push('| wall / Go', `${ratio.toFixed(2)}×`.padStart(6));
    }
    line.push(`| / ours-cold ${(installedMedian / oursMedian).toFixed(2)}×`);
    if (bashTime) line.push(`|| client cpu ${format(quantile(cpu.installed, 0.5))}`);
    line.push(`  exit ${[...codes.installed].join(',')}`);
    console.log(line.join(' '));
  }
  if (cases.includes(testCase)) aboveFloor.push(`${testCase.name} ${(oursMedian - floorMedian).toFixed(0)} ms`);
}
// What is ours to cut: the median above an empty `node` start (which no JavaScript of ours can go below).
console.log(`ours above the floor (median wall − node -e 0): ${aboveFloor.join(', ')}`);
if (haveGo) {
  console.log(`overall (geometric mean of the four ratios): wall ${geometricMean(ratios).toFixed(2)}×` + (bashTime ? `, cpu ${geometricMean(cpuRatios).toFixed(2)}×` : '') + ' (target <= 2)');
  console.log(
    `the floor alone (node -e 0) against Go's median, same four commands: wall ${geometricMean(floorRatios).toFixed(2)}×` +
      (bashTime ? `, cpu ${geometricMean(floorCpuRatios).toFixed(2)}×` : '') +
      ' — a bound no change to our code passes',
  );
}
if (haveResident) {
  console.log(
    `resident (native client → warm server), wall: ` +
      (haveGo ? `geometric mean of the four ratios to Go ${geometricMean(residentRatios).toFixed(2)}× (target <= 2); ` : '') +
      'the server CPU is not in the client CPU column (see server cpu/call)',
  );
  spawnSync(process.execPath, [path.join(root, 'bin', 'polywave.js'), 'resident', 'stop'], { env: { ...process.env, ...residentEnv }, stdio: 'ignore' });
  // The native client when no server can answer (POLYWAVE_RESIDENT=0: it execs node itself, as
  // after a refused socket directory): what the fallback adds to a plain node call.
  for (const testCase of [cases[0], hookCase]) {
    const fallback = [];
    const plain = [];
    for (let run = 0; run < runs; run += 1) {
      const pair = [() => fallback.push(runOnce(resident({ ...testCase, env: { ...testCase.env, POLYWAVE_RESIDENT: '0' } })).ms), () => plain.push(runOnce(ours(testCase)).ms)];
      if (run % 2) pair.reverse();
      pair.forEach((step) => step());
    }
    const fallbackMedian = quantile(fallback, 0.5);
    const plainMedian = quantile(plain, 0.5);
    console.log(`no server (native client → node): ${testCase.name.padEnd(26)} median ${format(fallbackMedian)} vs node ${format(plainMedian)} (${(fallbackMedian / plainMedian).toFixed(2)}×)`);
  }
}
if (installedStarted) {
  if (haveGoBinary) console.log(`installed \`polywave\` bin (second call on), wall: geometric mean of the four ratios to Go ${geometricMean(installedRatios).toFixed(2)}× (target <= 2)`);
  spawnSync(process.execPath, [path.join(root, 'bin', 'polywave.js'), 'resident', 'stop'], { env: { ...process.env, ...installedEnv }, stdio: 'ignore' });
}
rmSync(scratch, { recursive: true, force: true });
