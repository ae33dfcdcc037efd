import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { AgentRole } from '../contract.js';
import { ownedFiles, renderAgentBrief } from '../../engine/brief.js';
import { timeoutRetryNote } from '../../protocol/e19.js';
import { parseImpl } from '../../protocol/parse-impl.js';
import { parseProgram } from '../../protocol/parse-program.js';
import { implModel, scaffoldPath, type ImplManifest } from '../../protocol/schema/impl-schema.js';
import { programModel, type ProgramManifest } from '../../protocol/schema/program-schema.js';
import { validateImpl } from '../../protocol/validate-impl.js';
import type { IntegrationGap } from '../../analysis/integration.js';
import type { Finding } from '../../errors/finding.js';
import * as critic from './critic.js';
import * as integration from './integration.js';
import * as planner from './planner.js';
import * as scaffold from './scaffold.js';
import * as scout from './scout.js';
import * as wave from './wave.js';
import { promptVersions, renderRolePrompt, type RenderedPrompt } from './index.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const corpusRoot = path.resolve(here, '..', '..', '..', '..', 'shared', 'corpus', 'polywave-go');
const implFile = path.join(corpusRoot, 'IMPL', 'complete', 'IMPL-webhook-notifications.yaml');
const programFile = path.join(corpusRoot, 'PROGRAM', 'complete', 'PROGRAM-create-program-cross-repo-and-program-wave-conflict-and-engine-reference-injection.yaml');

/**
 * A real corpus IMPL with three waves (the third `type: integration`), a scaffold, ten interface
 * contracts, two repositories, a critic report — and real validation findings (G003, MR02).
 */
function loadImpl(): { manifest: ImplManifest; findings: Finding[]; text: string } {
  const text = readFileSync(implFile, 'utf8');
  const parsed = parseImpl(text);
  if (!parsed.manifest) throw new Error(`corpus manifest did not parse: ${implFile}`);
  const findings = [...parsed.findings, ...validateImpl({ manifest: parsed.manifest, locate: parsed.locate })];
  return { manifest: parsed.manifest, findings, text };
}

function loadProgram(): { manifest: ProgramManifest; text: string } {
  const text = readFileSync(programFile, 'utf8');
  const parsed = parseProgram(text);
  if (!parsed.manifest) throw new Error(`corpus PROGRAM did not parse: ${programFile}`);
  return { manifest: parsed.manifest, text };
}

const { manifest, findings, text: implText } = loadImpl();
const program = loadProgram();
const slug = manifest.feature_slug!;
const implPath = `/repo/docs/IMPL/IMPL-${slug}.yaml`;
const errors = findings.filter((finding) => finding.severity === 'error' || finding.severity === 'fatal');

/** Every string must occur in the rendered prompt (system + user). */
function expectContainsAll(rendered: RenderedPrompt, required: readonly string[], label: string): void {
  const text = `${rendered.system}\n${rendered.user}`;
  const missing = required.filter((item) => !text.includes(item));
  expect(missing, `${label}: missing ${missing.join(', ')}`).toEqual([]);
}

/** Rule references as whole tokens (E2 must not be satisfied by E21). */
function expectRules(rendered: RenderedPrompt, rules: readonly string[], label: string): void {
  const text = `${rendered.system}\n${rendered.user}`;
  const missing = rules.filter((rule) => !new RegExp(`(?<![A-Za-z0-9])${rule.replace('.', '\\.')}(?![0-9A-Za-z])`).test(text));
  expect(missing, `${label}: missing rule references ${missing.join(', ')}`).toEqual([]);
}

describe('the corpus fixtures', () => {
  it('are the rich manifests the prompt tests rely on', () => {
    expect(manifest.waves.length).toBeGreaterThanOrEqual(3);
    expect(manifest.waves.some((item) => item.type === 'integration')).toBe(true);
    expect(manifest.scaffolds.length).toBeGreaterThan(0);
    expect(manifest.interface_contracts.length).toBeGreaterThan(5);
    expect(errors.map((finding) => finding.code)).toEqual(expect.arrayContaining(['G003_COMMIT_MISSING', 'V040_UNSCOPED_GATE']));
    expect(program.manifest.tiers.length).toBeGreaterThanOrEqual(2);
  });
});

