/**
 * The decisions behind `polywave hook <event>`: what the Claude Code plugin's hooks
 * (claude-plugin/hooks/hooks.json) ask polywave on every tool call and every subagent stop.
 *
 * - PreToolUse (E43, I1, I6): a write or shell command of a wave agent is checked by the same
 *   worktree jail our own backends use (`createJail(...).checkToolUse`): the agent's worktree is
 *   the root, its `.polywave-ownership.json` the owned files. The worktree is found from
 *   `POLYWAVE_AGENT_WORKTREE`, else from the session's cwd, else from the target path (a write
 *   into any agent worktree is held to that worktree's ownership, whoever writes). A wave agent
 *   with no worktree in sight may not write at all; a Scout writes only `docs/IMPL/IMPL-*.yaml`
 *   (I6); a critic writes no file (its report goes through `set-critic-review`). Anything else
 *   gets no opinion, so the user's own permission rules decide.
 * - PostToolUse (E16): a write to `docs/IMPL/IMPL-*.yaml` is validated; an invalid manifest is
 *   sent back to the model.
 * - SubagentStop (E42, E48): a tagged wave agent stops only with its report on record, its
 *   changes inside its ownership (I1), at least one commit when it reports complete (I5), on its
 *   branch in its worktree (E12) and no stubs in a complete report (E20); a critic only with a
 *   `critic_report` that is committed; a Scout only with a manifest that validates.
 *
 * Agents are recognised by their subagent type (`polywave-wave-agent`, `polywave-scout`, …,
 * with or without the `polywave:` plugin prefix) and, for the stop checks, by the tag the skill
 * puts on the first line of every launch prompt: `[polywave:wave1:agent-A] IMPL=/abs/IMPL.yaml`.
 */
import { existsSync, openSync, readSync, closeSync, readFileSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { createJail } from '../agents/jail/jail.js';
import type { JailDecision } from '../agents/jail/types.js';
import { ownershipFileName, type OwnershipRecord } from '../engine/brief.js';
import { activeImplPath } from '../engine/isolation-hook.js';
import { createGit } from '../git/git-cli.js';
import type { CommandIo, CommandResult } from './io.js';

/** The fields of a Claude Code hook payload we read (everything else is ignored). */
export interface HookPayload {
  hook_event_name?: string;
  tool_name?: string;
  tool_input?: Record<string, unknown>;
  tool_response?: unknown;
  cwd?: string;
  agent_id?: string;
  agent_type?: string;
  agent_transcript_path?: string;
  transcript_path?: string;
  stop_hook_active?: boolean;
}

/** A polywave role a subagent type maps to. */
export type HookRole = 'wave' | 'scout' | 'critic' | 'integration' | 'scaffold';

/** What the hook decided. `pass`: no opinion (Claude Code's own permission rules decide). */
export interface HookDecision {
  event: 'pre-tool-use' | 'post-tool-use' | 'subagent-stop';
  action: 'pass' | 'deny' | 'block';
  code?: string;
  reason?: string;
  /** The agent worktree the decision was made against, when there is one. */
  worktree?: string;
  /** How that worktree was found: the caller's cwd, `POLYWAVE_AGENT_WORKTREE`, or the path the call names. */
  via?: 'cwd' | 'env' | 'target';
  /** The worktree-relative path the jail refused to write, when it knows it (a Bash redirection: the call names no file). */
  target?: string;
  role?: HookRole;
  tool?: string;
}

const writeTools = new Set(['Write', 'Edit', 'MultiEdit', 'NotebookEdit']);
const maxWalkUp = 64;
const maxTranscriptBytes = 512 * 1024;

/** Maps a subagent type (`polywave-wave-agent`, `polywave:polywave-wave-agent`) to its role. */
export function roleOfAgentType(agentType: string | undefined): HookRole | undefined {
  if (typeof agentType !== 'string') return undefined;
  const name = agentType.slice(agentType.lastIndexOf(':') + 1).trim();
  switch (name) {
    case 'polywave-wave-agent':
      return 'wave';
    case 'polywave-scout':
      return 'scout';
    case 'polywave-critic':
      return 'critic';
    case 'polywave-integration-agent':
      return 'integration';
    case 'polywave-scaffold-agent':
      return 'scaffold';
    default:
      return undefined;
  }
}

/** The nearest directory at or above `start` holding `.polywave-ownership.json` (an agent worktree). */
export function findAgentWorktree(start: string): string | undefined {
  let current = path.resolve(start);
  for (let step = 0; step < maxWalkUp; step += 1) {
    if (existsSync(path.join(current, ownershipFileName))) return current;
    const parent = path.dirname(current);
    if (parent === current) return undefined;
    current = parent;
  }
  return undefined;
}

function readOwnership(worktree: string): OwnershipRecord | undefined {
  try {
    const filePath = path.join(worktree, ownershipFileName);
    if (statSync(filePath).size > 1024 * 1024) return undefined;
    const value: unknown = JSON.parse(readFileSync(filePath, 'utf8'));
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
    const record = value as Partial<OwnershipRecord>;
    return { ...record, owned_files: Array.isArray(record.owned_files) ? record.owned_files.filter((item): item is string => typeof item === 'string') : [] } as OwnershipRecord;
  } catch {
    return undefined;
  }
}

function targetOf(tool: string, input: Record<string, unknown>): string | undefined {
  const field = tool === 'NotebookEdit' ? 'notebook_path' : 'file_path';
  return typeof input[field] === 'string' ? (input[field] as string) : undefined;
}

/** `cd <dir> && …` at the start of a command: the directory (quotes removed), else undefined. */
export function leadingCdDirectory(command: string): string | undefined {
  const match = /^\s*cd\s+("([^"]+)"|'([^']+)'|([^\s;&|]+))\s*&&/.exec(command);
  return match ? (match[2] ?? match[3] ?? match[4]) : undefined;
}

