/**
 * The demo project: "textkit", a tiny dependency-free JavaScript library tested with `node --test`,
 * and an IMPL manifest that builds it in 2 waves × 3 agents. The agents are scripted (the script
 * backend): each writes its module and its test, runs the test, commits and reports — through
 * the same jailed tools, locked report writer, worktrees, gates and merges as a real model.
 */

/** Files of the demo repository's first commit. */
export const demoBaseFiles: Readonly<Record<string, string>> = {
  'package.json': `${JSON.stringify({ name: 'textkit', version: '0.1.0', private: true, type: 'module', scripts: { test: 'node --test' } }, null, 2)}\n`,
  'README.md': '# textkit\n\nSmall text helpers, built by six scripted agents in two waves (`polywave demo`).\n',
  'src/index.js': '// Public entry point; wave 2 re-exports every helper here.\nexport {};\n',
  '.gitignore': 'node_modules/\n',
};

interface DemoAgent {
  id: string;
  wave: number;
  task: string;
  files: Record<string, string>;
  /** Files that already exist (action: modify). */
  modifies?: string[];
}

const agents: DemoAgent[] = [
  {
    id: 'A',
    wave: 1,
    task: 'Implement slugify(text): lower-case, ASCII letters and digits joined by single dashes, no leading/trailing dash.',
    files: {
      'src/slugify.js': "/** Lower-case, dash-separated ASCII slug. */\nexport function slugify(text) {\n  return text\n    .normalize('NFKD')\n    .replace(/[\\u0300-\\u036f]/g, '')\n    .toLowerCase()\n    .replace(/[^a-z0-9]+/g, '-')\n    .replace(/^-+|-+$/g, '');\n}\n",
      'test/slugify.test.js': "import assert from 'node:assert/strict';\nimport { test } from 'node:test';\nimport { slugify } from '../src/slugify.js';\n\ntest('slugify', () => {\n  assert.equal(slugify('  Hello, Wörld!  '), 'hello-world');\n  assert.equal(slugify('Polywave: waves of agents'), 'polywave-waves-of-agents');\n});\n",
    },
  },
  {
    id: 'B',
    wave: 1,
    task: 'Implement truncate(text, max): at most max characters, cut at a word boundary when possible, ending with an ellipsis when cut.',
    files: {
      'src/truncate.js': "/** At most `max` characters; cut at a word boundary when possible, with an ellipsis. */\nexport function truncate(text, max) {\n  if (text.length <= max) return text;\n  const room = Math.max(0, max - 1);\n  const cut = text.slice(0, room);\n  const space = cut.lastIndexOf(' ');\n  return `${(space > room / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;\n}\n",
      'test/truncate.test.js': "import assert from 'node:assert/strict';\nimport { test } from 'node:test';\nimport { truncate } from '../src/truncate.js';\n\ntest('truncate', () => {\n  assert.equal(truncate('short', 10), 'short');\n  assert.equal(truncate('the quick brown fox', 12), 'the quick…');\n  assert.ok(truncate('abcdefghijklmnop', 8).length <= 8);\n});\n",
    },
  },
  {
    id: 'C',
    wave: 1,
    task: 'Implement wordCount(text): the number of words (runs of letters, digits or apostrophes).',
    files: {
      'src/word-count.js': "/** Number of words: runs of letters, digits or apostrophes. */\nexport function wordCount(text) {\n  return (text.match(/[\\p{L}\\p{N}']+/gu) ?? []).length;\n}\n",
      'test/word-count.test.js': "import assert from 'node:assert/strict';\nimport { test } from 'node:test';\nimport { wordCount } from '../src/word-count.js';\n\ntest('wordCount', () => {\n  assert.equal(wordCount(''), 0);\n  assert.equal(wordCount(\"It's a small world, after all.\"), 6);\n});\n",
    },
  },
  {
    id: 'D',
    wave: 2,
    task: 'Implement titleCase(text): capitalise each word except short joining words (a, an, the, of, and, or, in, on) unless first.',
    files: {
      'src/title-case.js': "const small = new Set(['a', 'an', 'the', 'of', 'and', 'or', 'in', 'on']);\n\n/** Capitalises each word except short joining words (unless first). */\nexport function titleCase(text) {\n  return text\n    .toLowerCase()\n    .split(/(\\s+)/)\n    .map((word, index) => (index > 0 && small.has(word) ? word : word.charAt(0).toUpperCase() + word.slice(1)))\n    .join('');\n}\n",
      'test/title-case.test.js': "import assert from 'node:assert/strict';\nimport { test } from 'node:test';\nimport { titleCase } from '../src/title-case.js';\n\ntest('titleCase', () => {\n  assert.equal(titleCase('the lord of the rings'), 'The Lord of the Rings');\n});\n",
    },
  },
  {
    id: 'E',
    wave: 2,
    task: 'Implement summarize(text, max): "<N> words: <truncated text>" using wordCount and truncate from wave 1.',
    files: {
      'src/summarize.js': "import { truncate } from './truncate.js';\nimport { wordCount } from './word-count.js';\n\n/** \"<N> words: <text cut to max>\". */\nexport function summarize(text, max = 40) {\n  return `${wordCount(text)} words: ${truncate(text, max)}`;\n}\n",
      'test/summarize.test.js': "import assert from 'node:assert/strict';\nimport { test } from 'node:test';\nimport { summarize } from '../src/summarize.js';\n\ntest('summarize', () => {\n  assert.equal(summarize('one two three', 40), '3 words: one two three');\n  assert.match(summarize('a long sentence that will be cut somewhere', 20), /^8 words: .*…$/);\n});\n",
    },
  },
  {
    id: 'F',
    wave: 2,
    task: 'Make src/index.js the public entry point: re-export the wave-1 helpers (slugify, truncate, wordCount) and test the public API.',
    modifies: ['src/index.js'],
    files: {
      'src/index.js': "// Public entry point (wave 1 helpers; titleCase and summarize are imported from their modules).\nexport { slugify } from './slugify.js';\nexport { truncate } from './truncate.js';\nexport { wordCount } from './word-count.js';\n",
      'test/index.test.js': "import assert from 'node:assert/strict';\nimport { test } from 'node:test';\nimport * as textkit from '../src/index.js';\n\ntest('public API', () => {\n  assert.deepEqual(Object.keys(textkit).sort(), ['slugify', 'truncate', 'wordCount']);\n  assert.equal(textkit.slugify('Hello World'), 'hello-world');\n});\n",
    },
  },
];

