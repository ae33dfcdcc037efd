import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runShellCommand } from '../../gates/run-command.js';
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
 * polywave.config.json, with `GOWORK=off`. In a worktree the repository is the worktree.
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
  for (const gate of gates) {
    if (!gate.found) continue;
    io.stderr(`[pre-commit] running ${gate.kind} gate: ${gate.found.command}\n`);
    const result = await runShellCommand(gate.found.command, {
      cwd: root,
      timeoutMs: 10 * 60_000,
      env: { ...io.env, GOWORK: 'off' },
      logPath: path.join(os.tmpdir(), `polywave-pre-commit-${process.pid}-${gate.kind}.log`),
    });
    if (result.output.trim() !== '') io.stderr(result.output.endsWith('\n') ? result.output : `${result.output}\n`);
    if (result.exitCode !== 0 || result.timedOut) {
      throw new PolywaveError({ code: gate.code, message: `${gate.kind} gate failed (${result.timedOut ? 'timed out' : `exit ${result.exitCode}`}): ${gate.found.command} (${gate.found.source})`, exitCode: 1 });
    }
  }
  return 0;
}
