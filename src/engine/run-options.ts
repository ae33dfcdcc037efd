import type { Git } from '../git/git-port.js';
import type { EventBus } from './events.js';
import type { StepResult } from './step.js';

/** Options every engine pipeline (prepare-wave, finalize-wave) takes from its caller. */
export interface EngineRunOptions {
  /** Environment for git, gates and build commands (read once by the CLI). Default: this process's. */
  env?: Readonly<Record<string, string | undefined>>;
  now?: () => Date;
  signal?: AbortSignal;
  events?: EventBus;
  /** Called after every recorded step (the CLI prints progress to stderr). */
  onStep?: (step: StepResult) => void;
  /** Git port factory (default: the git CLI with `env`). */
  gitAt?: (directory: string) => Git;
  /** Per-gate timeout for gates without `timeout_seconds` (ms). */
  gateTimeoutMs?: number;
}
