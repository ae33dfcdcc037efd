// bench:integration-scan — E25 validateIntegration on a generated repository (default 2 000
// source files: Go, TS, Python, Rust), one wave of agents that created 100 files with exports.
// Prints the cold run time (index built inside), the index build alone, and two baselines from the
// same run: the raw git reads the index must do (`ls-tree` + one `cat-file --batch`), and the Go
// reference's algorithm (walk the checkout and substring-search every file once per export).
// Noisy 2-core machines: read ratios, not absolute times.
//
//   npm run build && node bench/integration-scan.mjs
//   BENCH_FILES=5000 BENCH_ROUNDS=3 POLYWAVE_DIST=/tmp/dist node bench/integration-scan.mjs
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const dist = process.env.POLYWAVE_DIST ?? path.join(root, 'dist');
const { validateIntegration } = await import(path.join(dist, 'analysis/integration.js'));
const { buildReferenceIndex } = await import(path.join(dist, 'analysis/reference-index.js'));
const { createGit } = await import(path.join(dist, 'git/git-cli.js'));

const fileCount = Number(process.env.BENCH_FILES ?? 2000);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const agentCount = 4;
const filesPerAgent = 25;
const env = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: os.devNull,
  GIT_AUTHOR_NAME: 'bench',
  GIT_AUTHOR_EMAIL: 'bench@polywave.invalid',
  GIT_COMMITTER_NAME: 'bench',
  GIT_COMMITTER_EMAIL: 'bench@polywave.invalid',
};

function git(args, cwd, input) {
  const result = spawnSync('git', args, { cwd, env, encoding: 'utf8', input, maxBuffer: 1024 * 1024 * 1024 });
  if (result.status !== 0) throw new Error(`git ${args.join(' ')}\n${result.stderr}`);
  return result.stdout;
}

const languages = ['go', 'ts', 'py', 'rs'];

/** A source file of ~40 lines defining a few symbols and calling some of a neighbour's. */
function sourceFile(language, id, calls) {
  const callLines = (format) => calls.map((callee) => format(callee));
  switch (language) {
    case 'go':
      return [
        `package p${id % 50}`,
        '',
        'import "fmt"',
        '',
        `// Widget${id} is generated for the benchmark.`,
        `type Widget${id} struct {`,
        '\tName string `json:"name"`',
        '\tSize int',
        '}',
        '',
        `func NewWidget${id}() *Widget${id} { return &Widget${id}{Name: "w"} }`,
        '',
        `func (w *Widget${id}) Describe() string { return fmt.Sprintf("%s %d", w.Name, w.Size) }`,
        '',
        `func helper${id}(values []int) int {`,
        '\ttotal := 0',
        '\tfor _, value := range values {',
        '\t\ttotal += value // accumulate',
        '\t}',
        '\treturn total',
        '}',
        '',
        `func Use${id}() {`,
        ...callLines((callee) => `\t_ = NewWidget${callee}()`),
        '}',
        '',
      ].join('\n');
    case 'ts':
      return [
        `import { helper } from './helper-${id % 10}.js';`,
        '',
        `/** Widget ${id}. */`,
        `export interface Widget${id}Options { size: number; label: string }`,
        '',
        `export function createWidget${id}(options: Widget${id}Options): string {`,
        "  const parts = [options.label, String(options.size)];",
        "  return parts.join(' ');",
        '}',
        '',
        `export class Widget${id} {`,
        '  constructor(private readonly size: number) {}',
        '  describe(): string { return `size ${this.size}`; }',
        '}',
        '',
        `export function use${id}(): void {`,
        ...callLines((callee) => `  createWidget${callee}({ size: 1, label: 'x' });`),
        '  helper();',
        '}',
        '',
      ].join('\n');
    case 'py':
      return [
        `"""Widget module ${id}."""`,
        'import os',
        '',
        '',
        `class Widget${id}:`,
        '    def __init__(self, size):',
        '        self.size = size',
        '',
        '    def describe(self):',
        "        return f'size {self.size}'",
        '',
        '',
        `def create_widget_${id}(size=1):`,
        `    return Widget${id}(size)`,
        '',
        '',
        `def use_${id}():`,
        ...callLines((callee) => `    create_widget_${callee}()`),
        '    return os.getcwd()',
        '',
      ].join('\n');
    default:
      return [
        `//! Widget module ${id}.`,
        '',
        `pub struct Widget${id} {`,
        '    pub size: u32,',
        '}',
        '',
        `impl Widget${id} {`,
        '    pub fn describe(&self) -> String { format!("size {}", self.size) }',
        '}',
        '',
        `pub fn new_widget_${id}() -> Widget${id} { Widget${id} { size: 1 } }`,
        '',
        `pub fn use_${id}() {`,
        ...callLines((callee) => `    let _ = crate::new_widget_${callee}();`),
        '}',
        '',
      ].join('\n');
  }
}

