import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseImpl } from './parse-impl.js';
import { contextEntriesFromImpl, contextHeaderLine, contextProtocolVersion, mergeProjectContext, recordedFeatureSlugs, type ContextEntries } from './context-md.js';

const manifestYaml = `title: Feature X
feature_slug: feature-x
verdict: SUITABLE
interface_contracts:
    - name: Store
      description: persistence
      definition: |
        export interface Store {
          get(key: string): string;
        }
      location: src/store.ts
    - name: Store
      definition: duplicate
      location: src/store.ts
    - name: Clock
      definition: "export type Clock = () => Date;"
      location: src/clock.ts
waves:
    - number: 1
      agents:
        - id: A
          task: a
        - id: B
          task: b
    - number: 2
      agents:
        - id: C
          task: c
completion_reports:
    B:
        status: complete
        commit: abc
        interface_deviations:
            - description: Store.get returns undefined for a missing key
              downstream_action_required: true
              affects: [C]
    A:
        status: complete
        commit: def
state: WAVE_VERIFIED
`;

function entries(slug = 'feature-x', date = '2026-05-12'): ContextEntries {
  const parsed = parseImpl(manifestYaml.replace('feature-x', slug));
  expect(parsed.manifest).not.toBeNull();
  return contextEntriesFromImpl(parsed.manifest!, { slug, implDoc: `docs/IMPL/complete/IMPL-${slug}.yaml`, date });
}

describe('contextEntriesFromImpl (E18)', () => {
  it('records slug, IMPL doc, wave and agent counts, date; interfaces from contracts; decisions from deviations', () => {
    const result = entries();
    expect(result.feature).toEqual({ slug: 'feature-x', impl_doc: 'docs/IMPL/complete/IMPL-feature-x.yaml', waves: 2, agents: 3, date: '2026-05-12' });
    expect(result.interfaces).toEqual([
      { name: 'Store', path: 'src/store.ts', signature: 'export interface Store {\n  get(key: string): string;\n}', introduced_in: 'feature-x' },
      { name: 'Clock', path: 'src/clock.ts', signature: 'export type Clock = () => Date;', introduced_in: 'feature-x' },
    ]);
    expect(result.decisions).toEqual([
      { decision: 'Store.get returns undefined for a missing key', rationale: 'interface deviation reported by agent B; affects C', date: '2026-05-12', feature: 'feature-x' },
    ]);
  });
});

