import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot, runCli } from './support/cli.js';
import { expectCodedError } from './support/cli-assert.js';
import { makeTempDir } from './support/temp.js';

/**
 * Hostile input through the real CLI: every case must end quickly with exit 2, one coded line on
 * stderr, nothing on stdout, no stack trace, and the file exactly as it was.
 */
const temp = makeTempDir('polywave-hostile-');
/**
 * Time bound for one refused run, process start included: 8 s, or five times a plain
 * `validate` of a small valid manifest measured just before (these 2-core machines are noisy,
 * and other test files may be running), whichever is larger. A parser that walks into deep
 * input or expands an alias bomb takes far longer than that, or never ends.
 */
const timeBudgetMs = 8_000;
/** The 50 MB file is written and then refused from its size; give it a little more. */
const largeFileBudgetMs = 10_000;
const exampleManifest = path.join(repoRoot, 'examples', 'IMPL-greeting-cli.yaml');

async function budgetFor(baseMs: number): Promise<number> {
  const baseline = await runCli(['validate', exampleManifest]);
  return Math.max(baseMs, baseline.durationMs * 5);
}

function write(name: string, content: string | Buffer): string {
  const file = path.join(temp, name);
  writeFileSync(file, content);
  return file;
}

/**
 * Block mappings nested `levels` deep, one more space per level. Indentation makes the text grow
 * with the square of the depth, so 4000 levels (8 MB, under the 10 MiB size cap) is the deepest
 * block-mapping input that reaches the depth check rather than the size check.
 */
function blockNesting(levels: number): string {
  const lines: string[] = [];
  for (let level = 0; level < levels; level += 1) lines.push(`${' '.repeat(level)}k:`);
  lines.push(`${' '.repeat(levels)}leaf: 1`);
  return `${lines.join('\n')}\n`;
}

function billionLaughs(): string {
  const lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]'];
  for (let level = 1; level <= 9; level += 1) {
    const previous = `*a${level - 1}`;
    lines.push(`a${level}: &a${level} [${Array.from({ length: 10 }, () => previous).join(', ')}]`);
  }
  lines.push('title: bomb', 'feature_slug: bomb', 'verdict: SUITABLE', 'waves: *a9');
  return `${lines.join('\n')}\n`;
}

interface HostileCase {
  name: string;
  make: () => string;
  code?: string | RegExp;
  /** What the message must say (proves which guard refused the input). */
  says?: RegExp;
  budgetMs?: number;
}

const cases: HostileCase[] = [
  { name: 'an empty file', make: () => write('IMPL-empty.yaml', ''), code: 'V001_MANIFEST_INVALID' },
  { name: 'a file of blank lines and comments', make: () => write('IMPL-comments.yaml', '# nothing here\n\n   # nor here\n'), code: 'V001_MANIFEST_INVALID' },
  { name: 'a binary file', make: () => write('IMPL-binary.yaml', Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x01, 0x00, 0x00, 0x00, 0xff, 0xfe, 0x00, 0x01, 0x02, 0x03])), code: /^(V046_PARSE_ERROR|X002_FILE_READ)$/ },
  {
    name: 'a 50 MB file',
    make: () => write('IMPL-huge.yaml', `title: huge\nnotes: "${'x'.repeat(50 * 1024 * 1024)}"\n`),
    code: 'RESOURCE_EXHAUSTION',
    says: /larger than/,
    budgetMs: largeFileBudgetMs,
  },
  { name: '20000 levels of flow nesting', make: () => write('IMPL-deep-flow.yaml', `title: deep\nwaves: ${'['.repeat(20_000)}${']'.repeat(20_000)}\n`), code: 'RESOURCE_EXHAUSTION', says: /nesting/i },
  { name: '20000 levels of flow mappings', make: () => write('IMPL-deep-flow-map.yaml', `title: deep\nwaves: ${'{a: '.repeat(20_000)}1${'}'.repeat(20_000)}\n`), code: 'RESOURCE_EXHAUSTION', says: /nesting/i },
  { name: '4000 levels of block mappings (8 MB)', make: () => write('IMPL-deep-block.yaml', blockNesting(4_000)), code: 'RESOURCE_EXHAUSTION', says: /nesting/i },
  { name: '20000 levels of compact block sequences', make: () => write('IMPL-deep-seq.yaml', `title: deep\nwaves:\n  ${'- '.repeat(20_000)}x\n`), code: 'RESOURCE_EXHAUSTION', says: /nesting/i },
  { name: '20000 levels of compact sequences ending in a mapping', make: () => write('IMPL-deep-seq-map.yaml', `title: deep\nwaves:\n${'- '.repeat(20_000)}k: v\n`), code: 'RESOURCE_EXHAUSTION', says: /nesting/i },
  { name: 'billion laughs (alias bomb)', make: () => write('IMPL-laughs.yaml', billionLaughs()), code: 'RESOURCE_EXHAUSTION', says: /alias/i },
  {
    name: 'non-UTF-8 bytes',
    make: () => write('IMPL-latin1.yaml', Buffer.concat([Buffer.from('title: caf'), Buffer.from([0xe9]), Buffer.from('\nfeature_slug: cafe\nverdict: SUITABLE\n')])),
    code: /^(V046_PARSE_ERROR|X002_FILE_READ)$/,
  },
  {
    name: 'a directory',
    make: () => {
      const directory = path.join(temp, 'IMPL-dir.yaml');
      mkdirSync(directory, { recursive: true });
      return directory;
    },
    code: /^(X002_FILE_READ|N005_IMPL_NOT_FOUND|X001_INVALID_INPUT)$/,
  },
  { name: 'a missing file', make: () => path.join(temp, 'no-such', 'IMPL-missing.yaml'), code: 'N005_IMPL_NOT_FOUND' },
];

