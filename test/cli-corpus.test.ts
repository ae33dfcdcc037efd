import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../src/cli/main.js';
import type { CommandIo } from '../src/cli/io.js';
import { parseImpl } from '../src/protocol/parse-impl.js';
import { parseProgram } from '../src/protocol/parse-program.js';
import { applyEdits } from '../src/protocol/yaml/index.js';
import { editManifest } from '../src/store/manifest-file.js';
import { corpusRoot, runCli, type CliResult } from './support/cli.js';
import { copyInto, expectCodedError, expectVerdict, listYamlFiles, mapBounded } from './support/cli-assert.js';
import { makeTempDir } from './support/temp.js';

/**
 * Every manifest of the corpus through the CLI: IMPL files through `validate`, PROGRAM files
 * through `validate-program`. Most run in-process through `main(argv, io)` (same code as the
 * binary, without 146 process starts); a sample of each outcome is spawned for real.
 */
const corpusFiles = listYamlFiles(corpusRoot);
const isProgram = (file: string): boolean => file.split(path.sep).includes('PROGRAM');
const commandFor = (file: string): string => (isProgram(file) ? 'validate-program' : 'validate');

/** Runs `main` in-process with a recording io (same result shape as a spawned run). */
async function runInProcess(args: string[]): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const io: CommandIo = {
    cwd: corpusRoot,
    env: {},
    now: () => new Date('2026-01-01T00:00:00Z'),
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
    readStdin: async () => '',
  };
  const start = performance.now();
  const code = await main(args, io);
  return { code, stdout, stderr, durationMs: performance.now() - start };
}

type Outcome = 'valid' | 'invalid' | 'unreadable';

/** Checks one result against the CLI contract and classifies it. */
function checkResult(file: string, result: CliResult): Outcome {
  const label = path.relative(corpusRoot, file);
  if (result.code === 2) {
    const { message } = expectCodedError(result, { exitCode: 2, label });
    // Non-YAML: the message names the line and column.
    expect(message, label).toMatch(/line \d+, column \d+/);
    return 'unreadable';
  }
  const verdict = expectVerdict(result, { withFixed: !isProgram(file), label });
  if (!isProgram(file)) expect(verdict.fixed, label).toBe(0);
  for (const finding of [...verdict.errors, ...verdict.warnings]) {
    expect(typeof finding.code, label).toBe('string');
    expect(typeof finding.message, label).toBe('string');
    expect(['fatal', 'error', 'warning', 'info'], label).toContain(finding.severity);
  }
  return verdict.valid ? 'valid' : 'invalid';
}

describe('the corpus through the CLI', () => {
  it('finds IMPL and PROGRAM manifests', () => {
    expect(corpusFiles.length).toBeGreaterThanOrEqual(140);
    expect(corpusFiles.filter(isProgram).length).toBeGreaterThanOrEqual(4);
  });

  const outcomes = new Map<string, Outcome>();

  it('every manifest (in-process main): exit 0/1 with a verdict, or exit 2 with a coded line:column error; never a crash', async () => {
    const results = await mapBounded(corpusFiles, 4, (file) => runInProcess([commandFor(file), file]));
    corpusFiles.forEach((file, index) => outcomes.set(file, checkResult(file, results[index]!)));
    const count = (kind: Outcome, program: boolean) => corpusFiles.filter((file) => isProgram(file) === program && outcomes.get(file) === kind).length;
    console.log(
      `corpus: IMPL valid ${count('valid', false)}, invalid ${count('invalid', false)}, unreadable ${count('unreadable', false)}; ` +
        `PROGRAM valid ${count('valid', true)}, invalid ${count('invalid', true)}, unreadable ${count('unreadable', true)}`,
    );
    expect(count('valid', false)).toBeGreaterThan(100);
    expect(count('unreadable', false)).toBe(0);
  });

  it('a real spawn per outcome and kind gives the same exit code and output as in-process', async () => {
    const sample: string[] = [];
    for (const program of [false, true]) {
      for (const kind of ['valid', 'invalid', 'unreadable'] as const) {
        const file = corpusFiles.find((candidate) => isProgram(candidate) === program && outcomes.get(candidate) === kind);
        if (file) sample.push(file);
      }
    }
    // At least: a valid and an invalid IMPL, and a PROGRAM.
    expect(sample.filter((file) => !isProgram(file)).length).toBeGreaterThanOrEqual(2);
    expect(sample.filter(isProgram).length).toBeGreaterThanOrEqual(1);
    const spawned = await mapBounded(sample, 4, (file) => runCli([commandFor(file), file], { cwd: corpusRoot }));
    const inProcess = await mapBounded(sample, 4, (file) => runInProcess([commandFor(file), file]));
    sample.forEach((file, index) => {
      const label = path.relative(corpusRoot, file);
      expect(checkResult(file, spawned[index]!), label).toBe(outcomes.get(file));
      expect(spawned[index]!.code, label).toBe(inProcess[index]!.code);
      expect(spawned[index]!.stdout, label).toBe(inProcess[index]!.stdout);
      expect(spawned[index]!.stderr, label).toBe(inProcess[index]!.stderr);
    });
  });
});

describe('load → save is byte-identical for every parseable corpus file (real write path)', () => {
  const temp = makeTempDir('polywave-corpus-roundtrip-');

  it('applyEdits(text, []) returns the text unchanged', () => {
    for (const file of corpusFiles) {
      const text = readFileSync(file, 'utf8');
      expect(applyEdits(text, []), path.relative(corpusRoot, file)).toBe(text);
    }
  });

  it('editManifest with no edits (lock, re-read, rename) leaves every byte as it was, and no lock/temp file behind', async () => {
    let written = 0;
    for (const [index, file] of corpusFiles.entries()) {
      const label = path.relative(corpusRoot, file);
      const original = readFileSync(file);
      const parse = (text: string) => (isProgram(file) ? parseProgram(text) : parseImpl(text));
      if (parse(original.toString('utf8')).fatal) continue;
      const directory = path.join(temp, `noop-${index}`);
      const copy = copyInto(file, directory);
      const outcome = await editManifest(copy, parse, (parsed) => {
        expect(parsed.fatal, label).toBe(false);
        return { edits: [], outcome: 'planned' };
      });
      expect(outcome, label).toBe('planned');
      expect(readFileSync(copy).equals(original), label).toBe(true);
      expect(readdirSync(directory), label).toEqual([path.basename(copy)]);
      written += 1;
    }
    expect(written).toBeGreaterThanOrEqual(corpusFiles.length - 2);
  });

  it('editManifest setting fields to the values they already hold leaves every byte as it was', async () => {
    let edited = 0;
    for (const [index, file] of corpusFiles.entries()) {
      if (isProgram(file)) continue;
      const label = path.relative(corpusRoot, file);
      const original = readFileSync(file);
      const parsed = parseImpl(original.toString('utf8'));
      if (parsed.fatal || !parsed.manifest) continue;
      const data = parsed.data as Record<string, unknown>;
      const edits = (['state', 'feature_slug', 'verdict'] as const).filter((key) => typeof data[key] === 'string').map((key) => ({ path: [key], value: data[key] }));
      if (edits.length === 0) continue;
      const directory = path.join(temp, `same-${index}`);
      const copy = copyInto(file, directory);
      await editManifest(copy, parseImpl, () => ({ edits, outcome: undefined }));
      expect(readFileSync(copy, 'utf8'), label).toBe(original.toString('utf8'));
      expect(readdirSync(directory), label).toEqual([path.basename(copy)]);
      edited += 1;
    }
    expect(edited).toBeGreaterThan(100);
  });
});
