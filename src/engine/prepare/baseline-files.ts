import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Git } from '../../git/git-port.js';
import { configuredWorktreeSetup, locateProjectConfig, readProjectConfig } from '../../store/project-config.js';
import { writeTextAtomic } from './write-text.js';

/**
 * `prepare-wave --commit-baseline` (issue 13, F5): which dirty files go into the baseline commit.
 * Tracked changes always do; an untracked file does unless it looks like a secret (`.env*`, keys,
 * credentials) or is one the worktree setup copies into each worktree (`copy` in
 * polywave.config.json — files that exist per checkout, never in history). Those are left out,
 * named in the step's result, and listed in a marked block of the common `info/exclude` so that git
 * no longer shows them (finalize-wave would otherwise take them for foreign changes).
 */

/** Untracked file names that hold secrets by convention (matched on the last path segment, case-insensitive). */
const secretNamePatterns: readonly RegExp[] = [
  /^\.env$/,
  /^\.env\..+/,
  /^.+\.env$/,
  /^\.envrc$/,
  /\.(pem|key|p12|pfx|jks|keystore|asc|gpg|kdbx|ovpn)$/,
  /^id_(rsa|dsa|ecdsa|ed25519)(\.pub)?$/,
  /^credentials(\..+)?$/,
  /^.*[-_.]credentials(\.[a-z]+)?$/,
  /^\.?netrc$/,
  /^\.npmrc$/,
  /^\.pypirc$/,
  /^\.git-credentials$/,
  /^secrets?(\..+)?$/,
  /^.*[-_.]secrets?(\.[a-z]+)?$/,
  /^service[-_]account.*\.json$/,
];

/** Directories whose untracked contents are secrets by convention (`.aws/credentials`, `.ssh/…`). */
const secretDirectories: readonly string[] = ['.ssh', '.aws', '.gnupg', '.docker', '.kube', 'secrets'];

/** True for a repository-relative path that looks like it holds a secret. */
export function isSecretLookingPath(relativePath: string): boolean {
  const segments = relativePath.replace(/\\/g, '/').split('/').filter((segment) => segment !== '');
  const name = (segments[segments.length - 1] ?? '').toLowerCase();
  if (name === '.env.example' || name === '.env.sample' || name === '.env.template' || name === '.env.dist') return false;
  if (segments.slice(0, -1).some((segment) => secretDirectories.includes(segment.toLowerCase()))) return true;
  return secretNamePatterns.some((pattern) => pattern.test(name));
}

/** A file left out of the baseline commit, and why. */
export interface LeftOutFile {
  file: string;
  reason: 'secret-looking' | 'setup copy';
}

/** The `copy` entries of the repository's worktree setup (empty without a readable config). */
async function setupCopyEntries(root: string, primary: boolean): Promise<string[]> {
  try {
    const located = await locateProjectConfig(root);
    if (located === undefined) return [];
    const loaded = await readProjectConfig(located);
    return configuredWorktreeSetup(loaded.config, { configDir: path.dirname(located), repoRoot: root, primary }).copy;
  } catch {
    return [];
  }
}

/** Untracked files matching the `copy` entries (a literal path: that file or everything under that directory; a glob: as git matches it). */
async function copiedFiles(git: Git, untracked: readonly string[], entries: readonly string[]): Promise<Set<string>> {
  const matched = new Set<string>();
  if (untracked.length === 0) return matched;
  for (const entry of entries) {
    const pattern = entry.replace(/\\/g, '/').replace(/^\.\//, '').replace(/\/+$/, '');
    if (pattern === '') continue;
    if (/[*?[\]]/.test(pattern)) {
      const listed = await git.run(['ls-files', '-z', '--others', '--', `:(glob)${pattern}`, `:(glob)${pattern}/**`]).catch(() => ({ stdout: '' }));
      for (const file of listed.stdout.split('\0')) if (file !== '') matched.add(file);
      continue;
    }
    for (const file of untracked) if (file === pattern || file.startsWith(`${pattern}/`)) matched.add(file);
  }
  return matched;
}

/**
 * Splits the files --commit-baseline would commit: `commit` (tracked changes, other untracked
 * files, Polywave's own) and `leftOut` (untracked secrets and setup copies).
 */
export async function splitBaselineFiles(options: { git: Git; root: string; primary: boolean; files: readonly string[]; untracked: ReadonlySet<string> }): Promise<{ commit: string[]; leftOut: LeftOutFile[] }> {
  const untracked = options.files.filter((file) => options.untracked.has(file));
  const copied = await copiedFiles(options.git, untracked, untracked.length > 0 ? await setupCopyEntries(options.root, options.primary) : []);
  const commit: string[] = [];
  const leftOut: LeftOutFile[] = [];
  for (const file of options.files) {
    if (!options.untracked.has(file)) commit.push(file);
    else if (isSecretLookingPath(file)) leftOut.push({ file, reason: 'secret-looking' });
    else if (copied.has(file)) leftOut.push({ file, reason: 'setup copy' });
    else commit.push(file);
  }
  return { commit, leftOut };
}

const excludeBegin = '# >>> polywave (untracked files left out of prepare-wave --commit-baseline; managed) >>>';
const excludeEnd = '# <<< polywave baseline <<<';

function ignoreLine(file: string): string {
  return `/${file.replace(/[\\*?[\]!#]/g, (character) => `\\${character}`).replace(/ $/, '\\ ')}`;
}

/** Adds the files to a marked block of the common `info/exclude` (kept with what the block held). */
export async function excludeLeftOut(git: Git, root: string, files: readonly string[]): Promise<void> {
  if (files.length === 0) return;
  const commonDir = path.resolve(root, await git.commonDir());
  const filePath = path.join(commonDir, 'info', 'exclude');
  const current = await readFile(filePath, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return '';
    throw error;
  });
  const begin = current.indexOf(excludeBegin);
  const end = begin < 0 ? -1 : current.indexOf(excludeEnd, begin);
  const existing = begin >= 0 && end >= 0 ? current.slice(begin + excludeBegin.length, end).split('\n').filter((line) => line.trim() !== '') : [];
  const lines = [...new Set([...existing, ...files.map(ignoreLine)])].sort();
  const block = `${excludeBegin}\n${lines.join('\n')}\n${excludeEnd}\n`;
  let next: string;
  if (begin >= 0 && end >= 0) {
    let stop = end + excludeEnd.length;
    if (current[stop] === '\n') stop += 1;
    next = `${current.slice(0, begin)}${block}${current.slice(stop)}`;
  } else next = `${current}${current === '' || current.endsWith('\n') ? '' : '\n'}${block}`;
  if (next !== current) await writeTextAtomic(filePath, next);
}
