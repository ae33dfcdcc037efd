import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { isBlocking } from '../../errors/finding.js';
import { normalizeReportedPath, ownershipConflictsInWave } from '../../protocol/conflicts.js';
import { checkFreeze, formatTimestamp } from '../../protocol/freeze.js';
import { branchName, implSlugFromPath, legacyBranchName, worktreePath } from '../../protocol/names.js';
import { scaffoldPath, type ImplManifest } from '../../protocol/schema/impl-schema.js';
import { validateImpl } from '../../protocol/validate-impl.js';
import { agentsOfWave, criticGatePasses, e37Required, findWave, isScaffoldCommitted, repoKey, waveBaseCommit } from '../../protocol/waves.js';
import { describeUnmerged, waveFinishInGit } from '../wave-merged.js';
import { codes } from '../../errors/codes.js';
import { editImpl, loadImpl } from '../../store/manifest-file.js';
import { configuredRepos, type ResolvedRepo } from '../../store/project-config.js';
import { loadTrustedConfig } from '../../store/trusted-config.js';
import type { StepDefinition } from '../step.js';
import { branchTips, canonicalPath } from '../worktrees.js';
import { listForDetail, manifestOf, short, type PrepareContext, type RepoContext } from './context.js';

async function isDirectory(directory: string): Promise<boolean> {
  try {
    return (await stat(directory)).isDirectory();
  } catch {
    return false;
  }
}

/** The `repo:` an agent's ownership rows of `wave` name ('' = primary repository). */
export function agentRepoKey(manifest: ImplManifest, wave: number, agentId: string): string {
  const row = (manifest.file_ownership ?? []).find((item) => item.agent === agentId && item.wave === wave && repoKey(item.repo) !== '');
  return row === undefined ? '' : repoKey(row.repo);
}

/**
 * Resolves a repository named in the manifest: the primary repository when the name is empty or
 * its basename; a `repos[]` entry of polywave.config.json (found from `configFrom` up — the
 * manifest's directory; default the primary repository) with that name or directory name (MR01/E51: the configured registry routes gates and merges);
 * an absolute `repositories` entry with that name; else a sibling directory of the primary
 * repository (case-insensitive, like the Go tool).
 */
export async function resolveRepoRoot(manifest: ImplManifest, key: string, primaryRoot: string, configFrom: string = primaryRoot): Promise<string | undefined> {
  if (key === '' || key.toLowerCase() === path.basename(primaryRoot).toLowerCase()) return primaryRoot;
  const configured = (await configuredRepositories(configFrom)).find((repo) => repo.name.toLowerCase() === key.toLowerCase() || repoKey(repo.path).toLowerCase() === key.toLowerCase());
  if (configured && (await isDirectory(configured.path))) return canonicalPath(configured.path);
  for (const entry of manifest.repositories ?? []) {
    if (path.isAbsolute(entry) && repoKey(entry) === key && (await isDirectory(entry))) return canonicalPath(entry);
  }
  const parent = path.dirname(primaryRoot);
  const exact = path.join(parent, key);
  if (await isDirectory(exact)) return canonicalPath(exact);
  try {
    const match = (await readdir(parent)).find((name) => name.toLowerCase() === key.toLowerCase());
    if (match && (await isDirectory(path.join(parent, match)))) return canonicalPath(path.join(parent, match));
  } catch {
    // no parent listing: not found
  }
  return undefined;
}

/**
 * The repositories polywave.config.json lists — the repository root's config as committed (never a
 * nested or working-tree one: X10 N6, store/trusted-config.ts); [] when there is none or it is unreadable.
 */
export async function configuredRepositories(startDir: string): Promise<ResolvedRepo[]> {
  try {
    const loaded = await loadTrustedConfig(startDir);
    const configPath = loaded.path;
    if (configPath === undefined) return [];
    return loaded.config ? configuredRepos(loaded.config, path.dirname(configPath)) : [];
  } catch {
    return []; // an unreadable config is reported by verify-install; here it only cannot route
  }
}