function snapshot(file: string): { exists: boolean; bytes?: Buffer; mtimeMs?: number; isDirectory?: boolean } {
  try {
    const stats = statSync(file);
    if (stats.isDirectory()) return { exists: true, isDirectory: true, mtimeMs: stats.mtimeMs };
    return { exists: true, bytes: readFileSync(file), mtimeMs: stats.mtimeMs };
  } catch {
    return { exists: false };
  }
}

describe('hostile input through `polywave validate`', () => {
  for (const hostile of cases) {
    it(`${hostile.name}: exit 2, one coded line, empty stdout, no stack, fast, file untouched`, async () => {
      const file = hostile.make();
      const before = snapshot(file);
      const budgetMs = await budgetFor(hostile.budgetMs ?? timeBudgetMs);
      const result = await runCli(['validate', file], { timeoutMs: 20_000 });
      const { message } = expectCodedError(result, { exitCode: 2, label: hostile.name, ...(hostile.code ? { code: hostile.code } : {}) });
      expect(message.length).toBeLessThan(1_000);
      if (hostile.says) expect(message).toMatch(hostile.says);
      expect(result.durationMs, `${hostile.name} took ${Math.round(result.durationMs)} ms (budget ${Math.round(budgetMs)} ms)`).toBeLessThan(budgetMs);
      const after = snapshot(file);
      expect(after.exists).toBe(before.exists);
      expect(after.mtimeMs).toBe(before.mtimeMs);
      if (before.bytes) expect(after.bytes!.equals(before.bytes)).toBe(true);
      // No lock or temp file left next to it.
      if (before.exists && !before.isDirectory) {
        const siblings = readdirSync(path.dirname(file)).filter((name) => name.includes(path.basename(file)) && name !== path.basename(file));
        expect(siblings).toEqual([]);
      }
    });
  }

  it('a syntax error names the line and column', async () => {
    const file = write('IMPL-syntax.yaml', 'title: x\nfeature_slug: y\nverdict: SUITABLE\nwaves: [1, 2\n');
    const result = await runCli(['validate', file]);
    const { message } = expectCodedError(result, { exitCode: 2, code: 'V046_PARSE_ERROR' });
    expect(message).toMatch(/line \d+, column \d+/);
  });

  it('a top-level sequence is not a manifest: exit 2', async () => {
    const file = write('IMPL-seq.yaml', '- a\n- b\n');
    const result = await runCli(['validate', file]);
    expectCodedError(result, { exitCode: 2, code: 'V001_MANIFEST_INVALID' });
  });

  describe('bad flags', () => {
    const example = exampleManifest;

    it('--wave abc: exit 2 with a coded line', async () => {
      const result = await runCli(['validate', '--wave', 'abc', example]);
      const { message } = expectCodedError(result, { exitCode: 2, code: 'X001_INVALID_INPUT' });
      expect(message).toContain('--wave');
    });

    it('an unknown option: exit 2 with a coded line, nothing on stdout', async () => {
      const result = await runCli(['validate', '--no-such-flag', example]);
      const { message } = expectCodedError(result, { exitCode: 2 });
      expect(message).toContain('--no-such-flag');
    });

    it('an unknown command: exit 2 with a coded line', async () => {
      const result = await runCli(['no-such-command']);
      expectCodedError(result, { exitCode: 2 });
    });

    it('a missing required argument: exit 2 with a coded line', async () => {
      const result = await runCli(['validate']);
      expectCodedError(result, { exitCode: 2 });
    });

    it('a missing required option: exit 2 with a coded line', async () => {
      const result = await runCli(['set-impl-state', example]);
      const { message } = expectCodedError(result, { exitCode: 2 });
      expect(message).toContain('--state');
    });
  });
});

describe('a reader that goes away (`polywave … | head`)', () => {
  it('stops quietly with no EPIPE stack trace, for help and for a long JSON output', async () => {
    const { spawnSync } = await import('node:child_process');
    for (const args of [['run', '--help'], ['--help'], ['schema']]) {
      // `head` closes the pipe after one byte: every later write of the CLI hits EPIPE.
      const bash = spawnSync('bash', ['-c', `node "${path.join(repoRoot, 'bin', 'polywave.js')}" ${args.join(' ')} | head -c 1 >/dev/null; echo "rc=\${PIPESTATUS[0]}"`], { encoding: 'utf8' });
      expect(bash.stderr, args.join(' ')).toBe('');
      expect(bash.stdout.trim(), args.join(' ')).toBe('rc=0');
    }
  });
});
