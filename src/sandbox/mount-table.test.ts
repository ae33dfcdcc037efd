import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fileSystemLocation, mountAliases, type MountEntry } from './mount-table.js';

describe('the mount table (X45-02, X45-11)', () => {
  const scratch = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'polywave-mount-table-')));
  for (const dir of ['repo/.git', 'repo/tools', 'alias/.git', 'alias/tools', 'opt-tools', 'host/repo/.git']) mkdirSync(path.join(scratch, dir), { recursive: true });
  writeFileSync(path.join(scratch, 'repo/.env'), 'x');
  writeFileSync(path.join(scratch, 'alias/.env'), 'x');
  // `/` of device 8:1; the checkout bound at `alias`; its `tools` at `opt-tools`; all of `/` again at `host`
  const mounts: MountEntry[] = [
    { device: '8:1', root: '/', mountPoint: '/' },
    { device: '0:22', root: '/', mountPoint: '/dev/shm' },
    { device: '8:1', root: path.join(scratch, 'repo'), mountPoint: path.join(scratch, 'alias') },
    { device: '8:1', root: path.join(scratch, 'repo/tools'), mountPoint: path.join(scratch, 'opt-tools') },
    { device: '8:1', root: path.dirname(scratch), mountPoint: path.join(scratch, 'host') },
  ];

  it('places a bind mount where its source lies', () => {
    expect(fileSystemLocation(mounts, path.join(scratch, 'opt-tools/git'))).toEqual({ device: '8:1', inside: path.join(scratch, 'repo/tools/git') });
    expect(fileSystemLocation(mounts, path.join(scratch, 'repo/tools/git'))).toEqual({ device: '8:1', inside: path.join(scratch, 'repo/tools/git') });
    expect(fileSystemLocation(mounts, '/dev/shm/x')?.device).toBe('0:22');
  });

  it('finds every other place a hidden path is mounted at, existing ones only, never the path itself', () => {
    const repo = path.join(scratch, 'repo');
    const aliases = mountAliases([repo, path.join(repo, '.env')], mounts);
    // the checkout at `alias`, a part of it at `opt-tools`; `host/<scratch>/repo` does not exist here (not a real mount)
    expect(aliases.sort()).toEqual([path.join(scratch, 'alias'), path.join(scratch, 'opt-tools')].sort());
    expect(mountAliases([path.join(repo, '.env')], mounts)).toEqual([path.join(scratch, 'alias/.env')]);
    expect(mountAliases([path.join(scratch, 'elsewhere')], mounts)).toEqual([]);
    expect(mountAliases([repo], [])).toEqual([]);
  });
});
