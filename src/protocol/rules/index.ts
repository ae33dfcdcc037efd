import type { ImplRule } from './rule.js';
import { agentFilesOwned, disjointOwnership, integrationChecklist, modifiedFilesExist, validAction } from './ownership-rules.js';
import { agentIdFormat, dependenciesInPriorWaves, noDependencyCycles, uniqueAgentIds, waveNumbering } from './wave-rules.js';
import { mergeStateValue, stateMatchesMergeState, stateValue } from './state-rules.js';
import { commitBeforeReport, completionStatus, failureTypeValue, verificationFormat, worktreeNames } from './report-rules.js';
import { fixGatesRunFirst, gateFieldValues, gateTargetsNewFile } from './gate-rules.js';
import { consistentRepoTags, scopedGatesInMultiRepo } from './repo-rules.js';
import {
  crossFieldConsistency,
  enumFieldValues,
  knownIssueTitles,
  preMortemRisk,
  reactionEntries,
  relativePaths,
  requiredNestedFields,
  requiredTopLevelFields,
} from './schema-rules.js';
import { agentLocBudget, agentScopeSize, nonTrivialScope } from './complexity-rules.js';
import { agentOwnsClaudeSettings, agentOwnsGitattributes, agentOwnsProgramManifest, agentOwnsProjectConfig } from './config-ownership-rule.js';
import { contextSourceRecorded, injectionMethodRecorded } from './observability-rules.js';
import { conflictPatternClassification } from './conflict-pattern-rules.js';

export type { ImplRule, ImplRuleContext } from './rule.js';

/**
 * Every IMPL manifest rule, in the fixed order `validateImpl` runs them (the Go `Validate`
 * order, with our additional rules next to their relatives and the repository-backed checks
 * — file existence, LOC budget — last). All rules run; each returns all of its findings.
 */
export const implRules: readonly ImplRule[] = [
  disjointOwnership,
  conflictPatternClassification,
  dependenciesInPriorWaves,
  waveNumbering,
  requiredTopLevelFields,
  agentFilesOwned,
  noDependencyCycles,
  commitBeforeReport,
  mergeStateValue,
  stateValue,
  stateMatchesMergeState,
  agentIdFormat,
  uniqueAgentIds,
  gateFieldValues,
  gateTargetsNewFile,
  fixGatesRunFirst,
  worktreeNames,
  verificationFormat,
  completionStatus,
  failureTypeValue,
  preMortemRisk,
  consistentRepoTags,
  scopedGatesInMultiRepo,
  requiredNestedFields,
  enumFieldValues,
  relativePaths,
  crossFieldConsistency,
  reactionEntries,
  validAction,
  integrationChecklist,
  knownIssueTitles,
  injectionMethodRecorded,
  contextSourceRecorded,
  nonTrivialScope,
  agentScopeSize,
  modifiedFilesExist,
  agentLocBudget,
  agentOwnsProjectConfig,
  agentOwnsClaudeSettings,
  agentOwnsGitattributes,
  agentOwnsProgramManifest,
];

export {
  agentFilesOwned,
  agentOwnsClaudeSettings,
  agentOwnsGitattributes,
  agentOwnsProgramManifest,
  agentOwnsProjectConfig,
  agentIdFormat,
  agentLocBudget,
  agentScopeSize,
  commitBeforeReport,
  completionStatus,
  consistentRepoTags,
  contextSourceRecorded,
  crossFieldConsistency,
  dependenciesInPriorWaves,
  disjointOwnership,
  enumFieldValues,
  failureTypeValue,
  fixGatesRunFirst,
  gateFieldValues,
  gateTargetsNewFile,
  injectionMethodRecorded,
  integrationChecklist,
  knownIssueTitles,
  mergeStateValue,
  modifiedFilesExist,
  noDependencyCycles,
  nonTrivialScope,
  preMortemRisk,
  reactionEntries,
  relativePaths,
  requiredNestedFields,
  requiredTopLevelFields,
  scopedGatesInMultiRepo,
  stateMatchesMergeState,
  stateValue,
  uniqueAgentIds,
  validAction,
  verificationFormat,
  waveNumbering,
  worktreeNames,
};
