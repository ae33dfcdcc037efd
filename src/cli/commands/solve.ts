import { updateFileLocked } from '../../store/locked-write.js';
import { loadImpl } from '../../store/manifest-file.js';
import { parseImpl } from '../../protocol/parse-impl.js';
import { planSolve } from '../../scout-tools/solve.js';
import type { CommandIo, CommandResult } from '../io.js';
import { implPathFrom, requireManifest } from './shared.js';

/**
 * `solve <impl> [--dry-run]` — wave numbers computed from the agents' `dependencies` (I2: each
 * agent one wave after its latest dependency) and, unless `--dry-run`, the manifest rewritten
 * so each agent sits in its computed wave (comments and every other byte kept; atomic, under
 * the manifest lock, through a symlink to the file it points to, a UTF-8 BOM kept). The plan is
 * made again under the lock and the lines printed are the moves written. Prints Go's text lines.
 * Exit 1 on a cycle or an unknown dependency.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = implPathFrom(args, io);
  const { text, parsed } = await loadImpl(implPath);
  let plan = planSolve(text, requireManifest(parsed, implPath));
  if (plan.changes.length > 0 && !options.dryRun) {
    // Plan again from the text under the lock and print that plan: a concurrent writer's change
    // (another solve included) is kept, and the lines printed are the moves actually written.
    await updateFileLocked(
      implPath,
      (current) => {
        plan = current === text ? plan : planSolve(current, requireManifest(parseImpl(current), implPath));
        return plan.text;
      },
      { keepBom: true, followSymlink: true },
    );
  }
  if (plan.changes.length === 0) {
    io.stdout(`✓ All wave assignments are optimal (${plan.agentCount} agents, ${plan.waveCountBefore} waves)\n`);
    return 0;
  }
  for (const change of plan.changes) io.stdout(`solver: agent ${change.agent}: wave ${change.from} → wave ${change.to}\n`);
  if (options.dryRun) {
    io.stdout('ⓘ Dry run — no changes written\n');
    return 0;
  }
  io.stdout(`✓ Manifest updated with ${plan.changes.length} wave reassignments (${plan.agentCount} agents, ${plan.waveCountAfter} waves)\n`);
  return 0;
}
