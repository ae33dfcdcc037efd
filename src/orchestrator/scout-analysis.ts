/**
 * The Scout's toolbox, run by `run-scout` itself (issue 15, item 3):
 *
 * - before the model is called: H1a (`analyze-suitability`) when the feature text is a
 *   requirements document (`## ID: …` + `Location:` lines), and H3 (`analyze-deps`) over the
 *   repository files the feature names — their results fill the Scout prompt's input slots;
 * - after the Scout wrote the IMPL: E45 (shared types not scaffolded) and E46 (test files that
 *   call a changed symbol and that no agent owns) — blocking findings that go back to the Scout
 *   through the E16 correction loop — and E35 (a call across agents with no `wiring` entry), a
 *   warning that goes with them when there is a correction to make.
 *
 * Everything here is best-effort: a tool that fails (or runs past its time bound) is a note in the
 * `automation` step, never a failed Scout.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { dependencyGraph } from '../analysis/engine/index.js';
import { isAnalysable } from '../analysis/engine/repo-files.js';
import type { Finding } from '../errors/finding.js';
import { runGit } from '../git/run-git.js';
import type { ImplManifest } from '../protocol/schema/impl-schema.js';
import { detectSharedTypes, suggestedScaffoldFile } from '../scout-tools/shared-types.js';
import { analyzeSuitability, parseRequirements } from '../scout-tools/suitability.js';
import { checkTestCascade } from '../scout-tools/test-cascade.js';
import { detectWiring } from '../scout-tools/wiring-detect.js';

/** Stable codes of the post-write checks (E16 correction loop). */
export const scoutCheckCodes = {
  sharedTypeNotScaffolded: 'E45_SHARED_TYPE_NOT_SCAFFOLDED',
  orphanedTestCaller: 'E46_TEST_CASCADE_ORPHAN',
  undeclaredWiring: 'E35_WIRING_UNDECLARED',
} as const;

/** What the pre-model tools found, as prompt text, plus a one-line note per tool. */
export interface ScoutPreAnalysis {
  suitabilityScan?: string;
  dependencyAnalysis?: string;
  notes: string[];
}

/** Bounded: a tool still running after `ms` is given up on (its result is only a hint). */
async function bounded<T>(work: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), ms);
    timer.unref();
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    if (timer) clearTimeout(timer);
  }
}

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error)).split('\n')[0]!;

