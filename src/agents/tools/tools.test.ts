import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createTestRepo, type TestRepo } from '../../../test/support/git-repo.js';
import type { AgentEvent, ToolDenial } from '../contract.js';
import { createGit } from '../../git/git-cli.js';
import { createJail } from '../jail/jail.js';
import type { JailPolicy } from '../jail/types.js';
import { createAgentTools, runToolCall, truncateOutput } from './index.js';
import { readHeadAndBranch, statusWithBranch } from './report-tools.js';
import { caseFolded } from './search-tools.js';
import { globToRegExp } from './shared.js';
import { sandboxStatus, type SandboxPlan } from '../../sandbox/index.js';
import { vanishingShim } from '../../../test/support/bwrap-shim.js';
import type { AgentTool, AgentToolName, ToolCallObserver, ToolContext } from './types.js';

const branch = 'polywave/demo/wave1-agent-A';

interface Fixture {
  repo: TestRepo;
  wt: string;
  context: ToolContext;
  observer: ToolCallObserver & { events: AgentEvent[]; denials: ToolDenial[]; journal: unknown[] };
  call: (tool: AgentToolName, input: unknown) => ReturnType<typeof runToolCall>;
}

async function fixture(options: { policy?: Partial<JailPolicy>; context?: Partial<ToolContext> } = {}): Promise<Fixture> {
  const repo = await createTestRepo({
    files: {
      'src/a.ts': 'export const a = 1;\nexport const a2 = 1;\n',
      'src/b.ts': 'export const b = 2;\n',
      'src/deep/c.ts': 'export const c = 3; // TODO\n',
      'docs/IMPL/IMPL-demo.yaml': 'title: demo\n',
      'node_modules/pkg/index.ts': 'export const hidden = 1; // TODO\n',
      'bin.dat': 'a\0b\0c',
    },
  });
  symlinkSync(repo.dir, repo.path('link-main'));
  await repo.commitAll('symlink');
  const wt = repo.sibling('wt');
  await repo.git.worktreeAdd({ path: wt, branch, base: 'HEAD', createBranch: true });
  const jail = await createJail({ root: wt, ownedFiles: ['src/a.ts', 'src/new/c.ts', 'src/owned.ts'], branch, ...options.policy }, { env: repo.env });
  const context: ToolContext = {
    jail,
    env: repo.env,
    signal: new AbortController().signal,
    toolTimeoutMs: 20_000,
    maxToolOutputBytes: 30_000,
    branch,
    ...options.context,
  };
  const events: AgentEvent[] = [];
  const denials: ToolDenial[] = [];
  const journal: unknown[] = [];
  const observer = {
    events,
    denials,
    journal,
    onEvent: (event: AgentEvent) => events.push(event),
    recorder: { recordToolUse: (entry: unknown) => journal.push({ use: entry }), recordToolResult: (entry: unknown) => journal.push({ result: entry }) },
  };
  const tools = new Map(createAgentTools().map((tool) => [tool.name, tool]));
  let counter = 0;
  const call = (tool: AgentToolName, input: unknown) => runToolCall(tools.get(tool)!, input, context, observer, `call-${(counter += 1)}`);
  return { repo, wt, context, observer, call };
}

describe('createAgentTools', () => {
  it('returns every tool by default, or only the included ones, in a fixed order', () => {
    expect(createAgentTools().map((tool) => tool.name)).toEqual(['read_file', 'write_file', 'edit_file', 'list_dir', 'glob', 'grep', 'bash', 'git_commit', 'set_completion']);
    expect(createAgentTools({ include: ['bash', 'read_file'] }).map((tool) => tool.name)).toEqual(['read_file', 'bash']);
    for (const tool of createAgentTools()) {
      expect(tool.description.length).toBeGreaterThan(20);
      expect(() => z.toJSONSchema(tool.inputSchema)).not.toThrow();
    }
  });
});

