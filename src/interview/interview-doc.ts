/**
 * E39: the INTERVIEW document (`docs/INTERVIEW-<slug>.yaml`) — its schema, its validator, and the
 * pure transitions of one question-and-answer turn. No file system here: the session
 * (session.ts) reads and writes; this module turns text into values and answers into YAML edits.
 */
import { z } from 'zod';
import type { Finding } from '../errors/finding.js';
import { isLegalTransition } from '../protocol/state-machine.js';
import { applyEdits, parseYamlSafe, toPlain, type YamlEdit } from '../protocol/yaml/index.js';
import { interviewPhases, phaseAt, questionBank, questionCount, type InterviewPhase, type InterviewQuestion } from './questions.js';

/** Code of every finding about an INTERVIEW document that is not one. */
export const interviewInvalidCode = 'INTERVIEW_INVALID';
/** Go registry code for a failed write of the INTERVIEW document. */
export const interviewSaveFailedCode = 'N089_INTERVIEW_SAVE_FAILED';
/** Go registry code for a failed write of REQUIREMENTS.md. */
export const requirementsWriteFailedCode = 'N090_REQUIREMENTS_WRITE_FAILED';

/** Interview modes. Only the deterministic question bank exists (the Go `llm` mode is not implemented there either). */
export const interviewModes = ['deterministic'] as const;
/** Default cap on questions asked (Go: 18). */
export const defaultMaxQuestions = 18;

const slugPattern = /^[a-z0-9][a-z0-9-]*$/;
const stringList = z.array(z.string());

const historyEntrySchema = z.strictObject({
  turn_number: z.int().min(1),
  phase: z.enum(interviewPhases),
  question_id: z.string().min(1),
  field_name: z.string().min(1),
  question: z.string(),
  answer: z.string(),
  /** `skip` (optional question left empty) or `back` (the previous answer was undone). */
  command: z.enum(['skip', 'back']).optional(),
  timestamp: z.string().optional(),
});

const specDataSchema = z.strictObject({
  overview: z.strictObject({ title: z.string().optional(), goal: z.string().optional(), success_metrics: stringList.optional(), non_goals: stringList.optional() }),
  scope: z.strictObject({ in_scope: stringList.optional(), out_of_scope: stringList.optional(), assumptions: stringList.optional() }),
  requirements: z.strictObject({ functional: stringList.optional(), non_functional: stringList.optional(), constraints: stringList.optional() }),
  interfaces: z.strictObject({ data_models: stringList.optional(), apis: stringList.optional(), external: stringList.optional() }),
  stories: z.strictObject({ stories: stringList.optional() }),
  review: z.strictObject({ open_questions: stringList.optional(), confirmed: z.boolean().optional() }),
});

const followUpSchema = z.strictObject({
  phase: z.enum(interviewPhases),
  question: z.string().min(1),
  answer: z.string(),
  command: z.enum(['skip']).optional(),
});

/** Schema of the INTERVIEW document (E39 "State Persistence"; field names of the Go interview). */
export const interviewDocSchema = z.strictObject({
  id: z.string().min(1),
  slug: z.string().regex(slugPattern),
  status: z.enum(['in_progress', 'complete']),
  /** E39 state machine: INTERVIEWING until REQUIREMENTS.md is written, then SCOUT_PENDING. */
  state: z.enum(['INTERVIEWING', 'SCOUT_PENDING']),
  mode: z.enum(interviewModes),
  description: z.string().min(1),
  created_at: z.string().optional(),
  updated_at: z.string().optional(),
  phase: z.enum(interviewPhases),
  /** Index in the question bank of the next question to ask (= questions behind the interview). */
  question_cursor: z.int().min(0).max(questionCount),
  max_questions: z.int().min(1),
  progress: z.strictObject({ answered: z.int().min(0), total: z.int().min(1), phase_number: z.int().min(1).max(interviewPhases.length), phases: z.int().min(1) }),
  spec_data: specDataSchema,
  history: z.array(historyEntrySchema),
  /** REQUIREMENTS.md, relative to the INTERVIEW document's directory. */
  requirements_path: z.string().min(1),
  warnings: stringList.optional(),
  /** `--model` follow-ups: the one suggested and not yet answered (asked again on resume, no model call). */
  pending_follow_up: z.strictObject({ phase: z.enum(interviewPhases), question: z.string().min(1) }).optional(),
  /** `--model` follow-ups that were asked, with their answers. */
  follow_ups: z.array(followUpSchema).optional(),
});

