import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { decideAgentSandbox } from '../agents/run-agent.js';
import { PolywaveError } from '../errors/polywave-error.js';
import type { EventBus } from '../engine/events.js';
import { createGit } from '../git/git-cli.js';
import type { Git } from '../git/git-port.js';
import { runAutopilot, type AutopilotPhase, type AutopilotResult } from '../orchestrator/autopilot.js';
import { demoBaseFiles, demoManifest, demoScript } from './project.js';

export interface RunDemoOptions {
  /** Run agents without the OS sandbox (`--unsafe-no-sandbox`): the static checks only, with a warning. */
  unsafeNoSandbox?: boolean;
  /** Where to create the demo (default: a new temporary directory). Must be empty or absent. */
  dir?: string;
  env: Readonly<Record<string, string | undefined>>;
  now?: () => Date;
  events?: EventBus;
  signal?: AbortSignal;
  onPhase?: (phase: AutopilotPhase) => void;
  /** Pause inside each scripted agent (ms) so the parallelism is visible; default 150. */
  stepDelayMs?: number;
}

export interface DemoResult {
  dir: string;
  repo: string;
  script: string;
  run: AutopilotResult;
  /** `node --test` on the final tree. */
  tests: { passed: boolean; output: string };
  merges: number;
  log: string;
  duration_ms: number;
  /** Whether the agents (and gates) ran inside the OS sandbox, and why not when they did not. */
  sandbox: { sandboxed: boolean; mechanism: string; detail: string };
}

/** Runs a program to its end: exit code and combined output (never throws). */
export function runProcess(command: string, args: string[], options: { cwd: string; env: Readonly<Record<string, string | undefined>> }): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env as NodeJS.ProcessEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.on('error', (error) => resolve({ code: 127, output: error.message }));
    child.on('close', (code) => resolve({ code: code ?? 1, output }));
  });
}

/** A demo repository: `files` written and committed on `main` by the demo identity. Returns its git port. */
export async function initDemoRepository(repo: string, files: Readonly<Record<string, string>>, env: Readonly<Record<string, string | undefined>>, message: string): Promise<Git> {
  await mkdir(repo, { recursive: true });
  for (const [file, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(repo, file)), { recursive: true });
    await writeFile(path.join(repo, file), content);
  }
  const git = createGit(repo, { env });
  await git.run(['init', '-q', '-b', 'main']);
  await git.run(['config', 'user.name', 'polywave demo']);
  await git.run(['config', 'user.email', 'demo@polywave.invalid']);
  await git.run(['config', 'commit.gpgsign', 'false']);
  await git.run(['add', '-A']);
  await git.run(['commit', '-q', '--no-verify', '-m', message], { env: { POLYWAVE_ALLOW_MAIN_COMMIT: '1' } });
  return git;
}

/**
 * `polywave demo`: a sample library (textkit) in a new git repository, an IMPL manifest of 2 waves
 * × 3 agents, and scripted agents — then the whole protocol for real with the script backend:
 * prepare (worktrees, briefs, hooks), six agents in parallel through the jailed tools, E42
 * checks, gates, one --no-ff merge per agent, the integration agent wiring new helpers into the
 * entry point (E25/E26), and close-impl. No API key needed.
 */
export async function runDemo(options: RunDemoOptions): Promise<DemoResult> {
  const started = performance.now();
  const dir = options.dir ? path.resolve(options.dir) : await mkdtemp(path.join(os.tmpdir(), 'polywave-demo-'));
  await mkdir(dir, { recursive: true });
  const present = await readdir(dir);
  if (present.length > 0) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${dir} is not empty: pass a new or empty directory to --dir` });
  const repo = path.join(dir, 'textkit');
  const script = path.join(dir, 'agents.script.yaml');
  const env = { ...options.env, POLYWAVE_NO_PRIORITIZE: undefined };
  // Script agents: sandboxed when the sandbox can run here, else unsandboxed with a notice (never refused).
  const decision = await decideAgentSandbox({ backend: 'script', env, ...(options.unsafeNoSandbox ? { unsafeNoSandbox: true } : {}) });
  const sandbox = decision.sandboxed
    ? { sandboxed: true, mechanism: decision.status.mechanism, detail: decision.status.detail }
    : { sandboxed: false, mechanism: 'none', detail: decision.reason === 'unsafe-no-sandbox' ? '--unsafe-no-sandbox' : decision.status.detail };

  await writeFile(script, demoScript(options.stepDelayMs !== undefined ? { stepDelayMs: options.stepDelayMs } : {}));
  const git = await initDemoRepository(repo, { ...demoBaseFiles, 'docs/IMPL/IMPL-textkit.yaml': demoManifest() }, env, 'textkit: empty library and the IMPL plan');

  const run = await runAutopilot({
    implPath: path.join(repo, 'docs', 'IMPL', 'IMPL-textkit.yaml'),
    repoDir: repo,
    auto: true,
    model: `script:${script}`,
    env,
    noCritic: true,
    retryBackoffMs: 100,
    ...(options.unsafeNoSandbox ? { unsafeNoSandbox: true } : {}),
    ...(options.now ? { now: options.now } : {}),
    ...(options.events ? { events: options.events } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.onPhase ? { onPhase: options.onPhase } : {}),
  });
  const tests = await runProcess(process.execPath, ['--test'], { cwd: repo, env });
  const merges = Number((await git.run(['rev-list', '--merges', '--count', 'HEAD'])).stdout.trim());
  const log = (await git.run(['log', '--graph', '--oneline', '--decorate=short', '-n', '40'])).stdout;
  return { dir, repo, script, run, tests: { passed: tests.code === 0, output: tests.output }, merges, log, duration_ms: Math.round(performance.now() - started), sandbox };
}
