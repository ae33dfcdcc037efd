import { describe, expect, it } from 'vitest';
import { isPolywaveOwned } from './tree-steps.js';

describe('isPolywaveOwned (files --commit-state may commit)', () => {
  it('accepts the IMPL, docs/IMPL/**, .polywave-state/** and docs/CONTEXT.md only', () => {
    const impl = 'plans/IMPL-x.yaml';
    for (const file of [impl, 'docs/IMPL/IMPL-y.yaml', 'docs/IMPL/complete/IMPL-z.yaml', '.polywave-state/gate-cache.json', 'docs/CONTEXT.md']) {
      expect(isPolywaveOwned(file, impl), file).toBe(true);
    }
    for (const file of ['src/a.ts', 'docs/IMPLEMENTATION.md', 'docs/context.md', 'README.md', 'plans/other.yaml']) {
      expect(isPolywaveOwned(file, impl), file).toBe(false);
    }
  });
});
