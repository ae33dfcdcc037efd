import { z } from 'zod';
import {
  boolField,
  enumField,
  intField,
  listField,
  mapField,
  objectField,
  objectOf,
  patternField,
  stringField,
  stringItem,
  withRequired,
  type SchemaMode,
} from './fields.js';

/** Agent IDs (E5/I-rules): one uppercase letter, optionally a generation digit 2–9. */
export const agentIdPattern = /^[A-Z][2-9]?$/;
/** Kebab-case slugs (I4, V039). */
export const slugPattern = /^[a-z0-9]+(-[a-z0-9]+)*$/;

/** All protocol states: the 11 of the schema text plus INTERVIEWING (E39). */
export const protocolStates = [
  'INTERVIEWING',
  'SCOUT_PENDING',
  'SCOUT_VALIDATING',
  'REVIEWED',
  'SCAFFOLD_PENDING',
  'WAVE_PENDING',
  'WAVE_EXECUTING',
  'WAVE_MERGING',
  'WAVE_VERIFIED',
  'BLOCKED',
  'COMPLETE',
  'NOT_SUITABLE',
] as const;
export type ProtocolState = (typeof protocolStates)[number];

export const verdicts = ['SUITABLE', 'NOT_SUITABLE', 'SUITABLE_WITH_CAVEATS'] as const;
export const mergeStates = ['idle', 'in_progress', 'completed', 'failed'] as const;
export type MergeState = (typeof mergeStates)[number];
export const completionStatuses = ['complete', 'partial', 'blocked'] as const;
export type CompletionStatus = (typeof completionStatuses)[number];
export const failureTypes = ['transient', 'fixable', 'needs_replan', 'escalate', 'timeout'] as const;
export type FailureType = (typeof failureTypes)[number];
export const fileActions = ['new', 'modify', 'delete'] as const;
export const gateTypes = ['build', 'lint', 'test', 'typecheck', 'format', 'custom'] as const;
export const gateTimings = ['pre-merge', 'post-merge'] as const;
export const gatePhases = ['PRE_VALIDATION', 'VALIDATION', 'POST_VALIDATION'] as const;
export const gateLevels = ['quick', 'standard', 'full'] as const;
export const riskLevels = ['low', 'medium', 'high'] as const;
export const injectionMethods = ['hook', 'manual-fallback', 'unknown'] as const;
export const contextSources = ['prepared-brief', 'fallback-full-context', 'cross-repo-full'] as const;
export const waveTypes = ['standard', 'integration'] as const;
export const reactionActions = ['retry', 'send-fix-prompt', 'pause', 'auto-scout'] as const;
export const reactionFailureTypes = ['transient', 'timeout', 'fixable', 'needs_replan', 'escalate'] as const;
export const criticVerdicts = ['PASS', 'ISSUES', 'SKIPPED'] as const;
export const severities = ['error', 'warning', 'info'] as const;
export const integrationCategories = ['function_call', 'type_usage', 'field_init'] as const;
export const integrationPatterns = ['append', 'register', 'inject', 'call', 'prop-pass'] as const;
/** E11b: how a file shared by several agents is changed (patterns 1–4: test append, registry append, line edits, mixed). */
export const conflictPatterns = ['test-append', 'registry-append', 'line-edit', 'mixed'] as const;
export type ConflictPattern = (typeof conflictPatterns)[number];

/**
 * Builds the IMPL manifest schema (message-formats.txt "IMPL Manifest", impl-manifest.schema.json,
 * plus the fields the Go structs add: INTERVIEWING, gate `phase`/`parallel_group`,
 * `original_branch`, `v048_exempt`, `context_source`, `dedup_stats`, report `repo`,
 * scaffold `file` as an alias of `file_path`, …). See fields.ts for the two modes.
 */
