/**
 * Outside attack X7 on the PROGRAM layer (issue 12), findings 2, 3, 5, 7, 8 and 9, as regression
 * tests: the real CLI as child processes on real temporary git repositories (the demo PROGRAM
 * "shop", set up without running it), no agents run — every case is a refusal or a tier command
 * on a crafted state, so the file takes seconds.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { acquireRunLock } from '../src/cli/run-lock.js';
import { binPath, runCli } from './support/cli.js';

import { programRelative, gitEnv, setupDemo, git, writeFiles, commitAll, craft, cli, withStatuses, implDoc, tier1Built, tier1Frozen, expectUnchanged, executeArgs } from './support/program-crafted.js';

describe('X7 finding 5: a refusal before anything runs leaves the PROGRAM as it is and names the real next step', () => {
  it('P1 overlap of two pre-existing IMPLs and a missing pre-existing IMPL doc: exit 1, coded, REVIEWED kept, clean tree, no "re-run to resume"', async () => {
    const overlap = await craft({
      [programRelative]: withStatuses({ pricing: 'reviewed', catalog: 'reviewed' }),
      'docs/IMPL/IMPL-pricing.yaml': implDoc('pricing', 'REVIEWED'),
      'docs/IMPL/IMPL-catalog.yaml': implDoc('catalog', 'REVIEWED', (text) => text.replaceAll('src/catalog-data.js', 'src/pricing.js')),
    });
    const p1 = await expectUnchanged(overlap, executeArgs(overlap), 1, /V029_P1_FILE_OVERLAP.*src\/pricing\.js/s);
    expect(readFileSync(overlap.program, 'utf8')).toMatch(/^state: REVIEWED$/m);
    expect(p1.stderr).toMatch(/refused, nothing changed \(REVIEWED\)/);
    expect(p1.stderr).toMatch(/Next: fix the pre-existing IMPL doc.*re-run `polywave program-execute docs\/PROGRAM\/PROGRAM-shop\.yaml`/s);
    expect(p1.stderr).not.toMatch(/Re-run the same command to resume/i);
    // Outside attack X11 #6: create-program-worktrees refuses the same tier (it made both IMPL branches).
    await expectUnchanged(overlap, ['create-program-worktrees', programRelative, '--tier', '1'], 1, /V029_P1_FILE_OVERLAP.*src\/pricing\.js.*nothing was created/s);

    // Outside attack P13-18: an IMPL doc left BLOCKED by an attempt in another tier (a re-plan moved the IMPL) was
    // refused with no command named. The advice names set-impl-state and the earlier attempt's branch (kept).
    const moved = await craft({
      [programRelative]: withStatuses({ pricing: 'reviewed', catalog: 'reviewed' }),
      'docs/IMPL/IMPL-pricing.yaml': implDoc('pricing', 'REVIEWED'),
      'docs/IMPL/IMPL-catalog.yaml': implDoc('catalog', 'BLOCKED'),
    });
    git(moved.repo, ['branch', 'polywave/program/shop/tier3-impl-catalog']);
    const blocked = await expectUnchanged(moved, executeArgs(moved), 1, /V032_IMPL_STATE_MISMATCH.*catalog/s);
    expect(blocked.stderr).toMatch(/catalog's IMPL doc is BLOCKED by an earlier attempt: once its cause is fixed, `polywave set-impl-state docs\/IMPL\/IMPL-catalog\.yaml --state REVIEWED` \(its earlier attempt's IMPL branch polywave\/program\/shop\/tier3-impl-catalog is kept/);

    // The same repository, pricing's doc gone: V031.
    execFileSync('rm', [path.join(overlap.repo, 'docs/IMPL/IMPL-pricing.yaml')]);
    commitAll(overlap.repo, 'test: pricing doc missing');
    await expectUnchanged(overlap, executeArgs(overlap), 1, /V031_IMPL_FILE_MISSING.*pricing/s);
    await expectUnchanged(overlap, ['create-program-worktrees', programRelative, '--tier', '1'], 1, /V031_IMPL_FILE_MISSING.*pricing/s);
    expect(readFileSync(overlap.program, 'utf8')).toMatch(/^state: REVIEWED$/m);
    // BLOCKED → REVIEWED is illegal: the engine no longer needs it, nothing was written.

    // Issue 13 N4: a model server that does not answer is refused before anything runs (exit 2), as run and run-wave.
    const closed = await runCli(['program-execute', programRelative, '--auto', '--model', 'ollama:llama3', '--no-critic'], { cwd: overlap.repo, env: { ...gitEnv, OLLAMA_HOST: 'http://127.0.0.1:9' }, timeoutMs: 60_000 });
    expect(closed.code, closed.stderr).toBe(2);
    expect(closed.stderr).toMatch(/^polywave: error\[AGENT_MODEL_UNREACHABLE\]/);
    expect(readFileSync(overlap.program, 'utf8')).toMatch(/^state: REVIEWED$/m);
    expect(git(overlap.repo, ['status', '--porcelain']).trim()).toBe('');
  });
});

describe('X7 finding 2: P2 — a later tier may not own or change a frozen contract\'s file', () => {
  it('(a) a pre-existing tier-2 IMPL owning src/pricing.js (action modify) is refused before any wave: V030 naming the contract and the file', async () => {
    const owning = implDoc('checkout', 'REVIEWED', (text) => text.replace('file_ownership:\n', 'file_ownership:\n    - file: src/pricing.js\n      agent: K\n      wave: 1\n      action: modify\n'));
    const demo = await tier1Frozen({ 'docs/IMPL/IMPL-checkout.yaml': owning }, { checkout: 'reviewed' });
    const result = await expectUnchanged(demo, executeArgs(demo), 1, /V030_P2_CONTRACT_REDEFINITION: IMPL "checkout" owns src\/pricing\.js \(agent K, action modify\), the file of program contract "priceWithTax" frozen at tier 1/);
    expect(result.stderr).toMatch(/refused, nothing changed/);
  });

  it('(b) the frozen file changed on the main line: tier-gate and finalize-tier of tier 2 fail with P2_FROZEN_CONTRACT_CHANGED naming the contract', async () => {
    const demo = await tier1Frozen({ 'docs/IMPL/complete/IMPL-checkout.yaml': implDoc('checkout', 'COMPLETE') }, { checkout: 'complete' });
    const frozenBlob = /frozen_blob: ([0-9a-f]{40})/.exec(readFileSync(demo.program, 'utf8'))![1]!;
    expect(git(demo.repo, ['rev-parse', 'HEAD:src/pricing.js']).trim()).toBe(frozenBlob);
    writeFiles(demo.repo, { 'src/pricing.js': "export function priceWithTax(net, rate, currency = 'EUR') {\n  return Math.round(net * (1 + rate) * 100) / 100;\n}\n" });
    commitAll(demo.repo, 'test: tier 2 rewrote the frozen contract');
    const gate = await expectUnchanged(demo, ['tier-gate', programRelative, '--tier', '2'], 1, /P2_FROZEN_CONTRACT_CHANGED: frozen contract priceWithTax \(src\/pricing\.js, frozen at tier 1\) changed/);
    const parsed = JSON.parse(gate.stdout) as { passed: boolean; p2_violations: Array<{ contract: string; frozen_blob: string; current_blob: string }> };
    expect(parsed.passed).toBe(false);
    expect(parsed.p2_violations).toEqual([expect.objectContaining({ contract: 'priceWithTax', frozen_blob: frozenBlob, current_blob: git(demo.repo, ['rev-parse', 'HEAD:src/pricing.js']).trim() })]);
    const finalize = await cli(demo, ['finalize-tier', programRelative, '--tier', '2']);
    expect(finalize.code, `${finalize.stdout}\n${finalize.stderr}`).toBe(1);
    expect((JSON.parse(finalize.stdout) as { errors: Array<{ code: string; message: string }> }).errors).toEqual([expect.objectContaining({ code: 'P2_FROZEN_CONTRACT_CHANGED', message: expect.stringMatching(/priceWithTax/) })]);
  });
});

describe('X7 finding 3: P3 — no IMPL branch of tier N before tier N−1 is done, none kept from before its merges', () => {
  it('create-program-worktrees / prepare-tier --tier 2 on a fresh PROGRAM: exit 1, N039 P3, no branch or worktree; (finding 8) program-execute --concurrency 0 / abc, --max-turns -1: exit 2, X001; (finding 9) a state write sets `updated:`', async () => {
    const demo = await setupDemo();
    await expectUnchanged(demo, ['create-program-worktrees', programRelative, '--tier', '2'], 1, /N039_VERIFY_TIERS_INCOMPLETE.*P3: earlier tier\(s\) not complete: tier 1/s);
    await expectUnchanged(demo, ['prepare-tier', programRelative, '--tier', '2'], 1, /N039_VERIFY_TIERS_INCOMPLETE.*P3/s);
    expect(existsSync(path.join(demo.repo, '.claude', 'worktrees', 'polywave', 'program'))).toBe(false);
    for (const [flag, value] of [['--concurrency', '0'], ['--concurrency', 'abc'], ['--max-turns', '-1']] as const) {
      const result = await expectUnchanged(demo, executeArgs(demo, [flag, value]), 2, new RegExp(`error\\[X001_INVALID_INPUT\\]: ${flag} must be a positive`));
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
    }
    // Finding 9: `updated` follows a write (it kept the creation date).
    expect(readFileSync(demo.program, 'utf8')).toMatch(/^updated: 2026-12-01$/m);
    const today = new Date().toISOString().slice(0, 10);
    const state = await cli(demo, ['update-program-state', programRelative, '--state', 'TIER_EXECUTING']);
    expect(state.code, state.stderr).toBe(0);
    const text = readFileSync(demo.program, 'utf8');
    expect(text).toMatch(new RegExp(`^updated: ['"]?${today}['"]?$`, 'm'));
    expect(text).toMatch(/^created: 2026-12-01$/m);
  });

  it('a tier-2 IMPL branch made before tier 1\'s merge: holding work → P3_STALE_IMPL_BRANCH, untouched; holding none → moved forward to the main line', async () => {
    const demo = await setupDemo();
    const root = git(demo.repo, ['rev-parse', 'HEAD']).trim();
    // Tier 1 done on a side branch, merged as finalize-tier merges an IMPL branch.
    git(demo.repo, ['checkout', '-q', '-b', 'tier1-work']);
    writeFiles(demo.repo, { ...tier1Built(), [programRelative]: withStatuses({ pricing: 'complete', catalog: 'complete' }) });
    commitAll(demo.repo, 'test: tier 1 work');
    git(demo.repo, ['checkout', '-q', 'main']);
    // The stale branch and its worktree, from before tier 1 (as an early create-program-worktrees left it).
    const branch = 'polywave/program/shop/tier2-impl-checkout';
    const worktree = path.join(demo.repo, '.claude', 'worktrees', 'polywave', 'program', 'shop', 'tier2-impl-checkout');
    git(demo.repo, ['branch', branch, root]);
    git(demo.repo, ['worktree', 'add', '-q', worktree, branch]);
    git(demo.repo, ['merge', '-q', '--no-ff', '--no-verify', '-m', 'Merge program tier 1 impl pricing: tier 1', 'tier1-work']);
    const head = git(demo.repo, ['rev-parse', 'HEAD']).trim();
    // Work of its own on the stale branch: refused, nothing moved.
    writeFileSync(path.join(worktree, 'early.txt'), 'work\n');
    git(worktree, ['add', 'early.txt']);
    git(worktree, ['commit', '-q', '--no-verify', '-m', 'early work']);
    const tip = git(demo.repo, ['rev-parse', branch]).trim();
    const refused = await cli(demo, ['create-program-worktrees', programRelative, '--tier', '2']);
    expect(refused.code, `${refused.stdout}\n${refused.stderr}`).toBe(1);
    expect(refused.stderr).toMatch(/P3_STALE_IMPL_BRANCH: polywave\/program\/shop\/tier2-impl-checkout .* does not contain tier 1's merges .*holds commits of its own/);
    expect(git(demo.repo, ['rev-parse', branch]).trim()).toBe(tip);
    expect(git(worktree, ['rev-parse', 'HEAD']).trim()).toBe(tip);
    // No work of its own: moved forward (branch and worktree) to the main line.
    git(worktree, ['reset', '-q', '--hard', root]);
    const moved = await cli(demo, ['create-program-worktrees', programRelative, '--tier', '2']);
    expect(moved.code, `${moved.stdout}\n${moved.stderr}`).toBe(0);
    expect((JSON.parse(moved.stdout) as { worktrees: Array<{ note?: string }> }).worktrees[0]!.note).toMatch(/created before tier 1 was merged .*moved forward/);
    expect(git(demo.repo, ['rev-parse', branch]).trim()).toBe(head);
    expect(git(worktree, ['rev-parse', 'HEAD']).trim()).toBe(head);
    expect(existsSync(path.join(worktree, 'src', 'pricing.js'))).toBe(true);
  });
});

describe('X7 finding 7: the freeze record is part of a frozen contract', () => {
  it('program-replan: a revision that drops frozen_at_tier/frozen_commit/frozen_blob is refused (P2_FROZEN_CONTRACT_CHANGED), the manifest restored', async () => {
    const demo = await tier1Frozen({}, {}, 'BLOCKED');
    const original = readFileSync(demo.program, 'utf8');
    const unfrozen = original.replace(/ {6}frozen_at_tier: 1\n {6}frozen_commit: \S+\n {6}frozen_blob: \S+\n/, '');
    expect(unfrozen).not.toBe(original);
    const script = readFileSync(demo.script, 'utf8');
    writeFileSync(demo.script, `${script.replace(/\n*$/, '\n')}  planner:\n    steps:\n      - write: { path: ${programRelative}, content: ${JSON.stringify(unfrozen)} }\n      - text: "revised"\n`);
    const replan = await cli(demo, ['program-replan', programRelative, '--reason', 'x7 finding 7', '--tier', '2', '--model', `script:${demo.script}`]);
    expect(replan.code, `${replan.stdout}\n${replan.stderr}`).toBe(1);
    expect(replan.stdout).toMatch(/P2_FROZEN_CONTRACT_CHANGED: the frozen contract priceWithTax was changed or removed/);
    expect(readFileSync(demo.program, 'utf8')).toBe(original);
  });
  // Outside attack P12-09: a Planner that rewrote a consumer's `usage` of a frozen contract was accepted — a frozen
  // contract's consumers may only grow (a re-plan may add IMPLs that consume it), those it had stay as they were.
  it('program-replan: a revision that changes a frozen contract’s consumer is refused (P2_FROZEN_CONTRACT_CHANGED), the manifest restored', async () => {
    const demo = await tier1Frozen({}, {}, 'BLOCKED');
    const original = readFileSync(demo.program, 'utf8');
    const rewritten = original.replace('usage: line totals', 'usage: anything at all');
    expect(rewritten).not.toBe(original);
    const script = readFileSync(demo.script, 'utf8');
    writeFileSync(demo.script, `${script.replace(/\n*$/, '\n')}  planner:\n    steps:\n      - write: { path: ${programRelative}, content: ${JSON.stringify(rewritten)} }\n      - text: "revised"\n`);
    const replan = await cli(demo, ['program-replan', programRelative, '--reason', 'p12-09', '--tier', '2', '--model', `script:${demo.script}`]);
    expect(replan.code, `${replan.stdout}\n${replan.stderr}`).toBe(1);
    expect(replan.stdout).toMatch(/P2_FROZEN_CONTRACT_CHANGED: a consumer of the frozen contract priceWithTax was changed or removed \(consumers may only be added\)/);
    expect(readFileSync(demo.program, 'utf8')).toBe(original);
  });
  // Outside attack P12-15: program-replan killed while its Planner's edit (a frozen contract changed) sat in the manifest,
  // unvalidated: the printed Next: (update-program-state, program-execute) took the edit as the plan, and a second
  // program-replan's P2 check compared against it. The next command on the PROGRAM now puts the backup back first.
  it('program-replan killed mid-revision: the next command on the PROGRAM undoes the unvalidated edit (E34_REPLAN_INTERRUPTED); a second re-plan starts from the original', async () => {
    const demo = await tier1Frozen({}, {}, 'BLOCKED');
    const original = readFileSync(demo.program, 'utf8');
    const script = readFileSync(demo.script, 'utf8');
    const killed = `${script.replace(/\n*$/, '\n')}  planner:\n    steps:\n      - edit: { path: ${programRelative}, old: "rounded to cents", new: "CHANGED BY A KILLED PLANNER" }\n      - sleep_ms: 30000\n`;
    const args = [binPath, 'program-replan', programRelative, '--reason', 'p12-15', '--tier', '2', '--model', `script:${demo.script}`];
    for (const next of [['update-program-state', programRelative, '--state', 'TIER_EXECUTING'], ['program-replan', programRelative, '--reason', 'again', '--tier', '2', '--model', `script:${demo.script}`]]) {
      writeFileSync(demo.program, original);
      writeFileSync(demo.script, killed);
      const child = spawn(process.execPath, args, { cwd: demo.repo, env: { ...process.env, ...gitEnv }, stdio: 'ignore' });
      const exited = new Promise((resolve) => child.once('exit', resolve));
      const deadline = Date.now() + 60_000;
      while (!readFileSync(demo.program, 'utf8').includes('CHANGED BY A KILLED PLANNER') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(readFileSync(demo.program, 'utf8')).toContain('CHANGED BY A KILLED PLANNER');
      child.kill('SIGKILL');
      await exited;
      if (next[0] === 'program-replan') {
        // (the second Planner changes nothing of its own: what it finds is what it leaves, so the check is on its input)
        writeFileSync(demo.script, `${script.replace(/\n*$/, '\n')}  planner:\n    steps:\n      - text: "no change"\n`);
      }
      const after = await cli(demo, next);
      expect(after.stderr, after.stdout).toMatch(/^polywave: warning\[E34_REPLAN_INTERRUPTED\]: an interrupted program-replan \(pid \d+\) was undone: docs\/PROGRAM\/PROGRAM-shop\.yaml is as it was before it \(backup \S+\); the interrupted revision is kept at \S+$/m);
      const text = readFileSync(demo.program, 'utf8');
      expect(text).not.toContain('CHANGED BY A KILLED PLANNER');
      if (next[0] === 'update-program-state') {
        expect(after.code, after.stderr).toBe(0);
        expect(text).toBe(original.replace(/^state: BLOCKED$/m, 'state: TIER_EXECUTING'));
      } else {
        expect(text).toContain('rounded to cents');
      }
    }
  }, 240_000);
  // Outside attack P12-10: program-replan ran its Planner and rewrote the manifest while a tier loop held the PROGRAM's
  // run lock (the loop then stopped PROGRAM_PLAN_CHANGED). It takes the same lock now: RUN_IN_PROGRESS, nothing changed.
  it('program-replan while another run holds the PROGRAM (a live program-execute): RUN_IN_PROGRESS, exit 2, nothing changed', async () => {
    const demo = await tier1Frozen({}, {}, 'BLOCKED');
    const original = readFileSync(demo.program, 'utf8');
    const release = acquireRunLock(demo.repo, demo.program);
    try {
      const replan = await cli(demo, ['program-replan', programRelative, '--reason', 'p12-10', '--tier', '2', '--model', `script:${demo.script}`]);
      expect([replan.code, replan.stderr]).toEqual([2, expect.stringMatching(/^polywave: error\[RUN_IN_PROGRESS\]: /)]);
    } finally {
      release();
    }
    expect(readFileSync(demo.program, 'utf8')).toBe(original);
  });
  // Outside attack P13-07: the manifest-writing program commands did not take the PROGRAM's run lock: an
  // update-program-state during a running re-plan overwrote the Planner's revision, which program-replan still reported
  // as made (and during a live loop, REPLANNING killed it with a bare N008). They take the lock now; update-program-impl
  // (a human holding an IMPL during a live loop, P12-32) still works.
  it('while a re-plan or the loop holds the PROGRAM, the commands that write it are RUN_IN_PROGRESS (exit 2), nothing changed', async () => {
    const demo = await tier1Frozen({}, {}, 'BLOCKED');
    const original = readFileSync(demo.program, 'utf8');
    const head = git(demo.repo, ['rev-parse', 'HEAD']);
    const release = acquireRunLock(demo.repo, demo.program);
    try {
      for (const args of [
        ['update-program-state', programRelative, '--state', 'TIER_EXECUTING'],
        ['import-impls', '--program', programRelative, '--discover'],
        ['freeze-contracts', programRelative, '--tier', '1', '--commit'],
        ['mark-program-complete', programRelative, '--force'],
        ['create-program-worktrees', programRelative, '--tier', '2'],
        ['prepare-tier', programRelative, '--tier', '2'],
        ['finalize-tier', programRelative, '--tier', '1'],
      ]) {
        const refused = await cli(demo, args);
        expect([args[0], refused.code, refused.stderr]).toEqual([args[0], 2, expect.stringMatching(/^polywave: error\[RUN_IN_PROGRESS\]: a run of PROGRAM-shop\.yaml is already in progress/)]);
        expect(readFileSync(demo.program, 'utf8')).toBe(original);
        expect(git(demo.repo, ['rev-parse', 'HEAD'])).toBe(head);
        expect(git(demo.repo, ['status', '--porcelain'])).toBe('');
      }
      const held = await cli(demo, ['update-program-impl', programRelative, '--impl', 'checkout', '--status', 'blocked']);
      expect(held.code, held.stderr).toBe(0);
    } finally {
      release();
    }
    const after = await cli(demo, ['update-program-state', programRelative, '--state', 'TIER_EXECUTING']);
    expect(after.code, after.stderr).toBe(0);
  }, 120_000);
  // Outside attack P13-05: the marker of a killed re-plan named the PROGRAM by its absolute path — after the project was
  // moved (or copied) no command recognised it and the edited frozen contract went through to COMPLETE; and freeze-contracts,
  // finalize-tier, validate-program, program-status… did not look at all (finalize-tier committed the edit).
  it('a re-plan killed mid-revision, then the project moved: every program command undoes it first, the revision kept aside', async () => {
    const demo = await tier1Frozen({}, {}, 'BLOCKED');
    const original = readFileSync(demo.program, 'utf8');
    const script = readFileSync(demo.script, 'utf8');
    writeFileSync(demo.script, `${script.replace(/\n*$/, '\n')}  planner:\n    steps:\n      - edit: { path: ${programRelative}, old: "rounded to cents", new: "CHANGED BY A KILLED PLANNER" }\n      - sleep_ms: 30000\n`);
    const child = spawn(process.execPath, [binPath, 'program-replan', programRelative, '--reason', 'p13-05', '--tier', '2', '--model', `script:${demo.script}`], { cwd: demo.repo, env: { ...process.env, ...gitEnv }, stdio: 'ignore' });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const deadline = Date.now() + 60_000;
    while (!readFileSync(demo.program, 'utf8').includes('CHANGED BY A KILLED PLANNER') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    child.kill('SIGKILL');
    await exited;
    const moved = `${path.dirname(demo.repo)}-moved`;
    execFileSync('mv', [path.dirname(demo.repo), moved]);
    const repo = path.join(moved, path.basename(demo.repo));
    const program = path.join(repo, programRelative);
    expect(readFileSync(program, 'utf8')).toContain('CHANGED BY A KILLED PLANNER');
    // A read-only command (validate-program said "valid" on the edit before) and then a writing one.
    const validated = await runCli(['validate-program', programRelative], { cwd: repo, env: gitEnv, timeoutMs: 120_000 });
    expect(validated.stderr).toMatch(/^polywave: warning\[E34_REPLAN_INTERRUPTED\]: an interrupted program-replan \(pid \d+\) was undone: docs\/PROGRAM\/PROGRAM-shop\.yaml is as it was before it \(backup \S+\); the interrupted revision is kept at (\S+)$/m);
    const keptAt = /the interrupted revision is kept at (\S+)$/m.exec(validated.stderr)![1]!;
    expect(keptAt.startsWith(path.join(repo, '.git', 'polywave', 'program-replan'))).toBe(true);
    expect(readFileSync(keptAt, 'utf8')).toContain('CHANGED BY A KILLED PLANNER');
    expect(readFileSync(program, 'utf8')).toBe(original);
    const frozen = await runCli(['freeze-contracts', programRelative, '--tier', '1'], { cwd: repo, env: gitEnv, timeoutMs: 120_000 });
    expect(frozen.stderr).not.toContain('E34_REPLAN_INTERRUPTED');
    expect(readFileSync(program, 'utf8')).toBe(original);
  }, 240_000);
  // Outside round P14-30: a project copied while a re-plan ran (its marker came along, naming a live process), then a
  // second re-plan in the copy took its backup from the half revision; killed, the undo put back the later backup — the
  // frozen contract's half edit — and the program ran to COMPLETE with it. A re-plan beside a live marker of the same
  // PROGRAM is refused; of several interrupted ones, the oldest backup is put back.
  it('P14-30: a re-plan beside a copied live marker is refused; two interrupted re-plans are undone to the oldest backup', async () => {
    const demo = await tier1Frozen({}, {}, 'BLOCKED');
    const original = readFileSync(demo.program, 'utf8');
    const script = readFileSync(demo.script, 'utf8');
    writeFileSync(demo.script, `${script.replace(/\n*$/, '\n')}  planner:\n    steps:\n      - edit: { path: ${programRelative}, old: "rounded to cents", new: "CHANGED BY A KILLED PLANNER" }\n      - sleep_ms: 30000\n`);
    const child = spawn(process.execPath, [binPath, 'program-replan', programRelative, '--reason', 'p14-30', '--tier', '2', '--model', `script:${demo.script}`], { cwd: demo.repo, env: { ...process.env, ...gitEnv }, stdio: 'ignore' });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const copy = `${path.dirname(demo.repo)}-copy`;
    try {
      const deadline = Date.now() + 60_000;
      while (!readFileSync(demo.program, 'utf8').includes('CHANGED BY A KILLED PLANNER') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      execFileSync('cp', ['-a', path.dirname(demo.repo), copy]);
      const repo = path.join(copy, path.basename(demo.repo));
      const second = await runCli(['program-replan', programRelative, '--reason', 'p14-30 b', '--tier', '2', '--model', `script:${demo.script}`], { cwd: repo, env: gitEnv, timeoutMs: 120_000 });
      expect([second.code, second.stderr]).toEqual([2, expect.stringMatching(/^polywave: error\[RUN_IN_PROGRESS\]: a program-replan of PROGRAM-shop\.yaml is running \(pid \d+/)]);
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
    // Two interrupted re-plans in the copy: the first one's marker, and a later one whose backup is the half revision.
    const repo = path.join(copy, path.basename(demo.repo));
    const directory = path.join(repo, '.git', 'polywave', 'program-replan');
    const [first] = readdirSync(directory).filter((name) => name.endsWith('.replanning.json'));
    const marker = JSON.parse(readFileSync(path.join(directory, first!), 'utf8')) as { backup: string };
    const laterBackup = path.join(directory, 'PROGRAM-shop-9999-12-31T00-00-00-000Z.yaml');
    writeFileSync(laterBackup, readFileSync(path.join(repo, programRelative)));
    writeFileSync(path.join(directory, 'PROGRAM-shop-9999-12-31T00-00-00-000Z.replanning.json'), JSON.stringify({ ...marker, backup: laterBackup }));
    const validated = await runCli(['validate-program', programRelative], { cwd: repo, env: gitEnv, timeoutMs: 120_000 });
    expect(validated.stderr).toMatch(/E34_REPLAN_INTERRUPTED/);
    expect(readFileSync(path.join(repo, programRelative), 'utf8')).toBe(original);
    expect(readdirSync(directory).filter((name) => name.endsWith('.replanning.json'))).toEqual([]);
  }, 240_000);
  // Outside attack P13-38: a human's `blocked` on the IMPL a live loop runs was accepted, then overwritten by the loop.
  it('update-program-impl on an IMPL the live loop is running: RUN_IN_PROGRESS, nothing written; after the run it is the human\'s', async () => {
    const demo = await craft({ [programRelative]: withStatuses({ pricing: 'executing', catalog: 'executing' }, 'TIER_EXECUTING') });
    const original = readFileSync(demo.program, 'utf8');
    const release = acquireRunLock(demo.repo, demo.program);
    try {
      const refused = await cli(demo, ['update-program-impl', programRelative, '--impl', 'pricing', '--status', 'blocked']);
      expect([refused.code, refused.stderr]).toEqual([2, expect.stringMatching(/^polywave: error\[RUN_IN_PROGRESS\]: IMPL pricing is being run by a live program-execute of PROGRAM-shop\.yaml/)]);
      expect(readFileSync(demo.program, 'utf8')).toBe(original);
    } finally {
      release();
    }
    const after = await cli(demo, ['update-program-impl', programRelative, '--impl', 'pricing', '--status', 'blocked']);
    expect(after.code, after.stderr).toBe(0);
  }, 120_000);
  // Outside round P14 (P14-08): P13-38's refusal covered `executing` only — a human's `blocked` on an IMPL of the running
  // tier that was still `scouting` or `reviewed` (by its Scout) was accepted, then overwritten (the IMPL run, COMPLETE).
  it('P14-08: update-program-impl on a scouting or reviewed IMPL of the tier a live loop runs: RUN_IN_PROGRESS; a later tier\'s IMPL is still the human\'s', async () => {
    const demo = await craft({ [programRelative]: withStatuses({ pricing: 'scouting', catalog: 'reviewed' }, 'TIER_EXECUTING') });
    const original = readFileSync(demo.program, 'utf8');
    const release = acquireRunLock(demo.repo, demo.program);
    try {
      for (const slug of ['pricing', 'catalog']) {
        const refused = await cli(demo, ['update-program-impl', programRelative, '--impl', slug, '--status', 'blocked']);
        expect([refused.code, refused.stderr]).toEqual([2, expect.stringMatching(new RegExp(`^polywave: error\\[RUN_IN_PROGRESS\\]: IMPL ${slug} is being run by a live program-execute`))]);
        expect(readFileSync(demo.program, 'utf8')).toBe(original);
      }
      // P12-32: an IMPL of a tier the loop has not reached is held for a human.
      const held = await cli(demo, ['update-program-impl', programRelative, '--impl', 'checkout', '--status', 'blocked']);
      expect(held.code, held.stderr).toBe(0);
    } finally {
      release();
    }
    const after = await cli(demo, ['update-program-impl', programRelative, '--impl', 'pricing', '--status', 'blocked']);
    expect(after.code, after.stderr).toBe(0);
  }, 120_000);
  // Outside round P14 (P14-20): a tier-2 IMPL of an approved PROGRAM, pre-existing and REVIEWED, was run by hand before
  // tier 1 started — its code committed on main (P3/P5 bypassed) — and the loop then adopted it as complete.
  it('P14-20: run / run-wave (even with --merge-target) of an IMPL of an approved PROGRAM whose tier has not started: E28B_IMPL_OF_PROGRAM, nothing changed', async () => {
    const demo = await craft({ 'docs/IMPL/IMPL-checkout.yaml': implDoc('checkout', 'REVIEWED'), [programRelative]: withStatuses({ checkout: 'reviewed' }) });
    const head = git(demo.repo, ['rev-parse', 'HEAD']);
    for (const args of [
      ['run', 'docs/IMPL/IMPL-checkout.yaml', '--auto', '--model', `script:${demo.script}`],
      ['run-wave', 'docs/IMPL/IMPL-checkout.yaml', '--wave', '1', '--merge-target', 'main', '--model', `script:${demo.script}`],
      ['prepare-wave', 'docs/IMPL/IMPL-checkout.yaml', '--wave', '1'],
    ]) {
      const refused = await cli(demo, args);
      expect([refused.code, refused.stderr], args.join(' ')).toEqual([2, expect.stringMatching(/^polywave: error\[E28B_IMPL_OF_PROGRAM\]: (run|run-wave|prepare-wave): IMPL checkout belongs to tier 2 of PROGRAM shop \(docs\/PROGRAM\/PROGRAM-shop\.yaml, REVIEWED\), which the tier loop has not started/)]);
      expect(git(demo.repo, ['rev-parse', 'HEAD'])).toBe(head);
      expect(git(demo.repo, ['status', '--porcelain'])).toBe('');
    }
    expect((await cli(demo, ['run', 'docs/IMPL/IMPL-checkout.yaml', '--auto', '--model', `script:${demo.script}`])).stderr).toContain("tier 1's gate passed (P3)");
  }, 120_000);
  // P14-03: reconcile-state (E49) on an IMPL of the running tier judged by main and wrote WAVE_VERIFIED → WAVE_EXECUTING on
  // the IMPL the loop runs on its IMPL branch; run-scaffold committed on main. Both are refused like run-wave.
  it('P14-03: reconcile-state and run-scaffold on an IMPL of the running tier (its IMPL branch exists): E28B_IMPL_OF_PROGRAM, nothing changed', async () => {
    const demo = await craft({ 'docs/IMPL/IMPL-pricing.yaml': implDoc('pricing', 'WAVE_PENDING'), [programRelative]: withStatuses({ pricing: 'executing', catalog: 'executing' }, 'TIER_EXECUTING') });
    git(demo.repo, ['branch', 'polywave/program/shop/tier1-impl-pricing']);
    const head = git(demo.repo, ['rev-parse', 'HEAD']);
    const doc = readFileSync(path.join(demo.repo, 'docs/IMPL/IMPL-pricing.yaml'), 'utf8');
    for (const command of ['reconcile-state', 'run-scaffold']) {
      const refused = await cli(demo, [command, 'docs/IMPL/IMPL-pricing.yaml', ...(command === 'run-scaffold' ? ['--model', `script:${demo.script}`] : [])]);
      expect([refused.code, refused.stderr]).toEqual([2, expect.stringMatching(new RegExp(`^polywave: error\\[E28B_IMPL_OF_PROGRAM\\]: ${command}: IMPL pricing belongs to tier 1 of PROGRAM shop .*program-execute docs/PROGRAM/PROGRAM-shop\\.yaml\`; nothing changed`))]);
      expect(readFileSync(path.join(demo.repo, 'docs/IMPL/IMPL-pricing.yaml'), 'utf8')).toBe(doc);
      expect(git(demo.repo, ['rev-parse', 'HEAD'])).toBe(head);
      expect(git(demo.repo, ['status', '--porcelain'])).toBe('');
    }
  }, 120_000);
  // Outside round P14 (P14-40): close-impl --force, mark-complete --force and cleanup took no run lock: during a live loop
  // they committed on main mid-tier, archived the IMPL doc under its running wave, removed a running agent's worktree.
  it('P14-40: close-impl --force, mark-complete --force and cleanup of an IMPL a live run holds: RUN_IN_PROGRESS, nothing changed', async () => {
    const demo = await craft({ 'docs/IMPL/IMPL-pricing.yaml': implDoc('pricing', 'WAVE_EXECUTING'), [programRelative]: withStatuses({ pricing: 'executing', catalog: 'executing' }, 'TIER_EXECUTING') });
    const doc = path.join(demo.repo, 'docs/IMPL/IMPL-pricing.yaml');
    const before = readFileSync(doc, 'utf8');
    const head = git(demo.repo, ['rev-parse', 'HEAD']);
    const release = acquireRunLock(demo.repo, doc);
    try {
      for (const args of [
        ['close-impl', 'docs/IMPL/IMPL-pricing.yaml', '--force'],
        ['mark-complete', 'docs/IMPL/IMPL-pricing.yaml', '--force'],
        ['cleanup', 'docs/IMPL/IMPL-pricing.yaml', '--wave', '1'],
        // P14-16: a human's hold through the IMPL doc during the loop was overwritten by it without a word.
        ['set-impl-state', 'docs/IMPL/IMPL-pricing.yaml', '--state', 'BLOCKED'],
      ]) {
        const refused = await cli(demo, args);
        expect([refused.code, refused.stderr], args.join(' ')).toEqual([2, expect.stringMatching(/^polywave: error\[RUN_IN_PROGRESS\]/)]);
        expect(readFileSync(doc, 'utf8')).toBe(before);
        expect(existsSync(path.join(demo.repo, 'docs/IMPL/complete/IMPL-pricing.yaml'))).toBe(false);
        expect(git(demo.repo, ['rev-parse', 'HEAD'])).toBe(head);
        expect(git(demo.repo, ['status', '--porcelain'])).toBe('');
      }
    } finally {
      release();
    }
  }, 120_000);
  // Outside attack P13-30: a PROGRAM under another name was run as an IMPL (and failed at close-impl: issue 12's first symptom).
  it('polywave run on a PROGRAM not named PROGRAM-*.yaml: the tier loop\'s refusal naming the move, nothing changed', async () => {
    const demo = await setupDemo();
    const text = readFileSync(demo.program, 'utf8');
    writeFiles(demo.repo, { 'docs/PROGRAM/shop.yaml': text });
    commitAll(demo.repo, 'test: a PROGRAM under another name');
    const head = git(demo.repo, ['rev-parse', 'HEAD']);
    const run = await cli(demo, ['run', 'docs/PROGRAM/shop.yaml', '--auto', '--model', `script:${demo.script}`]);
    expect([run.code, run.stderr]).toEqual([2, expect.stringMatching(/^polywave: error\[X001_INVALID_INPUT\]: the tier loop runs a PROGRAM at docs\/PROGRAM\/PROGRAM-<slug>\.yaml, not docs\/PROGRAM\/shop\.yaml/)]);
    expect(run.stderr).not.toContain('close');
    expect(git(demo.repo, ['rev-parse', 'HEAD'])).toBe(head);
    expect(git(demo.repo, ['status', '--porcelain'])).toBe('');
    // P14-04: known by the parsed document's keys — a quoted key slipped past a column-0 pattern.
    writeFiles(demo.repo, { 'docs/PROGRAM/quoted.yaml': text.replace(/^program_slug:/m, '"program_slug":').replace(/^tiers:/m, "'tiers':") });
    commitAll(demo.repo, 'test: quoted keys');
    const quoted = await cli(demo, ['run', 'docs/PROGRAM/quoted.yaml', '--auto', '--model', `script:${demo.script}`]);
    expect([quoted.code, quoted.stderr]).toEqual([2, expect.stringMatching(/^polywave: error\[X001_INVALID_INPUT\]: the tier loop runs a PROGRAM at docs\/PROGRAM\/PROGRAM-<slug>\.yaml, not docs\/PROGRAM\/quoted\.yaml/)]);
    // P15-04: an escaped key (`"program\x5fslug"`, which program-status reads as a PROGRAM) was run as an IMPL (N037 at
    // close-impl); a document with both sets of keys too — now the first is a PROGRAM, the second is neither.
    writeFiles(demo.repo, {
      'docs/PROGRAM/esc.yaml': text.replace(/^program_slug:/m, '"program\\x5fslug":'),
      'docs/PROGRAM/both.yaml': `${text.replace(/\n*$/, '\n')}feature_slug: shop\nverdict: SUITABLE\nfile_ownership: []\nwaves: []\n`,
    });
    commitAll(demo.repo, 'test: escaped key, both readings');
    const escaped = await cli(demo, ['run', 'docs/PROGRAM/esc.yaml', '--auto', '--model', `script:${demo.script}`]);
    expect([escaped.code, escaped.stderr]).toEqual([2, expect.stringMatching(/^polywave: error\[X001_INVALID_INPUT\]: the tier loop runs a PROGRAM at docs\/PROGRAM\/PROGRAM-<slug>\.yaml, not docs\/PROGRAM\/esc\.yaml/)]);
    const both = await cli(demo, ['run', 'docs/PROGRAM/both.yaml', '--auto', '--model', `script:${demo.script}`]);
    expect([both.code, both.stderr]).toEqual([2, expect.stringMatching(/^polywave: error\[X001_INVALID_INPUT\]: docs\/PROGRAM\/both\.yaml has both a PROGRAM's keys \(program_slug, tiers\) and an IMPL's \(feature_slug, waves, file_ownership, verdict\)/)]);
    const headNow = git(demo.repo, ['rev-parse', 'HEAD']);
    expect(git(demo.repo, ['status', '--porcelain'])).toBe('');
    expect(git(demo.repo, ['rev-parse', 'HEAD'])).toBe(headNow);
  }, 120_000);
  // Outside round P15-17: without --auto and without a terminal, the loop pauses for the tier review and its Next said
  // "re-run `polywave program-execute …` to resume" — which pauses the same way again. The Next names --yes now.
  it('program-execute without --auto and no terminal: the review pause names --yes as the way on', async () => {
    const demo = await setupDemo();
    const paused = await cli(demo, ['program-execute', programRelative, '--model', `script:${demo.script}`]);
    expect(paused.code, paused.stderr.slice(-2000)).toBe(1);
    expect(paused.stderr).toContain("waiting for the review of the tier's IMPLs");
    expect(paused.stderr).toMatch(/Next: review the tier's IMPLs \(docs\/IMPL\/IMPL-[a-z]+\.yaml, docs\/IMPL\/IMPL-[a-z]+\.yaml\), then re-run `polywave program-execute docs\/PROGRAM\/PROGRAM-shop\.yaml --yes`/);
  }, 120_000);
  // Outside round P15-06: a human's `blocked` written while every IMPL of a starting tier was still `pending` (which
  // update-program-impl accepts) was overwritten by the loop's own `scouting` write: the IMPL ran to complete and the
  // hold was lost. The human's write is made here straight into the file while the other Scout runs (--concurrency 1:
  // the second IMPL still waits, `pending`), the same moment the race reaches.
  // P16-24: `not-suitable` too — the start check holds it for a human, but the loop's write overwrote it.
  for (const status of ['blocked', 'not-suitable'] as const) it(`a human's ${status} on an IMPL of the tier being started is honoured, never overwritten by the loop (P15-06, P16-24)`, async () => {
    const demo = await setupDemo();
    const script = readFileSync(demo.script, 'utf8').replace(/( {2}scout@(pricing|catalog):\n {4}steps:\n)/g, '$1      - sleep_ms: 3000\n');
    writeFileSync(demo.script, script);
    const running = cli(demo, [...executeArgs(demo), '--concurrency', '1']);
    let held: string | undefined;
    for (let tries = 0; tries < 1200 && held === undefined; tries += 1) {
      const text = readFileSync(demo.program, 'utf8');
      const scouting = /- slug: (pricing|catalog)\n(?: {6}.*\n)*? {6}status: scouting/.exec(text)?.[1];
      if (scouting) {
        held = scouting === 'pricing' ? 'catalog' : 'pricing';
        writeFileSync(demo.program, text.replace(new RegExp(`(- slug: ${held}\\n(?: {6}.*\\n)*? {6}status: )pending`), `$1${status}`));
      } else await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(held).toBeDefined();
    const result = await running;
    // Before the fix: exit 0, the PROGRAM COMPLETE, the held IMPL scouted and run.
    expect(result.code, result.stderr.slice(-2000)).toBe(1);
    expect(result.stderr).toContain(`IMPL(s) held for a human: ${held}`);
    expect(readFileSync(demo.program, 'utf8')).toMatch(new RegExp(`- slug: ${held}\\n(?: {6}.*\\n)*? {6}status: ${status}`));
  }, 180_000);
  // Outside attack P12-09 (its minors): a Planner added an IMPL to tier 1, complete and frozen (the loop then re-opened it),
  // or renamed the PROGRAM (program_slug ≠ its file name: V052 for validate-program, yet accepted here).
  it('program-replan: an IMPL added to a complete tier (E34_COMPLETED_TIER_CHANGED) or a renamed PROGRAM (E34_PROGRAM_SLUG_CHANGED) is refused, the manifest restored', async () => {
    const demo = await tier1Frozen({}, {}, 'BLOCKED');
    const original = readFileSync(demo.program, 'utf8');
    const script = readFileSync(demo.script, 'utf8');
    const extra = ['    - slug: extra', '      title: An extra', '      tier: 1', '      estimated_agents: 1', '      estimated_waves: 1', '      key_outputs: [src/extra.js]', '      status: pending', ''].join('\n');
    const added = original.replace('    - slug: checkout\n', `${extra}    - slug: checkout\n`).replace('impls: [pricing, catalog]', 'impls: [pricing, catalog, extra]');
    const renamed = original.replace(/^program_slug: shop$/m, 'program_slug: shop2');
    for (const [revision, code] of [[added, /E34_COMPLETED_TIER_CHANGED: tier 1 is complete; extra cannot join it/], [renamed, /E34_PROGRAM_SLUG_CHANGED: program_slug .{1,3}shop.{1,3} was changed to .{1,3}shop2/]] as const) {
      expect(revision).not.toBe(original);
      writeFileSync(demo.script, `${script.replace(/\n*$/, '\n')}  planner:\n    steps:\n      - write: { path: ${programRelative}, content: ${JSON.stringify(revision)} }\n      - text: "revised"\n`);
      const replan = await cli(demo, ['program-replan', programRelative, '--reason', 'p12-09', '--tier', '2', '--model', `script:${demo.script}`]);
      expect(replan.code, `${replan.stdout}\n${replan.stderr}`).toBe(1);
      expect(replan.stdout).toMatch(code);
      expect(readFileSync(demo.program, 'utf8')).toBe(original);
    }
  });
  // Outside attack P12-17: a run killed inside the freeze commit left the freeze record written and staged, never
  // committed; the resume took tier 1 for done, ran tier 2 and its merge into main refused to run over the manifest.
  it('a freeze record a killed run left staged, not committed: the resume commits it, then tier 2 runs to COMPLETE', async () => {
    const demo = await craft({ ...tier1Built(), [programRelative]: withStatuses({ pricing: 'complete', catalog: 'complete' }, 'REVIEWED') });
    const freeze = await cli(demo, ['freeze-contracts', programRelative, '--tier', '1']);
    expect(freeze.code, freeze.stderr).toBe(0);
    git(demo.repo, ['add', programRelative]);
    expect(git(demo.repo, ['status', '--porcelain'])).toMatch(/^M {2}docs\/PROGRAM\/PROGRAM-shop\.yaml$/m);
    const run = await cli(demo, executeArgs(demo));
    expect(run.code, run.stderr.slice(-3000)).toBe(0);
    expect(run.stderr).toMatch(/tier 1: committed the freeze record a killed run had left uncommitted \(priceWithTax\)/);
    expect(git(demo.repo, ['log', '--format=%s', 'main'])).toMatch(/^chore: freeze program contracts of tier 1 \(priceWithTax\)$/m);
    expect(readFileSync(path.join(demo.repo, 'docs/PROGRAM/complete/PROGRAM-shop.yaml'), 'utf8')).toMatch(/frozen_at_tier: 1/);
    expect(git(demo.repo, ['status', '--porcelain']).trim()).toBe('');
  }, 240_000);

  // Outside attack P12-16: a run killed while git held a ref lock of the PROGRAM (the `update-ref` of a tier's IMPL
  // branches, a merge into an IMPL branch) left the lock file: every re-run stopped BLOCKED on "File exists".
  it('stale ref locks of the PROGRAM (an IMPL branch, packed-refs, an IMPL worktree) left by a killed git: removed, the run reaches COMPLETE', async () => {
    const demo = await setupDemo();
    const gitDir = path.join(demo.repo, '.git');
    const locks = ['refs/heads/polywave/program/shop/tier1-impl-pricing.lock', 'packed-refs.lock', 'worktrees/tier1-impl-catalog/HEAD.lock'];
    for (const lock of locks) {
      mkdirSync(path.dirname(path.join(gitDir, lock)), { recursive: true });
      writeFileSync(path.join(gitDir, lock), '');
    }
    const run = await cli(demo, executeArgs(demo));
    expect(run.code, run.stderr.slice(-3000)).toBe(0);
    for (const lock of locks) expect(existsSync(path.join(gitDir, lock)), lock).toBe(false);
    expect(run.stderr).toMatch(/removed \.git\/refs\/heads\/polywave\/program\/shop\/tier1-impl-pricing\.lock, left by a git process of a killed run/);
  }, 240_000);
  // Outside attack P12-33: merged agent code run by the tier gate (a test at import) wrote the main checkout — a file,
  // and the PROGRAM manifest (freeze_at moved, the tier gate's command replaced), which finalize-tier then committed.
  // The tier gate runs in a throwaway checkout of the merged tree now; the main checkout is hidden from it.
  it('the tier gate runs merged code in a throwaway checkout: its writes never reach the main checkout or the PROGRAM manifest', async () => {
    const hijack = [
      "import { appendFileSync, writeFileSync } from 'node:fs';",
      "import { execFileSync } from 'node:child_process';",
      "import path from 'node:path';",
      "import test from 'node:test';",
      "const tryWrite = (file, text) => { try { appendFileSync(file, text); } catch {} };",
      "tryWrite('GATE-HIJACK.txt', 'cwd\\n');",
      "tryWrite('docs/PROGRAM/PROGRAM-shop.yaml', '# gate hijack (cwd)\\n');",
      "let main = '';",
      "try { main = path.dirname(path.resolve(execFileSync('git', ['rev-parse', '--path-format=absolute', '--git-common-dir'], { encoding: 'utf8' }).trim())); } catch {}",
      "if (main) { tryWrite(path.join(main, 'GATE-HIJACK.txt'), 'main\\n'); tryWrite(path.join(main, 'docs/PROGRAM/PROGRAM-shop.yaml'), '# gate hijack (main)\\n'); }",
      "test('looks like a test', () => {});",
      '',
    ].join('\n');
    const demo = await tier1Frozen({ 'test/hijack.test.js': hijack });
    const before = readFileSync(demo.program, 'utf8');
    const gate = await cli(demo, ['tier-gate', programRelative, '--tier', '1']);
    expect(gate.code, `${gate.stdout}\n${gate.stderr}`).toBe(0);
    expect(existsSync(path.join(demo.repo, 'GATE-HIJACK.txt'))).toBe(false);
    expect(readFileSync(demo.program, 'utf8')).toBe(before);
    expect(git(demo.repo, ['status', '--porcelain']).trim()).toBe('');
  }, 120_000);
  // Outside attack P12-39: a PROGRAM at the legacy docs/PROGRAM-<slug>.yaml (or any other path through `run --program`)
  // ran its Scouts, then every IMPL stopped on the manifest's own status updates and the PROGRAM went BLOCKED. Refused
  // before anything runs now, naming the move.
  it('a PROGRAM outside docs/PROGRAM/ (the legacy docs/PROGRAM-<slug>.yaml, another path): refused up front with the move, nothing changed', async () => {
    const demo = await setupDemo();
    git(demo.repo, ['mv', programRelative, 'docs/PROGRAM-shop.yaml']);
    commitAll(demo.repo, 'test: the legacy location');
    const head = git(demo.repo, ['rev-parse', 'HEAD']);
    for (const args of [['program-execute', 'docs/PROGRAM-shop.yaml', '--auto', '--model', `script:${demo.script}`, '--no-critic'], ['run', '--program', 'docs/PROGRAM-shop.yaml', '--auto', '--model', `script:${demo.script}`, '--no-critic']]) {
      const refused = await cli(demo, args);
      expect([refused.code, refused.stderr]).toEqual([2, 'polywave: error[X001_INVALID_INPUT]: the tier loop runs a PROGRAM at docs/PROGRAM/PROGRAM-<slug>.yaml, not docs/PROGRAM-shop.yaml: move it (git mv docs/PROGRAM-shop.yaml docs/PROGRAM/PROGRAM-shop.yaml, then commit); nothing changed\n']);
    }
    expect(git(demo.repo, ['rev-parse', 'HEAD'])).toBe(head);
    expect(git(demo.repo, ['status', '--porcelain']).trim()).toBe('');
  });
});
