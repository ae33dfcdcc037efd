import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endGitSpawnHelper, execFileBinaryOffloaded, execFileOffloaded, gitSpawnHelperKind, nativeSpawnHelper, offloadGitSpawns, setCommandUmask } from './spawn-server.js';

// dist/native/polywave-spawn (native/polywave-spawn.c) stands in for execFile: every case below gets
// the same callback from it as from Node's own execFile in this process and from the node helper —
// output, exit codes, signals, start failures, maxBuffer, stdin, the environment and PATH lookup,
// abort — and its commands start clean (default signal dispositions, empty mask, only fds 0-2).
const built = nativeSpawnHelper() !== undefined;

interface Outcome {
  stdout: string;
  stderr: string;
  code?: unknown;
  signal?: unknown;
  name?: string;
  message?: string;
}

type Case = { file: string; args: string[]; cwd?: string; env?: Record<string, string>; input?: string; maxBuffer?: number };

let dir: string;
let env: Record<string, string>;

const inProcess = (spec: Case) =>
  new Promise<Outcome>((resolve) => {
    const child = execFile(spec.file, spec.args, { cwd: spec.cwd ?? dir, env: spec.env ?? env, encoding: 'utf8', maxBuffer: spec.maxBuffer ?? 1024 * 1024 }, (error, stdout, stderr) =>
      resolve({ stdout, stderr, ...(error ? { code: (error as { code?: unknown }).code ?? undefined, signal: error.signal ?? undefined, name: error.name, message: error.message } : {}) }),
    );
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(spec.input ?? '');
  });

const offloaded = (spec: Case, signal?: AbortSignal) =>
  new Promise<Outcome>((resolve) =>
    execFileOffloaded(spec.file, spec.args, { cwd: spec.cwd ?? dir, env: spec.env ?? env, maxBuffer: spec.maxBuffer ?? 1024 * 1024, input: spec.input ?? '', ...(signal ? { signal } : {}) }, (error, stdout, stderr) =>
      resolve({ stdout, stderr, ...(error ? { code: error.code ?? undefined, signal: error.signal ?? undefined, name: error.name, message: error.message } : {}) }),
    ),
  );

async function withHelper<T>(kind: 'native' | 'node', run: () => Promise<T>): Promise<T> {
  endGitSpawnHelper();
  if (kind === 'node') process.env.POLYWAVE_SPAWN_HELPER = 'node';
  else delete process.env.POLYWAVE_SPAWN_HELPER;
  offloadGitSpawns();
  try {
    const result = await run();
    expect(gitSpawnHelperKind()).toBe(kind);
    return result;
  } finally {
    offloadGitSpawns(false);
    endGitSpawnHelper();
    delete process.env.POLYWAVE_SPAWN_HELPER;
  }
}

