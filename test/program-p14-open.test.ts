/**
 * Outside round P14's open findings on the PROGRAM layer (issue 12), as regression tests: the real CLI as child
 * processes on real temporary git repositories (the demo PROGRAM "shop" set up without running it, script agents).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { programDemoImpl, programDemoManifest } from '../src/demo/program-project.js';
import { runProgramDemo } from '../src/demo/run-program-demo.js';
import { runCli, type CliResult } from './support/cli.js';
import { makeTempDir } from './support/temp.js';

const programRelative = 'docs/PROGRAM/PROGRAM-shop.yaml';
const gitEnv = { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: os.devNull };
const tempRoot = makeTempDir('polywave-program-p14-open-');
let demos = 0;

interface Demo {
  repo: string;
  script: string;
  program: string;
}

async function setupDemo(): Promise<Demo> {
  demos += 1;
  const demo = await runProgramDemo({ env: { ...process.env, ...gitEnv }, dir: path.join(tempRoot, `demo-${demos}`), setupOnly: true });
  return { repo: demo.repo, script: demo.script, program: demo.program_path };
}

function git(repo: string, args: string[]): string {
  return execFileSync('git', args, { cwd: repo, encoding: 'utf8', env: { ...process.env, ...gitEnv, POLYWAVE_ALLOW_MAIN_COMMIT: '1' } });
}

function writeFiles(repo: string, files: Record<string, string>): void {
  for (const [file, text] of Object.entries(files)) {
    const target = path.join(repo, file);
    execFileSync('mkdir', ['-p', path.dirname(target)]);
    writeFileSync(target, text);
  }
}

function commitAll(repo: string, message: string): void {
  git(repo, ['add', '-A']);
  git(repo, ['commit', '-q', '--no-verify', '-m', message]);
}

async function craft(files: Record<string, string>): Promise<Demo> {
  const demo = await setupDemo();
  writeFiles(demo.repo, files);
  commitAll(demo.repo, 'test: crafted PROGRAM state');
  return demo;
}

function cli(demo: Demo, args: string[]): Promise<CliResult> {
  return runCli(args, { cwd: demo.repo, env: gitEnv, timeoutMs: 120_000 });
}

const withStatuses = (statuses: Record<string, string>, state = 'REVIEWED') => {
  let text = programDemoManifest(state);
  for (const [slug, status] of Object.entries(statuses)) text = text.replace(new RegExp(`(- slug: ${slug}\\n(?:      .*\\n)*?      status: )pending`), `$1${status}`);
  return text;
};
const implDoc = (slug: string, state: string, edit: (text: string) => string = (text) => text) => edit(programDemoImpl(slug).replace('state: SCOUT_PENDING', `state: ${state}`));

/** Checks a refusal with nothing changed: exit code, message, HEAD, branches, worktrees, status and the manifest's bytes. */
async function expectUnchanged(demo: Demo, args: string[], code: number, message: RegExp): Promise<CliResult> {
  const before = { head: git(demo.repo, ['rev-parse', 'HEAD']), branches: git(demo.repo, ['branch', '--list']), worktrees: git(demo.repo, ['worktree', 'list', '--porcelain']), program: readFileSync(demo.program, 'utf8') };
  const result = await cli(demo, args);
  expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(code);
  expect(`${result.stdout}\n${result.stderr}`).toMatch(message);
  expect(result.stderr).not.toMatch(/\n\s+at .*\(.*:\d+:\d+\)/);
  expect({ head: git(demo.repo, ['rev-parse', 'HEAD']), branches: git(demo.repo, ['branch', '--list']), worktrees: git(demo.repo, ['worktree', 'list', '--porcelain']), program: readFileSync(demo.program, 'utf8') }).toEqual(before);
  expect(git(demo.repo, ['status', '--porcelain']).trim()).toBe('');
  return result;
}

const executeArgs = (demo: Demo, extra: string[] = []) => ['program-execute', programRelative, '--auto', '--model', `script:${demo.script}`, '--no-critic', ...extra];

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
});
