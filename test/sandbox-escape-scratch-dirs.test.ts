/**
 * ESCAPE REPRODUCTION (outside attack 2026-12-02, #12), now the regression test of its fix: agents
 * all run as one uid, and each keeps a private HOME/TMPDIR (`polywave-agent-<id>-XXXXXX/home` and `/tmp`) where
 * Claude Code keeps its transcripts (CLAUDE_CONFIG_DIR) and Codex its sessions. Agent B's was
 * readable from agent A's sandbox (`cat …/b-private.txt` printed it). Now every scratch directory is
 * made under one per-user parent (src/sandbox/scratch-dirs.ts) which both plans make unreadable, the
 * own HOME/TMPDIR bound back: through agent A's real tool executor, B's directory made before A's
 * sandbox started, C's made after it (the executor is one long-lived sandbox), and one in the place
 * older versions used are all unreadable (and not listed), while A still reads and writes its own.
 * A quality gate cannot read them either.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJail } from '../src/agents/jail/jail.js';
import { buildAgentSandboxPlan, createToolExecutor, type ToolExecutor } from '../src/agents/sandbox/index.js';
import { createAgentTools, runToolCall } from '../src/agents/tools/index.js';
import type { ToolContext } from '../src/agents/tools/types.js';
import { runGates } from '../src/gates/run-gates.js';
import { makeScratchDir, resetSandbox, sandboxStatus, scratchParent } from '../src/sandbox/index.js';
import { createAgentLayout, type AgentLayout } from './support/agent-layout.js';

const available = (await sandboxStatus()).available;
const branch = 'polywave/scratch/wave1-agent-A';
const tools = new Map(createAgentTools().map((tool) => [tool.name, tool]));

let layout: AgentLayout;
let executor: ToolExecutor | undefined;
let context: ToolContext;
const made: string[] = [];

/** A peer's scratch directory with a private note in its TMPDIR and a "transcript" in its HOME. */
function plant(directory: string, secret: string): { note: string; transcript: string } {
  made.push(directory);
  const note = path.join(directory, 'tmp', 'private.txt');
  const transcript = path.join(directory, 'home', '.claude', 'projects', 'session.jsonl');
  mkdirSync(path.dirname(note), { recursive: true });
  mkdirSync(path.dirname(transcript), { recursive: true });
  writeFileSync(note, `${secret}-TMP\n`);
  writeFileSync(transcript, `${secret}-TRANSCRIPT\n`);
  return { note, transcript };
}

/** Agent A's script: without an argument it uses its own TMPDIR and HOME; with one it tries each path. */
const probe = [
  'import base64, json, os, sys',
  'if len(sys.argv) < 2:',
  "    for name, value in (('TMPDIR', 'own'), ('HOME', 'home')):",
  "        with open(os.path.join(os.environ[name], 'own.txt' if name == 'TMPDIR' else 'h.txt'), 'w') as f: f.write(value + '\\n')",
  "    print('own=' + open(os.path.join(os.environ['TMPDIR'], 'own.txt')).read().strip(), 'home=' + open(os.path.join(os.environ['HOME'], 'h.txt')).read().strip())",
  '    sys.exit(0)',
  'job = json.loads(base64.b64decode(sys.argv[1]))',
  "for f in job['targets']:",
  '    try: print(f, open(f).read())',
  "    except Exception as e: print(f, 'read:', type(e).__name__)",
  '    try:',
  "        with open(f, 'a') as out: out.write('x')",
  "        print(f, 'appended')",
  "    except Exception as e: print(f, 'append:', type(e).__name__)",
  "for d in job['list']:",
  '    try: print(d, sorted(os.listdir(d)))',
  "    except Exception as e: print(d, 'list:', type(e).__name__)",
  '',
].join('\n');

async function bash(command: string, id: string): Promise<string> {
  const result = await runToolCall(tools.get('bash' as never)!, { command }, context, { denials: [] }, id);
  return result.output;
}

let peerB: { note: string; transcript: string };
let legacy: { note: string; transcript: string };
let ownScratch: string;

