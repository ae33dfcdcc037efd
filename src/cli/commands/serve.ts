import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { PolywaveError } from '../../errors/polywave-error.js';
import { runGit } from '../../git/run-git.js';
import { resolveStoreSettings } from '../../observability/store-location.js';
import type { CommandIo, CommandResult } from '../io.js';

async function repoRoot(directory: string, io: CommandIo): Promise<string> {
  if (!existsSync(directory) || !statSync(directory).isDirectory()) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `--repo ${directory} is not a directory` });
  try {
    return (await runGit(['rev-parse', '--show-toplevel'], { cwd: directory, env: io.env })).trim();
  } catch {
    throw new PolywaveError({ code: 'G000_NOT_A_REPOSITORY', message: `${directory} is not inside a git repository (pass --repo DIR)` });
  }
}

/**
 * `serve [--repo DIR …] [--port N] [--host H] [--open] [--store PATH]` — the web dashboard
 * (docs/serve.md): binds loopback unless --host is given, prints the URL with this start's token,
 * runs until SIGINT/SIGTERM, then closes the server (runs started from the page keep running).
 */
export async function run(_args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const requested = Array.isArray(options.repo) && options.repo.length > 0 ? (options.repo as string[]) : typeof options.repoDir === 'string' ? [options.repoDir] : [io.cwd];
  const roots: string[] = [];
  for (const directory of requested) roots.push(await repoRoot(path.resolve(io.cwd, directory), io));
  // `--host ''` (an unset shell variable, a typo) is refused, never read as "the default": a user who typed --host
  // meant a choice, and silently binding loopback (or Node's every-interface '' bind) would not be that choice.
  if (options.host !== undefined && (typeof options.host !== 'string' || options.host.trim() === '')) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: '--host needs an address (127.0.0.1 or ::1 for this machine only, 0.0.0.0 for every interface); leave --host out for the default private loopback address' });
  }
  const explicitHost = typeof options.host === 'string';
  // POLYWAVE_SERVE_HOST may choose another loopback address; exposing the server takes --host on the command line.
  // Neither: a random 127.X.Y.Z chosen by the server (the token cookie then reaches no other local server).
  const host = explicitHost ? (options.host as string).trim() : io.env.POLYWAVE_SERVE_HOST?.trim() || undefined;
  const port = options.port === undefined ? 7420 : Number(options.port);
  const store = resolveStoreSettings({ store: options.store, env: io.env, cwd: io.cwd });
  const { startServer } = await import('../../serve/server.js');
  const { isLoopbackHost } = await import('../../serve/security.js');
  const server = await startServer({ repos: roots, port, host, explicitHost, storePath: store.path, env: io.env, now: io.now, log: io.stderr });
  if (!isLoopbackHost(server.host)) {
    io.stderr(`polywave: warning: serve listens on ${server.host}:${server.port}, reachable from other machines; anyone holding the token can read the repositories' plans and start runs\n`);
  }
  io.stdout(`polywave serve: ${server.loginUrl}\n`);
  io.stderr(`serving ${server.repos.map((repo) => repo.path).join(', ')} (events: ${store.path}); Ctrl-C stops\n`);
  // --open: $BROWSER, else the platform's opener, with the URL carrying the token (the server is bound by now,
  // so a refused host — non-loopback without --host — never reaches a browser).
  if (options.open === true) {
    const { openBrowser } = await import('../../serve/open-browser.js');
    if ((await openBrowser(server.loginUrl, io.env)) === undefined) io.stderr('polywave: warning: --open: no browser could be started ($BROWSER, xdg-open/open); open the URL above\n');
  }
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await server.close();
  io.stderr('polywave serve: stopped\n');
  return 0;
}
