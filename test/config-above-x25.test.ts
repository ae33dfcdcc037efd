/**
 * Outside attacks X25-21, X25-25 and X25-11 (issue 11): where the settings that decide every sandbox come from.
 * - X25-21: a repository without a polywave.config.json of its own took its sandbox, setup, dispatch and the daemon's
 *   autonomy from a config above it "as on disk" — under a shared directory, another local user's file. A config
 *   another user controls (owned by another uid than ours and root, writable by anyone, or in a directory anyone may
 *   write without the sticky bit) is now ignored, with a warning naming it.
 * - X25-25: an agent deleted the repository's own config; finalize saw no change in the watched keys and the config
 *   above took over (`sandbox.writable: ["~"]`). The deletion now blocks the wave like a change.
 * - X25-11: `autonomy` (the daemon's level without --autonomy) and `budget_usd` were not watched.
 * Real git, the real finalize pipeline in-process.
 */
import { chmodSync, chownSync, closeSync, mkdirSync, openSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { budgetFrom } from '../src/cli/budget-option.js';
import { findConfigFile } from '../src/gates/config.js';
import { isPrivateGroup, locateProjectConfig, untrustedConfigReason } from '../src/store/project-config.js';
import { configBlockInEffect, loadTrustedConfig } from '../src/store/trusted-config.js';
import { createTestRepo } from './support/git-repo.js';
import { createWaveFixture } from './support/wave-fixture.js';

const isRoot = typeof process.geteuid === 'function' && process.geteuid() === 0;

// A POSIX access ACL written as the kernel's xattr (what setfacl writes; no acl package needed): version 2, then
// (tag u16, perm u16, id u32) entries sorted by tag. The kernel sets the mode's group bits to the mask.
const [aclUserObj, aclUser, aclGroupObj, aclMask, aclOther] = [0x01, 0x02, 0x04, 0x10, 0x20];
const xattrs = createRequire(import.meta.url)('fs-native-extensions') as { setAttrSync: (fd: number, name: string, value: Buffer) => void; removeAttrSync: (fd: number, name: string) => void };
function withFd(file: string, use: (fd: number) => void): void {
  const fd = openSync(file, 'r');
  try {
    use(fd);
  } finally {
    closeSync(fd);
  }
}
function setAcl(file: string, entries: Array<[number, number, number?]>): void {
  const value = Buffer.alloc(4 + entries.length * 8);
  value.writeUInt32LE(2, 0);
  entries.forEach(([tag, perm, id], index) => {
    value.writeUInt16LE(tag, 4 + index * 8);
    value.writeUInt16LE(perm, 6 + index * 8);
    value.writeUInt32LE(id ?? 0xffffffff, 8 + index * 8);
  });
  withFd(file, (fd) => xattrs.setAttrSync(fd, 'system.posix_acl_access', value));
}
function removeAcl(file: string): void {
  withFd(file, (fd) => xattrs.removeAttrSync(fd, 'system.posix_acl_access'));
}

describe('a polywave.config.json above the repository (X25-21)', () => {
  it('is used only when it is this user\'s (or root\'s), not writable by anyone, in a directory not open to anyone', async () => {
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export {};\n' } });
    // <root>/repo is the repository: <root>/polywave.config.json is above it (<root> stands for a shared /tmp/proj's parent).
    const target = repo.dir;
    const above = path.join(path.dirname(target), 'polywave.config.json');
    writeFileSync(above, `${JSON.stringify({ sandbox: { writable: ['~'], network: { allow: ['attacker.example.com'] } } })}\n`);
    chmodSync(above, 0o644);
    expect((await loadTrustedConfig(target)).path).toBe(above);
    expect(await locateProjectConfig(target)).toBe(above);

    chmodSync(above, 0o666);
    expect((await loadTrustedConfig(target)).path).toBeUndefined();
    expect(await locateProjectConfig(target)).toBeUndefined();
    chmodSync(above, 0o644);

    const directoryMode = 0o777;
    chmodSync(path.dirname(above), directoryMode);
    expect((await loadTrustedConfig(target)).path, 'a directory anyone may write, no sticky bit').toBeUndefined();
    chmodSync(path.dirname(above), directoryMode | 0o1000);
    expect((await loadTrustedConfig(target)).path, 'sticky (/tmp): the owner decides').toBe(above);

    // X26-03: group-writable (umask 002, a team directory) — trusted only when the group is our own.
    const gid = process.getegid?.() ?? 0;
    chmodSync(above, 0o664);
    expect((await loadTrustedConfig(target)).path, 'group-writable, our group').toBe(above);
    if (isRoot) {
      chownSync(above, 0, 1);
      expect((await loadTrustedConfig(target)).path, 'group-writable by group 1').toBeUndefined();
      expect(await findConfigFile(target), 'the gates\' repo registry (X26-12)').toBeUndefined();
      chownSync(above, 0, gid);
      chmodSync(above, 0o644);
      chownSync(path.dirname(above), 0, 1);
      chmodSync(path.dirname(above), 0o775);
      expect((await loadTrustedConfig(target)).path, 'a directory group 1 may write').toBeUndefined();
      chmodSync(path.dirname(above), 0o755);
      chownSync(path.dirname(above), 0, gid);
    }
    chmodSync(above, 0o644);
    chmodSync(above, 0o666);
    expect(await findConfigFile(target), 'the gates\' repo registry (X26-12): writable by anyone').toBeUndefined();
    chmodSync(above, 0o644);
    chmodSync(path.dirname(above), 0o755);
  });

  // X27-07: a shared primary group (`users`, a team group that is also your egid) — your own egid says nothing about
  // who else is in it. X27-08: a POSIX ACL entry `user:1:rw-` on a root:root file, which the mode shows only as the
  // group bits (the ACL's mask). Both let another local user rewrite the config the victim's sandbox is built from.
  it.runIf(isRoot && process.platform === 'linux')('group write is trusted only from your private group, and never with an ACL on the file or its directory (X27-07, X27-08)', async () => {
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export {};\n' } });
    const target = repo.dir;
    const above = path.join(path.dirname(target), 'polywave.config.json');
    writeFileSync(above, `${JSON.stringify({ sandbox: { writable: ['~'] } })}\n`);
    chmodSync(above, 0o664);
    expect((await loadTrustedConfig(target)).path, 'root:root 0664: root\'s private group').toBe(above);

    // X27-07: the victim's own egid is a group others are in.
    const shared = 100; // Debian's `users`: no member listed, yet every account whose primary group it is (USERGROUPS_ENAB no).
    chownSync(above, 0, shared);
    const egid = process.getegid!();
    process.setegid!(shared);
    try {
      expect(await untrustedConfigReason(above)).toMatch(/^the members of group 100 may write it/);
      expect((await loadTrustedConfig(target)).path, 'group users, which is also our egid').toBeUndefined();
      expect(await findConfigFile(target), 'the gates\' repo registry').toBeUndefined();
    } finally {
      process.setegid!(egid);
    }
    chownSync(above, 0, 0);

    // X27-08: an ACL entry for uid 1 (rw-), mask rw-: the mode reads 0664 root:root.
    setAcl(above, [[aclUserObj, 6], [aclUser, 6, 1], [aclGroupObj, 4], [aclMask, 6], [aclOther, 4]]);
    expect(statSync(above).mode & 0o777).toBe(0o664);
    expect(await untrustedConfigReason(above)).toMatch(/POSIX ACL may write it/);
    expect((await loadTrustedConfig(target)).path).toBeUndefined();
    expect(await locateProjectConfig(target)).toBeUndefined();
    // The same entry under a mask without w cannot write (effective r--): trusted.
    chmodSync(above, 0o644);
    expect(await untrustedConfigReason(above)).toBeUndefined();
    removeAcl(above);

    // A directory (no sticky bit) whose ACL lets uid 1 create and rename entries: it could put another config there.
    const directory = path.dirname(above);
    const mode = statSync(directory).mode & 0o7777;
    setAcl(directory, [[aclUserObj, 7], [aclUser, 7, 1], [aclGroupObj, 5], [aclMask, 7], [aclOther, 5]]);
    try {
      expect(await untrustedConfigReason(above)).toMatch(/POSIX ACL may write its directory/);
      chmodSync(directory, (statSync(directory).mode & 0o7777) | 0o1000);
      expect(await untrustedConfigReason(above), 'sticky: uid 1 cannot replace a file it does not own').toBeUndefined();
    } finally {
      removeAcl(directory);
      chmodSync(directory, mode);
    }
    expect((await loadTrustedConfig(target)).path).toBe(above);
    chmodSync(above, 0o644);
    expect(await findConfigFile(target)).toBe(above);

    if (isRoot) {
      chownSync(above, 1, 1);
      expect((await loadTrustedConfig(target)).path, 'owned by uid 1').toBeUndefined();
      expect(await locateProjectConfig(target)).toBeUndefined();
      chownSync(above, 0, 0);
      expect((await loadTrustedConfig(target)).path).toBe(above);

    // X28-04: a link to a config in a team directory (group users, setgid, not sticky): its members may swap the
    // file between the check and the read. The target's directory is held to the same rules as the link's.
    const team = path.join(path.dirname(target), 'team');
    mkdirSync(team);
    chownSync(team, 0, shared);
    chmodSync(team, 0o2775);
    writeFileSync(path.join(team, 'polywave.config.json'), '{}\n');
    chmodSync(path.join(team, 'polywave.config.json'), 0o644);
    rmSync(above);
    symlinkSync(path.join(team, 'polywave.config.json'), above);
    expect(await untrustedConfigReason(above)).toMatch(/the members of group 100 may write its target's directory/);
    chmodSync(team, 0o755);
    chownSync(team, 0, 0);
    expect(await untrustedConfigReason(above), 'the same link into a directory only root may write').toBeUndefined();
    rmSync(above);
    }
    chmodSync(path.dirname(above), 0o755);
  });
});

describe('your private group (X27-07, X28-05)', () => {
  it('is one group line with your name, no other member, nobody else\'s primary group; a second name on the same gid shares it', () => {
    const passwd = 'root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/sh\nbob:x:1001:100::/home/bob:/bin/sh\n';
    const groups = 'root:x:0:\nusers:x:100:\nalice:x:1000:\n';
    expect(isPrivateGroup('alice', 1000, groups, passwd)).toBe(true);
    expect(isPrivateGroup('root', 0, groups, passwd)).toBe(true);
    expect(isPrivateGroup('alice', 100, groups, passwd), 'users: not named as you').toBe(false);
    expect(isPrivateGroup('alice', 1000, 'alice:x:1000:alice,bob\n', passwd), 'bob is a member').toBe(false);
    expect(isPrivateGroup('alice', 1000, groups, `${passwd}carol:x:1002:1000::/:/bin/sh\n`), 'carol\'s primary group').toBe(false);
    expect(isPrivateGroup('root', 0, `${groups}wheel0:x:0:daemon\n`, passwd), 'X28-05: a second line with gid 0').toBe(false);
    expect(isPrivateGroup('alice', 4242, groups, passwd), 'unknown to /etc/group (LDAP)').toBe(false);
  });
});

describe('the budget of run-wave (X26-10)', () => {
  it('comes from the repository root\'s committed config, never from a nested one next to the IMPL an agent may own', async () => {
    const repo = await createTestRepo({ files: { 'polywave.config.json': `${JSON.stringify({ budget_usd: { run: 5, wave: 2, agent: 1 } })}\n`, 'docs/IMPL/polywave.config.json': `${JSON.stringify({ budget_usd: 1_000_000 })}\n`, 'docs/IMPL/IMPL-x.yaml': 'title: x\n' } });
    const tracker = await budgetFrom({}, repo.path('docs/IMPL/IMPL-x.yaml'));
    expect(tracker?.limits).toMatchObject({ runUsd: 5, waveUsd: 2, agentUsd: 1 });
  });
});

describe('finalize-wave and the repository\'s own config (X25-25, X25-11)', () => {
  it('an agent deleting the repository\'s config while one above would take over blocks the wave, and the block stays in effect', async () => {
    const fixture = await createWaveFixture({ waves: [[{ id: 'A', files: ['polywave.config.json', 'src/a.ts'], modify: ['polywave.config.json'] }, { id: 'B', files: ['src/b.ts'] }]] }, { 'polywave.config.json': '{}\n' });
    const above = path.join(path.dirname(fixture.repo.dir), 'polywave.config.json');
    writeFileSync(above, `${JSON.stringify({ sandbox: { writable: ['~'] } })}\n`);
    expect((await loadTrustedConfig(fixture.repo.dir)).path).toBe(path.join(fixture.repo.dir, 'polywave.config.json'));
    await fixture.startWave(1);
    await fixture.complete('A', { 'polywave.config.json': null, 'src/a.ts': "export const a = 'a';\n" });
    await fixture.complete('B', { 'src/b.ts': "export const b = 'b';\n" });
    const result = await fixture.finalize(1);
    expect(result.success).toBe(false);
    expect(result.failed_step?.step).toBe('check-config-change');
    const detail = result.steps.find((step) => step.step === 'check-config-change')?.detail ?? '';
    expect(detail).toContain('SANDBOX_CONFIG_CHANGED');
    expect(detail).toContain(`polywave.config.json deleted: ${above} (above the repository) would set its settings`);
    // Every later command: the block is in effect, and the settings read are the accepted ones (the repository's {}), not the config above.
    const block = await configBlockInEffect(fixture.repo.dir);
    expect(block?.keys.join('; ')).toContain('deleted');
    const trusted = await loadTrustedConfig(fixture.repo.dir);
    expect(trusted.blocked).toBe(true);
    expect(trusted.config?.sandbox).toBeUndefined();
  }, 120_000);

  it('an agent raising the daemon\'s autonomy or the budget in the config blocks the wave', async () => {
    const fixture = await createWaveFixture({ waves: [[{ id: 'A', files: ['polywave.config.json', 'src/a.ts'], modify: ['polywave.config.json'] }]] }, { 'polywave.config.json': `${JSON.stringify({ autonomy: { level: 'gated' }, budget_usd: 5 })}\n` });
    await fixture.startWave(1);
    await fixture.complete('A', { 'polywave.config.json': `${JSON.stringify({ autonomy: { level: 'autonomous', max_auto_retries: 50 }, budget_usd: 5000 })}\n`, 'src/a.ts': "export const a = 'a';\n" });
    const result = await fixture.finalize(1);
    expect(result.failed_step?.step).toBe('check-config-change');
    const detail = result.steps.find((step) => step.step === 'check-config-change')?.detail ?? '';
    expect(detail).toMatch(/in autonomy; budget_usd/);
  }, 120_000);
});