describe('scout prompt', () => {
  const rendered = scout.renderScoutPrompt({
    feature: `${manifest.title}\n\nSend notifications for wave events through Slack, Discord and Telegram adapters.`,
    repoRoot: '/repo',
    implPath,
    contextMd: 'architecture:\n  language: go\nestablished_interfaces:\n  - name: NotificationBus\n    path: pkg/api/notify.go\n',
    toolchainCommands: 'toolchain: go\ncommands:\n  build: go build ./...\n  test:\n    full: go test ./...\n',
    dependencyAnalysis: 'pkg/notify -> pkg/api (wave_candidate: 1)',
    validationErrors: errors,
    attempt: 2,
    maxAttempts: 3,
    program: {
      programPath: '/repo/docs/PROGRAM/PROGRAM-demo.yaml',
      programSlug: program.manifest.program_slug!,
      implSlug: program.manifest.impls[0]!.slug!,
      tier: 2,
      frozenContracts: [{ name: 'Severity', definition: 'type Severity string', location: 'pkg/notify/types.go', freeze_at: 'tier-1' }],
    },
  });

  it('carries every manifest field and rule it must', () => {
    expectContainsAll(
      rendered,
      [
        'title', 'feature_slug', 'verdict', 'suitability_assessment', 'test_command', 'lint_command',
        'file_ownership', 'depends_on', 'action', 'repo', 'interface_contracts', 'scaffolds', 'waves',
        'task', 'files', 'dependencies', 'model', '^[A-Z][2-9]?$', 'quality_gates', 'wiring', 'pre_mortem',
        'known_issues', 'state', 'integration_connectors', 'type: integration',
        'SUITABLE', 'NOT_SUITABLE', 'SUITABLE_WITH_CAVEATS',
        'File decomposition', 'No investigation-first blockers', 'Interface discoverability', 'Pre-implementation scan', 'Positive parallelization value',
        'docs/IMPL/IMPL-<slug>.yaml', 'single source of truth', 'Fix exactly these and keep everything else',
      ],
      'scout',
    );
    expectRules(rendered, ['I1', 'I2', 'I3', 'I4', 'I6', 'E16', 'E17', 'E35', 'E45', 'E46', 'E10', 'E13', 'E27', 'E31', 'P2', 'MR01', 'MR02'], 'scout');
  });

  it('shows the concrete inputs: path, slug, CONTEXT.md, helper output, program contracts', () => {
    expect(rendered.user).toContain(implPath);
    expect(rendered.user).toContain(`feature_slug: \`${slug}\``);
    expect(rendered.user).toContain('NotificationBus');
    expect(rendered.user).toContain('go build ./...');
    expect(rendered.user).toContain('wave_candidate: 1');
    expect(rendered.user).toContain('type Severity string');
    expect(rendered.user).toContain(program.manifest.impls[0]!.slug!);
  });

  it('lists every validation error with its code, field and line, and the attempt', () => {
    expect(rendered.user).toContain('correction attempt 2 of 3');
    for (const finding of errors) {
      const line = rendered.user.split('\n').find((item) => item.includes(`[${finding.code}]`) && item.includes(finding.field ?? '') && item.includes(`line ${finding.line}`));
      expect(line, `${finding.code} ${finding.field}`).toBeDefined();
    }
    // The correction section comes first: it is what the Scout must act on.
    expect(rendered.user.indexOf('Validation Errors')).toBeLessThan(rendered.user.indexOf('## Feature'));
  });

  it('has no correction section and says CONTEXT.md is absent on a first attempt without one', () => {
    const first = scout.renderScoutPrompt({ feature: 'Add a thing', repoRoot: '/repo', implPath: 'docs/IMPL/IMPL-add-thing.yaml' });
    expect(first.user).not.toContain('Validation Errors');
    expect(first.user).toContain('docs/CONTEXT.md does not exist');
    expect(first.user).toContain('feature_slug: `add-thing`');
    expect(first.system).toBe(rendered.system);
  });

  it('lists only keys the IMPL schema defines, and none the orchestrator owns', () => {
    const known = Object.keys(implModel.manifest.shape);
    expect(scout.scoutManifestKeys.filter((key) => !known.includes(key))).toEqual([]);
    expect(scout.scoutForbiddenKeys.filter((key) => !known.includes(key))).toEqual([]);
    expect(scout.scoutManifestKeys.filter((key) => (scout.scoutForbiddenKeys as readonly string[]).includes(key))).toEqual([]);
  });

  it('renders the refresh-briefs and extend-scope modes with the current manifest', () => {
    const refresh = scout.renderScoutPrompt({ feature: 'x', repoRoot: '/repo', implPath, mode: 'refresh-briefs', existingManifest: implText });
    expect(refresh.user).toContain('E28A');
    expect(refresh.user).toContain(manifest.title!);
    const extend = scout.renderScoutPrompt({ feature: 'x', repoRoot: '/repo', implPath, mode: 'extend-scope' });
    expect(extend.user).toContain('E36c');
  });
});

