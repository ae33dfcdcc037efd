/**
 * Recognizes the sandbox's refusals in a command's output, so that a contained attempt is recorded
 * as a denial (journal, events, the outcome) and the model is told why — the sandbox itself only
 * makes the operation fail (read-only file system, an unreachable network, a proxy's 403).
 */

import { realpathSync } from 'node:fs';
import path from 'node:path';
import type { SandboxPlan } from '../../sandbox/sandbox-plan.js';

/** Stable codes of the refusals the sandbox causes. */
export type SandboxDenialCode = 'SANDBOX_WRITE_DENIED' | 'SANDBOX_NETWORK_DENIED' | 'SANDBOX_PATH_SWAPPED';

export interface SandboxDenial {
  code: SandboxDenialCode;
  reason: string;
}

const writePatterns = [/Read-only file system/i, /\bEROFS\b/];
const networkPatterns = [
  /blocked[- ]by[- ](network )?allowlist/i,
  /Network is unreachable/i,
  /\bENETUNREACH\b/,
  /\bEAI_AGAIN\b/,
  /Temporary failure in name resolution/i,
  /Could not resolve host/i,
  // curl in a sandbox with no network at all (no host allowed: no proxy, only a loopback
  // interface) says only this for an outside address; a loopback one is the sandbox's own.
  /Failed to connect to (?!localhost\b|127\.|::1\b|\[::1\])\S+ port \d+.*Couldn't connect to server/i,
];

/**
 * What the sandbox does with a write: the plan it runs under and the directory the command ran in (relative paths).
 * Outside round A24-08a: a step that merely PRINTED `EROFS: read-only file system` (and failed, exit 1) was reported
 * `SANDBOX_WRITE_DENIED` — the sandbox had refused nothing, and the step's own failure went unnamed.
 */
export interface SandboxWriteJudge {
  plan: Pick<SandboxPlan, 'writable' | 'readOnlyWithin' | 'emptyReadOnly'>;
  cwd: string;
}

/** The paths a read-only-file-system line names: quoted ones, and the one a shell puts before the error. */
function pathsNamedIn(line: string): string[] {
  const found: string[] = [];
  // (gawk quotes `so')
  for (const match of line.matchAll(/`([^`']+)'|'([^']+)'|"([^"]+)"|‘([^’]+)’|“([^”]+)”|`([^`]+)`/g)) found.push(match[1] ?? match[2] ?? match[3] ?? match[4] ?? match[5] ?? match[6] ?? '');
  // bash: `bash: line 1: ../x: Read-only file system`; git: `could not lock config file /r/.git/config: Read-only file
  // system`; python: `… Read-only file system: '/x'` (quoted, above)
  const before = /^(.*?):\s*Read-only file system/i.exec(line)?.[1];
  if (before !== undefined) {
    const last = before.split(': ').pop()?.trim() ?? '';
    if (last !== '' && !/\s/.test(last) && !/^(EROFS|Error|OSError|IOError|PermissionError|\[Errno \d+\])$/i.test(last)) found.push(last);
    else if (/\s/.test(last)) {
      const token = last.split(/\s+/).pop() ?? '';
      if (/^(\/|\.{1,2}\/|~\/)/.test(token)) found.push(token);
    }
  }
  return found.map((entry) => entry.trim()).filter((entry) => entry !== '' && !/[\n\0]/.test(entry));
}

/** The real path of `entry`, as far as it exists (a file a refused write would have made does not). */
function realAsFarAsItExists(entry: string): string {
  let existing = path.resolve(entry);
  const rest: string[] = [];
  for (;;) {
    try {
      return path.join(realpathSync(existing), ...rest);
    } catch {
      const parent = path.dirname(existing);
      if (parent === existing) return path.resolve(entry);
      rest.unshift(path.basename(existing));
      existing = parent;
    }
  }
}

function inside(child: string, parent: string): boolean {
  const relative = path.relative(path.resolve(parent), child);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/** Whether the sandbox keeps `target` read-only: outside every writable path, or inside a read-only part of one. */
function sandboxRefusesWrite(judge: SandboxWriteJudge, target: string): boolean {
  const resolved = realAsFarAsItExists(path.resolve(judge.cwd, target));
  if ([...judge.plan.readOnlyWithin, ...(judge.plan.emptyReadOnly ?? [])].some((entry) => inside(resolved, entry) || inside(resolved, realAsFarAsItExists(entry)))) return true;
  return !judge.plan.writable.some((entry) => inside(resolved, entry) || inside(resolved, realAsFarAsItExists(entry)));
}

/**
 * The first write refusal and the first network refusal in `output` (at most one of each). A write refusal counts only
 * when its line names a path the sandbox keeps read-only (`judge`): the words alone — a line naming no path, or a path
 * the agent may write (a read-only disk, a message a step printed) — are not the sandbox's doing (A24-08a).
 */
export function sandboxDenialsIn(output: string, judge: SandboxWriteJudge): SandboxDenial[] {
  const denials: SandboxDenial[] = [];
  const lines = output.split('\n');
  const writeLine = lines.find((line) => writePatterns.some((pattern) => pattern.test(line)) && pathsNamedIn(line).some((target) => sandboxRefusesWrite(judge, target)));
  if (writeLine !== undefined) denials.push({ code: 'SANDBOX_WRITE_DENIED', reason: `the OS sandbox refused a write outside the agent's writable area: ${writeLine.trim().slice(0, 300)}` });
  const networkLine = lines.find((line) => networkPatterns.some((pattern) => pattern.test(line)));
  if (networkLine !== undefined) denials.push({ code: 'SANDBOX_NETWORK_DENIED', reason: `the OS sandbox refused a network connection (not on sandbox.network.allow): ${networkLine.trim().slice(0, 300)}` });
  return denials;
}

/** True when a failed git command in the sandbox tried to write the repository's metadata. */
export function isGitWriteRefusal(command: string, output: string): boolean {
  if (!/\bgit\b/.test(command)) return false;
  return /Read-only file system|Unable to create '[^']*\.lock'|could not lock config file|cannot lock ref|unable to write new index file|insufficient permission for adding an object/i.test(output);
}

/** What the bash tool tells the model when git could not write `.git` inside the sandbox. */
export const gitCommitHint =
  'Inside the sandbox the repository metadata (.git) is read-only: git add, git commit and other git writes fail here. Commit your owned files with the git_commit tool instead (it stages and commits outside the sandbox).';
