import { constants as fsConstants, createWriteStream, mkdirSync, openSync, type WriteStream } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** Limits of the output kept in a gate result. */
export interface OutputLimits {
  /** Lines kept from the start. Default 100. */
  headLines: number;
  /** Lines kept from the end. Default 200. */
  tailLines: number;
  /** Output up to this size (and head + tail lines) is kept whole. Default 64 KiB. */
  maxBytes: number;
}

export const defaultOutputLimits: OutputLimits = { headLines: 100, tailLines: 200, maxBytes: 64 * 1024 };

/** Output beyond this stays in memory only until it is spilled to the log file. */
const memoryCapBytes = 4 * 1024 * 1024;

/** What {@link OutputCollector.finish} returns. */
export interface CollectedOutput {
  output: string;
  truncated: boolean;
  /** Set when the output was truncated and the full log could be written. */
  fullOutputPath?: string;
  totalBytes: number;
}

/**
 * Collects a process's stdout and stderr interleaved (in arrival order) and keeps what a result
 * needs: the whole output when it is small, else the first `headLines` and last `tailLines` lines
 * (within `maxBytes`) with a marker between them. The full output then goes to `logPath`; memory
 * stays bounded (a huge output is streamed to the log file as it arrives).
 */
export class OutputCollector {
  private readonly limits: OutputLimits;
  private readonly logPath: string;
  private readonly head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  private memory: Buffer[] | undefined = [];
  private spill: WriteStream | undefined;
  private spillError: Error | undefined;
  private totalBytes = 0;
  private newlines = 0;
  private lastByte = -1;

  constructor(logPath: string, limits: Partial<OutputLimits> = {}) {
    this.logPath = logPath;
    this.limits = { ...defaultOutputLimits, ...limits };
  }

  /** Adds a chunk of output. */
  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.totalBytes += chunk.length;
    for (let index = chunk.indexOf(10); index !== -1; index = chunk.indexOf(10, index + 1)) this.newlines += 1;
    this.lastByte = chunk[chunk.length - 1]!;

    const headRoom = this.limits.maxBytes - this.headBytes;
    if (headRoom > 0) {
      const part = chunk.length <= headRoom ? chunk : chunk.subarray(0, headRoom);
      this.head.push(part);
      this.headBytes += part.length;
    }
    this.tail.push(chunk);
    this.tailBytes += chunk.length;
    while (this.tail.length > 1 && this.tailBytes - this.tail[0]!.length >= this.limits.maxBytes) {
      this.tailBytes -= this.tail.shift()!.length;
    }