describe('mergeProjectContext', () => {
  it('creates the canonical document when there is no file', () => {
    const result = mergeProjectContext(undefined, entries(), { date: '2026-05-12' });
    expect(result.layout).toBe('created');
    expect(result.changed).toBe(true);
    expect(result.text.split('\n')[0]).toBe(contextHeaderLine);
    const data = parse(result.text);
    expect(data.created).toBe('2026-05-12');
    expect(data.protocol_version).toBe(contextProtocolVersion);
    expect(data.features_completed).toEqual([entries().feature]);
    expect(data.established_interfaces.map((item: { name: string }) => item.name)).toEqual(['Store', 'Clock']);
    expect(data.decisions).toHaveLength(1);
    expect(result.added).toContain('features_completed:feature-x');
    expect(Object.keys(data)).toEqual(['created', 'protocol_version', 'decisions', 'established_interfaces', 'features_completed']);
  });

  it('is idempotent: merging the same IMPL again changes nothing', () => {
    const first = mergeProjectContext(undefined, entries(), { date: '2026-05-12' });
    const second = mergeProjectContext(first.text, entries(), { date: '2026-05-12' });
    expect(second.changed).toBe(false);
    expect(second.text).toBe(first.text);
    expect(second.added).toEqual([]);
  });

  it('appends a second feature and keeps comments, order and hand-written sections', () => {
    const existing = [
      contextHeaderLine,
      'created: 2026-01-01',
      'protocol_version: "0.20.0"',
      '',
      '# Architecture notes written by a human',
      'architecture:',
      '  language: typescript',
      '  description: A CLI.',
      '',
      'conventions:',
      '  naming: kebab-case files # keep this',
      '',
      'features_completed:',
      '  - slug: earlier',
      '    impl_doc: docs/IMPL/complete/IMPL-earlier.yaml',
      '    waves: 1',
      '    agents: 2',
      '    date: 2026-02-02',
      '',
    ].join('\n');
    const result = mergeProjectContext(existing, entries(), { date: '2026-05-12' });
    expect(result.layout).toBe('yaml');
    expect(result.text.startsWith(existing.split('features_completed:')[0]!.replace('"0.20.0"', `"${contextProtocolVersion}"`))).toBe(true);
    expect(result.text).toContain('# Architecture notes written by a human');
    expect(result.text).toContain('naming: kebab-case files # keep this');
    const data = parse(result.text);
    expect(data.features_completed.map((item: { slug: string }) => item.slug)).toEqual(['earlier', 'feature-x']);
    expect(data.architecture).toEqual({ language: 'typescript', description: 'A CLI.' });
    expect(data.established_interfaces).toHaveLength(2);
    expect(data.protocol_version).toBe(contextProtocolVersion);
    // again: nothing changes
    expect(mergeProjectContext(result.text, entries(), { date: '2026-05-12' }).changed).toBe(false);
  });

  it('does not re-add an interface another feature established with the same signature', () => {
    const first = mergeProjectContext(undefined, entries('one'), { date: '2026-05-12' });
    const second = mergeProjectContext(first.text, entries('two'), { date: '2026-05-13' });
    const data = parse(second.text);
    expect(data.features_completed.map((item: { slug: string }) => item.slug)).toEqual(['one', 'two']);
    expect(data.established_interfaces.map((item: { introduced_in: string }) => item.introduced_in)).toEqual(['one', 'one']);
    expect(data.decisions.map((item: { feature: string }) => item.feature)).toEqual(['one', 'two']);
  });

  it('keeps a markdown CONTEXT.md byte for byte and manages one fenced block', () => {
    const existing = '# Project Context\n\n## Features Completed\n- **old-feature**: completed 2026-01-01, 1 waves, 1 agents\n  - IMPL doc: docs/IMPL/IMPL-old-feature.yaml\n\nSome prose the team wrote.\n';
    const first = mergeProjectContext(existing, entries(), { date: '2026-05-12' });
    expect(first.layout).toBe('embedded');
    expect(first.text.startsWith(existing)).toBe(true);
    expect(first.text).toContain('```yaml polywave-context\n');
    expect(recordedFeatureSlugs(first.text)).toEqual(['feature-x']);
    const second = mergeProjectContext(first.text, entries(), { date: '2026-05-12' });
    expect(second.changed).toBe(false);
    const third = mergeProjectContext(first.text, entries('next'), { date: '2026-05-14' });
    expect(third.text.startsWith(existing)).toBe(true);
    expect(third.text.match(/```yaml polywave-context/g)).toHaveLength(1);
    expect(recordedFeatureSlugs(third.text)).toEqual(['feature-x', 'next']);
    expect(third.text.endsWith('```\n')).toBe(true);
  });

  it('writes a fresh document under a comment-only file without dropping the comments', () => {
    const result = mergeProjectContext('# notes\n', entries(), { date: '2026-05-12' });
    expect(result.text.startsWith('# notes\ncreated: 2026-05-12\n')).toBe(true);
    expect(recordedFeatureSlugs(result.text)).toEqual(['feature-x']);
  });

  it('refuses (N009) a section that is not a list instead of guessing', () => {
    expect(() => mergeProjectContext('features_completed: none\n', entries(), { date: '2026-05-12' })).toThrow(expect.objectContaining({ code: 'N009_CONTEXT_ERROR' }));
  });

  it('fills an empty section (`features_completed:` with no items)', () => {
    const result = mergeProjectContext('created: 2026-01-01\nfeatures_completed:\n', entries(), { date: '2026-05-12' });
    expect(parse(result.text).features_completed).toEqual([entries().feature]);
  });
});
