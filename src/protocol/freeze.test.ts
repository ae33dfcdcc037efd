import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { implModel, type ImplManifest } from './schema/impl-schema.js';
import { canonicalJson, checkFreeze, formatTimestamp, freezeRecord, hashContracts, hashScaffolds, type FrozenManifest } from './freeze.js';

function manifest(raw: Record<string, unknown>): ImplManifest {
  return implModel.manifest.parse(raw);
}

const sha = (text: string) => createHash('sha256').update(text).digest('hex');
const contract = { name: 'TestInterface', definition: 'func Test()', location: 'test.go' };
const now = new Date('2026-05-12T10:00:00Z');

function frozen(raw: Record<string, unknown>): FrozenManifest {
  const base: FrozenManifest = manifest(raw);
  return { ...base, ...freezeRecord(base, now) };
}

describe('canonicalJson', () => {
  it('sorts keys at every depth and drops whitespace', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: true, y: null }], c: 'x' } })).toBe('{"a":{"c":"x","d":[3,{"y":null,"z":true}]},"b":1}');
  });

  it('keeps array order and strips undefined properties', () => {
    expect(canonicalJson([3, 1, 2])).toBe('[3,1,2]');
    expect(canonicalJson({ a: undefined, b: 2 })).toBe('{"b":2}');
    expect(canonicalJson([undefined])).toBe('[null]');
    expect(canonicalJson(undefined)).toBe('null');
  });

  it('escapes strings like JSON and is independent of insertion order', () => {
    expect(canonicalJson({ s: 'a"b\n<é>' })).toBe('{"s":"a\\"b\\n<é>"}');
    expect(canonicalJson({ x: 1, y: 2 })).toBe(canonicalJson({ y: 2, x: 1 }));
    expect(canonicalJson(new Date('2026-01-02T03:04:05Z'))).toBe('"2026-01-02T03:04:05.000Z"');
  });

  it('rejects values with no JSON form', () => {
    expect(() => canonicalJson(Number.NaN)).toThrow(TypeError);
    expect(() => canonicalJson({ n: Infinity })).toThrow(TypeError);
    expect(() => canonicalJson(1n)).toThrow(TypeError);
    expect(() => canonicalJson({ f: () => 1 })).toThrow(TypeError);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => canonicalJson(cyclic)).toThrow('cyclic');
    const shared = { v: 1 };
    expect(canonicalJson([shared, shared])).toBe('[{"v":1},{"v":1}]');
  });
});

describe('section hashes', () => {
  it('hashes an absent and an empty list the same (= sha256("[]"))', () => {
    const emptyHash = '4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945';
    expect(hashContracts({})).toBe(emptyHash);
    expect(hashContracts({ interface_contracts: [] })).toBe(emptyHash);
    expect(hashContracts(manifest({ interface_contracts: null }))).toBe(emptyHash);
    expect(hashScaffolds({})).toBe(emptyHash);
    expect(sha('[]')).toBe(emptyHash);
  });

  it('is deterministic and ignores key order and empty optional fields', () => {
    const first = hashContracts(manifest({ interface_contracts: [contract] }));
    expect(first).toMatch(/^[0-9a-f]{64}$/);
    expect(hashContracts(manifest({ interface_contracts: [{ location: 'test.go', definition: 'func Test()', name: 'TestInterface' }] }))).toBe(first);
    expect(hashContracts(manifest({ interface_contracts: [{ ...contract, description: '' }] }))).toBe(first);
    expect(hashContracts(manifest({ interface_contracts: [{ ...contract, description: 'doc' }] }))).not.toBe(first);
    expect(first).toBe(sha('[{"definition":"func Test()","location":"test.go","name":"TestInterface"}]'));
  });

  it('excludes scaffold status and commit, and folds the legacy file key', () => {
    const pending = hashScaffolds(manifest({ scaffolds: [{ file_path: 'pkg/types.go', contents: 'type T struct{}', status: 'pending' }] }));
    const committed = hashScaffolds(
      manifest({ scaffolds: [{ file_path: 'pkg/types.go', contents: 'type T struct{}', status: 'committed (abc123)', commit: 'abc123' }] }),
    );
    expect(committed).toBe(pending);
    expect(hashScaffolds(manifest({ scaffolds: [{ file: 'pkg/types.go', contents: 'type T struct{}' }] }))).toBe(pending);
    expect(hashScaffolds(manifest({ scaffolds: [{ file_path: 'pkg/types.go', contents: 'type T struct{ X int }' }] }))).not.toBe(pending);
  });
});

