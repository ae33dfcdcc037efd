/**
 * Wraps a shell command so that it runs inside the OS sandbox with a {@link SandboxPlan}: the
 * result is a file, its arguments and the environment to spawn it with (the caller keeps its own
 * process handling: process group, timeout, output cap).
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureScratchParent } from './scratch-dirs.js';
import { seccompProgram, seccompProgramSupported } from './seccomp-program.js';
import { realOrResolved, type SandboxPlan } from './sandbox-plan.js';
import { releaseWrapped, sandboxSessionGeneration, wrapInHost } from './sandbox-manager.js';
import { noDatagramFilterVariable, sandboxStatus } from './sandbox-status.js';
import { sandboxUnavailableError } from './sandbox-unavailable-error.js';
import { distrustSearchRoot, sandboxPathVariable, sandboxSearchPath, withAbsolutePath } from './search-path.js';
import { codes } from '../errors/codes.js';
import { PolywaveError } from '../errors/polywave-error.js';

/**
 * sandbox-runtime's own temp directories: it points TMPDIR there and keeps them writable for every
 * command of every sandbox, a channel between agents when the directory exists on the host.
 */
const runtimeSharedTemp = ['/tmp/claude', '/private/tmp/claude'];

/** Single-quotes `value` for bash. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** A command ready to spawn inside the sandbox. */
export interface SandboxedCommand {
  file: string;
  args: string[];
  env: Record<string, string>;
  /** No network way out at all (the plan allows no host): no proxy, no relay processes. */
  isolated: boolean;
  /**
   * Call it when the process has exited (calling it twice is harmless): once no command uses the
   * wrapper any more and it has expired, its network allow-list (registered with the host proxy
   * under an unguessable id) and sandbox-runtime's placeholder mount points are released.
   */
  release(): void;
  /**
   * After a start that failed: the path bubblewrap stopped on when it ran NOTHING because that path vanished after the
   * wrap (see {@link vanishedMountPoint}) — undefined when the command ran (bubblewrap recorded its exit code in this
   * start's status file: a command that prints bubblewrap's line itself is not started again, outside attack X38-02) or
   * the failure was anything else. Call it before {@link release}.
   */
  ranNothing(output: string): string | undefined;
  /**
   * Whether a path the plan hides appeared after this sandbox was built (it was absent then, so nothing covers it): a
   * long-lived sandbox (the agent's tool executor) starts again before its next request (outside attack X38-03).
   */
  hiddenPathAppeared(): boolean;
}

/** Options of {@link wrapInSandbox}. */
export interface WrapInSandboxOptions {
  /** Working directory the caller will spawn the result in. */
  cwd: string;
  /** The environment the command sees (the sandbox adds its proxy variables). */
  env: Record<string, string>;
  signal?: AbortSignal;
  /** A new wrapper even when one for this plan is still reused (a retry after {@link vanishedMountPoint}). */
  fresh?: boolean;
}

/** The variable that carries the command into a reused sandbox wrapper. */
export const sandboxCommandVariable = 'POLYWAVE_SANDBOX_COMMAND';

/**
 * How long one wrapper is reused for the same plan, working directory and TMPDIR. Building it is
 * most of a wrap's cost (sandbox-runtime scans the writable directories with ripgrep for files it
 * always protects — shell rc files, `.git/hooks`, `.vscode` — and lays out the mounts); the
 * boundary itself (the plan) does not change, only that scan may miss such a file created within
 * this window.
 */
const wrapperReuseMs = 30_000;

/**
 * dist/native/polywave-seccomp (built with the native client when a C compiler is there; Linux x64/arm64),
 * or undefined. Found from this module: src/sandbox/, dist/sandbox/ and dist/bundle/ are all two levels
 * below the package directory.
 */
let datagramFilterPath: string | undefined | null = null;
export function datagramFilter(): string | undefined {
  if (datagramFilterPath === null) {
    const candidate = fileURLToPath(new URL('../../dist/native/polywave-seccomp', import.meta.url));
    datagramFilterPath = process.platform === 'linux' && existsSync(candidate) ? candidate : undefined;
  }
  return datagramFilterPath;
}

