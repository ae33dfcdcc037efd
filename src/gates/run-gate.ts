import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { runGit } from '../git/run-git.js';
import { gatePlan, isInPinnedCheckout, makeScratchDir, readSandboxSettings, releaseScratchDir, sandboxStatus, vanishedMountAttempts, wrapInSandbox, type SandboxedCommand } from '../sandbox/index.js';
import { ensureScratchParent } from '../sandbox/scratch-dirs.js';
import type { SandboxSettings } from '../sandbox/index.js';
import { withoutCredentials } from '../sandbox/credential-variables.js';
import { gitCommonDirOf } from '../store/lock-location.js';
import { ensureGateBuildCache, gateBuildCacheEnv } from './build-cache.js';
import { computeWorkspaceFingerprint, gateCacheKey, type GitRunner, type WorkspaceFingerprint } from './cache-key.js';
import { resolveGateRepo, type RepoRegistry } from './config.js';
import { detectFormatter } from './detect-formatter.js';
import { npmOfflineEnv, npmOfflineHint, npmRegistryHost } from './npm-offline.js';
import type { GateCache } from './gate-cache.js';
import type { OutputLimits } from './output.js';
import { runShellCommand, type ShellCommandOptions, type ShellCommandResult } from './run-command.js';
import { inPlaceOptOut, makeThrowawayCheckout, sharedCheckout, type CheckoutSet, type ThrowawayCheckout } from './throwaway-checkout.js';
import type { GatePhase, GateResult, GateSpec, GateTiming } from './types.js';
import type { ActivityEvent } from '../protocol/e40.js';

/** The gate events of the engine bus (src/engine/events.ts); `EventBus` satisfies {@link GateEventSink}. */
export type GateEvent =
  | { v: 1; type: 'gate-start'; gate: string; command: string; cwd: string }
  | { v: 1; type: 'gate-result'; gate: string; command: string; passed: boolean; from_cache: boolean; duration_ms: number }
  | ActivityEvent;

/** Where gate events go (an `EventBus`). */
export interface GateEventSink {
  emit(event: GateEvent): void;
}

/** A gate after normalization: defaults applied, ready to run. */
export interface PlannedGate {
  /** Position among the gates of this run (declaration order after the timing filter). */
  index: number;
  spec: GateSpec;
  type: string;
  command: string;
  required: boolean;
  phase: GatePhase;
  timing: GateTiming;
  parallelGroup?: string;
  repo?: string;
  fix: boolean;
  timeoutMs: number;
  /** File name stem for the full-output log. */
  logName: string;
}

/** Everything one run shares between its gates. */
export interface GateRunContext {
  repoDir: string;
  registry: () => Promise<RepoRegistry>;
  cache: GateCache | undefined;
  /** Workspace fingerprints per directory, computed once per run (cleared after a fix gate). */
  fingerprints: Map<string, Promise<WorkspaceFingerprint | undefined>>;
  now: () => Date;
  signal: AbortSignal | undefined;
  events: GateEventSink | undefined;
  env: Readonly<Record<string, string | undefined>> | undefined;
  outputLimits: Partial<OutputLimits> | undefined;
  git: GitRunner | undefined;
  docsOnly: boolean;
  killGraceMs: number | undefined;
  /** Timestamp shared by the log files of this run. */
  logStamp: string;
  /**
   * Run gate commands inside the OS sandbox when it is available (issue 11): the gate's directory,
   * a private TMPDIR and the repository's gate build cache (build-cache.ts) writable, `.git` read-only, secrets unreadable, network =
   * polywave.config.json's `sandbox.network.allow`. Where it is unavailable gates run as before.
   */
  sandbox?: boolean;
  /** The main checkout's sandbox settings, read once per run (before any gate of it ran). */
  sandboxSettings?: Map<string, Promise<SandboxSettings>>;
  /**
   * Run each sandboxed gate in a throwaway checkout of its directory's working tree
   * (throwaway-checkout.ts), so nothing it writes persists: post-merge gates, which run merged agent
   * code on the main checkout (outside attack X3 #18).
   */
  throwawayCheckout?: boolean;
  /** The run's throwaway checkouts, one per directory, shared by its gates (disposed by runGates). */
  checkouts?: CheckoutSet;
  /** Directories around the gate's directory its sandbox hides whole (a dispatch worker's `--dir`: see GatePlanInput.hiddenAround). */
  hiddenAround?: readonly string[];
}

/** Gate types that a docs-only wave skips (reference §4.3 step 3). */
const sourceGateTypes = new Set(['build', 'test', 'tests', 'lint', 'format']);

