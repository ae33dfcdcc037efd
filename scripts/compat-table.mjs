#!/usr/bin/env node
// Writes docs/compat.md (and docs/compat.json): every command and flag of the Go `polywave-tools`,
// and whether polywave has it. Run after `npm run build`:
//
//   node scripts/compat-table.mjs                 # Go side from the binary if present, else the snapshot
//   node scripts/compat-table.mjs --go <binary>   # another Go binary
//   node scripts/compat-table.mjs --go-source <polywave-go checkout or git dir>
//                                                 # also read the commands the partial build lacks
//   node scripts/compat-table.mjs --check         # exit 1 when docs/compat.* are out of date
//
// The Go help tree is saved in scripts/compat/go-help-tree.json so the test
// (test/compat-table.test.ts) runs where the binary is absent. The binary is a tool for
// comparison only: nothing in polywave calls it.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { commandsFromGoSource, compareTrees, parseCommanderHelp, renderMarkdown, summarize, walkGoHelp } from './compat-lib.mjs';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const compatDir = path.join(repoRoot, 'scripts', 'compat');
const snapshotPath = path.join(compatDir, 'go-help-tree.json');
const markdownPath = path.join(repoRoot, 'docs', 'compat.md');
const jsonPath = path.join(repoRoot, 'docs', 'compat.json');

function argValue(flag) {
  const index = process.argv.indexOf(flag);
  return index >= 0 ? process.argv[index + 1] : undefined;
}

function readJson(file) {
  return JSON.parse(readFileSync(file, 'utf8'));
}

/** The Go help tree: walked from the binary when it is there, else the committed snapshot. */
function goTree() {
  const binary = path.resolve(argValue('--go') ?? path.join(repoRoot, '..', 'shared', 'tools', 'polywave-tools-go'));
  const previous = existsSync(snapshotPath) ? readJson(snapshotPath) : undefined;
  let tree;
  if (existsSync(binary)) {
    const walked = walkGoHelp((args) => {
      const result = spawnSync(binary, [...args, '--help'], { encoding: 'utf8', cwd: repoRoot });
      return result.stdout;
    });
    const version = spawnSync(binary, ['version'], { encoding: 'utf8' }).stdout.trim();
    const commands = Object.fromEntries(Object.entries(walked.commands).map(([name, command]) => [name, { ...command, source: 'binary' }]));
    // Commands the partial build lacks, read from the Go source earlier, are kept.
    for (const [name, command] of Object.entries(previous?.commands ?? {})) if (command.source === 'source' && !commands[name]) commands[name] = command;
    tree = { go_binary: version || path.basename(binary), globalFlags: walked.globalFlags, commands };
    process.stderr.write(`compat-table: walked ${Object.keys(walked.commands).length} commands of ${binary}\n`);
  } else if (previous) {
    tree = previous;
    process.stderr.write(`compat-table: ${binary} absent, using the snapshot ${path.relative(repoRoot, snapshotPath)}\n`);
  } else {
    throw new Error(`no Go binary at ${binary} and no snapshot at ${snapshotPath}`);
  }

  const sourceDir = argValue('--go-source');
  if (sourceDir) {
    const files = goSourceFiles(path.resolve(sourceDir));
    const fromSource = commandsFromGoSource(files);
    let added = 0;
    for (const [name, command] of Object.entries(fromSource)) {
      if (tree.commands[name]?.source === 'binary') continue;
      tree.commands[name] = { ...command, source: 'source' };
      added += 1;
    }
    tree.go_source = 'blackwell-systems/polywave-go cmd/polywave-tools/*.go';
    process.stderr.write(`compat-table: ${added} commands read from the Go source (not in the binary)\n`);
  }
  tree.commands = Object.fromEntries(Object.entries(tree.commands).sort(([a], [b]) => a.localeCompare(b)));
  return tree;
}

/** `cmd/polywave-tools/*.go` (tests excluded) of a checkout, or of a bare git directory at HEAD. */
function goSourceFiles(directory) {
  const files = {};
  const checkout = path.join(directory, 'cmd', 'polywave-tools');
  if (existsSync(checkout) && statSync(checkout).isDirectory()) {
    for (const name of readdirSync(checkout)) if (name.endsWith('.go') && !name.endsWith('_test.go')) files[name] = readFileSync(path.join(checkout, name), 'utf8');
    return files;
  }
  const git = (...args) => execFileSync('git', ['--git-dir', directory, ...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  for (const name of git('ls-tree', '--name-only', 'HEAD', 'cmd/polywave-tools/').split('\n')) {
    if (name.endsWith('.go') && !name.endsWith('_test.go')) files[path.basename(name)] = git('show', `HEAD:${name}`);
  }
  return files;
}

/** Our help for a Go command path, through the built CLI in-process (`undefined`: no such command). */
async function ourHelpReader() {
  const mainModule = path.join(repoRoot, 'dist', 'cli', 'main.js');
  if (!existsSync(mainModule)) throw new Error('dist/cli/main.js is missing: run `npm run build` first');
  const { main } = await import(mainModule);
  return async (commandPath) => {
    let stdout = '';
    const io = { cwd: repoRoot, env: {}, now: () => new Date(), stdout: (text) => (stdout += text), stderr: () => undefined, readStdin: async () => '' };
    const code = await main([...commandPath.split(' '), '--help'], io);
    if (code !== 0) return undefined;
    const help = parseCommanderHelp(stdout);
    // An unknown command followed by --help prints the program's help: not this command.
    return help.usage.startsWith(`polywave ${commandPath.split(' ')[0]} `) || help.usage === `polywave ${commandPath.split(' ')[0]}` ? help : undefined;
  };
}

const tree = goTree();
const readOurs = await ourHelpReader();
const ours = {};
for (const name of Object.keys(tree.commands)) ours[name] = await readOurs(name);
const notes = { planned: readJson(path.join(compatDir, 'planned.json')), differences: readJson(path.join(compatDir, 'differences.json')) };
const rows = compareTrees(tree, (name) => ours[name], notes);
const goSource = `\`${tree.go_binary}\` (${Object.values(tree.commands).filter((command) => command.source === 'binary').length} commands in the partial build${tree.go_source ? ` + ${Object.values(tree.commands).filter((command) => command.source === 'source').length} read from its source` : ''})`;
const markdown = renderMarkdown(rows, { goSource });
const json = `${JSON.stringify({ summary: summarize(rows), rows }, null, 2)}\n`;
const snapshot = `${JSON.stringify(tree, null, 2)}\n`;

if (process.argv.includes('--check')) {
  const stale = [[markdownPath, markdown], [jsonPath, json]].filter(([file, text]) => !existsSync(file) || readFileSync(file, 'utf8') !== text).map(([file]) => path.relative(repoRoot, file));
  if (stale.length > 0) {
    process.stderr.write(`compat-table: out of date: ${stale.join(', ')} (run node scripts/compat-table.mjs)\n`);
    process.exitCode = 1;
  }
} else {
  writeFileSync(snapshotPath, snapshot);
  writeFileSync(markdownPath, markdown);
  writeFileSync(jsonPath, json);
  const summary = summarize(rows);
  process.stderr.write(`compat-table: ${summary.commands_present}/${summary.commands} commands, ${summary.flags_present}/${summary.flags} flags present; ${summary.commands_missing} commands and ${summary.flags_missing} flags missing → docs/compat.md\n`);
}
