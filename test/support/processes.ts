import { readdirSync, readFileSync } from 'node:fs';

/** Host processes (`<pid>: <command line>`) whose command line contains `marker`, not vitest's own (the host sees into every PID namespace). */
export function processesWith(marker: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const commandLine = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (commandLine.includes(marker) && !commandLine.includes('vitest')) found.push(`${pid}: ${commandLine.trim()}`);
    } catch {
      // exited meanwhile
    }
  }
  return found;
}
