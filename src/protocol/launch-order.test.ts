import { describe, expect, it } from 'vitest';
import { launchOrder } from './launch-order.js';
import { parseImpl } from './parse-impl.js';

function manifest(yaml: string) {
  const parsed = parseImpl(yaml);
  if (!parsed.manifest) throw new Error(JSON.stringify(parsed.findings));
  return parsed.manifest;
}

const base = `title: t
feature_slug: t
verdict: SUITABLE
state: WAVE_PENDING
file_ownership:
    - { file: a1, agent: A, wave: 1 }
    - { file: a2, agent: A, wave: 1 }
    - { file: a3, agent: A, wave: 1 }
    - { file: b1, agent: B, wave: 1 }
    - { file: c1, agent: C, wave: 1 }
    - { file: c2, agent: C, wave: 1 }
    - { file: d1, agent: D, wave: 2, depends_on: [C] }
    - { file: e1, agent: E, wave: 3, depends_on: [D] }
waves:
    - number: 1
      agents:
        - { id: A, task: a, files: [a1, a2, a3] }
        - { id: B, task: b, files: [b1] }
        - { id: C, task: c, files: [c1, c2] }
    - number: 2
      agents:
        - { id: D, task: d, files: [d1], dependencies: [C] }
    - number: 3
      agents:
        - { id: E, task: e, files: [e1], dependencies: [D] }
`;

describe('E1 launch order', () => {
  it('launches the agent with the longest chain of dependents first, then fewer owned files', () => {
    const order = launchOrder(manifest(base), 1);
    expect(order.depth).toEqual({ A: 1, B: 1, C: 3 });
    expect(order.order).toEqual(['C', 'B', 'A']);
    expect(order.declared).toEqual(['A', 'B', 'C']);
    expect(order.reordered).toBe(true);
  });

  it('keeps declaration order with prioritize: false', () => {
    const order = launchOrder(manifest(base), 1, { prioritize: false });
    expect(order.order).toEqual(['A', 'B', 'C']);
    expect(order.reordered).toBe(false);
    expect(order.reason).toContain('--no-prioritize');
  });

  it('honours agent_launch_order first', () => {
    const order = launchOrder(manifest(base.replace('    - number: 1\n      agents:', '    - number: 1\n      agent_launch_order: [A]\n      agents:')), 1);
    expect(order.order).toEqual(['A', 'C', 'B']);
    expect(order.reason).toContain('agent_launch_order');
  });

  it('survives a dependency cycle', () => {
    const cyclic = base.replace('{ id: A, task: a, files: [a1, a2, a3] }', '{ id: A, task: a, files: [a1, a2, a3], dependencies: [B] }').replace('{ id: B, task: b, files: [b1] }', '{ id: B, task: b, files: [b1], dependencies: [A] }');
    const order = launchOrder(manifest(cyclic), 1);
    expect(order.order).toHaveLength(3);
    expect(order.order[0]).toBe('C');
  });
});
