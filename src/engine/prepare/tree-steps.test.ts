import { describe, expect, it } from 'vitest';
import { isPolywaveOwned, isRuntimeState } from './tree-steps.js';

describe('isPolywaveOwned (files --commit-state may commit)', () => {
  it('accepts the IMPL, docs/IMPL/**, docs/PROGRAM/** and docs/CONTEXT.md only', () => {
    const impl = 'plans/IMPL-x.yaml';
    for (const file of [impl, 'docs/IMPL/IMPL-y.yaml', 'docs/IMPL/complete/IMPL-z.yaml', 'docs/PROGRAM/PROGRAM-p.yaml', 'docs/CONTEXT.md']) {
      expect(isPolywaveOwned(file, impl), file).toBe(true);
    }
    for (const file of ['src/a.ts', 'docs/IMPLEMENTATION.md', 'docs/context.md', 'README.md', 'plans/other.yaml', '.polywave-state/gate-cache.json']) {
      expect(isPolywaveOwned(file, impl), file).toBe(false);
    }
  });

  it('runtime state under .polywave-state/ is never committed (E38, issue 13)', () => {
    for (const file of ['.polywave-state/gate-cache.json', '.polywave-state', './.polywave-state/wave1/merge-log.json']) expect(isRuntimeState(file), file).toBe(true);
    for (const file of ['docs/IMPL/IMPL-y.yaml', 'src/.polywave-state/x', '.polywave-statex']) expect(isRuntimeState(file), file).toBe(false);
  });
});
