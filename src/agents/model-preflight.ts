import { request } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { PolywaveError } from '../errors/polywave-error.js';
import type { ModelSpec } from './contract.js';
import type { RoleModel } from './credentials.js';

/** Code of the refusal when a local model server does not answer (exit 2, nothing changed). */
export const modelServerUnreachableCode = 'AGENT_MODEL_UNREACHABLE';

/** How long the reachability check waits for the server (a local server answers in milliseconds). */
const defaultTimeoutMs = 1500;

/** The servers a spec needs reachable before anything starts: the local ones (ollama, lmstudio, openai-compatible). */
function serverOf(spec: ModelSpec): { url: string; kind: string } | undefined {
  if (spec.backend !== 'ai-sdk' || spec.baseURL === undefined) return undefined;
  if (spec.provider === 'ollama' || spec.provider === 'lmstudio' || spec.provider === 'openai-compatible') return { url: spec.baseURL, kind: spec.provider };
  return undefined;
}

/**
 * One HTTP GET of `<baseURL>/models` (Ollama and LM Studio both serve it; any HTTP answer counts:
 * something listens and speaks HTTP). Resolves to undefined when it answered, else the reason
 * (ECONNREFUSED, a timeout, …).
 */
export function probeServer(baseURL: string, timeoutMs = defaultTimeoutMs): Promise<string | undefined> {
  return new Promise((resolve) => {
    let url: URL;
    try {
      url = new URL(`${baseURL.replace(/\/+$/, '')}/models`);
    } catch {
      resolve('not a URL');
      return;
    }
    const send = url.protocol === 'https:' ? httpsRequest : request;
    const timer = setTimeout(() => {
      req.destroy();
      resolve(`no answer within ${(timeoutMs / 1000).toFixed(1)} s`);
    }, timeoutMs);
    const req = send(url, { method: 'GET', headers: { accept: 'application/json' } }, (response) => {
      clearTimeout(timer);
      response.resume();
      resolve(undefined);
      req.destroy();
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve(error.code ?? error.message);
    });
    req.end();
  });
}

/**
 * Issue 13 (outside attack F10): a role running on a local model server (`ollama:`, `lmstudio:`,
 * `openai-compatible:<url>#…`) needs that server up; without it the Scout failed after ~20 s with
 * ECONNREFUSED and the run wrote a half-started state. Checked once per server, in parallel,
 * before anything is written: throws `AGENT_MODEL_UNREACHABLE` (exit 2) naming the URL, the roles
 * and what to set.
 */
export async function requireReachableModels(roles: readonly RoleModel[], specs: readonly ModelSpec[], options: { timeoutMs?: number } = {}): Promise<void> {
  const servers = new Map<string, { kind: string; uses: string[] }>();
  specs.forEach((spec, index) => {
    const server = serverOf(spec);
    if (server === undefined) return;
    const entry = servers.get(server.url) ?? { kind: server.kind, uses: [] };
    entry.uses.push(`${roles[index]?.role ?? 'an agent'} (${spec.raw})`);
    servers.set(server.url, entry);
  });
  if (servers.size === 0) return;
  const results = await Promise.all([...servers].map(async ([url, entry]) => ({ url, ...entry, problem: await probeServer(url, options.timeoutMs) })));
  const down = results.filter((result) => result.problem !== undefined);
  if (down.length === 0) return;
  const hint = (kind: string): string =>
    kind === 'ollama'
      ? 'start Ollama (`ollama serve`) or set OLLAMA_HOST to where it listens'
      : kind === 'lmstudio'
        ? "start LM Studio's local server (port 1234)"
        : 'start that server or fix the URL in --model openai-compatible:<url>#<model>';
  throw new PolywaveError({
    code: modelServerUnreachableCode,
    message:
      `${down.map((server) => `${server.url} does not answer (${server.problem}) — needed by ${[...new Set(server.uses)].join(', ')}; ${hint(server.kind)}`).join('; ')}. ` +
      'Or pick another backend with --model (anthropic:<model> with ANTHROPIC_API_KEY, openai:<model> with OPENAI_API_KEY). Nothing was started or changed.',
  });
}
