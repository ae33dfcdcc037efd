/**
 * The PROGRAM tier loop (E28–E34, P1–P5) from the outside: the real CLI (`program-execute`,
 * `program-replan`, `update-program-state`, `tier-gate`, `finalize-tier`) as child processes on
 * real temporary git repositories (the demo PROGRAM "shop"), scripted agents, real worktrees and
 * merges; assertions on git and the file system afterwards.
 *
 * Time: one uninterrupted run (~50 s), one kill-and-resume repo (10 SIGKILLs with POLYWAVE_TEST_PROGRAM_KILL_POINTS=all, ~100 s), one
 * failing-gate + re-plan repo (tier 1 crafted as done: ~15 s), refusals (seconds). POLYWAVE_TEST_PROGRAM_KILL_REPOS=<n>
 * repeats the kill-and-resume sequence on n repositories (default 1).
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { programDemoImpl, programDemoManifest, programDemoScript } from '../src/demo/program-project.js';
import { runProgramDemo } from '../src/demo/run-program-demo.js';
import { binPath, runCli, type CliResult } from './support/cli.js';
import { makeTempDir } from './support/temp.js';

const programRelative = 'docs/PROGRAM/PROGRAM-shop.yaml';
const gitEnv = { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: os.devNull };
const killRepos = Number(process.env.POLYWAVE_TEST_PROGRAM_KILL_REPOS ?? 1);

interface Demo {
  repo: string;
  script: string;
  program: string;
}

const tempRoot = makeTempDir('polywave-program-execute-');
let demos = 0;

async function setupDemo(): Promise<Demo> {
  demos += 1;
  const dir = path.join(tempRoot, `demo-${demos}`);
  const demo = await runProgramDemo({ env: { ...process.env, ...gitEnv }, dir, setupOnly: true });
  return { repo: demo.repo, script: demo.script, program: demo.program_path };
}

function git(repo: string, args: string[]): string {
  return execFileSync('git', args, { cwd: repo, encoding: 'utf8', env: { ...process.env, ...gitEnv }, maxBuffer: 64 * 1024 * 1024 });
}

function commitAll(repo: string, message: string): void {
  git(repo, ['add', '-A']);
  execFileSync('git', ['commit', '-q', '--no-verify', '-m', message], { cwd: repo, env: { ...process.env, ...gitEnv, POLYWAVE_ALLOW_MAIN_COMMIT: '1' } });
}

function cli(demo: Demo, args: string[], timeoutMs = 240_000): Promise<CliResult> {
  return runCli(args, { cwd: demo.repo, env: gitEnv, timeoutMs });
}

function executeArgs(demo: Demo, extra: string[] = ['--auto']): string[] {
  return ['program-execute', programRelative, ...extra, '--model', `script:${demo.script}`, '--no-critic'];
}

/** The result JSON `program-execute` prints on stdout (non-`--json` mode). */
function resultOf(run: CliResult): { state: string; success: boolean; stopped?: string; tiers: Array<{ tier: number; status: string; detail: string }> } {
  return JSON.parse(run.stdout) as ReturnType<typeof resultOf>;
}

/** Subjects of the merge commits reachable from `ref`. */
function mergeSubjects(repo: string, ref = 'HEAD'): string[] {
  return git(repo, ['log', '--merges', '--format=%s', ref]).split('\n').filter(Boolean);
}

/** How many merge commits of `ref` start with each prefix. */
function countMerges(repo: string, prefixes: string[], ref = 'HEAD'): Record<string, number> {
  const subjects = mergeSubjects(repo, ref);
  return Object.fromEntries(prefixes.map((prefix) => [prefix, subjects.filter((subject) => subject.startsWith(prefix)).length]));
}

const agentMerges = ['Merge polywave/pricing/wave1-agent-P', 'Merge polywave/catalog/wave1-agent-C', 'Merge polywave/catalog/wave2-agent-D', 'Merge polywave/checkout/wave1-agent-K'];
const implMerges = ['Merge program tier 1 impl pricing', 'Merge program tier 1 impl catalog', 'Merge program tier 2 impl checkout'];
const once = (prefixes: string[]) => Object.fromEntries(prefixes.map((prefix) => [prefix, 1]));

/** `git ls-tree -r HEAD` without the volatile parts: manifests (commits, times) keep only their paths. */
function stableTree(repo: string): string[] {
  return git(repo, ['ls-tree', '-r', 'HEAD'])
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [meta = '', file = ''] = line.split('\t');
      return file.startsWith('docs/') ? file : `${meta.split(' ')[2]} ${file}`;
    })
    .sort();
}

/** Everything on disk outside .git (relative path → bytes), for "nothing changed". */
function snapshot(repo: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (relative: string) => {
    for (const entry of readdirSync(path.join(repo, relative), { withFileTypes: true })) {
      const child = relative === '' ? entry.name : `${relative}/${entry.name}`;
      if (child === '.git') continue;
      if (entry.isDirectory()) walk(child);
      else files.set(child, readFileSync(path.join(repo, child), 'latin1'));
    }
  };
  walk('');
  return files;
}

function expectClean(repo: string): void {
  expect(git(repo, ['status', '--porcelain', '--untracked-files=all']).trim()).toBe('');
  expect(git(repo, ['worktree', 'list', '--porcelain']).split('\n').filter((line) => line.startsWith('worktree ')).length).toBe(1);
  expect(git(repo, ['branch', '--no-merged', 'HEAD']).trim()).toBe('');
  const worktreeDir = path.join(repo, '.claude', 'worktrees', 'polywave');
  // Nothing stays behind, not even the empty directories of the tiers' IMPL worktrees.
  if (existsSync(worktreeDir)) expect(readdirSync(worktreeDir, { recursive: true })).toEqual([]);
}

function nodeTest(repo: string): { passed: boolean; output: string } {
  try {
    return { passed: true, output: execFileSync(process.execPath, ['--test'], { cwd: repo, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }) };
  } catch (error) {
    return { passed: false, output: String((error as { stdout?: string }).stdout ?? error) };
  }
}

// ---------------------------------------------------------------------------------------------
// A CLI run that can be SIGKILLed at a point seen from outside (its stderr, or refs moving).

interface Observed {
  /** The repository the run works in. */
  repo: string;
  /** stderr lines with the time they arrived. */
  lines: Array<{ at: number; text: string }>;
  /** ref → subjects of the commits it pointed at, in the order seen. */
  subjects: Map<string, string[]>;
}

/** ms since the first stderr line matching `pattern` arrived (-1: not yet). */
function since(observed: Observed, pattern: RegExp): number {
  const line = observed.lines.find((candidate) => pattern.test(candidate.text));
  return line ? performance.now() - line.at : -1;
}

const watchedRefs = ['main', 'polywave/program/shop/tier1-impl-pricing', 'polywave/program/shop/tier1-impl-catalog', 'polywave/program/shop/tier2-impl-checkout'];

function runKillable(demo: Demo, args: string[], trigger: ((observed: Observed) => boolean) | undefined, timeoutMs = 240_000, signal: NodeJS.Signals = 'SIGKILL'): Promise<{ killed: boolean; code: number | null; stdout: string; stderr: string; ms: number; observed: Observed }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, [binPath, ...args], { cwd: demo.repo, env: { ...process.env, NO_COLOR: '1', ...gitEnv }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const observed: Observed = { repo: demo.repo, lines: [], subjects: new Map() };
    let stdout = '';
    let stderr = '';
    let partial = '';
    let killed = false;
    const tips = new Map<string, string>();
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      const parts = (partial + chunk).split('\n');
      partial = parts.pop() ?? '';
      for (const text of parts) observed.lines.push({ at: performance.now(), text });
    });
    const kill = () => {
      if (killed) return;
      killed = true;
      try {
        process.kill(-child.pid!, signal); // the CLI and everything it started (agents, gates, git); SIGINT: a terminal's Ctrl-C
      } catch {
        /* already gone */
      }
    };
    const poll = setInterval(() => {
      if (!trigger || killed) return;
      for (const ref of watchedRefs) {
        let tip: string;
        try {
          tip = readFileSync(path.join(demo.repo, '.git', 'refs', 'heads', ref), 'utf8').trim();
        } catch {
          continue;
        }
        if (tips.get(ref) === tip) continue;
        tips.set(ref, tip);
        try {
          const subject = git(demo.repo, ['log', '-1', '--format=%s', tip]).trim();
          observed.subjects.set(ref, [...(observed.subjects.get(ref) ?? []), subject]);
        } catch {
          /* a ref caught mid-write */
        }
      }
      if (trigger(observed)) kill();
    }, 5);
    const timer = setTimeout(kill, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearInterval(poll);
      clearTimeout(timer);
      resolve({ killed, code, stdout, stderr, ms: Math.round(performance.now() - started), observed });
    });
  });
}

const subjectsOf = (observed: Observed, ref: string) => observed.subjects.get(ref) ?? [];

