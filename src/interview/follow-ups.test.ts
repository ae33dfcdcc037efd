import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MockLanguageModelV3 } from 'ai/test';
import { afterAll, describe, expect, it } from 'vitest';
import { createAiSdkBackend } from '../agents/backends/ai-sdk.js';
import { followUpPrompt, modelFollowUps, type FollowUpSuggester } from './follow-ups.js';
import { createInterviewDoc, parseInterviewDoc, type InterviewDoc } from './interview-doc.js';
import { questionBank, type InterviewPhase } from './questions.js';
import { createInterviewFile, loadInterviewText, runInterviewSession, type AnswerSource } from './session.js';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'polywave-follow-ups-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

type CallOptions = Parameters<MockLanguageModelV3['doGenerate']>[0];
type GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>;

const usage = (): GenerateResult['usage'] => ({
  inputTokens: { total: 50, noCache: 50, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 10, text: 10, reasoning: undefined },
});

/** A mock model that answers every call with the final_answer tool carrying `answer`, and records the prompts. */
function answering(answer: Record<string, unknown>, prompts: string[]): MockLanguageModelV3 {
  let calls = 0;
  return new MockLanguageModelV3({
    provider: 'mock',
    modelId: 'mock-model',
    doGenerate: async (call: CallOptions) => {
      prompts.push(
        call.prompt
          .filter((message) => message.role === 'user')
          .flatMap((message) => (Array.isArray(message.content) ? message.content : []))
          .map((part) => (part.type === 'text' ? part.text : ''))
          .join('\n'),
      );
      calls += 1;
      return { content: [{ type: 'tool-call', toolCallId: `call-${calls}`, toolName: 'final_answer', input: JSON.stringify(answer) }], finishReason: { unified: 'tool-calls', raw: 'tool_use' }, usage: usage(), warnings: [] };
    },
  });
}

function doc(): InterviewDoc {
  const created = createInterviewDoc({ description: 'Rate-limited login', slug: 'rate-limited-login', maxQuestions: 18, requirementsPath: 'REQUIREMENTS.md' });
  created.spec_data.overview = { title: 'Rate limits', goal: 'Stop brute force on /login', success_metrics: [], non_goals: ['captcha'] };
  return created;
}

describe('model follow-ups (--model)', () => {
  it('asks the model through the agent runtime (AI SDK mock model) with the phase answers and returns its question', async () => {
    const prompts: string[] = [];
    const suggester = modelFollowUps({ model: 'anthropic:mock-model', cwd: scratch, env: { ANTHROPIC_API_KEY: 'test' }, unsafeNoSandbox: true, backend: createAiSdkBackend({ languageModel: () => answering({ follow_up: '  How many   attempts per minute? ' }, prompts) }) });
    expect(await suggester.suggest('overview', doc())).toBe('How many attempts per minute?');
    expect(prompts[0]).toContain(followUpPrompt('overview', doc()));
    expect(prompts[0]).toContain('- What is the goal — what should be true when it is done?\n  Stop brute force on /login');
    expect(prompts[0]).toContain('- How will you know it succeeded (success metrics)?\n  (skipped)');
  });

  it('null, an unusable answer or a failing model mean no follow-up (reported, never blocking)', async () => {
    const errors: string[] = [];
    const none = modelFollowUps({ model: 'anthropic:mock-model', cwd: scratch, env: {}, unsafeNoSandbox: true, backend: createAiSdkBackend({ languageModel: () => answering({ follow_up: null }, []) }) });
    expect(await none.suggest('scope', doc())).toBeUndefined();
    const wrong = modelFollowUps({ model: 'anthropic:mock-model', cwd: scratch, env: {}, unsafeNoSandbox: true, onError: (message) => errors.push(message), backend: createAiSdkBackend({ languageModel: () => answering({ question: 'x' }, []) }) });
    expect(await wrong.suggest('scope', doc())).toBeUndefined();
    const failing = new MockLanguageModelV3({
      doGenerate: async () => {
        throw new Error('overloaded');
      },
    });
    const broken = modelFollowUps({ model: 'anthropic:mock-model', cwd: scratch, env: {}, unsafeNoSandbox: true, onError: (message) => errors.push(message), backend: createAiSdkBackend({ languageModel: () => failing, maxRetries: 0 }) });
    expect(await broken.suggest('scope', doc())).toBeUndefined();
    expect(errors).toHaveLength(2);
  });
});

