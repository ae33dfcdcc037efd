/**
 * Engine commands are pipelines of small named steps (DESIGN §3). Each step's outcome is recorded
 * as `{step, status, detail, data?}` — the same JSON the Go `polywave-tools` prints, so skills
 * written against Go keep working. The first `failed` step stops the pipeline unless the step is
 * advisory.
 */
export type StepStatus = 'success' | 'failed' | 'skipped' | 'warning';

export interface StepResult {
  step: string;
  status: StepStatus;
  detail: string;
  data?: unknown;
  /** Milliseconds the step took (ours; the Go tool does not report it). */
  duration_ms?: number;
}

/** What a step function returns; the pipeline adds the name and duration. */
export interface StepOutcome {
  status: StepStatus;
  detail: string;
  data?: unknown;
}

export interface StepDefinition<Context> {
  name: string;
  /** An advisory step never stops the pipeline (a failure is recorded as `warning`). */
  advisory?: boolean;
  /** Return undefined to skip silently (not recorded). */
  run(context: Context): Promise<StepOutcome | undefined> | StepOutcome | undefined;
}

/** Records steps and stops at the first failure. */
export class StepRecorder {
  readonly steps: StepResult[] = [];
  private readonly onStep: ((result: StepResult) => void) | undefined;

  constructor(onStep?: (result: StepResult) => void) {
    this.onStep = onStep;
  }

  /** Runs one step, records it, and returns its outcome (throws nothing for a failed step). */
  async run<Context>(definition: StepDefinition<Context>, context: Context): Promise<StepOutcome | undefined> {
    const start = performance.now();
    let outcome: StepOutcome | undefined;
    try {
      outcome = await definition.run(context);
    } catch (error) {
      outcome = { status: 'failed', detail: error instanceof Error ? error.message : String(error), data: errorData(error) };
    }
    if (outcome === undefined) return undefined;
    if (definition.advisory && outcome.status === 'failed') outcome = { ...outcome, status: 'warning' };
    const result: StepResult = { step: definition.name, status: outcome.status, detail: outcome.detail, ...(outcome.data === undefined ? {} : { data: outcome.data }), duration_ms: Math.round(performance.now() - start) };
    this.steps.push(result);
    this.onStep?.(result);
    return outcome;
  }

  /** True when some recorded step failed. */
  get failed(): boolean {
    return this.steps.some((step) => step.status === 'failed');
  }

  /** The first failed step, if any. */
  get firstFailure(): StepResult | undefined {
    return this.steps.find((step) => step.status === 'failed');
  }
}

function errorData(error: unknown): unknown {
  if (error && typeof error === 'object' && 'code' in error && typeof (error as { code: unknown }).code === 'string') {
    const details = (error as { details?: unknown }).details;
    return { code: (error as { code: string }).code, ...(details && typeof details === 'object' ? { details } : {}) };
  }
  return undefined;
}
