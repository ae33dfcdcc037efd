import { describe, expect, it } from 'vitest';
import { findFencedBlocks, findMalformedTypedFences, findTypedBlocks, isMarkdownImplDoc } from './typed-blocks.js';

const fence = '```';

describe('findTypedBlocks', () => {
  it('finds typed blocks with 1-based lines and their content', () => {
    const text = ['# IMPL: x', '', `${fence}yaml type=impl-dep-graph`, 'Wave 1:', '    [A] a.go', `${fence}  `, 'after'].join('\n');
    const blocks = findTypedBlocks(text);
    expect(blocks).toHaveLength(1);
    expect(blocks[0]).toMatchObject({
      kind: 'typed',
      type: 'impl-dep-graph',
      line: 3,
      contentStartLine: 4,
      content: 'Wave 1:\n    [A] a.go',
      closed: true,
      endLine: 6,
    });
  });

  it('accepts extra attributes after the type and CRLF line endings', () => {
    const text = `${fence}yaml type=impl-completion-report title="A"\r\nstatus: complete\r\n${fence}\r\n`;
    const [block] = findTypedBlocks(text);
    expect(block).toMatchObject({ type: 'impl-completion-report', content: 'status: complete', closed: true });
  });

  it('does not treat indented, non-yaml or prefix-only annotations as typed blocks', () => {
    const text = [
      `  ${fence}yaml type=impl-dep-graph`,
      `  ${fence}`,
      `${fence}json type=impl-dep-graph`,
      `${fence}`,
      `${fence}yaml type=impl-Dep`,
      `${fence}`,
    ].join('\n');
    expect(findTypedBlocks(text)).toEqual([]);
    expect(findMalformedTypedFences(text).map((fenceLine) => [fenceLine.line, fenceLine.reason])).toEqual([
      [1, 'indented'],
      [3, 'not-yaml'],
      [5, 'bad-name'],
    ]);
  });

  it('reports an unclosed block as running to the end of the text', () => {
    const text = `intro\n${fence}yaml type=impl-wave-structure\nWave 1: [A]\n`;
    const [block] = findTypedBlocks(text);
    expect(block).toMatchObject({ line: 2, closed: false, endLine: undefined, lines: ['Wave 1: [A]', ''] });
  });

  it('does not read a typed fence quoted inside a longer fence', () => {
    const text = ['````markdown', `${fence}yaml type=impl-dep-graph`, 'Wave 1:', `${fence}`, '````'].join('\n');
    expect(findTypedBlocks(text)).toEqual([]);
    const blocks = findFencedBlocks(text);
    expect(blocks).toHaveLength(1);
    expect(blocks[0]).toMatchObject({ kind: 'plain', language: 'markdown', line: 1, endLine: 5 });
  });

  it('returns plain fenced blocks too', () => {
    const text = [`${fence}`, 'x', `${fence}`, `${fence}text`, 'y', `${fence}`].join('\n');
    expect(findFencedBlocks(text).map((block) => [block.kind, block.language, block.line, block.content])).toEqual([
      ['plain', '', 1, 'x'],
      ['plain', 'text', 4, 'y'],
    ]);
  });
});

describe('isMarkdownImplDoc', () => {
  it('is true for markdown documents', () => {
    expect(isMarkdownImplDoc('# IMPL: cache\n\n**Verdict:** SUITABLE\n')).toBe(true);
    expect(isMarkdownImplDoc(`title: x\n${fence}yaml type=impl-dep-graph\n${fence}\n`)).toBe(true);
    expect(isMarkdownImplDoc('\uFEFF# IMPL\n\n## Wave 1\n\nSome prose.')).toBe(true);
    expect(isMarkdownImplDoc('# Title only')).toBe(true);
  });

  it('is false for YAML manifests, also with leading comments', () => {
    expect(isMarkdownImplDoc('title: x\nfeature_slug: y\n')).toBe(false);
    expect(isMarkdownImplDoc('# IMPL manifest for x\n# generated\ntitle: x\n')).toBe(false);
    expect(isMarkdownImplDoc('---\ntitle: x\n')).toBe(false);
    expect(isMarkdownImplDoc('')).toBe(false);
  });
});
