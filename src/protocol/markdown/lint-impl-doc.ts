/**
 * E16 typed-block linter for markdown IMPL documents (execution-rules E16, E16A, E16B, E16C;
 * message-formats "Typed Metadata Blocks"). Pure: text in, findings out.
 *
 * Messages keep the Go `ValidateIMPLDoc` wording (`{block} block (line L): …`, where L is the
 * opening fence) so correction prompts read the same; a finding's `line` is the most precise
 * line known (the offending row or agent entry). Deliberate differences from the Go linter:
 * every `Wave N` section of a dep graph is checked (Go only looks at the first line of the
 * block), invalid agent IDs in dep-graph/wave-structure entries are reported (unreachable in
 * Go), table columns are counted as cells rather than pipes, and fences follow CommonMark.
 */
import { compareFindings, type Finding } from '../../errors/finding.js';
import { scanFencedBlocks, type FencedBlock, type TypedBlock } from './typed-blocks.js';

/** E16A: a required typed block is missing. */
export const E16A_MISSING_BLOCK = 'E16A_MISSING_BLOCK';
/** E16B: the `impl-dep-graph` block breaks the dep-graph grammar. */
export const E16B_DEP_GRAPH = 'E16B_DEP_GRAPH';
/** E16C: a plain fenced block looks like a dep graph (warning). */
export const E16C_OUT_OF_BAND_DEP_GRAPH = 'E16C_OUT_OF_BAND_DEP_GRAPH';
/** E16: the `impl-file-ownership` table is malformed. */
export const E16_FILE_OWNERSHIP_BLOCK = 'E16_FILE_OWNERSHIP_BLOCK';
/** E16: the `impl-wave-structure` diagram is malformed. */
export const E16_WAVE_STRUCTURE_BLOCK = 'E16_WAVE_STRUCTURE_BLOCK';
/** E16: an `impl-completion-report` block lacks a field or has a bad status. */
export const E16_COMPLETION_REPORT_BLOCK = 'E16_COMPLETION_REPORT_BLOCK';
/** E16: a typed block is never closed. */
export const E16_UNCLOSED_BLOCK = 'E16_UNCLOSED_BLOCK';
/** E16: a fence mentions `type=impl-` but is not a recognised typed block (warning). */
export const E16_MALFORMED_TYPED_FENCE = 'E16_MALFORMED_TYPED_FENCE';
/** An agent ID does not match `^[A-Z][2-9]?$` (Go registry code). */
export const V009_INVALID_AGENT_ID = 'V009_INVALID_AGENT_ID';

/** The typed blocks every IMPL doc that uses typed blocks must contain (E16A), sorted. */
export const E16A_REQUIRED_BLOCKS = ['impl-dep-graph', 'impl-file-ownership', 'impl-wave-structure'] as const;

/** Fields every `impl-completion-report` block must have (message-formats, Go linter). */
export const COMPLETION_REPORT_REQUIRED_FIELDS = [
  'status:',
  'worktree:',
  'branch:',
  'commit:',
  'files_changed:',
  'interface_deviations:',
  'verification:',
] as const;

const validAgentIdPattern = /^[A-Z][2-9]?$/;
const agentIdRule =
  'must match ^[A-Z][2-9]?$ (bare letter for generation 1, e.g., A, B, C; multi-gen like A2, B3 for generation 2+)';

/** Short bracketed tokens that could be meant as agent IDs (`[A]`, `[A1]`, `[a]`, `[AB]`). */
const bracketTokenPattern = /\[([A-Za-z0-9]{1,3})\]/g;
/** Integration agents are written in braces (`{E}`); only well-formed IDs are recognised. */
const braceTokenPattern = /\{([A-Z][2-9]?)\}/g;

function blockPrefix(block: FencedBlock): string {
  return `${block.type ?? 'fenced'} block (line ${block.line}): `;
}

function invalidAgentIdMessage(block: FencedBlock, shown: string): string {
  return `${blockPrefix(block)}invalid agent ID '${shown}' — ${agentIdRule}`;
}

/** What one block check returns: its findings and every agent ID it saw (valid or not). */
interface BlockCheck {
  findings: Finding[];
  agentIds: string[];
}

