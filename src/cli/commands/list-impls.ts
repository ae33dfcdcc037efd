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

/** Reads and summarizes the IMPL manifests of a directory (unreadable ones are listed in `skipped`). */
export async function summarizeImpls(directory: string, includeComplete: boolean): Promise<{ impls: ImplSummary[]; skipped: Array<{ path: string; error: string }> }> {
  const impls: ImplSummary[] = [];
  const skipped: Array<{ path: string; error: string }> = [];
  for (const file of listManifestFiles(directory, 'IMPL')) {
    const archived = file.split(path.sep).includes('complete');
    let parsed;
    try {
      parsed = parseImpl(await readTextFile(file));
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
