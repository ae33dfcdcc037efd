import { describe, expect, it } from 'vitest';
import { canonicalCode, sameCode } from '../src/errors/codes.js';
import type { Finding } from '../src/errors/finding.js';
import { parseImpl } from '../src/protocol/parse-impl.js';
import type { ImplRuleContext } from '../src/protocol/rules/rule.js';
import { implRules } from '../src/protocol/rules/index.js';
import { summarizeFindings, validateImpl } from '../src/protocol/validate-impl.js';

// Manifests are written as YAML text and parsed with parseImpl, so lines are real. Ownership
// rows are flow mappings (one row per line) to keep `lineOf` unambiguous.

const header = `title: Add widgets
feature_slug: add-widgets
verdict: SUITABLE
test_command: npm test
lint_command: npm run lint
`;

const ownership = `file_ownership:
  - {file: src/a.ts, agent: A, wave: 1, action: new}
  - {file: src/b.ts, agent: B, wave: 1, action: modify}
  - {file: src/c.ts, agent: C, wave: 2, action: modify, depends_on: [A]}
`;

const waves = `waves:
  - number: 1
    agents:
      - id: A
        task: Build a
        files: [src/a.ts]
      - id: B
        task: Build b
        files: [src/b.ts]
  - number: 2
    agents:
      - id: C
        task: Wire c
        files: [src/c.ts]
        dependencies: [A]
`;

const gates = `quality_gates:
  level: standard
  gates:
    - type: build
      command: npm run build
      required: true
`;

/** A valid manifest with the given sections replaced/added (later keys go last). */
function manifestText(sections: { header?: string; ownership?: string; waves?: string; gates?: string; extra?: string } = {}): string {
  return [sections.header ?? header, sections.ownership ?? ownership, sections.waves ?? waves, sections.gates ?? gates, sections.extra ?? ''].join('');
}

function validate(text: string, facts: Partial<Omit<ImplRuleContext, 'manifest' | 'locate'>> = {}): Finding[] {
  const parsed = parseImpl(text);
  expect(parsed.fatal, JSON.stringify(parsed.findings)).toBe(false);
  expect(parsed.manifest, JSON.stringify(parsed.findings)).not.toBeNull();
  return validateImpl({ manifest: parsed.manifest!, locate: parsed.locate, ...facts });
}

function findingsWith(code: string, text: string, facts: Partial<Omit<ImplRuleContext, 'manifest' | 'locate'>> = {}): Finding[] {
  // Codes are compared through sameCode: an old name (MR02_UNSCOPED_GATE) still selects its finding.
  return validate(text, facts).filter((finding) => sameCode(finding.code, code));
}

/** 1-based line of the `occurrence`-th line containing `needle`. */
function lineOf(text: string, needle: string, occurrence = 1): number {
  let seen = 0;
  const lines = text.split('\n');
  for (let index = 0; index < lines.length; index += 1) {
    if (lines[index]!.includes(needle)) {
      seen += 1;
      if (seen === occurrence) return index + 1;
    }
  }
  throw new Error(`"${needle}" (#${occurrence}) not in text`);
}

/** Only the parts of findings a table asserts. */
function brief(findings: Finding[]) {
  return findings.map(({ code, severity, message, field }) => ({ code, severity, message, field }));
}

describe('baseline', () => {
  it('a minimal valid manifest has no findings at all', () => {
    const text = manifestText();
    expect(parseImpl(text).findings).toEqual([]);
    expect(validate(text)).toEqual([]);
  });

  it('every rule is named, referenced, coded and unique', () => {
    const names = implRules.map((rule) => rule.name);
    expect(new Set(names).size).toBe(names.length);
    for (const rule of implRules) {
      expect(rule.name).toMatch(/^[a-z]+(-[a-z0-9]+)*$/);
      expect(rule.reference).not.toBe('');
      expect(rule.codes.length).toBeGreaterThan(0);
    }
  });

  it('every finding code is declared by the rule that emits it', () => {
    // A deliberately broken manifest touches most rules.
    const text = `title: ""
feature_slug: Bad_Slug
verdict: MAYBE
state: RUNNING
merge_state: busy
file_ownership:
  - {file: /abs/x.go, agent: a, wave: 0, action: update, depends_on: [Q]}
waves:
  - number: 2
    type: weird
    agents: []
quality_gates:
  level: huge
  gates:
    - {type: bogus, command: "", timing: later, phase: SOMETIME, fix: true}
completion_reports:
  a1: {status: done, commit: uncommitted, verification: ok, failure_type: unknown}
pre_mortem:
  overall_risk: extreme
  rows:
    - {scenario: "", likelihood: often, impact: big, mitigation: ""}
known_issues:
  - {title: "", description: x}
reactions:
  transient: {action: explode, max_attempts: -1}
injection_method: magic
`;
    const parsed = parseImpl(text);
    for (const rule of implRules) {
      for (const finding of rule.check({ manifest: parsed.manifest!, locate: parsed.locate })) {
        expect(rule.codes, `${rule.name} emitted ${finding.code}`).toContain(finding.code);
      }
    }
    expect(validate(text).length).toBeGreaterThan(20);
  });
});

describe('I1 disjoint ownership (V002_DISJOINT_OWNERSHIP)', () => {
  it('flags two agents owning one file in one wave, at the conflicting row', () => {
    const text = manifestText({
      ownership: `file_ownership:
  - {file: src/a.ts, agent: A, wave: 1, action: new}
  - {file: src/b.ts, agent: B, wave: 1, action: modify}
  - {file: src/a.ts, agent: B, wave: 1, action: modify}
  - {file: src/c.ts, agent: C, wave: 2, action: modify, depends_on: [A]}
`,
    });
    const findings = findingsWith('V002_DISJOINT_OWNERSHIP', text);
    expect(brief(findings)).toEqual([
      {
        code: 'V002_DISJOINT_OWNERSHIP',
        severity: 'error',
        message: 'file "src/a.ts" owned by multiple agents in wave 1: [A B]',
        field: 'file_ownership[2].file',
      },
    ]);
    expect(findings[0]!.line).toBe(lineOf(text, '{file: src/a.ts, agent: B'));
  });

  it('allows the same file in different waves', () => {
    const text = manifestText({
      ownership: `file_ownership:
  - {file: src/a.ts, agent: A, wave: 1, action: new}
  - {file: src/b.ts, agent: B, wave: 1, action: modify}
  - {file: src/c.ts, agent: C, wave: 2, action: modify, depends_on: [A]}
  - {file: src/a.ts, agent: C, wave: 2, action: modify}
`,
      waves: waves.replace('files: [src/c.ts]', 'files: [src/c.ts, src/a.ts]'),
    });
    expect(validate(text)).toEqual([]);
  });

  it('is checked per repository: the same path in two repos of one wave is fine (Go bug fixed)', () => {
    const text = manifestText({
      ownership: `file_ownership:
  - {file: README.md, agent: A, wave: 1, action: modify, repo: api}
  - {file: README.md, agent: B, wave: 1, action: modify, repo: web}
`,
      waves: `waves:
  - number: 1
    agents:
      - {id: A, task: Document the API}
      - {id: B, task: Document the web app}
`,
      gates: `quality_gates:
  gates:
    - {type: build, command: make, required: true, repo: api}
`,
    });
    expect(validate(text)).toEqual([]);
  });

  it('names the repository when two agents share a file inside one repo', () => {
    const text = manifestText({
      ownership: `file_ownership:
  - {file: README.md, agent: A, wave: 1, action: modify, repo: api}
  - {file: README.md, agent: B, wave: 1, action: modify, repo: api}
`,
      waves: `waves:
  - number: 1
    agents:
      - {id: A, task: one}
      - {id: B, task: two}
`,
    });
    expect(findingsWith('V002_DISJOINT_OWNERSHIP', text).map((finding) => finding.message)).toEqual([
      'file "README.md" owned by multiple agents in wave 1: [A B] (repo "api")',
    ]);
  });

  it('a row repeated by the same agent is not an I1 conflict', () => {
    const text = manifestText({
      ownership: ownership + '  - {file: src/a.ts, agent: A, wave: 1, action: new}\n',
    });
    expect(findingsWith('V002_DISJOINT_OWNERSHIP', text)).toEqual([]);
  });
});

