import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { finalizeWave, type FinalizeWaveOptions, type FinalizeWaveResult } from '../../src/engine/finalize-wave.js';
import { createGit } from '../../src/git/git-cli.js';
import type { Git } from '../../src/git/git-port.js';
import { buildCompletionReport, type CompletionReportInput } from '../../src/protocol/completion-report.js';
import { branchName, worktreePath } from '../../src/protocol/names.js';
import { parseImpl } from '../../src/protocol/parse-impl.js';
import type { ImplManifest } from '../../src/protocol/schema/impl-schema.js';
import { editImpl } from '../../src/store/manifest-file.js';
import { createTestRepo, type TestRepo } from './git-repo.js';

/**
 * A wave on a real temporary repository, set up the way prepare-wave leaves it (without
 * depending on prepare-wave): agent branches and worktrees at the E5 names from one base, the
 * base recorded in `waves[N].base_commit`. Agents "work" by committing in their worktrees; they
 * report through the protocol builder + the locked manifest writer (the set-completion path).
 */

export interface FixtureAgent {
  id: string;
  /** Files the agent owns (ownership rows, action new unless listed in `modify`). */
  files: string[];
  modify?: string[];
  task?: string;
}

export interface FixtureSpec {
  waves: FixtureAgent[][];
  /** quality_gates.gates list items (YAML, indented 8). */
  gates?: string;
  testCommand?: string;
  lintCommand?: string;
  /** Extra top-level YAML. */
  extra?: string;
  state?: string;
}

export const implRelative = 'docs/IMPL/IMPL-demo.yaml';
export const slug = 'demo';

export function implYaml(spec: FixtureSpec): string {
  const rows: string[] = [];
  const waves: string[] = [];
  spec.waves.forEach((agents, index) => {
    const number = index + 1;
    waves.push(`    - number: ${number}`, '      agents:');
    for (const agent of agents) {
      for (const file of agent.files) rows.push(`    - file: ${file}`, `      agent: ${agent.id}`, `      wave: ${number}`, `      action: ${agent.modify?.includes(file) ? 'modify' : 'new'}`);
      waves.push(`        - id: ${agent.id}`, `          task: ${JSON.stringify(agent.task ?? `Implement ${agent.files.join(', ')}.`)}`, '          files:', ...agent.files.map((file) => `            - ${file}`));
    }
  });
  return [
    '# Demo IMPL for finalize-wave tests (comments must survive every edit).',
    'title: Demo feature',
    'feature_slug: demo',
    'verdict: SUITABLE',
    `state: ${spec.state ?? 'WAVE_EXECUTING'}`,
    ...(spec.testCommand !== undefined ? [`test_command: ${JSON.stringify(spec.testCommand)}`] : []),
    ...(spec.lintCommand !== undefined ? [`lint_command: ${JSON.stringify(spec.lintCommand)}`] : []),
    'file_ownership:',
    ...rows,
    'interface_contracts:',
    '    - name: Greeter',
    '      description: Greets people.',
    '      definition: "export interface Greeter { greet(name: string): string }"',
    '      location: src/types.ts',
    'waves:',
    ...waves,
    ...(spec.gates ? ['quality_gates:', '    level: standard', '    gates:', spec.gates] : []),
    ...(spec.extra ? [spec.extra] : []),
    '',
  ].join('\n');
}

export interface WaveFixture {
  repo: TestRepo;
  implPath: string;
  spec: FixtureSpec;
  gitAt: (directory: string) => Git;
  /** Worktree path of an agent. */
  worktree(agent: string, wave?: number): string;
  branch(agent: string, wave?: number): string;
  /** Creates every agent's branch + worktree of `wave` at the current HEAD and records base_commit. */
  startWave(wave: number): Promise<string>;
  /** Writes (text) or deletes (null) files in the agent's worktree and commits them there. */
  work(agent: string, files: Record<string, string | null>, options?: { wave?: number; message?: string }): Promise<string>;
  /** Writes `completion_reports.<agent>` (builder rules + the locked manifest writer). */
  report(agent: string, input: CompletionReportInput): Promise<void>;
  /** Commits in the agent's worktree and reports complete with exactly the files it committed. */
  complete(agent: string, files: Record<string, string | null>, options?: { wave?: number; created?: string[] }): Promise<string>;
  manifest(): ImplManifest;
  finalize(wave: number, options?: Partial<FinalizeWaveOptions>): Promise<FinalizeWaveResult>;
  head(): Promise<string>;
}

