// Types of scripts/compat-lib.mjs (for test/compat-table.test.ts).

export interface GoFlag {
  name: string;
  short?: string;
  type: string;
  description: string;
  default?: string;
}

export interface GoCommand {
  summary: string;
  usage: string;
  flags: GoFlag[];
  subcommands?: string[];
  /** `binary`: walked from the Go binary's --help; `source`: read from the Go source (not in the partial build). */
  source?: 'binary' | 'source';
}

export interface GoHelpTree {
  go_binary?: string;
  go_source?: string;
  globalFlags: GoFlag[];
  commands: Record<string, GoCommand>;
}

export interface OurHelp {
  usage: string;
  options: Array<{ name: string; takesValue: boolean }>;
  commands: string[];
}

export type CompatStatus = 'present' | 'planned' | 'difference' | 'missing';

export interface CompatFlagRow {
  name: string;
  type: string;
  global: boolean;
  status: CompatStatus;
  issue?: number;
  note?: string;
}

export interface CompatRow {
  command: string;
  source: 'binary' | 'source';
  summary: string;
  status: CompatStatus;
  issue?: number;
  plan?: string;
  note?: string;
  flags: CompatFlagRow[];
}

export interface CompatNotes {
  planned: Record<string, { issue: number; note?: string }>;
  differences: Record<string, string>;
}

export const ignoredGoCommands: Set<string>;
export function parseCobraHelp(text: string): { summary: string; usage: string; commands: Array<{ name: string; summary: string }>; flags: GoFlag[]; globalFlags: GoFlag[] };
export function parseCommanderHelp(text: string): OurHelp;
export function walkGoHelp(runHelp: (args: string[]) => string): { globalFlags: GoFlag[]; commands: Record<string, GoCommand> };
export function commandsFromGoSource(files: Record<string, string>): Record<string, GoCommand>;
export function compareTrees(goTree: GoHelpTree, ours: (path: string) => OurHelp | undefined, notes: CompatNotes): CompatRow[];
export function summarize(rows: CompatRow[]): Record<string, number>;
export function renderMarkdown(rows: CompatRow[], meta: { goSource: string }): string;