describe('I2 dependencies in prior waves (V003_SAME_WAVE_DEPENDENCY)', () => {
  it('flags unknown and same-wave agent dependencies', () => {
    const text = manifestText({
      waves: waves.replace('        files: [src/b.ts]\n', '        files: [src/b.ts]\n        dependencies: [A, Z]\n'),
    });
    const findings = findingsWith('V003_SAME_WAVE_DEPENDENCY', text);
    expect(brief(findings)).toEqual([
      {
        code: 'V003_SAME_WAVE_DEPENDENCY',
        severity: 'error',
        message: 'agent B (wave 1) depends on A (wave 1) — dependencies must be in prior waves',
        field: 'waves[0].agents[1].dependencies[0]',
      },
      {
        code: 'V003_SAME_WAVE_DEPENDENCY',
        severity: 'error',
        message: 'agent B (wave 1) depends on unknown agent "Z"',
        field: 'waves[0].agents[1].dependencies[1]',
      },
    ]);
    expect(findings[0]!.line).toBe(lineOf(text, 'dependencies: [A, Z]'));
  });

  it('flags ownership depends_on entries (agent before the first colon)', () => {
    const text = manifestText({
      ownership: `file_ownership:
  - {file: src/a.ts, agent: A, wave: 1, action: new}
  - {file: src/b.ts, agent: B, wave: 1, action: modify, depends_on: ["A:src/a.ts", "Y:src/y.ts"]}
  - {file: src/c.ts, agent: C, wave: 2, action: modify, depends_on: ["A:src/a.ts"]}
`,
    });
    const findings = findingsWith('V003_SAME_WAVE_DEPENDENCY', text);
    expect(brief(findings)).toEqual([
      {
        code: 'V003_SAME_WAVE_DEPENDENCY',
        severity: 'error',
        message: 'file "src/b.ts" (agent B, wave 1) depends on agent A (wave 1) — dependencies must be in prior waves',
        field: 'file_ownership[1].depends_on[0]',
      },
      {
        code: 'V003_SAME_WAVE_DEPENDENCY',
        severity: 'error',
        message: 'file "src/b.ts" (agent B, wave 1) depends on unknown agent "Y"',
        field: 'file_ownership[1].depends_on[1]',
      },
    ]);
    expect(findings[1]!.line).toBe(lineOf(text, 'src/b.ts, agent: B'));
  });

  it('accepts dependencies on earlier waves', () => {
    expect(findingsWith('V003_SAME_WAVE_DEPENDENCY', manifestText())).toEqual([]);
  });
});

describe('I3 wave numbering (V004_WAVE_NOT_1INDEXED)', () => {
  it('waves numbered [1,3] ⇒ one finding at index 1 (§10.7)', () => {
    const text = manifestText({ waves: waves.replace('  - number: 2', '  - number: 3') });
    const findings = findingsWith('V004_WAVE_NOT_1INDEXED', text);
    expect(brief(findings)).toEqual([
      { code: 'V004_WAVE_NOT_1INDEXED', severity: 'error', message: 'wave number mismatch: expected wave 2, got wave 3', field: 'waves[1].number' },
    ]);
    expect(findings[0]!.line).toBe(lineOf(text, '- number: 3'));
  });

  it('no waves ⇒ no numbering finding', () => {
    expect(findingsWith('V004_WAVE_NOT_1INDEXED', manifestText({ ownership: '', waves: 'waves: []\n' }))).toEqual([]);
  });
});

describe('I4 required top-level fields (V005, V039)', () => {
  it('reports every missing field (§10.10)', () => {
    const text = manifestText({ header: 'title: "  "\ntest_command: x\n' });
    expect(brief(findingsWith('V005_REQUIRED_FIELDS_MISSING', text))).toEqual([
      { code: 'V005_REQUIRED_FIELDS_MISSING', severity: 'error', message: 'title is required', field: 'title' },
      { code: 'V005_REQUIRED_FIELDS_MISSING', severity: 'error', message: 'feature_slug is required', field: 'feature_slug' },
      { code: 'V005_REQUIRED_FIELDS_MISSING', severity: 'error', message: 'verdict is required', field: 'verdict' },
    ]);
    expect(findingsWith('V005_REQUIRED_FIELDS_MISSING', text)[0]!.line).toBe(1);
  });

  it.each(['MyFeature', 'my_feature', '-x', 'x-'])('slug %s is not kebab-case (§10.9)', (slug) => {
    const text = manifestText({ header: header.replace('add-widgets', `"${slug}"`) });
    const findings = findingsWith('V039_INVALID_FIELD_VALUE', text);
    expect(brief(findings)).toEqual([
      {
        code: 'V039_INVALID_FIELD_VALUE',
        severity: 'error',
        message: `feature_slug "${slug}" must be kebab-case (lowercase letters, digits, hyphens; no leading/trailing hyphens)`,
        field: 'feature_slug',
      },
    ]);
    expect(findings[0]!.line).toBe(2);
  });

  it.each(['a', 'abc123', 'my-feature'])('slug %s is valid (§10.9)', (slug) => {
    expect(findingsWith('V039_INVALID_FIELD_VALUE', manifestText({ header: header.replace('add-widgets', slug) }))).toEqual([]);
  });

  it('rejects an unknown verdict and accepts the three verdicts (§10.10)', () => {
    const bad = manifestText({ header: header.replace('verdict: SUITABLE', 'verdict: MAYBE') });
    expect(brief(findingsWith('V039_INVALID_FIELD_VALUE', bad))).toEqual([
      {
        code: 'V039_INVALID_FIELD_VALUE',
        severity: 'error',
        message: 'verdict must be SUITABLE, NOT_SUITABLE, or SUITABLE_WITH_CAVEATS, got "MAYBE"',
        field: 'verdict',
      },
    ]);
    for (const verdict of ['SUITABLE', 'SUITABLE_WITH_CAVEATS']) {
      expect(findingsWith('V039_INVALID_FIELD_VALUE', manifestText({ header: header.replace('verdict: SUITABLE', `verdict: ${verdict}`) }))).toEqual([]);
    }
    const notSuitable = `${header.replace('verdict: SUITABLE', 'verdict: NOT_SUITABLE')}file_ownership: []\nwaves: []\n`;
    expect(validate(notSuitable)).toEqual([]);
  });
});

describe('I5 agent files are owned (V019_ORPHAN_FILE)', () => {
  it('flags an agent file missing from file_ownership', () => {
    const text = manifestText({ waves: waves.replace('files: [src/b.ts]', 'files: [src/b.ts, src/orphan.ts]') });
    const findings = findingsWith('V019_ORPHAN_FILE', text);
    expect(brief(findings)).toEqual([
      {
        code: 'V019_ORPHAN_FILE',
        severity: 'error',
        message: 'agent B (wave 1) references file "src/orphan.ts" which is not in file_ownership table',
        field: 'waves[0].agents[1].files[1]',
      },
    ]);
    expect(findings[0]!.line).toBe(lineOf(text, 'src/orphan.ts'));
  });

  it('agents without files are fine (§10.3)', () => {
    const text = `${header}file_ownership:
  - {file: src/a.ts, agent: A, wave: 1}
  - {file: src/b.ts, agent: B, wave: 1}
waves:
  - number: 1
    agents:
      - {id: A, task: one}
      - {id: B, task: two}
quality_gates:
  level: quick
`;
    expect(validate(text.replace('test_command: npm test\nlint_command: npm run lint\n', ''))).toEqual([]);
  });
});

describe('I6 no dependency cycles (V007_DEPENDENCY_CYCLE)', () => {
  const cyclic = `waves:
  - number: 1
    agents:
      - {id: A, task: a, files: [src/a.ts], dependencies: [B]}
      - {id: B, task: b, files: [src/b.ts], dependencies: [A]}
  - number: 2
    agents:
      - {id: C, task: c, files: [src/c.ts], dependencies: [D]}
      - {id: D, task: d, dependencies: [C]}
`;

  it('reports every cycle, deterministically, at the closing dependency', () => {
    const text = manifestText({ waves: cyclic });
    const findings = findingsWith('V007_DEPENDENCY_CYCLE', text);
    expect(brief(findings)).toEqual([
      { code: 'V007_DEPENDENCY_CYCLE', severity: 'error', message: 'dependency cycle detected: A -> B -> A', field: 'waves[0].agents[1].dependencies[0]' },
      { code: 'V007_DEPENDENCY_CYCLE', severity: 'error', message: 'dependency cycle detected: C -> D -> C', field: 'waves[1].agents[1].dependencies[0]' },
    ]);
    expect(findings[0]!.line).toBe(lineOf(text, '{id: B'));
    expect(findingsWith('V007_DEPENDENCY_CYCLE', text)).toEqual(findings);
  });

  it('a self-dependency is a cycle', () => {
    const text = manifestText({ waves: waves.replace('dependencies: [A]', 'dependencies: [C]') });
    expect(findingsWith('V007_DEPENDENCY_CYCLE', text).map((finding) => finding.message)).toEqual(['dependency cycle detected: C -> C']);
  });

  it('an acyclic graph has no cycle finding', () => {
    expect(findingsWith('V007_DEPENDENCY_CYCLE', manifestText())).toEqual([]);
  });
});

const reports = (body: string) => `completion_reports:\n${body}`;

