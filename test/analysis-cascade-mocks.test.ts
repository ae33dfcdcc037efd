/**
 * detect-cascades and check-test-cascade on TS/JS test doubles (outside round X57): the key of a module mock's factory
 * for a module that provides the renamed function — through a barrel that re-exports it, a tsconfig `paths` alias,
 * Vitest's `vi.mock(import('./x'), …)` — and the class properties holding functions and object literals typed as an
 * interface that may implement a renamed (changed) interface method. Through the CLI's main() in this process
 * (test/support/cli-in-process.ts); every answer asserted exactly. Run `npm run build` first.
 */
import { describe, expect, it } from 'vitest';
import type { CliResult } from './support/cli.js';
import { runCliInProcess } from './support/cli-in-process.js';
import { createTestRepo } from './support/git-repo.js';

/** detect-cascades JSON as `file:line type severity match` lines. */
function cascades(result: CliResult): string[] {
  expect([result.code, result.stderr]).toEqual([0, '']);
  const parsed = JSON.parse(result.stdout) as { cascade_candidates: Array<{ file: string; line: number; cascade_type: string; severity: string; match: string }> };
  return parsed.cascade_candidates.map((candidate) => `${candidate.file}:${candidate.line} ${candidate.cascade_type} ${candidate.severity} ${candidate.match}`);
}

const rename = (old: string, renamed: string, scope?: string) => JSON.stringify([{ old, new: renamed, ...(scope ? { scope } : {}) }]);

/** A services package: `hashPassword` in crypto.ts, a barrel re-exporting it, another module defining its own. */
const services = {
  'src/services/crypto.ts': 'export function hashPassword(text: string): string {\n  return text;\n}\n',
  'src/services/mail.ts': 'export function sendMail(to: string): string {\n  return to;\n}\n',
  'src/services/index.ts': "export * from './crypto';\nexport { sendMail } from './mail';\n",
  'src/lib/auth.ts': "import { hashPassword } from '../services';\n\nexport function register(p: string): string {\n  return hashPassword(p);\n}\n",
  'src/other/index.ts': "export * as crypto from '../services/crypto';\nexport { sendMail } from '../services/mail';\n",
  'src/legacy/hash.ts': 'export function hashPassword(): string {\n  return "";\n}\n',
  'src/legacy/index.ts': "export { hashPassword } from './hash';\n",
};

const sourceLines = [
  'src/lib/auth.ts:1 syntax high hashPassword',
  'src/lib/auth.ts:4 syntax medium hashPassword',
  'src/services/crypto.ts:1 syntax high hashPassword',
];