/**
 * The variable that makes polywave use its BPF program (bubblewrap `--seccomp`) even where dist/native/polywave-seccomp
 * was built: `bpf`. For tests and for a native program that cannot apply its filter on some kernel.
 */
export const seccompProgramVariable = 'POLYWAVE_SECCOMP_PROGRAM';

/** The variable naming a start's bubblewrap status file, and the descriptor bubblewrap writes it on. */
const bwrapStatusVariable = 'POLYWAVE_BWRAP_STATUS';
const statusDescriptor = 57;

/** The descriptor the BPF program reaches bubblewrap on (opened by the shell that starts bubblewrap; high, clear of the low ones sandbox-runtime's arguments-file form uses: X38-06 saw 9 taken). */
const seccompDescriptor = 58;

/**
 * polywave's second seccomp filter for one wrapper (see native/polywave-seccomp.c and seccomp-program.ts): the native
 * program that runs the command (`native`), else the same filter as a BPF program bubblewrap loads (`bpf`: a file under
 * the scratch parent, which every sandbox hides), else none (not Linux x64/arm64, or the explicit opt-out).
 */
export function secondFilter(env: Readonly<Record<string, string | undefined>> = process.env): { kind: 'native'; path: string } | { kind: 'bpf'; file: string } | undefined {
  if (env[noDatagramFilterVariable] === '1') return undefined;
  const native = env[seccompProgramVariable] === 'bpf' ? undefined : datagramFilter();
  if (native !== undefined) return { kind: 'native', path: native };
  return seccompProgramSupported() ? { kind: 'bpf', file: seccompProgramFile() } : undefined;
}

let programFile: string | undefined;
/** The BPF program written once per process (content-addressed, read-only, written whole then renamed into place). */
function seccompProgramFile(): string {
  if (programFile !== undefined && existsSync(programFile)) return programFile;
  const bytes = seccompProgram();
  const file = path.join(ensureScratchParent(), `polywave-seccomp-${process.arch}-${createHash('sha256').update(bytes).digest('hex').slice(0, 16)}.bpf`);
  let current: Buffer | undefined;
  try {
    current = readFileSync(file);
  } catch {
    current = undefined;
  }
  if (current === undefined || !current.equals(bytes)) {
    const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    writeFileSync(temporary, bytes, { mode: 0o400, flag: 'wx' });
    renameSync(temporary, file);
  }
  programFile = file;
  return file;
}

/** A wrapper built once and reused: `bwrap … bash -c 'exec bash -c "$POLYWAVE_SANDBOX_COMMAND"'`. */
interface Wrapper {
  key: string;
  file: string;
  args: string[];
  /** Wrapped without the network proxy (no host allowed): no network namespace exit at all. */
  isolated: boolean;
  expires: number;
  /**
   * The unreadable paths that existed when it was built: bubblewrap mounts over each, and fails to
   * start when one has gone since (another agent's worktree removed, a scratch directory deleted).
   */
  deniedPresent: string[];
  /**
   * The unreadable paths that did NOT exist when it was built: nothing is mounted over them, so one that appears later
   * (a hidden directory re-created after a brief absence) would be readable through this wrapper (outside attack X38-03).
   */
  deniedAbsent: string[];
  inFlight: number;
  /** Forgets the wrapper's network registration (when it expired and no command uses it). */
  dispose: () => void;
}

const wrappers = new Map<string, Promise<Wrapper>>();

function retire(wrapper: Wrapper): void {
  if (wrapper.inFlight > 0 || Date.now() < wrapper.expires) return;
  void wrappers.get(wrapper.key)?.then((current) => {
    if (current === wrapper) wrappers.delete(wrapper.key);
  });
  wrapper.dispose();
}

