import { PolywaveError } from '../../errors/polywave-error.js';
import { projectRootOf } from '../../store/program-impl-docs.js';
import type { CommandIo } from '../io.js';
import { repoDirOption } from './repo-dir-option.js';
import { programPathFrom } from './shared.js';

/** What every tier command (create-program-worktrees, prepare-tier, tier-gate, finalize-tier) takes. */
export function tierOptionsFrom(args: string[], options: Record<string, unknown>, io: CommandIo): { programPath: string; repoRoot: string; tier: number; env: CommandIo['env'] } {
  const programPath = programPathFrom(args, io);
  const tier = options.tier;
  if (typeof tier !== 'number' || !Number.isInteger(tier) || tier < 1) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: '--tier is required (a tier number >= 1)' });
  // Default: the project holding the manifest (<root>/docs/PROGRAM/…), else the current directory.
  const repoRoot = repoDirOption(options, io) ?? projectRootOf(programPath, io.cwd);
  return { programPath, repoRoot, tier, env: io.env };
}
