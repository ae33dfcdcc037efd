import { Readable } from 'node:stream';
import { main } from '../../src/cli/main.js';
import type { CommandIo } from '../../src/cli/io.js';
import { repoRoot, type CliResult } from './cli.js';

/**
 * `polywave <args>` run in THIS process through `main(argv, io)` — the same code path as
 * bin/polywave.js (commander, the command table, the one-line error formatting), with a recording
 * io instead of the process streams. Same defaults as {@link runCli} (cwd = the repository root,
 * env = process.env + NO_COLOR=1 + `env`), same result shape.
 *
 * Cheap: no Node start-up per call (~0.15 s CPU) and the tree-sitter grammars stay compiled between
 * calls (~0.3 s CPU per cold call of an analysis command). The analysis engine keeps no per-call
 * state between main() calls (src/analysis/engine/scope.ts: roots and counters are per call, the
 * process memory is content-addressed by blob id). Use runCli where the claim is about the process
 * itself: exit status of the binary, no stack trace on stderr, concurrent processes, output bytes.
 */
export async function runCliInProcess(args: string[], options: { cwd?: string; input?: string; env?: Record<string, string> } = {}): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const io: CommandIo = {
    cwd: options.cwd ?? repoRoot,
    env: { ...process.env, NO_COLOR: '1', ...options.env },
    now: () => new Date(),
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
    readStdin: async () => options.input ?? '',
    // (a command reading its input line by line — the interview's piped answers — gets the same text, then its end)
    stdin: Readable.from([options.input ?? '']),
  };
  const start = performance.now();
  const code = await main(args, io);
  return { code, stdout, stderr, durationMs: performance.now() - start };
}
