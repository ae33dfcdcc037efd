/** A quality gate of {@link lettersImplYaml}. */
export interface LettersGate {
  type: string;
  command: string;
  timing?: 'pre-merge' | 'post-merge';
}

/**
 * The one-wave "letters" IMPL the E40, budget and estimate tests run: agent X owns
 * `src/x.js` and `src/x.test.js` (two files: one would be V047_TRIVIAL_SCOPE) and writes the
 * first; optional per-agent `model:` and quality gates.
 */
export function lettersImplYaml(options: { title: string; slug: string; agents: readonly string[]; models?: Readonly<Record<string, string>>; gates?: readonly LettersGate[] }): string {
  const { slug, agents, models = {}, gates = [] } = options;
  return [
    `title: ${options.title}`,
    `feature_slug: ${slug}`,
    'verdict: SUITABLE',
    'state: WAVE_PENDING',
    'test_command: "node -e \\"process.exit(0)\\""',
    'file_ownership:',
    ...agents.flatMap((id) => [`src/${id.toLowerCase()}.js`, `src/${id.toLowerCase()}.test.js`].flatMap((file) => [`    - file: ${file}`, `      agent: ${id}`, '      wave: 1', '      action: new'])),
    'interface_contracts:',
    '    - name: Letter',
    '      description: A letter constant.',
    '      definition: "export const x: string"',
    `      location: src/${agents[0]!.toLowerCase()}.js`,
    'waves:',
    '    - number: 1',
    '      agents:',
    ...agents.flatMap((id) => [`        - id: ${id}`, ...(models[id] ? [`          model: ${models[id]}`] : []), `          task: Implement src/${id.toLowerCase()}.js.`, '          files:', `            - src/${id.toLowerCase()}.js`, `            - src/${id.toLowerCase()}.test.js`]),
    ...(gates.length > 0
      ? ['quality_gates:', '    level: standard', '    gates:', ...gates.flatMap((gate) => [`        - type: ${gate.type}`, `          command: ${JSON.stringify(gate.command)}`, '          required: true', ...(gate.timing ? [`          timing: ${gate.timing}`] : [])])]
      : []),
    '',
  ].join('\n');
}
