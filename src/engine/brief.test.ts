import { describe, expect, it } from 'vitest';
import { parseImpl } from '../protocol/parse-impl.js';
import { ownedFiles, renderAgentBrief, taskSummary, worktreeEnvText } from './brief.js';

const manifest = parseImpl(`title: Brief test
feature_slug: brief-test
verdict: SUITABLE
file_ownership:
    - file: src/a.ts
      agent: A
      wave: 1
      action: modify
    - file: ./src/a-extra.ts
      agent: A
      wave: 1
      action: new
      repo: web
    - file: src/b.ts
      agent: B
      wave: 1
      depends_on: [src/a.ts]
    - file: "docs/pipe|name.md"
      agent: B
      wave: 1
interface_contracts:
    - name: Parser
      description: |
        Parses things.
        Second line.
      definition: |
        \`\`\`ts
        export function parse(text: string): Node;
        \`\`\`
      location: src/parser.ts
waves:
    - number: 1
      agents:
        - id: A
          task: |
            ## Agent A
            **Role:** Build the **parser** front end for the whole pipeline, carefully and completely
            Do the work.
          files: [src/a.ts]
        - id: B
          task: SECRET TASK OF B
          files: [src/b.ts]
scaffolds:
    - file: src/types.ts
      contents: "export type Node = { kind: string };"
      import_path: ./types
      status: committed (abc1234)
wiring:
    - symbol: parse
      defined_in: src/a.ts
      must_be_called_from: src/b.ts
      agent: A
      wave: 1
      integration_pattern: call
quality_gates:
    level: quick
    gates:
        - type: test
          command: npm test
          required: false
          description: unit tests
`).manifest!;

describe('renderAgentBrief (E23 payload)', () => {
  const agent = manifest.waves[0]!.agents[0]!;
  const brief = renderAgentBrief({ manifest, implPath: '/repo/docs/IMPL/IMPL-brief-test.yaml', wave: 1, agent, worktreePath: '/wt/A', branch: 'polywave/brief-test/wave1-agent-A', mergeTarget: 'release' });

  it('holds exactly the E23 sections, in order, and nothing of other agents', () => {
    const headings = brief.split('\n').filter((line) => line.startsWith('## ')).map((line) => line.slice(3));
    // The task is verbatim (its own "## Agent A" heading included).
    expect(headings).toEqual(['Files Owned', 'Task', 'Agent A', 'Merge Target', 'Interface Contracts', 'File Ownership', 'Scaffolds', 'Wiring Obligations (E35)', 'Quality Gates']);
    expect(brief).not.toContain('SECRET TASK OF B');
    expect(brief).toContain('**IMPL Doc:** /repo/docs/IMPL/IMPL-brief-test.yaml');
    expect(brief).toContain('**Branch:** polywave/brief-test/wave1-agent-A');
  });

  it('lists owned files from files[] and ownership rows, de-duplicated', () => {
    expect(ownedFiles(manifest, 1, 'A')).toEqual(['src/a.ts', 'src/a-extra.ts']);
    expect(brief).toContain('- `src/a.ts` (modify)\n- `src/a-extra.ts` (new, repo: web)\n');
  });

  it('keeps contract definitions intact (longer fence around embedded fences) and escapes table cells', () => {
    expect(brief).toContain('````\n```ts\nexport function parse(text: string): Node;\n```\n````');
    expect(brief).toContain('| docs/pipe\\|name.md | B | 1 |');
    expect(brief).toContain('| src/b.ts | B | 1 |  |  | src/a.ts |');
    expect(brief).toContain('Status: committed (abc1234)');
    expect(brief).toContain('| parse | src/a.ts | src/b.ts | call |');
    expect(brief).toContain('Level: quick');
    expect(brief).toContain('- **test**: `npm test` (required: false) — unit tests');
  });

  it('has a short front-matter name from the Role line and is deterministic', () => {
    expect(brief.split('\n')[1]).toBe('polywave_name: "[polywave:wave1:agent-A] Build the parser front end for the whole pipeline, carefu..."');
    expect(renderAgentBrief({ manifest, implPath: '/repo/docs/IMPL/IMPL-brief-test.yaml', wave: 1, agent, worktreePath: '/wt/A', branch: 'polywave/brief-test/wave1-agent-A', mergeTarget: 'release' })).toBe(brief);
    expect(taskSummary('# Heading\n\n**Do** this thing')).toBe('Do this thing');
  });

  it('writes the E43 environment file', () => {
    expect(worktreeEnvText({ worktreeRoot: '/wt/A', agentId: 'A', wave: 2, implPath: '/i.yaml', branch: 'b' })).toBe(
      'POLYWAVE_WORKTREE_ROOT=/wt/A\nPOLYWAVE_AGENT_ID=A\nPOLYWAVE_WAVE=2\nPOLYWAVE_IMPL=/i.yaml\nPOLYWAVE_BRANCH=b\n',
    );
  });
});
