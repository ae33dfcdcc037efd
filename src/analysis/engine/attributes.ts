/**
 * The git attributes files that can apply to a repository's paths, read as text without a git
 * process where that is certain: a `.gitattributes` in a listed directory (tracked or not: git reads
 * the working tree's), `$GIT_COMMON_DIR/info/attributes`, the per-user file (XDG), the system file
 * (`/etc/gitattributes` for a git built with `sysconfdir=/etc`, as Debian's), and `core.attributesFile`.
 * Two questions are answered from them:
 * - could any file be marked binary, or searched by git grep otherwise than its bytes say
 *   ({@link attributesPossible}: the word index stands in for git grep only where none can);
 * - could any file's working-tree bytes differ from its index blob while git calls it unmodified
 *   ({@link conversionPossible}: a `filter` (clean/smudge, LFS), `ident` or `working-tree-encoding`):
 *   then the listing asks `git check-attr` which files, and reads those from disk (repo-files.ts).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { RepoContext } from './repo-files.js';

/** Where git builds commonly read their system attributes file (`$(sysconfdir)/gitattributes`). */
const systemAttributeFiles = ['/etc/gitattributes', '/usr/local/etc/gitattributes', '/opt/homebrew/etc/gitattributes'];

function readIfPresent(file: string): string | undefined {
  if (!existsSync(file)) return undefined;
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return ''; // present but unreadable: counts as present (git may read it; we cannot tell what it says)
  }
}

/**
 * Every attributes file's text that git could apply to paths in `dirs` (repo-relative directories,
 * '' for the top level), or undefined when that cannot be known (GIT_ATTR_SOURCE: attributes from a tree).
 * `core.attributesFile` is asked of git only where configuration names it, includes another file or comes
 * from the environment.
 */
export async function attributeTexts(context: RepoContext, dirs: Iterable<string>): Promise<string[] | undefined> {
  const env = process.env;
  if (env.GIT_ATTR_SOURCE !== undefined) return undefined;
  const texts: string[] = [];
  const add = (file: string) => {
    const text = readIfPresent(file);
    if (text !== undefined) texts.push(text);
  };
  for (const dir of dirs) add(path.join(context.root, dir, '.gitattributes'));
  add(path.join(context.commonDir, 'info', 'attributes'));
  const xdg = env.XDG_CONFIG_HOME ? path.join(env.XDG_CONFIG_HOME, 'git', 'attributes') : env.HOME ? path.join(env.HOME, '.config', 'git', 'attributes') : undefined;
  if (xdg !== undefined) add(xdg);
  if (env.GIT_ATTR_NOSYSTEM === undefined) for (const file of systemAttributeFiles) add(file);
  // core.attributesFile: the config files that can set it are read as text (no git process); where one
  // names it or includes another file, or configuration comes from the environment, git is asked.
  let ask = Object.keys(env).some((name) => name === 'GIT_CONFIG_PARAMETERS' || name === 'GIT_CONFIG_COUNT' || name === 'GIT_CONFIG');
  const globals = env.GIT_CONFIG_GLOBAL !== undefined ? [env.GIT_CONFIG_GLOBAL] : [env.XDG_CONFIG_HOME ? path.join(env.XDG_CONFIG_HOME, 'git', 'config') : env.HOME ? path.join(env.HOME, '.config', 'git', 'config') : '', env.HOME ? path.join(env.HOME, '.gitconfig') : ''];
  const configs = [env.GIT_CONFIG_SYSTEM ?? '/etc/gitconfig', ...globals, path.join(context.commonDir, 'config'), path.join(context.commonDir, 'config.worktree')];
  for (const file of ask ? [] : configs) {
    if (file === '') continue;
    let text: string;
    try {
      text = readFileSync(file, 'utf8').toLowerCase();
    } catch {
      continue;
    }
    if (text.includes('attributesfile') || text.includes('include')) ask = true;
  }
  if (ask) {
    const configured = (await context.git.run(['config', '--path', '--get', 'core.attributesFile'], { allowExitCodes: [1] })).stdout.trim();
    if (configured !== '') add(path.resolve(context.root, configured));
  }
  return texts;
}

/** Whether any attributes file can apply to paths in `dirs` (undefined `dirs`: a `.gitattributes` is listed). */
export async function attributesPossible(context: RepoContext, dirs: Iterable<string> | undefined): Promise<boolean> {
  if (dirs === undefined) return true;
  const texts = await attributeTexts(context, dirs);
  return texts === undefined || texts.length > 0;
}

/** Attributes that make git's working-tree bytes differ from the blob's in more than line endings. */
const conversionWord = /(?:^|[\s!-])(?:filter|ident|working-tree-encoding)(?=[\s=]|$)/m;

/**
 * Whether an attribute that converts content between the index and the working tree (`filter`,
 * `ident`, `working-tree-encoding`; a macro defining one names it too) can apply to paths in `dirs`.
 */
export async function conversionPossible(context: RepoContext, dirs: Iterable<string>): Promise<boolean> {
  const texts = await attributeTexts(context, dirs);
  return texts === undefined || texts.some((text) => conversionWord.test(text));
}

/** The files among `files` that have a `filter`, `ident` or `working-tree-encoding` attribute set (`git check-attr`). */
export async function convertedFiles(context: RepoContext, files: readonly string[]): Promise<Set<string>> {
  const converted = new Set<string>();
  if (files.length === 0) return converted;
  const answer = await context.git.run(['check-attr', '-z', '--stdin', 'filter', 'ident', 'working-tree-encoding'], { input: files.join('\0') + '\0' });
  const fields = answer.stdout.split('\0');
  for (let at = 0; at + 2 < fields.length; at += 3) {
    const value = fields[at + 2]!;
    if (value !== 'unspecified' && value !== 'unset') converted.add(fields[at]!);
  }
  return converted;
}
