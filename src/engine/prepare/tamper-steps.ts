import path from 'node:path';
import { waveBaseCommit } from '../../protocol/waves.js';
import { loadImpl } from '../../store/manifest-file.js';
import type { StepDefinition, StepOutcome } from '../step.js';
import { checkRepository, describeFindings, type TamperFinding } from '../tamper-check.js';
import { checkGitConfigOrigins, gitConfigInWorkingTreeCode } from '../../git/config-origins.js';
import {
  hooksSnapshotPath,
  locateRepository,
  manifestFingerprint,
  pinnedGitConfig,
  readTamperRecord,
  recordRepository,
  tamperDetectedCode,
  tamperRecordPath,
  type RepositoryLocation,
} from '../tamper-record.js';
import { errorText, listForDetail, manifestOf, type PrepareContext, type RepoContext } from './context.js';

/** prepare-wave refuses a git config include inside the working tree (outside attack X9 #1/#2). */
export { gitConfigInWorkingTreeCode };

function repoLabel(context: PrepareContext, repo: RepoContext): string {
  return context.repos.length > 1 ? `${repo.key || path.basename(repo.root)}: ` : '';
}

/**
 * X9 #1/#2, X10 R1/N2a–d: a git config file inside a working tree lets an agent (solo, or by a
 * merged owned file) name programs git runs outside every sandbox. Which files git reads is asked
 * from git itself, in the main checkout and in each agent worktree that exists (see
 * src/git/config-origins.ts). Undefined when nothing is found.
 */
async function gitConfigRefusal(context: PrepareContext, locate: (root: string) => Promise<RepositoryLocation>): Promise<StepOutcome | undefined> {
  const targets = await Promise.all(
    context.repos.map(async (repo) => ({
      label: repoLabel(context, repo),
      root: repo.root,
      commonDir: (await locate(repo.root)).commonDir,
      checkouts: context.targets.filter((target) => target.repoContext === repo && target.path !== '' && target.path !== repo.root).map((target) => target.path),
    })),
  );
  const check = await checkGitConfigOrigins(targets, context.options.env ?? process.env);
  if (!check.refused) return undefined;
  return { status: 'failed', detail: check.detail, data: { code: gitConfigInWorkingTreeCode, includes: check.files } };
}

/**
 * The same check alone, for the paths without a tamper check: prepare-agent --no-worktree (a
 * solo or integration wave's agent works in the main checkout, X10 R1), before anything is written.
 */
export const gitConfigCheckStep: StepDefinition<PrepareContext> = {
  name: 'git_config_check',
  async run(context) {
    const refusal = await gitConfigRefusal(context, (root) => locateRepository(context.rawGitAt(root)));
    return refusal ?? { status: 'success', detail: 'no git config file inside a working tree' };
  },
};

/**
 * Issue 11: prepare-wave's own hook-running git commands (the state commit, `worktree add`,
 * `update-ref`, stale cleanup) take their hooks from a pinned directory from here on.
 *
 * A wave prepared before (its agent branches exist, E9 re-entry) may have had agents running
 * since: its tamper record is verified first — exactly as finalize-wave does, minus the dirty
 * check (working_dir_check judges the checkout) — and a change refuses with TAMPER_DETECTED
 * before anything is written; the hooks then come from the recorded snapshot. Otherwise no agent
 * of this wave has run yet: the hooks are pinned to the directory git resolves for the main
 * checkout now (absolute, never an agent worktree's).
 */