/** Loads and validates the manifest; finds the wave. */
export const loadManifestStep: StepDefinition<PrepareContext> = {
  name: 'load_manifest',
  async run(context) {
    const { parsed } = await loadImpl(context.implPath);
    context.parsed = parsed;
    if (context.primary.currentBranch) context.result.original_branch = context.primary.currentBranch;
    if (!parsed.manifest) {
      const errors = parsed.findings.filter(isBlocking);
      return { status: 'failed', detail: `manifest is not usable: ${errors.map((finding) => finding.message).join('; ')}`, data: { errors } };
    }
    const manifest = parsed.manifest;
    context.manifest = manifest;
    context.slug = implSlugFromPath(context.implPath, manifest);
    const findings = [...parsed.findings, ...validateImpl({ manifest, locate: parsed.locate })];
    const errors = findings.filter(isBlocking);
    if (errors.length > 0) {
      return {
        status: 'failed',
        detail: `manifest has ${errors.length} validation error(s): ${listForDetail(errors.map((finding) => `${finding.code}: ${finding.message}`), 5)} (run: polywave validate ${context.implPath})`,
        data: { errors },
      };
    }
    const wave = findWave(manifest, context.wave);
    if (wave === undefined) return { status: 'failed', detail: `wave ${context.wave} not found in manifest (waves: ${(manifest.waves ?? []).map((item) => item.number).join(', ') || 'none'})` };
    const rawWaves = (parsed.data as { waves?: unknown[] } | null)?.waves ?? [];
    context.waveIndex = rawWaves.findIndex((item) => (item as { number?: unknown } | null)?.number === context.wave);
    context.agents = (wave.agents ?? []).filter((agent) => agent.id !== undefined && agent.id !== '');
    if (context.agents.length === 0) return { status: 'failed', detail: `wave ${context.wave} has no agents` };
    // E5: the names must be buildable (throws X001 for a slug that cannot be a branch name).
    branchName(context.slug, context.wave, context.agents[0]!.id!);
    const warnings = findings.length - errors.length;
    return { status: 'success', detail: `loaded ${path.basename(context.implPath)} (slug ${context.slug}, wave ${context.wave}: ${context.agents.length} agent(s))${warnings > 0 ? `; ${warnings} validation warning(s)` : ''}` };
  },
};

/** The IMPL's state must allow a wave. */
export const stateCheckStep: StepDefinition<PrepareContext> = {
  name: 'state_check',
  async run(context) {
    const state = (manifestOf(context).state ?? '').trim();
    if (state === 'COMPLETE' || state === 'BLOCKED' || state === 'NOT_SUITABLE') {
      return { status: 'failed', detail: `IMPL state is ${state}, cannot prepare a wave` };
    }
    // Issue 13: a wave that is already merged and verified is not prepared again (new worktrees, a
    // rewritten base_commit and a reset merge_state would undo it) unless the operator asks (--rerun).
    // "Merged" is decided from git (F1): a wave whose agents reported but whose commits are not in the
    // target was never finalized — say exactly how to finish it instead of calling it verified.
    const finish = context.options.rerun === true ? undefined : await waveFinishInGit(context.primary.git, manifestOf(context), context.slug, context.wave, context.options.mergeTarget ?? 'HEAD');
    if (finish?.finish === 'unmerged') {
      const impl = path.relative(context.primary.root, context.implPath) || context.implPath;
      return {
        status: 'failed',
        detail: `${codes.waveNotMerged}: every agent of wave ${context.wave} reported complete but its work is not merged into ${context.options.mergeTarget ?? 'HEAD'}: ${describeUnmerged(finish.unmerged)}; nothing changed — run \`polywave finalize-wave ${impl} --wave ${context.wave}\` to merge and verify it (or \`polywave run-wave ${impl} --wave ${context.wave}\`, which finalizes it)`,
        data: { code: codes.waveNotMerged, unmerged: finish.unmerged },
      };
    }
    if (finish?.finish === 'finished') {
      return {
        status: 'failed',
        detail: `${codes.waveAlreadyVerified}: wave ${context.wave} is already merged and verified (state ${state}, every agent reported complete); nothing changed — pass --rerun to prepare it again`,
        data: { code: codes.waveAlreadyVerified },
      };
    }
    return { status: 'success', detail: `state ${state || '(unset)'} allows wave execution` };
  },
};

/**
 * Resolves each agent's repository, the branch the wave merges into and the base commit (the
 * merge target's tip, else HEAD; on E9 re-entry the wave's recorded `base_commit`, so every
 * worktree of the wave shares one base). Also builds the E5 worktree/branch names.
 */
