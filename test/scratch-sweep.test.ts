import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

// P12-31: the agents' and gates' scratch directories (HOME/TMPDIR) of a process that was SIGKILLed stayed in the
// scratch parent for ever (one pair per killed agent). A later polywave process removes them at its first use of
// the parent — the real processes here: one that made directories and was killed, one still running, one that asked
// to keep its directory, and a new one whose first use sweeps.

const module = pathToFileURL(path.resolve('dist/sandbox/scratch-dirs.js')).href;
const children: ChildProcess[] = [];
const temps: string[] = [];

afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  for (const temp of temps.splice(0)) rmSync(temp, { recursive: true, force: true });
});

/** A node process (TMPDIR = `tmp`) that makes a scratch directory with `prefix` (its home/ and tmp/ in it), prints it, and waits. */
async function holder(tmp: string, prefix: string, keep = false): Promise<{ child: ChildProcess; directory: string }> {
  const script = `import(${JSON.stringify(module)}).then(async (m) => {
    const d = await m.makeScratchDir(${JSON.stringify(prefix)});
    require('fs').mkdirSync(d + '/home'); require('fs').writeFileSync(d + '/home/transcript.jsonl', 'x');
    if (${keep}) await m.releaseScratchDir(d, { keep: true });
    console.log(d);
    setInterval(() => {}, 1000);
  });`;
  const child = spawn(process.execPath, ['-e', script], { env: { ...process.env, TMPDIR: tmp }, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  const directory = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve(out.trim());
    });
    child.on('exit', (code) => reject(new Error(`holder exited ${code}`)));
  });
  return { child, directory };
}

async function killed(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

describe.runIf(process.platform === 'linux')('dead scratch directories are swept (P12-31)', () => {
  it('a SIGKILLed process\'s agent and gate directories go at the next first use; a live, a kept and a young unowned one stay', async () => {
    const tmp = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'polywave-sweep-e2e-')));
    temps.push(tmp);
    const parent = path.join(tmp, `polywave-scratch-${process.getuid!()}`);
    const dead = await holder(tmp, 'polywave-agent-A-');
    const deadGate = await holder(tmp, 'polywave-gate-');
    const live = await holder(tmp, 'polywave-agent-B-');
    const kept = await holder(tmp, 'polywave-agent-C-', true);
    await killed(dead.child);
    await killed(deadGate.child);
    await killed(kept.child);
    // The records sit beside the directories, in the parent no sandbox can see.
    expect(existsSync(`${dead.directory}.owner`)).toBe(true);
    expect(existsSync(`${kept.directory}.keep`)).toBe(true);
    // Made by an older polywave (no record): a young one stays, one untouched for two days goes.
    const youngUnowned = path.join(parent, 'polywave-agent-D-old111');
    const oldUnowned = path.join(parent, 'polywave-gate-old222');
    mkdirSync(youngUnowned);
    mkdirSync(oldUnowned);
    const twoDaysAgo = new Date(Date.now() - 2 * 24 * 3600 * 1000);
    utimesSync(oldUnowned, twoDaysAgo, twoDaysAgo);
    // A record whose directory is gone, and someone else's file.
    writeFileSync(path.join(parent, 'polywave-agent-E-gone33.owner'), '1 2\n');
    writeFileSync(path.join(parent, 'notes.txt'), 'mine');
    expect(existsSync(dead.directory) && existsSync(deadGate.directory)).toBe(true);

    // A new polywave process's first use of the parent (any agent, gate or checkout it starts).
    const sweep = spawnSync(process.execPath, ['-e', `import(${JSON.stringify(module)}).then((m) => console.log(m.ensureScratchParent()))`], { env: { ...process.env, TMPDIR: tmp }, encoding: 'utf8' });
    expect(sweep.status, sweep.stderr).toBe(0);
    expect(sweep.stdout.trim()).toBe(parent);

    const left = readdirSync(parent).sort();
    expect(left).toEqual(
      [path.basename(live.directory), `${path.basename(live.directory)}.owner`, path.basename(kept.directory), `${path.basename(kept.directory)}.keep`, path.basename(youngUnowned), 'notes.txt'].sort(),
    );
    // The live holder's files are untouched.
    expect(existsSync(path.join(live.directory, 'home', 'transcript.jsonl'))).toBe(true);
  });
});
