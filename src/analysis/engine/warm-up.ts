/**
 * Warming a long-lived process's engine up before its first real call (the resident server).
 *
 * A process's first analysis call runs the engine before V8 has optimised it: the listing's parser,
 * the lexical pre-check, tree-sitter's WebAssembly runtime and the extraction all run cold, and the
 * first cold check-callers on a 5,000-file repository took ~2.5× as long as the same call made later
 * (measured in process, grammars preloaded: TS 463 → 187–250 ms, Go 404 → 179–235 ms). The resident
 * server therefore runs the engine once, after it listens, on a small sample repository of its own
 * in a private temporary directory (every language the engine reads, with imports, aliases,
 * re-exports, methods and the searched word in strings and comments): the same calls a Scout's
 * commands make, on nothing of the user's. The directory is removed at the end; the process's
 * content-addressed memory keeps the sample's few facts (bounded like any other entries).
 */
import { lstatSync, mkdtempSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createGit } from '../../git/git-cli.js';
import { flushCache } from './cache.js';
import { dependencyGraph, findReferences } from './index.js';
import { analysisCall } from './scope.js';
import { warmUpSample } from './warm-up-sample.js';
import { processExists } from '../../store/process-alive.js';

export { warmUpSample } from './warm-up-sample.js';

export interface WarmUpResult {
  /** Wall and CPU milliseconds the warm-up took (its pauses for requests included in the wall time). */
  ms: number;
  cpuMs: number;
  /** References found in the sample per searched symbol (a warm-up that found none did not exercise the engine). */
  references: Record<string, number>;
  /** Edges (depends-on and depended-by) of the dependency graph's answer for six of the sample's files. */
  graphEdges: number;
}

/** The sample's directory while a warm-up runs: removed at process exit too (a server that exits mid-warm-up). */
let activeDir: string | undefined;
let exitHookInstalled = false;

const warmUpPrefix = 'polywave-warm-up-';

/**
 * Removes sample directories of warm-ups whose process is gone (killed mid-way): `polywave-warm-up-<pid>-*`
 * in `root`, owned by this user, whose pid does not run. Best effort.
 */
export function sweepStaleWarmUps(root: string): number {
  let removed = 0;
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return 0;
  }
  const uid = process.getuid?.();
  for (const name of names) {
    const match = /^polywave-warm-up-(\d+)-/.exec(name);
    if (!match || Number(match[1]) === process.pid) continue;
    const dir = path.join(root, name);
    try {
      const stats = lstatSync(dir);
      if (!stats.isDirectory() || (uid !== undefined && stats.uid !== uid)) continue;
      if (processExists(Number(match[1]))) continue;
      rmSync(dir, { recursive: true, force: true });
      removed += 1;
    } catch {
      // raced with its owner or another sweep
    }
  }
  return removed;
}

/**
 * Runs the engine's cold paths once on the sample in a private temporary directory under `tmpRoot` (absolute;
 * default the temporary directory of this moment), removed at the end — also on failure and at process exit —
 * and by the next warm-up when the process was killed. `between` is awaited before anything is created and
 * before each step — the resident server waits there for its running request to end (whose caller's
 * environment and cwd the process has meanwhile) — and ends the warm-up when it answers false (the server stops).
 */
export async function warmUpEngine(env: Readonly<Record<string, string | undefined>>, between: () => Promise<boolean> = async () => true, tmpRoot: string = path.resolve(os.tmpdir())): Promise<WarmUpResult | undefined> {
  if (!path.isAbsolute(tmpRoot)) throw new Error(`warm-up: the temporary directory must be absolute: ${tmpRoot}`);
  if (!(await between())) return undefined;
  const started = performance.now();
  const cpu = process.cpuUsage();
  sweepStaleWarmUps(tmpRoot);
  const dir = mkdtempSync(path.join(tmpRoot, `${warmUpPrefix}${process.pid}-`));
  activeDir = dir;
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on('exit', () => {
      if (!activeDir) return;
      // The sample's queued cache packs first (the cache's own exit flush may run after this and would make the directory again).
      flushCache();
      rmSync(activeDir, { recursive: true, force: true });
    });
  }
  try {
    for (const [file, text] of Object.entries(warmUpSample())) {
      mkdirSync(path.join(dir, path.dirname(file)), { recursive: true });
      writeFileSync(path.join(dir, file), text);
    }
    // Neither hooks nor templates of the user's configuration: an index of the sample is all the engine reads.
    const git = createGit(dir, { env: { ...env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: os.devNull } });
    await git.run(['init', '-q']);
    await git.run(['add', '-A']);
    const references: Record<string, number> = {};
    let graphEdges = 0;
    const steps: Array<() => Promise<unknown>> = [
      async () => (references.sharedHelper = (await findReferences(dir, 'sharedHelper')).length),
      async () => (references['SharedHelper in go/p0/f0.go'] = (await findReferences(dir, 'SharedHelper', { definedIn: 'go/p0/f0.go' })).length),
      async () => (references.shared_helper = (await findReferences(dir, 'shared_helper')).length),
      async () => (references['shared_helper in src/part0/m0.rs'] = (await findReferences(dir, 'shared_helper', { definedIn: 'src/part0/m0.rs' })).length),
      async () => {
        const graph = await dependencyGraph(dir, ['ts/part1/m5.ts', 'tsx/part2/m6.tsx', 'js/part3/m7.js', 'go/p1/f9.go', 'py/part1/m9.py', 'src/part1/m9.rs']);
        for (const targets of [...Object.values(graph.dependsOn), ...Object.values(graph.dependedBy)]) graphEdges += targets.length;
      },
    ];
    for (const step of steps) {
      if (!(await between())) return undefined;
      await analysisCall(env, step);
    }
    const used = process.cpuUsage(cpu);
    return { ms: performance.now() - started, cpuMs: (used.user + used.system) / 1000, references, graphEdges };
  } finally {
    // The cache's packs for the sample are queued for after the call: written now, before the directory goes.
    flushCache();
    rmSync(dir, { recursive: true, force: true });
    if (activeDir === dir) activeDir = undefined;
  }
}
