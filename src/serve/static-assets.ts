import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { brotliCompress, constants as zlibConstants, gzip } from 'node:zlib';

const brotli = promisify(brotliCompress);
const gzipAsync = promisify(gzip);

/** File types worth compressing (text); images and fonts are compressed already. */
const compressible = new Set(['.html', '.js', '.mjs', '.css', '.json', '.svg', '.txt', '.map', '.webmanifest', '.ico']);
/**
 * Brotli quality for the on-the-fly compression: 5 gives the UI's 101 KB entry JS in 33.4 KB in ~25 ms; 11 gives
 * 31.0 KB but takes 200-360 ms (on this 2-core machine under load) — paid by the first page load after each start.
 */
const brotliQuality = 5;
/** Below this size a compressed body saves less than its headers cost. */
export const compressThreshold = 1024;

export type ContentCoding = 'br' | 'gzip' | 'identity';

export interface StaticBody {
  body: Buffer;
  encoding: ContentCoding;
  /** Strong ETag of this representation (each coding has its own: they are other bytes). */
  etag: string;
  /** True when the file type is compressible (the answer then varies by Accept-Encoding). */
  varies: boolean;
}

interface Entry {
  key: string;
  identity: Buffer;
  hash: string;
  varies: boolean;
  coded: Map<'br' | 'gzip', Promise<Buffer>>;
}

/**
 * The coding to send for an `Accept-Encoding` header: br, else gzip, else identity (RFC 9110 §12.5.3:
 * `q=0` refuses a coding; `*` stands for the ones not named). No header: identity.
 */
export function chooseEncoding(header: string | undefined): ContentCoding {
  if (!header) return 'identity';
  const weights = new Map<string, number>();
  for (const part of header.split(',')) {
    const [name = '', ...params] = part.trim().toLowerCase().split(';');
    if (name === '') continue;
    const q = params.map((param) => /^\s*q\s*=\s*([0-9.]+)\s*$/.exec(param)).find(Boolean);
    weights.set(name.trim(), q ? Number(q[1]) : 1);
  }
  const weight = (coding: string) => weights.get(coding) ?? weights.get('*') ?? 0;
  if (weight('br') > 0) return 'br';
  if (weight('gzip') > 0 || (weights.get('x-gzip') ?? 0) > 0) return 'gzip';
  return 'identity';
}

/**
 * The UI's static files, compressed once per file version (brotli and gzip -9, on first request; kept
 * in memory while the file's size and mtime stay the same — dist/web is small: ~110 KB raw).
 * `If-None-Match` is answered by the caller with {@link etagMatches}.
 */
export class StaticAssets {
  private readonly entries = new Map<string, Entry>();

  async get(file: string, acceptEncoding: string | undefined): Promise<StaticBody> {
    const stats = await stat(file);
    const key = `${stats.size}:${stats.mtimeMs}`;
    let entry = this.entries.get(file);
    if (!entry || entry.key !== key) {
      const identity = await readFile(file);
      entry = {
        key,
        identity,
        hash: createHash('sha256').update(identity).digest('base64url').slice(0, 27),
        varies: compressible.has(path.extname(file).toLowerCase()) && identity.length >= compressThreshold,
        coded: new Map(),
      };
      this.entries.set(file, entry);
    }
    const encoding = entry.varies ? chooseEncoding(acceptEncoding) : 'identity';
    if (encoding === 'identity') return { body: entry.identity, encoding, etag: `"${entry.hash}"`, varies: entry.varies };
    let coded = entry.coded.get(encoding);
    if (!coded) {
      coded =
        encoding === 'br'
          ? brotli(entry.identity, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: brotliQuality, [zlibConstants.BROTLI_PARAM_MODE]: zlibConstants.BROTLI_MODE_TEXT, [zlibConstants.BROTLI_PARAM_SIZE_HINT]: entry.identity.length } })
          : gzipAsync(entry.identity, { level: 9 });
      entry.coded.set(encoding, coded);
      // A failed compression is not kept (the next request tries again).
      coded.catch(() => entry!.coded.delete(encoding));
    }
    return { body: await coded, encoding, etag: `"${entry.hash}-${encoding === 'br' ? 'br' : 'gz'}"`, varies: true };
  }
}

/** True when `If-None-Match` names `etag` (or `*`); weak comparison, as RFC 9110 §13.1.2 asks for GET. */
export function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  const bare = etag.replace(/^W\//, '');
  return ifNoneMatch.split(',').some((tag) => {
    const trimmed = tag.trim();
    return trimmed === '*' || trimmed.replace(/^W\//, '') === bare;
  });
}
