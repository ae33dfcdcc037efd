import { describe, expect, it } from 'vitest';
import { extractAgentContext, wiringObligationsSection } from './agent-context.js';
import { parseImpl } from './parse-impl.js';

const manifest = parseImpl(`title: t\nfeature_slug: t\nverdict: SUITABLE\ntest_command: x\nlint_command: y\nfile_ownership:\n  - {file: a.ts, agent: A, wave: 1}\n  - {file: b.ts, agent: B, wave: 2}\nwaves:\n  - number: 1\n    agents: [{id: A, task: do a}]\n  - number: 2\n    agents: [{id: B, task: do b}]\nwiring:\n  - {symbol: run, defined_in: a.ts, must_be_called_from: b.ts, agent: B, wave: 2, integration_pattern: call}\n`).manifest!;

describe('extractAgentContext (E23)', () => {
  it("gives the agent's task, the whole ownership table and its wiring; no such agent → undefined", () => {
    const payload = extractAgentContext(manifest, 'B', '/repo/docs/IMPL/IMPL-t.yaml')!;
    expect(payload).toMatchObject({ impl_doc_path: '/repo/docs/IMPL/IMPL-t.yaml', agent_id: 'B', wave: 2, agent_task: 'do b', interface_contracts: [], scaffolds: [], quality_gates: null });
    expect(payload.file_ownership).toHaveLength(2);
    expect(payload.wiring_obligations).toContain('| run | a.ts | b.ts | call | 2 |');
    expect(extractAgentContext(manifest, 'A', 'x')!.wiring_obligations).toBeUndefined();
    expect(extractAgentContext(manifest, 'Z', 'x')).toBeUndefined();
    expect(wiringObligationsSection(manifest, 'A')).toBe('');
  });
});
