import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { AgentEvent } from '../agents/contract.js';
import { quarantineSuffix } from '../git/quarantine-move.js';
import { realOrResolved } from '../sandbox/sandbox-plan.js';

/**
 * Outside attack P13-33 (I6: the Scout writes its IMPL doc and nothing else): a Scout's or Planner's output doc is the
 * one file its sandbox lets it write — and so lets every
 * process it starts write, the repository's own code included (a tier-1 agent's test, run by a tier-2 Scout's bash,
 * set that plan's test command and gates to `true`; run by a Planner's, the PROGRAM's tier gate).
 *
 * The rule (outside round P14, P14-01/P14-18/P14-23): the doc's content is what the agent's own write_file/edit_file
 * calls produced from the agent's own previous content — its "own text": the doc as it was when the agent started
 * (or absent), then what each of its own write/edit calls left. A change by anything else, at any time, is undone
 * — the changed copy kept in the quarantine — before the agent's next write/edit of the doc applies (so an edit_file
 * never adopts a process's change into the agent's text: it applies to the agent's own text, or fails if its
 * old text is no longer there) and again when the agent ends. A doc written only by a process (bash, no write_file)
 * is not the agent's: it is taken away, and the Scout's next attempt is told to write it with write_file.
 * Only backends that run polywave's own tools (ai-sdk, script: `trackFromStart`) report such calls; for the
 * others (claude-code, cli:*, whose tools are their own) nothing is known from the start, and the check holds only
 * from a reported write_file/edit_file of the doc on (documented).
 */
export function watchOwnWrites(
  docPath: string,
  root: string,
  options: { quarantineName: () => string; trackFromStart?: boolean },
): { onEvent: (event: AgentEvent) => void; putBack: () => Promise<string | undefined> } {
  const writing = new Set<string>();
  let moves = 0;
  const notes: string[] = [];
  const read = (): string | null => {
    try {
      return readFileSync(docPath, 'utf8');
    } catch {
      return null;
    }
  };
  /** undefined: nothing known (yet); null: the agent's own state of the doc is "absent". */
  let ownText: string | null | undefined = options.trackFromStart ? read() : undefined;
  const relative = path.relative(root, docPath).split(path.sep).join('/');
  const isDoc = (file: unknown): boolean => typeof file === 'string' && file !== '' && sameFile(path.resolve(root, file), docPath);
  /** Puts the agent's own text back if the doc differs from it; says what was undone. */
  const restore = (when: string, ended: boolean): void => {
    if (ownText === undefined) return;
    const now = read();
    // An empty doc is no doc: the sandbox makes an absent one empty to bind it writable (src/agents/run-agent.ts).
    if ((now ?? '') === (ownText ?? '')) return;
    let kept: string | undefined;
    if (now) {
      try {
        moves += 1;
        // A copy (the doc itself may be bound into the agent's sandbox: it is rewritten in place, never moved while the
        // agent runs), with the quarantine's suffix (src/git/quarantine-move.ts): nothing takes it for a doc or code.
        const target = path.join(root, '.git', 'polywave', 'quarantine', `${options.quarantineName()}-${moves}`, `${relative}${quarantineSuffix}`);
        mkdirSync(path.dirname(target), { recursive: true });
        writeFileSync(target, now, { flag: 'wx' });
        kept = target;
      } catch {
        kept = undefined;
      }
    }
    try {
      if (ownText === null && ended) rmSync(docPath, { force: true });
      else writeFileSync(docPath, ownText ?? '');
    } catch {
      // the caller's validation reads what is there
    }
    const what = !ownText ? 'taken away (none of it was written with write_file/edit_file: write the doc with write_file)' : "its own text is put back";
    // P15-22: what the process changed, in a few lines (the whole changed copy is kept).
    const change = ownText ? changedLines(ownText, now ?? '') : '';
    notes.push(`${relative} was changed ${when}, by a process it ran (code of the repository), not by its own write_file/edit_file: ${what}${change ? ` (undone: ${change})` : ''}${kept ? `; the changed copy is in ${kept}` : ''}`);
  };
  return {
    onEvent: (event) => {
      if (event.type === 'tool-call-start' && (event.tool === 'write_file' || event.tool === 'edit_file') && isDoc(event.input.path)) {
        // P14-01: before the agent's own write/edit applies, the doc is its own text again (an edit never adopts a change).
        restore(`before the agent's ${event.tool} of it`, false);
        writing.add(event.toolCallId);
      }
      if (event.type === 'tool-call-end' && writing.delete(event.toolCallId)) {
        // A failed call may still have written (a partial write): what is there now is the agent's own call's result.
        if (!event.isError || ownText !== undefined) ownText = read();
      }
    },
    putBack: async () => {
      restore(!ownText ? 'while the agent ran' : "after the agent's last write_file/edit_file of it", true);
      return notes.length > 0 ? notes.join('; ') : undefined;
    },
  };
}

/** The lines `changed` has that `own` has not (+) and the other way round (-): a few, shortened, quoted. */
export function changedLines(own: string, changed: string): string {
  const count = (text: string) => {
    const lines = new Map<string, number>();
    for (const line of text.split('\n')) lines.set(line, (lines.get(line) ?? 0) + 1);
    return lines;
  };
  const only = (text: string, other: Map<string, number>) => {
    const left = new Map(other);
    return text.split('\n').filter((line) => {
      const seen = left.get(line) ?? 0;
      if (seen > 0) {
        left.set(line, seen - 1);
        return false;
      }
      return line.trim() !== '';
    });
  };
  const quote = (line: string) => JSON.stringify(line.length > 80 ? `${line.slice(0, 77)}...` : line);
  const list = (sign: string, lines: string[]) => [...lines.slice(0, 3).map((line) => `${sign}${quote(line)}`), ...(lines.length > 3 ? [`${sign}${lines.length - 3} more line(s)`] : [])];
  return [...list('-', only(own, count(changed))), ...list('+', only(changed, count(own)))].join(', ');
}

/** Whether agents of `backend` run polywave's own tools (write_file, edit_file, bash: each call reported as it starts). */
export function ownTools(backend: string): boolean {
  return backend === 'ai-sdk' || backend === 'script';
}

/** Whether two paths name one file (symlinks resolved where they exist). */
function sameFile(a: string, b: string): boolean {
  return path.resolve(a) === path.resolve(b) || realOrResolved(a) === realOrResolved(b);
}
