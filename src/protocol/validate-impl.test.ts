import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Finding } from '../errors/finding.js';
import { parseImpl } from './parse-impl.js';
import type { ImplRule, ImplRuleContext } from './rules/rule.js';
import { summarizeFindings, validateImpl } from './validate-impl.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const corpusRoot = path.resolve(repoRoot, '..', 'shared', 'corpus');

function listManifests(directory: string): string[] {
  const found: string[] = [];
  for (const name of readdirSync(directory).sort()) {
    const full = path.join(directory, name);
    if (statSync(full).isDirectory()) found.push(...listManifests(full));
    else if (/^IMPL-.*\.ya?ml$/.test(name)) found.push(full);
  }
  return found;
}

const emptyContext = (): ImplRuleContext => {
  const parsed = parseImpl('title: t\nfeature_slug: t\nverdict: SUITABLE\n');
  return { manifest: parsed.manifest!, locate: parsed.locate };
};

describe('validateImpl', () => {
  it('keeps rule order, then each rule’s emission order', () => {
    const rule = (name: string, codes: string[]): ImplRule => ({
      name,
      reference: 'TEST',
      codes,
      check: () => codes.map((code) => ({ code, message: name, severity: 'error' })),
    });
    const findings = validateImpl(emptyContext(), [rule('second', ['Z1', 'A1']), rule('first', ['M1'])]);
    expect(findings.map((finding) => finding.code)).toEqual(['Z1', 'A1', 'M1']);
  });

  it('turns a rule that throws into a fatal finding and runs the others', () => {
    const broken: ImplRule = {
      name: 'broken',
      reference: 'TEST',
      codes: [],
      check: () => {
        throw new Error('boom');
      },
    };
    const fine: ImplRule = { name: 'fine', reference: 'TEST', codes: ['X'], check: () => [{ code: 'X', message: 'x', severity: 'warning' }] };
    expect(validateImpl(emptyContext(), [broken, fine])).toEqual([
      { code: 'V001_MANIFEST_INVALID', message: 'rule broken (TEST) failed: boom', severity: 'fatal' },
      { code: 'X', message: 'x', severity: 'warning' },
    ]);
  });
});

describe('summarizeFindings', () => {
  it('errors are error+fatal, warnings are warning+info, valid means no errors', () => {
    const findings: Finding[] = [
      { code: 'A', message: 'a', severity: 'warning' },
      { code: 'B', message: 'b', severity: 'error' },
      { code: 'C', message: 'c', severity: 'info' },
      { code: 'D', message: 'd', severity: 'fatal' },
    ];
    const summary = summarizeFindings(findings);
    expect(summary.valid).toBe(false);
    expect(summary.error_count).toBe(2);
    expect(summary.errors.map((finding) => finding.code)).toEqual(['B', 'D']);
    expect(summary.warning_count).toBe(2);
    expect(summary.warnings.map((finding) => finding.code)).toEqual(['A', 'C']);
    expect(summarizeFindings([])).toEqual({ valid: true, error_count: 0, errors: [], warning_count: 0, warnings: [] });
  });
});

describe('the Go corpus', () => {
  const manifests = listManifests(corpusRoot);

  it('has manifests to load', () => {
    expect(manifests.length).toBeGreaterThan(100);
  });

  it('every IMPL manifest parses and validates without throwing, deterministically', () => {
    const histogram = new Map<string, number>();
    const invalid: string[] = [];
    for (const file of manifests) {
      const text = readFileSync(file, 'utf8');
      const run = () => {
        const parsed = parseImpl(text);
        const findings = [...parsed.findings];
        if (parsed.manifest) findings.push(...validateImpl({ manifest: parsed.manifest, locate: parsed.locate }));
        return findings;
      };
      const first = run();
      expect(run(), path.relative(corpusRoot, file)).toEqual(first);
      expect(first.filter((finding) => finding.code === 'V001_MANIFEST_INVALID' && finding.severity === 'fatal'), file).toEqual([]);
      for (const finding of first) histogram.set(`${finding.code} (${finding.severity})`, (histogram.get(`${finding.code} (${finding.severity})`) ?? 0) + 1);
      if (!summarizeFindings(first).valid) invalid.push(path.relative(corpusRoot, file));
    }
    const lines = [...histogram.entries()].sort((left, right) => right[1] - left[1] || (left[0] < right[0] ? -1 : 1));
    console.log(
      `corpus: ${manifests.length} IMPL manifests, ${manifests.length - invalid.length} valid\n` +
        lines.map(([code, count]) => `${String(count).padStart(6)}  ${code}`).join('\n'),
    );
  });
});
