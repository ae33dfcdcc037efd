import { describe, expect, it } from 'vitest';
import { dependencyCycle, stoppedAtGate } from './daemon.js';
import type { AutopilotResult } from './autopilot.js';

type Wave = AutopilotResult['waves'][number];
const wave = (fields: Partial<Wave>): Wave => ({ success: false, ...fields }) as Wave;

describe('daemon decisions', () => {
  it('only a failed quality gate in the last wave is a gate failure (what gate_failure autonomy retries)', () => {
    for (const step of ['run-gates', 'run-post-merge-gates', 'verify-build']) {
      expect(stoppedAtGate({ success: false, waves: [wave({ finalize: { failed_step: { step, detail: 'exit 1' } } as Wave['finalize'] })] }), step).toBe(true);
    }
    expect(stoppedAtGate({ success: false, waves: [wave({ finalize: { failed_step: { step: 'merge-agents', detail: 'conflict' } } as Wave['finalize'] })] })).toBe(false);
    expect(stoppedAtGate({ success: false, waves: [wave({ blocked: { reason: 'agents blocked', agents: [] } as unknown as Wave['blocked'] })] })).toBe(false);
    expect(stoppedAtGate({ success: false, waves: [] })).toBe(false);
    expect(stoppedAtGate({ success: true, waves: [wave({ success: true })] })).toBe(false);
  });

  it('dependencyCycle names the loop through unfinished items and ignores finished ones and missing slugs', () => {
    const item = (slug: string, depends_on: string[], status = 'queued') => ({ slug, depends_on, status, title: slug, priority: 1, feature_description: '' }) as Parameters<typeof dependencyCycle>[1][number];
    expect(dependencyCycle('a', [item('a', ['b']), item('b', ['a'])])).toEqual(['a', 'b', 'a']);
    expect(dependencyCycle('a', [item('a', ['a'])])).toEqual(['a', 'a']);
    expect(dependencyCycle('a', [item('a', ['b']), item('b', ['c']), item('c', [])])).toBeUndefined();
    expect(dependencyCycle('a', [item('a', ['b']), item('b', ['a'], 'complete')])).toBeUndefined();
    expect(dependencyCycle('d', [item('a', ['b']), item('b', ['a']), item('d', ['a'])])).toBeUndefined();
    expect(dependencyCycle('a', [item('a', ['missing'])])).toBeUndefined();
  });
});
