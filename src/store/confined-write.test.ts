import { linkSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { appendConfinedSync, ConfinedWriteError, ensureConfinedDirSync, stateRootOf, writeConfinedSync } from './confined-write.js';

describe('confined writes into an agent-writable tree (outside attack X3 #21)', () => {
  it('writes real files inside the root and refuses symlinks, symlinked directories and hard links', () => {
    const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'pw-confined-')));
    const root = path.join(base, 'repo');
    const outside = path.join(base, 'home');
    mkdirSync(outside);
    const bashrc = path.join(outside, '.bashrc');
    writeFileSync(bashrc, 'echo original\n');
    const dir = path.join(root, '.polywave-state', 's', 'wave1', 'agent-A');
    expect(stateRootOf(path.join(dir, 'index.jsonl'))).toBe(root);

    // The normal case: created, appended, replaced.
    appendConfinedSync(path.join(dir, 'index.jsonl'), 'a\n');
    appendConfinedSync(path.join(dir, 'index.jsonl'), 'b\n');
    writeConfinedSync(path.join(dir, 'recent.json'), 'long content\n');
    writeConfinedSync(path.join(dir, 'recent.json'), '[]\n');
    expect([readFileSync(path.join(dir, 'index.jsonl'), 'utf8'), readFileSync(path.join(dir, 'recent.json'), 'utf8')]).toEqual(['a\nb\n', '[]\n']);

    const refusals: string[] = [];
    const attempt = (label: string, write: () => void) => {
      try {
        write();
      } catch (error) {
        if (error instanceof ConfinedWriteError) refusals.push(label);
        else throw error;
      }
    };
    // The file swapped for a symlink to ~/.bashrc.
    symlinkSync(bashrc, path.join(dir, 'denials.jsonl'));
    attempt('file symlink (append)', () => appendConfinedSync(path.join(dir, 'denials.jsonl'), 'PWNED\n'));
    attempt('file symlink (write)', () => writeConfinedSync(path.join(dir, 'denials.jsonl'), 'PWNED\n'));
    // A hard link to a file elsewhere (same file system).
    linkSync(bashrc, path.join(dir, 'context.md'));
    attempt('hard link', () => writeConfinedSync(path.join(dir, 'context.md'), 'PWNED\n'));
    // A directory above swapped for a symlink out of the repository.
    symlinkSync(outside, path.join(root, '.polywave-state', 's', 'wave2'));
    attempt('directory symlink (file)', () => appendConfinedSync(path.join(root, '.polywave-state', 's', 'wave2', '.bashrc'), 'PWNED\n'));
    attempt('directory symlink (mkdir)', () => ensureConfinedDirSync(path.join(root, '.polywave-state', 's', 'wave2', 'agent-B', 'tool-results'), root));

    expect(refusals).toEqual(['file symlink (append)', 'file symlink (write)', 'hard link', 'directory symlink (file)', 'directory symlink (mkdir)']);
    expect(readFileSync(bashrc, 'utf8')).toBe('echo original\n');
    expect(() => readFileSync(path.join(outside, 'agent-B'))).toThrow();
  });
});
