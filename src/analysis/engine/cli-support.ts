/** Shared input checks of the engine's commands (check-callers, analyze-deps, detect-cascades). */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { PolywaveError } from '../../errors/polywave-error.js';
import { setAnalysisWorkers } from './index.js';
import { poolSize } from './parse-pool.js';
import { repoContext } from './repo-files.js';
import { currentScope } from './scope.js';

export { analysisCall } from './scope.js';

/** The top level of the git repository at `dir` (D011_REPO_ROOT_INVALID, exit 2, when there is none). */
export async function requireRepository(dir: string): Promise<string> {
  const isDirectory = await stat(dir).then(
    (stats) => stats.isDirectory(),
    () => false,
  );
  if (!isDirectory) throw new PolywaveError({ code: 'D011_REPO_ROOT_INVALID', message: `${dir} is not a directory` });
  try {
    return (await repoContext(dir)).root;
  } catch {
    throw new PolywaveError({ code: 'D011_REPO_ROOT_INVALID', message: `${dir} is not inside a git repository` });
  }
}

/** `--format` value among `allowed` (X001, exit 2, otherwise). */
export function requireFormat<T extends string>(value: unknown, allowed: readonly T[], fallback: T): T {
  const format = typeof value === 'string' ? value.toLowerCase() : fallback;
  if (!(allowed as readonly string[]).includes(format)) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `unsupported format: ${String(value)} (use ${allowed.join(' or ')})` });
  }
  return format as T;
}

/** A path given on the command line, relative to `root` (`/`-separated), or X001 when it leaves the repository. */
export function repoRelative(root: string, base: string, file: string): string {
  const absolute = path.resolve(base, file);
  const relative = path.relative(root, absolute).split(path.sep).join('/');
  if (relative === '' || relative.startsWith('../') || relative === '..' || path.isAbsolute(relative)) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${file} is outside the repository ${root}` });
  }
  return relative;
}

/** YAML as the Go tool prints it (yaml.v3: 4-space indent, no line folding). */
export function toYaml(value: unknown): string {
  return stringify(value, { indent: 4, lineWidth: 0 });
}

/** With POLYWAVE_ANALYSIS_STATS=1: one stderr line `analysis: parsed N, cached M` for this call (tests and benches read it). */
export function reportStats(env: Readonly<Record<string, string | undefined>>, stderr: (text: string) => void): void {
  if (env.POLYWAVE_ANALYSIS_STATS !== '1') return;
  const counters = currentScope().counters;
  stderr(`analysis: parsed ${counters.parsed}, cached ${counters.cached}\n`);
}

/** Engine settings a command takes from its environment (POLYWAVE_ANALYSIS_WORKERS). */
export function configureEngine(env: Readonly<Record<string, string | undefined>>): void {
  setAnalysisWorkers(poolSize(env));
}