describe('follow-ups in a session', () => {
  /** Answers from a list; undefined when it runs out (the end of input). */
  function listSource(answers: string[], asked: string[]): AnswerSource {
    return {
      interactive: true,
      ask: async (question) => {
        asked.push(question.id);
        return answers.shift();
      },
    };
  }

  const bankAnswers = questionBank.map((question) => (question.kind === 'confirm' ? 'yes' : question.required ? `${question.field} answer` : 'skip'));

  it('after a phase the suggestion is saved before it is asked; a resume asks the pending one without the model; REQUIREMENTS.md lists it', async () => {
    const file = path.join(scratch, 'INTERVIEW-session.yaml');
    const start = createInterviewDoc({ description: 'Rate-limited login', slug: 'session', maxQuestions: 18, requirementsPath: 'REQUIREMENTS.md' });
    await createInterviewFile(file, start);
    const suggestions: InterviewPhase[] = [];
    const suggester: FollowUpSuggester = {
      suggest: async (phase) => {
        suggestions.push(phase);
        return phase === 'overview' ? 'How many attempts per minute?' : phase === 'scope' ? 'Which endpoints exactly?' : undefined;
      },
    };
    const asked: string[] = [];
    // Input ends right when the first follow-up is asked.
    const first = await runInterviewSession(start, { docPath: file, source: listSource(bankAnswers.slice(0, 4), asked), now: () => undefined, followUps: suggester });
    expect(first.outcome).toBe('input-closed');
    expect(asked.at(-1)).toBe('overview.follow_up');
    const saved = loadInterviewText(readFileSync(file, 'utf8'), file);
    expect(saved).toMatchObject({ question_cursor: 4, pending_follow_up: { phase: 'overview', question: 'How many attempts per minute?' } });

    const resumedAsked: string[] = [];
    const noModel: FollowUpSuggester = {
      suggest: async (phase) => {
        suggestions.push(phase);
        return phase === 'scope' ? 'Which endpoints exactly?' : undefined;
      },
    };
    const done = await runInterviewSession(saved, { docPath: file, source: listSource(['5 per minute', ...bankAnswers.slice(4, 7), '', ...bankAnswers.slice(7)], resumedAsked), now: () => undefined, followUps: noModel });
    expect(done.outcome).toBe('complete');
    expect(resumedAsked.slice(0, 5)).toEqual(['overview.follow_up', 'scope.in_scope', 'scope.out_of_scope', 'scope.assumptions', 'scope.follow_up']);
    // overview was suggested once (first session), not again after the resume; review never.
    expect(suggestions).toEqual(['overview', 'scope', 'requirements', 'interfaces', 'stories']);
    const final = parseInterviewDoc(readFileSync(file, 'utf8'));
    expect(final.ok).toBe(true);
    if (!final.ok) return;
    expect(final.doc.follow_ups).toEqual([
      { phase: 'overview', question: 'How many attempts per minute?', answer: '5 per minute' },
      { phase: 'scope', question: 'Which endpoints exactly?', answer: '', command: 'skip' },
    ]);
    expect(final.doc.pending_follow_up).toBeUndefined();
    expect(final.doc.history.filter((entry) => entry.field_name === 'follow_ups').map((entry) => entry.question_id)).toEqual(['overview.follow_up', 'scope.follow_up']);
    const requirements = readFileSync(path.join(scratch, 'REQUIREMENTS.md'), 'utf8');
    expect(requirements).toContain('### Non-goals\n\n_Not answered._\n\n### Follow-up questions\n\n- Q: How many attempts per minute?\n  A: 5 per minute\n\n## 2. Scope');
    expect(requirements).toContain('### Follow-up questions\n\n- Q: Which endpoints exactly?\n  A: _Not answered._\n\n## 3. Requirements');
  });
});
