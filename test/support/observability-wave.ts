import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { createTestRepo, type TestRepo } from './git-repo.js';
import { runCli, type CliResult } from './cli.js';
import { makeTempDir } from './temp.js';

// A two-agent script wave on a real repository, run through the real `polywave run-wave` CLI
// (real worktrees, jailed tools, reports, gates, merges) — what the observability tests record.

const ids = ['A', 'B'];

function implYaml(slug: string): string {
  return [
    `title: Observed ${slug}`,
    `feature_slug: ${slug}`,
    'verdict: SUITABLE',
    'state: WAVE_PENDING',
    'test_command: "node -e \\"process.exit(0)\\""',
    'file_ownership:',
    ...ids.flatMap((id) => [`    - file: src/${id.toLowerCase()}.ts`, `      agent: ${id}`, '      wave: 1', '      action: new']),
    'interface_contracts:',
    '    - name: Letter',
    '      description: A letter constant.',
    '      definition: "export const x: string"',
    '      location: src/a.ts',
    'waves:',
    '    - number: 1',
    '      agents:',
    ...ids.flatMap((id) => [`        - id: ${id}`, `          task: Implement src/${id.toLowerCase()}.ts.`, '          files:', `            - src/${id.toLowerCase()}.ts`]),
    'quality_gates:',
    '    level: standard',
    '    gates:',
    '        - type: test',
    '          command: "node -e \\"process.exit(0)\\""',
    '          required: true',
    '',
  ].join('\n');
}

function script(): string {
  return [
    'version: 1',
    'agents:',
    ...ids.flatMap((id) => {
      const lower = id.toLowerCase();
      return [
        `  ${id}:`,
        '    steps:',
        `      - write: { path: src/${lower}.ts, content: "export const ${lower} = '${lower}';\\n" }`,
        `      - commit: "feat(${id}): letter ${lower}"`,
        '      - report: { status: complete, verification: PASS, notes: "done" }',
      ];
    }),
    '',
  ].join('\n');
}

export interface ObservedWave {
  repo: TestRepo;
  implPath: string;
  scriptPath: string;
  /** Runs `polywave run-wave <impl> --wave 1 --model script:… --skip-critic` with `env` added. */
  run(extraArgs?: string[], env?: Record<string, string>): Promise<CliResult>;
}

export async function createObservedWave(slug = 'observed'): Promise<ObservedWave> {
  const repo = await createTestRepo({ files: { [`docs/IMPL/IMPL-${slug}.yaml`]: implYaml(slug), 'src/index.ts': 'export {};\n' } });
  const scriptPath = path.join(makeTempDir('pw-obs-script-'), 'agents.yaml');
  writeFileSync(scriptPath, script());
  const implPath = repo.path(`docs/IMPL/IMPL-${slug}.yaml`);
  return {
    repo,
    implPath,
    scriptPath,
    run: (extraArgs = [], env = {}) =>
      runCli(['run-wave', implPath, '--wave', '1', '--model', `script:${scriptPath}`, '--skip-critic', ...extraArgs], {
        cwd: repo.dir,
        env: { ...(repo.env as Record<string, string>), ...env },
        timeoutMs: 180_000,
      }),
  };
}

/** The stderr lines that are store warnings. */
export function storeWarnings(stderr: string): string[] {
  return stderr.split('\n').filter((line) => line.includes('warning: event store'));
}
