import path from 'node:path';
import { parseImpl } from '../../protocol/parse-impl.js';
import { currentWave } from '../../protocol/waves.js';
import { listManifestFiles } from '../../store/list-manifests.js';
import { readTextFile } from '../../store/read-text.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { ListImplsCache, statOrUndefined, type CachedOutcome } from './list-impls-cache.js';
import { repoDirOption } from './repo-dir-option.js';

export interface ImplSummary {
  path: string;
  feature_slug: string;
  verdict: string;
  state: string;
  current_wave: number;
  total_waves: number;
}

/** How many manifests are read ahead while one is parsed. */
const readAhead = 8;

/** Parses one manifest text into what list-impls shows of it. */
function outcomeOf(text: string): CachedOutcome {
  const parsed = parseImpl(text);
  const manifest = parsed.manifest;
  if (!manifest) return { error: parsed.findings[0]?.message ?? 'not a manifest' };
  const waves = manifest.waves ?? [];
  return {
    summary: {
      feature_slug: manifest.feature_slug ?? '',
      verdict: manifest.verdict ?? '',
      state: manifest.state ?? '',
      current_wave: currentWave(manifest)?.number ?? waves.length,
      total_waves: waves.length,
    },
  };
}

/**
 * Reads and summarizes the IMPL manifests of a directory (unreadable ones are listed in `skipped`).
 * Archived manifests (under `complete/`) are not read at all unless `includeComplete`. With a
 * cache, a manifest unchanged since an earlier call is not read again (list-impls-cache.ts).
 */
export async function summarizeImpls(
  directory: string,
  includeComplete: boolean,
  cache?: ListImplsCache,
): Promise<{ impls: ImplSummary[]; skipped: Array<{ path: string; error: string }> }> {
  const impls: ImplSummary[] = [];
  const skipped: Array<{ path: string; error: string }> = [];
  const isArchived = (file: string): boolean => file.split(path.sep).includes('complete');
  const files = listManifestFiles(directory, 'IMPL').filter((file) => includeComplete || !isArchived(file));
  const cached = files.map((file) => cache?.lookup(file));
  type Read = { text: string; stats: ReturnType<typeof statOrUndefined> } | { error: unknown };
  const reads: Array<Promise<Read> | undefined> = [];
  const startRead = (index: number): void => {
    if (index >= files.length || reads[index] !== undefined || cached[index] !== undefined) return;
    const file = files[index]!;
    const stats = cache ? statOrUndefined(file) : undefined;
    reads[index] = readTextFile(file).then((text) => ({ text, stats }), (error: unknown) => ({ error }));
  };
  for (const [index, file] of files.entries()) {
    for (let ahead = index; ahead <= index + readAhead; ahead += 1) startRead(ahead);
    let outcome = cached[index];
    if (outcome === undefined) {
      const read = await reads[index]!;
      try {
        if ('error' in read) throw read.error;
        outcome = outcomeOf(read.text);
      } catch (error) {
        skipped.push({ path: file, error: (error as Error).message });
        continue;
      }
      cache?.store(file, read.stats, outcome);
    }
    if ('error' in outcome) {
      skipped.push({ path: file, error: outcome.error });
      continue;
    }
    if (!includeComplete && (isArchived(file) || outcome.summary.state === 'COMPLETE')) continue;
    impls.push({ path: file, ...outcome.summary });
  }
  cache?.save();
  return { impls, skipped };
}

/**
 * `list-impls [--dir docs/IMPL] [--include-complete] [--repo-dir R]` — `{impls[…]}` (plus `skipped`
 * when some were unreadable). An explicit `--dir` is taken from the current directory; the default
 * is R/docs/IMPL (R = --repo-dir, else the current directory; Go ignores --repo-dir here).
 */
export async function run(_args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const directory = typeof options.dir === 'string' ? path.resolve(io.cwd, options.dir) : path.join(repoDirOption(options, io) ?? io.cwd, 'docs', 'IMPL');
  const cache = ListImplsCache.open(directory, import.meta.url, io.env);
  const { impls, skipped } = await summarizeImpls(directory, Boolean(options.includeComplete), cache);
  printJson(io, { impls, ...(skipped.length > 0 ? { skipped } : {}) });
  return 0;
}
