/**
 * Cost budgets (issue 14): a limit in USD per run, per wave and per agent, enforced from the live
 * `cost` of every model call (cost-meter.ts).
 *
 * - An agent whose spending crosses a limit that covers it (its own, its wave's, the run's) is
 *   stopped through its abort signal: the backend ends the model loop, the journal stays, and
 *   run-wave records the attempt as E19 `escalate` with `stop_reason: budget_exceeded` (E19 has no
 *   budget type; escalate = surface to a human, no automatic relaunch — exactly what is wanted).
 * - Before every launch the tracker is asked whether the run (or the wave) has money left: when not,
 *   the agent is not launched and the run pauses with a {@link BudgetBreach} (code BUDGET_EXCEEDED).
 * Re-running with a larger budget resumes (E9: complete agents are not relaunched).
 *
 * Where limits come from: `--budget-usd` (run), `--wave-budget-usd`, `--agent-budget-usd`, else
 * `budget_usd` in polywave.config.json (a number = the run's limit, or `{run, wave, agent}`).
 */
import { PolywaveError } from '../errors/polywave-error.js';

/** The stable code of a budget stop (message, `blocked.code`, `budget.code`). */
export const budgetExceededCode = 'BUDGET_EXCEEDED';

/** Limits in USD; undefined = no limit. */
export interface BudgetLimits {
  runUsd?: number;
  waveUsd?: number;
  agentUsd?: number;
}

/** Why a budget stopped an agent or paused the run. */
export interface BudgetBreach {
  code: typeof budgetExceededCode;
  scope: 'run' | 'wave' | 'agent';
  limit_usd: number;
  spent_usd: number;
  slug?: string;
  wave?: number;
  agent?: string;
  message: string;
}

/** The agent a tracker can stop. */
export interface BudgetAgentScope {
  slug: string;
  wave: number;
  agent: string;
}

/** One running agent's account ({@link BudgetTracker.startAgent}). */
export interface BudgetAccount {
  /** Adds `usd` (one model call) and stops whoever is over a limit. */
  charge(usd: number): void;
  /** The breach that stopped this agent, if one did. */
  readonly breach: BudgetBreach | undefined;
  /** The agent stopped running (release it). */
  end(): void;
}

function usd(value: number): string {
  return `$${value.toFixed(value < 0.01 ? 6 : 4)}`;
}

function describe(breach: Omit<BudgetBreach, 'message' | 'code'>): string {
  const what = breach.scope === 'run' ? 'the run' : breach.scope === 'wave' ? `wave ${breach.wave ?? '?'}${breach.slug ? ` of ${breach.slug}` : ''}` : `agent ${breach.agent ?? '?'} (wave ${breach.wave ?? '?'})`;
  return `${budgetExceededCode}: ${what} spent ${usd(breach.spent_usd)} of its ${usd(breach.limit_usd)} ${breach.scope} budget`;
}

interface Running extends BudgetAgentScope {
  spent: number;
  breach?: BudgetBreach;
  stop: (breach: BudgetBreach) => void;
}

/** Spending of one run across its waves and agents (shared by every wave of a run or PROGRAM). */
export class BudgetTracker {
  private runSpent = 0;
  private readonly waveSpent = new Map<string, number>();
  private readonly running = new Set<Running>();
  /** Every breach so far, in order. */
  readonly breaches: BudgetBreach[] = [];

  constructor(readonly limits: BudgetLimits) {}

  /** Whether any limit is set. */
  get active(): boolean {
    return this.limits.runUsd !== undefined || this.limits.waveUsd !== undefined || this.limits.agentUsd !== undefined;
  }

  /** USD spent in this run so far. */
  get spentUsd(): number {
    return this.runSpent;
  }

  private waveKey(slug: string, wave: number): string {
    return `${slug}\0${wave}`;
  }

  /**
   * Whether a new agent of `slug`/`wave` may start: the breach when the run or the wave has
   * nothing left (spent ≥ limit), else undefined.
   */
  checkLaunch(scope: { slug: string; wave: number; agent?: string }): BudgetBreach | undefined {
    const { runUsd, waveUsd } = this.limits;
    if (runUsd !== undefined && this.runSpent >= runUsd) return this.breach({ scope: 'run', limit_usd: runUsd, spent_usd: this.runSpent, ...scope }, false);
    const waveSpent = this.waveSpent.get(this.waveKey(scope.slug, scope.wave)) ?? 0;
    if (waveUsd !== undefined && waveSpent >= waveUsd) return this.breach({ scope: 'wave', limit_usd: waveUsd, spent_usd: waveSpent, ...scope }, false);
    return undefined;
  }