async function jailDecision(worktree: string, tool: string, input: Record<string, unknown>): Promise<JailDecision> {
  const ownership = readOwnership(worktree);
  if (ownership === undefined) return { allowed: false, code: 'JAIL_NOT_OWNED', reason: `${path.join(worktree, ownershipFileName)} cannot be read, so no write is allowed here (fail closed)` };
  const implDoc = typeof ownership.impl_doc === 'string' && ownership.impl_doc !== '' ? ownership.impl_doc : undefined;
  const jail = await createJail({
    root: worktree,
    ownedFiles: ownership.owned_files,
    ...(typeof ownership.branch === 'string' && ownership.branch !== '' ? { branch: ownership.branch } : {}),
    ...(implDoc ? { readablePaths: [implDoc] } : {}),
  });
  if (tool === 'Bash' && implDoc !== undefined && typeof input.command === 'string') {
    return await jail.checkToolUse(tool, { ...input, command: withoutReportCalls(input.command, implDoc) });
  }
  return await jail.checkToolUse(tool, input);
}

/** The report channel of a CLI agent (I4): polywave commands that take the IMPL path and write or read only through its locked writer. */
const reportCommands = ['set-completion', 'check-completion', 'update-status', 'agent-status', 'validate', 'extract-context', 'journal-context'];

/**
 * I4: `polywave set-completion <IMPL> …` is how a plugin wave agent files its report, and the IMPL
 * lives in the main checkout, outside the jail. Each such call naming exactly this agent's IMPL
 * (`impl_doc` of its ownership record) is checked as if the path were inside the worktree; any
 * other mention of the path still counts as leaving the worktree.
 */
export function withoutReportCalls(command: string, implDoc: string): string {
  const escaped = implDoc.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const call = new RegExp(`((?:npx\\s+(?:--no-install\\s+)?)?(?:polywave|polywave-tools|sawtools)\\s+(?:${reportCommands.join('|')})\\s+)(["']?)${escaped}\\2(?=\\s|$|;|&|\\|)`, 'g');
  return command.replace(call, '$1.polywave-impl.yaml');
}

