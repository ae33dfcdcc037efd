import { codes } from '../../errors/codes.js';
import type { Finding } from '../../errors/finding.js';
import type { ImplRule } from './rule.js';
import { report } from './rule-helpers.js';

/**
 * MR01 (E16): if any `file_ownership` row has `repo:`, every row must. One finding naming the
 * first three untagged files, pointing at the first untagged row.
 */
export const consistentRepoTags: ImplRule = {
  name: 'consistent-repo-tags',
  reference: 'MR01',
  codes: [codes.inconsistentRepo],
  check(context) {
    const rows = context.manifest.file_ownership;
    const untagged = rows.map((row, index) => ({ row, index })).filter(({ row }) => (row.repo ?? '') === '');
    if (untagged.length === 0 || untagged.length === rows.length) return [];
    const shown = untagged.slice(0, 3).map(({ row }) => row.file ?? '');
    const more = shown.length >= 3 ? ' ...' : '';
    return [
      report(context, {
        code: codes.inconsistentRepo,
        message: `file_ownership has mixed repo tags: some entries have repo: and some don't — add explicit repo: to all entries (missing on: ${shown.join(', ')}${more})`,
        path: ['file_ownership', untagged[0]!.index],
      }),
    ];
  },
};

/**
 * MR02 (E16): when `file_ownership` spans two or more repositories, every quality gate names
 * its `repo:` — otherwise it runs in every repo, including docs-only ones. Emits
 * `V040_UNSCOPED_GATE` (Go's registry code since its rename; issue 13); the old
 * `MR02_UNSCOPED_GATE` is still accepted where codes are read ({@link canonicalCode}).
 */
export const scopedGatesInMultiRepo: ImplRule = {
  name: 'scoped-gates-in-multi-repo',
  reference: 'MR02',
  codes: [codes.unscopedGate],
  check(context) {
    const { manifest } = context;
    const repos = new Set(manifest.file_ownership.map((row) => row.repo ?? '').filter((repo) => repo !== ''));
    if (repos.size < 2) return [];
    const findings: Finding[] = [];
    (manifest.quality_gates?.gates ?? []).forEach((gate, index) => {
      if ((gate.repo ?? '') !== '') return;
      findings.push(
        report(context, {
          code: codes.unscopedGate,
          message: `quality_gates.gates[${index}] (${gate.type ?? ''}): multi-repo IMPL requires repo: on every gate — without it, '${gate.command ?? ''}' runs in all repos including docs-only repos with no build system`,
          path: ['quality_gates', 'gates', index, 'repo'],
        }),
      );
    });
    return findings;
  },
};
