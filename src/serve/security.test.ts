import { describe, expect, it } from 'vitest';
import { cookieName, hostPolicy, isLoopbackHost, isSecretKey, isWildcardHost, newToken, originMatches, randomLoopbackHost, redactSecrets, redactText, secretRedactor, serverSecretValues, tokenMatches } from './security.js';

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

  it('picks a random per-server loopback address, on which only that exact Host is accepted (F1)', () => {
    const seen = new Set<string>();
    for (let index = 0; index < 50; index += 1) {
      const host = randomLoopbackHost();
      expect(host).toMatch(/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/);
      expect(host).not.toBe('127.0.0.1');
      expect(isLoopbackHost(host)).toBe(true);
      seen.add(host);
    }
    expect(seen.size).toBeGreaterThan(45);
    // Bytes that would give 127.0.0.1 are drawn again.
    const draws = [Buffer.from([0, 0, 0]), Buffer.from([9, 8, 6])];
    expect(randomLoopbackHost(() => draws.shift()!)).toBe('127.9.8.7');
    const strict = hostPolicy({ host: '127.9.8.7', port: 7420, explicitHost: false });
    expect(['127.9.8.7:7420', '127.0.0.1:7420', 'localhost:7420', '[::1]:7420', '127.9.8.7:7421', '127.9.8.7', undefined].map(strict)).toEqual([true, false, false, false, false, false, false]);
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

  it('secretRedactor (what SSE frames and answers use) gives redactSecrets\' answer, also from its memo and for long strings', () => {
    const token = 'b'.repeat(32);
    const redact = secretRedactor(token);
    const event = (note: string) => ({ id: 1, run_id: 'run-1', type: 'agent-tool-call', payload: { tool: 'bash', input: { command: `curl -H "Authorization: Bearer abc.def-123" ${note}` }, env: { GITHUB_TOKEN: 'x' }, note, long: `${'x'.repeat(600)} ${token} sk-ant-api03-abcdefghijklmnopqrstuv` } });
    for (const note of ['plain', `the token ${token}`, 'plain', 'postgres://u:hunter2@db/prod', `the token ${token}`]) {
      const value = event(note);
      const expected = redactSecrets(value, token);
      expect(redact(value)).toEqual(expected);
      expect(JSON.stringify(redact(value))).not.toMatch(new RegExp(`${token}|hunter2|abc\\.def|sk-ant`));
    }
    // Another server's token: its own memo.
    expect(secretRedactor('c'.repeat(32))({ note: `the token ${token}` })).toEqual({ note: `the token ${token}` });
    // isSecretKey answers the same the second time (memo).
    for (let round = 0; round < 2; round += 1) expect([isSecretKey('refreshToken'), isSecretKey('input_tokens')]).toEqual([true, false]);
  });

  it('knows secret key names in any case or separator (F4)', () => {
    for (const key of ['refreshToken', 'github-token', 'GITHUB_TOKEN', 'token', 'api_key', 'x-api-key', 'ApiKey', 'apikey', 'ANTHROPIC_API_KEY', 'client_secret', 'password', 'db-password', 'Authorization', 'private_key', 'aws_secret_access_key', 'bearer', 'oauth_token'])
      expect(isSecretKey(key), key).toBe(true);
    for (const key of ['input_tokens', 'output_tokens', 'tokenizer', 'author', 'auth', 'PATH', 'key', 'monkey', 'PWD', 'cache_read_tokens'])
      expect(isSecretKey(key), key).toBe(false);
  });

  it('redacts every example of attack-serve.md F4: key names, argv pairs, token shapes in text, Bearer, URL passwords', () => {
    const payload = {
      refreshToken: 'plain-refresh-1',
      'github-token': 'plain-gh-2',
      bearer: 'plainbearer0',
      header: 'Authorization: Bearer plainbearer123',
      argv: ['writer', '--api-key', 'argv-plain-secret', '--token', 'tok-plain', '--model', 'gpt-x'],
      command: 'writer --api-key cmdsecret --github-token github_pat_11CMDLINEabcdefghijklmnopqrstuv --model gpt-x',
      pat: 'github_pat_11AAAAAAA0abcdefghijklmnopqrstuvwxyz',
      ghp: 'ghp_abcdefghijklmnopqrstuvwxyz0123',
      gho: 'gho_abcdefghijklmnopqrstuvwxyz0123',
      stripe: 'STRIPE sk_live_51Habcdefghijk and rk_live_51Habcdefghijk',
      hf: 'hf_abcdefghijklmnopqrstuvwxyz',
      slack: 'xoxb-1234567890-abcdefghij',
      aws: 'AKIAABCDEFGHIJKLMNOP',
      db: 'postgres://u:hunter2@db/prod',
      counts: { input_tokens: 10, output_tokens: 5 },
    };
    expect(redactSecrets(payload, 'f'.repeat(32))).toEqual({
      refreshToken: '[redacted]',
      'github-token': '[redacted]',
      bearer: '[redacted]',
      header: 'Authorization: Bearer [redacted]',
      argv: ['writer', '--api-key', '[redacted]', '--token', '[redacted]', '--model', 'gpt-x'],
      command: 'writer --api-key [redacted] --github-token [redacted] --model gpt-x',
      pat: '[redacted]',
      ghp: '[redacted]',
      gho: '[redacted]',
      stripe: 'STRIPE [redacted] and [redacted]',
      hf: '[redacted]',
      slack: '[redacted]',
      aws: '[redacted]',
      db: 'postgres://u:[redacted]@db/prod',
      counts: { input_tokens: 10, output_tokens: 5 },
    });
  });

  it('redacts secrets inside file text: .env lines, JSON and YAML pairs with secret keys; code and prose stay', () => {
    const env = 'ANTHROPIC_API_KEY=plainsecretvalue123\nGITHUB_TOKEN=github_pat_11AAAAAAA0abcdefghijklmnop\nexport DB_PASSWORD="hunter 2"\nSTRIPE=sk_live_51Habcdefghijklm\nPORT=8080\nPATH=/usr/bin\n';
    expect(redactText(env, '')).toBe('ANTHROPIC_API_KEY=[redacted]\nGITHUB_TOKEN=[redacted]\nexport DB_PASSWORD=[redacted]\nSTRIPE=[redacted]\nPORT=8080\nPATH=/usr/bin\n');
    expect(redactText('{\n  "anthropic_api_key": "myproxykey-0123",\n  "model": "sonnet",\n  "max_tokens": "100"\n}', '')).toBe('{\n  "anthropic_api_key": "[redacted]",\n  "model": "sonnet",\n  "max_tokens": "100"\n}');
    expect(redactText('github.com:\n  user: victim\n  oauth_token: plainoauth\ndb_url: postgres://admin:hunter2@db.internal/prod\n', '')).toBe('github.com:\n  user: victim\n  oauth_token: [redacted]\ndb_url: postgres://admin:[redacted]@db.internal/prod\n');
    const code = 'const token = process.env.TOKEN;\ninterface A { password: string; apiKey: string, }\nBearer tokens are described here.\nThe token is missing.\n';
    expect(redactText(code, '')).toBe(code);
    expect(redactText('FOO_TOKEN=abc123 polywave run --token=xyz789', '')).toBe('FOO_TOKEN=[redacted] polywave run --token=[redacted]');
  });
  it('redacts the key shapes of attack-serve-12 F2 wherever they are, and the server\'s own credential values by value', () => {
    const lines = [
      'groq gsk_AAAAbbbbCCCCddddEEEEffffGGGGhhhh1111wxyz',
      'xai xai-AAAAbbbbCCCCddddEEEEffffGGGGhhhh1111wxyz',
      'jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
      'slack https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX',
      'sendgrid SG.AAAAbbbbCCCCddddEEEEff.GGGGhhhh1111wxyzAAAAbbbbCCCCddddEEEEffffG',
      'do dop_v1_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef',
      'azure https://x.openai.azure.com/openai?api-key=0123456789abcdef0123456789abcdef',
      'query https://api.example.com/v1?api_key=Zq9vQUERY12345&model=x and ?key=Zq9vGOOGLE12345',
      "curl -H 'x-api-key: Zq9vHEADER98765' -H 'Authorization: Basic dXNlcjpwYXNzd29yZA==' https://x",
      'GET / Authorization: Negotiate YIIBzgYGKwYBBQUCoIIB',
      'env-value Zq9vENVPLAINKEY0001 in a journal line',
    ];
    const out = redactText(lines.join('\n'), ['t'.repeat(32), ...serverSecretValues({ OPENAI_API_KEY: 'Zq9vENVPLAINKEY0001', SHORT_TOKEN: 'abc', PATH: '/usr/bin', HOME: '/home/u' })]).split('\n');
    expect(out).toEqual([
      'groq [redacted]',
      'xai [redacted]',
      'jwt [redacted]',
      'slack https://[redacted]',
      'sendgrid [redacted]',
      'do [redacted]',
      'azure https://x.openai.azure.com/openai?api-key=[redacted]',
      'query https://api.example.com/v1?api_key=[redacted]&model=x and ?key=[redacted]',
      "curl -H 'x-api-key: [redacted]' -H 'Authorization: Basic [redacted]' https://x",
      'GET / Authorization: Negotiate [redacted]',
      'env-value [redacted] in a journal line',
    ]);
    // Only credential-named variables of 8+ characters, longest first; prose and code with the same words stay.
    expect(serverSecretValues({ OPENAI_API_KEY: 'Zq9vENVPLAINKEY0001', GH_TOKEN: 'ghp_abcdefghijklmnopqrstuvwxyz0123', SHORT_TOKEN: 'abc', PATH: '/usr/bin', LANG: 'en_US.UTF-8' })).toEqual(['ghp_abcdefghijklmnopqrstuvwxyz0123', 'Zq9vENVPLAINKEY0001']);
    const prose = 'Basic configuration, see key: value pairs; x-api-key: string; password: hunter; ?page=2&key=';
    expect(redactText(prose, '')).toBe(prose);
  });

  it('redacts the shapes of attack-serve-17 X3 (object key without quotes, URL with no user, curl -u, XML element, heredoc) and keeps two redacted object keys apart (X5)', () => {
    const lines = [
      'js {apiKey:"Zq9vJSOBJplain00012x"} and {token: \'Zq9vJSOBJplain00013x\'}',
      'redis redis://:Zq9vREDISplain00015x@cache:6379/0',
      'curl -u bob:Zq9vCURLUplain0018x https://x; curl --user=bob:Zq9vCURLUplain0019x https://y',
      'xml <password>Zq9vXMLplain0024x</password> <add key="x"><clientSecret attr="1">Zq9vXMLplain0025x</clientSecret></add>',
      'hcl secret_key = <<EOT',
      'Zq9vHEREDOCnext0026x',
      'EOT',
      'after the heredoc: kept',
      'code {name:"Zq9vNOTSECRET"} <title>hello world</title> git add -u src/x.ts http://localhost:8080/x user = <<EOF',
      'kept (not a secret name)',
      'EOF',
      'env API_TOKEN=<<END',
      'Zq9vHEREDOCnoend0027x (no terminator: to the end, the safe side)',
    ];
    expect(redactText(lines.join('\n'), '').split('\n')).toEqual([
      'js {apiKey:"[redacted]"} and {token: \'[redacted]\'}',
      'redis redis://:[redacted]@cache:6379/0',
      'curl -u bob:[redacted] https://x; curl --user=bob:[redacted] https://y',
      'xml <password>[redacted]</password> <add key="x"><clientSecret attr="1">[redacted]</clientSecret></add>',
      'hcl secret_key = <<EOT',
      '[redacted]',
      'EOT',
      'after the heredoc: kept',
      'code {name:"Zq9vNOTSECRET"} <title>hello world</title> git add -u src/x.ts http://localhost:8080/x user = <<EOF',
      'kept (not a secret name)',
      'EOF',
      'env API_TOKEN=<<END',
      '[redacted]',
    ]);
    expect(redactSecrets({ 'sk-ant-api03-abcdefghijklmnopqrstuv': 1, ghp_abcdefghijklmnopqrstuvwxyz12: 3, ok: 2 }, '')).toEqual({ '[redacted]': 1, '[redacted-2]': 3, ok: 2 });
  });
});
