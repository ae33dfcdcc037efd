// bench:prepare — prepare-wave (no gates) against the raw git it has to issue: a plain shell
// loop of `git worktree add -b <branch> <path> <base>` × N, measured in the same run, each in a
// fresh repository of the same content. Prints the ratio (target ≤ 1.5× at N ≥ 8) and ms/agent
// (cost must grow linearly with N). These machines are noisy: read ratios, not absolute times.
//
//   npm run bench:prepare                 # N = 1, 8, 32, 100
//   BENCH_SIZES=8,32 BENCH_FILES=500 npm run bench:prepare
//
// Then (issue 13, worktree setup) the same repository as an npm project with real registry
// dependencies installed in the main checkout (fetched once into a cache under the OS temp dir):
// prepare-wave with the default setup (node_modules shared from the main checkout) vs
// --no-workspace-setup (no dependencies in the worktrees: its gates cannot run) vs a full
// `npm ci --prefer-offline` per worktree (as a configured setup), with the raw `git worktree add`
// loop as the floor. BENCH_NPM=0 skips this part, BENCH_NPM=only runs only it; BENCH_NPM_SIZES=4,8;
// BENCH_NPM_VARIANTS=true,npm runs only the variants whose name contains one of the words. A configured
// setup runs in the gate sandbox (issue 11): the `setup \`true\`` pair measures that cost per worktree.
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const { prepareWave } = await import(path.join(root, 'dist/engine/prepare-wave.js'));
const { createGit } = await import(path.join(root, 'dist/git/git-cli.js'));

const sizes = (process.env.BENCH_SIZES ?? '1,8,32,100').split(',').map(Number);
const fileCount = Number(process.env.BENCH_FILES ?? 200);
const concurrency = process.env.BENCH_CONCURRENCY ? Number(process.env.BENCH_CONCURRENCY) : undefined;
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

function sh(script, cwd) {
  const result = spawnSync('sh', ['-c', script], { cwd, env, encoding: 'utf8' });
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

function implYaml(count) {
  const ids = agentIds(count);
  // Two files per agent (one agent owning one file is V047_TRIVIAL_SCOPE).
  const files = (id) => [`src/agent-${id}/main.ts`, `src/agent-${id}/main.test.ts`];
  const rows = ids.flatMap((id) => files(id).flatMap((file) => [`    - file: ${file}`, `      agent: ${id}`, '      wave: 1', '      action: new']));
  const agents = ids.flatMap((id) => [`        - id: ${id}`, `          task: Implement src/agent-${id}/main.ts with tests.`, '          files:', ...files(id).map((file) => `            - ${file}`)]);
  return [
    'title: Bench feature',
    'feature_slug: bench',
    'verdict: SUITABLE',
    'state: WAVE_PENDING',
    'file_ownership:',
    ...rows,
    'interface_contracts:',
    '    - name: Api',
    '      definition: "export interface Api { run(): void }"',
    '      location: src/api.ts',
    'waves:',
    '    - number: 1',
    '      agents:',
    ...agents,
    'critic_report:',
    '    verdict: PASS',
    '    summary: bench',
    '',
  ].join('\n');
}

/** A fresh repository: `fileCount` source files in 10 directories, one commit. */
function freshRepo(count) {
  const directory = mkdtempSync(path.join(os.tmpdir(), 'polywave-bench-'));
  const repo = path.join(directory, 'repo');
  sh(`git init -q -b main "${repo}"`, directory);
  for (let index = 0; index < fileCount; index += 1) {
    const file = path.join(repo, 'src', `dir${index % 10}`, `file${index}.ts`);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, `export const value${index} = ${index};\n`.repeat(20));
  }
  mkdirSync(path.join(repo, 'docs', 'IMPL'), { recursive: true });
  writeFileSync(path.join(repo, 'docs', 'IMPL', 'IMPL-bench.yaml'), implYaml(count));
  sh('git add -A && git commit -q --no-verify -m init', repo);
  return { directory, repo };
}

