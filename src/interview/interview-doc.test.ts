import { describe, expect, it } from 'vitest';
import {
  escapeAnswer,
  requirementsPathProblem,
  applyTurn,
  compileRequirements,
  completeInterview,
  createInterviewDoc,
  editInterviewText,
  interpretAnswer,
  isFinished,
  isTruncated,
  parseInterviewDoc,
  renderInterviewDoc,
  splitList,
  type InterviewDoc,
  type InterviewTurn,
} from './interview-doc.js';
import { phaseAt, questionBank, questionCount, questionNumberInPhase } from './questions.js';

const now = '2026-01-01T00:00:00.000Z';

function start(maxQuestions = 18): InterviewDoc {
  return createInterviewDoc({ description: 'Add rate limiting', slug: 'add-rate-limiting', maxQuestions, requirementsPath: 'REQUIREMENTS.md' });
}

function answer(doc: InterviewDoc, raw: string): { doc: InterviewDoc; text?: string } {
  const interpreted = interpretAnswer(questionBank[doc.question_cursor]!, raw);
  if (!interpreted.ok) throw new Error(interpreted.message);
  return { doc: applyTurn(doc, interpreted.turn, now).doc };
}

/** Answers every question with a fixed text ("yes" for the confirmation). */
function answerAll(doc: InterviewDoc): InterviewDoc {
  let current = doc;
  while (current.question_cursor < questionCount) current = answer(current, questionBank[current.question_cursor]!.kind === 'confirm' ? 'yes' : `answer ${current.question_cursor + 1}`).doc;
  return current;
}

describe('question bank', () => {
  it('has six phases in order with stable ids and the Go fields', () => {
    expect(questionBank.map((question) => question.id)).toEqual([
      'overview.title',
      'overview.goal',
      'overview.success_metrics',
      'overview.non_goals',
      'scope.in_scope',
      'scope.out_of_scope',
      'scope.assumptions',
      'requirements.functional',
      'requirements.non_functional',
      'requirements.constraints',
      'interfaces.data_models',
      'interfaces.apis',
      'interfaces.external',
      'stories.stories',
      'review.open_questions',
      'review.confirmed',
    ]);
    expect(questionBank.filter((question) => question.required).map((question) => question.id)).toEqual(['overview.title', 'overview.goal', 'scope.in_scope', 'requirements.functional', 'review.confirmed']);
    expect([phaseAt(0), phaseAt(4), phaseAt(13), phaseAt(15), phaseAt(16)]).toEqual(['overview', 'scope', 'stories', 'review', 'review']);
    expect([questionNumberInPhase(0), questionNumberInPhase(6), questionNumberInPhase(15)]).toEqual([1, 3, 2]);
  });
});

describe('answers', () => {
  it('interprets skip, back, lists, confirmations and refuses what a question cannot take', () => {
    const [title, , metrics] = questionBank;
    const confirm = questionBank.at(-1)!;
    expect(interpretAnswer(metrics!, 'a; b\n- c\n\n')).toEqual({ ok: true, turn: { kind: 'answer', value: ['a', 'b', 'c'], raw: 'a\nb\nc' } });
    expect(interpretAnswer(metrics!, '')).toEqual({ ok: true, turn: { kind: 'skip' } });
    expect(interpretAnswer(metrics!, 'SKIP')).toEqual({ ok: true, turn: { kind: 'skip' } });
    expect(interpretAnswer(title!, ' Back ')).toEqual({ ok: true, turn: { kind: 'back' } });
    expect(interpretAnswer(title!, '')).toEqual({ ok: false, message: 'overview.title is required: give an answer' });
    expect(interpretAnswer(title!, 'skip')).toEqual({ ok: false, message: 'overview.title is required and cannot be skipped' });
    expect(interpretAnswer(confirm, 'Y')).toEqual({ ok: true, turn: { kind: 'answer', value: true, raw: 'yes' } });
    expect(interpretAnswer(confirm, 'no')).toEqual({ ok: true, turn: { kind: 'answer', value: false, raw: 'no' } });
    expect(interpretAnswer(confirm, 'maybe')).toEqual({ ok: false, message: 'review.confirmed: answer yes or no' });
    expect(splitList('* one;two ;; - three')).toEqual(['one', 'two', 'three']);
  });
});

