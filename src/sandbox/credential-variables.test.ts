import { describe, expect, it } from 'vitest';
import { isCredentialVariable, tokenShapes, withoutCredentials } from './credential-variables.js';
import { isSecretKey, redactText } from '../serve/security.js';

describe('credential variables (outside attack X3 #22)', () => {
  it("the attacker's list goes, what agents need stays, and serve redacts by the same words", () => {
    const leaked: Record<string, string> = {
      POLYWAVE_REDIS_URL: 'redis://:CANARY-REDIS-PW@127.0.0.1:6379/0',
      DATABASE_URL: 'postgres://u:CANARY-PW@db.example/app',
      OPENAI_KEY: 'sk-x3',
      MYSQL_PWD: 'x3',
      MISTRAL_KEY: 'x3',
      AZURE_OPENAI_KEY: 'x3',
      GITHUB_PAT: 'ghp_x3',
      SLACK_WEBHOOK_URL: 'https://hooks.slack.com/services/T/B/x3',
      SENTRY_DSN: 'https://k@o1.ingest.sentry.io/1',
      SMTP_PASS: 'x3',
      REDIS_URL: 'redis://localhost:6379',
      MONGODB_URI: 'mongodb://localhost/app',
      CLIENTSECRET: 'x3',
      GHTOKEN: 'x3',
      // any variable whose value is a URL with a password
      MY_SERVICE_ENDPOINT: 'https://user:CANARY@svc.example/',
      UPSTREAM: 'amqp://:CANARY@broker/',
      // the names the filter knew before
      // outside attack X10 N1a
      STRIPE_SK: 'sk_live_CANARY-X10',
      STRIPE_RK: 'x10',
      PAYMENTS: 'rk_live_CANARY10abc',
      SOME_KEY_VALUE: 'sk_test_CANARY10abc',
      // outside attack X18-14: a proxy URL with a password (the sandbox's own proxy sets these for its commands), CREDS, a salt
      HTTP_PROXY: 'http://user:proxypw@proxy:3128',
      https_proxy: 'http://user:CANARY-X18@proxy:3128',
      CREDS: 'user:CANARY-X18',
      SIGNING_SALT: 'CANARY-X18',
      SSHPASS: 'x10',
      PGPASS: 'x10',
      CODECOV: 'x10',
      CODECOV_TOKEN: 'x10',
      CLICKHOUSE_URL: 'http://default:@ch:8123/',
      ELASTIC_URL: 'https://es.example/',
      OPENSEARCH_URL: 'https://os.example/',
      S3_URL: 's3://bucket',
      MINIO_URL: 'http://minio:9000',
      INFLUXDB_URL: 'http://influx:8086',
      NEO4J_URI: 'bolt://neo4j:7687',
      CASSANDRA_URL: 'cassandra://c',
      COUCHDB_URL: 'http://couch:5984',
      ANTHROPIC_API_KEY: 'x', CLAUDE_CODE_OAUTH_TOKEN: 'x', AWS_SECRET_ACCESS_KEY: 'x', AWS_ACCESS_KEY_ID: 'x', GH_TOKEN: 'x', PGPASSWORD: 'x', GOOGLE_APPLICATION_CREDENTIALS: 'x',
    };
    const kept: Record<string, string> = {
      PATH: '/usr/bin:/bin',
      HOME: '/home/u',
      LANG: 'C.UTF-8',
      PWD: '/work',
      OLDPWD: '/',
      SSH_AUTH_SOCK: '/tmp/ssh.sock',
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:9/anthropic',
      OPENAI_BASE_URL: 'https://api.openai.com/v1',
      MAX_OUTPUT_TOKENS: '1000',
      KEYBOARD: 'us',
      HTTPS_PROXY: 'http://proxy.corp:3128',
      http_proxy: 'http://proxy:3128',
      NO_PROXY: 'localhost',
      POLYWAVE_AGENT_ID: 'A',
      POLYWAVE_IMPL_PATH: '/x/docs/IMPL/IMPL-a.yaml',
      GIT_AUTHOR_NAME: 'a',
      NODE_OPTIONS: '--max-old-space-size=4096',
      TOKENIZERS_PARALLELISM: 'false',
      npm_config_registry: 'https://registry.npmjs.org/',
      NPM_REGISTRY_URL: 'https://registry.npmjs.org/',
      STRIPE_PK: 'pk_live_public',
      DISK: 'sda',
      TASK_ID: '7',
      SKIP_TESTS: '1',
    };
    const misses = Object.entries(leaked).filter(([name, value]) => !isCredentialVariable(name, value)).map(([name]) => name);
    const wrongly = Object.entries(kept).filter(([name, value]) => isCredentialVariable(name, value)).map(([name]) => name);
    expect({ misses, wrongly }).toEqual({ misses: [], wrongly: [] });
    expect(withoutCredentials({ ...leaked, ...kept })).toEqual(kept);
    // One list of secret words: serve's key redaction knows the names the filter knows, and env lines are redacted by the filter.
    expect(['OPENAI_API_KEY', 'refreshToken', 'Authorization', 'x-api-key', 'pgpassword'].filter((key) => !isSecretKey(key))).toEqual([]);
    expect(['input_tokens', 'key', 'path'].filter((key) => isSecretKey(key))).toEqual([]);
    // `sk_live_` keys are searched for in files too (prepare-wave --commit-baseline); test keys only in values
    expect(new RegExp(tokenShapes).test('const k = "sk_live_abcdefgh12"')).toBe(true);
    expect(redactText('export MISTRAL_KEY=abc123 DATABASE_URL=postgres://u:pw@h/db PATH=/bin', 'serve-token-x')).toBe('export MISTRAL_KEY=[redacted] DATABASE_URL=[redacted] PATH=/bin');
  });

  it('token VALUES under innocuous names (outside attack X13 #6): PEM keys, Google, SendGrid, Vault, PyPI, Shopify, Doppler, Linear, Twilio, JSON with secrets', () => {
    const r = (length: number, alphabet = 'aB3xQ9kLm2Zp7Rt'): string => Array.from({ length }, (_, index) => alphabet[(index * 7) % alphabet.length]).join('');
    const leaked: Record<string, string> = {
      V_PEM: `-----BEGIN RSA PRIVATE KEY-----MIIE${r(40)}`,
      V_PEM_NL: `\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn${r(60)}\n-----END OPENSSH PRIVATE KEY-----\n`,
      V_EC: '-----BEGIN EC PRIVATE KEY-----',
      V_GOOGLEAPI: `AIza${r(35)}`,
      V_SENDGRID: `SG.${r(22)}.${r(43)}`,
      V_VAULT: `hvs.${r(90)}`,
      V_VAULT_BATCH: `hvb.${r(30)}`,
      V_PYPI: `pypi-AgEIcHlwaS5vcmc${r(50)}`,
      V_SHOPIFY: `shpat_${r(32, '0123456789abcdef')}`,
      V_SHOPIFY_SS: `shpss_${r(32)}`,
      V_DOPPLER: `dp.st.${r(40)}`,
      V_LINEAR: `lin_api_${r(40)}`,
      V_TWILIO: `SK${r(32, '0123456789abcdef')}`,
      V_DOCKERAUTH: `{"auths":{"r.io":{"auth":"${r(24)}"}}}`,
      V_JSONPW: `{"user":"a","password":"${r(16)}"}`,
      V_JSONTOKEN: ` {"refreshToken": "${r(16)}"}`,
    };
    const kept: Record<string, string> = {
      V_JSON: '{"level":"debug","tokens":3,"name":"x"}',
      V_LIST: '["a","b"]',
      V_PEM_PUBLIC: '-----BEGIN PUBLIC KEY-----MIIB',
      V_CERT: '-----BEGIN CERTIFICATE-----MIIB',
      V_SG: 'SG.short.value',
      V_SKU: 'SKU-12345',
      V_SID: `SK${r(31)}`,
      V_AIZA: 'AIzaShort',
      V_PATH: '/opt/hvs.tools/bin:/usr/bin',
    };
    const misses = Object.entries(leaked).filter(([name, value]) => !isCredentialVariable(name, value)).map(([name]) => name);
    const wrongly = Object.entries(kept).filter(([name, value]) => isCredentialVariable(name, value)).map(([name]) => name);
    expect({ misses, wrongly }).toEqual({ misses: [], wrongly: [] });
    // the shapes are searched for in untracked files' contents too (prepare-wave --commit-baseline), bounded by non-token characters
    const inText = new RegExp(`(?<![A-Za-z0-9_-])(?:${tokenShapes})(?![A-Za-z0-9_-])`);
    expect([leaked.V_GOOGLEAPI, leaked.V_SENDGRID, leaked.V_VAULT, leaked.V_PYPI, leaked.V_SHOPIFY, leaked.V_DOPPLER, leaked.V_LINEAR, leaked.V_TWILIO, '-----BEGIN PRIVATE KEY-----'].filter((token) => !inText.test(`const k = "${token!}";\n`))).toEqual([]);
    expect(['const sku = "SKU-1";', 'hvs.short', 'see AIza docs', 'lin_api_x'].filter((text) => inText.test(text))).toEqual([]);
  });
  it('token VALUES of other shapes (outside attack X14 #4): Google OAuth, DigitalOcean, Stripe webhook, Sentry, Square, age, Azure, webhooks, password text; ordinary values kept', () => {
    const r = (length: number, alphabet = 'aB3xQ9kLm2Zp7Rt'): string => Array.from({ length }, (_, index) => alphabet[(index * 7) % alphabet.length]).join('');
    const hex = (length: number): string => r(length, '0123456789abcdef');
    const leaked: Record<string, string> = {
      V_YA29: `ya29.a0${r(100)}`,
      V_DO: `dop_v1_${hex(64)}`,
      V_DO_ALNUM: `dop_v1_${r(64, 'abcdefghijklmnopqrstuvwxyz0123456789')}`,
      V_WHSEC: `whsec_${r(32)}`,
      V_SENTRY: `sntrys_${r(60)}`,
      V_SQUARE: `sq0atp-${r(22)}`,
      V_SQUARE_SECRET: `sq0csp-${r(43)}`,
      V_AGE: `AGE-SECRET-KEY-1${r(58, 'QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L')}`,
      V_AZURE: `DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=${r(86)}==;EndpointSuffix=core.windows.net`,
      V_AZURE_SB: `Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=${r(44)}=`,
      V_SLACK: `https://hooks.slack.com/services/T0ABCDEFGH/B0ABCDEFGH/${r(24)}`,
      V_DISCORD: `https://discord.com/api/webhooks/1234567890/${r(68)}`,
      V_YAMLPW: `password: ${r(16)}`,
      V_KV: `user=a;password=${r(16)}`,
      V_NETRC: `machine h login u password ${r(16)}`,
    };
    const kept: Record<string, string> = {
      GITHUB_SHA: hex(40),
      V_PATH: '/usr/local/bin:/usr/bin:/bin',
      V_URL: 'https://example.com/api/v1?page=2',
      V_SLACK_DOCS: 'https://api.slack.com/messaging/webhooks',
      V_DISCORD_INVITE: 'https://discord.com/invite/abc',
      V_PW_VAR: 'password=$DB_PASSWORD',
      V_PW_TEMPLATE: 'password: ${DB_PASSWORD}',
      V_PW_EMPTY: 'password=',
      V_TEXT: 'enter your password here',
      V_FLAGS: '--password-stdin --pass-through',
      V_YA: 'ya29.short',
      V_ACCOUNT: 'AccountName=acct;EndpointSuffix=core.windows.net',
      V_SHA256: hex(64),
    };
    const misses = Object.entries(leaked).filter(([name, value]) => !isCredentialVariable(name, value)).map(([name]) => name);
    const wrongly = Object.entries(kept).filter(([name, value]) => isCredentialVariable(name, value)).map(([name]) => name);
    expect({ misses, wrongly }).toEqual({ misses: [], wrongly: [] });
    // the distinctive token shapes are searched for in files too; the in-value ones (password text, webhooks, AccountKey) are not
    const inText = new RegExp(`(?<![A-Za-z0-9_-])(?:${tokenShapes})(?![A-Za-z0-9_-])`);
    expect([leaked.V_YA29, leaked.V_DO, leaked.V_WHSEC, leaked.V_SENTRY, leaked.V_SQUARE, leaked.V_AGE].filter((token) => !inText.test(`const k = "${token!}";\n`))).toEqual([]);
    expect(inText.test('const password = "hunter22";')).toBe(false);
  });
});

