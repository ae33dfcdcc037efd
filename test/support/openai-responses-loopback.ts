import { mkdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

/**
 * A loopback HTTP server speaking the OpenAI Responses API (`POST /v1/responses`), for driving the
 * real `codex` CLI offline in tests.
 *
 *   const api = await startResponsesLoopback((body) =>
 *     functionCallOutputs(body).length === 0 ? { calls: [{ name: 'exec_command', arguments: { cmd: 'ls' } }] } : { text: 'done' });
 *   writeCodexConfig(codexHome, api.baseURL);   // CODEX_HOME=codexHome, LOOPBACK_API_KEY=anything
 *
 * What codex 0.169 sends (measured): one `POST /v1/responses` per model turn, `stream: true`, the
 * conversation in `input` (developer and user messages, then `function_call` /
 * `function_call_output` items), tools `exec_command` (arguments `{cmd, workdir?, login?, …}`),
 * `write_stdin`, `request_user_input`, `view_image`, … The stream codex needs: `response.created`,
 * one `response.output_item.done` per output item (an assistant `message` with `output_text`, or a
 * `function_call` with `name`, `arguments` as a JSON string and `call_id`), then
 * `response.completed` with `usage`. Choose each reply from the request content
 * ({@link functionCallOutputs}) rather than from the request index: a retry must not shift the
 * script. Every request body is recorded in `requests`; any other request is answered 404 and
 * recorded in `unexpected`.
 */

/** One function call the scripted model makes. */
export interface ResponsesCall {
  name: string;
  /** An object (JSON-encoded for you) or a raw string. */
  arguments: Record<string, unknown> | string;
  /** Defaults to a unique `call_…` id. */
  callId?: string;
}

export type ResponsesReply =
  /** A turn that calls functions (codex runs them and sends the outputs in the next request). */
  | { calls: ResponsesCall[]; text?: string }
  /** A final assistant message. */
  | { text: string }
  /** An HTTP error: `body` is sent as JSON. */
  | { status: number; body: unknown };

/** The parts of a Responses request body tests look at. */
export interface ResponsesRequestBody {
  model?: string;
  stream?: boolean;
  instructions?: string;
  tools?: Array<{ type: string; name?: string; [key: string]: unknown }>;
  input: Array<{ type: string; role?: string; [key: string]: unknown }>;
  [key: string]: unknown;
}

export type ResponsesScript = (body: ResponsesRequestBody, index: number) => ResponsesReply | Promise<ResponsesReply>;

export interface ResponsesLoopback {
  /** `http://127.0.0.1:<port>/v1` (what a codex provider's `base_url` takes). */
  baseURL: string;
  /** `127.0.0.1:<port>`. */
  host: string;
  requests: ResponsesRequestBody[];
  unexpected: Array<{ method: string; url: string }>;
  close(): Promise<void>;
}

/** Every `function_call_output` of the conversation, oldest first. */
export function functionCallOutputs(body: ResponsesRequestBody): Array<{ callId: string; output: string }> {
  return body.input
    .filter((item) => item.type === 'function_call_output')
    .map((item) => ({ callId: String(item.call_id), output: typeof item.output === 'string' ? item.output : JSON.stringify(item.output) }));
}

/** The text of every user/developer message of the conversation, joined. */
export function inputText(body: ResponsesRequestBody): string {
  const texts: string[] = [];
  for (const item of body.input) {
    if (item.type !== 'message' || !Array.isArray(item.content)) continue;
    for (const part of item.content as Array<Record<string, unknown>>) if (typeof part.text === 'string') texts.push(part.text);
  }
  return texts.join('\n');
}

let counter = 0;
const nextId = (prefix: string) => `${prefix}_loopback${Date.now().toString(36)}${(counter++).toString(36)}`;

function outputItems(reply: Exclude<ResponsesReply, { status: number }>): Array<Record<string, unknown>> {
  const items: Array<Record<string, unknown>> = [];
  if (reply.text !== undefined && reply.text !== '') {
    items.push({ type: 'message', id: nextId('msg'), role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: reply.text, annotations: [] }] });
  }
  if ('calls' in reply) {
    for (const call of reply.calls) {
      items.push({
        type: 'function_call',
        id: nextId('fc'),
        status: 'completed',
        name: call.name,
        arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
        call_id: call.callId ?? nextId('call'),
      });
    }
  }
  return items;
}

const usage = { input_tokens: 100, input_tokens_details: { cached_tokens: 40 }, output_tokens: 20, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 120 };

function sendJson(response: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

/** Starts the server on 127.0.0.1 (a free port). */
export async function startResponsesLoopback(script: ResponsesScript): Promise<ResponsesLoopback> {
  const requests: ResponsesRequestBody[] = [];
  const unexpected: Array<{ method: string; url: string }> = [];
  let index = 0;
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      void (async () => {
        const url = request.url ?? '/';
        const pathname = new URL(url, 'http://127.0.0.1').pathname;
        if (request.method !== 'POST' || pathname !== '/v1/responses') {
          unexpected.push({ method: request.method ?? '?', url });
          sendJson(response, 404, { error: { type: 'not_found', message: `loopback: no route ${request.method} ${url}` } });
          return;
        }
        let body: ResponsesRequestBody;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ResponsesRequestBody;
        } catch {
          sendJson(response, 400, { error: { type: 'invalid_request_error', message: 'loopback: body is not JSON' } });
          return;
        }
        requests.push(body);
        let reply: ResponsesReply;
        try {
          reply = await script(body, index++);
        } catch (error) {
          sendJson(response, 500, { error: { type: 'server_error', message: `loopback script failed: ${(error as Error).message}` } });
          return;
        }
        if ('status' in reply) {
          sendJson(response, reply.status, reply.body);
          return;
        }
        const id = nextId('resp');
        const model = body.model ?? 'loopback-model';
        const items = outputItems(reply);
        const completed = { id, object: 'response', status: 'completed', model, output: items, usage };
        if (body.stream !== true) {
          sendJson(response, 200, completed);
          return;
        }
        response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        const send = (event: Record<string, unknown>) => response.write(`event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`);
        send({ type: 'response.created', response: { id, object: 'response', status: 'in_progress', model, output: [] } });
        items.forEach((item, outputIndex) => send({ type: 'response.output_item.done', output_index: outputIndex, item }));
        send({ type: 'response.completed', response: completed });
        response.end();
      })();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    host: `127.0.0.1:${port}`,
    requests,
    unexpected,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The environment variable the loopback provider's key is read from (any value works). */
export const loopbackKeyVariable = 'LOOPBACK_API_KEY';

/**
 * Writes `<codexHome>/config.toml` pointing codex at the loopback server: a custom provider
 * (`wire_api = "responses"`, plain HTTPS/HTTP streaming, no WebSocket attempt), a fixed model,
 * no update checks, no analytics.
 */
export function writeCodexConfig(codexHome: string, baseURL: string, model = 'loopback-model'): void {
  mkdirSync(codexHome, { recursive: true });
  writeFileSync(
    path.join(codexHome, 'config.toml'),
    [
      `model = "${model}"`,
      'model_provider = "loopback"',
      'check_for_update_on_startup = false',
      '[analytics]',
      'enabled = false',
      '[model_providers.loopback]',
      'name = "loopback"',
      `base_url = "${baseURL}"`,
      'wire_api = "responses"',
      `env_key = "${loopbackKeyVariable}"`,
      'request_max_retries = 0',
      'stream_max_retries = 0',
      '',
    ].join('\n'),
  );
}
