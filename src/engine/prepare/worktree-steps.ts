import path from 'node:path';
import { freezeRecord } from '../../protocol/freeze.js';
import { scaffoldPath } from '../../protocol/schema/impl-schema.js';
import { editImpl } from '../../store/manifest-file.js';
import { ownedFiles, renderAgentBrief, worktreeEnvText, writeAgentFiles } from '../brief.js';
import {
  attachWorktreeHooks,
  inspectHookFile,
  installIsolationHook,
  verifyHookInstalled,
  writeActiveImpl,
  writeActiveWave,
  type HookVerification,
} from '../isolation-hook.js';
import { initJournal, recoverJournalContext } from '../journal.js';
import type { StepDefinition } from '../step.js';
import { ensureInfoExclude, ensureWorktrees, verifyWorktrees, type EnsuredWorktree } from '../worktrees.js';
import { errorText, manifestOf, short, type AgentBriefInfo, type AgentTarget, type PrepareContext } from './context.js';
import { mapBounded } from './parallel.js';
import { writeTextAtomic } from './write-text.js';
import { waveStateDir } from '../state-paths.js';

/**
 * E4 layer 0 / E43: the isolation guard in the hooks directory git actually runs (common dir,
 * core.hooksPath honoured, an existing hook chained), and the agent files + runtime state in the
 * common info/exclude.
 */
export const installHooksStep: StepDefinition<PrepareContext> = {
  name: 'install_hooks',
  async run(context) {
    if (context.readOnly) {
      return { status: 'skipped', detail: 'hooks are installed by prepare-wave, not by pre-wave-validate' };
    }
    const installs = [];
    for (const repo of context.repos) {
      // Unpinned git: the guard goes where git really runs hooks, not into the pinned directory.
      const git = context.rawGitAt(repo.root);
      const [, install] = await Promise.all([ensureInfoExclude(git), installIsolationHook(git)]);
      repo.hookInstall = install;
      installs.push({ repo: repo.key || path.basename(repo.root), ...install });
    }
    const warnings = installs.flatMap((install) => install.warnings);
    return {
      status: 'success',
      detail: `pre-commit isolation guard ${installs.map((install) => `${install.action} at ${install.hook_path}`).join('; ')}${warnings.length > 0 ? ` (${warnings.join('; ')})` : ''}`,
      data: { installs },
    };
  },
};

/**
 * E2/I2: when the wave's worktrees are first created, record `worktrees_created_at` and the
 * contract/scaffold hashes, and the wave's `base_commit` — one locked, format-preserving edit.
 */
export const freezeRecordStep: StepDefinition<PrepareContext> = {
  name: 'freeze_record',
  async run(context) {
    const base = context.primary.base!;
    const recordFreeze = context.freezeMode !== 'enforce';
    const manifest = manifestOf(context);
    if (!recordFreeze && manifest.waves?.[context.waveIndex]?.base_commit === base) {
      return { status: 'skipped', detail: `freeze and base_commit ${short(base)} already recorded (E9 re-entry)` };
    }
    if (context.readOnly) return { status: 'skipped', detail: 'not recorded by pre-wave-validate' };
    const now = context.now();
    const outcome = await editImpl(context.implPath, (parsed) => {
      const rawWaves = (parsed.data as { waves?: unknown[] } | null)?.waves ?? [];
      const index = rawWaves.findIndex((item) => (item as { number?: unknown } | null)?.number === context.wave);
      if (index < 0 || !parsed.manifest) throw new Error(`wave ${context.wave} disappeared from ${context.implPath}`);
      // base_commit first: when the top-level keys are new they are appended at the end of the
      // file, where the last wave's base_commit goes too — in this order the writer splices all
      // four at once and re-parses once (the other order falls back to one edit at a time).
      const edits: Array<{ path: Array<string | number>; value: unknown }> = [{ path: ['waves', index, 'base_commit'], value: base }];
      let record;
      if (recordFreeze) {
        record = freezeRecord(parsed.manifest, now);
        edits.push({ path: ['worktrees_created_at'], value: record.worktrees_created_at });
        edits.push({ path: ['frozen_contracts_hash'], value: record.frozen_contracts_hash });
        edits.push({ path: ['frozen_scaffolds_hash'], value: record.frozen_scaffolds_hash });
      }
      context.waveIndex = index;
      return { edits, outcome: record };
    });
    if (outcome) Object.assign(manifest, outcome);
    const wave = manifest.waves?.[context.waveIndex];
    if (wave) wave.base_commit = base;
    return {
      status: 'success',
      detail: outcome ? `E2 freeze recorded at ${outcome.worktrees_created_at}; wave ${context.wave} base_commit ${short(base)}` : `wave ${context.wave} base_commit ${short(base)} recorded`,
      data: { base_commit: base, ...(outcome ?? {}) },
    };
  },
};

