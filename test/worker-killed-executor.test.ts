import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createDispatchRepo, lettersScript, runWaveCli, startWorker, useDispatchRig } from './dispatch-support.js';

// Outside round A23-54: a SIGKILLed worker's agent processes — the command its agent ran, the process running the
// agent's tools — stayed, orphaned, running (and spending) while the job moved on to another worker. Real parts: a
// redis-server on loopback, a real `polywave worker`, a `file://` remote, run-wave via the CLI; the worker is SIGKILLed
// while its agent's bash call sleeps, and nothing of the job may be left running 3 s later. The sandboxed executor dies
// with bubblewrap's --die-with-parent (its parent, the spawn helper, ends with the worker); a command run without the
// OS sandbox (`--unsafe-no-sandbox`) had nothing: it failed before the fix.

const { scratch, redis, workers } = useDispatchRig('pw-killed-executor-');

interface Found {
  pid: number;
  cmd: string;
  cwd: string;
}

/**
 * Processes whose command line holds `marker` or whose working directory lies in `dir`. (Not "whose command line names
 * `dir`": every polywave sandbox on the machine names the registered worker directories it hides — other runs' too.)
 */
function processesOf(marker: string, dir: string): Found[] {
  const found: Found[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      let cwd = '';
      try {
        cwd = readlinkSync(`/proc/${entry}/cwd`);
      } catch {
        // another user's
      }
      if (cmd.includes(marker) || cwd === dir || cwd.startsWith(`${dir}/`)) found.push({ pid: Number(entry), cmd: cmd.slice(0, 160), cwd });
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

describe('a worker SIGKILLed while its agent runs a command (A23-54)', () => {
  it.each([
    ['sandboxed', []],
    ['unsandboxed', ['--unsafe-no-sandbox']],
  ] as Array<[string, string[]]>)('leaves no agent or executor process running (%s)', async (name, extra) => {
    const marker = `pwmark${name}${Date.now().toString(36)}`;
    // (`; echo` keeps bash from exec'ing the sleep: its command line holds the marker)
    const script = lettersScript({ A: [`bash: "sleep 120; echo ${marker}"`] });
    const target = await createDispatchRepo(`orphans-${name}`, script, { waves: [['A', 'B']] });
    const dir = path.join(scratch, `worker-${name}`);
    const worker = await startWorker({ id: `orphans-${name}`, redisUrl: redis.url, remote: target.remote, dir, extra });
    workers.push(worker);
    // (the run is left to fail: no worker is left for A once this one is killed)
    const run = runWaveCli(target, 1, { redisUrl: redis.url, timeoutMs: 90_000 }).catch(() => undefined);
    const deadline = Date.now() + 60_000;
    while (!processesOf(marker, dir).some((found) => found.cmd.includes(marker)) && Date.now() < deadline) await sleep(200);
    expect(processesOf(marker, dir).some((found) => found.cmd.includes(marker))).toBe(true);
    worker.child.kill('SIGKILL');
    await worker.exited;
    await sleep(3000);
    const left = processesOf(marker, dir);
    // (never left running for the next test: only processes of this test's marker or worker directory)
    for (const found of left) {
      try {
        process.kill(found.pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    expect(left, JSON.stringify(left)).toEqual([]);
    void run;
  }, 120_000);
});
