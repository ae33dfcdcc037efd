import { describe, expect, it } from 'vitest';
import { isBlocking } from '../../errors/finding.js';
import { parseProgram } from '../parse-program.js';
import { programModel, type ProgramManifest } from '../schema/program-schema.js';
import type { ProgramRule } from './program-rule.js';
import { findDependencyCycles, programRules, runProgramRules } from './program-rules.js';
import { validateProgram } from './validate-program.js';

type Plain = Record<string, unknown> & {
  impls: Array<Record<string, unknown>>;
  tiers: Array<Record<string, unknown>>;
  program_contracts: Array<Record<string, unknown> & { consumers: Array<Record<string, unknown>> }>;
  completion: Record<string, unknown>;
  tier_gates: Array<Record<string, unknown>>;
  pre_mortem: Array<Record<string, unknown>>;
};

/** program-manifest.txt §14 (trimmed): a valid manifest every negative test starts from. */
function base(): Plain {
  return {
    title: 'Greenfield API and Dashboard',
    program_slug: 'greenfield-api',
    state: 'PLANNING',
    created: '2026-03-17',
    program_contracts: [
      {
        name: 'UserSession',
        definition: 'type UserSession struct {}',
        consumers: [
          { impl: 'auth', usage: 'Creates sessions' },
          { impl: 'api-routes', usage: 'Reads sessions' },
        ],
        location: 'pkg/types/session.go',
        freeze_at: 'Tier 1 completion',
      },
      {
        name: 'APIResponse<T>',
        definition: 'type APIResponse[T any] struct {}',
        consumers: [{ impl: 'api-routes', usage: 'Wraps responses' }],
        location: 'pkg/types/response.go',
        freeze_at: 'tier-2',
      },
    ],
    impls: [
      { slug: 'data-model', title: 'Core data model', tier: 1, depends_on: [], status: 'pending' },
      { slug: 'auth', title: 'Auth', tier: 1, depends_on: [], status: 'pending' },
      { slug: 'api-routes', title: 'REST API', tier: 2, depends_on: ['data-model', 'auth'], status: 'pending' },
      { slug: 'dashboard', title: 'Dashboard', tier: 3, depends_on: ['api-routes'], status: 'pending' },
    ],
    tiers: [
      { number: 1, impls: ['data-model', 'auth'], description: 'Foundation' },
      { number: 2, impls: ['api-routes'] },
      { number: 3, impls: ['dashboard'] },
    ],
    tier_gates: [{ type: 'build', command: 'go build ./...', required: true }],
    completion: { tiers_complete: 0, tiers_total: 3, impls_complete: 0, impls_total: 4, total_agents: 0, total_waves: 0 },
    pre_mortem: [{ scenario: 'Interface drift', likelihood: 'medium', impact: 'high', mitigation: 'Freeze contracts' }],
  };
}

function model(data: Plain): ProgramManifest {
  return programModel.manifest.parse(data);
}

function check(mutate: (data: Plain) => void, fileName?: string) {
  const data = base();
  mutate(data);
  return validateProgram(model(data), { fileName }).map(({ code, message, severity, field }) => ({ code, message, severity, field }));
}

function codesOf(mutate: (data: Plain) => void) {
  return check(mutate).map((finding) => finding.code);
}

describe('validateProgram — the valid base', () => {
  it('accepts the spec example with no findings', () => {
    expect(check(() => {}, 'docs/PROGRAM/PROGRAM-greenfield-api.yaml')).toEqual([]);
  });

  it('accepts the spec minimal manifest (§3)', () => {
    const minimal = {
      title: 'Minimal project',
      program_slug: 'minimal',
      state: 'PLANNING',
      impls: [{ slug: 'single-feature', title: 'Single feature', tier: 1, status: 'pending' }],
      tiers: [{ number: 1, impls: ['single-feature'] }],
      completion: { tiers_complete: 0, tiers_total: 1, impls_complete: 0, impls_total: 1, total_agents: 0, total_waves: 0 },
    };
    expect(validateProgram(programModel.manifest.parse(minimal), { fileName: 'PROGRAM-minimal.yaml' })).toEqual([]);
  });

  it('a rule that throws becomes a fatal finding; the others still run', () => {
    const broken: ProgramRule = {
      name: 'broken',
      reference: 'TEST',
      codes: [],
      check: () => {
        throw new Error('boom');
      },
    };
    const fine: ProgramRule = { name: 'fine', reference: 'TEST', codes: ['X'], check: () => [{ code: 'X', message: 'x', severity: 'warning' }] };
    expect(runProgramRules({ manifest: model(base()), locate: () => undefined }, [broken, fine])).toEqual([
      { code: 'V001_MANIFEST_INVALID', message: 'rule broken (TEST) failed: boom', severity: 'fatal' },
      { code: 'X', message: 'x', severity: 'warning' },
    ]);
  });

  it('every rule has a name, reference and codes', () => {
    for (const rule of programRules) {
      expect(rule.name).toMatch(/^program-/);
      expect(rule.reference).not.toBe('');
      expect(rule.codes.length).toBeGreaterThan(0);
    }
  });
});

