/**
 * E39: the deterministic question bank of interview mode. Six phases in a fixed order, each with
 * fixed questions; the same description and answers always give the same interview.
 */

/** The six interview phases (E39 "Interview Phases"), in order. */
export const interviewPhases = ['overview', 'scope', 'requirements', 'interfaces', 'stories', 'review'] as const;
export type InterviewPhase = (typeof interviewPhases)[number];

/** Display names of the phases ("Phase 2/6 · Scope"). */
export const phaseTitles: Readonly<Record<InterviewPhase, string>> = {
  overview: 'Overview',
  scope: 'Scope',
  requirements: 'Requirements',
  interfaces: 'Interfaces',
  stories: 'Stories',
  review: 'Review',
};

/**
 * How an answer is read: `text` one value, `list` items (one per line, or separated by `;`),
 * `confirm` yes/no.
 */
export type AnswerKind = 'text' | 'list' | 'confirm';

/** One question of the bank. */
export interface InterviewQuestion {
  /** Stable id `<phase>.<field>`: the key of an answers file and of history entries. */
  id: string;
  phase: InterviewPhase;
  /** Field of `spec_data.<phase>` the answer is stored in. */
  field: string;
  kind: AnswerKind;
  prompt: string;
  hint: string;
  /** A required question cannot be skipped and refuses an empty answer. */
  required: boolean;
}

function question(phase: InterviewPhase, field: string, kind: AnswerKind, required: boolean, prompt: string, hint: string): InterviewQuestion {
  return { id: `${phase}.${field}`, phase, field, kind, required, prompt, hint };
}

/** The bank: 16 questions (15 + the confirmation), the fields of the Go interview's spec_data. */
export const questionBank: readonly InterviewQuestion[] = Object.freeze([
  question('overview', 'title', 'text', true, 'What is the title of this feature?', 'A short name, e.g. "Rate-limited login".'),
  question('overview', 'goal', 'text', true, 'What is the goal — what should be true when it is done?', 'One or two sentences.'),
  question('overview', 'success_metrics', 'list', false, 'How will you know it succeeded (success metrics)?', 'One per line (or separated by ";"); "skip" if none.'),
  question('overview', 'non_goals', 'list', false, 'What is explicitly NOT a goal?', 'One per line (or separated by ";"); "skip" if none.'),
  question('scope', 'in_scope', 'list', true, 'What is in scope?', 'One item per line or separated by ";" (modules, behaviours, commands).'),
  question('scope', 'out_of_scope', 'list', false, 'What is out of scope?', 'One per line (or separated by ";"); "skip" if none.'),
  question('scope', 'assumptions', 'list', false, 'What are you assuming (about the code, users, environment)?', 'One per line (or separated by ";"); "skip" if none.'),
  question('requirements', 'functional', 'list', true, 'What must it do (functional requirements)?', 'One requirement per line or separated by ";".'),
  question('requirements', 'non_functional', 'list', false, 'Non-functional requirements (performance, security, accessibility)?', 'One per line (or separated by ";"); "skip" if none.'),
  question('requirements', 'constraints', 'list', false, 'Constraints (languages, libraries, compatibility, decisions already made)?', 'One per line (or separated by ";"); "skip" if none.'),
  question('interfaces', 'data_models', 'list', false, 'Which data models or types are involved?', 'One per line (or separated by ";"); "skip" if none.'),
  question('interfaces', 'apis', 'list', false, 'Which APIs, commands or functions are added or changed?', 'One per line (or separated by ";"); "skip" if none.'),
  question('interfaces', 'external', 'list', false, 'Which external dependencies or services does it use?', 'One per line (or separated by ";"); "skip" if none.'),
  question('stories', 'stories', 'list', false, 'User stories or use cases ("As a …, I want … so that …")?', 'One per line (or separated by ";"); "skip" if none.'),
  question('review', 'open_questions', 'list', false, 'Any open questions left for the Scout?', 'One per line (or separated by ";"); "skip" if none.'),
  question('review', 'confirmed', 'confirm', true, 'Is this summary correct — compile REQUIREMENTS.md?', 'yes or no ("back" revisits the last answer).'),
]);

/** Number of questions in the bank. */
export const questionCount = questionBank.length;

/** 1-based number of a phase ("Phase 2/6"). */
export function phaseNumber(phase: InterviewPhase): number {
  return interviewPhases.indexOf(phase) + 1;
}

/** The question with `id`, or undefined. */
export function questionById(id: string): InterviewQuestion | undefined {
  return questionBank.find((entry) => entry.id === id);
}

/** The phase the interview is in when `cursor` questions are behind it (`review` at the end). */
export function phaseAt(cursor: number): InterviewPhase {
  return questionBank[Math.min(cursor, questionCount - 1)]!.phase;
}

/** 1-based position of the question at `cursor` inside its phase. */
export function questionNumberInPhase(cursor: number): number {
  const current = questionBank[cursor];
  if (!current) return 0;
  return questionBank.slice(0, cursor + 1).filter((entry) => entry.phase === current.phase).length;
}

/** Number of questions of `phase`. */
export function questionsInPhase(phase: InterviewPhase): number {
  return questionBank.filter((entry) => entry.phase === phase).length;
}