// ---------------------------------------------------------------------------------------------
// impl-file-ownership

/** Splits a markdown table row into trimmed cells (outer pipes removed, `\|` kept in a cell). */
function splitTableRow(row: string): string[] {
  let inner = row.trim();
  if (inner.startsWith('|')) inner = inner.slice(1);
  if (inner.endsWith('|') && !inner.endsWith('\\|')) inner = inner.slice(0, -1);
  return inner.split(/(?<!\\)\|/).map((cell) => cell.trim());
}

function isSeparatorRow(cells: string[]): boolean {
  return cells.length > 0 && cells.every((cell) => /^:?-+:?$/.test(cell));
}

/** E16: `impl-file-ownership` — header row, ≥1 data row, ≥4 columns per row, valid agent IDs. */
function checkFileOwnership(block: TypedBlock): BlockCheck {
  const findings: Finding[] = [];
  const agentIds: string[] = [];
  const prefix = blockPrefix(block);
  const rows = block.lines.map((text, index) => ({ text, line: block.contentStartLine + index }));
  const header = rows.find((row) => row.text.trim().startsWith('|') && splitTableRow(row.text)[0] === 'File');
  if (header === undefined) {
    findings.push({
      code: E16_FILE_OWNERSHIP_BLOCK,
      severity: 'error',
      line: block.line,
      message: `${prefix}missing header row — expected '| File | Agent | Wave | Depends On |'`,
    });
    return { findings, agentIds };
  }
  const headerCells = splitTableRow(header.text);
  const agentColumnIndex = headerCells.findIndex((cell) => cell.toLowerCase() === 'agent');
  const agentColumn = agentColumnIndex === -1 ? 1 : agentColumnIndex;

  let dataRows = 0;
  for (const row of rows) {
    if (row.text.trim() === '') continue;
    const cells = splitTableRow(row.text);
    if (row.text.trim().startsWith('|') && (cells[0] === 'File' || isSeparatorRow(cells))) continue;
    if (row.text.trim().startsWith('|')) dataRows += 1;
    if (cells.length < 4) {
      findings.push({
        code: E16_FILE_OWNERSHIP_BLOCK,
        severity: 'error',
        line: row.line,
        message: `${prefix}row has fewer than 4 columns: ${row.text}`,
      });
      continue;
    }
    const agent = cells[agentColumn] ?? '';
    // The scaffold pseudo-agent owns wave-0 scaffold files and is exempt (as in V009).
    if (agent === 'Scaffold') continue;
    if (agent !== '') agentIds.push(agent);
    if (!validAgentIdPattern.test(agent)) {
      findings.push({
        code: V009_INVALID_AGENT_ID,
        severity: 'error',
        line: row.line,
        message: invalidAgentIdMessage(block, agent),
      });
    }
  }
  if (dataRows === 0) {
    findings.push({
      code: E16_FILE_OWNERSHIP_BLOCK,
      severity: 'error',
      line: block.line,
      message: `${prefix}no data rows found — table must have at least one file entry`,
    });
  }
  return { findings, agentIds };
}

// ---------------------------------------------------------------------------------------------
// impl-dep-graph (E16B)

const depGraphWaveHeaderPattern = /^Wave [0-9]+/;
const depGraphEntryPattern = /^[ \t]*(?:\[([A-Za-z0-9]{1,3})\]|\{([A-Z][2-9]?)\})/;
const rootMarker = '✓ root';
const dependsMarker = 'depends on:';

interface DepGraphEntry {
  id: string;
  shown: string;
  line: number;
  body: string[];
}

interface DepGraphWave {
  header: string;
  line: number;
  entries: DepGraphEntry[];
}

/**
 * E16B: `impl-dep-graph` — at least one `Wave N` header; every `Wave N` section holds agent
 * entries; every entry has `✓ root` or `depends on:` (with valid agent references) before the
 * next entry or wave header.
 */
