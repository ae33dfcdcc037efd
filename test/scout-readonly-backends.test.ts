import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runScout } from '../src/orchestrator/run-scout.js';
import { resetSandbox, sandboxStatus } from '../src/agents/sandbox/index.js';
import { startAnthropicLoopback, toolResults, type LoopbackToolUse, type MessagesRequestBody } from './support/anthropic-loopback.js';
import { createTestRepo } from './support/git-repo.js';

/**
 * Outside attack X30 through the claude-code backend: a Scout (the real Claude Code binary against a loopback
 * Messages API) whose Bash tries to rewrite a tracked file, delete your untracked notes and plant a file in the main
 * checkout, with computed paths the static check cannot see. Its Bash runs in Claude Code's sandbox, which now has the
 * whole checkout read-only (before: writable, with after-run checks that "undid" changes they could not tell from
 * yours); its plan still goes in through the Write tool (outside that sandbox, behind the PreToolUse jail).
 */

const claudeBinary = (() => {
  try {
    return createRequire(import.meta.url).resolve(`@anthropic-ai/claude-agent-sdk-${process.platform}-${process.arch}/claude`);
  } catch {
    return undefined;
  }
})();
const hasBinary = claudeBinary !== undefined;
const status = await sandboxStatus();
const skipReason = !status.available ? `the OS sandbox is unavailable here (${status.detail})` : !hasBinary ? 'the Claude Code native binary package is not installed' : undefined;

afterAll(async () => {
  await resetSandbox();
});

const slug = 'greeting-formatters';
const plan = `title: Greeting formatters
feature_slug: ${slug}
verdict: SUITABLE
suitability_assessment: |
    SUITABLE. Two formatter files with disjoint owners.
test_command: npm test
lint_command: npx tsc --noEmit
file_ownership:
    - file: src/plain.ts
      agent: A
      wave: 1
      action: new
    - file: src/shout.ts
      agent: B
      wave: 1
      action: new
waves:
    - number: 1
      agents:
        - id: A
          task: Implement the plain formatter in src/plain.ts.
          files:
            - src/plain.ts
        - id: B
          task: Implement the shouting formatter in src/shout.ts.
          files:
            - src/shout.ts
quality_gates:
    level: standard
    gates:
        - type: test
          command: npm test
          required: true
state: SCOUT_PENDING
`;

/** A node one-liner whose paths are computed (base64, evaluated): nothing a static check of the command can see. */
function computed(code: string): string {
  return `node -e "eval(Buffer.from('${Buffer.from(code).toString('base64')}','base64').toString())"`;
}

/** A repository with a tracked package.json and an untracked notes.txt of yours; `writableParent`: its committed config makes its parent writable (X32-07/08). */
async function scoutRepo(writableParent = false) {
  const repo = await createTestRepo({ files: { 'package.json': '{"name":"demo","scripts":{"test":"node -e 0"}}\n', 'docs/CONTEXT.md': 'conventions: none\n' } });
  if (writableParent) {
    repo.write('polywave.config.json', `${JSON.stringify({ sandbox: { writable: [path.dirname(repo.dir)] } })}\n`);
    await repo.commitAll('config');
  }
  repo.write('notes.txt', 'my notes\n');
  return repo;
}

/** Rewrite package.json, delete notes.txt, plant evil.test.js, then `extra`: each prints `<name>: DONE` or its error code. */
function attackOn(extra: string): string {
  return [
    "const fs=require('fs');const t=(n,f)=>{try{f();console.log(n+': DONE')}catch(e){console.log(n+': '+e.code)}};",
    "t('rewrite',()=>fs.writeFileSync('package'+'.json','PWNED'));",
    "t('delete',()=>fs.rmSync('notes'+'.txt'));",
    "t('plant',()=>fs.writeFileSync('evil'+'.test.js','x'));",
    extra,
  ].join('');
}

