/**
 * Fenced-block scanning for markdown IMPL documents (message-formats "Typed Metadata Blocks",
 * E16). Pure: text in, blocks out.
 *
 * Fences follow CommonMark for backtick fences that start in column 0: an opening line of three
 * or more backticks plus an optional info string (no backticks in it); the block ends at the
 * first following line that holds only backticks, at least as many as the opening fence
 * (trailing blanks ignored). A fence line inside another block is content, so a typed block
 * quoted inside a ```` ````markdown ```` example is not mistaken for a real one.
 */

/** Whether a fenced block carries a `type=impl-…` annotation recognised as a typed block. */
export type FencedBlockKind = 'typed' | 'plain';

/** One fenced code block of a markdown document. */
export interface FencedBlock {
  kind: FencedBlockKind;
  /** The typed-block name (`impl-dep-graph`, …) for typed blocks; undefined for plain blocks. */
  type: string | undefined;
  /** The first word of the info string (`yaml`, `text`, …), or '' when there is none. */
  language: string;
  /** The whole info string after the backticks, trimmed. */
  info: string;
  /** Number of backticks of the opening fence (3 or more). */
  fenceLength: number;
  /** 1-based line of the opening fence. */
  line: number;
  /** 1-based line of the first content line (the line after the opening fence). */
  contentStartLine: number;
  /** The content lines joined with `\n` (line endings normalised). */
  content: string;
  /** The content lines; `lines[i]` is document line `contentStartLine + i`. */
  lines: string[];
  /** False when the document ends before a closing fence; the content then runs to the end. */
  closed: boolean;
  /** 1-based line of the closing fence, when closed. */
  endLine: number | undefined;
}

/** A fenced block opened by ```` ```yaml type=impl-<name> ```` in column 0. */
export interface TypedBlock extends FencedBlock {
  kind: 'typed';
  type: string;
}

/** A line that looks like a typed-block fence but is not recognised as one. */
export interface MalformedTypedFence {
  /** 1-based line. */
  line: number;
  /** The offending line, trimmed. */
  text: string;
  /**
   * Why it is not a typed block: indented, another language than yaml, a malformed name, or
   * nested inside a plain fenced block that it would close (`enclosingLine` is that block).
   */
  reason: 'indented' | 'not-yaml' | 'bad-name' | 'nested';
  enclosingLine?: number;
}

const openingFencePattern = /^(`{3,})([^`]*)$/;
/** Typed block info string: `yaml type=impl-<name>` with optional further attributes. */
const typedInfoPattern = /^yaml[ \t]+type=(impl-[a-z0-9]+(?:-[a-z0-9]+)*)(?:[ \t].*)?$/;

/** Splits a text into lines, dropping a leading byte-order mark and normalising CRLF/CR. */
export function splitLines(text: string): string[] {
  const withoutBom = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  return withoutBom.split(/\r\n|\r|\n/);
}

function isClosingFence(line: string, fenceLength: number): boolean {
  const trimmed = line.trimEnd();
  if (trimmed.length < fenceLength) return false;
  for (let index = 0; index < trimmed.length; index += 1) {
    if (trimmed.charCodeAt(index) !== 0x60) return false;
  }
  return true;
}

interface ScanResult {
  blocks: FencedBlock[];
  malformed: MalformedTypedFence[];
}

