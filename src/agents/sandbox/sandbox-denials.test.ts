import { describe, expect, it } from 'vitest';
import { isGitWriteRefusal, sandboxDenialsIn as denialsWith, type SandboxWriteJudge } from './sandbox-denials.js';

/** An agent working in /repo (writable), its `.git` file read-only, /tmp/agent its TMPDIR; the rest read-only. */
const judge: SandboxWriteJudge = { plan: { writable: ['/repo', '/tmp/agent-h17p-none'], readOnlyWithin: ['/repo/.git'] }, cwd: '/repo/src' };
const sandboxDenialsIn = (output: string) => denialsWith(output, judge);

describe('sandboxDenialsIn', () => {
  it('finds a read-only file system and a refused connection', () => {
    const denials = sandboxDenialsIn("bash: line 1: ../../X: Read-only file system\ncurl: (56) CONNECT tunnel failed\nHTTP/1.1 403 Forbidden\nX-Proxy-Error: blocked-by-allowlist\n");
    expect(denials.map((denial) => denial.code)).toEqual(['SANDBOX_WRITE_DENIED', 'SANDBOX_NETWORK_DENIED']);
    expect(denials[0]!.reason).toContain('../../X: Read-only file system');
  });

  it('node errors: EROFS and ENETUNREACH', () => {
    expect(sandboxDenialsIn("Error: EROFS: read-only file system, open '/srv/X'").map((denial) => denial.code)).toEqual(['SANDBOX_WRITE_DENIED']);
    expect(sandboxDenialsIn('connect ENETUNREACH 93.184.216.34:80').map((denial) => denial.code)).toEqual(['SANDBOX_NETWORK_DENIED']);
  });

  it('curl with no network at all: an outside address is a denial, the sandbox\'s own loopback is not', () => {
    expect(sandboxDenialsIn("curl: (7) Failed to connect to 93.184.216.34 port 80 after 0 ms: Couldn't connect to server").map((denial) => denial.code)).toEqual(['SANDBOX_NETWORK_DENIED']);
    expect(sandboxDenialsIn("curl: (7) Failed to connect to 127.0.0.1 port 9 after 0 ms: Couldn't connect to server")).toEqual([]);
    expect(sandboxDenialsIn("curl: (7) Failed to connect to localhost port 3000 after 0 ms: Couldn't connect to server")).toEqual([]);
  });

  // Outside round A24-08a: a step that printed `EROFS: read-only file system` and failed (exit 1) was reported
  // SANDBOX_WRITE_DENIED — the sandbox had refused nothing. A refusal counts when its line names a path the sandbox keeps
  // read-only; the words alone, or a path the agent may write, are not the sandbox's doing.
  it('A24-08a: the words alone, or a path the agent may write, are no sandbox refusal; a path it keeps read-only is', () => {
    expect(sandboxDenialsIn('EROFS: read-only file system\n[exit status 1]')).toEqual([]);
    expect(sandboxDenialsIn('Error: EROFS: read-only file system\nRead-only file system\n[exit status 1]')).toEqual([]);
    expect(sandboxDenialsIn("Error: EROFS: read-only file system, open '/repo/src/a.js'")).toEqual([]);
    expect(sandboxDenialsIn('bash: line 1: out.txt: Read-only file system')).toEqual([]);
    expect(sandboxDenialsIn("touch: cannot touch '/tmp/agent-h17p-none/x': Read-only file system")).toEqual([]);
    // what the sandbox does refuse: outside the writable area, or inside a read-only part of it
    expect(sandboxDenialsIn("touch: cannot touch '../../x': Read-only file system").map((denial) => denial.code)).toEqual(['SANDBOX_WRITE_DENIED']);
    expect(sandboxDenialsIn("OSError: [Errno 30] Read-only file system: '/etc/x'").map((denial) => denial.code)).toEqual(['SANDBOX_WRITE_DENIED']);
    expect(sandboxDenialsIn("fatal: Unable to create '/repo/.git/index.lock': Read-only file system").map((denial) => denial.code)).toEqual(['SANDBOX_WRITE_DENIED']);
    expect(sandboxDenialsIn("mkdir: cannot create directory ‘/opt/y’: Read-only file system").map((denial) => denial.code)).toEqual(['SANDBOX_WRITE_DENIED']);
    expect(sandboxDenialsIn('error: could not lock config file /repo/.git/config: Read-only file system').map((denial) => denial.code)).toEqual(['SANDBOX_WRITE_DENIED']);
    expect(sandboxDenialsIn("awk: cmd. line:1: fatal: cannot open file `../../ESC-awk' for writing: Read-only file system").map((denial) => denial.code)).toEqual(['SANDBOX_WRITE_DENIED']);
  });

  it('ordinary output: nothing', () => {
    expect(sandboxDenialsIn('ok\n[exit status 0]')).toEqual([]);
  });
});

describe('isGitWriteRefusal', () => {
  it('git add/commit failing on the read-only .git', () => {
    expect(isGitWriteRefusal('git add -A && git commit -m x', "fatal: Unable to create '/repo/.git/worktrees/a/index.lock': Read-only file system")).toBe(true);
    expect(isGitWriteRefusal('git config user.name x', 'error: could not lock config file .git/config: Read-only file system')).toBe(true);
  });

  it('not git, or git that worked', () => {
    expect(isGitWriteRefusal('touch ../x', 'touch: cannot touch ../x: Read-only file system')).toBe(false);
    expect(isGitWriteRefusal('git status', 'On branch a')).toBe(false);
  });
});
