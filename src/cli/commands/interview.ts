import { existsSync } from 'node:fs';
import { lstat, mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { PolywaveError } from '../../errors/polywave-error.js';
import { answersFileSource, checkAnswersCover, parseAnswers } from '../../interview/answers-file.js';
import { createInterviewDoc, defaultMaxQuestions, interviewModes, parseInterviewDoc, questionsAsked, requirementsPathProblem, type InterviewDoc } from '../../interview/interview-doc.js';
import { questionBank, questionCount, type InterviewQuestion } from '../../interview/questions.js';
import { createInterviewFile, loadInterviewText, requirementsOf, runInterviewSession, writeRequirements, type AnswerSource, type QuestionContext, type SessionResult } from '../../interview/session.js';
import type { FollowUpSuggester } from '../../interview/follow-ups.js';
import { readTextFile } from '../../store/read-text.js';
import { unsafeNoSandboxFrom } from '../sandbox-option.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { escapeTerminalText } from '../terminal-text.js';

const invalidInput = 'X001_INVALID_INPUT';

function stringOption(options: Record<string, unknown>, name: string): string | undefined {
  const value = options[name];
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/** Kebab-case slug of a description (at most 40 characters, cut at a word boundary). */
export function interviewSlug(description: string): string {
  const words = description
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  if (words.length <= 40) return words || 'feature';
  const cut = words.slice(0, 40);
  const boundary = cut.lastIndexOf('-');
  return (words[40] === '-' ? cut : boundary >= 20 ? cut.slice(0, boundary) : cut).replace(/-+$/, '') || 'feature';
}

/** The timestamp source: SOURCE_DATE_EPOCH (reproducible builds convention) pins it; `none` omits timestamps. */
function clockFrom(io: CommandIo): () => string | undefined {
  const epoch = io.env.SOURCE_DATE_EPOCH?.trim();
  if (epoch === undefined || epoch === '') return () => io.now().toISOString();
  if (epoch === 'none') return () => undefined;
  if (!/^\d+$/.test(epoch)) throw new PolywaveError({ code: invalidInput, message: `SOURCE_DATE_EPOCH must be seconds since 1970 (or "none"), got "${epoch}"` });
  const fixed = new Date(Number(epoch) * 1000).toISOString();
  return () => fixed;
}

async function readInput(file: string, what: string): Promise<string> {
  try {
    return await readTextFile(file);
  } catch (error) {
    const errno = ((error as { cause?: NodeJS.ErrnoException }).cause ?? (error as NodeJS.ErrnoException)).code;
    const message = PolywaveError.isInstance(error) ? error.message : error instanceof Error ? error.message : String(error);
    const reason =
      errno === 'ENOENT' ? 'ENOENT: no such file' : errno === 'ENOTDIR' ? 'ENOTDIR: a parent is not a directory' : message.split(file).join('').replace(/^[\s:]*(cannot read)?[\s:]*/, '').trim() || message;
    throw new PolywaveError({ code: 'X002_FILE_READ', message: `cannot read ${what} ${file}: ${reason}` });
  }
}

/**
 * An INTERVIEW file that is a symbolic link is refused: the atomic save (write a temporary file,
 * rename it) would replace the link with a regular file and the link's target would silently
 * stop changing.
 */
async function refuseSymlink(file: string, shown: string): Promise<void> {
  const info = await lstat(file).catch(() => undefined);
  if (info?.isSymbolicLink()) {
    throw new PolywaveError({ code: invalidInput, message: `${shown} is a symbolic link: resume the file it points to instead (a save would replace the link)` });
  }
}

function shellQuote(value: string): string {
  return /^[\w./@:+-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

function displayPath(io: CommandIo, file: string): string {
  const relative = path.relative(io.cwd, file);
  return relative !== '' && !relative.startsWith('..') && !path.isAbsolute(relative) ? relative : file;
}

function progressLine(context: QuestionContext): string {
  if (context.followUp) return `Phase ${context.phaseNumber}/${context.phaseCount} · ${context.phaseTitle} · follow-up from the model`;
  return `Phase ${context.phaseNumber}/${context.phaseCount} · ${context.phaseTitle} · question ${context.numberInPhase}/${context.questionsInPhase} (${context.cursor + 1}/${context.total})`;
}

function currentText(value: QuestionContext['current']): string | undefined {
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value.join('\n') : typeof value === 'boolean' ? (value ? 'yes' : 'no') : value;
}

/**
 * Piped stdin (not a terminal): one line per answer, list items separated by `;`. The prompt goes
 * to stderr; the end of input ends the session (state saved, exit 2).
 */
async function lineSource(io: CommandIo): Promise<{ source: AnswerSource; close: () => void }> {
  const { createInterface } = await import('node:readline');
  const reader = createInterface({ input: io.stdin ?? process.stdin, terminal: false, crlfDelay: Infinity });
  const lines = reader[Symbol.asyncIterator]();
  return {
    source: {
      interactive: true,
      ask: async (question, context) => {
        if (context.error) io.stderr(`  ! ${context.error}\n`);
        if (context.summary && !context.error) io.stderr(`Summary:\n${context.summary.replace(/^/gm, '  ')}\n`);
        io.stderr(`[${progressLine(context)}] ${question.prompt} (${question.hint})\n> `);
        const next = await lines.next();
        return next.done ? undefined : (next.value as string);
      },
    },
    close: () => reader.close(),
  };
}

/**
 * What the terminal prompt shows of a question, escaped: @clack/prompts writes to the terminal itself
 * (not through the CLI's escaping io), and a follow-up question is a model's text, a summary or a
 * resumed answer the INTERVIEW file's (X21-07: no control sequence of theirs reaches the terminal raw).
 */
export function terminalQuestionText(question: InterviewQuestion, context: QuestionContext): { phase: string; message: string; placeholder: string; initialValue?: string; summary?: string; error?: string } {
  const initialValue = currentText(context.current);
  return {
    phase: escapeTerminalText(`Phase ${context.phaseNumber}/${context.phaseCount} · ${context.phaseTitle}`),
    message: escapeTerminalText(`${question.prompt}\n  ${progressLine(context)}${question.required ? '' : ' · empty = skip'}${context.followUp ? '' : ' · "back" = previous question'}`),
    placeholder: escapeTerminalText(question.hint),
    ...(initialValue !== undefined ? { initialValue: escapeTerminalText(initialValue) } : {}),
    ...(context.summary ? { summary: escapeTerminalText(context.summary) } : {}),
    ...(context.error ? { error: escapeTerminalText(context.error) } : {}),
  };
}

/** A terminal: @clack/prompts (arrow-key choices, multi-line answers), loaded only here. */
async function terminalSource(slug: string): Promise<{ source: AnswerSource; close: () => void }> {
  const prompts = await import('@clack/prompts');
  const output = process.stderr;
  prompts.intro(escapeTerminalText(`polywave interview · ${slug}`), { output });
  let lastPhase = '';
  const ask = async (question: InterviewQuestion, context: QuestionContext): Promise<string | undefined> => {
    const shown = terminalQuestionText(question, context);
    if (context.phaseTitle !== lastPhase) {
      lastPhase = context.phaseTitle;
      prompts.log.step(shown.phase, { output });
    }
    if (shown.error) prompts.log.warn(shown.error, { output });
    const message = shown.message;
    let answer: string | symbol;
    if (question.kind === 'confirm') {
      if (shown.summary) prompts.note(shown.summary, 'Summary', { output });
      answer = await prompts.select({
        message,
        output,
        options: [
          { value: 'yes', label: 'Yes — compile REQUIREMENTS.md' },
          { value: 'back', label: 'Back — revisit the last answer' },
          { value: 'no', label: 'No — keep the interview open' },
        ],
      });
    } else {
      const common = { message, output, placeholder: shown.placeholder, ...(shown.initialValue !== undefined ? { initialValue: shown.initialValue } : {}) };
      answer = question.kind === 'list' ? await prompts.multiline(common) : await prompts.text(common);
    }
    if (prompts.isCancel(answer)) return undefined;
    return typeof answer === 'string' ? answer : undefined;
  };
  return { source: { interactive: true, ask }, close: () => undefined };
}

/**
 * `--model M`: follow-up questions suggested by a model after each phase (off by default). Not
 * with --non-interactive / --answers: that run stays reproducible. Credentials are checked before
 * the first question.
 */
async function followUpsFrom(options: Record<string, unknown>, io: CommandIo, projectRoot: string, nonInteractive: boolean): Promise<FollowUpSuggester | undefined> {
  const model = stringOption(options, 'model');
  if (!model) return undefined;
  if (nonInteractive) {
    io.stderr('interview: --model is not used with --non-interactive or --answers (the run stays reproducible)\n');
    return undefined;
  }
  // Issue 13 (N4): the one launch pre-check — credentials, the backend's package, the model server.
  const { requireAgentsReady } = await import('../../agents/model-preflight.js');
  await requireAgentsReady([{ role: 'the interview follow-ups', model }], io.env);
  const { modelFollowUps } = await import('../../interview/follow-ups.js');
  return modelFollowUps({
    model,
    cwd: projectRoot,
    env: io.env,
    ...(unsafeNoSandboxFrom(options, io) ? { unsafeNoSandbox: true } : {}),
    onError: (message) => io.stderr(`interview: no follow-up from the model (${message.split('\n')[0]})\n`),
  });
}

/** What `interview` reports (stdout JSON with --json; the run chain reads it). */
export interface InterviewOutcome {
  code: CommandResult;
  slug?: string;
  /** REQUIREMENTS.md (absolute) when the interview completed. */
  requirementsPath?: string;
  /** Its text compiled from this interview's own answers (what the Scout plans from; not read back from the shared file). */
  requirements?: string;
}

function resultJson(io: CommandIo, docPath: string, result: SessionResult | { outcome: 'complete'; doc: InterviewDoc; requirementsPath: string; warnings: string[] }) {
  const doc = result.doc;
  return {
    slug: doc.slug,
    status: doc.status,
    state: doc.state,
    outcome: result.outcome,
    interview_path: displayPath(io, docPath),
    ...(result.requirementsPath ? { requirements_path: displayPath(io, result.requirementsPath) } : {}),
    questions_asked: questionsAsked(doc),
    question_cursor: doc.question_cursor,
    total_questions: questionCount,
    partial: result.outcome === 'complete' && doc.question_cursor < questionCount,
    warnings: doc.warnings ?? result.warnings,
    ...(doc.status === 'in_progress' ? { next_question: nextQuestion(doc) } : {}),
  };
}

/** What a resume asks first (for a caller that relays the questions, e.g. an agent skill). */
function nextQuestion(doc: InterviewDoc): { id: string; phase: string; prompt: string; hint: string; required: boolean; kind: string } | undefined {
  if (doc.pending_follow_up) return { id: `${doc.pending_follow_up.phase}.follow_up`, phase: doc.pending_follow_up.phase, prompt: doc.pending_follow_up.question, hint: 'a follow-up question from the model', required: false, kind: 'text' };
  const question = questionBank[doc.question_cursor];
  return question ? { id: question.id, phase: question.phase, prompt: question.prompt, hint: question.hint, required: question.required, kind: question.kind } : undefined;
}

/**
 * Runs `interview` and reports the outcome. `run --interview` calls this with the run's options
 * (the description is the run's feature).
 */
export async function conductInterview(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<InterviewOutcome> {
  const mode = stringOption(options, 'mode') ?? 'deterministic';
  if (!(interviewModes as readonly string[]).includes(mode)) {
    throw new PolywaveError({ code: invalidInput, message: `unknown --mode "${mode}": the interview mode is ${interviewModes.join(' | ')} (llm is not implemented)` });
  }
  const resume = stringOption(options, 'resume');
  const answersFile = stringOption(options, 'answers');
  const description = (args[0] ?? '').trim();
  const now = clockFrom(io);
  const projectRoot = path.resolve(io.cwd, stringOption(options, 'projectPath') ?? stringOption(options, 'repoDir') ?? '.');
  const maxQuestions = options.maxQuestions === undefined ? undefined : Number(options.maxQuestions);
  if (maxQuestions !== undefined && (!Number.isInteger(maxQuestions) || maxQuestions < 1)) throw new PolywaveError({ code: invalidInput, message: `--max-questions must be at least 1, got ${String(options.maxQuestions)}` });

  // Everything that can be refused is checked before the first write (bad input changes nothing).
  const answers = answersFile ? parseAnswers(await readInput(path.resolve(io.cwd, answersFile), 'answers file'), answersFile) : undefined;
  let docPath: string;
  let doc: InterviewDoc;
  let existing = false;
  if (resume) {
    if (description !== '') throw new PolywaveError({ code: invalidInput, message: 'give either a description (new interview) or --resume <file>, not both' });
    for (const flag of ['maxQuestions', 'docsDir', 'output'] as const) {
      if (options[flag] !== undefined) throw new PolywaveError({ code: invalidInput, message: `--${flag.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)} applies to a new interview; a resumed one keeps its own` });
    }
    docPath = path.resolve(io.cwd, resume);
    await refuseSymlink(docPath, resume);
    doc = loadInterviewText(await readInput(docPath, 'interview file'), resume);
    existing = true;
  } else {
    if (description === '') throw new PolywaveError({ code: invalidInput, message: 'interview needs a description: polywave interview "<description>" (or --resume docs/INTERVIEW-<slug>.yaml)' });
    const docsDir = path.resolve(projectRoot, stringOption(options, 'docsDir') ?? 'docs');
    const docsInfo = await stat(docsDir).catch(() => undefined);
    if (docsInfo && !docsInfo.isDirectory()) throw new PolywaveError({ code: invalidInput, message: `--docs-dir ${displayPath(io, docsDir)} exists and is not a directory` });
    const slug = interviewSlug(description);
    docPath = path.join(docsDir, `INTERVIEW-${slug}.yaml`);
    if (options.resumeExisting === true && existsSync(docPath)) {
      // `run --interview` re-run: the interview of this feature continues (or is already done).
      await refuseSymlink(docPath, displayPath(io, docPath));
      doc = loadInterviewText(await readInput(docPath, 'interview file'), displayPath(io, docPath));
      // Slugs are cut at 40 characters: another feature may have the same one. Never plan from its answers.
      if (doc.description.trim() !== description) {
        throw new PolywaveError({
          code: invalidInput,
          message: `${displayPath(io, docPath)} is the interview of a different feature ("${doc.description.trim()}"): describe this feature so that its slug differs, or continue that one with polywave interview --resume ${shellQuote(displayPath(io, docPath))}`,
        });
      }
      existing = true;
    } else {
      const output = path.resolve(io.cwd, stringOption(options, 'output') ?? path.join(docsDir, 'REQUIREMENTS.md'));
      const requirementsPath = path.relative(docsDir, output).split(path.sep).join('/');
      const problem = requirementsPathProblem(requirementsPath);
      if (problem) throw new PolywaveError({ code: invalidInput, message: `--output ${stringOption(options, 'output') ?? output} must be a file inside the docs directory ${displayPath(io, docsDir)} (not in .git/)` });
      doc = createInterviewDoc({ description, slug, maxQuestions: maxQuestions ?? defaultMaxQuestions, requirementsPath, ...(now() ? { now: now()! } : {}) });
    }
  }
  // requirements_path comes from a file someone else may have committed: checked (symbolic links too) before anything is written.
  if (existing) await requirementsOf(doc, docPath);
  if (answers) checkAnswersCover(answers, doc.question_cursor, answersFile!);
  const json = options.json === true;
  const shownDoc = displayPath(io, docPath);

  if (existing && doc.status === 'complete') {
    const compiled = await requirementsOf(doc, docPath);
    const requirementsPath = compiled.path;
    // Deleted since: compiled again from the INTERVIEW file (the source of truth).
    if (!existsSync(requirementsPath)) {
      await writeRequirements(doc, docPath);
      io.stderr(`interview: ${displayPath(io, requirementsPath)} was missing; compiled again from ${shownDoc}\n`);
    }
    if (json) printJson(io, resultJson(io, docPath, { outcome: 'complete', doc, requirementsPath, warnings: [] }));
    else io.stdout(`interview: ${shownDoc} is already complete (state ${doc.state}); requirements: ${displayPath(io, requirementsPath)}\n`);
    return { code: 0, slug: doc.slug, requirementsPath, requirements: compiled.text };
  }
  // --model credentials are checked before the interview file exists.
  const followUps = await followUpsFrom(options, io, projectRoot, answers !== undefined || options.nonInteractive === true);
  if (!existing) {
    await mkdir(path.dirname(docPath), { recursive: true });
    await createInterviewFile(docPath, doc);
  }

  const interactive = answers === undefined && options.nonInteractive !== true && (io.stdin ?? process.stdin).isTTY === true && process.stderr.isTTY === true;
  const input = answers ? { source: answersFileSource(answers), close: () => undefined } : interactive ? await terminalSource(doc.slug) : await lineSource(io);
  let result: SessionResult;
  try {
    result = await runInterviewSession(doc, {
      docPath,
      source: input.source,
      now,
      ...(followUps ? { followUps } : {}),
      onEvent: (event) => {
        if (event.type === 'answer-saved' && !interactive && answers === undefined) io.stderr(`saved ${event.question.id}${event.command ? ` (${event.command})` : ''}\n`);
        if (event.type === 'follow-up-saved' && !interactive && answers === undefined) io.stderr(`saved ${event.phase}.follow_up${event.command ? ` (${event.command})` : ''}\n`);
      },
    });
  } finally {
    input.close();
  }
  if (result.outcome === 'input-closed') {
    const asked = result.doc.question_cursor;
    const next = `question ${asked + 1}/${questionCount}`;
    io.stderr(`\ninterview: input ended at ${next}; state saved in ${shownDoc} (${asked} of ${questionCount} answered)\n`);
    io.stderr(`Resume with: polywave interview --resume ${shellQuote(shownDoc)}\n`);
    if (options.resumeExisting === true) io.stderr('(or re-run the same polywave run --interview command: it resumes the interview and goes on to the Scout)\n');
    if (json) printJson(io, resultJson(io, docPath, result));
    return { code: 2, slug: result.doc.slug };
  }
  if (result.outcome === 'not-confirmed') {
    io.stderr(`interview: the summary was not confirmed; state saved in ${shownDoc}. Change the answers (polywave interview --resume ${shellQuote(shownDoc)}, answer "back") and confirm.\n`);
    if (json) printJson(io, resultJson(io, docPath, result));
    return { code: 1, slug: result.doc.slug };
  }
  for (const warning of result.warnings) io.stderr(`interview: warning: ${warning}\n`);
  if (json) printJson(io, resultJson(io, docPath, result));
  else io.stdout(`interview: complete (${result.doc.state}) — ${displayPath(io, result.requirementsPath!)} compiled from ${shownDoc}${result.warnings.length > 0 ? ' (partial)' : ''}\n`);
  return { code: 0, slug: result.doc.slug, requirementsPath: result.requirementsPath!, requirements: (await requirementsOf(result.doc, docPath)).text };
}

/**
 * `polywave interview "<description>" | --resume F [--mode deterministic] [--max-questions N]
 * [--non-interactive] [--answers F] [--docs-dir D] [--output F] [--project-path D] [--json]` —
 * E39 requirements interview; `--validate F` checks an INTERVIEW document.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const validate = stringOption(options, 'validate');
  if (validate) {
    const parsed = parseInterviewDoc(await readInput(path.resolve(io.cwd, validate), 'interview file'));
    printJson(io, { valid: parsed.ok, findings: parsed.findings });
    return parsed.ok ? 0 : 1;
  }
  return (await conductInterview(args, options, io)).code;
}
