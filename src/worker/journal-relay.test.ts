import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { appendNewJournalEntries, keepJobJournal } from '../dispatch/dispatched-journal.js';
import type { AgentJobResult } from '../dispatch/dispatcher.js';
import { journalPaths, readJournal, type ToolEntry } from '../engine/journal.js';
import { boundJournal, createJournalRelay, journalOfProgress, relayMaxChars, relayMaxEntries, seedJobJournal, toPortableJournal, withRecoveredContext } from './journal-relay.js';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'pw-journal-relay-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const use = (index: number, input: Record<string, unknown> = { command: `echo ${index}` }): ToolEntry => ({ ts: `2026-12-02T10:00:${String(index % 60).padStart(2, '0')}.${String(index).padStart(3, '0')}Z`, kind: 'tool_use', tool_name: 'bash', tool_use_id: `c${index}`, input });

describe('journal relay (issue 17 item 4, E23A across machines)', () => {
  it('keeps the newest entries within the entry and size bounds, previews only, long inputs cut', () => {
    const many = Array.from({ length: 500 }, (_, index) => use(index));
    const bounded = boundJournal(many);
    expect(bounded).toHaveLength(relayMaxEntries);
    expect(bounded[0]!.tool_use_id).toBe('c300');
    expect(bounded.at(-1)!.tool_use_id).toBe('c499');

    // 400 entries of ~2 KB each: the size bound (256 KB) wins over the entry bound, newest kept.
    const big = Array.from({ length: 400 }, (_, index) => ({ ...use(index, { path: `src/f${index}.ts`, content: 'x'.repeat(5000) }), preview: 'p'.repeat(800) + String(index) }));
    const sized = boundJournal(big, { maxEntries: 1000 });
    const chars = sized.reduce((sum, entry) => sum + JSON.stringify(entry).length + 1, 0);
    expect(chars).toBeLessThanOrEqual(relayMaxChars);
    expect(chars).toBeGreaterThan(relayMaxChars - 2000);
    expect(sized.at(-1)!.tool_use_id).toBe('c399');
    expect(sized[0]!.input).toEqual({ path: `src/f${400 - sized.length}.ts`, content: `${'x'.repeat(800)}…` });

    const withFile: ToolEntry = { ts: 't', kind: 'tool_result', tool_name: 'bash', tool_use_id: 'c1', preview: 'out', truncated: true, content_file: 'tool-results/c1.txt' };
    expect(boundJournal([withFile])).toEqual([{ ts: 't', kind: 'tool_result', tool_name: 'bash', tool_use_id: 'c1', preview: 'out', truncated: true }]);
  });

  it('reads entries from a job progress only when they are entries (anything else: none)', () => {
    expect(journalOfProgress(undefined)).toEqual([]);
    expect(journalOfProgress(42)).toEqual([]);
    expect(journalOfProgress({ journal: 'x' })).toEqual([]);
    expect(journalOfProgress({ journal: [null, 1, [], { kind: 3 }, use(1)] })).toEqual([use(1)]);
  });

  it('publishes at most every interval (the trailing change included) and once more at close', async () => {
    const index = path.join(scratch, 'relay-index.jsonl');
    writeFileSync(index, '');
    const published: number[] = [];
    const relay = createJournalRelay({ index }, async (entries) => published.push(entries.length), { intervalMs: 600 });
    for (let step = 1; step <= 5; step += 1) {
      writeFileSync(index, `${JSON.stringify(use(step))}\n`, { flag: 'a' });
      relay.touch();
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
    // 5 touches within ~150 ms: one publish at once (it reads the index when it runs: 1–5 entries by then),
    // then at most the trailing one with all 5.
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(published.length).toBeGreaterThanOrEqual(1);
    expect(published.length).toBeLessThanOrEqual(2);
    expect(published.at(-1)).toBe(5);
    const seen = [...published];
    await relay.close();
    // Nothing new: close publishes nothing again.
    expect(published).toEqual(seen);
    relay.touch();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(published).toEqual(seen);
  });

  it('seeds a fresh job journal from the progress and builds the recovered context section; the orchestrator adds each entry once', async () => {
    const paths = journalPaths(path.join(scratch, 'job-1'), 'demo', 1, 'A');
    const progress = { journal: [{ ...use(1, { path: 'src/a.js', content: 'x' }), tool_name: 'write_file' }, use(2, { command: 'echo first-run' }), { ts: 't3', kind: 'tool_result', tool_name: 'bash', tool_use_id: 'c2', preview: 'first-run' }] };
    const seeded = await seedJobJournal(paths, progress);
    expect(seeded.entries).toBe(3);
    expect(seeded.markdown).toContain('### Files modified/created\n\n- src/a.js\n');
    expect(seeded.markdown).toContain('- `echo first-run` → first-run\n');
    expect(readFileSync(paths.context, 'utf8').startsWith('# Session Context (Recovered from Tool Journal)')).toBe(true);
    const prompt = withRecoveredContext('## Assignment\n', seeded.markdown!);
    expect(prompt.startsWith('## Session Context (Recovered from Tool Journal)\n\nRecovered from the last 3 of 3 journal entries.')).toBe(true);
    expect(prompt.endsWith('\n\n## Assignment\n')).toBe(true);
    // A prompt that opens with the orchestrator's section keeps one heading.
    expect(withRecoveredContext(prompt, 'this run').split('## Session Context').length).toBe(2);
    // A second seed (another job in the same place) never keeps the first one's entries.
    expect((await seedJobJournal(paths, undefined)).entries).toBe(0);
    expect(await readJournal(paths.index)).toEqual([]);

    const mine = journalPaths(path.join(scratch, 'orchestrator'), 'demo', 1, 'A');
    expect(await appendNewJournalEntries(mine, progress.journal)).toBe(3);
    expect(await appendNewJournalEntries(mine, [...progress.journal, use(4)])).toBe(1);
    expect((await readJournal(mine.index)).map((entry) => entry.tool_use_id)).toEqual(['c1', 'c2', 'c2', 'c4']);

    // When an attempt ends: the job's progress is read and kept — unless the orchestrator was interrupted
    // while the job runs on (E9: the next run must enqueue the same prompt, without a recovered context).
    const kept = journalPaths(path.join(scratch, 'kept'), 'demo', 1, 'A');
    const result = (status: string) => ({ outcome: { status }, jail: { policy: { root: '/orch/wt-A' } }, dispatch: { dispatcher: 'redis', job_id: 'demo.w1.A.x', stalls: 0 } }) as unknown as AgentJobResult;
    const read: string[] = [];
    // The worker relays its worktree as {{POLYWAVE_WORKTREE}}; the orchestrator reads it as its own worktree.
    const relayed = toPortableJournal([use(7, { command: 'cat /w/work/job-1/src/a.js' })], '/w/work/job-1');
    expect(relayed[0]!.input).toEqual({ command: 'cat {{POLYWAVE_WORKTREE}}/src/a.js' });
    const readJob = async (id: string) => (read.push(id), { progress: { journal: relayed } });
    const aborted = result('aborted');
    expect(await keepJobJournal(aborted, kept, readJob)).toBe(aborted);
    expect(read).toEqual([]);
    expect(await keepJobJournal(result('failed'), kept, readJob)).toMatchObject({ outcome: { status: 'failed' } });
    expect(read).toEqual(['demo.w1.A.x']);
    expect((await readJournal(kept.index)).map((entry) => entry.input)).toEqual([{ command: 'cat /orch/wt-A/src/a.js' }]);
    // Redis away: the attempt's result comes back unchanged.
    expect(await keepJobJournal(result('finished'), kept, () => Promise.reject(new Error('down')))).toMatchObject({ outcome: { status: 'finished' } });
  });
});