describe('detect-cascades: module mock factories (outside round X57)', () => {
  it('lists the key of a mock of a barrel that re-exports the renamed function, not of a barrel that does not (X57-08)', async () => {
    const repo = await createTestRepo({
      files: {
        ...services,
        'src/reexport/index.ts': "import { hashPassword, type Other } from '../services/crypto';\nexport { hashPassword };\nexport type { Other };\n",
        'test/barrel.test.ts': "import { register } from '../src/lib/auth';\n\njest.mock('../src/services', () => ({\n  hashPassword: jest.fn(() => 'h'),\n  sendMail: jest.fn(),\n}));\n\ntest('r', () => {\n  expect(register('a')).toBe('h');\n});\n",
        // the barrel's own file named, a barrel importing then exporting the name
        'test/index.test.ts': "vi.mock('../src/services/index.ts', () => ({ hashPassword: vi.fn() }));\nvi.mock('../src/reexport', () => ({ hashPassword: vi.fn() }));\n",
        // a namespace re-export (`export * as crypto`) provides `crypto`, not `hashPassword`; another module's barrel
        'test/other.test.ts': "jest.mock('../src/other', () => ({ hashPassword: jest.fn(), sendMail: jest.fn() }));\njest.mock('../src/legacy', () => ({ hashPassword: jest.fn() }));\n",
      },
    });
    const result = await runCliInProcess(['detect-cascades', repo.dir, '--renames', rename('hashPassword', 'hashSecret', 'src/services/crypto.ts'), '--format', 'json']);
    expect(cascades(result)).toEqual([
      'src/lib/auth.ts:1 syntax high hashPassword',
      'src/lib/auth.ts:4 syntax medium hashPassword',
      'src/reexport/index.ts:1 syntax high hashPassword',
      'src/reexport/index.ts:2 syntax medium hashPassword',
      'src/services/crypto.ts:1 syntax high hashPassword',
      "test/barrel.test.ts:4 semantic medium hashPassword: jest.fn(() => 'h'),",
      "test/index.test.ts:1 semantic medium vi.mock('../src/services/index.ts', () => ({ hashPassword: vi.fn() }));",
      "test/index.test.ts:2 semantic medium vi.mock('../src/reexport', () => ({ hashPassword: vi.fn() }));",
    ]);
  });

  it('lists the key of a mock named through a tsconfig `paths` alias or `baseUrl`, not of an alias to another module (X57-09)', async () => {
    const repo = await createTestRepo({
      files: {
        ...services,
        'tsconfig.base.json': '{\n  // shared\n  "compilerOptions": { "baseUrl": ".", "paths": { "@/*": ["src/*"], "#legacy": ["src/legacy/index.ts",], }, },\n}\n',
        'tsconfig.json': '{ "extends": "./tsconfig.base.json", "compilerOptions": { "strict": true } }\n',
        'test/alias.test.ts': "import { register } from '@/lib/auth';\n\njest.mock('@/services/crypto', () => ({\n  ...jest.requireActual('@/services/crypto'),\n  hashPassword: jest.fn(() => 'x'),\n}));\njest.mock('@/services', () => ({ hashPassword: jest.fn() }));\njest.mock('src/services/crypto', () => ({ hashPassword: jest.fn() }));\njest.mock('#legacy', () => ({ hashPassword: jest.fn() }));\njest.mock('@/legacy/hash', () => ({ hashPassword: jest.fn() }));\njest.mock('hash-lib', () => ({ hashPassword: jest.fn() }));\n",
        // a package with its own jsconfig.json: `~/` is its src
        'web/jsconfig.json': '{ "compilerOptions": { "paths": { "~/*": ["./src/*"] } } }\n',
        'web/src/crypto.js': 'export function hashPassword() {\n  return 1;\n}\n',
        'web/test/a.test.js': "vi.mock('~/crypto', () => ({ hashPassword: vi.fn() }));\nvi.mock('@/services/crypto', () => ({ hashPassword: vi.fn() }));\n",
      },
    });
    const result = await runCliInProcess(['detect-cascades', repo.dir, '--renames', rename('hashPassword', 'hashSecret', 'src/services/crypto.ts'), '--format', 'json']);
    expect(cascades(result)).toEqual([
      ...sourceLines,
      "test/alias.test.ts:5 semantic medium hashPassword: jest.fn(() => 'x'),",
      "test/alias.test.ts:7 semantic medium jest.mock('@/services', () => ({ hashPassword: jest.fn() }));",
      "test/alias.test.ts:8 semantic medium jest.mock('src/services/crypto', () => ({ hashPassword: jest.fn() }));",
    ]);
    const web = await runCliInProcess(['detect-cascades', repo.dir, '--renames', rename('hashPassword', 'hashSecret', 'web/src/crypto.js'), '--format', 'json']);
    expect(cascades(web)).toEqual([
      'web/src/crypto.js:1 syntax high hashPassword',
      "web/test/a.test.js:1 semantic medium vi.mock('~/crypto', () => ({ hashPassword: vi.fn() }));",
    ]);
  });

  it("lists the key of Vitest's typed `vi.mock(import('./x'), …)` factory, not of another module's (X57-10), and a quoted key (X58-23)", async () => {
    const repo = await createTestRepo({
      files: {
        ...services,
        'test/vi-import.test.ts': "import { vi, test } from 'vitest';\n\nvi.mock(import('../src/services/crypto'), async (importOriginal) => {\n  const mod = await importOriginal();\n  return { ...mod, hashPassword: vi.fn(() => 'y') };\n});\nvi.doMock(import(\"../src/services\"), () => ({ hashPassword: vi.fn() }));\nvi.mock(import('../src/legacy/hash'), () => ({ hashPassword: vi.fn() }));\nvi.doMock('../src/services', () => ({ 'hashPassword': vi.fn() }));\n\ntest('v', () => {});\n",
      },
    });
    const result = await runCliInProcess(['detect-cascades', repo.dir, '--renames', rename('hashPassword', 'hashSecret', 'src/services/crypto.ts'), '--format', 'json']);
    expect(cascades(result)).toEqual([
      ...sourceLines,
      "test/vi-import.test.ts:5 semantic medium return { ...mod, hashPassword: vi.fn(() => 'y') };",
      'test/vi-import.test.ts:7 semantic medium vi.doMock(import("../src/services"), () => ({ hashPassword: vi.fn() }));',
      // (a quoted key: outside round X58-23)
      "test/vi-import.test.ts:9 semantic medium vi.doMock('../src/services', () => ({ 'hashPassword': vi.fn() }));",
    ]);
  });

  it('lists a computed key of a string literal, `[\'hashPassword\']: vi.fn()` / `["hashPassword"]() {}`, not an array element `[\'hashPassword\']` (outside round X59-19)', async () => {
    const repo = await createTestRepo({
      files: {
        ...services,
        'test/computed.test.ts': "vi.mock('../src/services/crypto', () => ({ ['hashPassword']: vi.fn(), sendMail: vi.fn() }));\njest.mock('../src/services', () => ({\n  [\"hashPassword\"]() {\n    return 'x';\n  },\n}));\nvi.doMock('../src/services/crypto', () => ({\n  names: ['hashPassword'],\n}));\n",
      },
    });
    const result = await runCliInProcess(['detect-cascades', repo.dir, '--renames', rename('hashPassword', 'hashSecret', 'src/services/crypto.ts'), '--format', 'json']);
    expect(cascades(result)).toEqual([
      ...sourceLines,
      "test/computed.test.ts:1 semantic medium vi.mock('../src/services/crypto', () => ({ ['hashPassword']: vi.fn(), sendMail: vi.fn() }));",
      'test/computed.test.ts:3 semantic medium ["hashPassword"]() {',
      // (not line 8: a string in an array is no key)
    ]);
  });
});

