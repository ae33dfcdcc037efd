import { existsSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createRequire } from 'node:module';
import { connect } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PolywaveError } from '../errors/polywave-error.js';
import type { ModelSpec } from './contract.js';
import { resolveModelSpec } from './model-spec.js';
import { requireModelCredentials, type RoleModel } from './credentials.js';

/** Code of the refusal when a local model server does not answer (exit 2, nothing changed). */
export const modelServerUnreachableCode = 'AGENT_MODEL_UNREACHABLE';

/** How long the reachability check waits for the server (a local server answers in milliseconds). */
const defaultTimeoutMs = 1500;

/** Code of the refusal when a backend's optional package is not installed (exit 2, nothing changed). */
export const backendMissingCode = 'AGENT_BACKEND_MISSING';

/** The claude-code backend's optional peer dependency. */
export const claudeAgentSdkPackage = '@anthropic-ai/claude-agent-sdk';

type Env = Readonly<Record<string, string | undefined>>;

const nonEmpty = (value: string | undefined): string | undefined => (value !== undefined && value.trim() !== '' ? value.trim() : undefined);

/**
 * The servers a spec needs reachable before anything starts: the local ones (ollama, lmstudio,
 * openai-compatible; an HTTP GET of `/models`), and a custom endpoint set by OPENAI_BASE_URL /
 * ANTHROPIC_BASE_URL for the backend that uses it (`tcp`: a TCP connect only — no request, no
 * model call). The public default endpoints are never probed.
 */
function serverOf(spec: ModelSpec, env: Env): { url: string; kind: string; tcp?: boolean } | undefined {
  if (spec.backend === 'claude-code') {
    const url = nonEmpty(env.ANTHROPIC_BASE_URL);
    return url ? { url, kind: 'ANTHROPIC_BASE_URL', tcp: true } : undefined;
  }
  if (spec.backend !== 'ai-sdk') return undefined;
  if (spec.baseURL !== undefined && (spec.provider === 'ollama' || spec.provider === 'lmstudio' || spec.provider === 'openai-compatible')) return { url: spec.baseURL, kind: spec.provider };
  const variable = spec.provider === 'openai' ? 'OPENAI_BASE_URL' : spec.provider === 'anthropic' ? 'ANTHROPIC_BASE_URL' : undefined;
  const url = variable ? nonEmpty(env[variable]) : undefined;
  return variable && url ? { url, kind: variable, tcp: true } : undefined;
}

/**
 * A TCP connect to the host and port of `url` (80/443 by default), closed as soon as it opens.
 * Resolves to undefined when something accepted the connection, else the reason.
 */
export function probeTcp(url: string, timeoutMs = defaultTimeoutMs): Promise<string | undefined> {
  return new Promise((resolve) => {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      resolve('not a URL');
      return;
    }
    const port = parsed.port !== '' ? Number(parsed.port) : parsed.protocol === 'https:' ? 443 : 80;
    const socket = connect({ host: parsed.hostname.replace(/^\[|\]$/g, ''), port });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(`no connection within ${(timeoutMs / 1000).toFixed(1)} s`);
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(undefined);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve(error.code ?? error.message);
    });
  });
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
export async function requireReachableModels(roles: readonly RoleModel[], specs: readonly ModelSpec[], options: { timeoutMs?: number; env?: Env } = {}): Promise<void> {
  const servers = new Map<string, { kind: string; tcp?: boolean; uses: string[] }>();
  specs.forEach((spec, index) => {
    const server = serverOf(spec, options.env ?? {});
    if (server === undefined) return;
    const entry = servers.get(server.url) ?? { kind: server.kind, ...(server.tcp ? { tcp: true } : {}), uses: [] };
    entry.uses.push(`${roles[index]?.role ?? 'an agent'} (${spec.raw})`);
    servers.set(server.url, entry);
  });
  if (servers.size === 0) return;
  const results = await Promise.all([...servers].map(async ([url, entry]) => ({ url, ...entry, problem: await (entry.tcp ? probeTcp(url, options.timeoutMs) : probeServer(url, options.timeoutMs)) })));
  const down = results.filter((result) => result.problem !== undefined);
  if (down.length === 0) return;
  const hint = (kind: string): string =>
    kind === 'ollama'
      ? 'start Ollama (`ollama serve`) or set OLLAMA_HOST to where it listens'
      : kind === 'lmstudio'
        ? "start LM Studio's local server (port 1234)"
        : kind === 'openai-compatible'
          ? 'start that server or fix the URL in --model openai-compatible:<url>#<model>'
          : `start that endpoint or fix (or unset) ${kind}`;
  throw new PolywaveError({
    code: modelServerUnreachableCode,
    message:
      `${down.map((server) => `${server.url} does not answer (${server.problem}) — needed by ${[...new Set(server.uses)].join(', ')}; ${hint(server.kind)}`).join('; ')}. ` +
      'Or pick another backend with --model (anthropic:<model> with ANTHROPIC_API_KEY, openai:<model> with OPENAI_API_KEY). Nothing was started or changed.',
  });
}

