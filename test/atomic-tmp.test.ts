import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { updateFileLocked } from '../src/store/locked-write.js';
import { tempPathFor } from '../src/store/atomic-file.js';
import { writeTextAtomic } from '../src/engine/prepare/write-text.js';
import { repoRoot } from './support/cli.js';
import { makeTempDir } from './support/temp.js';

// Issue 12 leftover: a SIGKILL inside mark-program-complete's CONTEXT.md write can leave
// `docs/.CONTEXT.md.<pid>.<hex>.tmp` in the checkout (an untracked file). The writer is killed for
// real here (SIGKILL from the atomic write's beforeRename point, in a child running the built
// store), then the next run's write cleans up.

const lockedWriteUrl = pathToFileURL(path.join(repoRoot, 'dist', 'store', 'locked-write.js')).href;
const atomicUrl = pathToFileURL(path.join(repoRoot, 'dist', 'store', 'atomic-file.js')).href;

/** A writer of `file` SIGKILLed between writing its temp file and renaming it; returns the temp names it left. */
function killedWriter(file: string, locked: boolean): string[] {
  const before = new Set(readdirSync(path.dirname(file)));
  const script = locked
    ? `const { updateFileLocked } = await import(${JSON.stringify(lockedWriteUrl)});
       await updateFileLocked(process.argv[1], () => 'new text\\n', { allowMissing: true, hooks: { beforeRename: () => process.kill(process.pid, 'SIGKILL') } });`
    : `const { writeViaTemp } = await import(${JSON.stringify(atomicUrl)});
       await writeViaTemp(process.argv[1], 'new text\\n', undefined, { beforeRename: () => process.kill(process.pid, 'SIGKILL') });`;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script, file], { encoding: 'utf8' });
  expect(run.signal, run.stderr).toBe('SIGKILL');
  return readdirSync(path.dirname(file)).filter((name) => !before.has(name) && name.endsWith('.tmp'));
}

describe('atomic writes leave no debris after a SIGKILL', () => {
  it("a killed CONTEXT.md writer's temp file is removed by the next write there, as is a dead writer's temp of another file; a live or fresh one is kept", async () => {
    const repo = makeTempDir('atomic-tmp-');
    const docs = path.join(repo, 'docs');
    mkdirSync(docs);
    const context = path.join(docs, 'CONTEXT.md');
    writeFileSync(context, '# Project context\n');
    const contextTemps = killedWriter(context, true);
    expect(contextTemps).toHaveLength(1);
    expect(contextTemps[0]).toMatch(/^\.CONTEXT\.md\.\d+\.[0-9a-f]{12}\.tmp$/);
    expect(readFileSync(context, 'utf8')).toBe('# Project context\n');
    // Another file of the directory, its writer killed too (no later write of that file will come).
    const [otherTemp] = killedWriter(path.join(docs, 'notes.md'), false);
    expect(otherTemp).toMatch(/^\.notes\.md\.\d+\.[0-9a-f]{12}\.tmp$/);
    // A dead writer's temp is stale only once it is old (a write takes milliseconds); a live writer's never.
    const hourAgo = new Date(Date.now() - 3_600_000);
    utimesSync(path.join(docs, otherTemp!), hourAgo, hourAgo);
    const fresh = killedWriter(path.join(docs, 'fresh.md'), false)[0]!;
    const live = path.basename(tempPathFor(path.join(docs, 'live.md')));
    writeFileSync(path.join(docs, live), 'a write in progress');
    utimesSync(path.join(docs, live), hourAgo, hourAgo);

    // The next run: CONTEXT.md written again (mark-program-complete / close-impl / update-context).
    await updateFileLocked(context, (current) => `${current}- PROGRAM-shop\n`);
    expect(readFileSync(context, 'utf8')).toBe('# Project context\n- PROGRAM-shop\n');
    const left = readdirSync(docs).sort();
    expect(left).toEqual([fresh, live, 'CONTEXT.md'].sort());
    expect(existsSync(path.join(docs, contextTemps[0]!))).toBe(false);

    // prepare's unsynced writer names its temp files the same way (known to every cleanup).
    await writeTextAtomic(path.join(docs, 'brief.md'), 'text\n');
    expect(readdirSync(docs).filter((name) => name.startsWith('.brief.md.'))).toEqual([]);
  });
});
