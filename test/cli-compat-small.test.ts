import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { main } from '../src/cli/main.js';
import type { CommandIo } from '../src/cli/io.js';
import { createTestRepo } from './support/git-repo.js';

// Issue 13, outside attack F6/F7 (attack-compat-5): scan-stubs skips a file it cannot read (as Go)
// instead of failing the whole scan; the global --repo-dir is the repository for the commands that
// look for docs/IMPL, docs/PROGRAM or a default root — from any working directory. In-process calls
// (no node start), one real repository.

async function call(args: string[], cwd: string, env: Record<string, string | undefined>): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: CommandIo = { cwd, env, now: () => new Date(), stdout: (text) => (stdout += text), stderr: (text) => (stderr += text), readStdin: async () => '' };
  return { code: await main(args, io), stdout, stderr };
}

const manifest = `title: Greeting
feature_slug: greeting
verdict: SUITABLE
test_command: "true"
lint_command: "true"
state: WAVE_PENDING
file_ownership:
  - {file: src/a.ts, agent: A, wave: 1, action: new}
waves:
  - number: 1
    agents:
      - {id: A, task: a, files: [src/a.ts]}
`;
const program = 'title: Suite\nprogram_slug: suite\nstate: PLANNING\nimpls:\n  - {slug: greeting, title: Greeting, tier: 1, status: pending}\ntiers:\n  - {number: 1, impls: [greeting]}\n';

describe('scan-stubs and the global --repo-dir (issue 13, F6/F7)', () => {
  it('scan-stubs: missing, directory and binary files are skipped and listed; the others are scanned; exit 0', async () => {
    const repo = await createTestRepo({ files: { 'src/stub.ts': 'export const a = 1; // TODO finish\n' } });
    writeFileSync(repo.path('blob.bin'), Buffer.from([0x54, 0x4f, 0x44, 0x4f, 0, 1, 2]));
    const run = await call(['scan-stubs', 'src/gone.ts', 'src', 'blob.bin', 'src/stub.ts'], repo.dir, repo.env);
    expect(run.code, run.stderr).toBe(0);
    const out = JSON.parse(run.stdout) as { hits: Array<{ file: string; line: number }>; skipped: Array<{ file: string; code: string; reason: string }> };
    expect(out.hits).toEqual([expect.objectContaining({ file: 'src/stub.ts', line: 1, pattern: 'TODO' })]);
    expect(out.skipped).toEqual([
      { file: 'src/gone.ts', code: 'N005_IMPL_NOT_FOUND', reason: 'no such file' },
      { file: 'src', code: 'X002_FILE_READ', reason: 'src is a directory, not a file' },
      { file: 'blob.bin', code: 'V046_PARSE_ERROR', reason: 'blob.bin contains binary content (NUL byte at offset 4)' },
    ]);
    // Nothing skipped: no `skipped` key (Go's shape); only missing files: hits [] and exit 0.
    expect(Object.keys(JSON.parse((await call(['scan-stubs', 'src/stub.ts'], repo.dir, repo.env)).stdout) as object)).toEqual(['hits']);
    const none = await call(['scan-stubs', 'gone-1.ts', 'gone-2.ts'], repo.dir, repo.env);
    expect([none.code, (JSON.parse(none.stdout) as { hits: unknown[] }).hits]).toEqual([0, []]);
    if (process.getuid?.() !== 0) {
      writeFileSync(repo.path('closed.ts'), '// TODO\n');
      chmodSync(repo.path('closed.ts'), 0o000);
      const closed = JSON.parse((await call(['scan-stubs', 'closed.ts'], repo.dir, repo.env)).stdout) as { skipped: Array<{ code: string }> };
      expect(closed.skipped[0]?.code).toBe('X002_FILE_READ');
    }
  });

  it('scan-stubs on a file with 200,000 hits lists them all (outside attack N11: INTERNAL "Maximum call stack size exceeded" from 150,000)', async () => {
    const repo = await createTestRepo({ files: { 'gen.ts': 'x = 1 // TODO\n'.repeat(200_000) } });
    const run = await call(['scan-stubs', 'gen.ts'], repo.dir, repo.env);
    expect(run.code, run.stderr.slice(0, 300)).toBe(0);
    expect((JSON.parse(run.stdout) as { hits: unknown[] }).hits).toHaveLength(200_000);
  });

  it('resolve-impl, list-impls, list-programs, analyze-suitability use --repo-dir from another directory', async () => {
    const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-greeting.yaml': manifest, 'docs/PROGRAM/PROGRAM-suite.yaml': program, 'REQ.md': '## F1: greeting\nLocation: src/a.ts\n', 'src/a.ts': 'export function greet(): string {\n  return "hi";\n}\n' } });
    const elsewhere = repo.sibling('elsewhere');
    mkdirSync(elsewhere);
    const impl = repo.path('docs/IMPL/IMPL-greeting.yaml');
    for (const position of ['before', 'after'] as const) {
      const withRepo = (args: string[]) => (position === 'before' ? ['--repo-dir', repo.dir, ...args] : [...args, '--repo-dir', '../repo']);
      const resolved = await call(withRepo(['resolve-impl', '--impl', 'greeting']), elsewhere, repo.env);
      expect(resolved.code, resolved.stderr).toBe(0);
      expect(JSON.parse(resolved.stdout)).toMatchObject({ impl_path: impl, slug: 'greeting', resolution_method: 'explicit-slug' });
      const auto = await call(withRepo(['resolve-impl']), elsewhere, repo.env);
      expect(JSON.parse(auto.stdout)).toMatchObject({ impl_path: impl, resolution_method: 'auto-select', pending_count: 1 });
      const filename = await call(withRepo(['resolve-impl', '--impl', 'IMPL-greeting.yaml']), elsewhere, repo.env);
      expect(JSON.parse(filename.stdout)).toMatchObject({ impl_path: impl, resolution_method: 'explicit-filename' });
      const listed = await call(withRepo(['list-impls']), elsewhere, repo.env);
      expect((JSON.parse(listed.stdout) as { impls: Array<{ path: string }> }).impls.map((item) => item.path)).toEqual([impl]);
      const programs = await call(withRepo(['list-programs']), elsewhere, repo.env);
      expect((JSON.parse(programs.stdout) as Array<{ slug: string }>).map((item) => item.slug)).toEqual(['suite']);
      const suitability = await call(withRepo(['analyze-suitability', '--requirements', '../repo/REQ.md']), elsewhere, repo.env);
      expect(suitability.code, suitability.stderr).toBe(0);
      // src/a.ts is found (in the repository, not in the working directory): not TODO.
      expect((JSON.parse(suitability.stdout) as { pre_implementation: { item_status: Array<{ status: string }> } }).pre_implementation.item_status[0]?.status).not.toBe('TODO');
    }
    // A relative path is still the current directory's (as Go), an explicit --dir too.
    const relative = await call(['--repo-dir', repo.dir, 'resolve-impl', '--impl', 'docs/IMPL/IMPL-greeting.yaml'], elsewhere, repo.env);
    expect([relative.code, relative.stderr]).toEqual([2, expect.stringContaining('N005_IMPL_NOT_FOUND')]);
    const explicitDir = await call(['--repo-dir', repo.dir, 'list-impls', '--dir', 'docs/IMPL'], elsewhere, repo.env);
    expect(JSON.parse(explicitDir.stdout)).toEqual({ impls: [] });
    // Without --repo-dir: the current directory, as before.
    expect((JSON.parse((await call(['list-impls'], repo.dir, repo.env)).stdout) as { impls: unknown[] }).impls).toHaveLength(1);
  });
});