describe('wave prompt', () => {
  const waveNumber = 1;
  const agent = manifest.waves[0]!.agents[1]!;
  const agentId = agent.id!;
  const files = ownedFiles(manifest, waveNumber, agentId);
  const worktreePath = `/repo/.claude/worktrees/polywave/${slug}/wave1-agent-${agentId}`;
  const branch = `polywave/${slug}/wave1-agent-${agentId}`;
  const brief = renderAgentBrief({ manifest, implPath, wave: waveNumber, agent, worktreePath, branch });
  const base = { brief, agentId, wave: waveNumber, implPath, ownedFiles: files, worktreePath, branch };
  const rendered = wave.renderWavePrompt({
    ...base,
    recoveredContext: '- Files modified: pkg/notify/slack.go (+120)\n- Commits: abc1234 on ' + branch,
    retry: { attempt: 2, failureType: 'timeout', previousNotes: 'ran out of turns after the adapter' },
  });

  it('carries every rule and report field it must', () => {
    expectContainsAll(
      rendered,
      [
        'set_completion', 'pwd', 'git branch --show-current', 'Files Owned', 'out_of_scope_deps', 'interface_deviations',
        'verification', '`PASS`', 'FAIL (', 'files_changed', 'files_created', 'tests_added', 'commit', 'failure_type',
        'transient', 'fixable', 'needs_replan', 'escalate', 'timeout', 'complete', 'partial', 'blocked',
        'Session Context (Recovered from Tool Journal)', 'No stubs',
      ],
      'wave',
    );
    expectRules(rendered, ['I1', 'I2', 'I4', 'I5', 'E2', 'E4', 'E43', 'E10', 'E13', 'E14', 'E19', 'E20', 'E42', 'E46', 'E35', 'E23A', 'E8'], 'wave');
  });

  it('puts the isolation check first, with the real worktree and branch', () => {
    expect(rendered.system.indexOf('Isolation check')).toBeLessThan(rendered.system.indexOf('Ownership (I1)'));
    expect(rendered.system).toContain(worktreePath);
    expect(rendered.system).toContain(branch);
  });

  it('shows the agent, its owned files and the brief; recovered context and the retry note come first', () => {
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) expect(rendered.user).toContain(file);
    expect(rendered.user).toContain(`- Agent: ${agentId}`);
    expect(rendered.user).toContain(brief.trim().split('\n').slice(-1)[0]!);
    expect(rendered.user.startsWith('## Session Context (Recovered from Tool Journal)')).toBe(true);
    expect(rendered.user).toContain(timeoutRetryNote);
    expect(rendered.user.indexOf('Retry: attempt 2')).toBeLessThan(rendered.user.indexOf('## Assignment'));
    expect(rendered.user).toContain('ran out of turns after the adapter');
  });

  it('does not repeat the recovered context when the brief already carries it', () => {
    const withContext = renderAgentBrief({ manifest, implPath, wave: waveNumber, agent, worktreePath, branch, recoveredContext: 'did things' });
    const again = wave.renderWavePrompt({ ...base, brief: withContext, recoveredContext: 'did things' });
    expect(again.user.split(wave.recoveredContextHeading).length - 1).toBe(1);
  });

  it('switches the report channel to the CLI', () => {
    const cli = wave.renderWavePrompt({ ...base, reportVia: 'cli' });
    expect(cli.system).toContain(`polywave set-completion ${implPath} --agent ${agentId}`);
    expect(cli.system).not.toContain('`set_completion` tool');
    expect(rendered.system).not.toContain('set-completion');
  });

  it('describes a solo agent without a worktree', () => {
    const solo = wave.renderWavePrompt({ ...base, worktreePath: undefined, branch: undefined, repoRoot: '/repo' });
    expect(solo.system).toContain('solo agent');
    expect(solo.system).toContain('`/repo`');
  });
});

