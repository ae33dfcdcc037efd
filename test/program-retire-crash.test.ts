/**
 * P16-06 (issue 12): the retirement of an earlier attempt (P13-18) — an IMPL moved to another tier by a re-plan after its
 * attempt BLOCKED, set REVIEWED again — killed (SIGKILL) at every step, re-run each time: the re-run goes on where the
 * killed one stopped and the PROGRAM reaches COMPLETE, every branch kept under refs/polywave/retired/ (one stamp),
 * nothing lost, no TAMPER_DETECTED and no E9. The real CLI as child processes on a real temporary repository, the kills
 * made by the CLI's test hook POLYWAVE_TEST_CRASH_IN_RETIREMENT (src/engine/program/retire-attempt.ts): `1` kills each
 * run right after the first step of the retirement that changed something, so a chain of runs goes through every step;
 * `<k>:torn` / `<k>:torn-git` leave the k-th worktree half removed as a `git worktree remove` killed half way does
 * (every other file gone; its `.git` file kept, or gone too).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from './support/cli.js';
import { programRelative, gitEnv, setupDemo, git, cli, executeArgs, type Demo } from './support/program-crafted.js';

/** The P13-18 state: catalog's tier-1 attempt BLOCKED (agent D failed), re-planned to tier 2, tier 1 done, catalog REVIEWED again. */
async function earlierAttemptToRetire(): Promise<{ demo: Demo; oldBranch: string }> {
  const demo = await setupDemo();
  const script = readFileSync(demo.script, 'utf8');
  const broken = script.replace(/\n {2}D:\n {4}steps:\n[\s\S]*?(?=\n {2}scout@checkout:)/, '\n  D:\n    steps:\n      - fail: { kind: fatal, message: "D-BROKEN-06" }');
  expect(broken).not.toBe(script);
  writeFileSync(demo.script, broken);
  const first = await cli(demo, executeArgs(demo));
  expect(first.code, first.stderr.slice(-2000)).toBe(1);
  expect(first.stderr).toMatch(/D-BROKEN-06/);
  const oldBranch = git(demo.repo, ['rev-parse', 'refs/heads/polywave/program/shop/tier1-impl-catalog']).trim();
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
  const held = await cli(demo, executeArgs(demo));
  expect(held.code, held.stderr.slice(-2000)).toBe(1);
  expect(held.stderr).toMatch(/IMPL\(s\) held for a human: catalog \(blocked\)/);
  expect((await cli(demo, ['update-program-impl', programRelative, '--impl', 'catalog', '--status', 'reviewed'])).code).toBe(0);
  expect((await cli(demo, ['set-impl-state', 'docs/IMPL/IMPL-catalog.yaml', '--state', 'REVIEWED'])).code).toBe(0);
  return { demo, oldBranch };
}

const killed = (code: number | null, stderr: string) => code === null || code === 137 || /SIGKILL/.test(stderr);

describe('P16-06: program-execute killed inside the retirement of an earlier attempt', () => {
  it('killed after each of its steps in turn (and twice inside a `git worktree remove`), every re-run goes on from there: COMPLETE, every branch kept, no TAMPER_DETECTED, no E9', async () => {
    const { demo, oldBranch } = await earlierAttemptToRetire();
    const agentBranches = git(demo.repo, ['for-each-ref', '--format=%(refname:short) %(objectname)', 'refs/heads/polywave/catalog/']).trim().split('\n').filter(Boolean);
    expect(agentBranches.length).toBeGreaterThan(0);
    const worktreesBefore = git(demo.repo, ['worktree', 'list', '--porcelain']).match(/^worktree /gm)!.length;
    expect(worktreesBefore).toBeGreaterThanOrEqual(3); // main, the tier-1 IMPL worktree, D's worktree

    const hooks: string[] = ['1:torn', '2:torn-git', ...Array.from({ length: 30 }, () => '1')];
    const runs: string[] = [];
    let last: { code: number | null; stdout: string; stderr: string } | undefined;
    for (const hook of hooks) {
      const result = await runCli(executeArgs(demo), { cwd: demo.repo, env: { ...gitEnv, POLYWAVE_TEST_CRASH_IN_RETIREMENT: hook }, timeoutMs: 240_000 });
      const wasKilled = killed(result.code, result.stderr);
      runs.push(`${hook}: ${wasKilled ? 'killed' : `exit ${result.code}`}`);
      expect(result.stderr, runs.join('\n')).not.toMatch(/TAMPER_DETECTED|data loss|E34_EARLIER_ATTEMPT_KEPT/);
      // One retirement, whatever the kills: a re-run finishes the killed run's, never starts another (a new stamp).
      const stamps = new Set(git(demo.repo, ['for-each-ref', '--format=%(refname)', 'refs/polywave/retired/']).trim().split('\n').filter(Boolean).map((ref) => ref.split('/')[3]));
      expect(stamps.size, `${runs.join('\n')}\n${[...stamps].join(', ')}`).toBeLessThanOrEqual(1);
      last = result;
      if (!wasKilled) break;
    }
    // Each hook kills a run at most once: the two torn worktrees and at least every branch's two steps were reached.
    expect(runs.filter((line) => line.endsWith('killed')).length, runs.join('\n')).toBeGreaterThanOrEqual(2 + 2 * (agentBranches.length + 1));
    expect(last!.code, `${runs.join('\n')}\n${last!.stderr.slice(-4000)}`).toBe(0);
    expect(last!.stderr).toMatch(/catalog: its earlier attempt in another tier is retired \(an interrupted retirement finished\)|program: tier 2: catalog\n/);
    console.log(`P16-06 kills:\n  ${runs.join('\n  ')}`);

    // One retirement: every branch kept under one stamp, at the commit it had.
    const retired = git(demo.repo, ['for-each-ref', '--format=%(refname) %(objectname)', 'refs/polywave/retired/']).trim().split('\n');
    const stamps = new Set(retired.map((line) => line.split('/')[3]));
    expect(stamps.size, retired.join('\n')).toBe(1);
    expect(retired.join('\n')).toMatch(new RegExp(`/polywave/program/shop/tier1-impl-catalog ${oldBranch}$`, 'm'));
    for (const line of agentBranches) {
      const [name, sha] = line.split(' ');
      expect(retired.join('\n')).toMatch(new RegExp(`/${name!.replace(/[/.]/g, '\\$&')} ${sha}$`, 'm'));
    }
    expect(git(demo.repo, ['branch', '--list']).trim()).toBe('* main');
    expect(git(demo.repo, ['worktree', 'list', '--porcelain']).match(/^worktree /gm)).toHaveLength(1);
    // The earlier attempt's prepare records and journal moved aside, under the same stamp; no intent record left.
    const polywaveDir = path.join(demo.repo, '.git', 'polywave');
    expect(readdirSync(path.join(polywaveDir, 'retired'))).toEqual([...stamps]);
    const keptFiles = readdirSync(path.join(polywaveDir, 'retired', [...stamps][0]!));
    expect(keptFiles).toEqual(expect.arrayContaining(['tamper-catalog-wave2.json', 'hooks-catalog-wave2']));
    expect(existsSync(path.join(polywaveDir, 'retiring')) ? readdirSync(path.join(polywaveDir, 'retiring')) : []).toEqual([]);
    expect(readFileSync(path.join(demo.repo, 'docs/PROGRAM/complete/PROGRAM-shop.yaml'), 'utf8')).toMatch(/^state: COMPLETE$/m);
    expect(git(demo.repo, ['log', '--format=%s', 'main']).split('\n').filter((subject) => subject.startsWith('Merge program tier 2 impl catalog'))).toHaveLength(1);
    expect(git(demo.repo, ['status', '--porcelain']).trim()).toBe('');
    // The work of the earlier attempt is still there: its IMPL branch's commits reachable from the kept ref.
    expect(git(demo.repo, ['cat-file', '-t', oldBranch]).trim()).toBe('commit');
  }, 900_000);
});

