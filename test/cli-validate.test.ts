import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { commandTable } from '../src/cli/command-table.js';
import { parseImpl } from '../src/protocol/parse-impl.js';
import { runCli, runCliBatch, repoRoot } from './support/cli.js';
import { changedLineIndexes, expectCodedError, expectNoStackTrace, expectVerdict, mapBounded } from './support/cli-assert.js';
import { makeTempDir } from './support/temp.js';

const examplePath = path.join(repoRoot, 'examples', 'IMPL-greeting-cli.yaml');
const exampleText = readFileSync(examplePath, 'utf8');
const temp = makeTempDir('polywave-validate-');
let counter = 0;

/** Writes `text` to a fresh file in the temp dir and returns its path. */
function writeManifest(text: string, name = 'IMPL-case.yaml'): string {
  counter += 1;
  const directory = path.join(temp, `case-${counter}`);
  mkdirSync(directory, { recursive: true });
  const file = path.join(directory, name);
  writeFileSync(file, text);
  return file;
}

/** 1-based line numbers of the lines of `text` that contain `needle`. */
function linesOf(text: string, needle: string): number[] {
  return text
    .split('\n')
    .map((line, index) => (line.includes(needle) ? index + 1 : 0))
    .filter((line) => line > 0);
}

/** A small valid manifest (flow rows keep one row per line). */
const baseText = `title: Add widgets
feature_slug: add-widgets
verdict: SUITABLE
test_command: npm test
lint_command: npm run lint
file_ownership:
  - {file: src/a.ts, agent: A, wave: 1, action: new}
  - {file: src/b.ts, agent: B, wave: 1, action: modify}
waves:
  - number: 1
    agents:
      - id: A
        task: Build a
        files: [src/a.ts]
      - id: B
        task: Build b
        files: [src/b.ts]
quality_gates:
  level: standard
  gates:
    - type: build
      command: npm run build
      required: true
state: REVIEWED
`;