/**
 * The polywave package root above `from`: the directory holding polywave's package.json, or one
 * installed as a package (its parent is a node_modules directory); else the directory of `from`.
 */
function packageRootOf(from: string): string {
  let dir = path.dirname(from);
  for (;;) {
    if (path.basename(path.dirname(dir)) === 'node_modules') return dir;
    const manifest = path.join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        if ((JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown }).name === 'polywave') return dir;
      } catch {
        // not ours: keep going up
      }
    }
    const parent = path.dirname(dir);
    if (parent === dir) return path.dirname(from);
    dir = parent;
  }
}

/**
 * The exact command that installs `pkg` where polywave (at `from`) resolves it: a global install
 * (`<prefix>/lib/node_modules/polywave`) needs `npm i -g --prefix <prefix>` (a bare `npm i` in the
 * current directory does not help it); a project install (`<project>/node_modules/polywave`) or a
 * source checkout needs `npm i -D` in that directory.
 */
export function installCommandFor(pkg: string, from: string = fileURLToPath(import.meta.url)): string {
  const root = packageRootOf(from);
  const parent = path.dirname(root);
  if (path.basename(parent) === 'node_modules') {
    const above = path.dirname(parent);
    if (path.basename(above) === 'lib') return `npm i -g --prefix ${path.dirname(above)} ${pkg}`;
    return `cd ${above} && npm i -D ${pkg}`;
  }
  return `cd ${root} && npm i -D ${pkg}`;
}

/**
 * Issue 13 (outside attack N3): `@anthropic-ai/claude-agent-sdk` is an optional peer dependency,
 * so a global install does not have it and every claude-code agent failed at launch, after the
 * worktrees were made. Resolved (not loaded) from polywave's own location, as the backend's
 * `import()` will: throws `AGENT_BACKEND_MISSING` (exit 2) with the exact install command.
 */
export function requireBackendModules(roles: readonly RoleModel[], specs: readonly ModelSpec[], options: { from?: string } = {}): void {
  const users = roles.filter((_, index) => specs[index]?.backend === 'claude-code').map((role) => role.role);
  if (users.length === 0) return;
  const from = options.from ?? fileURLToPath(import.meta.url);
  try {
    createRequire(from).resolve(claudeAgentSdkPackage);
    return;
  } catch {
    // not installed where polywave looks for it
  }
  throw new PolywaveError({
    code: backendMissingCode,
    message:
      `${[...new Set(users)].join(', ')} would run on the claude-code backend, which needs ${claudeAgentSdkPackage} (an optional peer dependency, not installed with polywave at ${packageRootOf(from)}). ` +
      `Install it: ${installCommandFor(claudeAgentSdkPackage, from)} — or pick another backend with --model (anthropic:<model> with ANTHROPIC_API_KEY, openai:<model> with OPENAI_API_KEY, ollama:<model>). Nothing was started or changed.`,
  });
}

/** A role about to launch; `remote`: it runs on a dispatched worker (only its credentials are checked here). */
export interface LaunchRole extends RoleModel {
  remote?: boolean;
}

/**
 * The one pre-check every command that launches agents runs before it changes anything (issue
 * 13: F10, N3, N4): credentials of the roles that run on this machine (`AGENT_CREDENTIALS_MISSING`), then for the roles that run on
 * this machine the backend's optional package (`AGENT_BACKEND_MISSING`) and the reachability of
 * local model servers and custom base URLs (`AGENT_MODEL_UNREACHABLE`). All exit 2. Returns the
 * resolved specs, one per role.
 */
export async function requireAgentsReady(roles: readonly LaunchRole[], env: Env, options: { timeoutMs?: number; from?: string } = {}): Promise<ModelSpec[]> {
  // Outside round A21-36: a role that runs on a dispatched worker uses the worker's keys ("workers hold the model keys;
  // the orchestrator needs none"): only the roles of this machine need credentials here.
  requireModelCredentials(roles.filter((role) => role.remote !== true), env);
  const specs = roles.map((role) => resolveModelSpec(role.model, env));
  const local = roles.map((role, index) => ({ role, spec: specs[index]! })).filter((entry) => entry.role.remote !== true);
  const localRoles = local.map((entry) => entry.role);
  const localSpecs = local.map((entry) => entry.spec);
  requireBackendModules(localRoles, localSpecs, options.from !== undefined ? { from: options.from } : {});
  await requireReachableModels(localRoles, localSpecs, { env, ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}) });
  return specs;
}