export function buildImplSchemas(mode: SchemaMode) {
  const str = () => stringField(mode);
  const strList = () => listField(mode, stringItem(mode));
  const agentId = () => patternField(mode, agentIdPattern);

  const fileOwnership = objectOf(
    mode,
    withRequired(
      mode,
      {
        file: str(),
        agent: mode === 'export' ? z.union([z.string().regex(agentIdPattern), z.literal('Scaffold')]) : str(),
        wave: intField(mode),
        action: enumField(mode, fileActions),
        depends_on: strList(),
        repo: str(),
        v048_exempt: boolField(mode),
        /** E11b: the Scout's classification of a file more than one agent touches. */
        conflict_pattern: enumField(mode, conflictPatterns),
      },
      ['file', 'agent', 'wave'],
    ),
  );

  const agent = objectOf(
    mode,
    withRequired(
      mode,
      {
        id: agentId(),
        task: str(),
        files: strList(),
        dependencies: mode === 'export' ? z.array(z.string().regex(agentIdPattern)) : strList(),
        model: str(),
        context_source: enumField(mode, contextSources),
      },
      ['id', 'task'],
    ),
  );

  const wave = objectOf(
    mode,
    withRequired(
      mode,
      {
        number: intField(mode),
        type: enumField(mode, waveTypes),
        agents: listField(mode, agent),
        agent_launch_order: strList(),
        base_commit: str(),
      },
      ['number', 'agents'],
    ),
  );

  const interfaceContract = objectOf(
    mode,
    withRequired(mode, { name: str(), description: str(), definition: str(), location: str() }, ['name', 'definition', 'location']),
  );

  const qualityGate = objectOf(
    mode,
    withRequired(
      mode,
      {
        type: enumField(mode, gateTypes),
        command: str(),
        required: boolField(mode),
        description: str(),
        repo: str(),
        fix: boolField(mode),
        timing: enumField(mode, gateTimings),
        phase: enumField(mode, gatePhases),
        parallel_group: str(),
        timeout_seconds: intField(mode),
      },
      ['type', 'command'],
    ),
  );

  const qualityGates = objectOf(mode, withRequired(mode, { level: enumField(mode, gateLevels), gates: listField(mode, qualityGate) }, ['gates']));

  const checklistItem = objectOf(mode, withRequired(mode, { description: str(), command: str() }, ['description']));
  const checklistGroup = objectOf(mode, withRequired(mode, { title: str(), items: listField(mode, checklistItem) }, ['title']));
  const postMergeChecklist = objectOf(mode, withRequired(mode, { groups: listField(mode, checklistGroup) }, []));

  const scaffoldStatus = mode === 'export' ? z.string().regex(/^(pending|committed.*|FAILED.*)$/s) : str();
  const scaffold = objectOf(
    mode,
    withRequired(
      mode,
      {
        file_path: str(),
        /** Alias written by message-formats.txt and older Go builds. */
        file: str(),
        contents: str(),
        import_path: str(),
        status: scaffoldStatus,
        commit: str(),
      },
      [],
    ),
  );

  const wiringDeclaration = objectOf(
    mode,
    withRequired(
      mode,
      {
        symbol: str(),
        defined_in: str(),
        must_be_called_from: str(),
        agent: str(),
        wave: intField(mode),
        integration_pattern: enumField(mode, integrationPatterns),
        description: str(),
      },
      ['symbol', 'defined_in', 'must_be_called_from', 'agent', 'wave'],
    ),
  );
  const wiringGap = objectOf(
    mode,
    withRequired(mode, { declaration: objectField(mode, wiringDeclaration), reason: str(), severity: str() }, ['declaration', 'reason', 'severity']),
  );
  const wiringValidation = objectOf(
    mode,
    withRequired(mode, { gaps: listField(mode, wiringGap), valid: boolField(mode), summary: str() }, ['gaps', 'valid']),
  );

  const interfaceDeviation = objectOf(
    mode,
    withRequired(mode, { description: str(), downstream_action_required: boolField(mode), affects: strList() }, ['description']),
  );
  const dedupStats = objectOf(
    mode,
    withRequired(mode, { hits: intField(mode), misses: intField(mode), tokens_saved_estimate: intField(mode) }, []),
  );
  const completionReport = objectOf(
    mode,
    withRequired(
      mode,
      {
        status: enumField(mode, completionStatuses),
        worktree: str(),
        branch: str(),
        commit: str(),
        files_changed: strList(),
        files_created: strList(),
        interface_deviations: listField(mode, interfaceDeviation),
        out_of_scope_deps: strList(),
        tests_added: strList(),
        verification: str(),
        failure_type: enumField(mode, failureTypes),
        notes: str(),
        dedup_stats: objectField(mode, dedupStats),
        repo: str(),
        /** Usage recorded by our agent runtime (tokens, cost); optional. */
        usage: mode === 'export' ? z.record(z.string(), z.unknown()) : z.preprocess((value) => (value === null ? undefined : value), z.record(z.string(), z.unknown()).optional()),
      },
      ['status'],
    ),
  );

  const stubHit = objectOf(mode, withRequired(mode, { file: str(), line: intField(mode), pattern: str(), context: str() }, ['file', 'line', 'pattern']));
  const stubReport = objectOf(mode, withRequired(mode, { hits: listField(mode, stubHit) }, ['hits']));

  const integrationGap = objectOf(
    mode,
    withRequired(
      mode,
      {
        export_name: str(),
        file_path: str(),
        agent_id: str(),
        category: enumField(mode, integrationCategories),
        severity: enumField(mode, severities),
        reason: str(),
        suggested_fix: str(),
        search_results: strList(),
      },
      ['export_name', 'file_path', 'severity'],
    ),
  );
  const integrationReport = objectOf(
    mode,
    withRequired(mode, { wave: intField(mode), gaps: listField(mode, integrationGap), valid: boolField(mode), summary: str() }, ['gaps', 'valid']),
  );
  const integrationConnector = objectOf(mode, withRequired(mode, { file: str(), reason: str() }, ['file']));

  const preMortemRow = objectOf(
    mode,
    withRequired(
      mode,
      {
        scenario: str(),
        likelihood: mode === 'export' ? z.union([z.enum(riskLevels), z.literal('')]) : str(),
        impact: mode === 'export' ? z.union([z.enum(riskLevels), z.literal('')]) : str(),
        mitigation: str(),
      },
      ['scenario', 'mitigation'],
    ),
  );
  const preMortem = objectOf(
    mode,
    withRequired(
      mode,
      { overall_risk: mode === 'export' ? z.union([z.enum(riskLevels), z.literal('')]) : str(), rows: listField(mode, preMortemRow) },
      [],
    ),
  );

  const knownIssue = objectOf(mode, withRequired(mode, { title: str(), description: str(), status: str(), workaround: str() }, ['title']));

  const reactionEntry = objectOf(mode, withRequired(mode, { action: enumField(mode, reactionActions), max_attempts: intField(mode) }, ['action']));
  const reactions = objectOf(
    mode,
    withRequired(
      mode,
      {
        transient: objectField(mode, reactionEntry),
        timeout: objectField(mode, reactionEntry),
        fixable: objectField(mode, reactionEntry),
        needs_replan: objectField(mode, reactionEntry),
        escalate: objectField(mode, reactionEntry),
      },
      [],
    ),
  );

  const criticIssue = objectOf(
    mode,
    withRequired(
      mode,
      { check: str(), severity: enumField(mode, ['error', 'warning'] as const), description: str(), file: str(), symbol: str() },
      ['severity', 'description'],
    ),
  );
  const agentCriticReview = objectOf(
    mode,
    withRequired(mode, { agent_id: str(), verdict: str(), issues: listField(mode, criticIssue) }, []),
  );
  const criticReport = objectOf(
    mode,
    withRequired(
      mode,
      {
        verdict: enumField(mode, criticVerdicts),
        agent_reviews: mapField(mode, agentCriticReview),
        summary: str(),
        reviewed_at: str(),
        issue_count: intField(mode),
      },
      ['verdict'],
    ),
  );

  const manifest = objectOf(
    mode,
    withRequired(
      mode,
      {
        title: str(),
        feature_slug: patternField(mode, slugPattern),
        feature: str(),
        repository: str(),
        repositories: strList(),
        plan_reference: str(),
        verdict: enumField(mode, verdicts),
        suitability_assessment: str(),
        suitability_reasoning: str(),
        test_command: str(),
        lint_command: str(),
        file_ownership: listField(mode, fileOwnership),
        interface_contracts: listField(mode, interfaceContract),
        waves: listField(mode, wave),
        quality_gates: objectField(mode, qualityGates),
        post_merge_checklist: objectField(mode, postMergeChecklist),
        scaffolds: listField(mode, scaffold),
        wiring: listField(mode, wiringDeclaration),
        wiring_validation_reports: mapField(mode, wiringValidation),
        completion_reports: mapField(mode, completionReport),
        stub_reports: mapField(mode, stubReport),
        integration_reports: mapField(mode, integrationReport),
        integration_connectors: listField(mode, integrationConnector),
        pre_mortem: objectField(mode, preMortem),
        reactions: objectField(mode, reactions),
        known_issues: listField(mode, knownIssue),
        integration_gap_severity_threshold: enumField(mode, severities),
        critic_report: objectField(mode, criticReport),
        state: enumField(mode, protocolStates),
        merge_state: enumField(mode, mergeStates),
        original_branch: str(),
        worktrees_created_at: str(),
        frozen_contracts_hash: str(),
        frozen_scaffolds_hash: str(),
        completion_date: str(),
        injection_method: enumField(mode, injectionMethods),
      },
      ['title', 'feature_slug', 'verdict'],
    ),
  );

  return {
    manifest,
    fileOwnership,
    agent,
    wave,
    interfaceContract,
    qualityGate,
    qualityGates,
    scaffold,
    completionReport,
    interfaceDeviation,
    wiringDeclaration,
    criticReport,
    reactionEntry,
    preMortem,
    knownIssue,
    integrationReport,
    stubReport,
  };
}

