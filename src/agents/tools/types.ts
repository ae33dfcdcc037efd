/**
 * Our own agent tools (used by the ai-sdk and script backends; the claude-code backend uses Claude
 * Code's tools behind the same jail through hooks). Backend-neutral: a tool is a name, a
 * description, a zod input schema and an executor that never throws for a refused or failed call —
 * the result says so, and the text goes back to the model.
 */
import type { z } from 'zod';
import type { AgentEvent, AgentRunRequest, ToolCallRecorder, ToolDenial } from '../contract.js';
import type { Jail } from '../jail/types.js';
import type { SandboxPlan } from '../../sandbox/sandbox-plan.js';
import type { ToolExecutor } from '../sandbox/tool-executor.js';

export type AgentToolName = 'read_file' | 'write_file' | 'edit_file' | 'list_dir' | 'glob' | 'grep' | 'bash' | 'git_commit' | 'set_completion';

/** What a tool call returns. `output` is what the model sees (already cut to the output limit). */
export interface ToolResult {
  output: string;
  isError: boolean;
  denial?: ToolDenial;
}

/** Per-run context every tool executes with. */
export interface ToolContext {
  jail: Jail;
  /** Environment for bash/git child processes. */
  env: Readonly<Record<string, string | undefined>>;
  signal: AbortSignal;
  toolTimeoutMs: number;
  maxToolOutputBytes: number;
  /** Branch git_commit must commit on (when set). */
  branch?: string;
  reportCompletion?: AgentRunRequest['reportCompletion'];
  /** The wave's base commit: set_completion fills a report's file lists from `base..HEAD` (issue 13, F3). */
  baseCommit?: string;
  /** The OS sandbox bash commands run in (absent: unsandboxed, the jail's static checks only). */
  sandbox?: SandboxPlan;
  /**
   * The per-agent executor inside the sandbox that does the file tools' reads and writes (no
   * check-then-open race). Absent: the file tools work in-process (O_NOFOLLOW on the last component).
   */
  toolExecutor?: ToolExecutor;
  /**
   * What git says about the agent's checkout (HEAD, branch, the diff from the base), already read
   * for this report by a backend that filled the report's fields from git just before the call
   * (the script backend): set_completion checks and fills with the same answers instead of asking
   * git again. Only valid for the one call it is passed to (nothing is committed in between).
   */
  reportFacts?: ReportGitFacts;
}

/** HEAD, the branch and the diff from a base, each read from git at most once (see report-tools.ts). */
export interface ReportGitFacts {
  /** HEAD's commit (undefined: unborn or unreadable) and current branch (undefined: detached). */
  headAndBranch(): Promise<{ head: string | undefined; branch: string | undefined }>;
  /** `git diff --name-status <base>..HEAD` (undefined: git failed). */
  diffFromBase(base: string): Promise<Array<{ status: string; path: string; from?: string }> | undefined>;
}

export interface AgentTool<Input = Record<string, unknown>> {
  name: AgentToolName;
  description: string;
  inputSchema: z.ZodType<Input>;
  execute(input: Input, context: ToolContext): Promise<ToolResult>;
}

/** Hooks around every tool call: journal (E23A) and events. */
export interface ToolCallObserver {
  recorder?: ToolCallRecorder;
  onEvent?: (event: AgentEvent) => void;
  /** Collects denials for the outcome. */
  denials?: ToolDenial[];
}
