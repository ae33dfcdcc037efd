/** Markdown IMPL documents: typed fenced blocks, the E16 linter and completion reports. */
export {
  findFencedBlocks,
  findMalformedTypedFences,
  findTypedBlocks,
  isMarkdownImplDoc,
  scanFencedBlocks,
  splitLines,
  type FencedBlock,
  type FencedBlockKind,
  type MalformedTypedFence,
  type TypedBlock,
} from './typed-blocks.js';
export {
  COMPLETION_REPORT_REQUIRED_FIELDS,
  E16A_MISSING_BLOCK,
  E16A_REQUIRED_BLOCKS,
  E16B_DEP_GRAPH,
  E16C_OUT_OF_BAND_DEP_GRAPH,
  E16_COMPLETION_REPORT_BLOCK,
  E16_FILE_OWNERSHIP_BLOCK,
  E16_MALFORMED_TYPED_FENCE,
  E16_UNCLOSED_BLOCK,
  E16_WAVE_STRUCTURE_BLOCK,
  V009_INVALID_AGENT_ID,
  lintImplDoc,
} from './lint-impl-doc.js';
export {
  E16_DUPLICATE_COMPLETION_REPORT,
  MAX_COMPLETION_BLOCK_CHARS,
  extractCompletionReports,
  type CompletionReportExtraction,
} from './completion-blocks.js';
