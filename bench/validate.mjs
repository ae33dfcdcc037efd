// bench:validate — time to validate the whole corpus vs. merely YAML-parsing the same files,
// and CLI start-up (`polywave --version`) vs `node -e 0`. Ratios from one run (noisy machine).
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseDocument } from 'yaml';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const corpus = process.env.POLYWAVE_CORPUS ?? path.resolve(root, '..', 'shared', 'corpus');
const { parseImpl } = await import(path.join(root, 'dist/protocol/parse-impl.js'));
const { validateImpl } = await import(path.join(root, 'dist/protocol/validate-impl.js'));
const { parseProgram } = await import(path.join(root, 'dist/protocol/parse-program.js'));
const { validateProgram } = await import(path.join(root, 'dist/protocol/program/validate-program.js'));

function walk(directory) {
  return readdirSync(directory).flatMap((name) => {
    const full = path.join(directory, name);
    return statSync(full).isDirectory() ? walk(full) : name.endsWith('.yaml') ? [full] : [];
  });
}
const files = walk(corpus).sort().map((file) => ({ file, text: readFileSync(file, 'utf8'), program: path.basename(file).startsWith('PROGRAM-') }));
const bytes = files.reduce((sum, { text }) => sum + text.length, 0);

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}
function time(fn, rounds) {
  const samples = [];
  for (let round = 0; round < rounds; round += 1) {
    const start = performance.now();
    fn();
    samples.push(performance.now() - start);
  }
  return median(samples);
}

const parseOnly = () => {
  for (const { text } of files) parseDocument(text);
};
const validateAll = () => {
  for (const { file, text, program } of files) {
    if (program) {
      const parsed = parseProgram(text);
      if (parsed.manifest) validateProgram(parsed.manifest, { locate: parsed.locate, fileName: path.basename(file) });
    } else {
      const parsed = parseImpl(text);
      if (parsed.manifest) validateImpl({ manifest: parsed.manifest, locate: parsed.locate });
    }
  }
};
// Warm up the JIT for both.
parseOnly();
validateAll();
const rounds = Number(process.env.BENCH_ROUNDS ?? 7);
const parseMs = time(parseOnly, rounds);
const validateMs = time(validateAll, rounds);
console.log(`corpus: ${files.length} manifests, ${(bytes / 1024).toFixed(0)} KiB`);
console.log(`yaml parse only (parseDocument): ${parseMs.toFixed(1)} ms`);
console.log(`polywave validate (parse + duplicate/unknown keys + types + all rules): ${validateMs.toFixed(1)} ms`);
console.log(`ratio: ${(validateMs / parseMs).toFixed(2)} (target <= 2)`);

function spawnTime(command, args, runs) {
  const samples = [];
  for (let run = 0; run < runs; run += 1) {
    const start = performance.now();
    const result = spawnSync(command, args, { encoding: 'utf8' });
    if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed: ${result.stderr}`);
    samples.push(performance.now() - start);
  }
  return median(samples);
}
const runs = Number(process.env.BENCH_RUNS ?? 15);
const nodeMs = spawnTime(process.execPath, ['-e', '0'], runs);
const versionMs = spawnTime(process.execPath, [path.join(root, 'bin/polywave.js'), '--version'], runs);
const helpMs = spawnTime(process.execPath, [path.join(root, 'bin/polywave.js'), '--help'], runs);
console.log(`node -e 0: ${nodeMs.toFixed(1)} ms`);
console.log(`polywave --version: ${versionMs.toFixed(1)} ms`);
console.log(`polywave --help (loads the command table): ${helpMs.toFixed(1)} ms`);
console.log(`startup ratio: ${(versionMs / nodeMs).toFixed(2)} (target <= 2)`);
