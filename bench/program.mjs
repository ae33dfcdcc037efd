// bench:program — the PROGRAM tier loop (issue 12): one tier of BENCH_IMPLS IMPLs × 1 wave ×
// BENCH_AGENTS script agents of BENCH_AGENT_MS each, run by program-execute (IMPLs concurrently on
// IMPL branches, one agent budget), compared in the same run with the same IMPLs run one after
// another through the autopilot (`polywave run <impl>`), the floor a PROGRAM must beat.
// Reported separately: the tier's IMPL-branch merges + tier gate (finalize-tier).
//
// BENCH_CLI=1 also measures both the way a user types them, one process per command: `polywave
// program-execute <program>` against `polywave run <impl>` × BENCH_IMPLS (each run pays the CLI's
// start, module loading, sandbox host and event store once; the in-process pair above pays them
// once for everything, which flatters the sequence).
//
//   npm run bench:program
//   BENCH_IMPLS=4 BENCH_AGENTS=2 BENCH_AGENT_MS=2000 BENCH_ROUNDS=1 npm run bench:program
//   BENCH_SEQUENTIAL=0 BENCH_PHASES=1 node bench/program.mjs   (the tier alone, each IMPL's phases)
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { benchEnv, percentile, root, sh } from './support/script-wave.mjs';
const { EventBus } = await import(path.join(root, 'dist/engine/events.js'));

/**
 * BENCH_PHASES=1: each IMPL's phases of the tier from the engine's own events (seconds since the
 * tier started): prepare-wave, the agents (first launch to last end), finalize-wave; then the
 * tier gate. Where a tier's wall time goes, without a profiler.
 */
function phaseReport(timeline) {
  const bySlug = new Map();
  const at = (slug) => bySlug.get(slug) ?? bySlug.set(slug, {}).get(slug);
  const lines = [];
  for (const { t, event } of timeline) {
    const slot = event.slug ? at(event.slug) : undefined;
    if (event.type === 'wave-prepare-start') slot.prepare ??= t;
    else if (event.type === 'wave-prepare-end') slot.prepared = t;
    else if (event.type === 'agent-launch') slot.launch ??= t;
    else if (event.type === 'agent-end') slot.ended = t;
    else if (event.type === 'wave-run-end') slot.end = t;
    else if (event.type === 'gate-start') lines.push(`  tier gate ${(t / 1000).toFixed(2)} s →`);
    else if (event.type === 'gate-result') lines.push(`  … ${(t / 1000).toFixed(2)} s (${event.duration_ms} ms)`);
  }
  const s = (value) => (value === undefined ? '?' : (value / 1000).toFixed(2));
  const span = (from, to) => (from === undefined || to === undefined ? '?' : `${((to - from) / 1000).toFixed(2)} s`);
  const perImpl = [...bySlug].sort(([left], [right]) => left.localeCompare(right)).map(([slug, p]) => `  ${slug}: prepare-wave ${s(p.prepare)}–${s(p.prepared)} (${span(p.prepare, p.prepared)}), agents ${s(p.launch)}–${s(p.ended)} (${span(p.launch, p.ended)}), finalize-wave –${s(p.end)} (${span(p.ended, p.end)})`);
  return [...perImpl, ...lines].join('\n');
}

const { executeProgram } = await import(path.join(root, 'dist/orchestrator/program-execute.js'));
const { runAutopilot } = await import(path.join(root, 'dist/orchestrator/autopilot.js'));
const implCount = Number(process.env.BENCH_IMPLS ?? 4);
const agentsPerImpl = Number(process.env.BENCH_AGENTS ?? 2);
const agentMs = Number(process.env.BENCH_AGENT_MS ?? 2000);
const rounds = Number(process.env.BENCH_ROUNDS ?? 1);
// BENCH_SEQUENTIAL=0: the tier alone (for profiling its CPU with perf stat or strace).
const withSequential = process.env.BENCH_SEQUENTIAL !== '0';
const withCli = process.env.BENCH_CLI === '1';
const binPath = path.join(root, 'bin', 'polywave.js');