describe('freezeRecord', () => {
  it('records the time and both hashes', () => {
    const impl = manifest({ interface_contracts: [contract] });
    expect(freezeRecord(impl, now)).toEqual({
      worktrees_created_at: '2026-05-12T10:00:00Z',
      frozen_contracts_hash: hashContracts(impl),
      frozen_scaffolds_hash: hashScaffolds(impl),
    });
  });

  it('formats RFC 3339 timestamps', () => {
    expect(formatTimestamp(new Date('2026-05-12T10:00:00.250Z'))).toBe('2026-05-12T10:00:00.250Z');
    expect(() => formatTimestamp(new Date('nope'))).toThrow(RangeError);
  });
});

// reference §10.26
describe('checkFreeze', () => {
  it('reports nothing without a freeze timestamp', () => {
    expect(checkFreeze(manifest({ interface_contracts: [contract], frozen_contracts_hash: 'deadbeef' }))).toEqual({ frozen: false, violations: [] });
  });

  it('reports nothing when unchanged (empty collections included)', () => {
    expect(checkFreeze(frozen({ interface_contracts: [contract], scaffolds: [{ file_path: 'a.go', status: 'pending' }] }))).toEqual({
      frozen: true,
      violations: [],
    });
    expect(checkFreeze(frozen({}))).toEqual({ frozen: true, violations: [] });
  });

  it('does not count committing a scaffold as a change', () => {
    const impl = frozen({ scaffolds: [{ file_path: 'a.go', status: 'pending' }] });
    impl.scaffolds = [{ ...impl.scaffolds![0]!, status: 'committed (abc)', commit: 'abc' }];
    expect(checkFreeze(impl).violations).toEqual([]);
  });

  it('reports a changed contract and a changed scaffold, one violation per section', () => {
    const impl = frozen({ interface_contracts: [contract], scaffolds: [{ file_path: 'a.go', contents: 'x' }] });
    const contractsHash = impl.frozen_contracts_hash!;
    const scaffoldsHash = impl.frozen_scaffolds_hash!;
    impl.interface_contracts = [{ ...contract, definition: 'func Test(x int)' }];
    impl.scaffolds = [{ file_path: 'a.go', contents: 'y' }];
    const result = checkFreeze(impl);
    expect(result.frozen).toBe(true);
    expect(result.violations).toEqual([
      {
        section: 'interface_contracts',
        message: `Interface contracts have been modified after freeze at 2026-05-12T10:00:00Z. Expected hash ${contractsHash.slice(0, 8)}, got ${hashContracts(impl).slice(0, 8)}`,
      },
      {
        section: 'scaffolds',
        message: `Scaffolds have been modified after freeze at 2026-05-12T10:00:00Z. Expected hash ${scaffoldsHash.slice(0, 8)}, got ${hashScaffolds(impl).slice(0, 8)}`,
      },
    ]);
  });

  it('reports an appended contract, and a contract added to an empty list', () => {
    const impl = frozen({ interface_contracts: [contract] });
    impl.interface_contracts = [...(impl.interface_contracts ?? []), { name: 'B', definition: 'b', location: 'b.go' }];
    expect(checkFreeze(impl).violations.map((violation) => violation.section)).toEqual(['interface_contracts']);
    const empty = frozen({});
    empty.interface_contracts = [contract];
    expect(checkFreeze(empty).violations).toHaveLength(1);
  });

  it('skips sections without a stored hash and survives short or upper-case hashes', () => {
    const impl = manifest({ worktrees_created_at: '2026-05-12T10:00:00Z', interface_contracts: [contract], frozen_contracts_hash: 'abc' });
    const result = checkFreeze(impl);
    expect(result.violations).toHaveLength(1);
    expect(result.violations[0]?.message).toContain('Expected hash abc, got ');
    const upper = frozen({ interface_contracts: [contract] });
    upper.frozen_contracts_hash = upper.frozen_contracts_hash!.toUpperCase();
    expect(checkFreeze(upper).violations).toEqual([]);
  });

  it('shows an unparsable timestamp as written', () => {
    const impl = manifest({ worktrees_created_at: 'yesterday', frozen_contracts_hash: '0'.repeat(64) });
    expect(checkFreeze(impl).violations[0]?.message).toContain('after freeze at yesterday.');
  });
});