beforeAll(async () => {
  if (!available) return;
  layout = await createAgentLayout(branch);
  // Agent A's scratch directory, made as run-agent makes it.
  ownScratch = await makeScratchDir('polywave-agent-A-');
  made.push(ownScratch);
  const home = path.join(ownScratch, 'home');
  const tmp = path.join(ownScratch, 'tmp');
  mkdirSync(home, { recursive: true });
  mkdirSync(tmp, { recursive: true });
  // Agent B started before A; a scratch directory where older versions made them (directly in the temp dir).
  peerB = plant(await makeScratchDir('polywave-agent-B-'), 'B-PRIVATE');
  legacy = plant(await mkdtemp(path.join(os.tmpdir(), 'polywave-agent-L-')), 'L-PRIVATE');
  const env = { ...layout.repo.env, HOME: home, TMPDIR: tmp } as Record<string, string>;
  const jail = await createJail({ root: layout.worktree, ownedFiles: ['src/a.ts', 'probe.py'], branch }, { env: layout.repo.env });
  const plan = await buildAgentSandboxPlan({ root: jail.root, home, tmp, env: layout.repo.env, userHome: layout.repo.sibling('user-home') });
  executor = createToolExecutor(plan, { cwd: jail.root, env });
  context = { jail, env, signal: new AbortController().signal, toolTimeoutMs: 30_000, maxToolOutputBytes: 30_000, branch, sandbox: plan, toolExecutor: executor };
}, 60_000);

afterAll(async () => {
  await executor?.stop();
  await resetSandbox();
  for (const directory of made) rmSync(directory, { recursive: true, force: true });
});

describe.skipIf(!available)("an agent's sandbox hides every other scratch directory", () => {
  it("agent A cannot read B's HOME/TMPDIR, one made after A's sandbox started, or an old-style one; it keeps its own", async () => {
    const write = await runToolCall(tools.get('write_file' as never)!, { path: 'probe.py', content: probe }, context, { denials: [] }, 'w1');
    expect(write.isError, write.output).toBe(false);
    // The executor is running (A's first call); only then does agent C start.
    expect(await bash('python3 probe.py', 'own')).toContain('own=own home=home');
    const peerC = plant(await makeScratchDir('polywave-agent-C-'), 'C-PRIVATE');
    const targets = [peerB.note, peerB.transcript, peerC.note, peerC.transcript, legacy.note, legacy.transcript];
    // The paths reach the script as data (base64), as any computed path would.
    const encoded = Buffer.from(JSON.stringify({ targets, list: [scratchParent(), path.dirname(peerB.note), path.dirname(legacy.note)] })).toString('base64');
    const output = await bash(`python3 probe.py ${encoded}; echo done`, 'peers');
    expect(output).toContain('done');
    for (const secret of ['B-PRIVATE', 'C-PRIVATE', 'L-PRIVATE']) expect(output, output).not.toContain(secret);
    expect(output).not.toContain('appended');
    // Only A's own scratch directory shows in the parent; the peers' are not even listed.
    expect(output).toContain(`${scratchParent()} ['${path.basename(ownScratch)}']`);
    // Nothing was written into the peers' files; A's own file is there on the host.
    for (const target of targets) expect(readFileSync(target, 'utf8')).toMatch(/^[BCL]-PRIVATE-(TMP|TRANSCRIPT)\n$/);
    expect(readFileSync(path.join(ownScratch, 'tmp', 'own.txt'), 'utf8')).toBe('own\n');
  });

  it('a hidden directory deleted since does not break the next sandbox of the same plan (its reused wrapper would mount over a missing path)', async () => {
    rmSync(path.dirname(path.dirname(legacy.note)), { recursive: true, force: true });
    const again = createToolExecutor(context.sandbox!, { cwd: context.jail.root, env: context.env as Record<string, string> });
    try {
      const result = await runToolCall(tools.get('bash' as never)!, { command: 'echo second-executor' }, { ...context, toolExecutor: again }, { denials: [] }, 'again');
      expect(result.output).toContain('second-executor');
    } finally {
      await again.stop();
    }
  });

  it('a quality gate cannot read the agents\' scratch directories either', async () => {
    const encoded = Buffer.from([peerB.note, peerB.transcript].join('\n')).toString('base64');
    const run = await runGates({
      repoDir: layout.worktree,
      env: { ...(layout.repo.env as Record<string, string>), HOME: layout.repo.sibling('user-home') },
      noCache: true,
      gates: [{ type: 'custom', command: `echo ${encoded} | base64 -d | while read -r f; do cat "$f" 2>&1; done; echo gate-done`, required: true }],
    });
    const output = run.results[0]!.output;
    expect(output).toContain('gate-done');
    expect(output, output).not.toContain('B-PRIVATE');
  });
});

