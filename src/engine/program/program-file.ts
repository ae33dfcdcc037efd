import path from 'node:path';
import type { Finding } from '../../errors/finding.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { parseProgram, type ProgramParseResult } from '../../protocol/parse-program.js';
import type { ProgramManifest } from '../../protocol/schema/program-schema.js';
import type { YamlEdit } from '../../protocol/yaml/index.js';
import { describeFinding, editManifest, loadManifest } from '../../store/manifest-file.js';

/**
 * The normalized PROGRAM manifest, or a coded error (exit 2) naming the first structural problem:
 * writers refuse to guess on a broken manifest (`validate-program` shows every finding).
 */
export function requireProgramManifest(parsed: { manifest: ProgramManifest | null; findings: Finding[] }, filePath: string): ProgramManifest {
  if (parsed.manifest) return parsed.manifest;
  const first = parsed.findings.find((finding) => finding.severity === 'error' || finding.severity === 'fatal');
  throw new PolywaveError({
    code: first?.code ?? 'V001_MANIFEST_INVALID',
    message: first ? `${describeFinding(filePath, first)} (run: polywave validate-program ${path.basename(filePath)})` : `${filePath}: manifest is not usable`,
    findings: parsed.findings,
  });
}

/** Reads and parses a PROGRAM manifest; coded errors (exit 2) for a missing, unreadable or broken file. */
export async function loadProgramManifest(filePath: string): Promise<{ text: string; parsed: ProgramParseResult; manifest: ProgramManifest }> {
  const { text, parsed } = await loadManifest(filePath, parseProgram);
  return { text, parsed, manifest: requireProgramManifest(parsed, filePath) };
}

/**
 * The one write path for PROGRAM manifests (as `editImpl` for IMPLs): under the cross-process
 * lock, re-read and re-parse the file, let `plan` decide the edits from the current manifest,
 * apply them format-preservingly (comments, key order, quoting kept; only edited lines change)
 * and rename a temp file over the original. `plan` throws a PolywaveError to refuse: then
 * nothing is written.
 */
export function editProgram<Outcome>(
  filePath: string,
  plan: (manifest: ProgramManifest, parsed: ProgramParseResult) => { edits: YamlEdit[]; outcome: Outcome },
): Promise<Outcome> {
  return editManifest(filePath, parseProgram, (parsed) => {
    const manifest = requireProgramManifest(parsed, filePath);
    const planned = plan(manifest, parsed);
    // `updated` (program-manifest.txt §3: date of the last manifest update) follows every write
    // that changes something; a manifest without the field is not given one.
    const today = new Date().toISOString().slice(0, 10);
    const stamped = planned.edits.length > 0 && manifest.updated !== undefined && manifest.updated !== today && !planned.edits.some((edit) => edit.path.length === 1 && edit.path[0] === 'updated');
    return stamped ? { edits: [...planned.edits, { path: ['updated'], value: today }], outcome: planned.outcome } : planned;
  });
}

/** The `tiers` entry numbered `tier`, or X001 (exit 2) listing the tiers there are. */
export function requireTier(manifest: ProgramManifest, tier: number, filePath: string): { number: number; impls: string[] } {
  if (!Number.isInteger(tier) || tier < 1) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `--tier must be a positive integer, got ${tier}` });
  const found = manifest.tiers.find((candidate) => candidate.number === tier);
  if (found === undefined) {
    const known = manifest.tiers.map((candidate) => candidate.number).filter((number) => number !== undefined);
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `tier ${tier} not found in ${path.basename(filePath)} (tiers: ${known.length > 0 ? known.join(', ') : 'none'})` });
  }
  return { number: tier, impls: [...new Set(found.impls.map((slug) => slug.trim()).filter((slug) => slug !== ''))] };
}

/** POSIX form of a path relative to `root` (for JSON output and commits). */
export function relativePosix(root: string, filePath: string): string {
  return path.relative(root, filePath).split(path.sep).join('/');
}