describe.skipIf(skipReason !== undefined)(`a claude-code Scout's Bash has the main checkout read-only${skipReason ? ` — SKIPPED: ${skipReason}` : ''}`, () => {
  it.each([
    ['', 'plain'],
    [' (X32-08: also with your config making the checkout\'s parent writable)', 'parent'],
    [' (X33-10: also in a linked worktree of yours)', 'worktree'],
  ])('rewrite, delete and plant fail with EROFS inside; your edit meanwhile stays; the plan goes in through Write%s', async (_label, mode) => {
    const main = await scoutRepo(mode === 'parent');
    let dir = main.dir;
    if (mode === 'worktree') {
      dir = main.sibling('feature-wt');
      await main.run(['worktree', 'add', '-q', '-b', 'feature', dir]);
      writeFileSync(path.join(dir, 'notes.txt'), 'my notes\n');
    }
    const repo = { dir, env: main.env, path: (relative: string) => path.join(dir, relative), read: (relative: string) => readFileSync(path.join(dir, relative), 'utf8'), write: (relative: string, text: string) => writeFileSync(path.join(dir, relative), text) };
    const command = computed(attackOn("t('plan',()=>fs.writeFileSync(['docs','IMPL','IMPL-x.yaml'].join('/'),'x'));"));
    const turns: LoopbackToolUse[][] = [
      [{ id: 'toolu_attack', name: 'Bash', input: { command, timeout: 60_000 } }],
      [{ id: 'toolu_plan', name: 'Write', input: { file_path: path.join(repo.dir, 'docs', 'IMPL', `IMPL-${slug}.yaml`), content: plan } }],
    ];
    let output = '';
    const api = await startAnthropicLoopback((body: MessagesRequestBody) => {
      const results = toolResults(body);
      const attackResult = results.find((result) => result.toolUseId === 'toolu_attack');
      if (attackResult && output === '') {
        output = attackResult.text;
        // you, in your editor, while the Scout works
        repo.write('notes.txt', 'my notes, edited meanwhile\n');
      }
      const turn = turns[results.length];
      return turn ? { toolUses: turn } : { text: 'Done.' };
    });
    try {
      const result = await runScout({
        feature: 'Greeting formatters',
        repoDir: repo.dir,
        model: 'claude-code:claude-sonnet-4-5',
        env: { ...repo.env, ANTHROPIC_BASE_URL: api.baseURL, ANTHROPIC_API_KEY: 'test', CLAUDE_CODE_MAX_RETRIES: '0' },
      });
      for (const name of ['rewrite', 'delete', 'plant', 'plan']) expect(output, output).toMatch(new RegExp(`^${name}: (EROFS|EACCES|EPERM)$`, 'm'));
      expect(result.state, JSON.stringify(result.steps)).toBe('REVIEWED');
      expect(repo.read('package.json')).toContain('"name":"demo"');
      expect(repo.read('notes.txt')).toBe('my notes, edited meanwhile\n');
      expect(existsSync(repo.path('evil.test.js'))).toBe(false);
      expect(existsSync(repo.path('docs/IMPL/IMPL-x.yaml'))).toBe(false);
      expect(readFileSync(repo.path(`docs/IMPL/IMPL-${slug}.yaml`), 'utf8')).toContain('feature_slug: greeting-formatters');
      // nothing was the Scout's to undo or move out
      expect(result.steps.find((step) => step.step.startsWith('scout-sandbox'))).toBeUndefined();
    } finally {
      await api.close();
    }
  }, 120_000);
});

