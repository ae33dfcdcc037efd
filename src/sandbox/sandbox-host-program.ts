/**
 * The program of the sandbox host (see sandbox-manager.ts), run with `node -e` in an empty
 * directory of its own. It is plain JavaScript text, not a function of this module, so that no
 * build step or test transform touches it: CommonJS, built-in modules only, and the one
 * sandbox-runtime entry file whose absolute path is its first argument.
 *
 * Requests (JSON lines on stdin): `{id, op: 'check'}` → `{id, ok, supported, errors, warnings}` (the
 * platform and dependency check of sandbox-runtime); `{id, op: 'wrap', command, config, cwd, commandId, hosts}` →
 * `{id, ok, argv}` (the network allow-list `hosts` is registered under `commandId`);
 * `{id, op: 'wrap', …, isolated: true}` wraps with no network at all (see below) and answers
 * `{id, ok, argv, isolated: true}` when it could;
 * `{id, op: 'release', commandId}` → `{id, ok}` (forgets the list, and tells sandbox-runtime the
 * wrapped command is over so that it removes the mount points it created). When stdin closes
 * (the orchestrator exited or stopped it) the session is reset and the process ends.
 *
 * Two sessions. A command that may reach some hosts is wrapped by the initialized session: its
 * own network namespace whose only way out is the session's proxy, reached through a pair of
 * socat relays started inside every sandbox (two more processes, a bash that waits for them to
 * listen, and the proxy with its host-side bridge started once). A command that may reach no host
 * at all (the default: no `sandbox.network.allow`) needs none of that: it is wrapped by a second
 * instance of sandbox-runtime's manager module that is never initialized, which the library then
 * wraps with `--unshare-net` and no proxy — a network namespace with only a loopback interface
 * (sandbox-runtime: "If no sockets provided, network is completely blocked"). The file system
 * rules are the same: the manager takes them from the per-command configuration either way. The
 * host checks the result (a fresh network namespace, no proxy socket bound in) and otherwise
 * answers without `isolated`, so that the caller wraps in the initialized session instead.
 */