async function buildWrapper(key: string, plan: SandboxPlan, options: WrapInSandboxOptions): Promise<Wrapper> {
  // The proxy tells commands apart by this id (their proxy user name): unguessable, one per wrapper.
  const commandId = randomBytes(18).toString('base64url');
  // sandbox-runtime sets TMPDIR to its shared /tmp/claude; the plan's private TMPDIR wins.
  const tmpdir = options.env.TMPDIR;
  // SANDBOX_RUNTIME=1 is what sandbox-runtime's proxy environment sets; a wrap without the proxy
  // (no host allowed) gets it here, so that every sandboxed command sees the same (the tool
  // executor's process sweep goes by it).
  // Through polywave-seccomp when it was built: one more filter, refusing Unix datagram socketpairs
  // (sandbox-runtime's own lets them through; native/polywave-seccomp.c says why).
  const second = secondFilter();
  const filter = second?.kind === 'native' ? second.path : undefined;
  // Every descriptor above stderr is closed first (outside attack X18-03/04): one that polywave's own launcher left
  // open without close-on-exec (a directory: write anywhere through /proc/self/fd/N/) would reach every command.
  const closeInherited = 'for _pw_fd in /proc/self/fd/*; do _pw_fd=${_pw_fd##*/}; case $_pw_fd in 0|1|2) ;; *) eval "exec $_pw_fd>&-" 2>/dev/null;; esac; done; unset _pw_fd; ';
  // The sandbox-side PATH (search-path.ts sandboxSearchPath: the checkout's own bin directories, never searched on the
  // host) is exported only here, inside the sandbox; the command's shell is the one running this runner (`$BASH`, found
  // with the host-side PATH), not one the sandbox PATH finds (an agent's own `bin/bash` still runs only inside).
  const sandboxPath = `if [ -n "\${${sandboxPathVariable}+x}" ]; then export PATH="$${sandboxPathVariable}"; unset ${sandboxPathVariable}; fi; `;
  const runner = `export SANDBOX_RUNTIME=1; unset ${bwrapStatusVariable}; ${closeInherited}${sandboxPath}${tmpdir !== undefined && tmpdir !== '' ? `export TMPDIR=${shellQuote(tmpdir)}; ` : ''}exec ${filter ? `${shellQuote(filter)} ` : ''}"\${BASH:-bash}" -c "$${sandboxCommandVariable}"`;
  const sharedTemp = runtimeSharedTemp.filter((entry) => existsSync(entry));
  // A writable directory inside an unreadable one (the own HOME/TMPDIR inside the denied scratch
  // parent, scratch-dirs.ts) is readable again: on Linux the write bind already restores it over the
  // tmpfs (sandbox-runtime then skips this), Seatbelt needs the read allowed explicitly.
  // The plan's `readable` paths (the tool roots of a hidden home, sandbox-plan.ts homeView) are
  // read-only carve-outs: bubblewrap binds each back read-only over the tmpfs of the denied home.
  const readCarveOuts = [...new Set([...plan.writable.filter((entry) => plan.unreadable.some((denied) => entry !== denied && entry.startsWith(`${denied}/`))), ...(plan.readable ?? [])])];
  const generation = sandboxSessionGeneration();
  const deniedPresent: string[] = [];
  const deniedAbsent: string[] = [];
  for (const entry of plan.unreadable) (existsSync(entry) ? deniedPresent : deniedAbsent).push(entry);
  const {
    argv: [file, ...args],
    isolated,
  } = await wrapInHost({
    command: runner,
    config: {
      filesystem: {
        allowWrite: [...plan.writable],
        denyWrite: [...plan.readOnlyWithin, ...sharedTemp],
        denyRead: [...plan.unreadable],
        ...(readCarveOuts.length > 0 ? { allowRead: readCarveOuts } : {}),
      },
      network: { allowedDomains: [], deniedDomains: [] },
      // files whose credential spans the sandbox sees replaced (sandbox-runtime's structured masking; nothing is
      // substituted back: no host is named for it), denied whole when the pattern no longer matches
      ...(plan.maskedFiles && plan.maskedFiles.length > 0
        ? { credentials: { files: plan.maskedFiles.map((entry) => ({ path: entry.path, mode: 'mask' as const, extract: entry.extract, onExtractNoMatch: 'deny' as const, injectHosts: [] })) } }
        : {}),
    },
    cwd: options.cwd,
    commandId,
    hosts: plan.allowedHosts,
  });
  let disposed = false;
  const dispose = (): void => {
    if (disposed) return;
    disposed = true;
    releaseWrapped(commandId, generation, isolated);
  };
  // A private System V IPC / POSIX message queue namespace (outside attack X35-12: sandbox-runtime's bubblewrap shares
  // the host's, whose shared memory segments, queues and semaphores a command could read and write). Fail closed on
  // Linux when the command is not the bubblewrap line this expects.
  const withIpc = privateIpc(args);
  if (process.platform === 'linux' && withIpc === undefined) {
    dispose();
    throw new PolywaveError({ code: codes.sandboxUnavailable, message: 'the OS sandbox for agents is unavailable (sandbox-runtime returned a command polywave does not recognise: no bubblewrap options to give it a private IPC namespace); update polywave and @anthropic-ai/sandbox-runtime together', exitCode: 2 });
  }
  if (withIpc) args.splice(0, args.length, ...withIpc);
  // bubblewrap's status of each start goes to the file that start names (see ranNothing).
  const withStatus = afterBwrapWord(args, `--json-status-fd ${statusDescriptor}`, `exec ${statusDescriptor}>>"\${${bwrapStatusVariable}:-/dev/null}"; `);
  if (withStatus) args.splice(0, args.length, ...withStatus);
  // No native filter program here: bubblewrap loads the same filter from polywave's BPF program (fail closed when
  // the line is not one this can give it to).
  if (second?.kind === 'bpf') {
    // Bubblewrap applies the program to everything in the sandbox, sandbox-runtime's network bridge included, and
    // socat needs the datagram pairs the program refuses: a sandbox with hosts allowed needs the native program,
    // which applies the filter to the command alone. Fail closed (never a sandbox without the datagram rule).
    if (!isolated) {
      dispose();
      throw new PolywaveError({
        code: codes.sandboxUnavailable,
        message: `the OS sandbox for agents is unavailable for a command with network hosts allowed (${plan.allowedHosts.join(', ')}): polywave's seccomp filter for it needs dist/native/polywave-seccomp, which was not built here (no C compiler at install?) — install gcc or clang and run \`npm rebuild polywave\`, or set ${noDatagramFilterVariable}=1 to run without the filter (Unix datagram socketpairs and the kernel keyring calls are then allowed)`,
        exitCode: 2,
      });
    }
    const withProgram = afterBwrapWord(args, `--seccomp ${seccompDescriptor}`, `exec ${seccompDescriptor}<${shellQuote(second.file)}; `);
    if (withProgram === undefined) {
      dispose();
      throw new PolywaveError({ code: codes.sandboxUnavailable, message: "the OS sandbox for agents is unavailable (sandbox-runtime returned a command polywave does not recognise: no bubblewrap line to give polywave's seccomp filter to); update polywave and @anthropic-ai/sandbox-runtime together", exitCode: 2 });
    }
    args.splice(0, args.length, ...withProgram);
  }
  if (plan.emptyReadOnly && plan.emptyReadOnly.length > 0) args.splice(0, args.length, ...remountReadOnly(args, plan.emptyReadOnly));
  if (plan.boundCopies && plan.boundCopies.length > 0) args.splice(0, args.length, ...bindCopies(args, plan.boundCopies));
  const wrapper: Wrapper = { key, file: file!, args, isolated, expires: Date.now() + wrapperReuseMs, deniedPresent, deniedAbsent, inFlight: 0, dispose };
  setTimeout(() => retire(wrapper), wrapperReuseMs + 50).unref();
  return wrapper;
}

