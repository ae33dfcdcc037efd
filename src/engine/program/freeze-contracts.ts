import { statSync } from 'node:fs';
import path from 'node:path';
import { createGit } from '../../git/git-cli.js';
import type { Git } from '../../git/git-port.js';
import { resolveFreezeAt } from '../../protocol/program/freeze-at.js';
import { contractLocationFile, orchestratorOwnedPlace } from '../../protocol/program/program-rules.js';
import type { ProgramContract, ProgramManifest } from '../../protocol/schema/program-schema.js';
import type { YamlEdit } from '../../protocol/yaml/index.js';
import { editProgram, loadProgramManifest, requireTier } from './program-file.js';

/** One contract that freezes at the tier (Go `FrozenContract`, plus what we recorded). */
export interface FrozenContract {
  name: string;
  location: string;
  freeze_at: string;
  file_exists: boolean;
  /** Tracked at HEAD and clean in the working tree (`git status --porcelain` empty). */
  committed: boolean;
  /** HEAD when frozen (set when the contract is frozen: now or by an earlier run). */
  frozen_commit?: string;
  /** Git blob of `location` at freeze time. */
  frozen_blob?: string;
}

/** The freeze-contracts JSON (Go `FreezeContractsData` keys plus `manifest_updated`). */
export interface FreezeContractsResult {
  tier_number: number;
  contracts_frozen: FrozenContract[];
  /** Names of contracts that do not freeze at this tier (no `freeze_at`, or another tier). */
  contracts_skipped: string[];
  /** Every contract that freezes at this tier exists, is committed and unchanged since an earlier freeze. */
  success: boolean;
  errors?: string[];
  /** The freeze was written to the manifest (false when it failed or was already recorded). */
  manifest_updated: boolean;
}

/**
 * Does `contract` freeze when tier `tier` completes? `freeze_at` is resolved to a tier
 * (`resolveFreezeAt`: "Tier N completion", tier-N, an IMPL slug, "IMPL-<slug> completion"). Text
 * that names neither (V053 in validation) falls back to Go's rule: a slug of a tier IMPL appears
 * in it as a whole word ("after auth done").
 */
export function freezesAtTier(manifest: ProgramManifest, contract: ProgramContract, tier: number, tierSlugs: readonly string[]): boolean {
  const point = resolveFreezeAt(manifest, contract.freeze_at);
  if (point.kind === 'tier') return point.tier === tier;
  if (point.kind === 'none') return false;
  const text = contract.freeze_at ?? '';
  return tierSlugs.some((slug) => new RegExp(`(?<![A-Za-z0-9_])${slug.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![A-Za-z0-9_])`).test(text));
}

function isFile(filePath: string): boolean {
  try {
    return statSync(filePath).isFile();
  } catch {
    return false;
  }
}

/** The blob of `location` at HEAD, or undefined when HEAD does not have it (or there is no HEAD). */
async function blobAtHead(git: Git, location: string): Promise<string | undefined> {
  const result = await git.run(['rev-parse', '--verify', '--quiet', `HEAD:${location}`], { allowExitCodes: [1, 128] });
  const sha = result.stdout.trim();
  return result.exitCode === 0 && /^[0-9a-f]{40,64}$/.test(sha) ? sha : undefined;
}

/**
 * E30 freeze of program contracts at a tier boundary (Go `FreezeContracts`): every program
 * contract that freezes when tier `tier` completes ({@link freezesAtTier}) must have its file at
 * `location` (inside the repository), tracked at HEAD and clean (`git status --porcelain` empty —
 * an ignored or untracked file is not committed, unlike Go's check). A contract frozen by an
 * earlier run must still have the same blob (P2: a frozen contract does not change).
 *
 * When every such contract passes, the freeze is **recorded in the manifest** (Go writes nothing):
 * `frozen_at_tier`, `frozen_commit` (HEAD) and `frozen_blob` on each contract, through the locked,
 * format-preserving write; a contract already recorded with the same blob keeps its record.
 * Errors are data (`success: false`, `errors`); the manifest is then not touched. Throws X001
 * (exit 2) for a tier the manifest does not have, and the manifest read errors.
 */
