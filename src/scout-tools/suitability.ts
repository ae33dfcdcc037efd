import { readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import { extractTopLevelSymbols } from '../analysis/symbols.js';
import { codeFamilyOf, lexSource } from '../analysis/source-lexer.js';
import { hasInlineTests, rustTestCode } from './references.js';

/** One requirement of a requirements/audit doc. */
export interface Requirement {
  id: string;
  description: string;
  files: string[];
}

/** Go `ItemStatus`, plus `evidence` (what the classification rests on). */
export interface ItemStatus {
  id: string;
  status: 'DONE' | 'PARTIAL' | 'TODO';
  file?: string;
  test_coverage?: 'none' | 'low' | 'medium' | 'high';
  completeness: number;
  missing: string[];
  evidence: string[];
}

/** Go `SuitabilityResult`. */
export interface SuitabilityResult {
  pre_implementation: {
    total_items: number;
    done: number;
    partial: number;
    todo: number;
    time_saved_minutes: number;
    item_status: ItemStatus[];
  };
}

/**
 * H1a requirements parsing (Go format): `## <ID>: <description>` headers with a `Location:
 * <path>[, <path>…]` line within the next 10 lines; or plain `<ID>: <description> | <path>`
 * lines. Backticks around paths are dropped.
 */
export function parseRequirements(text: string): Requirement[] {
  const lines = text.split(/\r?\n/);
  const requirements: Requirement[] = [];
  const splitFiles = (value: string) =>
    value
      .split(',')
      .map((file) => file.trim().replace(/^`|`$/g, '').trim())
      .filter((file) => file !== '');
  for (let index = 0; index < lines.length; index += 1) {
    const line = lines[index]!.trim();
    const header = /^##\s+([A-Za-z0-9_-]+):\s*(.+)$/.exec(line);
    if (header) {
      let files: string[] = [];
      for (let next = index + 1; next < Math.min(lines.length, index + 11); next += 1) {
        const candidate = lines[next]!.trim();
        if (/^##\s/.test(candidate)) break;
        const location = /^(?:[-*]\s*)?\**Location\**:\s*(.+)$/i.exec(candidate);
        if (location) {
          files = splitFiles(location[1]!);
          break;
        }
      }
      requirements.push({ id: header[1]!, description: header[2]!.trim(), files });
      continue;
    }
    const plain = /^([A-Za-z0-9_-]+):\s*([^|]+)\|\s*(.+)$/.exec(line);
    if (plain) requirements.push({ id: plain[1]!, description: plain[2]!.trim(), files: splitFiles(plain[3]!) });
  }
  return requirements;
}

/** Test files that cover `file`, by language convention (repo-relative candidates). */
export function testFileCandidates(file: string): string[] {
  const directory = path.posix.dirname(file);
  const extension = path.posix.extname(file);
  const stem = path.posix.basename(file, extension);
  const join = (...parts: string[]) => path.posix.join(...parts);
  switch (codeFamilyOf(file)) {
    case 'go':
      return [join(directory, `${stem}_test.go`)];
    case 'python':
      return [join(directory, `test_${stem}.py`), join(directory, `${stem}_test.py`), join(directory, 'tests', `test_${stem}.py`), join('tests', `test_${stem}.py`)];
    case 'rust':
      return [join('tests', `${stem}.rs`)];
    case 'typescript':
    case 'javascript':
      return [`.test${extension}`, `.spec${extension}`].flatMap((suffix) => [join(directory, `${stem}${suffix}`), join(directory, '__tests__', `${stem}${suffix}`), join('test', `${stem}${suffix}`)]);
    default:
      return [];
  }
}

const unfinishedCode = /\b(?:not implemented|NotImplementedError|unimplemented!|todo!|placeholder|stub)\b/i;
const unfinishedComment = /\b(?:TODO|FIXME|HACK|XXX)\b/;

async function readText(filePath: string): Promise<string | undefined> {
  return readFile(filePath, 'utf8').catch(() => undefined);
}

/** The `missing` entry of a Location that points outside the repository. */
export const outsideRepository = 'location outside the repository';

/**
 * The real path of `file` (repo-relative) when it lies inside `repoRoot`; undefined when it does
 * not: an absolute path (`/…`, `C:\…`, `\\server\…`), a path whose `..` climbs above the root,
 * or one that resolves through a symlink (of the file or a directory on the way) to a place
 * outside the root's real path. A path that does not exist yet passes on the lexical check alone.
 */
export async function pathInsideRepo(repoRoot: string, file: string): Promise<string | undefined> {
  if (path.isAbsolute(file) || path.win32.isAbsolute(file) || /^[A-Za-z]:/.test(file)) return undefined;
  const normalized = path.posix.normalize(file.replace(/\\/g, '/'));
  if (normalized === '..' || normalized.startsWith('../')) return undefined;
  const joined = path.join(repoRoot, normalized);
  const realRoot = await realpath(repoRoot).catch(() => path.resolve(repoRoot));
  const real = await realpath(joined).catch(() => undefined);
  if (real === undefined) return joined;
  return real === realRoot || real.startsWith(realRoot + path.sep) ? real : undefined;
}

/**
 * One file: outside the repository (see {@link pathInsideRepo}) → TODO with missing
 * ["location outside the repository"], nothing read; missing → TODO; no definition (function, class, type… from the symbol extractor,
 * any of the four languages) and fewer than 5 code lines → TODO; TODO/FIXME/HACK/XXX in a
 * comment or stub markers in code (`not implemented`, `NotImplementedError`, `todo!()`,
 * `unimplemented!()`, placeholder) → PARTIAL 0.6; test coverage by the conventional test file's
 * size (>100 lines high, ≥50 medium, else low; for Rust, the lines of its inline `#[cfg(test)]` items) — none
 * or low → PARTIAL 0.7; else DONE.
 */
export async function classifyFile(repoRoot: string, requirement: Requirement, file: string): Promise<ItemStatus> {
  const status: ItemStatus = { id: requirement.id, status: 'TODO', file, completeness: 0, missing: [], evidence: [] };
  const filePath = await pathInsideRepo(repoRoot, file);
  if (filePath === undefined) return { ...status, test_coverage: 'none', missing: [outsideRepository] };
  const text = await readText(filePath);
  if (text === undefined) {
    return { ...status, test_coverage: 'none', missing: ['file does not exist'] };
  }
  const source = lexSource(file, text);
  const symbols = codeFamilyOf(file) ? extractTopLevelSymbols(file, text) : [];
  const codeLines = source.code.split('\n').filter((line) => {
    const trimmed = line.trim();
    return trimmed !== '' && !/^(package|import|from|use|mod)\b/.test(trimmed) && !/^[{}()[\];,]*$/.test(trimmed);
  }).length;
  if (symbols.length > 0) status.evidence.push(`defines ${symbols.slice(0, 8).map((symbol) => symbol.name).join(', ')}${symbols.length > 8 ? ', …' : ''}`);
  status.evidence.push(`${codeLines} code line(s)`);
  let coverage: NonNullable<ItemStatus['test_coverage']> = 'none';
  for (const candidate of testFileCandidates(file)) {
    const testPath = await pathInsideRepo(repoRoot, candidate);
    const testText = testPath === undefined ? undefined : await readText(testPath);
    if (testText === undefined) continue;
    const lines = testText.split('\n').length;
    coverage = lines > 100 ? 'high' : lines >= 50 ? 'medium' : 'low';
    status.evidence.push(`test file ${candidate} (${lines} lines)`);
    break;
  }
  if (coverage === 'none' && hasInlineTests(file, text)) {
    // (the test-only items' own lines, merged — library code after a closed `mod tests { … }` is not test code, a
    // nested `#[cfg(test)]` item is not counted twice (X63-10) —, and every line of a `#[cfg(test)] mod tests;`'s file: X63-07)
    const textOf = async (candidate: string) => {
      const candidatePath = await pathInsideRepo(repoRoot, candidate);
      return candidatePath === undefined ? undefined : readText(candidatePath);
    };
    const code = await rustTestCode(path.posix.normalize(file.replace(/\\/g, '/')), text, async (candidate) => (await textOf(candidate)) !== undefined);
    let lines = code.ranges.reduce((sum, [first, last]) => sum + last - first + 1, 0);
    if (lines > 0) status.evidence.push(`inline #[cfg(test)] module (${lines} lines)`);
    for (const moduleFile of code.moduleFiles) {
      const moduleLines = (await textOf(moduleFile))?.split('\n').length ?? 0;
      lines += moduleLines;
      status.evidence.push(`#[cfg(test)] module file ${moduleFile} (${moduleLines} lines)`);
    }
    if (lines > 0) coverage = lines > 100 ? 'high' : lines >= 50 ? 'medium' : 'low';
  }
  status.test_coverage = coverage;
  const comments = source.comments.map((comment) => text.slice(comment.start, comment.end)).join('\n');
  const marker = unfinishedComment.exec(comments)?.[0] ?? unfinishedCode.exec(text)?.[0];
  if (symbols.length === 0 && codeLines < 5) return { ...status, status: 'TODO', completeness: 0, missing: ['no implementation found'] };
  if (marker !== undefined) return { ...status, status: 'PARTIAL', completeness: 0.6, missing: ['contains TODO/FIXME/stub markers'], evidence: [...status.evidence, `marker: ${marker}`] };
  if (coverage === 'low' || coverage === 'none') return { ...status, status: 'PARTIAL', completeness: 0.7, missing: ['insufficient test coverage'] };
  return { ...status, status: 'DONE', completeness: 1 };
}

const rank = { TODO: 0, PARTIAL: 1, DONE: 2 } as const;
const coverageRank = { none: 0, low: 1, medium: 2, high: 3 } as const;

/** H1a over the repository: per requirement the worst status of its files, mean completeness; `time_saved_minutes` = 7·DONE + 3·PARTIAL (Go). */
export async function analyzeSuitability(repoRoot: string, requirements: readonly Requirement[]): Promise<SuitabilityResult> {
  const items: ItemStatus[] = [];
  for (const requirement of requirements) {
    const statuses = await Promise.all(requirement.files.map((file) => classifyFile(repoRoot, requirement, file)));
    if (statuses.length === 0) {
      items.push({ id: requirement.id, status: 'TODO', completeness: 0, missing: ['no files specified'], evidence: [] });
      continue;
    }
    const worst = statuses.reduce((current, next) => (rank[next.status] < rank[current.status] ? next : current));
    const coverages = statuses.map((status) => status.test_coverage).filter((value): value is NonNullable<ItemStatus['test_coverage']> => value !== undefined);
    const coverage = coverages.length > 0 ? coverages.reduce((current, next) => (coverageRank[next] < coverageRank[current] ? next : current)) : undefined;
    items.push({
      id: requirement.id,
      status: worst.status,
      file: statuses[0]!.file!,
      ...(coverage ? { test_coverage: coverage } : {}),
      completeness: Math.round((statuses.reduce((sum, status) => sum + status.completeness, 0) / statuses.length) * 1000) / 1000,
      missing: statuses.flatMap((status) => status.missing),
      evidence: statuses.flatMap((status) => (statuses.length > 1 ? status.evidence.map((line) => `${status.file}: ${line}`) : status.evidence)),
    });
  }
  const count = (value: ItemStatus['status']) => items.filter((item) => item.status === value).length;
  const done = count('DONE');
  const partial = count('PARTIAL');
  return { pre_implementation: { total_items: items.length, done, partial, todo: count('TODO'), time_saved_minutes: done * 7 + partial * 3, item_status: items } };
}
