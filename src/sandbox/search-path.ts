import path from 'node:path';

/** The directories execvp searches when PATH is unset (glibc's default). */
const defaultSearchPath = '/usr/local/bin:/usr/bin:/bin';

/**
 * PATH with only its absolute entries (X40-02, X41-01/02/05). polywave starts host programs (git, the sandbox
 * wrapper's `bash` and the `bwrap` in it, the sandbox probe) with a cwd an agent can write — its worktree, or the main
 * checkout where its merged work lands — and an empty entry (`PATH=:$PATH`, `PATH=$EXTRA:$PATH` with EXTRA unset) or
 * a relative one (`node_modules/.bin`, `.`) is searched relative to that cwd: the agent's own `git` or `bash` ran on
 * the host, outside the sandbox. Never empty (an empty PATH is the current directory too): the default search path
 * then. Undefined when unset.
 */
export function absolutePathEntries(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const kept = value.split(path.delimiter).filter((entry) => path.isAbsolute(entry));
  return kept.length > 0 ? kept.join(path.delimiter) : defaultSearchPath;
}

/** `env` with {@link absolutePathEntries} of its PATH (the same object when nothing changes). */
export function withAbsolutePath<T extends Readonly<Record<string, string | undefined>>>(env: T): T {
  const value = env.PATH;
  const kept = absolutePathEntries(value);
  return kept === value ? env : ({ ...env, PATH: kept } as T);
}
