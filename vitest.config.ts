import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defineConfig } from 'vitest/config';

const include = ['src/**/*.test.ts', 'test/**/*.test.ts'];
// Sample projects the analysis tests copy into temporary repositories (their tests are data).
const exclude = ['**/node_modules/**', 'test/fixtures/**'];

/**
 * Test files that need a process of their own: they mock modules (`vi.mock` replaces a module only
 * for importers loaded after it), change process-wide state (`process.env`, the working directory,
 * the umask), or check module-level state from a fresh start (a lazily loaded parser, a helper process
 * started once per process) — marked `// vitest: own process` in the file. Every other file shares its
 * worker process with the files before it (`isolate: false`): no Node start and no re-import of the
 * same modules per file. Measured on 2 cores (the whole suite, 320 files): 587 s against 634 s, the
 * imports 36 s against 121 s; on a machine where a process start is dear (the CI's), more.
 */
const needsOwnProcess = /\bvi\.(?:mock|doMock|unmock|spyOn|stubEnv|stubGlobal|resetModules)\b|process\.env(?:\.[A-Za-z_$][\w$]*|\[[^\]]+\])?\s*=(?!=)|delete\s+process\.env|Object\.assign\(\s*process\.env|process\.chdir\(|process\.umask\(\s*[^)\s]|\/\/ vitest: own process/;
const ownProcess = ['src', 'test']
  .flatMap((top) => readdirSync(path.join(import.meta.dirname, top), { recursive: true, encoding: 'utf8' }).map((file) => `${top}/${file.split(path.sep).join('/')}`))
  .filter((file) => file.endsWith('.test.ts') && !file.startsWith('test/fixtures/') && !file.includes('/node_modules/'))
  .filter((file) => needsOwnProcess.test(readFileSync(path.join(import.meta.dirname, file), 'utf8')))
  .sort();

/**
 * Which files may share: for now the unit tests beside the sources (src/). The integration tests (test/) were
 * run shared too — the whole suite passed that way, 801 CPU-s against 904 — but two clean-clone CI runs each had
 * one failure in a test/ file under sharing (a CLI child that printed nothing, git's own race between two
 * concurrent worktree adds) whose cause was not pinned down before this stop: test/ keeps a process per file until
 * it is. POLYWAVE_TEST_SHARE=all shares test/ as well.
 */
const shareAll = process.env.POLYWAVE_TEST_SHARE === 'all';
const sharedInclude = shareAll ? include : ['src/**/*.test.ts'];
const ownInclude = shareAll ? [] : ['test/**/*.test.ts'];

/**
 * Files that run the built-in `cli:claude` / `cli:codex` or the `claude-code` backend in the OS sandbox: such an agent's
 * run ends (SANDBOX_VIEW_STALE, relaunched by run-wave) when a path its sandbox cannot hide appears meanwhile — a
 * scratch parent another run registers (a TMPDIR of its own, as many sandbox tests set) included. Run together with
 * those, they would end each other's agents: they run last, one file at a time.
 */
const agentBackendFiles = [
  'test/attack-x6-k2.test.ts',
  'test/claude-code-backend.test.ts',
  'test/e40-events.test.ts',
  'test/sandbox-appeared-later-backends.test.ts',
  'test/sandbox-claude-code.test.ts',
  'test/sandbox-cli-abort.test.ts',
  'test/sandbox-cli-claude-settings.test.ts',
  'test/sandbox-cli-claude.test.ts',
  'test/sandbox-cli-codex.test.ts',
  'test/sandbox-cli-codex-hook-killed.test.ts',
  'test/sandbox-cli-hook-killed.test.ts',
  'test/sandbox-escape-claude-code.test.ts',
  'test/sandbox-no-datagram-filter.test.ts',
  'test/scout-readonly-backends.test.ts',
];

export default defineConfig({
  test: {
    reporters: ['default', './test/support/count-reporter.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Test files at once: vitest's default (cores − 1) is ONE on a 2-core CI box. Most tests wait on
    // chains of short child processes (git, the CLI), so a file keeps well under a core busy: measured on
    // 2 cores (process accounting over the whole suite), two files at once left ~30% of the CPU idle;
    // three finish the suite ~5% sooner (1473 s against 1536–1650 s). POLYWAVE_TEST_WORKERS overrides.
    maxWorkers: Number(process.env.POLYWAVE_TEST_WORKERS) || Math.max(3, os.availableParallelism() - 1),
    // The commands the tests run record events (issue 14): into a store of this test run, never the
    // user's per-user store. Tests about the store set their own POLYWAVE_EVENTS_DB.
    // Dispatch over Redis needs a key shared by the orchestrator and its workers (outside round A21-43); the tests' workers
    // and CLI runs inherit this one (test/dispatch-support.ts signs with it where a test plays a worker or orchestrator).
    env: { POLYWAVE_EVENTS_DB: process.env.POLYWAVE_EVENTS_DB ?? path.join(os.tmpdir(), `polywave-test-events-${process.pid}.db`), POLYWAVE_DISPATCH_KEY: process.env.POLYWAVE_DISPATCH_KEY ?? `polywave-test-dispatch-key-${'0123456789abcdef'.repeat(2)}` },
    projects: [
      { extends: true, test: { name: 'shared-process', include: sharedInclude, exclude: [...exclude, ...ownProcess, ...agentBackendFiles], isolate: false, setupFiles: ['./test/support/shared-process-guard.ts'] } },
      { extends: true, test: { name: 'own-process', include: [...ownProcess, ...ownInclude], exclude: [...exclude, ...agentBackendFiles], isolate: true } },
      { extends: true, test: { name: 'agent-backends', include: agentBackendFiles, exclude, isolate: true, fileParallelism: false, sequence: { groupOrder: 1 } } },
    ],
  },
});
