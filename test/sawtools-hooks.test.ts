import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { binPath } from './support/cli.js';
import { createTestRepo, type TestRepo } from './support/git-repo.js';
import { makeTempDir } from './support/temp.js';
import { childOutput } from './support/child-output.js';

// The upstream Claude Code skill (blackwell-systems/scout-and-wave,
// implementations/claude-code/hooks/) calls the CLI as `sawtools` from its hooks and decides on
// exit codes and on what it parses with jq. These tests run the hooks' own command lines, through
// a `sawtools` on PATH (package.json installs that bin), in real repositories, and check the
// answers the hooks act on (issue 13, "what it must show" 3). Run `npm run build` first.

const hasJq = (() => {
  try {
    execFileSync('jq', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

let binDir: string;
beforeAll(() => {
  binDir = makeTempDir('polywave-sawtools-bin-');
  symlinkSync(binPath, path.join(binDir, 'sawtools'));
});

/** Runs a bash script with `sawtools` first on PATH; `stdin` feeds the hook's input JSON. */
function hook(script: string, options: { cwd: string; env?: Record<string, string | undefined>; stdin?: string }): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn('bash', ['-c', `set -uo pipefail\n${script}`], {
    cwd: options.cwd,
    env: { ...process.env, ...options.env, PATH: `${binDir}${path.delimiter}${process.env.PATH ?? ''}`, NO_COLOR: '1' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const output = childOutput(child);
  child.stdin.end(options.stdin ?? '');
  return output;
}

/** A Scout's fresh IMPL: SCOUT_PENDING, 3 agents in wave 1 (E37 critic still to come), a pending scaffold, a gate type `--fix` repairs. */
const scoutImpl = `title: Greeting CLI
feature_slug: greet
verdict: SUITABLE
test_command: npm test
lint_command: npm run lint
state: SCOUT_PENDING
file_ownership:
  - {file: src/types.ts, agent: Scaffold, wave: 0, action: new}
  - {file: src/cli.ts, agent: A, wave: 1, action: modify}
  - {file: src/plain.ts, agent: B, wave: 1, action: new}
  - {file: src/json.ts, agent: C, wave: 1, action: new}
  - {file: src/registry.ts, agent: D, wave: 2, action: new, depends_on: [A, B, C]}
interface_contracts:
  - {name: Formatter, description: formats, definition: "export interface Formatter { format(name: string): string }", location: src/types.ts}
scaffolds:
  - {file_path: src/types.ts, contents: "export interface Formatter { format(name: string): string }", status: pending}
waves:
  - number: 1
    agents:
      - {id: A, task: "Make \`greet\` in src/cli.ts (around line 1) take a formatter.", files: [src/cli.ts]}
      - {id: B, task: Write the plain formatter in src/plain.ts., files: [src/plain.ts]}
      - {id: C, task: Write the JSON formatter in src/json.ts., files: [src/json.ts]}
  - number: 2
    agents:
      - {id: D, task: "Register the formatters of Wave 1 Agent B and Wave 1 Agent C in src/registry.ts.", files: [src/registry.ts], dependencies: [A, B, C]}
quality_gates:
  level: standard
  gates:
    - {type: Test, command: npm test, required: true}
`;

async function scoutRepo(text = scoutImpl): Promise<{ repo: TestRepo; impl: string }> {
  const repo = await createTestRepo({ files: { 'src/cli.ts': 'export function greet(name: string): string {\n  return `Hello, ${name}`;\n}\n' } });
  repo.write('docs/IMPL/IMPL-greet.yaml', text); // the Scout's output is not committed yet
  return { repo, impl: repo.path('docs/IMPL/IMPL-greet.yaml') };
}

// validate_agent_completion, `scout)` case (lines 445–476 of the hook).
const scoutCompletionHook = `
impl_path="$1"
if command -v sawtools &>/dev/null; then
  validate_output=$(sawtools pre-wave-validate "$impl_path" --wave 1 --fix 2>&1) || {
    echo "E42: Scout IMPL doc failed pre-wave validation: \${impl_path}" >&2
    echo "$validate_output" >&2
    exit 2
  }
  brief_output=$(sawtools validate-briefs "$impl_path" 2>&1) || true
  brief_valid=$(echo "$brief_output" | jq -r '.valid // empty' 2>/dev/null)
  if [[ "$brief_valid" == "false" ]]; then
    echo "E42: Scout IMPL doc failed brief validation: \${impl_path}" >&2
    echo "$brief_output" | jq -r '
      .agent_results | to_entries[] |
      .key as $agent |
      .value.issues[]? |
      select(.severity == "error") |
      "  Agent " + $agent + ": [" + .check + "] " + .description
    ' 2>/dev/null >&2 || echo "$brief_output" >&2
    exit 2
  fi
fi
exit 0
`;

// validate_impl_on_write (PostToolUse on Write|Edit), steps 1–2.
const implOnWriteHook = `
INPUT=$(cat)
FILE_PATH=$(echo "$INPUT" | jq -r '.tool_input.file_path // empty' 2>/dev/null)
case "$FILE_PATH" in
  */docs/IMPL/complete/*) exit 0 ;;
  */docs/IMPL/IMPL-*.yaml|*/docs/IMPL/IMPL-*.yml) ;;
  *) exit 0 ;;
esac
if ! command -v sawtools &>/dev/null; then exit 0; fi
RESULT=$(sawtools validate "$FILE_PATH" 2>&1) || true
VALID=$(echo "$RESULT" | jq -r '.valid // empty' 2>/dev/null)
if [[ "$VALID" != "true" ]]; then
  ERROR_COUNT=$(echo "$RESULT" | jq -r '.error_count // 0' 2>/dev/null)
  ERRORS=$(echo "$RESULT" | jq -r '.errors[]?.message // empty' 2>/dev/null)
  echo "BLOCKED: IMPL structural validation failed ($ERROR_COUNT errors). Fix these before continuing:" >&2
  echo "$ERRORS" >&2
  exit 2
fi
BRIEF_RESULT=$(sawtools validate-briefs "$FILE_PATH" 2>&1) || true
BRIEF_VALID=$(echo "$BRIEF_RESULT" | jq -r '.valid // empty' 2>/dev/null)
if [[ "$BRIEF_VALID" == "false" ]]; then
  echo "BLOCKED: IMPL brief validation failed. Fix these before continuing:" >&2
  exit 2
fi
exit 0
`;

describe.skipIf(!hasJq)('the scout-and-wave hooks through a `sawtools` name', () => {
  it('Scout completion (E42): a valid Scout IMPL passes pre-wave-validate --fix and validate-briefs; the fix is written', async () => {
    const { repo, impl } = await scoutRepo();
    const result = await hook(`${scoutCompletionHook}`.replace('impl_path="$1"', `impl_path=${JSON.stringify(impl)}`), { cwd: repo.dir, env: repo.env });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
    expect(readFileSync(impl, 'utf8')).toMatch(/type: test/);
  });

  it('Scout completion (E42): an I1 violation blocks the Scout (exit 2) with the validation output', async () => {
    const { repo, impl } = await scoutRepo(scoutImpl.replace('{file: src/json.ts, agent: C, wave: 1, action: new}', '{file: src/json.ts, agent: C, wave: 1, action: new}\n  - {file: src/cli.ts, agent: C, wave: 1, action: modify}'));
    const result = await hook(scoutCompletionHook.replace('impl_path="$1"', `impl_path=${JSON.stringify(impl)}`), { cwd: repo.dir, env: repo.env });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`E42: Scout IMPL doc failed pre-wave validation: ${impl}`);
    expect(result.stderr).toContain('V002_DISJOINT_OWNERSHIP');
  });

  it('Scout completion (E42): a wrong "Wave N Agent X" reference — validate-briefs says valid:false with the issue the hook formats', async () => {
    const { repo, impl } = await scoutRepo(scoutImpl.replace('Wave 1 Agent C', 'Wave 2 Agent C'));
    const script = (jqValid: string) => scoutCompletionHook.replace('impl_path="$1"', `impl_path=${JSON.stringify(impl)}`).replace(`jq -r '.valid // empty'`, jqValid);
    // The hook as written: jq's `//` treats false like null, so `.valid // empty` is empty for
    // valid:false and the hook never blocks on briefs (with the Go tool as with ours).
    const asWritten = await hook(script(`jq -r '.valid // empty'`), { cwd: repo.dir, env: repo.env });
    expect(asWritten.code, asWritten.stderr).toBe(0);
    // What the hook means to do (read .valid as it is): blocked, with the issue line it formats.
    const intended = await hook(script(`jq -r '.valid | tostring'`), { cwd: repo.dir, env: repo.env });
    expect(intended.code).toBe(2);
    expect(intended.stderr).toContain('E42: Scout IMPL doc failed brief validation');
    // The hook's issue listing (its `2>/dev/null >&2` sends it to /dev/null; here to stdout).
    const listing = await hook(
      `sawtools validate-briefs "$IMPL" 2>&1 | jq -r '.agent_results | to_entries[] | .key as $agent | .value.issues[]? | select(.severity == "error") | "  Agent " + $agent + ": [" + .check + "] " + .description'`,
      { cwd: repo.dir, env: { ...repo.env, IMPL: impl } },
    );
    expect(listing.stdout).toBe("  Agent D: [wave_reference_invalid] brief says 'Wave 2 Agent C' but Agent C is in Wave 1 — update this reference\n");
  });

  it('validate_impl_on_write: a valid IMPL passes silently; a broken one is BLOCKED with its error count and messages', async () => {
    const { repo, impl } = await scoutRepo(scoutImpl.replace('type: Test', 'type: test'));
    const ok = await hook(implOnWriteHook, { cwd: repo.dir, env: repo.env, stdin: JSON.stringify({ tool_input: { file_path: impl } }) });
    expect(ok).toMatchObject({ code: 0, stderr: '' });
    writeFileSync(impl, scoutImpl.replace('type: Test', 'type: test').replace('id: B,', 'id: b,'));
    const blocked = await hook(implOnWriteHook, { cwd: repo.dir, env: repo.env, stdin: JSON.stringify({ tool_input: { file_path: impl } }) });
    expect(blocked.code).toBe(2);
    expect(blocked.stderr).toMatch(/^BLOCKED: IMPL structural validation failed \([1-9]\d* errors\)/);
    expect(blocked.stderr).toContain('agent ID "b"');
  });

  it('validate_agent_launch (H5): `sawtools validate` exit status decides the launch', async () => {
    const { repo, impl } = await scoutRepo(scoutImpl.replace('type: Test', 'type: test'));
    const script = `if ! sawtools validate "$IMPL" &>/dev/null; then echo "H5: IMPL doc validation failed." >&2; exit 2; fi; exit 0`;
    expect((await hook(script, { cwd: repo.dir, env: { ...repo.env, IMPL: impl } })).code).toBe(0);
    writeFileSync(impl, scoutImpl.replace('type: Test', 'type: test').replace('waves:', 'waves:\n  - number: 3\n    agents: []\n'));
    expect((await hook(script, { cwd: repo.dir, env: { ...repo.env, IMPL: impl } })).code).toBe(2);
  });

  it('wave agent stop (E42/E20): check-completion finds the report, emit_agent_completion reads status and files_changed, scan-stubs counts stubs', async () => {
    const { repo, impl } = await scoutRepo(scoutImpl.replace('state: SCOUT_PENDING', 'state: WAVE_EXECUTING'));
    await repo.commitAll('scout output');
    const worktree = repo.sibling('wt-a');
    await repo.git.worktreeAdd({ path: worktree, branch: 'saw/greet/wave1-agent-A', base: 'HEAD', createBranch: true });
    writeFileSync(path.join(worktree, 'src/cli.ts'), 'export function greet(name: string): string {\n  // TODO: use the formatter\n  return name;\n}\n');
    const missing = await hook(`if sawtools check-completion "$IMPL" --agent A &>/dev/null; then exit 0; fi; echo "E42: Agent A has no completion report" >&2; exit 2`, { cwd: repo.dir, env: { ...repo.env, IMPL: impl } });
    expect(missing.code).toBe(2);

    const report = await hook(`sawtools set-completion "$IMPL" --agent A --status complete --commit "$(git -C "$WT" rev-parse HEAD)" --branch saw/greet/wave1-agent-A --files-changed src/cli.ts --verification PASS >/dev/null`, { cwd: repo.dir, env: { ...repo.env, IMPL: impl, WT: worktree } });
    expect(report.code, report.stderr).toBe(0);
    const emit = await hook(
      `check_output=$(sawtools check-completion "$IMPL" --agent A 2>/dev/null || true)
status=$(echo "$check_output" | jq -r '.status // "unknown"')
files_changed=$(echo "$check_output" | jq -c '.files_changed // []')
echo "$status $files_changed"`,
      { cwd: repo.dir, env: { ...repo.env, IMPL: impl } },
    );
    expect(emit.stdout.trim()).toBe('complete ["src/cli.ts"]');

    const stubs = await hook(
      `stub_output=$(sawtools scan-stubs "$WT/src/cli.ts" 2>/dev/null || true)
stub_count=$(echo "$stub_output" | jq -r '.hits | length' 2>/dev/null || echo "0")
echo "$stub_count"
echo "$stub_output" | jq -r '.hits[] | "  \\(.file):\\(.line): \\(.context)"'`,
      { cwd: worktree, env: { ...repo.env, WT: worktree } },
    );
    // polywave prints the path relative to the working directory (Go: as given).
    expect(stubs.stdout.trim().split('\n')).toEqual(['1', '  src/cli.ts:2: // TODO: use the formatter']);
  });

  it('validate_agent_isolation (E12): verify-isolation passes in the agent worktree on its saw/ branch, fails elsewhere', async () => {
    const { repo } = await scoutRepo();
    const worktree = repo.path('.claude/worktrees/saw/greet/wave1-agent-A');
    mkdirSync(path.dirname(worktree), { recursive: true });
    await repo.git.worktreeAdd({ path: worktree, branch: 'saw/greet/wave1-agent-A', base: 'HEAD', createBranch: true });
    const script = `expected_branch="saw/greet/wave1-agent-A"
if ! sawtools verify-isolation --cwd "$(pwd)" --branch "$expected_branch" >/dev/null 2>&1; then
  echo "E12 violation: Agent isolation verification failed" >&2
  exit 2
fi
exit 0`;
    expect((await hook(script, { cwd: worktree, env: repo.env })).code).toBe(0);
    const outside = await hook(script, { cwd: repo.dir, env: repo.env });
    expect(outside.code).toBe(2);
    expect(outside.stderr).toContain('E12 violation');
  });
});
