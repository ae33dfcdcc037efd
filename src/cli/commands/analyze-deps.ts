import { statSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { dependencyGraph, isAnalysable, languageOf } from '../../analysis/engine/index.js';
import { listRepoFiles, repoContext } from '../../analysis/engine/repo-files.js';
import { repoRelative, requireFormat, requireRepository, toYaml, reportStats, configureEngine } from '../../analysis/engine/cli-support.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { analysisCall } from '../../analysis/engine/scope.js';

interface OutputNode {
  file: string;
  depends_on: string[];
  depended_by: string[];
  wave_candidate: number;
}

/**
 * The first cycle of a depth-first walk in sorted order, as a closed path (`a -> b -> a`), or
 * undefined. Iterative (an explicit stack): a chain of thousands of files never overflows the call stack.
 */
export function findCycle(files: readonly string[], dependsOn: (file: string) => readonly string[]): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const frames: Array<{ file: string; next: readonly string[]; index: number }> = [];
  for (const start of files) {
    if (state.has(start)) continue;
    state.set(start, 'open');
    stack.push(start);
    frames.push({ file: start, next: dependsOn(start), index: 0 });
    while (frames.length > 0) {
      const frame = frames[frames.length - 1]!;
      if (frame.index >= frame.next.length) {
        frames.pop();
        stack.pop();
        state.set(frame.file, 'done');
        continue;
      }
      const next = frame.next[frame.index]!;
      frame.index += 1;
      if (state.get(next) === 'open') return [...stack.slice(stack.indexOf(next)), next];
      if (!state.has(next)) {
        state.set(next, 'open');
        stack.push(next);
        frames.push({ file: next, next: dependsOn(next), index: 0 });
      }
    }
  }
  return undefined;
}

/** Longest dependency chain below each file (0 = no listed dependency) of an acyclic graph, computed without recursion. */
export function dependencyDepths(files: readonly string[], dependsOn: (file: string) => readonly string[]): Map<string, number> {
  const depth = new Map<string, number>();
  for (const start of files) {
    if (depth.has(start)) continue;
    const work: Array<{ file: string; expanded: boolean }> = [{ file: start, expanded: false }];
    while (work.length > 0) {
      const top = work[work.length - 1]!;
      if (depth.has(top.file)) {
        work.pop();
        continue;
      }
      const deps = dependsOn(top.file);
      if (!top.expanded) {
        top.expanded = true;
        for (const dep of deps) if (!depth.has(dep)) work.push({ file: dep, expanded: false });
        continue;
      }
      work.pop();
      depth.set(top.file, deps.reduce((max, dep) => Math.max(max, (depth.get(dep) ?? 0) + 1), 0));
    }
  }
  return depth;
}

/**
 * A comma-separated list split where a path has a comma of its own (`src/a,b/x.ts`): pieces that are no file
 * are joined with the ones after them while that makes a file.
 */
export function rejoinCommas(pieces: readonly string[], isFile: (file: string) => boolean): string[] {
  const result: string[] = [];
  for (let index = 0; index < pieces.length; index += 1) {
    let end = index;
    if (!isFile(pieces[index]!)) {
      for (let next = index + 1; next < pieces.length; next += 1) {
        if (isFile(pieces.slice(index, next + 1).join(','))) {
          end = next;
          break;
        }
      }
    }
    result.push(pieces.slice(index, end + 1).join(','));
    index = end;
  }
  return result;
}

/**
 * `analyze-deps <root> --files a,b,c [--format yaml|json]` (H3) — the dependency graph of the listed
 * files (imports resolved by the analysis engine, any mix of TS/JS/Go/Python/Rust), their depth
 * (longest dependency chain; wave = depth + 1) and the repository files outside the list that
 * import one of them (cascade candidates). Exit 1 on a dependency cycle (the message names it),
 * 2 on bad input.
 */
export function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  // One analysis call: repository roots and stats counters are this run's only (resident-safe).
  return analysisCall(io.env, () => runCall(args, options, io));
}

async function runCall(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  configureEngine(io.env);
  const format = requireFormat(options.format, ['yaml', 'json'] as const, 'yaml');
  const base = path.resolve(io.cwd, args[0] ?? (typeof options.repoDir === 'string' ? options.repoDir : '.'));
  const root = await requireRepository(base);
  const given = (Array.isArray(options.files) ? (options.files as string[]) : typeof options.files === 'string' ? options.files.split(',') : [])
    .map((file) => file.trim())
    .filter((file) => file !== '');
  if (given.length === 0) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: '--files is required: a comma-separated list of files' });
  const files = [...new Set(rejoinCommas(given, (file) => statSync(path.resolve(base, file), { throwIfNoEntry: false })?.isFile() ?? false).map((file) => repoRelative(root, base, file)))].sort();
  const excluded = files.find((file) => languageOf(file) !== undefined && !isAnalysable(file));
  if (excluded !== undefined) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${excluded}: excluded from analysis (agent worktrees, .polywave-state, node_modules, vendor and the Cargo build output under target are never analysed)` });
  }
  const unsupported = files.find((file) => !isAnalysable(file));
  if (unsupported !== undefined) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${unsupported}: not a TypeScript/JavaScript/Go/Python/Rust source file the engine analyses` });
  }
  // A stat per file, not a git listing: two git processes fewer per call.
  const present = await Promise.all(files.map((file) => stat(path.join(root, file)).then((stats) => stats.isFile(), () => false)));
  const missing = files.find((_, index) => !present[index]);
  if (missing !== undefined) throw new PolywaveError({ code: 'X002_FILE_READ', message: `${missing}: no such file in ${root}` });
  // The graph is built from tracked files: an untracked file's imports would be silently ignored.
  const tracked = new Set((await listRepoFiles(await repoContext(root), { only: files })).map((entry) => entry.file));
  const untracked = files.find((file) => !tracked.has(file));
  if (untracked !== undefined) throw new PolywaveError({ code: 'X002_FILE_READ', message: `${untracked}: not tracked by git (git add it first; analyze-deps reads tracked files only)` });

  const graph = await dependencyGraph(root, files);
  const listed = new Set(files);
  const dependsOn = (file: string) => graph.dependsOn[file]!.filter((target) => listed.has(target));
  const cycle = findCycle(files, dependsOn);
  if (cycle) {
    throw new PolywaveError({ code: 'V007_DEPENDENCY_CYCLE', message: `circular dependency detected: ${cycle.join(' -> ')}`, exitCode: 1, details: { cycle } });
  }
  const depth = dependencyDepths(files, dependsOn);
  const depthOf = (file: string): number => depth.get(file)!;
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