const contracts = [
  ['slugify', 'export function slugify(text: string): string', 'src/slugify.js'],
  ['truncate', 'export function truncate(text: string, max: number): string', 'src/truncate.js'],
  ['wordCount', 'export function wordCount(text: string): number', 'src/word-count.js'],
  ['titleCase', 'export function titleCase(text: string): string', 'src/title-case.js'],
  ['summarize', 'export function summarize(text: string, max?: number): string', 'src/summarize.js'],
] as const;

const quote = (text: string) => JSON.stringify(text);

/** The demo's IMPL manifest (state REVIEWED: planned and approved, ready for wave 1). */
export function demoManifest(): string {
  const rows = agents.flatMap((agent) =>
    Object.keys(agent.files).flatMap((file) => [`    - file: ${file}`, `      agent: ${agent.id}`, `      wave: ${agent.wave}`, `      action: ${agent.modifies?.includes(file) ? 'modify' : 'new'}`, ...(agent.wave === 2 && agent.id === 'E' ? ['      depends_on: [B, C]'] : [])]),
  );
  const waves = [1, 2].flatMap((wave) => [
    `    - number: ${wave}`,
    '      agents:',
    ...agents.filter((agent) => agent.wave === wave).flatMap((agent) => [`        - id: ${agent.id}`, `          task: ${quote(agent.task)}`, '          files:', ...Object.keys(agent.files).map((file) => `            - ${file}`), ...(agent.id === 'E' ? ['          dependencies: [B, C]'] : [])]),
  ]);
  return [
    '# IMPL written by `polywave demo`: six scripted agents build the textkit library.',
    'title: textkit text helpers',
    'feature_slug: textkit',
    'verdict: SUITABLE',
    'suitability_assessment: Five independent helpers plus a public entry point; disjoint files, one module and one test per agent.',
    'state: REVIEWED',
    'test_command: node --test',
    'file_ownership:',
    ...rows,
    'interface_contracts:',
    ...contracts.flatMap(([name, definition, location]) => [`    - name: ${name}`, `      description: ${quote(`${name} helper`)}`, `      definition: ${quote(definition)}`, `      location: ${location}`]),
    'waves:',
    ...waves,
    ...nodeTestGateLines,
    '',
  ].join('\n');
}

/** The demos' `quality_gates`: the whole `node --test` suite, required. */
export const nodeTestGateLines: readonly string[] = ['quality_gates:', '    level: standard', '    gates:', '        - type: test', '          command: node --test', '          required: true', '          description: the whole test suite'];

/** One scripted demo agent: say what it does, (read its brief,) pause, write its files, run its test, commit, report. */
export function demoAgentSteps(agent: { id: string; task: string; files: Readonly<Record<string, string>> }, options: { delayMs: number; readBrief?: boolean }): string[] {
  const test = Object.keys(agent.files).find((file) => file.startsWith('test/'))!;
  return [
    `  ${agent.id}:`,
    '    steps:',
    `      - text: ${quote(`Agent ${agent.id}: ${agent.task}`)}`,
    ...(options.readBrief ? ['      - read: .polywave-agent-brief.md'] : []),
    `      - sleep_ms: ${options.delayMs}`,
    ...Object.entries(agent.files).map(([file, content]) => `      - write: { path: ${file}, content: ${quote(content)} }`),
    `      - bash: ${quote(`node --test ${test}`)}`,
    `      - commit: ${quote(`feat(${agent.id}): ${Object.keys(agent.files).join(', ')}`)}`,
    `      - report: { status: complete, verification: PASS, notes: ${quote(`${test} passes`)} }`,
  ];
}

/** The script the demo agents replay (script backend format v1). */
export function demoScript(options: { stepDelayMs?: number } = {}): string {
  const delay = options.stepDelayMs ?? 150;
  const lines = ['version: 1', 'agents:'];
  for (const agent of agents) lines.push(...demoAgentSteps(agent, { delayMs: delay, readBrief: true }));
  lines.push('');
  return lines.join('\n');
}
