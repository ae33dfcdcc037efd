import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
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
});
