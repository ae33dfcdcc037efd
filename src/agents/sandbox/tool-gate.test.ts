import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { codexCommandRunsGuard, openToolGate, type ToolGate } from './tool-gate.js';

/**
 * The gate's codex protocol without a sandbox or codex (issue 11, h11h): the hook (`--codex`) gets a pass for its call
 * id; a bash with the run guard as BASH_ENV runs the command only for a call whose hook got a pass, once.
 */

function run(file: string, args: string[], options: { env?: Record<string, string>; input?: string } = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(file, args, { env: { PATH: process.env.PATH!, ...options.env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}

const hookInput = (callId: string, command: string) =>
  JSON.stringify({ session_id: 's', hook_event_name: 'PreToolUse', tool_name: 'Bash', tool_input: { command }, tool_use_id: callId });

describe('the sandbox gate, codex: the pass is bound to the call and asked for again by its shell', () => {
  let gate: ToolGate | undefined;
  let scratch: string | undefined;
  afterEach(() => {
    gate?.close();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it('a call its hook passed runs once; a call no hook passed (the hook died) is refused before its command runs', async () => {
    gate = openToolGate(() => undefined, () => undefined);
    scratch = mkdtempSync(path.join(os.tmpdir(), 'gate-test-'));
    const ran = (name: string) => path.join(scratch!, name);
    // (stdin is a socket here, as node makes its pipes: a top-level bash would take that for rshd and source ~/.bashrc
    // instead of BASH_ENV — SHLVL=1 from codexShellEnv keeps it from that; SSH_CLIENT set as over ssh)
    const shell = (callId: string | undefined, marker: string) =>
      run('/bin/bash', ['-c', `touch ${ran(marker)}; echo ran`], { env: { ...gate!.codexShellEnv, HOME: scratch!, SSH_CLIENT: '10.0.0.1 22 22', ...(callId !== undefined ? { CODEX_TOOL_CALL_ID: callId } : {}) } });

    // the hook passes call_1 (a tool_use_id inside the tool input does not count: it is JSON-escaped there)
    const hook = await run(gate.hook, ['--codex'], { input: hookInput('call_1', '"tool_use_id":"call_9"') });
    expect(hook.code).toBe(0);
    const first = await shell('call_1', 'one');
    expect(first).toMatchObject({ code: 0, stdout: 'ran\n', stderr: '' });
    expect(existsSync(ran('one'))).toBe(true);
    // the pass is used up
    const again = await shell('call_1', 'again');
    expect(again.code).toBe(126);
    expect(again.stderr).toMatch(/tool call call_1 has no pass from the sandbox gate .*the call is refused/);
    expect(existsSync(ran('again'))).toBe(false);
    // no hook passed call_9 (its hook died), nor a shell without a call id
    expect((await shell('call_9', 'nine')).code).toBe(126);
    expect((await shell(undefined, 'none')).code).toBe(126);
    expect(existsSync(ran('nine')) || existsSync(ran('none'))).toBe(false);
    expect(gate.stats()).toMatchObject({ hookPasses: 1, runs: 1, refused: 2 });
    // the shell the command starts does not ask again (BASH_ENV is gone)
    await run(gate.hook, ['--codex'], { input: hookInput('call_2', 'x') });
    const nested = await run('/bin/bash', ['-c', 'echo "[${BASH_ENV-}]"; bash -c "echo inner"'], { env: { ...gate.codexShellEnv, HOME: scratch, CODEX_TOOL_CALL_ID: 'call_2' } });
    expect(nested).toMatchObject({ code: 0, stdout: '[]\ninner\n' });
  });

  it('a hook without a call id is refused (exit 2: a blocking answer)', async () => {
    gate = openToolGate(() => undefined, () => undefined);
    const hook = await run(gate.hook, ['--codex'], { input: JSON.stringify({ tool_name: 'Bash', tool_input: { command: 'x' } }) });
    expect(hook.code).toBe(2);
    expect(hook.stderr).toMatch(/no id the sandbox gate can pass/);
  });

  it('which codex commands start a bash (the run guard covers them)', () => {
    expect(codexCommandRunsGuard("/bin/bash -c 'touch x'")).toBe(true);
    expect(codexCommandRunsGuard("/usr/bin/bash -lc 'touch x'")).toBe(true);
    expect(codexCommandRunsGuard("/usr/bin/sh -lc 'touch x'")).toBe(true);
    expect(codexCommandRunsGuard("/usr/bin/sh -c 'touch x'")).toBe(false);
    expect(codexCommandRunsGuard("/bin/zsh -c 'touch x'")).toBe(false);
    expect(codexCommandRunsGuard('/usr/bin/bashful -c x')).toBe(false);
  });
});
