// Holds the write lock of an event store (an open IMMEDIATE transaction) for `ms` milliseconds,
// like another process stuck in a long write. Prints "locked" once it holds it.
//   node observability-locker.mjs <store> <ms>
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const { openEventStore } = await import(path.join(root, 'dist/observability/event-store.js'));

const [store, ms = '30000'] = process.argv.slice(2);
const db = openEventStore(store);
db.exec('BEGIN IMMEDIATE');
db.prepare("INSERT INTO runs (run_id, started_at, command) VALUES ('locker', 0, 'locker')").run();
process.stdout.write('locked\n');
setTimeout(() => {
  db.exec('ROLLBACK');
  db.close();
}, Number(ms));