function pathOf(language, id) {
  switch (language) {
    case 'go':
      return `pkg/p${id % 50}/widget${id}.go`;
    case 'ts':
      return `src/m${id % 40}/widget${id}.ts`;
    case 'py':
      return `app/m${id % 40}/widget_${id}.py`;
    default:
      return `crates/core/src/m${id % 40}/widget_${id}.rs`;
  }
}

function write(dir, file, text) {
  mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
  writeFileSync(path.join(dir, file), text);
}

/** The new files of one agent: exports needing callers, half of them called from the base files' neighbours. */
function agentFile(language, agent, number) {
  const name = `${agent}${number}`;
  switch (language) {
    case 'go':
      return [`package wave${agent}`, '', `func Register${name}() {}`, '', `func New${name}Client() {}`, '', `type ${name}Handler struct{}`, ''].join('\n');
    case 'ts':
      return [`export function register${name}(): void {}`, '', `export function create${name}Client(): void {}`, '', `export interface ${name}Options { size: number }`, ''].join('\n');
    case 'py':
      return [`def register_${name.toLowerCase()}():`, '    return 1', '', '', `def create_${name.toLowerCase()}_client():`, '    return 2', ''].join('\n');
    default:
      return [`pub fn register_${name.toLowerCase()}() {}`, '', `pub fn build_${name.toLowerCase()}() {}`, ''].join('\n');
  }
}