    if (this.memory) {
      this.memory.push(chunk);
      if (this.totalBytes > memoryCapBytes) this.startSpill();
    } else if (this.spill) {
      this.spill.write(chunk);
    }
  }

  /** Lines seen so far (a last line without newline counts). */
  get lineCount(): number {
    return this.newlines + (this.totalBytes > 0 && this.lastByte !== 10 ? 1 : 0);
  }

  /** Ends collection: the kept text, and the full log written when the text was truncated. */
  async finish(): Promise<CollectedOutput> {
    const { headLines, tailLines, maxBytes } = this.limits;
    const truncated = this.totalBytes > maxBytes || this.lineCount > headLines + tailLines;
    if (!truncated) {
      return { output: Buffer.concat(this.memory ?? this.head).toString('utf8'), truncated: false, totalBytes: this.totalBytes };
    }

    const fullOutputPath = await this.writeFullLog();
    const headText = takeHeadLines(Buffer.concat(this.head), headLines, Math.floor(maxBytes / 4));
    const tailBuffer = Buffer.concat(this.tail);
    // The tail buffer may start in the middle of a line: drop that partial line.
    const tailStartsMidLine = this.totalBytes > tailBuffer.length;
    const tailText = takeTailLines(tailBuffer, tailLines, maxBytes - Buffer.byteLength(headText.text), tailStartsMidLine);
    const omittedLines = Math.max(0, this.lineCount - headText.lines - tailText.lines);
    const omittedBytes = Math.max(0, this.totalBytes - Buffer.byteLength(headText.text) - Buffer.byteLength(tailText.text));
    const where = fullOutputPath ? `full output: ${fullOutputPath}` : 'full output could not be saved';
    const separator = headText.text.endsWith('\n') || headText.text === '' ? '' : '\n';
    const marker = `${separator}... [${omittedLines} lines, ${omittedBytes} bytes omitted; ${where}] ...\n`;
    return {
      output: `${headText.text}${marker}${tailText.text}`,
      truncated: true,
      ...(fullOutputPath ? { fullOutputPath } : {}),
      totalBytes: this.totalBytes,
    };
  }

  private startSpill(): void {
    const buffered = this.memory ?? [];
    this.memory = undefined;
    try {
      this.spill = createLogStream(this.logPath);
      this.spill.on('error', (error) => {
        this.spillError = error;
      });
      for (const part of buffered) this.spill.write(part);
    } catch (error) {
      this.spillError = error instanceof Error ? error : new Error(String(error));
      this.spill = undefined;
    }
  }

  private async writeFullLog(): Promise<string | undefined> {
    try {
      if (this.memory) {
        await mkdir(path.dirname(this.logPath), { recursive: true });
        // A new file only (O_EXCL: never through a symlink or over a file someone planted there).
        await writeFile(this.logPath, Buffer.concat(this.memory), { flag: exclusiveWrite });
        return this.logPath;
      }
      const stream = this.spill;
      if (!stream) return undefined;
      await new Promise<void>((resolve) => stream.end(resolve));
      return this.spillError ? undefined : this.logPath;
    } catch {
      // Saving the full log is best effort: the truncated output is still returned.
      return undefined;
    }
  }
}

function createLogStream(logPath: string): WriteStream {
  // Synchronous mkdir keeps push() synchronous; this happens once, for outputs over 4 MiB.
  mkdirSync(path.dirname(logPath), { recursive: true });
  return createWriteStream(logPath, { fd: openSync(logPath, exclusiveWrite, 0o644) });
}

/**
 * Full logs hold the output of code polywave does not trust (a gate, a test run): created new,
 * never opened through a symlink or over an existing file (outside attack X3: a gate planted
 * symlinks under the log names it could predict and had polywave overwrite ~/.bashrc with its output).
 */
const exclusiveWrite = fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW;

function takeHeadLines(buffer: Buffer, maxLines: number, maxBytes: number): { text: string; lines: number } {
  let end = 0;
  let lines = 0;
  while (lines < maxLines) {
    const newline = buffer.indexOf(10, end);
    if (newline === -1 || newline + 1 > maxBytes) break;
    end = newline + 1;
    lines += 1;
  }
  // One enormous first line: keep its beginning rather than nothing.
  if (lines === 0 && buffer.length > 0) return { text: `${buffer.subarray(0, Math.min(buffer.length, maxBytes)).toString('utf8')}\n`, lines: 0 };
  return { text: buffer.subarray(0, end).toString('utf8'), lines };
}

function takeTailLines(buffer: Buffer, maxLines: number, maxBytes: number, startsMidLine: boolean): { text: string; lines: number } {
  let start = buffer.length;
  let lines = 0;
  // A final line without newline is a line too.
  let searchFrom = buffer.length > 0 && buffer[buffer.length - 1] === 10 ? buffer.length - 2 : buffer.length - 1;
  while (lines < maxLines && searchFrom >= 0) {
    const newline = buffer.lastIndexOf(10, searchFrom);
    const lineStart = newline + 1;
    if (newline === -1 && startsMidLine) break;
    if (buffer.length - lineStart > maxBytes) break;
    start = lineStart;
    lines += 1;
    if (newline === -1) break;
    searchFrom = newline - 1;
  }
  // One enormous last line: keep its end rather than nothing.
  if (lines === 0 && buffer.length > 0) return { text: buffer.subarray(Math.max(0, buffer.length - maxBytes)).toString('utf8'), lines: 0 };
  return { text: buffer.subarray(start).toString('utf8'), lines };
}