export const docsOnlySkipReason = 'docs-only wave: no compilable source files changed';

/** The result skeleton of a gate (a failure that never ran, until filled in). */
export function baseResult(plan: PlannedGate, cwd: string): GateResult {
  return {
    type: plan.type,
    command: plan.command,
    ...(plan.spec.description ? { description: plan.spec.description } : {}),
    required: plan.required,
    phase: plan.phase,
    ...(plan.parallelGroup ? { parallel_group: plan.parallelGroup } : {}),
    timing: plan.timing,
    ...(plan.repo ? { repo: plan.repo } : {}),
    cwd,
    exit_code: -1,
    signal: null,
    timed_out: false,
    canceled: false,
    duration_ms: 0,
    passed: false,
    skipped: false,
    from_cache: false,
    output: '',
    output_truncated: false,
  };
}

/** A gate that was not run, with the reason (`passed` says whether that counts as a pass). */
export function skippedResult(plan: PlannedGate, cwd: string, reason: string, options: { passed: boolean; canceled?: boolean }): GateResult {
  return { ...baseResult(plan, cwd), passed: options.passed, skipped: true, skip_reason: reason, canceled: options.canceled ?? false };
}

/**
 * Runs one gate and returns its result — never throws. Order: resolve `repo:` (E21 routing),
 * docs-only skip, E38 cache lookup (pre-merge, non-fix gates only), the command itself, then
 * store a passing result in the cache; a fix-mode gate invalidates the cache afterwards (E21).
 */
export async function executeGate(plan: PlannedGate, context: GateRunContext): Promise<GateResult> {
  const start = performance.now();
  const finish = (result: GateResult): GateResult => {
    context.events?.emit({ v: 1, type: 'gate-result', gate: result.type, command: result.command, passed: result.passed, from_cache: result.from_cache, duration_ms: result.duration_ms });
    return result;
  };
  const elapsed = (): number => Math.round(performance.now() - start);

  let cwd = context.repoDir;
  if (plan.repo) {
    const resolution = await resolveGateRepo(plan.repo, await context.registry(), context.repoDir);
    if (!resolution.ok) {
      context.events?.emit({ v: 1, type: 'gate-start', gate: plan.type, command: plan.command, cwd });
      return finish({ ...baseResult(plan, cwd), duration_ms: elapsed(), output: `${resolution.message}\n`, error: resolution.message });
    }
    cwd = resolution.dir;
  }

  if (context.docsOnly && sourceGateTypes.has(plan.type)) {
    return finish(skippedResult(plan, cwd, docsOnlySkipReason, { passed: true }));
  }
  if (context.signal?.aborted) return finish(skippedResult(plan, cwd, 'run canceled', { passed: false, canceled: true }));

  let command = plan.command;
  if (command.trim() === '') {
    if (plan.type !== 'format') {
      const message = 'gate has no command';
      return finish({ ...baseResult(plan, cwd), output: `${message}\n`, error: message });
    }
    const formatter = await detectFormatter(cwd);
    if (!formatter) return finish(skippedResult(plan, cwd, 'no formatter detected', { passed: true }));
    command = plan.fix ? formatter.fixCommand : formatter.checkCommand;
  }

  context.events?.emit({ v: 1, type: 'gate-start', gate: plan.type, command, cwd });

  // E38: only pre-merge, non-fix gates use the cache; post-merge gates always run fresh (E21).
  const cacheable = context.cache !== undefined && plan.timing === 'pre-merge' && !plan.fix;
  let key: string | undefined;
  let fingerprint: WorkspaceFingerprint | undefined;
  if (cacheable) {
    fingerprint = await fingerprintOf(cwd, context);
    if (fingerprint) {
      key = gateCacheKey(fingerprint, command, cwd);
      const hit = await context.cache!.get(key);
      if (hit?.passed) {
        return finish({
          ...baseResult(plan, cwd),
          command,
          exit_code: hit.exit_code,
          duration_ms: elapsed(),
          passed: true,
          from_cache: true,
          skip_reason: `cached at SHA ${hit.head}`,
          output: hit.output,
          output_truncated: hit.output_truncated,
          ...(hit.full_output_path ? { full_output_path: hit.full_output_path } : {}),
        });
      }
    }
  }

  const logPath = path.join(await gateLogDir(context.repoDir), `${context.logStamp}-${plan.logName}.log`);
  const shell = {
    timeoutMs: plan.timeoutMs,
    logPath,
    ...(context.signal ? { signal: context.signal } : {}),
    ...(context.outputLimits ? { outputLimits: context.outputLimits } : {}),
    ...(context.killGraceMs === undefined ? {} : { killGraceMs: context.killGraceMs }),
  };
  const sandboxed = context.sandbox === true ? await runInGateSandbox(command, cwd, { ...context, throwaway: context.throwawayCheckout === true }, shell) : undefined;
  if (sandboxed && 'error' in sandboxed) return finish({ ...baseResult(plan, cwd), command, duration_ms: elapsed(), output: `${sandboxed.error}\n`, error: sandboxed.error });
  const run = sandboxed ? sandboxed.run : await runShellCommand(command, { ...shell, cwd, ...(context.env ? { env: context.env } : {}) });
  let output = run.output;
  if (run.error) output = `${output}${output === '' || output.endsWith('\n') ? '' : '\n'}[polywave: ${run.error}]\n`;
  const passed = run.exitCode === 0 && !run.timedOut && !run.canceled && !run.error;
  // npm ran offline (no registry in the sandbox's allow-list) and missed a package: say how to allow it (X6 N7).
  const offlineHint = !passed && sandboxed?.npmOfflineRegistry !== undefined ? npmOfflineHint(output, sandboxed.npmOfflineRegistry) : undefined;
  if (offlineHint !== undefined) output = `${output}${output === '' || output.endsWith('\n') ? '' : '\n'}${offlineHint}\n`;
  const result: GateResult = {
    ...baseResult(plan, cwd),
    command,
    exit_code: run.exitCode,
    signal: run.signal,
    timed_out: run.timedOut,
    canceled: run.canceled,
    duration_ms: elapsed(),
    passed,
    output,
    output_truncated: run.outputTruncated,
    ...(run.fullOutputPath ? { full_output_path: run.fullOutputPath } : {}),
    ...(run.error ? { error: run.error } : {}),
  };

  if (plan.fix) {
    // E21: a fix-mode gate rewrote files; later gates must not see results of the old tree.
    context.fingerprints.clear();
    await context.cache?.invalidate();
  } else if (passed && cacheable && key && fingerprint) {
    await context.cache!.put(key, {
      gate_type: plan.type,
      command,
      cwd,
      head: fingerprint.head,
      passed: true,
      exit_code: run.exitCode,
      output: result.output,
      output_truncated: result.output_truncated,
      ...(result.full_output_path ? { full_output_path: result.full_output_path } : {}),
      duration_ms: result.duration_ms,
    });
  }
  return finish(result);
}

