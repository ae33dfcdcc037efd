/**
 * REGRESSION (issue 11, X3 #8 rest, helper H4): a run whose TMPDIR is not /tmp, /var/tmp or /dev/shm
 * kept its agents' and gates' scratch directories (private HOME, TMPDIR, transcripts) in
 * `<TMPDIR>/polywave-scratch-<uid>`, which the sandboxes of every other run (TMPDIR /tmp) did not
 * hide. Now such a parent is registered in `/tmp/polywave-scratch-<uid>/parents` when it is made,
 * and every plan hides the registered ones: a quality gate of a run with the default TMPDIR cannot
 * read a scratch file of a run that used another TMPDIR.
 */
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runGates } from '../src/gates/run-gates.js';
import { makeScratchDir, registeredScratchParents, sandboxStatus } from '../src/sandbox/index.js';
import { createTestRepo } from './support/git-repo.js';

const available = (await sandboxStatus()).available;
const otherTmp = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'pw-x6-tmpdir-')));
afterAll(() => rmSync(otherTmp, { recursive: true, force: true }));

describe.skipIf(!available)('a run with an unusual TMPDIR', () => {
  it("keeps its scratch directories hidden from another run's gate", async () => {
    // A full registry (256 lines) of parents that are gone: the next registration drops them.
    const registry = path.join('/tmp', `polywave-scratch-${process.getuid!()}`, 'parents');
    mkdirSync(path.dirname(registry), { recursive: true, mode: 0o700 });
    appendFileSync(registry, Array.from({ length: 256 }, (_, index) => `${otherTmp}/gone-${index}/polywave-scratch-${process.getuid!()}\n`).join(''));
    // The other run (TMPDIR = otherTmp) makes an agent's scratch directory, as run-agent does.
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = otherTmp;
    let scratch: string;
    try {
      scratch = await makeScratchDir('polywave-agent-Z-');
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    }
    expect(scratch.startsWith(path.join(otherTmp, `polywave-scratch-${process.getuid!()}`))).toBe(true);
    expect(registeredScratchParents()).toContain(path.dirname(scratch));
    expect(registeredScratchParents().filter((entry) => entry.includes('/gone-'))).toEqual([]);
    const secret = path.join(scratch, 'home', '.claude', 'session.jsonl');
    mkdirSync(path.dirname(secret), { recursive: true });
    writeFileSync(secret, 'Z-PRIVATE-TRANSCRIPT\n');

    // This run (default TMPDIR): its gate runs agent code and tries to read and append to it.
    const repo = await createTestRepo({ files: { 'src/a.ts': 'export {};\n' } });
    const encoded = Buffer.from(secret).toString('base64');
    const run = await runGates({
      repoDir: repo.dir,
      env: { ...(repo.env as Record<string, string>), HOME: repo.sibling('user-home') },
      noCache: true,
      gates: [{ type: 'custom', command: `f=$(echo ${encoded} | base64 -d); cat "$f" 2>&1; echo x >> "$f" 2>&1; ls -A "$(dirname "$(dirname "$(dirname "$(dirname "$f")")")")" | sed "s/^/entry:/"; echo gate-done`, required: true }],
    });
    const output = run.results[0]!.output;
    expect(output).toContain('gate-done');
    expect(output, output).not.toContain('Z-PRIVATE');
    // The parent lists nothing (an empty mount), not the other run's directory.
    expect(output, output).not.toContain('entry:polywave-agent-Z-');
    expect(readFileSync(secret, 'utf8')).toBe('Z-PRIVATE-TRANSCRIPT\n');
  }, 60_000);
});
