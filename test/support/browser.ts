// Support for the real-browser tests of `polywave serve` (issue 16): Debian's Chromium driven by
// playwright-core (never a downloaded browser), the real server started through the CLI on a
// temporary demo repository, and the scripted agents of `polywave demo`.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { BrowserContext } from 'playwright-core';
import { binPath, repoRoot } from './cli.js';

export const chromiumPath = process.env.POLYWAVE_CHROMIUM ?? '/usr/bin/chromium';

/** Why the browser tests cannot run here, or undefined when they can. */
export function browserSkipReason(): string | undefined {
  if (!existsSync(chromiumPath)) return `${chromiumPath} is absent (apt-get install chromium; .ci/run installs it)`;
  if (!existsSync(path.join(repoRoot, 'dist', 'web', 'index.html'))) return 'dist/web is not built (npm run build)';
  return undefined;
}

export const screenshotDir = path.join(repoRoot, 'test-artifacts', 'screenshots');

/** Chromium headless with a fresh profile (its --user-data-dir), nothing fetched by the browser itself. */
export async function launchChromium(options: { colorScheme?: 'light' | 'dark'; width?: number; height?: number } = {}): Promise<{ context: BrowserContext; profile: string; close: () => Promise<void> }> {
  const { chromium } = await import('playwright-core');
  const profile = mkdtempSync(path.join(os.tmpdir(), 'polywave-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: options.width ?? 1280, height: options.height ?? 900 },
    colorScheme: options.colorScheme ?? 'light',
  });
  return {
    context,
    profile,
    close: async () => {
      await context.close().catch(() => undefined);
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

function git(cwd: string, args: string[], env: NodeJS.ProcessEnv = process.env): void {
  const result = spawnSync('git', args, { cwd, encoding: 'utf8', env });
  if (result.status !== 0) throw new Error(`git ${args.join(' ')}: ${result.stderr}`);
}

export interface PlanAgent {
  id: string;
  wave: number;
  dependencies?: string[];
}

/**
 * A small IMPL plan (REVIEWED, waiting for approval) and the script its agents replay: each agent
 * says what it does, pauses `stepDelayMs`, runs a shell command (a tool call in its journal),
 * writes its one file, commits and reports complete. One always-passing gate keeps runs short.
 */
export function smallPlan(slug: string, agents: PlanAgent[], options: { stepDelayMs?: number } = {}): { manifest: string; script: string } {
  const file = (id: string) => `src/${id.toLowerCase()}.js`;
  const waves = [...new Set(agents.map((agent) => agent.wave))].sort((a, b) => a - b);
  const manifest = [
    `title: ${slug} helpers`,
    `feature_slug: ${slug}`,
    'verdict: SUITABLE',
    'suitability_assessment: Independent files, one per agent.',
    'state: REVIEWED',
    'test_command: "true"',
    'file_ownership:',
    ...agents.flatMap((agent) => [`    - file: ${file(agent.id)}`, `      agent: ${agent.id}`, `      wave: ${agent.wave}`, '      action: new']),
    'interface_contracts:',
    `    - name: ${slug}Value`,
    `      description: the value each helper exports`,
    `      definition: "export const value: number"`,
    `      location: ${file(agents[0]!.id)}`,
    'waves:',
    ...waves.flatMap((wave) => [
      `    - number: ${wave}`,
      '      agents:',
      ...agents
        .filter((agent) => agent.wave === wave)
        .flatMap((agent) => [`        - id: ${agent.id}`, `          task: "write ${file(agent.id)}"`, '          files:', `            - ${file(agent.id)}`, ...(agent.dependencies?.length ? [`          dependencies: [${agent.dependencies.join(', ')}]`] : [])]),
    ]),
    // E37 asks for a critic review from 3 agents on: a passed one, as `polywave run-critic` writes it.
    'critic_report:',
    '    verdict: PASS',
    `    summary: "${agents.length} agent(s): briefs are complete and file ownership is disjoint"`,
    '    issue_count: 0',
    "    reviewed_at: '2026-12-01T10:00:00Z'",
    '    agent_reviews:',
    ...agents.flatMap((agent) => [`        ${agent.id}:`, `            agent_id: ${agent.id}`, '            verdict: PASS', '            issues: []']),
    'quality_gates:',
    '    level: quick',
    '    gates:',
    '        - type: custom',
    '          command: "true"',
    '          required: true',
    '          description: always passes',
    '',
  ].join('\n');
  const script = [
    'version: 1',
    'agents:',
    ...agents.flatMap((agent) => [
      `  ${agent.id}:`,
      '    steps:',
      `      - text: "Agent ${agent.id} writes ${file(agent.id)}"`,
      `      - sleep_ms: ${options.stepDelayMs ?? 300}`,
      '      - bash: "ls src"',
      `      - write: { path: ${file(agent.id)}, content: "export const value${agent.id} = ${agent.wave};\\n" }`,
      `      - commit: "feat(${agent.id}): ${file(agent.id)}"`,
      '      - report: { status: complete, verification: PASS, notes: "written" }',
    ]),
    '',
  ].join('\n');
  return { manifest, script };
}

export interface PlanRepo {
  repo: string;
  script: string;
  impl: string;
}

/** A new git repository `parent/name/repo` holding `docs/IMPL/IMPL-<slug>.yaml` (and `extraFiles`); the script beside it. */
export function makePlanRepo(parent: string, name: string, slug: string, plan: { manifest: string; script: string }, extraFiles: Record<string, string> = {}): PlanRepo {
  const dir = path.join(parent, name);
  const repo = path.join(dir, 'repo');
  mkdirSync(path.join(repo, 'src'), { recursive: true });
  mkdirSync(path.join(repo, 'docs', 'IMPL'), { recursive: true });
  const script = path.join(dir, 'agents.script.yaml');
  writeFileSync(script, plan.script);
  writeFileSync(path.join(repo, 'src', 'index.js'), 'export {};\n');
  const impl = path.join(repo, 'docs', 'IMPL', `IMPL-${slug}.yaml`);
  writeFileSync(impl, plan.manifest);
  for (const [file, content] of Object.entries(extraFiles)) {
    mkdirSync(path.dirname(path.join(repo, file)), { recursive: true });
    writeFileSync(path.join(repo, file), content);
  }
  git(repo, ['init', '-q', '-b', 'main']);
  git(repo, ['config', 'user.name', 'polywave test']);
  git(repo, ['config', 'user.email', 'test@polywave.invalid']);
  git(repo, ['config', 'commit.gpgsign', 'false']);
  git(repo, ['add', '-A']);
  git(repo, ['commit', '-q', '--no-verify', '-m', 'the library and its IMPL plan'], { ...process.env, POLYWAVE_ALLOW_MAIN_COMMIT: '1' });
  return { repo, script, impl };
}

export interface Serve {
  child: ChildProcess;
  /** The printed URL with its token (opening it sets the cookie). */
  url: string;
  origin: string;
  token: string;
  output: () => string;
  stop: () => Promise<void>;
}

/** `node bin/polywave.js serve --port 0 --repo …`, resolved when it printed its URL. */
export function startServe(repos: string[], env: Record<string, string | undefined>, cwd: string): Promise<Serve> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [binPath, 'serve', '--port', '0', ...repos.flatMap((repo) => ['--repo', repo])], {
      cwd,
      env: { ...process.env, NO_COLOR: '1', ...env } as NodeJS.ProcessEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`polywave serve printed no URL in 20 s:\n${out}`));
    }, 20_000);
    const stop = () =>
      new Promise<void>((done) => {
        if (child.exitCode !== null || child.signalCode !== null) return done();
        child.once('exit', () => done());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 3000).unref();
      });
    const onData = (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const match = /(http:\/\/127\.\d+\.\d+\.\d+:\d+)\/\?token=([0-9a-f]+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        child.stdout!.off('data', onData);
        child.stdout!.on('data', (more: Buffer) => (out += more.toString('utf8')));
        resolve({ child, url: match[0], origin: match[1]!, token: match[2]!, output: () => out, stop });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`polywave serve exited (${code}) before printing its URL:\n${out}`));
    });
  });
}

/** GET/POST on the API with the token header (for setup and checks outside the page). */
export async function apiCall<T>(serve: Serve, method: string, route: string, body?: unknown): Promise<{ status: number; json: T }> {
  const response = await fetch(`${serve.origin}${route}`, {
    method,
    headers: { 'X-Polywave-Token': serve.token, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, json: (await response.json()) as T };
}