export type InterviewDoc = z.infer<typeof interviewDocSchema>;
export type HistoryEntry = z.infer<typeof historyEntrySchema>;
export type FollowUp = z.infer<typeof followUpSchema>;
type SpecData = InterviewDoc['spec_data'];

/**
 * Why `requirements_path` (a path taken from a committed, shareable file) cannot be written, or
 * undefined when it is a plain relative path below the INTERVIEW document's directory: not
 * absolute, no `..` or `.` segments, nothing inside a `.git` directory, no NUL byte.
 */
export function requirementsPathProblem(value: string): string | undefined {
  if (value.includes('\0')) return 'contains a NUL byte';
  if (/^([\\/]|[A-Za-z]:)/.test(value)) return 'is absolute';
  const segments = value.split(/[\\/]/);
  if (segments.includes('..')) return 'contains ".." segments';
  if (segments.some((segment) => segment.toLowerCase() === '.git')) return 'points into .git/';
  const last = segments[segments.length - 1]!;
  if (last === '' || last === '.') return 'does not name a file';
  return undefined;
}

/** The result of {@link parseInterviewDoc}. */
export type ParsedInterview = { ok: true; doc: InterviewDoc; findings: Finding[] } | { ok: false; findings: Finding[] };

function invalid(message: string, field?: string): Finding {
  return { code: interviewInvalidCode, message, severity: 'error', ...(field ? { field } : {}) };
}

/**
 * Parses and validates an INTERVIEW document: YAML syntax, the schema (unknown keys are errors:
 * this is our own format), and the consistency rules — turn numbers 1..n, `phase` is the phase of
 * the question at `question_cursor`, `status: complete` ⇔ `state: SCOUT_PENDING`, every required
 * question behind the cursor answered.
 */
export function parseInterviewDoc(text: string): ParsedInterview {
  const parsed = parseYamlSafe(text);
  if (!parsed.ok) return { ok: false, findings: parsed.findings };
  if (parsed.findings.length > 0) return { ok: false, findings: parsed.findings };
  const plain = toPlain(parsed.document);
  const checked = interviewDocSchema.safeParse(plain);
  if (!checked.success) {
    return {
      ok: false,
      findings: checked.error.issues.map((issue) => invalid(`not an INTERVIEW document: ${issue.path.length > 0 ? `${issue.path.join('.')}: ` : ''}${issue.message}`, issue.path.join('.') || undefined)),
    };
  }
  const doc = checked.data;
  const findings: Finding[] = [];
  doc.history.forEach((entry, index) => {
    if (entry.turn_number !== index + 1) findings.push(invalid(`history[${index}].turn_number is ${entry.turn_number}, expected ${index + 1}`, `history[${index}].turn_number`));
  });
  if (doc.phase !== phaseAt(doc.question_cursor)) findings.push(invalid(`phase is ${doc.phase} but question_cursor ${doc.question_cursor} is in phase ${phaseAt(doc.question_cursor)}`, 'phase'));
  if ((doc.status === 'complete') !== (doc.state === 'SCOUT_PENDING')) findings.push(invalid(`status ${doc.status} does not match state ${doc.state} (complete ⇔ SCOUT_PENDING)`, 'state'));
  const pathProblem = requirementsPathProblem(doc.requirements_path);
  if (pathProblem) findings.push(invalid(`requirements_path "${doc.requirements_path}" ${pathProblem}: it must be a relative path inside the INTERVIEW file's directory`, 'requirements_path'));
  if (doc.progress.answered !== doc.question_cursor) findings.push(invalid(`progress.answered is ${doc.progress.answered}, question_cursor is ${doc.question_cursor}`, 'progress.answered'));
  for (const entry of questionBank.slice(0, doc.question_cursor)) {
    if (entry.required && fieldValue(doc.spec_data, entry) === undefined) findings.push(invalid(`required answer ${entry.id} is missing although the cursor is past it`, `spec_data.${entry.phase}.${entry.field}`));
  }
  return findings.length > 0 ? { ok: false, findings } : { ok: true, doc, findings: [] };
}

