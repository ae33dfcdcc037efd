import { describe, expect, it } from 'vitest';
import { createTestRepo, type TestRepo } from '../../test/support/git-repo.js';
import type { Git } from '../git/git-port.js';
import { parseImpl } from '../protocol/parse-impl.js';
import type { ImplManifest } from '../protocol/schema/impl-schema.js';
import { nameWords, validateIntegration } from './integration.js';
import { buildReferenceIndex } from './reference-index.js';

function manifestOf(yaml: string): ImplManifest {
  const parsed = parseImpl(yaml);
  if (!parsed.manifest) throw new Error(JSON.stringify(parsed.findings));
  return parsed.manifest;
}

/** A git port that records every call (method name, and the git subcommand for `run`). */
function recordingGit(git: Git): { git: Git; calls: string[] } {
  const calls: string[] = [];
  const proxy = new Proxy(git, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls.push(property === 'run' ? `run:${(args[0] as string[])[0]}` : String(property));
        return (value as (...inner: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { git: proxy, calls };
}

interface Scenario {
  repo: TestRepo;
  manifest: ImplManifest;
  base: string;
}

async function scenario(thresholdLine = ''): Promise<Scenario> {
  const repo = await createTestRepo({
    files: {
      'cmd/main.go': 'package main\n\nfunc main() {}\n',
      'pkg/old/old.go': 'package old\n\nfunc NewOld() {}\n',
      'src/app.ts': 'export const app = 1;\n',
    },
  });
  const base = (await repo.run(['rev-parse', 'HEAD'])).trim();
  // The merged result of the wave: A's Go work, B's TS/Python work, C's (partial) work.
  repo.write(
    'pkg/thing/thing.go',
    [
      'package thing',
      '',
      'func NewThing() *Thing { return &Thing{} }',
      '',
      'func RegisterThing() {}',
      '',
      'func BuildUsed() {}',
      '',
      'func IsReady() bool { return true }',
      '',
      'func helper() {}',
      '',
      'type Thing struct{ Name string }',
      '',
      'type ThingHandler struct{}',
      '',
      'type UnusedBuilder struct{}',
      '',
      'func (t *Thing) RunOnce() { RegisterThing() }',
      '',
    ].join('\n'),
  );
  repo.write('pkg/old/old.go', 'package old\n\nfunc NewOld() {}\n\nfunc StartOlder() {}\n');
  repo.write('cmd/main.go', 'package main\n\nimport "x/pkg/thing"\n\nvar h thing.ThingHandler\n\nfunc main() { thing.BuildUsed(); var t thing.Thing; t.RunOnce() }\n');
  repo.write(
    'src/thing.ts',
    [
      'export interface ThingOptions { size: number }',
      'export function createThing(options: ThingOptions) { return options; }',
      'export function registerRoutes() {}',
      'export function startServer() {}',
      'export function getThing() {}',
      'export const DEFAULT_SIZE = 3;',
      '',
    ].join('\n'),
  );
  repo.write('src/thing.test.ts', 'import { registerRoutes } from "./thing";\nregisterRoutes();\n');
  repo.write('src/app.ts', 'import type { ThingOptions } from "./thing";\n// startServer() will be called in wave 2\nconst label = "startServer";\nexport const app: ThingOptions = { size: 1 };\n');
  repo.write('app/svc.py', 'def register_routes(app):\n    return app\n\ndef create_app():\n    return 1\n');
  repo.write('app/main.py', 'from app.svc import create_app\n\ncreate_app()\n');
  repo.write('pkg/c/c.go', 'package c\n\nfunc NewC() {}\n');
  await repo.commitAll('wave 1 merged');
  const manifest = manifestOf(
    [
      'title: Things',
      'feature_slug: things',
      'verdict: SUITABLE',
      thresholdLine,
      'waves:',
      '  - number: 1',
      `    base_commit: ${base}`,
      '    agents:',
      '      - id: A',
      '        task: Go side',
      '      - id: B',
      '        task: TS and Python side',
      '      - id: C',
      '        task: unfinished',
      'completion_reports:',
      '  A:',
      '    status: complete',
      '    files_changed: [pkg/old/old.go, cmd/main.go]',
      '    files_created: [pkg/thing/thing.go]',
      '  B:',
      '    status: complete',
      '    files_changed: [src/app.ts]',
      '    files_created: [src/thing.ts, src/thing.test.ts, app/svc.py, app/main.py]',
      '  C:',
      '    status: partial',
      '    files_created: [pkg/c/c.go]',
      '',
    ].join('\n'),
  );
  return { repo, manifest, base };
}

describe('validateIntegration (E25)', () => {
  it('reports new, uncalled, integration-named exports by the E25 text severities', async () => {
    const { repo, manifest } = await scenario();
    const report = await validateIntegration({ manifest, wave: 1, git: repo.git, ref: 'HEAD' });
    expect(report.gaps.map((gap) => [gap.agent_id, gap.file_path, gap.export_name, gap.category, gap.severity])).toEqual([
      ['A', 'pkg/old/old.go', 'StartOlder', 'function_call', 'error'],
      ['A', 'pkg/thing/thing.go', 'NewThing', 'function_call', 'warning'],
      // Called only inside its own file (by RunOnce): still a gap.
      ['A', 'pkg/thing/thing.go', 'RegisterThing', 'function_call', 'error'],
      ['B', 'src/thing.ts', 'createThing', 'function_call', 'warning'],
      ['B', 'src/thing.ts', 'registerRoutes', 'function_call', 'error'],
      ['B', 'src/thing.ts', 'startServer', 'function_call', 'error'],
      ['B', 'app/svc.py', 'register_routes', 'function_call', 'error'],
    ]);
    expect(report.valid).toBe(false);
    expect(report.wave).toBe(1);
    expect(report.summary).toBe('Wave 1: 7 integration gap(s) detected, 5 error(s), 2 warning(s)');
    const newThing = report.gaps.find((gap) => gap.export_name === 'NewThing')!;
    expect(newThing).toEqual({
      export_name: 'NewThing',
      file_path: 'pkg/thing/thing.go',
      agent_id: 'A',
      category: 'function_call',
      severity: 'warning',
      reason: 'exported func "NewThing" has no call-sites outside its defining file',
      suggested_fix: 'Add call to NewThing in cmd/main.go',
      search_results: ['cmd/main.go'],
    });
    expect(report.gaps.find((gap) => gap.export_name === 'createThing')!.search_results).toEqual(['src/app.ts']);
    expect(report.gaps.find((gap) => gap.export_name === 'register_routes')!.suggested_fix).toBe('Add call to register_routes in app/main.py');
  });

  it('filters by threshold: option, then manifest field, default warning', async () => {
    const { repo, manifest } = await scenario('integration_gap_severity_threshold: error');
    const errorsOnly = await validateIntegration({ manifest, wave: 1, git: repo.git, ref: 'HEAD' });
    expect(errorsOnly.gaps.map((gap) => gap.export_name)).toEqual(['StartOlder', 'RegisterThing', 'registerRoutes', 'startServer', 'register_routes']);
    expect(errorsOnly.summary).toBe('Wave 1: 5 integration gap(s) detected, 5 error(s)');

    const all = await validateIntegration({ manifest, wave: 1, git: repo.git, ref: 'HEAD', threshold: 'info' });
    const infos = all.gaps.filter((gap) => gap.severity === 'info');
    // ThingHandler (a type with usage in cmd/main.go) is no gap; the unused type and struct field are.
    expect(infos.map((gap) => [gap.export_name, gap.category])).toEqual([
      ['UnusedBuilder', 'type_usage'],
      ['Name', 'field_init'],
    ]);
    expect(all.gaps).toHaveLength(9);
  });

  it('without a base every export of the files counts as new (Go behaviour)', async () => {
    const { repo, manifest } = await scenario();
    const wave = manifest.waves[0]!;
    delete wave.base_commit;
    const report = await validateIntegration({ manifest, wave: 1, git: repo.git, ref: 'HEAD' });
    expect(report.gaps.map((gap) => gap.export_name)).toContain('NewOld');
  });

  it('is valid when everything is called', async () => {
    const repo = await createTestRepo({ files: { 'main.go': 'package main\n\nfunc main() {}\n' } });
    const base = (await repo.run(['rev-parse', 'HEAD'])).trim();
    repo.write('lib/lib.go', 'package lib\n\nfunc NewClient() {}\n');
    repo.write('main.go', 'package main\n\nfunc main() { lib.NewClient() }\n');
    await repo.commitAll('wired');
    const manifest = manifestOf(
      ['title: T', 'feature_slug: t', 'verdict: SUITABLE', 'waves:', '  - number: 1', `    base_commit: ${base}`, '    agents:', '      - id: A', '        task: x', 'completion_reports:', '  A:', '    status: complete', '    files_created: [lib/lib.go]', '    files_changed: [main.go]', ''].join('\n'),
    );
    const report = await validateIntegration({ manifest, wave: 1, git: repo.git, ref: 'HEAD' });
    expect(report).toEqual({ wave: 1, gaps: [], valid: true, summary: 'Wave 1: all exports are integrated (no gaps detected)' });
  });

  it('reads agent files from their own branches before the merge (agentRefs)', async () => {
    const repo = await createTestRepo({ files: { 'main.go': 'package main\n\nfunc main() {}\n' } });
    const base = (await repo.run(['rev-parse', 'HEAD'])).trim();
    await repo.git.createBranch('agent-a', 'HEAD');
    await repo.git.checkout('agent-a');
    repo.write('lib/lib.go', 'package lib\n\nfunc RegisterAll() {}\n');
    await repo.commitAll('agent a');
    await repo.git.checkout('main');
    const manifest = manifestOf(
      ['title: T', 'feature_slug: t', 'verdict: SUITABLE', 'waves:', '  - number: 1', `    base_commit: ${base}`, '    agents:', '      - id: A', '        task: x', 'completion_reports:', '  A:', '    status: complete', '    files_created: [lib/lib.go]', ''].join('\n'),
    );
    const onMain = await validateIntegration({ manifest, wave: 1, git: repo.git, ref: 'main' });
    expect(onMain.gaps).toEqual([]);
    const onBranch = await validateIntegration({ manifest, wave: 1, git: repo.git, ref: 'main', agentRefs: { A: 'agent-a' } });
    expect(onBranch.gaps.map((gap) => gap.export_name)).toEqual(['RegisterAll']);
  });

  it('walks the repository ONCE per run: one ls-tree however many exports, none with a given index', async () => {
    const repo = await createTestRepo({ files: { 'main.go': 'package main\n\nfunc main() {}\n' } });
    const base = (await repo.run(['rev-parse', 'HEAD'])).trim();
    const created: string[] = [];
    for (let file = 0; file < 30; file += 1) {
      const name = `pkg/p${file}/p.go`;
      created.push(name);
      repo.write(name, `package p${file}\n\nfunc NewThing${file}() {}\n\nfunc RegisterThing${file}() {}\n\nfunc StartThing${file}() {}\n`);
    }
    await repo.commitAll('many exports');
    const manifest = manifestOf(
      ['title: T', 'feature_slug: t', 'verdict: SUITABLE', 'waves:', '  - number: 1', `    base_commit: ${base}`, '    agents:', '      - id: A', '        task: x', 'completion_reports:', '  A:', '    status: complete', `    files_created: [${created.join(', ')}]`, ''].join('\n'),
    );
    const recorded = recordingGit(repo.git);
    const report = await validateIntegration({ manifest, wave: 1, git: recorded.git, ref: 'HEAD' });
    expect(report.gaps).toHaveLength(90);
    expect(recorded.calls.filter((call) => call === 'run:ls-tree')).toHaveLength(1);
    expect(recorded.calls.filter((call) => call === 'run:cat-file')).toHaveLength(2);
    expect(recorded.calls.length).toBeLessThanOrEqual(5);

    const index = await buildReferenceIndex({ git: repo.git, ref: 'HEAD' });
    const again = recordingGit(repo.git);
    await validateIntegration({ manifest, wave: 1, git: again.git, ref: 'HEAD', index });
    expect(again.calls.filter((call) => call === 'run:ls-tree')).toHaveLength(0);
  });

  it('throws a coded error for an unknown wave', async () => {
    const { repo, manifest } = await scenario();
    await expect(validateIntegration({ manifest, wave: 9, git: repo.git, ref: 'HEAD' })).rejects.toMatchObject({ code: 'P011_WAVE_NOT_FOUND' });
  });
});

describe('nameWords', () => {
  it('splits camel, Pascal, snake and acronyms', () => {
    expect(nameWords('NewHTTPServer')).toEqual(['new', 'http', 'server']);
    expect(nameWords('createThing')).toEqual(['create', 'thing']);
    expect(nameWords('register_routes')).toEqual(['register', 'routes']);
    expect(nameWords('InitialState')).toEqual(['initial', 'state']);
    expect(nameWords('_private_name')).toEqual(['private', 'name']);
  });
});
