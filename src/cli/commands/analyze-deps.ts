import { stat } from 'node:fs/promises';
import path from 'node:path';
import { dependencyGraph, isAnalysable } from '../../analysis/engine/index.js';
import { repoRelative, requireFormat, requireRepository, toYaml, reportStats, configureEngine } from '../../analysis/engine/cli-support.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';

interface OutputNode {
  file: string;
  depends_on: string[];
  depended_by: string[];
  wave_candidate: number;
}

/** The first cycle of a depth-first walk in sorted order, as a closed path (`a -> b -> a`), or undefined. */
export function findCycle(files: readonly string[], dependsOn: (file: string) => readonly string[]): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (file: string): string[] | undefined => {
    state.set(file, 'open');
    stack.push(file);
    for (const next of dependsOn(file)) {
      if (state.get(next) === 'open') return [...stack.slice(stack.indexOf(next)), next];
      if (!state.has(next)) {
        const cycle = visit(next);
        if (cycle) return cycle;
      }
    }
    stack.pop();
    state.set(file, 'done');
    return undefined;
  };
  for (const file of files) {
    if (state.has(file)) continue;
    const cycle = visit(file);
    if (cycle) return cycle;
  }
  return undefined;
}

/**
 * `analyze-deps <root> --files a,b,c [--format yaml|json]` (H3) — the dependency graph of the listed
 * files (imports resolved by the analysis engine, any mix of TS/JS/Go/Python/Rust), their depth
 * (longest dependency chain; wave = depth + 1) and the repository files outside the list that
 * import one of them (cascade candidates). Exit 1 on a dependency cycle (the message names it),
 * 2 on bad input.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  configureEngine(io.env);
  const format = requireFormat(options.format, ['yaml', 'json'] as const, 'yaml');
  const base = path.resolve(io.cwd, args[0] ?? (typeof options.repoDir === 'string' ? options.repoDir : '.'));
  const root = await requireRepository(base);
  const given = (Array.isArray(options.files) ? (options.files as string[]) : typeof options.files === 'string' ? options.files.split(',') : [])
    .map((file) => file.trim())
    .filter((file) => file !== '');
  if (given.length === 0) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: '--files is required: a comma-separated list of files' });
  const files = [...new Set(given.map((file) => repoRelative(root, base, file)))].sort();
  const unsupported = files.find((file) => !isAnalysable(file));
  if (unsupported !== undefined) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${unsupported}: not a TypeScript/JavaScript/Go/Python/Rust source file the engine analyses` });
  }
  // A stat per file, not a git listing: two git processes fewer per call.
  const present = await Promise.all(files.map((file) => stat(path.join(root, file)).then((stats) => stats.isFile(), () => false)));
  const missing = files.find((_, index) => !present[index]);
  if (missing !== undefined) throw new PolywaveError({ code: 'X002_FILE_READ', message: `${missing}: no such file in ${root}` });

  const graph = await dependencyGraph(root, files);
  const listed = new Set(files);
  const dependsOn = (file: string) => graph.dependsOn[file]!.filter((target) => listed.has(target));
  const cycle = findCycle(files, dependsOn);
  if (cycle) {
    throw new PolywaveError({ code: 'V007_DEPENDENCY_CYCLE', message: `circular dependency detected: ${cycle.join(' -> ')}`, exitCode: 1, details: { cycle } });
  }
  const depth = new Map<string, number>();
  const depthOf = (file: string): number => {
    const known = depth.get(file);
    if (known !== undefined) return known;
    const value = Math.max(-1, ...dependsOn(file).map(depthOf)) + 1;
    depth.set(file, value);
    return value;
  };
  const nodes: OutputNode[] = files.map((file) => ({
    file,
    depends_on: dependsOn(file),
    depended_by: graph.dependedBy[file]!.filter((source) => listed.has(source)),
    wave_candidate: depthOf(file),
  }));
  const waves = new Map<number, string[]>();
  for (const node of nodes) {
    const wave = node.wave_candidate + 1;
    waves.set(wave, [...(waves.get(wave) ?? []), node.file]);
  }
  const importers = new Map<string, string[]>();
  for (const file of files) {
    for (const source of graph.dependedBy[file]!) if (!listed.has(source)) importers.set(source, [...(importers.get(source) ?? []), file]);
  }
  const cascades = [...importers.keys()].sort().map((file) => ({ file, reason: `imports ${importers.get(file)!.join(', ')}`, type: 'importer' }));
  const sortedWaves = [...waves.keys()].sort((a, b) => a - b);
  if (format === 'json') {
    printJson(io, { nodes, waves: Object.fromEntries(sortedWaves.map((wave) => [String(wave), waves.get(wave)])), ...(cascades.length > 0 ? { cascade_candidates: cascades } : {}) });
  } else {
    io.stdout(toYaml({ nodes, waves: new Map(sortedWaves.map((wave) => [wave, waves.get(wave)])), ...(cascades.length > 0 ? { cascade_candidates: cascades } : {}) }));
  }
  reportStats(io.env, io.stderr);
  return 0;
}
