import { describe, expect, it } from 'vitest';
import { createTestRepo } from '../../test/support/git-repo.js';
import { parseImpl } from '../protocol/parse-impl.js';
import type { ImplManifest } from '../protocol/schema/impl-schema.js';
import { buildReferenceIndex } from './reference-index.js';
import { lexSource } from './source-lexer.js';
import { symbolWired, validateWiring } from './wiring.js';

function manifestWith(wiring: Array<{ symbol: string; from: string; pattern?: string; wave?: number }>): ImplManifest {
  const lines = ['title: T', 'feature_slug: t', 'verdict: SUITABLE', 'wiring:'];
  for (const entry of wiring) {
    lines.push(`  - symbol: ${entry.symbol}`, '    defined_in: lib/x', `    must_be_called_from: ${entry.from}`, '    agent: A', `    wave: ${entry.wave ?? 1}`);
    if (entry.pattern) lines.push(`    integration_pattern: ${entry.pattern}`);
  }
  const parsed = parseImpl(`${lines.join('\n')}\n`);
  if (!parsed.manifest) throw new Error(JSON.stringify(parsed.findings));
  return parsed.manifest;
}

function wired(filePath: string, text: string, symbol: string, pattern?: string): boolean {
  return symbolWired(lexSource(filePath, text), symbol, pattern);
}

describe('symbolWired', () => {
  it('Go: calls and selector calls, not definitions, comments or strings', () => {
    expect(wired('main.go', 'package main\nfunc main() { handlers.RegisterHandler(mux) }\n', 'RegisterHandler')).toBe(true);
    expect(wired('main.go', 'package main\nfunc main() { RegisterHandler[int](mux) }\n', 'RegisterHandler')).toBe(true);
    expect(wired('main.go', 'package main\n// RegisterHandler(mux) later\nvar s = "RegisterHandler(mux)"\n', 'RegisterHandler')).toBe(false);
    expect(wired('main.go', 'package main\nfunc RegisterHandler(m int) {}\nfunc (s *S) RegisterHandler() {}\n', 'RegisterHandler')).toBe(false);
    expect(wired('main.go', 'package main\nfunc main() { RegisterHandlers(mux) }\n', 'RegisterHandler')).toBe(false);
  });

  it('Go: a value reference satisfies append/register/inject obligations, not call ones', () => {
    const text = 'package main\nimport "x/handlers"\nvar all = append(base, handlers.AuthHandler)\n';
    expect(wired('main.go', text, 'AuthHandler', 'append')).toBe(true);
    expect(wired('main.go', text, 'AuthHandler', 'call')).toBe(false);
    expect(wired('main.go', text, 'AuthHandler')).toBe(false);
  });

  it('TS/TSX: calls, optional calls, JSX props and elements, props access — imports alone are not wiring', () => {
    expect(wired('App.tsx', 'export const App = () => <List onSelect={handleSelect} />;\n', 'onSelect')).toBe(true);
    expect(wired('App.tsx', 'export const App = () => <List label="x" />;\n', 'label')).toBe(true);
    expect(wired('App.tsx', 'import { Dashboard } from "./d";\nexport const App = () => <Dashboard />;\n', 'Dashboard')).toBe(true);
    expect(wired('App.tsx', 'function C(props) { props.onSelect?.(1); }\n', 'onSelect')).toBe(true);
    expect(wired('app.ts', 'registry.register?.(x);\ncreateThing<Config>(options);\n', 'createThing')).toBe(true);
    expect(wired('app.ts', 'import { createThing } from "./thing";\n// createThing() later\nconst onSelect = { a: 1 };\n', 'createThing')).toBe(false);
    expect(wired('app.ts', 'const onSelect = { a: 1 };\n', 'onSelect')).toBe(false);
    expect(wired('app.ts', 'import { createThing } from "./thing";\n', 'createThing', 'register')).toBe(false);
    expect(wired('app.ts', 'import { createThing } from "./thing";\nplugins.push(createThing);\n', 'createThing', 'register')).toBe(true);
  });

  it('Python: calls and decorators', () => {
    expect(wired('app.py', 'from plugins import register_plugin\n\n@register_plugin\ndef handler():\n    return 1\n', 'register_plugin')).toBe(true);
    expect(wired('app.py', 'import api\n\n@api.route("/x")\ndef handler():\n    return 1\n', 'route')).toBe(true);
    expect(wired('app.py', 'from x import (\n    make_router,\n)\n', 'make_router', 'register')).toBe(false);
    expect(wired('app.py', 'from x import make_router\napp.include_router(make_router)\n', 'make_router', 'register')).toBe(true);
    expect(wired('app.py', 'def make_router():\n    return 1\n', 'make_router')).toBe(false);
  });

  it('Rust: calls, paths and macros', () => {
    expect(wired('main.rs', 'fn main() { let app = Router::new().route("/", get(handlers::index)); }\n', 'index')).toBe(true);
    expect(wired('main.rs', 'fn main() { register_all(); }\n', 'register_all')).toBe(true);
    expect(wired('main.rs', 'fn main() { my_macro!(x); }\n', 'my_macro')).toBe(true);
    expect(wired('main.rs', 'pub fn index() {}\n', 'index')).toBe(false);
  });
});