/**
 * E5/E9: the worktrees, created in parallel (bounded) from the base, reusing valid ones and
 * attaching existing branches; see ensureWorktrees.
 */
export const createWorktreesStep: StepDefinition<PrepareContext> = {
  name: 'create_worktrees',
  async run(context) {
    const failures: string[] = [];
    const ensured: EnsuredWorktree[] = [];
    for (const repo of context.repos) {
      const targets = context.targets.filter((target) => target.repoContext === repo).map(({ repoContext: _repo, agentData: _agent, ...info }) => info);
      if (targets.length === 0) continue;
      const tips = new Map(targets.flatMap((target) => (context.existingBranches.has(target.branch) ? [[target.branch, context.existingBranches.get(target.branch)!] as const] : [])));
      const outcome = await ensureWorktrees({
        git: repo.git,
        targets,
        tips,
        ...(repo.worktreeEntries ? { entries: repo.worktreeEntries } : {}),
        base: repo.primary ? context.primary.base! : repo.base!,
        ...(context.options.concurrency ? { concurrency: context.options.concurrency } : {}),
        ...(context.options.signal ? { signal: context.options.signal } : {}),
        ...(context.options.env ? { env: context.options.env } : {}),
        onReady: (worktree) =>
          context.options.events?.emit({ v: 1, type: 'worktree-create', slug: context.slug, wave: context.wave, agent: worktree.agent, path: worktree.path, branch: worktree.branch, reused: worktree.action === 'reused' }),
      });
      if (repo.hookInstall?.mode === 'worktree-config') {
        for (const worktree of outcome.worktrees) await attachWorktreeHooks(context.rawGitAt(worktree.path), repo.hookInstall);
      }
      ensured.push(...outcome.worktrees);
      failures.push(...outcome.failures.map((failure) => `agent ${failure.agent}: ${failure.error}`));
    }
    const order = new Map(context.targets.map((target, index) => [target.agent, index]));
    ensured.sort((left, right) => (order.get(left.agent) ?? 0) - (order.get(right.agent) ?? 0));
    context.ensured = ensured;
    context.result.worktrees = ensured.map(({ action: _action, note: _note, ...info }) => info);
    const count = (action: string) => ensured.filter((worktree) => worktree.action === action).map((worktree) => worktree.agent);
    const data = { created: count('created'), reused: count('reused'), attached: count('attached'), notes: ensured.filter((worktree) => worktree.note).map((worktree) => ({ agent: worktree.agent, note: worktree.note })) };
    const summary = `created ${data.created.length}, reused ${data.reused.length}, attached ${data.attached.length}`;
    if (failures.length > 0) return { status: 'failed', detail: `${failures.length} worktree(s) could not be prepared (${summary}): ${failures.join('; ')}`, data: { ...data, failures } };
    return { status: 'success', detail: `${ensured.length} worktree(s) ready from ${short(context.primary.base)}: ${summary}`, data };
  },
};

