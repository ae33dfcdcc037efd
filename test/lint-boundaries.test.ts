import { ESLint } from 'eslint';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './support/cli.js';

// The import-boundary rules of ARCHITECTURE.md are enforced by lint; prove they fire.
describe('layer boundaries (eslint)', () => {
  const eslint = new ESLint({ cwd: repoRoot });

  async function messagesFor(relativePath: string, code: string) {
    const [result] = await eslint.lintText(code, { filePath: path.join(repoRoot, relativePath) });
    return result!.messages.map((message) => message.message);
  }

  it('forbids file system, processes and network in src/protocol', async () => {
    const messages = await messagesFor('src/protocol/probe.ts', "import { readFileSync } from 'node:fs';\nimport { spawn } from 'node:child_process';\nimport http from 'node:http';\nexport const used = [readFileSync, spawn, http];\n");
    expect(messages.filter((message) => message.includes('src/protocol is pure'))).toHaveLength(3);
  });

  it('forbids src/protocol importing upper layers but allows src/errors', async () => {
    const upper = await messagesFor('src/protocol/probe.ts', "import { loadImpl } from '../store/manifest-file.js';\nexport const used = loadImpl;\n");
    expect(upper.some((message) => message.includes('may import only src/errors'))).toBe(true);
    const errors = await messagesFor('src/protocol/probe.ts', "import { PolywaveError } from '../errors/polywave-error.js';\nexport const used = PolywaveError;\n");
    expect(errors).toEqual([]);
  });

  it('forbids reading the clock and process in src/protocol', async () => {
    const messages = await messagesFor('src/protocol/probe.ts', 'export const now = new Date();\nexport const cwd = process.cwd();\n');
    expect(messages.some((message) => message.includes('must not read the clock'))).toBe(true);
    expect(messages.some((message) => message.includes('pass cwd/env/clock in'))).toBe(true);
  });

  it('lets only src/cli exit or print', async () => {
    const engine = await messagesFor('src/store/probe.ts', "export function stop() { console.log('x'); process.exit(1); }\n");
    expect(engine.some((message) => message.endsWith('Only src/cli prints.'))).toBe(true);
    expect(engine.some((message) => message.endsWith('Only src/cli may exit.'))).toBe(true);
    const cli = await messagesFor('src/cli/probe.ts', "export function stop() { console.log('x'); process.exit(1); }\n");
    expect(cli).toEqual([]);
  });
});