export const tamperCheckStep: StepDefinition<PrepareContext> = {
  name: 'tamper_check',
  async run(context) {
    const findings: TamperFinding[] = [];
    const verified: string[] = [];
    const pins = new Map<string, Record<string, string>>();
    const manifest = manifestOf(context);
    const home = (context.options.env ?? process.env).HOME;
    const recordedBase = waveBaseCommit(manifest, context.wave);
    // Agents may have run: this wave's branches exist (E9 re-entry), or the manifest holds the base an earlier prepare recorded.
    const branchesExist = context.existingBranches.size > 0;
    // One `rev-parse` per repository for this step (it was asked twice: the include check, then the record).
    const locations = new Map<string, Promise<RepositoryLocation>>();
    const locate = (root: string): Promise<RepositoryLocation> => {
      let location = locations.get(root);
      if (location === undefined) {
        location = locateRepository(context.rawGitAt(root));
        locations.set(root, location);
      }
      return location;
    };
    const refusal = await gitConfigRefusal(context, locate);
    if (refusal !== undefined) return refusal;
    for (const repo of context.repos) {
      const label = repoLabel(context, repo);
      const location = await locate(repo.root);
      const recordPath = tamperRecordPath(location.commonDir, context.slug, context.wave);
      let record;
      try {
        record = await readTamperRecord(recordPath);
      } catch (error) {
        findings.push({ what: `${label}record ${recordPath}`, change: `unreadable (${errorText(error)})` });
        continue;
      }
      const sameRun = record !== undefined && (branchesExist || (repo.primary && recordedBase !== undefined && record.base_commit === recordedBase));
      if (record === undefined || !sameRun) {
        // A new wave (or a record left by another run of this wave number): the hooks as they are.
        pins.set(repo.root, pinnedGitConfig(location.hooksDirectory));
        continue;
      }
      const base = repo.primary ? context.primary.base : repo.base;
      if (repo.primary && record.base_commit !== undefined && base !== undefined && record.base_commit !== base) {
        findings.push({ what: `${label}record ${recordPath}`, change: `made for base ${record.base_commit.slice(0, 12)}, but wave ${context.wave} now starts from ${base.slice(0, 12)}` });
      }
      const checked = await checkRepository({
        record,
        git: context.rawGitAt(repo.root),
        ...(home ? { home } : {}),
        ...(repo.targetBranch ? { target: { branch: repo.targetBranch, mode: 'merges' as const, agentTips: new Set<string>() } } : {}),
        ...(repo.primary && context.parsed ? { manifest: { data: context.parsed.data, state: (manifest.state ?? '').trim(), ...(manifest.merge_state ? { mergeState: manifest.merge_state } : {}) } } : {}),
      });
      findings.push(...checked.findings.map((finding) => ({ what: `${label}${finding.what}`, change: finding.change })));
      verified.push(recordPath);
      pins.set(repo.root, pinnedGitConfig(record.hooks_trusted && record.hooks.snapshot ? hooksSnapshotPath(location.commonDir, context.slug, context.wave) : undefined));
    }
    const accepted = findings.length > 0 && context.options.acceptChanges === true && !context.readOnly;
    if (findings.length > 0 && !accepted) {
      return {
        status: 'failed',
        detail: `${tamperDetectedCode}: wave ${context.wave} was prepared before and ${findings.length} thing(s) changed since — ${describeFindings(findings)}. Nothing was written. Undo the changes (or find out who made them); if they are yours and intended, re-run with --accept-changes.`,
        data: { code: tamperDetectedCode, findings, records: verified },
      };
    }
    if (accepted) {
      // The caller vouches for the repository as it is now: its hooks as they are (recorded again at the end).
      for (const repo of context.repos) pins.set(repo.root, pinnedGitConfig((await locateRepository(context.rawGitAt(repo.root))).hooksDirectory));
      context.pins = pins;
      return { status: 'warning', detail: `accepted as the caller's own (--accept-changes): ${describeFindings(findings)}`, data: { accepted: findings, records: verified } };
    }
    context.pins = pins;
    return {
      status: 'success',
      detail: verified.length > 0 ? `E9 re-entry: the repository is as recorded (${verified.length} record(s)); hooks pinned to the recorded snapshot` : `hooks pinned to ${[...new Set([...pins.values()].map((pin) => pin['core.hooksPath']))].join(', ')} for prepare's own git commands`,
      data: { records: verified, hooks: Object.fromEntries([...pins].map(([root, pin]) => [root, pin['core.hooksPath']])) },
    };
  },
};

/**
 * Issue 11: the last step — after the guard is installed, the worktrees exist and the manifest
 * holds the freeze and base — records each repository's config, hooks (with the snapshot
 * finalize-wave will run them from), refs and the manifest (see tamper-record.ts), for
 * finalize-wave to check before it merges.
 */
export const recordTamperStep: StepDefinition<PrepareContext> = {
  name: 'record_tamper',
  async run(context) {
    if (context.readOnly) return { status: 'skipped', detail: 'pre-wave-validate records nothing' };
    const { parsed } = await loadImpl(context.implPath);
    const manifest = {
      path: context.implPath,
      fields: manifestFingerprint(parsed.data, context.wave),
      state: (parsed.manifest?.state ?? '').trim(),
      ...(parsed.manifest?.merge_state ? { merge_state: parsed.manifest.merge_state } : {}),
    };
    const home = (context.options.env ?? process.env).HOME;
    const written: string[] = [];
    let hookCount = 0;
    for (const repo of context.repos) {
      if (!repo.primary && !context.targets.some((target) => target.repoContext === repo)) continue;
      const base = repo.primary ? context.primary.base : repo.base;
      const { record, path: recordPath } = await recordRepository({
        git: context.rawGitAt(repo.root),
        slug: context.slug,
        wave: context.wave,
        recordedBy: 'prepare-wave',
        now: context.now(),
        snapshot: true,
        ...(repo.targetBranch ? { targetBranch: repo.targetBranch } : {}),
        ...(base ? { baseCommit: base } : {}),
        // In every record: finalize's primary repository may be another one (E51).
        manifest,
        ...(home ? { home } : {}),
        ...(context.options.concurrentRefs ? { concurrentRefs: context.options.concurrentRefs } : {}),
      });
      written.push(recordPath);
      hookCount += Object.keys(record.hooks.snapshot ?? {}).length;
      context.pins?.set(repo.root, pinnedGitConfig(hooksSnapshotPath(record.common_dir, context.slug, context.wave)));
    }
    return {
      status: 'success',
      detail: `recorded config, ${hookCount} hook file(s), refs and the manifest for finalize-wave's tamper check: ${listForDetail(written, 3)}`,
      data: { records: written },
    };
  },
};