describe('runToolCall', () => {
  const echoTool = (output: string | (() => never)): AgentTool => ({
    name: 'bash',
    description: 'test tool',
    inputSchema: z.object({ text: z.string() }),
    execute: async () => (typeof output === 'string' ? { output, isError: false } : output()),
  });

  it('validates input with the zod schema and never throws', async () => {
    const f = await fixture();
    const result = await f.call('read_file', { path: 42 });
    expect(result.isError).toBe(true);
    expect(result.output).toMatch(/^invalid input for read_file: .*path/s);
    const notAnObject = await f.call('bash', 'ls');
    expect(notAnObject.isError).toBe(true);
    expect(f.observer.events.map((event) => event.type)).toEqual(['tool-call-start', 'tool-call-end', 'tool-call-start', 'tool-call-end']);
    expect(f.observer.events[2]).toMatchObject({ type: 'tool-call-start', tool: 'bash', input: { input: 'ls' } });
  });

  it('turns executor exceptions into error results and survives throwing observers', async () => {
    const f = await fixture();
    const throwing = echoTool(() => {
      throw new Error('boom');
    });
    const observer: ToolCallObserver = {
      onEvent: () => {
        throw new Error('observer');
      },
      recorder: {
        recordToolUse: () => {
          throw new Error('recorder');
        },
        recordToolResult: () => {},
      },
    };
    expect(await runToolCall(throwing, { text: 'x' }, f.context, observer, 't1')).toEqual({ output: 'bash failed: boom', isError: true });
  });

  it('journals the full output, gives the model the cut output, and says how much was cut', async () => {
    const f = await fixture({ context: { maxToolOutputBytes: 1000 } });
    const long = `${'a'.repeat(5000)}MIDDLE${'z'.repeat(5000)}`;
    const result = await runToolCall(echoTool(long), { text: 'x' }, f.context, f.observer, 't2');
    expect(Buffer.byteLength(result.output)).toBeLessThanOrEqual(1000);
    expect(result.output).toMatch(/^a+\n\[… output truncated: \d+ of 10006 bytes cut \(limit 1000\) …\]\nz+$/);
    expect(f.observer.journal).toEqual([
      { use: { toolCallId: 't2', tool: 'bash', input: { text: 'x' } } },
      { result: { toolCallId: 't2', tool: 'bash', output: long, isError: false } },
    ]);
    const end = f.observer.events.find((event) => event.type === 'tool-call-end');
    expect(end).toMatchObject({ type: 'tool-call-end', toolCallId: 't2', isError: false, output: result.output });
    expect(typeof (end as { durationMs: number }).durationMs).toBe('number');
    expect(truncateOutput('short', 1000)).toBe('short');
    expect(truncateOutput('é'.repeat(2000), 500)).not.toContain('\uFFFD');
  });

  it('records denials and emits tool-call-deny', async () => {
    const f = await fixture();
    const result = await f.call('write_file', { path: '../escape.txt', content: 'x' });
    expect(result).toMatchObject({ isError: true, denial: { tool: 'write_file', code: 'JAIL_OUTSIDE_ROOT', target: '../escape.txt' } });
    expect(result.output).toMatch(/^Denied \(JAIL_OUTSIDE_ROOT\): cannot write "..\/escape.txt"/);
    expect(f.observer.denials).toEqual([result.denial]);
    expect(f.observer.events.map((event) => event.type)).toEqual(['tool-call-start', 'tool-call-deny', 'tool-call-end']);
    expect(existsSync(path.join(f.repo.root, 'escape.txt'))).toBe(false);
  });

  it('does not run a tool once the run is aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    const f = await fixture({ context: { signal: controller.signal } });
    const result = await f.call('write_file', { path: 'src/a.ts', content: 'x' });
    expect(result.isError).toBe(true);
    expect(readFileSync(path.join(f.wt, 'src/a.ts'), 'utf8')).toBe('export const a = 1;\nexport const a2 = 1;\n');
  });
});

describe('read_file', () => {
  it('reads text with offset, limit and optional line numbers', async () => {
    const f = await fixture();
    writeFileSync(path.join(f.wt, 'src/a.ts'), 'one\ntwo\nthree\nfour\n');
    expect(await f.call('read_file', { path: 'src/a.ts' })).toEqual({ output: 'one\ntwo\nthree\nfour', isError: false });
    expect((await f.call('read_file', { path: 'src/a.ts', offset: 2, limit: 2 })).output).toBe('two\nthree');
    expect((await f.call('read_file', { path: 'src/a.ts', offset: 3, line_numbers: true })).output).toBe('3\tthree\n4\tfour');
    expect((await f.call('read_file', { path: 'src/a.ts', offset: 9 })).output).toBe('(src/a.ts has 4 lines; offset 9 is past the end)');
    expect((await f.call('read_file', { path: path.join(f.wt, 'src/b.ts') })).output).toBe('export const b = 2;');
  });

  it('caps the output and says how to continue', async () => {
    const f = await fixture({ context: { maxToolOutputBytes: 600 } });
    writeFileSync(path.join(f.wt, 'src/a.ts'), Array.from({ length: 200 }, (_, index) => `line ${index + 1}`).join('\n'));
    const result = await f.call('read_file', { path: 'src/a.ts' });
    expect(result.isError).toBe(false);
    expect(result.output).toMatch(/\[read_file: showing lines 1-\d+ of 200; continue with offset=\d+\]$/);
    expect(Buffer.byteLength(result.output)).toBeLessThanOrEqual(600);
  });

  it('refuses binaries, directories and paths outside the jail', async () => {
    const f = await fixture();
    expect(await f.call('read_file', { path: 'bin.dat' })).toMatchObject({ isError: true, output: expect.stringContaining('binary') });
    expect(await f.call('read_file', { path: 'src' })).toMatchObject({ isError: true, output: expect.stringContaining('directory') });
    expect(await f.call('read_file', { path: 'missing.ts' })).toMatchObject({ isError: true, output: expect.stringContaining('ENOENT') });
    expect(await f.call('read_file', { path: 'link-main/README.md' })).toMatchObject({ isError: true, denial: { code: 'JAIL_OUTSIDE_ROOT' } });
    expect(await f.call('read_file', { path: '.git' })).toMatchObject({ isError: true, denial: { code: 'JAIL_GIT_INTERNALS' } });
  });
});