describe('I5 commit before report (G003_COMMIT_MISSING)', () => {
  it.each([
    ['uncommitted', '"uncommitted"'],
    ['', '""'],
  ])('commit %j is not a commit (§10.11)', (commit, written) => {
    const text = manifestText({ extra: reports(`  A: {status: blocked, commit: ${written}, failure_type: fixable}\n`) });
    const findings = findingsWith('G003_COMMIT_MISSING', text);
    expect(brief(findings)).toEqual([
      {
        code: 'G003_COMMIT_MISSING',
        severity: 'error',
        message: `agent A completion report has no valid commit (commit="${commit}") — agents must commit before reporting`,
        field: 'completion_reports.A.commit',
      },
    ]);
    expect(findings[0]!.line).toBe(lineOf(text, '  A: {status'));
  });

  it('a missing commit key is reported at the report', () => {
    const text = manifestText({ extra: reports('  B:\n    status: complete\n') });
    const findings = findingsWith('G003_COMMIT_MISSING', text);
    expect(findings.map((finding) => finding.message)).toEqual([
      'agent B completion report has no valid commit (commit="") — agents must commit before reporting',
    ]);
    expect(findings[0]!.line).toBe(lineOf(text, '  B:'));
  });

  it('a real commit passes', () => {
    expect(validate(manifestText({ extra: reports('  A: {status: complete, commit: abc1234}\n') }))).toEqual([]);
  });
});

describe('E9/SM01 state and merge_state (V008, V023)', () => {
  it('garbage state and merge_state are reported (§10.12)', () => {
    const text = manifestText({ extra: 'state: RUNNING\nmerge_state: busy\n' });
    expect(brief(validate(text))).toEqual([
      {
        code: 'V023_INVALID_MERGE_STATE',
        severity: 'error',
        message: 'merge_state has invalid value "busy" — must be one of: idle, in_progress, completed, failed',
        field: 'merge_state',
      },
      {
        code: 'V008_INVALID_STATE',
        severity: 'error',
        message:
          'state has invalid value "RUNNING" — must be one of: INTERVIEWING, SCOUT_PENDING, SCOUT_VALIDATING, REVIEWED, SCAFFOLD_PENDING, WAVE_PENDING, WAVE_EXECUTING, WAVE_MERGING, WAVE_VERIFIED, BLOCKED, COMPLETE, NOT_SUITABLE',
        field: 'state',
      },
    ]);
    expect(validate(text).map((finding) => finding.line)).toEqual([lineOf(text, 'merge_state:'), lineOf(text, 'state: RUNNING')]);
  });

  it.each([
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
  ])('state %s is accepted (§10.12)', (state) => {
    expect(findingsWith('V008_INVALID_STATE', manifestText({ extra: `state: ${state}\n` }))).toEqual([]);
  });

  it('empty state and merge_state are accepted', () => {
    expect(validate(manifestText({ extra: 'state: ""\nmerge_state: ""\n' }))).toEqual([]);
  });

  it('in_progress requires WAVE_MERGING; completed requires a settled state', () => {
    const inProgress = manifestText({ extra: 'state: WAVE_EXECUTING\nmerge_state: in_progress\ninjection_method: hook\n' });
    expect(brief(validate(inProgress))).toEqual([
      {
        code: 'V023_INVALID_MERGE_STATE',
        severity: 'error',
        message: 'merge_state is "in_progress" but state is "WAVE_EXECUTING" — in_progress requires WAVE_MERGING',
        field: 'merge_state',
      },
    ]);
    const completed = manifestText({ extra: 'state: REVIEWED\nmerge_state: completed\ninjection_method: hook\n' });
    expect(validate(completed).map((finding) => finding.message)).toEqual([
      'merge_state is "completed" but state is "REVIEWED" — completed requires WAVE_VERIFIED, WAVE_PENDING, or COMPLETE',
    ]);
    expect(validate(manifestText({ extra: 'state: WAVE_MERGING\nmerge_state: in_progress\ninjection_method: hook\n' }))).toEqual([]);
    expect(validate(manifestText({ extra: 'state: COMPLETE\nmerge_state: completed\n' }))).toEqual([]);
    expect(validate(manifestText({ extra: 'state: BLOCKED\nmerge_state: failed\ninjection_method: hook\n' }))).toEqual([]);
  });
});

describe('agent IDs (V009_INVALID_AGENT_ID)', () => {
  it.each(['a', 'AB', 'A1', 'A0'])('ID %s is invalid in waves, ownership rows and report keys (§10.8)', (id) => {
    const text = `${header}file_ownership:
  - {file: src/a.ts, agent: ${id}, wave: 1}
  - {file: src/b.ts, agent: B, wave: 1}
waves:
  - number: 1
    agents:
      - {id: ${id}, task: one, files: [src/a.ts]}
      - {id: B, task: two, files: [src/b.ts]}
completion_reports:
  ${id}: {status: complete, commit: abc}
`;
    const findings = findingsWith('V009_INVALID_AGENT_ID', text);
    expect(brief(findings)).toEqual([
      {
        code: 'V009_INVALID_AGENT_ID',
        severity: 'error',
        message: `agent ID "${id}" in wave 1 does not match protocol pattern ^[A-Z][2-9]?$ (one uppercase letter, optionally followed by digit 2-9)`,
        field: 'waves[0].agents[0].id',
      },
      {
        code: 'V009_INVALID_AGENT_ID',
        severity: 'error',
        message: `agent ID "${id}" in file_ownership entry 0 (file="src/a.ts") does not match protocol pattern ^[A-Z][2-9]?$`,
        field: 'file_ownership[0].agent',
      },
      {
        code: 'V009_INVALID_AGENT_ID',
        severity: 'error',
        message: `agent ID "${id}" in completion_reports does not match protocol pattern ^[A-Z][2-9]?$`,
        field: `completion_reports.${id}`,
      },
    ]);
    expect(findings.map((finding) => finding.line)).toEqual([
      lineOf(text, `{id: ${id},`),
      lineOf(text, `agent: ${id},`),
      lineOf(text, `  ${id}: {status`),
    ]);
  });

  it('an empty ID is invalid', () => {
    const text = manifestText({ waves: waves.replace('- id: A', '- id: ""') });
    expect(findingsWith('V009_INVALID_AGENT_ID', text).map((finding) => finding.field)).toEqual(['waves[0].agents[0].id']);
  });

  it.each(['A', 'C2', 'D9'])('ID %s is valid (§10.8)', (id) => {
    const text = `${header}file_ownership:
  - {file: src/a.ts, agent: ${id}, wave: 1}
  - {file: src/z.ts, agent: Z, wave: 1}
waves:
  - number: 1
    agents:
      - {id: ${id}, task: one, files: [src/a.ts]}
      - {id: Z, task: two}
completion_reports:
  ${id}: {status: complete, commit: abc}
`;
    expect(validate(text)).toEqual([]);
  });

  it('the Scaffold row at wave 0 is exempt from V009, V038 and the wave > 0 rule (§10.18)', () => {
    const text = manifestText({ ownership: ownership + '  - {file: src/types.ts, agent: Scaffold, wave: 0, action: new}\n' });
    expect(validate(text)).toEqual([]);
  });

  it('Scaffold outside wave 0 is an ordinary (invalid) agent', () => {
    const text = manifestText({ ownership: ownership + '  - {file: src/types.ts, agent: Scaffold, wave: 1, action: new}\n' });
    expect(validate(text).map((finding) => finding.code)).toEqual(['V009_INVALID_AGENT_ID', 'V038_CROSS_FIELD']);
  });
});

describe('duplicate agent IDs (V050_DUPLICATE_AGENT_ID)', () => {
  it('flags an ID declared in two waves and twice in one wave', () => {
    const text = manifestText({
      waves: `waves:
  - number: 1
    agents:
      - {id: A, task: a, files: [src/a.ts]}
      - {id: B, task: b, files: [src/b.ts]}
      - {id: B, task: b again}
  - number: 2
    agents:
      - {id: C, task: c, files: [src/c.ts], dependencies: [A]}
      - {id: A, task: a again}
`,
    });
    const findings = findingsWith('V050_DUPLICATE_AGENT_ID', text);
    expect(brief(findings)).toEqual([
      { code: 'V050_DUPLICATE_AGENT_ID', severity: 'error', message: 'agent ID "B" is used more than once: twice in wave 1', field: 'waves[0].agents[2].id' },
      { code: 'V050_DUPLICATE_AGENT_ID', severity: 'error', message: 'agent ID "A" is used more than once: wave 1 and wave 2', field: 'waves[1].agents[1].id' },
    ]);
    expect(findings.map((finding) => finding.line)).toEqual([lineOf(text, '{id: B, task: b again}'), lineOf(text, '{id: A, task: a again}')]);
  });

  it('unique IDs pass', () => {
    expect(findingsWith('V050_DUPLICATE_AGENT_ID', manifestText())).toEqual([]);
  });
});

