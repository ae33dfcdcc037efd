import path from 'node:path';
import { runSandboxedShell } from '../gates/sandboxed-shell.js';
import { disposeCheckouts, type CheckoutSet } from '../gates/throwaway-checkout.js';
import { untrustedLogDir } from '../gates/run-gate.js';
import { normalizeReportedPath } from '../protocol/conflicts.js';
import type { ImplManifest } from '../protocol/schema/impl-schema.js';

/** Default timeout of each verify-build command (the Go tool has none; a hung test run must end). */
export const defaultVerifyBuildTimeoutMs = 30 * 60_000;

/** Commands that mean "nothing to run" (as in Go): they pass without running. */
const noOpCommands = new Set(['', 'none', 'n/a', 'skip']);

export interface VerifyBuildOptions {
  /** Directory the commands run in: the merge target's checkout (E10: unscoped, whole project). */
  repoDir: string;
  testCommand?: string;
  lintCommand?: string;
  /** The environment; credentials are always removed from it (X3 #20). */
  env?: Readonly<Record<string, string | undefined>>;
  signal?: AbortSignal;
  timeoutMs?: number;
  /** False: run unsandboxed even where the OS sandbox is available. Default true. */
  sandbox?: boolean;
  /** Clock for the log file names. */
  now?: () => Date;
}

/** The `verify-build` JSON: the Go `VerifyBuildData` keys, plus ours. */
export interface VerifyBuildData {
  test_command: string;
  lint_command: string;
  test_passed: boolean;
  lint_passed: boolean;
  test_output?: string;
  lint_output?: string;
  test_exit_code?: number;
  lint_exit_code?: number;
  /** Set when a command timed out, was canceled or could not start. */
  test_error?: string;
  lint_error?: string;
  duration_ms: number;
}

/**
 * The commands verify-build runs (E10/E13: build + lint, tests when there is a suite): the
 * manifest's `test_command` / `lint_command`, else its first `type: test` / `type: lint`
 * quality gate (the Go tool prefers the gate; the protocol names the top-level fields).
 */
export function verifyBuildCommands(manifest: {
  test_command?: string | undefined;
  lint_command?: string | undefined;
  quality_gates?: { gates?: ReadonlyArray<{ type?: string | undefined; command?: string | undefined }> | undefined } | undefined;
}): { testCommand: string; lintCommand: string } {
  const gates = manifest.quality_gates?.gates ?? [];
  const fromGate = (type: string) => gates.find((gate) => gate.type === type && (gate.command ?? '').trim() !== '')?.command?.trim() ?? '';
  return {
    testCommand: manifest.test_command?.trim() || fromGate('test'),
    lintCommand: manifest.lint_command?.trim() || fromGate('lint'),
  };
}

function isNoOp(command: string): boolean {
  return noOpCommands.has(command.trim().toLowerCase());
}

/**
 * E10/E13 post-merge verification: runs the test command, then the lint command, in the merge
 * target's checkout, unscoped, never from a cache, each with a timeout and its process group
 * killed when it ends. An empty command (or none/n/a/skip) passes without running.
 *
 * The merged tree holds the agents' code (their tests included), so the commands run as quality
 * gates do (outside attack X3 #20): in the OS sandbox with the gate plan where it is available,
 * and never with the orchestrator's credentials (`runSandboxedShell`) — there in one throwaway
 * checkout of the target's working tree shared by both commands, so nothing they write persists
 * in the checkout (X3 #18, gates/throwaway-checkout.ts).
 */
export async function verifyBuild(options: VerifyBuildOptions): Promise<VerifyBuildData> {
  const start = performance.now();
  const now = options.now ?? (() => new Date());
  const stamp = now().toISOString().replace(/[-:]/g, '');
  const testCommand = options.testCommand?.trim() ?? '';
  const lintCommand = options.lintCommand?.trim() ?? '';
  const data: VerifyBuildData = { test_command: testCommand, lint_command: lintCommand, test_passed: true, lint_passed: true, duration_ms: 0 };
  // One throwaway checkout of the merged tree for both commands (lint sees what the test wrote, as before).
  const checkouts: CheckoutSet = new Map();
  const runOne = async (kind: 'test' | 'lint', command: string) => {
    if (isNoOp(command)) return;
    const result = await runSandboxedShell(command, {
      cwd: options.repoDir,
      checkouts,
      ...(options.sandbox === false ? { sandbox: false } : {}),
      timeoutMs: options.timeoutMs ?? defaultVerifyBuildTimeoutMs,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.env ? { env: options.env } : {}),
      logPath: path.join(await untrustedLogDir(options.repoDir, 'verify-build'), `${stamp}-${kind}.log`),
    });
    const passed = result.exitCode === 0 && !result.timedOut && !result.canceled;
    const output = result.error ? `${result.output}${result.output.endsWith('\n') || result.output === '' ? '' : '\n'}[${result.error}]` : result.output;
    if (kind === 'test') {
      data.test_passed = passed;
      data.test_exit_code = result.exitCode;
      if (output !== '') data.test_output = output;
      if (result.error) data.test_error = result.error;
    } else {
      data.lint_passed = passed;
      data.lint_exit_code = result.exitCode;
      if (output !== '') data.lint_output = output;
      if (result.error) data.lint_error = result.error;
    }
  };
  try {
    await runOne('test', testCommand);
    if (!options.signal?.aborted) await runOne('lint', lintCommand);
  } finally {
    await disposeCheckouts(checkouts);
  }
  data.duration_ms = Math.round(performance.now() - start);
  return data;
}