/** The tolerant (model) schemas. */
export const implModel = buildImplSchemas('model');

/** An IMPL manifest as code uses it: every list present, scalars typed, unknown keys dropped. */
export type ImplManifest = z.output<typeof implModel.manifest>;
export type FileOwnership = z.output<typeof implModel.fileOwnership>;
export type Agent = z.output<typeof implModel.agent>;
export type Wave = z.output<typeof implModel.wave>;
export type InterfaceContract = z.output<typeof implModel.interfaceContract>;
export type QualityGate = z.output<typeof implModel.qualityGate>;
export type QualityGates = z.output<typeof implModel.qualityGates>;
export type ScaffoldFile = z.output<typeof implModel.scaffold>;
export type CompletionReport = z.output<typeof implModel.completionReport>;
export type InterfaceDeviation = z.output<typeof implModel.interfaceDeviation>;
export type WiringDeclaration = z.output<typeof implModel.wiringDeclaration>;
export type CriticReport = z.output<typeof implModel.criticReport>;
export type ReactionEntry = z.output<typeof implModel.reactionEntry>;
export type KnownIssue = z.output<typeof implModel.knownIssue>;

/** Path of a scaffold, accepting both `file_path` (schema) and `file` (message-formats.txt). */
export function scaffoldPath(scaffold: ScaffoldFile): string {
  return scaffold.file_path ?? scaffold.file ?? '';
}