describe('quality gates (V010, V048_GATE_TARGETS_NEW_FILE, B009)', () => {
  it('flags invalid type, timing and phase', () => {
    const text = manifestText({
      gates: `quality_gates:
  gates:
    - {type: compile, command: make, required: true, timing: later, phase: SOMETIME}
`,
    });
    const findings = findingsWith('V010_INVALID_GATE_TYPE', text);
    expect(brief(findings)).toEqual([
      {
        code: 'V010_INVALID_GATE_TYPE',
        severity: 'error',
        message: 'quality gate type "compile" is invalid — must be one of: build, lint, test, typecheck, format, custom',
        field: 'quality_gates.gates[0].type',
      },
      {
        code: 'V010_INVALID_GATE_TYPE',
        severity: 'error',
        message: 'quality gate timing "later" is invalid — must be one of: pre-merge, post-merge (or empty for pre-merge default)',
        field: 'quality_gates.gates[0].timing',
      },
      {
        code: 'V010_INVALID_GATE_TYPE',
        severity: 'error',
        message: 'quality gate phase "SOMETIME" is invalid — must be one of: PRE_VALIDATION, VALIDATION, POST_VALIDATION (or empty for VALIDATION default)',
        field: 'quality_gates.gates[0].phase',
      },
    ]);
    expect(findings[0]!.line).toBe(lineOf(text, 'type: compile'));
    expect(findings[0]!.suggestion).toContain("'custom'");
  });

  it('accepts all six types, both timings and the three phases', () => {
    const text = manifestText({
      gates: `quality_gates:
  gates:
    - {type: build, command: b, required: true, timing: pre-merge, phase: VALIDATION}
    - {type: lint, command: l, required: false, timing: post-merge, phase: POST_VALIDATION}
    - {type: test, command: t, required: true}
    - {type: typecheck, command: tc, required: true}
    - {type: format, command: f, required: true, fix: true, phase: PRE_VALIDATION}
    - {type: custom, command: c, required: false, parallel_group: checks}
`,
    });
    expect(validate(text)).toEqual([]);
  });

  it('a required gate naming an action:new file always fails on baseline', () => {
    const text = manifestText({
      gates: `quality_gates:
  gates:
    - {type: test, command: "npx vitest run src/a.ts", required: true}
    - {type: test, command: "npx vitest run src/a.ts", required: false}
    - {type: test, command: "npx vitest run src/b.ts", required: true}
`,
    });
    const findings = findingsWith('V048_GATE_TARGETS_NEW_FILE', text);
    expect(brief(findings)).toEqual([
      {
        code: 'V048_GATE_TARGETS_NEW_FILE',
        severity: 'error',
        message:
          'quality_gates.gates[0]: required gate references action:new file "src/a.ts" — this gate will always fail on baseline (file does not exist yet); use required:false or move the check to the agent\'s verification gate',
        field: 'quality_gates.gates[0].command',
      },
    ]);
    expect(findings[0]!.line).toBe(lineOf(text, 'src/a.ts", required: true'));
  });

  it('a fix gate outside PRE_VALIDATION is a validation error (B009)', () => {
    const text = manifestText({
      gates: `quality_gates:
  gates:
    - {type: format, command: "gofmt -w .", required: true, fix: true}
    - {type: lint, command: "eslint --fix .", required: true, fix: true, phase: VALIDATION}
    - {type: format, command: "prettier --write .", required: true, fix: true, phase: PRE_VALIDATION}
    - {type: format, command: "prettier --check .", required: true, fix: false}
`,
    });
    const findings = findingsWith('B009_GATE_VALIDATION_FAILED', text);
    expect(brief(findings)).toEqual([
      {
        code: 'B009_GATE_VALIDATION_FAILED',
        severity: 'error',
        message: 'quality_gates.gates[0]: gates with fix=true must be in PRE_VALIDATION phase (got empty, which defaults to VALIDATION)',
        field: 'quality_gates.gates[0].fix',
      },
      {
        code: 'B009_GATE_VALIDATION_FAILED',
        severity: 'error',
        message: 'quality_gates.gates[1]: gates with fix=true must be in PRE_VALIDATION phase (got VALIDATION)',
        field: 'quality_gates.gates[1].phase',
      },
    ]);
    expect(findings.map((finding) => finding.line)).toEqual([lineOf(text, 'gofmt'), lineOf(text, 'eslint')]);
  });

  it('quality_gates with only a level is valid (§10.3)', () => {
    expect(validate(manifestText({ gates: 'quality_gates:\n  level: quick\n' }))).toEqual([]);
  });
});

describe('E5 worktree and branch names (V042_INVALID_WORKTREE_NAME)', () => {
  const reportFor = (agent: string, fields: string) => manifestText({ extra: reports(`  ${agent}: {status: complete, commit: abc, ${fields}}\n`) });

  it.each(['wave1-agent-A', 'polywave/add-widgets/wave1-agent-A', 'polywave/other-slug/wave1-agent-A', 'saw/add-widgets/wave1-agent-A'])(
    'branch %s is valid (§10.13; saw/ is the SAW spelling of the same scheme)',
    (branch) => {
      expect(validate(reportFor('A', `branch: ${branch}`))).toEqual([]);
    },
  );

  it.each(['sawx/add-widgets/wave1-agent-A', 'polywave/Add/wave1-agent-A', 'polywave/wave1-agent-A', 'wave1-agent-A1'])('branch %s is not valid', (branch) => {
    expect(findingsWith('V042_INVALID_WORKTREE_NAME', reportFor('A', `branch: ${branch}`)).map((finding) => finding.message)).toEqual([
      `agent A branch "${branch}" does not match pattern wave{N}-agent-{ID} or polywave/{slug}/wave{N}-agent-{ID}`,
    ]);
  });

  it('wave2-agent-C2 is valid for C2 in wave 2 (§10.13)', () => {
    const text = `${header}file_ownership:
  - {file: a, agent: A, wave: 1}
  - {file: c, agent: C2, wave: 2}
  - {file: d, agent: D, wave: 2}
waves:
  - number: 1
    agents: [{id: A, task: a}]
  - number: 2
    agents: [{id: C2, task: c}, {id: D, task: d}]
completion_reports:
  C2: {status: complete, commit: abc, branch: wave2-agent-C2, worktree: /repo/.claude/worktrees/polywave/add-widgets/wave2-agent-C2}
`;
    expect(validate(text)).toEqual([]);
  });

  it('a branch not following the pattern is flagged (§10.13)', () => {
    const text = reportFor('A', 'branch: feature-branch');
    const findings = findingsWith('V042_INVALID_WORKTREE_NAME', text);
    expect(brief(findings)).toEqual([
      {
        code: 'V042_INVALID_WORKTREE_NAME',
        severity: 'error',
        message: 'agent A branch "feature-branch" does not match pattern wave{N}-agent-{ID} or polywave/{slug}/wave{N}-agent-{ID}',
        field: 'completion_reports.A.branch',
      },
    ]);
    expect(findings[0]!.line).toBe(lineOf(text, 'feature-branch'));
  });

  it('wrong wave and wrong agent are both reported', () => {
    expect(brief(findingsWith('V042_INVALID_WORKTREE_NAME', reportFor('A', 'branch: wave2-agent-B')))).toEqual([
      {
        code: 'V042_INVALID_WORKTREE_NAME',
        severity: 'error',
        message: 'agent A (wave 1) branch "wave2-agent-B" has wrong wave number (expected wave1-agent-A)',
        field: 'completion_reports.A.branch',
      },
      {
        code: 'V042_INVALID_WORKTREE_NAME',
        severity: 'error',
        message: 'agent A branch "wave2-agent-B" has wrong agent ID (expected wave1-agent-A)',
        field: 'completion_reports.A.branch',
      },
    ]);
  });

  it('a worktree path needs the wave{N}-agent-{ID} segment', () => {
    expect(brief(findingsWith('V042_INVALID_WORKTREE_NAME', reportFor('B', 'worktree: /tmp/wt/wave1-agent-B-old')))).toEqual([
      {
        code: 'V042_INVALID_WORKTREE_NAME',
        severity: 'error',
        message: 'agent B worktree path "/tmp/wt/wave1-agent-B-old" does not contain expected segment "wave1-agent-B"',
        field: 'completion_reports.B.worktree',
      },
    ]);
    expect(validate(reportFor('B', 'worktree: "C:\\\\wt\\\\wave1-agent-B"'))).toEqual([]);
  });

  it('solo-wave agents may report any branch (§10.14)', () => {
    expect(validate(reportFor('C', 'branch: develop'))).toEqual([]);
    expect(findingsWith('V042_INVALID_WORKTREE_NAME', reportFor('A', 'branch: develop'))).toHaveLength(1);
  });
});