describe('write_file and edit_file', () => {
  it('writes owned files, creating parent directories', async () => {
    const f = await fixture();
    expect(await f.call('write_file', { path: 'src/new/c.ts', content: 'export const c = 1;\n' })).toEqual({ output: 'Wrote 20 bytes to src/new/c.ts (created).', isError: false });
    expect(readFileSync(path.join(f.wt, 'src/new/c.ts'), 'utf8')).toBe('export const c = 1;\n');
    expect((await f.call('write_file', { path: 'src/a.ts', content: '' })).output).toBe('Wrote 0 bytes to src/a.ts (overwritten).');
  });

  it('refuses unowned and frozen files without touching them', async () => {
    const f = await fixture({ policy: { frozenPaths: ['src/owned.ts'] } });
    expect(await f.call('write_file', { path: 'src/b.ts', content: 'x' })).toMatchObject({ isError: true, denial: { code: 'JAIL_NOT_OWNED' } });
    expect(await f.call('write_file', { path: 'src/owned.ts', content: 'x' })).toMatchObject({ isError: true, denial: { code: 'JAIL_FROZEN' } });
    expect(readFileSync(path.join(f.wt, 'src/b.ts'), 'utf8')).toBe('export const b = 2;\n');
    expect(existsSync(path.join(f.wt, 'src/owned.ts'))).toBe(false);
  });

  it('edits exact text once, or everywhere with replace_all', async () => {
    const f = await fixture();
    const file = path.join(f.wt, 'src/a.ts');
    expect(await f.call('edit_file', { path: 'src/a.ts', old_string: 'a2 = 1', new_string: 'a2 = $& 2' })).toEqual({ output: 'Edited src/a.ts: replaced 1 occurrence.', isError: false });
    expect(readFileSync(file, 'utf8')).toBe('export const a = 1;\nexport const a2 = $& 2;\n');
    const ambiguous = await f.call('edit_file', { path: 'src/a.ts', old_string: 'export', new_string: 'declare' });
    expect(ambiguous).toMatchObject({ isError: true, output: expect.stringContaining('occurs 2 times') });
    expect((await f.call('edit_file', { path: 'src/a.ts', old_string: 'export', new_string: 'declare', replace_all: true })).output).toBe('Edited src/a.ts: replaced 2 occurrences.');
    expect(readFileSync(file, 'utf8')).toBe('declare const a = 1;\ndeclare const a2 = $& 2;\n');
    expect(await f.call('edit_file', { path: 'src/a.ts', old_string: 'nope', new_string: 'x' })).toMatchObject({ isError: true, output: expect.stringContaining('not found') });
    expect(await f.call('edit_file', { path: 'src/owned.ts', old_string: 'a', new_string: 'b' })).toMatchObject({ isError: true, output: expect.stringContaining('does not exist') });
    expect(await f.call('edit_file', { path: 'src/a.ts', old_string: 'a', new_string: 'a' })).toMatchObject({ isError: true });
    expect(await f.call('edit_file', { path: 'src/b.ts', old_string: 'b', new_string: 'c' })).toMatchObject({ isError: true, denial: { code: 'JAIL_NOT_OWNED' } });
  });
});

