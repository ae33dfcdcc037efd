// bench/program-kill-loop.mjs — one kill-and-resume point of the demo PROGRAM "shop" (issue 12,
// test/program-execute.test.ts) run N times, each on a new repository, to count how often the
// resume fails. Not part of CI (each run is a whole PROGRAM, ~20–60 s).
//
// A run: `program-execute --auto` SIGKILLed (with everything it started) at each chosen point in
// turn, then re-run (up to 3 times) until exit 0; pass = exit 0 and every agent merge and IMPL-branch
// merge exactly once on main, a clean checkout (one worktree, no unmerged branch). A failed run's
// repository and every attempt's stderr are kept (printed path); a passing run's are deleted.
//
//   node bench/program-kill-loop.mjs                   # 10 runs of "tier 2: the wave agent running"
//   KILL_RUNS=20 KILL_POINTS=scout2,wave2 node bench/program-kill-loop.mjs
//   KILL_WAVE2_DELAY_MS=1500 (default, as the test)   KILL_DIR=/tmp/x (default: a new temp dir)
//
// Points (comma-separated, in run order): impl-wave2 = tier 1, once catalog's wave 2 is prepared (its wave 1 merged
// into the IMPL branch, "wave 2: launching" on stderr); post-merge-gate = 50 ms after a merge into catalog's IMPL
// branch (its post-merge gate in a throwaway checkout); scout2 = 300 ms after "tier 2: scouting checkout";
// scout2-commit = inside the tier-2 Scout's commit (its IMPL doc staged, not committed);
// wave2 = KILL_WAVE2_DELAY_MS after "tier 2: checkout running on"; wave2-sweep = like wave2 but the
// delay moves over the runs from 0 to 2 × KILL_WAVE2_DELAY_MS (to land in each step of the wave's
// start-up at least once); wave2-add = while `git worktree add` of agent K's worktree runs (the
// cause of this point's failures, see docs/performance.md); wave2-add-branch = the same once the
// add has pointed HEAD at the branch (the state that gave the I1 stop). Needs `npm run build` (dist/ and the bundle).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const binPath = path.join(root, 'bin', 'polywave.js');
const { runProgramDemo } = await import(path.join(root, 'dist/demo/run-program-demo.js'));

const runs = Math.max(1, Math.min(200, Number(process.env.KILL_RUNS ?? 10)));
const wave2Delay = Number(process.env.KILL_WAVE2_DELAY_MS ?? 1500);
const pointNames = (process.env.KILL_POINTS ?? 'wave2').split(',').map((name) => name.trim()).filter(Boolean);
const gitEnv = { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: os.devNull };
const env = { ...process.env, NO_COLOR: '1', ...gitEnv };
const programRelative = 'docs/PROGRAM/PROGRAM-shop.yaml';
const agentMerges = ['Merge polywave/pricing/wave1-agent-P', 'Merge polywave/catalog/wave1-agent-C', 'Merge polywave/catalog/wave2-agent-D', 'Merge polywave/checkout/wave1-agent-K'];
const implMerges = ['Merge program tier 1 impl pricing', 'Merge program tier 1 impl catalog', 'Merge program tier 2 impl checkout'];

/** ms since the first stderr line matching `pattern` (-1: not yet). */
const since = (lines, pattern) => {
  const line = lines.find((candidate) => pattern.test(candidate.text));
  return line ? performance.now() - line.at : -1;
};
/** Inside the commit of the tier-2 Scout: its IMPL doc REVIEWED on disk and in the index, the commit not yet on main (never after it was seen there). */
function scoutCommitInFlight(repo) {
  let committed = false;
  return () => {
    if (committed) return false;
    try {
      if (!readFileSync(path.join(repo, 'docs/IMPL/IMPL-checkout.yaml'), 'utf8').includes('state: REVIEWED')) return false;
      if (!readFileSync(path.join(repo, '.git/index')).includes('docs/IMPL/IMPL-checkout.yaml')) return false;
      committed = git(repo, ['log', '--format=%s', '-n', '20', 'main']).includes('chore: scout IMPL for checkout');
      return !committed;
    } catch {
      return false;
    }
  };
}
const points = {
  'scout2-commit': (_run, repo) => scoutCommitInFlight(repo),
  scout2: () => (lines) => since(lines, /program: tier 2: scouting checkout/) >= 300,
  wave2: () => (lines) => since(lines, /program: tier 2: checkout running on/) >= wave2Delay,
  // Tier 1, between two waves of one IMPL: catalog's wave 1 merged into its IMPL branch and wave 2
  // prepared, its agent launching. The re-run asked for --rerun of wave 1 (outside attack X7 #1).
  'impl-wave2': () => (lines) => since(lines, /wave 2: launching/) >= 0,
  // 50 ms after a wave merged into catalog's IMPL branch: its post-merge gate running in a throwaway
  // checkout, which the kill left registered and on disk for good (outside attack X7 #6).
  'post-merge-gate': () => (lines) => since(lines, /with --no-ff into polywave\/program\/shop\/tier1-impl-catalog/) >= 50,
  // Inside `git worktree add` of agent K's worktree (tier 2): git's lock file of the new
  // registration exists from the add's first write to its last (~50–300 ms).
  'wave2-add': (_run, repo) => () => {
    try {
      return readdirSync(path.join(repo, '.git', 'worktrees')).some((name) => name.includes('agent-K') && existsSync(path.join(repo, '.git', 'worktrees', name, 'locked')));
    } catch {
      return false;
    }
  },
  // The same, once the add has pointed HEAD at the agent branch (before or during its checkout).
  'wave2-add-branch': (_run, repo) => () => {
    try {
      return readdirSync(path.join(repo, '.git', 'worktrees')).some((name) => {
        const admin = path.join(repo, '.git', 'worktrees', name);
        return name.includes('agent-K') && existsSync(path.join(admin, 'locked')) && readFileSync(path.join(admin, 'HEAD'), 'utf8').startsWith('ref:');
      });
    } catch {
      return false;
    }
  },
  'wave2-sweep': (run) => {
    const delay = runs === 1 ? wave2Delay : Math.round((2 * wave2Delay * (run - 1)) / (runs - 1));
    return (lines) => since(lines, /program: tier 2: checkout running on/) >= delay;
  },
};
for (const name of pointNames) if (!points[name]) throw new Error(`unknown kill point ${name} (known: ${Object.keys(points).join(', ')})`);

