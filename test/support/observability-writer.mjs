// A polywave-like process that records events through the real recorder (dist/) for `ms`
// milliseconds: bursts of 1–20 events on the bus, then a pause of 0–3 ms, then close().
// Prints {run_id, emitted, written, dropped, disabled} on stdout; warnings go to stderr.
//   node observability-writer.mjs <store> <ms> [slug]
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const { EventBus } = await import(path.join(root, 'dist/engine/events.js'));
const { attachRecorder } = await import(path.join(root, 'dist/observability/recorder.js'));

const [store, ms = '1000', slug = 'concurrent'] = process.argv.slice(2);
const bus = new EventBus();
const recorder = attachRecorder(bus, { storePath: store, command: 'writer', warn: (line) => process.stderr.write(line) });
let emitted = 0;
const end = Date.now() + Number(ms);
while (Date.now() < end) {
  const burst = 1 + Math.floor(Math.random() * 20);
  for (let index = 0; index < burst; index += 1) {
    emitted += 1;
    bus.emit({ v: 1, type: 'agent-tool-call', slug, wave: 1, agent: 'A', attempt: 1, tool: 'bash', is_error: false, duration_ms: emitted });
  }
  await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 4)));
}
recorder.close();
process.stdout.write(`${JSON.stringify({ run_id: recorder.runId, emitted, written: recorder.counts.written, dropped: recorder.counts.dropped, disabled: recorder.disabled })}\n`);
