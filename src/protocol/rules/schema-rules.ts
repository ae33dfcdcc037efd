import type { Finding } from '../../errors/finding.js';
import {
  contextSources,
  gateLevels,
  injectionMethods,
  integrationPatterns,
  reactionActions,
  riskLevels,
  severities,
  slugPattern,
  verdicts,
  waveTypes,
  type ReactionEntry,
} from '../schema/impl-schema.js';
import type { ImplRule } from './rule.js';
import { goQuote, isBlank, isScaffoldRow, report, sortedKeys, type FieldPath } from './rule-helpers.js';

/**
 * I4 (Go numbering, required fields): `title`, `feature_slug` and `verdict` are non-empty; the
 * slug is kebab-case and the verdict one of SUITABLE, NOT_SUITABLE, SUITABLE_WITH_CAVEATS.
 */
export const requiredTopLevelFields: ImplRule = {
  name: 'required-top-level-fields',
  reference: 'I4',
  codes: ['V005_REQUIRED_FIELDS_MISSING', 'V039_INVALID_FIELD_VALUE'],
  check(context) {
    const { title, feature_slug: slug, verdict } = context.manifest;
    const findings: Finding[] = [];
    const missing = (field: string) =>
      report(context, { code: 'V005_REQUIRED_FIELDS_MISSING', message: `${field} is required`, path: [field] });
    if (isBlank(title)) findings.push(missing('title'));
    if (slug === undefined || isBlank(slug)) {
      findings.push(missing('feature_slug'));
    } else if (!slugPattern.test(slug)) {
      findings.push(
        report(context, {
          code: 'V039_INVALID_FIELD_VALUE',
          message: `feature_slug ${goQuote(slug)} must be kebab-case (lowercase letters, digits, hyphens; no leading/trailing hyphens)`,
          path: ['feature_slug'],
        }),
      );
    }
    if (verdict === undefined || isBlank(verdict)) {
      findings.push(missing('verdict'));
    } else if (!(verdicts as readonly string[]).includes(verdict)) {
      findings.push(
        report(context, {
          code: 'V039_INVALID_FIELD_VALUE',
          message: `verdict must be SUITABLE, NOT_SUITABLE, or SUITABLE_WITH_CAVEATS, got ${goQuote(verdict)}`,
          path: ['verdict'],
        }),
      );
    }
    return findings;
  },
};

/**
 * Required nested fields (message-formats.txt, schema `required`): ownership file/agent and a
 * wave > 0, wave numbers > 0 with at least one agent, agent id/task, contract
 * name/definition/location, gate type/command, scaffold path, pre-mortem scenario/mitigation.
 * The `Scaffold` row at wave 0 is the documented scaffold row (§10.18) and is not flagged for
 * its wave (Go still reports it).
 */
export const requiredNestedFields: ImplRule = {
  name: 'required-nested-fields',
  reference: 'E16',
  codes: ['V005_REQUIRED_FIELDS_MISSING'],
  check(context) {
    const { manifest } = context;
    const findings: Finding[] = [];
    const requireText = (value: string | undefined, path: FieldPath, label: string) => {
      if (!isBlank(value)) return;
      findings.push(report(context, { code: 'V005_REQUIRED_FIELDS_MISSING', message: `${label} is required and must be non-empty`, path }));
    };
    const requirePositive = (value: number | undefined, path: FieldPath, label: string) => {
      if ((value ?? 0) > 0) return;
      findings.push(report(context, { code: 'V005_REQUIRED_FIELDS_MISSING', message: `${label} must be > 0, got ${value ?? 0}`, path }));
    };

    manifest.file_ownership.forEach((row, index) => {
      requireText(row.file, ['file_ownership', index, 'file'], `file_ownership[${index}].file`);
      requireText(row.agent, ['file_ownership', index, 'agent'], `file_ownership[${index}].agent`);
      if (!isScaffoldRow(row)) requirePositive(row.wave, ['file_ownership', index, 'wave'], `file_ownership[${index}].wave`);
    });
    manifest.waves.forEach((wave, waveIndex) => {
      requirePositive(wave.number, ['waves', waveIndex, 'number'], `waves[${waveIndex}].number`);
      if (wave.agents.length === 0) {
        findings.push(
          report(context, {
            code: 'V005_REQUIRED_FIELDS_MISSING',
            message: `waves[${waveIndex}].agents must be non-empty`,
            path: ['waves', waveIndex, 'agents'],
          }),
        );
      }
      wave.agents.forEach((agent, agentIndex) => {
        const prefix = `waves[${waveIndex}].agents[${agentIndex}]`;
        requireText(agent.id, ['waves', waveIndex, 'agents', agentIndex, 'id'], `${prefix}.id`);
        requireText(agent.task, ['waves', waveIndex, 'agents', agentIndex, 'task'], `${prefix}.task`);
      });
    });
    manifest.interface_contracts.forEach((contract, index) => {
      for (const key of ['name', 'definition', 'location'] as const) {
        requireText(contract[key], ['interface_contracts', index, key], `interface_contracts[${index}].${key}`);
      }
    });
    (manifest.quality_gates?.gates ?? []).forEach((gate, index) => {
      requireText(gate.type, ['quality_gates', 'gates', index, 'type'], `quality_gates.gates[${index}].type`);
      requireText(gate.command, ['quality_gates', 'gates', index, 'command'], `quality_gates.gates[${index}].command`);
    });
    manifest.scaffolds.forEach((scaffold, index) => {
      // `file` is accepted as an alias of `file_path` (message-formats.txt writes `file`).
      requireText(scaffold.file_path ?? scaffold.file, ['scaffolds', index, 'file_path'], `scaffolds[${index}].file_path`);
    });
    (manifest.pre_mortem?.rows ?? []).forEach((row, index) => {
      requireText(row.scenario, ['pre_mortem', 'rows', index, 'scenario'], `pre_mortem.rows[${index}].scenario`);
      requireText(row.mitigation, ['pre_mortem', 'rows', index, 'mitigation'], `pre_mortem.rows[${index}].mitigation`);
    });
    return findings;
  },
};