describe('E10 verification (V043_INVALID_VERIFICATION)', () => {
  const withVerification = (value: string) => manifestText({ extra: reports(`  A:\n    status: complete\n    commit: abc\n    verification: ${JSON.stringify(value)}\n`) });

  it.each(['PASS', 'FAIL (timeout)', 'PASS — all tests green (42/42)', 'FAIL incomplete build, 3 errors', ''])('%j is valid (§10.15)', (value) => {
    expect(validate(withVerification(value))).toEqual([]);
  });

  it.each(['pass', 'Pass', 'maybe', 'all tests green'])('%j is invalid (§10.15)', (value) => {
    const text = withVerification(value);
    const findings = findingsWith('V043_INVALID_VERIFICATION', text);
    expect(brief(findings)).toEqual([
      {
        code: 'V043_INVALID_VERIFICATION',
        severity: 'error',
        message: `agent A verification field "${value}" does not match format 'PASS' or 'FAIL (details)'`,
        field: 'completion_reports.A.verification',
      },
    ]);
    expect(findings[0]!.line).toBe(lineOf(text, 'verification:'));
  });
});

describe('completion status and failure type (V036, V022)', () => {
  it('flags an invalid or missing status', () => {
    const text = manifestText({ extra: reports('  A: {status: done, commit: abc}\n  B: {commit: abc}\n') });
    expect(brief(findingsWith('V036_INVALID_ENUM', text))).toEqual([
      {
        code: 'V036_INVALID_ENUM',
        severity: 'error',
        message: 'agent A completion report has invalid status "done" — must be one of: complete, partial, blocked',
        field: 'completion_reports.A.status',
      },
      {
        code: 'V036_INVALID_ENUM',
        severity: 'error',
        message: 'agent B completion report has invalid status "" — must be one of: complete, partial, blocked',
        field: 'completion_reports.B.status',
      },
    ]);
  });

  it('flags an invalid failure_type, including the legacy unknown', () => {
    const text = manifestText({ extra: reports('  A: {status: blocked, commit: abc, failure_type: unknown}\n') });
    const findings = findingsWith('V022_INVALID_FAILURE_TYPE', text);
    expect(brief(findings)).toEqual([
      {
        code: 'V022_INVALID_FAILURE_TYPE',
        severity: 'error',
        message: 'agent A completion report has invalid failure_type "unknown" — must be one of: transient, fixable, needs_replan, escalate, timeout',
        field: 'completion_reports.A.failure_type',
      },
    ]);
    expect(findings[0]!.line).toBe(lineOf(text, 'failure_type: unknown'));
  });

  it('accepts the statuses and failure types', () => {
    const body = ['transient', 'fixable', 'needs_replan'].map((type, index) => `  ${'ABC'[index]}: {status: partial, commit: abc, failure_type: ${type}}\n`).join('');
    expect(validate(manifestText({ extra: reports(body) }))).toEqual([]);
  });
});

describe('pre-mortem (V015, V036, V005)', () => {
  it('flags an invalid overall_risk', () => {
    const text = manifestText({ extra: 'pre_mortem:\n  overall_risk: extreme\n' });
    const findings = findingsWith('V015_INVALID_PRE_MORTEM_RISK', text);
    expect(brief(findings)).toEqual([
      {
        code: 'V015_INVALID_PRE_MORTEM_RISK',
        severity: 'error',
        message: 'pre_mortem overall_risk has invalid value "extreme" — must be one of: low, medium, high',
        field: 'pre_mortem.overall_risk',
      },
    ]);
    expect(findings[0]!.line).toBe(lineOf(text, 'overall_risk'));
  });

  it('flags invalid row enums and missing scenario/mitigation', () => {
    const text = manifestText({ extra: 'pre_mortem:\n  overall_risk: low\n  rows:\n    - {scenario: "", likelihood: often, impact: high}\n' });
    expect(brief(validate(text))).toEqual([
      {
        code: 'V005_REQUIRED_FIELDS_MISSING',
        severity: 'error',
        message: 'pre_mortem.rows[0].scenario is required and must be non-empty',
        field: 'pre_mortem.rows[0].scenario',
      },
      {
        code: 'V005_REQUIRED_FIELDS_MISSING',
        severity: 'error',
        message: 'pre_mortem.rows[0].mitigation is required and must be non-empty',
        field: 'pre_mortem.rows[0].mitigation',
      },
      {
        code: 'V036_INVALID_ENUM',
        severity: 'error',
        message: 'pre_mortem.rows[0].likelihood has invalid value "often" — must be one of: low, medium, high',
        field: 'pre_mortem.rows[0].likelihood',
      },
    ]);
  });

  it('accepts a complete pre-mortem, empty risk and empty row enums', () => {
    const text = manifestText({
      extra: 'pre_mortem:\n  overall_risk: ""\n  rows:\n    - {scenario: s, likelihood: "", impact: medium, mitigation: m}\n',
    });
    expect(validate(text)).toEqual([]);
  });
});

describe('MR01/MR02 multi-repo (V020_INCONSISTENT_REPO, V040_UNSCOPED_GATE)', () => {
  it('MR01: mixed repo tags, naming the first three untagged files', () => {
    const text = manifestText({
      ownership: `file_ownership:
  - {file: src/a.ts, agent: A, wave: 1, action: new, repo: api}
  - {file: src/b.ts, agent: B, wave: 1, action: modify}
  - {file: src/c.ts, agent: C, wave: 2, action: modify}
  - {file: src/d.ts, agent: C, wave: 2, action: modify}
  - {file: src/e.ts, agent: C, wave: 2, action: modify}
`,
    });
    const findings = findingsWith('V020_INCONSISTENT_REPO', text);
    expect(brief(findings)).toEqual([
      {
        code: 'V020_INCONSISTENT_REPO',
        severity: 'error',
        message:
          "file_ownership has mixed repo tags: some entries have repo: and some don't — add explicit repo: to all entries (missing on: src/b.ts, src/c.ts, src/d.ts ...)",
        field: 'file_ownership[1]',
      },
    ]);
    expect(findings[0]!.line).toBe(lineOf(text, 'src/b.ts'));
    // Go renamed MR01_INCONSISTENT_REPO to V020_INCONSISTENT_REPO; the new code is emitted, the old name still reads.
    expect(findingsWith('MR01_INCONSISTENT_REPO', text)).toEqual(findings);
    expect(canonicalCode('MR01_INCONSISTENT_REPO')).toBe('V020_INCONSISTENT_REPO');
  });

  it('MR01: fewer than three untagged files ⇒ no ellipsis; all tagged or none ⇒ nothing', () => {
    const text = manifestText({ ownership: ownership.replace('action: new}', 'action: new, repo: api}') });
    expect(findingsWith('V020_INCONSISTENT_REPO', text).map((finding) => finding.message)).toEqual([
      "file_ownership has mixed repo tags: some entries have repo: and some don't — add explicit repo: to all entries (missing on: src/b.ts, src/c.ts)",
    ]);
    expect(findingsWith('V020_INCONSISTENT_REPO', manifestText())).toEqual([]);
  });

  it('MR02: gates without repo in a multi-repo IMPL', () => {
    const text = manifestText({
      ownership: ownership.replaceAll('}\n', ', repo: api}\n').replace('depends_on: [A], repo: api', 'depends_on: [A], repo: web'),
      gates: `quality_gates:
  gates:
    - type: build
      command: go build ./...
      required: true
    - {type: test, command: npm test, required: true, repo: web}
`,
    });
    const findings = findingsWith('V040_UNSCOPED_GATE', text);
    // Issue 13: Go renamed MR02_UNSCOPED_GATE to V040_UNSCOPED_GATE; the new code is emitted, the old name still reads.
    expect(findingsWith('MR02_UNSCOPED_GATE', text)).toEqual(findings);
    expect(canonicalCode('MR02_UNSCOPED_GATE')).toBe('V040_UNSCOPED_GATE');
    expect(canonicalCode('V002_DISJOINT_OWNERSHIP')).toBe('V002_DISJOINT_OWNERSHIP');
    expect(brief(findings)).toEqual([
      {
        code: 'V040_UNSCOPED_GATE',
        severity: 'error',
        message:
          "quality_gates.gates[0] (build): multi-repo IMPL requires repo: on every gate — without it, 'go build ./...' runs in all repos including docs-only repos with no build system",
        field: 'quality_gates.gates[0].repo',
      },
    ]);
    expect(findings[0]!.line).toBe(lineOf(text, '- type: build'));
    expect(findingsWith('V020_INCONSISTENT_REPO', text)).toEqual([]);
  });

  it('MR02: one repo ⇒ gates need no repo', () => {
    expect(findingsWith('V040_UNSCOPED_GATE', manifestText({ ownership: ownership.replaceAll('}\n', ', repo: api}\n') }))).toEqual([]);
  });
});