/**
 * Where full gate logs go: under the git common dir (`<common>/polywave/gate-logs/`), which no gate
 * or agent sandbox can write — not in the gate's own directory, where gate code could plant
 * symlinks under the log names it can predict (outside attack X3 #15); `.polywave-state/gates/` of
 * `repoDir` outside any repository.
 */
export function gateLogDir(repoDir: string): Promise<string> {
  return untrustedLogDir(repoDir, 'gate-logs');
}

/**
 * A directory for the full output of code polywave does not trust (gates, verify-build, scaffold
 * builds): `<git common dir>/polywave/<kind>/`, which no sandbox can write; outside a repository,
 * `<scratch parent>/logs/<kind>/` (this user's 0700 directory, hidden from every sandbox) — never
 * a directory the code itself could write and fill with symlinks (outside attacks X3 #15, X4 #1, #12).
 */
export async function untrustedLogDir(repoDir: string, kind: string): Promise<string> {
  const common = await gitCommonDirOf(path.resolve(repoDir)).catch(() => undefined);
  if (common) return path.join(common, 'polywave', kind);
  try {
    return path.join(ensureScratchParent(), 'logs', kind);
  } catch {
    // The scratch parent is another user's (a squatted shared /tmp): the directory itself, as before.
    return path.join(repoDir, '.polywave-state', kind);
  }
}

/**
 * The sandbox settings gates run with: `polywave.config.json` of the repository's MAIN checkout,
 * read once per gate run (`memo`) — never of an agent's worktree, and never after a gate of the same
 * run could have written one (outside attack X3 #16: gate 1 wrote a config in the worktree that made
 * gate 2's sandbox write the home directory). A bare repository's worktrees get the defaults.
 */
function gateSandboxSettings(gitCommonDir: string | undefined, cwd: string, memo?: Map<string, Promise<SandboxSettings>>): Promise<SandboxSettings> {
  const mainCheckout = gitCommonDir === undefined ? cwd : path.basename(gitCommonDir) === '.git' ? path.dirname(gitCommonDir) : undefined;
  // A20-44: a checkout of a bare repository (a worker's clone) has no main checkout: its settings are those of the
  // commit it is pinned to (a worker pins a gate job's checkout, and an agent job's worktree, to the wave's base —
  // confined there to the checkout, A20-45), else the defaults.
  if (mainCheckout === undefined) return isInPinnedCheckout(cwd) ? readSandboxSettings(cwd) : Promise.resolve({});
  let settings = memo?.get(mainCheckout);
  if (!settings) {
    settings = readSandboxSettings(mainCheckout);
    memo?.set(mainCheckout, settings);
  }
  return settings;
}