describe('list_dir, glob, grep', () => {
  it('lists a directory without .git', async () => {
    const f = await fixture();
    const root = await f.call('list_dir', {});
    expect(root.output.split('\n')).toEqual(['README.md', 'bin.dat', 'docs/', `link-main -> ${f.repo.dir}`, 'node_modules/', 'src/']);
    expect((await f.call('list_dir', { path: 'src' })).output).toBe('a.ts\nb.ts\ndeep/');
    expect(await f.call('list_dir', { path: '..' })).toMatchObject({ isError: true, denial: { code: 'JAIL_OUTSIDE_ROOT' } });
    expect(await f.call('list_dir', { path: 'src/a.ts' })).toMatchObject({ isError: true });
  });

  it('globs with ** and braces, skipping node_modules and not following links', async () => {
    const f = await fixture();
    expect((await f.call('glob', { pattern: 'src/**/*.ts' })).output).toBe('src/a.ts\nsrc/b.ts\nsrc/deep/c.ts');
    expect((await f.call('glob', { pattern: '**/*.ts' })).output).toBe('src/a.ts\nsrc/b.ts\nsrc/deep/c.ts');
    expect((await f.call('glob', { pattern: '*.md' })).output).toBe('README.md');
    expect((await f.call('glob', { pattern: '{docs,src}/**/*.{yaml,ts}' })).output).toBe('docs/IMPL/IMPL-demo.yaml\nsrc/a.ts\nsrc/b.ts\nsrc/deep/c.ts');
    expect((await f.call('glob', { pattern: '*.ts', path: 'src/deep' })).output).toBe('src/deep/c.ts');
    expect((await f.call('glob', { pattern: `${f.wt}/src/*.ts` })).output).toBe('src/a.ts\nsrc/b.ts');
    expect((await f.call('glob', { pattern: '*.nothing' })).output).toBe('No files match "*.nothing".');
    expect(await f.call('glob', { pattern: '/etc/*' })).toMatchObject({ isError: true, denial: { code: 'JAIL_OUTSIDE_ROOT' } });
    expect(await f.call('glob', { pattern: '../**/*' })).toMatchObject({ isError: true, denial: { code: 'JAIL_OUTSIDE_ROOT' } });
    expect(await f.call('glob', { pattern: '*', path: '/' })).toMatchObject({ isError: true, denial: { code: 'JAIL_OUTSIDE_ROOT' } });
    expect(globToRegExp('a/**').test('a/b/c')).toBe(true);
    expect(globToRegExp('a/*.ts').test('a/b/c.ts')).toBe(false);
    expect(globToRegExp('[!x]?.ts').test('ab.ts')).toBe(true);
  });

  it('greps with a JavaScript regex, optional glob and path', async () => {
    const f = await fixture();
    expect((await f.call('grep', { pattern: 'TODO' })).output).toBe('src/deep/c.ts:1: export const c = 3; // TODO');
    expect((await f.call('grep', { pattern: '^export const [ab]\\b' })).output).toBe('src/a.ts:1: export const a = 1;\nsrc/b.ts:1: export const b = 2;');
    expect((await f.call('grep', { pattern: 'TITLE', ignore_case: true, glob: '*.yaml' })).output).toBe('docs/IMPL/IMPL-demo.yaml:1: title: demo');
    expect((await f.call('grep', { pattern: 'export', glob: 'src/deep/**' })).output).toBe('src/deep/c.ts:1: export const c = 3; // TODO');
    expect((await f.call('grep', { pattern: 'const', path: 'src/b.ts' })).output).toBe('src/b.ts:1: export const b = 2;');
    expect((await f.call('grep', { pattern: 'nothing-here' })).output).toBe('No matches.');
    expect(await f.call('grep', { pattern: '(' })).toMatchObject({ isError: true, output: expect.stringContaining('invalid regular expression') });
    expect(await f.call('grep', { pattern: 'x', path: '/' })).toMatchObject({ isError: true, denial: { code: 'JAIL_OUTSIDE_ROOT' } });
    expect(await f.call('grep', { pattern: 'x', path: 'link-main' })).toMatchObject({ isError: true, denial: { code: 'JAIL_OUTSIDE_ROOT' } });
  });
});

