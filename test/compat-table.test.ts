import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../src/cli/main.js';
import type { CommandIo } from '../src/cli/io.js';
import { compareTrees, parseCobraHelp, parseCommanderHelp, type CompatNotes, type CompatRow, type GoHelpTree, type OurHelp } from '../scripts/compat-lib.mjs';
import { repoRoot } from './support/cli.js';

// docs/compat.md stays true (issue 13, "what it must show" 1): the committed Go help tree
// (scripts/compat/go-help-tree.json, refreshed by scripts/compat-table.mjs from the Go binary)
// against our CLI as it is now, in-process — no Go binary needed.
const readJson = <T>(file: string): T => JSON.parse(readFileSync(path.join(repoRoot, file), 'utf8')) as T;
const goTree = readJson<GoHelpTree>('scripts/compat/go-help-tree.json');
const notes: CompatNotes = { planned: readJson('scripts/compat/planned.json'), differences: readJson('scripts/compat/differences.json') };
const committed = readJson<{ rows: CompatRow[] }>('docs/compat.json');

async function ourHelp(commandPath: string): Promise<OurHelp | undefined> {
  let stdout = '';
  const io: CommandIo = { cwd: repoRoot, env: {}, now: () => new Date(), stdout: (text) => (stdout += text), stderr: () => undefined, readStdin: async () => '' };
  const code = await main([...commandPath.split(' '), '--help'], io);
  if (code !== 0) return undefined;
  const help = parseCommanderHelp(stdout);
  const first = commandPath.split(' ')[0];
  return help.usage === `polywave ${first}` || help.usage.startsWith(`polywave ${first} `) ? help : undefined;
}

async function currentRows(): Promise<CompatRow[]> {
  const ours = new Map<string, OurHelp | undefined>();
  for (const name of Object.keys(goTree.commands)) ours.set(name, await ourHelp(name));
  return compareTrees(goTree, (name) => ours.get(name), notes);
}

describe('compatibility table (docs/compat.md)', () => {
  it('every Go command and flag the table marks present is still present', async () => {
    const rows = new Map((await currentRows()).map((row) => [row.command, row]));
    const lost: string[] = [];
    for (const row of committed.rows) {
      const now = rows.get(row.command);
      if (row.status === 'present' && now?.status !== 'present') lost.push(row.command);
      for (const flag of row.flags) {
        if (flag.status !== 'present') continue;
        if (now?.flags.find((candidate) => candidate.name === flag.name)?.status !== 'present') lost.push(`${row.command} --${flag.name}`);
      }
    }
    expect(lost).toEqual([]);
  });

  it('every Go command and flag is present, planned (issue N) or a documented difference', async () => {
    const unaccounted = (await currentRows()).flatMap((row) => [
      ...(row.status === 'missing' ? [row.command] : []),
      ...(row.status === 'present' ? row.flags.filter((flag) => flag.status === 'missing').map((flag) => `${row.command} --${flag.name}`) : []),
    ]);
    expect(unaccounted).toEqual([]);
  });

  it('the snapshot covers the whole Go CLI (99 top-level commands + queue add|list|next + query events)', () => {
    const names = Object.keys(goTree.commands);
    expect(names.filter((name) => !name.includes(' '))).toHaveLength(99);
    expect(names.filter((name) => name.includes(' ')).sort()).toEqual(['query events', 'queue add', 'queue list', 'queue next']);
    expect(goTree.globalFlags.map((flag) => flag.name)).toEqual(['repo-dir']);
  });

  it('planned and difference notes only name Go commands and flags', () => {
    const known = new Set(Object.entries(goTree.commands).flatMap(([name, command]) => [name, ...[...command.flags, ...goTree.globalFlags].map((flag) => `${name} --${flag.name}`)]));
    expect([...Object.keys(notes.planned), ...Object.keys(notes.differences)].filter((key) => !known.has(key))).toEqual([]);
  });

  it('parses cobra help (flags, defaults, global flags)', () => {
    const help = parseCobraHelp('Short text\n\nUsage:\n  tool x <a> [flags]\n\nFlags:\n  -h, --help          help\n      --wave int      wave (default 1)\n      --fix           fix it\n\nGlobal Flags:\n      --repo-dir string   root (default ".")\n');
    expect(help.usage).toBe('tool x <a> [flags]');
    expect(help.flags).toEqual([
      { name: 'wave', type: 'int', description: 'wave', default: '1' },
      { name: 'fix', type: 'bool', description: 'fix it' },
    ]);
    expect(help.globalFlags).toEqual([{ name: 'repo-dir', type: 'string', description: 'root', default: '.' }]);
  });
});
