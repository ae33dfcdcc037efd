import { describe, expect, it } from 'vitest';
import { isSecretLookingPath } from './baseline-files.js';

describe('isSecretLookingPath (prepare-wave --commit-baseline leaves these out)', () => {
  it('secrets by name or directory; templates and ordinary files are not', () => {
    const secret = ['.env', '.env.local', 'app/.env.production', 'prod.env', 'certs/server.pem', 'tls.key', 'id_rsa', 'id_ed25519.pub', 'credentials', 'credentials.json', 'aws-credentials', '.aws/config', '.ssh/known_hosts', '.npmrc', '.netrc', 'secrets.yaml', 'config/app-secrets.json', 'service-account-prod.json', '.envrc', 'KEYS/Deploy.PEM'];
    const ordinary = ['.env.example', '.env.sample', 'src/env.ts', 'src/environment.ts', 'docs/keys.md', 'src/key.ts', 'README.md', 'package.json', 'src/credentials-form.tsx', 'src/secret-santa.ts'];
    expect(secret.filter((file) => !isSecretLookingPath(file))).toEqual([]);
    expect(ordinary.filter((file) => isSecretLookingPath(file))).toEqual([]);
  });
});
