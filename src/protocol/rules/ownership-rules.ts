import type { Finding } from '../../errors/finding.js';
import { fileActions } from '../schema/impl-schema.js';
import type { ImplRule } from './rule.js';
import { goList, goQuote, report } from './rule-helpers.js';
import { canonicalAction } from './aliases.js';

/**
 * I1: No two agents in the same wave own the same file — per repository (invariants.txt
 * "Cross-repo scope"; the Go V002 ignores `repo`). A row repeated by the same agent is not a
 * conflict ("a single agent cannot conflict with itself"). One finding per (wave, repo, file)
 * group, in order of first appearance, pointing at the first conflicting row.
 */
export const disjointOwnership: ImplRule = {
  name: 'disjoint-ownership',
  reference: 'I1',
  codes: ['V002_DISJOINT_OWNERSHIP'],
  check(context) {
    const groups = new Map<string, { wave: number; repo: string; file: string; agents: string[]; conflictRow: number }>();
    context.manifest.file_ownership.forEach((row, rowIndex) => {
      const wave = row.wave ?? 0;
      const repo = row.repo ?? '';
      const file = row.file ?? '';
      const key = JSON.stringify([wave, repo, file]);
      const agent = row.agent ?? '';
      const group = groups.get(key);
      if (!group) {
        groups.set(key, { wave, repo, file, agents: [agent], conflictRow: -1 });
      } else if (!group.agents.includes(agent)) {
        group.agents.push(agent);
        if (group.conflictRow === -1) group.conflictRow = rowIndex;
      }
    });
    const findings: Finding[] = [];
    for (const group of groups.values()) {
      if (group.agents.length < 2) continue;
      const inRepo = group.repo === '' ? '' : ` (repo ${goQuote(group.repo)})`;
      findings.push(
        report(context, {
          code: 'V002_DISJOINT_OWNERSHIP',
          message: `file ${goQuote(group.file)} owned by multiple agents in wave ${group.wave}: ${goList(group.agents)}${inRepo}`,
          path: ['file_ownership', group.conflictRow, 'file'],
          suggestion: 'give the file to one agent, or move one of the rows to another wave',
        }),
      );
    }
    return findings;
  },
};

/**
 * I5 (Go numbering, ownership completeness): every file an agent lists in `files` appears in
 * the `file_ownership` table (any agent, any wave; V038 checks the exact agent and wave).
 */
export const agentFilesOwned: ImplRule = {
  name: 'agent-files-owned',
  reference: 'I5',
  codes: ['V019_ORPHAN_FILE'],
  check(context) {
    const { manifest } = context;
    const owned = new Set(manifest.file_ownership.map((row) => row.file ?? ''));
    const findings: Finding[] = [];
    manifest.waves.forEach((wave, waveIndex) => {
      wave.agents.forEach((agent, agentIndex) => {
        agent.files.forEach((file, fileIndex) => {
          if (owned.has(file)) return;
          findings.push(
            report(context, {
              code: 'V019_ORPHAN_FILE',
              message: `agent ${agent.id ?? ''} (wave ${wave.number ?? 0}) references file ${goQuote(file)} which is not in file_ownership table`,
              path: ['waves', waveIndex, 'agents', agentIndex, 'files', fileIndex],
            }),
          );
        });
      });
    });
    return findings;
  },
};

/**
 * E16D.2: `file_ownership[].action` is `new`, `modify` or `delete` (empty allowed). One
 * finding per row under the protocol's code (Go emits V036 and V011 for the same problem).
 */
export const validAction: ImplRule = {
  name: 'valid-action',
  reference: 'E16D',
  codes: ['E16_INVALID_ACTION'],
  check(context) {
    const findings: Finding[] = [];
    context.manifest.file_ownership.forEach((row, rowIndex) => {
      const action = row.action ?? '';
      if (action === '' || (fileActions as readonly string[]).includes(action)) return;
      const fixed = canonicalAction(action);
      findings.push(
        report(context, {
          code: 'E16_INVALID_ACTION',
          message: `file_ownership[${rowIndex}].action has invalid value '${action}' — must be new, modify, or delete`,
          path: ['file_ownership', rowIndex, 'action'],
          ...(fixed ? { suggestion: `use '${fixed}' (\`polywave validate --fix\` rewrites it)` } : {}),
        }),
      );
    });
    return findings;
  },
};

/** API handlers (`pkg/api/…_handler.go`) and React components (`web/src/components/….tsx`). */
function needsIntegrationSteps(file: string): boolean {
  const normalized = file.replaceAll('\\', '/');
  return (
    (normalized.includes('pkg/api/') && normalized.endsWith('_handler.go')) ||
    (normalized.includes('web/src/components/') && normalized.endsWith('.tsx'))
  );
}

/**
 * E16D.3 (warning): new API handlers or React components without a `post_merge_checklist`
 * usually need wiring steps after the merge. Points at the first such row when the
 * checklist is absent. (Go skips rows whose file is missing on disk when it has a repository;
 * for `action: new` rows that only made the warning vanish, so we don't.)
 */
export const integrationChecklist: ImplRule = {
  name: 'integration-checklist',
  reference: 'E16D',
  codes: ['E16_MISSING_CHECKLIST'],
  check(context) {
    const { manifest } = context;
    const firstRow = manifest.file_ownership.findIndex((row) => row.action === 'new' && needsIntegrationSteps(row.file ?? ''));
    if (firstRow === -1) return [];
    const checklist = manifest.post_merge_checklist;
    if (checklist && checklist.groups.length > 0) return [];
    return [
      report(context, {
        code: 'E16_MISSING_CHECKLIST',
        message: 'new handlers/components detected but post_merge_checklist is empty — integration steps may be needed',
        severity: 'warning',
        path: ['post_merge_checklist'],
        // An absent checklist has no line: point at the first row that needs one.
        ...(checklist ? {} : { at: ['file_ownership', firstRow, 'file'] }),
      }),
    ];
  },
};

/**
 * E16D.4 (warning, not a blocker — Go's V041 blocks): `action: modify` rows name files that
 * exist. Runs only when the caller passes `fileExists` (validation against a repository);
 * the row's `repo` is handed to it so multi-repo IMPLs are checked in the right checkout.
 */
export const modifiedFilesExist: ImplRule = {
  name: 'modified-files-exist',
  reference: 'E16D',
  codes: ['E16_FILE_NOT_FOUND'],
  check(context) {
    const { fileExists } = context;
    if (!fileExists) return [];
    const findings: Finding[] = [];
    context.manifest.file_ownership.forEach((row, rowIndex) => {
      const file = row.file ?? '';
      if (row.action !== 'modify' || file.trim() === '') return;
      const repo = row.repo === undefined || row.repo === '' ? undefined : row.repo;
      if (fileExists(file, repo)) return;
      findings.push(
        report(context, {
          code: 'E16_FILE_NOT_FOUND',
          message: `file '${file}' marked action=modify but does not exist`,
          severity: 'warning',
          path: ['file_ownership', rowIndex, 'file'],
          suggestion: "check the path, or use action: new if the agent creates it",
        }),
      );
    });
    return findings;
  },
};
