/**
 * Outside round P15's open findings on the PROGRAM layer (issue 12), as regression tests: the real CLI as child
 * processes on real temporary git repositories (the demo PROGRAM "shop" set up without running it, script agents).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { acquireRunLock } from '../src/cli/run-lock.js';
import { programDemoManifest } from '../src/demo/program-project.js';
import { runCli } from './support/cli.js';
import { createTestRepo } from './support/git-repo.js';
import { makeTempDir } from './support/temp.js';

import { programRelative, git, cli, commitAll, expectUnchanged, executeArgs, setupDemo, tier1Frozen, type Demo } from './support/program-crafted.js';

/** The demo's agent script with a scripted Planner (its steps) added. */
function withPlanner(demo: Demo, steps: string[]): void {
  const script = readFileSync(demo.script, 'utf8').replace(/\n {2}planner:\n[\s\S]*$/, '\n');
  writeFileSync(demo.script, `${script.replace(/\n*$/, '\n')}  planner:\n    steps:\n${steps.map((step) => `      ${step}\n`).join('')}`);
}

const replanArgs = (demo: Demo) => ['program-replan', programRelative, '--reason', 'p15', '--tier', '2', '--model', `script:${demo.script}`];

describe('P15-02: a re-plan that marks unbuilt work done is not a valid revision', () => {
  it('the never-built tier-2 IMPL set `complete` (no IMPL doc): V031 in the re-plan\'s own validation, exit 1, the plan as it was (BLOCKED); `executing` likewise; a description edit still passes', async () => {
    const demo = await tier1Frozen({}, {}, 'BLOCKED');
    const original = readFileSync(demo.program, 'utf8');
    const edit = (old: string, to: string) => `- edit: { path: ${programRelative}, old: ${JSON.stringify(old)}, new: ${JSON.stringify(to)} }`;
    const statusOf = (to: string) => edit('      key_outputs: [src/checkout.js]\n      status: pending', `      key_outputs: [src/checkout.js]\n      status: ${to}`);

    withPlanner(demo, [statusOf('complete'), '- text: "revised"']);
    const complete = await cli(demo, replanArgs(demo));
    expect(complete.code, `${complete.stdout}\n${complete.stderr}`).toBe(1);
    const result = JSON.parse(complete.stdout) as { validation_passed: boolean; errors?: string[] };
    expect(result.validation_passed).toBe(false);
    expect(result.errors?.join('\n')).toMatch(/^V031_IMPL_FILE_MISSING: IMPL "checkout" has status "complete" but IMPL-checkout\.yaml not found .* a re-plan may not mark work done/m);
    expect(readFileSync(demo.program, 'utf8')).toBe(original);
    expect(git(demo.repo, ['status', '--porcelain']).trim()).toBe('');

    withPlanner(demo, [statusOf('executing'), '- text: "revised"']);
    const executing = await cli(demo, replanArgs(demo));
    expect(executing.code, `${executing.stdout}\n${executing.stderr}`).toBe(1);
    expect(executing.stdout).toMatch(/E34_IMPL_STATUS_CHANGED: IMPL checkout set to `executing` \(was `pending`\)/);
    expect(readFileSync(demo.program, 'utf8')).toBe(original);

    withPlanner(demo, [edit('the checkout, on top of tier 1', 'the checkout, REVISED'), '- text: "revised"']);
    const revised = await cli(demo, replanArgs(demo));
    expect(revised.code, `${revised.stdout}\n${revised.stderr}`).toBe(0);
    expect(readFileSync(demo.program, 'utf8')).toMatch(/^state: REPLANNING$/m);
  }, 240_000);
});