function isOneOf(value: string | undefined, allowed: readonly string[]): boolean {
  return value === undefined || value === '' || allowed.includes(value);
}

/**
 * Enumerated fields (V036; empty allowed): gate `level`, scaffold `status` (pending,
 * `committed…`, `FAILED…`), pre-mortem row likelihood/impact, `injection_method`, agent
 * `context_source` — plus, beyond Go, wave `type`, wiring `integration_pattern` and
 * `integration_gap_severity_threshold`, which the schema also enumerates. The ownership
 * `action` has its own rule (E16_INVALID_ACTION).
 */
export const enumFieldValues: ImplRule = {
  name: 'enum-field-values',
  reference: 'E16',
  codes: ['V036_INVALID_ENUM'],
  check(context) {
    const { manifest } = context;
    const findings: Finding[] = [];
    const invalid = (message: string, path: FieldPath) => findings.push(report(context, { code: 'V036_INVALID_ENUM', message, path }));

    const level = manifest.quality_gates?.level;
    if (!isOneOf(level, gateLevels)) {
      invalid(`quality_gates.level has invalid value ${goQuote(level!)} — must be one of: ${gateLevels.join(', ')}`, ['quality_gates', 'level']);
    }
    manifest.scaffolds.forEach((scaffold, index) => {
      const status = scaffold.status ?? '';
      if (status === '' || status === 'pending' || status.startsWith('committed') || status.startsWith('FAILED')) return;
      invalid(
        `scaffolds[${index}].status has invalid value ${goQuote(status)} — must be one of: pending, committed, or start with "committed" or "FAILED"`,
        ['scaffolds', index, 'status'],
      );
    });
    (manifest.pre_mortem?.rows ?? []).forEach((row, index) => {
      for (const key of ['likelihood', 'impact'] as const) {
        if (isOneOf(row[key], riskLevels)) continue;
        invalid(
          `pre_mortem.rows[${index}].${key} has invalid value ${goQuote(row[key]!)} — must be one of: ${riskLevels.join(', ')}`,
          ['pre_mortem', 'rows', index, key],
        );
      }
    });
    if (!isOneOf(manifest.injection_method, injectionMethods)) {
      invalid(
        `injection_method has invalid value ${goQuote(manifest.injection_method!)} — must be one of: ${injectionMethods.join(', ')}`,
        ['injection_method'],
      );
    }
    manifest.waves.forEach((wave, waveIndex) => {
      if (!isOneOf(wave.type, waveTypes)) {
        invalid(`waves[${waveIndex}].type has invalid value ${goQuote(wave.type!)} — must be one of: ${waveTypes.join(', ')}`, ['waves', waveIndex, 'type']);
      }
      wave.agents.forEach((agent, agentIndex) => {
        if (isOneOf(agent.context_source, contextSources)) return;
        invalid(
          `waves[${waveIndex}].agents[${agentIndex}] (id=${agent.id ?? ''}) context_source has invalid value ${goQuote(agent.context_source!)} — must be one of: ${contextSources.join(', ')}`,
          ['waves', waveIndex, 'agents', agentIndex, 'context_source'],
        );
      });
    });
    manifest.wiring.forEach((declaration, index) => {
      if (isOneOf(declaration.integration_pattern, integrationPatterns)) return;
      invalid(
        `wiring[${index}].integration_pattern has invalid value ${goQuote(declaration.integration_pattern!)} — must be one of: ${integrationPatterns.join(', ')}`,
        ['wiring', index, 'integration_pattern'],
      );
    });
    const threshold = manifest.integration_gap_severity_threshold;
    if (!isOneOf(threshold, severities)) {
      invalid(
        `integration_gap_severity_threshold has invalid value ${goQuote(threshold!)} — must be one of: ${severities.join(', ')}`,
        ['integration_gap_severity_threshold'],
      );
    }
    return findings;
  },
};

