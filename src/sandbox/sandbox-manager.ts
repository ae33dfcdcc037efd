/**
 * The sandbox-runtime session of this process, kept in a small child process: the sandbox host.
 *
 * sandbox-runtime is built for a program whose working directory is the project: it protects shell
 * rc files, `.git/hooks`, `.vscode`… "in and below the working directory" of the process that
 * wraps, and where that directory is writable in a plan it creates empty placeholder files there
 * (`.gitmodules`, `.mcp.json`, `.idea`…) for the duration of a command. polywave's working
 * directory is the main checkout, which is writable for agents working there (solo, integration,
 * scout) and for post-merge gates: the placeholders would show up in git as changes nobody made.
 * The host runs in an empty directory of its own, so every path a plan names is decided by the
 * plan alone. It also holds the network proxy and its socket bridge (started only for a plan
 * that allows some hosts: see sandbox-host-program.ts); because the host is a child
 * whose pipes are unreferenced while nothing waits on it, this process can exit at any time, and
 * the host then resets the session and ends (its stdin closes).
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { sandboxHostProgram } from './sandbox-host-program.js';

/** What sandbox-runtime's `wrapWithSandboxArgv` takes as its per-command configuration. */
export interface HostWrapConfig {
  filesystem: { allowWrite: string[]; denyWrite: string[]; denyRead: string[]; allowRead?: string[] };
  network: { allowedDomains: string[]; deniedDomains: string[] };
}

interface Host {
  child: ChildProcessByStdio<Writable, Readable, Readable>;
  /** Its working directory: empty, its own. */
  directory: string;
  pending: Map<number, { resolve: (answer: Record<string, unknown>) => void; reject: (error: Error) => void }>;
  nextId: number;
  stderr: string;
  exited: Promise<void>;
  generation: number;
}

let host: Host | undefined;
let generation = 0;

function setReferenced(current: Host, referenced: boolean): void {
  // The process handle too, not only its pipes: a host killed with this process group (SIGTERM to
  // the group) closes its pipes first, and with them unreferenced and the handle too, the event loop
  // could empty before the host's exit was seen — a waiting request then never settled and Node
  // exited 13 without a word (issue 12, helper P4). Referenced while a request waits, its exit is
  // always seen and `gone` rejects the request.
  if (referenced) current.child.ref();
  else current.child.unref();
  for (const stream of [current.child.stdout, current.child.stdin, current.child.stderr] as unknown as Socket[]) {
    if (referenced) stream.ref?.();
    else stream.unref?.();
  }
}

function startHost(): Host {
  generation += 1;
  const directory = mkdtempSync(path.join(os.tmpdir(), 'polywave-sandbox-host-'));
  const runtimePath = createRequire(import.meta.url).resolve('@anthropic-ai/sandbox-runtime');
  const child = spawn(process.execPath, ['-e', sandboxHostProgram, runtimePath], { cwd: directory, stdio: ['pipe', 'pipe', 'pipe'] });
  const current: Host = { child, directory, pending: new Map(), nextId: 1, stderr: '', exited: new Promise((resolve) => child.once('close', () => resolve())), generation };
  child.unref();
  setReferenced(current, false);
  child.stdin.on('error', () => undefined);
  child.stderr.on('data', (chunk: Buffer) => {
    if (current.stderr.length < 8192) current.stderr += chunk.toString('utf8');
  });
  createInterface({ input: child.stdout, crlfDelay: Infinity }).on('line', (line) => {
    let answer: Record<string, unknown> & { id?: number };
    try {
      answer = JSON.parse(line) as Record<string, unknown> & { id?: number };
    } catch {
      return;
    }
    const waiter = answer.id === undefined ? undefined : current.pending.get(answer.id);
    if (!waiter) return;
    current.pending.delete(answer.id!);
    if (current.pending.size === 0) setReferenced(current, false);
    if (answer.ok === true) waiter.resolve(answer);
    else waiter.reject(new Error(String(answer.message ?? 'the sandbox host failed')));
  });
  const gone = (error?: Error) => {
    if (host === current) host = undefined;
    const reason = new Error(`the sandbox host ended${error ? `: ${error.message}` : ''}${current.stderr.trim() ? ` (${current.stderr.trim().split('\n').slice(-3).join(' | ')})` : ''}`);
    for (const waiter of current.pending.values()) waiter.reject(reason);
    current.pending.clear();
    rmSync(directory, { recursive: true, force: true });
  };
  child.once('error', (error) => gone(error));
  child.once('close', () => gone());
  return current;
}

function request(op: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  host ??= startHost();
  const current = host;
  const id = current.nextId++;
  return new Promise((resolve, reject) => {
    current.pending.set(id, { resolve, reject });
    setReferenced(current, true);
    current.child.stdin.write(`${JSON.stringify({ id, op, ...body })}\n`);
  });
}

/** Changes whenever a new host starts: what was built for an older one (wrappers) is stale. */
export function sandboxSessionGeneration(): number {
  return host?.generation ?? generation + 1;
}

/** What {@link wrapInHost} returns: the argv to spawn, and whether it has no network at all (no proxy). */
export interface HostWrapped {
  argv: string[];
  isolated: boolean;
}

/**
 * Wraps `command` (for bash) with sandbox-runtime in the host: the argv to spawn. `hosts` is the
 * network allow-list, registered under `commandId` until {@link releaseWrapped}. With no hosts
 * the host wraps without the network proxy when it can (`isolated`: a network namespace with
 * only loopback, no relay processes in the sandbox); otherwise through the proxy, which then
 * refuses every host.
 */
export async function wrapInHost(options: { command: string; config: HostWrapConfig; cwd: string; commandId: string; hosts: readonly string[] }): Promise<HostWrapped> {
  const answer = await request('wrap', {
    command: options.command,
    config: options.config,
    cwd: options.cwd,
    commandId: options.commandId,
    hosts: [...options.hosts],
    isolated: options.hosts.length === 0,
  });
  const argv = answer.argv;
  if (!Array.isArray(argv) || argv.length === 0 || !argv.every((entry) => typeof entry === 'string')) throw new Error('the sandbox host returned no command');
  return { argv: argv as string[], isolated: answer.isolated === true };
}

/** The running host's working directory (tests: it must stay empty, see the host program), or undefined. */
export function sandboxHostDirectory(): string | undefined {
  return host?.directory;
}

/** sandbox-runtime's platform and dependency check, run by the host (which loads the library anyway). */
export async function checkInHost(): Promise<{ supported: boolean; errors: string[]; warnings: string[] }> {
  const answer = await request('check', {});
  const strings = (value: unknown): string[] => (Array.isArray(value) ? value.filter((entry): entry is string => typeof entry === 'string') : []);
  return { supported: answer.supported === true, errors: strings(answer.errors), warnings: strings(answer.warnings) };
}

/** Tells the host of `generation` a wrapped command is over (its network list and placeholder mount points go). */
export function releaseWrapped(commandId: string, generation: number, isolated = false): void {
  if (!host || host.generation !== generation) return;
  void request('release', { commandId, isolated }).catch(() => undefined);
}

/** Stops the host: the proxy, the bridge and the session (tests; the next wrap starts a new one). */
export async function resetSandboxManager(): Promise<void> {
  const current = host;
  host = undefined;
  if (!current) return;
  current.child.stdin.end();
  const timer = setTimeout(() => current.child.kill('SIGKILL'), 5000);
  await current.exited;
  clearTimeout(timer);
}
