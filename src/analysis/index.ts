// Code analysis: stubs (E20), symbols and type collisions (E41), the reference index, integration
// validation (E25) and wiring (E35).
export { formatStubTable, scanStubText, scanStubsOnBranches, type AgentStubHit, type ScanStubsOnBranchesOptions, type StubHit } from './stubs.js';
export {
  extractMembers,
  extractMembersFromSource,
  extractSymbolsFromSource,
  extractTopLevelSymbols,
  packageOf,
  type MemberSymbol,
  type SymbolKind,
  type TopLevelSymbol,
} from './symbols.js';
export { detectTypeCollisions, type CollisionReport, type DetectTypeCollisionsOptions, type TypeCollision } from './collisions.js';
export {
  buildReferenceIndex,
  defaultReferenceExtensions,
  skippedIndexDirectories,
  type BuildReferenceIndexOptions,
  type FilesReferencingOptions,
  type ReferenceIndex,
  type ReferenceIndexStats,
} from './reference-index.js';
export {
  nameWords,
  validateIntegration,
  type IntegrationCategory,
  type IntegrationGap,
  type IntegrationReport,
  type IntegrationSeverity,
  type ValidateIntegrationOptions,
} from './integration.js';
export { symbolWired, validateWiring, type ValidateWiringOptions, type WiringGap, type WiringReport } from './wiring.js';
export { blobSpec, readBlobs, type BlobTexts } from './read-blobs.js';
export { codeFamilyOf, isTestFile, languageOf, lexSource, type CodeFamily, type LexedSource, type SourceLanguage } from './source-lexer.js';
