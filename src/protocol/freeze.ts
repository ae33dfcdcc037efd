import { createHash } from 'node:crypto';
import type { InterfaceContract, ScaffoldFile } from './schema/impl-schema.js';

/**
 * The manifest sections the freeze looks at. Loosely typed so a parsed manifest and a
 * hand-built object both fit; `null`/absent lists count as `[]`.
 */
export interface FreezeSections {
  interface_contracts?: readonly Partial<InterfaceContract>[] | null;
  scaffolds?: readonly Partial<ScaffoldFile>[] | null;
}

/** {@link FreezeSections} plus the recorded freeze fields. */
export interface FrozenManifest extends FreezeSections {
  worktrees_created_at?: string;
  frozen_contracts_hash?: string;
  frozen_scaffolds_hash?: string;
}

/**
 * Canonical JSON (E2/I2 freeze hashing): object keys sorted by UTF-16 code units (plain
 * `Array.prototype.sort`), no insignificant whitespace, arrays in their order, strings escaped
 * as `JSON.stringify` does. Object properties whose value is `undefined` are dropped (so an
 * absent optional field and an `undefined` one are the same); `undefined` array items and a
 * top-level `undefined` become `null`. `null` stays `null` here — the section hashers below
 * decide that an absent/null collection means `[]`. Objects with `toJSON` (e.g. `Date`) are
 * serialised through it. Non-finite numbers, bigints, functions, symbols and cycles throw a
 * TypeError: they have no canonical JSON form.
 */
export function canonicalJson(value: unknown): string {
  return encode(value, new Set());
}

function encode(value: unknown, ancestors: Set<object>): string {
  if (value === undefined || value === null) return 'null';
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`canonicalJson: ${value} has no JSON form`);
      return JSON.stringify(value);
    case 'bigint':
    case 'function':
    case 'symbol':
      throw new TypeError(`canonicalJson: a ${typeof value} has no JSON form`);
    default:
      break;
  }
  const object = value as object;
  if (typeof (object as { toJSON?: unknown }).toJSON === 'function') {
    return encode((object as { toJSON: () => unknown }).toJSON(), ancestors);
  }
  if (ancestors.has(object)) throw new TypeError('canonicalJson: cyclic structure');
  ancestors.add(object);
  let text: string;
  if (Array.isArray(object)) {
    text = `[${object.map((item) => encode(item, ancestors)).join(',')}]`;
  } else {
    const record = object as Record<string, unknown>;
    const parts: string[] = [];
    for (const key of Object.keys(record).sort()) {
      if (record[key] === undefined) continue;
      parts.push(`${JSON.stringify(key)}:${encode(record[key], ancestors)}`);
    }
    text = `{${parts.join(',')}}`;
  }
  ancestors.delete(object);
  return text;
}

/** Lower-case hex SHA-256 of the canonical JSON of `value`. */
export function sha256CanonicalJson(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value), 'utf8').digest('hex');
}

/** Drops `undefined` and empty-string properties: an empty optional field is the same as an absent one. */
function withoutEmpty(record: Record<string, unknown>): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(record)) {
    if (value === undefined || value === '') continue;
    result[key] = value;
  }
  return result;
}

/** The contract data that is frozen (I2): every field, empty optional fields dropped. */
function canonicalContract(contract: Partial<InterfaceContract>): Record<string, unknown> {
  return withoutEmpty({ ...contract });
}

/**
 * The scaffold data that is frozen (I2). Decision: `status` and `commit` are excluded. They
 * are bookkeeping written by the Scaffold Agent/orchestrator when the scaffold file is committed
 * (`pending` → `committed (abc123)`), which happens *around* worktree creation; counting them
 * would make committing a scaffold look like an interface change and block every E9 re-entry.
 * What an agent builds against — the path, contents and import path — is hashed. The legacy
 * `file` key is folded into `file_path` so the two spellings hash the same.
 */
function canonicalScaffold(scaffold: Partial<ScaffoldFile>): Record<string, unknown> {
  const { status: _status, commit: _commit, file, file_path: filePath, ...rest } = scaffold;
  return withoutEmpty({ ...rest, file_path: filePath !== undefined && filePath !== '' ? filePath : file });
}

