/**
 * The one way anything goes into polywave's quarantine (`<git common dir>/polywave/quarantine/…`): moved, never
 * deleted, and renamed so that nothing takes it for code any more. Outside attack X28-09: a leftover test file moved
 * there under its own name (`helpers.test.js`) was found and run by the user's `npm test` (`node --test` searches
 * `.git` too), outside any sandbox. Every file moved in — and every file inside a directory moved in — ends in
 * {@link quarantineSuffix}: no test runner's pattern (`*.test.js`, `test_*.py`, `*_test.go`), loader or shell glob
 * matches it, and a moved `.git` is no longer a repository git would enter. To look at one, drop the suffix.
 *
 * The names are the agent's to choose, so none of them may make the rename fail (X29-03, X29-05: a directory named
 * `helpers.test.js.quarantined` beside `helpers.test.js`, or one that took the destination of another entry): a name
 * that is taken or too long gets a generated one (`q-<n>.quarantined`), recorded with the original in the
 * directory's `quarantine-names.json.quarantined`; nothing is ever renamed over an existing entry. Should a file still
 * keep a name without the suffix, the move fails (the caller reports it, and the run does not count it as undone).
 */
import { randomBytes } from 'node:crypto';
import { chmod, lstat, mkdir, readdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** Appended to the name of every file in the quarantine. */
export const quarantineSuffix = '.quarantined';

/** The index of generated names in a directory of the quarantine (it ends in the suffix itself). */
const namesFile = `quarantine-names.json${quarantineSuffix}`;

const exists = async (file: string): Promise<boolean> => lstat(file).then(() => true, () => false);

/** A free name in `directory` for `name`: `<name>.quarantined` when free and short enough, else a generated one. */
async function freeName(directory: string, name: string, suffix: string): Promise<string> {
  const wanted = `${name}${suffix}`;
  if (Buffer.byteLength(wanted) <= 255 && !(await exists(path.join(directory, wanted)))) return wanted;
  for (;;) {
    const generated = `q-${randomBytes(6).toString('hex')}${suffix}`;
    if (!(await exists(path.join(directory, generated)))) return generated;
  }
}

/** Records `original` → `given` in `directory`'s names index. */
async function recordName(directory: string, names: Map<string, string>, original: string, given: string): Promise<void> {
  names.set(given, original);
  await writeFile(path.join(directory, namesFile), `${JSON.stringify(Object.fromEntries(names), null, 2)}\n`);
}

/**
 * Moves `from` (a file, a link as a link, or a directory) into the quarantine at `to` (its parents made, `mode` for
 * them); a file gets the suffix, a directory keeps its name (or a generated one when taken) and every file below it
 * gets the suffix. Resolves the path it now has; rejects when something could not be made harmless.
 */
export async function moveToQuarantine(from: string, to: string, options: { mode?: number } = {}): Promise<string> {
  const stats = await lstat(from);
  const parent = path.dirname(to);
  await mkdir(parent, { recursive: true, ...(options.mode !== undefined ? { mode: options.mode } : {}) });
  const name = await freeName(parent, path.basename(to), stats.isDirectory() ? '' : quarantineSuffix);
  const destination = path.join(parent, name);
  await rename(from, destination);
  if (stats.isDirectory()) await neutralize(destination);
  return destination;
}

async function neutralize(directory: string): Promise<void> {
  const names = new Map<string, string>();
  // X30-07: a directory the agent made read-only (0555, or 0000) kept its files' names: ours now, so writable to us first.
  const stats = await lstat(directory);
  if ((stats.mode & 0o700) !== 0o700) await chmod(directory, (stats.mode & 0o7777) | 0o700);
  const entries = await readdir(directory, { withFileTypes: true });
  for (const entry of entries) {
    const at = path.join(directory, entry.name);
    if (entry.isDirectory()) {
      await neutralize(at);
      continue;
    }
    if (entry.name.endsWith(quarantineSuffix)) continue;
    const given = await freeName(directory, entry.name, quarantineSuffix);
    await rename(at, path.join(directory, given));
    if (given !== `${entry.name}${quarantineSuffix}`) await recordName(directory, names, entry.name, given);
  }
  // Fail closed: nothing below keeps a name a runner could take.
  const left = (await readdir(directory, { withFileTypes: true })).filter((entry) => !entry.isDirectory() && !entry.name.endsWith(quarantineSuffix));
  if (left.length > 0) throw new Error(`could not rename ${left.map((entry) => path.join(directory, entry.name)).join(', ')} in the quarantine`);
}
