import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from './cli.js';
import { createTestRepo, type TestRepo } from './git-repo.js';

/** The analysis fixtures (test/fixtures/analysis/<lang>/) with known answers. */
export const analysisFixtureLanguages = ['ts', 'js', 'go', 'python', 'rust'] as const;
export type AnalysisFixture = (typeof analysisFixtureLanguages)[number];

function readTree(dir: string, prefix = ''): Record<string, string> {
  const files: Record<string, string> = {};
  for (const name of readdirSync(dir).sort()) {
    const full = path.join(dir, name);
    const relative = prefix === '' ? name : `${prefix}/${name}`;
    if (statSync(full).isDirectory()) Object.assign(files, readTree(full, relative));
    else files[relative] = readFileSync(full, 'utf8');
  }
  return files;
}

/** A temporary git repository holding one fixture, committed. */
export function analysisFixtureRepo(lang: AnalysisFixture): Promise<TestRepo> {
  return createTestRepo({ files: readTree(path.join(repoRoot, 'test', 'fixtures', 'analysis', lang)) });
}
