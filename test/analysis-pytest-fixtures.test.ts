/**
 * pytest fixtures in check-callers / detect-cascades (src/analysis/pytest-fixtures.ts): which functions are fixtures,
 * which parameters pytest fills with them, and which definition each request gets (outside round X57: wrong answers
 * on async fixtures, `name=`, comments after a decorator, parameters pytest never fills, imported fixtures and
 * fixtures defined in a test class). Through the CLI's main() in this process; every answer asserted exactly.
 * Run `npm run build` first.
 */
import { describe, expect, it } from 'vitest';
import { fixtureUsesIn } from '../src/analysis/pytest-fixtures.js';
import { runCliInProcess } from './support/cli-in-process.js';
import { createTestRepo } from './support/git-repo.js';

/** `check-callers <args…> --format json` in `dir`: `file:line:column` of each reference (exit 0, nothing on stderr). */
function refsIn(dir: string): (...args: string[]) => Promise<string[]> {
  return async (...args) => {
    const result = await runCliInProcess(['check-callers', ...args, '--format', 'json'], { cwd: dir });
    expect([result.code, result.stderr]).toEqual([0, '']);
    return (JSON.parse(result.stdout) as Array<{ file: string; line: number; column: number }>).map((reference) => `${reference.file}:${reference.line}:${reference.column}`);
  };
}

