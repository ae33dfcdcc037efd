/**
 * The PROGRAM demo project ("shop", `polywave demo --program`, the tier-loop tests and
 * bench:program): a 2-tier PROGRAM built by scripted Scouts and wave agents.
 * - tier 1: `pricing` (1 wave, 1 agent) and `catalog` (2 waves: data, then the lookup that uses
 *   it) — scouted in parallel, run concurrently on their IMPL branches;
 * - tier 2: `checkout`, which consumes `priceWithTax`, the program contract frozen at tier 1.
 * The tier gate is the whole test suite (`node --test`).
 */

import { demoAgentSteps, nodeTestGateLines } from './project.js';

const quote = (text: string) => JSON.stringify(text);

/** Files of the repository's first commit (the PROGRAM manifest included, approved: REVIEWED). */
export function programDemoFiles(options: { state?: string } = {}): Record<string, string> {
  return {
    'package.json': `${JSON.stringify({ name: 'shop', version: '0.1.0', private: true, type: 'module', scripts: { test: 'node --test' } }, null, 2)}\n`,
    'README.md': '# shop\n\nA tiny shop, built by scripted agents as a 2-tier PROGRAM (`polywave demo --program`).\n',
    '.gitignore': 'node_modules/\n',
    'docs/PROGRAM/PROGRAM-shop.yaml': programDemoManifest(options.state ?? 'REVIEWED'),
  };
}

/** The PROGRAM manifest. */
export function programDemoManifest(state = 'REVIEWED'): string {
  return [
    '# PROGRAM written by `polywave demo --program`.',
    'title: Shop',
    'program_slug: shop',
    `state: ${state}`,
    'created: 2026-12-01',
    'updated: 2026-12-01',
    'impls:',
    '    - slug: pricing',
    '      title: Prices with tax',
    '      tier: 1',
    '      estimated_agents: 1',
    '      estimated_waves: 1',
    '      key_outputs: [src/pricing.js]',
    '      status: pending',
    '    - slug: catalog',
    '      title: Product catalog',
    '      tier: 1',
    '      estimated_agents: 2',
    '      estimated_waves: 2',
    '      key_outputs: [src/catalog-data.js, src/catalog.js]',
    '      status: pending',
    '    - slug: checkout',
    '      title: Checkout totals',
    '      tier: 2',
    '      depends_on: [pricing, catalog]',
    '      estimated_agents: 1',
    '      estimated_waves: 1',
    '      key_outputs: [src/checkout.js]',
    '      status: pending',
    'tiers:',
    '    - number: 1',
    '      impls: [pricing, catalog]',
    '      description: independent building blocks',
    '    - number: 2',
    '      impls: [checkout]',
    '      description: the checkout, on top of tier 1',
    'program_contracts:',
    '    - name: priceWithTax',
    '      description: the gross price of a net price at a tax rate, rounded to cents',
    '      definition: "export function priceWithTax(net: number, rate: number): number"',
    '      location: src/pricing.js',
    '      consumers:',
    '          - impl: checkout',
    '            usage: line totals',
    '      freeze_at: tier-1',
    'tier_gates:',
    '    - type: test',
    '      command: node --test',
    '      required: true',
    '      description: the whole test suite',
    'completion:',
    '    tiers_complete: 0',
    '    tiers_total: 2',
    '    impls_complete: 0',
    '    impls_total: 3',
    '    total_agents: 4',
    '    total_waves: 4',
    '',
  ].join('\n');
}

interface DemoAgent {
  id: string;
  wave: number;
  task: string;
  files: Record<string, string>;
  dependencies?: string[];
}

interface DemoImpl {
  slug: string;
  title: string;
  agents: DemoAgent[];
}

