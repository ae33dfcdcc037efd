/**
 * Whether the OS sandbox can run here, asked once per process: the platform, the Linux packages
 * sandbox-runtime needs (bubblewrap, socat, ripgrep), and a real probe (a command run inside the
 * sandbox), because bubblewrap can be installed yet unable to create namespaces (containers,
 * AppArmor user-namespace restrictions).
 */
import { spawn } from 'node:child_process';
import os from 'node:os';
import { withAbsolutePath } from './search-path.js';

/** The answer of {@link sandboxStatus}. */
export interface SandboxStatus {
  available: boolean;
  mechanism: 'bubblewrap' | 'seatbelt' | 'none';
  /** Debian package names that are missing (bubblewrap, socat, ripgrep). */
  missing: string[];
  /** One line: what was found, or why it cannot run. */
  detail: string;
}

/**
 * `POLYWAVE_SANDBOX=off` makes {@link sandboxStatus} answer "unavailable" (tests of the refusal,
 * the `--unsafe-no-sandbox` warning and the demo's notice on a machine that has bubblewrap).
 */
export const sandboxOverrideVariable = 'POLYWAVE_SANDBOX';

/** `=1`: run the sandbox without polywave's second seccomp filter (native or BPF), accepting the risks it closes. */
export const noDatagramFilterVariable = 'POLYWAVE_SANDBOX_NO_DATAGRAM_FILTER';

/** Error texts of sandbox-runtime's dependency check → the Debian package that fixes them. */
const packageOfError: ReadonlyArray<[RegExp, string]> = [
  [/bubblewrap|bwrap/i, 'bubblewrap'],
  [/socat/i, 'socat'],
  [/ripgrep|\brg\b/i, 'ripgrep'],
];

const cache = new Map<string, Promise<SandboxStatus>>();

/**
 * Whether agents can run inside the OS sandbox. Cached per process (per value of the override).
 * `env` defaults to the process environment; only {@link sandboxOverrideVariable} is read.
 */
export function sandboxStatus(options: { env?: Readonly<Record<string, string | undefined>> } = {}): Promise<SandboxStatus> {
  const env = options.env ?? process.env;
  const override = env[sandboxOverrideVariable]?.trim().toLowerCase() ?? '';
  const key = override;
  let answer = cache.get(key);
  if (!answer) {
    answer = probeSandbox(override);
    cache.set(key, answer);
  }
  return answer;
}

/**
 * Starts {@link sandboxStatus}'s probe now without waiting for it (the answer is cached): a run calls it
 * at its start, so the probe (~0.3–0.5 s: module load, the dependency checks, one sandboxed command)
 * overlaps the run's own first steps instead of delaying its first agent or gate.
 */
export function prewarmSandboxStatus(env: Readonly<Record<string, string | undefined>> | undefined): void {
  sandboxStatus(env ? { env } : {}).catch(() => undefined);
}

async function probeSandbox(override: string): Promise<SandboxStatus> {
  if (['off', '0', 'false', 'no', 'none', 'disabled'].includes(override)) {
    return { available: false, mechanism: 'none', missing: [], detail: `disabled by ${sandboxOverrideVariable}=${override}` };
  }
  const mechanism = process.platform === 'linux' ? 'bubblewrap' : process.platform === 'darwin' ? 'seatbelt' : 'none';
  if (mechanism === 'none') return { available: false, mechanism, missing: [], detail: `no OS sandbox for ${process.platform} (Linux: bubblewrap, macOS: Seatbelt)` };
  // The library's own checks run in the sandbox host (sandbox-manager.ts), which loads it anyway to wrap
  // commands: this process never loads it (~170 ms of every probing process's start).
  let check: Awaited<ReturnType<typeof import('./sandbox-manager.js').checkInHost>>;
  try {
    const { checkInHost } = await import('./sandbox-manager.js');
    check = await checkInHost();
  } catch (error) {
    return { available: false, mechanism: 'none', missing: [], detail: `@anthropic-ai/sandbox-runtime cannot load: ${error instanceof Error ? error.message : String(error)}` };
  }
  if (!check.supported) return { available: false, mechanism: 'none', missing: [], detail: 'this platform is not supported by the sandbox (WSL1?)' };
  if (check.errors.length > 0) {
    const missing = [...new Set(check.errors.flatMap((error) => packageOfError.filter(([pattern]) => pattern.test(error)).map(([, name]) => name)))];
    return { available: false, mechanism: 'none', missing, detail: check.errors.join('; ') };
  }
  // Fail closed: without its seccomp helper (an architecture it has no binary for, a package without
  // vendor/, a noexec mount) sandbox-runtime only warns, and the sandbox no longer stops socket(AF_UNIX):
  // an agent could reach any Unix socket it can see — the resident server's included, which runs
  // outside every sandbox (outside attack, 2026-12-02). Not a sandbox we run agents in.
  const seccompWarning = check.warnings.find((warning) => /seccomp/i.test(warning));
  if (seccompWarning) {
    return { available: false, mechanism: 'none', missing: [], detail: `${mechanism} runs here but without sandbox-runtime's seccomp filter, so Unix sockets would not be restricted: ${seccompWarning}` };
  }
  // Our own second filter (sandbox-runtime's lets socketpair(AF_UNIX, SOCK_DGRAM) and the keyring calls through: X2 #6,
  // X35-11) is the native program (native/polywave-seccomp.c, compiled at install when a C compiler is there) or, where it
  // was not built, the same filter as a BPF program bubblewrap loads (seccomp-program.ts): on Linux x64/arm64 every
  // polywave sandbox has it, no compiler needed. Claude Code's Bash, whose sandbox is Claude Code's, needs the native
  // program as its shell prefix (the claude-code backend refuses to start without it).
  try {
    const { releaseWrapped, sandboxSessionGeneration, wrapInHost } = await import('./sandbox-manager.js');
    const commandId = `probe-${process.pid}-${Date.now()}`;
    const generation = sandboxSessionGeneration();
    let result: { code: number | null; stderr: string };
    let isolated = false;
    try {
      const wrapped = await wrapInHost({ command: 'exit 0', config: { filesystem: { allowWrite: [], denyWrite: [], denyRead: [] }, network: { allowedDomains: [], deniedDomains: [] } }, cwd: os.tmpdir(), commandId, hosts: [] });
      isolated = wrapped.isolated;
      result = await runProbe(wrapped.argv);
    } finally {
      releaseWrapped(commandId, generation, isolated);
    }
    if (result.code !== 0) {
      return { available: false, mechanism: 'none', missing: [], detail: `${mechanism} is installed but cannot start a sandbox here (exit ${result.code}): ${result.stderr.trim().split('\n')[0] ?? ''}` };
    }
  } catch (error) {
    return { available: false, mechanism: 'none', missing: [], detail: `the sandbox failed to start: ${error instanceof Error ? error.message : String(error)}` };
  }
  const warnings = check.warnings.length > 0 ? ` (${check.warnings.join('; ')})` : '';
  return { available: true, mechanism, missing: [], detail: `${mechanism} via @anthropic-ai/sandbox-runtime${warnings}` };
}

function runProbe(argv: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    // (PATH's absolute entries only: `bash` and `bwrap` are found by name, from this process's cwd, X41-05)
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'], env: withAbsolutePath(process.env) });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < 4096) stderr += chunk.toString('utf8');
    });
    child.on('error', (error) => resolve({ code: -1, stderr: error.message }));
    child.on('close', (code) => resolve({ code, stderr }));
  });
}