/** A repository with the IMPL committed (plus `files`), on branch main. */
export async function createWaveFixture(spec: FixtureSpec, files: Record<string, string> = {}): Promise<WaveFixture> {
  const repo = await createTestRepo({ files: { 'src/base.ts': 'export const base = 1;\n', [implRelative]: implYaml(spec), ...files } });
  // What prepare-wave's info/exclude does: agent files and runtime state never show as changes.
  writeFileSync(path.join(repo.dir, '.git', 'info', 'exclude'), '/.claude/worktrees/\n/.polywave-state/\n/.polywave-agent-brief.md\n/.polywave-ownership.json\n/.polywave-worktree-env\n');
  const implPath = repo.path(implRelative);
  const gitAt = (directory: string) => createGit(directory, { env: repo.env });
  const waveOf = (agent: string) => spec.waves.findIndex((agents) => agents.some((item) => item.id === agent)) + 1;
  const fixture: WaveFixture = {
    repo,
    implPath,
    spec,
    gitAt,
    worktree: (agent, wave = waveOf(agent)) => worktreePath(repo.dir, slug, wave, agent),
    branch: (agent, wave = waveOf(agent)) => branchName(slug, wave, agent),
    async startWave(wave) {
      const base = await repo.git.headCommit();
      for (const agent of spec.waves[wave - 1] ?? []) {
        await repo.git.worktreeAdd({ path: fixture.worktree(agent.id, wave), branch: fixture.branch(agent.id, wave), base, createBranch: true });
      }
      await editImpl(implPath, () => ({ edits: [{ path: ['waves', wave - 1, 'base_commit'], value: base }], outcome: undefined }));
      return base;
    },
    async work(agent, changes, options = {}) {
      const dir = fixture.worktree(agent, options.wave);
      const git = gitAt(dir);
      for (const [file, text] of Object.entries(changes)) {
        const full = path.join(dir, file);
        if (text === null) rmSync(full, { force: true });
        else {
          mkdirSync(path.dirname(full), { recursive: true });
          writeFileSync(full, text);
        }
      }
      await git.run(['add', '--all']);
      return git.commit({ message: options.message ?? `agent ${agent}: ${Object.keys(changes).join(', ')}`, allowEmpty: true });
    },
    async report(agent, input) {
      const built = buildCompletionReport(input, { agentId: agent });
      if (!built.ok) throw new Error(`bad report for ${agent}: ${built.findings.map((finding) => finding.message).join('; ')}`);
      await editImpl(implPath, () => ({ edits: [{ path: ['completion_reports', agent], value: built.report }], outcome: undefined }));
    },
    async complete(agent, changes, options = {}) {
      const commit = await fixture.work(agent, changes, options);
      const paths = Object.keys(changes);
      const created = options.created ?? paths.filter((file) => changes[file] !== null && !(spec.waves.flat().find((item) => item.id === agent)?.modify ?? []).includes(file));
      await fixture.report(agent, {
        status: 'complete',
        commit,
        branch: fixture.branch(agent, options.wave),
        worktree: fixture.worktree(agent, options.wave),
        files_created: created,
        files_changed: paths.filter((file) => !created.includes(file)),
        verification: 'PASS',
      });
      return commit;
    },
    manifest: () => parseImpl(readFileSync(implPath, 'utf8')).manifest!,
    finalize: (wave, options = {}) => finalizeWave({ implPath, wave, env: repo.env, gitAt, now: () => new Date('2026-05-12T10:00:00Z'), ...options }),
    head: () => repo.git.headCommit(),
  };
  return fixture;
}

/** Subjects of the merge commits reachable from HEAD (newest first). */
export async function mergeCommits(repo: TestRepo, range = 'HEAD'): Promise<string[]> {
  const out = await repo.run(['rev-list', '--merges', '--format=%s', '--no-commit-header', range]);
  return out.split('\n').filter((line) => line !== '');
}