/** An interface `Cache` and its implementations by class properties and object literals, and look-alikes that are not. */
const caches = {
  'src/cache.ts': 'export interface Cache {\n  get(key: string): string | undefined;\n  put(key: string, value: string): void;\n}\n',
  'src/memory.ts': "import type { Cache } from './cache';\n\nexport class MemoryCache implements Cache {\n  private m = new Map<string, string>();\n  get = (key: string) => this.m.get(key);\n  put(key: string, value: string) {\n    this.m.set(key, value);\n  }\n}\n\nexport class Bound {\n  private readonly get: (key: string) => string | undefined = function (key) {\n    return key;\n  };\n  public put = async (key: string, value: string): Promise<void> => {\n    void key;\n    void value;\n  };\n}\n\nexport class Lazy {\n  get = () => 1;\n  value = { put: 1 };\n}\n",
  // (implements Cache, its `put` inherited: Cache's `get` whatever the other members)
  'src/typed.ts': "import type { Cache } from './cache';\n\nexport class Typed extends Base implements Iterable<Map<string, number>>, Cache {\n  get = (key: string) => key;\n}\n",
  'src/objects.ts': "import type { Cache } from './cache';\n\nexport const noop: Cache = {\n  get(key) {\n    return key;\n  },\n  put: (key, value) => {\n    void [key, value];\n  },\n};\nexport const checked = {\n  get: (key: string) => key,\n  put() {},\n} satisfies Cache;\nconst options: RequestInit = { get: () => 1, put() {} } as unknown as RequestInit;\nconst plain = { get: () => 1, put: () => 2 };\nvoid [options, plain];\n",
};

describe('detect-cascades: a jest manual mock of the renamed module (outside round X58-18)', () => {
  it("lists the name's definition in `__mocks__/` beside a module that provides it, not beside one that does not", async () => {
    const repo = await createTestRepo({
      files: {
        ...services,
        'src/services/__mocks__/crypto.ts': 'export const hashPassword = jest.fn((text: string) => `mock:${text}`);\n',
        'src/legacy/__mocks__/hash.ts': 'export const hashPassword = jest.fn();\n',
        'test/manual.test.ts': "import { register } from '../src/lib/auth';\n\njest.mock('../src/services/crypto');\n\ntest('m', () => {\n  expect(register('p')).toBe('mock:p');\n});\n",
      },
    });
    const result = await runCliInProcess(['detect-cascades', repo.dir, '--renames', rename('hashPassword', 'hashSecret', 'src/services/crypto.ts'), '--format', 'json']);
    expect(cascades(result)).toEqual(['src/lib/auth.ts:1 syntax high hashPassword', 'src/lib/auth.ts:4 syntax medium hashPassword', 'src/services/__mocks__/crypto.ts:1 syntax high hashPassword', 'src/services/crypto.ts:1 syntax high hashPassword']);
  });

  it('lists a CommonJS manual mock: `module.exports = { name: … }`, `{ name }` shorthand, `{ name() {} }`, `module.exports.name =` (outside round X59-13)', async () => {
    const repo = await createTestRepo({
      files: {
        ...services,
        'src/services/__mocks__/crypto.js': 'module.exports = {\n  hashPassword: (text) => `mock:${text}`,\n  sendMail: jest.fn(),\n};\n',
        // (the barrel re-exports it: its mock stands for it too)
        'src/services/__mocks__/index.js': 'const hashPassword = jest.fn();\nmodule.exports = { hashPassword, sendMail: jest.fn() };\n',
        'src/reexport/index.ts': "export { hashPassword } from '../services/crypto';\n",
        'src/reexport/__mocks__/index.js': "module.exports = {\n  'other': 1,\n  hashPassword() {\n    return 'm';\n  },\n};\n",
        'src/lib/__mocks__/auth.js': 'module.exports.hashPassword = jest.fn();\n',
        // another module's own hashPassword (legacy/hash.ts): its mock is not the renamed one's
        'src/legacy/__mocks__/hash.js': 'module.exports = { hashPassword: jest.fn() };\n',
      },
    });
    repo.write('src/lib/auth.ts', "import { hashPassword } from '../services';\n\nexport { hashPassword };\n");
    await repo.commitAll('auth re-exports');
    const result = await runCliInProcess(['detect-cascades', repo.dir, '--renames', rename('hashPassword', 'hashSecret', 'src/services/crypto.ts'), '--format', 'json']);
    expect(cascades(result)).toEqual([
      'src/lib/__mocks__/auth.js:1 syntax high hashPassword',
      'src/lib/auth.ts:1 syntax high hashPassword',
      'src/lib/auth.ts:3 syntax medium hashPassword',
      'src/reexport/__mocks__/index.js:3 syntax high hashPassword',
      'src/reexport/index.ts:1 syntax high hashPassword',
      'src/services/__mocks__/crypto.js:2 syntax high hashPassword',
      'src/services/__mocks__/index.js:1 syntax high hashPassword',
      'src/services/__mocks__/index.js:2 syntax high hashPassword',
      'src/services/crypto.ts:1 syntax high hashPassword',
    ]);
  });
});

