import { describe, expect, it } from 'vitest';
import { isGitWriteRefusal, sandboxDenialsIn } from './sandbox-denials.js';

describe('sandboxDenialsIn', () => {
  it('finds a read-only file system and a refused connection', () => {
    const denials = sandboxDenialsIn("bash: line 1: ../X: Read-only file system\ncurl: (56) CONNECT tunnel failed\nHTTP/1.1 403 Forbidden\nX-Proxy-Error: blocked-by-allowlist\n");
    expect(denials.map((denial) => denial.code)).toEqual(['SANDBOX_WRITE_DENIED', 'SANDBOX_NETWORK_DENIED']);
    expect(denials[0]!.reason).toContain('../X: Read-only file system');
  });

  it('node errors: EROFS and ENETUNREACH', () => {
    expect(sandboxDenialsIn("Error: EROFS: read-only file system, open '/repo/X'").map((denial) => denial.code)).toEqual(['SANDBOX_WRITE_DENIED']);
    expect(sandboxDenialsIn('connect ENETUNREACH 93.184.216.34:80').map((denial) => denial.code)).toEqual(['SANDBOX_NETWORK_DENIED']);
  });

  it('curl with no network at all: an outside address is a denial, the sandbox\'s own loopback is not', () => {
    expect(sandboxDenialsIn("curl: (7) Failed to connect to 93.184.216.34 port 80 after 0 ms: Couldn't connect to server").map((denial) => denial.code)).toEqual(['SANDBOX_NETWORK_DENIED']);
    expect(sandboxDenialsIn("curl: (7) Failed to connect to 127.0.0.1 port 9 after 0 ms: Couldn't connect to server")).toEqual([]);
    expect(sandboxDenialsIn("curl: (7) Failed to connect to localhost port 3000 after 0 ms: Couldn't connect to server")).toEqual([]);
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
