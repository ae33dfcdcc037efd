// The compatibility table's logic: help-text parsers for the Go `polywave-tools` (cobra) and for
// polywave (commander), the Go-source reader for commands missing from the partial Go build, and
// the comparison that `scripts/compat-table.mjs` writes to docs/compat.md and that
// test/compat-table.test.ts re-checks. Pure functions: no file system, no processes.

/** Cobra's built-ins: not part of the command surface we compare. */
export const ignoredGoCommands = new Set(['help', 'completion']);
const ignoredFlags = new Set(['help']);

/** The lines of the section starting with `heading` (e.g. `Flags:`), up to the next blank line before a heading. */
function sectionLines(text, heading) {
  const lines = text.split('\n');
  const start = lines.findIndex((line) => line.trim() === heading);
  if (start < 0) return [];
  const body = [];
  for (const line of lines.slice(start + 1)) {
    if (/^\S/.test(line)) break; // next heading
    body.push(line);
  }
  return body;
}

/** Parses one cobra flag line: `  -x, --name type   description (default …)`. */
function parseCobraFlag(line) {
  const match = /^\s+(?:-(\w), )?--([\w-]+)(?: (\w+))?\s{2,}(.*)$/.exec(line) ?? /^\s+(?:-(\w), )?--([\w-]+)(?: (\w+))?\s*$/.exec(line);
  if (!match) return undefined;
  const description = (match[4] ?? '').trim();
  const defaultMatch = /\(default (.+)\)\s*$/.exec(description);
  return {
    name: match[2],
    ...(match[1] ? { short: match[1] } : {}),
    type: match[3] ?? 'bool',
    description: description.replace(/\s*\(default .+\)\s*$/, ''),
    ...(defaultMatch ? { default: defaultMatch[1].replace(/^"(.*)"$/, '$1') } : {}),
  };
}

/**
 * Parses a cobra `--help` text: usage line, sub-commands, local flags, global flags.
 * @param {string} text
 */
export function parseCobraHelp(text) {
  const usage = sectionLines(text, 'Usage:').map((line) => line.trim()).filter(Boolean);
  const commands = sectionLines(text, 'Available Commands:')
    .map((line) => /^\s+(\S+)\s*(.*)$/.exec(line))
    .filter(Boolean)
    .map((match) => ({ name: match[1], summary: match[2].trim() }));
  const flags = sectionLines(text, 'Flags:').map(parseCobraFlag).filter(Boolean).filter((flag) => !ignoredFlags.has(flag.name));
  const globalFlags = sectionLines(text, 'Global Flags:').map(parseCobraFlag).filter(Boolean);
  const summary = text.split('\n')[0].startsWith('Usage:') ? '' : text.split('\n')[0].trim();
  return { summary, usage: usage[0] ?? '', commands, flags, globalFlags };
}

/**
 * Parses a commander `--help` text: the options of the command (local and, when shown, global).
 * @param {string} text
 */
export function parseCommanderHelp(text) {
  const options = [];
  let inOptions = false;
  for (const line of text.split('\n')) {
    if (/^(Options|Global Options):\s*$/.test(line)) {
      inOptions = true;
      continue;
    }
    if (/^\S/.test(line)) inOptions = false;
    if (!inOptions) continue;
    const match = /^\s+(?:-(\w), )?--([\w-]+)(?: ([<[][^>\]]+[>\]]))?/.exec(line);
    if (match && !ignoredFlags.has(match[2])) options.push({ name: match[2], takesValue: Boolean(match[3]) });
  }
  const commands = [];
  let inCommands = false;
  for (const line of text.split('\n')) {
    if (/^(Commands|[A-Z][\w &]*:)\s*$/.test(line) && !/^(Options|Global Options|Arguments):/.test(line)) {
      inCommands = true;
      continue;
    }
    if (/^(Options|Global Options|Arguments):/.test(line)) inCommands = false;
    if (!inCommands) continue;
    const match = /^\s{2}([a-z][\w-]*)\b/.exec(line);
    if (match) commands.push(match[1]);
  }
  const usage = /^Usage: (.*)$/m.exec(text)?.[1] ?? '';
  return { usage, options, commands };
}

/**
 * Walks a cobra binary's help tree. `runHelp(args)` returns the `--help` text of `args`.
 * @param {(args: string[]) => string} runHelp
 */
export function walkGoHelp(runHelp) {
  const root = parseCobraHelp(runHelp([]));
  const commands = {};
  const visit = (path, summary) => {
    const help = parseCobraHelp(runHelp(path));
    const name = path.join(' ');
    commands[name] = { summary: summary || help.summary, usage: help.usage, flags: help.flags };
    if (help.commands.length > 0) commands[name].subcommands = help.commands.map((command) => command.name);
    for (const sub of help.commands) if (!ignoredGoCommands.has(sub.name)) visit([...path, sub.name], sub.summary);
  };
  for (const command of root.commands) if (!ignoredGoCommands.has(command.name)) visit([command.name], command.summary);
  return { globalFlags: root.flags, commands };
}

