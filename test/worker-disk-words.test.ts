import { describe, expect, it } from 'vitest';
import { localDiskTrouble } from '../src/worker/worker.js';

// Outside round A21-33: the classifier of a worker's disk trouble matched its words anywhere in an error's text, so a
// job whose base holds a path named "No space left on device" (too long to check out) made every worker that took it
// declare its own disk full, hand it back and pause. Only the system's error text counts now: last on a line after
// `: ` (git's `<what>: <strerror>`), or a node error's code. (A probe write to --dir then judges the disk, A21-08/25;
// test/worker-disk-full.test.ts runs a real full disk.)
describe('localDiskTrouble (A21-33)', () => {
  it('takes the system error text, never the same words inside a path', () => {
    // Real disk trouble, as git and node say it.
    expect(localDiskTrouble(new Error("error: unable to write file src/a.js: No space left on device\nfatal: cannot store blob"))).toBe('No space left on device');
    expect(localDiskTrouble(new Error("fatal: could not write config file '/w/repo.git/config': Disk quota exceeded"))).toBe('Disk quota exceeded');
    expect(localDiskTrouble(new Error('fatal: unable to create temporary file: Read-only file system'))).toBe('Read-only file system');
    expect(localDiskTrouble(Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }))).toBe('ENOSPC');
    expect(localDiskTrouble(new Error('ENOSPC: no space left on device, open \'/w/x\''))).toBe('ENOSPC');
    expect(localDiskTrouble(new Error('script step 2 (write) failed: ENOSPC: no space left on device, write'))).toBe('ENOSPC');
    // A21-33's job: the words are a directory of the checkout; the error is a name too long.
    expect(localDiskTrouble(new Error(`error: unable to create file No space left on device/${'a'.repeat(300)}: File name too long`))).toBeUndefined();
    expect(localDiskTrouble(new Error("fatal: cannot stat 'src/ENOSPC: x/Input/output error'"))).toBeUndefined();
    expect(localDiskTrouble(new Error('error: unable to create file ENOSPC: x: File name too long'))).toBeUndefined();
  });
});