function git(repo, args) {
  return execFileSync('git', args, { cwd: repo, encoding: 'utf8', env, maxBuffer: 64 * 1024 * 1024 });
}

/** One program-execute run, SIGKILLed (process group) when `trigger(lines)` holds. */
function attempt(repo, script, trigger) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const args = ['program-execute', programRelative, '--auto', '--model', `script:${script}`, '--no-critic'];
    const child = spawn(process.execPath, [binPath, ...args], { cwd: repo, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const lines = [];
    let stderr = '';
    let partial = '';
    let killed = false;
    child.stdout.resume();
    child.stderr.setEncoding('utf8').on('data', (chunk) => {
      stderr += chunk;
      const parts = (partial + chunk).split('\n');
      partial = parts.pop() ?? '';
      for (const text of parts) lines.push({ at: performance.now(), text });
    });
    const kill = () => {
      if (killed) return;
      killed = true;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    };
    const poll = trigger ? setInterval(() => trigger(lines) && kill(), 5) : undefined;
    const timer = setTimeout(kill, 300_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearInterval(poll);
      clearTimeout(timer);
      resolve({ killed, code, stderr, ms: Math.round(performance.now() - started) });
    });
  });
}

function check(repo) {
  const problems = [];
  const subjects = git(repo, ['log', '--merges', '--format=%s', 'HEAD']).split('\n').filter(Boolean);
  for (const prefix of [...agentMerges, ...implMerges]) {
    const count = subjects.filter((subject) => subject.startsWith(prefix)).length;
    if (count !== 1) problems.push(`${prefix}: ${count} merges`);
  }
  if (git(repo, ['status', '--porcelain', '--untracked-files=all']).trim() !== '') problems.push('main checkout not clean');
  const worktrees = git(repo, ['worktree', 'list', '--porcelain']).split('\n').filter((line) => line.startsWith('worktree ')).length;
  if (worktrees !== 1) problems.push(`${worktrees} worktrees`);
  if (git(repo, ['branch', '--no-merged', 'HEAD']).trim() !== '') problems.push('unmerged branches left');
  if (!existsSync(path.join(repo, 'docs/PROGRAM/complete/PROGRAM-shop.yaml'))) problems.push('PROGRAM not archived');
  return problems;
}

const base = process.env.KILL_DIR ? path.resolve(process.env.KILL_DIR) : mkdtempSync(path.join(os.tmpdir(), 'polywave-kill-loop-'));
mkdirSync(base, { recursive: true });
console.log(`kill-and-resume loop: ${runs} run(s), points ${pointNames.join(' → ')} (wave2 delay ${wave2Delay} ms), load ${os.loadavg()[0].toFixed(1)}, in ${base}`);
let passed = 0;
const failed = [];
for (let run = 1; run <= runs; run += 1) {
  const dir = path.join(base, `run-${run}`);
  const demo = await runProgramDemo({ env: { ...process.env, ...gitEnv }, dir, setupOnly: true });
  const log = [];
  for (const name of pointNames) {
    const result = await attempt(demo.repo, demo.script, points[name](run, demo.repo));
    log.push({ step: name, ...result });
  }
  let final;
  for (let rerun = 1; rerun <= 3; rerun += 1) {
    final = await attempt(demo.repo, demo.script, undefined);
    log.push({ step: `re-run ${rerun}`, ...final });
    if (final.code === 0) break;
  }
  const problems = final.code === 0 ? check(demo.repo) : [`re-runs ended exit ${final.code}`];
  const summary = log.map((entry) => `${entry.step}: ${entry.killed ? 'killed' : `exit ${entry.code}`} ${(entry.ms / 1000).toFixed(1)} s`).join('; ');
  if (problems.length === 0) {
    passed += 1;
    console.log(`run ${run}: pass — ${summary}`);
    rmSync(dir, { recursive: true, force: true });
  } else {
    failed.push(dir);
    log.forEach((entry, index) => writeFileSync(path.join(dir, `attempt-${index + 1}-${entry.step.replace(/\W+/g, '-')}.stderr.txt`), entry.stderr));
    writeFileSync(path.join(dir, 'graph.txt'), git(demo.repo, ['log', '--graph', '--branches', '--format=%h %s']));
    console.log(`run ${run}: FAIL (${problems.join('; ')}) — ${summary}\n  kept: ${dir}\n  last stderr: ${final.stderr.trim().split('\n').slice(-4).join('\n    ')}`);
  }
}
console.log(`${passed} of ${runs} passed (load ${os.loadavg()[0].toFixed(1)})${failed.length > 0 ? `; failed runs kept in ${failed.join(', ')}` : ''}`);
if (failed.length === 0 && readdirSync(base).length === 0 && !process.env.KILL_DIR) rmSync(base, { recursive: true, force: true });
process.exit(failed.length === 0 ? 0 : 1);