describe('bash', () => {
  it('runs in the root with its exit status appended', async () => {
    const f = await fixture();
    expect(await f.call('bash', { command: 'pwd && echo hi >&2' })).toEqual({ output: `${f.wt}\nhi\n[exit status 0]`, isError: false });
    expect(await f.call('bash', { command: 'echo failing; exit 3' })).toEqual({ output: 'failing\n[exit status 3]', isError: true });
    expect(await f.call('bash', { command: 'echo changed > src/a.ts && cat src/a.ts' })).toEqual({ output: 'changed\n[exit status 0]', isError: false });
  });

  it('a command that commits nothing costs two git processes: one status --branch before (HEAD and the dirty files), one after (the audit)', async () => {
    const f = await fixture();
    const shim = path.join(f.repo.root, 'git-shim');
    mkdirSync(shim);
    const log = path.join(f.repo.root, 'git-calls');
    const realGit = (await f.repo.run(['--exec-path'])).trim() + '/git';
    writeFileSync(path.join(shim, 'git'), `#!/bin/sh\necho "$*" >> ${JSON.stringify(log)}\nexec ${JSON.stringify(realGit)} "$@"\n`, { mode: 0o755 });
    const env = { ...f.repo.env, PATH: `${shim}:${f.repo.env.PATH ?? process.env.PATH ?? ''}` };
    const jail = await createJail({ root: f.wt, ownedFiles: ['src/a.ts'], branch }, { env });
    const bash = createAgentTools({ include: ['bash'] })[0]!;
    const result = await runToolCall(bash, { command: 'echo changed > src/a.ts' }, { ...f.context, jail, env }, f.observer, 'count-1');
    expect(result).toEqual({ output: '[exit status 0]', isError: false });
    const calls = readFileSync(log, 'utf8').split('\n').filter(Boolean);
    expect(calls, calls.join('\n')).toHaveLength(2);
    for (const call of calls) expect(call).toMatch(/ status --ignore-submodules=all --porcelain=v2 -z --branch /);
    // One that commits: the audit asks what the commit changed and whether the base is still below HEAD.
    writeFileSync(log, '');
    const committing = await runToolCall(bash, { command: 'git add src/a.ts && git commit -qm change' }, { ...f.context, jail, env }, f.observer, 'count-2');
    expect(committing.isError, committing.output).toBe(false);
    const after = readFileSync(log, 'utf8').split('\n').filter(Boolean).filter((call) => !/^(add|commit) /.test(call.replace(/^(-c \S+ )*/, '')));
    expect(after.some((call) => / diff /.test(call)), after.join('\n')).toBe(true);
    expect(after.some((call) => / merge-base --is-ancestor /.test(call)), after.join('\n')).toBe(true);
  });

  it('refuses commands the jail denies, before running them', async () => {
    const f = await fixture();
    const result = await f.call('bash', { command: 'cd .. && touch escaped' });
    expect(result).toMatchObject({ isError: true, denial: { tool: 'bash', code: 'JAIL_BASH_ESCAPE', target: 'cd .. && touch escaped' } });
    expect(existsSync(path.join(f.repo.root, 'escaped'))).toBe(false);
  });

  it('kills the whole process group on timeout and does not wait for background children', async () => {
    const f = await fixture({ context: { toolTimeoutMs: 800 } });
    const started = Date.now();
    const result = await f.call('bash', { command: 'sleep 30; echo never' });
    expect(result.isError).toBe(true);
    expect(result.output).toBe('[timed out after 800 ms; the process group was killed]');
    const background = await f.call('bash', { command: '(sleep 30 && echo late > src/a.ts) & echo started' });
    expect(background.output).toBe('started\n[exit status 0]');
    expect(Date.now() - started).toBeLessThan(10_000);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(readFileSync(path.join(f.wt, 'src/a.ts'), 'utf8')).not.toContain('late');
  });

  it('honours the abort signal', async () => {
    const controller = new AbortController();
    const f = await fixture({ context: { signal: controller.signal } });
    setTimeout(() => controller.abort(), 300);
    const result = await f.call('bash', { command: 'sleep 30' });
    expect(result).toMatchObject({ isError: true, output: '[aborted; the process group was killed]' });
  });

  it('does not let BASH_ENV, CDPATH or GIT_DIR from the environment steer the command', async () => {
    const f = await fixture();
    const hook = path.join(f.repo.root, 'bash-env.sh');
    writeFileSync(hook, 'echo BASH_ENV-RAN\n');
    f.context.env = { ...f.repo.env, BASH_ENV: hook, CDPATH: f.repo.root, GIT_DIR: path.join(f.repo.dir, '.git') };
    const result = await f.call('bash', { command: 'git rev-parse --abbrev-ref HEAD' });
    expect(result).toEqual({ output: `${branch}\n[exit status 0]`, isError: false });
  });

  it('audits after the command: an unowned change is reported with a denial (not reverted)', async () => {
    const f = await fixture();
    const result = await f.call('bash', { command: `node -e "require('fs').writeFileSync('src/b.ts', 'pwned')"` });
    expect(result.isError).toBe(true);
    expect(result.output).toContain('WARNING (JAIL_UNOWNED_CHANGE): "src/b.ts" changed in the worktree, but the agent does not own it (I1 ownership).');
    expect(result.denial).toMatchObject({ tool: 'bash', code: 'JAIL_UNOWNED_CHANGE' });
    expect(f.observer.denials).toHaveLength(1);
    expect(readFileSync(path.join(f.wt, 'src/b.ts'), 'utf8')).toBe('pwned');
  });

  it('audits commits made by the command against HEAD before it ran', async () => {
    const f = await fixture();
    const result = await f.call('bash', { command: 'git add src/a.ts && node -e "require(\'fs\').appendFileSync(\'src/b.ts\', \'x\')" && git commit -qam sneak' });
    expect(result.denial).toMatchObject({ code: 'JAIL_UNOWNED_CHANGE', reason: expect.stringContaining('src/b.ts') });
  });
});