describe('nested required fields (V005_REQUIRED_FIELDS_MISSING)', () => {
  it('reports each missing nested field with its path', () => {
    const text = `${header}file_ownership:
  - {file: "", agent: "", wave: 0}
waves:
  - number: 0
    agents: []
  - number: 2
    agents:
      - {id: "", task: " "}
interface_contracts:
  - {name: Widget, description: d}
quality_gates:
  gates:
    - {type: "", command: ""}
scaffolds:
  - {status: pending}
`;
    const findings = findingsWith('V005_REQUIRED_FIELDS_MISSING', text);
    expect(brief(findings).map(({ message, field }) => [message, field])).toEqual([
      ['file_ownership[0].file is required and must be non-empty', 'file_ownership[0].file'],
      ['file_ownership[0].agent is required and must be non-empty', 'file_ownership[0].agent'],
      ['file_ownership[0].wave must be > 0, got 0', 'file_ownership[0].wave'],
      ['waves[0].number must be > 0, got 0', 'waves[0].number'],
      ['waves[0].agents must be non-empty', 'waves[0].agents'],
      ['waves[1].agents[0].id is required and must be non-empty', 'waves[1].agents[0].id'],
      ['waves[1].agents[0].task is required and must be non-empty', 'waves[1].agents[0].task'],
      ['interface_contracts[0].definition is required and must be non-empty', 'interface_contracts[0].definition'],
      ['interface_contracts[0].location is required and must be non-empty', 'interface_contracts[0].location'],
      ['quality_gates.gates[0].type is required and must be non-empty', 'quality_gates.gates[0].type'],
      ['quality_gates.gates[0].command is required and must be non-empty', 'quality_gates.gates[0].command'],
      ['scaffolds[0].file_path is required and must be non-empty', 'scaffolds[0].file_path'],
    ]);
    expect(findings.every((finding) => finding.severity === 'error')).toBe(true);
    // A missing key points at the nearest thing that exists: the contract row.
    expect(findings[7]!.line).toBe(lineOf(text, '{name: Widget'));
    expect(findings[11]!.line).toBe(lineOf(text, '{status: pending}'));
  });

  it('complete nested records pass; scaffold `file` is accepted as `file_path`', () => {
    const text = manifestText({
      extra: `interface_contracts:
  - {name: Widget, definition: "interface Widget {}", location: src/types.ts}
scaffolds:
  - {file: src/types.ts, status: "committed (abc123)"}
  - {file_path: src/more.ts, status: "FAILED: build"}
`,
    });
    expect(validate(text)).toEqual([]);
  });
});

describe('enumerated fields (V036_INVALID_ENUM)', () => {
  it('flags every invalid enum value', () => {
    const text = manifestText({
      waves: waves.replace('  - number: 2\n', '  - number: 2\n    type: cleanup\n').replace('      - id: A\n', '      - id: A\n        context_source: guess\n'),
      gates: gates.replace('level: standard', 'level: huge'),
      extra: `scaffolds:
  - {file_path: src/types.ts, status: done}
injection_method: magic
wiring:
  - {symbol: Run, defined_in: src/a.ts, must_be_called_from: src/main.ts, agent: A, wave: 1, integration_pattern: glue}
integration_gap_severity_threshold: fatal
`,
    });
    const findings = findingsWith('V036_INVALID_ENUM', text);
    expect(brief(findings).map(({ message, field }) => [message, field])).toEqual([
      ['quality_gates.level has invalid value "huge" — must be one of: quick, standard, full', 'quality_gates.level'],
      [
        'scaffolds[0].status has invalid value "done" — must be one of: pending, committed, or start with "committed" or "FAILED"',
        'scaffolds[0].status',
      ],
      ['injection_method has invalid value "magic" — must be one of: hook, manual-fallback, unknown', 'injection_method'],
      [
        'waves[0].agents[0] (id=A) context_source has invalid value "guess" — must be one of: prepared-brief, fallback-full-context, cross-repo-full',
        'waves[0].agents[0].context_source',
      ],
      ['waves[1].type has invalid value "cleanup" — must be one of: standard, integration', 'waves[1].type'],
      ['wiring[0].integration_pattern has invalid value "glue" — must be one of: append, register, inject, call, prop-pass', 'wiring[0].integration_pattern'],
      ['integration_gap_severity_threshold has invalid value "fatal" — must be one of: error, warning, info', 'integration_gap_severity_threshold'],
    ]);
    expect(findings[1]!.line).toBe(lineOf(text, 'status: done'));
    expect(findings[4]!.line).toBe(lineOf(text, 'type: cleanup'));
  });

  it('accepts valid values', () => {
    const text = manifestText({
      waves: waves.replace('  - number: 2\n', '  - number: 2\n    type: integration\n').replace('      - id: A\n', '      - id: A\n        context_source: prepared-brief\n'),
      extra: `scaffolds:
  - {file_path: src/types.ts, status: committed}
injection_method: manual-fallback
integration_gap_severity_threshold: warning
`,
    });
    expect(validate(text)).toEqual([]);
  });
});

describe('paths (V037_INVALID_PATH)', () => {
  it('../escape.go in agent files ⇒ V037 at waves[0].agents[0].files[0] (§10.16)', () => {
    const text = manifestText({
      ownership: ownership + '  - {file: ../escape.go, agent: A, wave: 1}\n',
      waves: waves.replace('files: [src/a.ts]', 'files: [../escape.go, src/a.ts]'),
    });
    const findings = findingsWith('V037_INVALID_PATH', text);
    expect(brief(findings)).toEqual([
      {
        code: 'V037_INVALID_PATH',
        severity: 'error',
        message: `file_ownership[3].file: path "../escape.go" must not contain '..' traversal segments`,
        field: 'file_ownership[3].file',
      },
      {
        code: 'V037_INVALID_PATH',
        severity: 'error',
        message: `waves[0].agents[0].files[0]: path "../escape.go" must not contain '..' traversal segments`,
        field: 'waves[0].agents[0].files[0]',
      },
    ]);
    expect(findings[1]!.line).toBe(lineOf(text, 'files: [../escape.go'));
  });

  it('reports each violation of one path separately', () => {
    const text = manifestText({ extra: 'scaffolds:\n  - {file_path: "/abs\\\\dir/../x.go"}\n' });
    expect(findingsWith('V037_INVALID_PATH', text).map((finding) => finding.message)).toEqual([
      `scaffolds[0].file_path: path "/abs\\\\dir/../x.go" must not start with '/' (use relative paths)`,
      `scaffolds[0].file_path: path "/abs\\\\dir/../x.go" must not contain '..' traversal segments`,
      `scaffolds[0].file_path: path "/abs\\\\dir/../x.go" must not contain backslashes (use forward slashes)`,
    ]);
  });

  it('a NUL byte is reported without the path', () => {
    const text = manifestText({ extra: 'scaffolds:\n  - {file_path: "x\\0y.go"}\n' });
    expect(findingsWith('V037_INVALID_PATH', text).map((finding) => finding.message)).toEqual(['scaffolds[0].file_path: path must not contain null bytes']);
  });

  // Outside attack P12-14: a trailing-slash file validated clean and was dropped from the agent's owned files.
  it('a path ending in / (src/a.ts/) names no file ⇒ V037', () => {
    const text = manifestText({ ownership: ownership + '  - {file: src/pricing.js/, agent: A, wave: 1}\n', waves: waves.replace('files: [src/a.ts]', 'files: [src/a.ts, src/pricing.js/]') });
    expect(findingsWith('V037_INVALID_PATH', text).map((finding) => finding.message)).toEqual([
      `file_ownership[3].file: path "src/pricing.js/" must name a file, not end with '/'`,
      `waves[0].agents[0].files[1]: path "src/pricing.js/" must name a file, not end with '/'`,
    ]);
  });

  // Outside attack P13-22: `src/pricing.js/.` passed V037, V030 and P2's frozen-file check as a file other than
  // src/pricing.js, while the jail let the agent write src/pricing.js through it.
  it("a path with '.' or empty segments (src/x.js/., src/./x.js, src//x.js, ./x.js) ⇒ V037", () => {
    for (const spelling of ['src/pricing.js/.', 'src/./pricing.js', 'src//pricing.js', './src/pricing.js']) {
      const text = manifestText({ ownership: ownership + `  - {file: "${spelling}", agent: A, wave: 1}\n`, waves: waves.replace('files: [src/a.ts]', `files: [src/a.ts, "${spelling}"]`) });
      expect(findingsWith('V037_INVALID_PATH', text).map((finding) => finding.message)).toEqual([
        `file_ownership[3].file: path "${spelling}" must be written plainly (no '.' or empty segments)`,
        `waves[0].agents[0].files[1]: path "${spelling}" must be written plainly (no '.' or empty segments)`,
      ]);
    }
  });

  it('pkg/foo.../bar.go is not a traversal (§10.16)', () => {
    const text = manifestText({
      ownership: ownership + '  - {file: pkg/foo.../bar.go, agent: A, wave: 1}\n',
      waves: waves.replace('files: [src/a.ts]', 'files: [src/a.ts, pkg/foo.../bar.go]'),
    });
    expect(validate(text)).toEqual([]);
  });
});