/** Where an error's file sits in the wave plan (E47). */
export type ErrorFileOwner = 'current-wave' | 'later-wave' | 'earlier-wave' | 'unowned';

/** One compiler/linter error located in a file (E47 `CallerCascadeErrors` item, plus ours). */
export interface CallerCascadeError {
  file: string;
  line: number;
  message: string;
  owner: ErrorFileOwner;
  /** Agents (of any wave) owning the file. */
  owners: string[];
}

/** E47 classification of a failed post-merge verification. */
export interface CallerCascadeClassification {
  /** Every located error is in a file owned by a later wave or by nobody (E47: the hotfix applies). */
  caller_cascade_only: boolean;
  /** Some error is in a file this wave or an earlier one owns: a genuine failure (E7/E8). */
  mixed_errors: boolean;
  errors: CallerCascadeError[];
  /** The files of the cascade errors (what an E47 hotfix may touch). */
  files: string[];
}

/**
 * Error locations in tool output: `path:line[:col]: message` (go, gcc, eslint unix, ruff, mypy,
 * rustc notes), `path(line,col): error TS…` (tsc), ` --> path:line:col` (rustc), and
 * `File "path", line N` (python tracebacks).
 */
const locationPatterns: RegExp[] = [
  /^\s*(?:[-*>]\s+)?(?<file>[^\s:()'"]+\.[A-Za-z0-9]+)\((?<line>\d+),\d+\):\s*(?<message>.*)$/,
  /^\s*-->\s*(?<file>[^\s:]+\.[A-Za-z0-9]+):(?<line>\d+)(?::\d+)?\s*(?<message>.*)$/,
  /^\s*File "(?<file>[^"]+)", line (?<line>\d+)(?<message>.*)$/,
  /^\s*(?:[-*>]\s+)?(?<file>[^\s:()'"]+\.[A-Za-z0-9]+):(?<line>\d+)(?::\d+)?:?\s*(?<message>.*)$/,
];

/** ANSI colour sequences (ESC [ … m) that tools put around error locations. */
const ansiColor = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g');

/** Relative repository path of an error location, or undefined when it is not in the repository. */
function relativeFile(file: string, repoDir: string): string | undefined {
  let candidate = file.replace(/\\/g, '/');
  if (path.isAbsolute(candidate)) {
    const relative = path.relative(repoDir, candidate).split(path.sep).join('/');
    if (relative.startsWith('..') || path.isAbsolute(relative)) return undefined;
    candidate = relative;
  }
  candidate = normalizeReportedPath(candidate);
  return candidate === '' || candidate.startsWith('../') ? undefined : candidate;
}

/**
 * E47: classifies the errors of a failed post-merge build/lint/test run by who owns the files
 * they are in. `caller_cascade_only` is true when at least one error was located and every one
 * lies in a file owned only by later waves or by nobody — compile errors in callers caused by
 * this wave's signature changes, which a caller-cascade hotfix may repair; any error in a file
 * of this wave (or an earlier one) is a genuine failure (`mixed_errors`). Output without any
 * located error is not classified (both false).
 */
export function classifyCallerCascade(options: { output: string; manifest: Pick<ImplManifest, 'file_ownership'>; wave: number; repoDir: string }): CallerCascadeClassification {
  const owners = new Map<string, Array<{ agent: string; wave: number }>>();
  for (const row of options.manifest.file_ownership ?? []) {
    if (row.file === undefined) continue;
    const file = normalizeReportedPath(row.file);
    owners.set(file, [...(owners.get(file) ?? []), { agent: row.agent ?? '', wave: row.wave ?? 0 }]);
  }
  const errors: CallerCascadeError[] = [];
  const seen = new Set<string>();
  for (const rawLine of options.output.split('\n')) {
    const line = rawLine.replace(ansiColor, '');
    for (const pattern of locationPatterns) {
      const match = pattern.exec(line);
      if (!match?.groups) continue;
      const file = relativeFile(match.groups.file!, options.repoDir);
      if (file === undefined) break;
      const lineNumber = Number(match.groups.line);
      const message = (match.groups.message ?? '').trim();
      const key = `${file}:${lineNumber}:${message}`;
      if (seen.has(key)) break;
      seen.add(key);
      const rows = owners.get(file) ?? [];
      let owner: ErrorFileOwner = 'unowned';
      if (rows.some((row) => row.wave === options.wave)) owner = 'current-wave';
      else if (rows.some((row) => row.wave < options.wave)) owner = 'earlier-wave';
      else if (rows.length > 0) owner = 'later-wave';
      errors.push({ file, line: lineNumber, message, owner, owners: [...new Set(rows.map((row) => row.agent))].sort() });
      break;
    }
  }
  const genuine = errors.some((error) => error.owner === 'current-wave' || error.owner === 'earlier-wave');
  const cascade = errors.filter((error) => error.owner === 'later-wave' || error.owner === 'unowned');
  return {
    caller_cascade_only: errors.length > 0 && !genuine,
    mixed_errors: genuine,
    errors,
    files: [...new Set(cascade.map((error) => error.file))].sort(),
  };
}