describe('git_commit', () => {
  it('commits only owned changes on the agent branch and returns the short sha', async () => {
    const f = await fixture();
    writeFileSync(path.join(f.wt, 'src/a.ts'), 'export const a = 42;\n');
    writeFileSync(path.join(f.wt, 'src/b.ts'), 'unowned change\n');
    mkdirSync(path.join(f.wt, 'src/new'));
    writeFileSync(path.join(f.wt, 'src/new/c.ts'), 'export const c = 1;\n');
    const result = await f.call('git_commit', { message: 'feat: a and c' });
    expect(result.isError).toBe(false);
    const git = createGit(f.wt, { env: f.repo.env });
    const short = (await git.run(['rev-parse', 'HEAD'])).stdout.trim().slice(0, 12);
    expect(result.output).toBe(`Committed ${short} on ${branch}: 2 files (src/a.ts, src/new/c.ts).\nLeft uncommitted (not yours to commit): src/b.ts.`);
    expect((await git.run(['show', '--name-only', '--format=%s', 'HEAD'])).stdout.trim().split('\n')).toEqual(['feat: a and c', '', 'src/a.ts', 'src/new/c.ts']);
    expect((await git.status()).map((entry) => entry.path)).toEqual(['src/b.ts']);
    expect(await f.call('git_commit', { message: 'again' })).toMatchObject({ isError: true, output: expect.stringMatching(/^Nothing to commit/) });
  });

  it('commits the deletion of an owned file', async () => {
    const f = await fixture();
    await f.call('bash', { command: 'rm src/a.ts' });
    const result = await f.call('git_commit', { message: 'remove a' });
    expect(result).toMatchObject({ isError: false, output: expect.stringContaining('1 file (src/a.ts)') });
    const git = createGit(f.wt, { env: f.repo.env });
    expect((await git.run(['show', '--name-status', '--format=', 'HEAD'])).stdout.trim()).toBe('D\tsrc/a.ts');
  });

  it('checks explicit paths against ownership', async () => {
    const f = await fixture();
    writeFileSync(path.join(f.wt, 'src/b.ts'), 'unowned change\n');
    expect(await f.call('git_commit', { message: 'x', paths: ['src/b.ts'] })).toMatchObject({ isError: true, denial: { code: 'JAIL_NOT_OWNED' } });
    writeFileSync(path.join(f.wt, 'src/a.ts'), 'owned change\n');
    expect(await f.call('git_commit', { message: 'x', paths: ['src/a.ts'] })).toMatchObject({ isError: false, output: expect.stringContaining('1 file (src/a.ts)') });
  });

  it('refuses to commit when HEAD is not on the agent branch', async () => {
    const f = await fixture();
    const git = createGit(f.wt, { env: f.repo.env });
    await git.run(['checkout', '--quiet', '--ignore-other-worktrees', 'main']);
    writeFileSync(path.join(f.wt, 'src/a.ts'), 'owned change\n');
    const mainBefore = await git.revParse('main');
    const result = await f.call('git_commit', { message: 'x' });
    expect(result).toMatchObject({ isError: true, denial: { code: 'JAIL_BRANCH_MOVED', reason: `HEAD is on "main", not on the agent branch "${branch}", so nothing was committed (worktree isolation E4/E43).` } });
    expect(await git.revParse('main')).toBe(mainBefore);
  });

  it('reads the branch and HEAD with the status, and HEAD with the branch, in one git process each — the same answers as status(), currentBranch(), tryRevParse()', async () => {
    const repo = await createTestRepo({ files: { 'a b.txt': 'a\n', 'old.txt': 'o\no\no\n', 'd/c.txt': 'c\n' } });
    const git = repo.git;
    const separate = async () => ({ branch: await git.currentBranch(), head: await git.tryRevParse('HEAD'), entries: await git.status() });
    await repo.run(['mv', 'old.txt', 'new name.txt']);
    repo.write('a b.txt', 'changed\n');
    repo.write('d/u n.txt', 'untracked\n');
    repo.write('d/c.txt', 'staged\n');
    await repo.run(['add', 'd/c.txt']);
    repo.write('d/c.txt', 'and changed again\n');
    const both = await statusWithBranch(git);
    expect(both.entries.map((entry) => entry.code).sort()).toEqual(['??', 'MM', 'R ', ' M'].sort());
    expect(both).toEqual(await separate());
    expect(await readHeadAndBranch(git)).toEqual({ head: await git.tryRevParse('HEAD'), branch: 'main' });
    await repo.run(['checkout', '--quiet', '--detach']);
    expect(await statusWithBranch(git)).toEqual({ ...(await separate()), branch: undefined });
    expect(await readHeadAndBranch(git)).toEqual({ head: await git.tryRevParse('HEAD'), branch: undefined });
    await repo.run(['checkout', '--quiet', '--orphan', 'unborn']);
    expect(await readHeadAndBranch(git)).toEqual({ head: undefined, branch: 'unborn' });
    expect(await statusWithBranch(git)).toMatchObject({ branch: 'unborn', head: undefined });
  });
});

