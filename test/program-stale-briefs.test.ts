/**
 * E28A stale-brief check (tier ≥ 2): an imported IMPL whose agent task names a file, or a symbol
 * exported from a file, that the previous tier's IMPL-branch merges changed is reported; one that
 * names neither is not. Real repository, real --no-ff merges named as finalize-tier names them.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { staleBriefs } from '../src/orchestrator/program-execute.js';
import { parseImpl } from '../src/protocol/parse-impl.js';
import type { ImplManifest } from '../src/protocol/schema/impl-schema.js';
import { createTestRepo, type TestRepo } from './support/git-repo.js';

function manifest(tasks: Record<string, string>): ImplManifest {
  const ids = Object.keys(tasks);
  const text = [
    'title: t',
    'feature_slug: t',
    'verdict: SUITABLE',
    'state: REVIEWED',
    'file_ownership:',
    ...ids.flatMap((id) => [`    - file: src/${id.toLowerCase()}.js`, `      agent: ${id}`, '      wave: 1', '      action: new']),
    'interface_contracts: []',
    'waves:',
    '    - number: 1',
    '      agents:',
    ...ids.flatMap((id) => [`        - id: ${id}`, `          task: ${JSON.stringify(tasks[id])}`, '          files:', `            - src/${id.toLowerCase()}.js`]),
    '',
  ].join('\n');
  return parseImpl(text).manifest!;
}

let repo: TestRepo | undefined;
afterEach(() => repo?.cleanup());

describe('E28A stale briefs', () => {
  it('reports tasks naming a file or an exported symbol changed by the previous tier, and nothing else', async () => {
    repo = await createTestRepo({ files: { 'src/old.js': 'export const untouched = 1;\n' } });
    await repo.run(['checkout', '-q', '-b', 'polywave/program/p/tier1-impl-pricing']);
    repo.write('src/pricing.js', 'export function priceWithTax(net, rate) {\n  return net * (1 + rate);\n}\nexport const currency = "EUR";\n');
    await repo.commitAll('feat: pricing');
    await repo.run(['checkout', '-q', 'main']);
    await repo.run(['merge', '--no-ff', '-q', '-m', 'Merge program tier 1 impl pricing: polywave/program/p/tier1-impl-pricing', 'polywave/program/p/tier1-impl-pricing']);
    const found = await staleBriefs(
      repo.dir,
      1,
      [
        { slug: 'checkout', manifest: manifest({ K: 'Sum priceWithTax over the lines.', L: 'Read src/pricing.js and format the currency.', M: 'Use untouched from src/old.js.' }) },
      ],
      repo.env,
    );
    expect(found).toEqual([
      { impl: 'checkout', agent: 'K', references: ['priceWithTax'] },
      { impl: 'checkout', agent: 'L', references: ['currency', 'src/pricing.js'] },
    ]);
    // Another tier's merges are not this tier's.
    expect(await staleBriefs(repo.dir, 2, [{ slug: 'checkout', manifest: manifest({ K: 'Sum priceWithTax.' }) }], repo.env)).toEqual([]);
  });
});
