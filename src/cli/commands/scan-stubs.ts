import path from 'node:path';
import { formatStubTable, scanStubText, type StubHit } from '../../analysis/stubs.js';
import { codes } from '../../errors/codes.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { readTextFile } from '../../store/read-text.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { repoDirOption } from './repo-dir-option.js';

/**
 * `scan-stubs [file…] [--append-impl <impl> --wave N] [--repo-dir D]` — E20 stub patterns.
 * With files: those files as they are on disk (relative to --repo-dir, else the current
 * directory). Without files but with --append-impl and --wave: every file each agent of the wave
 * changed, read from its branch. --append-impl stores `stub_reports.wave{N} = {hits}`.
 * Prints `{hits[{file, line, pattern, context}], skipped?[{file, code, reason}]}` (the E20 table
 * on stderr); exit 0 — the scan is informational. A named file that is missing, a directory,
 * unreadable, binary or too large is skipped (listed in `skipped`), as Go skips it.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const append = typeof options.appendImpl === 'string' && options.appendImpl.trim() !== '' ? options.appendImpl.trim() : undefined;
  const wave = typeof options.wave === 'number' && options.wave > 0 ? options.wave : undefined;
  if (append !== undefined && wave === undefined) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: '--append-impl needs --wave <n>' });
  if (args.length === 0) {
    if (append === undefined) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'give the files to scan, or --append-impl <impl> --wave <n> to scan the wave’s agent branches' });
    // The wave's branches need the engine; a scan of named files (the hooks' call) loads none of it.
    const [{ scanWaveStubs }, { finalizeOptionsFrom }] = await Promise.all([import('../../engine/finalize-wave.js'), import('./finalize-wave.js')]);
    const result = await scanWaveStubs(finalizeOptionsFrom('scan-stubs', [append], { ...options, jsonOnly: true }, io));
    printJson(io, { hits: result.hits, ...(result.success ? {} : { steps: result.steps }) });
    if (result.hits.length > 0) io.stderr(`${result.table}\n`);
    return result.success ? 0 : 2;
  }
  const root = repoDirOption(options, io) ?? io.cwd;
  const hits: StubHit[] = [];
  // Go skips a file it cannot read (hooks pass `git diff --name-only`, which lists deleted files):
  // so do we, and say which (`skipped`, ours) instead of failing the whole scan.
  const skipped: Array<{ file: string; code: string; reason: string }> = [];
  for (const file of args) {
    const absolute = path.resolve(root, file);
    const relative = path.relative(root, absolute).split(path.sep).join('/');
    const shown = relative.startsWith('..') ? file : relative;
    let text: string;
    try {
      text = await readTextFile(absolute);
    } catch (error) {
      if (!PolywaveError.isInstance(error)) throw error;
      skipped.push({ file: shown, code: error.code, reason: error.code === codes.fileNotFound ? 'no such file' : error.message.split(absolute).join(shown) });
      continue;
    }
    for (const hit of scanStubText(shown, text)) hits.push(hit); // not push(...): 150,000+ hits overflow the call stack
  }
  if (append !== undefined) {
    const [{ editImpl }, { implPathFrom, requireManifest }] = await Promise.all([import('../../store/manifest-file.js'), import('./shared.js')]);
    const implPath = implPathFrom([append], io);
    await editImpl(implPath, (parsed) => {
      requireManifest(parsed, implPath);
      return { edits: [{ path: ['stub_reports', `wave${wave}`], value: { hits } }], outcome: undefined };
    });
  }
  printJson(io, { hits, ...(skipped.length > 0 ? { skipped } : {}) });
  if (hits.length > 0) io.stderr(`${formatStubTable(hits, wave === undefined ? {} : { wave })}\n`);
  return 0;
}
