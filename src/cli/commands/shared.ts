import path from 'node:path';
import type { ImplParseResult } from '../../protocol/parse-impl.js';
import type { ImplManifest } from '../../protocol/schema/impl-schema.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { describeFinding } from '../../store/manifest-file.js';
import { resolveManifestPath } from '../../store/resolve-path.js';
import type { CommandIo } from '../io.js';

/** Resolves the `<impl>` argument (path, file name or slug) relative to the command's cwd. */
export function implPathFrom(args: string[], io: CommandIo): string {
  return resolveManifestPath(args[0] ?? '', { cwd: io.cwd, kind: 'impl' }).path;
}

/** Resolves the `<program>` argument. */
export function programPathFrom(args: string[], io: CommandIo): string {
  return resolveManifestPath(args[0] ?? '', { cwd: io.cwd, kind: 'program' }).path;
}

/**
 * The normalized manifest, or a coded error (exit 2) when its structure is broken (wrong types):
 * commands that act on a manifest refuse to guess. `validate` shows every finding instead.
 */
export function requireManifest(parsed: ImplParseResult, filePath: string): ImplManifest {
  if (parsed.manifest) return parsed.manifest;
  const first = parsed.findings.find((finding) => finding.severity === 'error' || finding.severity === 'fatal');
  throw new PolywaveError({
    code: first?.code ?? 'V001_MANIFEST_INVALID',
    message: first ? `${describeFinding(filePath, first)} (run: polywave validate ${path.basename(filePath)})` : `${filePath}: manifest is not usable`,
    findings: parsed.findings,
  });
}

/** Required string option, or X001 (exit 2). */
export function requireOption(options: Record<string, unknown>, name: string, flag: string): string {
  const value = options[name];
  if (typeof value !== 'string' || value.trim() === '') {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${flag} is required` });
  }
  return value.trim();
}

/** The normalized PROGRAM manifest, or a coded error (exit 2) when its structure is broken. */
export function requireProgram<Manifest>(parsed: { manifest: Manifest | null; findings: import('../../errors/finding.js').Finding[] }, filePath: string): Manifest {
  if (parsed.manifest) return parsed.manifest;
  const first = parsed.findings.find((finding) => finding.severity === 'error' || finding.severity === 'fatal');
  throw new PolywaveError({
    code: first?.code ?? 'V001_MANIFEST_INVALID',
    message: first ? `${describeFinding(filePath, first)} (run: polywave validate-program ${path.basename(filePath)})` : `${filePath}: manifest is not usable`,
    findings: parsed.findings,
  });
}

/**
 * An empty file (or one holding only blank lines and `#` lines: YAML comments, markdown headings)
 * is neither a manifest nor an IMPL doc: refuse it as bad input (exit 2) instead of validating an
 * empty mapping or a document without blocks.
 */
export function requireContent(text: string, filePath: string): void {
  if (text.split('\n').every((line) => /^\s*(?:#.*)?$/.test(line))) {
    throw new PolywaveError({ code: 'V001_MANIFEST_INVALID', message: `${filePath}: the file is empty (only blank lines and comments) — a manifest is a YAML mapping of fields` });
  }
}
