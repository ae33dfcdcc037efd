import { mkdir, mkdtemp, readdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { decideAgentSandbox } from '../agents/run-agent.js';
import { PolywaveError } from '../errors/polywave-error.js';
import type { EventBus } from '../engine/events.js';
import { recordRunRepositories } from '../observability/recorder.js';
import { executeProgram, type ProgramExecuteResult } from '../orchestrator/program-execute.js';
import { programDemoFiles, programDemoScript } from './program-project.js';
import { initDemoRepository, runProcess } from './run-demo.js';

/** Options of {@link runProgramDemo}. */
export interface RunProgramDemoOptions {
  unsafeNoSandbox?: boolean;
  /** Where to create the demo (default: a new temporary directory). Must be empty or absent. */
  dir?: string;
  env: Readonly<Record<string, string | undefined>>;
  now?: () => Date;
  events?: EventBus;
  signal?: AbortSignal;
  /** Tier progress lines (E32). */
  onProgress?: (line: string) => void;
  /** Pause inside each scripted agent (ms); default 100. */
  stepDelayMs?: number;
  /** Agents at once across a tier (default 8). */
  concurrency?: number;
  /** Only create the repository (tests that drive the CLI themselves). */
  setupOnly?: boolean;
}

/** What {@link runProgramDemo} did. */
export interface ProgramDemoResult {
  dir: string;
  repo: string;
  script: string;
  program_path: string;
  run?: ProgramExecuteResult;
  tests?: { passed: boolean; output: string };
  log?: string;
  duration_ms: number;
  sandbox: { sandboxed: boolean; mechanism: string; detail: string };
}

/**
 * `polywave demo --program`: the "shop" repository with an approved 2-tier PROGRAM, scripted
 * Scouts and agents, and the whole tier loop for real (parallel Scouts, concurrent IMPLs on IMPL
 * branches, finalize-tier, tier gate, contract freezing, archive). No API key needed.
 */
export async function runProgramDemo(options: RunProgramDemoOptions): Promise<ProgramDemoResult> {
  const started = performance.now();
  const dir = options.dir ? path.resolve(options.dir) : await mkdtemp(path.join(os.tmpdir(), 'polywave-program-demo-'));
  await mkdir(dir, { recursive: true });
  if ((await readdir(dir)).length > 0) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${dir} is not empty: pass a new or empty directory to --dir` });
  const repo = path.join(dir, 'shop');
  const script = path.join(dir, 'agents.script.yaml');
  const env = { ...options.env, POLYWAVE_NO_PRIORITIZE: undefined };
  const decision = await decideAgentSandbox({ backend: 'script', env, ...(options.unsafeNoSandbox ? { unsafeNoSandbox: true } : {}) });
  const sandbox = decision.sandboxed
    ? { sandboxed: true, mechanism: decision.status.mechanism, detail: decision.status.detail }
    : { sandboxed: false, mechanism: 'none', detail: decision.reason === 'unsafe-no-sandbox' ? '--unsafe-no-sandbox' : decision.status.detail };
  await writeFile(script, programDemoScript(options.stepDelayMs !== undefined ? { stepDelayMs: options.stepDelayMs } : {}));
  const git = await initDemoRepository(repo, programDemoFiles(), env, 'shop: empty project and the approved PROGRAM');
  const programPath = path.join(repo, 'docs', 'PROGRAM', 'PROGRAM-shop.yaml');
  // The run's repository on its run row (how `polywave serve --repo shop` finds it; the IMPL branches' worktrees are elsewhere).
  recordRunRepositories(options.events, [repo]);
  if (options.setupOnly) return { dir, repo, script, program_path: programPath, duration_ms: Math.round(performance.now() - started), sandbox };

  const run = await executeProgram({
    programPath,
    repoDir: repo,
    env,
    auto: true,
    model: `script:${script}`,
    noCritic: true,
    retryBackoffMs: 100,
    ...(options.concurrency ? { concurrency: options.concurrency } : {}),
    ...(options.unsafeNoSandbox ? { unsafeNoSandbox: true } : {}),
    ...(options.now ? { now: options.now } : {}),
    ...(options.events ? { events: options.events } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  });
  const tests = await runProcess(process.execPath, ['--test'], { cwd: repo, env });
  const log = (await git.run(['log', '--graph', '--oneline', '--decorate=short', '-n', '60'])).stdout;
  return { dir, repo, script, program_path: programPath, run, tests: { passed: tests.code === 0, output: tests.output }, log, duration_ms: Math.round(performance.now() - started), sandbox };
}
