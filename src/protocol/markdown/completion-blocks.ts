/**
 * Completion reports written into a markdown IMPL document as ```` ```yaml
 * type=impl-completion-report ```` blocks (message-formats "Completion Report Format", E14).
 * Pure: text in, reports and findings out; never throws.
 */
import { isMap, isScalar, parseDocument } from 'yaml';
import { codes } from '../../errors/codes.js';
import type { Finding } from '../../errors/finding.js';
import { E16_COMPLETION_REPORT_BLOCK, E16_UNCLOSED_BLOCK, V009_INVALID_AGENT_ID } from './lint-impl-doc.js';
import { scanFencedBlocks, splitLines, type FencedBlock } from './typed-blocks.js';

/** A later completion report for the same agent replaced an earlier one (warning). */
export const E16_DUPLICATE_COMPLETION_REPORT = 'E16_DUPLICATE_COMPLETION_REPORT';

/** Largest completion-report block (in characters) that is parsed; larger ones are reported. */
export const MAX_COMPLETION_BLOCK_CHARS = 256 * 1024;

/** Aliases allowed when materialising a report (guards against alias bombs). */
const MAX_ALIAS_COUNT = 100;
/** Deepest flow-collection nesting parsed (deeper input would exhaust the parser's stack). */
const MAX_FLOW_DEPTH = 64;
/** Syntax findings kept per block; the rest are summarised in one more finding. */
const MAX_FINDINGS_PER_BLOCK = 20;

/** Deepest `[`/`{` nesting of a text, counted roughly (quotes are not honoured: an upper bound). */
function flowDepth(content: string): number {
  let depth = 0;
  let deepest = 0;
  for (let index = 0; index < content.length; index += 1) {
    const code = content.charCodeAt(index);
    if (code === 0x5b || code === 0x7b) {
      depth += 1;
      if (depth > deepest) deepest = depth;
    } else if ((code === 0x5d || code === 0x7d) && depth > 0) {
      depth -= 1;
    }
  }
  return deepest;
}

/** Reports by agent ID plus every problem met while reading them. */
export interface CompletionReportExtraction {
  /** Plain data of each report as written, keyed by agent ID. */
  reports: Record<string, Record<string, unknown>>;
  /** Syntax errors, blocks without an agent, invalid IDs, duplicates; lines are document lines. */
  findings: Finding[];
}

const validAgentIdPattern = /^[A-Z][2-9]?$/;
/** `### Agent {ID} - Completion Report` (any heading level; -, – or — as the separator). */
const completionHeadingPattern = /^#{1,6}[ \t]+Agent[ \t]+([^\s\-–—:]+)[ \t]*[-–—:][ \t]*Completion Report\b/i;

/**
 * Keys whose values are strings by the protocol even when they look like numbers or booleans
 * in YAML (`commit: 1234567` is a short SHA, not an integer): their source text is kept.
 */
const stringFields = new Set(['status', 'failure_type', 'repo', 'worktree', 'branch', 'commit', 'verification', 'notes', 'agent', 'agent_id']);

interface ParsedReport {
  report: Record<string, unknown> | undefined;
  findings: Finding[];
}

function blockPrefix(block: FencedBlock): string {
  return `impl-completion-report block (line ${block.line}): `;
}