/** The stored answer of `question`, or undefined when it was not answered (or undone). */
export function fieldValue(specData: SpecData, question: InterviewQuestion): string | string[] | boolean | undefined {
  return (specData[question.phase] as Record<string, string | string[] | boolean | undefined>)[question.field];
}

/** Turns that answered or skipped a question (`back` undoes and is not counted). */
export function questionsAsked(doc: Pick<InterviewDoc, 'history'>): number {
  return doc.history.filter((entry) => entry.command !== 'back').length;
}

/** What the user did with one question. */
export type InterviewTurn = { kind: 'answer'; value: string | string[] | boolean; raw: string } | { kind: 'skip' } | { kind: 'back' };

/** Options of {@link createInterviewDoc}. */
export interface CreateInterviewOptions {
  description: string;
  slug: string;
  maxQuestions: number;
  /** REQUIREMENTS.md relative to the INTERVIEW document's directory. */
  requirementsPath: string;
  /** ISO timestamp; absent = no timestamps in the document (reproducible output). */
  now?: string;
}

/** A new interview: IDLE → INTERVIEWING, cursor 0, empty spec_data and history. */
export function createInterviewDoc(options: CreateInterviewOptions): InterviewDoc {
  return {
    id: `interview-${options.slug}`,
    slug: options.slug,
    status: 'in_progress',
    state: 'INTERVIEWING',
    mode: 'deterministic',
    description: options.description,
    ...(options.now ? { created_at: options.now, updated_at: options.now } : {}),
    phase: 'overview',
    question_cursor: 0,
    max_questions: options.maxQuestions,
    progress: { answered: 0, total: questionCount, phase_number: 1, phases: interviewPhases.length },
    spec_data: { overview: {}, scope: {}, requirements: {}, interfaces: {}, stories: {}, review: {} },
    history: [],
    requirements_path: options.requirementsPath,
  };
}

/** Interprets typed text for `question`: `skip`, `back`, or an answer; a message when it cannot be used. */
export function interpretAnswer(question: InterviewQuestion, raw: string): { ok: true; turn: InterviewTurn } | { ok: false; message: string } {
  const trimmed = raw.trim();
  const word = trimmed.toLowerCase();
  if (word === 'back') return { ok: true, turn: { kind: 'back' } };
  if (word === 'skip' || (trimmed === '' && !question.required && question.kind !== 'confirm')) {
    if (question.required) return { ok: false, message: `${question.id} is required and cannot be skipped` };
    return { ok: true, turn: { kind: 'skip' } };
  }
  if (question.kind === 'confirm') {
    if (['y', 'yes', 'true'].includes(word)) return { ok: true, turn: { kind: 'answer', value: true, raw: 'yes' } };
    if (['n', 'no', 'false'].includes(word)) return { ok: true, turn: { kind: 'answer', value: false, raw: 'no' } };
    return { ok: false, message: `${question.id}: answer yes or no` };
  }
  if (trimmed === '') return { ok: false, message: `${question.id} is required: give an answer` };
  if (question.kind === 'list') {
    const items = splitList(raw);
    return { ok: true, turn: { kind: 'answer', value: items, raw: items.join('\n') } };
  }
  return { ok: true, turn: { kind: 'answer', value: trimmed, raw: trimmed } };
}

/** List answers: one item per line or separated by `;`; a leading `- ` or `* ` bullet is dropped. */
export function splitList(raw: string): string[] {
  return raw
    .split(/\r?\n|;/)
    .map((item) => item.trim().replace(/^[-*]\s+/, '').trim())
    .filter((item) => item !== '');
}

/** The next state of the document after one turn, and the minimal YAML edits that make it so. */
export interface TurnResult {
  doc: InterviewDoc;
  edits: YamlEdit[];
}