/** The Go string literals of a text, in order (interpreted and raw). */
function goStrings(text) {
  return [...text.matchAll(/"((?:[^"\\]|\\.)*)"|`([^`]*)`/g)].map((match) => (match[1] ?? match[2]).replace(/\\"/g, '"'));
}

/**
 * Commands of the Go source (`cmd/polywave-tools/*.go`, test files excluded) with their flags,
 * read from `Use:` and `cmd.Flags().XxxVar(…)` — for the commands the partial Go build lacks.
 * @param {Record<string, string>} files file name → Go source
 */
export function commandsFromGoSource(files) {
  const functions = new Map(); // constructor name → {use, summary, flags, children}
  for (const [, text] of Object.entries(files)) {
    const parts = text.split(/^func /m).slice(1);
    for (const part of parts) {
      const name = /^(new\w+)\(\)\s*\*cobra\.Command/.exec(part)?.[1];
      if (!name) continue;
      const use = /Use:\s*"([^"]*)"/.exec(part)?.[1];
      if (!use) continue;
      const summary = /Short:\s*"((?:[^"\\]|\\.)*)"/.exec(part)?.[1] ?? '';
      const flags = [];
      for (const match of part.matchAll(/\b\w+\.Flags\(\)\.(String|Bool|Int|Int64|Float64|Duration|StringSlice|StringArray|IntSlice)(Var)?(P)?\(/g)) {
        let depth = 1;
        let index = match.index + match[0].length;
        while (index < part.length && depth > 0) {
          if (part[index] === '(') depth += 1;
          else if (part[index] === ')') depth -= 1;
          index += 1;
        }
        const strings = goStrings(part.slice(match.index + match[0].length, index - 1));
        if (strings.length === 0) continue;
        const type = { String: 'string', Bool: 'bool', Int: 'int', Int64: 'int', Float64: 'float', Duration: 'duration', StringSlice: 'strings', StringArray: 'stringArray', IntSlice: 'ints' }[match[1]];
        flags.push({ name: strings[0], type, description: strings[strings.length - 1] });
      }
      const children = [...part.matchAll(/AddCommand\(([^)]*(?:\)[^)]*)*)\)/g)].flatMap((match) => [...match[1].matchAll(/(new\w+)\(\)/g)].map((child) => child[1]));
      functions.set(name, { use: use.split(' ')[0], usage: `polywave-tools ${use}`, summary, flags: flags.filter((flag) => !ignoredFlags.has(flag.name)), children });
    }
  }
  const mainText = Object.entries(files).find(([file]) => file.endsWith('main.go'))?.[1] ?? '';
  const topLevel = [...(/rootCmd\.AddCommand\(([\s\S]*?)\n\t\)/.exec(mainText)?.[1] ?? '').matchAll(/(new\w+)\(\)/g)].map((match) => match[1]);
  const commands = {};
  const visit = (constructor, prefix) => {
    const entry = functions.get(constructor);
    if (!entry || ignoredGoCommands.has(entry.use)) return;
    const name = [...prefix, entry.use].join(' ');
    commands[name] = { summary: entry.summary, usage: entry.usage, flags: entry.flags };
    const children = entry.children.map((child) => functions.get(child)?.use).filter(Boolean);
    if (children.length > 0) commands[name].subcommands = children;
    for (const child of entry.children) visit(child, [...prefix, entry.use]);
  };
  for (const constructor of topLevel) visit(constructor, []);
  return commands;
}

/**
 * Compares the Go tree with ours. `ours(commandPath)` returns our parsed help for a Go command
 * path (`undefined` when we have no such command). Each Go command and flag gets a status:
 * `present`, `planned` (with the issue), `difference` (documented) or `missing`.
 * @param {{globalFlags: any[], commands: Record<string, any>}} goTree
 * @param {(path: string) => {options: {name: string}[]} | undefined} ours
 * @param {{planned: Record<string, {issue: number, note?: string}>, differences: Record<string, string>}} notes
 */
