/**
 * read_file, write_file, edit_file, list_dir: every path goes through the jail first (the early,
 * well-worded refusal). With a tool executor in the context (an agent run with the OS sandbox) the
 * reads and writes themselves happen inside the sandbox, where the operating system bounds them:
 * a symlink or directory swapped between the jail's check and the open cannot send a write (or a
 * read) outside — the write fails (read-only file system) and is recorded as a denial. Without
 * one they happen in-process, the last path component opened with O_NOFOLLOW.
 */
import { constants } from 'node:fs';
import { lstat, mkdir, open, readdir, readlink, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { ToolExecutorError, type EntryKind, type ToolExecutor } from '../sandbox/tool-executor.js';
import { denialResult, defineTool, errorMessage, errorResult, looksBinary, okResult, plural } from './shared.js';
import type { AgentTool, AgentToolName, ToolResult } from './types.js';

/** Files larger than this are read only up to it. */
const maxReadBytes = 16 * 1024 * 1024;
const maxListEntries = 2000;

/** What a path is (the jail already resolved it; the executor does not follow a final symbolic link). */
async function resolvedKindOf(absolute: string, executor: ToolExecutor | undefined): Promise<EntryKind> {
  if (executor) return (await executor.stat(absolute)).kind;
  const info = await stat(absolute);
  return info.isFile() ? 'file' : info.isDirectory() ? 'directory' : 'other';
}

async function readHead(absolute: string, limit: number, executor?: ToolExecutor): Promise<{ buffer: Buffer; size: number }> {
  if (executor) {
    const { data, size, kind } = await executor.read(absolute, limit);
    if (kind !== 'file') throw new ToolExecutorError('EISDIR', `${absolute} is not a regular file`);
    return { buffer: data, size };
  }
  const handle = await open(absolute, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const { size } = await handle.stat();
    const length = Math.min(size, limit);
    const buffer = Buffer.alloc(length);
    let offset = 0;
    while (offset < length) {
      const { bytesRead } = await handle.read(buffer, offset, length - offset, offset);
      if (bytesRead === 0) break;
      offset += bytesRead;
    }
    return { buffer: buffer.subarray(0, offset), size };
  } finally {
    await handle.close();
  }
}

/**
 * A failure of the sandboxed executor as a tool result: the sandbox's refusals (read-only file
 * system, a path component swapped after the check, a symbolic link in the last component) are
 * denials; anything else is an error.
 */
function executorFailure(tool: AgentToolName, verb: string, requested: string, error: unknown): ToolResult {
  const code = error instanceof ToolExecutorError || (error as NodeJS.ErrnoException)?.code ? String((error as { code?: unknown }).code) : '';
  if (code === 'EROFS' || code === 'EACCES' || code === 'EPERM') {
    return denialResult(tool, { code: 'SANDBOX_WRITE_DENIED', reason: `the OS sandbox refused to ${verb} ${requested}: it resolves outside the agent's writable area (${code})` }, requested);
  }
  if (code === 'EXDEV') return denialResult(tool, { code: 'SANDBOX_PATH_SWAPPED', reason: `${requested} changed between the check and the ${verb} (a path component was swapped); nothing was written` }, requested);
  if (code === 'ELOOP') return denialResult(tool, { code: 'JAIL_OUTSIDE_ROOT', reason: `${requested} is a symbolic link; file tools do not follow a link in the last path component` }, requested);
  return errorResult(`cannot ${verb} ${requested}: ${errorMessage(error)}`);
}

/** Writes `content` inside the sandbox (executor) or in-process without following a final symbolic link. */
async function writeContent(absolute: string, content: string, executor: ToolExecutor | undefined): Promise<{ existed: boolean }> {
  if (executor) return executor.write(absolute, content);
  let existed = true;
  try {
    await lstat(absolute);
  } catch {
    existed = false;
  }
  await mkdir(path.dirname(absolute), { recursive: true });
  await writeNoFollow(absolute, content);
  return { existed };
}

/** Writes without following a symbolic link in the last component (the jail resolved the path). */
async function writeNoFollow(absolute: string, content: string): Promise<void> {
  const handle = await open(absolute, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, 0o666);
  try {
    await handle.writeFile(content, 'utf8');
  } finally {
    await handle.close();
  }
}

const readFileInput = z.object({
  path: z.string().min(1).describe('File to read: relative to the worktree root, or absolute inside it.'),
  offset: z.number().int().min(1).optional().describe('1-based line number to start at (default 1).'),
  limit: z.number().int().min(1).optional().describe('Maximum number of lines to return (default: all that fit).'),
  line_numbers: z.boolean().optional().describe('Prefix each line with its number and a tab (default false).'),
});

export const readFileTool: AgentTool = defineTool<z.infer<typeof readFileInput>>({
  name: 'read_file',
  description: 'Read a text file of the worktree. Use offset/limit (1-based lines) for large files; output is limited in size and says how to continue.',
  inputSchema: readFileInput,
  async execute(input, context) {
    const decision = await context.jail.checkRead(input.path);
    if (!decision.allowed) return denialResult('read_file', decision, input.path);
    const executor = context.toolExecutor;
    try {
      const kind = await resolvedKindOf(decision.absolute, executor);
      if (kind === 'directory') return errorResult(`${input.path} is a directory; use list_dir or glob.`);
      if (kind !== 'file') return errorResult(`${input.path} is not a regular file.`);
      const { buffer, size } = await readHead(decision.absolute, maxReadBytes, executor);
      if (looksBinary(buffer)) return errorResult(`${input.path} is a binary file (${size} bytes); read_file shows text only.`);
      if (size === 0) return okResult(`(${input.path} is empty)`);
      const text = buffer.toString('utf8');
      const lines = text.split('\n');
      if (lines[lines.length - 1] === '') lines.pop();
      const total = lines.length;
      const first = input.offset ?? 1;
      if (first > total) return okResult(`(${input.path} has ${plural(total, 'line')}; offset ${first} is past the end)`);
      const last = Math.min(total, input.limit !== undefined ? first + input.limit - 1 : total);
      const budget = Math.max(256, context.maxToolOutputBytes - 300);
      const out: string[] = [];
      let bytes = 0;
      let shownLast = first - 1;
      for (let number = first; number <= last; number += 1) {
        const line = input.line_numbers ? `${number}\t${lines[number - 1]}` : lines[number - 1]!;
        const lineBytes = Buffer.byteLength(line) + 1;
        if (bytes + lineBytes > budget && out.length > 0) break;
        out.push(line);
        bytes += lineBytes;
        shownLast = number;
      }
      let output = out.join('\n');
      const notes: string[] = [];
      if (shownLast < last || (input.limit === undefined && shownLast < total)) {
        notes.push(`[read_file: showing lines ${first}-${shownLast} of ${total}; continue with offset=${shownLast + 1}]`);
      }
      if (size > buffer.length) notes.push(`[read_file: the file has ${size} bytes; only the first ${buffer.length} were read]`);
      if (notes.length > 0) output += `\n${notes.join('\n')}`;
      return okResult(output);
    } catch (error) {
      if (executor) return executorFailure('read_file', 'read', input.path, error);
      return errorResult(`cannot read ${input.path}: ${errorMessage(error)}`);
    }
  },
});

const writeFileInput = z.object({
  path: z.string().min(1).describe('File to create or overwrite (must be one of your owned files).'),
  content: z.string().describe('The complete new content of the file.'),
});

export const writeFileTool: AgentTool = defineTool<z.infer<typeof writeFileInput>>({
  name: 'write_file',
  description: 'Create or overwrite a file you own with the given content (parent directories are created).',
  inputSchema: writeFileInput,
  async execute(input, context) {
    const decision = await context.jail.checkWrite(input.path);
    if (!decision.allowed) return denialResult('write_file', decision, input.path);
    try {
      const { existed } = await writeContent(decision.absolute, input.content, context.toolExecutor);
      return okResult(`Wrote ${Buffer.byteLength(input.content)} bytes to ${decision.relative} (${existed ? 'overwritten' : 'created'}).`);
    } catch (error) {
      if (context.toolExecutor) return executorFailure('write_file', 'write', input.path, error);
      return errorResult(`cannot write ${input.path}: ${errorMessage(error)}`);
    }
  },
});

const editFileInput = z.object({
  path: z.string().min(1).describe('File to edit (must be one of your owned files).'),
  old_string: z.string().min(1).describe('Exact text to replace; must occur exactly once unless replace_all is true.'),
  new_string: z.string().describe('Replacement text.'),
  replace_all: z.boolean().optional().describe('Replace every occurrence (default false).'),
});

function countOccurrences(text: string, search: string): number {
  let count = 0;
  for (let index = text.indexOf(search); index >= 0; index = text.indexOf(search, index + search.length)) count += 1;
  return count;
}

export const editFileTool: AgentTool = defineTool<z.infer<typeof editFileInput>>({
  name: 'edit_file',
  description: 'Replace exact text in a file you own. old_string must match exactly once (include surrounding lines to make it unique) unless replace_all is true.',
  inputSchema: editFileInput,
  async execute(input, context) {
    const decision = await context.jail.checkWrite(input.path);
    if (!decision.allowed) return denialResult('edit_file', decision, input.path);
    if (input.old_string === input.new_string) return errorResult('old_string and new_string are identical; nothing to change.');
    const executor = context.toolExecutor;
    let text: string;
    try {
      const { buffer, size } = await readHead(decision.absolute, maxReadBytes, executor);
      if (size > buffer.length) return errorResult(`${input.path} is larger than ${maxReadBytes} bytes; edit it with write_file or bash.`);
      if (looksBinary(buffer)) return errorResult(`${input.path} is a binary file; edit_file edits text only.`);
      text = buffer.toString('utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return errorResult(`${input.path} does not exist; create it with write_file.`);
      if (executor) return executorFailure('edit_file', 'read', input.path, error);
      return errorResult(`cannot read ${input.path}: ${errorMessage(error)}`);
    }
    const count = countOccurrences(text, input.old_string);
    if (count === 0) return errorResult(`old_string was not found in ${input.path}; read the file and copy the text exactly (whitespace included).`);
    if (count > 1 && !input.replace_all) {
      return errorResult(`old_string occurs ${count} times in ${input.path}; add surrounding lines to make it unique, or set replace_all to true.`);
    }
    let updated: string;
    if (input.replace_all) updated = text.split(input.old_string).join(input.new_string);
    else {
      const at = text.indexOf(input.old_string);
      updated = text.slice(0, at) + input.new_string + text.slice(at + input.old_string.length);
    }
    try {
      if (executor) await executor.write(decision.absolute, updated);
      else await writeNoFollow(decision.absolute, updated);
    } catch (error) {
      if (executor) return executorFailure('edit_file', 'write', input.path, error);
      return errorResult(`cannot write ${input.path}: ${errorMessage(error)}`);
    }
    return okResult(`Edited ${decision.relative}: replaced ${plural(input.replace_all ? count : 1, 'occurrence')}.`);
  },
});

async function listEntries(absolute: string, executor: ToolExecutor | undefined): Promise<Array<{ name: string; kind: EntryKind; target?: string }>> {
  if (executor) return executor.list(absolute);
  const entries = await readdir(absolute, { withFileTypes: true });
  return Promise.all(
    entries.map(async (entry) => {
      const kind: EntryKind = entry.isFile() ? 'file' : entry.isDirectory() ? 'directory' : entry.isSymbolicLink() ? 'symlink' : 'other';
      if (kind !== 'symlink') return { name: entry.name, kind };
      const target = await readlink(path.join(absolute, entry.name)).catch(() => undefined);
      return target === undefined ? { name: entry.name, kind } : { name: entry.name, kind, target };
    }),
  );
}

const listDirInput = z.object({
  path: z.string().optional().describe('Directory to list (default: the worktree root).'),
});

export const listDirTool: AgentTool = defineTool<z.infer<typeof listDirInput>>({
  name: 'list_dir',
  description: 'List a directory of the worktree: directories end with "/", symbolic links show their target.',
  inputSchema: listDirInput,
  async execute(input, context) {
    const requested = input.path ?? '.';
    const decision = await context.jail.checkRead(requested);
    if (!decision.allowed) return denialResult('list_dir', decision, requested);
    const executor = context.toolExecutor;
    try {
      if ((await resolvedKindOf(decision.absolute, executor)) !== 'directory') return errorResult(`${requested} is not a directory; use read_file.`);
      const entries = (await listEntries(decision.absolute, executor)).filter((entry) => entry.name !== '.git');
      entries.sort((left, right) => (left.name < right.name ? -1 : left.name > right.name ? 1 : 0));
      const lines: string[] = [];
      for (const entry of entries.slice(0, maxListEntries)) {
        if (entry.kind === 'directory') lines.push(`${entry.name}/`);
        else if (entry.kind === 'symlink') lines.push(`${entry.name} -> ${entry.target ?? '?'}`);
        else lines.push(entry.name);
      }
      if (entries.length > maxListEntries) lines.push(`[list_dir: ${entries.length - maxListEntries} more entries not shown]`);
      const where = decision.relative === '' ? '.' : decision.relative;
      return okResult(lines.length === 0 ? `(${where} is empty)` : lines.join('\n'));
    } catch (error) {
      if (executor) return executorFailure('list_dir', 'list', requested, error);
      return errorResult(`cannot list ${requested}: ${errorMessage(error)}`);
    }
  },
});
