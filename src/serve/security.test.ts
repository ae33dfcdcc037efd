import { describe, expect, it } from 'vitest';
import { cookieName, hostPolicy, isLoopbackHost, isWildcardHost, newToken, originMatches, redactSecrets, tokenMatches } from './security.js';

describe('serve security helpers', () => {
  it('makes 32-hex tokens and compares them exactly', () => {
    const token = newToken();
    expect(token).toMatch(/^[0-9a-f]{32}$/);
    expect(newToken()).not.toBe(token);
    expect(tokenMatches(token, token)).toBe(true);
    expect(tokenMatches(token, token.toUpperCase())).toBe(false);
    expect(tokenMatches(token, `${token}0`)).toBe(false);
    expect(tokenMatches(token, '')).toBe(false);
    expect(tokenMatches(token, undefined)).toBe(false);
  });

  it('knows loopback and wildcard addresses', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', 'LOCALHOST', '::1', '[::1]', '::ffff:127.0.0.1']) expect(isLoopbackHost(host), host).toBe(true);
    for (const host of ['0.0.0.0', '::', '192.168.1.2', '10.0.0.1', 'example.com', '128.0.0.1', '::2']) expect(isLoopbackHost(host), host).toBe(false);
    expect(isWildcardHost('0.0.0.0')).toBe(true);
    expect(isWildcardHost('[::]')).toBe(true);
    expect(isWildcardHost('127.0.0.1')).toBe(false);
  });

  it('accepts only the loopback names with the bound port in Host (plus --host)', () => {
    const loopback = hostPolicy({ host: '127.0.0.1', port: 7420, explicitHost: false });
    expect(['127.0.0.1:7420', 'localhost:7420', '[::1]:7420', 'LocalHost:7420'].map(loopback)).toEqual([true, true, true, true]);
    expect(['127.0.0.1', '127.0.0.1:7421', 'evil.com:7420', 'localhost.evil.com:7420', '', undefined].map(loopback)).toEqual([false, false, false, false, false, false]);
    const named = hostPolicy({ host: 'devbox.lan', port: 7420, explicitHost: true });
    expect(['devbox.lan:7420', '127.0.0.1:7420', 'other.lan:7420'].map(named)).toEqual([true, true, false]);
    const wildcard = hostPolicy({ host: '0.0.0.0', port: 7420, explicitHost: true });
    expect(['anything:1', ''].map(wildcard)).toEqual([true, false]);
    expect(originMatches('http://127.0.0.1:7420', '127.0.0.1:7420')).toBe(true);
    expect(originMatches('https://127.0.0.1:7420', '127.0.0.1:7420')).toBe(false);
    expect(originMatches('null', '127.0.0.1:7420')).toBe(false);
    expect(cookieName(7420)).toBe('polywave_token_7420');
  });

  it('redacts secret-looking keys, key-shaped strings and the token, keeping token counts', () => {
    const token = 'a'.repeat(32);
    const input = {
      input_tokens: 10,
      output_tokens: 5,
      env: { ANTHROPIC_API_KEY: 'anything', OPENAI_API_KEY: '', PATH: '/usr/bin', GITHUB_TOKEN: 'x', authorization: 'Bearer y' },
      note: `use sk-ant-api03-abcdefghijklmnopqrstuv or ghp_abcdefghijklmnopqrstuvwxyz0123 and ${token}`,
      list: ['AKIAABCDEFGHIJKLMNOP', 'plain'],
      password: 'hunter2',
    };
    expect(redactSecrets(input, token)).toEqual({
      input_tokens: 10,
      output_tokens: 5,
      env: { ANTHROPIC_API_KEY: '[redacted]', OPENAI_API_KEY: '', PATH: '/usr/bin', GITHUB_TOKEN: '[redacted]', authorization: '[redacted]' },
      note: 'use [redacted] or [redacted] and [redacted]',
      list: ['[redacted]', 'plain'],
      password: '[redacted]',
    });
    expect(input.password).toBe('hunter2');
  });
});