/** One `polywave …` process in `repo`, timed; exits the bench on a failure. */
function cli(repo, args) {
  const begin = performance.now();
  const result = spawnSync(process.execPath, [binPath, ...args], { cwd: repo, env: { ...benchEnv, NO_COLOR: '1' }, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (result.status !== 0) {
    console.error(`polywave ${args.join(' ')}: exit ${result.status}\n${(result.stderr ?? '').slice(-3000)}`);
    console.error(`the repository is kept for a look: ${repo}`);
    process.exit(1);
  }
  return performance.now() - begin;
}

const slugs = Array.from({ length: implCount }, (_, index) => `part-${String.fromCharCode(97 + index)}`);
// Agent IDs are one letter (optionally 2-9): distinct across the IMPLs so one script serves them all.
const agentIdsOf = (index) => Array.from({ length: agentsPerImpl }, (_, agent) => String.fromCharCode(65 + index * agentsPerImpl + agent));
const fileOf = (slug, id) => `src/${slug}/${id.toLowerCase()}.js`;

function implYaml(slug, index) {
  const ids = agentIdsOf(index);
  return [
    `title: Bench ${slug}`,
    `feature_slug: ${slug}`,
    'verdict: SUITABLE',
    'state: REVIEWED',
    'injection_method: manual-fallback',
    'file_ownership:',
    ...ids.flatMap((id) => [`    - file: ${fileOf(slug, id)}`, `      agent: ${id}`, '      wave: 1', '      action: new']),
    'interface_contracts: []',
    'waves:',
    '    - number: 1',
    '      agents:',
    ...ids.flatMap((id) => [`        - id: ${id}`, `          task: write ${fileOf(slug, id)}`, '          files:', `            - ${fileOf(slug, id)}`]),
    '',
  ].join('\n');
}

function programYaml() {
  return [
    'title: Bench program',
    'program_slug: bench',
    'state: REVIEWED',
    'impls:',
    ...slugs.flatMap((slug) => [`    - slug: ${slug}`, `      title: Bench ${slug}`, '      tier: 1', `      estimated_agents: ${agentsPerImpl}`, '      estimated_waves: 1', '      status: reviewed']),
    'tiers:',
    '    - number: 1',
    `      impls: [${slugs.join(', ')}]`,
    'tier_gates:',
    '    - type: build',
    '      command: node -e "process.exit(0)"',
    '      required: true',
    'completion:',
    '    tiers_complete: 0',
    '    tiers_total: 1',
    '    impls_complete: 0',
    `    impls_total: ${implCount}`,
    `    total_agents: ${implCount * agentsPerImpl}`,
    `    total_waves: ${implCount}`,
    '',
  ].join('\n');
}

function scriptYaml() {
  const lines = ['version: 1', 'agents:'];
  slugs.forEach((slug, index) => {
    for (const id of agentIdsOf(index)) {
      lines.push(`  ${id}:`, '    steps:', `      - write: { path: ${fileOf(slug, id)}, content: "export const ${id.toLowerCase()} = 1;\\n" }`, `      - commit: "feat(${id}): ${fileOf(slug, id)}"`, '      - report: { status: complete, verification: PASS }', `      - sleep_until_ms: ${agentMs}`);
    }
  });
  lines.push('');
  return lines.join('\n');
}

function setup() {
  const directory = mkdtempSync(path.join(os.tmpdir(), 'polywave-bench-program-'));
  const repo = path.join(directory, 'repo');
  mkdirSync(path.join(repo, 'docs', 'IMPL'), { recursive: true });
  mkdirSync(path.join(repo, 'docs', 'PROGRAM'), { recursive: true });
  writeFileSync(path.join(repo, 'README.md'), '# bench\n');
  slugs.forEach((slug, index) => writeFileSync(path.join(repo, 'docs', 'IMPL', `IMPL-${slug}.yaml`), implYaml(slug, index)));
  writeFileSync(path.join(repo, 'docs', 'PROGRAM', 'PROGRAM-bench.yaml'), programYaml());
  const script = path.join(directory, 'agents.yaml');
  writeFileSync(script, scriptYaml());
  sh('git init -q -b main && git add -A && git commit -qm initial', repo);
  return { directory, repo, script };
}

const tierTimes = [];
const sequentialTimes = [];
const cliTierTimes = [];
const cliSequentialTimes = [];
const finalizeTimes = [];
for (let round = 0; round < rounds; round += 1) {
  // The tier: every IMPL at once on its IMPL branch, finalize-tier, tier gate.
  {
    const { directory, repo, script } = setup();
    let finalizeStart;
    const timeline = [];
    const events = new EventBus();
    const begin = performance.now();
    if (process.env.BENCH_PHASES === '1') events.subscribe((event) => timeline.push({ t: performance.now() - begin, event }));
    const result = await executeProgram({
      programPath: path.join(repo, 'docs', 'PROGRAM', 'PROGRAM-bench.yaml'),
      repoDir: repo,
      env: benchEnv,
      auto: true,
      model: `script:${script}`,
      noCritic: true,
      concurrency: implCount * agentsPerImpl,
      ...(process.env.BENCH_PHASES === '1' ? { events } : {}),
      onProgress: (line) => {
        if (process.env.BENCH_PROGRESS === '1') console.error(`${((performance.now() - begin) / 1000).toFixed(2)} ${line}`);
        if (/merging \d+ IMPL branch/.test(line)) finalizeStart = performance.now();
      },
    });
    const total = performance.now() - begin;
    if (!result.success) {
      console.error(JSON.stringify({ stopped: result.stopped, tiers: result.tiers }, null, 2));
      console.error(`the repository is kept for a look: ${repo}`);
      process.exit(1);
    }
    tierTimes.push(total);
    if (process.env.BENCH_PHASES === '1') console.error(`round ${round + 1}, tier ${(total / 1000).toFixed(2)} s:\n${phaseReport(timeline)}`);
    if (process.env.BENCH_PROGRESS === '1') for (const run of result.tiers ?? []) console.error(`finalize-tier steps: ${(run.finalize?.steps ?? []).map((step) => `${step.step} ${step.duration_ms} ms`).join(', ')}`);
    // finalize-tier + freezing + archive: from the merge announcement to the end.
    finalizeTimes.push(finalizeStart === undefined ? Number.NaN : begin + total - finalizeStart);
    rmSync(directory, { recursive: true, force: true });
  }
  // The floor: the same IMPLs one after another through the autopilot (polywave run <impl>); its
  // waves start their git commands through the helper process too (run-wave turns it on), as there.
  if (withSequential) {
    const { directory, repo, script } = setup();
    const begin = performance.now();
    for (const slug of slugs) {
      const result = await runAutopilot({ implPath: path.join(repo, 'docs', 'IMPL', `IMPL-${slug}.yaml`), repoDir: repo, auto: true, model: `script:${script}`, env: benchEnv, noCritic: true });
      if (!result.success) {
        console.error(JSON.stringify({ slug, stopped: result.stopped }, null, 2));
        process.exit(1);
      }
    }
    sequentialTimes.push(performance.now() - begin);
    rmSync(directory, { recursive: true, force: true });
  }
  if (withCli) {
    // As typed: the tier in one process, then the IMPLs one `polywave run` each.
    const tier = setup();
    cliTierTimes.push(cli(tier.repo, ['program-execute', 'docs/PROGRAM/PROGRAM-bench.yaml', '--auto', '--model', `script:${tier.script}`, '--no-critic', '--concurrency', String(implCount * agentsPerImpl)]));
    rmSync(tier.directory, { recursive: true, force: true });
    const sequence = setup();
    cliSequentialTimes.push(slugs.reduce((total, slug) => total + cli(sequence.repo, ['run', `docs/IMPL/IMPL-${slug}.yaml`, '--auto', '--model', `script:${sequence.script}`, '--no-critic']), 0));
    rmSync(sequence.directory, { recursive: true, force: true });
  }
}
const tier = percentile(tierTimes, 0.5);
const sequential = percentile(sequentialTimes, 0.5);
const finalize = percentile(finalizeTimes, 0.5);
console.log(`bench:program — ${os.cpus().length} CPUs; a tier of ${implCount} IMPLs × 1 wave × ${agentsPerImpl} script agents of ${agentMs} ms, ${rounds} round(s)`);
console.log(`  program-execute (IMPLs concurrently on IMPL branches): median ${(tier / 1000).toFixed(1)} s (${tierTimes.map((value) => (value / 1000).toFixed(1)).join(', ')})`);
console.log(`    of which finalize-tier (IMPL-branch merges + tier gate) + freezing + archive: ${(finalize / 1000).toFixed(1)} s`);
if (withSequential) console.log(`  the ${implCount} IMPLs one after another (polywave run <impl>): median ${(sequential / 1000).toFixed(1)} s (${sequentialTimes.map((value) => (value / 1000).toFixed(1)).join(', ')})`);
if (withSequential) console.log(`  ratio ${(tier / sequential).toFixed(2)}× of the sequential time (target ≤ 0.35×) — ${tier / sequential <= 0.35 ? 'OK' : 'ABOVE TARGET'}`);
// Above the target is a failed bench (exit 1), after everything was printed.
if (withSequential && tier / sequential > 0.35) process.exitCode = 1;
if (withCli) {
  const cliTier = percentile(cliTierTimes, 0.5);
  const cliSequential = percentile(cliSequentialTimes, 0.5);
  console.log(`  as typed, one process per command: polywave program-execute median ${(cliTier / 1000).toFixed(1)} s (${cliTierTimes.map((value) => (value / 1000).toFixed(1)).join(', ')}); ${implCount} × polywave run median ${(cliSequential / 1000).toFixed(1)} s (${cliSequentialTimes.map((value) => (value / 1000).toFixed(1)).join(', ')})`);
  console.log(`  ratio as typed ${(cliTier / cliSequential).toFixed(2)}× (target ≤ 0.35×) — ${cliTier / cliSequential <= 0.35 ? 'OK' : 'ABOVE TARGET'}`);
  if (cliTier / cliSequential > 0.35) process.exitCode = 1;
}