describe('may implement: TS function-valued properties and object literals typed as the interface (outside round X57-14)', () => {
  it('detect-cascades: a class `implements Cache` with `get = (…) => …`, a class matching by shape with properties, object literals typed or `satisfies` Cache', async () => {
    const repo = await createTestRepo({ files: caches });
    const result = await runCliInProcess(['detect-cascades', repo.dir, '--renames', rename('get', 'read', 'src/cache.ts'), '--format', 'json']);
    expect(cascades(result)).toEqual([
      'src/cache.ts:2 syntax high get',
      'src/memory.ts:5 syntax high get',
      'src/memory.ts:12 syntax high get',
      'src/objects.ts:4 syntax high get',
      'src/objects.ts:12 syntax high get',
      'src/typed.ts:4 syntax high get',
    ]);
    expect((JSON.parse(result.stdout) as { cascade_candidates: Array<{ reason: string }> }).cascade_candidates[1]!.reason).toBe("member get of MemoryCache may implement Cache: rename it with the interface's (now read)");
    const put = await runCliInProcess(['detect-cascades', repo.dir, '--renames', rename('put', 'store', 'src/cache.ts'), '--format', 'json']);
    expect(cascades(put)).toEqual([
      'src/cache.ts:3 syntax high put',
      'src/memory.ts:6 syntax high put',
      'src/memory.ts:15 syntax high put',
      'src/objects.ts:7 syntax high put',
      'src/objects.ts:13 syntax high put',
    ]);
  });

  it('check-test-cascade: a test double with a function property implementing a changed interface method is an orphan', async () => {
    const repo = await createTestRepo({
      files: {
        'src/cache.ts': caches['src/cache.ts'],
        'test/fake.test.ts': "import type { Cache } from '../src/cache';\n\nclass FakeCache implements Cache {\n  get = (key: string) => key;\n  put = () => {};\n}\nconst stub: Cache = { get: () => undefined, put() {} };\ntest('x', () => {\n  void [new FakeCache(), stub];\n});\n",
      },
    });
    const implPath = repo.path('docs/IMPL/IMPL-cache.yaml');
    repo.write('docs/IMPL/IMPL-cache.yaml', 'title: c\nfeature_slug: c\nverdict: SUITABLE\nfile_ownership:\n  - file: src/cache.ts\n    agent: A\n    wave: 1\nwaves:\n  - number: 1\n    agents:\n      - id: A\n        task: Add a `ttl` parameter to `Cache.put`.\n');
    await repo.commitAll('impl');
    const result = await runCliInProcess(['check-test-cascade', implPath, '--repo-dir', repo.dir]);
    expect(result.code, result.stderr).toBe(1);
    expect((JSON.parse(result.stdout) as Array<{ symbol: string; test_file: string; line: number }>).map((error) => `${error.symbol} ${error.test_file}:${error.line}`)).toEqual(['Cache.put test/fake.test.ts:5', 'Cache.put test/fake.test.ts:7']);
  });
});

describe('may implement: test doubles of any form in a class that implements the interface (outside round X58-12/15)', () => {
  it('detect-cascades: `get = jest.fn()`, `vi.fn()`, a bound method, `get!: Mock`, and a class whose type parameters hold braces', async () => {
    const repo = await createTestRepo({
      files: {
        'src/cache.ts': 'export interface Cache {\n  get(key: string): string | undefined;\n  put(key: string, value: string): void;\n}\n',
        'test/doubles.test.ts': "import type { Cache } from '../src/cache';\n\nclass FakeCache implements Cache {\n  get = jest.fn();\n  put = vi.fn();\n}\nclass BoundCache implements Cache {\n  get = this.read.bind(this);\n  put!: (key: string, value: string) => void;\n  read(key: string) {\n    return key;\n  }\n}\nclass Memo<T extends { id: string } = { id: string }> implements Cache {\n  get = (key: string) => key;\n  put = () => {};\n  touch(item: T) {\n    return item;\n  }\n}\nclass Plain {\n  get = jest.fn();\n}\ntest('x', () => {\n  void [new FakeCache(), new BoundCache(), new Memo(), new Plain()];\n});\n",
      },
    });
    const result = await runCliInProcess(['detect-cascades', repo.dir, '--renames', rename('get', 'read', 'src/cache.ts'), '--format', 'json']);
    // (Plain implements nothing: its jest.fn() property is no implementation)
    expect(cascades(result)).toEqual(['src/cache.ts:2 syntax high get', 'test/doubles.test.ts:4 syntax high get', 'test/doubles.test.ts:8 syntax high get', 'test/doubles.test.ts:15 syntax high get']);
    const put = await runCliInProcess(['detect-cascades', repo.dir, '--renames', rename('put', 'store', 'src/cache.ts'), '--format', 'json']);
    expect(cascades(put)).toEqual(['src/cache.ts:3 syntax high put', 'test/doubles.test.ts:5 syntax high put', 'test/doubles.test.ts:9 syntax high put', 'test/doubles.test.ts:16 syntax high put']);
  });
});