describe('set_completion', () => {
  it('needs a completion writer', async () => {
    const f = await fixture();
    expect(await f.call('set_completion', { status: 'complete' })).toMatchObject({ isError: true, output: 'this role does not file completion reports.' });
  });

  it('passes the report on and relays refusals so the model can correct them', async () => {
    const reports: Array<Record<string, unknown>> = [];
    const f = await fixture({
      context: {
        reportCompletion: async (report) => {
          reports.push(report);
          return report.status === 'partial' && report.failure_type === undefined ? { ok: false, code: 'V005_REQUIRED_FIELDS_MISSING', message: 'failure_type is required when status is "partial"' } : { ok: true, status: String(report.status) };
        },
      },
    });
    expect(await f.call('set_completion', { status: 'complete', files_changed: ['src/a.ts'], verification: 'PASS (npm test)' })).toEqual({ output: 'Completion report saved (status: complete).', isError: false });
    // commit, branch and worktree come from git when the model leaves them out (issue 13).
    const head = (await f.repo.run(['-C', f.wt, 'rev-parse', 'HEAD'])).trim();
    expect(reports[0]).toEqual({ status: 'complete', files_changed: ['src/a.ts'], verification: 'PASS (npm test)', commit: head, branch, worktree: f.context.jail.root });
    expect(await f.call('set_completion', { status: 'partial' })).toEqual({ output: 'Completion report refused (V005_REQUIRED_FIELDS_MISSING): failure_type is required when status is "partial"', isError: true });
    expect(await f.call('set_completion', { status: 'done' })).toMatchObject({ isError: true, output: expect.stringContaining('invalid input for set_completion') });
    expect(reports).toHaveLength(2);
  });

  it('fills commit, branch and worktree from git for a complete report; what the model gives wins (issue 13)', async () => {
    const reports: Array<Record<string, unknown>> = [];
    const f = await fixture({ context: { reportCompletion: async (report) => (reports.push(report), report.commit ? { ok: true, status: String(report.status) } : { ok: false, code: 'G003_COMMIT_MISSING', message: 'commit is required' }) } });
    writeFileSync(path.join(f.wt, 'src/a.ts'), 'export const a = 2;\n');
    expect((await f.call('git_commit', { message: 'feat: a' })).isError).toBe(false);
    const head = (await f.repo.run(['-C', f.wt, 'rev-parse', 'HEAD'])).trim();
    expect(await f.call('set_completion', { status: 'complete', files_changed: ['src/a.ts'], verification: 'PASS' })).toEqual({ output: 'Completion report saved (status: complete).', isError: false });
    expect(reports[0]).toMatchObject({ commit: head, branch, worktree: f.context.jail.root });
    await f.call('set_completion', { status: 'complete', commit: head.slice(0, 7), branch: 'mine', worktree: '/elsewhere' });
    expect(reports[1]).toMatchObject({ commit: head.slice(0, 7), branch: 'mine', worktree: '/elsewhere' });
    // Outside attack N5: a commit git does not have (or not on this HEAD) is refused, to the model, and not saved.
    const bogus = await f.call('set_completion', { status: 'complete', commit: 'abc1234' });
    expect(bogus.isError).toBe(true);
    expect(bogus.output).toMatch(/E42_REPORT_CONTRADICTS_GIT.*commit "abc1234" is not a commit in this repository/);
    expect(reports).toHaveLength(2);
  });
});