describe('critic prompt', () => {
  const rendered = critic.renderCriticPrompt({ manifest, implPath, repoRoots: { 'scout-and-wave-go': '/repos/go', 'scout-and-wave-web': '/repos/web' } });

  it('carries checks 1–9 of E37, the report shape and E48', () => {
    expectContainsAll(
      rendered,
      [...critic.criticChecks, 'critic_report', 'verdict', 'PASS', 'ISSUES', 'agent_reviews', 'agent_id', 'issues', 'check', 'severity', 'description', 'file', 'symbol', 'summary', 'issue_count', 'Read-only', `chore: critic report for ${slug} [Polywave:critic:${slug}]`],
      'critic',
    );
    expect(critic.criticChecks).toHaveLength(9);
    expectRules(rendered, ['E37', 'E48', 'I1', 'E46'], 'critic');
  });

  it('lists every agent with its owned files, the IMPL path and the roots', () => {
    expect(rendered.user).toContain(implPath);
    expect(rendered.user).toContain('/repos/go');
    for (const item of manifest.waves) for (const agent of item.agents) expect(rendered.user).toContain(`- Agent ${agent.id}:`);
    for (const row of manifest.file_ownership) expect(rendered.user).toContain(row.file!);
    for (const contract of manifest.interface_contracts) expect(rendered.user).toContain(contract.name!);
  });

  it('writes through set-critic-review and commits in CLI mode', () => {
    const cli = critic.renderCriticPrompt({ manifest, implPath, repoRoots: '/repo', reportVia: 'cli', extraChecks: [{ name: 'result_code_semantics', description: 'Compare result codes only to SUCCESS, PARTIAL or FATAL.' }] });
    expect(cli.system).toContain(`polywave set-critic-review ${implPath} --verdict`);
    expect(cli.system).toContain(`git add ${implPath}`);
    expect(cli.system).toContain('10. result_code_semantics');
  });
});

describe('scaffold prompt', () => {
  const rendered = scaffold.renderScaffoldPrompt({ manifest, implPath, repoRoot: '/repo', scaffolds: manifest.scaffolds, buildCommand: 'go build ./pkg/notify/...', dependencyCommands: ['go mod tidy'] });

  it('carries E22, the status formats and the commit', () => {
    expectContainsAll(rendered, ['committed (<sha>)', 'FAILED: <error>', 'scaffold_results', 'POLYWAVE_ALLOW_MAIN_COMMIT=1', `[Polywave:scaffold:${slug}]`, 'Types only', 'import path', 'git rev-parse --show-toplevel'], 'scaffold');
    expectRules(rendered, ['E22', 'I2'], 'scaffold');
  });

  it('shows every scaffold file with its contents, and the build command', () => {
    for (const item of manifest.scaffolds) {
      expect(rendered.user).toContain(scaffoldPath(item));
      expect(rendered.user).toContain(item.contents!.split('\n').find((line) => line.includes('type '))!);
    }
    expect(rendered.user).toContain('go build ./pkg/notify/...');
    expect(rendered.user).toContain('go mod tidy');
  });

  it('defaults to the scaffolds not yet committed', () => {
    expect(scaffold.pendingScaffolds(manifest)).toEqual([]);
    const pending: ImplManifest = { ...manifest, scaffolds: [{ file_path: 'pkg/x/types.go', file: undefined, contents: 'type X struct{}', import_path: undefined, status: 'pending', commit: undefined }, ...manifest.scaffolds] };
    const out = scaffold.renderScaffoldPrompt({ manifest: pending, implPath, repoRoot: '/repo' });
    expect(out.user).toContain('pkg/x/types.go');
    expect(out.user).not.toContain(`### \`${scaffoldPath(manifest.scaffolds[0]!)}\``);
    expect(out.user).toContain('Scaffold Files (1)');
  });
});

