import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { foreignScratchDirs } from './scratch-dirs.js';

describe('foreignScratchDirs', () => {
  it.runIf(process.platform !== 'win32')('lists the scratch parent in /tmp, /var/tmp, /dev/shm and both TMPDIRs (a concurrent run may keep its agents there: outside attack X3 #8)', () => {
    const uid = process.getuid!();
    const dirs = foreignScratchDirs({ TMPDIR: '/srv/other-tmp' });
    for (const root of ['/tmp', '/var/tmp', '/dev/shm', '/srv/other-tmp']) expect(dirs).toContain(path.join(root, `polywave-scratch-${uid}`));
  });
});
