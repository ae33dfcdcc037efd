/**
 * Outside attack X29-08 (issue 11): the Planner works in the main checkout; what it leaves there is moved to the
 * quarantine when it stops. A leftover that could not be moved out (here: the quarantine cannot be made) must fail
 * `polywave plan` closed — exit 1 with SANDBOX_LEFTOVER_STAYED — not pass as a valid plan. Real git, the real CLI, a
 * scripted Planner (its bash in the OS sandbox where it runs).
 */
import { spawn } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { programDemoManifest } from '../src/demo/program-project.js';
import { binPath, runCli } from './support/cli.js';
import { createTestRepo } from './support/git-repo.js';
import { makeTempDir } from './support/temp.js';

describe('polywave plan and what the Planner leaves behind (X29-08)', () => {
  // A sandboxed Planner cannot write the checkout but its PROGRAM doc (X30, next test); the after-run checks guard a run
  // without the sandbox (POLYWAVE_SANDBOX=off: a script agent then runs unsandboxed).
  it('a leftover that cannot be moved out fails the plan: exit 1, SANDBOX_LEFTOVER_STAYED named (unsandboxed: the after-run checks)', async () => {
    const repo = await createTestRepo({ files: { 'README.md': '# shop\n' } });
    mkdirSync(repo.path('.git/polywave'), { recursive: true });
    writeFileSync(repo.path('.git/polywave/quarantine'), 'not a directory\n');
    const script = path.join(makeTempDir('polywave-plan-leftover-'), 'agents.yaml');
    const plant = "require('fs').mkdirSync('tools',{recursive:true});require('fs').writeFileSync('tools/helpers.test.js','x')";
    writeFileSync(
      script,
      ['version: 1', 'agents:', '  planner:', '    steps:', `      - bash: ${JSON.stringify(`node -e ${JSON.stringify(plant)}`)}`, `      - write: { path: docs/PROGRAM/PROGRAM-shop.yaml, content: ${JSON.stringify(programDemoManifest('PLANNING'))} }`, '      - text: "planned"', ''].join('\n'),
    );
    const run = await runCli(['plan', 'A shop with a catalog and checkout', '--slug', 'shop', '--model', `script:${script}`], { cwd: repo.dir, env: { ...(repo.env as Record<string, string>), POLYWAVE_SANDBOX: 'off' }, timeoutMs: 120_000 });
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(1);
    expect(`${run.stdout}\n${run.stderr}`).toContain('SANDBOX_LEFTOVER_STAYED');
    expect(`${run.stdout}\n${run.stderr}`).toContain('tools/helpers.test.js');
  }, 150_000);

  it.runIf(process.platform === 'linux')('X30: a sandboxed Planner writes its PROGRAM doc and nothing else: a planted file is refused by the file system, the plan succeeds with nothing to undo', async () => {
    const { sandboxStatus } = await import('../src/sandbox/index.js');
    if (!(await sandboxStatus({ env: process.env })).available) return;
    const repo = await createTestRepo({ files: { 'README.md': '# shop\n' } });
    const script = path.join(makeTempDir('polywave-plan-readonly-'), 'agents.yaml');
    const plant = "try{require('fs').writeFileSync('helpers.test.js','x');process.exit(3)}catch(e){process.exit(e.code==='EROFS'?0:4)}";
    writeFileSync(
      script,
      ['version: 1', 'agents:', '  planner:', '    steps:', `      - bash: ${JSON.stringify(`node -e ${JSON.stringify(plant)}`)}`, '        expect: ok', `      - write: { path: docs/PROGRAM/PROGRAM-shop.yaml, content: ${JSON.stringify(programDemoManifest('PLANNING'))} }`, '        expect: ok', '      - text: "planned"', ''].join('\n'),
    );
    const run = await runCli(['plan', 'A shop with a catalog and checkout', '--slug', 'shop', '--model', `script:${script}`], { cwd: repo.dir, env: repo.env as Record<string, string>, timeoutMs: 120_000 });
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(existsSync(repo.path('helpers.test.js'))).toBe(false);
    expect(existsSync(repo.path('docs/PROGRAM/PROGRAM-shop.yaml'))).toBe(true);
    expect(`${run.stdout}\n${run.stderr}`).not.toContain('SANDBOX_SOLO_LEFTOVER_QUARANTINED');
  }, 150_000);
  // Outside attacks P12-19 / P12-27: a Planner that wrote `state: TIER_EXECUTING` skipped the approval (program-execute
  // ran it), and the README's approval step (`--state REVIEWED`) failed on the PLANNING a Planner should write. A valid
  // plan now waits in VALIDATING, whatever the Planner wrote, and the printed approval works as printed.
  it('a valid plan waits in VALIDATING whatever state the Planner wrote; the printed approval (REVIEWED) works; unapproved, program-execute refuses', async () => {
    const repo = await createTestRepo({ files: { 'README.md': '# shop\n' } });
    const script = path.join(makeTempDir('polywave-plan-state-'), 'agents.yaml');
    writeFileSync(script, ['version: 1', 'agents:', '  planner:', '    steps:', `      - write: { path: docs/PROGRAM/PROGRAM-shop.yaml, content: ${JSON.stringify(programDemoManifest('TIER_EXECUTING'))} }`, '      - text: "planned"', ''].join('\n'));
    const run = await runCli(['plan', 'A shop with a catalog and checkout', '--slug', 'shop', '--model', `script:${script}`], { cwd: repo.dir, env: repo.env as Record<string, string>, timeoutMs: 120_000 });
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(readFileSync(repo.path('docs/PROGRAM/PROGRAM-shop.yaml'), 'utf8')).toMatch(/^state: VALIDATING$/m);
    const approve = /approve: (polywave update-program-state docs\/PROGRAM\/PROGRAM-shop\.yaml --state REVIEWED)/.exec(run.stderr)?.[1];
    expect(approve, run.stderr).toBeDefined();
    const refused = await runCli(['program-execute', 'docs/PROGRAM/PROGRAM-shop.yaml', '--auto', '--model', `script:${script}`], { cwd: repo.dir, env: repo.env as Record<string, string>, timeoutMs: 60_000 });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/the plan is not approved \(state VALIDATING\)/);
    const approved = await runCli(approve!.split(' ').slice(1), { cwd: repo.dir, env: repo.env as Record<string, string>, timeoutMs: 60_000 });
    expect(approved.code, approved.stderr).toBe(0);
    expect(readFileSync(repo.path('docs/PROGRAM/PROGRAM-shop.yaml'), 'utf8')).toMatch(/^state: REVIEWED$/m);
  }, 150_000);
  // Outside attack P12-42: `plan` killed while its Planner ran left the empty placeholder of its output; the re-run was
  // refused ("exists already: use program-replan") and program-replan could not read it. An empty, untracked file is
  // no plan: the re-run plans. (P12-41: program-status on a file that is not a PROGRAM manifest printed an empty one.)
  it('a killed plan’s empty placeholder does not block the re-run; program-status refuses a file that is not a PROGRAM', async () => {
    const repo = await createTestRepo({ files: { 'README.md': '# shop\n', 'docs/IMPL/IMPL-x.yaml': 'title: X\nfeature_slug: x\nstate: COMPLETE\n' } });
    mkdirSync(repo.path('docs/PROGRAM'), { recursive: true });
    writeFileSync(repo.path('docs/PROGRAM/PROGRAM-shop.yaml'), '');
    const script = path.join(makeTempDir('polywave-plan-rerun-'), 'agents.yaml');
    writeFileSync(script, ['version: 1', 'agents:', '  planner:', '    steps:', `      - write: { path: docs/PROGRAM/PROGRAM-shop.yaml, content: ${JSON.stringify(programDemoManifest('PLANNING'))} }`, '      - text: "planned"', ''].join('\n'));
    const run = await runCli(['plan', 'A shop with a catalog and checkout', '--slug', 'shop', '--model', `script:${script}`], { cwd: repo.dir, env: repo.env as Record<string, string>, timeoutMs: 120_000 });
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(readFileSync(repo.path('docs/PROGRAM/PROGRAM-shop.yaml'), 'utf8')).toMatch(/^program_slug: shop$/m);
    const status = await runCli(['program-status', 'docs/IMPL/IMPL-x.yaml'], { cwd: repo.dir, env: repo.env as Record<string, string>, timeoutMs: 30_000 });
    expect([status.code, status.stderr]).toEqual([2, expect.stringMatching(/^polywave: error\[V005_REQUIRED_FIELDS_MISSING\]: docs\/IMPL\/IMPL-x\.yaml is not a PROGRAM manifest: program_slug, impls are required \(run: polywave validate-program docs\/IMPL\/IMPL-x\.yaml\)/)]);
    expect(status.stdout).toBe('');
    // P13-24: a program_slug alone is not a PROGRAM either (it printed "(no tiers) 0/0", exit 0); the advice names the
    // path as given from the cwd.
    mkdirSync(repo.path('odd'), { recursive: true });
    writeFileSync(repo.path('odd/d.yaml'), 'program_slug: x\n');
    const bare = await runCli(['program-status', '../odd/d.yaml'], { cwd: repo.path('docs'), env: repo.env as Record<string, string>, timeoutMs: 30_000 });
    expect([bare.code, bare.stdout, bare.stderr]).toEqual([2, '', 'polywave: error[V005_REQUIRED_FIELDS_MISSING]: ../odd/d.yaml is not a PROGRAM manifest: state, impls are required (run: polywave validate-program ../odd/d.yaml)\n']);
  }, 150_000);
});