  /** Opens the account of an agent that starts now; `stop` is called (once) when it crosses a limit. */
  startAgent(scope: BudgetAgentScope, stop: (breach: BudgetBreach) => void): BudgetAccount {
    const entry: Running = { ...scope, spent: 0, stop };
    this.running.add(entry);
    return {
      charge: (amount: number) => this.charge(entry, amount),
      get breach() {
        return entry.breach;
      },
      end: () => {
        this.running.delete(entry);
      },
    };
  }

  private breach(fields: Omit<BudgetBreach, 'message' | 'code'>, record = true): BudgetBreach {
    const breach: BudgetBreach = { code: budgetExceededCode, ...fields, message: describe(fields) };
    if (record) this.breaches.push(breach);
    return breach;
  }

  private stopEntry(entry: Running, breach: BudgetBreach): void {
    if (entry.breach) return;
    entry.breach = breach;
    try {
      entry.stop(breach);
    } catch {
      // stopping is best effort; the launch check still pauses the run
    }
  }

  private charge(entry: Running, amount: number): void {
    if (!(amount > 0)) return;
    entry.spent += amount;
    this.runSpent += amount;
    const key = this.waveKey(entry.slug, entry.wave);
    const waveSpent = (this.waveSpent.get(key) ?? 0) + amount;
    this.waveSpent.set(key, waveSpent);
    const { runUsd, waveUsd, agentUsd } = this.limits;
    if (runUsd !== undefined && this.runSpent > runUsd) {
      const breach = this.breach({ scope: 'run', limit_usd: runUsd, spent_usd: this.runSpent, slug: entry.slug, wave: entry.wave, agent: entry.agent });
      for (const other of [...this.running]) this.stopEntry(other, breach);
      return;
    }
    if (waveUsd !== undefined && waveSpent > waveUsd) {
      const breach = this.breach({ scope: 'wave', limit_usd: waveUsd, spent_usd: waveSpent, slug: entry.slug, wave: entry.wave, agent: entry.agent });
      for (const other of [...this.running]) if (this.waveKey(other.slug, other.wave) === key) this.stopEntry(other, breach);
      return;
    }
    if (agentUsd !== undefined && entry.spent > agentUsd) {
      this.stopEntry(entry, this.breach({ scope: 'agent', limit_usd: agentUsd, spent_usd: entry.spent, slug: entry.slug, wave: entry.wave, agent: entry.agent }));
    }
  }
}

/** A USD amount from a flag or the config: a finite number ≥ 0, else X001_INVALID_INPUT (exit 2). */
export function parseBudgetUsd(value: unknown, source: string): number {
  const number = typeof value === 'number' ? value : typeof value === 'string' && /^\s*\$?\d+(\.\d+)?\s*$/.test(value) ? Number(value.trim().replace(/^\$/, '')) : Number.NaN;
  if (!Number.isFinite(number) || number < 0) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${source} must be an amount in USD ≥ 0 (e.g. 2.50), got ${JSON.stringify(value)}` });
  return number;
}

/**
 * The limits of a run: flags win over `budget_usd` of polywave.config.json (a number = the run's
 * limit; an object `{run, wave, agent}`). Bad values → X001_INVALID_INPUT (exit 2).
 */
export function resolveBudgetLimits(flags: { budgetUsd?: unknown; waveBudgetUsd?: unknown; agentBudgetUsd?: unknown }, config: unknown): BudgetLimits {
  const limits: BudgetLimits = {};
  if (config !== undefined && config !== null) {
    if (typeof config === 'number' || typeof config === 'string') limits.runUsd = parseBudgetUsd(config, 'budget_usd (polywave.config.json)');
    else if (typeof config === 'object' && !Array.isArray(config)) {
      const record = config as Record<string, unknown>;
      for (const key of Object.keys(record)) {
        if (!['run', 'wave', 'agent'].includes(key)) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `budget_usd (polywave.config.json): unknown key "${key}" (run, wave, agent)` });
      }
      if (record.run !== undefined) limits.runUsd = parseBudgetUsd(record.run, 'budget_usd.run (polywave.config.json)');
      if (record.wave !== undefined) limits.waveUsd = parseBudgetUsd(record.wave, 'budget_usd.wave (polywave.config.json)');
      if (record.agent !== undefined) limits.agentUsd = parseBudgetUsd(record.agent, 'budget_usd.agent (polywave.config.json)');
    } else throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'budget_usd (polywave.config.json) must be a number or {run, wave, agent}' });
  }
  if (flags.budgetUsd !== undefined) limits.runUsd = parseBudgetUsd(flags.budgetUsd, '--budget-usd');
  if (flags.waveBudgetUsd !== undefined) limits.waveUsd = parseBudgetUsd(flags.waveBudgetUsd, '--wave-budget-usd');
  if (flags.agentBudgetUsd !== undefined) limits.agentUsd = parseBudgetUsd(flags.agentBudgetUsd, '--agent-budget-usd');
  return limits;
}
