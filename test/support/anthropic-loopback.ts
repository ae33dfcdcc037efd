import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback HTTP server speaking the Anthropic Messages API, for driving Claude Code (or any
 * Anthropic client) offline in tests (reference/claude-agent-sdk-offline.md).
 *
 *   const api = await startAnthropicLoopback((body) =>
 *     toolResults(body).length === 0 ? { toolUses: [{ name: 'Write', input: { file_path: 'a.ts', content: 'x' } }] } : { text: 'done' });
 *   // ANTHROPIC_BASE_URL = api.baseURL
 *
 * `POST /v1/messages` (any query string, e.g. `?beta=true`) is answered by the script: streaming
 * SSE when the body says `stream: true` (message_start, content_block_start/delta/stop per block,
 * message_delta with stop_reason and usage, message_stop), a plain JSON message otherwise. Choose
 * each reply from the request content (see {@link toolResults}, {@link lastUserBlocks}) rather than
 * from `index`: clients retry, and an unexpected extra request must not shift the whole script.
 * Every message request body is recorded in `requests`; any other request is answered 404 and
 * recorded in `unexpected`.
 */

export interface LoopbackToolUse {
  name: string;
  input: Record<string, unknown>;
  /** Defaults to a unique `toolu_…` id. */
  id?: string;
}

export interface LoopbackUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
}

export type LoopbackReply =
  /** An assistant turn that calls tools (stop_reason `tool_use`), optionally preceded by text. */
  | { toolUses: LoopbackToolUse[]; text?: string; usage?: LoopbackUsage }
  /** A final assistant text (stop_reason `end_turn`). */
  | { text: string; usage?: LoopbackUsage }
  /** An HTTP error (or any raw answer): `body` is sent as JSON. */
  | { status: number; body: unknown };

/** A request body as the Messages API receives it (only the parts tests look at are typed). */
export interface MessagesRequestBody {
  model?: string;
  stream?: boolean;
  system?: unknown;
  tools?: Array<{ name: string; [key: string]: unknown }>;
  messages: Array<{ role: string; content: string | Array<Record<string, unknown>> }>;
  [key: string]: unknown;
}

export type LoopbackScript = (body: MessagesRequestBody, index: number) => LoopbackReply | Promise<LoopbackReply>;

export interface AnthropicLoopback {
  /** `http://127.0.0.1:<port>` (no trailing slash, no `/v1`: what ANTHROPIC_BASE_URL takes). */
  baseURL: string;
  /** Every `/v1/messages` request body, in arrival order. */
  requests: unknown[];
  /** Every other request (answered 404). */
  unexpected: Array<{ method: string; url: string }>;
  close(): Promise<void>;
}

export const defaultLoopbackUsage: Readonly<LoopbackUsage> = Object.freeze({
  input_tokens: 100,
  output_tokens: 20,
  cache_read_input_tokens: 10,
  cache_creation_input_tokens: 5,
});

/** The content blocks of a message as an array (a string content becomes one text block). */
export function contentBlocks(message: { content: string | Array<Record<string, unknown>> } | undefined): Array<Record<string, unknown>> {
  if (!message) return [];
  return typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content;
}

/** The blocks of the last `user` message. */
export function lastUserBlocks(body: MessagesRequestBody): Array<Record<string, unknown>> {
  const users = body.messages.filter((message) => message.role === 'user');
  return contentBlocks(users[users.length - 1]);
}

export interface ToolResultBlock {
  toolUseId: string;
  isError: boolean;
  /** The result's text (text parts joined). */
  text: string;
}

function blockText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => (part && typeof part === 'object' && typeof (part as { text?: unknown }).text === 'string' ? (part as { text: string }).text : '')).join('');
  return '';
}

/** Every tool_result block in the conversation, oldest first. */
export function toolResults(body: MessagesRequestBody): ToolResultBlock[] {
  const results: ToolResultBlock[] = [];
  for (const message of body.messages) {
    if (message.role !== 'user') continue;
    for (const block of contentBlocks(message)) {
      if (block.type !== 'tool_result') continue;
      results.push({ toolUseId: String(block.tool_use_id), isError: block.is_error === true, text: blockText(block.content) });
    }
  }
  return results;
}

/** All text of the user messages (prompt, system reminders, hook feedback), joined. */
export function userText(body: MessagesRequestBody): string {
  return body.messages
    .filter((message) => message.role === 'user')
    .flatMap((message) => contentBlocks(message))
    .map((block) => (block.type === 'text' ? String(block.text) : block.type === 'tool_result' ? blockText(block.content) : ''))
    .join('\n');
}

let idCounter = 0;
const nextId = (prefix: string) => `${prefix}_loopback${Date.now().toString(36)}${(idCounter++).toString(36)}`;