export const repoMatchStep: StepDefinition<PrepareContext> = {
  name: 'repo_match',
  async run(context) {
    const manifest = manifestOf(context);
    const byRoot = new Map<string, RepoContext>([[context.primary.root, context.primary]]);
    const missing: string[] = [];
    for (const agent of context.agents) {
      const key = agentRepoKey(manifest, context.wave, agent.id!);
      const root = await resolveRepoRoot(manifest, key, context.primary.root, path.dirname(context.implPath));
      if (root === undefined) {
        missing.push(`agent ${agent.id}: repository "${key}" not found (looked for a \`repositories\` entry and ${path.join(path.dirname(context.primary.root), key)})`);
        continue;
      }
      let repo = byRoot.get(root);
      if (repo === undefined) {
        const git = context.gitAt(root);
        const top = await canonicalPath(await git.topLevel());
        repo = byRoot.get(top) ?? { key, root: top, git, primary: false };
        byRoot.set(root, repo);
        byRoot.set(top, repo);
      }
      context.targets.push({
        agent: agent.id!,
        branch: branchName(context.slug, context.wave, agent.id!),
        path: worktreePath(repo.root, context.slug, context.wave, agent.id!),
        ...(repo.primary ? {} : { repo: key }),
        repoContext: repo,
        agentData: agent,
      });
    }
    if (missing.length > 0) return { status: 'failed', detail: missing.join('; ') };
    context.repos = [...new Set(byRoot.values())];

    const failure = await resolveBases(context);
    if (failure !== undefined) return { status: 'failed', detail: failure };
    return {
      status: 'success',
      detail: `${context.repos.length === 1 ? `repository ${context.primary.root}` : `${context.repos.length} repositories`}; base ${short(context.primary.base)} from ${context.baseSource}${context.existingBranches.size > 0 ? `; ${context.existingBranches.size} agent branch(es) already exist` : ''}`,
      data: {
        base_commit: context.primary.base,
        repos: context.repos.map((repo) => ({ repo: repo.key || path.basename(repo.root), root: repo.root, base: repo.base, target_branch: repo.targetBranch ?? null })),
        existing_branches: [...context.existingBranches.keys()].sort(),
      },
    };
  },
};

/**
 * Per repository: the branch the wave merges into and the base commit — the merge target's tip,
 * else HEAD; on E9 re-entry (agent branches of the wave exist) the wave's recorded `base_commit`,
 * so every worktree of the wave shares one base. Also notes which agent branches exist.
 * Returns a failure message, or undefined.
 */
export async function resolveBases(context: PrepareContext): Promise<string | undefined> {
  const manifest = manifestOf(context);
  const mergeTarget = context.options.mergeTarget;
  context.existingBranches.clear();
  for (const repo of context.repos) {
    const [currentBranch, targetTip, head, tips] = await Promise.all([
      repo.primary ? Promise.resolve(repo.currentBranch) : repo.git.currentBranch(),
      mergeTarget ? repo.git.tryRevParse(`refs/heads/${mergeTarget}`) : Promise.resolve(undefined),
      repo.git.tryRevParse('HEAD'),
      branchTips(repo.git, context.targets.filter((target) => target.repoContext === repo).map((target) => target.branch)),
    ]);
    if (currentBranch !== undefined) repo.currentBranch = currentBranch;
    if (mergeTarget && targetTip === undefined && repo.primary) return `merge target branch ${mergeTarget} does not exist in ${repo.root}`;
    const tip = targetTip ?? head;
    if (tip === undefined) return `${repo.root} has no commits (unborn HEAD); commit something first`;
    const target = targetTip !== undefined ? mergeTarget : repo.currentBranch;
    if (target !== undefined) repo.targetBranch = target;
    repo.base = tip;
    for (const [branch, commit] of tips) context.existingBranches.set(branch, commit);
  }
  context.baseSource = mergeTarget ? `merge target ${mergeTarget}` : 'HEAD';
  const recorded = waveBaseCommit(manifest, context.wave);
  if (recorded !== undefined && context.existingBranches.size > 0) {
    const resolved = await context.primary.git.tryRevParse(recorded);
    if (resolved !== undefined) {
      context.primary.base = resolved;
      context.baseSource = 'the base_commit recorded for this wave (E9 re-entry)';
    }
  }
  return undefined;
}

/** I1/E3: no file owned by two agents of the wave (per repository). */
export const disjointOwnershipStep: StepDefinition<PrepareContext> = {
  name: 'i1_disjoint',
  run(context) {
    const conflicts = ownershipConflictsInWave(manifestOf(context), context.wave);
    if (conflicts.length === 0) return { status: 'success', detail: `file ownership of wave ${context.wave} is disjoint (I1)` };
    return {
      status: 'failed',
      detail: `I1 violation: ${conflicts.length} file(s) owned by more than one agent in wave ${context.wave}: ${listForDetail(conflicts.map((conflict) => `${conflict.repo ? `${conflict.repo}:` : ''}${conflict.file} (${conflict.agents.join(', ')})`))}`,
      data: { conflicts },
    };
  },
};