/** Whether a `git worktree add` of a worktree whose name contains `name` is under way (its registration locked). */
function addInFlight(repo: string, name: string): boolean {
  try {
    return readdirSync(path.join(repo, '.git', 'worktrees')).some((id) => id.includes(name) && existsSync(path.join(repo, '.git', 'worktrees', id, 'locked')));
  } catch {
    return false;
  }
}

/** Whether the tier-2 IMPL doc is REVIEWED on disk and in the index (the Scout's commit under way, or done). */
function scoutDocStaged(repo: string): boolean {
  try {
    return readFileSync(path.join(repo, 'docs/IMPL/IMPL-checkout.yaml'), 'utf8').includes('state: REVIEWED') && readFileSync(path.join(repo, '.git', 'index')).includes('docs/IMPL/IMPL-checkout.yaml');
  } catch {
    return false;
  }
}

/** Whether `file` exists and is empty. */
function emptyFile(file: string): boolean {
  try {
    return statSync(file).size === 0;
  } catch {
    return false;
  }
}

/** The kill points, in the order a run reaches them. */
// optional: a window of a few ms that a loaded machine may let pass (then the run goes on to COMPLETE, and the later
// points of the same run are not reached either): not counted in the kills a run must make.
const killPoints: Array<{ name: string; trigger: (observed: Observed) => boolean; optional?: boolean }> = [
  { name: 'tier 1: both Scouts running (parallel scouting)', trigger: (observed) => since(observed, /program: tier 1: scouting pricing/) >= 0 && since(observed, /program: tier 1: scouting catalog/) >= 800 },
  // A Scout's output placeholder made (empty, untracked) and not written yet: every re-run stopped BLOCKED on it as
  // "not a usable manifest" (outside attack P12-05). Optional: the demo's scripted Scout writes it within milliseconds.
  { name: "tier 1: a Scout's empty output placeholder on disk", trigger: (observed) => emptyFile(path.join(observed.repo, 'docs/IMPL/IMPL-pricing.yaml')) || emptyFile(path.join(observed.repo, 'docs/IMPL/IMPL-catalog.yaml')), optional: true },
  {
    name: 'tier 1: the first agent merged into an IMPL branch while the other IMPL is mid-wave',
    trigger: (observed) => [...subjectsOf(observed, watchedRefs[1]!), ...subjectsOf(observed, watchedRefs[2]!)].some((subject) => subject.startsWith('Merge polywave/')),
  },
  // Between two waves of one IMPL: catalog's wave 1 merged and verified on its IMPL branch, wave 2 prepared (its
  // base_commit recorded, state WAVE_EXECUTING) and launching. Every re-run stopped "wave 1 … already merged and
  // verified … pass --rerun" and left the PROGRAM BLOCKED (outside attack X7 #1). Optional: the previous point's
  // kill may land after D's launch on a loaded machine, and the resumed run then never prints the line again.
  { name: "tier 1: catalog's wave 2 launching (wave 1 merged into its IMPL branch)", trigger: (observed) => since(observed, /wave 2: launching/) >= 0, optional: true },
  { name: 'finalize-tier 1: between the IMPL-branch merges', trigger: (observed) => subjectsOf(observed, 'main').some((subject) => subject.startsWith('Merge program tier 1 impl')) },
  { name: 'finalize-tier 1: after the tier gate (closing the IMPLs)', trigger: (observed) => subjectsOf(observed, 'main').some((subject) => subject.includes('close-impl')) },
  { name: 'after finalize-tier 1 (freezing, advancing to tier 2)', trigger: (observed) => subjectsOf(observed, 'main').some((subject) => subject.includes('finalize tier 1')) },
  { name: 'tier 2: Scout running', trigger: (observed) => since(observed, /program: tier 2: scouting checkout/) >= 300 },
  // Between `git add` and `git commit` of the Scout's IMPL doc: the re-run skipped the Scout (doc REVIEWED on disk) and
  // left the doc staged, and finalize-tier's merge into main refused to run over it.
  { name: "tier 2: inside the Scout's commit", trigger: (observed) => !subjectsOf(observed, 'main').some((subject) => subject.startsWith('chore: scout IMPL for checkout')) && scoutDocStaged(observed.repo), optional: true },
  // git locks a new registration ("initializing") from the add's first write to its last: a kill there
  // left no worktree (or one breaking `git worktree list`), which the re-run reused or choked on.
  { name: "tier 2: inside the `git worktree add` of the agent's worktree", trigger: (observed) => addInFlight(observed.repo, 'agent-K'), optional: true },
  { name: 'tier 2: the wave agent running', trigger: (observed) => since(observed, /program: tier 2: checkout running on/) >= 1500 },
];

/**
 * The kill points one run goes through, in order: all of them with POLYWAVE_TEST_PROGRAM_KILL_POINTS=all, else N
 * (default 1) consecutive ones (wrapping) starting at POLYWAVE_TEST_PROGRAM_KILL_OFFSET, by default N × the day of the
 * year — consecutive days take the next points, so every point is covered over a week of CI runs, and each run stays
 * within the suite's 30-minute budget (the suite is CPU-bound; each kill point costs a restart). The test's name
 * says which points it used, so a failure is re-run with the same offset.
 */
function chosenKillPoints(): { points: typeof killPoints; label: string } {
  const wanted = process.env.POLYWAVE_TEST_PROGRAM_KILL_POINTS ?? '1';
  if (wanted === 'all' || Number(wanted) >= killPoints.length) return { points: killPoints, label: `all ${killPoints.length} points` };
  const count = Math.max(1, Number(wanted) || 1);
  const now = new Date();
  const dayOfYear = Math.floor((now.getTime() - Date.UTC(now.getUTCFullYear(), 0, 1)) / 86_400_000);
  const offset = Number(process.env.POLYWAVE_TEST_PROGRAM_KILL_OFFSET ?? dayOfYear * count) % killPoints.length;
  const indexes = Array.from({ length: count }, (_, index) => (offset + index) % killPoints.length).sort((a, b) => a - b);
  return { points: indexes.map((index) => killPoints[index]!), label: `${count} of ${killPoints.length} points (POLYWAVE_TEST_PROGRAM_KILL_OFFSET=${offset})` };
}
const kills = chosenKillPoints();

// ---------------------------------------------------------------------------------------------

