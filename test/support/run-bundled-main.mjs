// Runs the bundled CLI's main() (dist/bundle/main.js, what bin/polywave.js runs) in one process
// for many argument lists: reads [{args, cwd}] as JSON on stdin, prints [{code, stdout, stderr}].
// The io matches the in-process runs of the tests (empty env, fixed clock, no stdin).
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const { main } = await import(path.join(root, 'dist', 'bundle', 'main.js'));
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const calls = JSON.parse(Buffer.concat(chunks).toString('utf8'));
const results = [];
for (const call of calls) {
  let stdout = '';
  let stderr = '';
  const io = {
    cwd: call.cwd,
    env: {},
    now: () => new Date('2026-01-01T00:00:00Z'),
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    readStdin: async () => '',
  };
  const code = await main(call.args, io);
  results.push({ code, stdout, stderr });
}
process.stdout.write(JSON.stringify(results));