describe('cross-field consistency (V038_CROSS_FIELD)', () => {
  it('ownership agent or wave missing from waves; agent file without matching row', () => {
    const text = manifestText({
      ownership: `file_ownership:
  - {file: src/a.ts, agent: A, wave: 1, action: new}
  - {file: src/b.ts, agent: A, wave: 1, action: modify}
  - {file: src/c.ts, agent: C, wave: 2, action: modify}
  - {file: src/x.ts, agent: X, wave: 7}
`,
    });
    const findings = findingsWith('V038_CROSS_FIELD', text);
    expect(brief(findings).map(({ message, field }) => [message, field])).toEqual([
      [`file_ownership[3]: agent "X" does not appear in any wave's agents list`, 'file_ownership[3].agent'],
      ['file_ownership[3]: wave 7 does not match any existing wave number', 'file_ownership[3].wave'],
      ['agent B (wave 1) lists file "src/b.ts" but no matching file_ownership entry exists for agent=B wave=1', 'waves[0].agents[1].files[0]'],
    ]);
    expect(findings[0]!.line).toBe(lineOf(text, 'agent: X'));
    expect(findings[2]!.line).toBe(lineOf(text, 'files: [src/b.ts]'));
  });

  it('NOT_SUITABLE with waves, ownership and contracts ⇒ errors on those fields (§10.17)', () => {
    const text = manifestText({
      header: header.replace('verdict: SUITABLE', 'verdict: NOT_SUITABLE'),
      extra: 'interface_contracts:\n  - {name: W, definition: d, location: l}\n',
    });
    const findings = findingsWith('V038_CROSS_FIELD', text);
    expect(brief(findings)).toEqual([
      { code: 'V038_CROSS_FIELD', severity: 'error', message: 'verdict is NOT_SUITABLE but 2 wave(s) are defined — expected empty waves', field: 'waves' },
      { code: 'V038_CROSS_FIELD', severity: 'error', message: 'verdict is NOT_SUITABLE but 3 file_ownership entries exist — expected empty', field: 'file_ownership' },
      { code: 'V038_CROSS_FIELD', severity: 'error', message: 'verdict is NOT_SUITABLE but 1 interface_contracts exist — expected empty', field: 'interface_contracts' },
    ]);
    expect(findings[0]!.line).toBeGreaterThanOrEqual(lineOf(text, 'waves:'));
  });

  it('a clean NOT_SUITABLE passes (§10.17)', () => {
    const text = `title: Not worth it\nfeature_slug: not-worth-it\nverdict: NOT_SUITABLE\nfile_ownership: []\nwaves: []\ninterface_contracts: []\nstate: NOT_SUITABLE\n`;
    expect(validate(text)).toEqual([]);
  });

  it('a completion report of an agent that is in no wave', () => {
    const text = manifestText({ extra: reports('  Q: {status: complete, commit: abc}\n') });
    const findings = findingsWith('V038_CROSS_FIELD', text);
    expect(brief(findings)).toEqual([
      {
        code: 'V038_CROSS_FIELD',
        severity: 'error',
        message: `completion_reports[Q]: agent "Q" does not appear in any wave's agents list`,
        field: 'completion_reports.Q',
      },
    ]);
    expect(findings[0]!.line).toBe(lineOf(text, '  Q: {'));
  });
});

describe('E19.1 reactions (V005, V036)', () => {
  it('flags a missing or invalid action and negative max_attempts, in failure-type order', () => {
    const text = manifestText({
      extra: `reactions:
  escalate: {action: explode}
  transient: {max_attempts: -1}
  timeout: {action: retry, max_attempts: 0}
`,
    });
    const findings = validate(text);
    expect(brief(findings)).toEqual([
      { code: 'V005_REQUIRED_FIELDS_MISSING', severity: 'error', message: 'reactions.transient.action is required', field: 'reactions.transient.action' },
      {
        code: 'V005_REQUIRED_FIELDS_MISSING',
        severity: 'error',
        message: 'reactions.transient.max_attempts must be >= 0, got -1',
        field: 'reactions.transient.max_attempts',
      },
      {
        code: 'V036_INVALID_ENUM',
        severity: 'error',
        message: 'reactions.escalate.action "explode" is not valid; must be one of: retry, send-fix-prompt, pause, auto-scout',
        field: 'reactions.escalate.action',
      },
    ]);
    expect(findings.map((finding) => finding.line)).toEqual([lineOf(text, 'transient:'), lineOf(text, 'transient:'), lineOf(text, 'explode')]);
  });

  it('valid reactions pass', () => {
    const text = manifestText({
      extra: 'reactions:\n  transient: {action: retry, max_attempts: 3}\n  needs_replan: {action: auto-scout}\n  fixable: {action: send-fix-prompt}\n  escalate: {action: pause}\n',
    });
    expect(validate(text)).toEqual([]);
  });
});

describe('E16D action enum (E16_INVALID_ACTION)', () => {
  it('one finding per invalid action, in the protocol wording (not Go V036+V011)', () => {
    const text = manifestText({
      ownership: ownership + '  - {file: src/d.ts, agent: C, wave: 2, action: update}\n  - {file: src/e.ts, agent: C, wave: 2, action: rewrite}\n',
    });
    const findings = validate(text);
    expect(brief(findings)).toEqual([
      {
        code: 'E16_INVALID_ACTION',
        severity: 'error',
        message: "file_ownership[3].action has invalid value 'update' — must be new, modify, or delete",
        field: 'file_ownership[3].action',
      },
      {
        code: 'E16_INVALID_ACTION',
        severity: 'error',
        message: "file_ownership[4].action has invalid value 'rewrite' — must be new, modify, or delete",
        field: 'file_ownership[4].action',
      },
    ]);
    expect(findings[0]!.line).toBe(lineOf(text, 'action: update'));
    expect(findings[0]!.suggestion).toContain("'modify'");
    expect(findings[1]!.suggestion).toBeUndefined();
  });

  it('empty and canonical actions pass', () => {
    const text = manifestText({ ownership: ownership + '  - {file: src/d.ts, agent: C, wave: 2}\n  - {file: src/e.ts, agent: C, wave: 2, action: delete}\n' });
    expect(validate(text)).toEqual([]);
  });
});

describe('E16D integration checklist (E16_MISSING_CHECKLIST, warning)', () => {
  const handlers = ownership + '  - {file: pkg/api/widget_handler.go, agent: C, wave: 2, action: new}\n  - {file: web/src/components/Widget.tsx, agent: C, wave: 2, action: new}\n';

  it('warns once when new handlers/components have no checklist', () => {
    const text = manifestText({ ownership: handlers });
    const findings = validate(text);
    expect(brief(findings)).toEqual([
      {
        code: 'E16_MISSING_CHECKLIST',
        severity: 'warning',
        message: 'new handlers/components detected but post_merge_checklist is empty — integration steps may be needed',
        field: 'post_merge_checklist',
      },
    ]);
    expect(findings[0]!.line).toBe(lineOf(text, 'widget_handler.go'));
    expect(summarizeFindings(findings).valid).toBe(true);
  });

  it('a checklist with groups, or modified handlers, silence it', () => {
    const checklist = 'post_merge_checklist:\n  groups:\n    - title: Wire routes\n      items:\n        - {description: register the handler}\n';
    expect(validate(manifestText({ ownership: handlers, extra: checklist }))).toEqual([]);
    expect(validate(manifestText({ ownership: handlers.replaceAll('action: new}', 'action: modify}') }))).toEqual([]);
    const emptyChecklist = validate(manifestText({ ownership: handlers, extra: 'post_merge_checklist:\n  groups: []\n' }));
    expect(emptyChecklist.map((finding) => finding.code)).toEqual(['E16_MISSING_CHECKLIST']);
    expect(emptyChecklist[0]!.line).toBeDefined();
  });
});

