import { invokedCommandName } from './invoked-command.js';
import { Command, CommanderError, Option } from 'commander';
import { PolywaveError } from '../errors/polywave-error.js';
import { commandTable } from './command-table.js';
import type { CommandSpec, OptionSpec } from './command-spec.js';
import { processIo, type CommandIo, type CommandResult } from './io.js';
import { terminalSafeIo } from './terminal-text.js';
import { readPackageVersion } from './version.js';
import { guardUnsettled } from './unsettled-guard.js';
import { absolutePathEntries, distrustSearchRoot } from '../sandbox/search-path.js';

function parseInteger(flag: string) {
  return (value: string): number => {
    if (!/^\d+$/.test(value.trim())) {
      throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${flag} expects a non-negative integer, got "${value}"` });
    }
    return Number(value.trim());
  };
}

function collectList(value: string, previous: string[] | undefined): string[] {
  const items = value.split(',').map((item) => item.trim()).filter((item) => item.length > 0);
  return [...(previous ?? []), ...items];
}

function addOption(command: Command, spec: OptionSpec): void {
  const option = new Option(spec.flags, spec.description);
  const flag = spec.flags.split(/[ ,]/)[0]!;
  if (spec.integer) option.argParser(parseInteger(flag));
  if (spec.list) option.argParser(collectList);
  if (spec.defaultValue !== undefined) option.default(spec.defaultValue);
  if (spec.required) option.makeOptionMandatory(true);
  command.addOption(option);
}

/** Accepted by every command, like Go's persistent `--repo-dir` (a command's own `--repo-dir` says what it does with it). */
const globalRepoDir: OptionSpec = { flags: '--repo-dir <dir>', description: 'repository root directory (default: current directory)' };

/** Kernel lock waits given up after a timeout: bin/polywave.js exits instead of waiting for them. */
export { abandonedLockWaits } from '../store/kernel-lock.js';

/** Formats an error as the one line users see: `polywave: error[CODE]: message`. */
export function formatErrorLine(error: PolywaveError): string {
  return `polywave: error[${error.code}]: ${error.message.split('\n')[0]}\n`;
}

/**
 * The table row of the command `argv` runs, when it names one after the root options
 * (`[--repo-dir D] <command> …`); undefined for help, version, an unknown name or no command.
 */
function invokedCommand(argv: string[]): CommandSpec | undefined {
  const name = invokedCommandName(argv);
  return name === undefined ? undefined : commandTable.find((spec) => spec.name === name);
}

/**
 * Go's flag syntax for booleans, `--json=false` / `--fix=true` (cobra accepts it; scripts written for
 * the Go tool use it): rewritten for commander, which only knows `--json` and `--no-json`. `=true`
 * becomes the bare flag; `=false` drops it (or becomes `--no-x` / is dropped for a negatable flag).
 * Only the command's own boolean options; everything after `--` is left alone.
 */
export function normalizeBooleanFlags(argv: readonly string[], spec: CommandSpec | undefined): string[] {
  if (!spec) return [...argv];
  const names = new Set((spec.options ?? []).filter((option) => !/[<[]/.test(option.flags)).flatMap((option) => option.flags.split(/[ ,]+/).filter((flag) => flag.startsWith('--'))));
  const out: string[] = [];
  for (let index = 0; index < argv.length; index += 1) {
    const argument = argv[index]!;
    if (argument === '--') {
      out.push(...argv.slice(index));
      break;
    }
    const match = /^(--[A-Za-z0-9][\w-]*)=(.*)$/.exec(argument);
    const flag = match?.[1];
    if (!match || !flag || !(names.has(flag) || names.has(`--no-${flag.slice(2)}`))) {
      out.push(argument);
      continue;
    }
    const value = match[2]!.toLowerCase();
    if (!['true', 'false', '1', '0', 't', 'f'].includes(value)) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${flag} is a true/false flag, got "${match[2]}"` });
    const on = value === 'true' || value === '1' || value === 't';
    if (names.has(flag)) {
      if (on) out.push(flag);
      else if (names.has(`--no-${flag.slice(2)}`)) out.push(`--no-${flag.slice(2)}`);
    } else if (!on) out.push(`--no-${flag.slice(2)}`);
  }
  return out;
}

/**
 * The commander program: every command of the table, or only `only` — a call that names its
 * command needs no other (building all ~100 with their options is a measurable part of a call).
 */
