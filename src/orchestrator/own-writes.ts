import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { AgentEvent } from '../agents/contract.js';
import { moveToQuarantine } from '../git/quarantine-move.js';
import { realOrResolved } from '../sandbox/sandbox-plan.js';
import { writeFileAtomic } from '../store/atomic-file.js';

/**
 * Outside attack P13-33 (I6: the Scout writes its IMPL doc and nothing else): a Scout's or Planner's output doc is the
 * one file its sandbox lets it write — and so lets every
 * process it starts write, the repository's own code included (a tier-1 agent's test, run by a tier-2 Scout's bash,
 * set that plan's test command and gates to `true`; run by a Planner's, the PROGRAM's tier gate). What the agent's own
 * write_file/edit_file left in the doc is read as each such call ends (nothing the agent started runs then: a tool
 * call's processes end with it); a later change is a process's, never the agent's plan, and is undone — the changed
 * copy kept in the quarantine. Backends whose tools are their own (claude-code, cli:*) report no such calls: nothing
 * is read for them (documented).
 */
export function watchOwnWrites(docPath: string, root: string): { onEvent: (event: AgentEvent) => void; putBack: (quarantineName: string) => Promise<string | undefined> } {
  const writing = new Set<string>();
  let ownText: string | undefined;
  const isDoc = (file: unknown): boolean => typeof file === 'string' && file !== '' && sameFile(path.resolve(root, file), docPath);
  return {
    onEvent: (event) => {
      if (event.type === 'tool-call-start' && (event.tool === 'write_file' || event.tool === 'edit_file') && isDoc(event.input.path)) writing.add(event.toolCallId);
      if (event.type === 'tool-call-end' && writing.delete(event.toolCallId) && !event.isError) {
        try {
          ownText = readFileSync(docPath, 'utf8');
        } catch {
          ownText = undefined;
        }
      }
    },
    putBack: async (quarantineName) => {
      if (ownText === undefined) return undefined;
      const now = await readFile(docPath, 'utf8').catch(() => undefined);
      if (now === ownText) return undefined;
      const relative = path.relative(root, docPath).split(path.sep).join('/');
      const kept = now === undefined ? undefined : await moveToQuarantine(docPath, path.join(root, '.git', 'polywave', 'quarantine', quarantineName, relative)).catch(() => undefined);
      await writeFileAtomic(docPath, ownText);
      return `${relative} was changed after the agent's last write_file/edit_file of it, by a process it ran (code of the repository): its own text is put back${kept ? `; the changed copy is in ${kept}` : ''}`;
    },
  };
}

/** Whether two paths name one file (symlinks resolved where they exist). */
function sameFile(a: string, b: string): boolean {
  return path.resolve(a) === path.resolve(b) || realOrResolved(a) === realOrResolved(b);
}
