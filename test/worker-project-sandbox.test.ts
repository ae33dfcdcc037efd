import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { confineProjectSandboxSettings, reachesThisHost, readSandboxSettings } from '../src/sandbox/sandbox-settings.js';
import { makeTempDir } from './support/temp.js';
import { createTestRepo } from './support/git-repo.js';

// Outside round A20-45: on a `polywave worker` the project's committed polywave.config.json is a job producer's, not the
// worker operator's: `sandbox.writable: ["~"]` let a dispatched agent write the worker user's home, `readable` read the
// operator's files, `network.allow: ["localhost"]` reach the worker host's own Redis. The worker confines them to the
// job's own checkout and drops loopback hosts (startWorker turns it on for its process).

afterEach(() => confineProjectSandboxSettings(false));

describe('a worker confines the project\'s sandbox settings (A20-45)', () => {
  it('writable/readable only inside the checkout, no loopback host; without confinement the project\'s settings as committed', async () => {
    const config = { sandbox: { writable: ['~', '~/.bashrc', '/etc', 'build-cache', '../outside'], readable: ['~/.config/tool', 'docs'], network: { allow: ['registry.npmjs.org', 'localhost:6379', '127.0.0.1', '[::1]', 'redis.localhost', 'github.com:443'] } } };
    const repo = await createTestRepo({ files: { 'polywave.config.json': `${JSON.stringify(config)}\n`, 'README.md': '# x\n' } });
    const plain = await readSandboxSettings(repo.dir);
    expect(plain.writable).toEqual(expect.arrayContaining(['build-cache']));
    expect(plain.writable!.length).toBeGreaterThan(1);
    expect(plain.network?.allow).toContain('localhost:6379');

    confineProjectSandboxSettings();
    const confined = await readSandboxSettings(repo.dir);
    const real = realpathSync(repo.dir);
    expect(confined.writable).toEqual([path.join(real, 'build-cache')]);
    expect(confined.readable).toEqual([path.join(real, 'docs')]);
    expect(confined.network?.allow).toEqual(['registry.npmjs.org', 'github.com:443']);
    // (the home itself is outside any checkout)
    expect(path.relative(repo.dir, os.homedir()).startsWith('..')).toBe(true);
  });

  // Outside round A21-01/02/11: a relative entry was judged against the checkout but resolved by the sandbox plan
  // against the worker process's cwd (`.` with the worker started in `/` made `/` writable: /etc written), and a committed
  // symlink inside the checkout was judged by its name while the sandbox followed it to the operator's home. Entries are
  // now handed on as the absolute real path that was judged.
  it('a relative entry is the checkout\'s, whatever the process cwd; a symlink leaving the checkout is dropped (A21-01/02)', async () => {
    const outside = makeTempDir('polywave-a21-outside-');
    writeFileSync(path.join(outside, 'conf'), 'token=FAKE\n');
    const config = { sandbox: { writable: ['.', 'src/..', 'out-link', 'in-link'], readable: ['lnk', 'lnk/conf', 'docs/../docs'] } };
    const repo = await createTestRepo({ files: { 'polywave.config.json': `${JSON.stringify(config)}\n`, 'README.md': '# x\n', 'docs/a.md': 'a\n' } });
    symlinkSync(outside, path.join(repo.dir, 'lnk'));
    symlinkSync(outside, path.join(repo.dir, 'out-link'));
    mkdirSync(path.join(repo.dir, 'cache'));
    symlinkSync(path.join(repo.dir, 'cache'), path.join(repo.dir, 'in-link'));
    const real = realpathSync(repo.dir);
    confineProjectSandboxSettings();
    const previous = process.cwd();
    process.chdir('/');
    try {
      const confined = await readSandboxSettings(repo.dir);
      expect(confined.writable).toEqual([real, real, path.join(real, 'cache')]);
      expect(confined.readable).toEqual([path.join(real, 'docs')]);
    } finally {
      process.chdir(previous);
    }
  });

  // Outside round A21-03: IPv6 and other spellings of loopback survived the filter (the sandbox never re-judges an IP
  // literal on its allow-list): the agent reached the worker host's Redis through `[::ffff:127.0.0.1]:16721`.
  // A22-03: an IPv6 zone id (`[::1%lo]`) made the entry unparseable to this check — kept — while the sandbox dropped
  // the zone and allowed `::1`: the agent reached the worker host's Redis again. Unreadable entries are dropped now.
  it('every spelling of this host is dropped from network.allow; other hosts stay (A21-03, A22-03)', () => {
    const local = ['localhost', 'localhost:6379', 'LOCALHOST.', 'redis.localhost', '*.localhost', '127.0.0.1', '127.1', '127.0.0.1:16721', '0x7f.1', '2130706433', '0.0.0.0', '0', '[::1]', '[::1]:16799', '[0:0:0:0:0:0:0:1]:16799', '[::0:1]', '[::ffff:127.0.0.1]:16721', '[::ffff:7f00:1]:16721', '[::]', '[fe80::1]', '169.254.169.254', '[64:ff9b::7f00:1]', '[2002:7f00:1::]', '[::127.0.0.1]', '[::1%lo]:17799', '[::ffff:127.0.0.1%lo]:17483', '::1%lo', '[fe80::1%25eth0]', '[::1%]', '*', '[::1', 'a b'];
    for (const entry of local) expect([entry, reachesThisHost(entry)]).toEqual([entry, true]);
    for (const own of Object.values(os.networkInterfaces()).flatMap((entries) => entries ?? [])) expect(reachesThisHost(own.family === 'IPv6' ? `[${own.address}]` : own.address)).toBe(true);
    for (const entry of ['registry.npmjs.org', 'github.com:443', '*.example.com', '10.20.30.40', '[2001:db8::1]:443', '127.0.0.1.nip.io']) expect([entry, reachesThisHost(entry)]).toEqual([entry, false]);
  });

  // Outside round A23-03: the cloud metadata endpoints outside link-local (the worker instance's credentials) were kept
  // as IP literals, and the sandbox dialed them (its own guard refuses only a NAME that resolves there).
  it('cloud metadata addresses are dropped from network.allow in every spelling (A23-03)', () => {
    const metadata = ['100.100.100.200:80', '100.100.100.200', '168.63.129.16:80', '192.0.0.192', '[fd00:ec2::254]:80', '[fd00:ec2::23]', '[FD00:EC2:0:0:0:0:0:254]', '[fd20:ce::254]:80', '[fd00:c1::a9fe:a9fe]', '[fd00:42::42]', '[fd00:a9fe:a9fe::1]', '[fd00:100::100:200]', '[::ffff:100.100.100.200]:80', '[::ffff:a83f:8110]', '0x64.0x64.0x64.0xc8', '1684301000'];
    for (const entry of metadata) expect([entry, reachesThisHost(entry)]).toEqual([entry, true]);
    for (const entry of ['100.100.100.201:80', '168.63.129.17', '[fd00:ec3::254]']) expect([entry, reachesThisHost(entry)]).toEqual([entry, false]);
  });
});
