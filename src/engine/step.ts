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
  /**
   * When this returns true the pipeline starts the step and goes on without waiting; it is awaited
   * before the next step marked `joinsBackground` (or at the end of the pipeline). Only for work
   * that cannot stop the run: a background step's failure is recorded as `warning`.
   */
  background?: (context: Context) => boolean;
  /** Waits for every background step before running. */
  joinsBackground?: boolean;
  /** Return undefined to skip silently (not recorded). */
  run(context: Context): Promise<StepOutcome | undefined> | StepOutcome | undefined;
}

/** Records steps and stops at the first failure. */
export class StepRecorder {
  /** Recorded results in pipeline order; a background step keeps the place where it started. */
  private readonly slots: Array<StepResult | undefined> = [];
  private readonly pending: Array<Promise<unknown>> = [];
  /** Finished slots not yet announced to `onStep`, and the next slot to announce. */
  private readonly results = new Map<number, StepResult | null>();
  private announced = 0;
  private readonly onStep: ((result: StepResult) => void) | undefined;

  constructor(onStep?: (result: StepResult) => void) {
    this.onStep = onStep;
  }

  /** Recorded results, in pipeline order. */
  get steps(): StepResult[] {
    return this.slots.filter((slot): slot is StepResult => slot !== undefined);
  }

  /** Runs one step, records it, and returns its outcome (throws nothing for a failed step). */
  run<Context>(definition: StepDefinition<Context>, context: Context): Promise<StepOutcome | undefined> {
    const slot = this.slots.length;
    this.slots.push(undefined);
    return this.execute(definition, context, slot, false);
  }

  /** Starts a step without waiting for it (see `StepDefinition.background`); `joinBackground` awaits it. */
  start<Context>(definition: StepDefinition<Context>, context: Context): void {
    const slot = this.slots.length;
    this.slots.push(undefined);
    this.pending.push(this.execute(definition, context, slot, true));
  }

  /** Waits for every started background step. */
  async joinBackground(): Promise<void> {
    while (this.pending.length > 0) await Promise.all(this.pending.splice(0));
  }

  private async execute<Context>(definition: StepDefinition<Context>, context: Context, slot: number, background: boolean): Promise<StepOutcome | undefined> {
    const start = performance.now();
    let outcome: StepOutcome | undefined;
    try {
      outcome = await definition.run(context);
    } catch (error) {
      outcome = { status: 'failed', detail: error instanceof Error ? error.message : String(error), data: errorData(error) };
    }
    if (outcome === undefined) {
      this.announce(slot, null);
      return undefined;
    }
    if ((definition.advisory || background) && outcome.status === 'failed') outcome = { ...outcome, status: 'warning' };
    const result: StepResult = { step: definition.name, status: outcome.status, detail: outcome.detail, ...(outcome.data === undefined ? {} : { data: outcome.data }), duration_ms: Math.round(performance.now() - start) };
    this.slots[slot] = result;
    this.announce(slot, result);
    return outcome;
  }

  /**
   * Listeners hear steps in pipeline order: a step that ends while a background step before it is
   * still running is announced when that one ends (null = a silently skipped slot).
   */
  private announce(slot: number, result: StepResult | null): void {
    this.results.set(slot, result);
    while (this.results.has(this.announced)) {
      const next = this.results.get(this.announced);
      this.results.delete(this.announced);
      this.announced += 1;
      if (next) this.onStep?.(next);
    }
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