function checkDepGraph(block: TypedBlock): BlockCheck {
  const findings: Finding[] = [];
  const agentIds: string[] = [];
  const prefix = blockPrefix(block);
  const error = (line: number, message: string, code = E16B_DEP_GRAPH): void => {
    findings.push({ code, severity: 'error', line, message: `${prefix}${message}` });
  };

  const waves: DepGraphWave[] = [];
  const orphanEntries: DepGraphEntry[] = [];
  let currentEntry: DepGraphEntry | undefined;
  block.lines.forEach((text, index) => {
    const line = block.contentStartLine + index;
    if (depGraphWaveHeaderPattern.test(text)) {
      waves.push({ header: text.trim(), line, entries: [] });
      currentEntry = undefined;
      return;
    }
    const entry = depGraphEntryPattern.exec(text);
    if (entry !== null) {
      const id = entry[1] ?? entry[2]!;
      const shown = entry[1] === undefined ? `{${id}}` : `[${id}]`;
      currentEntry = { id, shown, line, body: [text] };
      const wave = waves.at(-1);
      if (wave === undefined) orphanEntries.push(currentEntry);
      else wave.entries.push(currentEntry);
      return;
    }
    currentEntry?.body.push(text);
  });

  if (waves.length === 0) {
    error(block.line, `missing 'Wave N (...):' header — each wave must start with 'Wave N'`);
    return { findings, agentIds };
  }
  const entries = [...orphanEntries, ...waves.flatMap((wave) => wave.entries)];
  if (entries.length === 0) {
    error(block.line, `no agent lines found — expected lines like '    [A] path/to/file'`);
    return { findings, agentIds };
  }

  for (const wave of waves) {
    if (wave.entries.length === 0) {
      error(wave.line, `'${wave.header}' has no agent entries — expected lines like '    [A] path/to/file'`);
    }
  }
  for (const entry of orphanEntries) {
    error(entry.line, `agent ${entry.shown} appears before any 'Wave N' header`);
  }

  for (const entry of entries) {
    agentIds.push(entry.id);
    if (!validAgentIdPattern.test(entry.id)) {
      findings.push({
        code: V009_INVALID_AGENT_ID,
        severity: 'error',
        line: entry.line,
        message: invalidAgentIdMessage(block, entry.shown),
      });
    }
    const hasRoot = entry.body.some((text) => text.includes(rootMarker));
    const dependsLines = entry.body
      .map((text, offset) => ({ text, line: entry.line + offset }))
      .filter((candidate) => candidate.text.includes(dependsMarker));
    if (!hasRoot && dependsLines.length === 0) {
      error(entry.line, `agent ${entry.shown} has neither '✓ root' nor 'depends on:' — one is required`);
      continue;
    }
    if (hasRoot && dependsLines.length > 0) {
      error(entry.line, `agent ${entry.shown} has both '✓ root' and 'depends on:' — use exactly one`);
    }
    for (const dependsLine of dependsLines) {
      const targets = dependsLine.text.slice(dependsLine.text.indexOf(dependsMarker) + dependsMarker.length);
      const references = [...targets.matchAll(/\[([^\]]*)\]/g)].map((match) => match[1]!.trim());
      if (references.length === 0) {
        error(
          dependsLine.line,
          `agent ${entry.shown} has 'depends on:' without agent references — expected e.g. 'depends on: [A] [B]'`,
        );
        continue;
      }
      for (const reference of references) {
        if (!validAgentIdPattern.test(reference)) {
          findings.push({
            code: V009_INVALID_AGENT_ID,
            severity: 'error',
            line: dependsLine.line,
            message: `${prefix}agent ${entry.shown} depends on invalid agent ID '[${reference}]' — ${agentIdRule}`,
          });
        } else if (reference === entry.id) {
          error(dependsLine.line, `agent ${entry.shown} depends on itself`);
        }
      }
    }
  }
  return { findings, agentIds };
}

// ---------------------------------------------------------------------------------------------
// impl-wave-structure

const waveStructureLinePattern = /^Wave [0-9]+:/;

/**
 * E16: `impl-wave-structure` — `Wave N:` lines, each followed (on its line or the lines up to
 * the next wave) by agent tokens `[A]` or integration tokens `{E}`; bracketed IDs must be valid.
 */
