// Lint rules, including the layer boundaries of ARCHITECTURE.md (imports point downward only).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const nodeSideEffects = ['fs', 'node:fs', 'fs/promises', 'node:fs/promises', 'child_process', 'node:child_process',
  'net', 'node:net', 'http', 'node:http', 'https', 'node:https', 'http2', 'node:http2', 'dgram', 'node:dgram',
  'worker_threads', 'node:worker_threads', 'process', 'node:process', 'os', 'node:os'];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', '.scratch/**', 'test/fixtures/analysis/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', Buffer: 'readonly', TextDecoder: 'readonly', TextEncoder: 'readonly', AbortController: 'readonly', AbortSignal: 'readonly', structuredClone: 'readonly', queueMicrotask: 'readonly', performance: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  {
    // protocol/ is PURE: nothing from the rest of src/ except errors/, no file system, processes or network.
    files: ['src/protocol/**/*.ts'],
    ignores: ['src/protocol/**/*.test.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: nodeSideEffects.map((name) => ({ name, message: 'src/protocol is pure: no file system, processes, OS or network.' })),
        patterns: [{ group: ['**/cli/**', '**/store/**', '**/engine/**', '**/git/**', '**/gates/**', '**/agents/**', '**/orchestrator/**', '**/server/**', '**/analysis/**'], message: 'src/protocol may import only src/errors.' }],
      }],
      'no-restricted-globals': ['error', { name: 'process', message: 'src/protocol is pure: pass cwd/env/clock in.' }],
      'no-restricted-syntax': ['error', { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: 'src/protocol must not read the clock: pass `now` in.' }, { selector: "CallExpression[callee.object.name='Date'][callee.property.name='now']", message: 'src/protocol must not read the clock: pass `now` in.' }],
    },
  },
  {
    files: ['src/errors/**/*.ts'],
    ignores: ['src/errors/**/*.test.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['../*', '!../errors/**'], message: 'src/errors imports nothing from src/.' }] }],
    },
  },
  {
    // Below cli/ nothing prints or exits (DESIGN §3).
    files: ['src/**/*.ts'],
    ignores: ['src/cli/**', 'src/**/*.test.ts'],
    rules: {
      'no-restricted-properties': ['error',
        { object: 'process', property: 'exit', message: 'Only src/cli may exit.' },
        { object: 'process', property: 'cwd', message: 'cwd is read once in src/cli and passed down.' },
        { object: 'console', property: 'log', message: 'Only src/cli prints.' }],
    },
  },
  {
    files: ['src/engine/**/*.ts', 'src/gates/**/*.ts', 'src/analysis/**/*.ts', 'src/git/**/*.ts'],
    ignores: ['src/**/*.test.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['**/cli/**', '**/orchestrator/**', '**/agents/**', '**/server/**'], message: 'engine/, gates/, analysis/ and git/ sit below agents/, orchestrator/ and cli/.' }] }],
    },
  },
  {
    files: ['src/agents/**/*.ts'],
    ignores: ['src/agents/**/*.test.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['**/cli/**', '**/orchestrator/**', '**/server/**'], message: 'agents/ sits below orchestrator/ and cli/.' }] }],
    },
  },
  {
    files: ['src/orchestrator/**/*.ts'],
    ignores: ['src/orchestrator/**/*.test.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['**/cli/**', '**/server/**'], message: 'orchestrator/ sits below cli/ and server/.' }] }],
    },
  },
  {
    files: ['src/store/**/*.ts'],
    ignores: ['src/store/**/*.test.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['**/cli/**', '**/engine/**', '**/orchestrator/**', '**/agents/**', '**/server/**'], message: 'store/ sits below engine/ and cli/.' }] }],
    },
  },
);