describe('integration prompt', () => {
  // Typed as the analysis layer's E25 gap: what the orchestrator will pass in.
  const gaps: IntegrationGap[] = [
    { export_name: 'NewDispatcher', file_path: 'pkg/notify/dispatcher.go', agent_id: 'B', category: 'function_call', severity: 'warning', reason: 'no callers', suggested_fix: 'construct it in pkg/api/server.go', search_results: [] },
    { export_name: 'RegisterWebhookRoutes', file_path: 'pkg/api/webhook_handler.go', agent_id: 'E', category: 'function_call', severity: 'error', reason: 'Register* without callers', suggested_fix: 'call it from the router setup', search_results: ['pkg/api/server.go:224'] },
  ];
  const connectorManifest: ImplManifest = { ...manifest, integration_connectors: [{ file: 'pkg/api/server.go', reason: 'router and service wiring' }] };
  const rendered = integration.renderIntegrationPrompt({ mode: 'gaps', manifest: connectorManifest, implPath, repoRoot: '/repo', wave: 2, gaps });

  it('carries E25/E26/E27/E47, the file restriction and the I1 amendment', () => {
    expectContainsAll(rendered, ['Allowed Files', 'integration_connectors', 'feat(wave2-integration): wire integration gaps', 'never the API', 'I1 amendment', 'integration_result'], 'integration');
    expectRules(rendered, ['E25', 'E26', 'E27', 'E47', 'I1', 'I2'], 'integration');
  });

  it('lists the gaps and the connector files', () => {
    for (const gap of gaps) {
      expect(rendered.user).toContain(gap.export_name);
      expect(rendered.user).toContain(gap.suggested_fix);
    }
    expect(rendered.user).toContain('- `pkg/api/server.go`');
    expect(rendered.user).toContain('router and service wiring');
    for (const gate of manifest.quality_gates!.gates.filter((item) => item.type === 'build')) expect(rendered.user).toContain(gate.command!);
  });

  it('renders the planned integration wave of the manifest (E27) with its own files and task', () => {
    const integrationWave = manifest.waves.find((item) => item.type === 'integration')!;
    const agent = integrationWave.agents[0]!;
    const planned = integration.renderIntegrationPrompt({ mode: 'planned', manifest, implPath, repoRoot: '/repo', wave: integrationWave.number!, agent });
    for (const file of agent.files) expect(planned.user).toContain(file);
    expect(planned.user).toContain(agent.task!.trim().split('\n')[0]!);
    expect(planned.system).toContain('set_completion');
    expect(planned.system).toContain(`[Polywave:wave${integrationWave.number}:agent-${agent.id}]`);
  });

  it('renders the E47 hotfix with the failing files and the build error', () => {
    const hotfix = integration.renderIntegrationPrompt({
      mode: 'hotfix',
      manifest,
      implPath,
      repoRoot: '/repo',
      wave: 1,
      hotfix: { files: ['pkg/api/server.go'], buildError: 'pkg/api/server.go:97:14: not enough arguments in call to notify.NewDispatcher', buildCommand: 'go build ./...' },
    });
    expect(hotfix.user).toContain('not enough arguments in call to notify.NewDispatcher');
    expect(hotfix.user).toContain('- `pkg/api/server.go`');
    expect(hotfix.user).toContain('- `go build ./...`');
    expect(hotfix.system).toContain('[Polywave:wave1:integration-hotfix] fix caller cascade after wave 1 signature changes');
  });
});

