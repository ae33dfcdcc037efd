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

/**
 * Outside round P14 (P14-29): an agent owns a Claude Code project file — `.claude/settings.json` or
 * `settings.local.json` (hooks that run commands, `env`, permissions), anything else under `.claude/` (hooks,
 * commands, agents, skills; polywave's own `.claude/worktrees/` aside) or `.mcp.json` (MCP servers). polywave's own
 * claude agents no longer read project settings (`--setting-sources user`, A21-35), but once merged the file is read by
 * Claude Code when a human opens the project — and by polywave itself used as a Claude Code plugin (`init --claude`) —
 * with no review step (unlike polywave.config.json, W002). A warning at validation (so at the plan's review and
 * pre-wave-validate), naming what to check after the merge; not an error: a project may mean to ship such settings.
 */
export const agentOwnsClaudeSettings: ImplRule = {
  name: 'agent-owns-claude-settings',
  reference: 'P14-29',
  codes: ['W003_AGENT_OWNS_CLAUDE_SETTINGS'],
  check(context) {
    const findings: Finding[] = [];
    context.manifest.file_ownership.forEach((row, index) => {
      const file = normalizedParts(row.file ?? '');
      const claude = /^\.claude(\/|$)/i.test(file) && !/^\.claude\/worktrees(\/|$)/i.test(file);
      if (!claude && !/^\.mcp\.json$/i.test(file)) return;
      findings.push(
        report(context, {
          code: 'W003_AGENT_OWNS_CLAUDE_SETTINGS',
          message: `agent ${row.agent ?? '?'} owns ${row.file}: a Claude Code project file (settings with command hooks, env and permissions; hooks, commands, agents; MCP servers) — polywave's own claude agents do not read it (--setting-sources user), but once merged Claude Code does when you open the project, polywave as a Claude Code plugin included, with no review by polywave: read the merged change before you do`,
          severity: 'warning',
          path: ['file_ownership', index, 'file'],
        }),
      );
    });
    return findings;
  },
};

/**
 * Outside round X42 (X42-07): an agent owns a `.gitattributes` file (any directory). Its patterns decide how git writes
 * every file they match into the main checkout after the merge — another agent's file re-encoded, given CRLF, expanded
 * or handed to a filter/merge driver. finalize-wave refuses a merged change that sets a byte-changing attribute (text,
 * eol, crlf, working-tree-encoding, ident, filter, merge) on a file the agent does not own
 * (E11_ATTRIBUTES_OUTSIDE_OWNERSHIP, nothing merged); said here as a warning, before any agent runs.
 */
export const agentOwnsGitattributes: ImplRule = {
  name: 'agent-owns-gitattributes',
  reference: 'I1, issue 11 (X42-07)',
  codes: ['W004_AGENT_OWNS_GITATTRIBUTES'],
  check(context) {
    const findings: Finding[] = [];
    context.manifest.file_ownership.forEach((row, index) => {
      const file = normalizedParts(row.file ?? '');
      if (!/(^|\/)\.gitattributes$/i.test(file)) return;
      findings.push(
        report(context, {
          code: 'W004_AGENT_OWNS_GITATTRIBUTES',
          message: `agent ${row.agent ?? '?'} owns ${row.file}: its patterns decide how git checks out every file they match — it may set text, eol, crlf, working-tree-encoding, ident, filter or merge on its own files only; finalize-wave refuses a change that reaches a file it does not own (E11_ATTRIBUTES_OUTSIDE_OWNERSHIP, nothing merged)`,
          severity: 'warning',
          path: ['file_ownership', index, 'file'],
        }),
      );
    });
    return findings;
  },
};

/**
 * An agent owns a protocol manifest (errors, issue 11): a file under `docs/PROGRAM/` (V057, X23-05),
 * an item of the IMPL queue (V058, X24-03) or an IMPL manifest (V059, X24-05). The PROGRAM
 * manifests are the orchestrator's (P4: it is their single writer). An agent given the running
 * PROGRAM could rewrite its frozen-contract records and tier gates; one given a new PROGRAM file
 * could put a plan marked REVIEWED — approved by nobody — into main. finalize-tier refuses an IMPL
 * branch that changes them either way (N096_PROGRAM_MANIFEST_CHANGED_BY_IMPL).
 */