/**
 * Paths are repository-relative with forward slashes (V037): no leading `/`, no `..` segment
 * (`foo.../x` is fine), no NUL byte, no backslash, no trailing `/` — on ownership rows, agent `files` and
 * scaffold paths. Each violation is its own finding.
 */
export const relativePaths: ImplRule = {
  name: 'relative-paths',
  reference: 'E16',
  codes: ['V037_INVALID_PATH'],
  check(context) {
    const { manifest } = context;
    const findings: Finding[] = [];
    const checkPath = (value: string | undefined, path: FieldPath, label: string) => {
      if (value === undefined || isBlank(value)) return;
      const problems: string[] = [];
      if (value.startsWith('/')) problems.push(`${label}: path ${goQuote(value)} must not start with '/' (use relative paths)`);
      if (value.split('/').includes('..')) problems.push(`${label}: path ${goQuote(value)} must not contain '..' traversal segments`);
      if (value.includes('\u0000')) problems.push(`${label}: path must not contain null bytes`);
      if (value.includes('\\')) problems.push(`${label}: path ${goQuote(value)} must not contain backslashes (use forward slashes)`);
      // Outside attack P12-14: `src/pricing.js/` validated clean and was then dropped from the agent's owned files
      // (the jail grants files, not directories) — an agent planned to own nothing.
      if (value.endsWith('/')) problems.push(`${label}: path ${goQuote(value)} must name a file, not end with '/'`);
      // P13-22: `src/x.js/.`, `src/./x.js`, `src//x.js` passed as files other than src/x.js (V030, P2's frozen-file check)
      // while the jail took them for src/x.js: a path is written in its one normal form.
      else if (value.split('/').some((segment, index, all) => segment === '.' || (segment === '' && index > 0 && index < all.length - 1))) {
        problems.push(`${label}: path ${goQuote(value)} must be written plainly (no '.' or empty segments)`);
      }
      for (const message of problems) findings.push(report(context, { code: 'V037_INVALID_PATH', message, path }));
    };
    manifest.file_ownership.forEach((row, index) => checkPath(row.file, ['file_ownership', index, 'file'], `file_ownership[${index}].file`));
    manifest.waves.forEach((wave, waveIndex) => {
      wave.agents.forEach((agent, agentIndex) => {
        agent.files.forEach((file, fileIndex) => {
          checkPath(file, ['waves', waveIndex, 'agents', agentIndex, 'files', fileIndex], `waves[${waveIndex}].agents[${agentIndex}].files[${fileIndex}]`);
        });
      });
    });
    manifest.scaffolds.forEach((scaffold, index) => {
      const key = scaffold.file_path === undefined && scaffold.file !== undefined ? 'file' : 'file_path';
      checkPath(scaffold.file_path ?? scaffold.file, ['scaffolds', index, key], `scaffolds[${index}].${key}`);
    });
    return findings;
  },
};

/**
 * Cross-field consistency (V038): ownership agents and waves exist in `waves` (the `Scaffold`
 * row at wave 0 is exempt); every agent file has an ownership row with the same agent and
 * wave; a NOT_SUITABLE verdict has no waves, ownership or contracts; every completion report
 * belongs to an agent of some wave.
 */
