import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import { isCredentialVariable, nameWords, wordsNameSecret } from '../sandbox/credential-variables.js';

/**
 * Security of `polywave serve` (issue 16, docs/serve.md "Security"): a random token per start,
 * compared in constant time; the Host header must name the bound address (DNS rebinding); an
 * Origin, when sent, must be this server (cross-site requests); secrets never leave in JSON.
 */

/** A new per-start access token: 16 random bytes as 32 hex digits. */
export function newToken(): string {
  return randomBytes(16).toString('hex');
}

/** Constant-time comparison (both sides hashed first, so their lengths never leak either). */
export function tokenMatches(expected: string, given: string | undefined | null): boolean {
  if (typeof given !== 'string' || given === '') return false;
  const a = createHash('sha256').update(expected).digest();
  const b = createHash('sha256').update(given).digest();
  return timingSafeEqual(a, b);
}

/** True for 127.0.0.0/8, ::1, ::ffff:127.x and `localhost`. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (bare === 'localhost') return true;
  if (isIP(bare) === 4) return bare.startsWith('127.');
  if (isIP(bare) === 6) return bare === '::1' || /^::ffff:127\./.test(bare);
  return false;
}

/** True for the addresses that mean "every interface". */
export function isWildcardHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  return bare === '0.0.0.0' || bare === '::' || bare === '';
}

/** `host:port` as it appears in a Host header (IPv6 in brackets). */
export function hostHeaderValue(host: string, port: number): string {
  const bare = host.replace(/^\[|\]$/g, '');
  return isIP(bare) === 6 ? `[${bare}]:${port}` : `${bare}:${port}`;
}

/**
 * A random loopback address 127.X.Y.Z (never 127.0.0.1, never a network or broadcast-looking
 * last byte): the default bind of `polywave serve`. Cookies are kept per host, not per port, so
 * the token cookie set by this server is sent only to this address, not to every other web
 * server on 127.0.0.1 (attack-serve.md F1). Linux routes all of 127.0.0.0/8 to `lo`.
 */
export function randomLoopbackHost(random: (bytes: number) => Buffer = randomBytes): string {
  for (;;) {
    const [x, y, z] = random(3);
    const address = `127.${x! % 256}.${y! % 256}.${1 + (z! % 254)}`;
    if (address !== '127.0.0.1') return address;
  }
}

/** True for an IPv4 loopback address other than 127.0.0.1 (a per-server address: only it is accepted in Host). */
export function isPrivateLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  return isIP(bare) === 4 && bare.startsWith('127.') && bare !== '127.0.0.1';
}

/**
 * The Host header values a request may carry. On a per-server loopback address (127.X.Y.Z, the
 * default): exactly that address with the bound port — `localhost` and 127.0.0.1 are other
 * cookie hosts, shared with every local server. On 127.0.0.1 (or another loopback name): the
 * loopback names with the bound port, plus the `--host` name when one was given. A wildcard
 * `--host` (0.0.0.0, ::) accepts any Host: the user chose to expose the server; the token still guards it.
 */
export function hostPolicy(input: { host: string; port: number; explicitHost: boolean }): (hostHeader: string | undefined) => boolean {
  if (isPrivateLoopback(input.host)) {
    const only = hostHeaderValue(input.host, input.port);
    return (header) => header === only;
  }
  const allowed = new Set(['127.0.0.1', 'localhost', '[::1]'].map((name) => `${name}:${input.port}`));
  if (input.explicitHost) {
    if (isWildcardHost(input.host)) return (header) => typeof header === 'string' && header !== '';
    allowed.add(hostHeaderValue(input.host, input.port).toLowerCase());
  }
  return (header) => typeof header === 'string' && allowed.has(header.toLowerCase());
}

/** An Origin header matches when it is `http://<the request's (already checked) Host>`. */
export function originMatches(origin: string, hostHeader: string): boolean {
  return origin.toLowerCase() === `http://${hostHeader.toLowerCase()}`;
}

