import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { implRules } from '../src/protocol/rules/index.js';
import { commandTable } from '../src/cli/command-table.js';
import { repoRoot } from './support/cli.js';

// Keeps ARCHITECTURE.md and README.md true: every rule and every command is documented.
describe('documentation stays true', () => {
  const architecture = readFileSync(path.join(repoRoot, 'ARCHITECTURE.md'), 'utf8');
  const readme = readFileSync(path.join(repoRoot, 'README.md'), 'utf8');

  it('ARCHITECTURE.md names every IMPL validation rule with its protocol reference', () => {
    const missing = implRules.filter((rule) => !architecture.includes(`| ${rule.name} |`)).map((rule) => rule.name);
    expect(missing).toEqual([]);
  });

  it('README.md lists every CLI command', () => {
    const missing = commandTable.filter((spec) => !readme.includes(`\`${spec.name}`)).map((spec) => spec.name);
    expect(missing).toEqual([]);
  });

  it('README.md starts with the two newcomer commands', () => {
    const top = readme.split('\n').slice(0, 30).join('\n');
    expect(top).toContain('npm ci && npm test');
    expect(top).toMatch(/npx polywave demo/);
  });
});
