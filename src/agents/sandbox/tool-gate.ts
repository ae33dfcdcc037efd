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
 *
 * Codex (issue 11, h11h): codex 0.169 takes a PreToolUse hook that dies (killed by a job an earlier call left behind,
 * crashed, timed out) for no objection and runs the call — there is no setting that changes it, and `codex exec` forces
 * the approval policy to `never`, so no approval path can stand in for the gate. So for codex the gate's pass is bound
 * to the call and checked again IN THE SHELL THAT RUNS IT: the hook (`--codex`) sends `<nonce> pass <tool_use_id>`, and
 * polywave records a pass for that call after a clean check; every command's bash sources {@link ToolGate.runGuard}
 * first (`BASH_ENV`), which sends `<nonce> run <$CODEX_TOOL_CALL_ID>`. Polywave answers that with `ok/<nonce>` only for
 * a call its hook passed (the pass is used up) and after a fresh clean check; for any other call with `no/<nonce>`, and
 * the shell exits (126) before the command runs — a dead hook means a refused call (fail closed). The guard runs in the
 * command's own shell process, with bash builtins only: whatever kills it kills the command with it.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, constants as fsConstants, mkdirSync, mkdtempSync, openSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';

/** The code of a codex tool call that started without a pass from the gate and runs no shell the run guard covers. */
export const gateBypassCode = 'SANDBOX_GATE_BYPASSED';

/**
 * Whether a codex command (as `codex exec --json` shows it: the argv it started, `<shell> -c|-lc '<cmd>'`) starts a
 * bash, whose run guard asks the gate itself: a bash, or any shell with `-lc` (codex starts a login command through
 * its bash wrapper that sources the shell snapshot). Anything else — `/bin/sh -c`, another shell without login — runs
 * without the guard.
 */
export function codexCommandRunsGuard(command: string): boolean {
  return /^(?:\S*\/)?bash -/.test(command) || /^\S+ -lc /.test(command);
}

/** How long the hook waits for polywave's answer before it refuses the call. */
export const gateTimeoutSeconds = 120;

/** Answers kept at most (older ones are removed: the hook that waited for them has gone on long ago). */
const answersKept = 256;

export interface ToolGate {
  /** The gate directory. */
  dir: string;
  /** The hook program (bash), for the CLI's PreToolUse hook configuration. */
  hook: string;
  /** Codex: the script every command's bash sources first (`BASH_ENV`): it runs the call only with its hook's pass. */
  runGuard: string;
  /**
   * Codex: the variables every command gets (codex's `shell_environment_policy.set`): `BASH_ENV`, the run guard, and
   * `SHLVL=1` — a top-level `bash -c` (SHLVL unset) that thinks sshd or rshd started it (`SSH_CLIENT` set, as in an
   * orchestrator started over ssh, or a socket for stdin) sources `~/.bashrc` — the agent's, writable — INSTEAD of
   * BASH_ENV; from shell level 2 on it never does.
   */
  codexShellEnv: Readonly<Record<string, string>>;
  /**
   * How many checks the gate answered with a pass (`passed`), how long the checks took in all (ms); codex: how many
   * calls their hook passed (`hookPasses`), how many of those a shell ran (`runs`), how many shells were refused for
   * want of a pass (`refused`).
   */
  stats(): { passed: number; checkMs: number; hookPasses: number; runs: number; refused: number };
  close(): void;
}

/** A call id as codex gives it to the hook (`tool_use_id`) and to the command (`CODEX_TOOL_CALL_ID`). */
const callIdPattern = '[A-Za-z0-9_.:-]{1,200}';

/** Passes kept at most for calls no shell ran (hooks of tools that run no shell: apply_patch, MCP); older ones go. */
const passesKept = 1024;

