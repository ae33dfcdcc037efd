import { randomBytes } from 'node:crypto';
import { chmod, mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Replaces a file atomically (temp file in the same directory + rename; parent directories
 * created), without fsync: for files prepare-wave regenerates on every run (briefs, markers,
 * hooks), where a torn write after a power cut is repaired by the next run and an fsync per file
 * would dominate a 100-agent wave. Manifests go through store/ (locked, fsynced) instead.
 */
export async function writeTextAtomic(filePath: string, text: string, options: { mode?: number } = {}): Promise<void> {
  await mkdir(path.dirname(filePath), { recursive: true });
  const temporary = path.join(path.dirname(filePath), `.${path.basename(filePath)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  await writeFile(temporary, text, options.mode === undefined ? {} : { mode: options.mode });
  if (options.mode !== undefined) await chmod(temporary, options.mode);
  await rename(temporary, filePath);
}
