import { PolywaveError } from '../../errors/polywave-error.js';
import { computeMetrics, metricsEventTypes, type Metrics, type UsageTotals } from '../../observability/metrics.js';
import { openStoreForQuery } from '../event-store-reader.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';

const cost = (value: number | null) => (value === null ? 'unknown' : `$${value.toFixed(4)}`);
const percent = (value: number | null) => (value === null ? '-' : `${(value * 100).toFixed(0)}%`);
const seconds = (milliseconds: number | null) => (milliseconds === null ? '-' : `${(milliseconds / 1000).toFixed(1)} s`);
const tokens = (usage: UsageTotals) => `${usage.input_tokens} in / ${usage.output_tokens} out${usage.cache_read_tokens + usage.cache_write_tokens > 0 ? ` (cache ${usage.cache_read_tokens} read, ${usage.cache_write_tokens} write)` : ''}`;

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, index) => Math.max(...rows.map((row) => row[index]!.length)));
  return rows.map((row) => `  ${row.map((cell, index) => cell.padEnd(widths[index]!)).join('  ').trimEnd()}\n`).join('');
}

function formatMetrics(metrics: Metrics, breakdown: boolean): string {
  const name = metrics.scope.program ? `program ${metrics.scope.program}` : `IMPL ${metrics.scope.impl}`;
  if (metrics.events === 0) return `${name}: no recorded events\n`;
  const totals = metrics.totals;
  let text =
    `${name}: ${metrics.runs} run(s), ${metrics.first_at} → ${metrics.last_at}\n` +
    `  cost ${cost(totals.cost_usd)}, tokens ${tokens(totals)}\n` +
    `  agents: ${totals.agent_attempts} attempt(s), ${totals.agents_succeeded} succeeded, success rate ${percent(totals.success_rate)}\n` +
    `  gates: ${metrics.gates.executed} run, ${metrics.gates.passed} passed, ${metrics.gates.failed} failed\n`;
  if (metrics.waves.length > 0) {
    text += 'waves:\n' + table([['WAVE', 'RUNS', 'SUCCESS', 'AVG DURATION', 'COST', 'TOKENS'], ...metrics.waves.map((wave) => [String(wave.wave), String(wave.runs), percent(wave.success_rate), seconds(wave.avg_duration_ms), cost(wave.cost_usd), tokens(wave)])]);
  }
  if (breakdown) {
    if (metrics.agents.length > 0) {
      text += 'agents:\n' + table([['AGENT', 'WAVE', 'ATTEMPTS', 'SUCCESS', 'DURATION', 'COST', 'TOKENS', 'MODELS'], ...metrics.agents.map((agent) => [agent.agent, agent.wave === null ? '-' : String(agent.wave), String(agent.attempts), percent(agent.success_rate), seconds(agent.duration_ms), cost(agent.cost_usd), tokens(agent), agent.models.join(',') || '-'])]);
    }
    if (metrics.models.length > 0) {
      text += 'models:\n' + table([['MODEL', 'CALLS', 'COST', 'TOKENS'], ...metrics.models.map((model) => [model.model, String(model.calls), cost(model.cost_usd), tokens(model)])]);
    }
  }
  return text;
}

/**
 * `metrics <slug> [--program P] [--breakdown] [--format table|json] [--store F]` — cost, tokens,
 * durations and success rates of an IMPL (or a PROGRAM) from the event store: totals and per
 * wave; `--breakdown` adds per agent and per model (JSON always has them).
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const slug = args[0]?.trim() || undefined;
  const program = typeof options.program === 'string' && options.program.trim() !== '' ? options.program.trim() : undefined;
  if (!slug && !program) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'metrics needs an IMPL slug (or --program <slug>)' });
  const format = typeof options.format === 'string' ? options.format.trim() : options.json === true ? 'json' : 'table';
  if (format !== 'table' && format !== 'json') throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `--format must be table or json (got "${format}")` });
  const scope = program ? { program } : { impl: slug! };
  const store = await openStoreForQuery(options, io);
  const { eventsForMetrics } = await import('../../observability/event-store.js');
  try {
    const metrics = computeMetrics(store.db ? eventsForMetrics(store.db, scope, metricsEventTypes) : [], scope);
    if (format === 'json') printJson(io, metrics);
    else io.stdout(formatMetrics(metrics, options.breakdown === true));
    return 0;
  } finally {
    store.db?.close();
  }
}
