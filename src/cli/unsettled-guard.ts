import type { CommandIo } from './io.js';

/**
 * Node ends a process whose event loop emptied while the command's promise is still pending with
 * exit 13 and no word at all ("unsettled top-level await" of bin/polywave.js): a step awaited
 * something that nothing left running can settle — a request to a child process that died while
 * the child's own handle did not keep the loop alive (the sandbox host after a SIGTERM to the
 * process group did exactly this: program-execute exited 13 in ~1 run of 8). This guard makes that
 * stop loud: the command's own handler (program-execute: an interrupted run, exit 130 and how to
 * resume) or one coded line naming the pending step, exit 1.
 *
 * A signal that arrives as the loop empties is dispatched to its listeners only on the next poll,
 * and signal listeners do not keep the loop alive: on the first drain the guard waits a moment
 * (one short timer) so a SIGINT/SIGTERM that is on its way is seen before anything is decided.
 */

let pendingStep: string | undefined;
const handlers = new Set<() => boolean>();

/** What the running command is doing now (named by the guard if the process stalls there). */
export function notePendingStep(step: string): void {
  pendingStep = step;
}

/**
 * A command's own answer to a stall: called when the loop emptied with the command unfinished;
 * returns true when it handled it (it prints and exits), false to leave it to the guard's line.
 * Returns the function that removes it.
 */
export function onUnsettled(handler: () => boolean): () => void {
  handlers.add(handler);
  return () => {
    handlers.delete(handler);
  };
}

/** Grace on the first drain for a signal on its way (ms). */
export const unsettledGraceMs = 100;

interface Guard {
  command: string;
  stderr: (text: string) => void;
  exit: (code: number) => void;
  graced: boolean;
}

/** The commands running in this process (the resident server runs several at once): one listener for all. */
const active = new Set<Guard>();

function onBeforeExit(): void {
  const guards = [...active];
  if (guards.length === 0) return;
  if (guards.some((guard) => !guard.graced)) {
    for (const guard of guards) guard.graced = true;
    setTimeout(() => undefined, unsettledGraceMs);
    return;
  }
  for (const handler of handlers) if (handler()) return;
  const guard = guards[0]!;
  const step = pendingStep === undefined ? '' : ` (last step: ${pendingStep.split('\n')[0]!.trim().slice(0, 200)})`;
  guard.stderr(`polywave: error[INTERNAL_UNSETTLED]: ${guard.command} stopped unfinished: it was waiting for something nothing left running can finish${step} — an internal error; re-run the command (what it changed is as a kill at that point leaves it)\n`);
  guard.exit(1);
}

/**
 * Installs the guard for one command run (`command`: its name, for the message); returns the
 * function that removes it, to be called once the command settled.
 */
export function guardUnsettled(command: string, io: Pick<CommandIo, 'stderr'>, exit: (code: number) => void = (code) => process.exit(code)): () => void {
  const guard: Guard = { command, stderr: io.stderr, exit, graced: false };
  if (active.size === 0) process.on('beforeExit', onBeforeExit);
  active.add(guard);
  return () => {
    if (!active.delete(guard)) return;
    if (active.size === 0) {
      process.off('beforeExit', onBeforeExit);
      pendingStep = undefined;
    }
  };
}