// Secret detection is a small pattern list on purpose: the maintained scanner on npm (secretlint:
// @secretlint/core + its rule preset) is an asynchronous linter that reports ranges per source file;
// this redactor runs synchronously on every string of every JSON answer and SSE frame, and must also
// know key names, argv pairs and `.env` lines, which no rule package covers. Shapes follow the
// providers' documented token formats (and the report in attack-serve.md F4).
const redacted = '[redacted]';

/**
 * True for a key that names a secret in any case or separator: *token* (`refreshToken`,
 * `github-token`, `GITHUB_TOKEN`), *secret*, *password*, api key (`api_key`, `x-api-key`,
 * `ApiKey`), private/access key, authorization, cookie, credential… — `input_tokens` is a count,
 * not a token (and numbers are never redacted anyway).
 */
export function isSecretKey(key: string): boolean {
  const known = secretKeyMemo.get(key);
  if (known !== undefined) return known;
  const answer = keyIsSecret(key);
  if (key.length <= memoMaxLength) {
    if (secretKeyMemo.size >= memoEntries) secretKeyMemo.clear();
    secretKeyMemo.set(key, answer);
  }
  return answer;
}

// Memos of pure answers: the keys of events and answers are a small set, and an event stream
// repeats most of its strings (run ids, slugs, types, agent ids, paths). Bounded: long strings
// are not kept, and a full memo starts over.
const memoEntries = 4096;
const memoMaxLength = 512;
const secretKeyMemo = new Map<string, boolean>();

/** The shared secret-name words of src/sandbox/credential-variables.ts (one list for env names and keys). */
function keyIsSecret(key: string): boolean {
  return wordsNameSecret(nameWords(key)) || extraSecretKeys.has(key.toLowerCase().replace(/[^a-z0-9]/g, ''));
}

/**
 * Key names that hold a credential although no secret-name word says so (attack-serve-15 N3): the
 * Azure connection-string `AccountKey`, kube's `client-key-data`, `passwd`. Docker's `"auth"`
 * (base64 user:password) is redacted only with a base64 value ({@link dockerAuth}): `auth` alone
 * names too many things that are not secrets.
 */
const extraSecretKeys = new Set(['accountkey', 'sharedaccesskey', 'clientkeydata', 'passwd']);

/** Token shapes redacted wherever they appear in a string. */
const secretShapes: RegExp[] = [
  /\bsk-ant-[A-Za-z0-9_-]{16,}/g, // Anthropic
  /\bsk-ant-(?:api|admin|oat|sid)\d{0,3}-[A-Za-z0-9_-]+/g, // Anthropic, however short a piece of it is shown
  /\bya29\.[A-Za-z0-9_-]{16,}/g, // Google OAuth access token
  /\bGOCSPX-[A-Za-z0-9_-]{16,}/g, // Google OAuth client secret
  /\bSK[0-9a-f]{32}\b/g, // Twilio API key
  /\bkey-[0-9a-f]{32}\b/g, // Mailgun
  /\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{16,}/g, // OpenAI
  /\bgh[pousr]_[A-Za-z0-9]{20,}/g, // GitHub classic / OAuth / app tokens
  /\bgithub_pat_[A-Za-z0-9_]{20,}/g, // GitHub fine-grained PAT
  /\bglpat-[A-Za-z0-9_-]{20,}/g, // GitLab
  /\b[sr]k_(?:live|test)_[A-Za-z0-9]{10,}/g, // Stripe secret / restricted keys
  /\bhf_[A-Za-z0-9]{20,}/g, // Hugging Face
  /\bnpm_[A-Za-z0-9]{36}\b/g, // npm
  /\bxox[abprse]-[A-Za-z0-9-]{10,}/g, // Slack
  /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g, // AWS access key id
  /\bAIza[0-9A-Za-z_-]{30,}/g, // Google API key
  /\bgsk_[A-Za-z0-9]{20,}/g, // Groq
  /\bxai-[A-Za-z0-9]{20,}/g, // xAI
  /\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g, // JWT (header.payload.signature; `alg: none` has no signature)
  /\bhooks\.slack\.com\/services\/[A-Za-z0-9_/-]+/g, // Slack incoming webhook URL (the path is the secret)
  /\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}/g, // SendGrid
  /\bdo[opr]_v1_[a-f0-9]{64}\b/g, // DigitalOcean personal / OAuth / refresh tokens
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)/g, // PEM private keys
];

