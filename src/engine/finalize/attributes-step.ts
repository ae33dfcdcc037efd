import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Git } from '../../git/git-port.js';
import { normalizeReportedPath } from '../../protocol/conflicts.js';
import { repoKey } from '../../protocol/waves.js';
import type { StepDefinition } from '../step.js';
import { listForDetail, manifestOf, short, type FinalizeAgent, type FinalizeContext, type FinalizeRepo } from './context.js';

/** The code of a wave refused because an agent's `.gitattributes` change reaches files it does not own. */
export const attributesOutsideOwnershipCode = 'E11_ATTRIBUTES_OUTSIDE_OWNERSHIP';

/**
 * The attributes that change a file's bytes as git writes it into a checkout (or reads it back) or how a merge combines
 * it: end-of-line conversion (`text`, `eol`, `crlf`), re-encoding (`working-tree-encoding`), `$Id$` expansion (`ident`),
 * clean/smudge drivers (`filter`) and merge drivers (`merge`, `union` included). `diff`, `export-*`, `linguist-*` and the
 * like change no file's bytes. Macros (`binary`, an `[attr]` line) are expanded by git itself before the comparison.
 */
export const byteChangingAttributes = ['text', 'eol', 'crlf', 'working-tree-encoding', 'ident', 'filter', 'merge'] as const;

/** Per path, the byte-changing attributes' values (`unspecified` left out) as git reads them from `commit`'s tree. */
async function attributesAt(git: Git, scratch: string, commit: string, paths: readonly string[]): Promise<Map<string, Map<string, string>>> {
  const index = path.join(scratch, `index-${commit}`);
  const env = { GIT_INDEX_FILE: index };
  // `check-attr --cached` reads the `.gitattributes` files of the index only (git 2.39 has no `--source`): a private
  // index holding the commit's tree, never the checkout's or the worktree's files.
  await git.run(['read-tree', commit], { env });
  return attributesOfIndex(git, env, paths);
}

/**
 * Outside attack X44-11: attributes are not compositional — a macro defined in one agent's `.gitattributes`
 * (`[attr]m text eol=crlf`, used by no path) and used in another's (`c.ts m`, an unknown attribute without the
 * definition) changed a third agent's file, which neither tip alone did. The attributes of the base's tree with every
 * agent's `.gitattributes` files as on its tip (what the merge lands).
 */
async function combinedAttributes(git: Git, scratch: string, base: string, agents: ReadonlyArray<{ tip: string; files: readonly string[] }>, paths: readonly string[]): Promise<Map<string, Map<string, string>>> {
  const env = { GIT_INDEX_FILE: path.join(scratch, 'index-combined') };
  await git.run(['read-tree', base], { env });
  const records: string[] = [];
  for (const agent of agents) {
    for (const file of agent.files) {
      const { stdout } = await git.run(['ls-tree', '-z', '--full-tree', agent.tip, '--', file]);
      const match = /^(\d+) blob ([0-9a-f]+)\t/.exec(stdout);
      // (absent on the tip: deleted — mode 0 takes it out of the index)
      records.push(match ? `${match[1]} ${match[2]}\t${file}` : `0 ${'0'.repeat(40)}\t${file}`);
    }
  }
  if (records.length > 0) await git.run(['update-index', '-z', '--index-info'], { env, input: `${records.join('\0')}\0` });
  return attributesOfIndex(git, env, paths);
}

/** Per path, the byte-changing attributes' values (`unspecified` left out) as git reads them from the index `env` names. */
async function attributesOfIndex(git: Git, env: Record<string, string>, paths: readonly string[]): Promise<Map<string, Map<string, string>>> {
  const { stdout } = await git.run(['check-attr', '--cached', '-z', '--stdin', ...byteChangingAttributes], { env, input: `${paths.join('\0')}\0` });
  const result = new Map<string, Map<string, string>>();
  const fields = stdout.split('\0');
  for (let index_ = 0; index_ + 2 < fields.length; index_ += 3) {
    const [file, attribute, value] = [fields[index_]!, fields[index_ + 1]!, fields[index_ + 2]!];
    if (value === 'unspecified') continue;
    let entry = result.get(file);
    if (entry === undefined) result.set(file, (entry = new Map()));
    entry.set(attribute, value);
  }
  return result;
}

async function filesAt(git: Git, commit: string): Promise<string[]> {
  const { stdout } = await git.run(['ls-tree', '-r', '-z', '--name-only', '--full-tree', commit]);
  return stdout.split('\0').filter((file) => file !== '');
}

function isAttributesFile(file: string): boolean {
  return file === '.gitattributes' || file.endsWith('/.gitattributes');
}