function hookScript(dir: string): string {
  const quoted = `'${dir.replace(/'/g, `'\\''`)}'`;
  return [
    '#!/bin/bash',
    "# polywave's sandbox gate (issue 11, X39-10/11): polywave checks, outside the sandbox, that nothing this sandbox",
    '# does not hide appeared since it started, and answers by creating ok/<nonce>, which only it can create.',
    '# With --codex the pass is bound to the call (its tool_use_id): the shell that runs it asks again (runGuardScript).',
    'in=$(cat)',
    `g=${quoted}`,
    'n=$SRANDOM$SRANDOM$SRANDOM$SRANDOM',
    'line=$n',
    'if [ "${1-}" = --codex ]; then',
    // (a tool_use_id inside the JSON-escaped tool input cannot match: its quotes are escaped there)
    `  re='"tool_use_id":"(${callIdPattern})"'`,
    `  if ! [[ $in =~ $re ]]; then echo 'polywave: the tool call has no id the sandbox gate can pass: the call is refused' >&2; exit 2; fi`,
    '  line="$n pass ${BASH_REMATCH[1]}"',
    'fi',
    `if ! printf '%s\\n' "$line" >"$g/req"; then echo 'polywave: the sandbox gate cannot be reached: the call is refused' >&2; exit 2; fi`,
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
 * Codex: sourced by every command's bash before the command (`BASH_ENV`, set through codex's
 * `shell_environment_policy`). Asks the gate to run `$CODEX_TOOL_CALL_ID`; exits the shell (126) — the command never
 * runs — unless the gate answers that its hook passed it and the view is still current. Bash builtins only, no
 * process of its own; it unsets BASH_ENV, so the shells the command starts do not ask again. Variables `__pw_*`.
 */
function runGuardScript(dir: string): string {
  const quoted = `'${dir.replace(/'/g, `'\\''`)}'`;
  return [
    "# polywave's sandbox gate (issue 11, h11h), in the shell that runs a codex tool call: the call runs only with the",
    '# pass its PreToolUse hook got from polywave (a hook that died got none) and after a fresh check.',
    'unset BASH_ENV',
    `__pw_g=${quoted}`,
    '__pw_n=$SRANDOM$SRANDOM$SRANDOM$SRANDOM',
    `__pw_re='^${callIdPattern}$'`,
    `if ! [[ \${CODEX_TOOL_CALL_ID-} =~ $__pw_re ]]; then echo 'polywave: this shell is not a codex tool call the sandbox gate passed: refused' >&2; exit 126; fi`,
    `if ! printf '%s run %s\\n' "$__pw_n" "$CODEX_TOOL_CALL_ID" >"$__pw_g/req"; then echo 'polywave: the sandbox gate cannot be reached: the call is refused' >&2; exit 126; fi`,
    `__pw_end=$((SECONDS + ${gateTimeoutSeconds}))`,
    'exec 9<>"$__pw_g/tick"',
    'while [ ! -e "$__pw_g/ok/$__pw_n" ]; do',
    `  if [ -e "$__pw_g/no/$__pw_n" ]; then echo "polywave: tool call $CODEX_TOOL_CALL_ID has no pass from the sandbox gate (its PreToolUse hook did not answer: it died, or was killed): the call is refused" >&2; exit 126; fi`,
    `  if [ "$SECONDS" -ge "$__pw_end" ]; then echo 'polywave: no answer from the sandbox gate (the run is ending, or the gate was tampered with): the call is refused' >&2; exit 126; fi`,
    '  read -r -t 0.002 -u 9 _',
    'done',
    'exec 9<&-',
    'unset __pw_g __pw_n __pw_end __pw_re',
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
    mkdirSync(path.join(dir, 'no'));
    const fifo = path.join(dir, 'req');
    const made = spawnSync('mkfifo', ['-m', '0600', fifo, path.join(dir, 'tick')], { stdio: 'ignore' });
    if (made.status !== 0) throw new Error(`mkfifo ${fifo} failed${made.error ? `: ${made.error.message}` : ''}`);
    const hook = path.join(dir, 'gate');
    writeFileSync(hook, hookScript(dir), { mode: 0o555 });
    const runGuard = path.join(dir, 'run-guard');
    writeFileSync(runGuard, runGuardScript(dir), { mode: 0o444 });
    // read and write: the FIFO always has a writer (no end of file) and a reader (a hook's open never blocks)
    fd = openSync(fifo, fsConstants.O_RDWR | fsConstants.O_NONBLOCK);
    const stream = new Socket({ fd, readable: true, writable: false });
    let pending = '';
    let passed = 0;
    let checkMs = 0;
    let hookPasses = 0;
    let runs = 0;
    let refused = 0;
    let staleTold = false;
    const answers: string[] = [];
    /** Codex: the calls whose hook got a pass and that no shell ran yet (oldest first). */
    const passes = new Set<string>();
    const lineFormat = new RegExp(`^([0-9]{4,64})(?: (pass|run) (${callIdPattern}))?$`);
    /** Writes the answer `kind/<nonce>` (only polywave can: the directory is read-only in the sandbox). */
    const answer = (kind: 'ok' | 'no', nonce: string): boolean => {
      try {
        writeFileSync(path.join(dir, kind, nonce), '', { flag: 'wx', mode: 0o444 });
        answers.push(path.join(kind, nonce));
        if (answers.length > answersKept) unlinkSync(path.join(dir, answers.shift()!));
        return true;
      } catch {
        return false; // answered already (a nonce seen twice)
      }
    };
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      pending += chunk;
      if (pending.length > 65_536) pending = pending.slice(-4096);
      let newline = pending.indexOf('\n');
      while (newline >= 0) {
        const line = lineFormat.exec(pending.slice(0, newline));
        pending = pending.slice(newline + 1);
        newline = pending.indexOf('\n');
        if (!line) continue;
        const [, nonce, kind, callId] = line as unknown as [string, string, 'pass' | 'run' | undefined, string | undefined];
        if (kind === 'run' && !passes.delete(callId!)) {
          // a shell for a call no hook passed: its hook died (or never ran) — the shell exits before the command
          if (answer('no', nonce)) refused += 1;
          continue;
        }
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
        if (!answer('ok', nonce)) continue;
        passed += 1;
        if (kind === 'run') runs += 1;
        if (kind === 'pass') {
          hookPasses += 1;
          passes.delete(callId!);
          passes.add(callId!);
          if (passes.size > passesKept) passes.delete(passes.values().next().value!);
        }
      }
    });
    stream.on('error', () => undefined);
    fd = undefined;
    return {
      dir,
      hook,
      runGuard,
      codexShellEnv: Object.freeze({ BASH_ENV: runGuard, SHLVL: '1' }),
      stats: () => ({ passed, checkMs, hookPasses, runs, refused }),
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
