import { spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { existsSync, linkSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendConfined, ConfinedReadError, insideRoot, readConfined, readConfinedIfExists } from './safe-read.js';

let base: string;
let root: string;
let outside: string;

beforeAll(() => {
  base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'polywave-safe-read-')));
  root = path.join(base, 'repo');
  outside = path.join(base, 'outside');
  mkdirSync(path.join(root, 'docs'), { recursive: true });
  mkdirSync(path.join(root, '.git'), { recursive: true });
  mkdirSync(outside, { recursive: true });
  writeFileSync(path.join(outside, 'secret.yaml'), 'token: OUTSIDE-SECRET\n');
  writeFileSync(path.join(root, 'docs', 'plan.yaml'), 'title: inside\n');
  writeFileSync(path.join(root, '.git', 'HEAD'), 'ref: refs/heads/main\n');
});

afterAll(() => rmSync(base, { recursive: true, force: true }));

/** The refusal `promise` ends with: its status and code (fails the test when it resolves). */
async function refusal(promise: Promise<unknown>): Promise<{ status: number; code: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ConfinedReadError) return { status: error.status, code: error.code, message: error.message };
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('readConfined', () => {
  it('reads a regular file inside the root, through an inside symlink too', async () => {
    const read = await readConfined(root, path.join(root, 'docs', 'plan.yaml'), { maxBytes: 1024 });
    expect(read.buffer.toString('utf8')).toBe('title: inside\n');
    expect(read).toMatchObject({ real: path.join(root, 'docs', 'plan.yaml'), size: 14, truncated: false });
    symlinkSync('plan.yaml', path.join(root, 'docs', 'alias.yaml'));
    expect((await readConfined(root, path.join(root, 'docs', 'alias.yaml'), { maxBytes: 1024 })).buffer.toString('utf8')).toBe('title: inside\n');
  });

  it('refuses symlinks out of the root, into .git, hard links, FIFOs and devices, with codes', async () => {
    symlinkSync(path.join(outside, 'secret.yaml'), path.join(root, 'docs', 'leak.yaml'));
    symlinkSync('/dev/zero', path.join(root, 'docs', 'zero.yaml'));
    symlinkSync(path.join(outside), path.join(root, 'docs', 'outdir'));
    symlinkSync('../.git/HEAD', path.join(root, 'docs', 'head.yaml'));
    linkSync(path.join(outside, 'secret.yaml'), path.join(root, 'docs', 'hard.yaml'));
    execFileSync('mkfifo', [path.join(root, 'docs', 'fifo.yaml')]);
    symlinkSync(path.join(root, 'docs', 'fifo.yaml'), path.join(root, 'docs', 'to-fifo.yaml'));
    const cases: Array<[string, number, string, RegExp]> = [
      ['docs/leak.yaml', 403, 'SERVE_PATH', /leads outside the repository/],
      ['docs/zero.yaml', 403, 'SERVE_PATH', /leads outside the repository/],
      ['docs/outdir/secret.yaml', 403, 'SERVE_PATH', /leads outside the repository/],
      ['docs/head.yaml', 403, 'SERVE_PATH', /leads outside the repository/],
      ['.git/HEAD', 403, 'SERVE_PATH', /leads outside the repository/],
      ['docs/hard.yaml', 403, 'SERVE_PATH', /other hard links/],
      ['docs/fifo.yaml', 404, 'SERVE_NOT_FILE', /not a regular file/],
      ['docs/to-fifo.yaml', 404, 'SERVE_NOT_FILE', /not a regular file/],
      ['docs', 404, 'SERVE_NOT_FILE', /not a regular file/],
      ['docs/missing.yaml', 404, 'SERVE_NOT_FOUND', /does not exist/],
    ];
    const started = Date.now();
    for (const [relative, status, code, message] of cases) {
      const got = await refusal(readConfined(root, path.join(root, relative), { maxBytes: 1024 }));
      expect(got, relative).toMatchObject({ status, code });
      expect(got.message, relative).toMatch(message);
      expect(got.message, relative).toContain(relative);
      expect(got.message).not.toContain('OUTSIDE-SECRET');
    }
    // Nothing waited for a FIFO writer or read a device.
    expect(Date.now() - started).toBeLessThan(2000);
    expect(await readConfinedIfExists(root, path.join(root, 'docs', 'missing.yaml'), { maxBytes: 1024 })).toBeUndefined();
    await expect(readConfinedIfExists(root, path.join(root, 'docs', 'leak.yaml'), { maxBytes: 1024 })).rejects.toMatchObject({ code: 'SERVE_PATH' });
  });

  it('refuses a file over the cap (413) or, with tail, reads its last whole lines', async () => {
    const lines = Array.from({ length: 100 }, (_, index) => `{"n":${index}}`).join('\n') + '\n';
    writeFileSync(path.join(root, 'docs', 'log.jsonl'), lines);
    expect(await refusal(readConfined(root, path.join(root, 'docs', 'log.jsonl'), { maxBytes: 100, shown: 'the log' }))).toEqual({ status: 413, code: 'SERVE_TOO_LARGE', message: 'the log is over 100 bytes' });
    const from = (first: number) => `${Array.from({ length: 100 - first }, (_, index) => `{"n":${first + index}}`).join('\n')}\n`;
    // 890 bytes; line 89 is bytes 791–799. The last 100 bytes start with line 88's newline, the last 99 with line 89, the last 98 inside it.
    for (const [maxBytes, first] of [[100, 89], [99, 89], [98, 90]] as const) {
      const tail = await readConfined(root, path.join(root, 'docs', 'log.jsonl'), { maxBytes, tail: true });
      expect(tail.truncated).toBe(true);
      expect(tail.buffer.toString('utf8'), String(maxBytes)).toBe(from(first));
      expect(tail.size).toBe(890);
    }
    expect((await readConfined(root, path.join(root, 'docs', 'log.jsonl'), { maxBytes: Buffer.byteLength(lines) })).buffer.toString('utf8')).toBe(lines);
  });

  it('never returns an outside file while a file or a parent directory is swapped for a symlink (check-then-read race)', async () => {
    const secret = path.join(outside, 'race');
    writeFileSync(secret, 'OUTSIDE-SECRET\n');
    mkdirSync(path.join(root, 'swap', 'real'), { recursive: true });
    writeFileSync(path.join(root, 'swap', 'real', 'race'), 'inside\n');
    writeFileSync(path.join(root, 'swap', 'race'), 'inside\n');
    // Another process swaps, as fast as it can: `swap/race` file ↔ symlink, and `swap/dir` real directory ↔ symlink to outside.
    const script = `
      const fs = require('node:fs'); const path = require('node:path');
      const dir = process.argv[1], outside = process.argv[2];
      const end = Date.now() + 60000; // a synchronous loop: only SIGKILL (or the end) stops it
      while (Date.now() < end) {
        try { fs.symlinkSync(path.join(outside, 'race'), path.join(dir, 'tmp-link')); fs.renameSync(path.join(dir, 'tmp-link'), path.join(dir, 'race')); } catch {}
        try { fs.writeFileSync(path.join(dir, 'tmp-file'), 'inside\\n'); fs.renameSync(path.join(dir, 'tmp-file'), path.join(dir, 'race')); } catch {}
        try { fs.renameSync(path.join(dir, 'real'), path.join(dir, 'dir')); fs.renameSync(path.join(dir, 'dir'), path.join(dir, 'real')); } catch {}
        try { fs.symlinkSync(outside, path.join(dir, 'dir')); fs.rmSync(path.join(dir, 'dir')); } catch {}
      }`;
    const swapper = spawn(process.execPath, ['-e', script, path.join(root, 'swap'), outside], { stdio: 'ignore' });
    const outcomes = new Map<string, number>();
    const count = (key: string) => outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
    try {
      await new Promise((resolve) => setTimeout(resolve, 100));
      for (let i = 0; i < 1500; i += 1) {
        for (const relative of ['swap/race', 'swap/dir/race']) {
          try {
            const text = (await readConfined(root, path.join(root, relative), { maxBytes: 1024 })).buffer.toString('utf8');
            count(text === 'inside\n' ? 'inside' : `LEAK ${text}`);
          } catch (error) {
            count(error instanceof ConfinedReadError ? error.code : String(error));
          }
        }
      }
    } finally {
      const exited = new Promise((resolve) => swapper.once('exit', resolve));
      swapper.kill('SIGKILL');
      await exited;
    }
    expect([...outcomes.keys()].filter((key) => key.startsWith('LEAK'))).toEqual([]);
    // The swapper really ran: some reads were refused as leading outside, some read the inside file.
    expect(outcomes.get('inside') ?? 0).toBeGreaterThan(0);
    expect(outcomes.get('SERVE_PATH') ?? 0).toBeGreaterThan(0);
  }, 30_000);
});