/** PreToolUse: see the file comment. */
export async function decidePreToolUse(payload: HookPayload, io: Pick<CommandIo, 'cwd' | 'env'>): Promise<HookDecision> {
  const tool = typeof payload.tool_name === 'string' ? payload.tool_name : '';
  const input = payload.tool_input !== null && typeof payload.tool_input === 'object' ? payload.tool_input : {};
  const role = roleOfAgentType(payload.agent_type);
  const base: HookDecision = { event: 'pre-tool-use', action: 'pass', tool, ...(role ? { role } : {}) };
  if (!writeTools.has(tool) && tool !== 'Bash') return base;
  const cwd = typeof payload.cwd === 'string' && path.isAbsolute(payload.cwd) ? payload.cwd : io.cwd;

  let worktree: string | undefined;
  let via: HookDecision['via'] = 'cwd';
  const fromEnv = io.env.POLYWAVE_AGENT_WORKTREE?.trim();
  if (fromEnv) {
    worktree = path.resolve(cwd, fromEnv);
    via = 'env';
  } else worktree = findAgentWorktree(cwd);
  if (worktree === undefined) {
    via = 'target';
    if (tool === 'Bash') {
      const directory = typeof input.command === 'string' ? leadingCdDirectory(input.command) : undefined;
      if (directory !== undefined && path.isAbsolute(directory)) worktree = findAgentWorktree(directory);
    } else {
      const target = targetOf(tool, input);
      if (target !== undefined) worktree = findAgentWorktree(path.dirname(path.resolve(cwd, target)));
    }
  }

  if (worktree !== undefined) {
    let decision: JailDecision;
    try {
      decision = await jailDecision(worktree, tool, input);
    } catch (error) {
      decision = { allowed: false, code: 'JAIL_BASH_UNSAFE', reason: `the worktree jail could not check this call (${error instanceof Error ? error.message : String(error)}), so it was refused (fail closed)` };
    }
    if (decision.allowed) return { ...base, worktree };
    return { ...base, action: 'deny', code: decision.code, reason: `[polywave E43 ${decision.code}] ${decision.reason}`, worktree, via, ...(decision.target !== undefined ? { target: decision.target } : {}) };
  }

  if (role === 'wave') {
    const reason = tool === 'Bash'
      ? '[polywave E43] a wave agent runs commands in its own worktree: start the command with `cd <your worktree> && ` (the worktree named in your launch prompt).'
      : '[polywave E43] a wave agent writes only inside its own worktree (.claude/worktrees/polywave/<slug>/wave<N>-agent-<ID>/), and only the files it owns: use the absolute path under your worktree.';
    return { ...base, action: 'deny', code: 'E43_OUTSIDE_WORKTREE', reason };
  }
  if (role === 'scout' && writeTools.has(tool)) {
    const target = targetOf(tool, input);
    // Inside the session's directory (the repository), under docs/IMPL/, named IMPL-*.yaml.
    const relative = target === undefined ? '..' : path.relative(cwd, path.resolve(cwd, target)).split(path.sep).join('/');
    if (relative.startsWith('..') || path.isAbsolute(relative) || !/(^|\/)docs\/IMPL\/IMPL-[^/]+\.ya?ml$/.test(relative)) {
      return { ...base, action: 'deny', code: 'I6_ROLE_SEPARATION', reason: `[polywave I6] the Scout writes only its IMPL manifest (docs/IMPL/IMPL-<slug>.yaml), not ${target ?? '(no path)'}.` };
    }
  }
  if (role === 'critic' && writeTools.has(tool)) {
    return { ...base, action: 'deny', code: 'I6_ROLE_SEPARATION', reason: '[polywave I6] the critic edits no file: record the review with `polywave set-critic-review` and commit the IMPL (E48).' };
  }
  return base;
}

/**
 * Issue 13 (outside attack F2): a call the jail refused in an agent's worktree is recorded in that
 * agent's denials store (`.polywave-state/<slug>/wave<N>/agent-<ID>/denials.jsonl` in the main
 * checkout — the one run-agent fills), so agent-status shows it and finalize-wave's
 * check-jail-denials sees it (`--strict-ownership` blocks the merge). The agent is the one the
 * worktree belongs to, from its E5 path checked against its ownership record (neither is
 * writable by an agent); the caller's cwd decides the worktree before the path it names, so an
 * agent working in its own worktree records only under its own name. Only denials pay for this
 * (allowed calls return before). Returns a note for stderr when the record could not be written;
 * the decision stays deny either way.
 */
