/**
 * Outside round P18's findings on the PROGRAM layer (issue 12), as regression tests: the real CLI as child processes on
 * real temporary git repositories (the demo PROGRAM "shop" crafted without running it, script agents).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { programRelative, git, craft, withStatuses, implDoc, tier1Built, tier1Frozen, expectUnchanged, executeArgs, writeFiles, commitAll } from './support/program-crafted.js';

const B2 = 'polywave/program/shop/tier2-impl-checkout';
const tier2 = (status: string, doc: Record<string, string>) => craft({ ...tier1Built(), [programRelative]: withStatuses({ pricing: 'complete', catalog: 'complete', checkout: status }), ...doc });
const commitTree = (repo: string, args: string[], message: string) => git(repo, ['commit-tree', ...args, '-m', message]).trim();
const refusedAs = /E28A_IMPL_RUN_OUTSIDE_LOOP: .*checkout \(tier 2, .*IMPL branch polywave\/program\/shop\/tier2-impl-checkout holds no work of its own — the loop's work for what the doc says ran is missing \(.*agent K/s;

describe('P18-01: a closed IMPL doc is adopted only with the loop\'s own work on its IMPL branch — any commit off main\'s first-parent line is not it', () => {
  // Before the fix: each was adopted (exit 0, "checkout close: skipped — already COMPLETE", PROGRAM COMPLETE) — agent K
  // never ran, src/checkout.js did not exist.
  it('an empty commit, a hand-made merge named like the agent\'s, a side commit merged into main, a packed ref, `executing`, a COMPLETE doc not archived: E28A, nothing changed', async () => {
    const archived = { 'docs/IMPL/complete/IMPL-checkout.yaml': implDoc('checkout', 'COMPLETE') };
    const empty = await tier2('reviewed', archived);
    git(empty.repo, ['branch', B2, commitTree(empty.repo, ['HEAD^{tree}', '-p', 'HEAD'], 'empty')]);
    await expectUnchanged(empty, executeArgs(empty), 1, refusedAs);

    const executing = await tier2('executing', archived);
    git(executing.repo, ['branch', B2, commitTree(executing.repo, ['HEAD^{tree}', '-p', 'HEAD'], 'empty')]);
    git(executing.repo, ['pack-refs', '--all']);
    await expectUnchanged(executing, executeArgs(executing), 1, refusedAs);

    const merged = await tier2('reviewed', archived);
    git(merged.repo, ['branch', B2, commitTree(merged.repo, ['HEAD^{tree}', '-p', 'HEAD', '-p', 'HEAD~1'], 'Merge polywave/checkout/wave1-agent-K')]);
    await expectUnchanged(merged, executeArgs(merged), 1, refusedAs);

    const side = await tier2('reviewed', archived);
    const sideCommit = commitTree(side.repo, ['HEAD^{tree}', '-p', 'HEAD'], 'side');
    git(side.repo, ['merge', '--no-ff', '-q', '-m', 'Merge side', sideCommit]);
    git(side.repo, ['branch', B2, sideCommit]);
    await expectUnchanged(side, executeArgs(side), 1, refusedAs);

    const open = await tier2('reviewed', { 'docs/IMPL/IMPL-checkout.yaml': implDoc('checkout', 'COMPLETE') });
    git(open.repo, ['branch', B2, commitTree(open.repo, ['HEAD^{tree}', '-p', 'HEAD'], 'empty')]);
    await expectUnchanged(open, executeArgs(open), 1, refusedAs);
  }, 300_000);
});

describe('P18-07: a doc in a wave state that says the wave was merged needs its agents\' merges on the IMPL branch', () => {
  // Before the fix: "checkout wave 1: skipped — already complete and merged", PROGRAM COMPLETE, agent K never ran.
  for (const status of ['reviewed', 'executing']) {
    it(`WAVE_VERIFIED, merge_state completed, a hand-written complete report of K (commit on main), \`git branch\` at main's tip, status ${status}: E28A, nothing changed`, async () => {
      const demo = await tier2(status, {});
      const head = git(demo.repo, ['rev-parse', 'HEAD']).trim();
      const doc = implDoc('checkout', 'WAVE_VERIFIED').replace('      agents:', `      base_commit: ${head}\n      agents:`) + `completion_reports:\n    K:\n        status: complete\n        branch: polywave/checkout/wave1-agent-K\n        commit: ${head}\n        files_created:\n            - src/checkout.js\n            - test/checkout.test.js\n        verification: PASS\nmerge_state: completed\n`;
      writeFiles(demo.repo, { 'docs/IMPL/IMPL-checkout.yaml': doc });
      commitAll(demo.repo, 'hand: checkout doc says wave 1 ran');
      git(demo.repo, ['branch', B2]);
      const refused = await expectUnchanged(demo, executeArgs(demo), 1, refusedAs);
      expect(refused.stderr).toMatch(/complete report with a commit of the branch's own \(wave 1\)/);
    }, 300_000);
  }
});

describe('P18-06: a frozen contract changed on the main line between tiers is refused when the next tier starts', () => {
  // Before the fix: tier 2's Scout and agent ran and its IMPL branch merged into main; only finalize-tier's gate stopped it.
  it('a human commit to src/pricing.js (priceWithTax frozen at tier 1) before tier 2: P2_FROZEN_CONTRACT_CHANGED, nothing run, nothing changed', async () => {
    const demo = await tier1Frozen();
    const file = path.join(demo.repo, 'src/pricing.js');
    writeFileSync(file, `${readFileSync(file, 'utf8')}\n// changed by hand\n`);
    commitAll(demo.repo, 'human: touch the frozen contract');
    await expectUnchanged(demo, executeArgs(demo), 1, /P2_FROZEN_CONTRACT_CHANGED: frozen contract priceWithTax \(src\/pricing\.js, frozen at tier 1\) changed on the main line since its freeze: .* before tier 2 starts/s);
  }, 300_000);
});
