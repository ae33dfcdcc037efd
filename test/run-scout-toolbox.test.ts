import { describe, expect, it } from 'vitest';
import { createAiSdkBackend } from '../src/agents/backends/ai-sdk.js';
import { runScout } from '../src/orchestrator/run-scout.js';
import { createTestRepo, type TestRepo } from './support/git-repo.js';
import { callTool, say, scripted, userText } from './support/scripted-model.js';

// Issue 15, item 3 and "What it must show" 3: run-scout runs the Scout's toolbox itself — H1a and
// H3 results go into the first prompt; after the Scout writes the IMPL, E45 (shared type not
// scaffolded), E46 (a test caller nobody owns) and E35 (an undeclared cross-agent call) come back
// in the E16 correction prompt, and a Scout that fixes them gets a REVIEWED plan. Real git
// repositories, the real ai-sdk backend with the AI SDK mock model.

const fixedNow = new Date('2026-05-12T10:00:00.000Z');

function plan(slug: string, body: { ownership: string; contracts?: string; waves: string; scaffolds?: string; wiring?: string }): string {
  return [
    `title: ${slug}`,
    `feature_slug: ${slug}`,
    'verdict: SUITABLE',
    'suitability_assessment: |',
    '    SUITABLE. Disjoint files.',
    'test_command: node --test',
    'lint_command: "true"',
    'file_ownership:',
    body.ownership,
    ...(body.contracts ? ['interface_contracts:', body.contracts] : []),
    ...(body.scaffolds ? ['scaffolds:', body.scaffolds] : []),
    ...(body.wiring ? ['wiring:', body.wiring] : []),
    'waves:',
    body.waves,
    'state: SCOUT_PENDING',
    '',
  ].join('\n');
}

async function repository(files: Record<string, string>): Promise<TestRepo> {
  return createTestRepo({ files: { 'package.json': '{"name":"shop","type":"module","scripts":{"test":"node --test"}}\n', ...files } });
}

