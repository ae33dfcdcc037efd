import { PolywaveError } from '../../errors/polywave-error.js';
import { criticErrorCount } from '../../orchestrator/run-critic.js';
import { editImpl } from '../../store/manifest-file.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { implPathFrom, requireManifest, requireOption } from './shared.js';

/**
 * `set-critic-verdict <impl> --verdict pass|issues` — E37: after the orchestrator corrected the
 * IMPL issues the critic flagged, change `critic_report.verdict` (stored upper-case) without
 * hand-editing YAML; the rest of the report is kept. Prints compact `{impl_path, old_verdict,
 * new_verdict}`. Exit 0 saved, 1 the IMPL has no critic_report (CRITIC_REPORT_MISSING,
 * nothing written), 2 bad input.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const verdict = requireOption(options, 'verdict', '--verdict').toUpperCase();
  if (verdict !== 'PASS' && verdict !== 'ISSUES') {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `invalid --verdict "${String(options.verdict)}": must be one of pass, issues` });
  }
  const implPath = implPathFrom(args, io);
  const outcome = await editImpl(implPath, (parsed) => {
    const report = requireManifest(parsed, implPath).critic_report;
    if (report === undefined) {
      throw new PolywaveError({ code: 'CRITIC_REPORT_MISSING', message: `${implPath} has no critic_report to update (run the critic first: polywave run-critic, or set-critic-review)`, exitCode: 1 });
    }
    const old = report.verdict ?? '';
    return { edits: old === verdict ? [] : [{ path: ['critic_report', 'verdict'], value: verdict }], outcome: { old, errors: criticErrorCount(report) } };
  });
  if (verdict === 'PASS' && outcome.errors > 0) io.stderr(`set-critic-verdict: warning: verdict PASS but the report still lists ${outcome.errors} error-severity issue(s) — E37 says ISSUES\n`);
  printJson(io, { impl_path: implPath, old_verdict: outcome.old, new_verdict: verdict }, { compact: true });
  return 0;
}
