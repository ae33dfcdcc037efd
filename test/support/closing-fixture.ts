import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { main } from '../../src/cli/main.js';
import type { CommandIo } from '../../src/cli/io.js';
import { createTestRepo, type TestRepo } from './git-repo.js';

/**
 * Fixtures for the closing and recovery commands (close-impl, update-context, reconcile-state,
 * agent-status, amend-impl): a real repository holding `docs/IMPL/IMPL-closing-test.yaml`, a
 * 2-wave IMPL (wave 1: A, B; wave 2: C), and helpers that do an agent's work on its E5 branch
 * (optionally in its E5 worktree) and merge it like finalize-wave would.
 */
export const fixtureSlug = 'closing-test';
export const fixtureManifestPath = 'docs/IMPL/IMPL-closing-test.yaml';

export interface FixtureReport {
  status: 'complete' | 'partial' | 'blocked';
  commit?: string;
  branch?: string;
  failure_type?: string;
}

export interface ManifestOptions {
  state?: string;
  reports?: Record<string, FixtureReport>;
  /** base_commit per wave number. */
  bases?: Record<number, string>;
  completionDate?: string;
  mergeState?: string;
  critic?: boolean;
  /** Extra top-level YAML appended verbatim. */
  extra?: string;
}

/** The fixture manifest text (Go yaml.v3 layout, 4-space indentation). */
export function manifestText(options: ManifestOptions = {}): string {
  const base = (wave: number) => (options.bases?.[wave] ? `      base_commit: ${options.bases[wave]}\n` : '');
  const lines = [
    '# Fixture IMPL for the closing commands',
    'title: Closing test feature',
    `feature_slug: ${fixtureSlug}`,
    'verdict: SUITABLE',
    'test_command: "true"',
    'file_ownership:',
    '    - file: src/a.ts',
    '      agent: A',
    '      wave: 1',
    '      action: new',
    '    - file: src/b.ts',
    '      agent: B',
    '      wave: 1',
    '      action: new',
    '    - file: src/c.ts',
    '      agent: C',
    '      wave: 2',
    '      action: new',
    '      depends_on:',
    '        - A',
    'interface_contracts:',
    '    - name: Greeter',
    '      description: Turns a name into a greeting.',
    '      definition: |',
    '        export interface Greeter {',
    '          greet(name: string): string;',
    '        }',
    '      location: src/a.ts',
    'waves:',
    '    - number: 1',
    `${base(1)}      agents:`,
    '        - id: A',
    '          task: Write src/a.ts',
    '          files:',
    '            - src/a.ts',
    '        - id: B',
    '          task: Write src/b.ts',
    '          files:',
    '            - src/b.ts',
    '    - number: 2',
    `${base(2)}      agents:`,
    '        - id: C',
    '          task: Write src/c.ts',
    '          files:',
    '            - src/c.ts',
    '          dependencies:',
    '            - A',
  ];
  let text = `${lines.join('\n').replace(/\n\n/g, '\n')}\n`;
  const reports = Object.entries(options.reports ?? {});
  if (reports.length > 0) {
    text += 'completion_reports:\n';
    for (const [id, report] of reports) {
      text += `    ${id}:\n        status: ${report.status}\n`;
      if (report.commit) text += `        commit: "${report.commit}"\n`;
      if (report.branch) text += `        branch: ${report.branch}\n`;
      if (report.failure_type) text += `        failure_type: ${report.failure_type}\n`;
      text += `        verification: ${report.status === 'complete' ? 'PASS' : 'FAIL (fixture)'}\n`;
    }
  }
  if (options.critic) text += 'critic_report:\n    verdict: PASS\n    summary: fine\n';
  if (options.mergeState) text += `merge_state: ${options.mergeState}\n`;
  if (options.completionDate) text += `completion_date: "${options.completionDate}"\n`;
  if (options.extra) text += options.extra;
  text += `state: ${options.state ?? 'WAVE_VERIFIED'}\n`;
  return text;
}

export interface Fixture {
  repo: TestRepo;
  manifest: string;
  writeManifest(options?: ManifestOptions): void;
}

/** A repository with the fixture manifest committed (state REVIEWED unless given). */
export async function createFixtureRepo(options: ManifestOptions = { state: 'REVIEWED' }): Promise<Fixture> {
  const repo = await createTestRepo({ files: { [fixtureManifestPath]: manifestText(options) } });
  const manifest = repo.path(fixtureManifestPath);
  // As prepare-wave does (ensureInfoExclude): agent worktrees are not content of the main checkout.
  const exclude = path.join(repo.dir, '.git', 'info', 'exclude');
  mkdirSync(path.dirname(exclude), { recursive: true });
  writeFileSync(exclude, '/.claude/worktrees/\n/.polywave-state/\n', { flag: 'a' });
  return {
    repo,
    manifest,
    writeManifest(next = {}) {
      writeFileSync(manifest, manifestText(next));
    },
  };
}