function progressOf(cursor: number): InterviewDoc['progress'] {
  return { answered: cursor, total: questionCount, phase_number: interviewPhases.indexOf(phaseAt(cursor)) + 1, phases: interviewPhases.length };
}

/**
 * Applies one turn at the cursor. An answer or skip stores the field, appends a history entry
 * and moves the cursor; `no` to the confirmation stores `confirmed: false` and keeps the cursor
 * (the user goes `back` or confirms); `back` removes the previous answer and moves the cursor back
 * (at the first question it only records the turn). History is append-only.
 */
export function applyTurn(doc: InterviewDoc, turn: InterviewTurn, now?: string): TurnResult {
  if (doc.status === 'complete') throw new Error('E39: invalid phase transition: the interview is complete');
  const question = questionBank[doc.question_cursor];
  if (!question) throw new Error(`E39: invalid phase transition: no question at cursor ${doc.question_cursor}`);
  const next = structuredClone(doc);
  const edits: YamlEdit[] = [];
  const entry: HistoryEntry = {
    turn_number: doc.history.length + 1,
    phase: question.phase,
    question_id: question.id,
    field_name: question.field,
    question: question.prompt,
    answer: turn.kind === 'answer' ? turn.raw : '',
    ...(turn.kind === 'answer' ? {} : { command: turn.kind }),
    ...(now ? { timestamp: now } : {}),
  };
  let cursor = doc.question_cursor;
  const setField = (target: InterviewQuestion, value: string | string[] | boolean | undefined) => {
    const section = next.spec_data[target.phase] as Record<string, unknown>;
    if (value === undefined) {
      delete section[target.field];
      edits.push({ path: ['spec_data', target.phase, target.field], delete: true });
    } else {
      section[target.field] = value;
      edits.push({ path: ['spec_data', target.phase, target.field], value });
    }
  };
  if (turn.kind === 'back') {
    if (cursor > 0) {
      cursor -= 1;
      const previous = questionBank[cursor]!;
      if (fieldValue(next.spec_data, previous) !== undefined) setField(previous, undefined);
    }
    // An unconfirmed summary is forgotten too: the confirmation is asked again at the end.
    if (question.kind === 'confirm' && fieldValue(next.spec_data, question) !== undefined && cursor !== doc.question_cursor) setField(question, undefined);
  } else if (turn.kind === 'skip') {
    setField(question, []);
    cursor += 1;
  } else {
    setField(question, turn.value);
    if (!(question.kind === 'confirm' && turn.value === false)) cursor += 1;
  }
  next.history.push(entry);
  edits.push({ path: ['history', doc.history.length], value: entry });
  next.question_cursor = cursor;
  next.phase = phaseAt(cursor);
  next.progress = progressOf(cursor);
  if (next.phase !== doc.phase) edits.push({ path: ['phase'], value: next.phase });
  if (cursor !== doc.question_cursor) {
    edits.push({ path: ['question_cursor'], value: cursor });
    edits.push({ path: ['progress'], value: next.progress });
  }
  if (now) {
    next.updated_at = now;
    edits.push({ path: ['updated_at'], value: now });
  }
  return { doc: next, edits };
}

/**
 * True when nothing is left to ask: every question answered, or `max_questions` of the bank's
 * questions behind the cursor (`back` and an unconfirmed summary do not use up the budget).
 */
export function isFinished(doc: InterviewDoc): boolean {
  return doc.question_cursor >= Math.min(questionCount, doc.max_questions);
}

/** True when the interview stopped at `max_questions` with questions left. */
export function isTruncated(doc: InterviewDoc): boolean {
  return doc.question_cursor < questionCount && doc.question_cursor >= doc.max_questions;
}

/** The warnings of a finished interview (max questions reached; required answers missing). */
export function completionWarnings(doc: InterviewDoc): string[] {
  if (!isTruncated(doc)) return [];
  const missing = questionBank.slice(doc.question_cursor).filter((entry) => entry.required && entry.kind !== 'confirm').map((entry) => entry.id);
  return [
    `max questions (${doc.max_questions}) reached after ${doc.question_cursor} of ${questionCount} questions: the requirements are partial` +
      (missing.length > 0 ? `; required answers missing: ${missing.join(', ')}` : '') +
      '; the summary was not confirmed',
  ];
}

