/**
 * The worktree jail against an escaping agent: every case of test/support/jail-cases.ts runs
 * through the REAL tools (runToolCall) against a real worktree and must be denied with a reason,
 * with nothing escaping (files outside, refs, the main checkout, .git).
 */
import { rmSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentEvent, ToolDenial } from '../src/agents/contract.js';
import { createJail } from '../src/agents/jail/jail.js';
import type { Jail } from '../src/agents/jail/types.js';
import { createAgentTools, runToolCall } from '../src/agents/tools/index.js';
import type { ToolContext } from '../src/agents/tools/types.js';
import {
  adversarialBranch,
  adversarialCases,
  adversarialOwnedFiles,
  applyCaseSetup,
  createAdversarialWorktree,
  escapeEvidence,
  existingForbiddenPaths,
  fillPlaceholders,
  resetAdversarialWorktree,
  type AdversarialLayout,
} from './support/jail-cases.js';

let layout: AdversarialLayout;
let jail: Jail;
let denied = 0;
let escapes = 0;
const tools = new Map(createAgentTools().map((tool) => [tool.name, tool]));

beforeAll(async () => {
  layout = await createAdversarialWorktree();
  jail = await createJail({ root: layout.vars.WORKTREE, ownedFiles: [...adversarialOwnedFiles], branch: adversarialBranch }, { env: layout.env });
});

afterAll(() => {
  console.log(`jail adversarial suite: ${denied}/${adversarialCases.length} cases denied, ${escapes} escapes`);
});

describe('jail: adversarial tool calls through the real tools', () => {
  it('has at least 30 cases, each with a unique name', () => {
    expect(adversarialCases.length).toBeGreaterThanOrEqual(30);
    expect(new Set(adversarialCases.map((testCase) => testCase.name)).size).toBe(adversarialCases.length);
  });

  it.each(adversarialCases.map((testCase) => [testCase.name, testCase] as const))('%s', async (_name, testCase) => {
    await resetAdversarialWorktree(layout);
    const before = await escapeEvidence(layout);
    await applyCaseSetup(layout, testCase);

    const denials: ToolDenial[] = [];
    const events: AgentEvent[] = [];
    const context: ToolContext = {
      jail,
      env: layout.env,
      signal: new AbortController().signal,
      toolTimeoutMs: 30_000,
      maxToolOutputBytes: 30_000,
      branch: adversarialBranch,
    };
    const tool = tools.get(testCase.tool)!;
    const result = await runToolCall(tool, fillPlaceholders(testCase.input, layout.vars), context, { denials, onEvent: (event) => events.push(event) }, `adversarial-${testCase.name}`);

    // denied, with a reason
    expect(result.isError, result.output).toBe(true);
    expect(result.denial, result.output).toBeDefined();
    expect(denials).toEqual([result.denial]);
    expect(events.some((event) => event.type === 'tool-call-deny')).toBe(true);
    const denial = result.denial!;
    expect(denial.tool).toBe(testCase.tool);
    expect(denial.reason.length).toBeGreaterThan(20);
    expect(denial.reason).toMatch(/[.)]$/);
    if (testCase.expectCode !== undefined) expect(denial.code, denial.reason).toBe(testCase.expectCode);
    denied += 1;

    // nothing escaped
    await resetAdversarialWorktree(layout);
    const leftovers = existingForbiddenPaths(testCase, layout.vars);
    const after = await escapeEvidence(layout);
    if (leftovers.length > 0 || after !== before) escapes += 1;
    expect(leftovers).toEqual([]);
    expect(after).toBe(before);
  });

  it('control: the escape detector notices real escapes', async () => {
    await resetAdversarialWorktree(layout);
    const before = await escapeEvidence(layout);
    const escapeFile = `${layout.vars.OUTSIDE}/control.txt`;
    writeFileSync(escapeFile, 'x');
    expect(existingForbiddenPaths({ name: 'control', tool: 'bash', input: {}, mustNotExist: ['{{OUTSIDE}}/control.txt'] }, layout.vars)).toEqual([escapeFile]);
    expect(await escapeEvidence(layout)).not.toBe(before);
    rmSync(escapeFile);
    await layout.repo.run(['branch', 'control-branch']);
    expect(await escapeEvidence(layout)).not.toBe(before);
    await layout.repo.run(['branch', '-D', 'control-branch']);
    writeFileSync(`${layout.vars.MAIN}/README.md`, 'changed\n');
    expect(await escapeEvidence(layout)).not.toBe(before);
    await layout.repo.run(['checkout', '--', 'README.md']);
    expect(await escapeEvidence(layout)).toBe(before);
  });

  it('denied every case and nothing escaped', () => {
    expect(escapes).toBe(0);
    expect(denied).toBe(adversarialCases.length);
  });
});