/**
 * I3: every agent of the previous wave reported `complete`, and its work is merged: its branch
 * tip (slug branch, else legacy branch) — or, when the branch is gone, its report's commit — is
 * an ancestor of the merge target (or HEAD).
 */
export const waveSequencingStep: StepDefinition<PrepareContext> = {
  name: 'wave_sequencing',
  async run(context) {
    const manifest = manifestOf(context);
    const earlier = (manifest.waves ?? []).map((wave) => wave.number ?? 0).filter((number) => number < context.wave);
    if (earlier.length === 0) return undefined;
    const previous = Math.max(...earlier);
    const problems: string[] = [];
    const agents: Array<Record<string, unknown>> = [];
    for (const agent of agentsOfWave(manifest, previous)) {
      const id = agent.id ?? '';
      const report = manifest.completion_reports?.[id];
      if (report?.status !== 'complete') {
        const why = report === undefined ? 'has no completion report' : `reported ${report.status ?? 'no status'}`;
        problems.push(`agent ${id} ${why}`);
        agents.push({ agent: id, status: report?.status ?? null, merged: false, reason: why });
        continue;
      }
      const root = await resolveRepoRoot(manifest, agentRepoKey(manifest, previous, id), context.primary.root, path.dirname(context.implPath));
      const repo = context.repos.find((item) => item.root === root) ?? (root ? { root, git: context.gitAt(root), base: undefined } : undefined);
      if (repo === undefined) {
        problems.push(`agent ${id}: its repository cannot be found`);
        continue;
      }
      const into = context.options.mergeTarget ? ((await repo.git.tryRevParse(`refs/heads/${context.options.mergeTarget}`)) ?? 'HEAD') : 'HEAD';
      const branches = [branchName(context.slug, previous, id), legacyBranchName(previous, id)];
      const tips = await branchTips(repo.git, branches);
      const branch = branches.find((name) => tips.has(name));
      let commit = branch !== undefined ? tips.get(branch) : report.commit?.trim();
      let reason: string | undefined;
      if (commit === undefined || commit === '') {
        reason = 'its branch is gone and its report has no commit';
      } else {
        const resolved = await repo.git.tryRevParse(`${commit}^{commit}`);
        if (resolved === undefined) reason = `its branch is gone and its report's commit ${commit} does not exist`;
        else if (!(await repo.git.isAncestor(resolved, into))) reason = `${branch ? `branch ${branch}` : `commit ${short(commit)}`} is not merged into ${context.options.mergeTarget ?? 'HEAD'}`;
        commit = resolved ?? commit;
      }
      if (reason) problems.push(`agent ${id}: ${reason}`);
      agents.push({ agent: id, status: 'complete', ...(branch ? { branch } : {}), commit: commit ?? null, merged: reason === undefined, ...(reason ? { reason } : {}) });
    }
    if (problems.length > 0) {
      return { status: 'failed', detail: `I3: wave ${previous} is not complete and merged: ${problems.join('; ')} — finalize wave ${previous} first`, data: { previous_wave: previous, agents } };
    }
    return { status: 'success', detail: `wave ${previous} complete and merged (I3)`, data: { previous_wave: previous, agents } };
  },
};

/** E37: a critic verdict is required when the threshold is met; --skip-critic writes a synthetic PASS. */
export const criticVerdictStep: StepDefinition<PrepareContext> = {
  name: 'critic_verdict',
  async run(context) {
    const manifest = manifestOf(context);
    if (!e37Required(manifest)) return { status: 'skipped', detail: 'E37 critic review not required (wave 1 has < 3 agents and one repository)' };
    if (criticGatePasses(manifest, { auto: false })) return { status: 'success', detail: `critic verdict ${manifest.critic_report?.verdict}` };
    if (context.options.skipCritic) {
      const report = { verdict: 'PASS', summary: 'Skipped by operator (--skip-critic)', reviewed_at: formatTimestamp(context.now()), issue_count: 0, agent_reviews: {} };
      if (context.readOnly) return { status: 'warning', detail: 'E37 critic gate not passed; --skip-critic would write a synthetic PASS report' };
      await editImpl(context.implPath, () => ({ edits: [{ path: ['critic_report'], value: report }], outcome: undefined }));
      manifest.critic_report = { ...report, verdict: 'PASS', agent_reviews: {} };
      return { status: 'success', detail: 'E37 critic review skipped by operator (--skip-critic): synthetic PASS report written' };
    }
    const current = manifest.critic_report;
    if (current === undefined) {
      return { status: 'failed', detail: 'E37: no critic report found — run the critic (polywave run-critic) or use --skip-critic' };
    }
    const errors = Object.values(current.agent_reviews ?? {}).reduce((sum, review) => sum + (review.issues ?? []).filter((issue) => issue.severity === 'error').length, 0);
    return { status: 'failed', detail: `E37: critic found ${errors || current.issue_count || 0} error(s) in agent briefs — fix before launching wave (verdict ${current.verdict ?? 'none'})` };
  },
};