/** A gitattributes pattern (relative to its file's directory) as a regular expression over repository paths. */
function patternMatcher(pattern: string, directory: string): RegExp {
  let body = pattern.startsWith('/') ? pattern.slice(1) : pattern;
  const anchored = pattern.includes('/') && !pattern.endsWith('/');
  if (body.endsWith('/')) body = body.slice(0, -1);
  let regex = '';
  for (let index = 0; index < body.length; index += 1) {
    const char = body[index]!;
    if (char === '*' && body[index + 1] === '*') {
      regex += '.*';
      index += 1;
      if (body[index + 1] === '/') index += 1;
    } else if (char === '*') regex += '[^/]*';
    else if (char === '?') regex += '[^/]';
    else if (char === '[') {
      const end = body.indexOf(']', index + 1);
      if (end < 0) regex += '\\[';
      else {
        regex += `[${body.slice(index + 1, end).replace(/^!/, '^').replace(/\\/g, '\\\\')}]`;
        index = end;
      }
    } else regex += char.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  const prefix = directory === '' ? '' : `${directory.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/`;
  return new RegExp(anchored ? `^${prefix}${regex}$` : `^${prefix}(?:.*/)?${regex}$`);
}

interface AddedLine {
  file: string;
  line: number;
  text: string;
}

/** The lines of the agent's `.gitattributes` files that are not in the base's version of the same file. */
async function addedLines(repo: FinalizeRepo, base: string, tip: string, files: readonly string[]): Promise<AddedLine[]> {
  const lines: AddedLine[] = [];
  for (const file of files) {
    const before = new Set(((await repo.git.showFile(base, file)) ?? '').split(/\r?\n/).map((text) => text.trim()));
    const after = ((await repo.git.showFile(tip, file)) ?? '').split(/\r?\n/);
    after.forEach((text, index) => {
      const trimmed = text.trim();
      if (trimmed === '' || trimmed.startsWith('#') || before.has(trimmed)) return;
      lines.push({ file, line: index + 1, text: trimmed });
    });
  }
  return lines;
}

/** The added lines that best explain `attribute` changing on `target` (the decision itself is git's). */
function explainingLines(lines: readonly AddedLine[], target: string, attribute: string): AddedLine[] {
  const mentions = (line: AddedLine) => new RegExp(`(^|\\s)[-!]?(${attribute.replace(/-/g, '\\-')}|binary)(=|\\s|$)`).test(line.text);
  const matching = lines.filter((line) => {
    if (line.text.startsWith('[attr]')) return false;
    const pattern = line.text.split(/\s+/)[0]!.replace(/^"|"$/g, '');
    try {
      return patternMatcher(pattern, path.posix.dirname(line.file) === '.' ? '' : path.posix.dirname(line.file)).test(target);
    } catch {
      return false;
    }
  });
  const best = matching.filter(mentions);
  if (best.length > 0) return best;
  if (matching.length > 0) return matching;
  return lines.filter(mentions);
}

interface Finding {
  agent: string;
  file: string;
  attribute: string;
  before: string;
  after: string;
  lines: AddedLine[];
}

async function checkAgent(repo: FinalizeRepo, agent: FinalizeAgent, owned: Set<string>, universe: readonly string[], scratch: string): Promise<Finding[]> {
  const changed = (agent.diff ?? []).map((entry) => entry.path).filter(isAttributesFile);
  if (changed.length === 0 || repo.base === undefined || agent.tip === undefined) return [];
  const others = universe.filter((file) => !owned.has(file));
  if (others.length === 0) return [];
  const [before, after] = [await attributesAt(repo.git, scratch, repo.base, others), await attributesAt(repo.git, scratch, agent.tip, others)];
  const lines = await addedLines(repo, repo.base, agent.tip, changed);
  const findings: Finding[] = [];
  for (const file of others) {
    for (const attribute of byteChangingAttributes) {
      const [was, now] = [before.get(file)?.get(attribute) ?? 'unspecified', after.get(file)?.get(attribute) ?? 'unspecified'];
      if (was === now) continue;
      findings.push({ agent: agent.id, file, attribute, before: was, after: now, lines: explainingLines(lines, file, attribute) });
    }
  }
  return findings;
}

function describe(finding: Finding): string {
  const where = finding.lines.length > 0 ? finding.lines.slice(0, 2).map((line) => `${line.file}:${line.line} \`${line.text}\``).join(', ') : 'its .gitattributes change';
  return `agent ${finding.agent}: ${finding.file} ${finding.attribute} ${finding.before} → ${finding.after} by ${where}`;
}

/**
 * Outside round X42 (X42-07, issue 11; I1): an agent that owns a `.gitattributes` file decides how git writes EVERY file
 * its patterns match into the main checkout after the merge — another agent's file re-encoded to UTF-16LE
 * (`working-tree-encoding`), given CRLF line ends (`eol`, `text`), `$Id$`-expanded (`ident`), or handed to a clean/smudge
 * or merge driver by name (`filter`, `merge`) — so B's file on disk is no longer B's bytes, though git shows the
 * checkout clean. Owning a file is owning its bytes (I1), so before any merge every agent branch that changes a
 * `.gitattributes` file is compared, by git's own attribute lookup (`check-attr` on the base's tree and on the tip's),
 * over every path the wave knows — the base's, the target's and every agent tip's files and every ownership row of the
 * IMPL — but the agent's own: a byte-changing attribute that differs on a file it does not own refuses the wave
 * (E11_ATTRIBUTES_OUTSIDE_OWNERSHIP, naming the file, the attribute and the pattern's line). Nothing is merged; amend
 * the agent's branch (or the IMPL's ownership) and re-run finalize-wave. Attributes on the agent's own files pass.
 */
export const attributesStep: StepDefinition<FinalizeContext> = {
  name: 'check-attributes',
  async run(context) {
    const manifest = manifestOf(context);
    const findings: Finding[] = [];
    let checked = 0;
    const scratch = await mkdtemp(path.join(os.tmpdir(), 'polywave-attrs-'));
    try {
      for (const repo of context.repos) {
        const mine = context.agents.filter((agent) => agent.repo === repo && agent.tip !== undefined && (agent.diff ?? []).some((entry) => isAttributesFile(entry.path)));
        if (mine.length === 0 || repo.base === undefined) continue;
        const key = repo.primary ? '' : repo.key;
        const universe = new Set<string>();
        const wave = context.agents.filter((agent) => agent.repo === repo && agent.tip !== undefined);
        for (const commit of new Set([repo.base, repo.targetTip, ...wave.map((agent) => agent.tip!)])) {
          if (commit) for (const file of await filesAt(repo.git, commit)) universe.add(file);
        }
        for (const row of manifest.file_ownership ?? []) {
          if (!row.file || (context.repos.length > 1 && repoKey(row.repo) !== key)) continue;
          universe.add(normalizeReportedPath(row.file));
        }
        const ownedBy = new Map<string, Set<string>>();
        for (const agent of mine) {
          const owned = new Set<string>();
          for (const row of manifest.file_ownership ?? []) {
            if (row.wave === context.wave && row.agent === agent.id && row.file && (context.repos.length === 1 || repoKey(row.repo) === key)) owned.add(normalizeReportedPath(row.file));
          }
          for (const file of agent.data.files ?? []) owned.add(normalizeReportedPath(file));
          checked += 1;
          findings.push(...(await checkAgent(repo, agent, owned, [...universe].sort(), scratch)));
          ownedBy.set(agent.id, owned);
        }
        // X44-11: two or more agents' .gitattributes together (a macro in one, its use in another): a byte-changing
        // attribute that differs on a file none of them owns, and no single agent's check found, refuses the wave too.
        if (mine.length >= 2 && repo.base !== undefined) {
          const mineOwned = new Set(mine.flatMap((agent) => [...(ownedBy.get(agent.id) ?? [])]));
          const flagged = new Set(findings.map((finding) => `${finding.file}\0${finding.attribute}`));
          const others = [...universe].sort().filter((file) => !mineOwned.has(file));
          if (others.length > 0) {
            const changedFiles = (agent: FinalizeAgent) => [...new Set((agent.diff ?? []).map((entry) => entry.path).filter(isAttributesFile))];
            const before = await attributesAt(repo.git, scratch, repo.base, others);
            const after = await combinedAttributes(repo.git, scratch, repo.base, mine.map((agent) => ({ tip: agent.tip!, files: changedFiles(agent) })), others);
            const lines: AddedLine[] = [];
            for (const agent of mine) lines.push(...(await addedLines(repo, repo.base, agent.tip!, changedFiles(agent))));
            for (const file of others) {
              for (const attribute of byteChangingAttributes) {
                const [was, now] = [before.get(file)?.get(attribute) ?? 'unspecified', after.get(file)?.get(attribute) ?? 'unspecified'];
                if (was === now || flagged.has(`${file}\0${attribute}`)) continue;
                findings.push({ agent: mine.map((agent) => agent.id).join('+'), file, attribute, before: was, after: now, lines: explainingLines(lines, file, attribute) });
              }
            }
          }
        }
      }
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
    if (checked === 0) return { status: 'skipped', detail: 'no agent branch changes a .gitattributes file' };
    if (findings.length > 0) {
      context.block = { reason: `${attributesOutsideOwnershipCode}: an agent's .gitattributes changes how files it does not own are checked out`, mergeState: 'idle' };
      return {
        status: 'failed',
        detail:
          `${attributesOutsideOwnershipCode}: ${listForDetail(findings.map(describe), 8)} — an agent's .gitattributes may set text, eol, crlf, working-tree-encoding, ident, filter or merge ` +
          `only on files it owns (I1: B's file in the checkout must be B's bytes). Nothing was merged; take the line(s) out on the agent's branch (or give it those files), then re-run finalize-wave`,
        data: { findings: findings.map((finding) => ({ agent: finding.agent, file: finding.file, attribute: finding.attribute, before: finding.before, after: finding.after, lines: finding.lines })) },
      };
    }
    return { status: 'success', detail: `${checked} agent branch(es) change a .gitattributes file; no byte-changing attribute reaches a file they do not own (base ${short(context.primary.base)})` };
  },
};
