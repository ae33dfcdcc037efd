import { readdirSync } from 'node:fs';
import path from 'node:path';

/** Every regular file under `dir`, recursively (no symbolic links followed; unreadable directories skipped). */
export function filesUnder(dir: string): string[] {
  const found: string[] = [];
  const walk = (current: string) => {
    let entries;
    try {
      entries = readdirSync(current, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const full = path.join(current, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile()) found.push(full);
    }
  };
  walk(dir);
  return found;
}
