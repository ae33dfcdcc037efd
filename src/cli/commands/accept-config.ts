import path from 'node:path';
import { PolywaveError } from '../../errors/polywave-error.js';
import { redactSecrets } from '../../serve/security.js';
import type { ProjectConfig } from '../../store/project-config.js';
import { acceptHeadConfig, clearConfigBlock, configBlockInEffect, configBlockPath, readConfigBlock, repositoryOf, watchedConfigKeys, type ConfigBlockInEffect } from '../../store/trusted-config.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';

/** One watched key whose committed value changed: the accepted one (`before`) and HEAD's (`now`); absent = not set. Secret-shaped parts redacted. */
export interface ConfigValueChange {
  key: string;
  before?: unknown;
  now?: unknown;
}

/**
 * The watched keys ({@link watchedConfigKeys}) whose value differs between the accepted config
 * and HEAD's, with both values — what a human accepts, not only which keys (outside attack X13
 * #18: the key list hid what `dispatch.url` or `setup` now say). Secret-shaped values (a password in
 * a URL, a token, a secret-named key) are redacted with the server's redaction.
 */
export function valueChanges(before: ProjectConfig | undefined, now: ProjectConfig | undefined): ConfigValueChange[] {
  const changes: ConfigValueChange[] = [];
  for (const key of watchedConfigKeys) {
    const was = before?.[key];
    const is = now?.[key];
    if (JSON.stringify(was ?? null) === JSON.stringify(is ?? null)) continue;
    changes.push({ key, ...(was === undefined ? {} : { before: redacted(was) }), ...(is === undefined ? {} : { now: redacted(is) }) });
  }
  return changes;
}

/** A password in a URL's userinfo, also after an empty user name (`redis://:pass@host`, which the shared redaction keeps). */
const urlPassword = /(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@'"]*:)[^\s@/'"]+@/gi;

/** `value` with secret-shaped parts replaced by "[redacted]" ({@link redactSecrets}, then URL passwords). */
function redacted(value: unknown): unknown {
  const walk = (item: unknown): unknown => {
    if (typeof item === 'string') return item.replace(urlPassword, '$1[redacted]@');
    if (Array.isArray(item)) return item.map(walk);
    if (item !== null && typeof item === 'object') return Object.fromEntries(Object.entries(item).map(([key, entry]) => [key, walk(entry)]));
    return item;
  };
  return walk(redactSecrets(value, []));
}

function valueText(value: unknown): string {
  return value === undefined ? '(not set)' : JSON.stringify(value);
}

/** The human-readable lines of a blocked change: what changed, and each key's committed-before and now values. */
function blockLines(block: ConfigBlockInEffect, values: readonly ConfigValueChange[]): string[] {
  const where = block.record.impl === '?' ? block.record.changed : `${path.basename(block.record.impl)} wave ${block.record.wave}`;
  const lines = [`${path.join(block.repository.toplevel, 'polywave.config.json')} at HEAD changes, since ${block.record.accepted_commit.slice(0, 12) || 'the accepted config'} (blocked; merged by ${where}): ${block.keys.join('; ')}`];
  for (const value of values) lines.push(`  ${value.key}:`, `    before: ${valueText(value.before)}`, `    now:    ${valueText(value.now)}`);
  return lines;
}

/**
 * `accept-config [--repo-dir <dir>] [--check] [--json]` (issue 11, outside attack X10 N9): after
 * finalize-wave BLOCKED a merged change of polywave.config.json (SANDBOX_CONFIG_CHANGED), every later
 * command of the repository refuses until a human accepts it. This shows the change — each watched
 * key's committed value before (the accepted config) and now (HEAD's), secrets redacted — and
 * accepts HEAD's committed config as it is now (removes `<git common dir>/polywave/config-block.json`
 * and remembers the accepted config in `config-accepted.json`, so re-running the blocked wave's
 * finalize-wave needs no `--accept-changes`); `--check` only shows whether a blocked change is in
 * effect (exit 1 when it is). A change reverted on the branch needs no acceptance: the record is
 * removed. Text by default; `--json` prints the same as one JSON object.
 */
export async function run(_args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const directory = path.resolve(io.cwd, typeof options.repoDir === 'string' ? options.repoDir : '.');
  const json = options.json === true;
  const repository = await repositoryOf(directory);
  if (repository === undefined) throw new PolywaveError({ code: 'D011_REPO_ROOT_INVALID', message: `${directory} is not inside a git repository (pass --repo-dir)` });
  const record = await readConfigBlock(repository);
  const block = record === undefined ? undefined : await configBlockInEffect(repository.toplevel);
  const values = block === undefined ? [] : valueChanges(block.accepted, block.now);
  const about = record === undefined ? {} : { impl: record.impl, wave: record.wave, accepted_before: record.accepted_commit, record: configBlockPath(repository) };
  const say = (result: Record<string, unknown>, lines: string[]): void => {
    if (json) printJson(io, result);
    else io.stdout(`${lines.join('\n')}\n`);
  };
  if (options.check === true) {
    say({ blocked: block !== undefined, ...about, ...(block ? { changes: block.keys, values } : {}) }, block ? [...blockLines(block, values), 'not accepted: commands of this repository refuse until you run polywave accept-config (or revert the change)'] : ['no blocked polywave.config.json change in effect']);
    return block === undefined ? 0 : 1;
  }
  if (record === undefined) {
    const message = 'no blocked polywave.config.json change to accept';
    say({ accepted: false, blocked: false, message }, [message]);
    return 0;
  }
  if (block === undefined) {
    await clearConfigBlock(repository.toplevel);
    const message = 'the blocked change is no longer at HEAD (reverted): record removed';
    say({ accepted: false, blocked: false, ...about, message }, [message]);
    return 0;
  }
  await acceptHeadConfig(repository.toplevel, io.now());
  const message = `accepted HEAD's polywave.config.json: ${block.keys.join('; ')}`;
  say({ accepted: true, blocked: false, ...about, changes: block.keys, values, message }, [...blockLines(block, values), message]);
  return 0;
}
