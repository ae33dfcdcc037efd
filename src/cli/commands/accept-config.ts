import path from 'node:path';
import { PolywaveError } from '../../errors/polywave-error.js';
import { acceptHeadConfig, clearConfigBlock, configBlockInEffect, configBlockPath, readConfigBlock, repositoryOf } from '../../store/trusted-config.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';

/**
 * `accept-config [--repo-dir <dir>] [--check]` (issue 11, outside attack X10 N9): after finalize-wave
 * BLOCKED a merged change of polywave.config.json (SANDBOX_CONFIG_CHANGED), every later command of
 * the repository refuses until a human accepts it. This accepts HEAD's committed config as it is now
 * (removes `<git common dir>/polywave/config-block.json` and remembers the accepted config in
 * `config-accepted.json`, so re-running the blocked wave's finalize-wave needs no `--accept-changes`); `--check` only says whether a blocked
 * change is in effect (exit 1 when it is). A change reverted on the branch needs no acceptance: the
 * record is removed.
 */
export async function run(_args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const directory = path.resolve(io.cwd, typeof options.repoDir === 'string' ? options.repoDir : '.');
  const repository = await repositoryOf(directory);
  if (repository === undefined) throw new PolywaveError({ code: 'D011_REPO_ROOT_INVALID', message: `${directory} is not inside a git repository (pass --repo-dir)` });
  const record = await readConfigBlock(repository);
  const block = record === undefined ? undefined : await configBlockInEffect(repository.toplevel);
  const about = record === undefined ? {} : { impl: record.impl, wave: record.wave, accepted_before: record.accepted_commit, record: configBlockPath(repository) };
  if (options.check === true) {
    printJson(io, { blocked: block !== undefined, ...about, ...(block ? { changes: block.keys } : {}) });
    return block === undefined ? 0 : 1;
  }
  if (record === undefined) {
    printJson(io, { accepted: false, blocked: false, message: 'no blocked polywave.config.json change to accept' });
    return 0;
  }
  if (block === undefined) {
    await clearConfigBlock(repository.toplevel);
    printJson(io, { accepted: false, blocked: false, ...about, message: 'the blocked change is no longer at HEAD (reverted): record removed' });
    return 0;
  }
  await acceptHeadConfig(repository.toplevel, io.now());
  printJson(io, { accepted: true, blocked: false, ...about, changes: block.keys, message: `accepted HEAD's polywave.config.json: ${block.keys.join('; ')}` });
  return 0;
}