/** What {@link sandboxGateCommand} needs of a gate run. */
export interface SandboxGateOptions {
  env?: Readonly<Record<string, string | undefined>>;
  signal?: AbortSignal;
  /** Sandbox settings read in this run (see gateSandboxSettings). */
  sandboxSettings?: Map<string, Promise<SandboxSettings>>;
  /**
   * Run in a throwaway checkout of `cwd`'s working tree (throwaway-checkout.ts) instead of `cwd`
   * itself, unless the environment sets POLYWAVE_UNSAFE_GATES_IN_CHECKOUT; a checkout that cannot be
   * made is `{ error }` (GATE_CHECKOUT_UNAVAILABLE), never a run in `cwd`.
   */
  throwaway?: boolean;
  /**
   * Where a throwaway checkout is taken from and left for the caller to dispose (shared by the
   * commands of one run); without it each command gets its own, deleted with the command.
   */
  checkouts?: CheckoutSet;
  /** Hosts reachable besides the committed `sandbox.network.allow` (worktree setup's default install: the public registry). */
  allowHosts?: readonly string[];
  /** A new sandbox wrapper even when one for the same plan is reused (a retry after vanishedMountPoint). */
  fresh?: boolean;
  /** Directories around the gate's directory its sandbox hides whole (see GatePlanInput.hiddenAround). */
  hiddenAround?: readonly string[];
}

/** A gate command ready to run in the sandbox: where, and how to give its output back. */
export interface SandboxedGateCommand {
  wrapped: SandboxedCommand;
  /** The directory to run it in: `cwd`, or its place in the throwaway checkout. */
  cwd: string;
  /** The output with the throwaway checkout's paths written as `cwd`'s checkout's (identity otherwise). */
  mapOutput: (text: string) => string;
  /** The npm registry host when npm runs offline in it (not in `sandbox.network.allow`): a failed gate's output then says how to allow it. */
  npmOfflineRegistry?: string;
  /** Releases the wrapper and deletes the TMPDIR and the throwaway checkout. */
  dispose: () => Promise<void>;
}

/**
 * `command` wrapped for the OS sandbox with {@link gatePlan} (its directory `cwd` and the
 * repository's gate build cache writable, a scratch TMPDIR, the main checkout's sandbox settings,
 * the environment without credentials), or undefined when the sandbox is unavailable here (the
 * command then runs unsandboxed, as before issue 11), or `{ error }` when it cannot start.
 */