describe('grep and glob keep what the sandbox hides inside the root hidden (outside attack X19-17)', () => {
  it('files the plan makes unreadable inside the root (a credential variable\'s file) are neither searched nor listed', async () => {
    const sandbox = { writable: [] as string[], readOnlyWithin: [], unreadable: [] as string[], allowedHosts: [] };
    const f = await fixture({ context: { sandbox: sandbox as SandboxPlan } });
    const wt = f.context.jail.root;
    mkdirSync(path.join(wt, 'keys'), { recursive: true });
    mkdirSync(path.join(wt, 'kube'), { recursive: true });
    writeFileSync(path.join(wt, 'keys', 'gcp.json'), '{"private_key":"SECRET-GCP-1"}\n');
    writeFileSync(path.join(wt, 'kube', 'config'), 'token: SECRET-KUBE-2\n');
    writeFileSync(path.join(wt, 'kube', 'notes.txt'), 'SECRET-free notes\n');
    sandbox.writable.push(wt);
    sandbox.unreadable.push(path.join(wt, 'keys'), path.join(wt, 'kube', 'config'));
    const outputs = [
      (await f.call('grep', { pattern: 'SECRET' })).output,
      (await f.call('grep', { pattern: 'SECRET', path: 'keys' })).output,
      (await f.call('grep', { pattern: 'SECRET', path: 'kube/config' })).output,
      (await f.call('glob', { pattern: '**/*' })).output,
    ].join('\n');
    for (const secret of ['SECRET-GCP-1', 'SECRET-KUBE-2', 'gcp.json', 'kube/config']) expect(outputs, secret).not.toContain(secret);
    expect(outputs).toContain('kube/notes.txt:1: SECRET-free notes');
    // control: without the plan, the same grep finds them (the test is not vacuous)
    delete (f.context as { sandbox?: unknown }).sandbox;
    expect((await f.call('grep', { pattern: 'SECRET', path: 'keys' })).output).toContain('SECRET-GCP-1');
  });
});

describe('grep runs the agent\'s pattern in linear time (outside attack X20-06)', () => {
  it('a catastrophically backtracking pattern returns at once; backreferences and lookaround are refused with a message', async () => {
    const f = await fixture();
    writeFileSync(path.join(f.context.jail.root, 'src', 'a.ts'), `${'a'.repeat(50)}!\n${'a'.repeat(20)}\n`);
    const started = Date.now();
    const result = await f.call('grep', { pattern: '^(a+)+$', path: 'src/a.ts' });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(result.output).toBe(`src/a.ts:2: ${'a'.repeat(20)}`);
    expect((await f.call('grep', { pattern: '(a)\\1' })).output).toMatch(/linear time only: rewrite/);
    expect((await f.call('grep', { pattern: '(?<=export )const' })).output).toMatch(/linear time only/);
    // X20-14: glob's compiled pattern too (a name of 60 `a`s against `*a*a*…*b` backtracked for good)
    writeFileSync(path.join(f.context.jail.root, 'src', `${'a'.repeat(60)}.ts`), '');
    const globStarted = Date.now();
    expect((await f.call('glob', { pattern: `src/${'*a'.repeat(14)}*b` })).output).toMatch(/^No files match/);
    expect((await f.call('grep', { pattern: 'zzz', glob: `${'*a'.repeat(14)}*b` })).output).toBe('No matches.');
    expect(Date.now() - globStarted).toBeLessThan(5_000);
    // case folding without the `i` flag (the linear engine has none): escapes and group names untouched
    expect(caseFolded('a\\wB[a-cX_]\\cJ(?<nm>z)')).toBe('[aA]\\w[Bb][a-cA-CXx_]\\cJ(?<nm>[zZ])');
    // ordinary patterns, case-insensitive too, as before
    expect((await f.call('grep', { pattern: 'EXPORT CONST B', ignore_case: true })).output).toBe('src/b.ts:1: export const b = 2;');
  });
});

describe.skipIf(!(await sandboxStatus()).available)('bash in a sandbox of its own (no tool executor)', () => {
  it('runs the command when a hidden directory vanished between the wrap and bubblewrap\'s start (it tries again)', async () => {
    const f = await fixture();
    const wt = f.context.jail.root;
    const vanishing = f.repo.sibling('other-run/polywave-scratch-x');
    mkdirSync(vanishing, { recursive: true });
    const shim = vanishingShim(vanishing);
    f.context.sandbox = { writable: [wt], readOnlyWithin: [], unreadable: [vanishing], allowedHosts: [] };
    f.context.env = { ...f.context.env, PATH: shim.path(f.context.env.PATH) };
    const result = await f.call('bash', { command: 'echo BASH-$((40 + 2))' });
    expect(result.output, result.output).toContain('BASH-42');
    expect(result.isError).toBe(false);
    expect(shim.starts()).toBe(2);
  }, 60_000);
});