describe('turns', () => {
  it('an answer stores the field, appends history, moves the cursor and the phase', () => {
    let doc = start();
    for (const raw of ['Limits', 'Stop abuse', 'p99 < 5ms', 'skip']) doc = answer(doc, raw).doc;
    expect(doc).toMatchObject({ question_cursor: 4, phase: 'scope', progress: { answered: 4, total: 16, phase_number: 2, phases: 6 }, updated_at: now });
    expect(doc.spec_data.overview).toEqual({ title: 'Limits', goal: 'Stop abuse', success_metrics: ['p99 < 5ms'], non_goals: [] });
    expect(doc.history.map((entry) => [entry.turn_number, entry.question_id, entry.answer, entry.command])).toEqual([
      [1, 'overview.title', 'Limits', undefined],
      [2, 'overview.goal', 'Stop abuse', undefined],
      [3, 'overview.success_metrics', 'p99 < 5ms', undefined],
      [4, 'overview.non_goals', '', 'skip'],
    ]);
  });

  it('back undoes the previous answer (history keeps both), at the first question it only records the turn', () => {
    const back: InterviewTurn = { kind: 'back' };
    const first = applyTurn(start(), back).doc;
    expect(first).toMatchObject({ question_cursor: 0, history: [{ turn_number: 1, command: 'back', question_id: 'overview.title' }] });
    let doc = answer(answer(start(), 'Limits').doc, 'Stop abuse').doc;
    const undone = applyTurn(doc, back);
    expect(undone.doc.question_cursor).toBe(1);
    expect(undone.doc.spec_data.overview).toEqual({ title: 'Limits' });
    expect(undone.edits).toContainEqual({ path: ['spec_data', 'overview', 'goal'], delete: true });
    doc = answer(undone.doc, 'Stop abuse, really').doc;
    expect(doc.spec_data.overview.goal).toBe('Stop abuse, really');
    expect(doc.history.map((entry) => entry.command ?? entry.answer)).toEqual(['Limits', 'Stop abuse', 'back', 'Stop abuse, really']);
  });

  it('"no" to the confirmation keeps the cursor; back from there forgets it; yes finishes', () => {
    let doc = start();
    while (doc.question_cursor < questionCount - 1) doc = answer(doc, 'x').doc;
    doc = answer(doc, 'no').doc;
    expect(doc.question_cursor).toBe(15);
    expect(doc.spec_data.review.confirmed).toBe(false);
    expect(isFinished(doc)).toBe(false);
    doc = applyTurn(doc, { kind: 'back' }).doc;
    expect(doc.question_cursor).toBe(14);
    expect(doc.spec_data.review).toEqual({});
    doc = answer(answer(doc, 'none left').doc, 'yes').doc;
    expect(isFinished(doc)).toBe(true);
    expect(isTruncated(doc)).toBe(false);
  });

  it('refuses any turn on a complete interview and a completion from a state other than INTERVIEWING (internal bugs)', () => {
    const done = completeInterview(answerAll(start())).doc;
    expect(done).toMatchObject({ status: 'complete', state: 'SCOUT_PENDING' });
    expect(() => applyTurn(done, { kind: 'skip' })).toThrow('E39: invalid phase transition: the interview is complete');
    expect(() => completeInterview(done)).toThrow('E39: invalid phase transition SCOUT_PENDING → SCOUT_PENDING');
  });

  it('max questions: finished after N questions with a warning naming the missing required answers', () => {
    let doc = start(3);
    for (const raw of ['T', 'G', 'skip']) doc = answer(doc, raw).doc;
    expect(isFinished(doc)).toBe(true);
    expect(isTruncated(doc)).toBe(true);
    const completed = completeInterview(doc).doc;
    expect(completed.warnings).toEqual([
      'max questions (3) reached after 3 of 16 questions: the requirements are partial; required answers missing: scope.in_scope, requirements.functional; the summary was not confirmed',
    ]);
    // back does not use up the budget
    let revisited = start(3);
    for (const raw of ['T', 'back', 'T2', 'G']) revisited = raw === 'back' ? applyTurn(revisited, { kind: 'back' }).doc : answer(revisited, raw).doc;
    expect(isFinished(revisited)).toBe(false);
  });
});