describe('program-execute: the demo PROGRAM end to end (one run, several assertions)', () => {
  let demo: Demo;
  let run: CliResult;
  let events: Array<{ at: number; event: Record<string, unknown> }>;

  beforeAll(async () => {
    demo = await setupDemo();
    const started = performance.now();
    events = [];
    // --json: NDJSON events on stdout, timed as they arrive.
    run = await new Promise<CliResult>((resolve, reject) => {
      const child = spawn(process.execPath, [binPath, ...executeArgs(demo), '--json'], { cwd: demo.repo, env: { ...process.env, NO_COLOR: '1', ...gitEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      let partial = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        stdout += chunk;
        const parts = (partial + chunk).split('\n');
        partial = parts.pop() ?? '';
        for (const line of parts) if (line.trim()) events.push({ at: performance.now(), event: JSON.parse(line) as Record<string, unknown> });
      });
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      const timer = setTimeout(() => child.kill('SIGKILL'), 240_000);
      child.on('error', reject);
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr, durationMs: performance.now() - started });
      });
    });
    console.log(`program-execute (uninterrupted): exit ${run.code} in ${(run.durationMs / 1000).toFixed(1)} s`);
  }, 300_000);

  it('reaches COMPLETE (exit 0) and archives the PROGRAM with state COMPLETE', () => {
    expect(run.code, run.stderr.slice(-3000)).toBe(0);
    const final = events.at(-1)!.event as { type: string; result: { state: string; success: boolean } };
    expect(final.type).toBe('program-result');
    expect(final.result).toMatchObject({ state: 'COMPLETE', success: true });
    expect(existsSync(path.join(demo.repo, programRelative))).toBe(false);
    const archived = readFileSync(path.join(demo.repo, 'docs/PROGRAM/complete/PROGRAM-shop.yaml'), 'utf8');
    expect(archived).toMatch(/^state: COMPLETE$/m);
    expect(git(demo.repo, ['ls-files', 'docs/PROGRAM']).trim()).toBe('docs/PROGRAM/complete/PROGRAM-shop.yaml');
  });

  // E40 for the tier loop, on this run's own --json stream (the bus events, as recorded): moved
  // here from e40-events.test.ts so CI runs the demo PROGRAM once for both.
  it('E40: scout_launch/complete per Scout, impl_complete per IMPL, tier_gate_passed per tier, tier_advanced 1 → 2, every event labelled with the PROGRAM, one run id and seq 1..N', () => {
    interface Activity { type: string; activity_type: string; slug?: string; wave?: number; agent?: string; program?: string; tier?: number; to_tier?: number; details?: string; gate_scope?: string }
    const stream = events.map((item) => item.event).filter((event) => event.type !== 'program-result');
    // Every bus event carries the run id and its sequence number (the store's), in emission order.
    expect(new Set(stream.map((event) => event.run_id)).size).toBe(1);
    expect(stream[0]!.run_id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(stream.map((event) => event.seq)).toEqual(stream.map((_, index) => index + 1));
    expect(stream.every((event) => event.program === 'shop')).toBe(true);
    const activities = stream.filter((event) => event.e40 === true && event.type === 'activity') as unknown as Activity[];
    const key = (event: Activity) => [event.activity_type, event.slug ?? null, event.wave ?? null, event.agent ?? null, event.program ?? null, event.tier ?? null].join('|');
    const count = (type: string) => activities.filter((event) => event.activity_type === type).length;
    const slugs = [...new Set(activities.filter((event) => event.activity_type === 'impl_complete').map((event) => event.slug))].sort();
    expect(slugs).toEqual(['catalog', 'checkout', 'pricing']);
    expect(count('impl_complete')).toBe(3);
    expect(count('scout_launch')).toBe(3);
    expect(count('scout_complete')).toBe(3);
    expect(activities.filter((event) => event.activity_type === 'scout_complete').every((event) => /^valid after 1 attempt/.test(event.details ?? ''))).toBe(true);
    expect(activities.filter((event) => event.activity_type.startsWith('tier_')).map(key)).toEqual(['tier_gate_passed||||shop|1', 'tier_advanced||||shop|1', 'tier_gate_passed||||shop|2']);
    expect(activities.find((event) => event.activity_type === 'tier_advanced')).toMatchObject({ tier: 1, to_tier: 2 });
    expect(activities.filter((event) => event.activity_type === 'gate_executed' && event.gate_scope === 'tier').map((event) => event.tier)).toEqual([1, 2]);
    for (const slug of slugs) {
      const starts = activities.filter((event) => event.slug === slug && event.activity_type === 'wave_start').length;
      expect(starts).toBeGreaterThan(0);
      expect(activities.filter((event) => event.slug === slug && event.activity_type === 'wave_merge').length).toBe(starts);
      expect(activities.filter((event) => event.slug === slug && event.activity_type === 'wave_failed')).toEqual([]);
    }
    expect(count('gate_failed') + count('tier_gate_failed')).toBe(0);
  });

  it('merged every agent into its IMPL branch and every IMPL branch into main, each exactly once', () => {
    expect(countMerges(demo.repo, [...agentMerges, ...implMerges])).toEqual(once([...agentMerges, ...implMerges]));
    // The agent merges are on the IMPL branch side (second parent of the IMPL merge), not on main's first-parent line.
    const firstParent = git(demo.repo, ['log', '--first-parent', '--format=%s', 'HEAD']);
    for (const prefix of agentMerges) expect(firstParent).not.toContain(prefix);
    for (const [slug, prefix] of [['pricing', agentMerges[0]!], ['catalog', agentMerges[1]!], ['catalog', agentMerges[2]!], ['checkout', agentMerges[3]!]] as const) {
      const implMerge = git(demo.repo, ['log', '--merges', '--format=%H %s', 'HEAD']).split('\n').find((line) => line.includes(`impl ${slug}:`))!.split(' ')[0]!;
      const agentMerge = git(demo.repo, ['log', '--merges', '--format=%H %s', 'HEAD']).split('\n').find((line) => line.includes(prefix))!.split(' ')[0]!;
      expect(git(demo.repo, ['merge-base', '--is-ancestor', agentMerge, `${implMerge}^2`]) === '').toBe(true);
    }
    const graph = git(demo.repo, ['log', '--graph', '--oneline']);
    for (const prefix of [...agentMerges, ...implMerges]) expect(graph).toContain(prefix);
  });

  it('merged both tier-1 IMPL branches into main before any tier-2 commit (P3)', () => {
    const lines = git(demo.repo, ['log', '--format=%H %s', 'HEAD']).split('\n').filter(Boolean);
    const shaOf = (match: (subject: string) => boolean) => lines.find((line) => match(line.slice(41)))!.slice(0, 40);
    const tier1 = [shaOf((subject) => subject.startsWith(implMerges[0]!)), shaOf((subject) => subject.startsWith(implMerges[1]!))];
    // Every commit that belongs to tier 2: the Scout's commit, the agent's commit and merges, the IMPL merge.
    const tier2 = lines.filter((line) => /checkout|feat\(K\)|tier 2/.test(line.slice(41))).map((line) => line.slice(0, 40));
    expect(tier2.length).toBeGreaterThanOrEqual(4);
    for (const first of tier1) {
      for (const later of tier2) {
        execFileSync('git', ['merge-base', '--is-ancestor', first, later], { cwd: demo.repo }); // throws (exit 1) when not an ancestor
        expect(() => execFileSync('git', ['merge-base', '--is-ancestor', later, first], { cwd: demo.repo, stdio: 'ignore' })).toThrow();
      }
    }
  });

  it('recorded the frozen contract priceWithTax (tier 1) in the archived PROGRAM', () => {
    const archived = readFileSync(path.join(demo.repo, 'docs/PROGRAM/complete/PROGRAM-shop.yaml'), 'utf8');
    const contract = archived.slice(archived.indexOf('- name: priceWithTax'), archived.indexOf('tier_gates:'));
    expect(contract).toMatch(/frozen_at_tier: 1/);
    const frozenCommit = /frozen_commit: ([0-9a-f]{40})/.exec(contract)?.[1];
    expect(frozenCommit).toBeDefined();
    // The frozen commit holds the contract's file, and tier 2 descends from it.
    expect(git(demo.repo, ['show', `${frozenCommit}:src/pricing.js`])).toContain('export function priceWithTax');
    execFileSync('git', ['merge-base', '--is-ancestor', frozenCommit!, git(demo.repo, ['log', '--format=%H', '--grep', '^Merge program tier 2 impl checkout', 'HEAD']).trim()], { cwd: demo.repo });
  });

  it('archived every IMPL doc under docs/IMPL/complete/ (state COMPLETE), left nothing behind, and node --test passes', () => {
    for (const slug of ['pricing', 'catalog', 'checkout']) {
      expect(existsSync(path.join(demo.repo, `docs/IMPL/IMPL-${slug}.yaml`))).toBe(false);
      expect(readFileSync(path.join(demo.repo, `docs/IMPL/complete/IMPL-${slug}.yaml`), 'utf8')).toMatch(/^state: COMPLETE$/m);
    }
    expectClean(demo.repo);
    const tests = nodeTest(demo.repo);
    expect(tests.passed, tests.output).toBe(true);
    expect(tests.output).toMatch(/# pass 4/);
  });

  it('ran the tier-1 Scouts and the tier-1 IMPLs concurrently (overlapping agent windows)', () => {
    const windowOf = (agent: string, slug: string) => {
      const launch = events.find(({ event }) => event.type === 'agent-launch' && event.agent === agent && event.slug === slug);
      const end = events.find(({ event }) => event.type === 'agent-end' && event.agent === agent && event.slug === slug);
      expect(launch, `agent-launch of ${agent}@${slug}`).toBeDefined();
      expect(end, `agent-end of ${agent}@${slug}`).toBeDefined();
      return [launch!.at, end!.at] as const;
    };
    const overlap = (left: readonly [number, number], right: readonly [number, number]) => left[0] < right[1] && right[0] < left[1];
    expect(overlap(windowOf('P', 'pricing'), windowOf('C', 'catalog'))).toBe(true);
    const scouts = events.filter(({ event }) => event.type === 'agent-launch' && /scout/i.test(String(event.agent)));
    const scoutWindows = ['pricing', 'catalog'].map((slug) => {
      const launch = scouts.find(({ event }) => event.slug === slug);
      const end = events.find(({ event }) => event.type === 'agent-end' && /scout/i.test(String(event.agent)) && event.slug === slug);
      return [launch?.at ?? Number.NaN, end?.at ?? Number.NaN] as const;
    });
    expect(overlap(scoutWindows[0]!, scoutWindows[1]!), JSON.stringify(scouts.map(({ event }) => event))).toBe(true);
    // Tier 2's agent starts only after tier 1's agents ended.
    expect(windowOf('K', 'checkout')[0]).toBeGreaterThan(Math.max(windowOf('P', 'pricing')[1], windowOf('D', 'catalog')[1]));
  });

  it('re-running the finished PROGRAM says COMPLETE and changes nothing', async () => {
    const head = git(demo.repo, ['rev-parse', 'HEAD']);
    const again = await cli(demo, executeArgs(demo));
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/already COMPLETE/);
    expect(git(demo.repo, ['rev-parse', 'HEAD'])).toBe(head);
  });

  // Kill-and-resume: compared against the uninterrupted run above.
  for (let round = 1; round <= killRepos; round += 1) {
    it(`SIGKILLed at ${kills.label} and re-run until exit 0 (repo ${round}): same tree, each merge exactly once, nothing left over`, async () => {
      expect(run.code).toBe(0);
      const victim = await setupDemo();
      const args = executeArgs(victim);
      const report: string[] = [];
      for (const point of kills.points) {
        const attempt = await runKillable(victim, args, point.trigger);
        const tip = git(victim.repo, ['log', '-1', '--format=%s', 'main']).trim().slice(0, 60);
        report.push(`${point.name}: ${attempt.killed ? 'killed' : `NOT reached (exit ${attempt.code})`}${point.optional ? ' (optional)' : ''} after ${(attempt.ms / 1000).toFixed(1)} s; main at "${tip}"`);
        if (!attempt.killed) expect.soft(attempt.code, attempt.stderr.slice(-3000)).toBe(0);
      }
      let final: Awaited<ReturnType<typeof runKillable>> | undefined;
      for (let rerun = 1; rerun <= 3; rerun += 1) {
        final = await runKillable(victim, args, undefined);
        report.push(`re-run ${rerun}: exit ${final.code} after ${(final.ms / 1000).toFixed(1)} s`);
        // The first failed re-run says why it stopped (the later ones only repeat the BLOCKED state it left).
        if (final.code !== 0 && rerun === 1) report.push(`re-run 1 stderr (tail): ${final.stderr.slice(-1500)}`);
        if (final.code === 0) break;
      }
      console.log(`kill-and-resume (repo ${round}):\n  ${report.join('\n  ')}`);
      expect(final!.code, `${report.join('\n')}\n${final!.stderr.slice(-4000)}`).toBe(0);
      const required = kills.points.filter((point) => !point.optional).length;
      expect(report.filter((line) => line.includes(': killed') && !line.includes('(optional)')).length).toBeGreaterThanOrEqual(required - 2);
      expect(stableTree(victim.repo)).toEqual(stableTree(demo.repo));
      expect(countMerges(victim.repo, [...agentMerges, ...implMerges])).toEqual(once([...agentMerges, ...implMerges]));
      // No lost commits: every agent's work commit is in main's history.
      const subjects = git(victim.repo, ['log', '--format=%s', 'HEAD']);
      for (const agent of ['P', 'C', 'D', 'K']) expect(subjects).toContain(`feat(${agent}):`);
      expect(readFileSync(path.join(victim.repo, 'docs/PROGRAM/complete/PROGRAM-shop.yaml'), 'utf8')).toMatch(/frozen_at_tier: 1/);
      expectClean(victim.repo);
      const tests = nodeTest(victim.repo);
      expect(tests.passed, tests.output).toBe(true);
      expect(tests.output).toMatch(/# pass 4/);
    }, 900_000);
  }
});