describe('E16D file existence (E16_FILE_NOT_FOUND, warning)', () => {
  it('warns for action:modify files that do not exist, passing the repo (§10.5, severity per E16D)', () => {
    const text = manifestText({ ownership: ownership + '  - {file: src/gone.ts, agent: C, wave: 2, action: modify}\n  - {file: src/new.ts, agent: C, wave: 2, action: new}\n' });
    const calls: Array<[string, string | undefined]> = [];
    const existing = new Set(['src/b.ts', 'src/c.ts']);
    const findings = validate(text, {
      fileExists: (file, repo) => {
        calls.push([file, repo]);
        return existing.has(file);
      },
    });
    expect(brief(findings)).toEqual([
      { code: 'E16_FILE_NOT_FOUND', severity: 'warning', message: "file 'src/gone.ts' marked action=modify but does not exist", field: 'file_ownership[3].file' },
    ]);
    expect(findings[0]!.line).toBe(lineOf(text, 'src/gone.ts'));
    expect(calls).toEqual([
      ['src/b.ts', undefined],
      ['src/c.ts', undefined],
      ['src/gone.ts', undefined],
    ]);
    expect(summarizeFindings(findings)).toMatchObject({ valid: true, error_count: 0, warning_count: 1 });
  });

  it('passes the row repo to fileExists', () => {
    const text = manifestText({ ownership: ownership.replaceAll('}\n', ', repo: api}\n') });
    const calls: Array<string | undefined> = [];
    validate(text, {
      fileExists: (_file, repo) => {
        calls.push(repo);
        return true;
      },
    });
    expect(calls).toEqual(['api', 'api']);
  });

  it('does nothing without a repository', () => {
    expect(validate(manifestText({ ownership: ownership + '  - {file: src/gone.ts, agent: C, wave: 2, action: modify}\n' }))).toEqual([]);
  });
});

describe('known issues (V021_KNOWN_ISSUE_MISSING_TITLE)', () => {
  it('flags a known issue without a title', () => {
    const text = manifestText({ extra: 'known_issues:\n  - {title: Flaky test, description: d}\n  - {description: no title}\n' });
    const findings = validate(text);
    expect(brief(findings)).toEqual([
      { code: 'V021_KNOWN_ISSUE_MISSING_TITLE', severity: 'error', message: 'known_issues[1]: title is required', field: 'known_issues[1].title' },
    ]);
    expect(findings[0]!.line).toBe(lineOf(text, 'no title'));
  });
});

describe('complexity (V047_TRIVIAL_SCOPE, W001_AGENT_SCOPE_LARGE)', () => {
  const single = `${header}file_ownership:
  - {file: src/a.ts, agent: A, wave: 1, action: modify}
waves:
  - number: 1
    agents:
      - {id: A, task: a, files: [src/a.ts]}
`;

  it('one agent owning one file in a SUITABLE IMPL is trivial', () => {
    expect(brief(validate(single))).toEqual([
      {
        code: 'V047_TRIVIAL_SCOPE',
        severity: 'error',
        message: 'IMPL has 1 agent owning 1 file — Polywave adds no parallelization value at this scope; make the change directly instead',
        field: 'file_ownership',
      },
    ]);
  });

  it('retry IMPLs, two files or a NOT_SUITABLE verdict are not trivial', () => {
    expect(validate(single.replace('add-widgets', 'add-widgets-retry-1'))).toEqual([]);
    expect(findingsWith('V047_TRIVIAL_SCOPE', single.replace('waves:', '  - {file: src/b.ts, agent: A, wave: 1}\nwaves:'))).toEqual([]);
    expect(findingsWith('V047_TRIVIAL_SCOPE', single.replace('verdict: SUITABLE', 'verdict: NOT_SUITABLE'))).toEqual([]);
  });

  it('one agent owning 9 files ⇒ W001 warning only, still valid (§10.4)', () => {
    const rows = Array.from({ length: 9 }, (_, index) => `  - {file: src/f${index}.ts, agent: A, wave: 1, action: new}\n`).join('');
    const text = manifestText({ ownership: `file_ownership:\n${rows}  - {file: src/b.ts, agent: B, wave: 1}\n`, waves: 'waves:\n  - number: 1\n    agents:\n      - {id: A, task: a}\n      - {id: B, task: b}\n' });
    const findings = validate(text);
    expect(brief(findings)).toEqual([
      { code: 'W001_AGENT_SCOPE_LARGE', severity: 'warning', message: 'agent A owns 9 files (threshold: 8) — consider splitting into two agents', field: 'file_ownership' },
      { code: 'W001_AGENT_SCOPE_LARGE', severity: 'warning', message: 'agent A creates 9 new files (threshold: 5) — consider splitting into two agents', field: 'file_ownership' },
    ]);
    expect(findings[0]!.line).toBeDefined();
    const summary = summarizeFindings(findings);
    expect(summary).toMatchObject({ valid: true, error_count: 0, warning_count: 2, errors: [] });
    expect(summary.warnings.every((finding) => finding.severity === 'warning' || finding.severity === 'info')).toBe(true);
  });

  it('8 files and 5 new files are within the thresholds', () => {
    const rows = Array.from({ length: 8 }, (_, index) => `  - {file: src/f${index}.ts, agent: A, wave: 1, action: ${index < 5 ? 'new' : 'modify'}}\n`).join('');
    const text = manifestText({ ownership: `file_ownership:\n${rows}  - {file: src/b.ts, agent: B, wave: 1}\n`, waves: 'waves:\n  - number: 1\n    agents:\n      - {id: A, task: a}\n      - {id: B, task: b}\n' });
    expect(validate(text)).toEqual([]);
  });
});

describe('V048 agent LOC budget (V048_AGENT_LOC_BUDGET)', () => {
  const text = manifestText({
    ownership: `file_ownership:
  - {file: src/a.ts, agent: A, wave: 1, action: modify}
  - {file: src/a2.ts, agent: A, wave: 1, action: modify}
  - {file: docs/big.md, agent: A, wave: 1, action: modify}
  - {file: src/gen.ts, agent: A, wave: 1, action: modify, v048_exempt: true}
  - {file: src/new.ts, agent: A, wave: 1, action: new}
  - {file: src/b.ts, agent: B, wave: 1, action: modify}
  - {file: src/c.ts, agent: C, wave: 2, action: modify}
`,
    waves: waves.replaceAll('files: [src/a.ts]', 'files: []'),
  });
  const sizes: Record<string, number> = { 'src/a.ts': 1500, 'src/a2.ts': 600, 'docs/big.md': 9000, 'src/gen.ts': 9000, 'src/new.ts': 9000, 'src/b.ts': 10, 'src/c.ts': 2500 };
  const countLines = (file: string) => sizes[file];

  it('flags agents over 2000 lines of modified code, listing files by size', () => {
    const findings = validate(text, { countLines });
    expect(brief(findings)).toEqual([
      {
        code: 'V048_AGENT_LOC_BUDGET',
        severity: 'error',
        message: 'agent A owns 2100 lines across 2 files (limit: 2000) — split the agent or reduce scope\n  src/a.ts: 1500 lines\n  src/a2.ts: 600 lines',
        field: 'file_ownership',
      },
      {
        code: 'V048_AGENT_LOC_BUDGET',
        severity: 'error',
        message: 'agent C owns 2500 lines across 1 files (limit: 2000) — split the agent or reduce scope\n  src/c.ts: 2500 lines',
        field: 'file_ownership',
      },
    ]);
  });

  it('with a wave, only that wave’s agents are checked; without countLines nothing runs', () => {
    expect(validate(text, { countLines, wave: 2 }).map((finding) => finding.message.split(' owns')[0])).toEqual(['agent C']);
    expect(validate(text)).toEqual([]);
  });
});

describe('Go bugs fixed', () => {
  it('gate phase/parallel_group, suitability_reasoning, dedup_stats and other real fields are not unknown keys', () => {
    const text = manifestText({
      gates: `quality_gates:
  gates:
    - {type: build, command: make, required: true, phase: VALIDATION, parallel_group: g1}
`,
      extra: `suitability_reasoning: because
integration_gap_severity_threshold: error
wiring_validation_reports:
  wave1: {gaps: [], valid: true, summary: ok}
completion_reports:
  A:
    status: complete
    commit: abc
    dedup_stats: {hits: 1, misses: 2, tokens_saved_estimate: 300}
`,
    });
    const parsed = parseImpl(text);
    expect(parsed.findings).toEqual([]);
    expect(validate(text)).toEqual([]);
  });

  it('deterministic: the same input gives the same findings in the same order', () => {
    const text = manifestText({
      ownership: ownership + '  - {file: src/a.ts, agent: B, wave: 1}\n  - {file: src/c.ts, agent: A, wave: 2}\n',
      extra: reports('  Z: {status: x}\n  B: {status: y}\n  A: {status: z}\n'),
    });
    const first = validate(text);
    expect(validate(text)).toEqual(first);
    expect(first.filter((finding) => finding.code === 'V036_INVALID_ENUM').map((finding) => finding.field)).toEqual([
      'completion_reports.A.status',
      'completion_reports.B.status',
      'completion_reports.Z.status',
    ]);
  });
});
