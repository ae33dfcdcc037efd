import { execFileSync, spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const binPath = path.join(repoRoot, 'bin', 'polywave.js');
export const corpusRoot = path.resolve(repoRoot, '..', 'shared', 'corpus');
export const specRoot = path.resolve(repoRoot, '..', 'shared', 'spec');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  durationMs: number;
}

/** Runs the real CLI (`node bin/polywave.js …`) as a child process. */
export function runCli(args: string[], options: { cwd?: string; input?: string; env?: Record<string, string>; timeoutMs?: number } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(process.execPath, [binPath, ...args], {
      cwd: options.cwd ?? repoRoot,
      env: { ...process.env, NO_COLOR: '1', ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, durationMs: performance.now() - start });
    });
    child.stdin.end(options.input ?? '');
  });
}

/**
 * `polywave <args>` for each argument list, all in ONE Node process through the CLI's bundled entry
 * (test/support/cli-batch.mjs) — for checks over every command that change nothing, such as `--help`.
 */
export function runCliBatch(lists: ReadonlyArray<readonly string[]>, options: { cwd?: string } = {}): Array<{ args: string[]; code: number; stdout: string; stderr: string }> {
  const entry = pathToFileURL(path.join(repoRoot, 'dist', 'bundle', 'main.js')).href;
  const output = execFileSync(process.execPath, [path.join(repoRoot, 'test', 'support', 'cli-batch.mjs'), entry, JSON.stringify(lists)], { cwd: options.cwd ?? repoRoot, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, env: { ...process.env, NO_COLOR: '1' } });
  return JSON.parse(output) as Array<{ args: string[]; code: number; stdout: string; stderr: string }>;
}
