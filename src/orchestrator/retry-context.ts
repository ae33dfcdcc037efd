/**
 * E19 / E7a retry context (`build-retry-context`): what a relaunched agent is told about its
 * previous attempt, built from that attempt's completion report (notes + verification).
 *
 * Same JSON keys and error-class values as the Go `pkg/retry` (`attempt_number, agent_id,
 * error_class, error_excerpt, gate_results, suggested_fixes, prior_notes, prompt_text,
 * failure_type?`, classes `import_error | type_error | test_failure | build_error | lint_error |
 * unknown`, pattern priority import → type → test → build → lint → unknown, excerpt = the first
 * 2000 characters, prompt sections "Fix Required" → "Retry Context (Attempt n)" → "Error
 * Classification" → "Error Output" → "Suggested Fixes" → "Prior Attempt Notes"). Differences, on
 * purpose:
 * - the patterns cover TypeScript/JavaScript, Go, Python and Rust error shapes (Go: Go only), and
 *   the suggested fixes follow the language the error output is in;
 * - Go's bare `FAIL` substring made every `verification: FAIL (…)` (the I5 format itself) a test
 *   failure; here a test failure needs a test runner's shape or words;
 * - a `timeout` failure carries the E19 scope-reduction sentence ({@link timeoutRetryNote}) at
 *   the top of the prompt — execution-rules E19 requires it, the Go code forgets it;
 * - `gate_results` marks gates `failed` for `blocked` reports too (Go: `unknown`).
 * Pure: manifest in, value out.
 */
import { PolywaveError } from '../errors/polywave-error.js';
import { timeoutRetryNote } from '../protocol/e19.js';
import type { ImplManifest } from '../protocol/schema/impl-schema.js';

/** Error classes, with the Go values. */
export const errorClasses = ['import_error', 'type_error', 'test_failure', 'build_error', 'lint_error', 'unknown'] as const;
export type ErrorClass = (typeof errorClasses)[number];

/** Languages whose error shapes the classifier knows. */
export type ErrorLanguage = 'go' | 'typescript' | 'python' | 'rust';

/** The `build-retry-context` JSON (Go `RetryAttempt` keys used by the command). */
export interface RetryContext {
  attempt_number: number;
  agent_id: string;
  error_class: ErrorClass;
  /** Notes + verification of the previous report, first 2000 characters. */
  error_excerpt: string;
  /** `<gate type>: passed|failed|unknown` per quality gate (from the report status, as Go). */
  gate_results: string[];
  suggested_fixes: string[];
  prior_notes: string;
  /** The markdown to put in the relaunched agent's prompt. */
  prompt_text: string;
  /** The previous report's failure_type (absent when it had none). */
  failure_type?: string;
  /** Ours: the language the error output was recognised as (absent when unknown). */
  language?: ErrorLanguage;
}

/** Options of {@link buildRetryContext}. */
export interface BuildRetryContextOptions {
  /** The attempt the context is for (Go `--attempt`, default 1). */
  attempt?: number;
  /**
   * The failure type when the caller knows it better than the report (e.g. the run timed out
   * before any report): used when the report has none, and lets a context be built without a
   * report at all.
   */
  failureType?: string;
}

/** Largest excerpt of the error output (Go `maxExcerptLen`). */
export const maxExcerptLength = 2000;

interface Pattern {
  pattern: RegExp;
  language?: ErrorLanguage;
}

const ts = 'typescript' as const;

