import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PolywaveError } from '../errors/polywave-error.js';
import { dispatchKeyOf, loadDispatchKey } from './auth.js';

// Outside round A23-15/37: the dispatch key's surrounding whitespace (the newline `echo` writes, a CR or a space of an
// env file) and its file's mode.

const scratch = mkdtempSync(path.join(os.tmpdir(), 'pw-dispatch-key-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const key = 'k'.repeat(24) + '0123456789abcdef';
const record = { job_id: 'x', n: 1 };

function keyFile(name: string, content: string, mode: number): string {
  const file = path.join(scratch, name);
  writeFileSync(file, content);
  chmodSync(file, mode);
  return file;
}

function loadError(options: Parameters<typeof loadDispatchKey>[0]): PolywaveError {
  try {
    loadDispatchKey(options);
  } catch (error) {
    if (error instanceof PolywaveError) return error;
    throw error;
  }
  throw new Error('loaded');
}

describe('the dispatch key as given (A23-15, A23-37)', () => {
  it('whitespace around the key is no part of it: the variable and a file give the same key', () => {
    const signed = dispatchKeyOf(key).sign('agent-job', 'x', record);
    const file = keyFile('echoed.key', `${key}\n`, 0o600);
    for (const loaded of [
      loadDispatchKey({ env: { POLYWAVE_DISPATCH_KEY: `${key}\n` }, who: 'the orchestrator' }),
      loadDispatchKey({ env: { POLYWAVE_DISPATCH_KEY: ` ${key}\r\n` }, who: 'the orchestrator' }),
      loadDispatchKey({ env: {}, file, who: 'worker w' }),
      loadDispatchKey({ env: { POLYWAVE_DISPATCH_KEY_FILE: file }, who: 'the orchestrator' }),
    ]) {
      expect(loaded.verify('agent-job', 'x', signed)).toBe(true);
    }
  });

  it('whitespace or a control character inside the key is refused, naming where it came from', () => {
    const inside = loadError({ env: { POLYWAVE_DISPATCH_KEY: `${key} ${key}` }, who: 'the orchestrator' });
    expect(inside.code).toBe('DISPATCH_KEY_MISSING');
    expect(inside.message).toMatch(/^the orchestrator: POLYWAVE_DISPATCH_KEY holds whitespace or a control character inside the key/);
    const file = keyFile('two-lines.key', `${key}\r\n${key}\n`, 0o600);
    expect(loadError({ env: {}, file, who: 'worker w' }).message).toContain(`the key file ${file} holds whitespace or a control character inside the key`);
  });

  it('a key file every user can read is refused (DISPATCH_KEY_EXPOSED, naming the file and chmod 600); one its group can read is warned about', () => {
    const open = keyFile('open.key', `${key}\n`, 0o644);
    const refused = loadError({ env: {}, file: open, who: 'worker w' });
    expect(refused.code).toBe('DISPATCH_KEY_EXPOSED');
    expect(refused.message).toBe(`worker w: the key file ${open} is readable by every user of this machine (mode 644): whoever reads it can sign jobs that run on every worker of the key; run \`chmod 600 ${open}\` (docs/scale-out.md "The dispatch key")`);
    expect(loadError({ env: { POLYWAVE_DISPATCH_KEY_FILE: open }, who: 'the orchestrator' }).code).toBe('DISPATCH_KEY_EXPOSED');
    const warnings: string[] = [];
    const group = keyFile('group.key', `${key}\n`, 0o640);
    loadDispatchKey({ env: {}, file: group, who: 'worker w', warn: (message) => warnings.push(message) });
    expect(warnings).toEqual([`worker w: the key file ${group} is readable by its group (mode 640); every member can sign jobs that run on every worker of the key — \`chmod 600 ${group}\` unless that group is meant to hold it`]);
    warnings.length = 0;
    loadDispatchKey({ env: {}, file: keyFile('own.key', `${key}\n`, 0o600), who: 'worker w', warn: (message) => warnings.push(message) });
    loadDispatchKey({ env: {}, file: keyFile('readonly.key', `${key}\n`, 0o400), who: 'worker w', warn: (message) => warnings.push(message) });
    expect(warnings).toEqual([]);
  });
});
