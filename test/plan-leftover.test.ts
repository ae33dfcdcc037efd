/**
 * Outside attack X29-08 (issue 11): the Planner works in the main checkout; what it leaves there is moved to the
 * quarantine when it stops. A leftover that could not be moved out (here: the quarantine cannot be made) must fail
 * `polywave plan` closed — exit 1 with SANDBOX_LEFTOVER_STAYED — not pass as a valid plan. Real git, the real CLI, a
 * scripted Planner (its bash in the OS sandbox where it runs).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { programDemoManifest } from '../src/demo/program-project.js';
import { runCli } from './support/cli.js';
import { createTestRepo } from './support/git-repo.js';
import { makeTempDir } from './support/temp.js';

describe('polywave plan and what the Planner leaves behind (X29-08)', () => {
  it('a leftover that cannot be moved out fails the plan: exit 1, SANDBOX_LEFTOVER_STAYED named', async () => {
    const repo = await createTestRepo({ files: { 'README.md': '# shop\n' } });
    mkdirSync(repo.path('.git/polywave'), { recursive: true });
    writeFileSync(repo.path('.git/polywave/quarantine'), 'not a directory\n');
    const script = path.join(makeTempDir('polywave-plan-leftover-'), 'agents.yaml');
    const plant = "require('fs').mkdirSync('tools',{recursive:true});require('fs').writeFileSync('tools/helpers.test.js','x')";
    writeFileSync(
      script,
      ['version: 1', 'agents:', '  planner:', '    steps:', `      - bash: ${JSON.stringify(`node -e ${JSON.stringify(plant)}`)}`, `      - write: { path: docs/PROGRAM/PROGRAM-shop.yaml, content: ${JSON.stringify(programDemoManifest('PLANNING'))} }`, '      - text: "planned"', ''].join('\n'),
    );
    const run = await runCli(['plan', 'A shop with a catalog and checkout', '--slug', 'shop', '--model', `script:${script}`], { cwd: repo.dir, env: repo.env as Record<string, string>, timeoutMs: 120_000 });
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(1);
    expect(`${run.stdout}\n${run.stderr}`).toContain('SANDBOX_LEFTOVER_STAYED');
    expect(`${run.stdout}\n${run.stderr}`).toContain('tools/helpers.test.js');
  }, 150_000);
});
