/**
 * Cost budgets on the commands that launch agents (`run`, `run-wave`, `program-execute`; issue 14):
 * `--budget-usd` (the run), `--wave-budget-usd`, `--agent-budget-usd`, else `budget_usd` of
 * polywave.config.json (a number = the run's limit, or `{run, wave, agent}`). See agents/budget.ts.
 */
// Only types at load time: the command table imports this module for `budgetOptions`, and a hook's
// `validate` must not load the agent runtime (test/cli-startup.test.ts).
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { BudgetTracker } from '../agents/budget.js';

/** The command-table entries of the budget flags. */
export const budgetOptions = [
  { flags: '--budget-usd <usd>', description: 'stop when the run has spent this many USD (live, per model call): the agent over it is stopped (journal kept, E19 escalate), the run pauses before the next launch with BUDGET_EXCEEDED (exit 1); default: budget_usd of polywave.config.json' },
  { flags: '--wave-budget-usd <usd>', description: 'the same limit per wave' },
  { flags: '--agent-budget-usd <usd>', description: 'the same limit per agent (each launch of it)' },
];

/**
 * The run's budget tracker from the flags and the config found upward from `startDir`, or
 * undefined when no limit is set. Bad values → X001_INVALID_INPUT (exit 2) before anything starts.
 */
export async function budgetFrom(options: Record<string, unknown>, startDir: string): Promise<BudgetTracker | undefined> {
  const [{ BudgetTracker, resolveBudgetLimits }, { locateProjectConfig, readProjectConfig, untrustedConfigReason }, { repositoryOf }] = await Promise.all([
    import('../agents/budget.js'),
    import('../store/project-config.js'),
    import('../store/trusted-config.js'),
  ]);
  // In a repository: its root's config (your edit counts before you commit it; a merged change of the key is watched,
  // X25-11), never a nested one an agent may own (X26-10: run-wave started from the IMPL's directory and took
  // `docs/IMPL/polywave.config.json`'s budget). Outside one: the nearest upwards that you control.
  const repository = await repositoryOf(startDir).catch(() => undefined);
  const rootConfig = repository ? path.join(repository.toplevel, 'polywave.config.json') : undefined;
  const configPath = rootConfig !== undefined
    ? (existsSync(rootConfig) && (await untrustedConfigReason(rootConfig).catch(() => 'unreadable')) === undefined ? rootConfig : undefined)
    : await locateProjectConfig(startDir).catch(() => undefined);
  const config = configPath ? (await readProjectConfig(configPath).catch(() => undefined))?.config : undefined;
  const limits = resolveBudgetLimits({ budgetUsd: options.budgetUsd, waveBudgetUsd: options.waveBudgetUsd, agentBudgetUsd: options.agentBudgetUsd }, config?.budget_usd);
  const tracker = new BudgetTracker(limits);
  return tracker.active ? tracker : undefined;
}