/**
 * E39 completion: INTERVIEWING → SCOUT_PENDING (checked against the protocol state machine; an
 * illegal move is an internal bug and throws), status complete, warnings recorded.
 */
export function completeInterview(doc: InterviewDoc, now?: string): TurnResult {
  if (!isLegalTransition(doc.state, 'SCOUT_PENDING')) throw new Error(`E39: invalid phase transition ${doc.state} → SCOUT_PENDING`);
  const next = structuredClone(doc);
  const warnings = completionWarnings(doc);
  next.status = 'complete';
  next.state = 'SCOUT_PENDING';
  const edits: YamlEdit[] = [
    { path: ['status'], value: 'complete' },
    { path: ['state'], value: 'SCOUT_PENDING' },
  ];
  if (warnings.length > 0) {
    next.warnings = warnings;
    edits.push({ path: ['warnings'], value: warnings });
  }
  if (now) {
    next.updated_at = now;
    edits.push({ path: ['updated_at'], value: now });
  }
  return { doc: next, edits };
}

/** Records a model's follow-up question for `phase` before it is asked (so a resume asks it again). */
export function setPendingFollowUp(doc: InterviewDoc, phase: InterviewPhase, question: string, now?: string): TurnResult {
  if (doc.status === 'complete' || doc.pending_follow_up) throw new Error('E39: invalid phase transition: a follow-up is pending or the interview is complete');
  const next = structuredClone(doc);
  next.pending_follow_up = { phase, question };
  const edits: YamlEdit[] = [{ path: ['pending_follow_up'], value: next.pending_follow_up }];
  if (now) {
    next.updated_at = now;
    edits.push({ path: ['updated_at'], value: now });
  }
  return { doc: next, edits };
}

/** Answers (or skips) the pending follow-up: appended to `follow_ups` and to the history; the cursor stays. */
export function answerFollowUp(doc: InterviewDoc, turn: Exclude<InterviewTurn, { kind: 'back' }>, now?: string): TurnResult {
  const pending = doc.pending_follow_up;
  if (!pending || doc.status === 'complete') throw new Error('E39: invalid phase transition: no follow-up is pending');
  const next = structuredClone(doc);
  const answer = turn.kind === 'answer' ? String(turn.raw) : '';
  const entry: FollowUp = { phase: pending.phase, question: pending.question, answer, ...(turn.kind === 'skip' ? { command: 'skip' as const } : {}) };
  const history: HistoryEntry = {
    turn_number: doc.history.length + 1,
    phase: pending.phase,
    question_id: `${pending.phase}.follow_up`,
    field_name: 'follow_ups',
    question: pending.question,
    answer,
    ...(turn.kind === 'skip' ? { command: 'skip' as const } : {}),
    ...(now ? { timestamp: now } : {}),
  };
  next.follow_ups = [...(doc.follow_ups ?? []), entry];
  next.history.push(history);
  delete next.pending_follow_up;
  const edits: YamlEdit[] = [
    { path: ['history', doc.history.length], value: history },
    { path: ['pending_follow_up'], delete: true },
    doc.follow_ups ? { path: ['follow_ups', doc.follow_ups.length], value: entry } : { path: ['follow_ups'], value: [entry] },
  ];
  if (now) {
    next.updated_at = now;
    edits.push({ path: ['updated_at'], value: now });
  }
  return { doc: next, edits };
}

/** YAML text of a new document (2-space indentation, keys in schema order). */
export function renderInterviewDoc(doc: InterviewDoc): string {
  const header = `# E39 interview state (polywave interview). Resume: polywave interview --resume <this file>\n`;
  // An empty document edited into shape: the same renderer as every later edit.
  const body = applyEdits('{}\n', [{ path: [], value: doc }], { indent: 2, indentSequences: true });
  return header + body;
}

/** Applies a turn's edits to the current text, keeping every other byte (comments, layout). */
export function editInterviewText(text: string, edits: ReadonlyArray<YamlEdit>): string {
  return applyEdits(text, edits);
}