export const crossFieldConsistency: ImplRule = {
  name: 'cross-field-consistency',
  reference: 'E16',
  codes: ['V038_CROSS_FIELD'],
  check(context) {
    const { manifest } = context;
    const findings: Finding[] = [];
    const crossField = (message: string, path: FieldPath) => findings.push(report(context, { code: 'V038_CROSS_FIELD', message, path }));
    const waveNumbers = new Set(manifest.waves.map((wave) => wave.number ?? 0));
    const agentIds = new Set(manifest.waves.flatMap((wave) => wave.agents.map((agent) => agent.id ?? '')));

    manifest.file_ownership.forEach((row, index) => {
      if (isScaffoldRow(row)) return;
      const agent = row.agent ?? '';
      const wave = row.wave ?? 0;
      if (!agentIds.has(agent)) {
        crossField(`file_ownership[${index}]: agent ${goQuote(agent)} does not appear in any wave's agents list`, ['file_ownership', index, 'agent']);
      }
      if (wave > 0 && !waveNumbers.has(wave)) {
        crossField(`file_ownership[${index}]: wave ${wave} does not match any existing wave number`, ['file_ownership', index, 'wave']);
      }
    });

    const owners = new Set(manifest.file_ownership.map((row) => JSON.stringify([row.file ?? '', row.agent ?? '', row.wave ?? 0])));
    manifest.waves.forEach((wave, waveIndex) => {
      const number = wave.number ?? 0;
      wave.agents.forEach((agent, agentIndex) => {
        const id = agent.id ?? '';
        agent.files.forEach((file, fileIndex) => {
          if (owners.has(JSON.stringify([file, id, number]))) return;
          crossField(
            `agent ${id} (wave ${number}) lists file ${goQuote(file)} but no matching file_ownership entry exists for agent=${id} wave=${number}`,
            ['waves', waveIndex, 'agents', agentIndex, 'files', fileIndex],
          );
        });
      });
    });

    if (manifest.verdict === 'NOT_SUITABLE') {
      if (manifest.waves.length > 0) {
        crossField(`verdict is NOT_SUITABLE but ${manifest.waves.length} wave(s) are defined — expected empty waves`, ['waves']);
      }
      if (manifest.file_ownership.length > 0) {
        crossField(`verdict is NOT_SUITABLE but ${manifest.file_ownership.length} file_ownership entries exist — expected empty`, ['file_ownership']);
      }
      if (manifest.interface_contracts.length > 0) {
        crossField(
          `verdict is NOT_SUITABLE but ${manifest.interface_contracts.length} interface_contracts exist — expected empty`,
          ['interface_contracts'],
        );
      }
    }

    for (const agentId of sortedKeys(manifest.completion_reports)) {
      if (agentIds.has(agentId)) continue;
      crossField(`completion_reports[${agentId}]: agent ${goQuote(agentId)} does not appear in any wave's agents list`, ['completion_reports', agentId]);
    }
    return findings;
  },
};

/** The five E19.1 reaction entries, in the order the protocol lists the failure types. */
const reactionNames = ['transient', 'timeout', 'fixable', 'needs_replan', 'escalate'] as const;

/**
 * E19.1: a `reactions` entry has an `action` (retry, send-fix-prompt, pause, auto-scout) and
 * a `max_attempts` ≥ 0 (0 means the E19 default).
 */
export const reactionEntries: ImplRule = {
  name: 'reaction-entries',
  reference: 'E19.1',
  codes: ['V005_REQUIRED_FIELDS_MISSING', 'V036_INVALID_ENUM'],
  check(context) {
    const reactions = context.manifest.reactions;
    if (!reactions) return [];
    const findings: Finding[] = [];
    for (const name of reactionNames) {
      const entry: ReactionEntry | undefined = reactions[name];
      if (!entry) continue;
      const action = entry.action ?? '';
      if (action === '') {
        findings.push(
          report(context, { code: 'V005_REQUIRED_FIELDS_MISSING', message: `reactions.${name}.action is required`, path: ['reactions', name, 'action'] }),
        );
      } else if (!(reactionActions as readonly string[]).includes(action)) {
        findings.push(
          report(context, {
            code: 'V036_INVALID_ENUM',
            message: `reactions.${name}.action ${goQuote(action)} is not valid; must be one of: ${reactionActions.join(', ')}`,
            path: ['reactions', name, 'action'],
          }),
        );
      }
      const attempts = entry.max_attempts ?? 0;
      if (attempts < 0) {
        findings.push(
          report(context, {
            code: 'V005_REQUIRED_FIELDS_MISSING',
            message: `reactions.${name}.max_attempts must be >= 0, got ${attempts}`,
            path: ['reactions', name, 'max_attempts'],
          }),
        );
      }
    }
    return findings;
  },
};

/** `known_issues[].title` is required. */
export const knownIssueTitles: ImplRule = {
  name: 'known-issue-titles',
  reference: 'E16',
  codes: ['V021_KNOWN_ISSUE_MISSING_TITLE'],
  check(context) {
    const findings: Finding[] = [];
    context.manifest.known_issues.forEach((issue, index) => {
      if (!isBlank(issue.title)) return;
      findings.push(
        report(context, {
          code: 'V021_KNOWN_ISSUE_MISSING_TITLE',
          message: `known_issues[${index}]: title is required`,
          path: ['known_issues', index, 'title'],
        }),
      );
    });
    return findings;
  },
};

/** `pre_mortem.overall_risk` is empty or low, medium, high. */
export const preMortemRisk: ImplRule = {
  name: 'pre-mortem-risk',
  reference: 'E16',
  codes: ['V015_INVALID_PRE_MORTEM_RISK'],
  check(context) {
    const risk = context.manifest.pre_mortem?.overall_risk;
    if (isOneOf(risk, riskLevels)) return [];
    return [
      report(context, {
        code: 'V015_INVALID_PRE_MORTEM_RISK',
        message: `pre_mortem overall_risk has invalid value ${goQuote(risk!)} — must be one of: ${riskLevels.join(', ')}`,
        path: ['pre_mortem', 'overall_risk'],
      }),
    ];
  },
};