/**
 * E2/I2: hash of `interface_contracts` — SHA-256 hex of the canonical JSON of the list.
 * Decision: an absent or `null` list hashes as `[]`, so a manifest that gains an explicit
 * `interface_contracts: []` after a rewrite is not "modified" (Go hashes `null` and `[]`
 * differently, and its Save turns one into the other). Not byte-compatible with Go's hash
 * (Go hashes its own JSON encoding); Go never records freeze hashes in production anyway.
 */
export function hashContracts(manifest: Pick<FreezeSections, 'interface_contracts'>): string {
  return sha256CanonicalJson((manifest.interface_contracts ?? []).map(canonicalContract));
}

/** E2/I2: hash of `scaffolds`, excluding each scaffold's `status` and `commit` (see above); absent = `[]`. */
export function hashScaffolds(manifest: Pick<FreezeSections, 'scaffolds'>): string {
  return sha256CanonicalJson((manifest.scaffolds ?? []).map(canonicalScaffold));
}

/** The three manifest fields written when a wave's worktrees are first created (E2). */
export interface FreezeRecord {
  worktrees_created_at: string;
  frozen_contracts_hash: string;
  frozen_scaffolds_hash: string;
}

/**
 * RFC 3339 UTC timestamp: `2026-05-12T10:00:00Z`, with milliseconds only when non-zero
 * (`…T10:00:00.250Z`). Throws a RangeError for an invalid date.
 */
export function formatTimestamp(date: Date): string {
  if (Number.isNaN(date.getTime())) throw new RangeError('formatTimestamp: invalid date');
  return date.toISOString().replace('.000Z', 'Z');
}

/**
 * E2: what to record when worktrees are first created — the time (`now`, passed in: protocol
 * code never reads the clock) and the hashes of contracts and scaffolds. Pure: the caller
 * writes the three fields into the manifest.
 */
export function freezeRecord(manifest: FreezeSections, now: Date): FreezeRecord {
  return {
    worktrees_created_at: formatTimestamp(now),
    frozen_contracts_hash: hashContracts(manifest),
    frozen_scaffolds_hash: hashScaffolds(manifest),
  };
}

/** One modification of a frozen section. */
export interface FreezeViolation {
  section: 'interface_contracts' | 'scaffolds';
  message: string;
}

/** Result of {@link checkFreeze} (the `freeze-check` JSON, minus the count). */
export interface FreezeCheck {
  /** True when `worktrees_created_at` is set, i.e. the contracts are frozen. */
  frozen: boolean;
  violations: FreezeViolation[];
}

function displayTimestamp(stored: string): string {
  const parsed = new Date(stored);
  return Number.isNaN(parsed.getTime()) ? stored : formatTimestamp(parsed);
}

function short(hash: string): string {
  return hash.slice(0, 8);
}

/**
 * E2/I2: have the frozen sections changed since worktrees were created? Without
 * `worktrees_created_at` nothing is frozen (no violations). Each section whose stored hash is
 * set is recomputed; a mismatch is a violation with the message
 * `Interface contracts have been modified after freeze at {time}. Expected hash {8}, got {8}`
 * (`Scaffolds have been modified …`). Stored hashes compare case-insensitively and may be of
 * any length (a truncated hash is simply a mismatch, never a crash).
 */
export function checkFreeze(manifest: FrozenManifest): FreezeCheck {
  const frozenAt = (manifest.worktrees_created_at ?? '').trim();
  if (frozenAt === '') return { frozen: false, violations: [] };
  const at = displayTimestamp(frozenAt);
  const violations: FreezeViolation[] = [];
  const sections = [
    { section: 'interface_contracts', label: 'Interface contracts', stored: manifest.frozen_contracts_hash, current: () => hashContracts(manifest) },
    { section: 'scaffolds', label: 'Scaffolds', stored: manifest.frozen_scaffolds_hash, current: () => hashScaffolds(manifest) },
  ] as const;
  for (const { section, label, stored, current } of sections) {
    const expected = (stored ?? '').trim();
    if (expected === '') continue;
    const actual = current();
    if (expected.toLowerCase() === actual) continue;
    violations.push({
      section,
      message: `${label} have been modified after freeze at ${at}. Expected hash ${short(expected)}, got ${short(actual)}`,
    });
  }
  return { frozen: true, violations };
}
