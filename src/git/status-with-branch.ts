import { PolywaveError } from '../errors/polywave-error.js';
import type { Git, StatusEntry } from './git-port.js';

/**
 * `status --porcelain=v2 --branch`: the current branch (`# branch.head`; undefined when detached —
 * an unborn branch is named, as `branch --show-current` does), HEAD's commit (`# branch.oid`;
 * undefined when unborn) and the entries `git.status()` gives (same options: every untracked file,
 * no ignored ones; renames with their old path), in one process instead of two or three.
 */
export async function statusWithBranch(git: Git): Promise<{ branch: string | undefined; head: string | undefined; entries: StatusEntry[] }> {
  // X30-13: git opens every `.gitignore` on its way without O_NONBLOCK, so a FIFO an agent put there holds the status —
  // and the agent's run with it — for ever. Bounded: killed after the limit, and the caller's check fails closed.
  const limitMs = Number(process.env.POLYWAVE_GIT_STATUS_TIMEOUT_MS) || 120_000;
  let output: string;
  try {
    output = (await git.run(['--no-optional-locks', 'status', '--porcelain=v2', '-z', '--branch', '--untracked-files=all', '--ignored=no'], { signal: AbortSignal.timeout(limitMs) })).stdout;
  } catch (error) {
    if (!(error instanceof Error) || (error.name !== 'AbortError' && error.name !== 'TimeoutError' && !/killed by SIGTERM|aborted/i.test(error.message))) throw error;
    throw new PolywaveError({
      code: 'GIT_STATUS_TIMEOUT',
      message: `git status in ${git.cwd} did not answer in ${Math.round(limitMs / 1000)} s (a FIFO where git reads — a .gitignore, .gitattributes — blocks it): the check fails closed`,
      cause: error,
    });
  }
  const fields = output.split('\0');
  let branch: string | undefined;
  let head: string | undefined;
  const entries: StatusEntry[] = [];
  // Fields before the path: ordinary `1` 8, renamed/copied `2` 9 (then the old path), unmerged `u` 10.
  const fieldsBeforePath: Record<string, number> = { '1': 8, '2': 9, u: 10 };
  for (let index = 0; index < fields.length; index++) {
    const field = fields[index]!;
    if (field.startsWith('# branch.oid ')) {
      const oid = field.slice('# branch.oid '.length);
      head = /^[0-9a-f]{40,64}$/.test(oid) ? oid : undefined;
      continue;
    }
    if (field.startsWith('# branch.head ')) {
      const name = field.slice('# branch.head '.length);
      branch = name === '(detached)' || name === '' ? undefined : name;
      continue;
    }
    if (field.startsWith('? ')) {
      entries.push({ code: '??', path: field.slice(2) });
      continue;
    }
    const count = fieldsBeforePath[field.charAt(0)];
    if (count === undefined || field.charAt(1) !== ' ') continue;
    const parts = field.split(' ');
    if (parts.length <= count) continue;
    const entry: StatusEntry = { code: parts[1]!.replace(/\./g, ' '), path: parts.slice(count).join(' ') };
    if (field.charAt(0) === '2') {
      entry.from = fields[index + 1] ?? '';
      index++;
    }
    entries.push(entry);
  }
  return { branch, head, entries };
}