describe('appendConfined', () => {
  it('creates and appends inside the root, refuses a symlinked directory, a symlink and a FIFO', async () => {
    const log = path.join(root, '.polywave-state', 'serve', 'rejections.jsonl');
    await appendConfined(root, log, 'one\n');
    await appendConfined(root, log, 'two\n');
    expect(readFileSync(log, 'utf8')).toBe('one\ntwo\n');
    mkdirSync(path.join(root, 'state2'));
    symlinkSync(outside, path.join(root, 'state2', 'serve'));
    expect(await refusal(appendConfined(root, path.join(root, 'state2', 'serve', 'x', 'rejections.jsonl'), 'x\n'))).toMatchObject({ status: 403, code: 'SERVE_PATH' });
    expect(existsSync(path.join(outside, 'x'))).toBe(false);
    symlinkSync(path.join(outside, 'appended'), path.join(root, 'state2', 'link.jsonl'));
    expect(await refusal(appendConfined(root, path.join(root, 'state2', 'link.jsonl'), 'x\n'))).toMatchObject({ status: 403, code: 'SERVE_PATH' });
    expect(existsSync(path.join(outside, 'appended'))).toBe(false);
    execFileSync('mkfifo', [path.join(root, 'state2', 'fifo.jsonl')]);
    expect(await refusal(appendConfined(root, path.join(root, 'state2', 'fifo.jsonl'), 'x\n'))).toMatchObject({ status: 404, code: 'SERVE_NOT_FILE' });
  });

  it('insideRoot: the root and below, never .git, never a sibling with the same prefix', () => {
    expect(insideRoot('/r/repo', '/r/repo')).toBe(true);
    expect(insideRoot('/r/repo', '/r/repo/a/b')).toBe(true);
    expect(insideRoot('/r/repo', '/r/repo-other/a')).toBe(false);
    expect(insideRoot('/r/repo', '/r/repo/.git/config')).toBe(false);
    expect(insideRoot('/r/repo', '/r/repo/sub/.GIT/x')).toBe(false);
  });
});
