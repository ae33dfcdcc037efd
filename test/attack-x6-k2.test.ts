import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, linkSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer as createTcpServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installCommandFor, requireAgentsReady } from '../src/agents/model-preflight.js';
import { runPolywave } from './support/closing-fixture.js';
import { createWaveFixture, implRelative, type WaveFixture } from './support/wave-fixture.js';

// Outside attack attack-compat-6 (issue 13), helper K2:
// N4 — run-wave and retry (and every other launcher) run the same pre-check as run/run-scout before
//      anything changes: credentials, the backend's package, local model servers and custom base URLs.
// N3 — the claude-code backend's optional peer @anthropic-ai/claude-agent-sdk missing: AGENT_BACKEND_MISSING
//      with the exact install command (a global install needs `npm i -g --prefix <prefix>`). Real layout:
//      the built bundle copied to <tmp>/prefix/lib/node_modules/polywave, run by node.
// N5 — the set_completion tool refuses a commit git does not have on the branch and files the branch
//      did not change (the model sees the error); the final diagnosis names the failed check.

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const credentialNames = ['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'OPENAI_API_KEY', 'CLAUDE_CODE_OAUTH_TOKEN', 'CLAUDE_CODE_USE_BEDROCK', 'CLAUDE_CODE_USE_VERTEX', 'OPENAI_BASE_URL', 'ANTHROPIC_BASE_URL', 'POLYWAVE_MODEL'];

function cleanEnv(env: Readonly<Record<string, string | undefined>>, extra: Record<string, string> = {}): Record<string, string | undefined> {
  const copy: Record<string, string | undefined> = { ...env };
  for (const name of credentialNames) delete copy[name];
  return { ...copy, ...extra };
}

/** Everything a launch could change: HEAD, branches, worktrees, the working tree (the IMPL's state included). */
async function snapshot(fixture: WaveFixture): Promise<string> {
  const { repo } = fixture;
  return [await repo.run(['rev-parse', 'HEAD']), await repo.run(['branch', '-a']), await repo.run(['worktree', 'list', '--porcelain']), await repo.run(['status', '--porcelain', '--ignored']), readFileSync(fixture.implPath, 'utf8')].join('\n');
}

let refusedPort: number;
let listening: ReturnType<typeof createTcpServer>;
let listeningPort: number;

beforeAll(async () => {
  const probe = createTcpServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  refusedPort = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  // Accepts TCP and never speaks: the custom-base-URL check only connects.
  listening = createTcpServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
  listeningPort = (listening.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise<void>((resolve) => listening.close(() => resolve()));
});

describe('N4/N3: one launch pre-check (credentials, backend package, model servers)', () => {
  it('custom base URLs are connected to (refused → AGENT_MODEL_UNREACHABLE; accepting → passes); the SDK install command fits the layout', async () => {
    const openaiDown = requireAgentsReady([{ role: 'agent A', model: 'openai:gpt-4o' }], { OPENAI_API_KEY: 'k', OPENAI_BASE_URL: `http://127.0.0.1:${refusedPort}/v1` });
    await expect(openaiDown).rejects.toMatchObject({ code: 'AGENT_MODEL_UNREACHABLE', message: expect.stringMatching(new RegExp(`127\\.0\\.0\\.1:${refusedPort}/v1 does not answer \\(ECONNREFUSED\\) — needed by agent A \\(openai:gpt-4o\\); start that endpoint or fix \\(or unset\\) OPENAI_BASE_URL`)) });
    const claudeDown = requireAgentsReady([{ role: 'the Scout', model: undefined }], { CLAUDE_CODE_OAUTH_TOKEN: 't', ANTHROPIC_BASE_URL: `http://127.0.0.1:${refusedPort}` });
    await expect(claudeDown).rejects.toMatchObject({ code: 'AGENT_MODEL_UNREACHABLE', message: expect.stringContaining('ANTHROPIC_BASE_URL') });
    await expect(requireAgentsReady([{ role: 'agent A', model: 'anthropic:claude-sonnet-4-5' }], { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: `http://127.0.0.1:${listeningPort}` })).resolves.toHaveLength(1);
    // A dispatched role's package and servers are the worker's: only its credentials count here.
    await expect(requireAgentsReady([{ role: 'agent A', model: 'openai:gpt-4o', remote: true }], { OPENAI_API_KEY: 'k', OPENAI_BASE_URL: `http://127.0.0.1:${refusedPort}/v1` })).resolves.toHaveLength(1);
    // Outside round A21-36: "workers hold the model keys; the orchestrator needs none for dispatched agents" — a
    // dispatched role without credentials here passes (the worker checks its own); a role of this machine does not.
    await expect(requireAgentsReady([{ role: 'agent A', model: 'anthropic:claude-sonnet-4-5', remote: true }, { role: 'agent B', model: 'claude-code:claude-sonnet-4-5', remote: true }], {})).resolves.toMatchObject([{ backend: 'ai-sdk', provider: 'anthropic' }, { backend: 'claude-code' }]);
    await expect(requireAgentsReady([{ role: 'agent A', model: 'anthropic:claude-sonnet-4-5', remote: true }, { role: 'the critic', model: 'anthropic:claude-sonnet-4-5' }], {})).rejects.toMatchObject({ code: 'AGENT_CREDENTIALS_MISSING', message: expect.stringMatching(/^no model credentials — the critic would run/) });
    // The SDK resolves from this checkout (a devDependency).
    await expect(requireAgentsReady([{ role: 'agent A', model: 'claude-code:' }], { CLAUDE_CODE_OAUTH_TOKEN: 't' })).resolves.toHaveLength(1);
    expect(installCommandFor('@anthropic-ai/claude-agent-sdk', '/opt/pfx/lib/node_modules/polywave/dist/bundle/x.js')).toBe('npm i -g --prefix /opt/pfx @anthropic-ai/claude-agent-sdk');
    expect(installCommandFor('@anthropic-ai/claude-agent-sdk', '/home/u/app/node_modules/polywave/dist/bundle/x.js')).toBe('cd /home/u/app && npm i -D @anthropic-ai/claude-agent-sdk');
  });

  it('run-wave and retry: an unreachable Ollama, no credentials — exit 2, one coded line, repository unchanged', async () => {
    const fixture = await createWaveFixture({ waves: [[{ id: 'A', files: ['src/a.ts'] }, { id: 'B', files: ['src/b.ts'] }]], state: 'WAVE_PENDING', testCommand: 'true', lintCommand: 'true' });
    const before = await snapshot(fixture);
    const ollamaDown = cleanEnv(fixture.repo.env, { OLLAMA_HOST: `127.0.0.1:${refusedPort}` });
    const cases: Array<[string[], Record<string, string | undefined>, RegExp]> = [
      [['run-wave', implRelative, '--wave', '1', '--model', 'ollama:llama3'], ollamaDown, /error\[AGENT_MODEL_UNREACHABLE\]: http:\/\/127\.0\.0\.1:\d+\/v1 does not answer \(ECONNREFUSED\) — needed by agent A \(ollama:llama3\), agent B/],
      [['retry', implRelative, '--wave', '1', '--model', 'ollama:llama3'], ollamaDown, /error\[AGENT_MODEL_UNREACHABLE\]/],
      [['retry', implRelative, '--wave', '1', '--agent', 'B'], cleanEnv(fixture.repo.env), /error\[AGENT_CREDENTIALS_MISSING\]: no model credentials — agent B would run on the claude-code backend/],
    ];
    for (const [args, env, message] of cases) {
      const result = await runPolywave(args, { cwd: fixture.repo.dir, env });
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(2);
      expect(result.stderr, args.join(' ')).toMatch(message);
      expect(result.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
      expect(await snapshot(fixture), args.join(' ')).toBe(before);
    }
  });

  it('installed globally without the SDK: run-wave refuses with AGENT_BACKEND_MISSING and the --prefix install command, nothing changed', async () => {
    expect(existsSync(path.join(repoRoot, 'dist', 'bundle', 'main.js')), 'npm run build first').toBe(true);
    const fixture = await createWaveFixture({ waves: [[{ id: 'A', files: ['src/a.ts'] }]], state: 'WAVE_PENDING', testCommand: 'true', lintCommand: 'true' });
    // The package as `npm install -g` lays it out, minus the optional peer (no node_modules above it).
    const prefix = fixture.repo.sibling('prefix');
    const installed = path.join(prefix, 'lib', 'node_modules', 'polywave');
    mkdirSync(installed, { recursive: true });
    writeFileSync(path.join(installed, 'package.json'), JSON.stringify({ name: 'polywave', version: '0.0.0', type: 'module' }));
    // Its files (hard links where the file system allows: a copy of 300 chunks costs seconds).
    const place = (from: string, to: string) => {
      try {
        linkSync(from, to);
      } catch {
        copyFileSync(from, to);
      }
    };
    mkdirSync(path.join(installed, 'dist', 'bundle'), { recursive: true });
    mkdirSync(path.join(installed, 'bin'));
    for (const name of readdirSync(path.join(repoRoot, 'dist', 'bundle'))) if (name.endsWith('.js')) place(path.join(repoRoot, 'dist', 'bundle', name), path.join(installed, 'dist', 'bundle', name));
    place(path.join(repoRoot, 'bin', 'polywave.js'), path.join(installed, 'bin', 'polywave.js'));
    // Its dependencies (links to this checkout's), every one but the optional peer.
    const linkAll = (from: string, to: string) => {
      mkdirSync(to, { recursive: true });
      for (const name of readdirSync(from)) {
        if (name === '.bin' || name === 'claude-agent-sdk' || name.startsWith('.')) continue;
        if (name.startsWith('@')) linkAll(path.join(from, name), path.join(to, name));
        else symlinkSync(path.join(from, name), path.join(to, name));
      }
    };
    linkAll(path.join(repoRoot, 'node_modules'), path.join(installed, 'node_modules'));
    const before = await snapshot(fixture);
    const run = spawnSync(process.execPath, [path.join(installed, 'bin', 'polywave.js'), 'run-wave', implRelative, '--wave', '1'], {
      cwd: fixture.repo.dir,
      env: cleanEnv(fixture.repo.env, { CLAUDE_CODE_OAUTH_TOKEN: 'sk-ant-oat-x', POLYWAVE_NO_CACHE: '1' }) as NodeJS.ProcessEnv,
      encoding: 'utf8',
    });
    expect(run.status, run.stderr).toBe(2);
    expect(run.stderr).toMatch(/^polywave: error\[AGENT_BACKEND_MISSING\]: agent A would run on the claude-code backend, which needs @anthropic-ai\/claude-agent-sdk/);
    expect(run.stderr).toContain(`Install it: npm i -g --prefix ${prefix} @anthropic-ai/claude-agent-sdk`);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(await snapshot(fixture)).toBe(before);
  });
});

describe('N5: set_completion and git disagree', () => {
  it('the tool refuses a bogus commit and unchanged files (the model sees it); the diagnosis names the failed check', async () => {
    const fixture = await createWaveFixture({ waves: [[{ id: 'A', files: ['src/a.ts'] }, { id: 'B', files: ['src/b.ts'] }, { id: 'C', files: ['src/c.ts'] }]], state: 'WAVE_PENDING', testCommand: 'true', lintCommand: 'true' });
    const script = fixture.repo.sibling('script.yaml');
    const bogus = 'deadbeefdeadbeefdeadbeefdeadbeefdeadbeef';
    writeFileSync(
      script,
      [
        'version: 1',
        'agents:',
        '  A: {steps: [{write: {path: src/a.ts, content: "export const a = 1;\\n"}}, {commit: "a"}, {tool: {name: set_completion, input: {status: complete, verification: PASS, files_created: [./src/a.ts]}}, expect: ok}]}',
        `  B: {steps: [{write: {path: src/b.ts, content: "export const b = 1;\\n"}}, {commit: "b"}, {tool: {name: set_completion, input: {status: complete, verification: PASS, commit: "${bogus}"}}, expect: error}, {tool: {name: set_completion, input: {status: complete, verification: PASS, files_created: [src/zzz.ts]}}, expect: error}]}`,
        '  C: {steps: [{write: {path: src/c.ts, content: "export const c = 1;\\n"}}, {commit: "c"}]}',
        '',
      ].join('\n'),
    );
    // C: a complete report already on record (the CLI takes a commit as given) that E42 refuses: C is relaunched and files none.
    const seeded = await runPolywave(['set-completion', implRelative, '--agent', 'C', '--status', 'complete', '--verification', 'PASS', '--commit', bogus, '--branch', 'polywave/demo/wave1-agent-C'], { cwd: fixture.repo.dir, env: cleanEnv(fixture.repo.env) });
    expect(seeded.code, seeded.stderr).toBe(0);
    const result = await runPolywave(['run-wave', implRelative, '--wave', '1', '--model', `script:${script}`, '--no-finalize', '--skip-critic'], { cwd: fixture.repo.dir, env: cleanEnv(fixture.repo.env) });
    const reports = fixture.manifest().completion_reports ?? {};
    expect(reports.A, result.stderr).toMatchObject({ status: 'complete' });
    expect(reports.B).toBeUndefined();
    const explanation = (agent: string) => result.stderr.split('\n').find((line) => line.startsWith(`  ${agent}: `)) ?? '';
    expect(result.code, result.stderr).toBe(1);
    expect(explanation('B')).toMatch(/stopped without an accepted completion report \(E42\/I4\): its set_completion call was refused: Completion report refused \(E42_REPORT_CONTRADICTS_GIT\): not changed by your commits \(not in git diff [0-9a-f]{12}\.\.HEAD\): src\/zzz\.ts/);
    expect(explanation('B')).not.toContain('no completion report in the IMPL doc');
    expect(explanation('C')).toContain('stopped without an accepted completion report (E42/I4): the completion report on record is from before this attempt; it filed none');
    expect(explanation('C')).not.toContain('no completion report in the IMPL doc');
  });
});
