import { execFile } from 'node:child_process';
import { hardenGitArgs, hostGitProcessEnvironment } from '../../git/harden.js';
import path from 'node:path';
import { promisify } from 'node:util';
import { realpath } from 'node:fs/promises';
import { PolywaveError } from '../../errors/polywave-error.js';
import { isProtocolOwnedPath } from '../../protocol/conflicts.js';
import { parseYamlSafe, toPlain } from '../../protocol/yaml/index.js';
import { saveCompletionReport } from '../../store/completion-report-file.js';
import { readTextFile } from '../../store/read-text.js';
import { manifestWriteOptions } from '../manifest-write-options.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { resolveManifestPath } from '../../store/resolve-path.js';

const flagFields: Array<[option: string, field: string]> = [
  ['status', 'status'],
  ['commit', 'commit'],
  ['worktree', 'worktree'],
  ['branch', 'branch'],
  ['filesChanged', 'files_changed'],
  ['filesCreated', 'files_created'],
  ['testsAdded', 'tests_added'],
  ['outOfScopeDeps', 'out_of_scope_deps'],
  ['verification', 'verification'],
  ['failureType', 'failure_type'],
  ['notes', 'notes'],
  ['repo', 'repo'],
];

async function readReportFile(source: string, io: CommandIo): Promise<Record<string, unknown>> {
  const text = source === '-' ? await io.readStdin() : await readTextFile(path.resolve(io.cwd, source));
  const parsed = parseYamlSafe(text);
  if (!parsed.ok) {
    const first = parsed.findings[0];
    throw new PolywaveError({ code: first?.code ?? 'V046_PARSE_ERROR', message: `report ${source === '-' ? 'from stdin' : source}: ${first?.message ?? 'not valid YAML/JSON'}` });
  }
  const duplicate = parsed.findings.find((finding) => finding.severity === 'error');
  if (duplicate) throw new PolywaveError({ code: duplicate.code, message: `report ${source === '-' ? 'from stdin' : source}: ${duplicate.message}` });
  const value = toPlain(parsed.document);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `report ${source === '-' ? 'from stdin' : source} must be a mapping of report fields` });
  }
  return value as Record<string, unknown>;
}

const blank = (value: unknown): boolean => value === undefined || value === null || (typeof value === 'string' && value.trim() === '');

const blankList = (value: unknown): boolean => value === undefined || value === null || (Array.isArray(value) && value.length === 0);

