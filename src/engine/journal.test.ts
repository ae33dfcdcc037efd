import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { initJournal, readJournal, recoverJournalContext, summarizeJournal, type ToolEntry } from './journal.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'polywave-journal-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('journal (E23A)', () => {
  it('creates the layout once and never truncates it', async () => {
    const paths = await initJournal(root, 'demo', 2, 'B3');
    expect(paths.dir).toBe(path.join(root, '.polywave-state', 'demo', 'wave2', 'agent-B3'));
    expect(JSON.parse(readFileSync(paths.cursor, 'utf8'))).toEqual({ session_file: '', offset: 0 });
    expect(readFileSync(paths.recent, 'utf8')).toBe('[]\n');
    expect(existsSync(paths.results_dir)).toBe(true);
    appendFileSync(paths.index, `${JSON.stringify({ kind: 'tool_use', tool_name: 'Read', tool_use_id: 'x' })}\n{"torn`);
    await initJournal(root, 'demo', 2, 'B3');
    expect(await readJournal(paths.index)).toEqual([{ kind: 'tool_use', tool_name: 'Read', tool_use_id: 'x' }]);
    expect(await recoverJournalContext(paths)).toMatchObject({ available: true, entries: 1 });
    expect(existsSync(paths.context)).toBe(true);
  });

  it('an empty journal recovers nothing', async () => {
    const paths = await initJournal(root, 'demo', 1, 'A');
    expect(await recoverJournalContext(paths)).toEqual({ available: false, entries: 0 });
    expect(existsSync(paths.context)).toBe(false);
  });

  it('summarizes files, commands, tests, commits, scaffolds, gates and report status', () => {
    const entries: ToolEntry[] = [
      { kind: 'tool_use', tool_name: 'Edit', tool_use_id: '1', input: { file_path: 'src/a.ts' } },
      { kind: 'tool_use', tool_name: 'Edit', tool_use_id: '2', input: { file_path: 'src/a.ts' } },
      { kind: 'tool_use', tool_name: 'Read', tool_use_id: '3', input: { file_path: '/repo/src/types.ts' } },
      { kind: 'tool_use', tool_name: 'Bash', tool_use_id: '4', input: { command: 'go test ./...' } },
      { kind: 'tool_result', tool_use_id: '4', preview: 'ok  \texample/pkg\t0.1s\n' },
      { kind: 'tool_use', tool_name: 'Bash', tool_use_id: '5', input: { command: 'git commit -m "feat"' } },
      { kind: 'tool_result', tool_use_id: '5', preview: '[polywave/x/wave1-agent-A 1a2b3c4] feat\n' },
    ];
    const summary = summarizeJournal(entries, { scaffoldFiles: ['src/types.ts'], gateCommands: ['go test ./...'], completionReportWritten: true });
    expect(summary).toContain('- src/a.ts (2 edits)');
    expect(summary).toContain('### Tests executed\n\n- `go test ./...` → ok  \texample/pkg\t0.1s');
    expect(summary).toContain('- 1a2b3c4 on polywave/x/wave1-agent-A');
    expect(summary).toContain('### Scaffold files imported\n\n- src/types.ts');
    expect(summary).toContain('### Verification gate status\n\n- `go test ./...`');
    expect(summary).toContain('- written to the IMPL doc');
    expect(summarizeJournal(entries.slice(0, 1), { window: 50 })).toContain('Recovered from the last 1 of 1 journal entries.');
  });
});
