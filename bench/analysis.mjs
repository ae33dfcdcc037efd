// bench:analysis — the analysis engine (issue 15) on a generated repository per language (default
// 5 000 source files each: TypeScript, JavaScript, Go, Python, Rust), in a bounded temp directory
// removed at the end. For each language, in the same run:
//   - `git grep -w <symbol>` (the floor for a text search),
//   - `polywave check-callers <symbol>` end to end (CLI), cold (empty cache) and warm,
//   - `polywave analyze-deps <root> --files <100 files>` end to end, cold and warm,
//   - the same two through the API in process (findReferences / dependencyGraph), cold and warm.
//   - the CLI floor: check-callers for a name found nowhere (start-up, listing, one git grep; nothing parsed),
//   - resident cold: a command's first call on a tree with the disk cache emptied (no node start-up): check-callers on
//     the generated tree, then both commands on BENCH_RESIDENT_COLD_ROUNDS-1 (default 3) trees each generated again with
//     new blobs, each call against its own git grep -w; and analyze-deps as the second command on a tree,
//   - resident (a warm `polywave resident` server through the native client dist/native/polywave-client,
//     when built): check-callers and analyze-deps after two calls on the tree (the second builds the
//     word index), interleaved round by round with `git grep -w` and the Go binary
//     (../shared/tools/polywave-tools-go or POLYWAVE_GO_BIN, when present) — ratios from the same rounds.
// Prints milliseconds (median of BENCH_ROUNDS warm runs, BENCH_COLD_ROUNDS cold runs), the ratio to git grep and the load average after each language. Targets (issue 15):
// cold ≤ 3× git grep, warm ≤ 1× git grep. Noisy 2-core machines: read ratios, not absolute times.
//
//   npm run bench:analysis
//   BENCH_FILES=1000 BENCH_LANGS=ts,go BENCH_ROUNDS=1 node bench/analysis.mjs   (BENCH_KEEP=1 keeps the repositories)
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const dist = process.env.POLYWAVE_DIST ?? path.join(root, 'dist');
const bin = path.join(root, 'bin', 'polywave.js');
const engine = await import(path.join(dist, 'analysis/engine/index.js'));
const { cacheDir, flushCache } = await import(path.join(dist, 'analysis/engine/cache.js'));

const fileCount = Math.min(Number(process.env.BENCH_FILES ?? 5000), 20000);
const rounds = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
/** Cold runs parse the whole (or a large part of the) repository: one each unless asked. */
const coldRounds = Math.max(1, Number(process.env.BENCH_COLD_ROUNDS ?? 1));
/** Resident cold calls per language: the generated tree, then the tree generated again with a salt (new blobs). */
const residentColdRounds = Math.max(1, Number(process.env.BENCH_RESIDENT_COLD_ROUNDS ?? 4));
const languages = (process.env.BENCH_LANGS ?? 'ts,js,go,python,rust').split(',');
const depsFiles = 100;
const env = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: os.devNull,
  GIT_AUTHOR_NAME: 'bench',
  GIT_AUTHOR_EMAIL: 'bench@polywave.invalid',
  GIT_COMMITTER_NAME: 'bench',
  GIT_COMMITTER_EMAIL: 'bench@polywave.invalid',
};

