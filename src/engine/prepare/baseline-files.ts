import { lstat, open, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Git } from '../../git/git-port.js';
import { nameWords, tokenShapes, urlWithPassword, wordsNameSecret } from '../../sandbox/credential-variables.js';
import { configuredWorktreeSetup } from '../../store/project-config.js';
import { loadTrustedConfig } from '../../store/trusted-config.js';
import { writeTextAtomic } from './write-text.js';

/**
 * `prepare-wave --commit-baseline` (issue 13, F5): which dirty files go into the baseline commit.
 * Tracked changes always do; an untracked file does unless it looks like a secret by name (`.env*`, keys,
 * credentials), holds one (content check on its first 64 KB: a private key, an API token, a URL with
 * a password, a `password`/`secret`/`token`/`api_key` set to a literal — outside attack X6, N6: a
 * name list always misses some) or is one the worktree setup copies into each worktree (`copy` in
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
  // Outside attack X6 (N6): wrangler's `.dev.vars`, kubeconfig, terraform variables/state, docker's auth file, token/key files.
  /^\.dev\.vars(\..+)?$/,
  /^\.?kubeconfig(\..+)?$/,
  /\.(tfvars|tfstate)(\.json|\.backup)?$/,
  /^(\.dockercfg|docker[-_]?config\.json)$/,
  /^(?:[a-z0-9]+[-_.])*(?:api[-_]?keys?|token|access[-_]?token|auth[-_]?token|refresh[-_]?token|passwords?)(\.(txt|json|ya?ml|toml|ini|cfg|conf|dat|key))?$/,
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
  reason: 'secret-looking' | 'secret-content' | 'setup copy';
}

/** How much of an untracked file the content check reads. */
const contentCheckBytes = 64 * 1024;
const privateKeyHeader = /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----/;
const tokenInText = new RegExp(`(?<![A-Za-z0-9_-])(?:${tokenShapes})(?![A-Za-z0-9_-])`);
/** `key = "value"`, `"key": "value"`, `key: 'value'` — a quoted literal (anywhere on a line). */
const quotedAssignment = /["']?([A-Za-z_][\w.-]*)["']?\s*[:=]\s*(["'`])([^"'`\r\n]+)\2/g;
/** `KEY=value`, `key: value`, `export KEY=value` — a whole config line with a bare value. */
const bareAssignment = /^\s*(?:export\s+)?([A-Za-z_][\w.-]*)\s*[:=]\s*([^\s"'`]+)\s*$/;
/** Source files, where a bare `token = value` is code (an expression), not a stored secret. */
const sourceExtensions = /\.(?:[cm]?[jt]sx?|py|go|rs|java|kt|kts|scala|rb|php|cs|c|cc|cpp|h|hpp|swift|m|dart|lua|ex|exs|erl|hs|ml|clj|vue|svelte)$/i;

/** A value that stores nothing: empty, a placeholder or reference (`${VAR}`, `<token>`, `process.env.X`), a number or a boolean. */
function isPlaceholderValue(value: string): boolean {
  const trimmed = value.trim();
  if (trimmed === '' || /^[$<{%[]/.test(trimmed)) return true;
  if (/^(?:true|false|null|none|nil|undefined|yes|no|on|off|changeme|change-me|xxx+|\*+|\.\.\.|…|todo)$/i.test(trimmed)) return true;
  if (/^-?\d+(?:\.\d+)?[a-z]{0,2}$/i.test(trimmed)) return true;
  return /^(?:process\.env|os\.environ|env\.|import\.meta\.env)/.test(trimmed);
}

/** True when the key names a secret by the shared word list (`password`, `secret`, `token`, `api_key`, `DB_PASSWORD`, `clientSecret`…). */
function isSecretKey(key: string): boolean {
  const words = nameWords(key);
  const last = words[words.length - 1];
  // A key that names or points at a secret holds no secret (`secretName`, `tokenType`, `password_file`, `tokenUrl`).
  if (last !== undefined && /^(?:name|names|type|kind|id|ref|file|path|field|label|url|uri|endpoint|env|var|header|length|len|ttl|expiry|expires|mode|policy|hint)$/.test(last)) return false;
  return wordsNameSecret(words) || last === 'auth';
}

/**
 * What in a text marks it as holding a secret, or undefined: a private-key PEM header, a value shaped
 * like a well-known API token, a URL with a password, or a secret-named key assigned a literal value.
 */
export function secretInText(text: string, fileName = ''): string | undefined {
  if (privateKeyHeader.test(text)) return 'private key';
  if (tokenInText.test(text)) return 'API token';
  if (urlWithPassword.test(text)) return 'URL with a password';
  const bareAllowed = !sourceExtensions.test(fileName);
  for (const line of text.split(/\r?\n/)) {
    if (line.length > 4096) continue;
    for (const match of line.matchAll(quotedAssignment)) {
      // A label is not a secret (`"password": "Password"`, `"forgotPassword": "Forgot password?"` in a locale file).
      const value = match[3]!;
      if (/\s/.test(value.trim()) || nameWords(value).join('') === nameWords(match[1]!).join('')) continue;
      if (isSecretKey(match[1]!) && !isPlaceholderValue(value)) return `${match[1]!} assignment`;
    }
    if (!bareAllowed) continue;
    const bare = bareAssignment.exec(line);
    if (bare !== null && isSecretKey(bare[1]!) && !isPlaceholderValue(bare[2]!) && !/[()[\]{};]/.test(bare[2]!)) return `${bare[1]!} assignment`;
  }
  return undefined;
}

/** The content check for an untracked file: its first 64 KB, text only (a regular file without NUL bytes). */
async function secretInFile(root: string, relativePath: string): Promise<string | undefined> {
  const filePath = path.join(root, relativePath);
  try {
    const info = await lstat(filePath);
    if (!info.isFile()) return undefined;
    const handle = await open(filePath, 'r');
    try {
      const buffer = Buffer.alloc(Math.min(contentCheckBytes, info.size));
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
      const bytes = buffer.subarray(0, bytesRead);
      if (bytes.includes(0)) return undefined;
      return secretInText(bytes.toString('utf8'), relativePath);
    } finally {
      await handle.close();
    }
  } catch {
    return undefined;
  }
}

/** The `copy` entries of the repository's worktree setup (empty without a readable config). */
async function setupCopyEntries(root: string, primary: boolean): Promise<string[]> {
  try {
    // The root config as committed (X10 N6): store/trusted-config.ts.
    const loaded = await loadTrustedConfig(root);
    const located = loaded.path;
    if (located === undefined) return [];
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
 * files, Polywave's own) and `leftOut` (untracked secrets by name or by content, and setup copies).
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
    else if ((await secretInFile(options.root, file)) !== undefined) leftOut.push({ file, reason: 'secret-content' });
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
