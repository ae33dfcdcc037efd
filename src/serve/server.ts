import { isIP, type AddressInfo } from 'node:net';
import path from 'node:path';
import { serve } from '@hono/node-server';
import { PolywaveError } from '../errors/polywave-error.js';
import { createServeApp } from './app.js';
import { repoFor, type ServedRepo } from './manifests.js';
import { packageRoot } from './package-root.js';
import { hostHeaderValue, isLoopbackHost, newToken, randomLoopbackHost } from './security.js';

export interface StartServerOptions {
  repos: string[];
  /** 0 = a free port. */
  port: number;
  /**
   * The address to listen on. Undefined: a random per-server loopback address 127.X.Y.Z (the
   * token cookie is then private to this server; see {@link randomLoopbackHost}), or 127.0.0.1
   * with a warning when the OS refuses it (EADDRNOTAVAIL, e.g. macOS without an lo alias).
   */
  host?: string | undefined;
  /** Chooses the default address (tests: an address the OS refuses, to see the fallback). */
  pickHost?: () => string;
  /** True only when the user asked for the host (`--host`): then a non-loopback address is allowed. */
  explicitHost: boolean;
  storePath: string;
  env: Readonly<Record<string, string | undefined>>;
  now: () => Date;
  webRoot?: string;
  pollMs?: number;
  heartbeatMs?: number;
  runFlushMs?: number;
  log?: (line: string) => void;
}

export interface RunningServer {
  url: string;
  /** The URL with the token (what is printed once). */
  loginUrl: string;
  port: number;
  host: string;
  token: string;
  repos: ServedRepo[];
  close(): Promise<void>;
}

/**
 * Starts `polywave serve`: loopback only unless the host was asked for explicitly (a non-loopback
 * host without it is `SERVE_NON_LOOPBACK`, exit 2), a fresh token, the Hono app on the node adapter.
 */
export async function startServer(options: StartServerOptions): Promise<RunningServer> {
  if (options.host !== undefined && !isLoopbackHost(options.host) && !options.explicitHost) {
    throw new PolywaveError({ code: 'SERVE_NON_LOOPBACK', message: `refusing to listen on ${options.host}: not a loopback address; pass --host ${options.host} on the command line to expose the server on the network` });
  }
  if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65535) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `--port must be 0..65535 (got ${options.port})` });
  const repos: ServedRepo[] = [];
  for (const root of options.repos) {
    const repo = repoFor(root);
    if (!repos.some((known) => known.id === repo.id)) repos.push(repo);
  }
  const pkg = packageRoot();
  const token = newToken();
  // The app needs the real port (Host check, cookie name): listen first, then hand requests to the app.
  const route: { fetch?: (request: Request, env: unknown) => Response | Promise<Response> } = {};
  const listen = (hostname: string) =>
    new Promise<ReturnType<typeof serve>>((resolve, reject) => {
      const created = serve({ fetch: (request, env) => route.fetch!(request, env), port: options.port, hostname }, () => resolve(created));
      created.once('error', (error: NodeJS.ErrnoException) => {
        created.close();
        reject(error);
      });
    });
  const listenError = (hostname: string, error: NodeJS.ErrnoException) =>
    new PolywaveError({ code: 'SERVE_LISTEN', message: `cannot listen on ${hostHeaderValue(hostname, options.port)}: ${error.code ?? error.message}` });
  let bare = options.host?.replace(/^\[|\]$/g, '') ?? (options.pickHost ?? randomLoopbackHost)();
  let server: ReturnType<typeof serve>;
  try {
    server = await listen(bare);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (options.host !== undefined || code !== 'EADDRNOTAVAIL') throw listenError(bare, error as NodeJS.ErrnoException);
    // No per-server loopback address here (macOS routes only 127.0.0.1 to lo0): the shared one, with its weaker cookie isolation.
    options.log?.(`polywave: warning: cannot listen on ${bare} (${code}); using 127.0.0.1, whose token cookie every other server on 127.0.0.1 also receives (docs/serve.md "Security")\n`);
    bare = '127.0.0.1';
    try {
      server = await listen(bare);
    } catch (second) {
      throw listenError(bare, second as NodeJS.ErrnoException);
    }
  }
  const address = server.address() as AddressInfo;
  const port = address.port;
  // A numeric alias of an address (`--host 0`, `2130706433`, `0x7f.1`) is named by the address it bound:
  // the printed URL, the Host check and the non-loopback warning then see 0.0.0.0 / 127.0.0.1, not "0".
  if (isIP(bare) === 0 && /^(?:0x[0-9a-f]+|\d+)(?:\.(?:0x[0-9a-f]+|\d+)){0,3}$/i.test(bare) && isIP(address.address) !== 0) bare = address.address;
  const { app, close: closeApp } = createServeApp({
    repos,
    token,
    port,
    host: bare,
    explicitHost: options.explicitHost,
    storePath: options.storePath,
    webRoot: options.webRoot ?? path.join(pkg.root, 'dist', 'web'),
    bin: path.join(pkg.root, 'bin', 'polywave.js'),
    version: pkg.version,
    env: options.env,
    now: options.now,
    ...(options.pollMs !== undefined ? { pollMs: options.pollMs } : {}),
    ...(options.heartbeatMs !== undefined ? { heartbeatMs: options.heartbeatMs } : {}),
    ...(options.runFlushMs !== undefined ? { runFlushMs: options.runFlushMs } : {}),
    ...(options.log ? { log: options.log } : {}),
  });
  route.fetch = (request, env) => app.fetch(request, env);
  // The printed URL names the address the browser reaches: 127.0.0.1 for a wildcard bind.
  const shown = bare === '0.0.0.0' || bare === '::' ? '127.0.0.1' : bare;
  const url = `http://${hostHeaderValue(shown, port)}/`;
  return {
    url,
    loginUrl: `${url}?token=${token}`,
    port,
    host: bare,
    token,
    repos,
    close: () =>
      new Promise<void>((resolve) => {
        closeApp();
        // Open SSE streams would keep close() waiting: end every connection.
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
