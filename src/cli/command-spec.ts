import type { CommandIo, CommandResult } from './io.js';

/** A command module: loaded lazily, only when its command runs. */
export interface CommandModule {
  run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult>;
}

export interface OptionSpec {
  /** Commander flags, e.g. `--wave <n>` or `--fix`. */
  flags: string;
  description: string;
  defaultValue?: string | boolean | number;
  /** Parse the value as a non-negative integer (error code X001 otherwise). */
  integer?: boolean;
  /** Option may be repeated / comma-separated into a list. */
  list?: boolean;
  required?: boolean;
}

/** One row of the command table: names, flags and help text follow the Go `polywave-tools`. */
export interface CommandSpec {
  name: string;
  summary: string;
  group: 'Workflows' | 'Setup & verification' | 'Manifests & validation' | 'State & reports' | 'Program layer';
  arguments?: string[];
  options?: OptionSpec[];
  /** Extra help text shown after the options. */
  help?: string;
  load: () => Promise<CommandModule>;
}