function agentPath(language, agent, number) {
  switch (language) {
    case 'go':
      return `pkg/wave${agent}/f${number}.go`;
    case 'ts':
      return `src/wave${agent}/f${number}.ts`;
    case 'py':
      return `app/wave_${agent.toLowerCase()}/f${number}.py`;
    default:
      return `crates/core/src/wave_${agent.toLowerCase()}/f${number}.rs`;
  }
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'polywave-bench-e25-'));
try {
  git(['init', '--quiet', '--initial-branch', 'main', dir], os.tmpdir());
  const baseFiles = fileCount - agentCount * filesPerAgent;
  for (let id = 0; id < baseFiles; id += 1) {
    const language = languages[id % languages.length];
    const calls = [1, 2, 3].map((step) => ((id + step * 4) % baseFiles) - (((id + step * 4) % baseFiles) % 4) + (id % 4)).filter((callee) => callee < baseFiles);
    write(dir, pathOf(language, id), sourceFile(language, id, calls));
  }
  git(['add', '-A'], dir);
  git(['commit', '--quiet', '--no-verify', '-m', 'base'], dir);
  // A real repository's history is packed; the wave's new objects stay loose.
  git(['repack', '-adq'], dir);
  const base = git(['rev-parse', 'HEAD'], dir).trim();

  const agents = Array.from({ length: agentCount }, (_, index) => String.fromCharCode(65 + index));
  const reports = {};
  const exportNames = [];
  for (const agent of agents) {
    const created = [];
    for (let number = 0; number < filesPerAgent; number += 1) {
      const language = languages[number % languages.length];
      const file = agentPath(language, agent, number);
      const text = agentFile(language, agent, number);
      write(dir, file, text);
      created.push(file);
      for (const match of text.matchAll(/(?:func|function|def|fn|type|interface)\s+([A-Za-z_]\w*)/g)) exportNames.push(match[1]);
    }
    // Every other file's exports get a caller in a base file (appended line), the rest are gaps.
    reports[agent] = { status: 'complete', files_changed: [], files_created: created };
  }
  const callerFile = 'pkg/p0/widget0.go';
  const callers = agents.flatMap((agent) => Array.from({ length: filesPerAgent }, (_, number) => number).filter((number) => number % 8 === 0).map((number) => `// wired: Register${agent}${number}\nvar _ = Register${agent}${number}`));
  writeFileSync(path.join(dir, callerFile), `${readFileSync(path.join(dir, callerFile), 'utf8')}\n${callers.join('\n')}\n`);
  git(['add', '-A'], dir);
  git(['commit', '--quiet', '--no-verify', '-m', 'wave 1 merged'], dir);

  const manifest = {
    title: 'bench',
    feature_slug: 'bench',
    waves: [{ number: 1, base_commit: base, agents: agents.map((id) => ({ id, task: 'x', files: [] })) }],
    completion_reports: reports,
    wiring: [],
  };
  const port = createGit(dir, { env });

  const median = (values) => [...values].sort((left, right) => left - right)[Math.floor(values.length / 2)];
  async function time(fn) {
    const samples = [];
    let last;
    for (let round = 0; round < rounds; round += 1) {
      const start = performance.now();
      last = await fn();
      samples.push(performance.now() - start);
    }
    return { ms: median(samples), last };
  }

  // Warm-up (JIT, git's object cache).
  await validateIntegration({ manifest, wave: 1, git: port, ref: 'HEAD' });

  const indexOnly = await time(() => buildReferenceIndex({ git: port, ref: 'HEAD' }));
  const cold = await time(() => validateIntegration({ manifest, wave: 1, git: port, ref: 'HEAD' }));
  const index = indexOnly.last;
  const warm = await time(() => validateIntegration({ manifest, wave: 1, git: port, ref: 'HEAD', index }));

  // Baseline 1: the raw git reads (one ls-tree, one cat-file --batch of every blob).
  const rawGit = await time(async () => {
    const listing = git(['ls-tree', '-r', '-z', 'HEAD'], dir);
    const blobs = listing.split('\0').filter(Boolean).map((record) => record.split(/\s+/)[2]);
    git(['cat-file', '--batch'], dir, `${blobs.join('\n')}\n`);
  });

  // Baseline 2: the Go reference's algorithm (engine-cli.md §6.1) over the checkout: for each
  // export, walk the repository and substring-search every Go/TS file line by line. Measured on a
  // sample of the exports and scaled to all of them (it is linear in the number of exports).
  const walk = (directory) =>
    readdirSync(directory).flatMap((name) => {
      if (name.startsWith('.') || name === 'vendor' || name === 'node_modules') return [];
      const full = path.join(directory, name);
      return statSync(full).isDirectory() ? walk(full) : /\.(go|ts|tsx)$/.test(name) && !/_test\.go$/.test(name) ? [full] : [];
    });
  const sample = exportNames.filter((_, position) => position % Math.max(1, Math.floor(exportNames.length / 40)) === 0).slice(0, 40);
  const goStart = performance.now();
  for (const needle of sample) {
    for (const file of walk(dir)) {
      for (const line of readFileSync(file, 'utf8').split('\n')) if (line.includes(needle)) break;
    }
  }
  const goStyle = ((performance.now() - goStart) / sample.length) * exportNames.length;

  const files = index.stats.files;
  console.log(`repository: ${files} indexed source files (${(index.stats.characters / 1024 / 1024).toFixed(1)} MiB), ${index.stats.identifiers} identifiers; wave: ${agentCount} agents × ${filesPerAgent} new files`);
  console.log(`gaps found: ${cold.last.gaps.length} (${cold.last.summary})`);
  console.log(`validateIntegration, index built inside: ${cold.ms.toFixed(0)} ms`);
  console.log(`  buildReferenceIndex alone:            ${indexOnly.ms.toFixed(0)} ms`);
  console.log(`  validateIntegration with a given index: ${warm.ms.toFixed(0)} ms`);
  console.log(`baseline raw git (ls-tree + cat-file --batch of every blob): ${rawGit.ms.toFixed(0)} ms → ratio ${(cold.ms / rawGit.ms).toFixed(2)}×`);
  console.log(`baseline Go-style walk per export (${exportNames.length} exports, Go/TS files only, measured on ${sample.length}): ${goStyle.toFixed(0)} ms → ours is ${(goStyle / cold.ms).toFixed(1)}× faster`);
} finally {
  if (process.env.BENCH_KEEP) console.log(`repository kept: ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
}
