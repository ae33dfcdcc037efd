/**
 * Recognizes the sandbox's refusals in a command's output, so that a contained attempt is recorded
 * as a denial (journal, events, the outcome) and the model is told why — the sandbox itself only
 * makes the operation fail (read-only file system, an unreachable network, a proxy's 403).
 */

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

/** The first write refusal and the first network refusal in `output` (at most one of each). */
export function sandboxDenialsIn(output: string): SandboxDenial[] {
  const denials: SandboxDenial[] = [];
  const lines = output.split('\n');
  const writeLine = lines.find((line) => writePatterns.some((pattern) => pattern.test(line)));
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