describe('P18-05: the record of an interrupted retirement is accepted only as what the retirement itself would retire', () => {
  // Before the fix: the record was trusted as a delete list — `main` in it deleted refs/heads/main, a worktree entry
  // pointing elsewhere had that directory removed with everything in it (an ignored file lost), a stamp `../../x` moved
  // the records outside the repository and the real retirement was skipped.
  it('a record naming main, a directory outside the repository, or a stamp that is a path: E34 refused, nothing deleted; the record as written finishes the retirement', async () => {
    const { demo } = await earlierAttemptToRetire();
    const killedRun = await runCli(executeArgs(demo), { cwd: demo.repo, env: { ...gitEnv, POLYWAVE_TEST_CRASH_IN_RETIREMENT: '1' }, timeoutMs: 240_000 });
    const record = path.join(demo.repo, '.git/polywave/retiring/catalog.json');
    expect(existsSync(record), killedRun.stderr.slice(-1500)).toBe(true);
    const written = readFileSync(record, 'utf8');
    const intent = JSON.parse(written) as { stamp: string; branches: Array<{ branch: string; sha: string }>; worktrees: Array<{ path: string; branch: string; head: string }> };
    const head = git(demo.repo, ['rev-parse', 'HEAD']).trim();
    const victim = path.join(path.dirname(demo.repo), 'victim');
    mkdirSync(path.join(victim, 'node_modules'), { recursive: true });
    writeFileSync(path.join(victim, 'node_modules', 'precious.txt'), 'precious\n');
    const tampered: Array<[string, object, RegExp]> = [
      ['main', { ...intent, branches: [...intent.branches, { branch: 'main', sha: head }] }, /branch main is not an IMPL branch of catalog/],
      ['victim', { ...intent, worktrees: [...intent.worktrees, { path: victim, branch: intent.branches[0]!.branch, head }] }, /worktree .*victim is not under \.claude\/worktrees\/polywave/],
      ['stamp', { ...intent, stamp: '../../../../x' }, /its stamp "\.\.\/\.\.\/\.\.\/\.\.\/x" is not a time/],
      ['impl', { ...intent, impl: 'pricing' }, /it is for pricing of PROGRAM shop/],
    ];
    for (const [name, content, why] of tampered) {
      writeFileSync(record, JSON.stringify(content));
      const refused = await cli(demo, executeArgs(demo));
      expect(refused.code, `${name}: ${refused.stderr.slice(-1500)}`).toBe(1);
      expect(refused.stderr).toMatch(/E34_EARLIER_ATTEMPT_KEPT: .*retiring\/catalog\.json is not one polywave wrote for this retirement/s);
      expect(refused.stderr, name).toMatch(why);
      expect(git(demo.repo, ['rev-parse', '--verify', 'refs/heads/main']).trim()).toBe(head);
      expect(readFileSync(path.join(victim, 'node_modules', 'precious.txt'), 'utf8')).toBe('precious\n');
      expect(existsSync(path.join(path.dirname(demo.repo), 'x'))).toBe(false);
    }
    writeFileSync(record, written);
    const resumed = await cli(demo, executeArgs(demo));
    expect(resumed.code, resumed.stderr.slice(-2000)).toBe(0);
    expect(git(demo.repo, ['for-each-ref', '--format=%(refname)', `refs/polywave/retired/${intent.stamp}/`])).toMatch(/tier1-impl-catalog/);
  }, 900_000);
});