export async function recordPreToolUseDenial(decision: HookDecision, payload: HookPayload, io: Pick<CommandIo, 'cwd' | 'now'>): Promise<string | undefined> {
  if (decision.event !== 'pre-tool-use' || decision.action !== 'deny' || decision.worktree === undefined) return undefined;
  try {
    // Loaded here, not at start-up: an allowed call (nearly every call) loads nothing more.
    const { agentOfWorktree, appendHookDenial } = await import('../engine/jail-denials.js');
    const realWorktree = realpathSync(decision.worktree);
    const identity = agentOfWorktree(realWorktree, readOwnership(realWorktree), (file) => realpathSync(file));
    if (identity === undefined) return `polywave hook: the refusal was not recorded: ${decision.worktree} is not an agent worktree of the E5 layout with a matching ${ownershipFileName}`;
    const tool = decision.tool ?? '';
    const input = payload.tool_input !== null && typeof payload.tool_input === 'object' ? payload.tool_input : {};
    const cwd = typeof payload.cwd === 'string' && path.isAbsolute(payload.cwd) ? payload.cwd : io.cwd;
    const named = targetOf(tool, input);
    let target: string | undefined;
    if (named !== undefined) {
      const absolute = path.resolve(cwd, named);
      const relative = path.relative(realWorktree, absolute);
      const relativeToGiven = path.relative(decision.worktree, absolute);
      const inside = (value: string) => value !== '' && !value.startsWith('..') && !path.isAbsolute(value);
      target = inside(relative) ? relative.split(path.sep).join('/') : inside(relativeToGiven) ? relativeToGiven.split(path.sep).join('/') : absolute;
    } else if (decision.target !== undefined) {
      // A Bash call names no file: the jail's refusal does (outside attack X6, N9: the report said "(unknown)", finalize "Bash").
      target = decision.target;
    }
    const code = decision.code ?? 'JAIL_NOT_OWNED';
    const reason = (decision.reason ?? '').replace(/^\[polywave E43[^\]]*\]\s*/, '');
    appendHookDenial(identity, { ts: io.now().toISOString(), attempt: 1, tool, code, reason, ...(target !== undefined ? { target } : {}), source: 'hook', ...(decision.via ? { via: decision.via } : {}) });
    return undefined;
  } catch (error) {
    return `polywave hook: the refusal could not be recorded in the agent's denials store (${error instanceof Error ? error.message : String(error)}); the call stays refused`;
  }
}

/** True for `…/docs/IMPL/IMPL-*.yaml` outside `docs/IMPL/complete/`. */
export function isImplManifestPath(filePath: string): boolean {
  const normalized = filePath.split(path.sep).join('/');
  return /(^|\/)docs\/IMPL\/IMPL-[^/]+\.ya?ml$/.test(normalized) && !normalized.includes('/docs/IMPL/complete/');
}

/** Runs one of our commands in-process and captures its output (what the hook would get from a subprocess). */
export async function runCommandCaptured(load: () => Promise<{ run: (args: string[], options: Record<string, unknown>, io: CommandIo) => Promise<CommandResult> }>, args: string[], options: Record<string, unknown>, io: CommandIo): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const captured: CommandIo = { ...io, stdout: (text) => (stdout += text), stderr: (text) => (stderr += text) };
  try {
    const code = await (await load()).run(args, options, captured);
    return { code, stdout, stderr };
  } catch (error) {
    const code = (error as { exitCode?: number }).exitCode ?? 2;
    const prefix = typeof (error as { code?: unknown }).code === 'string' ? `error[${(error as { code: string }).code}]: ` : '';
    return { code, stdout, stderr: `${stderr}${prefix}${error instanceof Error ? error.message : String(error)}\n` };
  }
}