describe.skipIf(!built)('the native git helper (polywave-spawn)', () => {
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'polywave-spawn-test-'));
    mkdirSync(path.join(dir, 'bin'));
    writeFileSync(path.join(dir, 'bin', 'greet'), '#!/bin/sh\necho "hello from PATH $1"\n');
    chmodSync(path.join(dir, 'bin', 'greet'), 0o755);
    writeFileSync(path.join(dir, 'plain.txt'), 'echo never run\n');
    writeFileSync(path.join(dir, 'no-shebang'), 'echo "run by sh: $1"\n');
    chmodSync(path.join(dir, 'no-shebang'), 0o755);
    // X40-03: an entry where the program is a link loop (ELOOP) comes before one where it runs
    mkdirSync(path.join(dir, 'loop-bin'));
    mkdirSync(path.join(dir, 'later-bin'));
    symlinkSync('loopy', path.join(dir, 'loop-bin', 'loopy'));
    writeFileSync(path.join(dir, 'later-bin', 'loopy'), '#!/bin/sh\necho LATER-LOOPY\n');
    chmodSync(path.join(dir, 'later-bin', 'loopy'), 0o755);
    env = { PATH: `${path.join(dir, 'bin')}:/usr/bin:/bin`, HOME: dir, LANG: 'C', GREETING: 'hi there', EMPTY: '' };
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const cases: Record<string, Case> = {
    success: { file: 'sh', args: ['-c', 'echo out; echo err >&2'] },
    'exit status': { file: 'sh', args: ['-c', 'echo partial; echo why >&2; exit 3'] },
    'killed by a signal': { file: 'sh', args: ['-c', 'echo before; kill -TERM $$; sleep 5'] },
    'missing program': { file: 'no-such-program-polywave', args: ['x'] },
    'missing cwd': { file: 'sh', args: ['-c', 'pwd'], cwd: '/nonexistent/polywave/cwd' },
    'not executable': { file: './plain.txt', args: [] },
    'a script without #! (run by sh, as execvp does)': { file: './no-shebang', args: ['arg'] },
    'stdin in, then closed': { file: 'sh', args: ['-c', 'cat; echo "[eof]"'], input: 'line one\nline two\n' },
    'stdin not read': { file: 'sh', args: ['-c', 'exit 0'], input: 'x'.repeat(1024 * 1024) },
    environment: { file: 'sh', args: ['-c', 'echo "$GREETING|${EMPTY-unset}|${HOME}"; env | grep -c ='] },
    'PATH of the command environment': { file: 'greet', args: ['world'] },
    'large output': { file: 'sh', args: ['-c', 'head -c 3000000 /dev/zero | tr "\\0" a'], maxBuffer: 8 * 1024 * 1024 },
    'argument with spaces and quotes': { file: 'printf', args: ['%s|', 'a b', '"q"', "it's", ''] },
    'utf-8 output': { file: 'printf', args: ['%s', 'é漢字🙂'] },
  };
  // (built once `dir` exists)
  const loopCase = (): Case => ({ file: 'loopy', args: [], env: { ...env, PATH: `${path.join(dir, 'loop-bin')}:${path.join(dir, 'later-bin')}:/usr/bin:/bin` } });

  it('answers every case as execFile does in this process and as the node helper does', async () => {
    const names = Object.keys(cases);
    const here = await Promise.all(names.map((name) => inProcess(cases[name]!)));
    const node = await withHelper('node', () => Promise.all(names.map((name) => offloaded(cases[name]!))));
    const native = await withHelper('native', () => Promise.all(names.map((name) => offloaded(cases[name]!))));
    for (const [index, name] of names.entries()) {
      expect({ name, ...native[index] }).toEqual({ name, ...here[index] });
      expect({ name, ...native[index] }).toEqual({ name, ...node[index] });
    }
    const by = (name: string) => native[names.indexOf(name)]!;
    expect(by('success')).toEqual({ stdout: 'out\n', stderr: 'err\n' });
    expect(by('exit status')).toMatchObject({ stdout: 'partial\n', stderr: 'why\n', code: 3 });
    expect(by('killed by a signal')).toMatchObject({ stdout: 'before\n', signal: 'SIGTERM', code: undefined });
    expect(by('missing program').code).toBe('ENOENT');
    expect(by('missing cwd').code).toBe('ENOENT');
    expect(by('not executable').code).toBe('EACCES');
    expect(by('a script without #! (run by sh, as execvp does)').stdout).toBe('run by sh: arg\n');
    expect(by('stdin in, then closed').stdout).toBe('line one\nline two\n[eof]\n');
    expect(by('stdin not read').code).toBeUndefined();
    // (sh adds PWD to the five given)
    expect(by('environment').stdout).toBe(`hi there||${dir}\n6\n`);
    expect(by('PATH of the command environment').stdout).toBe('hello from PATH world\n');
    expect(by('large output').stdout).toHaveLength(3_000_000);
    expect(by('argument with spaces and quotes').stdout).toBe('a b|"q"|it\'s||');
    expect(by('utf-8 output').stdout).toBe('é漢字🙂');
  });

  it('a link loop earlier on PATH ends the search with ELOOP, as execFile does — never a later program (X40-03)', async () => {
    // (execFile throws this at once; the node helper and the native one answer it)
    expect(() => execFile('loopy', [], { cwd: dir, env: loopCase().env })).toThrow(/ELOOP/);
    const node = await withHelper('node', () => offloaded(loopCase()));
    const native = await withHelper('native', () => offloaded(loopCase()));
    expect(node.code).toBe('ELOOP');
    expect(native.code).toBe('ELOOP');
    expect(native.stdout).not.toContain('LATER-LOOPY');
  });

  it('a cwd that is a file: ENOTDIR, not a missing program (X40-04; execFile throws it at once)', async () => {
    const native = await withHelper('native', () => offloaded({ file: 'sh', args: ['-c', 'pwd'], cwd: path.join(dir, 'plain.txt') }));
    expect(native.code).toBe('ENOTDIR');
  });

  it('a 48 MB answer costs about what execFile costs, not quadratic time (X40-01)', async () => {
    const spec: Case = { file: 'sh', args: ['-c', 'head -c 50331648 /dev/zero | tr "\\0" a'], maxBuffer: 64 * 1024 * 1024 };
    let started = performance.now();
    const here = await inProcess(spec);
    const hereMs = performance.now() - started;
    started = performance.now();
    const native = await withHelper('native', () => offloaded(spec));
    const nativeMs = performance.now() - started;
    expect(native.stdout.length).toBe(50_331_648);
    expect(here.stdout.length).toBe(50_331_648);
    // quadratic copying took ~70 s for 48 MB on this machine; linear is within a small factor of execFile
    expect(nativeMs).toBeLessThan(Math.max(5_000, hereMs * 5));
  }, 60_000);

  it('past maxBuffer, a background child holding the pipes is not waited for (X40-05)', async () => {
    const spec: Case = { file: 'sh', args: ['-c', 'sleep 4 & head -c 5000 /dev/zero'], maxBuffer: 1000 };
    const started = Date.now();
    const native = await withHelper('native', () => offloaded(spec));
    expect(native.code).toBe('ERR_CHILD_PROCESS_STDIO_MAXBUFFER');
    expect(Date.now() - started).toBeLessThan(2_500);
  });

  it('past maxBuffer: the command is stopped and the error is execFile’s', async () => {
    const spec: Case = { file: 'sh', args: ['-c', 'head -c 100000 /dev/zero; sleep 30'], maxBuffer: 1000 };
    const started = Date.now();
    const here = await inProcess(spec);
    const native = await withHelper('native', () => offloaded(spec));
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(native).toMatchObject({ code: 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER', name: 'RangeError', message: 'stdout maxBuffer length exceeded' });
    expect({ code: native.code, name: native.name, message: native.message }).toEqual({ code: here.code, name: here.name, message: here.message });
    expect(native.stdout.length).toBeLessThanOrEqual(1000);
  });

  it('commands start clean: default signal dispositions, nothing blocked, only stdin, stdout and stderr open', async () => {
    // The helper itself ignores SIGINT and SIGPIPE; a git it starts must not (Ctrl-C, a closed pipe end it as usual).
    const probe: Case = { file: 'sh', args: ['-c', 'grep -E "^(SigIgn|SigBlk):" /proc/self/status; ls /proc/self/fd | sort -n | tr "\\n" " "'] };
    const native = await withHelper('native', () => offloaded(probe));
    const here = await inProcess(probe);
    expect(native.stdout).toBe(here.stdout);
    expect(native.stdout).toMatch(/SigIgn:\s+0+\n/);
    expect(native.stdout).toMatch(/SigBlk:\s+0+\n/);
    // ls's own directory handle is fd 3: nothing else leaked from the helper (its request and answer pipes, other commands' pipes)
    expect(native.stdout.split('\n').at(-1)!.trim()).toMatch(/^0 1 2 3( |$)/);
  });

  it('abort stops the running command (SIGTERM) and answers AbortError at once', async () => {
    const marker = path.join(dir, 'aborted-pid');
    await withHelper('native', async () => {
      const controller = new AbortController();
      const running = offloaded({ file: 'sh', args: ['-c', `echo $$ > ${marker}; exec sleep 30`] }, controller.signal);
      for (let tries = 0; !existsSync(marker) && tries < 200; tries += 1) await new Promise((resolve) => setTimeout(resolve, 10));
      controller.abort();
      const outcome = await running;
      expect(outcome.name).toBe('AbortError');
      const pid = Number((await offloaded({ file: 'cat', args: [marker] })).stdout.trim());
      // Our command (`sh -c … exec sleep 30`, before or after its exec) still running? Not when the pid is gone, a zombie (ended, not yet reaped) or another
      // program's (pid_max is 32,768 here and a CI run starts hundreds of processes a second; kill(pid, 0) failed this once in CI).
      const sleeping = (): boolean => {
        try {
          const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
          const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
          return state !== 'Z' && state !== 'X' && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('sleep 30');
        } catch {
          return false;
        }
      };
      const deadline = Date.now() + 10_000;
      while (sleeping() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(sleeping()).toBe(false);
    });
  });

  it('200 commands at once, binary input and output: each answer is its own', async () => {
    const bytes = (seed: number) => Buffer.from(Array.from({ length: 2048 + seed }, (_, index) => (index * 7 + seed) % 256));
    const results = await withHelper('native', () =>
      Promise.all(
        Array.from({ length: 200 }, (_, seed) =>
          new Promise<{ seed: number; out: Buffer; code: unknown }>((resolve) =>
            execFileBinaryOffloaded('sh', ['-c', `cat; exit $((${seed} % 3))`], { cwd: dir, env, maxBuffer: 1024 * 1024, input: bytes(seed) }, (error, stdout) => resolve({ seed, out: stdout, code: error?.code })),
          ),
        ),
      ),
    );
    for (const { seed, out, code } of results) {
      expect(Buffer.compare(out, bytes(seed))).toBe(0);
      expect(code ?? 0).toBe(seed % 3);
    }
  });

  it('the helper gone mid-command: the command fails with EHELPERGONE, the next one starts a new helper', async () => {
    await withHelper('native', async () => {
      const running = offloaded({ file: 'sleep', args: ['5'] });
      await new Promise((resolve) => setTimeout(resolve, 50));
      const helperPids = (await new Promise<string>((resolve) => execFile('pgrep', ['-f', 'dist/native/polywave-spawn', '-P', String(process.pid)], (_, stdout) => resolve(stdout)))).trim().split('\n').filter(Boolean);
      expect(helperPids.length).toBeGreaterThan(0);
      for (const pid of helperPids) process.kill(Number(pid), 'SIGKILL');
      const outcome = await running;
      expect(outcome.code).toBe('EHELPERGONE');
      expect((await offloaded({ file: 'sh', args: ['-c', 'echo again'] })).stdout).toBe('again\n');
    });
  });

  it('each command gets the umask it was told (a resident server tells its caller\'s per request), with both helpers; the umask is never read', async () => {
    const umask = process.umask.bind(process);
    let reads = 0;
    // Reading the umask (no argument) sets it to 0 for a moment: files other threads create meanwhile get mode 0666 (X42-09).
    process.umask = ((mask?: number | string) => {
      if (mask === undefined) reads += 1;
      return mask === undefined ? umask() : umask(mask);
    }) as typeof process.umask;
    try {
      for (const kind of ['native', 'node'] as const) {
        await withHelper(kind, async () => {
          const modes: string[] = [];
          try {
            for (const mask of [0o022, 0o077, 0o002, 0o022]) {
              setCommandUmask(mask);
              // The shell reports the umask it started with and creates a file under it.
              const outcome = await offloaded({ file: 'sh', args: ['-c', `umask; f=$(mktemp -u ${dir}/mode-XXXXXX); : > "$f"; stat -c %a "$f"; rm -f "$f"`] });
              modes.push(outcome.stdout.trim().replace(/\s+/g, ' '));
            }
          } finally {
            setCommandUmask(undefined);
          }
          expect(modes, kind).toEqual(['0022 644', '0077 600', '0002 664', '0022 644']);
        });
      }
      expect(reads).toBe(0);
    } finally {
      process.umask = umask as typeof process.umask;
    }
  });

  it('a streamed command (onStdout): its stdout arrives in pieces before it ends, whole in the callback, a character split across pieces decoded once; maxBuffer counts the pieces', async () => {
    for (const kind of ['native', 'node'] as const) {
      await withHelper(kind, async () => {
        const started = performance.now();
        const pieces: Array<{ text: string; at: number }> = [];
        // 'é' is written as its two bytes, 150 ms apart; the command runs ~450 ms in all.
        const script = "printf 'first\\n'; sleep 0.15; printf '\\303'; sleep 0.15; printf '\\251 second\\n'; sleep 0.15; printf 'last'";
        const outcome = await new Promise<{ stdout: string; error: unknown; ended: number }>((resolve) =>
          execFileOffloaded('sh', ['-c', script], { cwd: dir, env, maxBuffer: 1024 * 1024, input: '', onStdout: (text) => pieces.push({ text, at: performance.now() - started }) }, (error, stdout) => resolve({ stdout, error, ended: performance.now() - started })),
        );
        expect(outcome.error, kind).toBeNull();
        expect(outcome.stdout, kind).toBe('first\né second\nlast');
        expect(pieces.map((piece) => piece.text).join(''), kind).toBe(outcome.stdout);
        expect(pieces.length, kind).toBeGreaterThanOrEqual(3);
        expect(pieces[0]!.text, kind).toBe('first\n');
        expect(pieces[0]!.at, kind).toBeLessThan(outcome.ended - 250);
        expect(pieces.some((piece) => piece.text.includes('\ufffd')), kind).toBe(false);
        // Past maxBuffer: the same error as execFile's, the pieces never more than the limit.
        const seen: string[] = [];
        const over = await new Promise<{ code: unknown }>((resolve) =>
          execFileOffloaded('sh', ['-c', 'printf 0123456789; sleep 0.1; printf abcdefghij'], { cwd: dir, env, maxBuffer: 15, input: '', onStdout: (text) => seen.push(text) }, (error) => resolve({ code: error?.code })),
        );
        expect(over.code, kind).toBe('ERR_CHILD_PROCESS_STDIO_MAXBUFFER');
        expect(seen.join('').length, kind).toBeLessThanOrEqual(kind === 'native' ? 15 : 20);
      });
    }
  });
});