export function compareTrees(goTree, ours, notes) {
  const rows = [];
  const names = Object.keys(goTree.commands).sort();
  for (const name of names) {
    const goCommand = goTree.commands[name];
    const ourHelp = ours(name);
    const planned = notes.planned[name];
    const commandDifference = notes.differences[name];
    const status = ourHelp ? 'present' : planned ? 'planned' : commandDifference ? 'difference' : 'missing';
    const ourOptions = new Set((ourHelp?.options ?? []).map((option) => option.name));
    const goFlags = [...goCommand.flags, ...goTree.globalFlags.filter((flag) => !goCommand.flags.some((local) => local.name === flag.name))];
    const flags = goFlags
      .map((flag) => {
        const key = `${name} --${flag.name}`;
        const ourName = ourHelp && ourOptions.has(flag.name) ? flag.name : undefined;
        const flagPlanned = notes.planned[key];
        const difference = notes.differences[key];
        let flagStatus;
        if (ourName) flagStatus = 'present';
        else if (difference) flagStatus = 'difference';
        else if (flagPlanned || (!ourHelp && planned)) flagStatus = 'planned';
        else flagStatus = 'missing';
        return {
          name: flag.name,
          type: flag.type,
          global: !goCommand.flags.some((local) => local.name === flag.name),
          status: flagStatus,
          ...(flagPlanned ? { issue: flagPlanned.issue } : !ourHelp && planned ? { issue: planned.issue } : {}),
          ...(difference ? { note: difference } : {}),
        };
      })
      .sort((a, b) => a.name.localeCompare(b.name));
    rows.push({
      command: name,
      source: goCommand.source ?? 'binary',
      summary: goCommand.summary,
      status,
      ...(planned ? { issue: planned.issue, ...(planned.note ? { plan: planned.note } : {}) } : {}),
      ...(commandDifference ? { note: commandDifference } : {}),
      flags,
    });
  }
  return rows;
}

/** Counts of a comparison. */
export function summarize(rows) {
  const count = (items, status) => items.filter((item) => item.status === status).length;
  const flags = rows.flatMap((row) => row.flags);
  return {
    commands: rows.length,
    commands_present: count(rows, 'present'),
    commands_planned: count(rows, 'planned'),
    commands_difference: count(rows, 'difference'),
    commands_missing: count(rows, 'missing'),
    flags: flags.length,
    flags_present: count(flags, 'present'),
    flags_planned: count(flags, 'planned'),
    flags_difference: count(flags, 'difference'),
    flags_missing: count(flags, 'missing'),
  };
}

const mark = { present: '✅', planned: '🕓', difference: '≈', missing: '❌' };

function flagCell(flag) {
  const text = `\`--${flag.name}\`${flag.global ? ' (global)' : ''} ${mark[flag.status]}`;
  if (flag.status === 'planned' && flag.issue) return `${text} issue ${flag.issue}`;
  return text;
}

/** Renders docs/compat.md from the comparison rows. */
export function renderMarkdown(rows, meta) {
  const summary = summarize(rows);
  const lines = [
    '# Compatibility with the Go `polywave-tools`',
    '',
    '<!-- Generated by `node scripts/compat-table.mjs` (after `npm run build`) from the Go binary\'s `--help` tree',
    '     (snapshot: scripts/compat/go-help-tree.json) and ours. Do not edit by hand: change',
    '     scripts/compat/planned.json or scripts/compat/differences.json and re-run the script. -->',
    '',
    `Go reference: ${meta.goSource}. Every Go command and flag, and whether \`polywave\` (also installed as`,
    '`polywave-tools` and `sawtools`) has it. `test/compat-table.test.ts` fails when a command or flag marked ✅',
    'goes missing, and when a Go command or flag is neither present, planned nor a documented difference.',
    '',
    `**${summary.commands_present} of ${summary.commands} Go commands present** (${summary.commands_planned} planned, ${summary.commands_difference} documented differences, ${summary.commands_missing} missing); `
      + `**${summary.flags_present} of ${summary.flags} Go flags present** (${summary.flags_planned} planned, ${summary.flags_difference} documented differences, ${summary.flags_missing} missing).`,
    '',
    'Legend: ✅ present · 🕓 planned (issue N) · ≈ documented difference · ❌ missing. `(global)` = Go\'s persistent root flag',
    '(`--repo-dir`), which polywave accepts on every command, before or after the command name.',
    '',
    '| Go command | polywave | Go flags | notes |',
    '|---|---|---|---|',
  ];
  for (const row of rows) {
    const status = row.status === 'planned' ? `${mark.planned} issue ${row.issue}` : mark[row.status];
    const source = row.source === 'source' ? ' ¹' : '';
    const notes = [row.plan, row.note, ...row.flags.filter((flag) => flag.note).map((flag) => `\`--${flag.name}\`: ${flag.note}`)].filter(Boolean).join(' ');
    lines.push(`| \`${row.command}\`${source} | ${status} | ${row.flags.map(flagCell).join(' · ') || '—'} | ${notes.replace(/\|/g, '\\|')} |`);
  }
  lines.push('', '¹ Not in the partial Go build; command and flags read from the Go source (`cmd/polywave-tools/*.go`).', '');
  return lines.join('\n');
}
