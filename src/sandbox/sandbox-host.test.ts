import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { releaseWrapped, resetSandboxManager, sandboxHostDirectory, sandboxSessionGeneration, wrapInHost } from './sandbox-manager.js';
import { sandboxStatus } from './sandbox-status.js';

const available = (await sandboxStatus()).available;

// The sandbox host answers sandbox-runtime's per-wrap ripgrep scan of its own (empty) working directory
// without starting ripgrep; once anything is in that directory the real scan runs.
describe.runIf(available)('the sandbox host and the scan of its working directory', () => {
  it('no ripgrep process while the directory is empty; the real scan once it is not', async () => {
    const scratch = mkdtempSync(path.join(os.tmpdir(), 'polywave-rg-probe-'));
    const bin = path.join(scratch, 'bin');
    const log = path.join(scratch, 'rg.log');
    mkdirSync(bin);
    const realRg = (await import('node:child_process')).execFileSync('sh', ['-c', 'command -v rg'], { encoding: 'utf8' }).trim();
    writeFileSync(path.join(bin, 'rg'), `#!/bin/sh\necho "$@" >> ${JSON.stringify(log)}\nexec ${JSON.stringify(realRg)} "$@"\n`);
    chmodSync(path.join(bin, 'rg'), 0o755);
    const writable = path.join(scratch, 'work');
    mkdirSync(writable);
    const savedPath = process.env.PATH;
    await resetSandboxManager();
    // The host inherits this PATH: its ripgrep is the recording one.
    process.env.PATH = `${bin}:${savedPath ?? ''}`;
    try {
      const wrap = async (commandId: string) => {
        const generation = sandboxSessionGeneration();
        const wrapped = await wrapInHost({ command: 'true', config: { filesystem: { allowWrite: [writable], denyWrite: [], denyRead: [] }, network: { allowedDomains: [], deniedDomains: [] } }, cwd: writable, commandId, hosts: [] });
        releaseWrapped(commandId, generation, wrapped.isolated);
        return wrapped.argv.join(' ');
      };
      await wrap('first');
      await wrap('second');
      expect(existsSync(log), 'ripgrep ran for an empty host directory').toBe(false);
      const directory = sandboxHostDirectory();
      expect(directory).toBeDefined();
      // Something in the host's directory (never put there by polywave): the library's own scan runs again.
      mkdirSync(path.join(directory!, 'sub'));
      writeFileSync(path.join(directory!, 'sub', '.bashrc'), 'echo planted\n');
      const argv = await wrap('third');
      // (what it finds there is denied only where the plan lets the command write: the host's directory is not)
      expect(readFileSync(log, 'utf8')).toContain(`--files`);
      expect(readFileSync(log, 'utf8').trim().endsWith(directory!)).toBe(true);
      expect(argv).toContain('bwrap');
      rmSync(path.join(directory!, 'sub'), { recursive: true, force: true });
    } finally {
      process.env.PATH = savedPath;
      await resetSandboxManager();
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});
