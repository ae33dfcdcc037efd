/**
 * The solo-wave fixture of the escape reproductions (outside attacks X3 #21, X4 #3): an IMPL whose wave 1
 * has one agent (A, owning src/a.ts), so A works in the main checkout; a victim HOME with a ~/.bashrc.
 */
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createTestRepo, type TestRepo } from './git-repo.js';

export const soloImpl = [
  'title: Solo wave',
  'feature_slug: solo',
  'verdict: SUITABLE',
  'state: WAVE_PENDING',
  'test_command: "true"',
  'file_ownership:',
  '    - file: src/a.ts',
  '      agent: A',
  '      wave: 1',
  '      action: new',
  '    - file: src/b.ts',
  '      agent: B',
  '      wave: 2',
  '      action: new',
  'interface_contracts:',
  '    - name: Letter',
  '      description: A letter constant.',
  '      definition: "export const a: string"',
  '      location: src/a.ts',
  'waves:',
  '    - number: 1',
  '      agents:',
  '        - id: A',
  '          task: Implement src/a.ts.',
  '          files:',
  '            - src/a.ts',
  '    - number: 2',
  '      agents:',
  '        - id: B',
  '          task: Implement src/b.ts.',
  '          files:',
  '            - src/b.ts',
  '',
].join('\n');

/** The repository with the solo IMPL, and a victim home whose ~/.bashrc is `echo original`. */
export async function soloEscapeRepo(): Promise<{ repo: TestRepo; home: string; bashrc: string }> {
  const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-solo.yaml': soloImpl, 'src/index.ts': 'export {};\n', '.gitignore': '.polywave-state/\n' } });
  const home = repo.sibling('home');
  mkdirSync(home);
  const bashrc = path.join(home, '.bashrc');
  writeFileSync(bashrc, 'echo original\n');
  return { repo, home, bashrc };
}

/** The first file named `name` under `dir` (depth first), e.g. a run's `denials.jsonl` under `.polywave-state`. */
export function findFile(dir: string, name: string): string | undefined {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      const found = findFile(full, name);
      if (found) return found;
    } else if (entry.name === name) return full;
  }
  return undefined;
}