export const sandboxHostProgram = String.raw`'use strict';
const fs = require('node:fs');
const readline = require('node:readline');
const { pathToFileURL } = require('node:url');
const runtimePath = process.argv[1];
// sandbox-runtime looks programs up with a synchronous 'which' child process on every wrap (the
// shell, bubblewrap): blocking this host's event loop for each agent while waves start. The
// answers do not change while the host runs; the first one for each name is kept.
{
  const childProcess = require('node:child_process');
  const spawnSync = childProcess.spawnSync;
  const found = new Map();
  childProcess.spawnSync = function (file, args, options) {
    if (file === 'which' && Array.isArray(args) && args.length === 1 && typeof args[0] === 'string') {
      const known = found.get(args[0]);
      if (known) return { ...known };
      const result = spawnSync.call(this, file, args, options);
      if (result.status === 0) found.set(args[0], result);
      return result;
    }
    return spawnSync.apply(this, arguments);
  };
  // Every wrap runs ripgrep over the wrapping process's working directory for files the library
  // always protects there (shell rc files, .git/hooks, .vscode…). This host's working directory is
  // its own empty directory (see sandbox-manager.ts: every path a plan names is decided by the plan
  // alone), so that scan can only find nothing; forking this process for it cost ~10 ms of its event
  // loop per wrap plus the rg process (bench:sandbox, docs/performance.md). While the directory is
  // still empty, 'rg … <this directory>' answers "no match" (exit 1) without a process; otherwise
  // (something appeared in it) the real ripgrep runs.
  const spawn = childProcess.spawn;
  const { EventEmitter } = require('node:events');
  const { Readable } = require('node:stream');
  childProcess.spawn = function (file, args) {
    if (file === 'rg' && Array.isArray(args) && args[args.length - 1] === process.cwd() && args.includes('--files')) {
      let empty = false;
      try {
        empty = fs.readdirSync(process.cwd()).length === 0;
      } catch {}
      if (empty) {
        const child = new EventEmitter();
        child.stdout = Readable.from([]);
        child.stderr = Readable.from([]);
        child.stdin = null;
        child.pid = undefined;
        child.exitCode = null;
        child.kill = () => false;
        process.nextTick(() => {
          child.exitCode = 1;
          child.emit('exit', 1, null);
          child.emit('close', 1, null);
        });
        return child;
      }
    }
    return spawn.apply(this, arguments);
  };
  require('node:module').syncBuiltinESMExports();
}
let session;
let isolatedSession;
// The manager module loaded once more under another URL: a module instance of its own, whose
// session is never initialized (no proxy). Its imports are the package's, shared with the other.
const startIsolated = () => {
  if (!isolatedSession) {
    const managerPath = require('node:path').join(require('node:path').dirname(runtimePath), 'sandbox', 'sandbox-manager.js');
    isolatedSession = import(pathToFileURL(managerPath).href + '?polywave-isolated').then(({ SandboxManager }) => {
      if (!SandboxManager || typeof SandboxManager.wrapWithSandboxArgv !== 'function') throw new Error('no SandboxManager in ' + managerPath);
      return SandboxManager;
    });
    isolatedSession.catch(() => undefined);
  }
  return isolatedSession;
};
// What the isolated wrap must look like: its own network namespace, no proxy socket bound in.
const isIsolatedWrap = (argv) => {
  const text = argv.join(' ');
  return / --unshare-net /.test(text) && !/claude-(http|socks)-[0-9a-f]+\.sock/.test(text) && !/ --setenv (HTTP_PROXY|HTTPS_PROXY|ALL_PROXY) /.test(text);
};
const wrapIsolated = async (request) => {
  let manager;
  try {
    manager = await startIsolated();
  } catch {
    return undefined;
  }
  const { argv } = await manager.wrapWithSandboxArgv(request.command, 'bash', request.config, undefined, request.cwd, { commandId: request.commandId });
  if (isIsolatedWrap(argv)) return argv;
  // Not what this host expects (another sandbox-runtime): undo the wrap, use the proxy session.
  manager.cleanupAfterCommand();
  return undefined;
};
const start = () => {
  if (!session) {
    session = import(pathToFileURL(runtimePath).href).then(async ({ SandboxManager }) => {
      await SandboxManager.initialize({ network: { allowedDomains: [], deniedDomains: [] }, filesystem: { denyRead: [], allowWrite: [], denyWrite: [] } });
      return SandboxManager;
    });
    session.catch(() => { session = undefined; });
  }
  return session;
};
const handle = async (request) => {
  if (request.op === 'check') {
    // The platform and dependency check (bubblewrap, socat, ripgrep, the seccomp helper), here where
    // the library is loaded anyway: the orchestrator then never loads it itself (~170 ms per process).
    const { SandboxManager } = await import(pathToFileURL(runtimePath).href);
    if (!SandboxManager.isSupportedPlatform()) return { supported: false, errors: [], warnings: [] };
    const check = SandboxManager.checkDependencies();
    return { supported: true, errors: check.errors, warnings: check.warnings };
  }
  if (request.op === 'wrap') {
    if (request.isolated === true && (!Array.isArray(request.hosts) || request.hosts.length === 0)) {
      const argv = await wrapIsolated(request);
      if (argv) return { argv, isolated: true };
    }
    const manager = await start();
    if (Array.isArray(request.hosts) && request.hosts.length > 0) manager.registerCommandNetworkLists(request.commandId, { allowedDomains: request.hosts });
    try {
      const { argv } = await manager.wrapWithSandboxArgv(request.command, 'bash', request.config, undefined, request.cwd, { commandId: request.commandId });
      return { argv };
    } catch (error) {
      manager.unregisterCommandNetworkLists(request.commandId);
      throw error;
    }
  }
  if (request.op === 'release') {
    if (request.isolated === true) {
      (await startIsolated()).cleanupAfterCommand();
      return {};
    }
    if (session) {
      const manager = await session;
      manager.unregisterCommandNetworkLists(request.commandId);
      manager.cleanupAfterCommand();
    }
    return {};
  }
  throw new Error('unknown request ' + String(request.op));
};
const send = (message) => process.stdout.write(JSON.stringify(message) + '\n');
const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on('line', (line) => {
  let request;
  try {
    request = JSON.parse(line);
  } catch {
    return;
  }
  handle(request).then(
    (answer) => send({ id: request.id, ok: true, ...answer }),
    (error) => send({ id: request.id, ok: false, message: String((error && error.message) || error) }),
  );
});
lines.on('close', async () => {
  try {
    if (session) await (await session).reset();
  } catch {}
  try {
    fs.rmdirSync(process.cwd());
  } catch {}
  process.exit(0);
});
`;