describe('may implement: wrapped and property-held object literals, a same-named interface of another module (outside round X58-11/13/14/24)', () => {
  it('detect-cascades: `Partial<Cache>`, `jest.Mocked<Cache>`, `Object.freeze({…})`, a class property typed Cache are listed; a `Record<string, Cache>` and another module\'s `Cache` are not', async () => {
    const repo = await createTestRepo({
      files: {
        'src/cache.ts': 'export interface Cache {\n  get(key: string): string | undefined;\n  put(key: string, value: string): void;\n}\n',
        'src/external.ts': 'export interface Cache {\n  get(key: string): Promise<string | null>;\n  set(key: string, value: string): Promise<void>;\n}\n',
        'src/redis.ts': "import type { Cache } from './external';\n\nexport const redisCache: Cache = {\n  async get(key: string) {\n    return key;\n  },\n  async set() {},\n};\nexport class RedisCache implements Cache {\n  async get(key: string) {\n    return key;\n  }\n  async set() {}\n}\n",
        'src/service.ts': "import type { Cache } from './cache';\n\nexport class UserService {\n  private fallback: Cache = {\n    get: (_key: string) => undefined,\n    put: () => {},\n  };\n  name() {\n    return this.fallback;\n  }\n}\n",
        'test/doubles.test.ts': "import type { Cache } from '../src/cache';\n\nconst partial: Partial<Cache> = {\n  get: () => 'x',\n};\nconst mocked: jest.Mocked<Cache> = {\n  get: jest.fn(),\n  put: jest.fn(),\n};\nexport const frozen: Cache = Object.freeze({\n  get: (key: string) => key,\n  put: () => {},\n});\nconst table: Record<string, Cache> = {\n  get: frozen,\n};\ntest('x', () => {\n  void [partial, mocked, table];\n});\n",
      },
    });
    const result = await runCliInProcess(['detect-cascades', repo.dir, '--renames', rename('get', 'read', 'src/cache.ts'), '--format', 'json']);
    expect(cascades(result).filter((line) => !line.includes('medium'))).toEqual(['src/cache.ts:2 syntax high get', 'src/service.ts:5 syntax high get', 'test/doubles.test.ts:4 syntax high get', 'test/doubles.test.ts:7 syntax high get', 'test/doubles.test.ts:11 syntax high get']);
  });
});

describe('may implement: an abstract class\'s abstract method, a subclass of a class that implements the interface (outside rounds X59-17, X56-13)', () => {
  it('detect-cascades and check-test-cascade list `class SqlRepo extends Repo { find() }` for Repo\'s `abstract find`, not another class\'s `find`; `Child extends Base` (Base implements Cache) overriding `get`', async () => {
    const repo = await createTestRepo({
      files: {
        'src/abstract.ts': 'export abstract class Repo {\n  abstract find(id: string): string;\n  describe(): string {\n    return "repo";\n  }\n}\n',
        'src/sqlrepo.ts': "import { Repo } from './abstract';\nexport class SqlRepo extends Repo {\n  find(id: string) {\n    return id;\n  }\n}\nexport class Finder {\n  find(id: string) {\n    return id;\n  }\n}\n",
        'src/useRepo.ts': "import { SqlRepo } from './sqlrepo';\nexport const found = new SqlRepo().find('1');\n",
        'src/cache.ts': caches['src/cache.ts'],
        'src/sub.ts': "import { Cache } from './cache';\nexport class Base implements Cache {\n  get(key: string): string | undefined {\n    return key;\n  }\n  put(_k: string, _v: string) {}\n}\nexport class Child extends Base {\n  override get(key: string) {\n    return 'x' + key;\n  }\n}\n",
        'test/repo.test.ts': "import { Repo } from '../src/abstract';\nexport class FakeRepo extends Repo {\n  find(id: string) {\n    return id;\n  }\n}\n",
        'docs/IMPL/IMPL-repo.yaml': 'title: t\nfeature_slug: repo\nverdict: SUITABLE\nfile_ownership:\n  - file: src/abstract.ts\n    agent: A\n    wave: 1\nwaves:\n  - number: 1\n    agents:\n      - id: A\n        task: "Change `Repo.find()` to take a second `options` parameter."\n',
      },
    });
    const result = await runCliInProcess(['detect-cascades', repo.dir, '--renames', rename('find', 'lookup', 'src/abstract.ts'), '--format', 'json']);
    expect(cascades(result).filter((entry) => entry.includes(' syntax '))).toEqual(['src/abstract.ts:2 syntax high find', 'src/sqlrepo.ts:3 syntax high find', 'src/useRepo.ts:2 syntax medium find', 'test/repo.test.ts:3 syntax high find']);
    const get = await runCliInProcess(['detect-cascades', repo.dir, '--renames', rename('get', 'read', 'src/cache.ts'), '--format', 'json']);
    expect(cascades(get).filter((entry) => entry.includes(' syntax '))).toEqual(['src/cache.ts:2 syntax high get', 'src/sub.ts:3 syntax high get', 'src/sub.ts:9 syntax high get']);
    const cascade = await runCliInProcess(['check-test-cascade', repo.path('docs/IMPL/IMPL-repo.yaml'), '--repo-dir', repo.dir]);
    expect(cascade.code, cascade.stderr).toBe(1);
    expect((JSON.parse(cascade.stdout) as Array<{ test_file: string; line: number }>).map((error) => `${error.test_file}:${error.line}`)).toEqual(['test/repo.test.ts:3']);
  });
});

