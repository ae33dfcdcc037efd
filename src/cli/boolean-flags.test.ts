import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { commandTable } from './command-table.js';
import { normalizeBooleanFlags } from './main.js';
import { corpusRoot, runCli } from '../../test/support/cli.js';

const spec = (name: string) => commandTable.find((command) => command.name === name)!;

describe('Go-style boolean flags (--flag=true|false)', () => {
  it('rewrites only the command\'s own boolean options; =false of a flag with a --no- twin becomes the twin; after -- nothing changes', () => {
    expect(normalizeBooleanFlags(['prepare-wave', 'x.yaml', '--wave', '1', '--commit-state=false', '--no-cache=true', '--rerun=0', '--json-only=TRUE'], spec('prepare-wave'))).toEqual(['prepare-wave', 'x.yaml', '--wave', '1', '--no-commit-state', '--no-cache', '--json-only']);
    expect(normalizeBooleanFlags(['run', 'f', '--critic=false', '--auto=1', '--events=true'], spec('run'))).toEqual(['run', 'f', '--no-critic', '--auto']);
    // Value options keep their `=value`; unknown flags reach commander unchanged (and are refused there).
    expect(normalizeBooleanFlags(['prepare-wave', 'x.yaml', '--wave=1', '--bogus=false', '--', '--rerun=false'], spec('prepare-wave'))).toEqual(['prepare-wave', 'x.yaml', '--wave=1', '--bogus=false', '--', '--rerun=false']);
    expect(() => normalizeBooleanFlags(['run', 'f', '--auto=maybe'], spec('run'))).toThrow(/--auto is a true\/false flag, got "maybe"/);
  });

  it('through the CLI: validate --fix=false is validate; --fix=nope is a coded error, exit 2', async () => {
    const manifest = path.join(corpusRoot, 'polywave-go', 'IMPL', 'IMPL-impl-rollback.yaml');
    const plain = await runCli(['validate', manifest]);
    const off = await runCli(['validate', manifest, '--fix=false']);
    expect(off.code).toBe(plain.code);
    expect(off.stdout).toBe(plain.stdout);
    const bad = await runCli(['validate', manifest, '--fix=nope']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe('polywave: error[X001_INVALID_INPUT]: --fix is a true/false flag, got "nope"\n');
  });
});
