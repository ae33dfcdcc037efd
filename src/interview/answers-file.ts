/**
 * `--answers F`: answers for a non-interactive interview (scripts, tests, CI), as YAML or JSON.
 * Three shapes: a mapping keyed by question id (`overview.title`) or field name (`title`); a
 * mapping by phase like spec_data (`overview: {title: …}`); or a sequence in question order.
 * A value is a string, a list of strings (list questions), a boolean (the confirmation), or
 * null / "skip" for an optional question left empty.
 */
import { PolywaveError } from '../errors/polywave-error.js';
import { parseYamlSafe, toPlain } from '../protocol/yaml/index.js';
import { interpretAnswer } from './interview-doc.js';
import { interviewPhases, questionBank, type InterviewQuestion } from './questions.js';
import type { AnswerSource } from './session.js';

const invalidInput = 'X001_INVALID_INPUT';

function fail(file: string, message: string): never {
  throw new PolywaveError({ code: invalidInput, message: `answers file ${file}: ${message}` });
}

function rawOf(file: string, question: InterviewQuestion, value: unknown): string {
  if (value === null || value === undefined) return 'skip';
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (typeof value === 'string' || typeof value === 'number') return String(value);
  if (Array.isArray(value) && value.every((item) => typeof item === 'string' || typeof item === 'number')) {
    if (question.kind !== 'list') fail(file, `${question.id} takes one answer, not a list`);
    return value.length === 0 ? 'skip' : value.map(String).join('\n');
  }
  return fail(file, `${question.id}: expected a string, a list of strings or a boolean`);
}

function questionForKey(file: string, key: string): InterviewQuestion {
  const found = questionBank.find((entry) => entry.id === key || entry.field === key);
  if (!found) fail(file, `unknown question "${key}" (ids: ${questionBank.map((entry) => entry.id).join(', ')})`);
  return found;
}

/**
 * Parses the answers text into raw answers by question id. Unknown questions, wrong value types
 * and answers the question refuses (an empty required answer, "skip" of a required question, a
 * confirmation that is not yes/no) are X001 errors — checked before anything is written.
 */
export function parseAnswers(text: string, file: string): Map<string, string> {
  const parsed = parseYamlSafe(text);
  if (!parsed.ok) fail(file, parsed.findings[0]!.message);
  const data = toPlain(parsed.document);
  const answers = new Map<string, string>();
  const put = (question: InterviewQuestion, value: unknown) => {
    if (answers.has(question.id)) fail(file, `${question.id} is answered twice`);
    const raw = rawOf(file, question, value);
    const checked = interpretAnswer(question, raw);
    if (!checked.ok) fail(file, checked.message);
    if (checked.turn.kind === 'back') fail(file, `${question.id}: "back" is for interactive use`);
    answers.set(question.id, raw);
  };
  if (Array.isArray(data)) {
    if (data.length > questionBank.length) fail(file, `${data.length} answers for ${questionBank.length} questions`);
    data.forEach((value, index) => put(questionBank[index]!, value));
  } else if (data !== null && typeof data === 'object') {
    for (const [key, value] of Object.entries(data as Record<string, unknown>)) {
      if ((interviewPhases as readonly string[]).includes(key) && value !== null && typeof value === 'object' && !Array.isArray(value)) {
        for (const [field, nested] of Object.entries(value as Record<string, unknown>)) put(questionForKey(file, `${key}.${field}`), nested);
      } else {
        put(questionForKey(file, key), value);
      }
    }
  } else {
    fail(file, 'expected a mapping of question ids to answers, or a list of answers in question order');
  }
  return answers;
}

/**
 * Checks that `answers` can finish the interview from `cursor`: every required question from
 * there on has an answer (the confirmation defaults to yes).
 */
export function checkAnswersCover(answers: ReadonlyMap<string, string>, cursor: number, file: string): void {
  const missing = questionBank.slice(cursor).filter((entry) => entry.required && entry.kind !== 'confirm' && !answers.has(entry.id));
  if (missing.length > 0) fail(file, `no answer for required question${missing.length > 1 ? 's' : ''} ${missing.map((entry) => entry.id).join(', ')}`);
}

/** An answer source reading from parsed answers: optional questions without an answer are skipped; the confirmation defaults to yes. */
export function answersFileSource(answers: ReadonlyMap<string, string>): AnswerSource {
  return {
    interactive: false,
    ask: async (question) => answers.get(question.id) ?? (question.kind === 'confirm' ? 'yes' : question.required ? undefined : 'skip'),
  };
}