describe('token shapes of outside attack X16 #22', () => {
  it('Atlassian, Databricks, Docker Hub, Figma, Google OAuth client secret, New Relic, PlanetScale, Pulumi, Terraform Cloud, Slack app tokens are stripped under any name; ordinary values are kept', () => {
    const r = (length: number, alphabet = 'aB3xQ9kLm2Zp7Rt'): string => Array.from({ length }, (_, index) => alphabet[(index * 7) % alphabet.length]).join('');
    const hex = (length: number): string => r(length, '0123456789abcdef');
    const leaked: Record<string, string> = {
      V_ATATT: `ATATT3xFfGF0${r(180)}=A1B2C3D4`,
      V_DAPI: `dapi${hex(32)}`,
      V_DAPI_SUFFIX: `dapi${hex(32)}-2`,
      V_DCKR: `dckr_pat_${r(27)}`,
      V_FIGD: `figd_${r(40)}`,
      V_GOCSPX: `GOCSPX-${r(28)}`,
      V_NRAK: `NRAK-${r(27, 'ABCDEFGHJKLMNPQRSTUVWXYZ0123456789')}`,
      V_PSCALE: `pscale_tkn_${r(43)}`,
      V_PULUMI: `pul-${hex(40)}`,
      V_TFC: `${r(14)}.atlasv1.${r(67)}`,
      V_XAPP: `xapp-1-A0123456789-1234567890123-${hex(64)}`,
    };
    const kept: Record<string, string> = {
      V_DAPI_WORD: 'dapi-client',
      V_DAPI_SHORT: `dapi${hex(16)}`,
      V_PUL: 'pul-request-handler',
      V_PUL_SHA: `pul-${hex(39)}`,
      V_FIG: 'figd_short',
      V_NR: 'NRAK-short',
      V_ATLAS: 'atlasv1.example.com',
      V_XAPP: 'xapp-config',
      V_DOCKER: 'dckr_pat_',
      V_ATAT: 'ATATT3 is a prefix',
      V_UUID: '123e4567-e89b-12d3-a456-426614174000',
      V_SHA: hex(40),
      V_HOST: 'db.atlasv1.internal',
    };
    const misses = Object.entries(leaked).filter(([name, value]) => !isCredentialVariable(name, value)).map(([name]) => name);
    const wrongly = Object.entries(kept).filter(([name, value]) => isCredentialVariable(name, value)).map(([name]) => name);
    expect({ misses, wrongly }).toEqual({ misses: [], wrongly: [] });
    // searched for in files too (prepare-wave --commit-baseline): found in code, not in ordinary text
    const inText = new RegExp(`(?<![A-Za-z0-9_-])(?:${tokenShapes})(?![A-Za-z0-9_-])`);
    expect(Object.values(leaked).filter((token) => !inText.test(`const k = "${token}";\n`))).toEqual([]);
    expect(['import { dapiClient } from "./dapi";', 'const url = "https://app.terraform.io/api/v2";', 'pul-request', 'NRAK-1', 'see figd_ docs'].filter((text) => inText.test(text))).toEqual([]);
  });
  it('outside attack X19-05: *_PW, *_ACCESS, Bundler host credentials, 1Password tokens; the GIT_CONFIG_COUNT group goes whole', () => {
    const leaked: Record<string, string> = {
      LDAP_BIND_PW: 'x19ldap',
      JFROG_ACCESS: 'x19jfrog',
      BUNDLE_GEMS__CONTRIBSYS__COM: 'user:X19bundle',
      OP_SERVICE_ACCOUNT: `ops_eyJ${'a'.repeat(40)}`,
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'http.https://github.com/.extraheader',
      GIT_CONFIG_VALUE_0: 'AUTHORIZATION: basic X19',
    };
    const kept: Record<string, string> = { BUNDLE_PATH: 'vendor/bundle', BUNDLE_WITHOUT: 'development:test', ACCESS: 'public', PWD: '/work', OPS_TEAM: 'ops_team' };
    expect(Object.keys(withoutCredentials(leaked))).toEqual([]);
    expect(withoutCredentials(kept)).toEqual(kept);
  });
});