function run(command, args, cwd) {
  const start = performance.now();
  const result = spawnSync(command, args, { cwd, env, encoding: 'utf8', maxBuffer: 1024 * 1024 * 1024 });
  const ms = performance.now() - start;
  if (result.status !== 0 && !(command === 'git' && args[0] === 'grep' && result.status === 1)) {
    throw new Error(`${command} ${args.join(' ').slice(0, 200)} → ${result.status}\n${result.stderr}`);
  }
  return { ms, stdout: result.stdout, stderr: result.stderr };
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/**
 * File i of a generated repository: a few definitions, imports of two earlier files; every 20th
 * file imports and calls the shared symbol, every 10th names it in a string and every 10th (other)
 * in a comment — text a grep finds and the engine must not report.
 */
const generators = {
  ts: {
    path: (i) => `src/m${Math.floor(i / 100)}/f${i}.ts`,
    text: (i, dep) => {
      const imports = i === 0 ? '' : [dep(i, 1), dep(i, 2)].map((j) => `import { fn${j} } from '${rel(`src/m${Math.floor(i / 100)}`, `src/m${Math.floor(j / 100)}/f${j}.js`)}';`).join('\n');
      const calls = i === 0 ? '' : `  fn${dep(i, 1)}(1); fn${dep(i, 2)}(2);\n`;
      const shared = i === 0 ? 'export function sharedHelper(x: number): number {\n  return x + 1;\n}\n' : i % 20 === 0 ? "import { sharedHelper } from '../m0/f0.js';\nexport const useShared = sharedHelper(3);\n" : '';
      return `${imports}\n${shared}\nexport interface Shape${i} {\n  id: number;\n  name: string;\n}\n\n/** fn${i} computes a value. ${i % 10 === 5 ? 'sharedHelper' : 'plain'} in a comment */\nexport function fn${i}(value: number): Shape${i} {\n${calls}  const label = '${i % 10 === 0 ? 'sharedHelper' : 'plain'}';\n  return { id: value * ${i}, name: label };\n}\n\nexport class Store${i} {\n  private items: Shape${i}[] = [];\n  add(item: Shape${i}): void {\n    this.items.push(item);\n  }\n}\n`;
    },
  },
  js: {
    path: (i) => `lib/m${Math.floor(i / 100)}/f${i}.js`,
    text: (i, dep) => {
      const imports = i === 0 ? '' : [dep(i, 1), dep(i, 2)].map((j) => `import { fn${j} } from '${rel(`lib/m${Math.floor(i / 100)}`, `lib/m${Math.floor(j / 100)}/f${j}.js`)}';`).join('\n');
      const calls = i === 0 ? '' : `  fn${dep(i, 1)}(1); fn${dep(i, 2)}(2);\n`;
      const shared = i === 0 ? 'export function sharedHelper(x) {\n  return x + 1;\n}\n' : i % 20 === 0 ? "import { sharedHelper } from '../m0/f0.js';\nexport const useShared = sharedHelper(3);\n" : '';
      return `${imports}\n${shared}\n/** fn${i} computes a value. ${i % 10 === 5 ? 'sharedHelper' : 'plain'} in a comment */\nexport function fn${i}(value) {\n${calls}  const label = '${i % 10 === 0 ? 'sharedHelper' : 'plain'}';\n  return { id: value * ${i}, name: label };\n}\n\nexport class Store${i} {\n  constructor() {\n    this.items = [];\n  }\n  add(item) {\n    this.items.push(item);\n  }\n}\n`;
    },
  },
  go: {
    path: (i) => `pkg/p${Math.floor(i / 10)}/f${i}.go`,
    text: (i, dep) => {
      const pkg = `p${Math.floor(i / 10)}`;
      const deps = i < 10 ? [] : [...new Set([dep(i, 1), dep(i, 2)].map((j) => Math.floor(j / 10)))].filter((p) => p !== Math.floor(i / 10));
      const imports = deps.map((p) => `\t"example.com/bench/pkg/p${p}"`);
      if (i % 20 === 0 && i >= 10) imports.push('\t"example.com/bench/pkg/p0"');
      const uses = deps.map((p) => `\t_ = p${p}.Fn${p * 10}(1)\n`).join('');
      const shared = i === 0 ? 'func SharedHelper(x int) int {\n\treturn x + 1\n}\n' : i % 20 === 0 && i >= 10 ? 'var UseShared = p0.SharedHelper(3)\n' : '';
      return `package ${pkg}\n\n${imports.length ? `import (\n${[...new Set(imports)].join('\n')}\n)\n` : ''}\n${shared}\n// Shape${i} is a value. ${i % 10 === 5 ? 'SharedHelper' : 'Plain'} in a comment.\ntype Shape${i} struct {\n\tID   int\n\tName string\n}\n\n// Fn${i} computes a value.\nfunc Fn${i}(value int) Shape${i} {\n${uses}\tlabel := "${i % 10 === 0 ? 'SharedHelper' : 'plain'}"\n\treturn Shape${i}{ID: value * ${i}, Name: label}\n}\n\ntype Store${i} struct{ items []Shape${i} }\n\nfunc (s *Store${i}) Add(item Shape${i}) {\n\ts.items = append(s.items, item)\n}\n`;
    },
    extra: { 'go.mod': 'module example.com/bench\n\ngo 1.21\n' },
  },
  python: {
    path: (i) => `app/m${Math.floor(i / 100)}/f${i}.py`,
    text: (i, dep) => {
      const imports = i === 0 ? '' : [dep(i, 1), dep(i, 2)].map((j) => `from app.m${Math.floor(j / 100)}.f${j} import fn${j}`).join('\n');
      const calls = i === 0 ? '' : `    fn${dep(i, 1)}(1)\n    fn${dep(i, 2)}(2)\n`;
      const shared = i === 0 ? 'def shared_helper(x):\n    return x + 1\n' : i % 20 === 0 ? 'from app.m0.f0 import shared_helper\nUSE_SHARED = shared_helper(3)\n' : '';
      return `${imports}\n${shared}\n\nclass Shape${i}:\n    """Shape${i}. ${i % 10 === 5 ? 'shared_helper' : 'plain'} in a docstring."""\n\n    def __init__(self, ident: int, name: str) -> None:\n        self.ident = ident\n        self.name = name\n\n\ndef fn${i}(value: int) -> Shape${i}:\n${calls}    label = "${i % 10 === 0 ? 'shared_helper' : 'plain'}"\n    return Shape${i}(value * ${i}, label)\n\n\nclass Store${i}:\n    def add(self, item: Shape${i}) -> None:\n        self.items.append(item)\n`;
    },
    extra: {},
    initFiles: true,
  },
  rust: {
    path: (i) => `src/m${Math.floor(i / 100)}/f${i}.rs`,
    text: (i, dep) => {
      const uses = i === 0 ? '' : [dep(i, 1), dep(i, 2)].map((j) => `use crate::m${Math.floor(j / 100)}::f${j}::fn${j};`).join('\n');
      const calls = i === 0 ? '' : `    fn${dep(i, 1)}(1);\n    fn${dep(i, 2)}(2);\n`;
      const shared = i === 0 ? 'pub fn shared_helper(x: i64) -> i64 {\n    x + 1\n}\n' : i % 20 === 0 ? 'use crate::m0::f0::shared_helper;\npub fn use_shared() -> i64 {\n    shared_helper(3)\n}\n' : '';
      return `${[...new Set(uses.split('\n'))].join('\n')}\n${shared}\n/// Shape${i}. ${i % 10 === 5 ? 'shared_helper' : 'plain'} in a doc comment.\npub struct Shape${i} {\n    pub id: i64,\n    pub name: String,\n}\n\npub fn fn${i}(value: i64) -> Shape${i} {\n${calls}    let label = "${i % 10 === 0 ? 'shared_helper' : 'plain'}";\n    Shape${i} { id: value * ${i}, name: label.to_string() }\n}\n\npub struct Store${i} {\n    items: Vec<Shape${i}>,\n}\n\nimpl Store${i} {\n    pub fn add(&mut self, item: Shape${i}) {\n        self.items.push(item);\n    }\n}\n`;
    },
    extra: { 'Cargo.toml': '[package]\nname = "bench"\nversion = "0.1.0"\nedition = "2021"\n' },
    rustMods: true,
  },
};
const symbols = { ts: 'sharedHelper', js: 'sharedHelper', go: 'SharedHelper', python: 'shared_helper', rust: 'shared_helper' };

function rel(fromDir, target) {
  const relative = path.posix.relative(fromDir, target);
  return relative.startsWith('.') ? relative : `./${relative}`;
}

function generate(lang, dir, salt) {
  const generator = generators[lang];
  // A salt (resident cold rounds): one comment line more per source file — new blobs, the same work.
  const tail = salt === undefined ? '' : lang === 'python' ? `# ${salt}\n` : `// ${salt}\n`;
  // Dependencies point to earlier files only (no cycles): i-1 and a pseudo-random earlier one.
  const dep = (i, k) => (k === 1 ? i - 1 : Math.floor((i * 7919) % i));
  const files = [];
  for (let i = 0; i < fileCount; i += 1) {
    const file = generator.path(i);
    mkdirSync(path.join(dir, path.dirname(file)), { recursive: true });
    writeFileSync(path.join(dir, file), generator.text(i, dep) + tail);
    files.push(file);
  }
  for (const [name, text] of Object.entries(generator.extra ?? {})) writeFileSync(path.join(dir, name), text);
  if (generator.initFiles) {
    writeFileSync(path.join(dir, 'app/__init__.py'), '');
    for (let m = 0; m * 100 < fileCount; m += 1) writeFileSync(path.join(dir, `app/m${m}/__init__.py`), '');
  }
  if (generator.rustMods) {
    const modules = [];
    for (let m = 0; m * 100 < fileCount; m += 1) {
      modules.push(`pub mod m${m};`);
      const children = files.filter((file) => file.startsWith(`src/m${m}/`)).map((file) => `pub mod ${path.basename(file, '.rs')};`);
      writeFileSync(path.join(dir, `src/m${m}.rs`), `${children.join('\n')}\n`);
    }
    writeFileSync(path.join(dir, 'src/lib.rs'), `${modules.join('\n')}\n`);
  }
  run('git', ['init', '-q', '-b', 'main'], dir);
  run('git', ['add', '-A'], dir);
  run('git', ['commit', '-q', '-m', 'generated'], dir);
  // Files written in the same second as the index are "racily clean": every `git diff-files` (each call's
  // listing) re-hashes them — 130–200 ms here for 5,000 files, which a checkout's first `git status` ends.
  // Refreshed as that first `git status` would (measured 3 Dec: diff-files 200 → 10 ms; git grep unaffected).
  run('git', ['update-index', '-q', '--refresh'], dir);
  return files;
}

const results = [];
const top = mkdtempSync(path.join(os.tmpdir(), 'polywave-bench-analysis-'));
const client = path.join(dist, 'native', 'polywave-client');
const goBin = process.env.POLYWAVE_GO_BIN ?? path.join(root, '..', 'shared', 'tools', 'polywave-tools-go');
const haveGo = existsSync(goBin);
const residentEnv = { POLYWAVE_RESIDENT_SOCKET: path.join(top, 'sock', 'r.sock') };
const haveResident = process.platform !== 'win32' && existsSync(client);
if (haveResident) {
  mkdirSync(path.join(top, 'sock'), { mode: 0o700 });
  spawnSync(process.execPath, [bin, 'resident', 'start', '--idle-timeout', '600'], { env: { ...env, ...residentEnv }, stdio: 'ignore' });
}
/** One call through the resident server (wall ms); throws when the server did not answer the same as node. */
const residentRun = (args, dir) => {
  const start = performance.now();
  const result = spawnSync(client, args, { cwd: dir, env: { ...env, ...residentEnv }, encoding: 'utf8', maxBuffer: 1024 * 1024 * 1024 });
  return { ms: performance.now() - start, stdout: result.stdout, status: result.status };
};
/** Wall ms of a call whose exit code is not checked (the Go binary on another language's repository). */
const residentFree = (command, args, cwd) => {
  const start = performance.now();
  spawnSync(command, args, { cwd, env, stdio: 'ignore' });
  return performance.now() - start;
};
try {
  for (const lang of languages) {
    const dir = path.join(top, lang);
    mkdirSync(dir);
    const files = generate(lang, dir);
    const symbol = symbols[lang];
    const listed = files.slice(files.length - depsFiles).join(',');
    const cache = cacheDir(path.join(dir, '.git'));
    // Facts this process parsed are written after its call (cache.ts): written first, then removed with the rest.
    const clear = () => {
      flushCache?.();
      rmSync(cache, { recursive: true, force: true });
    };
    const measure = (label, fn, { cold }) => {
      const times = [];
      for (let round = 0; round < (cold ? coldRounds : rounds); round += 1) {
        if (cold) clear();
        times.push(fn());
      }
      return median(times);
    };
    const grepMs = measure('git grep', () => run('git', ['grep', '-n', '-w', symbol], dir).ms, { cold: false });
    const grepHits = run('git', ['grep', '-n', '-w', symbol], dir).stdout.split('\n').filter(Boolean).length;
    const cli = (args) => () => run(process.execPath, [bin, ...args], dir).ms;
    const callersCold = measure('callers cold', cli(['check-callers', symbol]), { cold: true });
    const callersWarm = measure('callers warm', cli(['check-callers', symbol]), { cold: false });
    const callers = JSON.parse(run(process.execPath, [bin, 'check-callers', symbol], dir).stdout).length;
    // The floor of any CLI call here: node start-up, the CLI bundle, the listing and one git grep, nothing parsed.
    const callersFloor = measure('callers floor', cli(['check-callers', 'noSuchSymbolAnywhere']), { cold: false });
    const depsCold = measure('deps cold', cli(['analyze-deps', '.', '--files', listed, '--format', 'json']), { cold: true });
    const depsWarm = measure('deps warm', cli(['analyze-deps', '.', '--files', listed, '--format', 'json']), { cold: false });
    const inProcess = async (fn, cold) => {
      const times = [];
      for (let round = 0; round < (cold ? coldRounds : rounds); round += 1) {
        if (cold) clear();
        const start = performance.now();
        await fn();
        times.push(performance.now() - start);
      }
      return median(times);
    };
    const listedFiles = listed.split(',');
    await engine.findReferences(dir, symbol); // loads the grammar once (not part of any measurement below)
    const apiCallersCold = await inProcess(() => engine.findReferences(dir, symbol), true);
    const apiCallersWarm = await inProcess(() => engine.findReferences(dir, symbol), false);
    const apiDepsCold = await inProcess(() => engine.dependencyGraph(dir, listedFiles), true);
    const apiDepsWarm = await inProcess(() => engine.dependencyGraph(dir, listedFiles), false);
    // Resident, git grep and Go round by round (the same moments of a loaded machine for each).
    const same = { grep: [], callers: [], deps: [], goCallers: [], goDeps: [] };
    /** The resident cold rounds' trees: removed with the language's own (the server may still write its cache packs there just after a call). */
    const copies = [];
    let residentSame = true;
    if (haveResident) {
      const expected = run(process.execPath, [bin, 'check-callers', symbol], dir).stdout;
      const expectedDeps = run(process.execPath, [bin, 'analyze-deps', '.', '--files', listed, '--format', 'json'], dir).stdout;
      // Cold through the server: this tree's blobs are new to it and the disk cache is emptied (no node start-up).
      clear();
      const coldCallers = residentRun(['check-callers', symbol], dir);
      if (coldCallers.stdout !== expected) residentSame = false;
      // Each command's first call on a tree, more rounds (one call is one sample of a machine whose single calls swing
      // 2x): each on the tree generated again at a new path with a comment line added to every source file — new blobs
      // the server has never seen, the same work — one tree per command (a second command on a tree is not its first
      // call: the server has searched that repository and builds its word index then), with git grep -w on that tree
      // just before. The ratios are the medians of the rounds' own ratios.
      const coldRatios = { callers: [], deps: [] };
      const coldTimes = { callers: [coldCallers.ms], deps: [] };
      const freshTree = (round, command) => {
        const tree = `${dir}-cold${round}-${command}`;
        mkdirSync(tree);
        generate(lang, tree, `copy ${round} ${command}`);
        copies.push(tree);
        run('git', ['grep', '-n', '-w', symbol], tree); // as for the first tree: not the tree's first search
        return tree;
      };
      for (let round = 1; round < residentColdRounds; round += 1) {
        const callersTree = freshTree(round, 'callers');
        const grep = run('git', ['grep', '-n', '-w', symbol], callersTree).ms;
        const callersCall = residentRun(['check-callers', symbol], callersTree);
        const depsTree = freshTree(round, 'deps');
        const depsGrep = run('git', ['grep', '-n', '-w', symbol], depsTree).ms;
        const depsCall = residentRun(['analyze-deps', '.', '--files', listed, '--format', 'json'], depsTree);
        if (depsCall.stdout !== expectedDeps) residentSame = false;
        coldTimes.callers.push(callersCall.ms);
        coldTimes.deps.push(depsCall.ms);
        coldRatios.callers.push(callersCall.ms / grep);
        coldRatios.deps.push(depsCall.ms / depsGrep);
        if (process.env.BENCH_VERBOSE) console.log(`    round ${round}: git grep ${grep.toFixed(0)} ms, check-callers ${callersCall.ms.toFixed(0)} ms; git grep ${depsGrep.toFixed(0)} ms, analyze-deps ${depsCall.ms.toFixed(0)} ms`);
      }
      // The generated tree's own second command (analyze-deps after check-callers, disk cache emptied): the server builds its word index here.
      clear();
      const secondDeps = residentRun(['analyze-deps', '.', '--files', listed, '--format', 'json'], dir);
      if (secondDeps.stdout !== expectedDeps) residentSame = false;
      same.secondDeps = secondDeps.ms;
      same.coldCallers = median(coldTimes.callers);
      same.coldDeps = coldTimes.deps.length > 0 ? median(coldTimes.deps) : undefined;
      same.coldRounds = coldTimes.callers.length;
      same.coldCallersRatio = coldRatios.callers.length > 0 ? median(coldRatios.callers) : undefined;
      same.coldDepsRatio = coldRatios.deps.length > 0 ? median(coldRatios.deps) : undefined;
      for (let warmup = 0; warmup < 2; warmup += 1) {
        residentRun(['check-callers', symbol], dir);
        residentRun(['analyze-deps', '.', '--files', listed, '--format', 'json'], dir);
      }
      for (let round = 0; round < Math.max(rounds, 5); round += 1) {
        same.grep.push(run('git', ['grep', '-n', '-w', symbol], dir).ms);
        const callersCall = residentRun(['check-callers', symbol], dir);
        const depsCall = residentRun(['analyze-deps', '.', '--files', listed, '--format', 'json'], dir);
        if (callersCall.stdout !== expected || depsCall.stdout !== expectedDeps) residentSame = false;
        same.callers.push(callersCall.ms);
        same.deps.push(depsCall.ms);
        if (haveGo) {
          // Go's tools read .go files only: in other languages they answer nothing (still timed for check-callers).
          same.goCallers.push(residentFree(goBin, ['check-callers', symbol, '--repo-dir', dir], dir));
          if (lang === 'go') same.goDeps.push(residentFree(goBin, ['analyze-deps', dir, '--files', listed, '--format', 'json'], dir));
        }
      }
    }
    const residentRow = haveResident
      ? { grepMsSameRounds: median(same.grep), residentColdCallers: same.coldCallers, residentColdDeps: same.coldDeps, residentColdRounds: same.coldRounds, residentColdCallersRatio: same.coldCallersRatio, residentColdDepsRatio: same.coldDepsRatio, residentSecondDeps: same.secondDeps, residentCallers: median(same.callers), residentDeps: median(same.deps), residentSame, ...(haveGo ? { goCallers: median(same.goCallers), ...(same.goDeps.length > 0 ? { goDeps: median(same.goDeps) } : {}) } : {}) }
      : {};
    const row = { lang, files: fileCount, load1: os.loadavg()[0], grepHits, callers, grepMs, callersFloor, callersCold, callersWarm, depsCold, depsWarm, apiCallersCold, apiCallersWarm, apiDepsCold, apiDepsWarm, ...residentRow };
    results.push(row);
    const ratio = (ms) => `${ms.toFixed(0)} ms (${(ms / grepMs).toFixed(1)}×)`;
    console.log(`\n${lang}: ${fileCount} files, symbol ${symbol}: git grep -w ${grepMs.toFixed(0)} ms (${grepHits} lines), check-callers ${callers} references; load average ${os.loadavg().map((value) => value.toFixed(1)).join(' ')}`);
    console.log(`  CLI check-callers  cold ${ratio(callersCold)}  warm ${ratio(callersWarm)}  (floor: a name found nowhere ${ratio(callersFloor)})`);
    console.log(`  CLI analyze-deps   cold ${ratio(depsCold)}  warm ${ratio(depsWarm)}   (${depsFiles} files listed; reverse deps need the whole repository)`);
    console.log(`  API findReferences cold ${ratio(apiCallersCold)}  warm ${ratio(apiCallersWarm)}`);
    console.log(`  API dependencyGraph cold ${ratio(apiDepsCold)}  warm ${ratio(apiDepsWarm)}`);
    if (haveResident) {
      const g = residentRow.grepMsSameRounds;
      const versus = (ms) => `${ms.toFixed(0)} ms (${(ms / g).toFixed(2)}× git grep)`;
      console.log(`  resident cold (a command's first call on a tree, empty cache; medians) check-callers ${versus(residentRow.residentColdCallers)} (${residentRow.residentColdRounds} trees)${residentRow.residentColdDeps === undefined ? '' : `  analyze-deps ${versus(residentRow.residentColdDeps)} (${residentRow.residentColdRounds - 1} trees)`}`);
      if (residentRow.residentColdCallersRatio !== undefined) console.log(`  resident cold on ${residentRow.residentColdRounds - 1} trees with new blobs per command, each against its own git grep -w: check-callers ${residentRow.residentColdCallersRatio.toFixed(2)}×  analyze-deps ${residentRow.residentColdDepsRatio.toFixed(2)}× (medians of the rounds' ratios)`);
      console.log(`  resident analyze-deps after check-callers on the same tree, disk cache emptied (builds the word index) ${versus(residentRow.residentSecondDeps)}`);
      console.log(`  resident (same rounds: git grep -w ${g.toFixed(0)} ms) check-callers ${versus(residentRow.residentCallers)}  analyze-deps ${versus(residentRow.residentDeps)}  same stdout as node: ${residentSame ? 'yes' : 'NO'}`);
      if (haveGo) console.log(`  Go binary (same rounds; Go-only, substring scan) check-callers ${versus(residentRow.goCallers)}${residentRow.goDeps === undefined ? '' : `  analyze-deps ${versus(residentRow.goDeps)}`}`);
    }
    if (!process.env.BENCH_KEEP) for (const tree of [dir, ...copies]) rmSync(tree, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  }
} finally {
  if (haveResident) spawnSync(process.execPath, [bin, 'resident', 'stop'], { env: { ...env, ...residentEnv }, stdio: 'ignore' });
  if (process.env.BENCH_KEEP) console.log(`kept ${top}`);
  else rmSync(top, { recursive: true, force: true });
}
console.log(`\n${JSON.stringify(results)}`);