// ---------------------------------------------------------------------------------------------
// Refusals: a coded error, nothing changed.

/** A demo repository whose PROGRAM and IMPL docs are replaced (committed), before any run. */
async function craft(files: Record<string, string | ((demo: Demo) => string) | undefined>): Promise<Demo> {
  const demo = await setupDemo();
  for (const [file, value] of Object.entries(files)) {
    if (value === undefined) continue;
    const text = typeof value === 'function' ? value(demo) : value;
    const target = path.join(demo.repo, file);
    execFileSync('mkdir', ['-p', path.dirname(target)]);
    writeFileSync(target, text);
  }
  commitAll(demo.repo, 'test: crafted PROGRAM state');
  return demo;
}

const withStatuses = (statuses: Record<string, string>, state = 'REVIEWED') => {
  let text = programDemoManifest(state);
  for (const [slug, status] of Object.entries(statuses)) text = text.replace(new RegExp(`(- slug: ${slug}\\n(?:      .*\\n)*?      status: )pending`), `$1${status}`);
  return text;
};
const implDoc = (slug: string, state: string, edit: (text: string) => string = (text) => text) => edit(programDemoImpl(slug).replace('state: SCOUT_PENDING', `state: ${state}`));
const tier1Done = { 'src/pricing.js': 'export function priceWithTax(net, rate) {\n  return Math.round(net * (1 + rate) * 100) / 100;\n}\n', 'docs/IMPL/complete/IMPL-pricing.yaml': implDoc('pricing', 'COMPLETE'), 'docs/IMPL/complete/IMPL-catalog.yaml': implDoc('catalog', 'COMPLETE') };
/**
 * Tier 1 built and merged, as a finished run leaves it: the code and tests its agents (P of pricing,
 * C and D of catalog) write in the demo script, and both IMPL docs archived COMPLETE.
 */
function tier1Built(): Record<string, string> {
  const script = parseYaml(programDemoScript()) as { agents: Record<string, { steps: Array<{ write?: { path: string; content: string } }> }> };
  const files: Record<string, string> = {};
  for (const agent of ['P', 'C', 'D']) for (const step of script.agents[agent]!.steps) if (step.write) files[step.write.path] = step.write.content;
  expect(Object.keys(files).sort()).toEqual(['src/catalog-data.js', 'src/catalog.js', 'src/pricing.js', 'test/catalog-data.test.js', 'test/catalog.test.js', 'test/pricing.test.js']);
  return { ...files, 'docs/IMPL/complete/IMPL-pricing.yaml': implDoc('pricing', 'COMPLETE'), 'docs/IMPL/complete/IMPL-catalog.yaml': implDoc('catalog', 'COMPLETE') };
}
const redefinePriceWithTax = (text: string) => text.replace('interface_contracts: []', 'interface_contracts:\n    - name: priceWithTax\n      definition: "export function priceWithTax(net: number): number"\n      location: src/checkout.js');

/** Runs `args` and checks the refusal: exit code, message, HEAD and the bytes on disk (the PROGRAM's state line aside). */
async function expectRefusal(demo: Demo, args: string[], expected: { code: number; message: RegExp; programState?: string }): Promise<CliResult> {
  const head = git(demo.repo, ['rev-parse', 'HEAD']);
  const branches = git(demo.repo, ['branch', '--list']);
  const worktrees = git(demo.repo, ['worktree', 'list', '--porcelain']);
  const before = snapshot(demo.repo);
  const result = await cli(demo, args);
  expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(expected.code);
  expect(`${result.stdout}\n${result.stderr}`).toMatch(expected.message);
  expect(result.stderr).not.toMatch(/\n\s+at .*\(.*:\d+:\d+\)/); // no stack trace
  expect(git(demo.repo, ['rev-parse', 'HEAD'])).toBe(head);
  expect(git(demo.repo, ['branch', '--list'])).toBe(branches);
  expect(git(demo.repo, ['worktree', 'list', '--porcelain'])).toBe(worktrees);
  const after = snapshot(demo.repo);
  const strip = (text: string | undefined) => text?.replace(/^state: .*$/m, 'state: …').replace(/^updated: .*$/m, 'updated: …');
  const changed = [...new Set([...before.keys(), ...after.keys()])].filter((file) => !file.startsWith('.polywave-state/') && (file === programRelative ? strip(before.get(file)) !== strip(after.get(file)) : before.get(file) !== after.get(file)));
  expect(changed).toEqual([]);
  if (expected.programState) expect(after.get(programRelative)).toMatch(new RegExp(`^state: ${expected.programState}$`, 'm'));
  return result;
}