describe('§15.1 required fields (V005)', () => {
  it('title, program_slug and state (Go messages)', () => {
    expect(
      check((data) => {
        data.title = '  ';
        delete data.program_slug;
        data.state = '';
      }).filter((finding) => finding.code === 'V005_REQUIRED_FIELDS_MISSING'),
    ).toEqual([
      { code: 'V005_REQUIRED_FIELDS_MISSING', message: 'title is required', severity: 'error', field: 'title' },
      { code: 'V005_REQUIRED_FIELDS_MISSING', message: 'program_slug is required', severity: 'error', field: 'program_slug' },
      { code: 'V005_REQUIRED_FIELDS_MISSING', message: 'state is required', severity: 'error', field: 'state' },
    ]);
  });

  it('impls, tiers and completion', () => {
    const findings = check((data) => {
      data.impls = [];
      data.tiers = [];
      delete (data as Record<string, unknown>).completion;
      data.program_contracts = [];
    });
    expect(findings.filter((finding) => finding.code === 'V005_REQUIRED_FIELDS_MISSING').map((finding) => finding.message)).toEqual([
      'impls is required',
      'tiers is required',
      'completion is required',
    ]);
  });

  it('a NOT_SUITABLE program needs no impls, tiers or completion', () => {
    expect(
      check((data) => {
        data.state = 'NOT_SUITABLE';
        data.impls = [];
        data.tiers = [];
        data.program_contracts = [];
        delete (data as Record<string, unknown>).completion;
      }),
    ).toEqual([]);
  });

  it('nested required fields', () => {
    const findings = check((data) => {
      delete data.completion.total_waves;
      delete data.impls[0]!.title;
      delete data.impls[1]!.tier;
      delete data.tiers[2]!.number;
      data.program_contracts[0]!.definition = '';
      delete data.program_contracts[0]!.consumers[1]!.usage;
      delete data.tier_gates[0]!.required;
      delete data.pre_mortem[0]!.impact;
    }).filter((finding) => finding.code === 'V005_REQUIRED_FIELDS_MISSING');
    expect(findings.map((finding) => [finding.message, finding.field])).toEqual([
      ['completion.total_waves is required', 'completion.total_waves'],
      ['program_contracts[0].definition is required', 'program_contracts[0].definition'],
      ['program_contracts[0].consumers[1].usage is required', 'program_contracts[0].consumers[1].usage'],
      ['impls[0].title is required', 'impls[0].title'],
      ['impls[1].tier is required', 'impls[1].tier'],
      ['tiers[2].number is required', 'tiers[2].number'],
      ['tier_gates[0].required is required', 'tier_gates[0].required'],
      ['pre_mortem[0].impact is required', 'pre_mortem[0].impact'],
    ]);
  });

  it('an empty tier is reported', () => {
    expect(check((data) => void (data.tiers[2]!.impls = []))).toContainEqual({
      code: 'V005_REQUIRED_FIELDS_MISSING',
      message: 'tiers[2].impls is required',
      severity: 'error',
      field: 'tiers[2].impls',
    });
  });
});