function checkWaveStructure(block: TypedBlock): BlockCheck {
  const findings: Finding[] = [];
  const agentIds: string[] = [];
  const prefix = blockPrefix(block);

  interface WaveSection {
    header: string;
    line: number;
    tokens: { id: string; shown: string; line: number }[];
  }
  const sections: WaveSection[] = [];
  block.lines.forEach((text, index) => {
    const line = block.contentStartLine + index;
    if (waveStructureLinePattern.test(text)) {
      sections.push({ header: /^Wave [0-9]+/.exec(text)![0], line, tokens: [] });
    }
    const section = sections.at(-1);
    if (section === undefined) return;
    for (const match of text.matchAll(bracketTokenPattern)) {
      section.tokens.push({ id: match[1]!, shown: `[${match[1]!}]`, line });
    }
    for (const match of text.matchAll(braceTokenPattern)) {
      section.tokens.push({ id: match[1]!, shown: `{${match[1]!}}`, line });
    }
  });

  if (sections.length === 0) {
    findings.push({
      code: E16_WAVE_STRUCTURE_BLOCK,
      severity: 'error',
      line: block.line,
      message: `${prefix}missing 'Wave N:' lines — each wave must appear as 'Wave N: [A] [B]'`,
    });
    return { findings, agentIds };
  }
  if (sections.every((section) => section.tokens.length === 0)) {
    findings.push({
      code: E16_WAVE_STRUCTURE_BLOCK,
      severity: 'error',
      line: block.line,
      message: `${prefix}no agent letters found — expected [A], [B], etc.`,
    });
    return { findings, agentIds };
  }
  for (const section of sections) {
    if (section.tokens.length === 0) {
      findings.push({
        code: E16_WAVE_STRUCTURE_BLOCK,
        severity: 'error',
        line: section.line,
        message: `${prefix}'${section.header}' has no agent letters — expected '${section.header}: [A] [B]'`,
      });
    }
    for (const token of section.tokens) {
      agentIds.push(token.id);
      if (!validAgentIdPattern.test(token.id)) {
        findings.push({
          code: V009_INVALID_AGENT_ID,
          severity: 'error',
          line: token.line,
          message: invalidAgentIdMessage(block, token.shown),
        });
      }
    }
  }
  return { findings, agentIds };
}

// ---------------------------------------------------------------------------------------------
// impl-completion-report

/** Strips a trailing YAML comment and surrounding quotes from a one-line scalar value. */
function plainScalarValue(raw: string): string {
  let value = raw.replace(/(^|[ \t])#.*$/, '').trim();
  if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.at(-1) === value[0]) {
    value = value.slice(1, -1);
  }
  return value;
}

/** E16: `impl-completion-report` — required fields present; status complete|partial|blocked. */
function checkCompletionReport(block: TypedBlock): BlockCheck {
  const findings: Finding[] = [];
  const prefix = blockPrefix(block);
  for (const field of COMPLETION_REPORT_REQUIRED_FIELDS) {
    if (!block.lines.some((text) => text.startsWith(field))) {
      findings.push({
        code: E16_COMPLETION_REPORT_BLOCK,
        severity: 'error',
        line: block.line,
        message: `${prefix}missing required field '${field}'`,
      });
    }
  }
  const statusIndex = block.lines.findIndex((text) => text.startsWith('status:'));
  if (statusIndex !== -1) {
    const raw = block.lines[statusIndex]!.slice('status:'.length).trim();
    // A template placeholder (`complete | partial | blocked`) is rejected with its raw text.
    const value = raw.includes('|') ? raw : plainScalarValue(raw);
    if (value !== 'complete' && value !== 'partial' && value !== 'blocked') {
      findings.push({
        code: E16_COMPLETION_REPORT_BLOCK,
        severity: 'error',
        line: block.contentStartLine + statusIndex,
        message: `${prefix}status must be 'complete', 'partial', or 'blocked' — got: '${value}'`,
      });
    }
  }
  return { findings, agentIds: [] };
}

// ---------------------------------------------------------------------------------------------
// E16C

const e16cAgentPattern = /\[[A-Z]\]/;

/** E16C: a plain fenced block with a `[X]` line and a `Wave` line looks like a dep graph. */
function checkOutOfBandDepGraph(block: FencedBlock): Finding[] {
  if (block.kind !== 'plain' || block.info.includes('type=')) return [];
  const hasAgent = block.lines.some((text) => e16cAgentPattern.test(text));
  const hasWave = block.lines.some((text) => text.includes('Wave'));
  if (!hasAgent || !hasWave) return [];
  return [
    {
      code: E16C_OUT_OF_BAND_DEP_GRAPH,
      severity: 'warning',
      line: block.line,
      message: `WARNING: possible dep-graph content found outside typed block at line ${block.line} — use \`yaml type=impl-dep-graph\``,
    },
  ];
}

