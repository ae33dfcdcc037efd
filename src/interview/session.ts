/**
 * E39: one interview session — ask the question at the cursor, save the INTERVIEW document after
 * every answer (locked, atomic rename, format-preserving edit, validated before it is written),
 * and at the end compile REQUIREMENTS.md and move INTERVIEWING → SCOUT_PENDING.
 */
import { mkdir, readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import { PolywaveError } from '../errors/polywave-error.js';
import { updateFileLocked, writeFileAtomic } from '../store/locked-write.js';
import type { FollowUpSuggester } from './follow-ups.js';
import {
  answerFollowUp,
  applyTurn,
  compileRequirements,
  completeInterview,
  completionWarnings,
  editInterviewText,
  fieldValue,
  interpretAnswer,
  interviewInvalidCode,
  interviewSaveFailedCode,
  isFinished,
  parseInterviewDoc,
  questionsAsked,
  renderInterviewDoc,
  requirementsPathProblem,
  requirementsWriteFailedCode,
  setPendingFollowUp,
  type InterviewDoc,
  type InterviewTurn,
  type TurnResult,
} from './interview-doc.js';
import { interviewPhases, phaseNumber, phaseTitles, questionBank, questionCount, questionNumberInPhase, questionsInPhase, type InterviewPhase, type InterviewQuestion } from './questions.js';

/** Where the interview stands when a question is asked (for the progress line). */
export interface QuestionContext {
  /** Index of the question in the bank. */
  cursor: number;
  total: number;
  phaseNumber: number;
  phaseCount: number;
  phaseTitle: string;
  numberInPhase: number;
  questionsInPhase: number;
  /** The answer stored for this question, if any (a `no` to the confirmation). */
  current?: string | string[] | boolean | undefined;
  /** Why the previous input for this question was refused. */
  error?: string;
  /** A short summary of the answers, shown before the confirmation. */
  summary?: string;
  /** A model's follow-up question (`--model`), not one of the bank. */
  followUp?: boolean;
}

/** Where answers come from: a terminal, piped stdin, or an answers file. */
export interface AnswerSource {
  /** The raw answer, or undefined at the end of input (stdin closed, prompt cancelled, answers file exhausted). */
  ask(question: InterviewQuestion, context: QuestionContext): Promise<string | undefined>;
  /** False for an answers file: a refused or unconfirmed answer cannot be asked again. */
  interactive: boolean;
}

/** What the session reports as it goes (the CLI prints it). */
export type SessionEvent =
  | { type: 'answer-saved'; turn: number; question: InterviewQuestion; cursor: number; command?: 'skip' | 'back' }
  | { type: 'answer-refused'; question: InterviewQuestion; message: string }
  | { type: 'phase-started'; phase: string; phaseNumber: number }
  | { type: 'follow-up-saved'; phase: string; command?: 'skip' };

export interface SessionOptions {
  /** The INTERVIEW document (absolute). */
  docPath: string;
  source: AnswerSource;
  /** ISO timestamp for history/updated_at; undefined = no timestamps (reproducible output). */
  now: () => string | undefined;
  onEvent?: (event: SessionEvent) => void;
  /** `--model`: suggests one follow-up question after each phase but the review (off when absent). */
  followUps?: FollowUpSuggester;
}

/** How a session ended. */
export interface SessionResult {
  outcome: 'complete' | 'input-closed' | 'not-confirmed';
  doc: InterviewDoc;
  /** REQUIREMENTS.md (absolute), once compiled. */
  requirementsPath?: string;
  warnings: string[];
}

/** Reads and validates an INTERVIEW document; a file that is not one is INTERVIEW_INVALID (exit 2). */
export function loadInterviewText(text: string, file: string): InterviewDoc {
  const parsed = parseInterviewDoc(text);
  if (!parsed.ok) {
    const first = parsed.findings[0]!;
    throw new PolywaveError({ code: first.code === interviewInvalidCode ? interviewInvalidCode : first.code, message: `${file}: ${first.message}${parsed.findings.length > 1 ? ` (+${parsed.findings.length - 1} more)` : ''}`, findings: parsed.findings });
  }
  return parsed.doc;
}

/** Creates the INTERVIEW document; refuses when one exists already (resume it instead). */
export async function createInterviewFile(docPath: string, doc: InterviewDoc): Promise<string> {
  const text = renderInterviewDoc(doc);
  await saveLocked(docPath, (current) => {
    if (current !== '') {
      throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${docPath} exists: resume it with polywave interview --resume ${docPath}, or delete it to start over` });
    }
    return text;
  }, true);
  return text;
}

async function saveLocked(docPath: string, update: (current: string) => string, allowMissing = false): Promise<string> {
  try {
    return (await updateFileLocked(docPath, update, { allowMissing })).text;
  } catch (error) {
    if (PolywaveError.isInstance(error)) throw error;
    throw new PolywaveError({ code: interviewSaveFailedCode, message: `cannot save ${docPath}: ${error instanceof Error ? error.message : String(error)}`, cause: error });
  }
}

/**
 * Applies one step to the document on disk: under the file's lock, the current text is parsed,
 * `step` computes the change from what is on disk (not from memory, so two sessions cannot
 * interleave silently), the edit keeps every other byte, and the result must validate before
 * the atomic rename.
 */
async function saveStep(docPath: string, expectedCursor: number, step: (doc: InterviewDoc) => TurnResult, expectedHistory?: number): Promise<InterviewDoc> {
  let saved: InterviewDoc | undefined;
  await saveLocked(docPath, (current) => {
    const doc = loadInterviewText(current, docPath);
    if (doc.question_cursor !== expectedCursor || doc.status === 'complete' || (expectedHistory !== undefined && doc.history.length !== expectedHistory)) {
      throw new PolywaveError({ code: interviewSaveFailedCode, message: `${docPath} was changed by another process (cursor ${doc.question_cursor}, expected ${expectedCursor}); resume it again` });
    }
    const result = step(doc);
    const next = editInterviewText(current, result.edits);
    const check = parseInterviewDoc(next);
    if (!check.ok) throw new PolywaveError({ code: interviewSaveFailedCode, message: `internal error: the edited interview does not validate: ${check.findings[0]!.message}` });
    saved = check.doc;
    return next;
  });
  return saved!;
}

function summaryOf(doc: InterviewDoc): string {
  const lines: string[] = [];
  for (const question of questionBank) {
    if (question.kind === 'confirm') continue;
    const value = fieldValue(doc.spec_data, question);
    const shown = Array.isArray(value) ? (value.length === 0 ? '—' : value.join('; ')) : value === undefined ? '—' : String(value);
    lines.push(`${question.id}: ${shown}`);
  }
  for (const entry of doc.follow_ups ?? []) lines.push(`${entry.phase}.follow_up: ${entry.question} → ${entry.answer.trim() || '—'}`);
  return lines.join('\n');
}

/** Context of the question at `cursor`. */
export function contextAt(doc: InterviewDoc, cursor: number): QuestionContext {
  const question = questionBank[cursor]!;
  const current = fieldValue(doc.spec_data, question);
  return {
    cursor,
    total: questionCount,
    phaseNumber: phaseNumber(question.phase),
    phaseCount: interviewPhases.length,
    phaseTitle: phaseTitles[question.phase],
    numberInPhase: questionNumberInPhase(cursor),
    questionsInPhase: questionsInPhase(question.phase),
    ...(current !== undefined ? { current } : {}),
    ...(question.kind === 'confirm' ? { summary: summaryOf(doc) } : {}),
  };
}

/**
 * Runs the interview from the document's cursor until it is finished (all questions, or
 * `max_questions`), the input ends (state saved — the caller prints the resume command), or a
 * non-interactive source does not confirm the summary. A finished interview gets REQUIREMENTS.md
 * and the INTERVIEWING → SCOUT_PENDING transition.
 */
export async function runInterviewSession(doc: InterviewDoc, options: SessionOptions): Promise<SessionResult> {
  let current = doc;
  let lastPhase: string | undefined;
  const suggested = new Set<string>();
  while (!isFinished(current)) {
    if (current.pending_follow_up) {
      const answered = await askFollowUp(current, options);
      if (answered === undefined) return { outcome: 'input-closed', doc: current, warnings: [] };
      current = answered;
      continue;
    }
    const finishedPhase = options.followUps ? phaseBefore(current) : undefined;
    if (finishedPhase && !suggested.has(finishedPhase) && !(current.follow_ups ?? []).some((entry) => entry.phase === finishedPhase)) {
      suggested.add(finishedPhase);
      const question = await options.followUps!.suggest(finishedPhase, current);
      if (question) current = await saveStep(options.docPath, current.question_cursor, (onDisk) => setPendingFollowUp(onDisk, finishedPhase, question, options.now()), current.history.length);
      continue;
    }
    const question = questionBank[current.question_cursor]!;
    if (question.phase !== lastPhase) {
      lastPhase = question.phase;
      options.onEvent?.({ type: 'phase-started', phase: question.phase, phaseNumber: phaseNumber(question.phase) });
    }
    let error: string | undefined;
    let turn: InterviewTurn | undefined;
    while (turn === undefined) {
      const raw = await options.source.ask(question, { ...contextAt(current, current.question_cursor), ...(error ? { error } : {}) });
      if (raw === undefined) return { outcome: 'input-closed', doc: current, warnings: [] };
      const interpreted = interpretAnswer(question, raw);
      if (interpreted.ok) turn = interpreted.turn;
      else {
        error = interpreted.message;
        options.onEvent?.({ type: 'answer-refused', question, message: interpreted.message });
        if (!options.source.interactive) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `answer for ${question.id}: ${interpreted.message}` });
      }
    }
    const chosen = turn;
    const cursor = current.question_cursor;
    current = await saveStep(options.docPath, cursor, (onDisk) => applyTurn(onDisk, chosen, options.now()));
    options.onEvent?.({ type: 'answer-saved', turn: current.history.length, question, cursor: current.question_cursor, ...(chosen.kind === 'answer' ? {} : { command: chosen.kind }) });
    if (chosen.kind === 'answer' && question.kind === 'confirm' && chosen.value === false && !options.source.interactive) {
      return { outcome: 'not-confirmed', doc: current, warnings: [] };
    }
  }
  return finishInterview(current, options);
}

/** The phase just finished when the cursor is at the first question of a later phase (never the review). */
function phaseBefore(doc: InterviewDoc): InterviewPhase | undefined {
  const cursor = doc.question_cursor;
  if (cursor === 0 || cursor >= questionCount) return undefined;
  const previous = questionBank[cursor - 1]!.phase;
  return previous !== questionBank[cursor]!.phase && previous !== 'review' ? previous : undefined;
}

/** Asks the pending follow-up; the saved document, or undefined at the end of input. */
async function askFollowUp(doc: InterviewDoc, options: SessionOptions): Promise<InterviewDoc | undefined> {
  const pending = doc.pending_follow_up!;
  const question: InterviewQuestion = { id: `${pending.phase}.follow_up`, phase: pending.phase, field: 'follow_ups', kind: 'text', required: false, prompt: pending.question, hint: 'a follow-up question from the model' };
  let error: string | undefined;
  for (;;) {
    const raw = await options.source.ask(question, {
      cursor: doc.question_cursor,
      total: questionCount,
      phaseNumber: phaseNumber(pending.phase),
      phaseCount: interviewPhases.length,
      phaseTitle: phaseTitles[pending.phase],
      numberInPhase: questionsInPhase(pending.phase),
      questionsInPhase: questionsInPhase(pending.phase),
      followUp: true,
      ...(error ? { error } : {}),
    });
    if (raw === undefined) return undefined;
    const interpreted = interpretAnswer(question, raw);
    if (interpreted.ok && interpreted.turn.kind !== 'back') {
      const turn = interpreted.turn;
      const saved = await saveStep(options.docPath, doc.question_cursor, (onDisk) => answerFollowUp(onDisk, turn, options.now()), doc.history.length);
      options.onEvent?.({ type: 'follow-up-saved', phase: pending.phase, ...(turn.kind === 'skip' ? { command: 'skip' as const } : {}) });
      return saved;
    }
    error = interpreted.ok ? '"back" is not available for a follow-up question: answer it or leave it empty' : interpreted.message;
    if (!options.source.interactive) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `follow-up: ${error}` });
  }
}

/**
 * E39 output contract: REQUIREMENTS.md is written first, then the document moves to
 * `status: complete`, `state: SCOUT_PENDING`. A crash between the two leaves a finished but
 * in-progress document; resuming it compiles again.
 */
export async function finishInterview(doc: InterviewDoc, options: Pick<SessionOptions, 'docPath' | 'now'>): Promise<SessionResult> {
  const warnings = completionWarnings(doc);
  const own = await unclaimedRequirementsPath(doc, options.docPath);
  const target = own.path === doc.requirements_path ? doc : { ...doc, requirements_path: own.path };
  const requirementsPath = await writeRequirements(target, options.docPath);
  const completed = await saveStep(options.docPath, doc.question_cursor, (onDisk) => {
    const result = completeInterview(onDisk, options.now());
    if (own.path === onDisk.requirements_path) return result;
    return { doc: { ...result.doc, requirements_path: own.path }, edits: [...result.edits, { path: ['requirements_path'], value: own.path }] };
  });
  return { outcome: 'complete', doc: completed, requirementsPath, warnings: own.note ? [...warnings, own.note] : warnings };
}

/**
 * Where this interview's REQUIREMENTS file may go without destroying another's: the document's
 * `requirements_path` when it is absent or was compiled from this same INTERVIEW file; otherwise
 * (a hand-written REQUIREMENTS.md, or another interview's) `<name>-<slug>.md` beside it, with a note.
 * When that one is taken too, nothing is written (N090).
 */
async function unclaimedRequirementsPath(doc: InterviewDoc, docPath: string): Promise<{ path: string; note?: string }> {
  const ownedBy = async (relative: string): Promise<boolean | undefined> => {
    const absolute = await safeRequirementsPath(docPath, relative);
    const text = await readFile(absolute, 'utf8').catch(() => undefined);
    if (text === undefined) return undefined;
    const source = (path.relative(path.dirname(absolute), docPath) || path.basename(docPath)).split(path.sep).join('/');
    return text.includes(`<!-- Compiled by polywave interview (E39) from ${source}.`);
  };
  const first = await ownedBy(doc.requirements_path);
  if (first !== false) return { path: doc.requirements_path };
  const alternative = doc.requirements_path.replace(/(\.md)?$/i, `-${doc.slug}.md`);
  const second = await ownedBy(alternative);
  if (second === false) {
    throw new PolywaveError({ code: requirementsWriteFailedCode, message: `${doc.requirements_path} and ${alternative} both exist and were not compiled from this interview: nothing overwritten; set requirements_path in the INTERVIEW file to a free path` });
  }
  return { path: alternative, note: `${doc.requirements_path} exists and was not compiled from this interview: kept it, wrote ${alternative}` };
}

/** REQUIREMENTS.md of `doc` (its own answers; what `run --interview` gives the Scout) and where it goes. */
export async function requirementsOf(doc: InterviewDoc, docPath: string): Promise<{ path: string; text: string }> {
  const requirementsPath = await safeRequirementsPath(docPath, doc.requirements_path);
  const warnings = doc.warnings ?? completionWarnings(doc);
  const relativeDoc = path.relative(path.dirname(requirementsPath), docPath) || path.basename(docPath);
  return { path: requirementsPath, text: compileRequirements({ ...doc, ...(warnings.length > 0 ? { warnings } : {}) }, relativeDoc.split(path.sep).join('/')) };
}

/** Compiles and writes REQUIREMENTS.md (a safe `requirements_path` only); its absolute path. */
export async function writeRequirements(doc: InterviewDoc, docPath: string): Promise<string> {
  const { path: requirementsPath, text } = await requirementsOf(doc, docPath);
  try {
    await mkdir(path.dirname(requirementsPath), { recursive: true });
    await checkInside(path.dirname(docPath), path.dirname(requirementsPath), doc.requirements_path);
    await writeFileAtomic(requirementsPath, text);
  } catch (error) {
    if (PolywaveError.isInstance(error) && error.code === interviewInvalidCode) throw error;
    const reason = PolywaveError.isInstance(error) ? error.message.replace(/^cannot write [^:]*: /, '') : error instanceof Error ? error.message : String(error);
    throw new PolywaveError({ code: requirementsWriteFailedCode, message: `cannot write ${requirementsPath}: ${reason}`, cause: error });
  }
  return requirementsPath;
}

function isInside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative) && !relative.split(path.sep).some((segment) => segment.toLowerCase() === '.git'));
}

/** Refuses when `dir` (existing) resolves, through symbolic links, outside `root` or into `.git/`. */
async function checkInside(root: string, dir: string, shown: string): Promise<void> {
  const [realRoot, realDir] = await Promise.all([realpath(root), realpath(dir)]);
  if (!isInside(realRoot, realDir)) {
    throw new PolywaveError({ code: interviewInvalidCode, message: `requirements_path "${shown}" resolves outside the INTERVIEW file's directory (through a symbolic link): nothing written` });
  }
}

/**
 * Where REQUIREMENTS.md goes: `requirements_path` comes from a file that may be committed by
 * someone else, so it must be a relative path below the INTERVIEW file's directory, and the
 * nearest existing directory on the way must not lead outside it through a symbolic link
 * (checked before any directory is created; checked again after).
 */
export async function safeRequirementsPath(docPath: string, requirementsPath: string): Promise<string> {
  const problem = requirementsPathProblem(requirementsPath);
  if (problem) throw new PolywaveError({ code: interviewInvalidCode, message: `requirements_path "${requirementsPath}" ${problem}: it must be a relative path inside the INTERVIEW file's directory; nothing written` });
  const docDir = path.dirname(docPath);
  const target = path.resolve(docDir, requirementsPath);
  let existing = path.dirname(target);
  for (;;) {
    try {
      await realpath(existing);
      break;
    } catch {
      if (existing === docDir || path.dirname(existing) === existing) break;
      existing = path.dirname(existing);
    }
  }
  await checkInside(docDir, existing, requirementsPath);
  return target;
}

/** Questions asked so far (for messages). */
export { questionsAsked };