const placeholder = '_Not answered._';

/**
 * An answer as Markdown text that cannot open a heading: every line that would start an ATX
 * heading (`#`) or be a setext underline (`===`, `---`) gets a backslash, so an answer with
 * newlines and `## ` cannot add sections to REQUIREMENTS.md.
 */
export function escapeAnswer(text: string): string {
  return text
    .split(/\r?\n/)
    .map((line) => (/^\s{0,3}(#|[=-]+\s*$)/.test(line) ? `\\${line.trimStart()}` : line))
    .join('\n');
}

/** A one-line answer (a title, a list item): newlines become spaces, then {@link escapeAnswer}. */
function oneLine(text: string): string {
  return escapeAnswer(text.replace(/\s*\r?\n\s*/g, ' ').trim());
}

function bullets(items: readonly string[] | undefined, prefix?: string): string {
  if (!items || items.length === 0) return placeholder;
  return items.map((item, index) => `- ${prefix ? `${prefix}-${index + 1}: ` : ''}${oneLine(item)}`).join('\n');
}

/**
 * REQUIREMENTS.md from the answers: a title and the six sections of the six phases, then
 * `## Warnings` when the interview stopped at `max_questions`.
 */
export function compileRequirements(doc: InterviewDoc, interviewFile: string): string {
  const { overview, scope, requirements, interfaces, stories, review } = doc.spec_data;
  const followUps = (phase: InterviewPhase): string[] => {
    const asked = (doc.follow_ups ?? []).filter((entry) => entry.phase === phase);
    return asked.length === 0 ? [] : [`### Follow-up questions\n\n${asked.map((entry) => `- Q: ${oneLine(entry.question)}\n  A: ${entry.answer.trim() ? escapeAnswer(entry.answer.trim()).replace(/\n/g, '\n  ') : placeholder}`).join('\n')}`];
  };
  const title = oneLine(overview.title?.trim() || doc.description);
  const warnings = doc.warnings ?? completionWarnings(doc);
  const parts = [
    `# Requirements: ${title}`,
    `<!-- Compiled by polywave interview (E39) from ${interviewFile}. Input for polywave run-scout / polywave run. -->`,
    `> ${escapeAnswer(doc.description).replace(/\n/g, '\n> ')}`,
    `## 1. Overview`,
    `### Goal\n\n${overview.goal?.trim() ? escapeAnswer(overview.goal.trim()) : placeholder}`,
    `### Success metrics\n\n${bullets(overview.success_metrics)}`,
    `### Non-goals\n\n${bullets(overview.non_goals)}`,
    ...followUps('overview'),
    `## 2. Scope`,
    `### In scope\n\n${bullets(scope.in_scope)}`,
    `### Out of scope\n\n${bullets(scope.out_of_scope)}`,
    `### Assumptions\n\n${bullets(scope.assumptions)}`,
    ...followUps('scope'),
    `## 3. Requirements`,
    `### Functional\n\n${bullets(requirements.functional, 'FR')}`,
    `### Non-functional\n\n${bullets(requirements.non_functional, 'NFR')}`,
    `### Constraints\n\n${bullets(requirements.constraints)}`,
    ...followUps('requirements'),
    `## 4. Interfaces`,
    `### Data models\n\n${bullets(interfaces.data_models)}`,
    `### APIs\n\n${bullets(interfaces.apis)}`,
    `### External dependencies\n\n${bullets(interfaces.external)}`,
    ...followUps('interfaces'),
    `## 5. User stories`,
    bullets(stories.stories, 'US'),
    ...followUps('stories'),
    `## 6. Review`,
    `### Open questions\n\n${bullets(review.open_questions)}`,
    `Confirmed: ${review.confirmed === true ? 'yes' : 'no'}`,
  ];
  if (warnings.length > 0) parts.push(`## Warnings\n\n${warnings.map((warning) => `- ${warning}`).join('\n')}`);
  return `${parts.join('\n\n')}\n`;
}

/** The phase names, re-exported for callers that only need the document module. */
export type { InterviewPhase };