describe('§9.1 state (V008)', () => {
  it('rejects an unknown state with the full list', () => {
    expect(check((data) => void (data.state = 'RUNNING'))).toEqual([
      {
        code: 'V008_INVALID_STATE',
        message:
          'state "RUNNING" is invalid — must be one of: PLANNING, VALIDATING, REVIEWED, SCAFFOLD, TIER_EXECUTING, TIER_VERIFIED, COMPLETE, BLOCKED, REPLANNING, NOT_SUITABLE',
        severity: 'error',
        field: 'state',
      },
    ]);
  });

  it('accepts every spec state, REPLANNING included', () => {
    for (const state of ['PLANNING', 'VALIDATING', 'REVIEWED', 'SCAFFOLD', 'TIER_EXECUTING', 'TIER_VERIFIED', 'COMPLETE', 'BLOCKED', 'REPLANNING']) {
      expect(check((data) => void (data.state = state))).toEqual([]);
    }
  });

  it('warns on the state-machine.md PROGRAM_* names', () => {
    expect(check((data) => void (data.state = 'PROGRAM_REVIEWED'))).toEqual([
      { code: 'V008_INVALID_STATE', message: 'state "PROGRAM_REVIEWED" is the state-machine.md name — write "REVIEWED"', severity: 'warning', field: 'state' },
    ]);
  });
});

describe('§5.2 IMPL status (V036)', () => {
  it('rejects an unknown status', () => {
    expect(check((data) => void (data.impls[2]!.status = 'SAW:COMPLETE'))).toEqual([
      {
        code: 'V036_INVALID_ENUM',
        message: 'IMPL "api-routes" has invalid status "SAW:COMPLETE" — must be one of: pending, scouting, reviewed, executing, complete, blocked, not-suitable',
        severity: 'error',
        field: 'impls[2].status',
      },
    ]);
  });

  it('a missing status is invalid (as in Go)', () => {
    expect(codesOf((data) => void delete data.impls[0]!.status)).toEqual(['V036_INVALID_ENUM']);
  });

  it('accepts the spec statuses plus blocked and not-suitable', () => {
    for (const status of ['pending', 'scouting', 'reviewed', 'executing', 'complete', 'blocked', 'not-suitable']) {
      expect(check((data) => void (data.impls[3]!.status = status))).toEqual([]);
    }
  });

  it('warns on the Go sync status in-progress', () => {
    expect(check((data) => void (data.impls[3]!.status = 'in-progress'))).toEqual([
      { code: 'V036_INVALID_ENUM', message: 'IMPL "dashboard" has legacy status "in-progress" — use "executing"', severity: 'warning', field: 'impls[3].status' },
    ]);
  });
});

describe('§15.3 dependencies', () => {
  it('P1: same-tier dependency (V035, plus V026 as in Go)', () => {
    expect(check((data) => void (data.impls[1]!.depends_on = ['data-model']))).toEqual([
      {
        code: 'V035_P1_VIOLATION',
        message: 'IMPL "auth" (tier 1) depends on "data-model" (tier 1) — IMPLs within the same tier must be independent',
        severity: 'error',
        field: 'impls[1].depends_on[0]',
      },
      {
        code: 'V026_TIER_ORDER_VIOLATION',
        message: 'IMPL "auth" (tier 1) depends on "data-model" (tier 1) — dependent IMPLs must be in strictly later tiers',
        severity: 'error',
        field: 'impls[1].depends_on[0]',
      },
    ]);
  });

  it('dependency on a later tier (V026)', () => {
    expect(check((data) => void (data.impls[0]!.depends_on = ['dashboard']))).toEqual([
      {
        code: 'V026_TIER_ORDER_VIOLATION',
        message: 'IMPL "data-model" (tier 1) depends on "dashboard" (tier 3) — dependent IMPLs must be in strictly later tiers',
        severity: 'error',
        field: 'impls[0].depends_on[0]',
      },
      {
        code: 'V051_PROGRAM_CYCLE',
        message: 'dependency cycle among IMPLs: "data-model" → "dashboard" → "api-routes" → "data-model"',
        severity: 'error',
        field: 'impls[0].depends_on',
      },
    ]);
  });

  it('undefined dependency (V028)', () => {
    expect(check((data) => void (data.impls[3]!.depends_on = ['api-routes', 'ghost']))).toEqual([
      { code: 'V028_INVALID_DEPENDENCY', message: 'IMPL "dashboard" depends on "ghost" which does not exist', severity: 'error', field: 'impls[3].depends_on[1]' },
    ]);
  });

  it('cycles (V051): one finding per cycle group, self-loops included', () => {
    const data = base();
    data.impls[2]!.depends_on = ['dashboard'];
    data.impls[1]!.depends_on = ['auth'];
    const cycles = findDependencyCycles(model(data));
    expect(cycles).toEqual([
      { path: ['auth', 'auth'], index: 1 },
      { path: ['api-routes', 'dashboard', 'api-routes'], index: 2 },
    ]);
    const messages = validateProgram(model(data))
      .filter((finding) => finding.code === 'V051_PROGRAM_CYCLE')
      .map((finding) => finding.message);
    expect(messages).toEqual(['dependency cycle among IMPLs: "auth" → "auth"', 'dependency cycle among IMPLs: "api-routes" → "dashboard" → "api-routes"']);
  });

  it('no cycle finding for an acyclic graph with shared dependencies', () => {
    expect(findDependencyCycles(model(base()))).toEqual([]);
  });
});