function buildProgram(io: CommandIo, setResult: (result: CommandResult) => void, only?: CommandSpec): Command {
  const program = new Command('polywave');
  program
    .description('Polywave: run AI coding agents in parallel on one git repository without merge conflicts.\nAlso installed as `polywave-tools` (same commands, flags and JSON as the Go reference).')
    .version(readPackageVersion(), '-V, --version', 'print the version')
    .helpOption('-h, --help', 'show help')
    .showSuggestionAfterError(true)
    // Go's persistent root flag: `polywave --repo-dir D <cmd>` as well as `<cmd> --repo-dir D`.
    .option(globalRepoDir.flags, globalRepoDir.description)
    .enablePositionalOptions()
    .configureOutput({
      writeOut: (text) => io.stdout(text),
      writeErr: (text) => io.stderr(text),
      // Commander's own error text is printed by main() as our one coded line instead.
      outputError: () => undefined,
    })
    .exitOverride();

  const groups = new Map<string, CommandSpec[]>();
  for (const spec of only ? [only] : commandTable) {
    const list = groups.get(spec.group) ?? [];
    list.push(spec);
    groups.set(spec.group, list);
  }
  for (const [group, specs] of groups) {
    program.commandsGroup(`${group}:`);
    for (const spec of specs) {
      const command = program.command(spec.name).description(spec.summary).helpOption('-h, --help', 'show help for this command');
      for (const argument of spec.arguments ?? []) command.argument(argument);
      for (const option of spec.options ?? []) addOption(command, option);
      if (!spec.options?.some((option) => option.flags.startsWith('--repo-dir'))) addOption(command, globalRepoDir);
      if (spec.help) command.addHelpText('after', `\n${spec.help}`);
      command.exitOverride();
      command.action(async (...actionArgs: unknown[]) => {
        const commandObject = actionArgs[actionArgs.length - 1] as Command;
        const positional = commandObject.args;
        const module = await spec.load();
        setResult(await module.run(positional, { ...program.opts(), ...commandObject.opts() }, io));
      });
    }
  }
  return program;
}

/**
 * The most arguments one call takes. The option parser (commander) spreads the arguments it passes
 * on into a call: around 130,000 of them exceed V8's stack ("Maximum call stack size exceeded"),
 * so a longer list is refused up front with a coded line (xargs splits a list by the system's own
 * limit, which a call of short paths can approach on Linux: 2 MiB of argv ≈ 200,000 one-letter names).
 */
export const maxArguments = 65_536;

/**
 * Runs the CLI with `argv` (without node and script) and returns the exit code.
 * The only place that turns errors into output: PolywaveErrors become one line with their code;
 * anything else is an internal error (stack only with POLYWAVE_DEBUG=1).
 */
export async function main(argv: string[], rawIo: CommandIo = processIo()): Promise<CommandResult> {
  // X21-07: no control character an agent, a model or a repository wrote reaches the terminal raw.
  const io = terminalSafeIo(rawIo);
  // X40-02/X41: every program this process starts by name (git, the sandbox's bash and bwrap, gates' tools) is found
  // on PATH's absolute entries only — an empty or relative entry is searched from the command's cwd, an agent's
  // worktree or the main checkout its work is merged into — nor from an absolute entry inside the repositories around
  // the working directory (X42-11/12: direnv's `PATH_add bin`, an agent's planted `bin/git`).
  distrustSearchRoot(io.cwd);
  if (process.env.PATH !== undefined) process.env.PATH = absolutePathEntries(process.env.PATH);
  if (argv.length > maxArguments) {
    io.stderr(formatErrorLine(new PolywaveError({ code: 'RESOURCE_EXHAUSTION', message: `${argv.length} arguments: at most ${maxArguments} in one call (split the list, e.g. with xargs -n ${maxArguments / 2})` })));
    return 2;
  }
  let result: CommandResult = 0;
  const invoked = invokedCommand(argv);
  const program = buildProgram(
    io,
    (value) => {
      result = value;
    },
    invoked,
  );
  try {
    if (argv.length === 0) {
      program.outputHelp();
      return 0;
    }
    // A command that stalls with nothing left running ends loud, never as Node's silent exit 13.
    const unguard = guardUnsettled(invoked?.name ?? 'polywave', io);
    try {
      await program.parseAsync(normalizeBooleanFlags(argv, invoked), { from: 'user' });
    } finally {
      unguard();
    }
    return result;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.code === 'commander.help') return 0;
      // Bad flags/arguments: one coded line like every other error (DESIGN §4), exit 2.
      const message = error.message.replace(/^error: /, '').replace(/\s*\n\s*/g, ' ').trim();
      io.stderr(formatErrorLine(new PolywaveError({ code: 'X001_INVALID_INPUT', message })));
      return 2;
    }
    if (PolywaveError.isInstance(error)) {
      io.stderr(formatErrorLine(error));
      return error.exitCode;
    }
    const message = error instanceof Error ? error.message : String(error);
    io.stderr(`polywave: error[INTERNAL]: ${message.split("\n")[0]} (set POLYWAVE_DEBUG=1 for details)\n`);
    if (io.env.POLYWAVE_DEBUG === '1' && error instanceof Error && error.stack) io.stderr(`${error.stack}\n`);
    return 2;
  }
}
