import type { CommandSpec } from './command-spec.js';

const repoDirOption = { flags: '--repo-dir <dir>', description: 'repository root (default: current directory)' };

/**
 * Every command: names, flags and JSON keys follow the Go `polywave-tools` (reference/engine-cli.md §1)
 * so existing skills and scripts can call `polywave` instead. Modules load lazily.
 */
export const commandTable: CommandSpec[] = [
  {
    name: 'validate',
    group: 'Manifests & validation',
    summary: 'validate an IMPL manifest (E16, E16A–D, I1–I6, MR01/MR02, …)',
    arguments: ['<impl>'],
    options: [
      { flags: '--fix', description: 'auto-fix gate type and action aliases (comments and every protocol field kept)' },
      { flags: '--repo-dir <dir>', description: 'check file existence (E16_FILE_NOT_FOUND) and LOC budget against this repository' },
      { flags: '--wave <n>', description: 'restrict per-wave checks (LOC budget) to wave N', integer: true },
    ],
    help: 'Prints {valid, error_count, errors[], warning_count, warnings[], fixed}.\nExit: 0 valid, 1 invalid, 2 unreadable input (not YAML, missing file, …).',
    load: () => import('./commands/validate.js'),
  },
  {
    name: 'validate-program',
    group: 'Program layer',
    summary: 'validate a PROGRAM manifest (program-manifest.txt §15; --import-mode adds E28A P1/P2 checks)',
    arguments: ['<program>'],
    options: [{ flags: '--import-mode', description: 'also check the referenced IMPL docs on disk (state mapping, P1, P2)' }, repoDirOption],
    load: () => import('./commands/validate-program.js'),
  },
  {
    name: 'schema',
    group: 'Manifests & validation',
    summary: 'print the JSON Schema (2020-12) generated from our manifest model',
    arguments: ['[kind]'],
    help: 'kind: impl (default) or program',
    load: () => import('./commands/schema.js'),
  },
  {
    name: 'set-impl-state',
    group: 'State & reports',
    summary: 'move an IMPL to a new protocol state (refuses illegal transitions)',
    arguments: ['<impl>'],
    options: [
      { flags: '--state <state>', description: 'target state', required: true },
      { flags: '--commit', description: 'git add + commit the manifest afterwards' },
      { flags: '--commit-msg <message>', description: 'commit message (default: chore: set IMPL state to <STATE>)' },
    ],
    load: () => import('./commands/set-impl-state.js'),
  },
  {
    name: 'set-completion',
    group: 'State & reports',
    summary: "write an agent's completion report (I4/I5, E14, E19) — safe with many concurrent writers",
    arguments: ['<impl>'],
    options: [
      { flags: '--agent <id>', description: 'agent ID' },
      { flags: '--status <status>', description: 'complete | partial | blocked' },
      { flags: '--commit <sha>', description: 'commit SHA of the agent’s work (required for complete)' },
      { flags: '--worktree <path>', description: 'worktree path' },
      { flags: '--branch <name>', description: 'branch name' },
      { flags: '--files-changed <files>', description: 'comma-separated files changed', list: true },
      { flags: '--files-created <files>', description: 'comma-separated files created', list: true },
      { flags: '--tests-added <files>', description: 'comma-separated tests added', list: true },
      { flags: '--out-of-scope-deps <items>', description: 'comma-separated out-of-scope dependencies', list: true },
      { flags: '--verification <text>', description: "'PASS' or 'FAIL (details)'" },
      { flags: '--failure-type <type>', description: 'transient | fixable | needs_replan | escalate | timeout (partial/blocked only)' },
      { flags: '--notes <text>', description: 'free-form notes' },
      { flags: '--repo <name>', description: 'repository (cross-repo waves)' },
      { flags: '--file <path>', description: "read the report (YAML or JSON) from a file, or '-' for stdin; flags override its fields" },
    ],
    load: () => import('./commands/set-completion.js'),
  },
  {
    name: 'update-status',
    group: 'State & reports',
    summary: "set an agent's report status for a wave (E7)",
    arguments: ['<impl>'],
    options: [
      { flags: '--wave <n>', description: 'wave number', integer: true, required: true },
      { flags: '--agent <id>', description: 'agent ID', required: true },
      { flags: '--status <status>', description: 'complete | partial | blocked', required: true },
      { flags: '--commit <sha>', description: 'commit SHA (needed for complete when the report has none)' },
    ],
    load: () => import('./commands/update-status.js'),
  },
  {
    name: 'check-completion',
    group: 'State & reports',
    summary: 'does an agent have a completion report? (E42)',
    arguments: ['<impl>'],
    options: [{ flags: '--agent <id>', description: 'agent ID', required: true }],
    load: () => import('./commands/check-completion.js'),
  },
  {
    name: 'freeze-check',
    group: 'Manifests & validation',
    summary: 'compare interface contracts and scaffolds with the hashes frozen at worktree creation (E2/I2)',
    arguments: ['<impl>'],
    load: () => import('./commands/freeze-check.js'),
  },
  {
    name: 'check-conflicts',
    group: 'State & reports',
    summary: 'files claimed by more than one completion report, or outside ownership (E11, I1)',
    arguments: ['<impl>'],
    options: [{ flags: '--wave <n>', description: 'only this wave', integer: true }],
    load: () => import('./commands/check-conflicts.js'),
  },
  {
    name: 'pre-wave-gate',
    group: 'Manifests & validation',
    summary: 'readiness checks before a wave: validation, critic review (E37), scaffolds, state',
    arguments: ['<impl>'],
    load: () => import('./commands/pre-wave-gate.js'),
  },
  {
    name: 'assign-agent-ids',
    group: 'Manifests & validation',
    summary: 'deterministic agent IDs matching ^[A-Z][2-9]?$ (E5)',
    options: [
      { flags: '--count <n>', description: 'number of IDs', integer: true, required: true },
      { flags: '--grouping <json>', description: 'JSON array of category tags, one per agent' },
    ],
    load: () => import('./commands/assign-agent-ids.js'),
  },
  {
    name: 'list-impls',
    group: 'State & reports',
    summary: 'summarize the IMPL manifests in a directory',
    options: [
      { flags: '--dir <dir>', description: 'directory', defaultValue: 'docs/IMPL' },
      { flags: '--include-complete', description: 'include complete/ and COMPLETE manifests' },
    ],
    load: () => import('./commands/list-impls.js'),
  },
  {
    name: 'resolve-impl',
    group: 'State & reports',
    summary: 'resolve a slug, file name or path (or the single pending IMPL) to an absolute path',
    options: [{ flags: '--impl <ref>', description: 'slug, file name or path (default: the only pending IMPL)' }],
    load: () => import('./commands/resolve-impl.js'),
  },
  {
    name: 'list-programs',
    group: 'Program layer',
    summary: 'list PROGRAM manifests',
    options: [{ flags: '--dir <dir>', description: 'docs directory', defaultValue: 'docs' }],
    load: () => import('./commands/list-programs.js'),
  },
  {
    name: 'program-status',
    group: 'Program layer',
    summary: 'E32 tier-by-tier status of a PROGRAM, cross-checked against the IMPL docs on disk',
    arguments: ['<program>'],
    options: [{ flags: '--json', description: 'print JSON instead of the E32 text summary' }, repoDirOption],
    load: () => import('./commands/program-status.js'),
  },
];
