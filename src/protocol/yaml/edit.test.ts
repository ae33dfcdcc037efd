import { describe, expect, it } from 'vitest';
import { PolywaveError } from '../../errors/polywave-error.js';
import { applyEdits, detectYamlStyle, type YamlEdit } from './edit.js';
import { parseYamlSafe } from './safe-parse.js';
import { toPlain } from './to-plain.js';

function plainOf(text: string): unknown {
  const parsed = parseYamlSafe(text);
  if (!parsed.ok) throw new Error(`does not parse: ${parsed.findings[0]?.message}\n${text}`);
  return toPlain(parsed.document);
}

/** Lines of `after` that are not in `before` (multiset difference, order-insensitive). */
function changedLines(before: string, after: string): { removed: string[]; added: string[] } {
  const beforeLines = before.split('\n');
  const afterLines = after.split('\n');
  const remaining = [...afterLines];
  const removed: string[] = [];
  for (const line of beforeLines) {
    const index = remaining.indexOf(line);
    if (index === -1) removed.push(line);
    else remaining.splice(index, 1);
  }
  return { removed, added: remaining };
}

function catchError(action: () => unknown): PolywaveError {
  try {
    action();
  } catch (error) {
    if (PolywaveError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected a PolywaveError');
}

// A Go yaml.v3-style manifest (4-space indent, sequences indented under their key) with comments.
const goStyle = `# header comment
title: Example feature
feature_slug: example
state: WAVE_PENDING # trailing comment
waves:
    # the first wave
    - number: 1
      agents:
        - id: A
          task: |
            ## Agent A
            Do the thing.

            Carefully.
          files:
            - a.go
        - id: B
          task: short
          files:
            - b.go
quality_gates:
    level: standard
    gates:
        - type: build
          command: go build ./...
          required: true
completion_reports:
    A:
        status: complete # inline
        commit: "0123"
        files_changed:
            - a.go
        # own-line comment inside A
        verification: PASS
critic_report:
    verdict: PASS
    agent_reviews: {}
    summary: 'All good: really.'
# footer comment
`;

describe('applyEdits', () => {
  it('returns the text unchanged for no edits', () => {
    expect(applyEdits(goStyle, [])).toBe(goStyle);
    expect(applyEdits('not: [valid', [])).toBe('not: [valid');
  });

  it('changes only the value text of an existing scalar, keeping its trailing comment', () => {
    const result = applyEdits(goStyle, [{ path: ['state'], value: 'WAVE_EXECUTING' }]);
    expect(result).toBe(goStyle.replace('state: WAVE_PENDING # trailing', 'state: WAVE_EXECUTING # trailing'));
  });

  it('keeps the quoting style of a replaced scalar', () => {
    const result = applyEdits(goStyle, [
      { path: ['completion_reports', 'A', 'commit'], value: 'abc1234' },
      { path: ['critic_report', 'summary'], value: 'Changed' },
    ]);
    expect(result).toBe(goStyle.replace('commit: "0123"', 'commit: "abc1234"').replace("summary: 'All good: really.'", "summary: 'Changed'"));
  });

  it('edits nested scalars in sequences of mappings', () => {
    const result = applyEdits(goStyle, [{ path: ['waves', 0, 'agents', 1, 'task'], value: 'longer task' }]);
    expect(changedLines(goStyle, result)).toEqual({ removed: ['          task: short'], added: ['          task: longer task'] });
  });

  it('keeps a status line comment when a nested value changes', () => {
    const result = applyEdits(goStyle, [{ path: ['completion_reports', 'A', 'status'], value: 'partial' }]);
    expect(changedLines(goStyle, result)).toEqual({ removed: ['        status: complete # inline'], added: ['        status: partial # inline'] });
  });

  it('inserts a new report at the end of completion_reports in the file style', () => {
    const result = applyEdits(goStyle, [
      { path: ['completion_reports', 'B'], value: { status: 'complete', files_changed: ['b.go', 'c.go'], notes: 'line 1\nline 2\n' } },
    ]);
    expect(result).toBe(
      goStyle.replace(
        '        verification: PASS\ncritic_report:',
        [
          '        verification: PASS',
          '    B:',
          '        status: complete',
          '        files_changed:',
          '            - b.go',
          '            - c.go',
          '        notes: |',
          '            line 1',
          '            line 2',
          'critic_report:',
        ].join('\n'),
      ),
    );
  });

  it('appends a new top-level key at the end of the file, keeping the footer comment and final newline', () => {
    const result = applyEdits(goStyle, [{ path: ['merge_state', 'wave'], value: 1 }]);
    expect(result.startsWith(goStyle.slice(0, goStyle.indexOf('# footer')))).toBe(true);
    expect(result).toContain('merge_state:\n    wave: 1\n');
    expect(result.endsWith('\n')).toBe(true);
    expect(changedLines(goStyle, result).removed).toEqual([]);
    const noNewline = 'a: 1';
    expect(applyEdits(noNewline, [{ path: ['b'], value: 'x' }])).toBe('a: 1\nb: x\n');
  });

  it('creates missing intermediate mappings', () => {
    const text = 'title: x\nstate: SCOUT_PENDING\n';
    const result = applyEdits(text, [{ path: ['completion_reports', 'B', 'status'], value: 'complete' }]);
    expect(result).toBe(`${text}completion_reports:\n    B:\n        status: complete\n`);
  });

  it('replaces a flow {} parent with a block mapping', () => {
    const result = applyEdits(goStyle, [{ path: ['critic_report', 'agent_reviews', 'A'], value: { agent_id: 'A', verdict: 'PASS' } }]);
    expect(changedLines(goStyle, result)).toEqual({
      removed: ['    agent_reviews: {}'],
      added: ['    agent_reviews:', '        A:', '            agent_id: A', '            verdict: PASS'],
    });
    const text = 'title: x\ncompletion_reports: {}\nstate: A\n';
    expect(applyEdits(text, [{ path: ['completion_reports', 'A'], value: { status: 'complete' } }])).toBe(
      'title: x\ncompletion_reports:\n    A:\n        status: complete\nstate: A\n',
    );
  });

  it('fills an empty (null) value', () => {
    const text = 'title: x\ncompletion_reports:\nstate: A\n';
    expect(applyEdits(text, [{ path: ['completion_reports', 'A', 'status'], value: 'complete' }])).toBe(
      'title: x\ncompletion_reports:\n    A:\n        status: complete\nstate: A\n',
    );
    expect(applyEdits('a: ~ # c\nb: 2\n', [{ path: ['a'], value: 'set' }])).toBe('a: set # c\nb: 2\n');
    expect(applyEdits('a:\nb: 2\n', [{ path: ['a'], value: 'set' }])).toBe('a: set\nb: 2\n');
  });

  it('replaces an existing structured value wholesale, keeping siblings and their comments', () => {
    const report = { status: 'blocked', failure_type: 'transient', notes: 'retry later' };
    const result = applyEdits(goStyle, [{ path: ['completion_reports', 'A'], value: report }]);
    expect(plainOf(result)).toMatchObject({ completion_reports: { A: report } });
    const { removed, added } = changedLines(goStyle, result);
    expect(removed).toEqual([
      '        status: complete # inline',
      '        commit: "0123"',
      '        files_changed:',
      '            - a.go',
      '        # own-line comment inside A',
      '        verification: PASS',
    ]);
    expect(added).toEqual(['        status: blocked', '        failure_type: transient', '        notes: retry later']);
    expect(result).toContain('# header comment');
    expect(result).toContain('# footer comment');
    expect(result).toContain('    # the first wave');
  });

  it('replaces a block scalar with a scalar and a scalar with a block scalar', () => {
    const toShort = applyEdits(goStyle, [{ path: ['waves', 0, 'agents', 0, 'task'], value: 'short now' }]);
    expect(toShort).toContain('        - id: A\n          task: short now\n          files:\n');
    const toLong = applyEdits(goStyle, [{ path: ['waves', 0, 'agents', 1, 'task'], value: 'first\nsecond\n' }]);
    expect(toLong).toContain('        - id: B\n          task: |\n            first\n            second\n          files:\n');
    expect(plainOf(toLong)).toMatchObject({ waves: [{ agents: [{}, { task: 'first\nsecond\n' }] }] });
  });

  it('appends to a sequence when the index equals its length', () => {
    const result = applyEdits(goStyle, [
      { path: ['waves', 1], value: { number: 2, agents: [{ id: 'C', task: 't', files: ['c.go'] }] } },
      { path: ['quality_gates', 'gates', 1], value: { type: 'test', command: 'go test ./...', required: true } },
    ]);
    expect(result).toContain(
      [
        '            - b.go',
        '    - number: 2',
        '      agents:',
        '        - id: C',
        '          task: t',
        '          files:',
        '            - c.go',
        'quality_gates:',
      ].join('\n'),
    );
    expect(result).toContain('          required: true\n        - type: test\n          command: go test ./...\n          required: true\ncompletion_reports:');
    expect(changedLines(goStyle, result).removed).toEqual([]);
  });

  it('deletes a key with its lines and nothing else', () => {
    const result = applyEdits(goStyle, [{ path: ['completion_reports', 'A', 'files_changed'], delete: true }]);
    expect(changedLines(goStyle, result)).toEqual({ removed: ['        files_changed:', '            - a.go'], added: [] });
    const topLevel = applyEdits(goStyle, [{ path: ['quality_gates'], delete: true }]);
    expect(topLevel).not.toContain('quality_gates');
    expect(topLevel).not.toContain('go build');
    expect(changedLines(goStyle, topLevel).added).toEqual([]);
    expect(applyEdits(goStyle, [{ path: ['no_such_key'], delete: true }])).toBe(goStyle);
  });

  it('deletes sequence items and the first key of a compact mapping', () => {
    const result = applyEdits(goStyle, [{ path: ['waves', 0, 'agents', 0], delete: true }]);
    expect(plainOf(result)).toMatchObject({ waves: [{ agents: [{ id: 'B' }] }] });
    expect(result).not.toContain('Agent A');
    const firstKey = applyEdits(goStyle, [{ path: ['waves', 0, 'agents', 1, 'id'], delete: true }]);
    expect(firstKey).toContain('        - task: short\n          files:\n            - b.go\n');
    const onlyItem = applyEdits('a:\n    - x\nb: 1\n', [{ path: ['a', 0], delete: true }]);
    expect(onlyItem).toBe('a: []\nb: 1\n');
    const onlyKey = applyEdits('a:\n    x: 1\nb: 1\n', [{ path: ['a', 'x'], delete: true }]);
    expect(onlyKey).toBe('a: {}\nb: 1\n');
  });

  it('deletes every occurrence of a duplicated key', () => {
    const text = 'a: 1\nb: 2\na: 3\n';
    expect(applyEdits(text, [{ path: ['a'], delete: true }])).toBe('b: 2\n');
  });

  it('applies several edits in order', () => {
    const edits: YamlEdit[] = [
      { path: ['state'], value: 'WAVE_MERGING' },
      { path: ['merge_state'], value: 'in_progress' },
      { path: ['completion_reports', 'B'], value: { status: 'complete' } },
      { path: ['completion_reports', 'B', 'commit'], value: 'f00' },
      { path: ['critic_report'], delete: true },
    ];
    const result = applyEdits(goStyle, edits);
    const plain = plainOf(result) as Record<string, unknown>;
    expect(plain.state).toBe('WAVE_MERGING');
    expect(plain.merge_state).toBe('in_progress');
    expect(plain.critic_report).toBeUndefined();
    expect(plain.completion_reports).toMatchObject({ B: { status: 'complete', commit: 'f00' } });
  });

  it('writes 2-space files in their own style', () => {
    const text = 'title: x\nwaves:\n  - number: 1\n    agents:\n      - id: A\ncompletion_reports:\n  A:\n    status: complete\n';
    expect(detectYamlStyle(text)).toMatchObject({ indent: 2, indentSequences: true });
    const result = applyEdits(text, [{ path: ['completion_reports', 'B'], value: { status: 'partial', files_changed: ['x.go'] } }]);
    expect(result).toBe(`${text}  B:\n    status: partial\n    files_changed:\n      - x.go\n`);
  });

  it('writes files with flush sequences in their own style', () => {
    const text = 'title: x\nfiles:\n- a\n- b\nreports:\n  A:\n    files:\n    - a\n';
    expect(detectYamlStyle(text)).toMatchObject({ indent: 2, indentSequences: false });
    const result = applyEdits(text, [
      { path: ['reports', 'B'], value: { files: ['c'] } },
      { path: ['files', 2], value: 'c' },
    ]);
    expect(result).toBe('title: x\nfiles:\n- a\n- b\n- c\nreports:\n  A:\n    files:\n    - a\n  B:\n    files:\n    - c\n');
  });

  it('keeps CRLF line endings', () => {
    const text = 'a: 1\r\nb:\r\n    c: 2\r\n';
    const result = applyEdits(text, [
      { path: ['b', 'd'], value: { e: ['x'] } },
      { path: ['a'], value: 5 },
    ]);
    expect(result).toBe('a: 5\r\nb:\r\n    c: 2\r\n    d:\r\n        e:\r\n            - x\r\n');
  });

  it('quotes strings that would otherwise read back as another type, also for Go readers', () => {
    const values: Record<string, string> = {
      commit: '0123',
      version: '1.10',
      flag: 'True',
      yes: 'yes',
      on: 'on',
      date: '2026-03-25',
      nothing: 'null',
      tilde: '~',
      empty: '',
      exp: '1e3',
      hex: '0x1F',
    };
    const result = applyEdits('a: 1\n', [{ path: ['values'], value: values }]);
    expect(plainOf(result)).toEqual({ a: 1, values });
    expect(result).toContain(`    "yes": "yes"\n`);
    expect(result).toContain('    date: "2026-03-25"\n');
    // Go yaml.v3 writes agent IDs Y and N quoted (YAML 1.1 booleans) but E2 plain.
    const ids = applyEdits('a: 1\n', [{ path: ['reports'], value: { Y: 1, N: 2, E2: 3, A: 4, '1_000': 5, '1:20': 6 } }]);
    expect(ids).toBe('a: 1\nreports:\n    "Y": 1\n    "N": 2\n    E2: 3\n    A: 4\n    "1_000": 5\n    "1:20": 6\n');
    expect(result).toContain('    commit: "0123"\n');
  });

  const trickyStrings = [
    '',
    ' ',
    '-',
    '- x',
    ': x',
    'a: b',
    'a #b',
    '#x',
    '@x',
    '`x',
    '!x',
    '&x',
    '*x',
    '|',
    '>',
    '%x',
    '"x',
    "'x",
    '[x',
    '{x',
    'x]',
    '? x',
    '---',
    '...',
    'multi\nline',
    'trailing\n',
    'two trailing\n\n',
    '\nleading newline',
    '  leading spaces',
    'trailing spaces  ',
    'line with trailing space \nnext',
    '  indented first line\nsecond',
    'tab\tinside',
    '\ttab first',
    'cr\r\nlf',
    'unicode ✓ ü 😀',
    'line\u2028separator',
    'next\u0085line',
    'escape\u001bchar',
    'nul\u0000char',
    'x'.repeat(500),
    'word '.repeat(100),
    '# looks like a comment\n  - looks like a list\nkey: value',
  ];

  it('round-trips tricky strings as values, items and keys in both styles', () => {
    for (const text of ['a: 1\nlist:\n    - x\n', 'a: 1\nlist:\n  - x\nmap:\n  k: v\n']) {
      for (const value of trickyStrings) {
        const inserted = applyEdits(text, [{ path: ['value'], value }]);
        expect((plainOf(inserted) as Record<string, unknown>).value, JSON.stringify(value)).toBe(value);
        const replaced = applyEdits(text, [{ path: ['a'], value }]);
        expect((plainOf(replaced) as Record<string, unknown>).a, JSON.stringify(value)).toBe(value);
        const appended = applyEdits(text, [{ path: ['list', 1], value }]);
        expect((plainOf(appended) as { list: unknown[] }).list[1], JSON.stringify(value)).toBe(value);
        const item = applyEdits(text, [{ path: ['list', 0], value }]);
        expect((plainOf(item) as { list: unknown[] }).list[0], JSON.stringify(value)).toBe(value);
        const keyed = applyEdits(text, [{ path: ['map', value], value: 'v' }]);
        expect((plainOf(keyed) as { map: Record<string, unknown> }).map[value], JSON.stringify(value)).toBe('v');
      }
    }
  });

  it('round-trips numbers, booleans, null and nested empty collections', () => {
    const value = { int: 3, float: 1.5, negative: -2, zero: -0, big: 2 ** 60, yes: true, no: false, none: null, list: [], map: {}, nested: [[1, [2]], { a: {} }] };
    const result = applyEdits('a: 1\n', [{ path: ['data'], value }]);
    expect((plainOf(result) as Record<string, unknown>).data).toEqual({ ...value, zero: 0 });
  });

  it('handles __proto__ keys as data', () => {
    const value = JSON.parse('{"__proto__": {"polluted": true}}') as Record<string, unknown>;
    const result = applyEdits('a: 1\n', [{ path: ['data'], value }]);
    const plain = plainOf(result) as { data: Record<string, unknown> };
    expect(Object.prototype.hasOwnProperty.call(plain.data, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('drops undefined object members and turns undefined items into null (JSON semantics)', () => {
    const result = applyEdits('a: 1\n', [{ path: ['data'], value: { keep: 1, drop: undefined, list: [undefined, 2] } }]);
    expect((plainOf(result) as Record<string, unknown>).data).toEqual({ keep: 1, list: [null, 2] });
  });

  it('falls back to a larger rewrite when a minimal edit would change other data (anchors)', () => {
    const text = 'base: &b\n    x: 1\nuse: *b\n';
    const result = applyEdits(text, [{ path: ['base', 'x'], value: 2 }]);
    expect(plainOf(result)).toEqual({ base: { x: 2 }, use: { x: 1 } });
  });

  it('edits through an alias by replacing it with an edited copy', () => {
    const text = 'base: &b\n    x: 1\nuse: *b\nname: &n hello\nother: *n\n';
    const result = applyEdits(text, [{ path: ['use', 'y'], value: 2 }]);
    expect(plainOf(result)).toEqual({ base: { x: 1 }, use: { x: 1, y: 2 }, name: 'hello', other: 'hello' });
    expect(catchError(() => applyEdits(text, [{ path: ['other', 'y'], value: 2 }])).code).toBe('X001_INVALID_INPUT');
  });

  it('edits inside flow collections by rewriting the flow collection', () => {
    const text = 'a: {x: 1, y: [1, 2]} # keep\nb: 2\n';
    const result = applyEdits(text, [{ path: ['a', 'y', 2], value: 3 }]);
    expect(plainOf(result)).toEqual({ a: { x: 1, y: [1, 2, 3] }, b: 2 });
    expect(result.endsWith('b: 2\n')).toBe(true);
  });

  it('writes into an empty or comment-only document', () => {
    expect(applyEdits('', [{ path: ['a'], value: 1 }])).toBe('a: 1\n');
    expect(applyEdits('# only a comment\n', [{ path: ['a', 'b'], value: 'x' }])).toBe('# only a comment\na:\n    b: x\n');
  });

  it('refuses invalid requests with X001', () => {
    expect(catchError(() => applyEdits(goStyle, [{ path: ['state', 'sub'], value: 1 }])).code).toBe('X001_INVALID_INPUT');
    expect(catchError(() => applyEdits(goStyle, [{ path: ['waves', 5], value: 1 }])).code).toBe('X001_INVALID_INPUT');
    expect(catchError(() => applyEdits(goStyle, [{ path: ['waves', 'x'], value: 1 }])).code).toBe('X001_INVALID_INPUT');
    expect(catchError(() => applyEdits(goStyle, [{ path: ['a'], value: Number.NaN }])).code).toBe('X001_INVALID_INPUT');
    expect(catchError(() => applyEdits(goStyle, [{ path: ['a'], value: new Map() }])).code).toBe('X001_INVALID_INPUT');
    expect(catchError(() => applyEdits(goStyle, [{ path: ['a'], value: () => 1 }])).code).toBe('X001_INVALID_INPUT');
    expect(catchError(() => applyEdits(goStyle, [{ path: ['a'], value: undefined }])).code).toBe('X001_INVALID_INPUT');
    expect(catchError(() => applyEdits(goStyle, [{ path: [-1], value: 1 }])).code).toBe('X001_INVALID_INPUT');
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(catchError(() => applyEdits(goStyle, [{ path: ['a'], value: cycle }])).code).toBe('X001_INVALID_INPUT');
  });

  it('refuses to edit text that does not parse', () => {
    expect(catchError(() => applyEdits('a: [1,', [{ path: ['a'], value: 1 }])).code).toBe('V046_PARSE_ERROR');
  });

  it('throws N094 instead of returning text that does not mean what was asked', () => {
    // The result would exceed the size limit, so no rewrite can be verified.
    const error = catchError(() => applyEdits('a: 1\n', [{ path: ['b'], value: 'x'.repeat(2000) }], { maxBytes: 1000 }));
    expect(error.code).toBe('N094_MANIFEST_SAVE_FAILED');
    expect(error.exitCode).toBe(2);
    expect(error.message).toMatch(/refusing to write YAML/);
  });

  it('edits a document whose root is a sequence', () => {
    const text = '- a: 1\n- a: 2\n';
    expect(applyEdits(text, [{ path: [1, 'a'], value: 3 }])).toBe('- a: 1\n- a: 3\n');
    expect(applyEdits(text, [{ path: [2], value: { a: 4, b: [5] } }])).toBe('- a: 1\n- a: 2\n- a: 4\n  b:\n    - 5\n');
  });

  it('keeps the trailing lines of a keep-chomped block scalar with it', () => {
    const text = 'b: 1\na: |+\n    x\n\n\n';
    const result = applyEdits(text, [{ path: ['c'], value: 2 }]);
    expect(result).toBe('b: 1\na: |+\n    x\n\n\nc: 2\n');
    expect(plainOf(result)).toEqual({ b: 1, a: 'x\n\n\n', c: 2 });
  });

  it('accepts an existing parse of the text', () => {
    const parsed = parseYamlSafe(goStyle);
    if (!parsed.ok) throw new Error('parse failed');
    expect(applyEdits(goStyle, [{ path: ['state'], value: 'X' }], { parsed })).toBe(goStyle.replace('state: WAVE_PENDING', 'state: X'));
  });

  it('keeps a byte order mark', () => {
    expect(applyEdits('\uFEFFa: 1\n', [{ path: ['b'], value: 2 }])).toBe('\uFEFFa: 1\nb: 2\n');
  });

  it('converts Date values with toJSON', () => {
    const result = applyEdits('a: 1\n', [{ path: ['at'], value: new Date('2026-03-25T08:48:32Z') }]);
    expect(result).toBe('a: 1\nat: "2026-03-25T08:48:32.000Z"\n');
  });
});