/** The wave's recorded `base_commit` (undefined when the manifest does not parse or has none). */
async function waveBase(implPath: string, wave: number): Promise<string | undefined> {
  try {
    const parsed = parseYamlSafe(await readTextFile(implPath));
    if (!parsed.ok) return undefined;
    const waves = (toPlain(parsed.document) as { waves?: Array<{ number?: unknown; base_commit?: unknown }> } | null)?.waves;
    const base = Array.isArray(waves) ? waves.find((item) => item?.number === wave)?.base_commit : undefined;
    return typeof base === 'string' && base.trim() !== '' ? base.trim() : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Issue 13: a `complete` report run from the agent's own worktree (as the Claude Code plugin's
 * agents do) takes what git knows and the report left out — commit, branch and worktree, and (F3)
 * when it names neither file list, files_created/files_changed from `git diff --name-status
 * <wave base>..HEAD` (the wave's `base_commit`, else where the branch left the main checkout's
 * HEAD) — but only when the checkout is that agent's worktree on that agent's branch
 * (`polywave/<slug>/wave<N>-agent-<ID>`), so a report can never borrow another branch's work.
 * Anywhere else G003 stands and the lists stay as given.
 */
async function fillFromWorktree(input: Record<string, unknown>, agentId: string, implPath: string, io: CommandIo): Promise<void> {
  const wantFiles = blankList(input.files_changed) && blankList(input.files_created);
  if (input.status !== 'complete' || (!blank(input.commit) && !wantFiles)) return;
  const directory = typeof input.worktree === 'string' && input.worktree.trim() !== '' ? path.resolve(io.cwd, input.worktree) : io.cwd;
  const run = promisify(execFile);
  // Hardened like every host git (no fsmonitor of the worktree's config; no credentials: X23-10).
  const git = async (args: string[], cwd = directory) => (await run('git', hardenGitArgs(['-C', cwd, ...args]), { env: hostGitProcessEnvironment(args, io.env), maxBuffer: 64 * 1024 * 1024 })).stdout.trim();
  try {
    const [top, branch, head] = await Promise.all([git(['rev-parse', '--show-toplevel']), git(['symbolic-ref', '--quiet', '--short', 'HEAD']), git(['rev-parse', 'HEAD'])]);
    const match = /^polywave\/([a-z0-9][a-z0-9-]*)\/wave(\d+)-agent-([A-Z][2-9]?)$/.exec(branch);
    if (!match || match[3] !== agentId) return;
    // The branch is this IMPL's and the checkout is exactly its E5 worktree in this IMPL's repository.
    const implSlug = /^IMPL-(.+)\.ya?ml$/.exec(path.basename(implPath))?.[1];
    const [, slug = '', wave = ''] = match;
    if (implSlug !== slug) return;
    const root = path.dirname(path.dirname(path.dirname(implPath)));
    const expected = path.join(root, '.claude', 'worktrees', 'polywave', slug, `wave${wave}-agent-${agentId}`);
    const [realTop, realExpected] = await Promise.all([realpath(top), realpath(expected).catch(() => '')]);
    if (realTop !== realExpected) return;
    if (!blank(input.branch) && input.branch !== branch) return;
    if (blank(input.commit)) input.commit = head;
    input.branch = branch;
    if (blank(input.worktree)) input.worktree = top;
    if (wantFiles) {
      const base = (await waveBase(implPath, Number(wave))) ?? (await git(['merge-base', 'HEAD', await git(['rev-parse', 'HEAD'], root)]));
      const entries = (await git(['diff', '--name-status', '--no-renames', '--no-ext-diff', '-z', `${base}..HEAD`, '--'])).split('\0');
      const created: string[] = [];
      const changed: string[] = [];
      for (let index = 0; index + 1 < entries.length; index += 2) {
        const file = entries[index + 1]!;
        if (file === '' || isProtocolOwnedPath(file)) continue;
        (entries[index]!.startsWith('A') ? created : changed).push(file);
      }
      input.files_created = created;
      input.files_changed = changed;
    }
  } catch {
    // Not a git checkout (or no HEAD, or no base): the writer's G003 says what is missing.
  }
}

/**
 * Issue 13 (F2): the writes the jail refused this agent — recorded in its denials store by the
 * plugin's PreToolUse hook (`polywave hook pre-tool-use`) or by run-agent — go into the report's
 * `out_of_scope_deps` (what the merge will lack), whatever the agent wrote there itself. The store
 * is the main checkout's `.polywave-state/<slug>/wave<N>/agent-<ID>/denials.jsonl`; [] when none.
 */
async function refusedWriteLines(implPath: string, agentId: string): Promise<string[]> {
  try {
    const slug = /^IMPL-(.+)\.ya?ml$/.exec(path.basename(implPath))?.[1];
    if (slug === undefined) return [];
    const parsed = parseYamlSafe(await readTextFile(implPath));
    if (!parsed.ok) return [];
    const waves = (toPlain(parsed.document) as { waves?: Array<{ number?: unknown; agents?: Array<{ id?: unknown }> }> } | null)?.waves;
    const wave = Array.isArray(waves) ? waves.find((item) => Array.isArray(item?.agents) && item.agents.some((agent) => agent?.id === agentId))?.number : undefined;
    if (typeof wave !== 'number') return [];
    const [{ ownershipDenials, readDenials, outOfScopeLine }, { journalPaths }] = await Promise.all([import('../../engine/jail-denials.js'), import('../../engine/journal.js')]);
    const root = path.dirname(path.dirname(path.dirname(implPath)));
    return ownershipDenials(await readDenials(journalPaths(root, slug, wave, agentId).dir)).map(outOfScopeLine);
  } catch {
    return [];
  }
}

/**
 * `set-completion <impl> --agent ID --status … [fields] [--file F|-]` — writes
 * `completion_reports.{ID}` through the locked, format-preserving writer, group-committed with
 * every other writer waiting at that moment, so any number of agents can report at the same time
 * without losing one another's reports (I4, I5, E14).
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  // Not shared.ts's implPathFrom: it loads the manifest parser, which only the process that writes needs.
  const filePath = resolveManifestPath(args[0] ?? '', { cwd: io.cwd, kind: 'impl' }).path;
  const input: Record<string, unknown> = typeof options.file === 'string' ? await readReportFile(options.file, io) : {};
  let agentId = typeof options.agent === 'string' ? options.agent.trim() : undefined;
  for (const key of ['agent', 'agent_id']) {
    if (key in input) {
      agentId ??= String(input[key]).trim();
      delete input[key];
    }
  }
  for (const [option, field] of flagFields) {
    if (options[option] !== undefined) input[field] = options[option];
  }
  if (!agentId) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: '--agent is required (or an `agent:` key in the report file)' });
  await fillFromWorktree(input, agentId, filePath, io);
  const refused = await refusedWriteLines(filePath, agentId);
  if (refused.length > 0) {
    const existing = Array.isArray(input.out_of_scope_deps) ? input.out_of_scope_deps.map(String) : typeof input.out_of_scope_deps === 'string' && input.out_of_scope_deps.trim() !== '' ? [input.out_of_scope_deps] : [];
    input.out_of_scope_deps = [...existing, ...refused.filter((line) => !existing.includes(line))];
  }
  const report = await saveCompletionReport(filePath, agentId, input, manifestWriteOptions(io.env));
  printJson(io, { agent: agentId, status: report.status, saved: true }, { compact: true });
  return 0;
}
