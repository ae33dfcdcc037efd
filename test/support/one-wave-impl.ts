/**
 * The text of a one-wave IMPL manifest for tests that drive script or CLI agents: each agent owns its files
 * (`action: new`), one interface contract, `test_command` that passes. `models` names an agent's own model line.
 */
export function oneWaveImplYaml(options: { title: string; slug: string; owned: Record<string, readonly string[]>; models?: Record<string, string> }): string {
  const owned = Object.entries(options.owned);
  return [
    `title: ${options.title}`,
    `feature_slug: ${options.slug}`,
    'verdict: SUITABLE',
    'state: WAVE_PENDING',
    'test_command: "node -e \\"process.exit(0)\\""',
    'file_ownership:',
    ...owned.flatMap(([agent, files]) => files.flatMap((file) => [`    - file: ${file}`, `      agent: ${agent}`, '      wave: 1', '      action: new'])),
    'interface_contracts:',
    '    - name: Letter',
    '      description: A letter constant.',
    '      definition: "export const x: string"',
    '      location: src/a.ts',
    'waves:',
    '    - number: 1',
    '      agents:',
    ...owned.flatMap(([agent, files]) => [`        - id: ${agent}`, `          task: Implement ${files.join(', ')}.`, ...(options.models?.[agent] ? [`          model: ${options.models[agent]}`] : []), '          files:', ...files.map((file) => `            - ${file}`)]),
    '',
  ].join('\n');
}
