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
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createGit } from '../../git/git-cli.js';
import { flushCache } from './cache.js';
import { dependencyGraph, findReferences } from './index.js';
import { analysisCall } from './scope.js';
import { warmUpSample } from './warm-up-sample.js';

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

/**
 * Runs the engine's cold paths once on the sample in a private temporary directory (removed at the
 * end, also on failure). `between` is awaited before each step — the resident server waits there
 * for its running request to end — and ends the warm-up when it answers false (the server stops).
 */
export async function warmUpEngine(env: Readonly<Record<string, string | undefined>>, between: () => Promise<boolean> = async () => true): Promise<WarmUpResult | undefined> {
  const started = performance.now();
  const cpu = process.cpuUsage();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'polywave-warm-up-'));
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
  }
}
