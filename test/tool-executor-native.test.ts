/**
 * dist/native/polywave-executor spoken to directly (no sandbox): the protocol of toolExecutorMain,
 * answer for answer — the same request lines sent to both programs give the same answers — and a
 * malformed line (not JSON, not an object, deep nesting, NUL bytes, invalid UTF-8 in a file name)
 * never ends it: the next request is answered.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { nativeToolExecutor, toolExecutorSource } from '../src/agents/sandbox/tool-executor.js';

const native = nativeToolExecutor();
const scratch = mkdtempSync(path.join(os.tmpdir(), 'executor-native-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

type Answer = Record<string, unknown> & { id?: number };

/** Sends `lines` to a fresh executor, closes its stdin, and returns its answers (ready line first) once it exits. */
async function converse(program: 'native' | 'node', lines: string[], env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin' }): Promise<{ answers: Answer[]; code: number | null }> {
  const child = program === 'native' ? spawn(native!, [], { env, stdio: ['pipe', 'pipe', 'pipe'] }) : spawn(process.execPath, ['-e', toolExecutorSource()], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  for (const line of lines) child.stdin.write(`${line}\n`);
  child.stdin.end();
  const code = await new Promise<number | null>((resolve) => child.on('close', (exitCode) => resolve(exitCode)));
  return { answers: output.split('\n').filter(Boolean).map((line) => JSON.parse(line) as Answer), code };
}

/** Answers by id (a run's chunks joined into `output`), the ready line's pid left out. */
function byId(answers: Answer[]): Record<string, unknown> {
  const result: Record<string, Answer> = {};
  for (const answer of answers) {
    const key = String(answer.id);
    if (typeof answer.chunk === 'string') {
      const previous = result[key] ?? {};
      result[key] = { ...previous, output: `${(previous.output as string | undefined) ?? ''}${Buffer.from(answer.chunk, 'base64').toString('utf8')}` };
    } else {
      result[key] = { ...result[key], ...answer, ...(answer.id === 0 ? { ready: 'pid' } : {}) };
    }
  }
  return result;
}

describe.skipIf(native === undefined || process.platform !== 'linux')('the native tool executor, spoken to directly', () => {
  it('answers every request as the node executor does', async () => {
    const dir = path.join(scratch, 'parity');
    /** The same files for each program (one after the other: they write there). */
    const fixture = () => {
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(path.join(dir, 'real'), { recursive: true });
      writeFileSync(path.join(dir, 'real', 'old.txt'), 'old');
      symlinkSync('/etc/hostname', path.join(dir, 'final-link'));
      symlinkSync(path.join(dir, 'real'), path.join(dir, 'swapped'));
      writeFileSync(Buffer.from(`${dir}/latin1-\xe9\xff-"q"\x01`, 'latin1'), 'x');
    };
    const requests = [
      { id: 1, op: 'write', path: path.join(dir, 'a', 'b', 'c.txt'), data: Buffer.from('hello\n').toString('base64') },
      { id: 2, op: 'write', path: path.join(dir, 'a', 'b', 'c.txt'), data: Buffer.from('hi').toString('base64') },
      { id: 3, op: 'read', path: path.join(dir, 'a', 'b', 'c.txt'), limit: 1 },
      { id: 4, op: 'read', path: path.join(dir, 'a') },
      { id: 5, op: 'list', path: dir },
      { id: 6, op: 'stat', path: path.join(dir, 'final-link') },
      { id: 7, op: 'stat', path: path.join(dir, 'missing') },
      { id: 8, op: 'write', path: path.join(dir, 'final-link'), data: '' },
      { id: 9, op: 'write', path: path.join(dir, 'swapped', 'old.txt'), data: '' },
      { id: 10, op: 'write', path: path.join(dir, 'swapped', 'new.txt'), data: '' },
      { id: 11, op: 'write', path: path.join(dir, 'real', 'old.txt', 'below'), data: '' },
      { id: 12, op: 'list', path: path.join(dir, 'real', 'old.txt') },
      { id: 13, op: 'nope', path: dir },
      { id: 14, op: 'read', path: 'relative' },
      { id: 15, op: 'run', command: 'echo out; echo err >&2; exit 4', cwd: dir, env: { PATH: '/usr/bin:/bin', X: 'é "q"' } },
      { id: 16, op: 'run', command: 'true', cwd: path.join(dir, 'missing') },
      { id: 17, op: 'run', command: 'true', cwd: 'relative' },
      { id: 18, op: 'run', command: 'kill -TERM $$', cwd: dir, env: { PATH: '/usr/bin:/bin' } },
      { id: 19, op: 'run', command: 'echo "[$X]"; env | sort', cwd: dir, env: { X: 'é "q"\n' } },
      { id: 20, op: 'signal', target: 99, signal: 'SIGKILL' },
    ].map((request) => JSON.stringify(request));
    fixture();
    const fromNative = await converse('native', requests);
    fixture();
    const fromNode = await converse('node', requests);
    expect(fromNative.code).toBe(0);
    expect(byId(fromNative.answers)).toEqual(byId(fromNode.answers));
    expect(byId(fromNative.answers)).toMatchObject({
      8: { ok: false, code: 'ELOOP' },
      9: { ok: false, code: 'EXDEV' },
      10: { ok: false, code: 'EXDEV' },
      11: { ok: false, code: 'EEXIST' },
      15: { ok: true, exitCode: 4, signal: null, output: 'out\nerr\n' },
      16: { ok: true, spawnError: 'spawn bash ENOENT' },
      18: { ok: true, exitCode: null, signal: 'SIGTERM' },
    });
  });

  it('a malformed line is ignored (or answered EINVAL), never the end of the executor', async () => {
    const ok = JSON.stringify({ id: 9, op: 'stat', path: scratch });
    const lines = [
      'not json',
      'null',
      '[]',
      '5',
      '"string"',
      '{"id":1,',
      '{"id":2,"op":"stat","path":"/tmp"} trailing',
      '['.repeat(200_000),
      `{"id":3,"x":${'['.repeat(10_000)}`,
      '{"id":4,"op":"stat","path":"/tmp\\u0000x"}',
      '{"id":5,"op":"write","path":7}',
      '{"id":6,"op":"run","command":"true","cwd":"/tmp","env":{"A":"x\\u0000y"}}',
      '{"id":7,"op":"run","command":5,"cwd":"/tmp"}',
      '{"id":8,"op":"stat","path":"\\ud800/\\udfff"}',
      '\u0000\u0001\u00ff',
      ok,
    ];
    const { answers, code } = await converse('native', lines);
    expect(code).toBe(0);
    const ids = answers.map((answer) => answer.id);
    expect(ids).toEqual([0, 4, 5, 6, 7, 8, 9]);
    expect(answers.at(-1)).toMatchObject({ id: 9, ok: true, kind: 'directory' });
    expect(answers.find((answer) => answer.id === 5)).toMatchObject({ ok: false, code: 'EINVAL' });
    expect(answers.find((answer) => answer.id === 6)).toMatchObject({ ok: true, spawnError: expect.stringContaining('null bytes') });
    expect(answers.find((answer) => answer.id === 7)).toMatchObject({ ok: false, code: 'EINVAL' });
  });

  it('the ready line: pid, the environment as node reads it (invalid UTF-8 as U+FFFD), no sweep outside the sandbox', async () => {
    const { answers } = await converse('native', [], { PATH: '/usr/bin:/bin', SANDBOX_RUNTIME: '1', WEIRD: 'a"\\\n\tb' });
    expect(answers[0]).toMatchObject({ id: 0, ok: true, ready: expect.any(Number), env: { PATH: '/usr/bin:/bin', SANDBOX_RUNTIME: '1', WEIRD: 'a"\\\n\tb' }, sweep: false });
  });
});