interface Block {
  type: 'text' | 'tool_use';
  text?: string;
  id?: string;
  name?: string;
  input?: Record<string, unknown>;
}

function replyBlocks(reply: Exclude<LoopbackReply, { status: number }>): { blocks: Block[]; stopReason: string } {
  const blocks: Block[] = [];
  if (reply.text !== undefined && reply.text !== '') blocks.push({ type: 'text', text: reply.text });
  if ('toolUses' in reply) {
    for (const use of reply.toolUses) blocks.push({ type: 'tool_use', id: use.id ?? nextId('toolu'), name: use.name, input: use.input });
    return { blocks, stopReason: 'tool_use' };
  }
  if (blocks.length === 0) blocks.push({ type: 'text', text: '' });
  return { blocks, stopReason: 'end_turn' };
}

function usageOf(reply: { usage?: LoopbackUsage }): Required<LoopbackUsage> {
  const usage = { ...defaultLoopbackUsage, ...reply.usage };
  return {
    input_tokens: usage.input_tokens,
    output_tokens: usage.output_tokens,
    cache_read_input_tokens: usage.cache_read_input_tokens ?? 0,
    cache_creation_input_tokens: usage.cache_creation_input_tokens ?? 0,
  };
}

function sse(response: http.ServerResponse, event: string, data: unknown): void {
  response.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

function sendStream(response: http.ServerResponse, model: string, blocks: Block[], stopReason: string, usage: Required<LoopbackUsage>): void {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'request-id': nextId('req') });
  sse(response, 'message_start', {
    type: 'message_start',
    message: {
      id: nextId('msg'), type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null,
      usage: { input_tokens: usage.input_tokens, output_tokens: 1, cache_read_input_tokens: usage.cache_read_input_tokens, cache_creation_input_tokens: usage.cache_creation_input_tokens },
    },
  });
  blocks.forEach((block, index) => {
    if (block.type === 'text') {
      sse(response, 'content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
      if (block.text) sse(response, 'content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: block.text } });
    } else {
      sse(response, 'content_block_start', { type: 'content_block_start', index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } });
      const json = JSON.stringify(block.input ?? {});
      // Two fragments, like a real stream: the client must concatenate partial JSON.
      const cut = Math.floor(json.length / 2);
      sse(response, 'content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: json.slice(0, cut) } });
      sse(response, 'content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: json.slice(cut) } });
    }
    sse(response, 'content_block_stop', { type: 'content_block_stop', index });
  });
  sse(response, 'message_delta', { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: usage.output_tokens } });
  sse(response, 'message_stop', { type: 'message_stop' });
  response.end();
}

function sendJson(response: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'request-id': nextId('req') });
  response.end(text);
}

/** Starts the loopback server on 127.0.0.1 (a free port). */
export async function startAnthropicLoopback(script: LoopbackScript): Promise<AnthropicLoopback> {
  const requests: unknown[] = [];
  const unexpected: Array<{ method: string; url: string }> = [];
  let index = 0;

  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      void (async () => {
        const url = request.url ?? '/';
        const pathname = new URL(url, 'http://127.0.0.1').pathname;
        if (request.method !== 'POST' || pathname !== '/v1/messages') {
          unexpected.push({ method: request.method ?? '?', url });
          sendJson(response, 404, { type: 'error', error: { type: 'not_found_error', message: `loopback: no route ${request.method} ${url}` } });
          return;
        }
        let body: MessagesRequestBody;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as MessagesRequestBody;
        } catch {
          sendJson(response, 400, { type: 'error', error: { type: 'invalid_request_error', message: 'loopback: body is not JSON' } });
          return;
        }
        requests.push(body);
        let reply: LoopbackReply;
        try {
          reply = await script(body, index++);
        } catch (error) {
          sendJson(response, 500, { type: 'error', error: { type: 'api_error', message: `loopback script failed: ${(error as Error).message}` } });
          return;
        }
        if ('status' in reply) {
          sendJson(response, reply.status, reply.body);
          return;
        }
        const model = typeof body.model === 'string' ? body.model : 'loopback-model';
        const { blocks, stopReason } = replyBlocks(reply);
        const usage = usageOf(reply);
        if (body.stream === true) {
          sendStream(response, model, blocks, stopReason, usage);
        } else {
          sendJson(response, 200, {
            id: nextId('msg'), type: 'message', role: 'assistant', model, stop_reason: stopReason, stop_sequence: null, usage,
            content: blocks.map((block) => (block.type === 'text' ? { type: 'text', text: block.text ?? '' } : { type: 'tool_use', id: block.id, name: block.name, input: block.input ?? {} })),
          });
        }
      })();
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}`,
    requests,
    unexpected,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