function scanLines(lines: string[]): ScanResult {
  const blocks: FencedBlock[] = [];
  const malformed: MalformedTypedFence[] = [];
  let index = 0;
  while (index < lines.length) {
    const line = lines[index]!;
    const opening = openingFencePattern.exec(line);
    if (opening === null) {
      // An indented fence is not a fence here (typed blocks must start in column 0).
      const trimmed = line.trim();
      if (trimmed.startsWith('```') && trimmed.includes('type=impl-')) {
        malformed.push({ line: index + 1, text: trimmed, reason: 'indented' });
      }
      index += 1;
      continue;
    }
    const fenceLength = opening[1]!.length;
    const info = opening[2]!.trim();
    const typed = typedInfoPattern.exec(info);
    if (typed === null && info.includes('type=impl-')) {
      malformed.push({ line: index + 1, text: line.trim(), reason: /^yaml[ \t]/.test(info) ? 'bad-name' : 'not-yaml' });
    }
    const contentLines: string[] = [];
    let end = index + 1;
    let closed = false;
    while (end < lines.length) {
      if (isClosingFence(lines[end]!, fenceLength)) {
        closed = true;
        break;
      }
      contentLines.push(lines[end]!);
      end += 1;
    }
    if (typed === null) {
      // A typed opener inside a plain block whose fence it would close (a forgotten closing
      // fence, typically) silently hides the typed block: report it.
      contentLines.forEach((content, offset) => {
        const inner = openingFencePattern.exec(content);
        if (inner !== null && inner[1]!.length >= fenceLength && typedInfoPattern.test(inner[2]!.trim())) {
          malformed.push({ line: index + 2 + offset, text: content.trim(), reason: 'nested', enclosingLine: index + 1 });
        }
      });
    }
    const language = info.split(/[ \t]/, 1)[0] ?? '';
    blocks.push({
      kind: typed === null ? 'plain' : 'typed',
      type: typed === null ? undefined : typed[1]!,
      language,
      info,
      fenceLength,
      line: index + 1,
      contentStartLine: index + 2,
      content: contentLines.join('\n'),
      lines: contentLines,
      closed,
      endLine: closed ? end + 1 : undefined,
    });
    index = closed ? end + 1 : lines.length;
  }
  return { blocks, malformed };
}

/**
 * Every fenced block of a markdown text, typed and plain, in document order.
 * Never throws.
 */
export function findFencedBlocks(text: string): FencedBlock[] {
  return scanLines(splitLines(text)).blocks;
}

/**
 * The typed blocks (```` ```yaml type=impl-<name> ````, column 0, extra attributes allowed after
 * the type) of a markdown IMPL document, in document order. An unclosed block is returned with
 * `closed: false` and its content running to the end of the text. Never throws.
 */
export function findTypedBlocks(text: string): TypedBlock[] {
  return findFencedBlocks(text).filter((block): block is TypedBlock => block.kind === 'typed');
}

/**
 * Fence-like lines that mention `type=impl-` but are not recognised as typed blocks (indented,
 * another language than `yaml`, or a malformed name), so a linter can say why a block "is
 * missing". Lines inside other fenced blocks are not reported.
 */
export function findMalformedTypedFences(text: string): MalformedTypedFence[] {
  return scanLines(splitLines(text)).malformed;
}

/** Scans once and returns both the blocks and the malformed typed fences. */
export function scanFencedBlocks(text: string): { blocks: FencedBlock[]; malformed: MalformedTypedFence[] } {
  return scanLines(splitLines(text));
}

const yamlTopLevelKeyPattern = /^(?:"[^"]*"|'[^']*'|[A-Za-z_][A-Za-z0-9_.-]*)[ \t]*:(?:[ \t]|$)/;
const markdownHeadingPattern = /^#{1,6}[ \t]+\S/;

/**
 * True when the text is a markdown IMPL document rather than a YAML manifest: it contains a
 * typed block, a column-0 code fence or a table row, or it starts with a markdown heading
 * (`# Title`) that is not merely a YAML comment above a mapping. Never throws.
 */
export function isMarkdownImplDoc(text: string): boolean {
  const lines = splitLines(text);
  if (lines.some((line) => line.startsWith('```') || line.startsWith('|'))) return true;
  const first = lines.find((line) => line.trim() !== '');
  if (first === undefined) return false;
  if (first.startsWith('---') || first.startsWith('%YAML')) return false;
  if (first.trimStart().startsWith('#')) {
    // `# Title` is also a YAML comment: decide on the first line that is not one.
    const firstNonComment = lines.find((line) => line.trim() !== '' && !line.trimStart().startsWith('#'));
    if (firstNonComment === undefined) return markdownHeadingPattern.test(first);
    return !looksLikeYamlStart(firstNonComment);
  }
  return !looksLikeYamlStart(first);
}

function looksLikeYamlStart(line: string): boolean {
  return (
    yamlTopLevelKeyPattern.test(line) ||
    line.startsWith('- ') ||
    line === '-' ||
    line.startsWith('---') ||
    line.startsWith('{') ||
    line.startsWith('[')
  );
}
