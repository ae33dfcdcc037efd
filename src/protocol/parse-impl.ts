import type { Document, LineCounter } from 'yaml';
import type { Finding } from '../errors/finding.js';
import { implModel, type ImplManifest } from './schema/impl-schema.js';
import { findUnknownKeys } from './schema/unknown-keys.js';
import { formatPath } from './yaml/index.js';
import { attachDocument, readPlain, type ReadPlainOptions } from './yaml/read-plain.js';
import { shapeFindings } from './schema/shape-findings.js';

/** Where a field lives in the source text. */
export type Locate = (path: ReadonlyArray<string | number>) => { line: number; column: number } | undefined;

/** The result of parsing an IMPL manifest text. */
export interface ImplParseResult {
  /** The normalized manifest, or null when the text is not a usable manifest. */
  manifest: ImplManifest | null;
  /** The plain data as written (unknown keys kept), or null on a syntax error. */
  data: unknown;
  /** Every problem found while parsing: syntax, duplicate keys, unknown keys, types. */
  findings: Finding[];
  /** True when the text could not be read as YAML at all (syntax, size, depth, binary). */
  fatal: boolean;
  /** Position lookup for findings of later rules (line/column of a field path). */
  locate: Locate;
  document?: Document.Parsed;
  lineCounter?: LineCounter;
}

/**
 * Parses an IMPL manifest (E16 entry point). Pure: text in, manifest and findings out; never
 * throws for any input. Syntax errors, oversize/over-deep/binary input and alias bombs are fatal
 * findings (`V046_PARSE_ERROR`, `RESOURCE_EXHAUSTION`); duplicate keys at any depth
 * (`E16_DUPLICATE_KEY`), unknown keys (`V013_UNKNOWN_KEY`) and wrong types
 * (`V001_MANIFEST_INVALID`) are reported with their path, line and column.
 */
export function parseImpl(text: string, options: ReadPlainOptions = {}): ImplParseResult {
  const read = readPlain(text, options);
  if (!read.ok) return attachDocument({ manifest: null, data: null, findings: read.findings, fatal: true, locate: read.locate }, read);
  const { locate } = read;
  const findings: Finding[] = [...read.findings];
  const data = read.data;
  if (data === null || data === undefined) {
    // An empty (or comments-only) file is not a manifest: a coded error, not a silent zero manifest.
    const empty = text.split('\n').every((line) => line.trim() === '' || line.trimStart().startsWith('#'));
    findings.push({ code: 'V001_MANIFEST_INVALID', message: empty ? 'the file is empty: no IMPL manifest fields found' : 'manifest must be a YAML mapping of fields, got null', severity: 'fatal', line: 1, column: 1 });
    return attachDocument({ manifest: null, data: null, findings, fatal: true, locate }, read);
  }
  if (typeof data !== 'object' || Array.isArray(data)) {
    findings.push({
      code: 'V001_MANIFEST_INVALID',
      message: `manifest must be a YAML mapping of fields, got ${Array.isArray(data) ? 'a sequence' : `a ${typeof data}`}`,
      severity: 'fatal',
      line: 1,
      column: 1,
    });
    return attachDocument({ manifest: null, data, findings, fatal: true, locate }, read);
  }

  for (const unknown of findUnknownKeys(implModel.manifest, data)) {
    const where = unknown.path.length === 0 ? 'top level' : formatPath(unknown.path);
    findings.push({
      code: 'V013_UNKNOWN_KEY',
      message: `unknown key '${unknown.key}' at ${where}`,
      severity: 'error',
      field: formatPath([...unknown.path, unknown.key]),
      ...locate([...unknown.path, unknown.key]),
    });
  }

  const result = implModel.manifest.safeParse(data);
  if (!result.success) {
    findings.push(...shapeFindings(result.error.issues, data, locate));
    return attachDocument({ manifest: null, data, findings, fatal: false, locate }, read);
  }
  return attachDocument({ manifest: result.data, data, findings, fatal: false, locate }, read);
}
