import { lstat, realpath } from 'node:fs/promises';
import { codes } from '../errors/codes.js';
import type { Finding } from '../errors/finding.js';
import { PolywaveError } from '../errors/polywave-error.js';
import { parseImpl, type ImplParseResult } from '../protocol/parse-impl.js';
import { applyEdits, type ApplyEditsOptions, type YamlEdit } from '../protocol/yaml/index.js';
import type { ReadPlainOptions } from '../protocol/yaml/read-plain.js';
import { readTextFile } from './read-text.js';
import { updateFileLocked } from './locked-write.js';

/**
 * A parser of manifest text: parseImpl or parseProgram. `document: true` asks for the composed
 * `yaml` Document at once (writers edit it), instead of the fast plain read.
 */
export type ManifestParser<Result extends { fatal: boolean; findings: Finding[] }> = (text: string, options?: ReadPlainOptions) => Result;

/** Formats `file:line:col: message` for the one-line error. */
export function describeFinding(filePath: string, finding: Finding): string {
  const where = finding.line ? `${filePath}:${finding.line}${finding.column ? `:${finding.column}` : ''}` : filePath;
  return `${where}: ${finding.message}`;
}

/** The error thrown when a manifest cannot be read as YAML at all (exit 2). */
export function unreadableManifestError(filePath: string, findings: Finding[]): PolywaveError {
  const first = findings.find((finding) => finding.severity === 'fatal' || finding.severity === 'error') ?? findings[0];
  return new PolywaveError({
    code: first?.code ?? 'V046_PARSE_ERROR',
    message: first ? describeFinding(filePath, first) : `${filePath}: not a readable manifest`,
    exitCode: 2,
    findings,
  });
}

/** Reads and parses a manifest; throws a coded error (exit 2) when it is not usable YAML. */
export async function loadManifest<Result extends { fatal: boolean; findings: Finding[] }>(
  filePath: string,
  parse: ManifestParser<Result>,
): Promise<{ text: string; parsed: Result }> {
  const text = await readTextFile(filePath);
  const parsed = parse(text);
  if (parsed.fatal) throw unreadableManifestError(filePath, parsed.findings);
  return { text, parsed };
}

/** Reads and parses an IMPL manifest (see loadManifest). */
export function loadImpl(filePath: string): Promise<{ text: string; parsed: ImplParseResult }> {
  return loadManifest(filePath, parseImpl);
}

/**
 * The one write path for manifests: under the cross-process lock, re-reads the file, parses it,
 * lets `plan` decide the edits from the *current* content, applies them format-preservingly
 * (every unchanged byte kept) and renames a temp file over the original. `plan` may throw a
 * PolywaveError to refuse; then nothing is written.
 */
export async function editManifest<Result extends { fatal: boolean; findings: Finding[] }, Outcome>(
  filePath: string,
  parse: ManifestParser<Result>,
  plan: (parsed: Result, text: string) => { edits: YamlEdit[]; outcome: Outcome } | Promise<{ edits: YamlEdit[]; outcome: Outcome }>,
): Promise<Outcome> {
  let outcome: Outcome | undefined;
  await updateFileLocked(filePath, async (current) => {
    // P17-01a: the save renames a temp file over `filePath` — over a symbolic link that replaces the link by a regular
    // file and leaves the manifest it points to as it was. CLI paths arrive resolved (resolve-path.ts); any other
    // link is refused here, nothing written.
    const stats = await lstat(filePath).catch(() => undefined);
    if (stats?.isSymbolicLink()) {
      throw new PolywaveError({ code: codes.saveFailed, message: `cannot write ${filePath}: it is a symbolic link (to ${await realpath(filePath).catch(() => '?')}) — a save would replace the link, not the manifest it points to; give the manifest's own path; nothing written`, exitCode: 2 });
    }
    // P18-02a: a HARD link (a second name of the file, e.g. outside the repository) cannot be resolved to the real path
    // — the run lock was missed through it and the save broke the link ("success", the manifest under docs/ untouched).
    if (stats !== undefined && stats.nlink > 1) {
      throw new PolywaveError({ code: codes.saveFailed, message: `cannot write ${filePath}: the file has ${stats.nlink} hard links — a save would break them and leave the other names as they were; remove the extra link(s) and give the manifest's own path; nothing written`, exitCode: 2 });
    }
    const parsed = parse(current, { document: true });
    if (parsed.fatal) throw unreadableManifestError(filePath, parsed.findings);
    const planned = await plan(parsed, current);
    outcome = planned.outcome;
    if (planned.edits.length === 0) return current;
    // Reuse the parse we already have: keeps the time the lock is held short.
    const document = (parsed as { document?: unknown }).document;
    const lineCounter = (parsed as { lineCounter?: unknown }).lineCounter;
    const options = document && lineCounter ? { parsed: { ok: true, document, lineCounter, findings: parsed.findings } as unknown as ApplyEditsOptions['parsed'] } : {};
    return applyEdits(current, planned.edits, options);
  });
  return outcome as Outcome;
}

/** editManifest for IMPL manifests. */
export function editImpl<Outcome>(
  filePath: string,
  plan: (parsed: ImplParseResult, text: string) => { edits: YamlEdit[]; outcome: Outcome } | Promise<{ edits: YamlEdit[]; outcome: Outcome }>,
): Promise<Outcome> {
  return editManifest(filePath, parseImpl, plan);
}
