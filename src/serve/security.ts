import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';

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
 * The Host header values a request may carry: the loopback names with the bound port, plus the
 * `--host` name when one was given. A wildcard `--host` (0.0.0.0, ::) accepts any Host: the
 * user chose to expose the server; the token still guards it.
 */
export function hostPolicy(input: { host: string; port: number; explicitHost: boolean }): (hostHeader: string | undefined) => boolean {
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

const secretKey = /(api[_-]?key|secret|password|passwd|authorization|cookie|credential|private[_-]?key|access[_-]?token|auth[_-]?token|^token$|_token$)/i;
const secretValue = /\b(sk-[A-Za-z0-9_-]{16,}|sk-ant-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{30,})\b/g;
const redacted = '[redacted]';

/**
 * A copy of `value` safe to send: string values under secret-looking keys (`api_key`,
 * `ANTHROPIC_API_KEY`, `authorization`, `*_token` …; numbers such as `input_tokens` stay),
 * API-key-shaped strings anywhere (`sk-…`, `ghp_…`, `AKIA…`) and the server's own token are
 * replaced by "[redacted]".
 */
export function redactSecrets<T>(value: T, token: string): T {
  const walk = (item: unknown, key: string | undefined): unknown => {
    if (typeof item === 'string') {
      if (key !== undefined && secretKey.test(key) && item !== '') return redacted;
      let text = item.replace(secretValue, redacted);
      if (token !== '' && text.includes(token)) text = text.split(token).join(redacted);
      return text;
    }
    if (Array.isArray(item)) return item.map((entry) => walk(entry, undefined));
    if (item !== null && typeof item === 'object') {
      const out: Record<string, unknown> = {};
      for (const [name, entry] of Object.entries(item as Record<string, unknown>)) out[name] = walk(entry, name);
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
