import type { ChildProcess } from 'node:child_process';

/** A finished child process: its exit code and everything it wrote. */
export interface ChildOutput {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Collects a spawned child's stdout and stderr (spawned with stdout and stderr as pipes) until it closes. */
export function childOutput(child: ChildProcess): Promise<ChildOutput> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