/** Parses one block's YAML; syntax errors become findings with document line numbers. */
function parseReportBlock(block: FencedBlock): ParsedReport {
  const prefix = blockPrefix(block);
  if (block.content.length > MAX_COMPLETION_BLOCK_CHARS) {
    return {
      report: undefined,
      findings: [
        {
          code: codes.fileTooLarge,
          severity: 'error',
          line: block.line,
          message: `${prefix}block is ${block.content.length} characters, more than the ${MAX_COMPLETION_BLOCK_CHARS} allowed`,
        },
      ],
    };
  }
  if (flowDepth(block.content) > MAX_FLOW_DEPTH) {
    return {
      report: undefined,
      findings: [
        {
          code: codes.nestingTooDeep,
          severity: 'error',
          line: block.line,
          message: `${prefix}brackets are nested more than ${MAX_FLOW_DEPTH} levels deep`,
        },
      ],
    };
  }
  try {
    const document = parseDocument(block.content, { uniqueKeys: true, prettyErrors: true });
    const findings: Finding[] = [];
    const problems = [
      ...document.errors.map((problem) => ({ problem, severity: 'error' as const })),
      ...document.warnings.map((problem) => ({ problem, severity: 'warning' as const })),
    ];
    for (const { problem, severity } of problems) {
      const position = problem.linePos?.[0];
      const line = position === undefined ? block.contentStartLine : block.contentStartLine + position.line - 1;
      const summary = (problem.message.split('\n', 1)[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
      findings.push({
        code: problem.code === 'DUPLICATE_KEY' ? codes.duplicateKey : codes.parseError,
        severity,
        line,
        ...(position === undefined ? {} : { column: position.col }),
        message: `${prefix}invalid YAML at line ${line}${position === undefined ? '' : `, column ${position.col}`}: ${summary}`,
      });
    }
    if (findings.length > MAX_FINDINGS_PER_BLOCK) {
      const dropped = findings.length - MAX_FINDINGS_PER_BLOCK;
      findings.length = MAX_FINDINGS_PER_BLOCK;
      findings.push({
        code: codes.parseError,
        severity: 'error',
        line: block.line,
        message: `${prefix}${dropped} more YAML problems not shown`,
      });
    }
    if (document.errors.length > 0) return { report: undefined, findings };

    const data: unknown = document.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
    if (data === null || typeof data !== 'object' || Array.isArray(data) || !isMap(document.contents)) {
      const got = data === null || data === undefined ? 'nothing' : Array.isArray(data) ? 'a sequence' : `a ${typeof data}`;
      findings.push({
        code: E16_COMPLETION_REPORT_BLOCK,
        severity: 'error',
        line: block.line,
        message: `${prefix}a completion report must be a YAML mapping of fields, got ${got}`,
      });
      return { report: undefined, findings };
    }
    const report = data as Record<string, unknown>;
    for (const pair of document.contents.items) {
      if (!isScalar(pair.key) || !isScalar(pair.value)) continue;
      const key = pair.key.value;
      const value = pair.value.value;
      if (typeof key !== 'string' || !stringFields.has(key)) continue;
      if (value === null || typeof value === 'string') continue;
      report[key] = pair.value.source ?? String(value);
    }
    return { report, findings };
  } catch (error) {
    // Alias bombs, nesting deep enough to exhaust the stack, and anything else unexpected.
    const reason = error instanceof Error ? error.message : String(error);
    return {
      report: undefined,
      findings: [{ code: codes.aliasBomb, severity: 'error', line: block.line, message: `${prefix}cannot read block: ${reason}` }],
    };
  }
}

function reportedAgent(report: Record<string, unknown>): string | undefined {
  for (const key of ['agent', 'agent_id']) {
    const value = report[key];
    if (typeof value === 'string' && value.trim() !== '') return value.trim();
  }
  return undefined;
}

/**
 * Reads every `impl-completion-report` typed block of a markdown IMPL document. A block belongs
 * to the agent of the nearest preceding `### Agent {ID} - Completion Report` heading (headings
 * inside code blocks do not count); without one, the block's own `agent:` / `agent_id:` key is
 * used. When both exist and disagree, the heading wins and a warning is reported. Malformed
 * YAML, oversized or unclosed blocks, non-mapping reports, missing or invalid agent IDs become
 * findings and the block is skipped; a second report for the same agent replaces the first with
 * a warning. Never throws.
 */
export function extractCompletionReports(text: string): CompletionReportExtraction {
  const lines = splitLines(text);
  const { blocks } = scanFencedBlocks(text);
  const reports: Record<string, Record<string, unknown>> = {};
  const reportLines = new Map<string, number>();
  const findings: Finding[] = [];

  // Headings outside fenced blocks, in document order.
  const headings: { line: number; agent: string }[] = [];
  let blockIndex = 0;
  for (let index = 0; index < lines.length; index += 1) {
    const line = index + 1;
    const block = blocks[blockIndex];
    if (block !== undefined && line === block.line) {
      // Skip the block body and its closing fence.
      index = (block.endLine ?? lines.length) - 1;
      blockIndex += 1;
      continue;
    }
    const heading = completionHeadingPattern.exec(lines[index]!);
    if (heading !== null) headings.push({ line, agent: heading[1]! });
  }

  let headingIndex = -1;
  for (const block of blocks) {
    if (block.kind !== 'typed' || block.type !== 'impl-completion-report') continue;
    while (headingIndex + 1 < headings.length && headings[headingIndex + 1]!.line < block.line) headingIndex += 1;
    const heading = headingIndex >= 0 ? headings[headingIndex] : undefined;
    const prefix = blockPrefix(block);

    if (!block.closed) {
      findings.push({
        code: E16_UNCLOSED_BLOCK,
        severity: 'error',
        line: block.line,
        message: `${prefix}block is never closed — add a line containing only \`\`\` after its content`,
      });
      continue;
    }
    const parsed = parseReportBlock(block);
    findings.push(...parsed.findings);
    if (parsed.report === undefined) continue;

    const fromKey = reportedAgent(parsed.report);
    const agent = heading?.agent ?? fromKey;
    if (agent === undefined) {
      findings.push({
        code: E16_COMPLETION_REPORT_BLOCK,
        severity: 'error',
        line: block.line,
        message: `${prefix}cannot tell which agent wrote this report — put it under a '### Agent {ID} - Completion Report' heading`,
      });
      continue;
    }
    if (heading !== undefined && fromKey !== undefined && fromKey !== heading.agent) {
      findings.push({
        code: E16_COMPLETION_REPORT_BLOCK,
        severity: 'warning',
        line: block.line,
        message: `${prefix}report says agent '${fromKey}' but its heading (line ${heading.line}) names agent ${heading.agent}; using ${heading.agent}`,
      });
    }
    if (!validAgentIdPattern.test(agent)) {
      findings.push({
        code: V009_INVALID_AGENT_ID,
        severity: 'error',
        line: heading?.line ?? block.line,
        message: `${prefix}invalid agent ID '${agent}' — must match ^[A-Z][2-9]?$`,
      });
      continue;
    }
    const earlier = reportLines.get(agent);
    if (earlier !== undefined) {
      findings.push({
        code: E16_DUPLICATE_COMPLETION_REPORT,
        severity: 'warning',
        line: block.line,
        message: `${prefix}second completion report for agent ${agent}; it replaces the one at line ${earlier}`,
      });
    }
    reports[agent] = parsed.report;
    reportLines.set(agent, block.line);
  }
  return { reports, findings };
}
