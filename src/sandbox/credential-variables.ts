/**
 * Which environment variables hold credentials, and an environment without them: for every process
 * polywave runs for code it does not trust — an agent's bash and tools, quality gates, post-merge
 * verification, a worker's jobs. Here, below agents/, gates/ and engine/, so each of them can use it.
 */

/** Words of an environment variable's name that make it a secret (`OPENAI_API_KEY`, `GH_TOKEN`, `PGPASSWORD`…). */
const secretNameWords = new Set(['token', 'secret', 'secrets', 'password', 'passwd', 'passphrase', 'apikey', 'credential', 'credentials', 'bearer', 'privatekey', 'accesskey', 'secretkey', 'sessionid', 'cookie']);
/** A word followed by `key` that makes a secret: `*_API_KEY`, `*_ACCESS_KEY(_ID)`, `*_PRIVATE_KEY`… */
const keyPrefixWords = new Set(['api', 'access', 'secret', 'private', 'signing', 'encryption']);

/**
 * True for an environment variable that holds a credential (the words of src/serve's secret-key
 * redaction, for names): any `*_API_KEY`, `*_AUTH_TOKEN`, `*_ACCESS_TOKEN`, `CLAUDE_CODE_OAUTH_TOKEN`,
 * `AWS_SECRET_ACCESS_KEY`, `AWS_ACCESS_KEY_ID`, `AWS_SESSION_TOKEN`, `GH_TOKEN`, `GITHUB_TOKEN`,
 * `NPM_TOKEN`, `*PASSWORD*`, `*SECRET*`, `*CREDENTIALS*`… `SSH_AUTH_SOCK` or `ANTHROPIC_BASE_URL` are not.
 */
export function isCredentialVariable(name: string): boolean {
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
  for (let index = 0; index < words.length; index += 1) {
    const word = words[index]!;
    if (secretNameWords.has(word) || /^(pg|my|db)?passw(or)?d$/.test(word)) return true;
    if (words[index + 1] === 'key' && keyPrefixWords.has(word)) return true;
  }
  return false;
}

/**
 * `env` without its credentials ({@link isCredentialVariable}): the environment of the tools
 * polywave runs for an agent (bash, the sandboxed tool executor, git under the tools). The backend
 * that talks to the model keeps the full environment; what the agent runs — prompt-injected
 * commands, a dispatched job's script — cannot print, commit or send the machine's keys.
 */
export function withoutCredentials<T extends string | undefined>(env: Readonly<Record<string, T>>): Record<string, T> {
  const out: Record<string, T> = {};
  for (const [name, value] of Object.entries(env)) if (!isCredentialVariable(name)) out[name] = value;
  return out;
}