/** I2: every scaffold is committed before worktrees exist. */
export const scaffoldStep: StepDefinition<PrepareContext> = {
  name: 'scaffold_validation',
  run(context) {
    const scaffolds = manifestOf(context).scaffolds ?? [];
    if (scaffolds.length === 0) return { status: 'skipped', detail: 'no scaffolds' };
    const pending = scaffolds.filter((scaffold) => !isScaffoldCommitted(scaffold.status)).map((scaffold) => `${scaffoldPath(scaffold)} (${scaffold.status ?? 'pending'})`);
    if (pending.length > 0) return { status: 'failed', detail: `I2: scaffolds not committed: ${listForDetail(pending)} — run the Scaffold Agent first` };
    return { status: 'success', detail: `all ${scaffolds.length} scaffold(s) committed (I2)` };
  },
};

/** E35 Layer 3A: every wiring entry of the wave has its caller file owned by an agent of the wave. */
export const wiringOwnershipStep: StepDefinition<PrepareContext> = {
  name: 'wiring_ownership',
  run(context) {
    const manifest = manifestOf(context);
    const entries = (manifest.wiring ?? []).filter((entry) => entry.wave === context.wave);
    if (entries.length === 0) return { status: 'skipped', detail: `no wiring declarations for wave ${context.wave}` };
    const owners = new Map<string, string>();
    for (const row of manifest.file_ownership ?? []) if (row.wave === context.wave && row.file && row.agent) owners.set(normalizeReportedPath(row.file), row.agent);
    for (const agent of context.agents) for (const file of agent.files ?? []) if (!owners.has(normalizeReportedPath(file))) owners.set(normalizeReportedPath(file), agent.id!);
    const gaps = entries
      .filter((entry) => !owners.has(normalizeReportedPath(entry.must_be_called_from ?? '')))
      .map((entry) => `${entry.symbol ?? '?'} (agent ${entry.agent ?? '?'}) must be called from ${entry.must_be_called_from ?? '(nothing)'}, which no agent of wave ${context.wave} owns`);
    if (gaps.length > 0) return { status: 'failed', detail: `E35: ${gaps.length} wiring obligation(s) without an owner: ${gaps.join('; ')}`, data: { gaps } };
    return { status: 'success', detail: `${entries.length} wiring obligation(s) owned in wave ${context.wave} (E35 Layer 3A)` };
  },
};

/**
 * E2/I2 freeze. Once agents work on a wave (its branches exist) the contracts and scaffolds are
 * immutable: a re-run refuses when they changed since `worktrees_created_at`. Without any branch
 * of this wave (a new wave, or a run that stopped before creating worktrees) no agent depends
 * on the old contracts (E2 "simplified case" / wave-boundary revision), so the freeze is
 * recorded afresh when the worktrees are created.
 */
export const freezeCheckStep: StepDefinition<PrepareContext> = {
  name: 'freeze_check',
  run(context) {
    const manifest = manifestOf(context);
    const frozenAt = (manifest.worktrees_created_at ?? '').trim();
    if (frozenAt === '') {
      context.freezeMode = 'record';
      return { status: 'success', detail: 'contracts not frozen yet; the freeze is recorded when the worktrees are created (E2)' };
    }
    const check = checkFreeze(manifest);
    if (context.existingBranches.size > 0) {
      context.freezeMode = 'enforce';
      if (check.violations.length > 0) {
        return {
          status: 'failed',
          detail: `E2: ${check.violations.map((violation) => violation.message).join('; ')} — agents of wave ${context.wave} already work against the frozen version; revert the change or recreate the wave (E2 recovery paths)`,
          data: { violations: check.violations },
        };
      }
      return { status: 'success', detail: `contracts and scaffolds unchanged since the freeze at ${frozenAt}` };
    }
    context.freezeMode = 'refreeze';
    if (check.violations.length > 0) {
      return { status: 'warning', detail: `contracts/scaffolds changed since the freeze at ${frozenAt}, but no worktree of wave ${context.wave} exists yet: re-frozen when the worktrees are created (E2)`, data: { violations: check.violations } };
    }
    return { status: 'success', detail: `no worktree of wave ${context.wave} yet; the freeze is re-recorded when they are created` };
  },
};
