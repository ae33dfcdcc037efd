import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PolywaveError } from '../errors/polywave-error.js';
import { parseImpl } from '../protocol/parse-impl.js';
import { makeTempDir } from '../../test/support/temp.js';
import { saveCompletionReport } from './completion-report-file.js';
import { claimPendingEntries, dropEntry, hashText, newEntryId, processStartTime, takeSettledOutcome, writeCommitRecord, type EntryOutcome } from './group-commit.js';
import { applyEntries } from './manifest-inbox-apply.js';
import { resolveLockLocation } from './lock-location.js';
import { withFileLock } from './locked-write.js';
import { editImpl } from './manifest-file.js';
import { submitImplRequest } from './manifest-inbox.js';

const manifest = [
  'title: Inbox',
  'feature_slug: inbox',
  'waves:',
  '    - number: 1',
  '      agents:',
  ...['A', 'B', 'C', 'D', 'E', 'F', 'G', 'H'].flatMap((id) => [`        - id: ${id}`, `          task: task ${id}`]),
  'state: WAVE_EXECUTING',
  '',
].join('\n');

describe('group-committed manifest requests', () => {
  const directory = makeTempDir('polywave-inbox-');
  let counter = 0;
  const freshManifest = (): string => {
    counter += 1;
    const file = path.join(directory, `IMPL-inbox-${counter}.yaml`);
    writeFileSync(file, manifest);
    return file;
  };
  const reports = (file: string) => (parseImpl(readFileSync(file, 'utf8')).data as { completion_reports?: Record<string, Record<string, unknown>> }).completion_reports ?? {};

  it('one holder applies every queued request in one write; each writer gets its own outcome, a bad one fails alone', async () => {
    const file = freshManifest();
    const location = await resolveLockLocation(file);
    // Requests queued by "other processes" (the same files they write), then one writer drains them all.
    const queued = [
      { id: newEntryId(), kind: 'completion-report', request: { agentId: 'A', report: { status: 'complete', commit: 'aaa1111' } } },
      { id: newEntryId(), kind: 'completion-report', request: { agentId: 'Q', report: { status: 'complete', commit: 'qqq1111' } } },
      { id: newEntryId(), kind: 'status-update', request: { wave: 1, agentId: 'A', status: 'blocked' } },
      { id: newEntryId(), kind: 'status-update', request: { wave: 1, agentId: 'C', status: 'complete' } },
    ];
    for (const entry of queued) await dropEntry(location, entry);
    const own = await submitImplRequest(file, 'status-update', { wave: 1, agentId: 'B', status: 'partial', commit: 'bbb2222' });
    expect(own).toEqual({ wave: 1, agent: 'B', old_status: '', new_status: 'partial', updated: true });
    expect(reports(file)).toEqual({ A: { status: 'blocked', commit: 'aaa1111' }, B: { status: 'partial', commit: 'bbb2222' } });
    // The others' outcomes wait for them in the inbox.
    const outcomes = await withFileLock(file, async () => Promise.all(queued.map((entry) => takeSettledOutcome(location, entry.id))));
    expect(outcomes[0]).toEqual({ ok: true, value: null });
    expect(outcomes[1]).toMatchObject({ ok: false, error: { code: 'N095_REPORT_SET_FAILED', exitCode: 2 } });
    expect(outcomes[2]).toMatchObject({ ok: true, value: { agent: 'A', old_status: 'complete', new_status: 'blocked' } });
    expect((outcomes[3] as Extract<EntryOutcome, { ok: false }>).error).toMatchObject({ code: 'G003_COMMIT_MISSING', exitCode: 1 });
    expect(readdirSync(location.inboxPath)).toEqual([]);
    expect(existsSync(location.commitRecordPath)).toBe(false);
  });

  it('a writer whose request another holder applied returns that outcome without writing', async () => {
    const file = freshManifest();
    const results = await Promise.allSettled(['A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'Z'].map((id) => saveCompletionReport(file, id, { status: 'complete', commit: `${id.toLowerCase()}0000001` })));
    expect(results.slice(0, 8).every((result) => result.status === 'fulfilled')).toBe(true);
    const refused = results[8] as PromiseRejectedResult;
    expect(PolywaveError.isInstance(refused.reason) && refused.reason.code).toBe('N095_REPORT_SET_FAILED');
    expect(Object.keys(reports(file)).sort()).toEqual(['A', 'B', 'C', 'D', 'E', 'F', 'G', 'H']);
    expect(readdirSync(directory).filter((name) => name.startsWith('.') || name.includes('.lock'))).toEqual([]);
  });

  it('a writer that gives up waiting withdraws its request: it never lands later', async () => {
    const file = freshManifest();
    const location = await resolveLockLocation(file);
    let release: () => void = () => undefined;
    const holding = withFileLock(file, () => new Promise<void>((resolve) => (release = resolve)));
    await new Promise((resolve) => setTimeout(resolve, 30));
    await expect(saveCompletionReport(file, 'A', { status: 'complete', commit: 'abc1234' }, { lockTimeoutMs: 200 })).rejects.toMatchObject({ code: 'N094_MANIFEST_SAVE_FAILED' });
    expect(readdirSync(location.inboxPath)).toEqual([]);
    release();
    await holding;
    await saveCompletionReport(file, 'B', { status: 'complete', commit: 'bcd2345' });
    expect(Object.keys(reports(file))).toEqual(['B']);
  });

  it('an unreadable manifest fails every queued request with the reason, and writes nothing', async () => {
    const file = freshManifest();
    writeFileSync(file, 'title: [unclosed\n');
    await expect(saveCompletionReport(file, 'A', { status: 'complete', commit: 'abc1234' })).rejects.toMatchObject({ code: 'V046_PARSE_ERROR', exitCode: 2 });
    expect(readFileSync(file, 'utf8')).toBe('title: [unclosed\n');
    expect(readdirSync((await resolveLockLocation(file)).inboxPath)).toEqual([]);
  });

  it('editImpl (the engine writers) and queued requests interleave without losing either', async () => {
    const file = freshManifest();
    await Promise.all([
      saveCompletionReport(file, 'A', { status: 'complete', commit: 'abc1234' }),
      editImpl(file, () => ({ edits: [{ path: ['state'], value: 'WAVE_MERGING' }], outcome: undefined })),
      submitImplRequest(file, 'status-update', { wave: 1, agentId: 'B', status: 'blocked', commit: 'bcd' }),
    ]);
    expect(parseImpl(readFileSync(file, 'utf8')).manifest?.state).toBe('WAVE_MERGING');
    expect(Object.keys(reports(file)).sort()).toEqual(['A', 'B']);
  });
  it('exactly once across a crash after the rename: the next lock holder delivers the outcomes, a later change is never undone', async () => {
    const file = freshManifest();
    const location = await resolveLockLocation(file);
    const id = newEntryId();
    await dropEntry(location, { id, kind: 'completion-report', request: { agentId: 'A', report: { status: 'complete', commit: 'aaa1111' } } });
    // A holder claims and writes the request, then dies before delivering the outcome (commit record left).
    await withFileLock(file, async () => {
      const entries = await claimPendingEntries(location);
      await applyEntries(file, location, entries);
    });
    expect(existsSync(location.commitRecordPath)).toBe(true);
    expect(reports(file).A).toEqual({ status: 'complete', commit: 'aaa1111' });
    // An engine write (no drain) changes the report; taking the lock settles the dead holder's commit first.
    await editImpl(file, () => ({ edits: [{ path: ['completion_reports', 'A', 'status'], value: 'blocked' }], outcome: undefined }));
    expect(existsSync(location.commitRecordPath)).toBe(false);
    // A later group commit does not apply A's request again.
    await saveCompletionReport(file, 'B', { status: 'complete', commit: 'bbb2222' });
    expect(reports(file)).toEqual({ A: { status: 'blocked', commit: 'aaa1111' }, B: { status: 'complete', commit: 'bbb2222' } });
    expect(await withFileLock(file, () => takeSettledOutcome(location, id))).toEqual({ ok: true, value: null });
  });

  it('none lost across a crash before the rename: the commit record is dropped and the requests are applied by the next holder', async () => {
    const file = freshManifest();
    const location = await resolveLockLocation(file);
    const id = newEntryId();
    await dropEntry(location, { id, kind: 'completion-report', request: { agentId: 'C', report: { status: 'complete', commit: 'ccc3333' } } });
    // A holder claimed it and wrote its commit record, then died before the rename.
    await withFileLock(file, async () => {
      await claimPendingEntries(location);
      await writeCommitRecord(location, { v: 1, target: location.target, before: hashText(manifest), after: hashText('something else'), entries: [{ id, outcome: { ok: true, value: null } }] });
    });
    expect(readdirSync(location.inboxPath)).toEqual([`${id}.claim`]);
    await saveCompletionReport(file, 'D', { status: 'complete', commit: 'ddd4444' });
    expect(reports(file)).toEqual({ C: { status: 'complete', commit: 'ccc3333' }, D: { status: 'complete', commit: 'ddd4444' } });
    expect(existsSync(location.commitRecordPath)).toBe(false);
  });

  it.runIf(processStartTime(process.pid) !== undefined)('a killed writer not yet reaped by its parent (a zombie) is gone: its start time is not read as alive', () => {
    const child = spawn('sleep', ['30'], { stdio: 'ignore' });
    const pid = child.pid!;
    const alive = processStartTime(pid);
    expect(alive).toMatch(/^\d+$/);
    child.kill('SIGKILL');
    // Block the event loop, so Node cannot reap the child: it stays a zombie in /proc meanwhile.
    const state = () => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0];
    const deadline = Date.now() + 5000;
    while (state() !== 'Z' && Date.now() < deadline);
    expect(state()).toBe('Z');
    expect(processStartTime(pid)).toBeUndefined();
  });

  it.runIf(processStartTime(process.pid) !== undefined)('a reused pid is not the writer: an outcome left for a dead writer whose pid now belongs to another process is cleaned up', async () => {
    const file = freshManifest();
    const location = await resolveLockLocation(file);
    const start = processStartTime(process.pid)!;
    // Ids as a writer with this (live) pid would make them: one with our real start time, one with another.
    const ours = newEntryId();
    expect(ours).toContain(`-${process.pid}.${start}-`);
    const reused = ours.replace(`-${process.pid}.${start}-`, `-${process.pid}.${Number(start) - 1}-`);
    const legacy = ours.replace(`-${process.pid}.${start}-`, `-${process.pid}-`);
    mkdirSync(location.inboxPath, { recursive: true });
    for (const id of [ours, reused, legacy]) writeFileSync(path.join(location.inboxPath, `${id}.done`), JSON.stringify({ ok: true, value: null }));
    await withFileLock(file, () => claimPendingEntries(location));
    expect(readdirSync(location.inboxPath).sort()).toEqual([`${legacy}.done`, `${ours}.done`].sort());
  });
  it.runIf(processStartTime(process.pid) !== undefined)('a request whose writer died while it waited is applied, and no outcome is left for it in the inbox (CI: a .done of a killed writer outlived every process)', async () => {
    const file = freshManifest();
    const location = await resolveLockLocation(file);
    const start = processStartTime(process.pid)!;
    // A writer "killed while it waited": its id names our pid with another start time (a dead process).
    const dead = newEntryId().replace(`-${process.pid}.${start}-`, `-${process.pid}.${Number(start) - 1}-`);
    await dropEntry(location, { id: dead, kind: 'completion-report', request: { agentId: 'D', report: { status: 'complete', commit: 'ddd1111' } } });
    const alive = newEntryId();
    await dropEntry(location, { id: alive, kind: 'completion-report', request: { agentId: 'E', report: { status: 'complete', commit: 'eee1111' } } });
    await submitImplRequest(file, 'status-update', { wave: 1, agentId: 'B', status: 'partial', commit: 'bbb2222' });
    expect(Object.keys(reports(file)).sort()).toEqual(['B', 'D', 'E']);
    // The live writer's outcome waits for it; the dead writer's was never written.
    expect(readdirSync(location.inboxPath)).toEqual([`${alive}.done`]);
  });
});