describe('remembered verdicts', () => {
  it('a name judged before is judged again by its value: the same name with a secret value, without one, and asked with no value', () => {
    const runs = [
      ['HTTPS_PROXY', 'http://proxy.local:3128', false],
      ['HTTPS_PROXY', 'http://user:CANARY-PW@proxy.local:3128', true],
      ['HTTPS_PROXY', 'http://proxy.local:3128', false],
      ['HTTPS_PROXY', undefined, false],
      ['BUILD_LABEL', 'nightly', false],
      ['BUILD_LABEL', 'sk-ant-abcdefghijklmnopqrstuv', true],
      ['BUILD_LABEL', undefined, false],
      ['BUILD_LABEL', 'nightly', false],
    ] as const;
    for (let round = 0; round < 3; round += 1) {
      for (const [name, value, secret] of runs) expect([name, value, isCredentialVariable(name, value)]).toEqual([name, value, secret]);
    }
    // past the memo's bounds (many names, many values of one name, a long value) the answers stay the same
    for (let index = 0; index < 5000; index += 1) expect(isCredentialVariable(`VAR_${index}`, String(index))).toBe(false);
    for (let index = 0; index < 100; index += 1) expect(isCredentialVariable('BUILD_LABEL', index % 2 === 0 ? `v${index}` : `ghp_${'a'.repeat(30)}${index}`)).toBe(index % 2 === 1);
    const long = `${'x'.repeat(5000)} password=CANARY-LONG`;
    expect(isCredentialVariable('NOTES', long)).toBe(true);
    expect(isCredentialVariable('NOTES', long)).toBe(true);
    expect(isCredentialVariable('NOTES', 'x'.repeat(5000))).toBe(false);
  });
});
