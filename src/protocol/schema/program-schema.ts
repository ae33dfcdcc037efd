import { z } from 'zod';
import {
  enumField,
  intField,
  listField,
  objectField,
  objectOf,
  patternField,
  stringField,
  stringItem,
  withRequired,
  type SchemaMode,
} from './fields.js';
import { buildImplSchemas, riskLevels, slugPattern } from './impl-schema.js';

/**
 * Program states (program-manifest.txt §9.1): the nine Go constants plus `REPLANNING`, which the
 * spec defines (E34) and tells orchestrators to treat as BLOCKED until supported.
 */
export const programStates = [
  'PLANNING',
  'VALIDATING',
  'REVIEWED',
  'SCAFFOLD',
  'TIER_EXECUTING',
  'TIER_VERIFIED',
  'COMPLETE',
  'BLOCKED',
  'REPLANNING',
  'NOT_SUITABLE',
] as const;
export type ProgramState = (typeof programStates)[number];

/**
 * Program-level IMPL statuses. The five of program-manifest.txt §5.2 (the Go list), plus
 * `blocked` and `not-suitable`: E32 names "blocked" as a status the manifest tracks, and the
 * IMPL-state → status mapping (E32 program-status) produces both; accepting them avoids the Go
 * bug where its own sync writes statuses its validator rejects (reference §12 item 10).
 */
export const programImplStatuses = ['pending', 'scouting', 'reviewed', 'executing', 'complete', 'blocked', 'not-suitable'] as const;
export type ProgramImplStatus = (typeof programImplStatuses)[number];

/**
 * Builds the PROGRAM manifest schema (program-manifest.txt §3–§12 and the Go structs of
 * reference §7.1: `abs_path`, `serial_waves`, `priority_*`, `concurrency_cap`; plus
 * `completion_date`, which Go's mark-program-complete writes). `tier_gates` reuse the IMPL
 * quality gate; `pre_mortem` is a LIST of rows here (unlike the IMPL `pre_mortem` object).
 * See fields.ts for the two modes.
 */
export function buildProgramSchemas(mode: SchemaMode) {
  const str = () => stringField(mode);
  const strList = () => listField(mode, stringItem(mode));
  const slug = () => patternField(mode, slugPattern);
  const risk = () => enumField(mode, riskLevels);

  const consumer = objectOf(mode, withRequired(mode, { impl: str(), usage: str() }, ['impl', 'usage']));

  const contract = objectOf(
    mode,
    withRequired(
      mode,
      {
        name: str(),
        description: str(),
        definition: str(),
        consumers: listField(mode, consumer),
        location: str(),
        freeze_at: str(),
        /**
         * Our E30 freeze record (freeze-contracts; Go writes nothing): the tier whose completion
         * froze the contract, the HEAD commit and the git blob of `location` at that moment.
         */
        frozen_at_tier: intField(mode),
        frozen_commit: str(),
        frozen_blob: str(),
      },
      ['name', 'definition', 'location'],
    ),
  );

  const impl = objectOf(
    mode,
    withRequired(
      mode,
      {
        slug: slug(),
        abs_path: str(),
        title: str(),
        tier: mode === 'export' ? z.int().min(1) : intField(mode),
        depends_on: strList(),
        estimated_agents: intField(mode),
        estimated_waves: intField(mode),
        key_outputs: strList(),
        status: enumField(mode, programImplStatuses),
        priority_score: intField(mode),
        priority_reasoning: str(),
        serial_waves: listField(mode, mode === 'export' ? z.int() : z.preprocess((value) => (typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : value), z.int())),
      },
      ['slug', 'title', 'tier', 'status'],
    ),
  );

  const tier = objectOf(
    mode,
    withRequired(
      mode,
      {
        number: mode === 'export' ? z.int().min(1) : intField(mode),
        impls: strList(),
        description: str(),
        concurrency_cap: intField(mode),
      },
      ['number', 'impls'],
    ),
  );

  const completion = objectOf(
    mode,
    withRequired(
      mode,
      {
        tiers_complete: intField(mode),
        tiers_total: intField(mode),
        impls_complete: intField(mode),
        impls_total: intField(mode),
        total_agents: intField(mode),
        total_waves: intField(mode),
      },
      ['tiers_complete', 'tiers_total', 'impls_complete', 'impls_total', 'total_agents', 'total_waves'],
    ),
  );

  const preMortemRow = objectOf(
    mode,
    withRequired(mode, { scenario: str(), likelihood: risk(), impact: risk(), mitigation: str() }, ['scenario', 'likelihood', 'impact', 'mitigation']),
  );

  const qualityGate = buildImplSchemas(mode).qualityGate;

  const manifest = objectOf(
    mode,
    withRequired(
      mode,
      {
        title: str(),
        program_slug: slug(),
        state: enumField(mode, programStates),
        created: str(),
        updated: str(),
        /** Written by Go's mark-program-complete next to `state: COMPLETE`. */
        completion_date: str(),
        requirements: str(),
        program_contracts: listField(mode, contract),
        impls: listField(mode, impl),
        tiers: listField(mode, tier),
        tier_gates: listField(mode, qualityGate),
        completion: objectField(mode, completion),
        pre_mortem: listField(mode, preMortemRow),
      },
      ['title', 'program_slug', 'state', 'impls', 'tiers', 'completion'],
    ),
  );

  return { manifest, contract, consumer, impl, tier, completion, preMortemRow, qualityGate };
}

/** The tolerant (model) PROGRAM schemas. */
export const programModel = buildProgramSchemas('model');

/** A PROGRAM manifest as code uses it: every list present, scalars typed, unknown keys dropped. */
export type ProgramManifest = z.output<typeof programModel.manifest>;
export type ProgramContract = z.output<typeof programModel.contract>;
export type ProgramContractConsumer = z.output<typeof programModel.consumer>;
export type ProgramImpl = z.output<typeof programModel.impl>;
export type ProgramTier = z.output<typeof programModel.tier>;
export type ProgramCompletion = z.output<typeof programModel.completion>;
export type ProgramPreMortemRow = z.output<typeof programModel.preMortemRow>;
