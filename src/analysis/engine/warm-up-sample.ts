/**
 * The warm-up's sample repository (warm-up.ts, and the resident server's parse worker): a few dozen
 * small files in every language the engine reads, with imports, aliases, re-exports, a default
 * export, a CommonJS destructuring, methods, and the searched words also in comments and strings.
 * Nothing of the user's: generated text only.
 */
/** Files per language in the sample: enough calls for V8 to optimise the engine's hot functions. */
const filesPerLanguage = 40;

export type Sample = Record<string, string>;

function typescriptSample(ext: 'ts' | 'js' | 'tsx'): Sample {
  const files: Sample = {};
  const typed = ext !== 'js';
  for (let i = 0; i < filesPerLanguage; i += 1) {
    const dir = `${ext}/part${i % 4}`;
    const previous = i === 0 ? undefined : `../part${(i - 1) % 4}/m${i - 1}.js`;
    const lines: string[] = [];
    if (previous) lines.push(`import { compute${i - 1} as previous${i} } from '${previous}';`);
    if (i > 0 && i % 3 === 0) lines.push(`import { sharedHelper${i % 6 === 0 ? ' as helper' : ''} } from '../part0/m0.js';`);
    if (i > 0 && i % 7 === 0) lines.push(`export { compute${i - 1} as renamed${i} } from '${previous!}';`);
    if (i === 0) lines.push(`export function sharedHelper(value${typed ? ': number' : ''})${typed ? ': number' : ''} {\n  return value * 2;\n}`);
    lines.push(`/** compute${i}: ${i % 5 === 1 ? 'sharedHelper' : 'nothing'} named in a comment. */`);
    lines.push(`export function compute${i}(input${typed ? ': number' : ''})${typed ? ': number' : ''} {`);
    lines.push(`  const label = '${i % 4 === 2 ? 'sharedHelper' : 'plain'}' + \`\${input}\`;`);
    if (previous) lines.push(`  const before = previous${i}(input);`);
    if (i > 0 && i % 3 === 0) lines.push(`  return ${i % 6 === 0 ? 'helper' : 'sharedHelper'}(input) + label.length;`);
    else lines.push(`  return input + label.length${previous ? ' + before' : ''};`);
    lines.push('}');
    lines.push(`export class Store${i} {\n  ${typed ? 'private ' : ''}items${typed ? ': number[]' : ''} = [];\n  add(item${typed ? ': number' : ''}) {\n    this.items.push(item);\n    return this.items.length > 1 ? this.items.map((x) => x * 2) : [];\n  }\n}`);
    if (ext === 'tsx') lines.push(`export const View${i} = () => <div title="sharedHelper">{compute${i}(1)}</div>;`);
    if (i % 9 === 4) lines.push(`export default compute${i};`);
    files[`${dir}/m${i}.${ext}`] = `${lines.join('\n')}\n`;
  }
  if (ext === 'js') files['js/common.js'] = "const { sharedHelper: fromRequire } = require('./part0/m0.js');\nmodule.exports = { twice: (x) => fromRequire(fromRequire(x)) };\n";
  return files;
}

function goSample(): Sample {
  const files: Sample = { 'go.mod': 'module example.com/warmup\n\ngo 1.21\n' };
  for (let i = 0; i < filesPerLanguage; i += 1) {
    const pkg = `p${Math.floor(i / 8)}`;
    const other = Math.floor(i / 8) > 0 ? `p${Math.floor(i / 8) - 1}` : undefined;
    const imports = [`\t"fmt"`, ...(other ? [`\t"example.com/warmup/go/${other}"`] : []), ...(i >= 8 && i % 3 === 0 ? ['\tshared "example.com/warmup/go/p0"'] : [])];
    const body = [
      `package ${pkg}`,
      '',
      `import (\n${[...new Set(imports)].join('\n')}\n)`,
      '',
      i === 0 ? 'func SharedHelper(value int) int {\n\treturn value * 2\n}\n' : '',
      `// Compute${i}: ${i % 5 === 1 ? 'SharedHelper' : 'nothing'} named in a comment.`,
      `func Compute${i}(input int) int {`,
      `\tlabel := "${i % 4 === 2 ? 'SharedHelper' : 'plain'}"`,
      other ? `\t_ = ${other}.Compute${(Math.floor(i / 8) - 1) * 8}(input)` : '',
      i >= 8 && i % 3 === 0 ? '\tinput = shared.SharedHelper(input)' : '',
      i > 0 && i < 8 && i % 3 === 0 ? '\tinput = SharedHelper(input)' : '',
      '\treturn input + len(fmt.Sprint(label))',
      '}',
      '',
      `type Store${i} struct{ items []int }`,
      '',
      `func (s *Store${i}) Add(item int) int {\n\ts.items = append(s.items, item)\n\treturn len(s.items)\n}`,
    ];
    files[`go/${pkg}/f${i}.go`] = `${body.filter((line) => line !== '').join('\n')}\n`;
  }
  return files;
}