/** Repository files the feature text names (`src/a.ts`, `pkg/x/y.go`), tracked and analysable; at most 40. */
export async function filesNamedIn(feature: string, repoDir: string, env?: Readonly<Record<string, string | undefined>>): Promise<string[]> {
  const candidates = new Set<string>();
  for (const match of feature.matchAll(/(?:^|[\s`'"(,[])((?:[\w.-]+\/)*[\w.-]+\.[A-Za-z]{1,5})(?=$|[\s`'"),:;\]])/gm)) {
    const file = match[1]!.replace(/^\.\//, '');
    if (!file.startsWith('../') && isAnalysable(file)) candidates.add(file);
  }
  if (candidates.size === 0) return [];
  const listed = await runGit(['ls-files', '-z', '--', ...candidates], { cwd: repoDir, ...(env ? { env } : {}) }).catch(() => '');
  return listed
    .split('\0')
    .filter((file) => file !== '' && existsSync(path.join(repoDir, file)))
    .slice(0, 40);
}

/** H3 as text: each named file, what it depends on and what depends on it, and wave candidates by depth. */
function formatDependencies(files: readonly string[], graph: { dependsOn: Record<string, string[]>; dependedBy: Record<string, string[]> }): string {
  const inSet = new Set(files);
  const depth = new Map<string, number>();
  const visiting = new Set<string>();
  const depthOf = (file: string): number => {
    const known = depth.get(file);
    if (known !== undefined) return known;
    if (visiting.has(file)) return 0; // a cycle: reported below, depth stops here
    visiting.add(file);
    const deps = (graph.dependsOn[file] ?? []).filter((dep) => inSet.has(dep) && dep !== file);
    const value = deps.length === 0 ? 0 : 1 + Math.max(...deps.map(depthOf));
    visiting.delete(file);
    depth.set(file, value);
    return value;
  };
  const lines: string[] = [];
  for (const file of files) {
    const deps = graph.dependsOn[file] ?? [];
    const users = graph.dependedBy[file] ?? [];
    lines.push(`${file}  (wave candidate ${depthOf(file) + 1})`);
    if (deps.length > 0) lines.push(`  depends on: ${deps.slice(0, 15).join(', ')}${deps.length > 15 ? ` … (${deps.length})` : ''}`);
    const outside = users.filter((user) => !inSet.has(user));
    if (users.length > 0) lines.push(`  depended on by: ${users.slice(0, 15).join(', ')}${users.length > 15 ? ` … (${users.length})` : ''}`);
    if (outside.length > 0) lines.push(`  cascade candidates (not named in the feature): ${outside.slice(0, 15).join(', ')}${outside.length > 15 ? ' …' : ''}`);
  }
  return lines.join('\n');
}

/** H1a + H3 before the Scout runs. */
export async function preScoutAnalysis(input: { feature: string; repoDir: string; env?: Readonly<Record<string, string | undefined>>; timeoutMs?: number }): Promise<ScoutPreAnalysis> {
  const timeoutMs = input.timeoutMs ?? 20_000;
  const notes: string[] = [];
  const result: ScoutPreAnalysis = { notes };

  const requirements = parseRequirements(input.feature).filter((requirement) => requirement.files.length > 0);
  const suitability = requirements.length === 0 ? undefined : bounded(analyzeSuitability(input.repoDir, requirements), timeoutMs);
  const named = filesNamedIn(input.feature, input.repoDir, input.env);
  const deps = named.then((files) => (files.length === 0 ? undefined : bounded(dependencyGraph(input.repoDir, files).then((graph) => ({ files, graph })), timeoutMs)));

  if (suitability) {
    try {
      const scan = await suitability;
      if (scan === 'timeout') notes.push(`H1a analyze-suitability gave up after ${timeoutMs} ms`);
      else {
        const summary = scan.pre_implementation;
        result.suitabilityScan = [
          `${summary.total_items} requirement(s): ${summary.done} DONE, ${summary.partial} PARTIAL, ${summary.todo} TODO`,
          ...summary.item_status.map((item) => `${item.id}: ${item.status}${item.file ? ` (${item.file})` : ''}${item.missing.length > 0 ? ` — missing: ${item.missing.join('; ')}` : ''}${item.evidence.length > 0 ? ` — evidence: ${item.evidence.slice(0, 3).join('; ')}` : ''}`),
        ].join('\n');
        notes.push(`H1a: ${summary.done} DONE, ${summary.partial} PARTIAL, ${summary.todo} TODO`);
      }
    } catch (error) {
      notes.push(`H1a analyze-suitability failed: ${errorText(error)}`);
    }
  }
  try {
    const analysed = await deps;
    if (analysed === 'timeout') notes.push(`H3 analyze-deps gave up after ${timeoutMs} ms`);
    else if (analysed) {
      result.dependencyAnalysis = formatDependencies(analysed.files, analysed.graph);
      notes.push(`H3: ${analysed.files.length} file(s) named in the feature analysed`);
    }
  } catch (error) {
    notes.push(`H3 analyze-deps failed: ${errorText(error)}`);
  }
  return result;
}

/**
 * E45/E46/E35 on the IMPL the Scout wrote: blocking findings for the correction prompt. A
 * NOT_SUITABLE verdict (no waves) has nothing to check. Returns notes for checks that failed.
 */
export async function postScoutChecks(input: { manifest: ImplManifest; repoDir: string; timeoutMs?: number }): Promise<{ findings: Finding[]; notes: string[] }> {
  const { manifest, repoDir } = input;
  const findings: Finding[] = [];
  const notes: string[] = [];
  if (manifest.waves.length === 0) return { findings, notes };

  // E45: a type two agents of a wave touch, defined by one of them (or by both), not scaffolded.
  try {
    const owned = new Set(manifest.file_ownership.map((row) => row.file ?? ''));
    // A scaffold file nobody owns: beside the definer, or in a types/ directory when that name is taken.
    const scaffoldFileFor = (candidate: Parameters<typeof suggestedScaffoldFile>[0]) => {
      const suggested = suggestedScaffoldFile(candidate);
      return owned.has(suggested) ? path.posix.join(path.posix.dirname(suggested), 'types', path.posix.basename(suggested)) : suggested;
    };
    for (const candidate of detectSharedTypes(manifest)) {
      findings.push({
        code: scoutCheckCodes.sharedTypeNotScaffolded,
        severity: 'error',
        field: 'scaffolds',
        message: `E45: type ${candidate.type_name} is used by agents ${candidate.referencing_agents.join(', ')} of one wave but is not scaffolded — ${candidate.reason}`,
        suggestion: `add a scaffolds entry (file_path e.g. ${scaffoldFileFor(candidate)}, contents with the type definition only, status: pending) and have the agents import it instead of defining it`,
      });
    }
  } catch (error) {
    notes.push(`E45 detect-shared-types failed: ${errorText(error)}`);
  }

  // E46: a test file that calls a symbol whose signature the plan changes, owned by nobody.
  try {
    const orphans = await bounded(checkTestCascade({ manifest, repoRoot: repoDir }), input.timeoutMs ?? 30_000);
    if (orphans === 'timeout') notes.push('E46 check-test-cascade gave up (time bound)');
    else {
      const byFile = new Map<string, typeof orphans>();
      for (const orphan of orphans) byFile.set(orphan.test_file, [...(byFile.get(orphan.test_file) ?? []), orphan]);
      for (const [file, entries] of byFile) {
        const first = entries[0]!;
        findings.push({
          code: scoutCheckCodes.orphanedTestCaller,
          severity: 'error',
          field: 'file_ownership',
          message: `E46: ${file}:${first.line} calls ${[...new Set(entries.map((entry) => entry.symbol))].join(', ')}, which agent(s) ${first.agents.join(', ')} change, but no agent owns ${file} — it breaks after the merge`,
          suggestion: `give ${file} to agent ${first.agents[0]} (same wave) in file_ownership and say in its task to update the test`,
        });
      }
    }
  } catch (error) {
    notes.push(`E46 check-test-cascade failed: ${errorText(error)}`);
  }

  // E35: an agent's task calls a symbol another agent defines, with no wiring entry for it.
  try {
    const declared = new Set(manifest.wiring.map((entry) => `${entry.symbol ?? ''}`));
    for (const wiring of detectWiring(manifest)) {
      if (declared.has(wiring.symbol)) continue;
      findings.push({
        code: scoutCheckCodes.undeclaredWiring,
        // Advisory: detect-wiring reads prose (E35: "~80% reliable; Scout should review"). It goes
        // into a correction prompt beside the blocking findings, but never forces an attempt.
        severity: 'warning',
        field: 'wiring',
        message: `E35: agent ${wiring.agent}'s task calls ${wiring.symbol} (defined in ${wiring.defined_in}, another agent's file) but wiring declares no call of it`,
        suggestion: `add to wiring: {symbol: ${wiring.symbol}, defined_in: ${wiring.defined_in}, must_be_called_from: ${wiring.must_be_called_from}, agent: ${wiring.agent}, wave: ${wiring.wave}, integration_pattern: ${wiring.integration_pattern}}`,
      });
    }
  } catch (error) {
    notes.push(`E35 detect-wiring failed: ${errorText(error)}`);
  }
  return { findings, notes };
}