export async function sandboxGateCommand(command: string, cwd: string, context: SandboxGateOptions): Promise<SandboxedGateCommand | { error: string } | undefined> {
  const env = context.env ?? process.env;
  const status = await sandboxStatus({ env });
  if (!status.available) return undefined;
  // Under the scratch parent that agents' and other gates' sandboxes hide (outside attack #12).
  let tmp: string | undefined;
  let checkout: ThrowawayCheckout | undefined;
  try {
    if (context.throwaway === true && !inPlaceOptOut(env)) {
      try {
        checkout = context.checkouts ? await sharedCheckout(context.checkouts, cwd, env) : await makeThrowawayCheckout(cwd, env);
      } catch (error) {
        return { error: error instanceof Error ? error.message : String(error) };
      }
    }
    tmp = await makeScratchDir('polywave-gate-');
    const gitCommonDir = await runGit(['rev-parse', '--path-format=absolute', '--git-common-dir'], { cwd, env }).then(
      (output) => output.trim(),
      () => undefined,
    );
    const userHome = env.HOME ?? os.homedir();
    // The repository's own build cache, never the user's (outside attack #13): see build-cache.ts.
    const buildCache = ensureGateBuildCache(gitCommonDir ?? cwd, env);
    const plan = gatePlan({
      directory: checkout ? checkout.root : cwd,
      tmp,
      caches: [buildCache],
      ...(gitCommonDir ? { gitCommonDir } : {}),
      config: await gateSandboxSettings(gitCommonDir, cwd, context.sandboxSettings),
      userHome,
      env,
      // The throwaway checkout (its cwd inside it: a gate routed by `repo:` to a subdirectory) is a scratch directory itself: the scratch parent stays hidden around it.
      ...(checkout ? { directoryIsScratch: true } : {}),
      ...(context.hiddenAround && context.hiddenAround.length > 0 ? { hiddenAround: context.hiddenAround } : {}),
    });
    if (context.allowHosts && context.allowHosts.length > 0) plan.allowedHosts = [...new Set([...plan.allowedHosts, ...context.allowHosts])];
    // Gate code is the agents' code: no model keys or other credentials (X3 #17; workers strip them too).
    const stringEnv: Record<string, string> = {};
    for (const [name, value] of Object.entries(withoutCredentials(env))) if (value !== undefined) stringEnv[name] = value;
    const runIn = checkout ? checkout.cwd : cwd;
    Object.assign(stringEnv, gateBuildCacheEnv(buildCache, env, runIn));
    stringEnv.TMPDIR = tmp;
    // No way to the npm registry in this sandbox: npm/npx fail at once instead of retrying it for a minute (F9).
    const offline = npmOfflineEnv(runIn, plan.allowedHosts, env);
    Object.assign(stringEnv, offline);
    const wrapped = await wrapInSandbox(plan, command, { cwd: runIn, env: stringEnv, ...(context.signal ? { signal: context.signal } : {}), ...(context.fresh === true ? { fresh: true } : {}) });
    const gateTmp = tmp;
    const made = context.checkouts ? undefined : checkout;
    const mapOutput = checkout?.mapOutput;
    return {
      wrapped,
      cwd: runIn,
      ...(offline.npm_config_offline === 'true' ? { npmOfflineRegistry: npmRegistryHost(runIn, env) } : {}),
      mapOutput: mapOutput ?? ((text) => text),
      dispose: async () => {
        wrapped.release();
        await rm(gateTmp, { recursive: true, force: true }).catch(() => undefined);
        await made?.dispose();
      },
    };
  } catch (error) {
    if (tmp !== undefined) await releaseScratchDir(tmp);
    if (!context.checkouts) await checkout?.dispose();
    return { error: `cannot start the sandbox for this gate: ${error instanceof Error ? error.message : String(error)}` };
  }
}

/** A command run by {@link runInGateSandbox}: its result (output mapped back to `cwd`'s checkout) and where npm ran offline. */
export interface GateSandboxRun {
  run: ShellCommandResult;
  npmOfflineRegistry?: string;
}

/**
 * Runs `command` in {@link sandboxGateCommand}'s sandbox (runShellCommand: one output, its own process group) and
 * disposes the sandbox. When bubblewrap stopped before it ran anything on a mount point that vanished after the wrap
 * (vanishedMountPoint: a hidden directory deleted meanwhile — another run's scratch parent, another agent's worktree),
 * the command is started again with a fresh plan and wrap, which leave out what is gone. Undefined where the sandbox is
 * unavailable here (the caller runs the command unsandboxed, as before issue 11); `{ error }` when it cannot start.
 */
export async function runInGateSandbox(command: string, cwd: string, context: SandboxGateOptions, shell: Omit<ShellCommandOptions, 'cwd' | 'env'>): Promise<GateSandboxRun | { error: string } | undefined> {
  for (let attempt = 1; ; attempt += 1) {
    const prepared = await sandboxGateCommand(command, cwd, attempt > 1 ? { ...context, fresh: true } : context);
    if (!prepared || 'error' in prepared) return prepared;
    let run: ShellCommandResult;
    try {
      // The wrapped form is itself a shell command line (`bwrap … -- bash -c <command>`): the runner's
      // process group, timeout and output handling stay the same.
      run = await runShellCommand(prepared.wrapped.args[prepared.wrapped.args.length - 1]!, { ...shell, cwd: prepared.cwd, env: prepared.wrapped.env });
    } finally {
      await prepared.dispose();
    }
    const startedNothing = run.exitCode === 1 && !run.timedOut && !run.canceled && prepared.wrapped.ranNothing(run.output) !== undefined;
    if (startedNothing && attempt < vanishedMountAttempts) continue;
    return { run: { ...run, output: prepared.mapOutput(run.output) }, ...(prepared.npmOfflineRegistry !== undefined ? { npmOfflineRegistry: prepared.npmOfflineRegistry } : {}) };
  }
}

function fingerprintOf(cwd: string, context: GateRunContext): Promise<WorkspaceFingerprint | undefined> {
  let pending = context.fingerprints.get(cwd);
  if (!pending) {
    // Not a git repository (or git failed): run without the cache rather than fail the gate.
    pending = computeWorkspaceFingerprint(cwd, context.git ? { git: context.git } : {}).catch(() => undefined);
    context.fingerprints.set(cwd, pending);
  }
  return pending;
}
