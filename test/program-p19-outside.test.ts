/**
 * Outside round P19's findings on the PROGRAM layer (issue 12), as regression tests: the real CLI as child processes on
 * real temporary git repositories (the demo PROGRAM "shop" crafted without running it, script agents).
 * P19-01/P19-03: what the loop takes for its own work on an IMPL branch; P19-02: slug length.
 */
import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { programDemoScript } from '../src/demo/program-project.js';
import { cli, commitAll, craft, executeArgs, expectUnchanged, git, implDoc, programRelative, tier1Built, withStatuses, writeFiles } from './support/program-crafted.js';

const outside = /E28A_IMPL_RUN_OUTSIDE_LOOP: /;

describe('P19-01: a hand merge named like the agent\'s, of a commit that changes nothing of the agent\'s, is not the agent\'s work', () => {
  const B2 = 'polywave/program/shop/tier2-impl-checkout';
  const closedWith = async (agent: (demo: Awaited<ReturnType<typeof craft>>) => string, changes: RegExp) => {
    const demo = await craft({ ...tier1Built(), [programRelative]: withStatuses({ pricing: 'complete', catalog: 'complete', checkout: 'reviewed' }) });
    const commit = agent(demo);
    const merge = git(demo.repo, ['commit-tree', `${commit}^{tree}`, '-p', 'HEAD', '-p', commit, '-m', 'Merge polywave/checkout/wave1-agent-K']).trim();
    git(demo.repo, ['branch', B2, merge]);
    const report = `completion_reports:\n    K:\n        status: complete\n        branch: polywave/checkout/wave1-agent-K\n        commit: ${commit}\n        files_created:\n            - src/checkout.js\n        verification: PASS\nmerge_state: completed\n`;
    writeFiles(demo.repo, { 'docs/IMPL/complete/IMPL-checkout.yaml': implDoc('checkout', 'COMPLETE') + report });
    commitAll(demo.repo, 'hand: checkout closed');
    const refused = await expectUnchanged(demo, executeArgs(demo), 1, outside);
    expect(refused.stderr).toMatch(new RegExp(`agent K's changes in the merge of polywave/checkout/wave1-agent-K \\(${merge.slice(0, 12)} changes ${changes.source}\\)`));
  };

  // Before the fix: adopted — "checkout close: skipped — already COMPLETE", PROGRAM COMPLETE, src/checkout.js never written.
  it('`git commit-tree HEAD^{tree}` as agent K\'s commit, `Merge polywave/checkout/wave1-agent-K` on the IMPL branch, the doc archived COMPLETE: E28A, nothing changed', async () => {
    await closedWith((demo) => git(demo.repo, ['commit-tree', 'HEAD^{tree}', '-p', 'HEAD', '-m', 'feat(K): src/checkout.js, test/checkout.test.js']).trim(), /nothing/);
  }, 300_000);

  it('the same with K\'s "commit" adding NOTES.md, a file the doc does not give K: E28A, nothing changed', async () => {
    await closedWith((demo) => {
      git(demo.repo, ['checkout', '-q', '-b', 'forge']);
      writeFiles(demo.repo, { 'NOTES.md': 'done\n' });
      commitAll(demo.repo, 'feat(K): src/checkout.js, test/checkout.test.js');
      const commit = git(demo.repo, ['rev-parse', 'HEAD']).trim();
      git(demo.repo, ['checkout', '-q', 'main']);
      git(demo.repo, ['branch', '-D', 'forge']);
      return commit;
    }, /none of the agent's files, only NOTES\.md/);
  }, 300_000);
});

describe('P19-03: a complete report naming a commit main already holds is not the loop\'s work, whatever wave state the doc is in', () => {
  // Before the fix (WAVE_MERGING): the resumed finalize-wave "merged" the report's commit as a no-op, the wave was
  // adopted and agent C never ran — PROGRAM COMPLETE with catalog's wave 1 done by hand on main.
  const script = parseYaml(programDemoScript()) as { agents: Record<string, { steps: Array<{ write?: { path: string; content: string } }> }> };
  const filesOfC: Record<string, string> = {};
  for (const step of script.agents.C!.steps) if (step.write) filesOfC[step.write.path] = step.write.content;
  const report = (commit: string) => `completion_reports:\n    C:\n        status: complete\n        branch: polywave/catalog/wave1-agent-C\n        commit: ${commit}\n        files_created:\n            - src/catalog-data.js\n            - test/catalog-data.test.js\n        verification: PASS\n`;
  const expectRefused = async (demo: Awaited<ReturnType<typeof craft>>, commit: string) => {
    writeFiles(demo.repo, { 'docs/IMPL/IMPL-catalog.yaml': implDoc('catalog', 'WAVE_MERGING') + report(commit) });
    commitAll(demo.repo, 'hand: catalog wave 1 reported');
    git(demo.repo, ['branch', 'polywave/program/shop/tier1-impl-catalog']);
    const refused = await expectUnchanged(demo, executeArgs(demo), 1, outside);
    expect(refused.stderr).toMatch(new RegExp(`catalog \\(tier 1, .*agent C's complete report \\(wave 1\\) names ${commit.slice(0, 12)}, a commit main already holds`, 's'));
  };
  const tier1 = () => ({ 'docs/IMPL/IMPL-pricing.yaml': implDoc('pricing', 'REVIEWED'), [programRelative]: withStatuses({ pricing: 'reviewed', catalog: 'reviewed' }) });

  it('C\'s files committed on main\'s line by hand, IMPL-catalog WAVE_MERGING with C\'s report of that commit, the IMPL branch at main: E28A, nothing changed', async () => {
    const demo = await craft({ ...filesOfC, ...tier1() });
    await expectRefused(demo, git(demo.repo, ['rev-parse', 'HEAD']).trim());
  }, 300_000);

  it('the same work on a side branch merged into main (--no-ff), the report naming the side commit: E28A, nothing changed', async () => {
    const demo = await craft(tier1());
    git(demo.repo, ['checkout', '-q', '-b', 'side']);
    writeFiles(demo.repo, filesOfC);
    commitAll(demo.repo, 'feat(C): by hand');
    const side = git(demo.repo, ['rev-parse', 'HEAD']).trim();
    git(demo.repo, ['checkout', '-q', 'main']);
    git(demo.repo, ['merge', '--no-ff', '-q', '-m', 'Merge side', 'side']);
    git(demo.repo, ['branch', '-D', 'side']);
    await expectRefused(demo, side);
  }, 300_000);
});

describe('P19-02: a slug too long to name its files and branches is refused by validation, before the loop starts', () => {
  it('validate-program: an IMPL slug of 201 characters is V018 (200 passes); program-execute refuses it with nothing changed', async () => {
    const long = (length: number) => 'c'.repeat(length);
    const demo = await craft({ [programRelative]: withStatuses({}).replace(/\bcatalog\b/g, long(201)) });
    const refused = await cli(demo, ['validate-program', programRelative]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toMatch(/"code": "V018_INVALID_SLUG_FORMAT",\s*"message": "IMPL slug \\"c{60}…\\" has 201 characters: at most 200/);
    await expectUnchanged(demo, executeArgs(demo), 2, /V018_INVALID_SLUG_FORMAT/);
    writeFileSync(demo.program, withStatuses({}).replace(/\bcatalog\b/g, long(200)));
    const accepted = await cli(demo, ['validate-program', programRelative]);
    expect(accepted.code, accepted.stdout).toBe(0);
  }, 300_000);
});