export function agentBranch(wave: number, id: string, slug = fixtureSlug): string {
  return `polywave/${slug}/wave${wave}-agent-${id}`;
}

/**
 * Does agent `id`'s work: a branch from `base` (default HEAD) with one commit adding `file`, made
 * in its E5 worktree when `worktree` is set. Returns the commit SHA.
 */
export async function doAgentWork(repo: TestRepo, options: { wave: number; id: string; file: string; base?: string; worktree?: boolean; branch?: string }): Promise<string> {
  const branch = options.branch ?? agentBranch(options.wave, options.id);
  const base = options.base ?? 'HEAD';
  if (options.worktree) {
    const directory = path.join(repo.dir, '.claude', 'worktrees', 'polywave', fixtureSlug, `wave${options.wave}-agent-${options.id}`);
    mkdirSync(path.dirname(directory), { recursive: true });
    await repo.run(['worktree', 'add', '--quiet', '-b', branch, directory, base]);
    const file = path.join(directory, options.file);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, `export const ${options.id.toLowerCase()} = '${options.id}';\n`);
    await repo.run(['-C', directory, 'add', '--all']);
    await repo.run(['-C', directory, 'commit', '--quiet', '--no-verify', '-m', `agent ${options.id}`]);
    return (await repo.run(['-C', directory, 'rev-parse', 'HEAD'])).trim();
  }
  const current = (await repo.run(['symbolic-ref', '--short', 'HEAD'])).trim();
  await repo.run(['checkout', '--quiet', '-b', branch, base]);
  repo.write(options.file, `export const ${options.id.toLowerCase()} = '${options.id}';\n`);
  await repo.run(['add', '--', options.file]);
  await repo.run(['commit', '--quiet', '--no-verify', '-m', `agent ${options.id}`]);
  const sha = (await repo.run(['rev-parse', 'HEAD'])).trim();
  await repo.run(['checkout', '--quiet', current]);
  return sha;
}

/** Merges an agent branch into the current branch with --no-ff (as finalize-wave does). */
export async function mergeBranch(repo: TestRepo, branch: string): Promise<void> {
  await repo.run(['merge', '--quiet', '--no-ff', '--no-edit', '-m', `merge ${branch}`, branch]);
}

/**
 * A finished IMPL: both waves' agents worked in their worktrees, were merged into main and
 * reported complete; state WAVE_VERIFIED; everything committed. Returns the fixture and SHAs.
 */
export async function createFinishedRepo(): Promise<Fixture & { commits: Record<string, string> }> {
  const fixture = await createFixtureRepo();
  const { repo } = fixture;
  const base1 = (await repo.run(['rev-parse', 'HEAD'])).trim();
  const commits: Record<string, string> = {};
  commits.A = await doAgentWork(repo, { wave: 1, id: 'A', file: 'src/a.ts', base: base1, worktree: true });
  commits.B = await doAgentWork(repo, { wave: 1, id: 'B', file: 'src/b.ts', base: base1, worktree: true });
  await mergeBranch(repo, agentBranch(1, 'A'));
  await mergeBranch(repo, agentBranch(1, 'B'));
  const base2 = (await repo.run(['rev-parse', 'HEAD'])).trim();
  commits.C = await doAgentWork(repo, { wave: 2, id: 'C', file: 'src/c.ts', base: base2, worktree: true });
  await mergeBranch(repo, agentBranch(2, 'C'));
  fixture.writeManifest({
    state: 'WAVE_VERIFIED',
    bases: { 1: base1, 2: base2 },
    reports: Object.fromEntries(
      Object.entries(commits).map(([id, commit]) => [id, { status: 'complete' as const, commit, branch: agentBranch(id === 'C' ? 2 : 1, id) }]),
    ),
  });
  await repo.commitAll('record reports');
  return { ...fixture, commits };
}

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI in-process (no build needed) with the repository's git environment. */
export async function runPolywave(argv: string[], options: { cwd: string; env?: Record<string, string | undefined>; input?: string; now?: Date }): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const io: CommandIo = {
    cwd: options.cwd,
    env: options.env ?? process.env,
    now: () => options.now ?? new Date(2026, 4, 12, 10, 0, 0),
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
    readStdin: async () => options.input ?? '',
  };
  const code = await main(argv, io);
  return { code, stdout, stderr };
}