describe('may implement: object literals typed through a type alias, an array, a parameter default, an angle-bracket assertion (outside round X59-12)', () => {
  it('detect-cascades lists `const c: C = {…}` (`type C = Cache`), `const all: Cache[] = [{…}, {…}]`, `(c: Cache = {…})`, `<Cache>{…}` — not the same forms typed as another interface', async () => {
    const repo = await createTestRepo({
      files: {
        'src/cache.ts': caches['src/cache.ts'],
        'src/forms.ts': "import type { Cache } from './cache';\ninterface Options {\n  get(): number;\n}\ntype C = Cache;\nexport const c: C = {\n  get: (key: string) => key,\n  put: () => {},\n};\nexport const all: Cache[] = [\n  { get: (key: string) => key, put: () => {} },\n  {\n    get(key: string) {\n      return key;\n    },\n    put() {},\n  },\n];\nexport function mk(cache: Cache = { get: (key: string) => key, put: () => {} }): Cache {\n  return cache;\n}\nexport const viaAs = <Cache>{ get: (key: string) => key, put: () => {} };\ntype O = Options;\nexport const o: O = { get: () => 1 };\nexport const os: Options[] = [{ get: () => 1 }];\nexport function mo(options: Options = { get: () => 1 }): Options {\n  return options;\n}\nexport const oAs = <Options>{ get: () => 1 };\nexport const nested: Array<Cache> = [{ get: (key: string) => key, put: () => {} }];\nexport const pairs: [string, number][] = [['get', 1]];\n",
        // (another library's `Cache`, installed: X59-11 — not the contract, in any of the forms)
        'node_modules/cache-manager/package.json': '{ "name": "cache-manager", "types": "index.d.ts" }\n',
        'node_modules/cache-manager/index.d.ts': 'export interface Cache {\n  get(key: string): Promise<unknown>;\n  set(key: string, value: unknown): Promise<void>;\n}\n',
        'src/pkg.ts': "import type { Cache } from 'cache-manager';\nexport const remote: Cache = { get: async () => 1, set() {} };\nexport const remotes: Cache[] = [{ get: async () => 1, set() {} }];\nexport function mr(cache: Cache = { get: async () => 1, set() {} }) {\n  return cache;\n}\n",
      },
    });
    const get = await runCliInProcess(['detect-cascades', repo.dir, '--renames', rename('get', 'read', 'src/cache.ts'), '--format', 'json']);
    expect(cascades(get).filter((entry) => entry.includes(' syntax '))).toEqual(['src/cache.ts:2 syntax high get', 'src/forms.ts:7 syntax high get', 'src/forms.ts:11 syntax high get', 'src/forms.ts:13 syntax high get', 'src/forms.ts:19 syntax high get', 'src/forms.ts:22 syntax high get', 'src/forms.ts:30 syntax high get']);
  });
});

describe('may implement: an interface of the same name from a package not installed (outside round X59-11)', () => {
  it('a fresh clone (no node_modules): `import type { Cache } from \'cache-manager\'` (and a scoped package, a `node:` builtin) is that package\'s, not the contract; a workspace package of the repository (`@acme/store`, not installed) stays the name\'s', async () => {
    const repo = await createTestRepo({
      files: {
        'package.json': '{ "name": "app", "private": true, "workspaces": ["packages/*"] }\n',
        'tsconfig.json': '{ "compilerOptions": { "strict": true, "noEmit": true, "moduleResolution": "node" } }\n',
        'src/cache.ts': caches['src/cache.ts'],
        'src/pkg.ts': "import type { Cache } from 'cache-manager';\nexport class RemoteCache implements Cache {\n  async get(key: string) {\n    return key;\n  }\n  async set() {}\n}\nexport const remote: Cache = { get: async () => 1, set() {} };\n",
        'src/nest.ts': "import { type Cache } from '@nestjs/cache-manager';\nexport class NestCache implements Cache {\n  get(key: string) {\n    return key;\n  }\n}\n",
        'src/events.ts': "import type { EventEmitter as Cache } from 'node:events';\nexport class Emitter implements Cache {\n  get() {\n    return 1;\n  }\n}\n",
        'packages/store/package.json': '{ "name": "@acme/store", "types": "index.ts" }\n',
        'packages/store/index.ts': "export type { Cache } from '../../src/cache';\n",
        'src/ws.ts': "import type { Cache } from '@acme/store';\nexport class StoreCache implements Cache {\n  get(key: string) {\n    return key;\n  }\n  put() {}\n}\n",
      },
    });
    const get = await runCliInProcess(['detect-cascades', repo.dir, '--renames', rename('get', 'read', 'src/cache.ts'), '--format', 'json']);
    expect(cascades(get).filter((entry) => entry.includes(' syntax '))).toEqual(['src/cache.ts:2 syntax high get', 'src/ws.ts:3 syntax high get']);
  });
});

