import type { Finding } from '../../errors/finding.js';
import type { ImplRule } from './rule.js';
import { report } from './rule-helpers.js';

/**
 * An agent owns `polywave.config.json` (warning W002, issue 11, outside attack X8 #4): its
 * `sandbox`, `setup`, `teardown` and `agent_clis` settings decide what every later sandbox may reach
 * and what polywave runs, so a merged change to them stops finalize-wave (BLOCKED,
 * SANDBOX_CONFIG_CHANGED) until a human accepts it. Said at validation, before any agent runs.
 * A nested `<dir>/polywave.config.json` is never read for those settings (outside attack X10 N6:
 * only the repository root's committed config sets them), which the warning says too.
 */
export const agentOwnsProjectConfig: ImplRule = {
  name: 'agent-owns-project-config',
  reference: 'issue 11',
  codes: ['W002_AGENT_OWNS_PROJECT_CONFIG'],
  check(context) {
    const findings: Finding[] = [];
    context.manifest.file_ownership.forEach((row, index) => {
      const file = (row.file ?? '').trim().replace(/^\.\//, '');
      if (file !== 'polywave.config.json' && !file.endsWith('/polywave.config.json')) return;
      const message =
        file === 'polywave.config.json'
          ? `agent ${row.agent ?? '?'} owns ${file}: a merged change of its sandbox, setup, teardown, dispatch, repos or agent_clis settings stops finalize-wave (BLOCKED, SANDBOX_CONFIG_CHANGED) and every later command of the repository until you review it and accept it (finalize-wave --accept-changes or polywave accept-config)`
          : `agent ${row.agent ?? '?'} owns ${file}: a nested config's sandbox, setup, teardown, dispatch, repos and agent_clis settings are ignored (only the repository root's committed polywave.config.json sets them)`;
      findings.push(
        report(context, {
          code: 'W002_AGENT_OWNS_PROJECT_CONFIG',
          message,
          severity: 'warning',
          path: ['file_ownership', index, 'file'],
        }),
      );
    });
    return findings;
  },
};
