/**
 * Which environment variables hold credentials, and an environment without them: for every process
 * polywave runs for code it does not trust — an agent's bash and tools, quality gates, post-merge
 * verification, a worker's jobs. Here, below agents/, gates/ and engine/, so each of them can use it.
 */

/**
 * Words that make a name a secret wherever they stand — in an environment variable's name and in a
 * JSON/YAML key alike (src/serve/security.ts redacts with the same list): `OPENAI_API_KEY`,
 * `GH_TOKEN`, `refreshToken`, `PGPASSWORD`, `Authorization`…
 */
export const secretNameWords: ReadonlySet<string> = new Set(['token', 'secret', 'secrets', 'password', 'passwd', 'passphrase', 'apikey', 'authorization', 'credential', 'credentials', 'bearer', 'privatekey', 'accesskey', 'secretkey', 'sessionid', 'cookie']);
/** A word followed by `key` that makes a secret: `*_API_KEY`, `*_ACCESS_KEY(_ID)`, `*_PRIVATE_KEY`… */
export const keyPrefixWords: ReadonlySet<string> = new Set(['api', 'access', 'secret', 'private', 'signing', 'encryption']);

/** The lower-case words of a name in any case or separator (`GITHUB_PAT`, `refreshToken`, `x-api-key`). */
export function nameWords(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

/** True when `words` name a secret by the shared list (names and keys alike). */
export function wordsNameSecret(words: readonly string[]): boolean {
  for (let index = 0; index < words.length; index += 1) {
    const word = words[index]!;
    if (secretNameWords.has(word) || /^(pg|my|db)?passw(or)?d$/.test(word)) return true;
    if (words[index + 1] === 'key' && keyPrefixWords.has(word)) return true;
  }
  return false;
}

/**
 * Words that make an ENVIRONMENT VARIABLE a credential on top of the shared list (outside attack X3
 * #22: `OPENAI_KEY`, `MISTRAL_KEY`, `MYSQL_PWD`, `GITHUB_PAT`, `SLACK_WEBHOOK_URL`, `SENTRY_DSN`
 * reached the agent's bash): a variable's name is about one thing, so any `key`, `pat`, `pass`,
 * `webhook`, `dsn` word means one. (`KEYBOARD`, `PATH`, `PASSTHROUGH` are other words.)
 */
const variableSecretWords = new Set(['key', 'keys', 'pat', 'pass', 'pwd', 'webhook', 'webhooks', 'dsn', 'oauth', 'jwt', 'creds', 'cred', 'salt', 'pepper']);
/** Services whose connection URL carries their credentials (`DATABASE_URL`, `REDIS_URL`, `MONGODB_URI`, `AMQP_URL`…). */
const connectionServices = new Set([
  'database', 'db', 'redis', 'mongo', 'mongodb', 'postgres', 'postgresql', 'pg', 'mysql', 'mariadb', 'amqp', 'rabbitmq', 'cloudamqp', 'kafka', 'nats', 'elasticsearch', 'smtp', 'mail', 'broker', 'celery', 'sentry',
  // outside attack X10 N1a: more services whose URL carries a user and password
  'clickhouse', 'elastic', 'opensearch', 's3', 'minio', 'influx', 'influxdb', 'neo4j', 'neo4', 'cassandra', 'scylla', 'couchdb', 'couchbase', 'couch', 'memcached', 'mssql', 'sqlserver', 'oracle', 'snowflake', 'redshift', 'cockroach', 'cockroachdb', 'timescale', 'supabase', 'turso', 'libsql', 'jdbc', 'odbc', 'sql', 'ftp', 'sftp', 'ldap', 'mqtt', 'rabbit', 'etcd', 'consul', 'arangodb', 'surrealdb', 'qdrant', 'weaviate', 'meilisearch', 'typesense', 'valkey', 'dragonfly', 'keydb', 'solr',
]);
/**
 * Names that are credentials by themselves, without a word the lists above know (X10 N1a): `sshpass -e`'s
 * password, libpq's `PGPASS`, Codecov's legacy upload token, `STRIPE_SK`-style secret keys (`*_SK`).
 */
const credentialNames = new Set(['SSHPASS', 'PGPASS', 'CODECOV', 'MYSQL_PWD', 'REDISCLI_AUTH', 'LFTP_PASSWORD', 'SK', 'RK',
  // where the user's Kerberos tickets and keytabs, and podman's registry logins, are (X35-14: the files are hidden too)
  'KRB5CCNAME', 'KRB5_KTNAME', 'KRB5_CLIENT_KTNAME', 'REGISTRY_AUTH_FILE']);
/** Variables agents need even where their value carries a password (the network goes through them). */
const keptVariables = new Set(['http_proxy', 'https_proxy', 'all_proxy', 'ftp_proxy', 'no_proxy', 'HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'FTP_PROXY', 'NO_PROXY', 'PWD', 'OLDPWD']);
/** A URL with user-info holding a password: `scheme://user:pass@host`, `scheme://:pass@host`. */
export const urlWithPassword = /[a-z][a-z0-9+.-]*:\/\/[^\s/@:]*:[^\s/@]+@/i;

/**
 * True for an environment variable that holds a credential: any name the shared words make a
 * secret (`*_API_KEY`, `*_AUTH_TOKEN`, `*_ACCESS_TOKEN`, `CLAUDE_CODE_OAUTH_TOKEN`, `GH_TOKEN`,
 * `*PASSWORD*`, `*SECRET*`, `*CREDENTIALS*`…), any `*_KEY`, `*_PAT`, `*_PASS`, `*_PWD`, `*_DSN`,
 * `*_WEBHOOK*` (and words ending in token/secret/password: `GHTOKEN`, `CLIENTSECRET`), a service's
 * connection URL (`DATABASE_URL`, `REDIS_URL`, `POLYWAVE_REDIS_URL`, `MONGODB_URI`), and — when the
 * value is given — any variable whose value is a URL with a password (`scheme://user:pw@…`).
 * Kept: `PATH`, `HOME`, `PWD`, the proxy variables, `SSH_AUTH_SOCK`, `ANTHROPIC_BASE_URL`,
 * `MAX_OUTPUT_TOKENS`, `KEYBOARD`…
 */
export function isCredentialVariable(name: string, value?: string): boolean {
  // Remembered: every git command and tool call filters its whole environment (~100 variables, the same
  // ones each time), which was ~5 % of a bench:dispatch worker's CPU (nameWords' regexes) before.
  if (value !== undefined && value.length > memoValueLimit) return classifyVariable(name, value);
  let known = credentialMemo.get(name);
  if (known === undefined) {
    if (credentialMemo.size >= memoNameLimit) credentialMemo.clear();
    known = new Map();
    credentialMemo.set(name, known);
  }
  const key = value ?? noValue;
  let verdict = known.get(key);
  if (verdict === undefined) {
    if (known.size >= memoValuesPerName) known.clear();
    verdict = classifyVariable(name, value);
    known.set(key, verdict);
  }
  return verdict;
}

/** {@link isCredentialVariable}'s verdicts by name, then by value ({@link noValue}: asked without one). */
const credentialMemo = new Map<string, Map<string | symbol, boolean>>();
const noValue = Symbol('no value');
const memoNameLimit = 4096;
const memoValuesPerName = 64;
const memoValueLimit = 4096;

function classifyVariable(name: string, value?: string): boolean {
  // a proxy with a user and password in its URL is a credential too (outside attack X18-14); sandboxed commands
  // reach the network through the sandbox's own proxy, which sets these variables itself
  if (keptVariables.has(name)) return value !== undefined && /proxy$/i.test(name) && urlWithPassword.test(value);
  if (credentialNames.has(name.toUpperCase())) return true;
  const words = nameWords(name);
  // `STRIPE_SK`, `STRIPE_RK`, `APP_SK_LIVE`: a secret (or restricted) key in Stripe's naming
  if (words.length > 1 && words.some((word, index) => (word === 'sk' || word === 'rk') && (index === words.length - 1 || words[index + 1] === 'live' || words[index + 1] === 'test'))) return true;
  if (wordsNameSecret(words)) return true;
  for (const word of words) {
    if (variableSecretWords.has(word)) return true;
    if (/(token|secret|password|passwd|credentials?)$/.test(word) && !/tokens$/.test(word)) return true;
  }
  const last = words[words.length - 1];
  if ((last === 'url' || last === 'uri' || last === 'urls') && words.slice(0, -1).some((word) => connectionServices.has(word))) return true;
  // Outside attack X4: `NPM_CONFIG__AUTH`, `TAILSCALE_AUTHKEY`, `*_HEADERS` (`ANTHROPIC_CUSTOM_HEADERS:
  // x-api-key: …`, `OTEL_EXPORTER_OTLP_HEADERS`), `*_CONNECTION_STRING`, and git's own config
  // parameters (an `http.extraheader` token). `SSH_AUTH_SOCK` keeps `auth` in the middle.
  if (last === 'auth' || last === 'authkey' || last === 'headers' || last === 'header') return true;
  if (words.some((word, index) => word === 'connection' && (words[index + 1] === 'string' || words[index + 1] === 'str'))) return true;
  // The whole GIT_CONFIG_COUNT group (outside attack X19-05: with KEY_n/VALUE_n stripped and the count kept, every
  // git run with the agent's environment failed — "missing config key GIT_CONFIG_KEY_0" — and both agents BLOCKED).
  if (name === 'GIT_CONFIG_PARAMETERS' || name === 'GIT_CONFIG_COUNT' || /^GIT_CONFIG_(KEY|VALUE)_\d+$/.test(name)) return true;
  // X19-05: `*_PW` (`LDAP_BIND_PW`), `*_ACCESS` (`JFROG_ACCESS`), and Bundler's per-host credentials `BUNDLE_<HOST>=user:pass` (dots of the host as `__`)
  if ((last === 'access' || last === 'pw') && words.length > 1) return true;
  if (value !== undefined && /^BUNDLE_[A-Z0-9_]*__[A-Z0-9_]+$/.test(name) && value.includes(':')) return true;
  return value !== undefined && isCredentialValue(value);
}

/**
 * The shapes of well-known API tokens (`sk-ant-…`, `ghp_…`, `xoxb-…`, `AKIA…`), unanchored: also
 * searched for in file contents (prepare-wave --commit-baseline). Outside attack X13 #6: a PEM private
 * key header, Google API keys (`AIza…`), SendGrid (`SG.….…`), Vault (`hvs.`/`hvb.`/`hvr.`), PyPI
 * (`pypi-…`), Shopify (`shpat_`/`shpca_`/`shppa_`/`shpss_`), Doppler (`dp.st.…`), Linear
 * (`lin_api_…`) and Twilio API keys (`SK` + 32) reached agent bash under innocuous names. Outside
 * attack X14 #4: Google OAuth access tokens (`ya29.`), DigitalOcean (`dop_v1_`/`doo_v1_`/`dor_v1_`),
 * Stripe webhook secrets (`whsec_`), Sentry (`sntrys_`/`sntryu_`), Square (`sq0atp-`/`sq0csp-`)
 * and age secret keys (`AGE-SECRET-KEY-1…`). Outside attack X16 #22: Atlassian (`ATATT3…`), Databricks
 * (`dapi` + 32 hex), Docker Hub (`dckr_pat_`), Figma (`figd_`), Google OAuth client secrets (`GOCSPX-`),
 * New Relic (`NRAK-`), PlanetScale (`pscale_tkn_`/`pscale_pw_`), Pulumi (`pul-` + 40 hex), Terraform
 * Cloud (`….atlasv1.…`) and Slack app-level tokens (`xapp-1-…`).
 */
export const tokenShapes = [
  'sk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}',
  '[sr]k_live_[A-Za-z0-9_-]{8,}',
  'gh[pousr]_[A-Za-z0-9]{20,}',
  'github_pat_[A-Za-z0-9_]{20,}',
  'glpat-[A-Za-z0-9_-]{16,}',
  'xox[abposr]-[A-Za-z0-9-]{10,}',
  'AKIA[0-9A-Z]{16}',
  'hf_[A-Za-z0-9]{20,}',
  'npm_[A-Za-z0-9]{30,}',
  '-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----',
  'AIza[0-9A-Za-z_-]{35}',
  'SG\\.[\\w-]{22}\\.[\\w-]{43}',
  'hv[sbr]\\.[A-Za-z0-9_-]{24,}',
  'pypi-[A-Za-z0-9_-]{50,}',
  'shp(?:at|ca|pa|ss)_[A-Za-z0-9]{32}',
  'dp\\.(?:st|pt|sa|ct|scim|audit)\\.[A-Za-z0-9_-]{20,}',
  'lin_(?:api|oauth)_[A-Za-z0-9]{32,}',
  'SK[0-9a-z]{32}',
  'ya29\\.[A-Za-z0-9_-]{30,}',
  'do[opr]_v1_[a-z0-9]{64}',
  'whsec_[A-Za-z0-9+/=]{24,}',
  'sntry[su]_[A-Za-z0-9+/=_-]{40,}',
  'sq0(?:atp|csp)-[A-Za-z0-9_-]{22,}',
  'AGE-SECRET-KEY-1[0-9A-Z]{50,}',
  // outside attack X16 #22
  'ATATT3[A-Za-z0-9_=-]{100,}',
  'dapi[0-9a-f]{32}(?:-[0-9]+)?',
  'dckr_pat_[A-Za-z0-9_-]{24,}',
  'figd_[A-Za-z0-9_-]{32,}',
  'GOCSPX-[A-Za-z0-9_-]{24,}',
  'NRAK-[A-Z0-9]{27}',
  'pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.-]{32,}',
  'pul-[0-9a-f]{40}',
  '[A-Za-z0-9]{14}\\.atlasv1\\.[A-Za-z0-9_=-]{60,}',
  'xapp-[0-9]-[A-Za-z0-9]+-[0-9]+-[A-Za-z0-9]{32,}',
  // outside attack X19-05: 1Password service-account tokens
  'ops_eyJ[A-Za-z0-9_-]{20,}',
].join('|');
/** Values shaped like well-known API tokens, whatever the variable is called (Stripe's `sk_test_`/`rk_test_` keys too: secrets, not searched for in files). */
const tokenShaped = new RegExp(`^(?:${tokenShapes}|[sr]k_test_[A-Za-z0-9_-]{8,})$`);
/** A PEM private key anywhere in a value (its header is followed by the key itself). */
const privateKeyInValue = /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----/;
/**
 * Credentials INSIDE a longer value (outside attack X14 #4), searched in values only (too common in
 * source text to search files for): an Azure connection string's `AccountKey=`/`SharedAccessKey=`,
 * a Slack or Discord webhook URL (its path is the secret), `password=…`/`password: …`/`pwd=…` text
 * (a key=value list, YAML, a netrc line `login u password x`) with a non-empty value that is not a
 * placeholder variable (`password=$PW`, `password: ${DB_PASSWORD}`).
 */
const secretInValue = [
  /(?:^|[;\s])(?:AccountKey|SharedAccessKey|SharedAccessSignature)=[A-Za-z0-9+/=%]{16,}/i,
  /hooks\.slack\.com\/(?:services|workflows|triggers)\/[A-Za-z0-9_/-]{20,}/,
  /(?:discord(?:app)?\.com)\/api\/webhooks\/\d+\/[A-Za-z0-9_-]{20,}/,
  /(?:^|[\s;,&?{"'])(?:password|passwd|pwd|pass)\s*[=:]\s*(?!\$|\*+(?:\s|$)|<|\{\{)[^\s;,&"']{4,}/i,
  /(?:^|\s)login\s+\S+\s+password\s+\S{4,}/i,
];
/** `"key": "literal"` or `"key": {` in a JSON value (`{"password":"…"}`, docker's `{"auths":{…}}`). */
const jsonKeyWithValue = /"([A-Za-z_][\w.-]*)"\s*:\s*(?:"[^"]+"|\{)/g;

/**
 * True for a variable value that is a credential whatever the variable is called: a URL with a
 * password, a value shaped like a well-known token ({@link tokenShapes}), one holding a PEM private
 * key, an Azure account key, a Slack/Discord webhook URL or `password=…` text, or a JSON object with a secret-named key (`password`, `token`, `auth`, `auths`…) set.
 */
export function isCredentialValue(value: string): boolean {
  const trimmed = value.trim();
  if (urlWithPassword.test(value) || tokenShaped.test(trimmed) || privateKeyInValue.test(value)) return true;
  if (secretInValue.some((shape) => shape.test(value))) return true;
  if (!/^[[{]/.test(trimmed)) return false;
  for (const match of trimmed.matchAll(jsonKeyWithValue)) {
    const words = nameWords(match[1]!);
    const last = words[words.length - 1];
    if (wordsNameSecret(words) || last === 'auth' || last === 'auths') return true;
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
  for (const [name, value] of Object.entries(env)) if (!isCredentialVariable(name, value)) out[name] = value;
  return out;
}