describe('validateWiring (E35 Layer 3B)', () => {
  it('reads callers at the ref and reports missing calls and missing files as errors', async () => {
    const repo = await createTestRepo({ files: { 'cmd/main.go': 'package main\n\nfunc main() {}\n' } });
    await repo.git.createBranch('merged', 'HEAD');
    await repo.git.checkout('merged');
    repo.write('cmd/main.go', 'package main\n\nfunc main() {\n\thandlers.RegisterHandler(mux)\n\t// handlers.Missing(mux)\n}\n');
    await repo.commitAll('wire');
    await repo.git.checkout('main');

    const manifest = manifestWith([
      { symbol: 'RegisterHandler', from: 'cmd/main.go', pattern: 'register' },
      { symbol: 'Missing', from: 'cmd/main.go' },
      { symbol: 'Anything', from: 'cmd/absent.go', wave: 2 },
    ]);
    const report = await validateWiring({ manifest, git: repo.git, ref: 'merged' });
    expect(report.valid).toBe(false);
    expect(report.summary).toBe('2 wiring gap(s) found in 3 declarations');
    expect(report.gaps).toEqual([
      {
        declaration: { symbol: 'Missing', defined_in: 'lib/x', must_be_called_from: 'cmd/main.go', agent: 'A', wave: 1 },
        reason: 'symbol "Missing" not found as a call in cmd/main.go',
        severity: 'error',
      },
      {
        declaration: { symbol: 'Anything', defined_in: 'lib/x', must_be_called_from: 'cmd/absent.go', agent: 'A', wave: 2 },
        reason: 'could not read file cmd/absent.go: not found at merged',
        severity: 'error',
      },
    ]);

    // On main (the checkout) the call is not there yet.
    const onMain = await validateWiring({ manifest, git: repo.git, ref: 'main', wave: 1 });
    expect(onMain.gaps.map((gap) => gap.declaration.symbol)).toEqual(['RegisterHandler', 'Missing']);

    // With the run's index the answers are the same.
    const index = await buildReferenceIndex({ git: repo.git, ref: 'merged' });
    expect(await validateWiring({ manifest, git: repo.git, ref: 'merged', index })).toEqual(report);
  });

  it('is valid with every declaration satisfied, and with none', async () => {
    const repo = await createTestRepo({ files: { 'src/App.tsx': 'export const App = () => <List onSelect={pick} />;\n' } });
    const report = await validateWiring({ manifest: manifestWith([{ symbol: 'onSelect', from: 'src/App.tsx', pattern: 'prop-pass' }]), git: repo.git, ref: 'HEAD' });
    expect(report).toEqual({ gaps: [], valid: true, summary: 'all 1 wiring declarations satisfied' });
    const none = await validateWiring({ manifest: manifestWith([]), git: repo.git, ref: 'HEAD' });
    expect(none).toEqual({ gaps: [], valid: true, summary: 'all 0 wiring declarations satisfied' });
  });
});
