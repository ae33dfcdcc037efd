/**
 * The gate a CLI agent's own PreToolUse hook passes before each tool call when the WHOLE CLI runs in one sandbox
 * (`cli:claude`, `cli:codex`; issue 11, X39-10/11): the hook runs inside that sandbox and cannot see what appeared on
 * the host since it started (another worktree, a scratch parent registered or made again — hidden paths show their
 * mounts there), so it asks polywave, outside, to run the appeared-since-start check and waits for the answer.
 *
 * The channel, in a directory polywave makes under the host's temp directory (sandboxes see it read-only):
 * - `req`, a FIFO (a FIFO can be written on a read-only mount): the hook writes one line, a fresh random nonce
 *   (`$SRANDOM`, from getrandom(2)) — 128 bits, so nothing the agent runs can announce it before the hook does;
 * - `ok/<nonce>`, created by polywave after a check that found nothing: the hook waits for it, then lets the call run.
 *   Only polywave can create it (the directory is read-only in the sandbox), so the agent cannot forge the answer;
 *   what it can do — read the FIFO first, write garbage to it — only keeps the answer from coming: the hook then
 *   refuses the call after {@link gateTimeoutSeconds} (fail closed).
 * When the check finds the view stale, no answer is written and `onStale` runs (the backend ends the run).
 */
import { spawnSync } from 'node:child_process';
import { closeSync, constants as fsConstants, mkdirSync, mkdtempSync, openSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';

/** How long the hook waits for polywave's answer before it refuses the call. */
export const gateTimeoutSeconds = 120;

/** Answers kept at most (older ones are removed: the hook that waited for them has gone on long ago). */
const answersKept = 256;

export interface ToolGate {
  /** The gate directory. */
  dir: string;
  /** The hook program (bash), for the CLI's PreToolUse hook configuration. */
  hook: string;
  /** How many calls the gate let through, and how long the checks took in all (ms). */
  stats(): { passed: number; checkMs: number };
  close(): void;
}

function hookScript(dir: string): string {
  const quoted = `'${dir.replace(/'/g, `'\\''`)}'`;
  return [
    '#!/bin/bash',
    "# polywave's sandbox gate (issue 11, X39-10/11): polywave checks, outside the sandbox, that nothing this sandbox",
    '# does not hide appeared since it started, and answers by creating ok/<nonce>, which only it can create.',
    'cat >/dev/null',
    `g=${quoted}`,
    'n=$SRANDOM$SRANDOM$SRANDOM$SRANDOM',
    `if ! printf '%s\\n' "$n" >"$g/req"; then echo 'polywave: the sandbox gate cannot be reached: the call is refused' >&2; exit 2; fi`,
    `end=$((SECONDS + ${gateTimeoutSeconds}))`,
    // waits 2 ms at a time with bash's own `read -t` on a FIFO nobody writes (no `sleep` process per round)
    'exec 3<>"$g/tick"',
    'while [ ! -e "$g/ok/$n" ]; do',
    `  if [ "$SECONDS" -ge "$end" ]; then echo 'polywave: no answer from the sandbox gate (the run is ending, or the gate was tampered with): the call is refused' >&2; exit 2; fi`,
    '  read -r -t 0.002 -u 3 _',
    'done',
    // (claude: the allow is the pass — a hook that dies answers nothing, and the CLI, in dontAsk, refuses the call)
    `if [ "\${1-}" = --allow-json ]; then printf '%s\\n' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"polywave sandbox gate: view checked"}}'; fi`,
    'exit 0',
    '',
  ].join('\n');
}

/**
 * Opens a gate; `check` returns why the sandbox's view is stale (or undefined), `onStale` is told once.
 * Throws when the FIFO cannot be made (the caller fails the run: never a CLI without its gate).
 */
export function openToolGate(check: () => string | undefined, onStale: (reason: string) => void): ToolGate {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'polywave-gate-'));
  let fd: number | undefined;
  try {
    mkdirSync(path.join(dir, 'ok'));
    const fifo = path.join(dir, 'req');
    const made = spawnSync('mkfifo', ['-m', '0600', fifo, path.join(dir, 'tick')], { stdio: 'ignore' });
    if (made.status !== 0) throw new Error(`mkfifo ${fifo} failed${made.error ? `: ${made.error.message}` : ''}`);
    const hook = path.join(dir, 'gate');
    writeFileSync(hook, hookScript(dir), { mode: 0o555 });
    // read and write: the FIFO always has a writer (no end of file) and a reader (a hook's open never blocks)
    fd = openSync(fifo, fsConstants.O_RDWR | fsConstants.O_NONBLOCK);
    const stream = new Socket({ fd, readable: true, writable: false });
    let pending = '';
    let passed = 0;
    let checkMs = 0;
    let staleTold = false;
    const answers: string[] = [];
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      pending += chunk;
      if (pending.length > 65_536) pending = pending.slice(-4096);
      let newline = pending.indexOf('\n');
      while (newline >= 0) {
        const nonce = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        newline = pending.indexOf('\n');
        if (!/^[0-9]{4,64}$/.test(nonce)) continue;
        const started = performance.now();
        const stale = check();
        checkMs += performance.now() - started;
        if (stale !== undefined) {
          if (!staleTold) {
            staleTold = true;
            onStale(stale);
          }
          continue;
        }
        try {
          writeFileSync(path.join(dir, 'ok', nonce), '', { flag: 'wx', mode: 0o444 });
          passed += 1;
          answers.push(nonce);
          if (answers.length > answersKept) unlinkSync(path.join(dir, 'ok', answers.shift()!));
        } catch {
          // answered already (a nonce seen twice)
        }
      }
    });
    stream.on('error', () => undefined);
    fd = undefined;
    return {
      dir,
      hook,
      stats: () => ({ passed, checkMs }),
      close: () => {
        stream.destroy();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    if (fd !== undefined) closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}