describe('program-execute refuses, with a coded error and nothing changed', () => {
  it('a PROGRAM in PLANNING (not approved): exit 1 with the approval instruction', async () => {
    const demo = await craft({ [programRelative]: programDemoManifest('PLANNING') });
    const result = await expectRefusal(demo, executeArgs(demo), { code: 1, message: /not approved \(state PLANNING\).*update-program-state docs\/PROGRAM\/PROGRAM-shop.yaml --state REVIEWED/s, programState: 'PLANNING' });
    expect(readFileSync(path.join(demo.repo, programRelative), 'utf8')).toBe(programDemoManifest('PLANNING'));
    expect(resultOf(result).state).toBe('PLANNING');
  });

  // P1 between pre-existing IMPLs and a missing pre-existing IMPL doc (V031): test/program-x7-refusals.test.ts.

  it('P2: a pre-existing tier-2 IMPL doc redefining the frozen contract priceWithTax → BLOCKED (V030)', async () => {
    const demo = await craft({ ...tier1Done, [programRelative]: withStatuses({ pricing: 'complete', catalog: 'complete', checkout: 'reviewed' }), 'docs/IMPL/IMPL-checkout.yaml': implDoc('checkout', 'REVIEWED', redefinePriceWithTax) });
    // The freeze of tier 1 recorded (as a finished tier 1 leaves it), with the real command.
    const freeze = await cli(demo, ['freeze-contracts', programRelative, '--tier', '1']);
    expect(freeze.code, `${freeze.stdout}\n${freeze.stderr}`).toBe(0);
    commitAll(demo.repo, 'test: tier 1 contracts frozen');
    // A refusal before anything of the tier ran: the PROGRAM stays REVIEWED (X7 finding 5: REVIEWED → BLOCKED is illegal).
    await expectRefusal(demo, executeArgs(demo), { code: 1, message: /V030|redefines frozen program contract "priceWithTax"/, programState: 'REVIEWED' });
  });

  it('P2: a tier-2 Scout writing an IMPL that redefines the frozen contract → BLOCKED before any wave', async () => {
    const demo = await craft({ ...tier1Done, [programRelative]: withStatuses({ pricing: 'complete', catalog: 'complete' }) });
    const script = readFileSync(demo.script, 'utf8');
    const original = JSON.stringify(programDemoImpl('checkout'));
    expect(script).toContain(original);
    writeFileSync(demo.script, script.replace(original, JSON.stringify(redefinePriceWithTax(programDemoImpl('checkout')))));
    const result = await cli(demo, executeArgs(demo));
    expect(result.code, result.stderr.slice(-3000)).toBe(1);
    expect(resultOf(result).stopped).toMatch(/V030|redefines frozen program contract "priceWithTax"/);
    expect(readFileSync(path.join(demo.repo, programRelative), 'utf8')).toMatch(/^state: BLOCKED$/m);
    // The Scout ran, so the stop is BLOCKED (TIER_EXECUTING → BLOCKED), committed: the checkout is clean.
    expect(git(demo.repo, ['status', '--porcelain']).trim()).toBe('');
    expect(result.stderr).toMatch(/Next: fix the cause above, then `polywave update-program-state docs\/PROGRAM\/PROGRAM-shop\.yaml --state TIER_EXECUTING`/);
    expect(mergeSubjects(demo.repo)).toEqual([]);
    expect(git(demo.repo, ['branch', '--list', 'polywave/*']).trim()).toBe('');
  });

  it('P3: a manifest claiming tier 1 complete while its IMPLs are not → refused (state kept), tier 2 not started', async () => {
    // Statuses say complete, but there are no IMPL docs and no code: tier 1 never ran.
    const demo = await craft({ [programRelative]: withStatuses({ pricing: 'complete', catalog: 'complete' }) });
    await expectRefusal(demo, executeArgs(demo), { code: 1, message: /tier 1.*(V031|not found|not complete)/s, programState: 'REVIEWED' });
  });

  it('P3: tier-gate / finalize-tier for tier 2 before tier 1 passed', async () => {
    const demo = await setupDemo();
    await expectRefusal(demo, ['tier-gate', programRelative, '--tier', '2'], { code: 1, message: /P3: earlier tier\(s\) not complete: tier 1|not all IMPLs of tier 2 are complete/, programState: 'REVIEWED' });
    await expectRefusal(demo, ['finalize-tier', programRelative, '--tier', '2'], { code: 2, message: /error\[[A-Z0-9_]+\].*nothing was changed/, programState: 'REVIEWED' });
  });

  // P3: tier N+1's gate cannot pass before tier N is complete, even when tier N+1 claims to be done.
  it('P3: tier-gate --tier 2 refuses while tier 1 has not run, whatever tier 2 claims', async () => {
    const claimed = await craft({ [programRelative]: withStatuses({ checkout: 'complete' }), 'docs/IMPL/complete/IMPL-checkout.yaml': implDoc('checkout', 'COMPLETE') });
    const gate = await cli(claimed, ['tier-gate', programRelative, '--tier', '2']);
    expect(gate.code, `${gate.stdout}\n${gate.stderr}`).toBe(1);
    expect(gate.stdout).toMatch(/P3: earlier tier\(s\) not complete: tier 1/);
  });

  it('an illegal PROGRAM state transition via update-program-state', async () => {
    const demo = await setupDemo();
    await expectRefusal(demo, ['update-program-state', programRelative, '--state', 'COMPLETE'], { code: 1, message: /N008_STATE_TRANSITION.*REVIEWED -> COMPLETE/, programState: 'REVIEWED' });
    expect(readFileSync(demo.program, 'utf8')).toBe(programDemoManifest('REVIEWED'));
  });

  // Outside attack P12-13: started from a subdirectory, the loop looked for the Scouts' IMPL docs (written at the top
  // of the work tree) under the current directory, stopped BLOCKED and committed that on main.
  it('`polywave run` of the PROGRAM from a subdirectory of the work tree reaches COMPLETE, as from the top', async () => {
    const demo = await setupDemo();
    const result = await runCli(['run', path.join('..', programRelative), '--auto', '--model', `script:${demo.script}`, '--no-critic'], { cwd: path.join(demo.repo, 'docs'), env: gitEnv, timeoutMs: 240_000 });
    expect(result.code, result.stderr.slice(-3000)).toBe(0);
    expect(resultOf(result)).toMatchObject({ state: 'COMPLETE', success: true });
    expect(existsSync(path.join(demo.repo, 'docs/PROGRAM/complete/PROGRAM-shop.yaml'))).toBe(true);
    expect(existsSync(path.join(demo.repo, 'docs/docs'))).toBe(false);
    expect(git(demo.repo, ['log', '--format=%s', 'main'])).not.toMatch(/BLOCKED/);
    // P12-06: git's partial-commit index left by a git process killed with an earlier run goes with the next run; one of
    // a git still running stays.
    const dead = path.join(demo.repo, '.git', 'next-index-999999.lock');
    const live = path.join(demo.repo, '.git', `next-index-${process.pid}.lock`);
    writeFileSync(dead, '');
    writeFileSync(live, '');
    const again = await cli(demo, executeArgs(demo));
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/already COMPLETE/);
    expect([existsSync(dead), existsSync(live)]).toEqual([false, true]);
    // P12-18: killed inside mark-program-complete's commit (the archive staged, index.lock left): the re-run said
    // "finished archiving", exit 0, and committed nothing. Now the stale lock goes and the archive is committed.
    git(demo.repo, ['reset', '--soft', 'HEAD~1']);
    writeFileSync(path.join(demo.repo, '.git', 'index.lock'), '');
    const finish = await cli(demo, executeArgs(demo));
    expect(finish.code, finish.stderr).toBe(0);
    expect(finish.stderr).toMatch(/finished archiving docs\/PROGRAM\/complete\/PROGRAM-shop\.yaml/);
    expect(git(demo.repo, ['log', '-1', '--format=%s']).trim()).toBe('chore: mark PROGRAM shop complete');
    expect(existsSync(path.join(demo.repo, '.git', 'index.lock'))).toBe(false);
    expect(git(demo.repo, ['status', '--porcelain']).trim()).toBe('');
  }, 300_000);

  // Outside attack P12-25: the tier's Scouts ignored --concurrency (12 Scouts at once with --concurrency 2); they share
  // the run's one agent budget now — with 1, tier 1's two Scouts run one after the other, as its agents do.
  it('--concurrency 1: the tier-1 Scouts run one at a time (the one agent budget), and the PROGRAM completes', async () => {
    const demo = await setupDemo();
    const result = await cli(demo, [...executeArgs(demo), '--concurrency', '1', '--json']);
    expect(result.code, result.stderr.slice(-3000)).toBe(0);
    const events = result.stdout.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as { type: string; agent?: string; slug?: string; seq?: number });
    const windowOf = (slug: string) => [events.findIndex((event) => event.type === 'agent-launch' && /scout/i.test(String(event.agent)) && event.slug === slug), events.findIndex((event) => event.type === 'agent-end' && /scout/i.test(String(event.agent)) && event.slug === slug)] as const;
    const [pricing, catalog] = [windowOf('pricing'), windowOf('catalog')];
    for (const window of [pricing, catalog]) expect(window[0] >= 0 && window[1] > window[0], JSON.stringify(window)).toBe(true);
    // (in the order the events were written: one Scout ended before the other launched)
    expect(pricing[1] < catalog[0] || catalog[1] < pricing[0], JSON.stringify({ pricing, catalog })).toBe(true);
  }, 300_000);

  it('program-execute on a missing file: exit 2, one line, no stack trace', async () => {
    const demo = await setupDemo();
    const result = await expectRefusal(demo, ['program-execute', 'docs/PROGRAM/PROGRAM-nope.yaml', '--auto'], { code: 2, message: /error\[N005_IMPL_NOT_FOUND\]: PROGRAM manifest not found/ });
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stdout).toBe('');
  });
});

// ---------------------------------------------------------------------------------------------

/** Adds a scripted `planner` that writes `text` as the PROGRAM (or fails). */
function addPlanner(demo: Demo, step: { write?: string; edit?: { old: string; new: string }; fail?: string }): void {
  const script = readFileSync(demo.script, 'utf8').replace(/\n {2}planner:\n[\s\S]*$/, '\n');
  const steps =
    step.write !== undefined
      ? [`      - write: { path: ${programRelative}, content: ${JSON.stringify(step.write)} }`, '      - text: "revised"']
      : step.edit !== undefined
        ? [`      - edit: { path: ${programRelative}, old: ${JSON.stringify(step.edit.old)}, new: ${JSON.stringify(step.edit.new)} }`, '      - text: "revised"']
        : [`      - fail: { kind: fatal, message: ${JSON.stringify(step.fail)} }`];
  writeFileSync(demo.script, `${script.replace(/\n*$/, '\n')}  planner:\n    steps:\n${steps.join('\n')}\n`);
}

