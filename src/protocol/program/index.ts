/**
 * The PROGRAM layer of the protocol core (program-manifest.txt, E28A, E30, E32): rules,
 * import-mode checks and the status report. Parsing lives in `../parse-program.ts`, the schema
 * in `../schema/program-schema.ts`.
 */
export { resolveFreezeAt, tierOfImpl, type FreezePoint } from './freeze-at.js';
export {
  completedTiers,
  frozenProgramContracts,
  isHeldForHuman,
  partitionImplsByStatus,
  reviewedOrLaterStates,
  validateProgramImport,
  type ProgramImplDoc,
  type TierPartition,
  type ValidateProgramImportOptions,
} from './import-mode.js';
export { formatProgramPath, programFinding, type ProgramFieldPath, type ProgramRule, type ProgramRuleContext } from './program-rule.js';
export { findDependencyCycles, normalizeRelativePath, programCodes, programRules, runProgramRules } from './program-rules.js';
export { checkProgramTransition, isProgramState, programTransitionCode, programTransitions, type ProgramTransitionCheck } from './program-state-machine.js';
export {
  formatProgramStatus,
  implStateToProgramStatus,
  programStatus,
  type ProgramContractStatus,
  type ProgramImplStatusEntry,
  type ProgramStatus,
  type ProgramTierStatus,
  type WaveProgress,
} from './status.js';
export {
  assignTiersByOverlap,
  buildProgramFromImpls,
  completionCounters,
  derivedProgramNames,
  overlapsOf,
  planProgramImport,
  programImplEntry,
  programStatusOfImpl,
  tiersFromEntries,
  type BuiltProgram,
  type CountableProgram,
  type ImportedImpl,
  type ProgramCompletionCounters,
  type ProgramImplEntry,
  type ProgramImportPlan,
  type ProgramSourceImpl,
  type ProgramTierEntry,
} from './tier-assignment.js';
export { validateProgram, type ValidateProgramOptions } from './validate-program.js';
