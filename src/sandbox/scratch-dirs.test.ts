import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { foreignScratchDirs, setScratchListingSettleMsForTests } from './scratch-dirs.js';

describe('foreignScratchDirs', () => {
  it.runIf(process.platform !== 'win32')('lists the scratch parent in /tmp, /var/tmp, /dev/shm and both TMPDIRs (a concurrent run may keep its agents there: outside attack X3 #8)', () => {
    const uid = process.getuid!();
    const dirs = foreignScratchDirs({ TMPDIR: '/srv/other-tmp' });
    for (const root of ['/tmp', '/var/tmp', '/dev/shm', '/srv/other-tmp']) expect(dirs).toContain(path.join(root, `polywave-scratch-${uid}`));
  });

  it.runIf(process.platform !== 'win32')('a legacy scratch directory made (or removed) after a listing was kept is seen by the next plan', () => {
    const tmp = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'polywave-legacy-')));
    try {
      for (const settle of [1000, 0]) {
        // 1000: the real window (the directory was just changed: never kept); 0: kept, as a settled /tmp would be
        // (each mkdir/rmdir of a subdirectory changes the directory's link count: seen within one clock tick too).
        setScratchListingSettleMsForTests(settle);
        const agent = path.join(tmp, `polywave-agent-A-${settle}`);
        const gate = path.join(tmp, `polywave-gate-${settle}`);
        expect(foreignScratchDirs({ TMPDIR: tmp })).not.toContain(agent);
        expect(foreignScratchDirs({ TMPDIR: tmp })).not.toContain(agent);
        mkdirSync(agent);
        expect(foreignScratchDirs({ TMPDIR: tmp })).toContain(agent);
        mkdirSync(gate);
        const dirs = foreignScratchDirs({ TMPDIR: tmp });
        expect(dirs).toContain(agent);
        expect(dirs).toContain(gate);
        rmSync(agent, { recursive: true });
        expect(foreignScratchDirs({ TMPDIR: tmp })).not.toContain(agent);
      }
    } finally {
      setScratchListingSettleMsForTests(1000);
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