describe('tsconfig paths in the engine: real imports through an alias (outside round X58-08/09/10)', () => {
  const app = {
    'apps/web/src/lib/session.ts': 'export function signIn(user: string): string {\n  return user;\n}\n',
    'apps/web/src/lib/index.ts': "export { signIn } from './session';\n",
    'apps/web/src/lib/form.ts': "import { signIn } from '@/lib';\n\nexport async function submit(user: string) {\n  return signIn(user);\n}\n",
    'apps/web/src/other.ts': "import { signIn } from 'next-auth/react';\n\nexport const go = () => signIn('x');\n",
  };

  it('a solution-style tsconfig.json whose referenced tsconfig.app.json holds `paths` (create-vite): --defined-in and a scoped rename list the aliased import and its call', async () => {
    const repo = await createTestRepo({
      files: {
        ...app,
        'apps/web/tsconfig.json': '{\n  "files": [],\n  "references": [{ "path": "./tsconfig.app.json" }, { "path": "./tsconfig.node.json" }]\n}\n',
        'apps/web/tsconfig.app.json': '{\n  // the app\n  "compilerOptions": { "baseUrl": ".", "paths": { "@/*": ["./src/*"] }, },\n  "include": ["src"]\n}\n',
        'apps/web/tsconfig.node.json': '{ "compilerOptions": { "module": "ESNext" }, "include": ["vite.config.ts"] }\n',
      },
    });
    const result = await runCliInProcess(['check-callers', 'signIn', '--defined-in', 'apps/web/src/lib/session.ts', '--format', 'json'], { cwd: repo.dir });
    expect([result.code, result.stderr]).toEqual([0, '']);
    // (other.ts: next-auth's signIn, a package — not the definition's)
    expect((JSON.parse(result.stdout) as Array<{ file: string; line: number }>).map((reference) => `${reference.file}:${reference.line}`)).toEqual(['apps/web/src/lib/form.ts:1', 'apps/web/src/lib/form.ts:4', 'apps/web/src/lib/index.ts:1']);
    const renamed = await runCliInProcess(['detect-cascades', repo.dir, '--renames', rename('signIn', 'logIn', 'apps/web/src/lib/session.ts'), '--format', 'json']);
    expect(cascades(renamed)).toEqual(['apps/web/src/lib/form.ts:1 syntax high signIn', 'apps/web/src/lib/form.ts:4 syntax medium signIn', 'apps/web/src/lib/index.ts:1 syntax high signIn', 'apps/web/src/lib/session.ts:1 syntax high signIn']);
  });

  it('a solution-style tsconfig.json: each file gets the `paths` of the referenced project whose `include`/`files` holds it — `include` globs, `exclude`, the default include (outside round X59-10)', async () => {
    const repo = await createTestRepo({
      files: {
        'app/tsconfig.json': '{ "files": [], "references": [{ "path": "./tsconfig.app.json" }, { "path": "./tsconfig.e2e.json" }, { "path": "./tsconfig.tools.json" }] }\n',
        'app/tsconfig.app.json': '{ "compilerOptions": { "baseUrl": ".", "paths": { "@/*": ["src/*"] } }, "include": ["src/**/*.ts"], "exclude": ["src/**/*.spec.ts"] }\n',
        'app/tsconfig.e2e.json': '{ "compilerOptions": { "baseUrl": ".", "paths": { "@/*": ["e2e/helpers/*"] } }, "include": ["e2e"], "files": ["src/app.spec.ts"] }\n',
        'app/tsconfig.tools.json': '{ "compilerOptions": { "baseUrl": ".", "paths": { "@/*": ["scripts/lib/*"] } } }\n',
        'app/src/session.ts': 'export function signIn(user: string): string {\n  return user;\n}\n',
        'app/src/app.ts': "import { signIn } from '@/session';\nexport const a = signIn('x');\n",
        'app/src/app.spec.ts': "import { signIn } from '@/session';\nexport const s = signIn('s');\n",
        'app/e2e/helpers/session.ts': 'export function signIn(user: string, password: string): string {\n  return user + password;\n}\n',
        'app/e2e/login.spec.ts': "import { signIn } from '@/session';\nexport const ok = signIn('u', 'p');\n",
        'app/scripts/lib/session.ts': 'export function signIn(): string {\n  return "";\n}\n',
        'app/scripts/run.ts': "import { signIn } from '@/session';\nexport const r = signIn();\n",
      },
    });
    const callers = async (definedIn: string) => {
      const result = await runCliInProcess(['check-callers', 'signIn', '--defined-in', definedIn, '--format', 'json'], { cwd: repo.dir });
      expect([result.code, result.stderr]).toEqual([0, '']);
      return (JSON.parse(result.stdout) as Array<{ file: string; line: number }>).map((reference) => `${reference.file}:${reference.line}`);
    };
    // (src/app.spec.ts: excluded from the app project, listed in the e2e one's `files`)
    expect(await callers('app/src/session.ts')).toEqual(['app/src/app.ts:1', 'app/src/app.ts:2']);
    expect(await callers('app/e2e/helpers/session.ts')).toEqual(['app/e2e/login.spec.ts:1', 'app/e2e/login.spec.ts:2', 'app/src/app.spec.ts:1', 'app/src/app.spec.ts:2']);
    // (scripts/: in neither, but in tsconfig.tools.json's default include — everything under its directory)
    expect(await callers('app/scripts/lib/session.ts')).toEqual(['app/scripts/run.ts:1', 'app/scripts/run.ts:2']);
    const renamed = await runCliInProcess(['detect-cascades', repo.dir, '--renames', rename('signIn', 'logIn', 'app/src/session.ts'), '--format', 'json']);
    expect(cascades(renamed)).toEqual(['app/src/app.ts:1 syntax high signIn', 'app/src/app.ts:2 syntax medium signIn', 'app/src/session.ts:1 syntax high signIn']);
  });

  it('`extends` listing several configs (TypeScript 5): the paths of the last that has them', async () => {
    const repo = await createTestRepo({
      files: {
        ...app,
        'tsconfig.base.json': '{ "compilerOptions": { "strict": true } }\n',
        'tsconfig.paths.json': '{ "compilerOptions": { "baseUrl": "apps/web", "paths": { "@/*": ["src/*"] } } }\n',
        'apps/web/tsconfig.json': '{ "extends": ["../../tsconfig.base.json", "../../tsconfig.paths.json"], "include": ["src"] }\n',
      },
    });
    const result = await runCliInProcess(['check-callers', 'signIn', '--defined-in', 'apps/web/src/lib/session.ts', '--format', 'json'], { cwd: repo.dir });
    expect([result.code, result.stderr]).toEqual([0, '']);
    expect((JSON.parse(result.stdout) as Array<{ file: string; line: number }>).map((reference) => `${reference.file}:${reference.line}`)).toEqual(['apps/web/src/lib/form.ts:1', 'apps/web/src/lib/form.ts:4', 'apps/web/src/lib/index.ts:1']);
  });

  it('analyze-deps --files on a cold cache finds the importers writing an alias without the file\'s name (`@auth`, `@acme/core`: outside round X59-18)', async () => {
    const repo = await createTestRepo({
      files: {
        'tsconfig.json': '{ "compilerOptions": { "baseUrl": "src", "paths": { "@auth": ["lib/session.ts"], "@acme/core": ["../packages/core/src/index.ts"] } } }\n',
        'src/lib/session.ts': 'export function signIn(user: string): string {\n  return user;\n}\n',
        'src/app.ts': "import { signIn } from '@auth';\n\nexport const go = () => signIn('a');\n",
        'src/other.ts': "export const other = 1;\n",
        'packages/core/src/index.ts': 'export function verify(p: string): boolean {\n  return p.length > 0;\n}\n',
        'packages/a/test/login.test.ts': "import { verify } from '@acme/core';\n\ntest('v', () => expect(verify('x')).toBe(true));\n",
      },
    });
    const importers = async (file: string) => {
      const result = await runCliInProcess(['analyze-deps', repo.dir, '--files', file, '--format', 'json']);
      expect([result.code, result.stderr]).toEqual([0, '']);
      return (JSON.parse(result.stdout) as { cascade_candidates?: Array<{ file: string }> }).cascade_candidates?.map((candidate) => candidate.file) ?? [];
    };
    expect(await importers('src/lib/session.ts')).toEqual(['src/app.ts']);
    expect(await importers('packages/core/src/index.ts')).toEqual(['packages/a/test/login.test.ts']);
  });

  it('`paths`: the pattern with the longest prefix decides (`@/lib/*` over `@/*`: outside round X59-09)', async () => {
    const repo = await createTestRepo({
      files: {
        'app/tsconfig.json': '{ "compilerOptions": { "baseUrl": ".", "paths": { "@/*": ["src/*"], "@/lib/*": ["gen/lib/*"] } } }\n',
        'app/src/lib/auth.ts': 'export function token(): string {\n  return "src";\n}\n',
        'app/gen/lib/auth.ts': 'export function token(): string {\n  return "gen";\n}\n',
        'app/src/app.ts': "import { token } from '@/lib/auth';\n\nexport const t = token();\n",
      },
    });
    const callers = async (definedIn: string) => {
      const result = await runCliInProcess(['check-callers', 'token', '--defined-in', definedIn, '--format', 'json'], { cwd: repo.dir });
      expect([result.code, result.stderr]).toEqual([0, '']);
      return (JSON.parse(result.stdout) as Array<{ file: string; line: number }>).map((reference) => `${reference.file}:${reference.line}`);
    };
    expect(await callers('app/gen/lib/auth.ts')).toEqual(['app/src/app.ts:1', 'app/src/app.ts:3']);
    expect(await callers('app/src/lib/auth.ts')).toEqual([]);
  });
});
