import { describe, expect, it } from 'vitest';
import { createTestRepo, type TestRepo } from '../../test/support/git-repo.js';
import { detectTypeCollisions } from './collisions.js';

/** Creates `branch` from main with `files` written (null = deleted) and committed. */
async function agentBranch(repo: TestRepo, branch: string, files: Record<string, string | null>): Promise<void> {
  await repo.git.createBranch(branch, 'main');
  await repo.git.checkout(branch);
  for (const [file, text] of Object.entries(files)) {
    if (text === null) repo.remove(file);
    else repo.write(file, text);
  }
  await repo.commitAll(`work on ${branch}`);
  await repo.git.checkout('main');
}

describe('detectTypeCollisions (E41)', () => {
  it('Go: same name in the same package collides; other packages, pre-existing symbols, methods on other receivers and tests do not', async () => {
    const repo = await createTestRepo({ files: { 'pkg/config/load.go': 'package config\n\nfunc Load() {}\n' } });
    await agentBranch(repo, 'wave1-agent-A', {
      'pkg/config/a.go': 'package config\n\ntype Config struct{ Name string }\n\ntype X struct{}\n\nfunc (x *X) String() string { return "" }\n',
      'pkg/config/load.go': 'package config\n\nfunc Load() {}\n\nfunc loadMore() {}\n',
      'pkg/config/a_test.go': 'package config\n\nfunc helperT() {}\n',
      'pkg/api/shared.go': 'package api\n\ntype Shared struct{}\n',
    });
    await agentBranch(repo, 'wave1-agent-B', {
      'pkg/config/b.go': 'package config\n\n// Config mirrors A.\ntype Config struct{}\n\ntype Y struct{}\n\nfunc (y Y) String() string { return "" }\n\nfunc Load() {}\n',
      'pkg/config/b_test.go': 'package config\n\nfunc helperT() {}\n',
      'pkg/web/shared.go': 'package web\n\ntype Shared struct{}\n',
    });
    await agentBranch(repo, 'wave1-agent-C', {
      'pkg/config/c.go': 'package config\n\nconst Config = 1\n',
      'pkg/net/dial_linux.go': 'package net\n\nfunc dial() {}\n',
    });
    await agentBranch(repo, 'wave1-agent-E', { 'pkg/net/dial_other.go': '//go:build !linux\n\npackage net\n\nfunc dial() {}\n' });

    const report = await detectTypeCollisions({
      git: repo.git,
      base: 'main',
      agents: [
        { agentId: 'C', ref: 'wave1-agent-C' },
        { agentId: 'B', ref: 'wave1-agent-B' },
        { agentId: 'A', ref: 'wave1-agent-A' },
        { agentId: 'D', ref: 'wave1-agent-D' }, // no branch yet: skipped
        { agentId: 'E', ref: 'wave1-agent-E' }, // a platform variant of C's dial(): not a clash
      ],
    });
    expect(report).toEqual({
      valid: false,
      collisions: [
        {
          type_name: 'Config',
          package: 'pkg/config',
          kind: 'struct',
          agents: ['A', 'B', 'C'],
          files: ['pkg/config/a.go', 'pkg/config/b.go', 'pkg/config/c.go'],
          resolution: 'Keep A, remove from B and C',
        },
      ],
    });
  });

  it('TypeScript/JavaScript: exported names in one directory collide; private names and other directories do not', async () => {
    const repo = await createTestRepo({ files: { 'src/lib/index.ts': 'export const version = 1;\n' } });
    await agentBranch(repo, 'a', {
      'src/lib/a.ts': 'export interface Config { a: string }\ninterface Props { x: number }\nexport function makeThing() {}\n',
      'src/ui/view.ts': 'export class View {}\n',
      'src/lib/a.test.ts': 'export const fixture = 1;\n',
    });
    await agentBranch(repo, 'b', {
      'src/lib/b.js': 'export const Config = {};\nconst Props = 1;\nexport function makeThing() {}\n',
      'src/api/view.ts': 'export class View {}\n',
      'src/lib/b.test.ts': 'export const fixture = 2;\n',
    });
    const report = await detectTypeCollisions({ git: repo.git, base: 'main', agents: [{ agentId: 'A', ref: 'a' }, { agentId: 'B', ref: 'b' }] });
    expect(report.collisions.map((collision) => [collision.package, collision.type_name, collision.kind, collision.files, collision.resolution])).toEqual([
      ['src/lib', 'Config', 'interface', ['src/lib/a.ts', 'src/lib/b.js'], 'Keep A, remove from B'],
      ['src/lib', 'makeThing', 'function', ['src/lib/a.ts', 'src/lib/b.js'], 'Keep A, remove from B'],
    ]);
    expect(report.valid).toBe(false);
  });

  it('Python: public names in one package collide; private names, other packages and test files do not', async () => {
    const repo = await createTestRepo({ files: { 'app/models/__init__.py': '' } });
    await agentBranch(repo, 'a', {
      'app/models/user.py': 'class Config:\n    pass_through = True\n\ndef _private():\n    return 1\n',
      'app/views/page.py': 'def render():\n    return 1\n',
      'tests/test_user.py': 'def helper():\n    return 1\n',
    });
    await agentBranch(repo, 'b', {
      'app/models/order.py': 'Config = dict(a=1)\n\ndef _private():\n    return 2\n',
      'app/api/page.py': 'def render():\n    return 2\n',
      'tests/test_order.py': 'def helper():\n    return 2\n',
    });
    const report = await detectTypeCollisions({ git: repo.git, base: 'main', agents: [{ agentId: 'B', ref: 'b' }, { agentId: 'A', ref: 'a' }] });
    expect(report.collisions).toEqual([
      { type_name: 'Config', package: 'app.models', kind: 'class', agents: ['A', 'B'], files: ['app/models/order.py', 'app/models/user.py'], resolution: 'Keep A, remove from B' },
    ]);
  });

  it('Rust: pub items in one module directory collide; private items, other directories and tests/ do not', async () => {
    const repo = await createTestRepo({ files: { 'src/lib.rs': 'pub mod net;\n' } });
    await agentBranch(repo, 'a', {
      'src/net/a.rs': 'pub struct Config { pub port: u16 }\nfn helper() {}\n',
      'src/io/x.rs': 'pub fn open() {}\n',
      'tests/net.rs': 'pub fn fixture() {}\n',
    });
    await agentBranch(repo, 'b', {
      'src/net/b.rs': 'pub enum Config { A }\nfn helper() {}\n',
      'src/fs/x.rs': 'pub fn open() {}\n',
      'tests/fs.rs': 'pub fn fixture() {}\n',
    });
    const report = await detectTypeCollisions({ git: repo.git, base: 'main', agents: [{ agentId: 'A', ref: 'a' }, { agentId: 'B', ref: 'b' }] });
    expect(report.collisions).toEqual([
      { type_name: 'Config', package: 'src/net', kind: 'struct', agents: ['A', 'B'], files: ['src/net/a.rs', 'src/net/b.rs'], resolution: 'Keep A, remove from B' },
    ]);
  });

  it('is valid with no collisions, and compares against the merge base when main moved on', async () => {
    const repo = await createTestRepo({ files: { 'pkg/a/a.go': 'package a\n' } });
    await agentBranch(repo, 'a', { 'pkg/a/one.go': 'package a\n\ntype One struct{}\n' });
    await agentBranch(repo, 'b', { 'pkg/a/two.go': 'package a\n\ntype Two struct{}\n' });
    // main gains a file defining Two after the branches were cut: not an agent collision.
    repo.write('pkg/a/main_one.go', 'package a\n\ntype Two struct{}\n');
    await repo.commitAll('main moves on');
    const report = await detectTypeCollisions({ git: repo.git, base: 'main', agents: [{ agentId: 'A', ref: 'a' }, { agentId: 'B', ref: 'b' }] });
    expect(report).toEqual({ collisions: [], valid: true });
  });
});
