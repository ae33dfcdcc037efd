import { isScaffoldCommitted } from '../../protocol/waves.js';
import { loadImpl } from '../../store/manifest-file.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { implPathFrom, requireManifest } from './shared.js';

/** One scaffold's status (Go's `ScaffoldStatus`). */
interface ScaffoldStatus {
  file_path: string;
  status: string;
  valid: boolean;
  message?: string;
}

/**
 * `validate-scaffolds <impl>` — I2/E22: is every scaffold `committed` (`committed`, `committed
 * (<sha>)`)? Prints `{all_committed, scaffold_count, statuses[{file_path, status, valid,
 * message?}]}`. Exit 0 all committed (or none declared), 1 not all, 2 bad input.
 */
export async function run(args: string[], _options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = implPathFrom(args, io);
  const manifest = requireManifest((await loadImpl(implPath)).parsed, implPath);
  const statuses: ScaffoldStatus[] = (manifest.scaffolds ?? []).map((scaffold) => {
    const status = (scaffold.status ?? '').trim();
    const file = scaffold.file_path ?? scaffold.file ?? '';
    if (isScaffoldCommitted(status)) return { file_path: file, status, valid: true };
    const message = status === '' ? 'no status set' : status === 'pending' ? 'scaffold not yet committed' : status.startsWith('FAILED') ? status : `unknown status: ${status}`;
    return { file_path: file, status, valid: false, message };
  });
  const allCommitted = statuses.every((status) => status.valid);
  printJson(io, { all_committed: allCommitted, scaffold_count: statuses.length, statuses });
  return allCommitted ? 0 : 1;
}