describe('pytest fixtures (outside round X57)', () => {
  it('`@pytest_asyncio.fixture` is a fixture (X57-01)', async () => {
    const repo = await createTestRepo({
      files: {
        'tests/conftest.py': 'import pytest_asyncio\n\n\n@pytest_asyncio.fixture\nasync def session():\n    yield 1\n\n\n@pytest_asyncio.fixture(scope="module")\nasync def engine(session):\n    yield session\n',
        'tests/test_flow.py': 'import pytest\n\n\n@pytest.mark.asyncio\nasync def test_flow(session):\n    assert session\n',
      },
    });
    const refs = refsIn(repo.dir);
    expect(await refs('session')).toEqual(['tests/conftest.py:10:18', 'tests/test_flow.py:5:21']);
    expect(await refs('session', '--defined-in', 'tests/conftest.py')).toEqual(['tests/conftest.py:10:18', 'tests/test_flow.py:5:21']);
  });

  it('`@pytest.fixture(name="client")` is requested as `client`, not by its function\'s name (X57-02)', async () => {
    const repo = await createTestRepo({
      files: {
        'conftest.py': 'import pytest\n\n\n@pytest.fixture(name="client")\ndef _client_fixture():\n    return object()\n\n\n@pytest.fixture(params=[dict(name="a"), {"name": "b"}], ids=lambda p: p["name"])\ndef backend(request):\n    return request.param\n',
        'tests/test_api.py': 'def test_get(client):\n    assert client\n\n\ndef test_other(_client_fixture, backend):\n    pass\n',
      },
    });
    const refs = refsIn(repo.dir);
    expect(await refs('client')).toEqual(['tests/test_api.py:1:14']);
    // (with --defined-in its file: no "no definition of client" warning — refsIn wants an empty stderr)
    expect(await refs('client', '--defined-in', 'conftest.py')).toEqual(['tests/test_api.py:1:14']);
    // (the function's own name is no fixture name: nothing requests it; a `name=` inside an argument is none of the fixture's)
    expect(await refs('_client_fixture', '--defined-in', 'conftest.py')).toEqual([]);
    expect(await refs('backend', '--defined-in', 'conftest.py')).toEqual(['tests/test_api.py:5:33']);
    const rename = await runCliInProcess(['detect-cascades', '--renames', JSON.stringify([{ old: 'client', new: 'api', scope: 'conftest.py' }]), '--format', 'json'], { cwd: repo.dir });
    expect(rename.code).toBe(0);
    const listed = (JSON.parse(rename.stdout) as { cascade_candidates: Array<{ file: string; line: number; cascade_type: string }> }).cascade_candidates.map((candidate) => `${candidate.file}:${candidate.line} ${candidate.cascade_type}`);
    expect(listed).toEqual(['conftest.py:4 semantic', 'tests/test_api.py:1 syntax']);
  });

  it('a comment line (or a blank one) between `@pytest.fixture` and its `def` (X57-03); a decorator of another function is not taken', async () => {
    const repo = await createTestRepo({
      files: {
        'conftest.py': 'import pytest\n\n\n@pytest.fixture(\n    # the mailer used everywhere\n    scope="session",\n)\n# kept in memory\n\ndef mailer():\n    return []\n\n\n@pytest.fixture\ndef other():\n    return 1\n\n\ndef plain(mailer):\n    return mailer\n',
        'tests/test_mail.py': 'def test_send(mailer):\n    assert mailer == []\n',
      },
    });
    const refs = refsIn(repo.dir);
    expect(await refs('mailer', '--defined-in', 'conftest.py')).toEqual(['tests/test_mail.py:1:15']);
  });

  it('parameters pytest does not fill are no requests: a helper, a name parametrized directly, a default value (X57-04)', async () => {
    const repo = await createTestRepo({
      files: {
        'conftest.py': 'import pytest\n\n\n@pytest.fixture\ndef db():\n    return {}\n',
        'tests/test_models.py': [
          'import pytest',
          '',
          '',
          'def helper(db):',
          '    return db',
          '',
          '',
          '@pytest.mark.parametrize("db", [1, 2])',
          'def test_param_overrides(db):',
          '    assert db',
          '',
          '',
          '@pytest.mark.parametrize(("db", "n"), [({}, 1)], indirect=["n"])',
          'def test_param_tuple(db, n):',
          '    assert n',
          '',
          '',
          '@pytest.mark.parametrize("db", [{}], indirect=True)',
          'def test_indirect(db):',
          '    assert db == {}',
          '',
          '',
          'def test_default(db=None):',
          '    assert db is None',
          '',
          '',
          'def test_plain(db):',
          '    def inner(db):',
          '        return db',
          '    assert inner(db) == {}',
          '',
          '',
          'class TestModels:',
          '    def helper(self, db):',
          '        return db',
          '',
          '    def test_save(self, db: dict = None, *, other=1):',
          '        pass',
          '',
          '    def test_load(self, db: "dict[str, int]"):',
          '        pass',
          '',
          '',
          'class Helpers:',
          '    def test_like(self, db):',
          '        pass',
          '',
        ].join('\n'),
      },
    });
    const refs = refsIn(repo.dir);
    // test_indirect (indirect parametrization asks for the fixture), test_plain, TestModels.test_load — not the
    // helpers, the directly parametrized names, defaults, a nested function or a method of a class pytest does not collect
    expect(await refs('db', '--defined-in', 'conftest.py')).toEqual(['tests/test_models.py:19:19', 'tests/test_models.py:27:16', 'tests/test_models.py:40:25']);
  });

  it('a fixture imported into a test module or a conftest.py is requested there (X57-07)', async () => {
    const repo = await createTestRepo({
      files: {
        'app/__init__.py': '',
        'app/fixtures.py': 'import pytest\n\n\n@pytest.fixture\ndef db():\n    return 1\n\n\n@pytest.fixture\ndef _hidden():\n    return 2\n',
        'tests/test_a.py': 'from app.fixtures import db\n\n\ndef test_a(db):\n    assert db\n',
        'tests/conftest.py': 'from app.fixtures import *  # noqa\n',
        'tests/test_b.py': 'def test_b(db, _hidden):\n    assert db\n',
        'other/test_c.py': 'def test_c(db):\n    assert db\n',
        'other/test_d.py': 'from app.fixtures import (\n    db,  # the shared one\n)\n\n\ndef test_d(db):\n    assert db\n',
      },
    });
    const refs = refsIn(repo.dir);
    // (other/test_c.py: nothing brings the fixture there; `_hidden`: a star import does not bring a private name)
    expect(await refs('db', '--defined-in', 'app/fixtures.py')).toEqual(['other/test_d.py:2:5', 'other/test_d.py:6:12', 'tests/test_a.py:1:26', 'tests/test_a.py:4:12', 'tests/test_b.py:1:12']);
    expect(await refs('_hidden', '--defined-in', 'app/fixtures.py')).toEqual([]);
  });

  it('a fixture defined in a test class is requested by that class\'s tests only; the conftest\'s keeps the module\'s (X57-15)', async () => {
    const repo = await createTestRepo({
      files: {
        'tests/conftest.py': 'import pytest\n\n\n@pytest.fixture\ndef user():\n    return {"name": "a"}\n',
        'tests/api/test_users.py': [
          'import pytest',
          '',
          'pytestmark = [pytest.mark.usefixtures("user")]',
          '',
          'def user():',
          '    """Not a fixture: a builder used directly."""',
          '    return {"name": "b"}',
          '',
          'class TestUsers:',
          '    @pytest.fixture',
          '    def user(self, user):',
          '        return {"name": "c", **user}',
          '',
          '    def test_name(self, user):',
          '        assert user["name"] == "c"',
          '',
          '    class TestNested:',
          '        def test_deep(self, user):',
          '            pass',
          '',
          '@pytest.mark.usefixtures("user")',
          'class TestOthers:',
          '    def test_plain(self, user):',
          '        pass',
          '',
          'def test_plain(user):',
          '    assert user',
          '',
          'def test_kw(*, user):',
          '    assert user',
          '',
        ].join('\n'),
      },
    });
    const refs = refsIn(repo.dir);
    // The class fixture `def user(self, user)` asks for the next one out: the conftest's.
    expect(await refs('user', '--defined-in', 'tests/conftest.py')).toEqual(['tests/api/test_users.py:3:40', 'tests/api/test_users.py:11:20', 'tests/api/test_users.py:21:27', 'tests/api/test_users.py:23:26', 'tests/api/test_users.py:26:16', 'tests/api/test_users.py:29:16']);
    expect(await refs('user', '--defined-in', 'tests/api/test_users.py')).toEqual(['tests/api/test_users.py:14:25', 'tests/api/test_users.py:18:29']);
  });

  it('a segment of an import\'s module path (`from app.db import connect`, `import app.db`) is no use of a function `db` (X57-05)', async () => {
    const repo = await createTestRepo({
      files: {
        'app/__init__.py': '',
        'app/db.py': 'def connect():\n    return 1\n',
        'main.py': 'from app.db import connect\nimport app.db, app.db as dbm\nfrom .db import connect as c2\nfrom app import db as d3\n\n\ndef db():\n    return 2\n\n\ndef use():\n    return db()\n',
        'conftest.py': 'import pytest\nfrom app.db import connect\n\n\n@pytest.fixture\ndef db():\n    return connect()\n',
        'tests/test_x.py': 'def test_x(db):\n    assert db\n',
      },
    });
    const refs = refsIn(repo.dir);
    expect(await refs('db', '--defined-in', 'main.py')).toEqual(['main.py:12:12']);
    expect(await refs('db', '--defined-in', 'conftest.py')).toEqual(['tests/test_x.py:1:12']);
    const rename = await runCliInProcess(['detect-cascades', '--renames', JSON.stringify([{ old: 'db', new: 'database', scope: 'conftest.py' }]), '--format', 'json'], { cwd: repo.dir });
    expect(rename.code).toBe(0);
    const listed = (JSON.parse(rename.stdout) as { cascade_candidates: Array<{ file: string; line: number; severity: string }> }).cascade_candidates.map((candidate) => `${candidate.file}:${candidate.line} ${candidate.severity}`);
    expect(listed).toEqual(['conftest.py:6 high', 'tests/test_x.py:1 medium']);
  });

  it('with --defined-in another module, a Python module\'s own `def db` beside an import of that module keeps its uses (X57-05)', async () => {
    const repo = await createTestRepo({
      files: {
        'app/__init__.py': '',
        'app/db.py': 'def connect():\n    return 1\n\n\ndef db():\n    return connect()\n',
        'main.py': 'from app.db import connect\n\n\ndef db():\n    return 2\n\n\ndef use():\n    return db() + connect()\n',
        'other.py': 'from app.db import db\nimport app.db as dbm\n\n\ndef run():\n    return db() + dbm.db()\n',
        'fallback.py': 'try:\n    from app.db import db\nexcept ImportError:\n    def db():\n        return None\n\n\ndef run():\n    return db()\n',
      },
    });
    const refs = refsIn(repo.dir);
    // (fallback.py: its own `def db()` beside an import of db is a fallback of the definition — its uses stay the definition's)
    expect(await refs('db', '--defined-in', 'app/db.py')).toEqual(['fallback.py:2:24', 'fallback.py:9:12', 'other.py:1:20', 'other.py:6:12', 'other.py:6:23']);
    expect(await refs('db', '--defined-in', 'main.py')).toEqual(['main.py:9:12']);
  });

  it('an overriding fixture whose signature spreads over lines (`def db(\\n    db,\\n)`) asks for the outer one', async () => {
    const repo = await createTestRepo({
      files: {
        'tests/conftest.py': 'import pytest\n\n\n@pytest.fixture\ndef db():\n    return {}\n',
        'tests/slow/conftest.py': 'import pytest\n\n\n@pytest.fixture\ndef db(\n    db,\n):\n    return db\n',
        'tests/slow/test_a.py': 'def test_a(db):\n    pass\n',
      },
    });
    const refs = refsIn(repo.dir);
    expect(await refs('db', '--defined-in', 'tests/conftest.py')).toEqual(['tests/slow/conftest.py:6:5']);
    expect(await refs('db', '--defined-in', 'tests/slow/conftest.py')).toEqual(['tests/slow/test_a.py:1:12']);
  });

  it('a fixture of a test class\'s base class in the same module is seen by the subclass\'s tests; an override in the subclass asks for the base\'s (X57-15)', async () => {
    const repo = await createTestRepo({
      files: {
        'tests/conftest.py': 'import pytest\n\n\n@pytest.fixture\ndef user():\n    return "conftest"\n',
        'tests/test_inherit.py': [
          'import pytest',
          '',
          '',
          'class Base(object, metaclass=type):',
          '    @pytest.fixture',
          '    def user(self):',
          '        return "base"',
          '',
          '',
          'class TestChild(Base):',
          '    def test_a(self, user):',
          '        assert user == "base"',
          '',
          '',
          'class TestOverride(Base):',
          '    @pytest.fixture',
          '    def user(self, user):',
          '        return user + "!"',
          '',
          '    def test_b(self, user):',
          '        pass',
          '',
          '',
          'class TestPlain:',
          '    def test_d(self, user):',
          '        pass',
          '',
          '',
          'def test_c(user):',
          '    pass',
          '',
        ].join('\n'),
      },
    });
    const refs = refsIn(repo.dir);
    expect(await refs('user', '--defined-in', 'tests/conftest.py')).toEqual(['tests/test_inherit.py:25:22', 'tests/test_inherit.py:29:12']);
    expect(await refs('user', '--defined-in', 'tests/test_inherit.py')).toEqual(['tests/test_inherit.py:11:22', 'tests/test_inherit.py:17:20', 'tests/test_inherit.py:20:22']);
  });

  it('check-test-cascade: a changed fixture registered as `client` by `@pytest.fixture(name="client")` — its unowned requesting tests are orphans (X57-02)', async () => {
    const repo = await createTestRepo({
      files: {
        'tests/conftest.py': 'import pytest\n\n\n@pytest.fixture(name="client")\ndef _client_fixture():\n    return {}\n',
        'tests/test_api.py': 'def test_get(client):\n    assert client == {}\n\n\ndef helper(client):\n    return client\n',
        'docs/IMPL/IMPL-client.yaml':
          'title: f\nfeature_slug: f\nverdict: SUITABLE\nfile_ownership:\n  - file: tests/conftest.py\n    agent: A\n    wave: 1\nwaves:\n  - number: 1\n    agents:\n      - id: A\n        task: Make `client()` in tests/conftest.py return a `Session` instead of a dict.\n',
      },
    });
    const result = await runCliInProcess(['check-test-cascade', repo.path('docs/IMPL/IMPL-client.yaml'), '--repo-dir', repo.dir]);
    expect(result.code, result.stderr).toBe(1);
    expect(JSON.parse(result.stdout)).toEqual([{ symbol: 'client', test_file: 'tests/test_api.py', line: 1, context: 'def test_get(client):', agents: ['A'] }]);
  });
  it('texts the caller already read are not read again (findReferences\' first call on a tree passes them: issue 15, h15p)', () => {
    // (the files are not on disk: only the given texts can answer)
    const known = new Map([
      ['conftest.py', 'import pytest\n\n\n@pytest.fixture\ndef session():\n    return 1\n'],
      ['tests/test_a.py', 'def test_a(session):\n    assert session\n'],
    ]);
    const uses = fixtureUsesIn('/nonexistent-h15p-root', [...known.keys()], 'session', undefined, known);
    expect(uses.map((use) => `${use.file}:${use.line}:${use.column}`)).toEqual(['tests/test_a.py:1:12']);
    expect(fixtureUsesIn('/nonexistent-h15p-root', [...known.keys()], 'session')).toEqual([]);
  });
});