describe('§15.2 tier membership (V025, V056)', () => {
  it('a tier names an undefined IMPL', () => {
    expect(check((data) => void (data.tiers[1]!.impls = ['api-routes', 'ghost']))).toEqual([
      { code: 'V025_TIER_MISMATCH', message: 'tier 2 references IMPL "ghost" which is not defined in impls section', severity: 'error', field: 'tiers[1].impls[1]' },
    ]);
  });

  it('an IMPL in no tier', () => {
    expect(
      check((data) => {
        data.impls.push({ slug: 'extra', title: 'Extra', tier: 3, status: 'pending' });
        data.completion.impls_total = 5;
      }),
    ).toEqual([{ code: 'V025_TIER_MISMATCH', message: 'IMPL "extra" is not assigned to any tier', severity: 'error', field: 'impls[4].slug' }]);
  });

  it('an IMPL in several tiers (Go list format)', () => {
    expect(check((data) => void (data.tiers[2]!.impls = ['dashboard', 'auth']))).toEqual([
      { code: 'V025_TIER_MISMATCH', message: 'IMPL "auth" appears in multiple tiers: [1 3]', severity: 'error', field: 'impls[1].slug' },
    ]);
  });

  it("an IMPL's tier disagrees with the tier listing it", () => {
    expect(check((data) => void (data.impls[3]!.tier = 4))).toEqual([
      { code: 'V025_TIER_MISMATCH', message: 'IMPL "dashboard" has tier 4 but is listed in tier 3', severity: 'error', field: 'impls[3].tier' },
    ]);
  });

  it('a slug defined twice (V056)', () => {
    const findings = check((data) => {
      data.impls.push({ slug: 'auth', title: 'Auth again', tier: 1, status: 'pending' });
      data.completion.impls_total = 5;
    });
    expect(findings).toEqual([
      { code: 'V056_DUPLICATE_IMPL_SLUG', message: 'IMPL slug "auth" is defined more than once (impls[1] and impls[4])', severity: 'error', field: 'impls[4].slug' },
    ]);
  });
});

describe('§15.2 tier numbers (V054)', () => {
  it('must run 1, 2, 3, …', () => {
    expect(
      check((data) => {
        data.tiers[2]!.number = 4;
        data.impls[3]!.tier = 4;
      }),
    ).toEqual([
      {
        code: 'V054_TIER_SEQUENCE',
        message: 'tier numbers must be sequential starting from 1 — found [1, 2, 4] (tiers[2].number is 4, expected 3)',
        severity: 'error',
        field: 'tiers[2].number',
      },
    ]);
  });

  it('must start at 1', () => {
    const findings = check((data) => {
      data.tiers.forEach((tier, index) => (tier.number = index));
      data.impls.forEach((impl) => (impl.tier = (impl.tier as number) - 1));
    });
    expect(findings.map((finding) => finding.code)).toEqual(['V054_TIER_SEQUENCE']);
    expect(findings[0]!.message).toBe('tier numbers must be sequential starting from 1 — found [0, 1, 2] (tiers[0].number is 0, expected 1)');
  });
});

describe('§15.2 program_slug matches the file name (V052)', () => {
  it('only checked when a file name is given', () => {
    expect(check(() => {})).toEqual([]);
    expect(check(() => {}, '/repo/docs/PROGRAM-greenfield-api.yml')).toEqual([]);
  });

  it('reports a different slug', () => {
    expect(check(() => {}, 'docs/PROGRAM/PROGRAM-other.yaml')).toEqual([
      {
        code: 'V052_SLUG_FILENAME_MISMATCH',
        message: 'program_slug "greenfield-api" does not match file name "PROGRAM-other.yaml" (expected PROGRAM-greenfield-api.yaml)',
        severity: 'error',
        field: 'program_slug',
      },
    ]);
    expect(codesOf(() => {})).toEqual([]);
  });

  it('reports a file not named PROGRAM-*.yaml', () => {
    expect(check(() => {}, 'plan.yaml').map((finding) => finding.code)).toEqual(['V052_SLUG_FILENAME_MISMATCH']);
  });
});

