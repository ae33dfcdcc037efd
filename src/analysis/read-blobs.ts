import { randomBytes } from 'node:crypto';
import type { Git } from '../git/git-port.js';

/**
 * Reads many blobs with one `git cat-file --batch` process per chunk instead of one `git show`
 * per file (engine-cli.md §10.3). A spec is anything cat-file names: `<ref>:<path>` or a blob id.
 */

/** Specs per cat-file process (bounds the output buffered at once). */
const chunkSize = 2000;

/** One file at a ref: its text, or undefined when the path does not exist there (or is not a blob). */
export type BlobTexts = Map<string, string | undefined>;

/**
 * The spec naming `filePath` (repo-relative) at `ref`. A leading `./` is dropped: in `<ref>:./x`
 * git would resolve the path against the process's directory, not the tree root.
 */
export function blobSpec(ref: string, filePath: string): string {
  return `${ref}:${filePath.replace(/^(?:\.\/)+/, '')}`;
}

/**
 * Reads every spec; missing paths and non-blobs (trees, submodules) map to undefined. Text is
 * decoded as UTF-8. Specs containing a line break cannot go through the batch protocol and are
 * read one by one with `git cat-file blob`.
 */
export async function readBlobs(git: Git, specs: Iterable<string>): Promise<BlobTexts> {
  const unique = [...new Set(specs)];
  const result: BlobTexts = new Map();
  const batchable = unique.filter((spec) => !spec.includes('\n') && !spec.includes('\r'));
  const single = unique.filter((spec) => spec.includes('\n') || spec.includes('\r'));
  for (let start = 0; start < batchable.length; start += chunkSize) {
    const chunk = batchable.slice(start, start + chunkSize);
    for (const [spec, text] of await readChunk(git, chunk)) result.set(spec, text);
  }
  for (const spec of single) {
    const answer = await git.run(['cat-file', 'blob', spec], { allowExitCodes: [128] });
    result.set(spec, answer.exitCode === 0 ? answer.stdout : undefined);
  }
  return result;
}

async function readChunk(git: Git, specs: readonly string[]): Promise<BlobTexts> {
  const result: BlobTexts = new Map();
  if (specs.length === 0) return result;
  // A random marker opens every header, so content can never be mistaken for one.
  const nonce = `pw${randomBytes(12).toString('hex')}`;
  const { stdout } = await git.run(['cat-file', '--buffer', `--batch=${nonce} %(objecttype) %(objectsize)`], { input: `${specs.join('\n')}\n` });
  // Sizes are bytes. The port decodes stdout as UTF-8, which round-trips exactly for valid UTF-8;
  // a blob with invalid bytes grows when re-encoded, so every entry's end is verified and, when
  // it does not line up, found by searching for the next header instead.
  const output = Buffer.from(stdout, 'utf8');
  const nonceBytes = Buffer.from(`${nonce} `);
  const newline = 0x0a;
  const missingLine = (spec: string | undefined) => (spec === undefined ? undefined : [Buffer.from(`${spec} missing\n`), Buffer.from(`${spec} ambiguous\n`)]);
  const entryStartsAt = (position: number, index: number): boolean => {
    if (index >= specs.length) return position >= output.length;
    if (output.subarray(position, position + nonceBytes.length).equals(nonceBytes)) return true;
    return (missingLine(specs[index]) ?? []).some((line) => output.subarray(position, position + line.length).equals(line));
  };

  let position = 0;
  for (let index = 0; index < specs.length; index += 1) {
    const spec = specs[index]!;
    const missing = (missingLine(spec) ?? []).find((line) => output.subarray(position, position + line.length).equals(line));
    if (missing) {
      result.set(spec, undefined);
      position += missing.length;
      continue;
    }
    if (!output.subarray(position, position + nonceBytes.length).equals(nonceBytes)) {
      // Lost track (should not happen): read the rest one by one.
      for (const rest of specs.slice(index)) result.set(rest, await readOne(git, rest));
      return result;
    }
    const headerEnd = output.indexOf(newline, position);
    const [type = '', sizeText = '0'] = output.toString('utf8', position + nonceBytes.length, headerEnd).split(' ');
    const size = Number.parseInt(sizeText, 10);
    const contentStart = headerEnd + 1;
    let contentEnd = contentStart + size;
    if (!(output[contentEnd] === newline && entryStartsAt(contentEnd + 1, index + 1))) {
      contentEnd = findEntryEnd(output, contentStart, nonceBytes, missingLine(specs[index + 1]));
    }
    result.set(spec, type === 'blob' ? output.toString('utf8', contentStart, contentEnd) : undefined);
    position = contentEnd + 1;
  }
  return result;
}

/** The offset of the newline that ends an entry's content: before the next header, or the final newline. */
function findEntryEnd(output: Buffer, from: number, nonceBytes: Buffer, nextMissing: Buffer[] | undefined): number {
  const candidates = [Buffer.concat([Buffer.from('\n'), nonceBytes]), ...(nextMissing ?? []).map((line) => Buffer.concat([Buffer.from('\n'), line]))];
  let best = -1;
  if (nextMissing !== undefined) {
    for (const candidate of candidates) {
      const found = output.indexOf(candidate, from);
      if (found !== -1 && (best === -1 || found < best)) best = found;
    }
  }
  return best === -1 ? Math.max(from, output.length - 1) : best;
}

async function readOne(git: Git, spec: string): Promise<string | undefined> {
  const answer = await git.run(['cat-file', 'blob', spec], { allowExitCodes: [128] });
  return answer.exitCode === 0 ? answer.stdout : undefined;
}
