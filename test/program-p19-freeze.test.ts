/**
 * Outside round P19's findings on the PROGRAM layer (issue 12), as regression tests: the real CLI as child processes on
 * real temporary git repositories (the demo PROGRAM "shop" crafted without running it, script agents).
 * P19-04: a recorded freeze holds whatever the tiers say now.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli, commitAll, executeArgs, expectUnchanged, git, programRelative, tier1Frozen } from './support/program-crafted.js';

/** The demo PROGRAM re-ordered by hand after tier 1 froze: checkout in tier 1, the finished pricing and catalog in tier 2. */
function reordered(text: string): string {
  return text
    .replace(/(- slug: pricing\n(?: {6}.*\n)*? {6}tier: )1/, '$12')
    .replace(/(- slug: catalog\n(?: {6}.*\n)*? {6}tier: )1/, '$12')
    .replace(/(- slug: checkout\n(?: {6}.*\n)*? {6}tier: )2/, '$11')
    .replace('      depends_on: [pricing, catalog]\n', '')
    .replace('impls: [pricing, catalog]', 'impls: [checkout]')
    .replace(/(- number: 2\n {6}impls: )\[checkout\]/, '$1[pricing, catalog]');
}

describe('P19-04: a recorded freeze holds whatever the tiers say now (a plan re-ordered after the freeze)', () => {
  it('the re-ordered plan validates; a "tier-1" Scout giving its agent the frozen src/pricing.js: V030, BLOCKED before any wave (before the fix: merged into main, caught only by the freeze)', async () => {
    const demo = await tier1Frozen();
    const frozenBlob = /frozen_blob: (\w+)/.exec(readFileSync(demo.program, 'utf8'))![1]!;
    writeFileSync(demo.program, reordered(readFileSync(demo.program, 'utf8')));
    const validated = await cli(demo, ['validate-program', programRelative]);
    expect(validated.code, validated.stdout).toBe(0);
    commitAll(demo.repo, 'hand re-plan: checkout first');
    const own = '    - file: test/checkout.test.js\\n      agent: K\\n      wave: 1\\n      action: new\\n';
    const script = readFileSync(demo.script, 'utf8');
    expect(script).toContain(own);
    writeFileSync(demo.script, script.replace(own, `${own}    - file: src/pricing.js\\n      agent: K\\n      wave: 1\\n      action: modify\\n`).replace('            - test/checkout.test.js\\n', '            - test/checkout.test.js\\n            - src/pricing.js\\n'));
    const result = await cli(demo, executeArgs(demo));
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toMatch(/stopped: tier 1: V030_P2_CONTRACT_REDEFINITION: IMPL "checkout" owns src\/pricing\.js \(agent K, action modify\), the file of program contract "priceWithTax" frozen at tier 1/);
    expect(result.stderr).not.toMatch(/\[K\] launched/);
    expect(git(demo.repo, ['rev-parse', 'HEAD:src/pricing.js']).trim()).toBe(frozenBlob);
    expect(git(demo.repo, ['log', '--format=%s', '--first-parent']).split('\n').filter((subject) => subject.startsWith('Merge program tier'))).toEqual([]);
  }, 300_000);

  it('the frozen src/pricing.js changed by hand on main after the re-order: P2_FROZEN_CONTRACT_CHANGED before tier 1 starts, nothing changed', async () => {
    const demo = await tier1Frozen();
    writeFileSync(demo.program, reordered(readFileSync(demo.program, 'utf8')));
    const file = path.join(demo.repo, 'src/pricing.js');
    writeFileSync(file, `${readFileSync(file, 'utf8')}\n// changed by hand\n`);
    commitAll(demo.repo, 'hand re-plan, and the contract touched');
    await expectUnchanged(demo, executeArgs(demo), 1, /P2_FROZEN_CONTRACT_CHANGED: frozen contract priceWithTax \(src\/pricing\.js, frozen at tier 1\) changed on the main line since its freeze: .* before tier 1 starts/s);
  }, 300_000);
});