describe('the INTERVIEW document on disk', () => {
  it('every turn is a minimal edit: the edited text validates and keeps comments and layout', () => {
    let doc = start();
    let text = renderInterviewDoc(doc).replace('mode: deterministic\n', 'mode: deterministic # chosen by hand\n');
    expect(parseInterviewDoc(text)).toMatchObject({ ok: true });
    for (const raw of ['Limits', 'Stop abuse\nfor real', 'a; b', 'skip', 'login']) {
      const turn = interpretAnswer(questionBank[doc.question_cursor]!, raw);
      if (!turn.ok) throw new Error(turn.message);
      const result = applyTurn(doc, turn.turn, now);
      text = editInterviewText(text, result.edits);
      const parsed = parseInterviewDoc(text);
      expect(parsed.ok).toBe(true);
      if (parsed.ok) expect(parsed.doc).toEqual(result.doc);
      doc = result.doc;
    }
    expect(text).toContain('mode: deterministic # chosen by hand\n');
    expect(text.startsWith('# E39 interview state (polywave interview). Resume: polywave interview --resume <this file>\nid: interview-add-rate-limiting\n')).toBe(true);
  });

  it('the validator refuses what is not a consistent INTERVIEW document', () => {
    const good = renderInterviewDoc(answer(answer(start(), 'T').doc, 'G').doc);
    const cases: Array<[string, string]> = [
      ['title: X\nfeature_slug: x\nstate: SCOUT_PENDING\n', 'not an INTERVIEW document: id: Invalid input'],
      [good.replace('question_cursor: 2', 'question_cursor: 9'), 'phase is overview but question_cursor 9 is in phase requirements'],
      [good.replace('status: in_progress', 'status: complete'), 'status complete does not match state INTERVIEWING (complete ⇔ SCOUT_PENDING)'],
      [good.replace('turn_number: 2', 'turn_number: 7'), 'history[1].turn_number is 7, expected 2'],
      [good.replace('    title: T\n', ''), 'required answer overview.title is missing although the cursor is past it'],
      [good.replace('mode: deterministic', 'mode: llm'), 'not an INTERVIEW document: mode: Invalid input: expected "deterministic"'],
      [good.replace('slug: add-rate-limiting', 'slug: add-rate-limiting\nextra: 1'), 'not an INTERVIEW document: Unrecognized key: "extra"'],
      [good.replace('answered: 2', 'answered: 1'), 'progress.answered is 1, question_cursor is 2'],
      [`${good}id: twice\n`, "duplicate key 'id' at lines 2, 42"],
      ['a: [\n', 'YAML syntax error at line 2'],
    ];
    for (const [text, message] of cases) {
      const parsed = parseInterviewDoc(text);
      expect(parsed.ok, message).toBe(false);
      expect(parsed.findings.map((finding) => finding.message).join(' | '), message).toContain(message);
    }
  });
});

describe('REQUIREMENTS.md', () => {
  it('has the title and the six sections in order; unanswered fields are marked', () => {
    const doc = completeInterview(answerAll(start())).doc;
    const text = compileRequirements(doc, 'INTERVIEW-add-rate-limiting.yaml');
    const headings = text.split('\n').filter((line) => line.startsWith('## '));
    expect(headings).toEqual(['## 1. Overview', '## 2. Scope', '## 3. Requirements', '## 4. Interfaces', '## 5. User stories', '## 6. Review']);
    expect(text.startsWith('# Requirements: answer 1\n')).toBe(true);
    expect(text).toContain('### Functional\n\n- FR-1: answer 8\n');
    expect(text).toContain('## 5. User stories\n\n- US-1: answer 14\n');
    expect(text.endsWith('Confirmed: yes\n')).toBe(true);
    const empty = compileRequirements(start(), 'x.yaml');
    expect(empty.startsWith('# Requirements: Add rate limiting\n')).toBe(true);
    expect(empty.match(/_Not answered\._/g)).toHaveLength(14);
  });
});

describe('paths and text taken from a (shared) INTERVIEW file', () => {
  it('requirements_path: only a plain relative path below the document directory', () => {
    expect(requirementsPathProblem('REQUIREMENTS.md')).toBeUndefined();
    expect(requirementsPathProblem('out/REQ.md')).toBeUndefined();
    expect(requirementsPathProblem('../.git/config')).toBe('contains ".." segments');
    expect(requirementsPathProblem('a\\..\\b.md')).toBe('contains ".." segments');
    expect(requirementsPathProblem('/tmp/x.md')).toBe('is absolute');
    expect(requirementsPathProblem('C:/x.md')).toBe('is absolute');
    expect(requirementsPathProblem('.git/hooks/pre-commit')).toBe('points into .git/');
    expect(requirementsPathProblem('sub/.GIT/config')).toBe('points into .git/');
    expect(requirementsPathProblem('out/')).toBe('does not name a file');
    expect(requirementsPathProblem('a\0b')).toBe('contains a NUL byte');
  });

  it('escapeAnswer: a line of an answer cannot open a heading', () => {
    expect(escapeAnswer('a\n## b\n   # c\n===\n--\n- item\n#tag')).toBe('a\n\\## b\n\\# c\n\\===\n\\--\n- item\n\\#tag');
  });
});