describe('polywave validate', () => {
  it('accepts the shipped example (exit 0, full verdict JSON)', async () => {
    const result = await runCli(['validate', examplePath]);
    const verdict = expectVerdict(result, { withFixed: true });
    expect(verdict.valid).toBe(true);
    expect(verdict.error_count).toBe(0);
    expect(verdict.fixed).toBe(0);
    expect(result.code).toBe(0);
    expect(readFileSync(examplePath, 'utf8')).toBe(exampleText);
  });

  it('accepts the small base manifest used by the other cases', async () => {
    const result = await runCli(['validate', writeManifest(baseText)]);
    expect(expectVerdict(result).valid, result.stdout).toBe(true);
  });

  it('a YAML syntax error: exit 2, one coded line with line and column, file untouched', async () => {
    const text = `title: Broken\nfeature_slug: broken\nverdict: SUITABLE\nwaves: [unclosed\nstate: REVIEWED\n`;
    const file = writeManifest(text);
    const result = await runCli(['validate', file]);
    const { code, message } = expectCodedError(result, { exitCode: 2, code: 'V046_PARSE_ERROR' });
    expect(code).toBe('V046_PARSE_ERROR');
    expect(message).toMatch(/line \d+, column \d+/);
    expect(message).toContain(file);
    expect(readFileSync(file, 'utf8')).toBe(text);
  });

  it('duplicate keys: E16_DUPLICATE_KEY naming every line, at top level and nested; exit 1', async () => {
    const text = `${baseText.replace('state: REVIEWED\n', '')}title: Again
state: REVIEWED
title: Third
`.replace('      - id: A\n        task: Build a\n', '      - id: A\n        task: Build a\n        task: Build a twice\n');
    const file = writeManifest(text);
    const result = await runCli(['validate', file]);
    const verdict = expectVerdict(result);
    expect(result.code).toBe(1);
    const duplicates = verdict.errors.filter((finding) => finding.code === 'E16_DUPLICATE_KEY');
    expect(duplicates).toHaveLength(2);
    const titleLines = linesOf(text, 'title:').filter((line) => /^title:/.test(text.split('\n')[line - 1]!));
    expect(titleLines).toHaveLength(3);
    const top = duplicates.find((finding) => finding.field === 'title');
    expect(top, JSON.stringify(duplicates)).toBeDefined();
    expect(top!.message).toContain(`lines ${titleLines.join(', ')}`);
    const nested = duplicates.find((finding) => finding.field === 'waves[0].agents[0].task');
    expect(nested, JSON.stringify(duplicates)).toBeDefined();
    expect(nested!.message).toContain(`lines ${linesOf(text, 'task: Build a').join(', ')}`);
    expect(readFileSync(file, 'utf8')).toBe(text);
  });

  it('an unknown key: V013_UNKNOWN_KEY with its field and line; exit 1', async () => {
    const text = baseText.replace('        task: Build b\n', '        task: Build b\n        colour: blue\n');
    const result = await runCli(['validate', writeManifest(text)]);
    const verdict = expectVerdict(result);
    expect(result.code).toBe(1);
    const unknown = verdict.errors.find((finding) => finding.code === 'V013_UNKNOWN_KEY');
    expect(unknown, result.stdout).toBeDefined();
    expect(unknown!.field).toBe('waves[0].agents[1].colour');
    expect(unknown!.line).toBe(linesOf(text, 'colour: blue')[0]);
    expect(unknown!.column).toBe(9);
  });

  it('a wrong type: V001_MANIFEST_INVALID naming the field; exit 1', async () => {
    const text = baseText.replace('  - number: 1\n', '  - number: [1]\n');
    const result = await runCli(['validate', writeManifest(text)]);
    const verdict = expectVerdict(result);
    expect(result.code).toBe(1);
    const wrong = verdict.errors.find((finding) => finding.code === 'V001_MANIFEST_INVALID');
    expect(wrong, result.stdout).toBeDefined();
    expect(wrong!.field).toBe('waves[0].number');
    expect(wrong!.message).toContain('waves[0].number');
    expect(wrong!.line).toBe(linesOf(text, 'number: [1]')[0]);
  });

  it('I1 overlap: V002_DISJOINT_OWNERSHIP; exit 1', async () => {
    const text = baseText
      .replace('{file: src/b.ts, agent: B, wave: 1, action: modify}', '{file: src/a.ts, agent: B, wave: 1, action: modify}')
      .replace('files: [src/b.ts]', 'files: [src/a.ts]');
    const result = await runCli(['validate', writeManifest(text)]);
    const verdict = expectVerdict(result);
    expect(result.code).toBe(1);
    const overlap = verdict.errors.filter((finding) => finding.code === 'V002_DISJOINT_OWNERSHIP');
    expect(overlap, result.stdout).toHaveLength(1);
    expect(overlap[0]!.message).toContain('src/a.ts');
    expect(overlap[0]!.message).toMatch(/A.*B/);
  });

  it('--fix rewrites gate type and action aliases in place: comments kept, only those lines change', async () => {
    const text = `# Leading comment: keep me.
title: Add widgets   # trailing comment on title
feature_slug: add-widgets
verdict: SUITABLE
test_command: npm test
lint_command: npm run lint
file_ownership:
  # ownership rows
  - file: src/a.ts
    agent: A
    wave: 1
    action: new
  - file: src/b.ts
    agent: B
    wave: 1
    action: update   # scouts say update
waves:
  - number: 1
    agents:
      - id: A
        task: Build a
        files: [src/a.ts]
      - id: B
        task: Build b
        files: [src/b.ts]
quality_gates:
  level: standard
  gates:
    - type: build
      command: npm run build
      required: true
    # the linter
    - type: linting
      command: npm run lint
      required: false
state: REVIEWED
# closing comment
`;
    const file = writeManifest(text);
    const before = parseImpl(text);
    expect(before.manifest).not.toBeNull();

    const result = await runCli(['validate', '--fix', file]);
    const verdict = expectVerdict(result, { withFixed: true });
    expect(verdict.fixed).toBe(2);
    expect(verdict.valid, result.stdout).toBe(true);
    expect(verdict.fixes).toEqual([
      "quality_gates.gates[1].type: 'linting' → 'custom'",
      "file_ownership[1].action: 'update' → 'modify'",
    ]);

    const after = readFileSync(file, 'utf8');
    const changed = changedLineIndexes(text, after);
    const afterLines = after.split('\n');
    expect(changed.map((index) => afterLines[index])).toEqual(['    action: modify   # scouts say update', '    - type: custom']);
    for (const comment of ['# Leading comment: keep me.', '# trailing comment on title', '# ownership rows', '# the linter', '# closing comment']) {
      expect(after).toContain(comment);
    }

    // A second --fix has nothing left to do and changes no byte.
    const again = await runCli(['validate', '--fix', file]);
    expect(expectVerdict(again, { withFixed: true }).fixed).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe(after);
  });

  it('--repo-dir: a missing modify target is an E16_FILE_NOT_FOUND warning; valid stays true', async () => {
    const repoDirectory = path.join(temp, 'repo-for-file-check');
    mkdirSync(path.join(repoDirectory, 'src'), { recursive: true });
    // src/a.ts is new (need not exist); src/b.ts is modified but missing.
    const result = await runCli(['validate', '--repo-dir', repoDirectory, writeManifest(baseText)]);
    const verdict = expectVerdict(result);
    expect(verdict.valid, result.stdout).toBe(true);
    expect(result.code).toBe(0);
    const missing = verdict.warnings.filter((finding) => finding.code === 'E16_FILE_NOT_FOUND');
    expect(missing, result.stdout).toHaveLength(1);
    expect(missing[0]!.severity).toBe('warning');
    expect(missing[0]!.message).toContain('src/b.ts');

    writeFileSync(path.join(repoDirectory, 'src', 'b.ts'), 'export const b = 1;\n');
    const withFile = await runCli(['validate', '--repo-dir', repoDirectory, writeManifest(baseText)]);
    expect(expectVerdict(withFile).warnings.filter((finding) => finding.code === 'E16_FILE_NOT_FOUND')).toEqual([]);
  });

  it('--repo-dir that does not exist: exit 2, coded error', async () => {
    const file = writeManifest(baseText);
    const result = await runCli(['validate', '--repo-dir', path.join(temp, 'no-such-dir'), file]);
    expectCodedError(result, { exitCode: 2, code: 'X001_INVALID_INPUT' });
    expect(readFileSync(file, 'utf8')).toBe(baseText);
  });

  it('a markdown IMPL doc with typed blocks: E16A errors for the missing blocks; exit 1', async () => {
    const text = `# IMPL: add widgets

Some prose about the feature.

\`\`\`yaml type=impl-file-ownership
| File | Agent | Wave | Depends On |
|------|-------|------|------------|
| src/a.ts | A | 1 | — |
\`\`\`

Closing prose.
`;
    const file = writeManifest(text, 'IMPL-widgets.md');
    const result = await runCli(['validate', file]);
    const verdict = expectVerdict(result, { withFixed: true });
    expect(result.code).toBe(1);
    const missing = verdict.errors.filter((finding) => finding.code === 'E16A_MISSING_BLOCK');
    expect(missing.length, result.stdout).toBe(2);
    const text2 = missing.map((finding) => finding.message).join('\n');
    expect(text2).toContain('impl-dep-graph');
    expect(text2).toContain('impl-wave-structure');
    expect(readFileSync(file, 'utf8')).toBe(text);
  });

  it('a .yaml IMPL overwritten with prose, a number or null is V001, exit 2 (outside attack N1: it was "valid"); a prose .md doc is valid with the no-typed-blocks warning', async () => {
    const cases: Array<[string, RegExp]> = [
      ['# IMPL: add caching\n\nThis plan adds a cache layer.\nWave 1: agent A writes cache.ts\n', /V046_PARSE_ERROR|V001_MANIFEST_INVALID/],
      ['hello world\n', /V001_MANIFEST_INVALID/],
      ['42\n', /V001_MANIFEST_INVALID/],
      ['null\n', /V001_MANIFEST_INVALID/],
      ['# Plan\n\nprose only, no typed blocks\n', /V001_MANIFEST_INVALID|V046_PARSE_ERROR/],
    ];
    const results = await runCliBatch(cases.map(([text], index) => ['validate', writeManifest(text, `IMPL-prose-${index}.yaml`)]));
    results.forEach((result, index) => expectCodedError({ ...result, durationMs: 0 }, { exitCode: 2, code: cases[index]![1], label: cases[index]![0] }));
    const prose = '# Plan\n\nprose only, no typed blocks\n';
    const markdown = writeManifest(prose, 'IMPL-prose.md');
    const verdict = expectVerdict(await runCli(['validate', markdown]), { withFixed: true });
    expect(verdict.valid).toBe(true);
    expect(verdict.warnings.map((finding) => finding.code)).toEqual(['E16_NO_TYPED_BLOCKS']);
    expect(readFileSync(markdown, 'utf8')).toBe(prose);
  });

  it('--help of every command in the command table: exit 0, usage on stdout', async () => {
    // Every command's help through the CLI's entry in one Node process (a hundred process starts cost ~25 s
    // of the suite's CPU); a few through the real binary, so the process path is covered too.
    const results = runCliBatch(commandTable.map((spec) => [spec.name, '--help']));
    const sample = ['validate', 'run-wave', 'worker'];
    const spawned = await mapBounded(sample, 3, (name) => runCli([name, '--help']));
    for (const [index, name] of sample.entries()) {
      expect(spawned[index]!.code, name).toBe(0);
      expect(spawned[index]!.stdout, name).toBe(results.find((result) => result.args[0] === name)!.stdout);
    }
    commandTable.forEach((spec, index) => {
      const result = results[index]!;
      expect(result.args[0]).toBe(spec.name);
      expect(result.code, `${spec.name}: ${result.stderr}`).toBe(0);
      expect(result.stdout, spec.name).toContain(`Usage: polywave ${spec.name}`);
      for (const option of spec.options ?? []) expect(result.stdout, spec.name).toContain(option.flags.split(' ')[0]!);
      expectNoStackTrace(result.stderr, spec.name);
    });
    const top = await runCli(['--help']);
    expect(top.code).toBe(0);
    for (const spec of commandTable) expect(top.stdout).toContain(spec.name);
  });
});
