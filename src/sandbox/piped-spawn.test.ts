import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { spawnPiped, usePipedSpawnHelper, type PipedChild } from './piped-spawn.js';

/** Everything a piped child says, its exit, and its parent pid (read while it waits on stdin). */
async function talk(child: PipedChild, input: string): Promise<{ stdout: string; stderr: string; code: number | null; ppid: number }> {
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const closed = new Promise<number | null>((resolve) => child.once('close', (code: number | null) => resolve(code)));
  // The child said its first line at once and now waits for ours: its parent is whoever spawned it.
  for (let tries = 0; !stdout.includes('\n') && tries < 500; tries += 1) await new Promise((resolve) => setTimeout(resolve, 10));
  const ppid = Number(/^PPid:\s+(\d+)$/m.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1]);
  child.stdin.end(input);
  const code = await closed;
  return { stdout, stderr, code, ppid };
}

const script = 'printf "ready\\n"; printf "to stderr\\n" >&2; read line; printf "got %s\\n" "$line"; exit 3';

describe.runIf(process.platform === 'linux')('long-lived piped children started by the helper (the tool executors)', () => {
  it('many at once: each first line arrives (none read and lost by the helper), stdin, stderr, exit code; the helper is their parent', async () => {
    const children = await Promise.all(Array.from({ length: 24 }, () => spawnPiped('sh', ['-c', script], { cwd: process.cwd(), env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } })));
    const results = await Promise.all(children.map((child, index) => talk(child, `line ${index}\n`)));
    results.forEach((result, index) => {
      expect(result).toMatchObject({ stdout: `ready\ngot line ${index}\n`, stderr: 'to stderr\n', code: 3 });
      expect(result.ppid).not.toBe(process.pid);
    });
    expect(new Set(results.map((result) => result.ppid)).size).toBe(1);
    // Its own process group (detached), as the executor's kill of the whole group needs.
    expect(children.every((child) => typeof child.pid === 'number')).toBe(true);
  });

  it('without the helper: spawned here, the same answers; a missing program fails with ENOENT either way', async () => {
    usePipedSpawnHelper(false);
    try {
      const child = await spawnPiped('sh', ['-c', script], { cwd: process.cwd(), env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
      const result = await talk(child, 'x\n');
      expect(result).toMatchObject({ stdout: 'ready\ngot x\n', stderr: 'to stderr\n', code: 3, ppid: process.pid });
    } finally {
      usePipedSpawnHelper(true);
    }
    for (const helper of [true, false]) {
      usePipedSpawnHelper(helper);
      const missing = await spawnPiped('/nonexistent/program', [], { cwd: process.cwd(), env: {} });
      const error = await new Promise<NodeJS.ErrnoException>((resolve) => missing.once('error', resolve));
      expect(error.code).toBe('ENOENT');
    }
    usePipedSpawnHelper(true);
  });
});
