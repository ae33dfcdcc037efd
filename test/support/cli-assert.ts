import { copyFileSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import type { CliResult } from './cli.js';

/** The one-line error format of DESIGN §4: `polywave: error[CODE]: message`. */
export const errorLinePattern = /^polywave: error\[([A-Za-z0-9_]+)\]: (.+)$/;

/** A line of a JavaScript stack trace (`    at foo (file.js:1:2)`). */
const stackLinePattern = /^\s+at /m;

/** The findings summary `validate` and `validate-program` print. */
export interface Verdict {
  valid: boolean;
  error_count: number;
  errors: Array<{ code: string; message: string; severity: string; field?: string; line?: number; column?: number }>;
  warning_count: number;
  warnings: Array<{ code: string; message: string; severity: string; field?: string; line?: number; column?: number }>;
  fixed?: number;
  fixes?: string[];
}

/** Asserts that `text` holds no stack trace. */
export function expectNoStackTrace(text: string, label = ''): void {
  expect(stackLinePattern.test(text), `${label} stack trace in:\n${text}`).toBe(false);
}

/**
 * Asserts the DESIGN §4 error shape: exit `exitCode`, nothing on stdout, exactly one stderr
 * line `polywave: error[CODE]: message`, no stack trace. Returns the code and message.
 */
export function expectCodedError(result: CliResult, options: { exitCode?: number; code?: string | RegExp; label?: string } = {}): { code: string; message: string } {
  const label = options.label ?? '';
  const context = `${label}\nexit ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`;
  expect(result.code, context).toBe(options.exitCode ?? 2);
  expect(result.stdout, context).toBe('');
  expectNoStackTrace(result.stderr, label);
  expect(result.stderr.endsWith('\n'), context).toBe(true);
  const lines = result.stderr.split('\n').filter((line) => line.length > 0);
  expect(lines, context).toHaveLength(1);
  const match = errorLinePattern.exec(lines[0]!);
  expect(match, context).not.toBeNull();
  const code = match![1]!;
  if (typeof options.code === 'string') expect(code, context).toBe(options.code);
  else if (options.code) expect(code, context).toMatch(options.code);
  return { code, message: match![2]! };
}

/** Parses stdout as JSON (failing the test with the raw output when it is not JSON). */
export function parseStdoutJson<T = unknown>(result: CliResult, label = ''): T {
  try {
    return JSON.parse(result.stdout) as T;
  } catch (error) {
    throw new Error(`${label}: stdout is not JSON (${(error as Error).message}):\n${result.stdout}\nstderr: ${result.stderr}`, { cause: error });
  }
}

/** Asserts the shape of a validate / validate-program verdict and returns it. */
export function expectVerdict(result: CliResult, options: { withFixed?: boolean; label?: string } = {}): Verdict {
  const label = options.label ?? '';
  const verdict = parseStdoutJson<Verdict>(result, label);
  expect(typeof verdict.valid, label).toBe('boolean');
  expect(Array.isArray(verdict.errors), label).toBe(true);
  expect(Array.isArray(verdict.warnings), label).toBe(true);
  expect(verdict.error_count, label).toBe(verdict.errors.length);
  expect(verdict.warning_count, label).toBe(verdict.warnings.length);
  expect(verdict.valid, label).toBe(verdict.error_count === 0);
  expect(result.code, `${label}\n${result.stderr}`).toBe(verdict.valid ? 0 : 1);
  if (options.withFixed) expect(typeof verdict.fixed, label).toBe('number');
  expectNoStackTrace(result.stderr, label);
  return verdict;
}

/** Every `.yaml`/`.yml` file under `directory`, sorted. */
export function listYamlFiles(directory: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(directory).sort()) {
    const full = path.join(directory, entry);
    if (statSync(full).isDirectory()) files.push(...listYamlFiles(full));
    else if (/\.ya?ml$/.test(entry)) files.push(full);
  }
  return files;
}

/** Copies `source` to `directory/name` (creating the directory) and returns the new path. */
export function copyInto(source: string, directory: string, name = path.basename(source)): string {
  mkdirSync(directory, { recursive: true });
  const target = path.join(directory, name);
  copyFileSync(source, target);
  return target;
}

/** Runs `tasks` with at most `limit` in flight; results in input order. */
export async function mapBounded<Input, Output>(items: readonly Input[], limit: number, task: (item: Input, index: number) => Promise<Output>): Promise<Output[]> {
  const results: Output[] = new Array<Output>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next;
      next += 1;
      results[index] = await task(items[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** Indexes (0-based) of the lines that differ between two texts of the same line count. */
export function changedLineIndexes(before: string, after: string): number[] {
  const beforeLines = before.split('\n');
  const afterLines = after.split('\n');
  expect(afterLines.length).toBe(beforeLines.length);
  return afterLines.map((line, index) => (line === beforeLines[index] ? -1 : index)).filter((index) => index >= 0);
}