export async function freezeContracts(options: { programPath: string; repoRoot: string; tier: number; env?: NodeJS.ProcessEnv }): Promise<FreezeContractsResult> {
  const { manifest } = await loadProgramManifest(options.programPath);
  const tier = requireTier(manifest, options.tier, options.programPath);
  const git = createGit(options.repoRoot, options.env ? { env: options.env } : {});
  const head = await git.tryRevParse('HEAD');
  const result: FreezeContractsResult = { tier_number: options.tier, contracts_frozen: [], contracts_skipped: [], success: false, manifest_updated: false };
  const errors: string[] = [];
  const toRecord: Array<{ name: string; blob: string }> = [];

  for (const contract of manifest.program_contracts) {
    const name = contract.name ?? '';
    if (!freezesAtTier(manifest, contract, options.tier, tier.impls)) {
      result.contracts_skipped.push(name);
      continue;
    }
    const location = contractLocationFile(contract.location);
    const entry: FrozenContract = { name, location: contract.location ?? '', freeze_at: contract.freeze_at ?? '', file_exists: false, committed: false };
    result.contracts_frozen.push(entry);
    const absolute = path.resolve(options.repoRoot, location);
    const relative = path.relative(options.repoRoot, absolute);
    if (location === '' || path.isAbsolute(location) || relative === '' || relative.startsWith('..') || path.isAbsolute(relative)) {
      errors.push(`contract ${name}: location ${JSON.stringify(contract.location ?? '')} is not a file path inside the repository`);
      continue;
    }
    const owned = orchestratorOwnedPlace(location);
    if (owned !== undefined) {
      // P12-02: the PROGRAM manifest (or any file polywave writes) changes at every state write: a freeze of it is stale at once.
      errors.push(`contract ${name}: location ${location} is ${owned}, not a contract's file (V055)`);
      continue;
    }
    entry.file_exists = isFile(absolute);
    if (!entry.file_exists) {
      errors.push(`contract ${name}: file not found at ${contract.location}`);
      continue;
    }
    const blob = head === undefined ? undefined : await blobAtHead(git, location);
    const status = await git.run(['--literal-pathspecs', 'status', '--porcelain', '--untracked-files=all', '--', location]);
    entry.committed = blob !== undefined && status.stdout.trim() === '';
    if (!entry.committed) {
      errors.push(`contract ${name}: file not committed at ${contract.location}${blob === undefined ? ' (not tracked at HEAD)' : ' (uncommitted changes)'}`);
      continue;
    }
    const recordedBlob = (contract.frozen_blob ?? '').trim();
    if (recordedBlob !== '' && recordedBlob !== blob) {
      // P2: consumers were built against the frozen content.
      errors.push(`contract ${name}: ${contract.location} changed since it was frozen at ${contract.frozen_commit ?? 'an earlier commit'} (blob ${recordedBlob.slice(0, 12)} → ${blob!.slice(0, 12)}; P2)`);
      continue;
    }
    if (recordedBlob === blob && (contract.frozen_commit ?? '').trim() !== '') {
      entry.frozen_commit = contract.frozen_commit!;
      entry.frozen_blob = recordedBlob;
      continue;
    }
    entry.frozen_commit = head!;
    entry.frozen_blob = blob!;
    toRecord.push({ name, blob: blob! });
  }

  result.success = errors.length === 0;
  if (errors.length > 0) result.errors = errors;
  if (result.success && toRecord.length > 0) {
    result.manifest_updated = await editProgram(options.programPath, (current) => {
      const edits: YamlEdit[] = [];
      for (const record of toRecord) {
        // By name, in the manifest as it is now (another writer may have reordered the list).
        const index = current.program_contracts.findIndex((contract) => (contract.name ?? '') === record.name);
        if (index < 0) continue;
        const contract = current.program_contracts[index]!;
        if (contract.frozen_at_tier !== options.tier) edits.push({ path: ['program_contracts', index, 'frozen_at_tier'], value: options.tier });
        if (contract.frozen_commit !== head) edits.push({ path: ['program_contracts', index, 'frozen_commit'], value: head });
        if (contract.frozen_blob !== record.blob) edits.push({ path: ['program_contracts', index, 'frozen_blob'], value: record.blob });
      }
      return { edits, outcome: edits.length > 0 };
    });
  }
  return result;
}