function parseJson(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** PostToolUse: validate an IMPL manifest that was just written (E16). */
export async function decidePostToolUse(payload: HookPayload, io: CommandIo): Promise<HookDecision> {
  const tool = typeof payload.tool_name === 'string' ? payload.tool_name : '';
  const input = payload.tool_input !== null && typeof payload.tool_input === 'object' ? payload.tool_input : {};
  const base: HookDecision = { event: 'post-tool-use', action: 'pass', tool };
  const target = targetOf(tool, input);
  if (!writeTools.has(tool) || target === undefined) return base;
  const cwd = typeof payload.cwd === 'string' && path.isAbsolute(payload.cwd) ? payload.cwd : io.cwd;
  const filePath = path.resolve(cwd, target);
  if (!isImplManifestPath(filePath) || !existsSync(filePath)) return base;
  const result = await runCommandCaptured(() => import('./commands/validate.js'), [filePath], {}, { ...io, cwd });
  if (result.code === 0) return base;
  const json = parseJson(result.stdout);
  const errors = Array.isArray(json?.errors) ? (json.errors as Array<{ code?: string; message?: string; line?: number }>) : [];
  const lines = errors.slice(0, 20).map((finding) => `  - ${finding.code ?? '?'}${finding.line ? ` (line ${finding.line})` : ''}: ${finding.message ?? ''}`);
  const detail = lines.length > 0 ? lines.join('\n') : (result.stderr.trim() || result.stdout.trim());
  return { ...base, action: 'block', code: 'E16_VALIDATION', reason: `[polywave E16] ${filePath} does not validate (${errors.length || 'unreadable'}${errors.length ? ' errors' : ''}); fix it before continuing:\n${detail}` };
}

/** The launch tag of a polywave agent: `[polywave:wave1:agent-A]`, `[polywave:critic:slug]`, `[polywave:scout:slug]`. */
export interface AgentTag {
  kind: string;
  wave?: number;
  agent?: string;
  slug?: string;
  impl?: string;
}

/** Reads the first tag (and `IMPL=<path>`) from a launch prompt or transcript text. */
export function parseAgentTag(text: string): AgentTag | undefined {
  const match = /\[polywave:(wave(\d+):agent-([A-Z][2-9]?)|critic|scout|scaffold|integration)(?::([A-Za-z0-9._-]+))?\]/i.exec(text);
  if (!match) return undefined;
  const implMatch = /IMPL=((?:[^\s"'\\]|\\\\)+\.ya?ml)/.exec(text.slice(match.index));
  const tag: AgentTag = { kind: match[2] !== undefined ? 'wave' : match[1]!.toLowerCase() };
  if (match[2] !== undefined) {
    tag.wave = Number(match[2]);
    tag.agent = match[3]!;
  }
  if (match[4] !== undefined) tag.slug = match[4];
  if (implMatch) tag.impl = implMatch[1]!.replace(/\\\\/g, '\\');
  return tag;
}

function readHead(filePath: string, limit: number): string {
  const handle = openSync(filePath, 'r');
  try {
    const buffer = Buffer.alloc(limit);
    const length = readSync(handle, buffer, 0, limit, 0);
    return buffer.subarray(0, length).toString('utf8');
  } finally {
    closeSync(handle);
  }
}

function tagFromTranscript(payload: HookPayload): AgentTag | undefined {
  for (const candidate of [payload.agent_transcript_path, payload.transcript_path]) {
    if (typeof candidate !== 'string' || !path.isAbsolute(candidate) || !existsSync(candidate)) continue;
    try {
      const tag = parseAgentTag(readHead(candidate, maxTranscriptBytes));
      if (tag) return tag;
    } catch {
      // an unreadable transcript gives no tag
    }
  }
  return undefined;
}

async function mainCheckout(cwd: string, io: Pick<CommandIo, 'env'>): Promise<string | undefined> {
  try {
    const { stdout } = await createGit(cwd, { env: { ...io.env } }).run(['worktree', 'list', '--porcelain']);
    const first = /^worktree (.+)$/m.exec(stdout);
    return first ? first[1] : undefined;
  } catch {
    return undefined;
  }
}

async function implFor(tag: AgentTag, cwd: string, io: Pick<CommandIo, 'env'>): Promise<string | undefined> {
  if (tag.impl !== undefined) return path.resolve(cwd, tag.impl);
  const main = await mainCheckout(cwd, io);
  if (main === undefined) return undefined;
  if (tag.slug !== undefined) {
    const byslug = path.join(main, 'docs', 'IMPL', `IMPL-${tag.slug}.yaml`);
    if (existsSync(byslug)) return byslug;
  }
  try {
    const active = readFileSync(path.join(main, activeImplPath), 'utf8').trim();
    return active === '' ? undefined : path.resolve(main, active);
  } catch {
    return undefined;
  }
}

async function waveStopProblems(tag: AgentTag & { wave: number; agent: string }, implPath: string, io: CommandIo): Promise<string[]> {
  const problems: string[] = [];
  const cli = 'polywave';
  // The independent reads run concurrently (E42 asks for a stop check under 2 s).
  const [check, main] = await Promise.all([
    runCommandCaptured(() => import('./commands/check-completion.js'), [implPath], { agent: tag.agent }, io),
    mainCheckout(path.dirname(implPath), io),
  ]);
  const completion = parseJson(check.stdout);
  if (check.code !== 0 || completion?.found !== true) {
    problems.push(`I4/E42: agent ${tag.agent} has no completion report in ${implPath}; file it with \`${cli} set-completion ${implPath} --agent ${tag.agent} --status complete|partial|blocked …\``);
  }
  const slug = tag.slug ?? (/IMPL-(.+)\.ya?ml$/.exec(path.basename(implPath))?.[1] ?? '');
  const worktree = main === undefined ? undefined : path.join(main, '.claude', 'worktrees', 'polywave', slug, `wave${tag.wave}-agent-${tag.agent}`);
  if (worktree === undefined || !existsSync(worktree)) return problems; // a solo agent (no worktree): the report is what E42 can check
  const ownership = readOwnership(worktree);
  const branch = ownership?.branch ?? `polywave/${slug}/wave${tag.wave}-agent-${tag.agent}`;
  const git = createGit(worktree, { env: { ...io.env } });
  const findBase = async (): Promise<string | undefined> => {
    try {
      const target = main === undefined ? undefined : (await createGit(main, { env: { ...io.env } }).run(['rev-parse', 'HEAD'])).stdout.trim();
      return target ? (await git.run(['merge-base', 'HEAD', target])).stdout.trim() : undefined;
    } catch {
      return undefined;
    }
  };
  const [isolation, baseCommit] = await Promise.all([runCommandCaptured(() => import('./commands/verify-isolation.js'), [], { branch, cwd: worktree }, io), findBase()]);
  if (isolation.code !== 0) {
    const errors = parseJson(isolation.stdout)?.errors;
    problems.push(`E12: ${worktree} is not on ${branch}${Array.isArray(errors) ? `: ${errors.join('; ')}` : ''}`);
  }
  const jail = await createJail({ root: worktree, ownedFiles: ownership?.owned_files ?? [], branch });
  const audit = await jail.audit(baseCommit ? { baseCommit } : {});
  for (const violation of audit.violations) problems.push(`I1: ${violation.reason}`);
  if (completion?.found === true && completion.status === 'complete') {
    if (baseCommit !== undefined) {
      const count = Number((await git.run(['rev-list', '--count', `${baseCommit}..HEAD`])).stdout.trim());
      if (count === 0) problems.push(`I5: agent ${tag.agent} reports complete but ${branch} has no commit beyond the wave base; commit your work (git add <your files> && git commit) before reporting`);
    }
    if (audit.uncommittedFiles.length > 0) problems.push(`I5: uncommitted changes in ${worktree}: ${audit.uncommittedFiles.join(', ')}`);
    const changed = audit.changedFiles.filter((file) => existsSync(path.join(worktree, file)));
    if (changed.length > 0) {
      const stubs = await runCommandCaptured(() => import('./commands/scan-stubs.js'), changed, { repoDir: worktree }, { ...io, cwd: worktree });
      const hits = parseJson(stubs.stdout)?.hits;
      if (Array.isArray(hits) && hits.length > 0) {
        const listed = (hits as Array<{ file?: string; line?: number; context?: string }>).slice(0, 10).map((hit) => `${hit.file}:${hit.line}: ${hit.context ?? ''}`);
        problems.push(`E20: stubs in a complete report — fix them or report partial:\n    ${listed.join('\n    ')}`);
      }
    }
  }
  return problems;
}

async function criticStopProblems(implPath: string, io: CommandIo): Promise<string[]> {
  const problems: string[] = [];
  const { loadImpl } = await import('../store/manifest-file.js');
  const { parsed } = await loadImpl(implPath);
  const report = parsed.manifest?.critic_report as Record<string, unknown> | undefined;
  if (report === undefined || report === null || typeof report.verdict !== 'string') {
    problems.push(`E37/E42: ${implPath} has no critic_report with a verdict; record it with \`polywave set-critic-review ${implPath} …\``);
    return problems;
  }
  const directory = path.dirname(implPath);
  try {
    const { stdout } = await createGit(directory, { env: { ...io.env } }).run(['status', '--porcelain', '--', path.basename(implPath)]);
    if (stdout.trim() !== '') problems.push(`E48: the IMPL holds your review but is not committed; run \`git -C ${directory} add ${path.basename(implPath)} && git -C ${directory} commit -m "critic: review ${path.basename(implPath)}"\``);
  } catch {
    // not a git repository: nothing to commit
  }
  return problems;
}

async function scoutStopProblems(implPath: string, io: CommandIo): Promise<string[]> {
  if (!existsSync(implPath)) return [`E42: the Scout's manifest ${implPath} does not exist`];
  const result = await runCommandCaptured(() => import('./commands/validate.js'), [implPath], {}, io);
  if (result.code === 0) return [];
  const json = parseJson(result.stdout);
  const errors = Array.isArray(json?.errors) ? (json.errors as Array<{ code?: string; message?: string }>) : [];
  return [`E16/E42: ${implPath} does not validate:\n    ${errors.slice(0, 20).map((finding) => `${finding.code}: ${finding.message}`).join('\n    ') || result.stderr.trim()}`];
}

/** SubagentStop: see the file comment. Untagged agents and agents that are not ours pass. */
export async function decideSubagentStop(payload: HookPayload, io: CommandIo): Promise<HookDecision> {
  const role = roleOfAgentType(payload.agent_type);
  const base: HookDecision = { event: 'subagent-stop', action: 'pass', ...(role ? { role } : {}) };
  const tag = tagFromTranscript(payload);
  if (tag === undefined) {
    if (role === undefined) return base;
    return { ...base, action: 'block', code: 'E42_UNTAGGED', reason: `[polywave E42] this ${role} agent was launched without its tag, so its obligations cannot be checked: the launch prompt must start with e.g. \`[polywave:wave1:agent-A] IMPL=/abs/path/docs/IMPL/IMPL-<slug>.yaml\`.` };
  }
  const cwd = typeof payload.cwd === 'string' && path.isAbsolute(payload.cwd) ? payload.cwd : io.cwd;
  const implPath = await implFor(tag, cwd, io);
  if (implPath === undefined) return { ...base, action: 'block', code: 'E42_IMPL_NOT_FOUND', reason: '[polywave E42] the IMPL manifest of this agent cannot be located (no IMPL=<path> in its launch prompt, no .polywave-state/active-impl).' };
  const scoped = { ...io, cwd };
  let problems: string[];
  try {
    if (tag.kind === 'wave' && tag.wave !== undefined && tag.agent !== undefined) problems = await waveStopProblems({ ...tag, wave: tag.wave, agent: tag.agent }, implPath, scoped);
    else if (tag.kind === 'critic') problems = await criticStopProblems(implPath, scoped);
    else if (tag.kind === 'scout') problems = await scoutStopProblems(implPath, scoped);
    else problems = [];
  } catch (error) {
    problems = [`the E42 checks failed: ${error instanceof Error ? error.message : String(error)}`];
  }
  if (problems.length === 0) return base;
  const who = tag.kind === 'wave' ? `agent ${tag.agent} (wave ${tag.wave})` : tag.kind;
  // Claude Code's advice for stop hooks: do not keep an agent running forever. After
  // maxStopBlocks refusals the agent may stop; the orchestrator still sees what is missing
  // (finalize-wave refuses a wave without reports or commits, E7).
  if (payload.stop_hook_active === true && countStopBlocks(payload) >= maxStopBlocks) {
    return { ...base, action: 'pass', code: 'E42_GAVE_UP', reason: `[polywave E42] ${who} stopped with its obligations unmet after ${maxStopBlocks} refusals:\n- ${problems.join('\n- ')}` };
  }
  return { ...base, action: 'block', code: 'E42_OBLIGATIONS', reason: `[polywave E42] ${who} cannot stop yet:\n- ${problems.join('\n- ')}` };
}

/** Refusals before a stop is let through (each one costs the agent a turn). */
export const maxStopBlocks = 3;

/** How often this agent was already sent back by us: our marker in its transcript (its tail when large). */
function countStopBlocks(payload: HookPayload): number {
  const transcript = payload.agent_transcript_path ?? payload.transcript_path;
  if (typeof transcript !== 'string' || !path.isAbsolute(transcript)) return 0;
  try {
    const size = statSync(transcript).size;
    const limit = 4 * 1024 * 1024;
    const handle = openSync(transcript, 'r');
    try {
      const length = Math.min(size, limit);
      const buffer = Buffer.alloc(length);
      readSync(handle, buffer, 0, length, size - length);
      return buffer.toString('utf8').split('cannot stop yet').length - 1;
    } finally {
      closeSync(handle);
    }
  } catch {
    return 0;
  }
}
