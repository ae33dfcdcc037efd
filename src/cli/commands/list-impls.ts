import path from 'node:path';
import { parseImpl } from '../../protocol/parse-impl.js';
import { currentWave } from '../../protocol/waves.js';
import { listManifestFiles } from '../../store/list-manifests.js';
import { readTextFile } from '../../store/read-text.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';

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

/**
 * Reads and summarizes the IMPL manifests of a directory (unreadable ones are listed in `skipped`).
 * Archived manifests (under `complete/`) are not read at all unless `includeComplete`.
 */
export async function summarizeImpls(directory: string, includeComplete: boolean): Promise<{ impls: ImplSummary[]; skipped: Array<{ path: string; error: string }> }> {
  const impls: ImplSummary[] = [];
  const skipped: Array<{ path: string; error: string }> = [];
  const isArchived = (file: string): boolean => file.split(path.sep).includes('complete');
  const files = listManifestFiles(directory, 'IMPL').filter((file) => includeComplete || !isArchived(file));
  const reads: Array<Promise<{ text: string } | { error: unknown }>> = [];
  const startRead = (index: number): void => {
    if (index < files.length && reads[index] === undefined) reads[index] = readTextFile(files[index]!).then((text) => ({ text }), (error: unknown) => ({ error }));
  };
  for (const [index, file] of files.entries()) {
    for (let ahead = index; ahead <= index + readAhead; ahead += 1) startRead(ahead);
    const read = await reads[index]!;
    const archived = isArchived(file);
    let parsed;
    try {
      if ('error' in read) throw read.error;
      parsed = parseImpl(read.text);
    } catch (error) {
      skipped.push({ path: file, error: (error as Error).message });
      continue;
    }
    const manifest = parsed.manifest;
    if (!manifest) {
      skipped.push({ path: file, error: parsed.findings[0]?.message ?? 'not a manifest' });
      continue;
    }
    if (!includeComplete && (archived || manifest.state === 'COMPLETE')) continue;
    const waves = manifest.waves ?? [];
    impls.push({
      path: file,
      feature_slug: manifest.feature_slug ?? '',
      verdict: manifest.verdict ?? '',
      state: manifest.state ?? '',
      current_wave: currentWave(manifest)?.number ?? waves.length,
      total_waves: waves.length,
    });
  }
  return { impls, skipped };
}

/** `list-impls [--dir docs/IMPL] [--include-complete]` — `{impls[…]}` (plus `skipped` when some were unreadable). */
export async function run(_args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const directory = path.resolve(io.cwd, typeof options.dir === 'string' ? options.dir : 'docs/IMPL');
  const { impls, skipped } = await summarizeImpls(directory, Boolean(options.includeComplete));
  printJson(io, { impls, ...(skipped.length > 0 ? { skipped } : {}) });
  return 0;
}
