/**
 * REGRESSION (issue 11, outside attack X8 #7, helper S2): with a TMPDIR that is a symlink (macOS
 * `/tmp` → `/private/tmp`, or a user's own link), every agent's own HOME and TMPDIR were read-only
 * (EROFS): the scratch parent was named through the link, the sandbox hid it by its real path, and
 * that hide covered the agent's own bind made through the link. Now the scratch parent is the real
 * path: an agent whose scratch directory was made under a symlinked TMPDIR writes its own HOME and
 * TMPDIR, and still sees no other agent's.
 */
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildAgentSandboxPlan, createToolExecutor } from '../src/agents/sandbox/index.js';
import { makeScratchDir, resetSandbox, sandboxStatus } from '../src/sandbox/index.js';
import { createAgentLayout } from './support/agent-layout.js';

const available = (await sandboxStatus()).available;
const lab = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'pw-x8-tlink-')));
afterAll(async () => {
  await resetSandbox();
  rmSync(lab, { recursive: true, force: true });
});

describe.skipIf(!available)('a symlinked TMPDIR', () => {
  it("keeps the agent's own HOME and TMPDIR writable and a peer's hidden", async () => {
    const real = path.join(lab, 'realtmp');
    const link = path.join(lab, 'tlink');
    mkdirSync(real);
    symlinkSync(real, link);
    const layout = await createAgentLayout('polywave/tlink/wave1-agent-A');
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = link;
    let executor: ReturnType<typeof createToolExecutor> | undefined;
    try {
      // As run-agent makes them: A's scratch directory, and peer B's with a private note.
      const own = await makeScratchDir('polywave-agent-A-');
      const peer = await makeScratchDir('polywave-agent-B-');
      expect(own.startsWith(path.join(real, 'polywave-scratch-'))).toBe(true);
      writeFileSync(path.join(peer, 'note'), 'B-PRIVATE\n');
      const home = path.join(own, 'home');
      const tmp = path.join(own, 'tmp');
      mkdirSync(home);
      mkdirSync(tmp);
      const env = { ...(layout.repo.env as Record<string, string>), HOME: home, TMPDIR: tmp };
      const plan = await buildAgentSandboxPlan({ root: layout.worktree, home, tmp, env: { ...(layout.repo.env as Record<string, string>), TMPDIR: link }, userHome: layout.repo.sibling('user-home') });
      executor = createToolExecutor(plan, { cwd: layout.worktree, env });
      const peerNote = path.join(peer, 'note');
      const linkNote = path.join(link, path.relative(real, peerNote));
      const chunks: Buffer[] = [];
      const run = executor.run(`echo h > "$HOME/h.txt" && echo t > "$TMPDIR/t.txt" && echo own-ok; cat ${JSON.stringify(peerNote)} ${JSON.stringify(linkNote)} 2>&1; echo end`, {
        cwd: layout.worktree,
        env,
        onOutput: (chunk) => chunks.push(chunk),
      });
      await run.done;
      const output = Buffer.concat(chunks).toString('utf8');
      expect(output, output).toContain('end');
      expect(output, output).toContain('own-ok');
      expect(output, output).not.toContain('B-PRIVATE');
      expect(readFileSync(path.join(home, 'h.txt'), 'utf8')).toBe('h\n');
      expect(readFileSync(path.join(tmp, 't.txt'), 'utf8')).toBe('t\n');
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
      await executor?.stop();
    }
  }, 60_000);
});
