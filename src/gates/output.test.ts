import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeTempDir } from '../../test/support/temp.js';
import { OutputCollector } from './output.js';

function collect(chunks: Array<string | Buffer>, limits = {}): { collector: OutputCollector; logPath: string } {
  const logPath = path.join(makeTempDir('polywave-output-'), 'nested', 'out.log');
  const collector = new OutputCollector(logPath, limits);
  for (const chunk of chunks) collector.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  return { collector, logPath };
}

describe('OutputCollector', () => {
  it('keeps small output whole and writes no log', async () => {
    const { collector, logPath } = collect(['a\n', 'b', '\nc']);
    expect(await collector.finish()).toEqual({ output: 'a\nb\nc', truncated: false, totalBytes: 5 });
    expect(existsSync(logPath)).toBe(false);
  });

  it('keeps the first and last lines of a long output and saves the whole of it', async () => {
    const lines = Array.from({ length: 1000 }, (_, index) => `line ${index + 1}\n`);
    // Arbitrary chunk boundaries, not aligned with lines.
    const text = lines.join('');
    const chunks: string[] = [];
    for (let offset = 0; offset < text.length; offset += 37) chunks.push(text.slice(offset, offset + 37));
    const { collector, logPath } = collect(chunks, { headLines: 3, tailLines: 2 });
    const result = await collector.finish();
    expect(result.truncated).toBe(true);
    expect(result.fullOutputPath).toBe(logPath);
    expect(result.output).toBe(`line 1\nline 2\nline 3\n... [995 lines, ${text.length - 'line 1\nline 2\nline 3\n'.length - 'line 999\nline 1000\n'.length} bytes omitted; full output: ${logPath}] ...\nline 999\nline 1000\n`);
    expect(readFileSync(logPath, 'utf8')).toBe(text);
  });

  it('truncates by bytes too (few but huge lines), keeping the size bounded', async () => {
    const line = `${'x'.repeat(10_000)}\n`;
    const { collector, logPath } = collect(Array.from({ length: 50 }, () => line), { maxBytes: 64 * 1024 });
    const result = await collector.finish();
    expect(result.truncated).toBe(true);
    expect(Buffer.byteLength(result.output)).toBeLessThan(64 * 1024 + 500);
    expect(readFileSync(logPath, 'utf8')).toBe(line.repeat(50));
  });

  it('one enormous line without newline keeps its beginning and end', async () => {
    const text = `BEGIN${'y'.repeat(200_000)}END`;
    const { collector } = collect([text]);
    const result = await collector.finish();
    expect(result.truncated).toBe(true);
    expect(result.output.startsWith('BEGIN')).toBe(true);
    expect(result.output.endsWith('END')).toBe(true);
  });

  it('streams outputs beyond the memory cap to the log file', async () => {
    const chunk = `${'z'.repeat(1023)}\n`;
    const chunks = Array.from({ length: 6 * 1024 }, () => chunk); // 6 MiB
    const { collector, logPath } = collect(chunks);
    const result = await collector.finish();
    expect(result.truncated).toBe(true);
    expect(result.totalBytes).toBe(6 * 1024 * 1024);
    expect(readFileSync(logPath).length).toBe(6 * 1024 * 1024);
    expect(result.output.split('\n').length).toBeLessThan(310);
  });
});
