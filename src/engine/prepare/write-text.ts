import { chmod, mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { tempPathFor } from '../../store/atomic-file.js';

/**
 * Replaces a file atomically (temp file in the same directory + rename; parent directories
 * created), without fsync: for files prepare-wave regenerates on every run (briefs, markers,
 * hooks), where a torn write after a power cut is repaired by the next run and an fsync per file
 * would dominate a 100-agent wave. Manifests go through store/ (locked, fsynced) instead.
 * The temp file is named as every atomic write names it (store/atomic-file.ts tempPathFor), so a
 * write killed before its rename leaves one that the cleanups of those names know.
 */
export async function writeTextAtomic(filePath: string, text: string, options: { mode?: number } = {}): Promise<void> {
  await mkdir(path.dirname(filePath), { recursive: true });
  const temporary = tempPathFor(filePath);
  await writeFile(temporary, text, options.mode === undefined ? {} : { mode: options.mode });
  if (options.mode !== undefined) await chmod(temporary, options.mode);
  await rename(temporary, filePath);
}