/**
 * Where bubblewrap's options end in the shell string sandbox-runtime returns: the index of the ` -- <shell> -c ` that
 * follows them, found OUTSIDE quotes (outside attack X36-09: a path named `a -- q -c b` in a quoted mount argument
 * matched a plain search, and options inserted there landed inside the path). -1 when there is none.
 */
export function bwrapOptionsEnd(arg: string): number {
  const tail = /^ -- (?:'[^']*'|[^\s'"]+) -c /;
  return firstUnquoted(arg, (index) => arg[index] === ' ' && tail.test(arg.slice(index, index + 4096)));
}

/**
 * The index just after the `bwrap` word of sandbox-runtime's shell string, outside quotes: the line's first word, or —
 * for a profile too long for one argument — the word after `srt-args <file>` (`/bin/sh -c '…' srt-args /proc/…/fd/N
 * bwrap … --args 3 -- …`, outside attack X37-01). -1 when there is none.
 */
export function bwrapWordEnd(arg: string): number {
  const at = firstUnquoted(arg, (index) => (index === 0 || arg[index - 1] === ' ') && /^(?:\/[^\s'"]*\/)?bwrap(?= )/.test(arg.slice(index, index + 4096)));
  return at < 0 ? -1 : arg.indexOf(' ', at);
}

/** The first index of `arg` outside single quotes, double quotes and backslash escapes where `matches` holds; -1 if none. */
function firstUnquoted(arg: string, matches: (index: number) => boolean): number {
  let quote: "'" | '"' | undefined;
  for (let index = 0; index < arg.length; index += 1) {
    const char = arg[index]!;
    if (quote === "'") {
      if (char === "'") quote = undefined;
      continue;
    }
    if (char === '\\') {
      index += 1;
      continue;
    }
    if (quote === '"') {
      if (char === '"') quote = undefined;
      continue;
    }
    if (char === "'" || char === '"') {
      quote = char;
      continue;
    }
    if (matches(index)) return index;
  }
  return -1;
}

/**
 * bubblewrap's `--unshare-ipc` added to the bubblewrap command sandbox-runtime returned (before the ` -- <shell> -c `
 * that ends its options, like {@link remountReadOnly}'s); undefined when no argument is such a command.
 */
export function privateIpc(args: readonly string[]): string[] | undefined {
  return afterBwrapWord(args, '--unshare-ipc');
}

/**
 * `options` added right after the `bwrap` word (outside quotes, before all of its options) of the bubblewrap command
 * sandbox-runtime returned, and `prefix` (shell text) before that whole command line; undefined when no argument is
 * such a command.
 */
function afterBwrapWord(args: readonly string[], options: string, prefix = ''): string[] | undefined {
  let added = false;
  const result = args.map((arg) => {
    if (!arg.includes('bwrap')) return arg;
    const word = bwrapWordEnd(arg);
    if (word < 0 || bwrapOptionsEnd(arg) < word) return arg;
    added = true;
    return `${prefix}${arg.slice(0, word)} ${options}${arg.slice(word)}`;
  });
  return added ? result : undefined;
}

/**
 * bubblewrap's `--remount-ro` for each of `directories` (the empty views of denied directories:
 * sandbox-runtime mounts a writable tmpfs there), placed after every mount — right before the `--`
 * that ends bubblewrap's options, ` -- <shell> -c ` in the shell string sandbox-runtime returns (inline or
 * with its mounts in an arguments file, the tail is the same) — so that the binds inside (a worktree,
 * the `.git` carve-out) are made first and keep their own modes. Without that marker (another
 * platform's sandbox) the arguments are left as they are: the view stays writable, still empty and
 * private to the sandbox.
 */
export function remountReadOnly(args: readonly string[], directories: readonly string[]): string[] {
  return args.map((arg) => {
    if (!arg.includes('bwrap')) return arg;
    const end = bwrapOptionsEnd(arg);
    if (end < 0) return arg;
    // only a directory sandbox-runtime gave a tmpfs of its own (bubblewrap refuses to remount a path that is no mount point)
    const mounted = tmpfsLandings(arg);
    const remounts = directories
      .map(realOrResolved)
      .filter((directory) => mounted.has(directory))
      .map((directory) => ` --remount-ro ${shellQuote(directory)}`)
      .join('');
    return `${arg.slice(0, end)}${remounts}${arg.slice(end)}`;
  });
}

/**
 * bubblewrap's `--ro-bind <source> <path>` for each of `copies` (sandbox-plan.ts `boundCopies`), after every
 * mount like {@link remountReadOnly}'s, so it wins over the path's deny. Without the marker the path stays as the
 * plan has it: unreadable.
 */
export function bindCopies(args: readonly string[], copies: ReadonlyArray<{ path: string; source: string }>): string[] {
  return args.map((arg) => {
    if (!arg.includes('bwrap')) return arg;
    const end = bwrapOptionsEnd(arg);
    if (end < 0) return arg;
    const binds = copies.map((copy) => ` --ro-bind ${shellQuote(copy.source)} ${shellQuote(realOrResolved(copy.path))}`).join('');
    return `${arg.slice(0, end)}${binds}${arg.slice(end)}`;
  });
}

/**
 * The `--tmpfs` destinations of a bubblewrap command string: on the line, or — for a long profile —
 * in the arguments file sandbox-runtime's host process keeps open (`/proc/<pid>/fd/<n>`, NUL-separated).
 */
function tmpfsLandings(command: string): Set<string> {
  const landings = new Set<string>();
  // a quote in a path is written `'\''` or, by sandbox-runtime, `'"'"'` (outside attack X37-07: that form was not read,
  // so a hidden directory whose path holds a quote kept a writable empty view)
  for (const match of command.matchAll(/ --tmpfs (?:'((?:[^']|'\\''|'"'"')*)'|([^\s'"]+))/g)) landings.add((match[1] ?? match[2] ?? '').replace(/'\\''|'"'"'/g, "'"));
  const profile = / srt-args '?(\/proc\/\d+\/fd\/\d+)'? /.exec(command);
  if (profile) {
    try {
      const words = readFileSync(profile[1]!, 'utf8').split('\0');
      words.forEach((word, index) => {
        if (word === '--tmpfs' && words[index + 1] !== undefined) landings.add(words[index + 1]!);
      });
    } catch {
      // unreadable: nothing is remounted (the views stay writable, still empty and private)
    }
  }
  return landings;
}

/**
 * Builds the sandboxed form of `command` (run by bash): writes outside `plan.writable` fail
 * (read-only file system), `plan.readOnlyWithin` stays read-only, `plan.unreadable` cannot be read,
 * the network is a separate namespace whose only way out is the host proxy allowing
 * `plan.allowedHosts` (with no hosts: no way out and no proxy), and the process tree dies with
 * the sandbox (PID namespace).
 * The command reaches the sandbox in {@link sandboxCommandVariable}; the wrapper around it is
 * reused for the same plan, directory and TMPDIR for a short while.
 * Throws SANDBOX_UNAVAILABLE when the sandbox cannot run here.
 */
export async function wrapInSandbox(plan: SandboxPlan, command: string, options: WrapInSandboxOptions): Promise<SandboxedCommand> {
  // (the wrapper's `bash`/`bwrap` start with the agent's directory as cwd: its repository is distrusted first, X43-03)
  distrustSearchRoot(options.cwd);
  const status = await sandboxStatus({ env: options.env });
  if (!status.available) throw sandboxUnavailableError(status);
  // A wrapper belongs to one sandbox host (session): a new host means new wrappers.
  const key = JSON.stringify([sandboxSessionGeneration(), secondFilter()?.kind ?? 'none', plan.writable, plan.readOnlyWithin, plan.unreadable, plan.readable ?? [], plan.emptyReadOnly ?? [], plan.maskedFiles ?? [], plan.boundCopies ?? [], plan.allowedHosts, options.cwd, options.env.TMPDIR ?? '']);
  let wrapper = await wrappers.get(key)?.catch(() => undefined);
  if (options.fresh === true || !wrapper || Date.now() >= wrapper.expires || !wrapper.deniedPresent.every((entry) => existsSync(entry)) || wrapper.deniedAbsent.some((entry) => existsSync(entry))) {
    if (wrapper) retire(wrapper);
    const building = buildWrapper(key, plan, options);
    wrappers.set(key, building);
    building.catch(() => {
      if (wrappers.get(key) === building) wrappers.delete(key);
    });
    wrapper = await building;
  }
  const used = wrapper;
  used.inFlight += 1;
  // This start's bubblewrap status (`--json-status-fd`): its `exit-code` record is written only when the command ran.
  const statusFile = path.join(ensureScratchParent(), `bwrap-status-${process.pid}-${randomBytes(8).toString('hex')}`);
  const readStatus = (): string | undefined => {
    try {
      return readFileSync(statusFile, 'utf8');
    } catch {
      return undefined;
    }
  };
  let released = false;
  let statusAtRelease: string | undefined;
  const release = (): void => {
    if (released) return;
    released = true;
    used.inFlight -= 1;
    retire(used);
    statusAtRelease = readStatus();
    rmSync(statusFile, { force: true });
  };
  const ranNothing = (output: string): string | undefined => {
    const vanished = vanishedMountPoint(output);
    if (vanished === undefined) return undefined;
    const recorded = released ? statusAtRelease : readStatus();
    // no status at all: not shown that bubblewrap stopped before the command (never started again on a guess)
    return recorded !== undefined && !recorded.includes('"exit-code"') ? vanished : undefined;
  };
  // (the wrapper's `bash` and the `bwrap` in it are found on PATH's absolute entries only: started with an agent's
  // worktree as cwd, an empty or relative entry ran the agent's own `bash` on the host, X41-02/05)
  return { file: used.file, args: [...used.args], isolated: used.isolated, env: withSandboxPath(withAbsolutePath({ ...options.env, [sandboxCommandVariable]: command, [bwrapStatusVariable]: statusFile }), options.env.PATH, options.cwd), release, ranNothing, hiddenPathAppeared: () => used.deniedAbsent.some((entry) => existsSync(entry)) };
}

/**
 * `env` (the host-side environment of the wrapper: PATH's absolute entries outside the repositories only) with the
 * sandbox-side PATH in {@link sandboxPathVariable} when it differs: the runner inside the sandbox exports it.
 */
function withSandboxPath(env: Record<string, string>, requested: string | undefined, cwd: string): Record<string, string> {
  const inner = sandboxSearchPath(requested, cwd);
  if (inner === undefined || inner === env.PATH) return env;
  return { ...env, [sandboxPathVariable]: inner };
}

/**
 * How often a sandboxed start is tried in all when bubblewrap stopped on a mount point that vanished (see
 * {@link vanishedMountPoint}): a directory deleted piece by piece can vanish again between two tries.
 */
export const vanishedMountAttempts = 3;

/**
 * The path bubblewrap stopped on, before it ran anything, because it vanished after the sandbox's command line was
 * built: a directory the plan hides (another agent's worktree, another run's scratch parent) deleted in between, whose
 * mount point bubblewrap then cannot make on the read-only root (`bwrap: Can't mkdir parents for P: Read-only file
 * system`). Seen in CI: an agent's first tool call failed, so its commit lost the file that call wrote. The command
 * never started, so starting it again with a fresh wrap (which leaves out what is gone) is safe. Undefined unless
 * `output` is exactly one such bubblewrap line and P is gone now.
 */
export function vanishedMountPoint(output: string): string | undefined {
  const line = output.trim();
  if (line.includes('\n')) return undefined;
  const match = /^bwrap: Can't (?:mkdir parents for|mkdir|create file at|find source path|mount tmpfs on) (\/.*): [A-Za-z][A-Za-z -]*$/.exec(line);
  if (!match) return undefined;
  return existsSync(match[1]!) ? undefined : match[1];
}
