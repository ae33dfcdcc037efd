import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync, existsSync, chmodSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Jail } from './jail/types.js';
import { planCopyMaxBytes, preparePlanRedirect } from './plan-redirect.js';

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function layout(ownedFiles: string[]) {
  const base = mkdtempSync(path.join(os.tmpdir(), 'plan-redirect-'));
  made.push(base);
  const root = path.join(base, 'repo');
  mkdirSync(path.join(root, 'docs', 'IMPL'), { recursive: true });
  const jail = { root, policy: { root, ownedFiles, writablePrefixes: [] } } as unknown as Jail;
  return { base, root, jail, copies: path.join(base, 'scratch', 'plan') };
}

describe('plan-redirect: the plan copy of a cli Scout/critic/Planner, put in place after it', () => {
  it('seeds the copy with the plan, puts a changed copy in place (mode kept), leaves an unchanged one alone', async () => {
    const { root, jail, copies } = layout(['docs/IMPL/IMPL-a.yaml', 'docs/PROGRAM/PROGRAM-p.yaml']);
    writeFileSync(path.join(root, 'docs/IMPL/IMPL-a.yaml'), 'old\n', { mode: 0o640 });
    chmodSync(path.join(root, 'docs/IMPL/IMPL-a.yaml'), 0o640);
    const redirect = await preparePlanRedirect(jail, copies);
    expect(redirect.files.map((file) => [file.relative, path.basename(file.copy)])).toEqual([
      ['docs/IMPL/IMPL-a.yaml', '1-IMPL-a.yaml'],
      ['docs/PROGRAM/PROGRAM-p.yaml', '2-PROGRAM-p.yaml'],
    ]);
    expect(readFileSync(redirect.files[0]!.copy, 'utf8')).toBe('old\n');
    expect(existsSync(redirect.files[1]!.copy)).toBe(false);
    expect(redirect.note).toContain(`docs/IMPL/IMPL-a.yaml → ${redirect.files[0]!.copy}`);
    writeFileSync(redirect.files[0]!.copy, 'new\n');
    writeFileSync(redirect.files[1]!.copy, 'program\n');
    expect(await redirect.putBack()).toEqual([]);
    expect(readFileSync(path.join(root, 'docs/IMPL/IMPL-a.yaml'), 'utf8')).toBe('new\n');
    expect(statSync(path.join(root, 'docs/IMPL/IMPL-a.yaml')).mode & 0o777).toBe(0o640);
    expect(readFileSync(path.join(root, 'docs/PROGRAM/PROGRAM-p.yaml'), 'utf8')).toBe('program\n');
    expect(readdirSync(path.join(root, 'docs/IMPL'))).toEqual(['IMPL-a.yaml']);
  });

  it('a copy made a link (to your key), a directory or a file past the cap is refused and nothing is written', async () => {
    const { base, root, jail, copies } = layout(['docs/IMPL/IMPL-a.yaml', 'docs/IMPL/IMPL-b.yaml', 'docs/IMPL/IMPL-c.yaml']);
    writeFileSync(path.join(base, 'id_rsa'), 'PRIVATE KEY\n');
    const redirect = await preparePlanRedirect(jail, copies);
    symlinkSync(path.join(base, 'id_rsa'), redirect.files[0]!.copy);
    mkdirSync(redirect.files[1]!.copy);
    writeFileSync(redirect.files[2]!.copy, Buffer.alloc(planCopyMaxBytes + 1, 0x61));
    const refused = await redirect.putBack();
    expect(refused.map((entry) => entry.path)).toEqual(['docs/IMPL/IMPL-a.yaml', 'docs/IMPL/IMPL-b.yaml', 'docs/IMPL/IMPL-c.yaml']);
    expect(refused[0]!.reason).toContain('symbolic link');
    expect(refused[1]!.reason).toContain('not a regular file');
    expect(refused[2]!.reason).toContain('larger than');
    expect(readdirSync(path.join(root, 'docs/IMPL'))).toEqual([]);
  });

  it('a plan path through a link is left out; a plan path made a link meanwhile is not written through', async () => {
    const { base, root, jail, copies } = layout(['linked/IMPL-a.yaml', 'docs/IMPL/IMPL-b.yaml']);
    mkdirSync(path.join(base, 'elsewhere'));
    symlinkSync(path.join(base, 'elsewhere'), path.join(root, 'linked'));
    const redirect = await preparePlanRedirect(jail, copies);
    expect(redirect.files.map((file) => file.relative)).toEqual(['docs/IMPL/IMPL-b.yaml']);
    writeFileSync(redirect.files[0]!.copy, 'plan\n');
    writeFileSync(path.join(base, 'target'), 'yours\n');
    symlinkSync(path.join(base, 'target'), path.join(root, 'docs/IMPL/IMPL-b.yaml'));
    const refused = await redirect.putBack();
    expect(refused).toEqual([{ path: 'docs/IMPL/IMPL-b.yaml', reason: 'its copy could not be put in place: the plan path is not a regular file' }]);
    expect(readFileSync(path.join(base, 'target'), 'utf8')).toBe('yours\n');
  });
});
