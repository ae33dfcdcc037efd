/**
 * Optional model follow-ups (`interview --model M`, off by default): after each phase but the
 * review, a model may suggest ONE follow-up question about the answers of that phase. The
 * question bank stays the deterministic backbone; follow-ups are extra turns, recorded in the
 * INTERVIEW document (`pending_follow_up` before they are asked, `follow_ups` once answered) so
 * a resumed interview asks a pending one again without calling the model. Never used with
 * `--non-interactive`: that run stays reproducible.
 */
import { z } from 'zod';
import type { AgentBackend } from '../agents/contract.js';
import type { InterviewDoc } from './interview-doc.js';
import { phaseTitles, questionBank, type InterviewPhase } from './questions.js';

/** Suggests a follow-up question for a finished phase, or undefined when none is needed. */
export interface FollowUpSuggester {
  suggest(phase: InterviewPhase, doc: InterviewDoc): Promise<string | undefined>;
}

const followUpSchema = z.object({ follow_up: z.string().nullable() });

const systemPrompt = `You help a user write the requirements of one software feature before a planner splits it into parallel work.
You see the feature description and the answers given so far. For the phase named in the request, decide whether ONE follow-up question would remove the most important ambiguity in that phase's answers (a missing number, an undefined term, an unclear boundary).
Ask at most one short question, in the user's language, about that phase only; do not repeat a question already asked. If the answers are clear enough, answer null.
Answer only with the structured result: {"follow_up": "<question>"} or {"follow_up": null}.`;

function answersOf(doc: InterviewDoc, phase: InterviewPhase): string {
  const lines: string[] = [];
  for (const question of questionBank.filter((entry) => entry.phase === phase)) {
    const value = (doc.spec_data[phase] as Record<string, unknown>)[question.field];
    if (value === undefined) continue;
    lines.push(`- ${question.prompt}\n  ${Array.isArray(value) ? (value.length === 0 ? '(skipped)' : value.join('; ')) : String(value)}`);
  }
  return lines.join('\n') || '(no answers)';
}

/** The prompt for `phase` (exported for tests). */
export function followUpPrompt(phase: InterviewPhase, doc: InterviewDoc): string {
  const earlier = (doc.follow_ups ?? []).map((entry) => `- ${entry.question}`).join('\n');
  return `Feature: ${doc.description}\n\nPhase: ${phaseTitles[phase]}\nAnswers of this phase:\n${answersOf(doc, phase)}\n${earlier ? `\nFollow-up questions already asked:\n${earlier}\n` : ''}\nSuggest one follow-up question for the ${phaseTitles[phase]} phase, or null.`;
}

/** Options of {@link modelFollowUps}. */
export interface ModelFollowUpOptions {
  /** Model string (`anthropic:…`, `script:…`, …) as everywhere else. */
  model: string;
  /** Project root: the read-only working directory of the model agent. */
  cwd: string;
  env: Readonly<Record<string, string | undefined>>;
  /** Use this backend instead of the one the model names (tests). */
  backend?: AgentBackend;
  unsafeNoSandbox?: boolean;
  signal?: AbortSignal;
  /** Wall-clock limit per suggestion (default 2 minutes). */
  timeoutMs?: number;
  /** Why a suggestion failed (the interview goes on without it). */
  onError?: (message: string) => void;
}

/**
 * A suggester backed by a model through the normal agent runtime (`runAgent`: any backend, the
 * sandbox, a read-only jail, structured output). A failed call or an unusable answer is reported
 * through `onError` and counts as "no follow-up": the model never blocks the interview.
 */
export function modelFollowUps(options: ModelFollowUpOptions): FollowUpSuggester {
  return {
    suggest: async (phase, doc) => {
      const { runAgent } = await import('../agents/run-agent.js');
      try {
        const { outcome } = await runAgent({
          agentId: `interviewer-${phase}`,
          role: 'critic',
          model: options.model,
          systemPrompt,
          prompt: followUpPrompt(phase, doc),
          cwd: options.cwd,
          policy: { root: options.cwd, ownedFiles: [], readOnly: true },
          limits: { timeoutMs: options.timeoutMs ?? 120_000, maxTurns: 4 },
          env: options.env,
          outputSchema: z.toJSONSchema(followUpSchema) as Record<string, unknown>,
          ...(options.backend ? { backend: options.backend } : {}),
          ...(options.unsafeNoSandbox ? { unsafeNoSandbox: true } : {}),
          ...(options.signal ? { signal: options.signal } : {}),
        });
        const parsed = followUpSchema.safeParse(outcome.structured);
        if (!parsed.success) {
          options.onError?.(outcome.failure ? `${outcome.failure.kind}: ${outcome.failure.message}` : 'the model gave no {follow_up} answer');
          return undefined;
        }
        const question = parsed.data.follow_up?.trim().replace(/\s+/g, ' ').slice(0, 500);
        return question ? question : undefined;
      } catch (error) {
        options.onError?.(error instanceof Error ? error.message : String(error));
        return undefined;
      }
    },
  };
}
