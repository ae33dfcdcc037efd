import { execFile } from 'node:child_process';
import { hostGitProcessEnvironment } from '../git/harden.js';
import { execFileBinaryOffloaded, gitSpawnsOffloaded } from '../git/spawn-server.js';

/**
 * Issue 17 (dispatch overhead): an agent's commits travel in its job's progress as a git pack, so
 * the orchestrator has them without a `git fetch` from the shared remote. The worker still pushes
 * the agent branch (the remote stays the record; results of larger commits are fetched as before).
 */

/** The largest pack (bytes) that rides the job's progress; a larger one is fetched from the remote. */
export const packMaxBytes = 64 * 1024;
/** Its base64 length. */
export const packMaxChars = Math.ceil(packMaxBytes / 3) * 4;


function gitBinary(cwd: string, env: Readonly<Record<string, string | undefined>>, args: readonly string[], input: Buffer | string, maxBuffer: number): Promise<Buffer> {
  const environment = hostGitProcessEnvironment(args, env);
  return new Promise((resolve, reject) => {
    // Through the helper process once run-wave, program-execute or the worker turned it on: a spawn
    // from this (large) process blocks its event loop for the fork — ~65 ms per unpacked result on a
    // busy 2-core machine, which was most of bench:dispatch's "finish → result" (docs/performance.md).
    if (gitSpawnsOffloaded()) {
      execFileBinaryOffloaded('git', args, { cwd, env: environment, maxBuffer, input }, (error, stdout) => (error ? reject(error) : resolve(stdout)));
      return;
    }
    const child = execFile('git', [...args], { cwd, env: environment, encoding: 'buffer', maxBuffer }, (error, stdout) => (error ? reject(error) : resolve(stdout)));
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(input);
  });
}

const commitId = /^[0-9a-f]{40}([0-9a-f]{24})?$/;

/**
 * Worker: the objects of `head` that `base` lacks, as a base64 pack (no deltas against objects left
 * out: the receiver has the base) — undefined when it is larger than {@link packMaxBytes} or git fails.
 */
export async function packCommits(cwd: string, env: Readonly<Record<string, string | undefined>>, head: string, base: string): Promise<string | undefined> {
  if (!commitId.test(head) || !commitId.test(base)) return undefined;
  try {
    const pack = await gitBinary(cwd, env, ['pack-objects', '--revs', '--stdout', '--quiet'], `${head}\n^${base}\n`, packMaxBytes);
    return pack.length > 0 && pack.length <= packMaxBytes ? pack.toString('base64') : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Orchestrator: a pack from a job's progress written into `repoRoot`'s object store (shared by its
 * worktrees). `--strict`: an object with broken content or a link to an object the repository does
 * not hold is not written. Resolves false when it cannot be unpacked (the caller fetches instead).
 */
export async function unpackCommits(repoRoot: string, env: Readonly<Record<string, string | undefined>>, pack: string): Promise<boolean> {
  if (pack.length === 0 || pack.length > packMaxChars || !/^[A-Za-z0-9+/]+={0,2}$/.test(pack)) return false;
  try {
    await gitBinary(repoRoot, env, ['unpack-objects', '-q', '--strict'], Buffer.from(pack, 'base64'), 1024 * 1024);
    return true;
  } catch {
    return false;
  }
}
