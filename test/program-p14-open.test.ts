/**
 * Outside round P14's open findings on the PROGRAM layer (issue 12), as regression tests: the real CLI as child
 * processes on real temporary git repositories (the demo PROGRAM "shop" set up without running it, script agents).
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { recordRemoval } from '../src/store/removal-markers.js';
import { binPath } from './support/cli.js';

import { programRelative, gitEnv, setupDemo, git, craft, cli, withStatuses, implDoc, tier1Built, tier1Frozen, expectUnchanged, executeArgs } from './support/program-crafted.js';

describe('P14-20: an IMPL of a tier the loop has not started, run outside the loop, is not adopted as done', () => {
  it('a tier-2 IMPL `reviewed` in the PROGRAM whose doc is COMPLETE (archived), or `pending` with its doc WAVE_VERIFIED: E28A_IMPL_RUN_OUTSIDE_LOOP before tier 1 runs, nothing changed', async () => {
    const archived = await craft({
      [programRelative]: withStatuses({ checkout: 'reviewed' }),
      'docs/IMPL/complete/IMPL-checkout.yaml': implDoc('checkout', 'COMPLETE'),
    });
    const refused = await expectUnchanged(archived, executeArgs(archived), 1, /E28A_IMPL_RUN_OUTSIDE_LOOP: .*checkout \(tier 2, status reviewed in the PROGRAM, IMPL doc docs\/IMPL\/complete\/IMPL-checkout\.yaml COMPLETE, no IMPL branch polywave\/program\/shop\/tier2-impl-checkout\)/s);
    expect(refused.stderr).toMatch(/refused, nothing changed \(REVIEWED\)/);
    expect(refused.stderr).toMatch(/update-program-impl docs\/PROGRAM\/PROGRAM-shop\.yaml --impl checkout --status complete --force/);
    expect(refused.stderr).toMatch(/set-impl-state docs\/IMPL\/complete\/IMPL-checkout\.yaml --state REVIEWED/);
    expect(git(archived.repo, ['log', '--format=%s']).split('\n').filter((subject) => /scout/i.test(subject))).toEqual([]);

    const pending = await craft({ 'docs/IMPL/IMPL-checkout.yaml': implDoc('checkout', 'WAVE_VERIFIED') });
    await expectUnchanged(pending, executeArgs(pending), 1, /E28A_IMPL_RUN_OUTSIDE_LOOP: .*checkout \(tier 2, status pending in the PROGRAM, IMPL doc docs\/IMPL\/IMPL-checkout\.yaml WAVE_VERIFIED/s);
  });

  it('P16-04: a hand-made branch with the loop\'s IMPL-branch name for a tier the loop cannot have started does not make the work the loop\'s', async () => {
    // Before the fix: the branch's mere existence skipped the check — the tier-2 IMPL done by hand was adopted as
    // complete, tier 1 ran on top of it and the tier-2 agent never ran (exit 0, PROGRAM COMPLETE).
    const branched = await craft({ [programRelative]: withStatuses({ checkout: 'reviewed' }), 'docs/IMPL/complete/IMPL-checkout.yaml': implDoc('checkout', 'COMPLETE') });
    git(branched.repo, ['branch', 'polywave/program/shop/tier2-impl-checkout']);
    const refused = await expectUnchanged(branched, executeArgs(branched), 1, /E28A_IMPL_RUN_OUTSIDE_LOOP: .*checkout \(tier 2, .*IMPL branch polywave\/program\/shop\/tier2-impl-checkout present though the loop cannot have started tier 2 \(tier 1 is not complete\)/s);
    expect(refused.stderr).toMatch(/git branch -m polywave\/program\/shop\/tier2-impl-checkout polywave\/program\/shop\/tier2-impl-checkout-outside/);
    expect(git(branched.repo, ['log', '--format=%s']).split('\n').filter((subject) => /scout/i.test(subject))).toEqual([]);
  });
});

describe('P17-03: at the lowest open tier, an empty hand-made IMPL branch or an `executing` status does not make work done by hand the loop\'s', () => {
  // Before the fix: each was adopted as complete — the IMPL's agent never ran and the PROGRAM ended COMPLETE without its
  // code (exit 0), or tier 1 was finalized on top of a hand-made "complete".
  it('tier 2 (tier 1 built): an empty branch made by hand at main\'s tip, and `executing` with no branch', async () => {
    const branched = await craft({ ...tier1Built(), [programRelative]: withStatuses({ pricing: 'complete', catalog: 'complete', checkout: 'reviewed' }), 'docs/IMPL/complete/IMPL-checkout.yaml': implDoc('checkout', 'COMPLETE') });
    git(branched.repo, ['branch', 'polywave/program/shop/tier2-impl-checkout']);
    const refused = await expectUnchanged(branched, executeArgs(branched), 1, /E28A_IMPL_RUN_OUTSIDE_LOOP: .*checkout \(tier 2, status reviewed .*IMPL branch polywave\/program\/shop\/tier2-impl-checkout holds no work of its own/s);
    expect(refused.stderr).toMatch(/git branch -m polywave\/program\/shop\/tier2-impl-checkout/);

    const executing = await craft({ ...tier1Built(), [programRelative]: withStatuses({ pricing: 'complete', catalog: 'complete', checkout: 'executing' }), 'docs/IMPL/complete/IMPL-checkout.yaml': implDoc('checkout', 'COMPLETE') });
    await expectUnchanged(executing, executeArgs(executing), 1, /E28A_IMPL_RUN_OUTSIDE_LOOP: .*checkout \(tier 2, status executing in the PROGRAM, IMPL doc docs\/IMPL\/complete\/IMPL-checkout\.yaml COMPLETE, no IMPL branch/s);
  });

  it('tier 1: `executing` with an empty hand-made branch at an older commit of main', async () => {
    const older = await craft({ [programRelative]: withStatuses({ pricing: 'executing' }), 'docs/IMPL/complete/IMPL-pricing.yaml': implDoc('pricing', 'COMPLETE') });
    git(older.repo, ['branch', 'polywave/program/shop/tier1-impl-pricing', 'HEAD~1']);
    await expectUnchanged(older, executeArgs(older), 1, /E28A_IMPL_RUN_OUTSIDE_LOOP: .*pricing \(tier 1, status executing .*holds no work of its own/s);
  });
});

describe('P13-18: an IMPL moved to a later tier by a re-plan after its tier-1 attempt BLOCKED runs again there without --accept-changes', () => {
  it('its earlier IMPL branch, agent branch, worktrees, prepare records and the doc\'s wave record are retired (the branches kept under refs/polywave/retired/), then the IMPL runs afresh to COMPLETE', async () => {
    const demo = await setupDemo();
    const script = readFileSync(demo.script, 'utf8');
    const broken = script.replace(/\n {2}D:\n {4}steps:\n[\s\S]*?(?=\n {2}scout@checkout:)/, '\n  D:\n    steps:\n      - fail: { kind: fatal, message: "D-BROKEN-18" }');
    expect(broken).not.toBe(script);
    writeFileSync(demo.script, broken);
    const first = await cli(demo, executeArgs(demo));
    expect(first.code, first.stderr.slice(-2000)).toBe(1);
    expect(first.stderr).toMatch(/D-BROKEN-18/);
    const oldBranch = git(demo.repo, ['rev-parse', 'refs/heads/polywave/program/shop/tier1-impl-catalog']).trim();

    // The re-plan (by hand here, as a Planner would): catalog to a tier of its own, checkout after it; approved.
    expect((await cli(demo, ['update-program-state', programRelative, '--state', 'REPLANNING'])).code).toBe(0);
    const revised = readFileSync(demo.program, 'utf8')
      .replace(/(- slug: catalog\n(?: {6}.*\n)*? {6}tier: )1/, '$12')
      .replace(/(- slug: checkout\n(?: {6}.*\n)*? {6}tier: )2/, '$13')
      .replace('impls: [pricing, catalog]', 'impls: [pricing]')
      .replace('    - number: 2\n      impls: [checkout]', '    - number: 2\n      impls: [catalog]\n      description: the catalog\n    - number: 3\n      impls: [checkout]')
      .replace('tiers_total: 2', 'tiers_total: 3');
    writeFileSync(demo.program, revised);
    const approve = await cli(demo, ['update-program-state', programRelative, '--state', 'REVIEWED']);
    expect(approve.code, `${approve.stdout}\n${approve.stderr}`).toBe(0);
    writeFileSync(demo.script, script);

    // Tier 1 (pricing) finishes; catalog is held for a human at tier 2.
    const held = await cli(demo, executeArgs(demo));
    expect(held.code, held.stderr.slice(-2000)).toBe(1);
    expect(held.stderr).toMatch(/IMPL\(s\) held for a human: catalog \(blocked\)/);
    expect((await cli(demo, ['update-program-impl', programRelative, '--impl', 'catalog', '--status', 'reviewed'])).code).toBe(0);
    expect((await cli(demo, ['set-impl-state', 'docs/IMPL/IMPL-catalog.yaml', '--state', 'REVIEWED'])).code).toBe(0);

    const resumed = await cli(demo, executeArgs(demo));
    expect(resumed.code, resumed.stderr.slice(-4000)).toBe(0);
    expect(resumed.stderr).not.toMatch(/TAMPER_DETECTED/);
    expect(resumed.stderr).toMatch(/catalog: its earlier attempt in another tier is retired — branches kept as polywave\/program\/shop\/tier1-impl-catalog → refs\/polywave\/retired\//);
    const retired = git(demo.repo, ['for-each-ref', '--format=%(refname) %(objectname)', 'refs/polywave/retired/']);
    expect(retired).toMatch(new RegExp(`/polywave/program/shop/tier1-impl-catalog ${oldBranch}`));
    expect(retired).toMatch(/\/polywave\/catalog\/wave2-agent-D /);
    expect(git(demo.repo, ['branch', '--list']).trim()).toBe('* main');
    expect(git(demo.repo, ['worktree', 'list', '--porcelain']).match(/^worktree /gm)).toHaveLength(1);
    expect(readFileSync(path.join(demo.repo, 'docs/PROGRAM/complete/PROGRAM-shop.yaml'), 'utf8')).toMatch(/^state: COMPLETE$/m);
    expect(git(demo.repo, ['log', '--format=%s', 'main']).split('\n').filter((subject) => subject.startsWith('Merge program tier 2 impl catalog'))).toHaveLength(1);
    expect(git(demo.repo, ['status', '--porcelain']).trim()).toBe('');
  }, 300_000);
});

describe('P14-14: a human\'s own edit made after a killed re-plan is not undone as the Planner\'s', () => {
  it('the half revision discarded and a fix of the human\'s made: kept, with a warning naming the backup; a frozen contract still changed: undone', async () => {
    const demo = await tier1Frozen({}, {}, 'BLOCKED');
    const original = readFileSync(demo.program, 'utf8');
    const script = readFileSync(demo.script, 'utf8');
    writeFileSync(demo.script, `${script.replace(/\n*$/, '\n')}  planner:\n    steps:\n      - edit: { path: ${programRelative}, old: "rounded to cents", new: "CHANGED BY A KILLED PLANNER" }\n      - sleep_ms: 30000\n`);
    const killReplan = async () => {
      const child = spawn(process.execPath, [binPath, 'program-replan', programRelative, '--reason', 'p14-14', '--tier', '2', '--model', `script:${demo.script}`], { cwd: demo.repo, env: { ...process.env, ...gitEnv }, stdio: 'ignore' });
      const exited = new Promise((resolve) => child.once('exit', resolve));
      const deadline = Date.now() + 60_000;
      while (!readFileSync(demo.program, 'utf8').includes('CHANGED BY A KILLED PLANNER') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(readFileSync(demo.program, 'utf8')).toContain('CHANGED BY A KILLED PLANNER');
      // (past the end of the Planner's edit call: it sleeps)
      await new Promise((resolve) => setTimeout(resolve, 1500));
      child.kill('SIGKILL');
      await exited;
    };
    const humanFix = (text: string) => text.replace('description: the checkout, on top of tier 1', 'description: HUMAN FIX of tier 2');

    await killReplan();
    // The human discards the half revision and makes a fix of their own.
    git(demo.repo, ['checkout', '--', programRelative]);
    expect(readFileSync(demo.program, 'utf8')).toBe(original);
    writeFileSync(demo.program, humanFix(original));
    expect(readFileSync(demo.program, 'utf8')).toContain('HUMAN FIX of tier 2');
    const kept = await cli(demo, ['update-program-state', programRelative, '--state', 'TIER_EXECUTING']);
    expect(kept.code, kept.stderr).toBe(0);
    expect(kept.stderr).toMatch(/warning\[E34_REPLAN_INTERRUPTED\]: an interrupted program-replan \(pid \d+\) left a marker, but docs\/PROGRAM\/PROGRAM-shop\.yaml was changed after it stopped \(not by it\): left as it is .*backup \S+/);
    expect(readFileSync(demo.program, 'utf8')).toBe(humanFix(original).replace(/^state: BLOCKED$/m, 'state: TIER_EXECUTING'));
    expect(readdirSync(path.join(demo.repo, '.git', 'polywave', 'program-replan')).filter((name) => name.endsWith('.replanning.json'))).toEqual([]);

    // The human's fix made on top of the half revision (a frozen contract's description changed): undone all the same (P2).
    writeFileSync(demo.program, original);
    await killReplan();
    writeFileSync(demo.program, humanFix(readFileSync(demo.program, 'utf8')));
    const undone = await cli(demo, ['update-program-state', programRelative, '--state', 'TIER_EXECUTING']);
    expect(undone.code, undone.stderr).toBe(0);
    expect(undone.stderr).toMatch(/warning\[E34_REPLAN_INTERRUPTED\]: an interrupted program-replan \(pid \d+\) was undone/);
    const text = readFileSync(demo.program, 'utf8');
    expect(text).not.toContain('CHANGED BY A KILLED PLANNER');
    expect(text).toContain('rounded to cents');
  }, 240_000);
});

describe('P14-07: a run killed inside a merged wave\'s agent-worktree cleanup leaves no litter after the resume', () => {
  it('the half-removed worktree, its branch and its removal marker are finished by the re-run that skips the wave', async () => {
    const demo = await setupDemo();
    const script = readFileSync(demo.script, 'utf8');
    const broken = script.replace(/\n {2}C:\n {4}steps:\n[\s\S]*?(?=\n {2}D:)/, '\n  C:\n    steps:\n      - fail: { kind: fatal, message: "C-BROKEN-07" }');
    expect(broken).not.toBe(script);
    writeFileSync(demo.script, broken);
    const first = await cli(demo, executeArgs(demo));
    expect(first.code, first.stderr.slice(-2000)).toBe(1);
    expect(first.stderr).toMatch(/C-BROKEN-07/);
    // pricing's wave 1 merged on its IMPL branch; its cleanup as a SIGKILL inside `git worktree remove` leaves it:
    // the agent's worktree back at the merged tip, its .git file already deleted, the removal marker written.
    const tip = git(demo.repo, ['log', '--format=%H', '--grep', '^feat(P)', 'polywave/program/shop/tier1-impl-pricing']).trim().split('\n')[0]!;
    expect(tip).toMatch(/^[0-9a-f]{40}$/);
    const wreck = path.join(demo.repo, '.claude', 'worktrees', 'polywave', 'pricing', 'wave1-agent-P');
    git(demo.repo, ['worktree', 'add', '-q', '-b', 'polywave/pricing/wave1-agent-P', wreck, tip]);
    await recordRemoval(wreck, { branch: 'polywave/pricing/wave1-agent-P', tip });
    rmSync(path.join(wreck, '.git'));
    const markers = path.join(demo.repo, '.git', 'polywave', 'removing');
    expect(readdirSync(markers)).toHaveLength(1);

    writeFileSync(demo.script, script);
    expect((await cli(demo, ['update-program-state', programRelative, '--state', 'TIER_EXECUTING'])).code).toBe(0);
    expect((await cli(demo, ['update-program-impl', programRelative, '--impl', 'catalog', '--status', 'reviewed'])).code).toBe(0);
    const resumed = await cli(demo, executeArgs(demo));
    expect(resumed.code, resumed.stderr.slice(-4000)).toBe(0);
    expect(resumed.stderr).toMatch(/pricing wave 1: skipped — already complete and merged; finished the cleanup a killed run left half done/);
    expect(existsSync(wreck)).toBe(false);
    expect(git(demo.repo, ['branch', '--list']).trim()).toBe('* main');
    expect(git(demo.repo, ['worktree', 'list', '--porcelain']).match(/^worktree /gm)).toHaveLength(1);
    expect(existsSync(markers) ? readdirSync(markers) : []).toEqual([]);
  }, 300_000);
});

describe('P14-29: an agent owning a Claude Code project file (.claude/settings.json, .claude/hooks/…, .mcp.json) is flagged at validation', () => {
  it('validate warns W003_AGENT_OWNS_CLAUDE_SETTINGS for each such row (the plan stays valid); .claude/worktrees/ and other files are not flagged', async () => {
    const rows = ['.claude/settings.json', '.claude/hooks/pre.sh', '.mcp.json', 'src/claude-settings.js'];
    const owning = implDoc('checkout', 'REVIEWED', (text) => text.replace('file_ownership:\n', `file_ownership:\n${rows.map((file) => `    - file: ${file}\n      agent: K\n      wave: 1\n      action: new\n`).join('')}`));
    const demo = await craft({ 'docs/IMPL/IMPL-checkout.yaml': owning });
    const result = await cli(demo, ['validate', 'docs/IMPL/IMPL-checkout.yaml']);
    expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
    const report = JSON.parse(result.stdout) as { valid: boolean; warnings: Array<{ code: string; message: string }> };
    expect(report.valid).toBe(true);
    const flagged = report.warnings.filter((warning) => warning.code === 'W003_AGENT_OWNS_CLAUDE_SETTINGS').map((warning) => warning.message);
    expect(flagged).toHaveLength(3);
    expect(flagged[0]).toMatch(/^agent K owns \.claude\/settings\.json: a Claude Code project file .*--setting-sources user.*read the merged change before you do$/);
    expect(flagged.join('\n')).not.toMatch(/src\/claude-settings\.js/);
  });
});