describe.skipIf(skipReason !== undefined)(`a cli:claude Scout (the whole CLI in the sandbox) has the main checkout read-only${skipReason ? ` — SKIPPED: ${skipReason}` : ''}`, () => {
  it('its Bash and Write fail on the checkout; the plan it writes at $POLYWAVE_PLAN_FILE is put in place', async () => {
    const repo = await scoutRepo();
    const attack = attackOn("t('copy-var',()=>{if(!process.env.POLYWAVE_PLAN_FILE)throw Object.assign(new Error(),{code:'UNSET'})});");
    const realPlan = path.join(repo.dir, 'docs', 'IMPL', `IMPL-${slug}.yaml`);
    let output = '';
    let copy = '';
    let realRefused = false;
    const api = await startAnthropicLoopback((body: MessagesRequestBody) => {
      const results = toolResults(body);
      copy ||= /IMPL-greeting-formatters\.yaml → (\S+)/.exec(JSON.stringify(body.messages).replace(/\\n/g, '\n'))?.[1] ?? '';
      const turns: LoopbackToolUse[][] = [
        [{ id: 'toolu_attack', name: 'Bash', input: { command: computed(attack), timeout: 60_000 } }],
        [{ id: 'toolu_real', name: 'Write', input: { file_path: realPlan, content: 'WRONG\n' } }],
        [{ id: 'toolu_copy', name: 'Write', input: { file_path: copy, content: plan } }],
      ];
      output ||= results.find((result) => result.toolUseId === 'toolu_attack')?.text ?? '';
      realRefused ||= results.find((result) => result.toolUseId === 'toolu_real')?.isError ?? false;
      const turn = turns[results.length];
      return turn ? { toolUses: turn } : { text: 'Done.' };
    });
    try {
      const env = { ...repo.env, POLYWAVE_CLAUDE_BIN: claudeBinary, ANTHROPIC_BASE_URL: api.baseURL, ANTHROPIC_API_KEY: 'test', CLAUDE_CODE_MAX_RETRIES: '0', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' };
      const result = await runScout({ feature: 'Greeting formatters', repoDir: repo.dir, model: 'cli:claude', env });
      expect(copy, 'the copy\'s path is in the prompt').toMatch(/\/plan\/1-IMPL-greeting-formatters\.yaml$/);
      for (const name of ['rewrite', 'delete', 'plant']) expect(output, output).toMatch(new RegExp(`^${name}: (EROFS|EACCES|EPERM)$`, 'm'));
      expect(output).toMatch(/^copy-var: DONE$/m);
      expect(realRefused, 'its Write to the plan path in the checkout failed').toBe(true);
      expect(result.state, JSON.stringify(result.steps)).toBe('REVIEWED');
      expect(readFileSync(realPlan, 'utf8')).toContain('feature_slug: greeting-formatters');
      expect(repo.read('package.json')).toContain('"name":"demo"');
      expect(repo.read('notes.txt')).toBe('my notes\n');
      expect(existsSync(repo.path('evil.test.js'))).toBe(false);
    } finally {
      await api.close();
    }
  }, 180_000);

  it('a plan copy made a link (to a file it can read) is not followed: SANDBOX_PLAN_COPY_REFUSED, said as such, nothing in place', async () => {
    const repo = await scoutRepo();
    const api = await startAnthropicLoopback((body: MessagesRequestBody) =>
      toolResults(body).length === 0 ? { toolUses: [{ id: 'toolu_link', name: 'Bash', input: { command: 'ln -sf "$PWD/package.json" "$POLYWAVE_PLAN_FILE" && echo linked' } }] } : { text: 'Done.' },
    );
    try {
      const env = { ...repo.env, POLYWAVE_CLAUDE_BIN: claudeBinary, ANTHROPIC_BASE_URL: api.baseURL, ANTHROPIC_API_KEY: 'test', CLAUDE_CODE_MAX_RETRIES: '0', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' };
      const result = await runScout({ feature: 'Greeting formatters', repoDir: repo.dir, model: 'cli:claude', env, maxAttempts: 1 });
      expect(result.success).toBe(false);
      const step = result.steps.find((entry) => entry.step === 'scout-plan-copy-1');
      expect(step?.status, JSON.stringify(result.steps)).toBe('failed');
      expect(step?.detail).toMatch(/^the Scout's plan was not put in place: SANDBOX_PLAN_COPY_REFUSED: "docs\/IMPL\/IMPL-greeting-formatters\.yaml": its copy .* was not put in place: it is a symbolic link$/);
      expect(result.steps.some((entry) => entry.step.startsWith('scout-sandbox'))).toBe(false);
      expect(existsSync(repo.path(`docs/IMPL/IMPL-${slug}.yaml`))).toBe(false);
    } finally {
      await api.close();
    }
  }, 180_000);
});
