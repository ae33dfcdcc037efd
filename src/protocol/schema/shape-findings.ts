import type { z } from 'zod';
import type { Finding } from '../../errors/finding.js';
import { formatPath } from '../yaml/index.js';

type Locate = (path: ReadonlyArray<string | number>) => { line: number; column: number } | undefined;

function describeValue(value: unknown): string {
  if (value === null || value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  const text = String(value);
  const shown = text.length > 40 ? `${text.slice(0, 37)}...` : text;
  return `${typeof value} "${shown}"`;
}

function valueAt(data: unknown, path: ReadonlyArray<PropertyKey>): unknown {
  let current = data;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}

const expectedNames: Record<string, string> = {
  string: 'text',
  int: 'an integer',
  number: 'a number',
  boolean: 'true or false',
  array: 'a list',
  object: 'a mapping',
  record: 'a mapping',
};

/**
 * Turns zod type issues into protocol findings (`V001_MANIFEST_INVALID`, like Go's decode
 * failure) with the field path and its line. Only structural issues arise in model mode.
 */
export function shapeFindings(issues: ReadonlyArray<z.core.$ZodIssue>, data: unknown, locate: Locate): Finding[] {
  return issues.map((issue) => {
    const path = issue.path.filter((key): key is string | number => typeof key !== 'symbol');
    const field = formatPath(path);
    const actual = valueAt(data, path);
    let message: string;
    if (issue.code === 'invalid_type') {
      const expected = expectedNames[issue.expected] ?? issue.expected;
      message = `${field || 'manifest'}: expected ${expected}, got ${describeValue(actual)}`;
    } else {
      message = `${field || 'manifest'}: ${issue.message}`;
    }
    return { code: 'V001_MANIFEST_INVALID', message, severity: 'error', field, ...locate(path) } satisfies Finding;
  });
}