describe('P15-22: program-replan tells the approving human what it undid of a process\'s change of the PROGRAM', () => {
  it('the Planner\'s bash (the repository\'s code) sets the tier gate to `true`, then the Planner edits a description: the change is undone and named — the lines and the kept copy — on stderr and in the JSON', async () => {
    const demo = await tier1Frozen({}, {}, 'BLOCKED');
    const rewrite = `node -e "const f='${programRelative}';const fs=require('fs');fs.writeFileSync(f,fs.readFileSync(f,'utf8').replace('command: node --test','command: \\"true\\"'))"`;
    withPlanner(demo, [`- bash: ${JSON.stringify(rewrite)}`, `- edit: { path: ${programRelative}, old: "the checkout, on top of tier 1", new: "the checkout, REVISED" }`, '  expect: ok', '- text: "revised"']);
    const replan = await cli(demo, replanArgs(demo));
    expect(replan.code, `${replan.stdout}\n${replan.stderr}`).toBe(0);
    const text = readFileSync(demo.program, 'utf8');
    expect(text).toContain('the checkout, REVISED');
    expect(text).toContain('command: node --test');
    const line = /^program-replan: warning\[PLANNER_DOC_CHANGED_BY_PROCESS\]: attempt 1: (.*)$/m.exec(replan.stderr)?.[1];
    expect(line, replan.stderr).toMatch(/^docs\/PROGRAM\/PROGRAM-shop\.yaml was changed before the agent's edit_file of it, by a process it ran \(code of the repository\), not by its own write_file\/edit_file: its own text is put back \(undone: -" {6}command: node --test", \+" {6}command: \\"true\\""\); the changed copy is in (\S+)$/);
    const kept = /the changed copy is in (\S+)$/.exec(line!)![1]!;
    expect(existsSync(kept)).toBe(true);
    expect(readFileSync(kept, 'utf8')).toContain('command: "true"');
    const result = JSON.parse(replan.stdout) as { validation_passed: boolean; warnings?: string[] };
    expect(result.validation_passed).toBe(true);
    expect(result.warnings).toEqual([`PLANNER_DOC_CHANGED_BY_PROCESS: attempt 1: ${line}`]);
  }, 180_000);
});

describe('P15-09: two plans of one PROGRAM after a killed plan', () => {
  it('the PROGRAM\'s run lock decides before the killed plan\'s record is read: a plan while another holds it is RUN_IN_PROGRESS (the partial untouched); two at once: one plans, the other RUN_IN_PROGRESS — never INTERNAL', async () => {
    const repo = await createTestRepo({ files: { 'README.md': '# big\n' } });
    const env = repo.env as Record<string, string>;
    const script = path.join(makeTempDir('polywave-plan-p15-09-'), 'agents.yaml');
    const planned = programDemoManifest('PLANNING').replace('program_slug: shop', 'program_slug: big');
    writeFileSync(script, ['version: 1', 'agents:', '  planner:', '    steps:', `      - write: { path: docs/PROGRAM/PROGRAM-big.yaml, content: ${JSON.stringify(planned)} }`, '      - text: "planned"', ''].join('\n'));
    const program = repo.path('docs/PROGRAM/PROGRAM-big.yaml');
    const backups = repo.path('.git/polywave/program-replan');
    // What a plan SIGKILLed while its Planner wrote leaves: its record (a pid that is gone) and part of the PROGRAM.
    const killed = () => {
      const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;
      mkdirSync(path.dirname(program), { recursive: true });
      writeFileSync(program, 'title: Big\nprogram_slug: big\nstate: PLA');
      mkdirSync(backups, { recursive: true });
      writeFileSync(path.join(backups, 'PROGRAM-big.planning.json'), `${JSON.stringify({ program: realpathSync(program), pid: Number(gone) })}\n`);
    };
    const plan = () => runCli(['plan', 'a big thing', '--slug', 'big', '--model', `script:${script}`], { cwd: repo.dir, env, timeoutMs: 120_000 });

    // Another command holds the PROGRAM's run lock (as the first of two plans does while it reads the record and moves
    // the partial aside): refused before the record is read, nothing changed.
    killed();
    const release = acquireRunLock(repo.dir, program);
    let refused;
    try {
      refused = await plan();
    } finally {
      release();
    }
    expect(refused.code, `${refused.stdout}\n${refused.stderr}`).toBe(2);
    expect(refused.stderr).toMatch(/error\[RUN_IN_PROGRESS\]/);
    expect(readFileSync(program, 'utf8')).toBe('title: Big\nprogram_slug: big\nstate: PLA');
    expect(readdirSync(backups).filter((name) => name.includes('interrupted-plan'))).toEqual([]);

    // Two plans started at the same instant after the kill: one moves the partial aside and plans, the other is refused.
    {
      spawnSync('rm', ['-rf', program, backups]);
      killed();
      const both = await Promise.all([plan(), plan()]);
      const outcomes = both.map((run) => `${run.code} ${/error\[([A-Z0-9_]+)\]/.exec(run.stderr)?.[1] ?? ''}`).sort();
      expect(outcomes, both.map((run) => run.stderr).join('\n----\n')).toEqual(['0 ', '2 RUN_IN_PROGRESS']);
      expect(readFileSync(program, 'utf8')).toMatch(/^state: VALIDATING$/m);
      const moved = readdirSync(backups).filter((name) => name.includes('interrupted-plan'));
      expect(moved).toHaveLength(1);
      expect(readFileSync(path.join(backups, moved[0]!), 'utf8')).toBe('title: Big\nprogram_slug: big\nstate: PLA');
    }
  }, 240_000);
});

describe('P15-20: a committed docs/PROGRAM or docs/IMPL symlink is named, with commands that work', () => {
  it('docs/PROGRAM → ../programs: program-execute and program-replan name the link and advise `git rm docs/PROGRAM && mkdir -p docs && git mv programs docs/PROGRAM`, which works; docs/IMPL → ../plans: refused before any Scout, named', async () => {
    const demo = await setupDemo();
    renameSync(`${demo.repo}/docs/PROGRAM`, `${demo.repo}/programs`);
    symlinkSync('../programs', `${demo.repo}/docs/PROGRAM`);
    commitAll(demo.repo, 'test: docs/PROGRAM as a link');
    const named = /docs\/PROGRAM is a symbolic link \(to \.\.\/programs, \S+\): polywave writes the PROGRAM manifests only as real files under docs\/PROGRAM\/ of the repository, never through a link — replace the link by a directory \(git rm docs\/PROGRAM && mkdir -p docs && git mv programs docs\/PROGRAM\), then commit; nothing changed/;
    const refused = await expectUnchanged(demo, executeArgs(demo), 2, named);
    expect(refused.stderr).toMatch(/error\[X001_INVALID_INPUT\]: the tier loop cannot run docs\/PROGRAM\/PROGRAM-shop\.yaml: docs\/PROGRAM is a symbolic link/);
    expect(refused.stderr).not.toMatch(/git mv programs\/PROGRAM-shop\.yaml docs\/PROGRAM/);
    const replan = await cli(demo, replanArgs(demo));
    expect(replan.code, replan.stderr).toBe(2);
    expect(replan.stderr).toMatch(named);
    // The advice as printed: the link replaced by the directory, the PROGRAM a real file there; the link check passes.
    git(demo.repo, ['rm', '-q', 'docs/PROGRAM']);
    mkdirSync(`${demo.repo}/docs`, { recursive: true });
    git(demo.repo, ['mv', 'programs', 'docs/PROGRAM']);
    commitAll(demo.repo, 'test: the advice');
    expect(lstatSync(`${demo.repo}/docs/PROGRAM`).isDirectory()).toBe(true);
    expect(lstatSync(demo.program).isFile()).toBe(true);
    const after = await cli(demo, replanArgs(demo));
    expect(after.stderr).not.toMatch(/symbolic link/);
    expect(after.stderr).toMatch(/N008_STATE_TRANSITION/);

    const impl = await setupDemo();
    mkdirSync(`${impl.repo}/plans`, { recursive: true });
    writeFileSync(`${impl.repo}/plans/.keep`, '');
    symlinkSync('../plans', `${impl.repo}/docs/IMPL`);
    commitAll(impl.repo, 'test: docs/IMPL as a link');
    await expectUnchanged(impl, executeArgs(impl), 2, /the tier loop cannot run docs\/PROGRAM\/PROGRAM-shop\.yaml: docs\/IMPL is a symbolic link \(to \.\.\/plans, \S+\): polywave writes the IMPL docs \(each Scout its own\) only as real files under docs\/IMPL\/ .*\(git rm docs\/IMPL && mkdir -p docs && git mv plans docs\/IMPL\)/);
    expect(git(impl.repo, ['log', '--format=%s']).split('\n').filter((subject) => /scout/i.test(subject))).toEqual([]);
  }, 240_000);
});

describe('P15-05: amend-impl and update-agent-prompt during a live loop', () => {
  it('while the tier loop runs catalog\'s wave 1 (agent C working): redirecting wave-2 agent D, re-prompting the running C and adding a wave are RUN_IN_PROGRESS, nothing written; the loop completes with its plan', async () => {
    const demo = await setupDemo();
    const script = readFileSync(demo.script, 'utf8');
    const slow = script.replace(/(\n {2}C:\n {4}steps:\n)/, '$1      - sleep_ms: 6000\n');
    expect(slow).not.toBe(script);
    writeFileSync(demo.script, slow);
    const doc = `${demo.repo}/docs/IMPL/IMPL-catalog.yaml`;
    const running = cli(demo, executeArgs(demo));
    let seen = false;
    for (let tries = 0; tries < 1200 && !seen; tries += 1) {
      seen = existsSync(doc) && /^state: WAVE_EXECUTING$/m.test(readFileSync(doc, 'utf8'));
      if (!seen) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(seen).toBe(true);
    for (const args of [
      ['amend-impl', 'docs/IMPL/IMPL-catalog.yaml', '--redirect-agent', 'D', '--wave', '2', '--new-task', 'HUMAN TASK FOR D'],
      ['update-agent-prompt', 'docs/IMPL/IMPL-catalog.yaml', '--agent', 'C', '--prompt', 'HUMAN PROMPT FOR C'],
      ['amend-impl', 'docs/IMPL/IMPL-catalog.yaml', '--add-wave', '--agent', 'Z', '--new-task', 'HUMAN WAVE'],
    ]) {
      const refused = await cli(demo, args);
      expect([refused.code, refused.stderr], args.join(' ')).toEqual([2, expect.stringMatching(/^polywave: error\[RUN_IN_PROGRESS\]: a run of IMPL-catalog\.yaml is already in progress/)]);
      expect(readFileSync(doc, 'utf8')).not.toMatch(/HUMAN/);
    }
    const result = await running;
    expect(result.code, result.stderr.slice(-3000)).toBe(0);
    const archived = readFileSync(`${demo.repo}/docs/IMPL/complete/IMPL-catalog.yaml`, 'utf8');
    expect(archived).not.toMatch(/HUMAN/);
    expect(archived).toMatch(/^state: COMPLETE$/m);
  }, 300_000);
});

describe('P16-01: set-impl-state on an IMPL doc of the tier the loop is scouting', () => {
  it('pricing scouted and `reviewed`, catalog\'s Scout still running: a human\'s BLOCKED on IMPL-pricing is RUN_IN_PROGRESS (the PROGRAM\'s run lock), nothing written — not accepted and then undone as "another Scout\'s" change', async () => {
    const demo = await setupDemo();
    const script = readFileSync(demo.script, 'utf8');
    const slow = script.replace(/( {2}scout@catalog:\n {4}steps:\n)/, '$1      - sleep_ms: 6000\n');
    expect(slow).not.toBe(script);
    writeFileSync(demo.script, slow);
    const doc = `${demo.repo}/docs/IMPL/IMPL-pricing.yaml`;
    const running = cli(demo, executeArgs(demo));
    let seen = false;
    for (let tries = 0; tries < 1200 && !seen; tries += 1) {
      seen = /- slug: pricing\n(?: {6}.*\n)*? {6}status: reviewed/.test(readFileSync(demo.program, 'utf8'));
      if (!seen) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(seen).toBe(true);
    const before = readFileSync(doc, 'utf8');
    const refused = await cli(demo, ['set-impl-state', 'docs/IMPL/IMPL-pricing.yaml', '--state', 'BLOCKED']);
    expect([refused.code, refused.stderr]).toEqual([2, expect.stringMatching(/^polywave: error\[RUN_IN_PROGRESS\]: a run of PROGRAM-shop\.yaml is already in progress/)]);
    expect(readFileSync(doc, 'utf8')).toBe(before);
    const result = await running;
    expect(result.code, result.stderr.slice(-3000)).toBe(0);
    expect(result.stderr).not.toMatch(/was changed after its Scout committed it/);
  }, 300_000);
});