describe('slug format (V018)', () => {
  it('program_slug and IMPL slugs are kebab-case', () => {
    const findings = check((data) => {
      data.program_slug = 'Greenfield_API';
    });
    expect(findings).toEqual([
      {
        code: 'V018_INVALID_SLUG_FORMAT',
        message: 'program_slug "Greenfield_API" is not kebab-case (lowercase letters, digits, hyphens only)',
        severity: 'error',
        field: 'program_slug',
      },
    ]);
    const implFindings = check((data) => {
      data.impls[3]!.slug = 'Dash';
      data.tiers[2]!.impls = ['Dash'];
    });
    expect(implFindings).toEqual([
      { code: 'V018_INVALID_SLUG_FORMAT', message: 'IMPL slug "Dash" is not kebab-case (lowercase letters, digits, hyphens only)', severity: 'error', field: 'impls[3].slug' },
    ]);
  });
});

describe('§15.4 program contracts', () => {
  it('consumers name defined IMPLs (V027)', () => {
    expect(check((data) => void (data.program_contracts[1]!.consumers[0]!.impl = 'mobile'))).toEqual([
      {
        code: 'V027_INVALID_CONSUMER',
        message: 'program contract "APIResponse<T>" references consumer IMPL "mobile" which does not exist',
        severity: 'error',
        field: 'program_contracts[1].consumers[0].impl',
      },
    ]);
  });

  it('locations do not conflict (V055), after path normalisation', () => {
    expect(check((data) => void (data.program_contracts[1]!.location = './pkg/types//session.go'))).toEqual([
      {
        code: 'V055_CONTRACT_LOCATION_CONFLICT',
        message: 'program contracts "UserSession" and "APIResponse<T>" both have location "pkg/types/session.go" — no two contracts may write to the same file',
        severity: 'error',
        field: 'program_contracts[1].location',
      },
    ]);
  });

  it('a contract on the orchestrator\'s own files or in .git is refused (V055, P12-02)', () => {
    for (const [location, file, where] of [
      ['docs/PROGRAM/PROGRAM-shop.yaml', 'docs/PROGRAM/PROGRAM-shop.yaml', "a file polywave writes (manifests, CONTEXT.md, worktrees, state)"],
      ['./docs/IMPL/IMPL-a.yaml#State', 'docs/IMPL/IMPL-a.yaml', "a file polywave writes (manifests, CONTEXT.md, worktrees, state)"],
      ['.git/config', '.git/config', 'inside the git directory'],
      ['.claude/worktrees/x/types.ts', '.claude/worktrees/x/types.ts', "a file polywave writes (manifests, CONTEXT.md, worktrees, state)"],
    ]) {
      const findings = check((data) => void (data.program_contracts[0]!.location = location));
      expect(findings.map(({ code, message, field }) => ({ code, message, field }))).toEqual([
        {
          code: 'V055_CONTRACT_LOCATION_CONFLICT',
          message: `program contract "UserSession" has location "${file}", ${where} — a contract's file is one an IMPL's agents write and commit`,
          field: 'program_contracts[0].location',
        },
      ]);
    }
    // A source file under docs/ that is not polywave's is fine.
    expect(check((data) => void (data.program_contracts[0]!.location = 'docs/api/types.md'))).toEqual([]);
  });

  it('freeze_at names a tier boundary (V053)', () => {
    expect(check((data) => void (data.program_contracts[0]!.freeze_at = 'Tier 9 completion'))).toEqual([
      {
        code: 'V053_INVALID_FREEZE_AT',
        message: 'program contract "UserSession" freeze_at "Tier 9 completion" refers to tier 9, which is not defined in tiers',
        severity: 'error',
        field: 'program_contracts[0].freeze_at',
      },
    ]);
    expect(check((data) => void (data.program_contracts[0]!.freeze_at = 'when ready'))).toEqual([
      {
        code: 'V053_INVALID_FREEZE_AT',
        message: 'program contract "UserSession" freeze_at "when ready" names neither a tier (tier-N, "Tier N completion") nor an IMPL slug',
        severity: 'error',
        field: 'program_contracts[0].freeze_at',
      },
    ]);
  });

  it('freeze_at accepts tier-N, Tier N, an IMPL slug and IMPL-<slug> completion; absent is fine', () => {
    for (const freezeAt of ['tier-1', 'Tier 2', 'tier 3 complete', 'auth', 'IMPL-auth completion', undefined]) {
      expect(check((data) => void (data.program_contracts[0]!.freeze_at = freezeAt))).toEqual([]);
    }
  });
});

