/**
 * Everything a command may take from the outside world, read once in cli/ and passed down
 * (DESIGN §3: nothing below cli/ calls process.cwd(), reads env or prints).
 */
export interface CommandIo {
  cwd: string;
  env: Readonly<Record<string, string | undefined>>;
  now: () => Date;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Reads all of standard input (for `--file -`). */
  readStdin: () => Promise<string>;
  /** True when stderr is a terminal (live progress redraws in place). */
  stderrIsTty?: boolean;
  /**
   * True once stdout's reader went away (EPIPE, `| head`): output is dropped from then on. Commands
   * that only print until interrupted (`--follow`) stop on it; the others finish their work.
   */
  outputClosed?: () => boolean;
  /**
   * Writes polywave's own terminal control sequences (the live progress redraw) to stderr as they are.
   * Set by main(), whose stdout/stderr escape every control character (terminal-text.ts): nothing
   * an agent, a model or a repository wrote may go through it.
   */
  terminalControl?: (sequence: string) => void;
  /** Asks a question on the terminal; absent when stdin is not a terminal. */
  ask?: (question: string) => Promise<string>;
  /**
   * Standard input as a stream, for a command that reads it line by line as it goes (the interview's
   * piped answers); `process.stdin` when absent. An embedder (a test calling main()) gives its own.
   */
  stdin?: NodeJS.ReadableStream & { isTTY?: boolean };
}

/** A command's outcome: the exit code (0 success, 1 "no", 2 bad input/fatal). */
/** 130: interrupted (SIGINT/SIGTERM; program-execute), as a shell reports a Ctrl-C. */
export type CommandResult = 0 | 1 | 2 | 130;

/** Prints a JSON document on stdout: indented like the Go tool, or compact where Go is compact. */
export function printJson(io: CommandIo, value: unknown, options: { compact?: boolean } = {}): void {
  io.stdout(`${options.compact ? JSON.stringify(value) : JSON.stringify(value, null, 2)}\n`);
}

/** Creates the real process-backed io. */
export function processIo(): CommandIo {
  return {
    cwd: process.cwd(),
    env: process.env,
    now: () => new Date(),
    stderrIsTty: process.stderr.isTTY === true,
    outputClosed: () => process.stdout.destroyed,
    ...(process.stdin.isTTY
      ? {
          ask: async (question: string) => {
            const { createInterface } = await import('node:readline/promises');
            const readline = createInterface({ input: process.stdin, output: process.stderr });
            try {
              return await readline.question(question);
            } finally {
              readline.close();
            }
          },
        }
      : {}),
    // A reader that went away (`| head`): bin/polywave.js ignores the EPIPE, the stream is destroyed,
    // and later output is dropped — the command still finishes its work (issue 13 N10).
    stdout: (text) => {
      if (!process.stdout.destroyed) process.stdout.write(text);
    },
    stderr: (text) => {
      if (!process.stderr.destroyed) process.stderr.write(text);
    },
    readStdin: async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    },
  };
}
