import type { PolywaveEvent } from '../engine/events.js';
import type { CommandIo } from './io.js';
import { oneTerminalLine } from './terminal-text.js';

interface AgentLine {
  agent: string;
  status: string;
  attempt: number;
  started?: number;
  ended?: number;
  turns: number;
  inputTokens: number;
  outputTokens: number;
  costUsd?: number | undefined;
  note?: string;
}

const oneLine = oneTerminalLine;

function tokens(count: number): string {
  return count >= 1_000_000 ? `${(count / 1_000_000).toFixed(1)}M` : count >= 1000 ? `${(count / 1000).toFixed(1)}k` : String(count);
}

function seconds(ms: number): string {
  return ms >= 60_000 ? `${Math.floor(ms / 60_000)}m${String(Math.round((ms % 60_000) / 1000)).padStart(2, '0')}s` : `${(ms / 1000).toFixed(1)}s`;
}

function cost(value: number | undefined): string {
  return value === undefined ? '$—' : `$${value < 0.01 && value > 0 ? value.toFixed(4) : value.toFixed(2)}`;
}

/**
 * Live progress of a wave on stderr: one line per agent (status, elapsed, turns, tokens, cost).
 * On a terminal the block is redrawn in place (at most every 200 ms); elsewhere (CI logs, pipes)
 * each change of status is one line, so logs stay readable.
 */
export function createWaveProgress(io: CommandIo, options: { tty: boolean; now?: () => number; /** The prefix of its lines: the command that runs (default run-wave). */ command?: string }): { onEvent: (event: PolywaveEvent) => void; stop: () => void } {
  const now = options.now ?? (() => Date.now());
  const lines = new Map<string, AgentLine>();
  let drawn = 0;
  let timer: NodeJS.Timeout | undefined;
  const render = () => {
    // oneLine: the redraw moves up one line per row; a newline in a note would leave stale lines behind.
    const rows = [...lines.values()].map((line) => {
      const elapsed = line.started === undefined ? 0 : (line.ended ?? now()) - line.started;
      return `  ${line.agent.padEnd(4)} ${line.status.padEnd(10)} ${seconds(elapsed).padStart(7)}  turns ${String(line.turns).padStart(3)}  tok ${tokens(line.inputTokens)}/${tokens(line.outputTokens)}  ${cost(line.costUsd)}${line.attempt > 1 ? `  (attempt ${line.attempt})` : ''}${line.note ? `  ${oneLine(line.note)}` : ''}`;
    });
    // Our own cursor moves go through terminalControl; the rows (agent notes, tool names) through the escaping stderr.
    const control = io.terminalControl ?? io.stderr;
    if (drawn > 0) control(`\u001b[${drawn}F`);
    for (const row of rows) {
      control('\u001b[2K');
      io.stderr(`${row}\n`);
    }
    drawn = rows.length;
  };
  const line = (agent: string): AgentLine => {
    let found = lines.get(agent);
    if (!found) lines.set(agent, (found = { agent, status: 'waiting', attempt: 1, turns: 0, inputTokens: 0, outputTokens: 0 }));
    return found;
  };
  // One event, one line: a newline in an agent's text (explanation, tool error) is shown as \n, so it
  // cannot add a line that reads like polywave's own ("run-wave: wave 1 done: state WAVE_VERIFIED").
  const say = (text: string) => {
    if (!options.tty) io.stderr(`${options.command ?? 'run-wave'}: ${oneLine(text)}\n`);
  };
  const onEvent = (event: PolywaveEvent) => {
    switch (event.type) {
      case 'wave-run-start':
        for (const agent of event.order) line(agent);
        if (options.tty) io.stderr(`wave ${event.wave} of ${event.slug}: ${event.agents.length} agent(s), up to ${event.concurrency} at once${event.reordered ? ` (E1 order: ${event.order.join(', ')})` : ''}\n`);
        else say(`wave ${event.wave}: launching ${event.agents.length} agent(s) in order ${event.order.join(', ')}, up to ${event.concurrency} at once`);
        break;
      case 'agent-launch': {
        const current = line(event.agent);
        Object.assign(current, { status: 'running', attempt: event.attempt, started: now(), ended: undefined, note: undefined });
        say(`[${event.agent}] launched (${event.model}${event.attempt > 1 ? `, attempt ${event.attempt}` : ''})`);
        break;
      }
      case 'agent-progress': {
        const current = line(event.agent);
        Object.assign(current, { turns: event.turns, inputTokens: event.input_tokens, outputTokens: event.output_tokens, costUsd: event.cost_usd });
        break;
      }
      case 'agent-tool-call':
        if (event.denied) {
          line(event.agent).note = `denied ${event.tool}`;
          say(`[${event.agent}] ${event.tool} denied: ${event.denied}`);
        }
        break;
      case 'agent-end': {
        const current = line(event.agent);
        Object.assign(current, { status: event.status, ended: now(), turns: event.turns, inputTokens: event.input_tokens, outputTokens: event.output_tokens, costUsd: event.cost_usd, note: event.explanation ? event.explanation.slice(0, 80) : undefined });
        say(`[${event.agent}] ${event.status} — ${event.turns} turn(s), ${tokens(event.input_tokens)}/${tokens(event.output_tokens)} tokens, ${cost(event.cost_usd)}, ${seconds(event.duration_ms)}${event.explanation ? `: ${event.explanation}` : ''}`);
        break;
      }
      case 'agent-retry':
        line(event.agent).status = 'retrying';
        say(`[${event.agent}] E19 ${event.action} (${event.failure_type}), attempt ${event.next_attempt}${event.backoff_ms > 0 ? ` after ${seconds(event.backoff_ms)}` : ''}: ${event.note}`);
        break;
      case 'step-end':
        if (!options.tty || event.step.status === 'failed') io.stderr(`${event.command}: [${event.step.step}] ${event.step.status} — ${event.step.detail}\n`);
        break;
      case 'wave-run-end':
        if (options.tty) render();
        say(`wave ${event.wave} ${event.success ? 'done' : 'stopped'}: state ${event.state}, ${seconds(event.duration_ms)}, ${cost(event.cost_usd)}`);
        break;
      default:
        break;
    }
    if (options.tty && event.type !== 'step-end' && event.type !== 'wave-run-end' && timer === undefined) {
      timer = setTimeout(() => {
        timer = undefined;
        render();
      }, 200);
    }
  };
  return {
    onEvent,
    stop: () => {
      if (timer) clearTimeout(timer);
      timer = undefined;
    },
  };
}
