/**
 * ESCAPE REPRODUCTION (outside attack X18-15, 2026-12-03): `grep` and `glob` walk the agent's tree in the
 * orchestrator's process, outside the sandbox. A bash call running beside them (the ai-sdk backend runs a step's tool
 * calls at once) swapped a directory the walk had listed for a symbolic link to ~/.ssh; the walk then read the private
 * key and returned it to the model. The walk now reads each directory and file through a descriptor checked to be
 * what was listed (src/agents/tools/shared.ts openPinned). Deterministic: the swap is made from the walk's own visit.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openPinned, walkTree } from '../src/agents/tools/shared.js';

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function layout(): { root: string; outside: string } {
  const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'pw-x18-15-')));
  made.push(base);
  const root = path.join(base, 'worktree');
  const outside = path.join(base, 'home', '.ssh');
  mkdirSync(path.join(root, 'a', 'sub'), { recursive: true });
  writeFileSync(path.join(root, 'a', 'sub', 'own.ts'), 'export const own = 1;\n');
  mkdirSync(outside, { recursive: true });
  writeFileSync(path.join(outside, 'id_rsa'), '-----BEGIN OPENSSH PRIVATE KEY----- CANARY-X18-15\n');
  return { root, outside };
}

describe('grep/glob walk no directory swapped for a link after it was listed (X18-15)', () => {
  it.skipIf(process.platform !== 'linux')('a directory swapped for a link to ~/.ssh while the walk runs is skipped, not followed', async () => {
    const { root, outside } = layout();
    const seen: string[] = [];
    await walkTree(root, { maxEntries: 1000, deadline: Date.now() + 10_000 }, (entry) => {
      seen.push(entry.relative);
      // the concurrent bash call: `mv a/sub a/gone && ln -s ~/.ssh a/sub`, after the walk listed a/
      if (entry.relative === 'a/sub') {
        renameSync(path.join(root, 'a', 'sub'), path.join(root, 'a', 'gone'));
        symlinkSync(outside, path.join(root, 'a', 'sub'));
      }
    });
    expect(seen).toContain('a/sub');
    expect(seen.filter((entry) => entry.includes('id_rsa'))).toEqual([]);
  });

  it.skipIf(process.platform !== 'linux')('a file reached through a link swapped in on the way is not opened; the real file is', async () => {
    const { root, outside } = layout();
    const own = path.join(root, 'a', 'sub', 'own.ts');
    const handle = await openPinned(own, own);
    expect(handle).toBeDefined();
    await handle!.close();
    renameSync(path.join(root, 'a', 'sub'), path.join(root, 'a', 'gone'));
    symlinkSync(outside, path.join(root, 'a', 'sub'));
    writeFileSync(path.join(root, 'a', 'gone', 'id_rsa'), 'mine\n');
    expect(await openPinned(path.join(root, 'a', 'sub', 'id_rsa'), path.join(root, 'a', 'sub', 'id_rsa'))).toBeUndefined();
    // a link as the last component is never followed either
    symlinkSync(path.join(outside, 'id_rsa'), path.join(root, 'key'));
    expect(await openPinned(path.join(root, 'key'), path.join(root, 'key'))).toBeUndefined();
  });
  it.skipIf(process.platform !== 'linux')('X19-07: a file swapped for a FIFO after it was listed is refused at once, never waited on (four such opens had stopped every fs call of the orchestrator)', async () => {
    const { root } = layout();
    const files = ['f0.txt', 'f1.txt', 'f2.txt', 'f3.txt', 'f4.txt', 'f5.txt'].map((name) => path.join(root, 'a', name));
    for (const file of files) writeFileSync(file, 'text\n');
    // the concurrent bash call: a FIFO (no writer ever) renamed over each listed file
    for (const file of files) {
      execFileSync('mkfifo', [`${file}.fifo`]);
      renameSync(`${file}.fifo`, file);
    }
    const started = Date.now();
    const opened = await Promise.race([
      Promise.all(files.map((file) => openPinned(file, file))),
      new Promise<'blocked'>((resolve) => setTimeout(() => resolve('blocked'), 5_000).unref()),
    ]);
    expect(opened).toEqual(files.map(() => undefined));
    expect(Date.now() - started).toBeLessThan(5_000);
    // and the process's fs calls still answer (the libuv threads are free)
    writeFileSync(path.join(root, 'after.txt'), 'ok\n');
    expect(await openPinned(path.join(root, 'after.txt'), path.join(root, 'after.txt')).then(async (handle) => (await handle?.close(), handle !== undefined))).toBe(true);
  });
});