/** After creation: `worktree list` shows each agent exactly once, at its path, on its branch. */
export const verifyWorktreesStep: StepDefinition<PrepareContext> = {
  name: 'verify_worktrees',
  async run(context) {
    const problems: string[] = [];
    let found = 0;
    for (const repo of context.repos) {
      const targets = context.targets.filter((target) => target.repoContext === repo);
      if (targets.length === 0) continue;
      const verification = await verifyWorktrees(repo.git, targets);
      found += verification.found;
      problems.push(...verification.problems);
    }
    if (problems.length > 0) return { status: 'failed', detail: `worktree verification failed: ${problems.join('; ')}`, data: { problems } };
    return { status: 'success', detail: `${found}/${context.targets.length} worktrees registered on their branches` };
  },
};

/**
 * H10 / E4 layer 0: the guard is in the pre-commit hook git resolves in the agent worktrees.
 * Without per-worktree config every linked worktree resolves the same common hook, so one
 * resolution plus one file check covers them all; otherwise each worktree is asked.
 */
export const verifyHooksStep: StepDefinition<PrepareContext> = {
  name: 'verify_hooks',
  async run(context) {
    const invalid: Array<{ agent: string } & HookVerification> = [];
    for (const repo of context.repos) {
      const targets = context.targets.filter((target) => target.repoContext === repo);
      if (targets.length === 0) continue;
      // Unpinned git: H10 asks which hook git itself would run in the agent's worktree.
      const [extension, first] = await Promise.all([repo.git.configGet('extensions.worktreeConfig'), verifyHookInstalled(context.rawGitAt(targets[0]!.path))]);
      const perWorktree = extension?.trim().toLowerCase() === 'true';
      if (!perWorktree) {
        const common = repo.hookInstall ? await inspectHookFile(repo.hookInstall.hook_path) : first;
        if (!first.valid) invalid.push({ agent: targets[0]!.agent, ...first });
        else if (path.resolve(first.hook_path) !== path.resolve(common.hook_path)) invalid.push({ agent: targets[0]!.agent, ...first, valid: false, reason: `git runs ${first.hook_path}, not the installed ${common.hook_path}` });
        continue;
      }
      const outcomes = await mapBounded(targets, 6, (target) => verifyHookInstalled(context.rawGitAt(target.path)), context.options.signal);
      outcomes.forEach((outcome, index) => {
        const agent = targets[index]!.agent;
        if (outcome.status === 'rejected') invalid.push({ agent, valid: false, reason: errorText(outcome.reason), hook_path: '', executable: false, has_logic: false });
        else if (!outcome.value.valid) invalid.push({ agent, ...outcome.value });
      });
    }
    if (invalid.length > 0) {
      return {
        status: 'failed',
        detail: `N027_HOOK_VERIFY_FAILED: isolation guard not active for ${invalid.map((item) => `agent ${item.agent} (${item.reason ?? 'invalid'})`).join('; ')}`,
        data: { code: 'N027_HOOK_VERIFY_FAILED', invalid },
      };
    }
    return { status: 'success', detail: `isolation guard active in all ${context.targets.length} worktree(s)` };
  },
};

