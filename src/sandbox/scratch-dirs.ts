/**
 * Where polywave's private scratch directories live (outside attack 2026-12-02, #12): every agent's
 * HOME/TMPDIR (`polywave-agent-<id>-*`, where Claude Code keeps its transcripts and Codex its
 * sessions) and every gate's TMPDIR (`polywave-gate-*`) is made under ONE per-user parent,
 * `<tmp>/polywave-scratch-<uid>/` (mode 0700). Both sandbox plans make that whole parent
 * unreadable and list the process's own scratch directories as writable: sandbox-runtime mounts an
 * empty tmpfs over the parent and binds the own ones back over it. So an agent sees neither the
 * scratch directories of the agents and gates that exist when its sandbox starts nor those made
 * later (its tool executor is one long-lived sandbox). Agents all run as the same uid: 0700 alone
 * does not keep one agent out of another's directory.
 */
import { chmodSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** The parent of this user's scratch directories: `<os.tmpdir()>/polywave-scratch-<uid>`. */
export function scratchParent(): string {
  return parentIn(os.tmpdir());
}

function parentIn(tmp: string): string {
  const uid = typeof process.getuid === 'function' ? process.getuid() : 'user';
  return path.join(tmp, `polywave-scratch-${uid}`);
}

/**
 * Creates {@link scratchParent} (0700) when missing and checks it is a real directory of this
 * user — in a shared /tmp another user could have made the name first (then this throws).
 */
export function ensureScratchParent(): string {
  const parent = scratchParent();
  mkdirSync(parent, { recursive: true, mode: 0o700 });
  const stat = lstatSync(parent);
  const uid = typeof process.getuid === 'function' ? process.getuid() : undefined;
  if (!stat.isDirectory() || (uid !== undefined && stat.uid !== uid)) {
    throw new Error(`${parent} is not a directory of this user (uid ${uid ?? '?'}): remove it or set TMPDIR elsewhere`);
  }
  if ((stat.mode & 0o077) !== 0) chmodSync(parent, 0o700);
  return parent;
}

/** A new scratch directory `<parent>/<prefix>XXXXXX` (prefix such as `polywave-agent-A-`). */
export async function makeScratchDir(prefix: string): Promise<string> {
  return mkdtemp(path.join(ensureScratchParent(), prefix));
}

/** Names of scratch directories that older polywave versions made directly in the temp directory. */
const legacyScratchName = /^polywave-(agent|gate)-/;

/**
 * Every path a sandbox must not read because it holds some polywave process's scratch files: the
 * scratch parent (whatever is made in it later included) and the scratch directories that older
 * versions made directly in the temp directory (those existing now) — in this process's temp
 * directory, in `env`'s (an orchestrator whose TMPDIR differs), in /tmp, /var/tmp and /dev/shm. The caller's own scratch
 * directories stay readable by being writable in its plan (bound back over the parent).
 */
export function foreignScratchDirs(env: Readonly<Record<string, string | undefined>> = process.env): string[] {
  // /var/tmp and /dev/shm too: a concurrent run whose TMPDIR is one of them keeps its agents' scratch
  // directories there (outside attack X3 #8). A run with any other TMPDIR is not seen from here.
  const roots = [...new Set([os.tmpdir(), env.TMPDIR, '/tmp', ...(process.platform === 'win32' ? [] : ['/var/tmp', '/dev/shm'])].filter((entry): entry is string => typeof entry === 'string' && path.isAbsolute(entry)).map((entry) => path.resolve(entry)))];
  const result: string[] = roots.map(parentIn);
  for (const tmp of roots) {
    try {
      for (const name of readdirSync(tmp)) if (legacyScratchName.test(name)) result.push(path.join(tmp, name));
    } catch {
      // an unreadable temp directory: only the parent
    }
  }
  return [...new Set(result)];
}