describe('run-scout runs the Scout toolbox (issue 15)', () => {
  it('E45: a plan that leaves a shared type unscaffolded gets the finding (and the advisory E35 wiring note) in its correction prompt; the Scout adds the scaffold → REVIEWED', async () => {
    const repo = await repository({ 'src/index.js': 'export {};\n' });
    const slug = 'invoices';
    const ownership = ['    - file: src/invoice.ts', '      agent: A', '      wave: 1', '      action: new', '    - file: src/billing.ts', '      agent: B', '      wave: 1', '      action: new'].join('\n');
    const contracts = [
      '    - name: Invoice',
      '      description: An invoice.',
      '      definition: "export interface Invoice { id: string; total: number }"',
      '      location: src/invoice.ts',
      '    - name: parseInvoice',
      '      description: Parses an invoice.',
      '      definition: "export function parseInvoice(text: string): Invoice"',
      '      location: src/invoice.ts',
    ].join('\n');
    const waves = [
      '    - number: 1',
      '      agents:',
      '        - id: A',
      '          task: Define the Invoice interface and a parser in src/invoice.ts.',
      '          files:',
      '            - src/invoice.ts',
      '        - id: B',
      '          task: Bill customers in src/billing.ts, producing an Invoice for each order; calls `parseInvoice()` on stored invoices.',
      '          files:',
      '            - src/billing.ts',
    ].join('\n');
    const withoutScaffold = plan(slug, { ownership, contracts, waves });
    const scaffolds = ['    - file_path: src/types/invoice.ts', '      contents: "export interface Invoice { id: string; total: number }"', '      import_path: ./types/invoice.js', '      status: pending'].join('\n');
    const withScaffold = plan(slug, { ownership, contracts, waves, scaffolds });
    const implRelative = `docs/IMPL/IMPL-${slug}.yaml`;
    const model = scripted([
      callTool('write_file', { path: implRelative, content: withoutScaffold }),
      say('Written.'),
      (call) => {
        const text = userText(call);
        expect(text).toContain('Validation Errors: correction attempt 2 of 3');
        expect(text).toContain('[E45_SHARED_TYPE_NOT_SCAFFOLDED] field `scaffolds`');
        expect(text).toMatch(/E45: type Invoice is used by agents A, B of one wave but is not scaffolded/);
        expect(text).toMatch(/— fix: add a scaffolds entry \(file_path e\.g\. src\/types\/invoice\.ts/);
        // E35 is advisory: it comes with the correction, but alone it would not have forced one.
        expect(text).toContain("[E35_WIRING_UNDECLARED] (warning) field `wiring`:");
        expect(text).toMatch(/agent B's task calls parseInvoice \(defined in src\/invoice\.ts/);
        return callTool('write_file', { path: implRelative, content: withScaffold });
      },
      say('Scaffolded.'),
    ]);
    const result = await runScout({ feature: 'Invoices', slug, repoDir: repo.dir, model: 'anthropic:mock-model', env: repo.env, now: () => fixedNow, backend: createAiSdkBackend({ languageModel: () => model }), critic: false });
    expect(result.attempts.map((attempt) => [attempt.attempt, attempt.outcome, attempt.errors.map((error) => error.code)])).toEqual([
      [1, 'invalid', ['E45_SHARED_TYPE_NOT_SCAFFOLDED']],
      [2, 'valid', []],
    ]);
    expect(result.attempts[1]!.warning_count).toBeGreaterThanOrEqual(1);
    expect(result).toMatchObject({ state: 'REVIEWED', success: true, committed: true });
    expect(model.doGenerateCalls).toHaveLength(4);
  });

  it('H1a and H3 results are in the first prompt; E46: the unowned test caller of a changed function comes back, and the plan that gives it to the agent passes', async () => {
    const repo = await repository({
      'src/pricing.js': 'export function price(amount) {\n  return amount;\n}\n',
      'src/cart.js': "import { price } from './pricing.js';\nexport const total = (items) => items.reduce((sum, item) => sum + price(item), 0);\n",
      'test/pricing.test.js': "import test from 'node:test';\nimport assert from 'node:assert';\nimport { price } from '../src/pricing.js';\ntest('price', () => assert.equal(price(2), 2));\n",
    });
    const slug = 'tax';
    const feature = ['# Tax', '', '## R1: Prices include tax', 'Location: src/pricing.js', '', '## R2: A tax report', 'Location: src/tax-report.js', ''].join('\n');
    const task = 'Change signature of `price` to price(amount, rate) in src/pricing.js and apply the rate.';
    const ownershipWithout = ['    - file: src/pricing.js', '      agent: A', '      wave: 1', '      action: modify', '    - file: src/tax-report.js', '      agent: B', '      wave: 1', '      action: new'].join('\n');
    const ownershipWith = `${ownershipWithout}\n    - file: test/pricing.test.js\n      agent: A\n      wave: 1\n      action: modify\n    - file: src/cart.js\n      agent: A\n      wave: 1\n      action: modify`;
    const waves = (extra: string) =>
      [
        '    - number: 1',
        '      agents:',
        '        - id: A',
        `          task: ${task}${extra}`,
        '          files:',
        '            - src/pricing.js',
        ...(extra ? ['            - test/pricing.test.js', '            - src/cart.js'] : []),
        '        - id: B',
        '          task: Write the tax report in src/tax-report.js.',
        '          files:',
        '            - src/tax-report.js',
      ].join('\n');
    const first = plan(slug, { ownership: ownershipWithout, waves: waves('') });
    const second = plan(slug, { ownership: ownershipWith, waves: waves(' Update test/pricing.test.js and src/cart.js to the new signature.') });
    const implRelative = `docs/IMPL/IMPL-${slug}.yaml`;
    const model = scripted([
      (call) => {
        const text = userText(call);
        // H1a: R1's file exists (PARTIAL or DONE by its evidence), R2's does not (TODO).
        expect(text).toContain('### Requirement status (H1a analyze-suitability)');
        expect(text).toMatch(/2 requirement\(s\): \d DONE, \d PARTIAL, 1 TODO/);
        expect(text).toMatch(/R2: TODO \(src\/tax-report\.js\)/);
        // H3: the named file, who depends on it (the cart and the test), as cascade candidates.
        expect(text).toContain('### Dependency analysis (H3 analyze-deps)');
        expect(text).toMatch(/src\/pricing\.js {2}\(wave candidate 1\)/);
        expect(text).toMatch(/depended on by: src\/cart\.js, test\/pricing\.test\.js/);
        return callTool('write_file', { path: implRelative, content: first });
      },
      say('Written.'),
      (call) => {
        const text = userText(call);
        expect(text).toContain('[E46_TEST_CASCADE_ORPHAN] field `file_ownership`');
        expect(text).toMatch(/E46: test\/pricing\.test\.js:\d+ calls price, which agent\(s\) A change, but no agent owns test\/pricing\.test\.js/);
        return callTool('write_file', { path: implRelative, content: second });
      },
      say('Fixed.'),
    ]);
    const result = await runScout({ feature, slug, repoDir: repo.dir, model: 'anthropic:mock-model', env: repo.env, now: () => fixedNow, backend: createAiSdkBackend({ languageModel: () => model }), critic: false });
    expect(result.attempts.map((attempt) => [attempt.attempt, attempt.outcome, attempt.errors.map((error) => error.code)])).toEqual([
      [1, 'invalid', ['E46_TEST_CASCADE_ORPHAN']],
      [2, 'valid', []],
    ]);
    expect(result).toMatchObject({ state: 'REVIEWED', success: true });
  });

  it('--no-scout-tools (scoutTools: false): no toolbox results in the prompt and no toolbox findings', async () => {
    const repo = await repository({ 'src/pricing.js': 'export function price(amount) {\n  return amount;\n}\n', 'test/pricing.test.js': "import { price } from '../src/pricing.js';\nprice(1);\n" });
    const slug = 'tax-plain';
    const content = plan(slug, {
      ownership: ['    - file: src/pricing.js', '      agent: A', '      wave: 1', '      action: modify', '    - file: src/report.js', '      agent: B', '      wave: 1', '      action: new'].join('\n'),
      waves: ['    - number: 1', '      agents:', '        - id: A', '          task: Change signature of `price` in src/pricing.js.', '          files:', '            - src/pricing.js', '        - id: B', '          task: Write src/report.js.', '          files:', '            - src/report.js'].join('\n'),
    });
    const model = scripted([
      (call) => {
        expect(userText(call)).not.toContain('H3 analyze-deps');
        return callTool('write_file', { path: `docs/IMPL/IMPL-${slug}.yaml`, content });
      },
      say('Written.'),
    ]);
    const result = await runScout({ feature: 'Tax in `src/pricing.js`', slug, repoDir: repo.dir, model: 'anthropic:mock-model', env: repo.env, now: () => fixedNow, backend: createAiSdkBackend({ languageModel: () => model }), critic: false, scoutTools: false });
    expect(result.attempts.map((attempt) => attempt.outcome)).toEqual(['valid']);
    expect(result.state).toBe('REVIEWED');
  });
});
