import { describe, expect, it } from 'vitest';
import { isSecretLookingPath, secretInText } from './baseline-files.js';

describe('isSecretLookingPath (prepare-wave --commit-baseline leaves these out)', () => {
  it('secrets by name or directory; templates and ordinary files are not', () => {
    const secret = ['.dev.vars', 'api_key.json', 'docker-config.json', 'kubeconfig', 'terraform.tfvars', 'token.txt', 'github-token.txt', '.env', '.env.local', 'app/.env.production', 'prod.env', 'certs/server.pem', 'tls.key', 'id_rsa', 'id_ed25519.pub', 'credentials', 'credentials.json', 'aws-credentials', '.aws/config', '.ssh/known_hosts', '.npmrc', '.netrc', 'secrets.yaml', 'config/app-secrets.json', 'service-account-prod.json', '.envrc', 'KEYS/Deploy.PEM'];
    const ordinary = ['.env.example', '.env.sample', 'src/env.ts', 'src/environment.ts', 'docs/keys.md', 'src/key.ts', 'README.md', 'package.json', 'src/credentials-form.tsx', 'src/secret-santa.ts', 'src/token.ts', 'design/tokens.json'];
    expect(secret.filter((file) => !isSecretLookingPath(file))).toEqual([]);
    expect(ordinary.filter((file) => isSecretLookingPath(file))).toEqual([]);
  });
});

describe('secretInText (outside attack X6, N6: the content check a name list needs)', () => {
  it('keys, tokens, URLs with a password and secret-named literals are found; code, labels and placeholders are not', () => {
    const secret: Array<[string, string]> = [
      ['-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n', 'deploy'],
      ['-----BEGIN RSA PRIVATE KEY-----', 'x.txt'],
      ['anthropic sk-ant-api03-abcdefghijklmnopqrstuv here', 'notes.md'],
      ['gh: ghp_abcdefghijklmnopqrstuvwxyz0123', 'notes.md'],
      ['SLACK=xoxb-1234567890-abcdef', 'vars'],
      ['aws AKIAABCDEFGHIJKLMNOP', 'notes'],
      ['db = "postgres://app:hunter2@db/app"', 'config.toml'],
      ['TOKEN=abc', 'token-file'],
      ['export API_KEY=abc123', 'run.sh'],
      ['password: hunter2', 'settings.yml'],
      ['{"client_secret": "s3cr3t"}', 'app.json'],
      ['SECRET_KEY = "django-insecure-abc"', 'settings.py'],
    ];
    const ordinary: Array<[string, string]> = [
      ['const token = getToken();\npassword = user.password\n', 'src/auth.py'],
      ['max_tokens=100\ntoken_ttl=3600\n', 'limits.conf'],
      ['{"password": "Password", "forgotPassword": "Forgot password?"}', 'locales/en.json'],
      ['password: ${DB_PASSWORD}\napi_key: ""\ntoken: <your token>\n', 'example.yml'],
      ['secretName: tls-cert\ntokenType: "bearer"\n', 'k8s.yaml'],
      ['export const add = (a: number, b: number) => a + b;\n', 'src/add.ts'],
    ];
    expect(secret.filter(([text, file]) => secretInText(text, file) === undefined)).toEqual([]);
    expect(ordinary.filter(([text, file]) => secretInText(text, file) !== undefined)).toEqual([]);
  });
});