async function timePrepare(count) {
  const { directory, repo } = freshRepo(count);
  try {
    const start = performance.now();
    const result = await prepareWave({
      implPath: path.join(repo, 'docs', 'IMPL', 'IMPL-bench.yaml'),
      wave: 1,
      env,
      gitAt: (dir) => createGit(dir, { env }),
      ...(concurrency ? { concurrency } : {}),
    });
    const ms = performance.now() - start;
    if (!result.success) throw new Error(`prepare-wave failed: ${JSON.stringify(result.steps.find((step) => step.status === 'failed'))}`);
    if (result.worktrees.length !== count) throw new Error(`expected ${count} worktrees, got ${result.worktrees.length}`);
    const steps = Object.fromEntries(result.steps.map((step) => [step.step, step.duration_ms]));
    return { ms, steps };
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

function timeShellLoop(count) {
  const { directory, repo } = freshRepo(count);
  try {
    const base = sh('git rev-parse HEAD', repo).trim();
    const lines = agentIds(count).map((id) => `git worktree add -q -b polywave/bench/wave1-agent-${id} .claude/worktrees/polywave/bench/wave1-agent-${id} ${base}`);
    const script = lines.join('\n');
    const start = performance.now();
    sh(script, repo);
    return performance.now() - start;
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function benchWorktreeCreation() {
  // Warm-up (module loading and JIT are not what we measure).
  await timePrepare(2);

  console.log(`bench:prepare — ${os.cpus().length} CPUs, git ${sh('git --version', root).trim().replace('git version ', '')}, repo of ${fileCount} files, load ${os.loadavg()[0].toFixed(1)}; prepare-wave${concurrency ? ` (concurrency ${concurrency})` : ''} without gates (in-process API) vs a shell loop of git worktree add -b`);
  console.log('    N | shell loop ms | ms/agent | prepare-wave ms | ms/agent | ratio (median of per-round ratios)');
  const rows = [];
  for (const count of sizes) {
    const rounds = Number(process.env.BENCH_ROUNDS ?? (count <= 8 ? 5 : 3));
    const shell = [];
    const ours = [];
    let steps;
    for (let round = 0; round < rounds; round += 1) {
      // Alternate which runs first, so a load change within a round does not always favour one side.
      if (round % 2 === 1) shell.push(timeShellLoop(count));
      const measured = await timePrepare(count);
      ours.push(measured.ms);
      steps = measured.steps;
      if (round % 2 === 0) shell.push(timeShellLoop(count));
    }
    // Rounds interleave the two measurements; on a shared machine the load drifts, so the ratio
    // is taken per round (two runs close in time) and the median of those ratios is reported.
    const shellMs = median(shell);
    const oursMs = median(ours);
    const ratio = median(ours.map((ms, index) => ms / shell[index]));
    rows.push({ count, shellMs, oursMs, steps, ratio });
    if (process.env.BENCH_VERBOSE) console.log(`      samples shell ${shell.map((ms) => ms.toFixed(0)).join(' ')} | ours ${ours.map((ms) => ms.toFixed(0)).join(' ')}`);
    console.log(
      `${String(count).padStart(5)} | ${shellMs.toFixed(0).padStart(13)} | ${(shellMs / count).toFixed(1).padStart(8)} | ${oursMs.toFixed(0).padStart(15)} | ${(oursMs / count).toFixed(1).padStart(8)} | ${ratio.toFixed(2)}× (${rounds} round${rounds === 1 ? '' : 's'})`,
    );
  }
  for (const row of rows) {
    const top = Object.entries(row.steps).sort((left, right) => right[1] - left[1]).slice(0, 6);
    console.log(`slowest steps at N=${row.count}: ${top.map(([name, ms]) => `${name} ${ms} ms`).join(', ')}`);
  }
  const target = rows.filter((row) => row.count >= 8);
  if (target.length > 0) {
    const worst = Math.max(...target.map((row) => row.ratio));
    console.log(`worst ratio at N ≥ 8: ${worst.toFixed(2)}× (target ≤ 1.5×) — ${worst <= 1.5 ? 'OK' : 'ABOVE TARGET'}`);
  }
  if (rows.length >= 2) {
    const [small, big] = [rows.find((row) => row.count >= 8) ?? rows[0], rows[rows.length - 1]];
    console.log(`linearity: ms/agent ${(small.oursMs / small.count).toFixed(1)} at N=${small.count} → ${(big.oursMs / big.count).toFixed(1)} at N=${big.count} (shell loop: ${(small.shellMs / small.count).toFixed(1)} → ${(big.shellMs / big.count).toFixed(1)})`);
  }
}

/** Real registry packages (a few small ones and lodash's 600 files), pinned. */
const npmDependencies = { chalk: '5.3.0', commander: '12.1.0', debug: '4.3.7', lodash: '4.17.21', semver: '7.6.3', zod: '3.23.8' };

/** package.json + package-lock.json + node_modules installed once from the registry into a cache under the OS temp dir. */
function npmFixture() {
  const cache = path.join(os.tmpdir(), 'polywave-bench-npm-fixture-v1');
  const project = path.join(cache, 'project');
  const npmCache = path.join(cache, 'npm-cache');
  if (!existsSync(path.join(project, 'node_modules', '.package-lock.json'))) {
    rmSync(cache, { recursive: true, force: true });
    mkdirSync(project, { recursive: true });
    writeFileSync(path.join(project, 'package.json'), `${JSON.stringify({ name: 'bench-app', version: '1.0.0', private: true, scripts: { test: 'node test.js' }, dependencies: npmDependencies }, null, 2)}\n`);
    console.log(`bench:prepare — installing ${Object.keys(npmDependencies).join(', ')} from the registry into ${cache} (once)`);
    sh(`npm install --no-audit --no-fund --silent --cache "${npmCache}"`, project);
  }
  return { project, npmCache, packageJson: readFileSync(path.join(project, 'package.json'), 'utf8'), lock: readFileSync(path.join(project, 'package-lock.json'), 'utf8') };
}

/** A fresh repository (as freshRepo) that is also the npm project, with node_modules installed in the main checkout. */
function npmRepo(count, fixture, config) {
  const made = freshRepo(count);
  writeFileSync(path.join(made.repo, 'package.json'), fixture.packageJson);
  writeFileSync(path.join(made.repo, 'package-lock.json'), fixture.lock);
  writeFileSync(path.join(made.repo, 'test.js'), `for (const name of ${JSON.stringify(Object.keys(npmDependencies))}) import(name).then(() => {}, (error) => { console.error(error.message); process.exit(1); });\n`);
  writeFileSync(path.join(made.repo, '.gitignore'), 'node_modules/\n');
  if (config) writeFileSync(path.join(made.repo, 'polywave.config.json'), `${JSON.stringify(config, null, 2)}\n`);
  sh('git add -A && git commit -q --no-verify -m "npm project"', made.repo);
  cpSync(path.join(fixture.project, 'node_modules'), path.join(made.repo, 'node_modules'), { recursive: true, verbatimSymlinks: true });
  return made;
}

async function benchNpmSetup() {
  const fixture = npmFixture();
  const npmEnv = { ...env, npm_config_cache: fixture.npmCache, npm_config_update_notifier: 'false' };
  const variants = [
    { name: 'default setup (shared node_modules)', options: {} },
    { name: '--no-workspace-setup', options: { workspaceSetup: false } },
    // A configured setup runs in the gate sandbox (issue 11): the registry must be allowed, and npm's cache is the gate build cache.
    { name: 'npm ci --prefer-offline per worktree', options: {}, config: { setup: ['npm', 'ci', '--prefer-offline', '--no-audit', '--no-fund'], sandbox: { network: { allow: ['registry.npmjs.org'] } } } },
    // The sandbox's own cost per configured setup: a setup that does nothing, sandboxed and with POLYWAVE_SANDBOX=off.
    { name: 'setup `true` (sandboxed)', options: {}, config: { setup: 'true' } },
    { name: 'setup `true` (POLYWAVE_SANDBOX=off)', options: {}, config: { setup: 'true' }, env: { POLYWAVE_SANDBOX: 'off' } },
  ].filter((variant) => !process.env.BENCH_NPM_VARIANTS || process.env.BENCH_NPM_VARIANTS.split(',').some((word) => variant.name.includes(word)));
  const gateWorks = (worktree) => spawnSync('npm', ['test', '--silent'], { cwd: worktree, env: npmEnv, encoding: 'utf8' }).status === 0;
  async function timeVariant(count, variant) {
    const { directory, repo } = npmRepo(count, fixture, variant.config);
    try {
      const start = performance.now();
      const variantEnv = { ...npmEnv, ...(variant.env ?? {}) };
      const result = await prepareWave({ implPath: path.join(repo, 'docs', 'IMPL', 'IMPL-bench.yaml'), wave: 1, env: variantEnv, gitAt: (dir) => createGit(dir, { env: variantEnv }), ...(concurrency ? { concurrency } : {}), ...variant.options });
      const ms = performance.now() - start;
      if (!result.success) throw new Error(`prepare-wave (${variant.name}) failed: ${JSON.stringify(result.steps.find((step) => step.status === 'failed'))}`);
      const setup = result.steps.find((step) => step.step === 'workspace_setup');
      const own = path.join(result.worktrees[0].path, 'node_modules');
      const modules = !existsSync(own) ? 'none' : lstatSync(own).isSymbolicLink() ? 'link' : 'own';
      const steps = Object.fromEntries(result.steps.map((item) => [item.step, item.duration_ms ?? 0]));
      return { ms, setupMs: setup?.duration_ms ?? 0, gate: gateWorks(result.worktrees[0].path), modules, steps };
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  }
  function timeFloor(count) {
    const { directory, repo } = npmRepo(count, fixture);
    try {
      const base = sh('git rev-parse HEAD', repo).trim();
      const script = agentIds(count).map((id) => `git worktree add -q -b polywave/bench/wave1-agent-${id} .claude/worktrees/polywave/bench/wave1-agent-${id} ${base}`).join('\n');
      const start = performance.now();
      sh(script, repo);
      return performance.now() - start;
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  }
  const sizesNpm = (process.env.BENCH_NPM_SIZES ?? '4,8').split(',').map(Number);
  const nodeModulesFiles = sh('find node_modules -type f | wc -l', fixture.project).trim();
  console.log(`\nbench:prepare (worktree setup) — npm project with ${Object.keys(npmDependencies).length} registry dependencies (${nodeModulesFiles} files in node_modules) installed in the main checkout; npm cache warm; load ${os.loadavg()[0].toFixed(1)}`);
  // `npm test` also passes without any setup while the worktrees live inside the main checkout
  // (.claude/worktrees/…): Node's module lookup walks up into the main checkout's node_modules —
  // whatever its lockfile says. The node_modules column shows what the worktree itself has.
  console.log('    N | git worktree add loop ms | ' + variants.map((variant) => `${variant.name}: ms (setup step ms; node_modules; npm test)`).join(' | '));
  for (const count of sizesNpm) {
    const rounds = Number(process.env.BENCH_NPM_ROUNDS ?? 3);
    const floor = [];
    const measured = variants.map(() => []);
    for (let round = 0; round < rounds; round += 1) {
      floor.push(timeFloor(count));
      for (const [index, variant] of variants.entries()) measured[index].push(await timeVariant(count, variant));
    }
    const cells = measured.map((samples) => `${median(samples.map((sample) => sample.ms)).toFixed(0)} (${median(samples.map((sample) => sample.setupMs)).toFixed(0)}; ${samples[0].modules}; ${samples.every((sample) => sample.gate) ? 'passes' : samples.some((sample) => sample.gate) ? 'sometimes' : 'fails'})`);
    console.log(`${String(count).padStart(5)} | ${median(floor).toFixed(0).padStart(23)} | ${cells.join(' | ')}`);
    const byName = (word) => {
      const index = variants.findIndex((variant) => variant.name.includes(word));
      return index < 0 ? NaN : median(measured[index].map((sample) => sample.ms));
    };
    const [shared, none, full] = [byName('default'), byName('--no-workspace'), byName('npm ci')];
    const [boxed, unboxed] = [byName('true` (sandboxed'), byName('true` (POLYWAVE_SANDBOX=off')];
    if (!Number.isNaN(boxed)) console.log(`      a configured setup in the gate sandbox costs ${((boxed - unboxed) / count).toFixed(0)} ms/agent over the same setup unsandboxed (\`true\`: ${boxed.toFixed(0)} vs ${unboxed.toFixed(0)} ms for ${count} worktrees)`);
    if (process.env.BENCH_VERBOSE) {
      for (const [index, variant] of variants.entries()) {
        const steps = measured[index][measured[index].length - 1].steps;
        console.log(`      slowest steps, ${variant.name}: ${Object.entries(steps).sort((left, right) => right[1] - left[1]).slice(0, 6).map(([name, ms]) => `${name} ${ms} ms`).join(', ')}`);
      }
    }
    if (!Number.isNaN(shared + none + full)) console.log(`      default setup costs ${((shared - none) / count).toFixed(0)} ms/agent over --no-workspace-setup; npm ci per worktree costs ${((full - none) / count).toFixed(0)} ms/agent (${(full / shared).toFixed(1)}× the default's prepare time); floor ${(median(floor) / count).toFixed(0)} ms/agent`);
  }
}

const npmMode = process.env.BENCH_NPM ?? '1';
if (npmMode !== 'only') await benchWorktreeCreation();
if (npmMode !== '0') await benchNpmSetup();
