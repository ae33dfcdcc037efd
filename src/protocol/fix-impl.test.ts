import { describe, expect, it } from 'vitest';
import { parseImpl } from './parse-impl.js';
import { planImplFixes } from './fix-impl.js';
import { validateImpl } from './validate-impl.js';

const text = `title: Fix me
feature_slug: fix-me
verdict: SUITABLE
file_ownership:
  - {file: a.ts, agent: A, wave: 1, action: edit}
  - {file: b.ts, agent: A, wave: 1, action: update}
  - {file: c.ts, agent: B, wave: 1, action: change}
  - {file: d.ts, agent: B, wave: 1, action: create}
  - {file: e.ts, agent: B, wave: 1, action: add}
  - {file: f.ts, agent: B, wave: 1, action: remove}
  - {file: g.ts, agent: B, wave: 1, action: Modify}
  - {file: h.ts, agent: B, wave: 1, action: rewrite}
  - {file: i.ts, agent: B, wave: 1, action: new}
  - {file: j.ts, agent: B, wave: 1}
waves:
  - number: 1
    agents:
      - {id: A, task: a}
      - {id: B, task: b}
quality_gates:
  gates:
    - {type: invalid_type_here, command: x, required: true}
    - {type: format, command: y, required: true}
    - {type: Build, command: z, required: true}
    - {command: w, required: false}
`;

describe('planImplFixes', () => {
  const manifest = parseImpl(text).manifest!;

  it('rewrites invalid gate types and action aliases, one scalar edit each (§10.6)', () => {
    const plan = planImplFixes(manifest);
    expect(plan.edits).toEqual([
      { path: ['quality_gates', 'gates', 0, 'type'], value: 'custom', description: "quality_gates.gates[0].type: 'invalid_type_here' → 'custom'" },
      { path: ['quality_gates', 'gates', 2, 'type'], value: 'build', description: "quality_gates.gates[2].type: 'Build' → 'build'" },
      { path: ['quality_gates', 'gates', 3, 'type'], value: 'custom', description: "quality_gates.gates[3].type: '' → 'custom'" },
      { path: ['file_ownership', 0, 'action'], value: 'modify', description: "file_ownership[0].action: 'edit' → 'modify'" },
      { path: ['file_ownership', 1, 'action'], value: 'modify', description: "file_ownership[1].action: 'update' → 'modify'" },
      { path: ['file_ownership', 2, 'action'], value: 'modify', description: "file_ownership[2].action: 'change' → 'modify'" },
      { path: ['file_ownership', 3, 'action'], value: 'new', description: "file_ownership[3].action: 'create' → 'new'" },
      { path: ['file_ownership', 4, 'action'], value: 'new', description: "file_ownership[4].action: 'add' → 'new'" },
      { path: ['file_ownership', 5, 'action'], value: 'delete', description: "file_ownership[5].action: 'remove' → 'delete'" },
      { path: ['file_ownership', 6, 'action'], value: 'modify', description: "file_ownership[6].action: 'Modify' → 'modify'" },
    ]);
    expect(plan.fixed).toBe(10);
  });

  it('is pure: the manifest is not changed', () => {
    const before = JSON.stringify(manifest);
    planImplFixes(manifest);
    expect(JSON.stringify(manifest)).toBe(before);
  });

  it('after applying the plan only the unfixable problems remain', () => {
    const fixed = structuredClone(manifest);
    for (const edit of planImplFixes(manifest).edits) {
      let target: Record<string | number, unknown> = fixed as unknown as Record<string | number, unknown>;
      for (const key of edit.path.slice(0, -1)) target = target[key] as Record<string | number, unknown>;
      target[edit.path.at(-1)!] = edit.value;
    }
    const codes = validateImpl({ manifest: fixed, locate: () => undefined }).map((finding) => `${finding.code} ${finding.field ?? ''}`);
    expect(codes).toEqual(['E16_INVALID_ACTION file_ownership[7].action']);
    expect(planImplFixes(fixed)).toEqual({ edits: [], fixed: 0 });
  });

  it('a clean manifest needs no fixes', () => {
    const clean = parseImpl('title: t\nfeature_slug: t\nverdict: SUITABLE\nquality_gates:\n  gates:\n    - {type: format, command: f}\n').manifest!;
    expect(planImplFixes(clean)).toEqual({ edits: [], fixed: 0 });
  });
});
