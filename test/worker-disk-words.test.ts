import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { localDiskTrouble } from '../src/worker/worker.js';
import { createDispatchRepo, lettersScript, runWaveCli, startWorker, waveResult, useDispatchRig } from './dispatch-support.js';

// Outside round A21-33: the classifier of a worker's disk trouble matched its words anywhere in an error's text, so a
// job whose base holds a path named "No space left on device" (too long to check out) made every worker that took it
// declare its own disk full, hand it back and pause. Only the system's error text counts now: last on a line after
// `: ` (git's `<what>: <strerror>`), or a node error's code. (A probe write to --dir then judges the disk, A21-08/25;
// test/worker-disk-full.test.ts runs a real full disk.)
describe('localDiskTrouble (A21-33)', () => {
  it('takes the system error text, never the same words inside a path', () => {
    // Real disk trouble, as git and node say it.
    expect(localDiskTrouble(new Error("error: unable to write file src/a.js: No space left on device\nfatal: cannot store blob"))).toBe('No space left on device');
    expect(localDiskTrouble(new Error("fatal: could not write config file '/w/repo.git/config': Disk quota exceeded"))).toBe('Disk quota exceeded');
    expect(localDiskTrouble(new Error('fatal: unable to create temporary file: Read-only file system'))).toBe('Read-only file system');
    expect(localDiskTrouble(Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }))).toBe('ENOSPC');
    expect(localDiskTrouble(new Error('ENOSPC: no space left on device, open \'/w/x\''))).toBe('ENOSPC');
    expect(localDiskTrouble(new Error('script step 2 (write) failed: ENOSPC: no space left on device, write'))).toBe('ENOSPC');
    // A21-33's job: the words are a directory of the checkout; the error is a name too long.
    expect(localDiskTrouble(new Error(`error: unable to create file No space left on device/${'a'.repeat(300)}: File name too long`))).toBeUndefined();
    expect(localDiskTrouble(new Error("fatal: cannot stat 'src/ENOSPC: x/Input/output error'"))).toBeUndefined();
    expect(localDiskTrouble(new Error('error: unable to create file ENOSPC: x: File name too long'))).toBeUndefined();
  });
});

// Outside round A23-30: a failed agent was judged by the disk words in its failure's text — which the agent writes. An
// agent whose own step printed `ENOSPC: no space left on device` and exited 1 (its failure, the worker's disk fine) ran
// three times through the pool and failed DISPATCH_JOB_TOO_LARGE (`give those workers more disk`); in-process it is its
// own failed step. Now a probe write judges the worker's disk (and errors the worker's own operations throw), never the
// agent's words. Real redis-server, a real worker process, run-wave through the CLI.
describe('an agent that prints disk words (A23-30)', () => {
  const { scratch, redis, workers } = useDispatchRig('pw-worker-disk-words-');

  it("fails as its own failed step, once, the worker's disk untouched — not DISPATCH_JOB_TOO_LARGE after three runs", async () => {
    const step = `bash: "echo 'cannot write out/x: ENOSPC: no space left on device, write'; echo 'EROFS: read-only file system, open x' >&2; exit 1"\n        expect: ok`;
    const target = await createDispatchRepo('diskwords', lettersScript({ A: [step] }), { waves: [['A', 'B']] });
    const worker = await startWorker({ id: 'dw1', redisUrl: redis.url, remote: target.remote, dir: path.join(scratch, 'worker-dw1') });
    workers.push(worker);
    const run = await runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 150_000 });
    const result = waveResult(run);
    expect(result.success).toBe(false);
    const explanation = JSON.stringify(result.blocked ?? run.stderr.slice(-1500));
    // Before the fix: `DISPATCH_JOB_TOO_LARGE: job diskwords.w1.A… hit a disk error (ENOSPC) while its agent ran on 3 worker runs`.
    expect(explanation).not.toContain('DISPATCH_JOB_TOO_LARGE');
    expect(explanation).toMatch(/script step 3 \(bash\) was expected to succeed/);
    expect(worker.log()).not.toContain('handed back');
    expect(worker.log()).not.toContain('cannot be written');
    expect(worker.log().match(/job diskwords\.w1\.A\.[^ ]+: agent A /g) ?? []).toHaveLength(1);
    expect(result.agents.find((agent) => agent.agent === 'B')?.status).toBe('complete');
  }, 200_000);
});
