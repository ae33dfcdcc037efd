import { appendFile } from 'node:fs/promises';
import path from 'node:path';
import { PolywaveError } from '../../errors/polywave-error.js';
import { decidePostToolUse, decidePreToolUse, decideSubagentStop, recordPreToolUseDenial, type HookDecision, type HookPayload } from '../claude-hooks.js';
import type { CommandIo, CommandResult } from '../io.js';

const maxPayloadBytes = 8 * 1024 * 1024;

const events = {
  'pre-tool-use': 'PreToolUse',
  'post-tool-use': 'PostToolUse',
  'subagent-stop': 'SubagentStop',
} as const;
type HookEvent = keyof typeof events;

function eventFrom(argument: string | undefined): HookEvent {
  const normalized = (argument ?? '').trim();
  for (const [name, claudeName] of Object.entries(events) as Array<[HookEvent, string]>) {
    if (normalized === name || normalized === claudeName) return name;
  }
  throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `hook: unknown event ${JSON.stringify(argument ?? '')} (expected ${Object.keys(events).join(', ')})` });
}

function parsePayload(text: string): HookPayload {
  if (Buffer.byteLength(text) > maxPayloadBytes) throw new PolywaveError({ code: 'RESOURCE_EXHAUSTION', message: `hook: the payload on stdin is larger than ${maxPayloadBytes} bytes` });
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `hook: stdin is not the JSON payload of a Claude Code hook (${error instanceof Error ? error.message : String(error)})` });
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'hook: the payload on stdin is not a JSON object' });
  return value as HookPayload;
}

/** The answer in Claude Code's hook output format (exit 0 + JSON; nothing at all for "no opinion"). */
function claudeOutput(decision: HookDecision): unknown {
  if (decision.action === 'pass') return decision.reason === undefined ? undefined : { systemMessage: decision.reason };
  if (decision.event === 'pre-tool-use') {
    return { hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: decision.reason ?? '' } };
  }
  return { decision: 'block', reason: decision.reason ?? '' };
}

/**
 * `hook <pre-tool-use|post-tool-use|subagent-stop> [--log FILE]` — the entry point of the Claude
 * Code plugin's hooks (claude-plugin/hooks/hooks.json): reads the hook payload on stdin and
 * answers in Claude Code's format. PreToolUse: E43/I1 worktree jail, I6 role limits
 * (deny = `hookSpecificOutput.permissionDecision: deny`); PostToolUse: E16 validation of a
 * written IMPL manifest; SubagentStop: E42/E48 obligations (block = `{decision: block, reason}`).
 * No output when the hook has no objection. A PreToolUse refusal in an agent's worktree is also
 * appended to that agent's `denials.jsonl` (agent-status, finalize-wave check-jail-denials,
 * `--strict-ownership`); a failure to record it is a line on stderr, the call stays refused. Each decision is appended as one JSON line to
 * `--log` / `$POLYWAVE_HOOK_LOG` when set. Exit 0; 2 on an unreadable payload (Claude Code then
 * blocks the call and shows the one-line error: fail closed).
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const event = eventFrom(args[0]);
  const payload = parsePayload(await io.readStdin());
  let decision: HookDecision;
  if (event === 'pre-tool-use') {
    decision = await decidePreToolUse(payload, io);
    // Issue 13: a refusal in an agent's worktree goes to that agent's denials store (never changes the decision).
    if (decision.action === 'deny') {
      const note = await recordPreToolUseDenial(decision, payload, io);
      if (note !== undefined) io.stderr(`${note}\n`);
    }
  } else if (event === 'post-tool-use') decision = await decidePostToolUse(payload, io);
  else decision = await decideSubagentStop(payload, io);

  const logFile = typeof options.log === 'string' && options.log !== '' ? options.log : io.env.POLYWAVE_HOOK_LOG;
  if (logFile) {
    const input = payload.tool_input !== null && typeof payload.tool_input === 'object' ? payload.tool_input : {};
    const target = ['file_path', 'notebook_path', 'command'].map((key) => input[key]).find((value) => typeof value === 'string');
    const line = { time: io.now().toISOString(), ...decision, ...(payload.agent_type ? { agent_type: payload.agent_type } : {}), ...(target !== undefined ? { target } : {}) };
    try {
      await appendFile(path.resolve(io.cwd, logFile), `${JSON.stringify(line)}\n`);
    } catch (error) {
      io.stderr(`polywave hook: cannot write the log ${logFile}: ${error instanceof Error ? error.message : String(error)}\n`);
    }
  }
  const output = claudeOutput(decision);
  if (output !== undefined) io.stdout(`${JSON.stringify(output)}\n`);
  return 0;
}