// ---------------------------------------------------------------------------------------------

const blockChecks: Record<string, (block: TypedBlock) => BlockCheck> = {
  'impl-file-ownership': checkFileOwnership,
  'impl-dep-graph': checkDepGraph,
  'impl-wave-structure': checkWaveStructure,
  'impl-completion-report': checkCompletionReport,
};

/**
 * E16 typed-block validation of a markdown IMPL document: the per-block checks
 * (`impl-file-ownership`, `impl-dep-graph` grammar E16B, `impl-wave-structure`,
 * `impl-completion-report`), agent-ID format (`V009_INVALID_AGENT_ID`, plus one
 * `Run: polywave assign-agent-ids --count N` suggestion), required blocks (E16A, only when the
 * document has at least one typed block), out-of-band dep graphs (E16C, warning), unclosed typed
 * blocks and unrecognised typed fences. Other `impl-*` blocks count as present but are not
 * checked. Findings are sorted by line, then severity and code (findings without a line last).
 * Returns [] for a document without problems; never throws.
 */
export function lintImplDoc(text: string): Finding[] {
  const { blocks, malformed } = scanFencedBlocks(text);
  const findings: Finding[] = [];
  const seenTypes = new Set<string>();
  const agentIds = new Set<string>();
  let typedCount = 0;

  for (const block of blocks) {
    if (block.kind === 'typed') {
      const typed = block as TypedBlock;
      typedCount += 1;
      seenTypes.add(typed.type);
      if (!typed.closed) {
        findings.push({
          code: E16_UNCLOSED_BLOCK,
          severity: 'error',
          line: typed.line,
          message: `${blockPrefix(typed)}block is never closed — add a line containing only \`\`\` after its content`,
        });
      }
      const check = blockChecks[typed.type];
      if (check !== undefined) {
        const result = check(typed);
        findings.push(...result.findings);
        for (const id of result.agentIds) agentIds.add(id);
      }
    } else {
      if (!block.closed) {
        findings.push({
          code: E16_UNCLOSED_BLOCK,
          severity: 'warning',
          line: block.line,
          message: `fenced block (line ${block.line}) is never closed — everything after it is read as code, including any typed blocks`,
        });
      }
      findings.push(...checkOutOfBandDepGraph(block));
    }
  }

  for (const fence of malformed) {
    const reason =
      fence.reason === 'indented'
        ? 'typed blocks must start in column 0'
        : fence.reason === 'not-yaml'
          ? 'typed blocks must use the yaml language tag'
          : fence.reason === 'bad-name'
            ? 'the type must be impl- followed by lower-case words joined by -'
            : `it is inside the fenced block opened at line ${fence.enclosingLine} — close that block first`;
    findings.push({
      code: E16_MALFORMED_TYPED_FENCE,
      severity: 'warning',
      line: fence.line,
      message: `fence at line ${fence.line} is not read as a typed block (${reason}) — use \`\`\`yaml type=impl-<name> in column 0`,
    });
  }

  if (findings.some((finding) => finding.code === V009_INVALID_AGENT_ID) && agentIds.size > 0) {
    const command = `polywave assign-agent-ids --count ${agentIds.size}`;
    findings.push({ code: V009_INVALID_AGENT_ID, severity: 'error', message: `Run: ${command}`, suggestion: command });
  }

  // E16A: only documents that use typed blocks at all must have the three required ones.
  if (typedCount > 0) {
    for (const required of E16A_REQUIRED_BLOCKS) {
      if (!seenTypes.has(required)) {
        findings.push({ code: E16A_MISSING_BLOCK, severity: 'error', message: `missing required block: ${required}` });
      }
    }
  }

  return findings
    .map((finding, index) => ({ finding, index }))
    .sort((left, right) => compareFindings(left.finding, right.finding) || left.index - right.index)
    .map((entry) => entry.finding);
}