describe('§15.5 completion consistency (V033, V034)', () => {
  it('*_complete ≤ *_total', () => {
    expect(
      check((data) => {
        data.completion.tiers_complete = 4;
        data.completion.impls_complete = 5;
      }),
    ).toEqual([
      { code: 'V033_COMPLETION_BOUNDS', message: 'tiers_complete (4) exceeds tiers_total (3)', severity: 'error', field: 'completion.tiers_complete' },
      { code: 'V033_COMPLETION_BOUNDS', message: 'impls_complete (5) exceeds impls_total (4)', severity: 'error', field: 'completion.impls_complete' },
    ]);
  });

  it('totals equal the entry counts (too high and too low)', () => {
    expect(check((data) => void (data.completion.impls_total = 3))).toEqual([
      { code: 'V034_IMPLS_TOTAL_MISMATCH', message: 'impls_total (3) must equal the number of impls entries (4)', severity: 'error', field: 'completion.impls_total' },
    ]);
    expect(check((data) => void (data.completion.impls_total = 5))).toHaveLength(1);
    expect(check((data) => void (data.completion.tiers_total = 4))).toEqual([
      { code: 'V034_IMPLS_TOTAL_MISMATCH', message: 'tiers_total (4) must equal the number of tiers entries (3)', severity: 'error', field: 'completion.tiers_total' },
    ]);
  });
});

describe('§7 tier gates and §12 pre-mortem enums', () => {
  it('tier gate type (V010)', () => {
    expect(check((data) => void (data.tier_gates[0]!.type = 'deploy'))).toEqual([
      {
        code: 'V010_INVALID_GATE_TYPE',
        message: 'tier gate type "deploy" is invalid — must be one of: build, lint, test, typecheck, format, custom',
        severity: 'error',
        field: 'tier_gates[0].type',
      },
    ]);
  });

  it('pre-mortem likelihood/impact (V015)', () => {
    expect(check((data) => void (data.pre_mortem[0]!.likelihood = 'extreme'))).toEqual([
      {
        code: 'V015_INVALID_PRE_MORTEM_RISK',
        message: 'pre_mortem[0].likelihood has invalid value "extreme" — must be one of: low, medium, high',
        severity: 'error',
        field: 'pre_mortem[0].likelihood',
      },
    ]);
  });
});

describe('positions and determinism', () => {
  const text = [
    'title: T',
    'program_slug: t',
    'state: PLANNING',
    'impls:',
    '  - slug: a',
    '    title: A',
    '    tier: 1',
    '    status: done',
    '    depends_on: [ghost]',
    'tiers:',
    '  - number: 2',
    '    impls: [a]',
    'completion:',
    '  tiers_complete: 0',
    '  tiers_total: 1',
    '  impls_complete: 0',
    '  impls_total: 1',
    '  total_agents: 0',
    '  total_waves: 0',
    '',
  ].join('\n');

  it('findings carry the line of the offending field', () => {
    const parsed = parseProgram(text);
    expect(parsed.fatal).toBe(false);
    const findings = validateProgram(parsed.manifest!, { locate: parsed.locate, fileName: 'PROGRAM-t.yaml' });
    expect(findings.map((finding) => [finding.code, finding.line])).toEqual([
      ['V036_INVALID_ENUM', 8],
      ['V025_TIER_MISMATCH', 7],
      ['V028_INVALID_DEPENDENCY', 9],
      ['V054_TIER_SEQUENCE', 11],
    ]);
    expect(findings.every(isBlocking)).toBe(true);
  });

  it('the same input gives the same findings in the same order', () => {
    const parsed = parseProgram(text);
    const first = validateProgram(parsed.manifest!, { locate: parsed.locate });
    const second = validateProgram(parseProgram(text).manifest!, { locate: parsed.locate });
    expect(second).toEqual(first);
  });
});
