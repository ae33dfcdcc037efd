import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runSandboxedShell } from '../../gates/sandboxed-shell.js';
import { disposeCheckouts, type CheckoutSet } from '../../gates/throwaway-checkout.js';
import { activeImplPath } from '../../engine/isolation-hook.js';
import { canonicalPath } from '../../engine/worktrees.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { createGit } from '../../git/git-cli.js';
import type { ImplManifest } from '../../protocol/schema/impl-schema.js';
import { repoKey } from '../../protocol/waves.js';
import { listManifestFiles } from '../../store/list-manifests.js';
import { loadImpl } from '../../store/manifest-file.js';
import { configuredCommands, locateProjectConfig, readProjectConfig } from '../../store/project-config.js';
import type { CommandIo, CommandResult } from '../io.js';
import { repoDirOption } from './repo-dir-option.js';

const terminalStates = new Set(['COMPLETE', 'NOT_SUITABLE']);

/**
 * The gates' environment: `GOWORK=off`, and without the variables git sets for its hooks (`GIT_DIR`,
 * `GIT_INDEX_FILE`…), which would point a gate's git at the real checkout instead of the throwaway one.
 */
function gateEnvironment(env: Readonly<Record<string, string | undefined>>): Record<string, string | undefined> {
  const result: Record<string, string | undefined> = { ...env, GOWORK: 'off' };
  for (const name of ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE', 'GIT_COMMON_DIR', 'GIT_OBJECT_DIRECTORY', 'GIT_PREFIX']) delete result[name];
  return result;
}

async function activeManifests(root: string, mainRoot: string): Promise<ImplManifest[]> {
  const candidates: string[] = [];
  for (const base of [root, mainRoot]) {
    const marker = path.join(base, activeImplPath);
    if (!existsSync(marker)) continue;
    const recorded = readFileSync(marker, 'utf8').trim();
    if (recorded !== '') candidates.push(path.resolve(base, recorded));
  }
  candidates.push(...listManifestFiles(path.join(root, 'docs', 'IMPL'), 'IMPL').filter((file) => path.basename(path.dirname(file)) !== 'complete').sort());
  const manifests: ImplManifest[] = [];
  for (const file of [...new Set(candidates)]) {
    if (!existsSync(file)) continue;
    try {
      const manifest = (await loadImpl(file)).parsed.manifest;
      if (manifest && !terminalStates.has((manifest.state ?? '').trim())) manifests.push(manifest);
    } catch {
      // an unreadable IMPL cannot name gates; validate reports it
    }
  }
  return manifests;
}

/** The first gate of `type` in an active IMPL that targets this repository (gate `repo` empty or one of its names). */
function gateCommand(manifests: readonly ImplManifest[], type: string, names: ReadonlySet<string>): { command: string; source: string } | undefined {
  for (const manifest of manifests) {
    const gate = (manifest.quality_gates?.gates ?? []).find((candidate) => candidate.type === type && (candidate.command ?? '').trim() !== '' && (repoKey(candidate.repo) === '' || names.has(repoKey(candidate.repo).toLowerCase())));
    if (gate) return { command: gate.command!.trim(), source: `IMPL ${manifest.feature_slug ?? ''} ${type} gate`.replace(/\s+/g, ' ') };
  }
  return undefined;
}

/**
 * `pre-commit-check [--repo-dir D]` — the M4 pre-commit hook entry point: run the lint gate,
 * then the build gate, of the active IMPL (`.polywave-state/active-impl`, else the first active
 * `docs/IMPL/IMPL-*.yaml`) that target this repository, else `lint_command`/`build_command` of
 * polywave.config.json, with `GOWORK=off`. In a worktree the repository is the worktree. The
 * commands run like quality gates: in the OS sandbox (a throwaway checkout of the working tree, the
 * gate build cache), never with credentials; unsandboxed where the sandbox is unavailable.
 * Nothing configured: a silent pass. Gate output goes to stderr; stdout stays empty.
 * Exit 0 passed, 1 a gate failed (B003_LINT_FAILED / B001_BUILD_FAILED), 2 not a git repository.
 */
export async function run(_args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const start = repoDirOption(options, io) ?? io.cwd;
  const git = createGit(start, { env: io.env });
  if (!(await git.isRepository())) throw new PolywaveError({ code: 'D011_REPO_ROOT_INVALID', message: `${start} is not inside a git repository` });
  const root = await canonicalPath(await git.topLevel());
  const commonDir = (await git.run(['rev-parse', '--path-format=absolute', '--git-common-dir'])).stdout.trim();
  const mainRoot = path.basename(commonDir) === '.git' ? path.dirname(commonDir) : root;
  const names = new Set([path.basename(root), path.basename(mainRoot)].map((name) => name.toLowerCase()));

  const manifests = await activeManifests(root, mainRoot);
  const configPath = await locateProjectConfig(root);
  const config = configPath ? (await readProjectConfig(configPath)).config : undefined;
  const fromConfig = config ? configuredCommands(config) : {};
  const gates = [
    { kind: 'lint', code: 'B003_LINT_FAILED', found: gateCommand(manifests, 'lint', names) ?? (fromConfig.lint ? { command: fromConfig.lint, source: 'polywave.config.json lint_command' } : undefined) },
    { kind: 'build', code: 'B001_BUILD_FAILED', found: gateCommand(manifests, 'build', names) ?? (fromConfig.build ? { command: fromConfig.build, source: 'polywave.config.json build_command' } : undefined) },
  ];
  // Run like quality gates (issue 11): the lint and build commands run the code being committed — in
  // an agent's worktree, code the agent wrote, and the hook fires from git_commit outside any sandbox.
  // So: the gate sandbox, a throwaway checkout of the working tree shared by both, no credentials.
  const checkouts: CheckoutSet = new Map();
  try {
    for (const gate of gates) {
      if (!gate.found) continue;
      io.stderr(`[pre-commit] running ${gate.kind} gate: ${gate.found.command}\n`);
      const result = await runSandboxedShell(gate.found.command, {
        cwd: root,
        timeoutMs: 10 * 60_000,
        env: gateEnvironment(io.env),
        logPath: path.join(os.tmpdir(), `polywave-pre-commit-${process.pid}-${gate.kind}.log`),
        checkouts,
      });
      if (result.output.trim() !== '') io.stderr(result.output.endsWith('\n') ? result.output : `${result.output}\n`);
      if (result.exitCode !== 0 || result.timedOut || result.error) {
        const why = result.timedOut ? 'timed out' : result.exitCode === -1 && result.error ? result.error : `exit ${result.exitCode}`;
        throw new PolywaveError({ code: gate.code, message: `${gate.kind} gate failed (${why}): ${gate.found.command} (${gate.found.source})`, exitCode: 1 });
      }
    }
  } finally {
    await disposeCheckouts(checkouts);
  }
  return 0;
}
