import { readFileSync, statSync } from 'node:fs';
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { createGit } from '../../git/git-cli.js';
import type { ImplManifest } from '../../protocol/schema/impl-schema.js';
import type { CommandIo } from '../io.js';
import { repoDirOption } from './repo-dir-option.js';

/**
 * The repository an IMPL belongs to, for the commands that read its files: `--repo-dir`, else
 * the top level of the git repository holding the manifest, else the directory above
 * `docs/IMPL/` (`<root>/docs/IMPL[/complete]/IMPL-x.yaml`), else the manifest's directory.
 */
export async function implRepoRoot(implPath: string, options: Record<string, unknown>, io: CommandIo): Promise<string> {
  const explicit = repoDirOption(options, io);
  if (explicit) return explicit;
  try {
    return await realpath(await createGit(path.dirname(implPath), { env: io.env }).topLevel());
  } catch {
    const parts = path.dirname(implPath).split(path.sep);
    const index = parts.lastIndexOf('IMPL');
    if (index > 0 && parts[index - 1] === 'docs') return parts.slice(0, index - 1).join(path.sep) || path.sep;
    return path.dirname(implPath);
  }
}

/** `file` resolved under `root`, or undefined when it points outside it (`../`, absolute paths: V037 reports them). */
export function fileInside(root: string, file: string): string | undefined {
  const resolved = path.resolve(root, file);
  const relative = path.relative(root, resolved);
  return relative === '' || relative.startsWith('..') || path.isAbsolute(relative) ? undefined : resolved;
}

/** Files larger than this are not read for text checks (generated or binary content). */
const maxReadBytes = 4 * 1024 * 1024;

/** Reads a file as text; undefined when missing, not a file, too large or not UTF-8 text. */
export function readRepoText(filePath: string): string | undefined {
  try {
    const stats = statSync(filePath);
    if (!stats.isFile() || stats.size > maxReadBytes) return undefined;
    const text = readFileSync(filePath, 'utf8');
    return text.includes('\0') ? undefined : text;
  } catch {
    return undefined;
  }
}

/**
 * Resolves ownership rows' `repo:` names to directories (polywave.config.json `repos[]`, absolute
 * `repositories` entries, sibling directories — as prepare-wave does), memoized per name.
 */
export async function repoDirectories(manifest: ImplManifest, root: string, implPath: string): Promise<(repo?: string) => string> {
  const names = [...new Set(manifest.file_ownership.map((row) => (row.repo ?? '').trim()).filter((name) => name !== ''))];
  if (names.length === 0) return () => root;
  // Loaded only for multi-repo IMPLs: hooks call these commands on every write.
  const { resolveRepoRoot } = await import('../../engine/prepare/preflight-steps.js');
  const resolved = new Map<string, string>();
  for (const name of names) resolved.set(name, (await resolveRepoRoot(manifest, path.basename(name), root, path.dirname(implPath))) ?? path.join(path.dirname(root), path.basename(name)));
  return (repo) => (repo && resolved.get(repo.trim())) || root;
}