const impls: DemoImpl[] = [
  {
    slug: 'pricing',
    title: 'Prices with tax',
    agents: [
      {
        id: 'P',
        wave: 1,
        task: 'Implement priceWithTax(net, rate) (the program contract): net × (1 + rate), rounded to cents.',
        files: {
          'src/pricing.js': '/** The gross price of `net` at tax `rate`, rounded to cents (program contract priceWithTax). */\nexport function priceWithTax(net, rate) {\n  return Math.round(net * (1 + rate) * 100) / 100;\n}\n',
          'test/pricing.test.js': "import assert from 'node:assert/strict';\nimport { test } from 'node:test';\nimport { priceWithTax } from '../src/pricing.js';\n\ntest('priceWithTax', () => {\n  assert.equal(priceWithTax(10, 0.2), 12);\n  assert.equal(priceWithTax(9.99, 0.07), 10.69);\n});\n",
        },
      },
    ],
  },
  {
    slug: 'catalog',
    title: 'Product catalog',
    agents: [
      {
        id: 'C',
        wave: 1,
        task: 'Write the catalog data: items with sku, name and net price.',
        files: {
          'src/catalog-data.js': "/** The shop's items. */\nexport const items = [\n  { sku: 'pen', name: 'Pen', net: 1.5 },\n  { sku: 'book', name: 'Book', net: 12 },\n];\n",
          'test/catalog-data.test.js': "import assert from 'node:assert/strict';\nimport { test } from 'node:test';\nimport { items } from '../src/catalog-data.js';\n\ntest('items', () => {\n  assert.ok(items.length >= 2);\n});\n",
        },
      },
      {
        id: 'D',
        wave: 2,
        task: 'Implement findItem(sku) over the catalog data of wave 1.',
        dependencies: ['C'],
        files: {
          'src/catalog.js': "import { items } from './catalog-data.js';\n\n/** The item with this sku, or undefined. */\nexport function findItem(sku) {\n  return items.find((item) => item.sku === sku);\n}\n",
          'test/catalog.test.js': "import assert from 'node:assert/strict';\nimport { test } from 'node:test';\nimport { findItem } from '../src/catalog.js';\n\ntest('findItem', () => {\n  assert.equal(findItem('book').net, 12);\n  assert.equal(findItem('none'), undefined);\n});\n",
        },
      },
    ],
  },
  {
    slug: 'checkout',
    title: 'Checkout totals',
    agents: [
      {
        id: 'K',
        wave: 1,
        task: 'Implement total(lines, rate): the sum of priceWithTax(item.net × quantity) over findItem(sku) for each line.',
        files: {
          'src/checkout.js': "import { findItem } from './catalog.js';\nimport { priceWithTax } from './pricing.js';\n\n/** The gross total of `lines` ({sku, quantity}) at tax `rate`. */\nexport function total(lines, rate) {\n  return Math.round(lines.reduce((sum, line) => sum + priceWithTax(findItem(line.sku).net * line.quantity, rate), 0) * 100) / 100;\n}\n",
          'test/checkout.test.js': "import assert from 'node:assert/strict';\nimport { test } from 'node:test';\nimport { total } from '../src/checkout.js';\n\ntest('total', () => {\n  assert.equal(total([{ sku: 'pen', quantity: 2 }, { sku: 'book', quantity: 1 }], 0.2), 18);\n});\n",
        },
      },
    ],
  },
];

/** The IMPL manifest a scripted Scout writes for `slug`. */
export function programDemoImpl(slug: string): string {
  const impl = impls.find((candidate) => candidate.slug === slug);
  if (!impl) throw new Error(`no demo IMPL ${slug}`);
  const waves = [...new Set(impl.agents.map((agent) => agent.wave))].sort((left, right) => left - right);
  return [
    `# IMPL written by the scripted Scout of the PROGRAM demo.`,
    `title: ${quote(impl.title)}`,
    `feature_slug: ${slug}`,
    'verdict: SUITABLE',
    `suitability_assessment: ${quote(`${impl.agents.length} agent(s) with disjoint files.`)}`,
    'state: SCOUT_PENDING',
    'test_command: node --test',
    'file_ownership:',
    ...impl.agents.flatMap((agent) =>
      Object.keys(agent.files).flatMap((file) => [`    - file: ${file}`, `      agent: ${agent.id}`, `      wave: ${agent.wave}`, '      action: new', ...(agent.dependencies ? [`      depends_on: [${agent.dependencies.join(', ')}]`] : [])]),
    ),
    'interface_contracts: []',
    'waves:',
    ...waves.flatMap((wave) => [
      `    - number: ${wave}`,
      '      agents:',
      ...impl.agents
        .filter((agent) => agent.wave === wave)
        .flatMap((agent) => [`        - id: ${agent.id}`, `          task: ${quote(agent.task)}`, '          files:', ...Object.keys(agent.files).map((file) => `            - ${file}`), ...(agent.dependencies ? [`          dependencies: [${agent.dependencies.join(', ')}]`] : [])]),
    ]),
    ...nodeTestGateLines,
    '',
  ].join('\n');
}

/** The script every agent of the demo replays: `scout@<slug>` writes the IMPL, agents build it. */
export function programDemoScript(options: { stepDelayMs?: number } = {}): string {
  const delay = options.stepDelayMs ?? 100;
  const lines = ['version: 1', 'agents:'];
  for (const impl of impls) {
    lines.push(`  scout@${impl.slug}:`, '    steps:', `      - text: ${quote(`Scout of ${impl.slug}`)}`, `      - write: { path: docs/IMPL/IMPL-${impl.slug}.yaml, content: ${quote(programDemoImpl(impl.slug))} }`, `      - text: ${quote(`IMPL-${impl.slug} written`)}`);
    for (const agent of impl.agents) lines.push(...demoAgentSteps(agent, { delayMs: delay }));
  }
  lines.push('');
  return lines.join('\n');
}
