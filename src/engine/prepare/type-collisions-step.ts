import { blobSpec, codeFamilyOf, detectTypeCollisions, extractTopLevelSymbols, isTestFile, packageOf, readBlobs, type CollisionReport } from '../../analysis/index.js';
import { scaffoldPath } from '../../protocol/schema/impl-schema.js';
import type { StepDefinition } from '../step.js';
import { listForDetail, manifestOf, type PrepareContext } from './context.js';

/** One declaration E41 looks at before the wave starts. */
interface PlannedDeclaration {
  owner: string;
  file: string;
  name: string;
  kind: string;
  namespace: string;
  /** From an interface contract (planned), or already in the file at the base. */
  planned: boolean;
}

/** One pre-flight collision. */
export interface PlannedCollision {
  name: string;
  package: string;
  owners: string[];
  files: string[];
  source: 'contracts' | 'branches';
}

/**
 * E41 in prepare-wave's pre-flight (the rule names two points: before worktree creation, and
 * finalize step 1.5). Before any agent worked, the declarations the plan puts in place are known:
 * the interface contracts (`definition` at `location`), the scaffold files, and what the wave's
 * owned files already declare at the base. A name that is declared — at least once by a contract
 * — in files of two different owners (agents of this wave, or the scaffold) within one namespace
 * is a collision the merge would turn into a duplicate declaration: the wave does not launch.
 * On E9 re-entry (agent branches of the wave exist) the branches are checked exactly as
 * finalize-wave does. Go's check here is vacuous (it only looks at branches, which do not exist
 * yet, and only at Go types).
 */
export const typeCollisionsPreflightStep: StepDefinition<PrepareContext> = {
  name: 'type_collision',
  async run(context) {
    const manifest = manifestOf(context);
    const rows = (manifest.file_ownership ?? []).filter((row) => row.wave === context.wave && (row.file ?? '').trim() !== '');
    const ownerOf = new Map<string, string>();
    for (const row of rows) if (row.agent) ownerOf.set(row.file!.trim(), row.agent);
    for (const scaffold of manifest.scaffolds ?? []) {
      const file = scaffoldPath(scaffold);
      if (file !== '' && !ownerOf.has(file)) ownerOf.set(file, 'scaffold');
    }
    const eligible = (file: string) => codeFamilyOf(file) !== undefined && !isTestFile(file);

    const declarations: PlannedDeclaration[] = [];
    for (const contract of manifest.interface_contracts ?? []) {
      const file = (contract.location ?? '').trim();
      const owner = ownerOf.get(file);
      if (owner === undefined || !eligible(file) || !contract.definition) continue;
      for (const symbol of extractTopLevelSymbols(file, contract.definition)) {
        if (!symbol.exported && codeFamilyOf(file) !== 'go') continue;
        declarations.push({ owner, file, name: symbol.receiver ? `${symbol.receiver}.${symbol.name}` : symbol.name, kind: symbol.kind, namespace: packageOf(file), planned: true });
      }
    }
    const primaryBase = context.primary.base;
    if (declarations.length > 0 && primaryBase !== undefined) {
      const plannedNamespaces = new Set(declarations.map((item) => item.namespace));
      const existing = [...ownerOf.keys()].filter((file) => eligible(file) && plannedNamespaces.has(packageOf(file)));
      const texts = await readBlobs(context.primary.git, existing.map((file) => blobSpec(primaryBase, file)));
      for (const file of existing) {
        const text = texts.get(blobSpec(primaryBase, file));
        if (text === undefined) continue;
        for (const symbol of extractTopLevelSymbols(file, text)) {
          if (!symbol.exported && codeFamilyOf(file) !== 'go') continue;
          declarations.push({ owner: ownerOf.get(file)!, file, name: symbol.receiver ? `${symbol.receiver}.${symbol.name}` : symbol.name, kind: symbol.kind, namespace: packageOf(file), planned: false });
        }
      }
    }
    const groups = new Map<string, PlannedDeclaration[]>();
    for (const item of declarations) {
      const key = `${item.namespace}\0${item.name}`;
      groups.set(key, [...(groups.get(key) ?? []), item]);
    }
    const collisions: PlannedCollision[] = [];
    for (const items of groups.values()) {
      const owners = [...new Set(items.map((item) => item.owner))].sort();
      const files = [...new Set(items.map((item) => item.file))].sort();
      if (owners.length < 2 || files.length < 2 || !items.some((item) => item.planned)) continue;
      collisions.push({ name: items[0]!.name, package: items[0]!.namespace, owners, files, source: 'contracts' });
    }

    // E9 re-entry: the agents' existing branches, as finalize-wave checks them.
    const branchReports: Record<string, CollisionReport> = {};
    for (const repo of context.repos) {
      const targets = context.targets.filter((target) => target.repoContext === repo && context.existingBranches.has(target.branch));
      if (targets.length < 2 || repo.base === undefined) continue;
      const report = await detectTypeCollisions({ git: repo.git, base: repo.base, agents: targets.map((target) => ({ agentId: target.agent, ref: context.existingBranches.get(target.branch)! })) });
      branchReports[repo.key || '.'] = report;
      for (const collision of report.collisions) collisions.push({ name: collision.type_name, package: collision.package, owners: collision.agents, files: collision.files, source: 'branches' });
    }

    collisions.sort((left, right) => left.package.localeCompare(right.package) || left.name.localeCompare(right.name));
    const data = { collisions, valid: collisions.length === 0, ...(Object.keys(branchReports).length > 0 ? { branch_reports: branchReports } : {}) };
    if (collisions.length > 0) {
      const lines = collisions.map((item) => `${item.name} in ${item.package || '.'} (${item.owners.join(', ')}: ${item.files.join(', ')}${item.source === 'branches' ? ', on the agent branches' : ''})`);
      return { status: 'failed', detail: `E41: ${collisions.length} declaration collision(s) across owners of wave ${context.wave}: ${listForDetail(lines, 8)} — the wave does not launch; rename the declarations, or move the shared one to a scaffold file`, data };
    }
    if (declarations.length === 0 && Object.keys(branchReports).length === 0) return { status: 'skipped', detail: 'E41: no interface contract declares code in a file owned in this wave, and no agent branches yet' };
    return { status: 'success', detail: `E41: no type/function/constant collisions (${declarations.filter((item) => item.planned).length} contract declaration(s) checked${Object.keys(branchReports).length > 0 ? ', agent branches checked' : ''})`, data };
  },
};