/** Per class, in the priority order of the classifier. */
const classPatterns: ReadonlyArray<{ errorClass: Exclude<ErrorClass, 'unknown'>; patterns: Pattern[] }> = [
  {
    errorClass: 'import_error',
    patterns: [
      { pattern: /could not import/, language: 'go' },
      { pattern: /cannot find package/, language: 'go' },
      { pattern: /no required module provides package/, language: 'go' },
      { pattern: /is not in (?:GOROOT|std)\b/, language: 'go' },
      { pattern: /use of internal package .* not allowed/, language: 'go' },
      { pattern: /\bTS230[57]\b/, language: ts },
      { pattern: /Cannot find module ['"]/, language: ts },
      { pattern: /ERR_MODULE_NOT_FOUND/, language: ts },
      { pattern: /Module not found: (?:Error: )?Can't resolve/, language: ts },
      { pattern: /Failed to resolve import/, language: ts },
      { pattern: /does not provide an export named/, language: ts },
      { pattern: /\bModuleNotFoundError\b/, language: 'python' },
      { pattern: /\bImportError\b/, language: 'python' },
      { pattern: /No module named/, language: 'python' },
      { pattern: /error\[E043[23]\]/, language: 'rust' },
      { pattern: /unresolved import/, language: 'rust' },
      { pattern: /can't find crate for/, language: 'rust' },
    ],
  },
  {
    errorClass: 'type_error',
    patterns: [
      { pattern: /cannot use .* as .*(?:type|value)/, language: 'go' },
      { pattern: /\bundefined: \S/, language: 'go' },
      { pattern: /has no field or method/, language: 'go' },
      { pattern: /not enough arguments/, language: 'go' },
      { pattern: /too many arguments/, language: 'go' },
      { pattern: /does not implement .* \(missing method/, language: 'go' },
      { pattern: /invalid operation: .*mismatched types/, language: 'go' },
      { pattern: /\bTS2\d{3}\b/, language: ts },
      { pattern: /is not assignable to (?:type|parameter)/, language: ts },
      { pattern: /does not exist on type/, language: ts },
      { pattern: /Expected \d+(?:-\d+)? arguments?, but got \d+/, language: ts },
      { pattern: /Cannot find name ['"]/, language: ts },
      { pattern: /\bIncompatible (?:types|return value type)\b/, language: 'python' },
      { pattern: /has incompatible type/, language: 'python' },
      { pattern: /\[(?:arg-type|attr-defined|assignment|return-value|call-arg|union-attr|name-defined|override|index|operator)\]/, language: 'python' },
      { pattern: /TypeError: .*(?:positional argument|keyword argument|required argument|not callable|unsupported operand|object is not)/, language: 'python' },
      { pattern: /AttributeError: .* has no attribute/, language: 'python' },
      { pattern: /NameError: name '.*' is not defined/, language: 'python' },
      { pattern: /error\[E0(?:061|107|277|282|308|369|412|423|425|560|599|609|610|614|615|616|618)\]/, language: 'rust' },
      { pattern: /no method named .* found/, language: 'rust' },
      { pattern: /the trait bound .* is not satisfied/, language: 'rust' },
      { pattern: /\bmismatched types\b/ },
    ],
  },
  {
    errorClass: 'test_failure',
    patterns: [
      { pattern: /--- FAIL: /, language: 'go' },
      { pattern: /^FAIL(?:\t|\s*$)/m, language: 'go' },
      { pattern: /panic: test/, language: 'go' },
      { pattern: /^\s*FAIL\s+\S+\.(?:[cm]?[jt]sx?)\b/m, language: ts },
      { pattern: /^\s*Tests?:?\s+\d+ failed/m, language: ts },
      { pattern: /Test Files\s+\d+ failed/, language: ts },
      { pattern: /expect\(received\)/, language: ts },
      { pattern: /\b\d+ failing\b/, language: ts },
      { pattern: /^not ok \d+/m, language: ts },
      { pattern: /AssertionError \[ERR_ASSERTION\]/, language: ts },
      { pattern: /^FAILED \S+/m, language: 'python' },
      { pattern: /^=+ .*\b\d+ failed\b/m, language: 'python' },
      { pattern: /^E\s+assert\b/m, language: 'python' },
      { pattern: /test result: FAILED/, language: 'rust' },
      { pattern: /^---- \S+ stdout ----$/m, language: 'rust' },
      { pattern: /panicked at/, language: 'rust' },
      { pattern: /\bAssertionError\b/ },
      { pattern: /\b\d+ tests? failed\b/i },
      { pattern: /\btests? (?:failed|failing|fail)\b/i },
      { pattern: /\bfailing tests?\b/i },
    ],
  },
  {
    errorClass: 'build_error',
    patterns: [
      { pattern: /cannot find module/, language: 'go' },
      { pattern: /build constraints exclude/, language: 'go' },
      { pattern: /syntax error/, language: 'go' },
      { pattern: /\bTS1\d{3}\b/, language: ts },
      { pattern: /Unexpected token/, language: ts },
      { pattern: /Transform failed with \d+ error/, language: ts },
      { pattern: /\bIndentationError\b/, language: 'python' },
      { pattern: /Failed building wheel|subprocess-exited-with-error/, language: 'python' },
      { pattern: /error: could not compile/, language: 'rust' },
      { pattern: /aborting due to (?:\d+ )?previous errors?/, language: 'rust' },
      { pattern: /\bSyntaxError\b/ },
      { pattern: /\bbuild (?:failed|failure|error|errors|broken)\b/i },
      { pattern: /\bcompil(?:e|ation) (?:error|errors|failed|failure)\b/i },
      { pattern: /\bfailed to (?:compile|build)\b/i },
      { pattern: /\bdoes not (?:build|compile)\b/i },
    ],
  },
  {
    errorClass: 'lint_error',
    patterns: [
      { pattern: /\bgo vet\b/, language: 'go' },
      { pattern: /should have comment/, language: 'go' },
      { pattern: /exported .* should/, language: 'go' },
      { pattern: /golangci-lint|\bgofmt\b|\bstaticcheck\b/, language: 'go' },
      { pattern: /\beslint\b/i, language: ts },
      { pattern: /\d+ problems? \(\d+ errors?/, language: ts },
      { pattern: /@typescript-eslint\//, language: ts },
      { pattern: /\bprettier\b|\bbiome\b/i, language: ts },
      { pattern: /\bruff\b|\bflake8\b|\bpylint\b/, language: 'python' },
      { pattern: /:\d+:\d+: [EFWCN]\d{3}\b/, language: 'python' },
      { pattern: /would reformat/, language: 'python' },
      { pattern: /\bclippy\b|\brustfmt\b|cargo fmt/, language: 'rust' },
      { pattern: /\blint(?:er|ing|s)?\b/i },
    ],
  },
];

/** Hints of the language of an error output, for patterns that name none. */
const languageHints: ReadonlyArray<{ language: ErrorLanguage; pattern: RegExp }> = [
  { language: 'go', pattern: /\.go:\d+|\bgo (?:build|test|vet|mod|get)\b|\bgo\.mod\b/g },
  { language: 'rust', pattern: /\.rs:\d+|\bcargo\b|error\[E\d{4}\]/g },
  { language: 'python', pattern: /\.py\b|Traceback \(most recent call last\)|\bpytest\b|\bmypy\b|\bpip\b|\buv\b/g },
  { language: ts, pattern: /\.(?:[cm]?[jt]sx?)\b|\bTS\d{4}\b|\bnpm\b|\bnpx\b|\bnode\b|\bvitest\b|\bjest\b|\btsc\b|\bpnpm\b|\byarn\b/g },
];

/** The language an error output is written in, when it says. */
export function detectErrorLanguage(output: string): ErrorLanguage | undefined {
  let best: { language: ErrorLanguage; count: number } | undefined;
  for (const hint of languageHints) {
    const count = output.match(hint.pattern)?.length ?? 0;
    if (count > 0 && (best === undefined || count > best.count)) best = { language: hint.language, count };
  }
  return best?.language;
}

/** Classification of an error output: the class (priority import → type → test → build → lint) and its language. */
export function classifyError(output: string): { errorClass: ErrorClass; language?: ErrorLanguage } {
  const detected = detectErrorLanguage(output);
  for (const { errorClass, patterns } of classPatterns) {
    const match = patterns.find((candidate) => candidate.pattern.test(output));
    if (match) {
      const language = match.language ?? detected;
      return language ? { errorClass, language } : { errorClass };
    }
  }
  return detected ? { errorClass: 'unknown', language: detected } : { errorClass: 'unknown' };
}

const genericFixes: Readonly<Record<ErrorClass, readonly string[]>> = {
  import_error: ['Check that every import path exists and is spelled exactly', 'Install or declare the missing dependency in the project manifest', 'Verify the imported module exports the names you use'],
  type_error: ['Check function signatures match the interface contracts', 'Check argument counts and the types of assignments and return values', 'Add the missing conversions instead of changing a contract'],
  test_failure: ['Run the failing test alone and read its first assertion', 'Review test expectations against actual behavior', 'Check for changed function signatures in test assertions'],
  build_error: ['Check for syntax errors in recent changes', 'Run the build command and fix the first error it prints', 'Verify all referenced packages exist'],
  lint_error: ['Run the linter on your files and fix each reported rule', 'Remove unused imports and variables', "Format the files with the project's formatter"],
  unknown: ['Re-run your verification command and fix the first error it prints', 'Check the prior attempt notes for what was left unfinished'],
};

const languageFixes: Readonly<Record<ErrorLanguage, Partial<Record<ErrorClass, readonly string[]>>>> = {
  go: {
    import_error: ['Check import paths match go.mod module name', 'Run go mod tidy to resolve missing dependencies', 'Verify the package exists at the expected path'],
    type_error: ['Check function signatures match interface contracts', 'Verify struct field types match expected types', 'Check for missing type conversions'],
    test_failure: ['Review test expectations against actual behavior', 'Check for changed function signatures in test assertions', 'Look for race conditions with -race flag'],
    build_error: ['Check for syntax errors in recent changes', 'Verify all referenced packages exist', 'Run go mod tidy'],
    lint_error: ['Add missing documentation comments to exported symbols', 'Fix formatting with gofmt -w', 'Address go vet warnings'],
  },
  typescript: {
    import_error: [
      'Check the import specifier: relative ESM imports need the file extension (`./x.js` for `./x.ts` under NodeNext)',
      'Install the missing package (npm install <package>) and check it is listed in package.json',
      'Verify the module exists and exports the imported name (tsconfig paths/baseUrl included)',
    ],
    type_error: ['Check function signatures match the interface contracts', 'Fix the first `error TS2…`: assignments, argument counts and property names must match the declared types', 'Narrow `undefined`/`null` (strict mode) instead of casting with `as`'],
    test_failure: ['Run the failing test file alone (npx vitest run <file> / npx jest <file>) and read the first assertion', 'Review test expectations against actual behavior', 'Check for changed function signatures or fixtures in test assertions'],
    build_error: ['Check for syntax errors in recent changes (the first `error TS1…` / SyntaxError)', 'Run the build (npx tsc --noEmit / npm run build) and fix the first error', 'Check that new files are covered by tsconfig include and module settings'],
    lint_error: ['Run the linter on your files (npx eslint <files>) and fix each reported rule', 'Remove unused variables and imports', "Format with the project's formatter (prettier) when it checks formatting"],
  },
  python: {
    import_error: ['Check the module path and package layout (`__init__.py`, src layout, relative vs absolute imports)', 'Install the missing dependency (pip install / uv add) and declare it in pyproject.toml', 'Run from the project root or install the package in editable mode (pip install -e .)'],
    type_error: ['Check call signatures (argument count and names) against the interface contracts', 'Fix the mypy/pyright errors: argument and return types must match the annotations', 'Check attribute and name spelling on the objects you use'],
    test_failure: ['Run the failing test alone (pytest <path>::<test> -x) and read the first assertion', 'Review test expectations against actual behavior', 'Check fixtures and changed function signatures in test assertions'],
    build_error: ['Fix the SyntaxError/IndentationError at the reported line', 'Run python -m py_compile on the changed files', 'Check the build configuration in pyproject.toml'],
    lint_error: ['Run the linter (ruff check / flake8) on your files and fix each reported code', 'Format with ruff format / black', 'Remove unused imports and variables'],
  },
  rust: {
    import_error: ['Check the `use` path (crate::, super::) and the `mod` declarations', 'Add the missing crate to Cargo.toml (cargo add <crate>)', 'Make sure the item is `pub` and exported from its module'],
    type_error: ['Check function signatures match the interface contracts', 'Fix the first error[E…]: mismatched types, missing methods or unmet trait bounds', 'Add the needed conversions (.into(), as, & / .clone()) instead of changing a contract'],
    test_failure: ['Run the failing test alone (cargo test <name> -- --nocapture) and read the panic message', 'Review test expectations against actual behavior', 'Check for changed function signatures in test assertions'],
    build_error: ['Run cargo build and fix the first error', 'Check for syntax errors (semicolons, braces, lifetimes) in recent changes', 'Check Cargo.toml features and dependency versions'],
    lint_error: ['Run cargo clippy and fix each warning', 'Format with cargo fmt', 'Remove unused imports and variables'],
  },
};

/** Fix suggestions for an error class, in the error's language when known. */
export function suggestFixes(errorClass: ErrorClass, language?: ErrorLanguage): string[] {
  return [...((language ? languageFixes[language][errorClass] : undefined) ?? genericFixes[errorClass])];
}

function fence(text: string): string {
  let marker = '```';
  while (text.includes(marker)) marker += '`';
  return `${marker}\n${text.replace(/\n+$/, '')}\n${marker}`;
}

/** The markdown retry prompt (Go `BuildPromptText`, plus the E19 timeout note). */
export function buildRetryPromptText(context: Pick<RetryContext, 'attempt_number' | 'error_class' | 'error_excerpt' | 'suggested_fixes' | 'prior_notes' | 'failure_type'>): string {
  const out: string[] = [];
  if (context.failure_type === 'timeout') {
    out.push('## Scope Reduction (E19 timeout)', '', timeoutRetryNote, '');
  }
  if (context.failure_type === 'fixable' && context.prior_notes.trim() !== '') {
    out.push('## Fix Required', '', 'The previous attempt identified a specific fix needed:', '', context.prior_notes.trim(), '', 'Apply this fix before proceeding with your task.', '');
  }
  out.push(`## Retry Context (Attempt ${context.attempt_number})`, '');
  out.push(`### Error Classification: ${context.error_class}`, '');
  out.push('### Error Output', '', fence(context.error_excerpt), '');
  out.push('### Suggested Fixes', '');
  out.push(...(context.suggested_fixes.length > 0 ? context.suggested_fixes.map((fix) => `- ${fix}`) : ['- (none)']), '');
  out.push('### Prior Attempt Notes', '', context.prior_notes.trim() === '' ? '(none)' : context.prior_notes.trim());
  return `${out.join('\n')}\n`;
}

/**
 * Builds the retry context of `agentId` from its completion report in `manifest` (see the module
 * comment). Throws `R002_REPORT_MISSING` (exit 1) when the agent has no report and no
 * `failureType` was given.
 */
export function buildRetryContext(manifest: ImplManifest, agentId: string, options: BuildRetryContextOptions = {}): RetryContext {
  const report = manifest.completion_reports?.[agentId];
  if (report === undefined && !options.failureType?.trim()) {
    throw new PolywaveError({ code: 'R002_REPORT_MISSING', message: `no completion report found for agent ${agentId}`, exitCode: 1, details: { agent: agentId } });
  }
  const attempt = options.attempt !== undefined && Number.isFinite(options.attempt) && options.attempt >= 1 ? Math.floor(options.attempt) : 1;
  const notes = report?.notes ?? '';
  const verification = report?.verification ?? '';
  const rawOutput = `${notes}\n${verification}`;
  const excerpt = rawOutput.length > maxExcerptLength ? rawOutput.slice(0, maxExcerptLength) : rawOutput;
  const { errorClass, language } = classifyError(rawOutput);
  const failureType = report?.failure_type?.trim() || options.failureType?.trim() || undefined;
  const status = report?.status ?? '';
  const gateStatus = status === 'complete' ? 'passed' : status === 'partial' || status === 'blocked' || status === 'failed' ? 'failed' : 'unknown';
  const gateResults = (manifest.quality_gates?.gates ?? []).map((gate) => `${gate.type ?? ''}: ${gateStatus}`);
  const context: RetryContext = {
    attempt_number: attempt,
    agent_id: agentId,
    error_class: errorClass,
    error_excerpt: excerpt,
    gate_results: gateResults,
    suggested_fixes: suggestFixes(errorClass, language),
    prior_notes: notes,
    prompt_text: '',
    ...(failureType ? { failure_type: failureType } : {}),
    ...(language ? { language } : {}),
  };
  context.prompt_text = buildRetryPromptText(context);
  return context;
}