const keyChars = String.raw`[A-Za-z_][A-Za-z0-9_.-]*`;
/** `Bearer <token>` / `Basic <base64>` (Authorization headers quoted in logs and payloads); a plain word after it (prose) stays. */
const bearer = /\b(Bearer|Basic)(\s+)([A-Za-z0-9._~+/=-]{8,})/gi;
/** `Authorization: <scheme> <credentials>` anywhere in a line (`curl -H '…'`, a logged request): the credentials go, whatever the scheme. */
const authHeader = /\b((?:proxy-)?authorization:[ \t]*)([^'"`\r\n]+)/gi;
const authSchemes = /^(Bearer|Basic|Digest|Negotiate|NTLM|Token|ApiKey|Key|AWS4-HMAC-SHA256|OAuth|Splunk|SSWS)(\s+)/i;
/** `x-api-key: VALUE` / `api_key: VALUE` in the middle of a line (`curl -H '…'`): a secret-named key and a key-looking value. */
const headerPair = new RegExp(String.raw`(^|[\s'"\`(;,{])((${keyChars}):[ \t]*)([A-Za-z0-9_+/=~-]{8,})(?=$|[\s'"\`,;)}])`, 'gm');
/** `scheme://user:password@host` (or `redis://:password@host`, no user) → the password goes. */
const urlPassword = /\b([a-z][a-z0-9+.-]*:\/\/[^\s:/@'"]*:)([^\s@/'"]+)(@)/gi;
/** attack-serve-17 X3: `{apiKey:"v"}` / `apiKey: 'v'` (a JS/TS object key without quotes) with a secret-looking key. */
const objectKeyPair = new RegExp(String.raw`(^|[\s{,(])((${keyChars})[ \t]*:[ \t]*)(["'\`])([^"'\`\n]+)\4`, 'gm');
/** attack-serve-17 X3: `curl -u user:password` / `--user user:password` (HTTP basic): the password goes. */
const userFlag = /(^|\s)((?:-u|--user)(?:[ \t]+|=)["']?[^\s:'"]+:)([^\s'"]+)/g;
/** attack-serve-17 X3: `<password>v</password>` (XML / .NET config) with a secret-looking element name. */
const xmlElement = new RegExp(String.raw`(<(${keyChars})(?:\s[^<>]*)?>)([^<]+)(</\2\s*>)`, 'g');
/** attack-serve-17 X3: `secret_key = <<EOT` then the value on the next lines (HCL, shell): up to the terminator (or the end). */
const heredocValue = new RegExp(String.raw`(^|[\s;{(])((${keyChars})[ \t]*=?[ \t]*<<[-~]?[ \t]*["']?([A-Za-z_][A-Za-z0-9_]*)["']?[ \t]*\r?\n)([\s\S]*?)(?=\r?\n[ \t]*\4[ \t]*(?:\r?\n|$)|$(?![\s\S]))`, 'gm');
/** `KEY=value` (env lines, `--token=v`, `FOO_TOKEN=v cmd`) with a secret-looking KEY. */
const assignment = new RegExp(String.raw`(^|[\s'"\`;&|(?])((?:export\s+)?-{0,2}(${keyChars})=)("[^"\n]*"|'[^'\n]*'|[^\s'"\`;&|)]+)`, 'gm');
/** URL query parameters that carry a key under a name no secret-name rule knows (`?key=` of Google APIs, signatures). */
const queryKeyNames = /^(key|sig|signature|code|access_token|auth)$/i;
/**
 * `name = "value"` / `name = value` with spaces around `=` (TOML, INI, Python, shell config;
 * attack-serve-15 N3) and a secret-named key: a quoted value, or an unquoted one with a letter and
 * a digit (a token, not `token = getToken()` or `password = None`).
 */
const spacedAssignment = new RegExp(String.raw`(^|[\s'"\`;&|({,])((?:export\s+)?(${keyChars})[ \t]+=[ \t]*|(?:export\s+)?(${keyChars})=[ \t]+)("[^"\n]+"|'[^'\n]+'|[A-Za-z0-9_+/=~.:@-]{8,})`, 'gm');
/** .netrc: `machine H login U password P`, `login U password P`, or a `password P` line. */
const netrcPassword = /(\b(?:machine|default)\b[^\n]*?\bpassword[ \t]+|\blogin[ \t]+\S+[ \t]+password[ \t]+|^[ \t]*password[ \t]+)(\S+)/gm;
/** .pgpass: `host:port:database:user:password`. */
const pgpassLine = /(^|\s)([^\s:]+:(?:\d{1,5}|\*):[^\s:]+:[^\s:]+:)([^\s:]+)(?=\s|$)/gm;
/** Connection strings: `;AccountKey=…;`, `SharedAccessKey=…`, `Password=…`, `Pwd=…` (ADO.NET, Azure). */
const connectionStringKey = /(^|[;\s'"])((?:AccountKey|SharedAccessKey|SharedAccessSignature|Password|Pwd)=)([^;'"\s]+)/gi;
/** `key: value` in the middle of a line whose key names a password (`{password: hunterhunterhunter}`): any value of 8+ characters. */
const passwordPair = new RegExp(String.raw`(^|[\s'"\`(;,{])(((?:[A-Za-z0-9_.-]*[_.-])?(?:password|passwd|passphrase|secret|pwd)):[ \t]*)([^\s'"\`,;)}]{8,})`, 'gim');
/** docker `config.json`: `"auth": "<base64 of user:password>"`. */
const dockerAuth = /("auth"\s*:\s*")([A-Za-z0-9+/]{12,}={0,2})(")/g;
const base64Value = /^[A-Za-z0-9+/]{12,}={0,2}$/;
/** `"key": "value"` (JSON text) with a secret-looking key. */
const jsonPair = /("([^"\\\n]{1,100})"\s*:\s*)"((?:[^"\\\n]|\\.)*)"/g;
/** `key: value` at the start of a line (YAML) with a secret-looking key and a one-word value. */
const yamlPair = new RegExp(String.raw`^(\s*-?\s*(${keyChars}):[ \t]+)(["']?)([^\s'"#;,{}\[\]|>][^\s'"#;,]*)\3[ \t]*$`, 'gm');
/** `--api-key value` / `--token value` in a command line. */
const flagPair = new RegExp(String.raw`(^|\s)(--?(${keyChars})[ \t]+)("[^"]*"|'[^']*'|[^\s-][^\s]*)`, 'g');

/**
 * The values of the server's own environment variables whose names say they are credentials
 * ({@link isCredentialVariable}: `OPENAI_API_KEY`, `*_TOKEN`, `*_PASSWORD`, a URL with a password…),
 * 8 characters or longer: redacted by value wherever they appear, whatever their shape (a gateway
 * or proxy key with no known prefix). Longest first, so a value containing another goes whole.
 */
export function serverSecretValues(env: Readonly<Record<string, string | undefined>>): string[] {
  const values = new Set<string>();
  for (const [name, value] of Object.entries(env)) {
    if (typeof value !== 'string') continue;
    const trimmed = value.trim();
    if (trimmed.length >= 8 && isCredentialVariable(name, trimmed)) values.add(trimmed);
  }
  return [...values].sort((a, b) => b.length - a.length);
}

/**
 * `text` with every secret it shows replaced by "[redacted]" (see {@link redactSecrets}). `secrets`:
 * exact strings that always go (the server's token, {@link serverSecretValues}).
 */
export function redactText(text: string, secrets: string | readonly string[]): string {
  let out = text;
  for (const secret of typeof secrets === 'string' ? [secrets] : secrets) if (secret !== '' && out.includes(secret)) out = out.split(secret).join(redacted);
  for (const shape of secretShapes) out = out.replace(shape, redacted);
  out = out.replace(heredocValue, (all, lead: string, head: string, key: string, _end: string, body: string) => (isSecretKey(key) && body.trim() !== '' && body !== redacted ? `${lead}${head}${redacted}` : all));
  out = out.replace(urlPassword, (_all, head: string, _pass: string, at: string) => `${head}${redacted}${at}`);
  out = out.replace(bearer, (all, word: string, space: string, value: string) => (value === redacted || !/[\d._~+/=-]/.test(value) ? all : `${word}${space}${redacted}`));
  out = out.replace(authHeader, (all, head: string, value: string) => {
    const scheme = authSchemes.exec(value);
    const rest = scheme ? value.slice(scheme[0].length) : value;
    if (rest.trim() === '' || rest.trim() === redacted) return all;
    return `${head}${scheme ? `${scheme[1]}${scheme[2]}` : ''}${redacted}`;
  });
  out = out.replace(headerPair, (all, lead: string, head: string, key: string, value: string) => (isSecretKey(key) && !/^authorization$/i.test(key) && /\d/.test(value) && /[A-Za-z]/.test(value) ? `${lead}${head}${redacted}` : all));
  out = out.replace(assignment, (all, lead: string, head: string, key: string, value: string) =>
    (isSecretKey(key) || (/^[A-Z][A-Z0-9_]*$/.test(key) && isCredentialVariable(key, value)) || ((lead === '?' || lead === '&') && queryKeyNames.test(key))) && value !== redacted && value !== '""' && value !== "''" && !/^<<[-~]?["']?[A-Za-z_]\w*["']?$/.test(value) ? `${lead}${head}${redacted}` : all,
  );
  out = out.replace(spacedAssignment, (all, lead: string, head: string, key1: string | undefined, key2: string | undefined, value: string) => {
    const key = key1 ?? key2 ?? '';
    if (!(isSecretKey(key) || (/^[A-Z][A-Z0-9_]*$/.test(key) && isCredentialVariable(key, value)))) return all;
    const bare = value.replace(/^["']|["']$/g, '');
    if (bare === '' || bare === redacted || bare.startsWith('=')) return all;
    if (!/^["']/.test(value) && !(/\d/.test(value) && /[A-Za-z]/.test(value))) return all;
    return `${lead}${head}${/^["']/.test(value) ? `${value[0]}${redacted}${value[0]}` : redacted}`;
  });
  out = out.replace(netrcPassword, (all, head: string, value: string) => (value === redacted ? all : `${head}${redacted}`));
  out = out.replace(pgpassLine, (all, lead: string, head: string, value: string) => (value === redacted || value.length < 4 ? all : `${lead}${head}${redacted}`));
  out = out.replace(connectionStringKey, (all, lead: string, head: string, value: string) => (value === redacted ? all : `${lead}${head}${redacted}`));
  out = out.replace(passwordPair, (all, lead: string, head: string, _key: string, value: string) => (value === redacted || /^(required|optional|undefined|string|null|none|true|false|\[redacted\])$/i.test(value) ? all : `${lead}${head}${redacted}`));
  out = out.replace(dockerAuth, (_all, head: string, _value: string, tail: string) => `${head}${redacted}${tail}`);
  out = out.replace(objectKeyPair, (all, lead: string, head: string, key: string, quote: string, value: string) => (isSecretKey(key) && value !== redacted ? `${lead}${head}${quote}${redacted}${quote}` : all));
  out = out.replace(userFlag, (all, lead: string, head: string, value: string) => (value === redacted ? all : `${lead}${head}${redacted}`));
  out = out.replace(xmlElement, (all, open: string, key: string, value: string, close: string) => (isSecretKey(key) && value.trim() !== '' && value !== redacted ? `${open}${redacted}${close}` : all));
  out = out.replace(jsonPair, (all, head: string, key: string, value: string) => (isSecretKey(key) && value !== '' && value !== redacted ? `${head}"${redacted}"` : all));
  out = out.replace(yamlPair, (all, head: string, key: string, quote: string, value: string) => (isSecretKey(key) && value !== redacted && !/^(null|~|true|false|string)$/i.test(value) ? `${head}${quote}${redacted}${quote}` : all));
  out = out.replace(flagPair, (all, lead: string, head: string, key: string, value: string) => (isSecretKey(key) && value !== redacted ? `${lead}${head}${redacted}` : all));
  return out;
}

/**
 * A copy of `value` safe to send: string values under secret-looking keys ({@link isSecretKey};
 * numbers such as `input_tokens` stay), the value after a secret-named flag in an argv array
 * (`["--api-key", "v"]`), and inside every string the secrets {@link redactText} finds (token
 * shapes, `Bearer …`, URL passwords, `KEY=value` / `"key": "value"` / `key: value` with a secret
 * key, `--token v`) and the server's own token are replaced by "[redacted]".
 */
export function redactSecrets<T>(value: T, secrets: string | readonly string[]): T {
  return redactWith(value, (text) => redactText(text, secrets));
}

/**
 * {@link redactSecrets} for one server's token, remembering the redacted form of the strings it
 * saw (bounded; strings over 512 characters are redacted each time). The answer is the same as
 * redactSecrets': redactText is a pure function of the text and the token. What the SSE stream
 * uses, where each event would otherwise run every pattern over the same run id, slug and paths.
 */
export function secretRedactor(secrets: string | readonly string[]): <T>(value: T) => T {
  const memo = new Map<string, string>();
  const text = (item: string): string => {
    if (item.length > memoMaxLength) return redactText(item, secrets);
    let out = memo.get(item);
    if (out === undefined) {
      out = redactText(item, secrets);
      if (memo.size >= memoEntries) memo.clear();
      memo.set(item, out);
    }
    return out;
  };
  return <T>(value: T): T => redactWith(value, text);
}

function redactWith<T>(value: T, redactString: (text: string) => string): T {
  const walk = (item: unknown, key: string | undefined): unknown => {
    if (typeof item === 'string') {
      if (key !== undefined && isSecretKey(key) && item !== '') return redacted;
      if (key === 'auth' && base64Value.test(item)) return redacted;
      return redactString(item);
    }
    if (Array.isArray(item)) {
      return item.map((entry, index) => {
        const previous = index > 0 ? item[index - 1] : undefined;
        // argv: the element after `--api-key` / `--token` (a bare flag without `=`) is its value.
        if (typeof entry === 'string' && entry !== '' && typeof previous === 'string' && /^--?[A-Za-z]/.test(previous) && !previous.includes('=') && isSecretKey(previous.replace(/^-+/, ''))) return redacted;
        return walk(entry, undefined);
      });
    }
    if (item !== null && typeof item === 'object') {
      const out: Record<string, unknown> = {};
      // attack-serve-15 N4: a property NAME can be a secret too (a model-written tool input, a map keyed by values).
      // attack-serve-17 X5: two names redacted to one keep distinct names (`[redacted]`, `[redacted-2]`): no value is dropped.
      for (const [name, entry] of Object.entries(item as Record<string, unknown>)) {
        let shown = redactString(name);
        if (Object.hasOwn(out, shown)) {
          let n = 2;
          const numbered = (k: number) => (shown.endsWith(']') ? `${shown.slice(0, -1)}-${k}]` : `${shown}-${k}`);
          while (Object.hasOwn(out, numbered(n))) n += 1;
          shown = numbered(n);
        }
        out[shown] = walk(entry, name);
      }
      return out;
    }
    return item;
  };
  return walk(value, undefined) as T;
}

/** The response headers of every answer (CSP: only this origin; no framing; no referrer). */
export const securityHeaders: Readonly<Record<string, string>> = Object.freeze({
  'Content-Security-Policy': "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
});

/** Name of the token cookie: per port, since cookies ignore ports (two servers on one machine keep their own). */
export function cookieName(port: number): string {
  return `polywave_token_${port}`;
}
