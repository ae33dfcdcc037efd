import type { Document, LineCounter } from 'yaml';
import type { Finding } from '../errors/finding.js';
import type { Locate } from './parse-impl.js';
import { programModel, type ProgramManifest } from './schema/program-schema.js';
import { shapeFindings } from './schema/shape-findings.js';
import { findUnknownKeys } from './schema/unknown-keys.js';
import { formatPath } from './yaml/index.js';
import { attachDocument, readPlain, type ReadPlainOptions } from './yaml/read-plain.js';

/** The result of parsing a PROGRAM manifest text. */
export interface ProgramParseResult {
  /** The normalized manifest, or null when the text is not a usable manifest. */
  manifest: ProgramManifest | null;
  /** The plain data as written (unknown keys kept), or null on a syntax error. */
  data: unknown;
  /** Every problem found while parsing: syntax, duplicate keys, unknown keys, types. */
  findings: Finding[];
  /** True when the text could not be read as YAML at all (syntax, size, depth, binary). */
  fatal: boolean;
  /** True when the text carries the program-complete marker line (see `parseProgram`). */
  completeMarker: boolean;
  /** Position lookup for findings of later rules (line/column of a field path). */
  locate: Locate;
  document?: Document.Parsed;
  lineCounter?: LineCounter;
}

/**
 * The bare, non-YAML marker line Go's mark-program-complete appends (`polywave:program:complete`;
 * older builds wrote `SAW:PROGRAM:COMPLETE`, which the corpus still holds). Matched on a whole
 * line starting in column 0, case-insensitively, trailing blanks allowed.
 */
const completeMarkerLine = /^(?:polywave|saw):program:complete[ \t]*\r?$/i;

/**
 * Turns every program-complete marker line into a YAML comment, so the text parses while every
 * other line keeps its number and columns (Go deletes the line instead, which shifts positions;
 * Go also misses a marker on line 1 and the legacy `SAW:` spelling — we accept both).
 */
export function neutralizeProgramCompleteMarker(text: string): { text: string; found: boolean } {
  if (!/program:complete/i.test(text)) return { text, found: false };
  let found = false;
  const lines = text.split('\n').map((line) => {
    if (!completeMarkerLine.test(line)) return line;
    found = true;
    return `#${line}`;
  });
  return { text: lines.join('\n'), found };
}

/**
 * Parses a PROGRAM manifest (program-manifest.txt; Go `ParseProgramManifest`). Pure: text in,
 * manifest and findings out; never throws for any input. Mirrors `parseImpl`: syntax errors and
 * resource limits are fatal findings (`V046_PARSE_ERROR`, `RESOURCE_EXHAUSTION`), duplicate keys
 * are reported by the YAML layer, wrong types are `V001_MANIFEST_INVALID` with path and line.
 *
 * Unknown keys are reported as `V013_UNKNOWN_KEY` **warnings** (not errors as for IMPL
 * manifests): Go decodes PROGRAM files without any unknown-key check, so rejecting them would
 * fail manifests the reference accepts; we still point at them with their line.
 */
export function parseProgram(text: string, options: ReadPlainOptions = {}): ProgramParseResult {
  const neutralized = neutralizeProgramCompleteMarker(text);
  const completeMarker = neutralized.found;
  const read = readPlain(neutralized.text, options);
  if (!read.ok) return attachDocument({ manifest: null, data: null, findings: read.findings, fatal: true, completeMarker, locate: read.locate }, read);
  const { locate } = read;
  const findings: Finding[] = [...read.findings];
  const data = read.data;
  if (data === null || data === undefined) {
    // An empty (or comments-only) file is not a manifest: a coded error, not a silent zero manifest.
    findings.push({ code: 'V001_MANIFEST_INVALID', message: 'the file is empty: no PROGRAM manifest fields found', severity: 'fatal', line: 1, column: 1 });
    return attachDocument({ manifest: null, data: null, findings, fatal: true, completeMarker, locate }, read);
  }
  if (typeof data !== 'object' || Array.isArray(data)) {
    findings.push({
      code: 'V001_MANIFEST_INVALID',
      message: `manifest must be a YAML mapping of fields, got ${Array.isArray(data) ? 'a sequence' : `a ${typeof data}`}`,
      severity: 'fatal',
      line: 1,
      column: 1,
    });
    return attachDocument({ manifest: null, data, findings, fatal: true, completeMarker, locate }, read);
  }

  for (const unknown of findUnknownKeys(programModel.manifest, data)) {
    const where = unknown.path.length === 0 ? 'top level' : formatPath(unknown.path);
    findings.push({
      code: 'V013_UNKNOWN_KEY',
      message: `unknown key '${unknown.key}' at ${where}`,
      severity: 'warning',
      field: formatPath([...unknown.path, unknown.key]),
      ...locate([...unknown.path, unknown.key]),
    });
  }

  const result = programModel.manifest.safeParse(data);
  if (!result.success) {
    findings.push(...shapeFindings(result.error.issues, data, locate));
    return attachDocument({ manifest: null, data, findings, fatal: false, completeMarker, locate }, read);
  }
  return attachDocument({ manifest: result.data, data, findings, fatal: false, completeMarker, locate }, read);
}
