import { describe, expect, it } from 'vitest';
import { parseImpl } from '../parse-impl.js';
import { validateImpl } from '../validate-impl.js';

const manifest = (file: string) => `title: Config
feature_slug: config
verdict: SUITABLE
state: WAVE_PENDING
file_ownership:
  - {file: src/a.ts, agent: A, wave: 1, action: new}
  - {file: ${file}, agent: A, wave: 1, action: modify}
waves:
  - number: 1
    agents:
      - {id: A, task: Do it., files: [src/a.ts, ${file}]}
`;

describe('agent-owns-project-config (W002, outside attack X8 #4)', () => {
  it('warns, at the ownership row, when an agent owns polywave.config.json; not for other files', () => {
    const parsed = parseImpl(manifest('polywave.config.json'));
    const findings = validateImpl({ manifest: parsed.manifest!, locate: parsed.locate }).filter((finding) => finding.code === 'W002_AGENT_OWNS_PROJECT_CONFIG');
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({ severity: 'warning', field: 'file_ownership[1].file' });
    expect(findings[0]!.message).toContain('SANDBOX_CONFIG_CHANGED');
    const other = parseImpl(manifest('src/config.json'));
    expect(validateImpl({ manifest: other.manifest!, locate: other.locate }).filter((finding) => finding.code.startsWith('W002'))).toEqual([]);
  });

  it('says a nested polywave.config.json is ignored for the watched keys (X10 N6)', () => {
    const parsed = parseImpl(manifest('docs/polywave.config.json'));
    const findings = validateImpl({ manifest: parsed.manifest!, locate: parsed.locate }).filter((finding) => finding.code === 'W002_AGENT_OWNS_PROJECT_CONFIG');
    expect(findings).toHaveLength(1);
    expect(findings[0]!.message).toContain("a nested config's sandbox, setup, teardown, dispatch, repos and agent_clis settings are ignored");
  });
});

describe('agent-owns-program-manifest (V057, P4, outside attack X23-05)', () => {
  it('refuses, at the ownership row, an agent owning any file under docs/PROGRAM/ however spelled; not docs/PROGRAMS.md or src/program/', () => {
    for (const file of ['docs/PROGRAM/PROGRAM-shop.yaml', './docs/PROGRAM/PROGRAM-next.yaml', 'docs//PROGRAM/x.yaml', 'src/../docs/PROGRAM/y.yaml', 'docs/program/z.yaml', 'docs/PROGRAM-next.yaml']) {
      const parsed = parseImpl(manifest(file));
      const findings = validateImpl({ manifest: parsed.manifest!, locate: parsed.locate }).filter((finding) => finding.code === 'V057_AGENT_OWNS_PROGRAM_MANIFEST');
      expect(findings, file).toHaveLength(1);
      expect(findings[0]).toMatchObject({ severity: 'error', field: 'file_ownership[1].file' });
    }
    for (const file of ['docs/PROGRAMS.md', 'src/program/run.ts', 'docs/IMPL-notes.md']) {
      const parsed = parseImpl(manifest(file));
      expect(validateImpl({ manifest: parsed.manifest!, locate: parsed.locate }).filter((finding) => finding.code.startsWith('V057')), file).toEqual([]);
    }
  });
});

describe('agent-owns-queue-item (V058, outside attack X24-03)', () => {
  it('refuses an agent owning an item of the IMPL queue; docs/IMPL-queue.md is an ordinary file', () => {
    for (const file of ['docs/IMPL/queue/001-next.yaml', './docs/IMPL/queue/x.yaml', 'docs/impl/queue/y.yaml']) {
      const parsed = parseImpl(manifest(file));
      const findings = validateImpl({ manifest: parsed.manifest!, locate: parsed.locate }).filter((finding) => finding.code === 'V058_AGENT_OWNS_QUEUE_ITEM');
      expect(findings, file).toHaveLength(1);
      expect(findings[0]).toMatchObject({ severity: 'error', field: 'file_ownership[1].file' });
    }
    const other = parseImpl(manifest('docs/IMPL-queue.md'));
    expect(validateImpl({ manifest: other.manifest!, locate: other.locate }).filter((finding) => finding.code.startsWith('V058'))).toEqual([]);
  });
});

describe('agent-owns-impl-manifest (V059, outside attack X24-05)', () => {
  it('refuses an agent owning an IMPL manifest, however spelled; a report next to the plans stays ownable', () => {
    for (const file of ['docs/IMPL/IMPL-evil.yaml', './docs/IMPL/IMPL-evil.yml', 'docs/impl/impl-x.yaml', 'docs//IMPL/./complete/IMPL-old.yaml', 'src/../docs/IMPL/IMPL-y.yaml', 'docs/IMPL/complete/sec-review.yaml', 'docs/IMPL/complete/notes.md', 'docs/IMPL/deploy.yaml', 'docs/IMPL/in-progress/IMPL-checkout.yaml', 'docs/IMPL/pending/x.yml', 'docs/IMPL/blocked/IMPL-y.yaml', 'docs/IMPL/not-suitable/z.yaml']) {
      const parsed = parseImpl(manifest(file));
      const findings = validateImpl({ manifest: parsed.manifest!, locate: parsed.locate }).filter((finding) => finding.code === 'V059_AGENT_OWNS_IMPL_MANIFEST');
      expect(findings, file).toHaveLength(1);
      expect(findings[0]).toMatchObject({ severity: 'error', field: 'file_ownership[1].file' });
      expect(findings[0]!.message).toContain('written by the Scout and the orchestrator alone');
    }
    // the corpus's IMPL-final-cleanup has agent B write docs/IMPL/IMPL-final-cleanup-item3-report.md
    for (const file of ['docs/IMPL/IMPL-final-cleanup-item3-report.md', 'docs/IMPL-notes.yaml', 'docs/IMPL/completed.md', 'docs/IMPL/in-progress/notes.md']) {
      const parsed = parseImpl(manifest(file));
      expect(validateImpl({ manifest: parsed.manifest!, locate: parsed.locate }).filter((finding) => finding.code.startsWith('V059')), file).toEqual([]);
    }
  });
});

describe('agent-owns-gitattributes (W004, outside round X42: X42-07)', () => {
  it('warns, at the ownership row, when an agent owns a .gitattributes file in any directory; not for other files', () => {
    for (const file of ['.gitattributes', 'src/.gitattributes', './lib//.gitattributes']) {
      const parsed = parseImpl(manifest(file));
      const findings = validateImpl({ manifest: parsed.manifest!, locate: parsed.locate }).filter((finding) => finding.code === 'W004_AGENT_OWNS_GITATTRIBUTES');
      expect(findings, file).toHaveLength(1);
      expect(findings[0]).toMatchObject({ severity: 'warning', field: 'file_ownership[1].file' });
      expect(findings[0]!.message).toContain('E11_ATTRIBUTES_OUTSIDE_OWNERSHIP');
    }
    const other = parseImpl(manifest('src/gitattributes.md'));
    expect(validateImpl({ manifest: other.manifest!, locate: other.locate }).filter((finding) => finding.code.startsWith('W004'))).toEqual([]);
  });
});