describe('planner prompt', () => {
  const outputPath = `/repo/docs/PROGRAM/PROGRAM-${program.manifest.program_slug}.yaml`;
  const rendered = planner.renderPlannerPrompt({
    description: program.manifest.title!,
    repoRoot: '/repo',
    outputPath,
    today: '2026-05-12',
    existingImpls: [{ slug: slug, state: manifest.state, path: 'docs/IMPL/complete/IMPL-webhook-notifications.yaml', title: manifest.title }],
    replan: { currentManifest: program.text, reason: 'tier 2 gate failed', failedTier: 2, gateOutput: 'FAIL pkg/engine' },
    validationErrors: [{ code: 'V035', message: 'IMPL "a" (tier 1) depends on "b" (tier 1)', field: 'impls[0].depends_on', line: 7 }],
  });

  it('carries every PROGRAM field and rule it must', () => {
    expectContainsAll(
      rendered,
      [...planner.programManifestKeys, 'slug', 'tier', 'depends_on', 'estimated_agents', 'estimated_waves', 'key_outputs', 'status', 'freeze_at', 'consumers', 'location', 'definition', 'tiers_total', 'impls_total', 'PROGRAM_SUITABLE', 'SINGLE_IMPL_SUFFICIENT', 'NOT_DECOMPOSABLE', 'NOT_SUITABLE', 'frozen'],
      'planner',
    );
    expectRules(rendered, ['P1', 'P2', 'P3', 'P4', 'P5', 'E34'], 'planner');
  });

  it('lists only keys the PROGRAM schema defines', () => {
    const known = Object.keys(programModel.manifest.shape);
    expect(planner.programManifestKeys.filter((key) => !known.includes(key))).toEqual([]);
  });

  it('shows the concrete inputs: output path, slug, the current manifest, the failure and the errors', () => {
    expect(rendered.user).toContain(outputPath);
    expect(rendered.user).toContain(`program_slug: \`${program.manifest.program_slug}\``);
    for (const impl of program.manifest.impls) expect(rendered.user).toContain(impl.slug!);
    expect(rendered.user).toContain('tier 2 gate failed');
    expect(rendered.user).toContain('FAIL pkg/engine');
    expect(rendered.user).toContain('[V035] field `impls[0].depends_on`, line 7:');
    expect(rendered.user).toContain('Fix exactly these and keep everything else');
    expect(rendered.user).toContain(slug);
  });
});

describe('prompt versions and dispatch', () => {
  const modules: Record<AgentRole, { version: unknown }> = { scout, scaffold, wave, critic, integration, planner };

  it('every prompt file exports a semver version, and promptVersions lists them all', () => {
    const semver = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;
    for (const [role, module] of Object.entries(modules) as Array<[AgentRole, { version: unknown }]>) {
      expect(typeof module.version, role).toBe('string');
      expect(module.version, role).toMatch(semver);
      expect(promptVersions[role], role).toBe(module.version);
    }
    expect(Object.keys(promptVersions).sort()).toEqual(Object.keys(modules).sort());
  });

  it('every system prompt names its version', () => {
    expect(scout.renderScoutPrompt({ feature: 'f', repoRoot: '/r', implPath: 'docs/IMPL/IMPL-f.yaml' }).system).toContain(`prompt v${scout.version}`);
    expect(critic.renderCriticPrompt({ manifest, implPath, repoRoots: '/r' }).system).toContain(`prompt v${critic.version}`);
  });

  it('renderRolePrompt dispatches to each role renderer', () => {
    const scoutInput = { feature: 'f', repoRoot: '/r', implPath: 'docs/IMPL/IMPL-f.yaml' };
    expect(renderRolePrompt('scout', scoutInput)).toEqual(scout.renderScoutPrompt(scoutInput));
    const criticInput = { manifest, implPath, repoRoots: '/r' };
    expect(renderRolePrompt('critic', criticInput)).toEqual(critic.renderCriticPrompt(criticInput));
    const scaffoldInput = { manifest, implPath, repoRoot: '/r' };
    expect(renderRolePrompt('scaffold', scaffoldInput)).toEqual(scaffold.renderScaffoldPrompt(scaffoldInput));
    const plannerInput = { description: 'd', repoRoot: '/r', outputPath: 'docs/PROGRAM/PROGRAM-d.yaml' };
    expect(renderRolePrompt('planner', plannerInput)).toEqual(planner.renderPlannerPrompt(plannerInput));
    const integrationInput = { mode: 'gaps' as const, manifest, implPath, repoRoot: '/r', wave: 1 };
    expect(renderRolePrompt('integration', integrationInput)).toEqual(integration.renderIntegrationPrompt(integrationInput));
    const waveInput = { brief: '# brief', agentId: 'B', wave: 1, implPath, ownedFiles: ['a.go'] };
    expect(renderRolePrompt('wave', waveInput)).toEqual(wave.renderWavePrompt(waveInput));
  });

  it('rendering is deterministic', () => {
    const input = { manifest, implPath, repoRoots: '/r' };
    expect(critic.renderCriticPrompt(input)).toEqual(critic.renderCriticPrompt(input));
  });
});
