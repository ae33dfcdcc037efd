import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { confineProjectSandboxSettings, readSandboxSettings } from '../src/sandbox/sandbox-settings.js';
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
    expect(confined.writable).toEqual(['build-cache']);
    expect(confined.readable).toEqual(['docs']);
    expect(confined.network?.allow).toEqual(['registry.npmjs.org', 'github.com:443']);
    // (the home itself is outside any checkout)
    expect(path.relative(repo.dir, os.homedir()).startsWith('..')).toBe(true);
  });
});