describe('a failing tier gate, the Planner (E34), approval, and the loop resumed without re-running work', () => {
  const failing = 'node -e "console.error(\'GATE-BROKEN-42: the gate says no\'); process.exit(1)"';

  it('--auto: BLOCKED by the tier gate → the Planner revises the plan on its own (E34) → REPLANNING (refused) → approved → COMPLETE, no agent merged twice', async () => {
    // Tier 1 already done and merged (crafted: its code, tests and archived IMPLs); the tier gate fails, so
    // the run does tier 2 (Scout, wave, merges) and is stopped by the gate at tier 2's finalize-tier.
    const failingLine = `command: ${JSON.stringify(failing)}`;
    const manifest = withStatuses({ pricing: 'complete', catalog: 'complete' }).replace('      command: node --test', `      ${failingLine}`);
    expect(manifest).toContain(failingLine);
    const demo = await craft({ ...tier1Built(), [programRelative]: manifest });
    const craftedHead = git(demo.repo, ['rev-parse', 'HEAD']).trim();
    // The Planner fixes the gate in whatever the manifest has become by then (statuses, the freeze).
    addPlanner(demo, { edit: { old: failingLine, new: 'command: node --test' } });

    const blocked = await cli(demo, executeArgs(demo, ['--auto']));
    expect(blocked.code, blocked.stderr.slice(-3000)).toBe(1);
    const stopped = resultOf(blocked).stopped ?? '';
    expect(stopped).toMatch(/GATE-BROKEN-42/);
    expect(stopped).toMatch(/tier 2/);
    expect(stopped).toMatch(/the Planner revised the PROGRAM .*approve with `polywave update-program-state/);
    expect(resultOf(blocked).tiers.map((tier) => [tier.tier, tier.status])).toEqual([
      [1, 'skipped'],
      [2, 'failed'],
    ]);
    // Tier 2's work was done once before the gate stopped it; tier 1 was not run again.
    const tier1Prefixes = [...agentMerges.slice(0, 3), ...implMerges.slice(0, 2)];
    const tier2Agent = agentMerges.slice(3);
    expect(countMerges(demo.repo, tier2Agent, '--all')).toEqual(once(tier2Agent));
    expect(countMerges(demo.repo, tier1Prefixes, '--all')).toEqual(Object.fromEntries(tier1Prefixes.map((prefix) => [prefix, 0])));
    const waiting = readFileSync(demo.program, 'utf8');
    expect(waiting).toMatch(/^state: REPLANNING$/m);
    expect(waiting).toContain('command: node --test');
    expect(waiting).not.toContain('GATE-BROKEN-42');
    // The manifest as it was before the Planner touched it is kept in git's directory (no untracked file in the tree).
    const backups = readdirSync(path.join(demo.repo, '.git', 'polywave', 'program-replan'));
    expect(backups).toHaveLength(1);
    expect(readFileSync(path.join(demo.repo, '.git', 'polywave', 'program-replan', backups[0]!), 'utf8')).toContain(failingLine);
    expect(existsSync(path.join(demo.repo, '.polywave-state', 'program-replan'))).toBe(false);

    // Not approved yet: refused (even with --auto: PROGRAM_REVIEWED is never skipped), nothing changed.
    await expectRefusal(demo, executeArgs(demo, ['--auto']), { code: 1, message: /REPLANNING/, programState: 'REPLANNING' });
    const approve = await cli(demo, ['update-program-state', programRelative, '--state', 'REVIEWED']);
    expect(approve.code, approve.stderr).toBe(0);

    const resumed = await cli(demo, executeArgs(demo, ['--yes']));
    expect(resumed.code, resumed.stderr.slice(-4000)).toBe(0);
    expect(resultOf(resumed).state).toBe('COMPLETE');
    const tier2Prefixes = [...tier2Agent, ...implMerges.slice(2)];
    expect(countMerges(demo.repo, [...tier1Prefixes, ...tier2Prefixes], '--all')).toEqual({ ...Object.fromEntries(tier1Prefixes.map((prefix) => [prefix, 0])), ...once(tier2Prefixes) });
    // Everything since the crafted tier 1 is tier 2's: one agent merge and one IMPL merge, nothing twice.
    expect(mergeSubjects(demo.repo).filter((subject) => !tier2Prefixes.some((prefix) => subject.startsWith(prefix)))).toEqual([]);
    expect(git(demo.repo, ['merge-base', '--is-ancestor', craftedHead, 'HEAD']).trim()).toBe('');
    expect(readFileSync(path.join(demo.repo, 'docs/PROGRAM/complete/PROGRAM-shop.yaml'), 'utf8')).toMatch(/^state: COMPLETE$/m);
    expectClean(demo.repo);
    const tests = nodeTest(demo.repo);
    expect(tests.passed, tests.output).toBe(true);
    expect(tests.output).toMatch(/# pass 4\b/);
  }, 400_000);

  it('program-replan on a BLOCKED PROGRAM: the Planner\'s valid revision waits in REPLANNING, the original kept byte for byte as the backup', async () => {
    const program = withStatuses({ pricing: 'complete', catalog: 'complete' }, 'BLOCKED');
    const demo = await craft({ ...tier1Done, [programRelative]: program });
    const revised = program.replace(/^title: Shop$/m, 'title: Shop (re-planned)');
    expect(revised).not.toBe(program);
    addPlanner(demo, { write: revised });
    const head = git(demo.repo, ['rev-parse', 'HEAD']);
    const replan = await cli(demo, ['program-replan', programRelative, '--reason', 'the tier gate of tier 1 fails (GATE-BROKEN-42)', '--tier', '1', '--model', `script:${demo.script}`]);
    expect(replan.code, `${replan.stdout}\n${replan.stderr}`).toBe(0);
    const replanned = JSON.parse(replan.stdout) as { validation_passed: boolean; backup_path: string; revised_manifest_path: string; changes_summary?: string };
    expect(replanned.validation_passed).toBe(true);
    expect(replanned.changes_summary).toBe('contracts or descriptions revised');
    expect(readFileSync(replanned.backup_path, 'utf8')).toBe(program);
    const waiting = readFileSync(demo.program, 'utf8');
    expect(waiting).toMatch(/^state: REPLANNING$/m);
    expect(waiting).toMatch(/^title: Shop \(re-planned\)$/m);
    expect(git(demo.repo, ['rev-parse', 'HEAD'])).toBe(head);
  });

  it.each([
    ['its definition', (text: string) => text.replace('"export function priceWithTax(net: number, rate: number): number"', '"export function priceWithTax(net: number): number"')],
    // Outside attack X11 #3: moving freeze_at to a later tier reported it unfrozen (and let a tier-2 IMPL own its file).
    ['its freeze_at (to a later tier)', (text: string) => text.replace('freeze_at: tier-1', 'freeze_at: tier-2')],
  ])('a Planner revision that changes a frozen contract (%s) is refused and the manifest restored byte for byte', async (_what, change) => {
    const program = withStatuses({ pricing: 'complete', catalog: 'complete' }, 'BLOCKED');
    const demo = await craft({ ...tier1Done, [programRelative]: program });
    expect(change(program)).not.toBe(program);
    addPlanner(demo, { write: change(program) });
    const head = git(demo.repo, ['rev-parse', 'HEAD']);
    const replan = await cli(demo, ['program-replan', programRelative, '--reason', 'try to change the contract', '--model', `script:${demo.script}`]);
    expect(replan.code, `${replan.stdout}\n${replan.stderr}`).toBe(1);
    expect(replan.stdout).toMatch(/P2_FROZEN_CONTRACT_CHANGED: the frozen contract priceWithTax/);
    expect(readFileSync(demo.program, 'utf8')).toBe(program);
    expect(git(demo.repo, ['rev-parse', 'HEAD'])).toBe(head);
  });

  it('program-replan refuses before any Planner runs: a PROGRAM not BLOCKED/TIER_EXECUTING (N008), --tier 9 (X001), a missing agent script (X001) — nothing changed, no backup', async () => {
    const blocked = withStatuses({ pricing: 'complete', catalog: 'complete' }, 'BLOCKED');
    const demo = await craft({ ...tier1Done, [programRelative]: blocked });
    const replan = (extra: string[], model = `script:${demo.script}`) => ['program-replan', programRelative, '--reason', 'again', ...extra, '--model', model];
    for (const [args, code, message] of [
      [replan(['--tier', '9']), 2, /X001_INVALID_INPUT.*tier 9 not found/],
      [replan([], `script:${path.join(demo.repo, 'missing-script.yaml')}`), 2, /X001_INVALID_INPUT.*agent script .*missing-script\.yaml cannot be read/],
    ] as const) {
      await expectRefusal(demo, [...args], { code, message, programState: 'BLOCKED' });
    }
    writeFileSync(demo.program, withStatuses({}, 'REVIEWED'));
    commitAll(demo.repo, 'test: a REVIEWED PROGRAM');
    const refused = await expectRefusal(demo, replan([]), { code: 1, message: /N008_STATE_TRANSITION\]: the PROGRAM is REVIEWED: a re-plan \(E34\) starts from BLOCKED, TIER_EXECUTING, REPLANNING/, programState: 'REVIEWED' });
    expect(refused.stderr).not.toMatch(/Planner did not finish/);
    expect(existsSync(path.join(demo.repo, '.git', 'polywave', 'program-replan'))).toBe(false);
    expect(existsSync(path.join(demo.repo, '.polywave-state', 'program-replan'))).toBe(false);
  });

  it('Ctrl-C during the tier gate is an interruption: exit 130, no Planner (E34), TIER_EXECUTING and the IMPL branch kept; the re-run finishes', async () => {
    // The tier-2 gate waits while .git/hold exists (a gate a user stops); tier 1 is done and merged.
    const hold = 'HOLD_FILE';
    const gate = `node -e "if (require('fs').existsSync(process.argv[1])) setInterval(() => {}, 1000)" ${hold}`;
    const manifest = withStatuses({ pricing: 'complete', catalog: 'complete' }).replace('      command: node --test', `      command: ${JSON.stringify(gate)}`);
    expect(manifest).toContain('HOLD_FILE');
    const demo = await craft({ ...tier1Built(), [programRelative]: (built) => manifest.replace('HOLD_FILE', path.join(built.repo, '.git', 'hold')) });
    writeFileSync(path.join(demo.repo, '.git', 'hold'), '');
    const interrupted = await runKillable(demo, executeArgs(demo, ['--auto']), (observed) => since(observed, /tier 2: merging 1 IMPL branch/) >= 1500, 240_000, 'SIGINT');
    expect(interrupted.killed, interrupted.stderr.slice(-3000)).toBe(true);
    expect(interrupted.code, interrupted.stderr.slice(-3000)).toBe(130);
    expect(interrupted.stderr).toMatch(/program: interrupted \(TIER_EXECUTING\)[^\n]*\n\s+interrupted — re-run to resume/);
    expect(interrupted.stderr).not.toMatch(/Planner|REPLANNING|BLOCKED/);
    expect(readFileSync(demo.program, 'utf8')).toMatch(/^state: TIER_EXECUTING$/m);
    expect(git(demo.repo, ['branch', '--list', 'polywave/program/shop/tier2-impl-checkout']).trim()).not.toBe('');
    expect(existsSync(path.join(demo.repo, '.git', 'polywave', 'program-replan'))).toBe(false);
    execFileSync('rm', [path.join(demo.repo, '.git', 'hold')]);
    const resumed = await cli(demo, executeArgs(demo, ['--auto']));
    expect(resumed.code, resumed.stderr.slice(-3000)).toBe(0);
    expect(resultOf(resumed).state).toBe('COMPLETE');
    expect(countMerges(demo.repo, [agentMerges[3]!, implMerges[2]!], '--all')).toEqual(once([agentMerges[3]!, implMerges[2]!]));
    expectClean(demo.repo);
  }, 400_000);

  // Outside attack P12-28: under --auto, a failing tier gate and then a Planner that failed left the PROGRAM in
  // REPLANNING (uncommitted), asking to "approve the revised plan" — with nothing revised. It stops BLOCKED now.
  it('--auto: the tier gate fails and the Planner fails too → BLOCKED (committed), no "approve the revision"', async () => {
    const failingLine = `command: ${JSON.stringify(failing)}`;
    const demo = await craft({ ...tier1Built(), [programRelative]: withStatuses({ pricing: 'complete', catalog: 'complete' }).replace('      command: node --test', `      ${failingLine}`) });
    addPlanner(demo, { fail: 'the model is down' });
    const blocked = await cli(demo, executeArgs(demo, ['--auto']));
    expect(blocked.code, blocked.stderr.slice(-3000)).toBe(1);
    const stopped = resultOf(blocked).stopped ?? '';
    expect(stopped).toMatch(/GATE-BROKEN-42/);
    expect(stopped).toMatch(/the Planner's revision is not valid/);
    expect(stopped).not.toMatch(/approve/);
    expect(readFileSync(demo.program, 'utf8')).toMatch(/^state: BLOCKED$/m);
    expect(git(demo.repo, ['log', '-1', '--format=%s']).trim()).toMatch(/^chore: program shop BLOCKED: /);
    expect(git(demo.repo, ['status', '--porcelain', '--', programRelative]).trim()).toBe('');
  }, 300_000);

  // Outside attack P12-38: a tier-1 contract whose file the tier never produced: the freeze failed at TIER_VERIFIED, from
  // which no legal transition leads anywhere but on, and every re-run stopped the same way ("re-run to resume").
  it('a contract file the tier never produced: the freeze fails → BLOCKED (committed), from which the PROGRAM can go on', async () => {
    const demo = await craft({ ...tier1Built(), [programRelative]: withStatuses({ pricing: 'complete', catalog: 'complete' }).replace('location: src/pricing.js', 'location: src/prices.js') });
    const blocked = await cli(demo, executeArgs(demo, ['--auto']));
    expect(blocked.code, blocked.stderr.slice(-3000)).toBe(1);
    expect(resultOf(blocked).stopped ?? '').toMatch(/freeze-contracts: .*src\/prices\.js/);
    expect(readFileSync(demo.program, 'utf8')).toMatch(/^state: BLOCKED$/m);
    expect(git(demo.repo, ['status', '--porcelain', '--', programRelative]).trim()).toBe('');
    // The way out a BLOCKED PROGRAM has: the file made on main (a human's fix), then back to TIER_EXECUTING and a re-run.
    const out = await cli(demo, ['update-program-state', programRelative, '--state', 'TIER_EXECUTING']);
    expect(out.code, out.stderr).toBe(0);
  }, 300_000);

  it('a Planner that fails (writes nothing) is not a valid revision: exit 1, manifest unchanged', async () => {
    const program = withStatuses({}, 'BLOCKED');
    const demo = await craft({ [programRelative]: program });
    addPlanner(demo, { fail: 'the model is down' });
    const replan = await cli(demo, ['program-replan', programRelative, '--reason', 'tier 1 failed', '--tier', '1', '--model', `script:${demo.script}`]);
    expect(replan.code, `${replan.stdout}\n${replan.stderr}`).toBe(1);
    expect((JSON.parse(replan.stdout) as { validation_passed: boolean }).validation_passed).toBe(false);
    expect(readFileSync(demo.program, 'utf8')).toBe(program);
  });
});

// ---------------------------------------------------------------------------------------------

describe('a wave agent that fails BLOCKs the tier, and the printed advice, followed word for word, finishes the PROGRAM (outside rounds X60, X61)', () => {
  it('a dirty checkout is refused before the Scouts (G005); a plan edited during the waves is not committed (X61-05); a failing agent → BLOCKED; the Next: commands run as printed (--accept-changes after a human commit on main) → COMPLETE, each merge once', async () => {
    const demo = await setupDemo();
    // X60-02: user files in the main checkout are found before the Scouts, not after they committed — also in
    // polywave's own folders: a note there (X61-02) and a file at a pending IMPL's doc path, which its Scout would
    // write over (X61-04: the user's file was lost).
    const userFiles = ['notes.txt', 'docs/IMPL/notes.md', 'docs/IMPL/IMPL-pricing.yaml'];
    execFileSync('mkdir', ['-p', path.join(demo.repo, 'docs/IMPL')]);
    for (const file of userFiles) writeFileSync(path.join(demo.repo, file), 'the user\'s own\n');
    const refused = await expectRefusal(demo, executeArgs(demo), { code: 1, message: /G005_DIRTY_WORKTREE: the main checkout has uncommitted changes: /, programState: 'REVIEWED' });
    const listed = /G005_DIRTY_WORKTREE: the main checkout has uncommitted changes: ([^—]*) —/.exec(refused.stderr)?.[1] ?? '';
    expect(listed.split(', ').sort()).toEqual([...userFiles].sort());
    for (const file of userFiles) {
      expect(readFileSync(path.join(demo.repo, file), 'utf8')).toBe('the user\'s own\n');
      execFileSync('rm', [path.join(demo.repo, file)]);
    }

    // Agent C of catalog fails (fatal) after a moment; meanwhile a writer outside the sandbox weakens the tier gate in
    // the PROGRAM manifest (X61-05: the loop's BLOCKED commit carried the edit, then vouched for it, and the resumed
    // tier ran `echo …` as its gate).
    const good = readFileSync(demo.script, 'utf8');
    const broken = good.replace('  C:\n    steps:\n', '  C:\n    steps:\n      - sleep_ms: 1500\n      - fail: { kind: fatal, message: "C-BREAKS-77" }\n');
    expect(broken).not.toBe(good);
    writeFileSync(demo.script, broken);
    const gateLine = '      command: node --test';
    const planned = readFileSync(demo.program, 'utf8');
    expect(planned).toContain(gateLine);
    let edited = false;
    const first = await runKillable(demo, executeArgs(demo), (observed) => {
      if (!edited && observed.lines.some((line) => /\[C\] launched/.test(line.text))) {
        edited = true;
        writeFileSync(demo.program, readFileSync(demo.program, 'utf8').replace(gateLine, '      command: echo EVILGATE-61'));
      }
      return false;
    });
    expect(edited).toBe(true);
    expect(first.code, first.stderr.slice(-3000)).toBe(1);
    expect(first.stderr).toMatch(/C: failed: C-BREAKS-77.*PROGRAM_PLAN_CHANGED: the plan in docs\/PROGRAM\/PROGRAM-shop\.yaml .* was changed during this run, not by polywave/);
    expect(first.stderr).toMatch(/Next: review the change \(`git diff -- docs\/PROGRAM\/PROGRAM-shop\.yaml`\) and undo what is not yours — nothing was committed/);
    expect(git(demo.repo, ['log', '--all', '-S', 'EVILGATE-61', '--format=%s']).trim()).toBe('');
    expect(git(demo.repo, ['log', '-1', '--format=%s']).trim()).toMatch(/^chore: scout IMPL/);
    expect(readFileSync(path.join(demo.repo, 'docs/IMPL/IMPL-catalog.yaml'), 'utf8')).toMatch(/^state: BLOCKED$/m);

    // The human undoes the edit; a plain re-run stops on the blocked IMPL (BLOCKED, committed) and says the way out,
    // and so does another plain re-run of the BLOCKED PROGRAM (it said "re-run the same command to resume").
    writeFileSync(demo.program, readFileSync(demo.program, 'utf8').replace('      command: echo EVILGATE-61', gateLine));
    const blocked = await cli(demo, executeArgs(demo));
    expect(blocked.code, blocked.stderr.slice(-3000)).toBe(1);
    expect(readFileSync(demo.program, 'utf8')).toMatch(/^state: BLOCKED$/m);
    const again = await cli(demo, executeArgs(demo));
    expect(again.code, again.stderr).toBe(1);
    expect(again.stderr).toMatch(/Next: fix the cause above, then `polywave update-program-state /);

    /** Runs every `polywave …` command of a stop's "Next:" advice exactly as printed (the re-run with the test's model). */
    const follow = async (stopped: CliResult): Promise<{ commands: string[]; run: CliResult }> => {
      const next = /Next: (.*)$/m.exec(stopped.stderr)?.[1] ?? '';
      const commands = [...next.split('; or re-plan')[0]!.split('; if not')[0]!.matchAll(/`polywave ([^`]+)`/g)].map((match) => match[1]!);
      for (const command of commands.slice(0, -1)) {
        const step = await cli(demo, command.split(' '));
        expect(step.code, `${command}\n${step.stderr}`).toBe(0);
      }
      return { commands, run: await cli(demo, [...commands.at(-1)!.split(' '), '--auto', '--model', `script:${demo.script}`, '--no-critic']) };
    };
    const resumeCommands = [`update-program-state ${programRelative} --state TIER_EXECUTING`, `update-program-impl ${programRelative} --impl catalog --status reviewed`];

    // "Fix the cause": the agent works again, and the human commits a fix on main. The advice, followed as printed:
    // the IMPL doc left BLOCKED is resumed (it was refused V032, X60-01), and the prepared wave's tamper check finds
    // only the human's commit — the loop's own BLOCKED commit under it is vouched for (it was TAMPER_DETECTED, X60-01).
    writeFileSync(demo.script, good);
    writeFileSync(path.join(demo.repo, 'FIX.md'), 'the human fix\n');
    git(demo.repo, ['add', 'FIX.md']);
    git(demo.repo, ['-c', 'user.name=Human', '-c', 'user.email=human@example.com', 'commit', '-q', '-m', 'fix: the human fix']);
    const third = await follow(blocked);
    expect(third.commands).toEqual([...resumeCommands, `program-execute ${programRelative}`]);
    expect(third.run.code, third.run.stderr.slice(-3000)).toBe(1);
    expect(third.run.stderr).toMatch(/resuming catalog \(IMPL doc BLOCKED → WAVE_EXECUTING/);
    expect(resultOf(third.run).stopped ?? '').toMatch(/TAMPER_DETECTED: .*ref refs\/heads\/main: \w+ → \w+ \(1 new commit\(s\), newest first: \w+ fix: the human fix\)/);
    const resumed = await follow(third.run);
    expect(resumed.commands).toEqual([...resumeCommands, `program-execute ${programRelative} --accept-changes`]);
    expect(resumed.run.code, resumed.run.stderr.slice(-4000)).toBe(0);
    expect(resultOf(resumed.run).state).toBe('COMPLETE');
    expect(countMerges(demo.repo, [...agentMerges, ...implMerges], '--all')).toEqual(once([...agentMerges, ...implMerges]));
    expect(git(demo.repo, ['ls-files', 'FIX.md']).trim()).toBe('FIX.md');
    expect(git(demo.repo, ['log', '--all', '-S', 'EVILGATE-61', '--format=%s']).trim()).toBe('');
    expectClean(demo.repo);
  }, 400_000);
});

// ---------------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------------

describe('two IMPLs of one tier whose agents have the same ids (agent A in wave 1 of both)', () => {
  let demo: Demo;
  let run: CliResult;
  const renamed = (text: string, ids: Record<string, string>) => text.replace(/(agent: |- id: |depends_on: \[|dependencies: \[)([A-Z])/g, (_match, prefix: string, id: string) => prefix + (ids[id] ?? id));

  beforeAll(async () => {
    demo = await craft({
      [programRelative]: withStatuses({ pricing: 'reviewed', catalog: 'reviewed' }),
      'docs/IMPL/IMPL-pricing.yaml': renamed(implDoc('pricing', 'REVIEWED'), { P: 'A' }),
      'docs/IMPL/IMPL-catalog.yaml': renamed(implDoc('catalog', 'REVIEWED'), { C: 'A', D: 'B' }),
      // A worktree setup that records the port each agent got (the IMPLs' setups run at once).
      // Setup runs in the gate sandbox (only the worktree writable): the committed `sandbox.writable`
      // opens the directory beside the repository for the evidence.
      'polywave.config.json': (crafted) => `${JSON.stringify({ setup: 'echo "$POLYWAVE_SLUG $POLYWAVE_AGENT $POLYWAVE_PORT" >> "$POLYWAVE_ROOT/../ports.log"', sandbox: { writable: [path.dirname(crafted.repo)] } })}\n`,
    });
    writeFileSync(demo.script, readFileSync(demo.script, 'utf8').replace('\n  P:\n', '\n  A@pricing:\n').replace('\n  C:\n', '\n  A@catalog:\n').replace('\n  D:\n', '\n  B@catalog:\n'));
    run = await cli(demo, executeArgs(demo));
  }, 300_000);

  it('runs both (imported, reviewed) IMPLs concurrently and merges each agent exactly once', () => {
    expect(run.code, run.stderr.slice(-3000)).toBe(0);
    const prefixes = ['Merge polywave/pricing/wave1-agent-A', 'Merge polywave/catalog/wave1-agent-A', 'Merge polywave/catalog/wave2-agent-B', ...implMerges];
    expect(countMerges(demo.repo, prefixes)).toEqual(once(prefixes));
    expectClean(demo.repo);
    expect(nodeTest(demo.repo).passed).toBe(true);
  });

  it('gives each IMPL of the tier its own block of POLYWAVE_PORTs: agent A of both never shares a port', () => {
    const lines = readFileSync(path.join(demo.repo, '..', 'ports.log'), 'utf8').trim().split('\n').sort();
    // Tier 1 runs pricing (block 0) and catalog (block 1) at once; tier 2's only IMPL has block 0.
    expect(lines).toEqual(['catalog A 41100', 'catalog B 41100', 'checkout K 41000', 'pricing A 41000']);
  });

  // Per-wave state is IMPL-scoped (`.polywave-state/<slug>/wave<N>/`, src/engine/state-paths.ts): IMPLs of a
  // tier run at once and must not mix their merge logs and agent journals.
  it('keeps each IMPL\'s merge log and agent journal apart', () => {
    const logs = readdirSync(path.join(demo.repo, '.polywave-state'), { recursive: true }).map(String).filter((file) => file.endsWith('merge-log.json'));
    const merged = logs.flatMap((file) => (JSON.parse(readFileSync(path.join(demo.repo, '.polywave-state', file), 'utf8')) as { merges: Array<{ branch: string }> }).merges.map((entry) => entry.branch));
    expect(merged).toEqual(expect.arrayContaining(['polywave/pricing/wave1-agent-A', 'polywave/catalog/wave1-agent-A', 'polywave/catalog/wave2-agent-B']));
    const journals = readdirSync(path.join(demo.repo, '.polywave-state'), { recursive: true }).map(String).filter((file) => file.endsWith('index.jsonl'));
    for (const journal of journals) {
      const text = readFileSync(path.join(demo.repo, '.polywave-state', journal), 'utf8');
      expect(text.includes('src/pricing.js') && text.includes('src/catalog-data.js'), journal).toBe(false);
    }
  });
});

