import { describe, expect, it } from 'vitest';
import { PolywaveError } from '../errors/polywave-error.js';
import { answersFileSource, checkAnswersCover, parseAnswers } from './answers-file.js';
import { questionBank } from './questions.js';

function errorOf(action: () => unknown): { code: string; message: string } {
  try {
    action();
  } catch (error) {
    if (PolywaveError.isInstance(error)) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error('no error');
}

describe('answers files', () => {
  it('reads the three shapes into the same answers', () => {
    const byId = parseAnswers('overview.title: T\noverview.goal: G\nscope.in_scope: [a, b]\nrequirements.functional: "f1; f2"\nreview.confirmed: true\noverview.non_goals: null\n', 'f');
    const byField = parseAnswers('{"title": "T", "goal": "G", "in_scope": ["a", "b"], "functional": "f1; f2", "confirmed": true, "non_goals": null}', 'f');
    const byPhase = parseAnswers('overview: {title: T, goal: G, non_goals: ~}\nscope: {in_scope: [a, b]}\nrequirements: {functional: "f1; f2"}\nreview: {confirmed: yes}\n', 'f');
    const expected = new Map([
      ['overview.title', 'T'],
      ['overview.goal', 'G'],
      ['scope.in_scope', 'a\nb'],
      ['requirements.functional', 'f1; f2'],
      ['review.confirmed', 'yes'],
      ['overview.non_goals', 'skip'],
    ]);
    for (const parsed of [byId, byField, byPhase]) expect(new Map([...parsed].sort())).toEqual(new Map([...expected].sort()));
    const list = parseAnswers('- T\n- G\n- ~\n', 'f');
    expect([...list]).toEqual([
      ['overview.title', 'T'],
      ['overview.goal', 'G'],
      ['overview.success_metrics', 'skip'],
    ]);
  });

  it('refuses unknown questions, wrong types, refused answers and duplicates with X001', () => {
    const cases: Array<[string, string]> = [
      ['overview.titel: T\n', 'answers file f: unknown question "overview.titel"'],
      ['title: [a, b]\n', 'answers file f: overview.title takes one answer, not a list'],
      ['title: {a: 1}\n', 'answers file f: overview.title: expected a string, a list of strings or a boolean'],
      ['title: ""\n', 'answers file f: overview.title is required: give an answer'],
      ['goal: skip\n', 'answers file f: overview.goal is required and cannot be skipped'],
      ['confirmed: maybe\n', 'answers file f: review.confirmed: answer yes or no'],
      ['title: back\n', 'answers file f: overview.title: "back" is for interactive use'],
      ['title: T\noverview.title: U\n', 'answers file f: overview.title is answered twice'],
      ['just text\n', 'answers file f: expected a mapping of question ids to answers'],
      [`${questionBank.map(() => '- x').join('\n')}\n- extra\n`, 'answers file f: 17 answers for 16 questions'],
      ['a: [\n', 'answers file f: YAML syntax error at line 2'],
    ];
    for (const [text, message] of cases) {
      const error = errorOf(() => parseAnswers(text, 'f'));
      expect(error.code, text).toBe('X001_INVALID_INPUT');
      expect(error.message, text).toContain(message);
    }
  });

  it('must cover the required questions from the cursor; the source skips the rest and confirms by default', async () => {
    const answers = parseAnswers('title: T\ngoal: G\n', 'f');
    expect(errorOf(() => checkAnswersCover(answers, 0, 'f')).message).toBe('answers file f: no answer for required questions scope.in_scope, requirements.functional');
    expect(() => checkAnswersCover(answers, 8, 'f')).not.toThrow();
    const source = answersFileSource(answers);
    expect(source.interactive).toBe(false);
    const asked = await Promise.all([0, 2, 15].map((index) => source.ask(questionBank[index]!, {} as never)));
    expect(asked).toEqual(['T', 'skip', 'yes']);
  });
});