function pythonSample(): Sample {
  const files: Sample = { 'py/__init__.py': '' };
  for (let part = 0; part < 4; part += 1) files[`py/part${part}/__init__.py`] = part === 0 ? 'from .m0 import shared_helper as exported_helper\n' : '';
  for (let i = 0; i < filesPerLanguage; i += 1) {
    const lines: string[] = [];
    if (i > 0) lines.push(`from py.part${(i - 1) % 4}.m${i - 1} import compute${i - 1} as previous`);
    if (i > 0 && i % 3 === 0) lines.push(i % 6 === 0 ? 'from py.part0 import exported_helper as helper' : 'from py.part0.m0 import shared_helper');
    lines.push('', '');
    if (i === 0) lines.push('def shared_helper(value):\n    return value * 2\n\n');
    lines.push(`def compute${i}(value: int) -> int:`, `    """compute${i}: ${i % 5 === 1 ? 'shared_helper' : 'nothing'} named in a docstring."""`);
    lines.push(`    label = f"${i % 4 === 2 ? 'shared_helper' : 'plain'} {value}"`);
    if (i > 0 && i % 3 === 0) lines.push(`    value = ${i % 6 === 0 ? 'helper' : 'shared_helper'}(value)`);
    if (i > 0) lines.push('    value += previous(value)');
    lines.push('    return value + len(label)', '', '');
    lines.push(`class Store${i}:`, '    def __init__(self) -> None:', '        self.items = []', '', '    def add(self, item: int) -> int:', '        self.items.append(item)', '        return len([x for x in self.items if x > 1])');
    files[`py/part${i % 4}/m${i}.py`] = `${lines.join('\n')}\n`;
  }
  return files;
}

function rustSample(): Sample {
  const files: Sample = { 'Cargo.toml': '[package]\nname = "warmup"\nversion = "0.1.0"\nedition = "2021"\n' };
  const modules: string[] = [];
  for (let part = 0; part < 4; part += 1) {
    modules.push(`pub mod part${part};`);
    const children: string[] = [];
    for (let i = part; i < filesPerLanguage; i += 4) children.push(`pub mod m${i};`);
    if (part === 0) children.push('pub use self::m0::shared_helper as exported_helper;');
    files[`src/part${part}.rs`] = `${children.join('\n')}\n`;
  }
  files['src/lib.rs'] = `${modules.join('\n')}\n`;
  for (let i = 0; i < filesPerLanguage; i += 1) {
    const lines: string[] = [];
    if (i > 0) lines.push(`use crate::part${(i - 1) % 4}::m${i - 1}::compute${i - 1} as previous;`);
    if (i > 0 && i % 3 === 0) lines.push(i % 6 === 0 ? 'use crate::part0::exported_helper as helper;' : 'use crate::part0::m0::shared_helper;');
    if (i === 0) lines.push('pub fn shared_helper(value: i64) -> i64 {\n    value * 2\n}');
    lines.push(`/// compute${i}: ${i % 5 === 1 ? 'shared_helper' : 'nothing'} named in a doc comment.`);
    lines.push(`pub fn compute${i}(input: i64) -> i64 {`, `    let label = "${i % 4 === 2 ? 'shared_helper' : 'plain'}";`);
    if (i > 0 && i % 3 === 0) lines.push(`    let input = ${i % 6 === 0 ? 'helper' : 'shared_helper'}(input);`);
    lines.push(i > 0 ? '    input + previous(input) + label.len() as i64' : '    input + label.len() as i64', '}');
    lines.push(`pub struct Store${i} {\n    items: Vec<i64>,\n}\n\nimpl Store${i} {\n    pub fn add(&mut self, item: i64) -> usize {\n        self.items.push(item);\n        self.items.iter().filter(|x| **x > 1).count()\n    }\n}`);
    files[`src/part${i % 4}/m${i}.rs`] = `${lines.join('\n')}\n`;
  }
  return files;
}

/** The sample repository's files (path → text): every language the engine reads. */
export function warmUpSample(): Sample {
  return { ...typescriptSample('ts'), ...typescriptSample('tsx'), ...typescriptSample('js'), ...goSample(), ...pythonSample(), ...rustSample() };
}

