/**
 * The crafted-PROGRAM rig of the PROGRAM layer's refusal tests (test/program-x7-refusals.test.ts,
 * test/program-p14-open.test.ts): the demo PROGRAM "shop" set up without running it, states crafted on top and
 * committed, the real CLI as child processes.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { programDemoImpl, programDemoManifest, programDemoScript } from '../../src/demo/program-project.js';
import { runProgramDemo } from '../../src/demo/run-program-demo.js';
import { runCli, type CliResult } from './cli.js';
import { makeTempDir } from './temp.js';

const tempRoot = makeTempDir('polywave-program-crafted-');
let demos = 0;

export const programRelative = 'docs/PROGRAM/PROGRAM-shop.yaml';
export const gitEnv = { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: os.devNull };

export interface Demo {
  repo: string;
  script: string;
  program: string;
}

export async function setupDemo(): Promise<Demo> {
  demos += 1;
  const demo = await runProgramDemo({ env: { ...process.env, ...gitEnv }, dir: path.join(tempRoot, `demo-${demos}`), setupOnly: true });
  return { repo: demo.repo, script: demo.script, program: demo.program_path };
}

export function git(repo: string, args: string[]): string {
  return execFileSync('git', args, { cwd: repo, encoding: 'utf8', env: { ...process.env, ...gitEnv, POLYWAVE_ALLOW_MAIN_COMMIT: '1' } });
}

export function writeFiles(repo: string, files: Record<string, string>): void {
  for (const [file, text] of Object.entries(files)) {
    const target = path.join(repo, file);
    execFileSync('mkdir', ['-p', path.dirname(target)]);
    writeFileSync(target, text);
  }
}

export function commitAll(repo: string, message: string): void {
  git(repo, ['add', '-A']);
  git(repo, ['commit', '-q', '--no-verify', '-m', message]);
}

export async function craft(files: Record<string, string>): Promise<Demo> {
  const demo = await setupDemo();
  writeFiles(demo.repo, files);
  commitAll(demo.repo, 'test: crafted PROGRAM state');
  return demo;
}

export function cli(demo: Demo, args: string[]): Promise<CliResult> {
  return runCli(args, { cwd: demo.repo, env: gitEnv, timeoutMs: 120_000 });
}

export const withStatuses = (statuses: Record<string, string>, state = 'REVIEWED') => {
  let text = programDemoManifest(state);
  for (const [slug, status] of Object.entries(statuses)) text = text.replace(new RegExp(`(- slug: ${slug}\\n(?:      .*\\n)*?      status: )pending`), `$1${status}`);
  return text;
};
export const implDoc = (slug: string, state: string, edit: (text: string) => string = (text) => text) => edit(programDemoImpl(slug).replace('state: SCOUT_PENDING', `state: ${state}`));

/** Tier 1 built and merged as a finished run leaves it: its agents' files and both IMPL docs archived COMPLETE. */
export function tier1Built(): Record<string, string> {
  const script = parseYaml(programDemoScript()) as { agents: Record<string, { steps: Array<{ write?: { path: string; content: string } }> }> };
  const files: Record<string, string> = {};
  for (const agent of ['P', 'C', 'D']) for (const step of script.agents[agent]!.steps) if (step.write) files[step.write.path] = step.write.content;
  return { ...files, 'docs/IMPL/complete/IMPL-pricing.yaml': implDoc('pricing', 'COMPLETE'), 'docs/IMPL/complete/IMPL-catalog.yaml': implDoc('catalog', 'COMPLETE') };
}

/** Tier 1 done and its contract priceWithTax frozen with the real command (the record committed). */
export async function tier1Frozen(extra: Record<string, string> = {}, statuses: Record<string, string> = {}, state = 'REVIEWED'): Promise<Demo> {
  const demo = await craft({ ...tier1Built(), [programRelative]: withStatuses({ pricing: 'complete', catalog: 'complete', ...statuses }, state), ...extra });
  const freeze = await cli(demo, ['freeze-contracts', programRelative, '--tier', '1']);
  expect(freeze.code, `${freeze.stdout}\n${freeze.stderr}`).toBe(0);
  commitAll(demo.repo, 'test: tier 1 contracts frozen');
  expect(readFileSync(demo.program, 'utf8')).toMatch(/frozen_blob: [0-9a-f]{40}/);
  return demo;
}

/** Checks a refusal with nothing changed: exit code, message, HEAD, branches, worktrees, status and the manifest's bytes. */
export async function expectUnchanged(demo: Demo, args: string[], code: number, message: RegExp): Promise<CliResult> {
  const before = { head: git(demo.repo, ['rev-parse', 'HEAD']), branches: git(demo.repo, ['branch', '--list']), worktrees: git(demo.repo, ['worktree', 'list', '--porcelain']), program: readFileSync(demo.program, 'utf8') };
  const result = await cli(demo, args);
  expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(code);
  expect(`${result.stdout}\n${result.stderr}`).toMatch(message);
  expect(result.stderr).not.toMatch(/\n\s+at .*\(.*:\d+:\d+\)/);
  expect({ head: git(demo.repo, ['rev-parse', 'HEAD']), branches: git(demo.repo, ['branch', '--list']), worktrees: git(demo.repo, ['worktree', 'list', '--porcelain']), program: readFileSync(demo.program, 'utf8') }).toEqual(before);
  expect(git(demo.repo, ['status', '--porcelain']).trim()).toBe('');
  return result;
}

export const executeArgs = (demo: Demo, extra: string[] = []) => ['program-execute', programRelative, '--auto', '--model', `script:${demo.script}`, '--no-critic', ...extra];