// Outside attack P13-19: `plan` SIGKILLed after its Planner wrote part of the PROGRAM (non-empty, invalid) left it, and
// every re-run was refused ("exists already"). The re-run now finds the killed plan's record, moves the part aside (kept
// in git's directory) and plans; a second `plan` of the same PROGRAM while one runs is refused, nothing changed.
describe('a plan killed while its Planner wrote the PROGRAM (P13-19)', () => {
  it('the re-run moves the partial manifest aside and plans; a concurrent plan is refused', async () => {
    const repo = await createTestRepo({ files: { 'README.md': '# shop\n' } });
    const dir = makeTempDir('polywave-plan-killed-');
    const slow = path.join(dir, 'slow.yaml');
    const partial = 'title: Shop\nprogram_slug: shop\nstate: PLANNING\nimpls:\n  - slug: cat\n';
    writeFileSync(slow, ['version: 1', 'agents:', '  planner:', '    steps:', `      - write: { path: docs/PROGRAM/PROGRAM-shop.yaml, content: ${JSON.stringify(partial)} }`, '      - sleep_ms: 60000', ''].join('\n'));
    const good = path.join(dir, 'good.yaml');
    writeFileSync(good, ['version: 1', 'agents:', '  planner:', '    steps:', `      - write: { path: docs/PROGRAM/PROGRAM-shop.yaml, content: ${JSON.stringify(programDemoManifest('PLANNING'))} }`, '      - text: "planned"', ''].join('\n'));
    const target = repo.path('docs/PROGRAM/PROGRAM-shop.yaml');
    const child = spawn(process.execPath, [binPath, 'plan', 'A shop', '--slug', 'shop', '--model', `script:${slow}`], { cwd: repo.dir, env: repo.env as Record<string, string>, stdio: 'ignore' });
    try {
      const deadline = Date.now() + 60_000;
      while (!(existsSync(target) && readFileSync(target, 'utf8') === partial) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(readFileSync(target, 'utf8')).toBe(partial);
      // While it runs: a second plan of the same PROGRAM is refused, the partial untouched.
      const second = await runCli(['plan', 'A shop', '--slug', 'shop', '--model', `script:${good}`], { cwd: repo.dir, env: repo.env as Record<string, string>, timeoutMs: 60_000 });
      // (refused by the PROGRAM's run lock the plan holds, P15-09)
      expect([second.code, second.stderr]).toEqual([2, expect.stringMatching(/^polywave: error\[RUN_IN_PROGRESS\]: a run of PROGRAM-shop\.yaml is already in progress \(pid \d+/)]);
      expect(readFileSync(target, 'utf8')).toBe(partial);
    } finally {
      child.kill('SIGKILL');
    }
    await new Promise((resolve) => child.once('exit', resolve));
    const rerun = await runCli(['plan', 'A shop', '--slug', 'shop', '--model', `script:${good}`], { cwd: repo.dir, env: repo.env as Record<string, string>, timeoutMs: 120_000 });
    expect(rerun.code, `${rerun.stdout}\n${rerun.stderr}`).toBe(0);
    expect(rerun.stderr).toMatch(/plan: a plan killed while its Planner wrote PROGRAM-shop\.yaml .* moved aside to /);
    expect(readFileSync(target, 'utf8')).toMatch(/^state: VALIDATING$/m);
    const kept = readdirSync(repo.path('.git/polywave/program-replan')).filter((name) => name.includes('.interrupted-plan'));
    expect(kept).toHaveLength(1);
    expect(readFileSync(repo.path(`.git/polywave/program-replan/${kept[0]!}`), 'utf8')).toBe(partial);
    expect(readdirSync(repo.path('.git/polywave/program-replan')).filter((name) => name.endsWith('.planning.json'))).toEqual([]);
  }, 240_000);
});

// Outside attack P13-01: `plan x --model bogus:y` ran the Planner three times (exit 1, 60 lines of attempts) where
// program-execute refuses such a model up front; `program-replan missing.yaml` said AGENT_CREDENTIALS_MISSING on a
// machine without keys. Both are one coded line, exit 2, nothing written.
describe('plan and program-replan check their input first (P13-01)', () => {
  it('an unknown model backend: exit 2 before any Planner; a missing PROGRAM: N005 before the model', async () => {
    const repo = await createTestRepo({ files: { 'README.md': '# shop\n' } });
    const env = { ...(repo.env as Record<string, string>), ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '', CLAUDE_CODE_OAUTH_TOKEN: '' };
    const plan = await runCli(['plan', 'do x', '--model', 'bogus:y'], { cwd: repo.dir, env, timeoutMs: 60_000 });
    expect(plan.code, plan.stderr).toBe(2);
    expect(plan.stderr.trim().split('\n')).toHaveLength(1);
    expect(plan.stderr).toMatch(/^polywave: error\[[A-Z0-9_]+\]: .*bogus/);
    expect(plan.stdout).toBe('');
    expect(existsSync(repo.path('docs'))).toBe(false);
    const replan = await runCli(['program-replan', 'nonexist.yaml', '--reason', 'x'], { cwd: repo.dir, env, timeoutMs: 60_000 });
    expect([replan.code, replan.stderr]).toEqual([2, expect.stringMatching(/^polywave: error\[N005_IMPL_NOT_FOUND\]: PROGRAM manifest not found: nonexist\.yaml/)]);
    expect(await repo.run(['status', '--porcelain', '-uall'])).toBe('');
  }, 120_000);
});

// Outside attack P13-34: `plan` and `program-replan` from a subdirectory of the work tree worked in that subdirectory —
// plan wrote src/deep/docs/PROGRAM/PROGRAM-big.yaml and printed docs/PROGRAM/…, and a re-plan's Planner edited nothing
// (its paths missed) while the re-plan reported "validation_passed". Both work on the top of the work tree now.
describe('plan and program-replan from a subdirectory (P13-34)', () => {
  it('plan writes docs/PROGRAM/ at the top of the work tree; program-replan lands the Planner’s edit', async () => {
    const repo = await createTestRepo({ files: { 'README.md': '# shop\n', 'src/deep/keep.txt': 'x\n' } });
    const script = path.join(makeTempDir('polywave-plan-subdir-'), 'agents.yaml');
    const planned = programDemoManifest('PLANNING');
    writeFileSync(script, ['version: 1', 'agents:', '  planner:', '    steps:', `      - write: { path: docs/PROGRAM/PROGRAM-shop.yaml, content: ${JSON.stringify(planned)} }`, '        expect: ok', '      - text: "planned"', ''].join('\n'));
    const deep = repo.path('src/deep');
    const run = await runCli(['plan', 'A shop with a catalog and checkout', '--slug', 'shop', '--model', `script:${script}`], { cwd: deep, env: repo.env as Record<string, string>, timeoutMs: 120_000 });
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(existsSync(repo.path('docs/PROGRAM/PROGRAM-shop.yaml'))).toBe(true);
    expect(existsSync(path.join(deep, 'docs'))).toBe(false);

    // A BLOCKED PROGRAM re-planned from the subdirectory: the Planner's edit is in the file.
    const program = repo.path('docs/PROGRAM/PROGRAM-shop.yaml');
    writeFileSync(program, programDemoManifest('BLOCKED'));
    await repo.run(['add', '-A']);
    await repo.run(['commit', '-qm', 'plan', '--no-verify']);
    const described = /description: (.+)\n/.exec(readFileSync(program, 'utf8'))?.[1];
    expect(described).toBeDefined();
    writeFileSync(script, ['version: 1', 'agents:', '  planner:', '    steps:', `      - edit: { path: docs/PROGRAM/PROGRAM-shop.yaml, old: ${JSON.stringify(described)}, new: "REVISED FROM A SUBDIRECTORY" }`, '        expect: ok', '      - text: "revised"', ''].join('\n'));
    const replan = await runCli(['program-replan', path.relative(deep, program), '--reason', 'p13-34', '--model', `script:${script}`], { cwd: deep, env: repo.env as Record<string, string>, timeoutMs: 120_000 });
    expect(replan.code, `${replan.stdout}\n${replan.stderr}`).toBe(0);
    expect(readFileSync(program, 'utf8')).toContain('REVISED FROM A SUBDIRECTORY');
  }, 180_000);
});

// Outside attack P13-33: code of the repository a Planner ran (its bash) changed the PROGRAM doc beside the Planner's
// own edit — the tier gate's command set to `true` — and the summary said nothing of it. A change after the Planner's
// last write of its doc is a process's: undone, the changed copy quarantined, the attempt says so.
describe('a process the Planner ran rewrites its PROGRAM doc (P13-33)', () => {
  it('the Planner\'s own text stands; the change is undone and named in the attempt', async () => {
    const repo = await createTestRepo({ files: { 'README.md': '# shop\n' } });
    const script = path.join(makeTempDir('polywave-plan-own-writes-'), 'agents.yaml');
    const planned = programDemoManifest('PLANNING');
    expect(planned).toContain('command: node --test');
    const rewrite = `node -e "const f='docs/PROGRAM/PROGRAM-shop.yaml';const fs=require('fs');fs.writeFileSync(f,fs.readFileSync(f,'utf8').replace('command: node --test','command: \\"true\\"'))"`;
    writeFileSync(script, ['version: 1', 'agents:', '  planner:', '    steps:', `      - write: { path: docs/PROGRAM/PROGRAM-shop.yaml, content: ${JSON.stringify(planned)} }`, '        expect: ok', `      - bash: ${JSON.stringify(rewrite)}`, '      - text: "planned"', ''].join('\n'));
    const run = await runCli(['plan', 'A shop with a catalog and checkout', '--slug', 'shop', '--model', `script:${script}`], { cwd: repo.dir, env: repo.env as Record<string, string>, timeoutMs: 120_000 });
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    const text = readFileSync(repo.path('docs/PROGRAM/PROGRAM-shop.yaml'), 'utf8');
    expect(text).toContain('command: node --test');
    expect(text).not.toContain('command: "true"');
    const result = JSON.parse(run.stdout) as { attempts: Array<{ undone?: string }> };
    expect(result.attempts[0]!.undone).toMatch(/^docs\/PROGRAM\/PROGRAM-shop\.yaml was changed after the agent's last write_file\/edit_file of it, by a process it ran .* the changed copy is in \S+\.git\/polywave\/quarantine\//);
  }, 150_000);
});

// Outside round P14 (P14-18): the re-plan's Planner ran the tests (merged tier-1 code rewrote the PROGRAM's tier gate to
// `true`), THEN made its own edit: the edit applied to the changed doc and "adopted" the change — no undo, no warning.
// The doc is the Planner's own text (as the re-plan began, then its own writes/edits) before each of its edits applies.
describe('a process the re-plan Planner ran rewrites the PROGRAM doc before the Planner edits it (P14-18)', () => {
  it('the change is undone before the edit applies: only the Planner\'s edit is in the revised manifest', async () => {
    const repo = await createTestRepo({ files: { 'README.md': '# shop\n' } });
    const script = path.join(makeTempDir('polywave-replan-own-writes-'), 'agents.yaml');
    const program = repo.path('docs/PROGRAM/PROGRAM-shop.yaml');
    mkdirSync(path.dirname(program), { recursive: true });
    writeFileSync(program, programDemoManifest('BLOCKED'));
    expect(readFileSync(program, 'utf8')).toContain('command: node --test');
    await repo.run(['add', '-A']);
    await repo.run(['commit', '-qm', 'plan', '--no-verify']);
    const described = /description: (.+)\n/.exec(readFileSync(program, 'utf8'))?.[1];
    expect(described).toBeDefined();
    const rewrite = `node -e "const f='docs/PROGRAM/PROGRAM-shop.yaml';const fs=require('fs');fs.writeFileSync(f,fs.readFileSync(f,'utf8').replace('command: node --test','command: \\"true\\"')+'# tier-1 was here\\n')"`;
    writeFileSync(script, ['version: 1', 'agents:', '  planner:', '    steps:', `      - bash: ${JSON.stringify(rewrite)}`, `      - edit: { path: docs/PROGRAM/PROGRAM-shop.yaml, old: ${JSON.stringify(described)}, new: "REVISED AFTER THE TESTS" }`, '        expect: ok', '      - text: "revised"', ''].join('\n'));
    const replan = await runCli(['program-replan', 'docs/PROGRAM/PROGRAM-shop.yaml', '--reason', 'p14-18', '--model', `script:${script}`], { cwd: repo.dir, env: repo.env as Record<string, string>, timeoutMs: 120_000 });
    expect(replan.code, `${replan.stdout}\n${replan.stderr}`).toBe(0);
    const text = readFileSync(program, 'utf8');
    expect(text).toContain('REVISED AFTER THE TESTS');
    expect(text).toContain('command: node --test');
    expect(text).not.toContain('command: "true"');
    expect(text).not.toContain('tier-1 was here');
    const quarantine = repo.path('.git/polywave/quarantine');
    const kept = readdirSync(quarantine, { recursive: true }).map(String).filter((name) => name.endsWith('PROGRAM-shop.yaml.quarantined'));
    expect(kept).toHaveLength(1);
    expect(readFileSync(path.join(quarantine, kept[0]!), 'utf8')).toContain('tier-1 was here');
  }, 180_000);
});

// Outside round P14 (P14-06): program-replan through --repo-dir (a subdirectory), an in-repo link to docs/ or an outside
// link to the manifest: the Planner worked where its edit missed the file (or the link was replaced by a regular file)
// and the re-plan still said "contracts or descriptions revised". The manifest by its real path, its own work tree; a
// re-plan that revised nothing fails (E34_NOTHING_REVISED, the manifest as it was).
describe('program-replan through links and --repo-dir (P14-06)', () => {
  it('the edit lands in the real manifest through either link (the link stays a link); a wrong --repo-dir is refused; a Planner that changes nothing is no revision', async () => {
    const repo = await createTestRepo({ files: { 'README.md': '# shop\n', 'src/deep/keep.txt': 'x\n' } });
    const script = path.join(makeTempDir('polywave-replan-links-'), 'agents.yaml');
    const program = repo.path('docs/PROGRAM/PROGRAM-shop.yaml');
    mkdirSync(path.dirname(program), { recursive: true });
    writeFileSync(program, programDemoManifest('BLOCKED'));
    await repo.run(['add', '-A']);
    await repo.run(['commit', '-qm', 'plan', '--no-verify']);
    const original = readFileSync(program, 'utf8');
    const described = /description: (.+)\n/.exec(original)?.[1];
    expect(described).toBeDefined();
    const env = repo.env as Record<string, string>;
    const planner = (steps: string[]) => writeFileSync(script, ['version: 1', 'agents:', '  planner:', '    steps:', ...steps, '      - text: "revised"', ''].join('\n'));
    const edit = (to: string) => [`      - edit: { path: docs/PROGRAM/PROGRAM-shop.yaml, old: ${JSON.stringify(described)}, new: ${JSON.stringify(to)} }`, '        expect: ok'];

    // --repo-dir that is not the manifest's work-tree top: refused up front, nothing changed.
    planner(edit('REVISED VIA REPO-DIR'));
    const wrongDir = await runCli(['program-replan', 'docs/PROGRAM/PROGRAM-shop.yaml', '--repo-dir', 'src/deep', '--reason', 'p14-06', '--model', `script:${script}`], { cwd: repo.dir, env, timeoutMs: 120_000 });
    expect([wrongDir.code, wrongDir.stderr]).toEqual([2, expect.stringMatching(/X001_INVALID_INPUT.*--repo-dir src\/deep is not the top of the work tree/)]);
    expect(readFileSync(program, 'utf8')).toBe(original);

    // A Planner that changes nothing: no revision (exit 1), the manifest as it was.
    planner([]);
    const nothing = await runCli(['program-replan', 'docs/PROGRAM/PROGRAM-shop.yaml', '--reason', 'p14-06', '--model', `script:${script}`], { cwd: repo.dir, env, timeoutMs: 120_000 });
    expect(nothing.code, `${nothing.stdout}\n${nothing.stderr}`).toBe(1);
    expect(nothing.stdout).toContain('E34_NOTHING_REVISED');
    expect(nothing.stdout).not.toContain('contracts or descriptions revised');
    expect(readFileSync(program, 'utf8')).toBe(original);

    // From a subdirectory, through an in-repo link to docs/: the edit is in the real manifest.
    symlinkSync(repo.path('docs'), repo.path('src/deep/d'));
    planner(edit('REVISED THROUGH AN IN-REPO LINK'));
    const inRepo = await runCli(['program-replan', 'd/PROGRAM/PROGRAM-shop.yaml', '--reason', 'p14-06', '--model', `script:${script}`], { cwd: repo.path('src/deep'), env, timeoutMs: 120_000 });
    expect(inRepo.code, `${inRepo.stdout}\n${inRepo.stderr}`).toBe(0);
    expect(readFileSync(program, 'utf8')).toContain('REVISED THROUGH AN IN-REPO LINK');

    // From outside the repository, through a link to the manifest: the real manifest revised, the link still a link.
    writeFileSync(program, readFileSync(program, 'utf8').replace(/^state: REPLANNING$/m, 'state: BLOCKED'));
    const outside = makeTempDir('polywave-replan-outside-');
    symlinkSync(program, path.join(outside, 'ext.yaml'));
    planner([`      - edit: { path: docs/PROGRAM/PROGRAM-shop.yaml, old: "REVISED THROUGH AN IN-REPO LINK", new: "REVISED THROUGH AN OUTSIDE LINK" }`, '        expect: ok']);
    const viaLink = await runCli(['program-replan', 'ext.yaml', '--reason', 'p14-06', '--model', `script:${script}`], { cwd: outside, env, timeoutMs: 120_000 });
    expect(viaLink.code, `${viaLink.stdout}\n${viaLink.stderr}`).toBe(0);
    expect(lstatSync(path.join(outside, 'ext.yaml')).isSymbolicLink()).toBe(true);
    expect(readFileSync(program, 'utf8')).toContain('REVISED THROUGH AN OUTSIDE LINK');
  }, 300_000);
});
