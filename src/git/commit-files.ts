import path from 'node:path';
import { noHooksGitConfig } from './harden.js';
import { runGit } from './run-git.js';

/**
 * Stages `files` and commits them (only them) with `message`; returns the new commit SHA.
 * Sets POLYWAVE_ALLOW_MAIN_COMMIT=1 (E43 guard bypass) and runs no hook at all (X8 #1, see harden.ts).
 */
export async function commitFiles(options: { cwd: string; files: string[]; message: string; env?: Readonly<Record<string, string | undefined>> }): Promise<string> {
  return oneAtATime(options.cwd, () => commitNow(options));
}

const queues = new Map<string, Promise<void>>();

/**
 * One commit at a time per checkout in this process (the PROGRAM tier loop scouts several IMPLs at once): two
 * commits would meet on index.lock, and HEAD read after a commit must be ours.
 */
function oneAtATime<T>(cwd: string, work: () => Promise<T>): Promise<T> {
  const key = path.resolve(cwd);
  const previous = queues.get(key) ?? Promise.resolve();
  const mine = previous.then(work);
  const settled = mine.then(
    () => undefined,
    () => undefined,
  );
  queues.set(key, settled);
  void settled.then(() => {
    if (queues.get(key) === settled) queues.delete(key);
  });
  return mine;
}

async function commitNow(options: { cwd: string; files: string[]; message: string; env?: Readonly<Record<string, string | undefined>> }): Promise<string> {
  // `env` replaces the child environment (as in runGit), so start from the caller's full env.
  const env = { ...(options.env ?? process.env), POLYWAVE_ALLOW_MAIN_COMMIT: '1' };
  await runGit(['add', '--', ...options.files], { cwd: options.cwd, env });
  // X8 #1: no hook — these are polywave's own commits, often of files an agent wrote in this checkout
  // (a scaffold or solo agent), and an in-tree core.hooksPath would run the agent's hook as the user.
  const noHooks = Object.entries(noHooksGitConfig).flatMap(([key, value]) => ['-c', `${key}=${value}`]);
  await runGit([...noHooks, 'commit', '--quiet', '-m', options.message, '--', ...options.files], { cwd: options.cwd, env });
  return (await runGit(['rev-parse', 'HEAD'], { cwd: options.cwd, env })).trim();
}

/**
 * Commits `text` as `file` (repository-relative, `/`-separated) on top of HEAD without reading the working tree: the
 * exact bytes the caller checked, whatever another process writes to the file meanwhile (outside attack X29-01: a
 * sibling Scout rewrote an IMPL between run-scout's check and its `git add`). The commit is made with plumbing (the
 * blob, the trees along the path, `commit-tree`, HEAD moved only if it is still where it was); then the index entry
 * is set to the same blob. Returns the new commit SHA, or undefined when HEAD already holds exactly that text.
 */
export async function commitText(options: { cwd: string; file: string; text: string; message: string; env?: Readonly<Record<string, string | undefined>> }): Promise<string | undefined> {
  return oneAtATime(options.cwd, () => commitTextNow(options));
}

async function commitTextNow(options: { cwd: string; file: string; text: string; message: string; env?: Readonly<Record<string, string | undefined>> }): Promise<string | undefined> {
  const env = { ...(options.env ?? process.env), POLYWAVE_ALLOW_MAIN_COMMIT: '1' };
  const git = (args: string[], input?: string) => runGit(args, { cwd: options.cwd, env, ...(input !== undefined ? { input } : {}) }).then((out) => out.trim());
  const head = await git(['rev-parse', '--verify', 'HEAD^{commit}']);
  const blob = await git(['hash-object', '-w', '--stdin'], options.text);
  const parts = options.file.split('/').filter(Boolean);
  /** The tree `tree` (undefined: none yet) with `parts` set to the blob; its new id. */
  const replace = async (tree: string | undefined, rest: string[]): Promise<string> => {
    const listing = tree ? await git(['ls-tree', '-z', tree]) : '';
    const entries = listing.split('\0').filter(Boolean);
    const [name, ...deeper] = rest;
    const kept = entries.filter((entry) => entry.slice(entry.indexOf('\t') + 1) !== name);
    let line: string;
    if (deeper.length === 0) {
      const current = entries.find((entry) => entry.slice(entry.indexOf('\t') + 1) === name);
      const mode = current?.startsWith('100755 ') ? '100755' : '100644';
      line = `${mode} blob ${blob}\t${name}`;
    } else {
      const sub = entries.find((entry) => entry.slice(entry.indexOf('\t') + 1) === name && entry.startsWith('040000 tree '));
      line = `040000 tree ${await replace(sub ? sub.split(' ')[2]!.split('\t')[0] : undefined, deeper)}\t${name}`;
    }
    return git(['mktree', '-z'], `${[...kept, line].join('\0')}\0`);
  };
  const headTree = await git(['rev-parse', `${head}^{tree}`]);
  const tree = await replace(headTree, parts);
  if (tree === headTree) return undefined;
  const commit = await git(['commit-tree', tree, '-p', head, '-m', options.message]);
  await git(['update-ref', '-m', `commit: ${options.message.split('\n')[0]}`, 'HEAD', commit, head]);
  await git(['update-index', '--add', '--cacheinfo', `100644,${blob},${options.file}`]);
  return commit;
}
