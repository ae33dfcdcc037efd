import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../src/cli/main.js';
import type { CommandIo } from '../src/cli/io.js';
import { createGit } from '../src/git/git-cli.js';
import { runProgramDemo } from '../src/demo/run-program-demo.js';
import { parseProgram } from '../src/protocol/parse-program.js';
import { readFileSync } from 'node:fs';
import { makeTempDir } from './support/temp.js';

// P12-29 (E28A): at the tier's unified review the reviewer "can reject any IMPL (new or imported) before wave execution
// begins". Answering `r` at the terminal and naming an IMPL holds it for a human (`blocked` in the PROGRAM) and runs
// nothing of the tier; the next run says what is held; an unknown name rejects nothing.

const gitEnv = { GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com' };

async function programExecute(repo: string, args: string[], answers: string[]): Promise<{ code: number; stdout: string; stderr: string; asked: string[] }> {
  let stdout = '';
  let stderr = '';
  const asked: string[] = [];
  const io: CommandIo = {
    cwd: repo,
    env: { ...process.env, ...gitEnv },
    now: () => new Date(),
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    readStdin: async () => '',
    ask: async (question) => {
      asked.push(question);
      return answers.shift() ?? '';
    },
  };
  const code = await main(['program-execute', ...args], io);
  return { code, stdout, stderr, asked };
}

describe('the tier review rejects an IMPL (P12-29)', () => {
  it('r + a slug: that IMPL is blocked in the PROGRAM, nothing of the tier runs; the re-run names it held; an unknown slug rejects nothing', async () => {
    const demo = await runProgramDemo({ env: { ...process.env, ...gitEnv }, dir: path.join(makeTempDir('polywave-review-reject-'), 'demo'), setupOnly: true });
    const programRelative = path.relative(demo.repo, demo.program_path);
    const args = [programRelative, '--model', `script:${demo.script}`, '--no-critic'];
    const git = createGit(demo.repo, { env: { ...process.env, ...gitEnv } });
    const branches = async () => (await git.run(['for-each-ref', '--format=%(refname)', 'refs/heads/'])).stdout.trim().split('\n').sort();
    const before = await branches();

    // An unknown slug: nothing rejected, the tier waits.
    const wrong = await programExecute(demo.repo, args, ['r', 'nosuch']);
    expect(wrong.code).toBe(1);
    expect(wrong.asked[0]).toMatch(/^Run these IMPLs\? \[y\/N, r = reject some\] $/);
    expect(wrong.stderr).toContain('Not an IMPL of tier 1: nosuch — nothing rejected');
    const tierOne = parseProgram(readFileSync(demo.program_path, 'utf8')).manifest!.tiers[0]!.impls;
    const rejected = tierOne[0]!;
    expect(wrong.asked[1]).toBe(`Reject which IMPLs (${tierOne.join(', ')}; comma-separated)? `);
    expect(parseProgram(readFileSync(demo.program_path, 'utf8')).manifest!.impls.find((impl) => impl.slug === rejected)!.status).toBe('reviewed');

    const result = await programExecute(demo.repo, args, ['r', rejected]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`the review rejected ${rejected} (now \`blocked\` in the PROGRAM; nothing ran)`);
    expect(result.stderr).toContain(`--impl <slug> --status reviewed`);
    const statuses = Object.fromEntries(parseProgram(readFileSync(demo.program_path, 'utf8')).manifest!.impls.map((impl) => [impl.slug, impl.status]));
    expect(statuses[rejected]).toBe('blocked');
    for (const other of tierOne.slice(1)) expect(statuses[other]).toBe('reviewed');
    // No IMPL branch, no agent branch: nothing of the tier ran.
    expect(await branches()).toEqual(before);

    // The next run names the held IMPL and runs nothing either.
    const again = await programExecute(demo.repo, args, ['y']);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`IMPL(s) held for a human: ${rejected} (blocked)`);
    expect(again.asked).toEqual([]);
    expect(await branches()).toEqual(before);
  }, 180_000);
});
