import type { Finding } from '../../errors/finding.js';
import type { ImplRule } from './rule.js';
import { report } from './rule-helpers.js';

/**
 * An agent owns `polywave.config.json` (warning W002, issue 11, outside attack X8 #4): its
 * `sandbox`, `setup`, `teardown` and `agent_clis` settings decide what every later sandbox may reach
 * and what polywave runs, so a merged change to them stops finalize-wave (BLOCKED,
 * SANDBOX_CONFIG_CHANGED) until a human accepts it. Said at validation, before any agent runs.
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
      findings.push(
        report(context, {
          code: 'W002_AGENT_OWNS_PROJECT_CONFIG',
          message: `agent ${row.agent ?? '?'} owns ${file}: a merged change of its sandbox, setup, teardown or agent_clis settings stops finalize-wave (BLOCKED, SANDBOX_CONFIG_CHANGED) until you review it and re-run with --accept-changes`,
          severity: 'warning',
          path: ['file_ownership', index, 'file'],
        }),
      );
    });
    return findings;
  },
};
