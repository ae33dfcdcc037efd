import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { moveToQuarantine, quarantineSuffix } from './quarantine-move.js';

// X28-09: what goes into the quarantine must not be found and run as code by the user's own tools.
describe('moving into the quarantine', () => {
  it('a file, a link and every file of a directory get the suffix; nothing is deleted', async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'polywave-quarantine-move-'));
    try {
      const quarantine = path.join(root, '.git', 'polywave', 'quarantine', 'A-now');
      writeFileSync(path.join(root, 'planted.test.js'), 'x');
      symlinkSync('/etc/passwd', path.join(root, 'link'));
      mkdirSync(path.join(root, 'vendor', 'lib', 'test'), { recursive: true });
      writeFileSync(path.join(root, 'vendor', 'lib', 'helpers.test.js'), 'y');
      writeFileSync(path.join(root, 'vendor', 'lib', 'test', 'run.js'), 'z');
      expect(await moveToQuarantine(path.join(root, 'planted.test.js'), path.join(quarantine, 'planted.test.js'))).toBe(path.join(quarantine, `planted.test.js${quarantineSuffix}`));
      expect(await moveToQuarantine(path.join(root, 'link'), path.join(quarantine, 'link'))).toBe(path.join(quarantine, `link${quarantineSuffix}`));
      expect(lstatSync(path.join(quarantine, `link${quarantineSuffix}`)).isSymbolicLink()).toBe(true);
      expect(await moveToQuarantine(path.join(root, 'vendor', 'lib'), path.join(quarantine, 'vendor', 'lib'))).toBe(path.join(quarantine, 'vendor', 'lib'));
      expect(readdirSync(quarantine, { recursive: true }).map(String).sort()).toEqual(['link.quarantined', 'planted.test.js.quarantined', 'vendor', 'vendor/lib', 'vendor/lib/helpers.test.js.quarantined', 'vendor/lib/test', 'vendor/lib/test/run.js.quarantined']);
      expect(existsSync(path.join(root, 'vendor', 'lib'))).toBe(false);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('X30-07: directories the agent made read-only (0555, 0000) are made ours again: every file in them gets the suffix (as a user that is not root, whom modes do not stop)', async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'polywave-quarantine-readonly-'));
    try {
      const quarantine = path.join(root, '.git', 'polywave', 'quarantine', 'A-now');
      mkdirSync(path.join(root, 'dist', 'ro'), { recursive: true });
      mkdirSync(path.join(root, 'dist', 'shut'), { recursive: true });
      writeFileSync(path.join(root, 'dist', 'ro', 'helpers.test.js'), 'x');
      writeFileSync(path.join(root, 'dist', 'shut', 'other.test.js'), 'y');
      // (the built module: a plain node process; `npm test` builds first)
      const script = `import(${JSON.stringify(fileURLToPath(new URL('../../dist/git/quarantine-move.js', import.meta.url)))}).then(async (m) => { const fs = await import('node:fs'); fs.chmodSync(${JSON.stringify(path.join(root, 'dist', 'ro'))}, 0o555); fs.chmodSync(${JSON.stringify(path.join(root, 'dist', 'shut'))}, 0); await m.moveToQuarantine(${JSON.stringify(path.join(root, 'dist'))}, ${JSON.stringify(path.join(quarantine, 'dist'))}); console.log('MOVED'); }).catch((error) => { console.log('FAILED ' + error.message); });`;
      // As root every mode is ignored: the move runs as an ordinary user (nobody) over a tree it owns, as an agent's files are.
      const asUser = process.getuid?.() === 0;
      if (asUser) spawnSync('chown', ['-R', '65534:65534', root]);
      const run = asUser
        ? spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, '-e', script], { encoding: 'utf8', cwd: process.cwd() })
        : spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', cwd: process.cwd() });
      expect(run.stdout, run.stderr).toContain('MOVED');
      spawnSync('chmod', ['-R', 'u+rwx', root]);
      expect(readdirSync(quarantine, { recursive: true }).map(String).sort()).toEqual(['dist', 'dist/ro', 'dist/ro/helpers.test.js.quarantined', 'dist/shut', 'dist/shut/other.test.js.quarantined']);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('`node --test` in the checkout runs a test file left in .git/polywave/quarantine under its own name, and not one moved there by polywave', async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'polywave-quarantine-node-test-'));
    try {
      spawnSync('git', ['init', '-q', root]);
      const marker = (name: string) => path.join(root, `${name}.ran`);
      const planted = (name: string) => `require('fs').writeFileSync(${JSON.stringify(marker(name))}, 'ran'); require('node:test')('t', () => {});\n`;
      const quarantine = path.join(root, '.git', 'polywave', 'quarantine', 'A-now');
      mkdirSync(quarantine, { recursive: true });
      // The control: as the quarantine used to keep it (its own name), node's runner finds it.
      writeFileSync(path.join(quarantine, 'control.test.js'), planted('control'));
      mkdirSync(path.join(root, 'vendor', 'lib'), { recursive: true });
      writeFileSync(path.join(root, 'vendor', 'lib', 'helpers.test.js'), planted('moved'));
      await moveToQuarantine(path.join(root, 'vendor', 'lib'), path.join(quarantine, 'vendor', 'lib'));
      spawnSync(process.execPath, ['--test'], { cwd: root, encoding: 'utf8', timeout: 60_000 });
      expect(existsSync(marker('control')), 'node --test searches .git: the control ran').toBe(true);
      expect(existsSync(marker('moved')), 'the quarantined file ran').toBe(false);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('names chosen to collide or to be too long never keep a runnable name, never overwrite, and nothing is lost (X29-03, X29-05)', async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'polywave-quarantine-collide-'));
    try {
      spawnSync('git', ['init', '-q', root]);
      const marker = path.join(root, 'ran');
      const planted = `require('fs').appendFileSync(${JSON.stringify(marker)}, 'x'); require('node:test')('t', () => {});\n`;
      const quarantine = path.join(root, '.git', 'polywave', 'quarantine', 'A-now');
      // X29-03: beside helpers.test.js, a non-empty directory already named as its quarantined self.
      mkdirSync(path.join(root, 'tools', 'helpers.test.js.quarantined'), { recursive: true });
      writeFileSync(path.join(root, 'tools', 'helpers.test.js.quarantined', 'keep'), 'k');
      writeFileSync(path.join(root, 'tools', 'helpers.test.js'), planted);
      // A name the suffix would make too long (255 bytes at most).
      const long = `${'l'.repeat(240)}.test.js`;
      writeFileSync(path.join(root, 'tools', long), planted);
      // A file already named like a quarantined one: kept as it is, not overwritten.
      writeFileSync(path.join(root, 'tools', 'other.js.quarantined'), 'mine');
      writeFileSync(path.join(root, 'tools', 'other.js'), 'agent');
      await moveToQuarantine(path.join(root, 'tools'), path.join(quarantine, 'tools'));
      // X29-05: a leftover whose quarantined name the previous one took.
      writeFileSync(path.join(root, 'x'), 'first');
      mkdirSync(path.join(root, 'x.quarantined'));
      writeFileSync(path.join(root, 'x.quarantined', 'helpers.test.js'), planted);
      await moveToQuarantine(path.join(root, 'x'), path.join(quarantine, 'x'));
      const second = await moveToQuarantine(path.join(root, 'x.quarantined'), path.join(quarantine, 'x.quarantined'));
      expect(second).not.toBe(path.join(quarantine, 'x.quarantined'));
      const files = readdirSync(quarantine, { recursive: true, withFileTypes: true }).filter((entry) => !entry.isDirectory());
      for (const entry of files) expect(entry.name, entry.name).toMatch(/\.quarantined$/);
      const contents = files.map((entry) => readFileSync(path.join(entry.parentPath ?? (entry as unknown as { path: string }).path, entry.name), 'utf8'));
      expect(contents.filter((text) => text === planted).length).toBe(3);
      expect(contents).toEqual(expect.arrayContaining(['k', 'mine', 'agent', 'first']));
      expect(readdirSync(root).sort()).toEqual(['.git']);
      spawnSync(process.execPath, ['--test'], { cwd: root, encoding: 'utf8', timeout: 60_000 });
      expect(existsSync(marker), 'a quarantined test file ran').toBe(false);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
