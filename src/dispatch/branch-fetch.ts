import type { Git } from '../git/git-port.js';

/** Fetches agent branches from the shared remote into a repository's object store. */
export type BranchFetcher = (repoRoot: string, branch: string) => Promise<void>;

interface Waiting {
  branch: string;
  settle: (error?: unknown) => void;
}

/**
 * Issue 17: one `git fetch` for the results that arrive together. The agent worktrees of a
 * repository share its object store, so the branches of every result asked for in the same turn of
 * the event loop — or while a fetch runs — are fetched by ONE `git fetch <remote> <branch>…` in the
 * repository (no ref written, no FETCH_HEAD, no auto-maintenance spawn); each caller then
 * fast-forwards its own worktree to the exact commit its result names. When the batch fails (one
 * branch the remote lacks fails the whole fetch) its branches are fetched one by one, so only the
 * failing ones reject.
 */
export function createBranchFetcher(remote: string, gitOf: (directory: string) => Git): BranchFetcher {
  const queues = new Map<string, { waiting: Waiting[]; running: boolean }>();
  const fetchRefs = (repoRoot: string, branches: readonly string[]) => gitOf(repoRoot).run(['fetch', '--quiet', '--no-tags', '--no-write-fetch-head', '--no-auto-maintenance', remote, ...branches.map((branch) => `refs/heads/${branch}`)]);

  const drain = async (repoRoot: string, entry: { waiting: Waiting[]; running: boolean }): Promise<void> => {
    entry.running = true;
    try {
      // Results handed over in the same turn (one Redis reply carries several) join this batch.
      await new Promise((resolve) => setImmediate(resolve));
      while (entry.waiting.length > 0) {
        const group = entry.waiting;
        entry.waiting = [];
        const names = [...new Set(group.map((item) => item.branch))];
        try {
          await fetchRefs(repoRoot, names);
          for (const item of group) item.settle();
        } catch (error) {
          if (names.length === 1) for (const item of group) item.settle(error);
          else {
            await Promise.all(
              names.map(async (name) => {
                const failure = await fetchRefs(repoRoot, [name]).then(
                  () => undefined,
                  (caught: unknown) => caught ?? new Error('git fetch failed'),
                );
                for (const item of group) if (item.branch === name) item.settle(failure);
              }),
            );
          }
        }
      }
    } finally {
      entry.running = false;
    }
  };

  return (repoRoot, branch) =>
    new Promise<void>((resolve, reject) => {
      let entry = queues.get(repoRoot);
      if (!entry) queues.set(repoRoot, (entry = { waiting: [], running: false }));
      entry.waiting.push({ branch, settle: (error) => (error === undefined ? resolve() : reject(error instanceof Error ? error : new Error(String(error)))) });
      if (!entry.running) void drain(repoRoot, entry);
    });
}