export const agentOwnsProgramManifest: ImplRule = {
  name: 'agent-owns-program-manifest',
  reference: 'P4, issue 11',
  codes: ['V057_AGENT_OWNS_PROGRAM_MANIFEST', 'V058_AGENT_OWNS_QUEUE_ITEM', 'V059_AGENT_OWNS_IMPL_MANIFEST'],
  check(context) {
    const findings: Finding[] = [];
    context.manifest.file_ownership.forEach((row, index) => {
      const file = normalizedParts(row.file ?? '');
      // X24-03: a queue item an agent writes is work the daemon takes up (with its own autonomy override) once merged.
      if (/^docs\/impl\/queue(\/|$)/i.test(file)) {
        findings.push(
          report(context, {
            code: 'V058_AGENT_OWNS_QUEUE_ITEM',
            message: `agent ${row.agent ?? '?'} owns ${row.file}: the IMPL queue (docs/IMPL/queue/) is yours and the daemon's — an item an agent wrote would be planned and run once merged; take the row out`,
            severity: 'error',
            path: ['file_ownership', index, 'file'],
          }),
        );
        return;
      }
      // X24-05: an IMPL manifest an agent wrote (docs/IMPL/IMPL-x.yaml or under complete/) is listed by list-impls
      // and serve with whatever state it claims — a plan past review that nobody reviewed. Other files there
      // (a report an agent writes next to the plans, as in the corpus) stay ownable.
      if (isImplManifestPath(file)) {
        findings.push(
          report(context, {
            code: 'V059_AGENT_OWNS_IMPL_MANIFEST',
            message: `agent ${row.agent ?? '?'} owns ${row.file}: IMPL manifests (a YAML file under docs/IMPL/, anything in docs/IMPL/complete/) are written by the Scout and the orchestrator alone — an agent-written one would be listed with the state it claims; take the row out`,
            severity: 'error',
            path: ['file_ownership', index, 'file'],
          }),
        );
        return;
      }
      // docs/PROGRAM/… and the legacy docs/PROGRAM-<slug>.yaml (X24-04: list-programs reads both)
      if (!/^docs\/program(\/|-[^/]*$|$)/i.test(file)) return;
      findings.push(
        report(context, {
          code: 'V057_AGENT_OWNS_PROGRAM_MANIFEST',
          message: `agent ${row.agent ?? '?'} owns ${row.file}: PROGRAM manifests (docs/PROGRAM/, docs/PROGRAM-<slug>.yaml) are written by the orchestrator alone (P4) — no agent may own them; take the row out`,
          severity: 'error',
          path: ['file_ownership', index, 'file'],
        }),
      );
    });
    return findings;
  },
};

/**
 * Where polywave finds IMPL manifests, any case: a YAML file anywhere under `docs/IMPL/` (list-impls and serve read
 * the top, program-execute also `in-progress/`, `pending/`, `blocked/`, `not-suitable/`: X26-15) and anything in the
 * archive `docs/IMPL/complete/` (the daemon's completed slugs read every YAML there by its `feature_slug`, whatever
 * the file is called: X26-04).
 */
function isImplManifestPath(file: string): boolean {
  return /^docs\/impl\/(?:[^/]+\/)*[^/]*\.ya?ml$/i.test(file) || /^docs\/impl\/complete\/./i.test(file);
}

/** `a/./b//c/../d` → `a/b/d` (a leading `..` kept): the path an ownership row names, spelled one way. */
function normalizedParts(file: string): string {
  const parts: string[] = [];
  for (const part of file.trim().replace(/\\/g, '/').split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..' && parts.length > 0 && parts.at(-1) !== '..') parts.pop();
    else parts.push(part);
  }
  return parts.join('/');
}