/** Builds one agent's brief, ownership record, env file and journal. */
async function prepareAgentFiles(context: PrepareContext, target: AgentTarget): Promise<AgentBriefInfo> {
  const manifest = manifestOf(context);
  const agentId = target.agent;
  const repoRoot = target.repoContext.root;
  const journal = await initJournal(repoRoot, context.slug, context.wave, agentId);
  const recovered = await recoverJournalContext(journal, {
    scaffoldFiles: (manifest.scaffolds ?? []).map(scaffoldPath),
    gateCommands: (manifest.quality_gates?.gates ?? []).map((gate) => gate.command ?? ''),
    completionReportWritten: manifest.completion_reports?.[agentId] !== undefined,
  });
  const brief = renderAgentBrief({
    manifest,
    implPath: context.implPath,
    wave: context.wave,
    agent: target.agentData,
    worktreePath: target.path,
    branch: target.branch,
    ...(context.options.mergeTarget ? { mergeTarget: context.options.mergeTarget } : {}),
    ...(recovered.markdown ? { recoveredContext: recovered.markdown } : {}),
  });
  const owned = ownedFiles(manifest, context.wave, agentId);
  const written = await writeAgentFiles({
    dir: target.path,
    brief,
    ownership: { agent: agentId, wave: context.wave, impl_doc: context.implPath, owned_files: owned, repo_root: repoRoot, worktree: target.path, branch: target.branch },
    env: worktreeEnvText({ worktreeRoot: target.path, agentId, wave: context.wave, implPath: context.implPath, branch: target.branch }),
  });
  return {
    agent: agentId,
    brief_path: written.brief_path,
    brief_length: written.brief_length,
    journal_dir: journal.dir,
    files_owned: owned.length,
    ...(target.repo ? { repo: target.repo } : {}),
    ...(context.options.mergeTarget ? { merge_target: context.options.mergeTarget } : {}),
    ...(recovered.available ? { journal_context_available: true, journal_context_file: recovered.file! } : {}),
    ...(written.worktree_env_path ? { worktree_env_path: written.worktree_env_path } : {}),
    ownership_path: written.ownership_path,
  };
}

/** E23/E23A/E43: per agent, in parallel (file writes only). */
export const extractBriefsStep: StepDefinition<PrepareContext> = {
  name: 'extract_briefs',
  async run(context) {
    const outcomes = await mapBounded(context.targets, 8, (target) => prepareAgentFiles(context, target), context.options.signal);
    const failures: string[] = [];
    const briefs: AgentBriefInfo[] = [];
    outcomes.forEach((outcome, index) => {
      if (outcome.status === 'fulfilled') briefs.push(outcome.value);
      else failures.push(`agent ${context.targets[index]!.agent}: ${errorText(outcome.reason)}`);
    });
    context.result.agent_briefs = briefs;
    if (failures.length > 0) return { status: 'failed', detail: `brief extraction failed: ${failures.join('; ')}` };
    const recovered = briefs.filter((brief) => brief.journal_context_available).map((brief) => brief.agent);
    return { status: 'success', detail: `${briefs.length} brief(s) written (E23)${recovered.length > 0 ? `; journal context recovered for ${recovered.join(', ')} (E23A)` : ''}` };
  },
};

/**
 * Arms the guard: `.polywave-state/active-wave` (slug, wave, target branch) and
 * `.polywave-state/active-impl` in each repository's main checkout. finalize-wave disarms it.
 */
export const activateWaveStep: StepDefinition<PrepareContext> = {
  name: 'activate_wave',
  async run(context) {
    const protectedBranches: string[] = [];
    for (const repo of context.repos) {
      await writeActiveWave(repo.root, { slug: context.slug, wave: context.wave, target_branch: repo.targetBranch ?? '', impl: context.implPath, ...(repo.base ? { base_commit: repo.base } : {}) }, context.now());
      await writeActiveImpl(repo.root, context.implPath);
      if (repo.targetBranch) protectedBranches.push(context.repos.length > 1 ? `${path.basename(repo.root)}:${repo.targetBranch}` : repo.targetBranch);
    }
    if (protectedBranches.length === 0) {
      return { status: 'warning', detail: `wave ${context.wave} active, but the main checkout has a detached HEAD: no branch for the guard to protect` };
    }
    return { status: 'success', detail: `wave ${context.wave} active: commits to ${protectedBranches.join(', ')} are refused (E4 layer 0) until finalize-wave; orchestrator bypass POLYWAVE_ALLOW_MAIN_COMMIT=1` };
  },
};

/** `.polywave-state/<slug>/wave<N>/prepare-result.json` (close-impl reads `original_branch` from it). */
export async function writeStateFile(context: PrepareContext): Promise<string> {
  const filePath = path.join(waveStateDir(context.primary.root, context.slug, context.wave), 'prepare-result.json');
  await writeTextAtomic(filePath, `${JSON.stringify(context.result, null, 2)}\n`);
  return filePath;
}
