import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback HTTP server speaking the OpenAI chat-completions API (`POST /v1/chat/completions`),
 * for driving real provider HTTP paths offline (the ai-sdk backend through
 * `@ai-sdk/openai-compatible` / `@ai-sdk/openai`).
 *
 *   const server = await startOpenAiLoopback((body) =>
 *     lastMessage(body)?.role === 'tool' ? { text: 'done' } : { toolCalls: [{ name: 'bash', arguments: { command: 'ls' } }] });
 *   // model: `openai-compatible:${server.baseURL}#test-model`
 *   …
 *   await server.close();
 *
 * Both answer styles are served: plain JSON, and SSE when the request has `stream: true`
 * (`data: {chunk}` lines with `choices[0].delta` text or `tool_calls` deltas, a final chunk with
 * `finish_reason`, a usage chunk when `stream_options.include_usage`, then `data: [DONE]`).
 * Pick replies from the request content (`lastMessage(body)`, `toolResults(body)`) rather than
 * from the request index where you can: retries and extra requests then cannot shift the script.
 * Every request body is recorded, parsed, in `requests`.
 */

/** The part of a chat-completions request body tests look at. */
export interface OpenAiChatRequest {
  model?: string;
  messages: OpenAiChatMessage[];
  tools?: Array<{ type: 'function'; function: { name: string; description?: string; parameters?: unknown } }>;
  tool_choice?: unknown;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  [key: string]: unknown;
}

export interface OpenAiChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content?: unknown;
  tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
  [key: string]: unknown;
}

/** Token counts reported for one reply (defaults: 10 prompt, 5 completion, 0 cached). */
export interface LoopbackUsage {
  promptTokens?: number;
  completionTokens?: number;
  cachedTokens?: number;
}

/** One scripted reply. `arguments` may be an object (JSON-encoded for you) or a raw string. */
export type LoopbackReply =
  | { toolCalls: Array<{ name: string; arguments: Record<string, unknown> | string; id?: string }>; text?: string; usage?: LoopbackUsage }
  | { text: string; finishReason?: 'stop' | 'length'; usage?: LoopbackUsage }
  | { status: number; body?: unknown; headers?: Record<string, string> };

export type LoopbackScript = (requestBody: OpenAiChatRequest, requestIndex: number) => LoopbackReply | Promise<LoopbackReply>;

export interface OpenAiLoopback {
  /** `http://127.0.0.1:<port>/v1` */
  baseURL: string;
  /** Every request body received on /v1/chat/completions, parsed, in order. */
  requests: OpenAiChatRequest[];
  /** The headers of those requests (same order; names lower-case). */
  headers: http.IncomingHttpHeaders[];
  close(): Promise<void>;
}

/** The last message of a request. */
export function lastMessage(body: OpenAiChatRequest): OpenAiChatMessage | undefined {
  return body.messages.at(-1);
}

/** The `role: 'tool'` messages of a request (the tool results the client sent back). */
export function toolResults(body: OpenAiChatRequest): OpenAiChatMessage[] {
  return body.messages.filter((message) => message.role === 'tool');
}

/** The text of a message's content (string, or an array of `{type:'text', text}` parts). */
export function messageText(message: OpenAiChatMessage | undefined): string {
  const content = message?.content;
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part: unknown) => (typeof part === 'object' && part !== null && typeof (part as { text?: unknown }).text === 'string' ? (part as { text: string }).text : '')).join('');
  return '';
}

/** Starts the server on 127.0.0.1 with an ephemeral port. */
export async function startOpenAiLoopback(script: LoopbackScript): Promise<OpenAiLoopback> {
  const requests: OpenAiChatRequest[] = [];
  const headers: http.IncomingHttpHeaders[] = [];
  let callCounter = 0;

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void handle(req, res, Buffer.concat(chunks).toString('utf8')).catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `loopback script failed: ${String(error)}`, type: 'server_error' } }));
      });
    });
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse, raw: string): Promise<void> {
    const pathname = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    if (req.method !== 'POST' || pathname !== '/v1/chat/completions') {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `no route ${req.method} ${pathname}`, type: 'invalid_request_error' } }));
      return;
    }
    const body = JSON.parse(raw) as OpenAiChatRequest;
    const index = requests.length;
    requests.push(body);
    headers.push(req.headers);
    const reply = await script(body, index);

    if ('status' in reply) {
      res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
      res.end(JSON.stringify(reply.body ?? { error: { message: `scripted status ${reply.status}`, type: 'scripted_error' } }));
      return;
    }

    const id = `chatcmpl-loopback-${index}`;
    const created = 1_767_225_600; // fixed: 2026-01-01
    const model = body.model ?? 'loopback-model';
    const usage = {
      prompt_tokens: reply.usage?.promptTokens ?? 10,
      completion_tokens: reply.usage?.completionTokens ?? 5,
      total_tokens: (reply.usage?.promptTokens ?? 10) + (reply.usage?.completionTokens ?? 5),
      prompt_tokens_details: { cached_tokens: reply.usage?.cachedTokens ?? 0 },
    };
    const toolCalls =
      'toolCalls' in reply
        ? reply.toolCalls.map((call) => ({
            id: call.id ?? `call_${index}_${++callCounter}`,
            type: 'function' as const,
            function: { name: call.name, arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments) },
          }))
        : [];
    const text = reply.text ?? null;
    const finishReason = toolCalls.length > 0 ? 'tool_calls' : 'finishReason' in reply && reply.finishReason ? reply.finishReason : 'stop';

    if (!body.stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id,
          object: 'chat.completion',
          created,
          model,
          choices: [{ index: 0, message: { role: 'assistant', content: text, ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}) }, finish_reason: finishReason }],
          usage,
        }),
      );
      return;
    }

    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const send = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      send({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finish }] });

    chunk({ role: 'assistant', content: '' });
    if (text) {
      // Two pieces, so clients see real deltas.
      const middle = Math.ceil(text.length / 2);
      chunk({ content: text.slice(0, middle) });
      if (middle < text.length) chunk({ content: text.slice(middle) });
    }
    toolCalls.forEach((call, callIndex) => {
      const args = call.function.arguments;
      const middle = Math.ceil(args.length / 2);
      chunk({ tool_calls: [{ index: callIndex, id: call.id, type: 'function', function: { name: call.function.name, arguments: args.slice(0, middle) } }] });
      chunk({ tool_calls: [{ index: callIndex, function: { arguments: args.slice(middle) } }] });
    });
    chunk({}, finishReason);
    if (body.stream_options?.include_usage) send({ id, object: 'chat.completion.chunk', created, model, choices: [], usage });
    res.write('data: [DONE]\n\n');
    res.end();
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    headers,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
