import { readFileSync } from 'node:fs';
import { afterAll } from 'vitest';

/**
 * For the test files that share a worker process (vitest.config.ts, project "shared-process"): a
 * file that leaves the process changed — an environment variable, the working directory, the umask —
 * would change the files that run after it in the same worker, in an order that differs between runs.
 * Such a file fails here, deterministically, naming what it changed; it belongs in its own process
 * (`// vitest: own process`, or the patterns vitest.config.ts looks for).
 *
 * Variables a library sets in the process that loads it, always to the same value, which nothing polywave runs
 * reads on Linux: the Claude Agent SDK sets NoDefaultCurrentDirectoryInExePath=1 on import (a Windows
 * executable-search setting) and CLAUDE_AGENT_SDK_VERSION=<its version> on each query. Whichever shared file
 * loads the SDK first would otherwise fail here, a different one from run to run.
 */
const setByLibraries = new Set(['NoDefaultCurrentDirectoryInExePath', 'CLAUDE_AGENT_SDK_VERSION']);

/** The process's umask as /proc tells it (`process.umask()` without an argument is deprecated: it sets it to read it). */
function currentUmask(): string | undefined {
  try {
    return /^Umask:\s*(\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
  } catch {
    return undefined;
  }
}

// (taken when this setup file runs, before the test file is imported: a change its top-level code makes counts too)
const environment = new Map(Object.entries(process.env));
const workingDirectory = process.cwd();
const mask = currentUmask();

afterAll(() => {
  const changed = [...new Set([...environment.keys(), ...Object.keys(process.env)])].filter((name) => environment.get(name) !== process.env[name] && !(setByLibraries.has(name) && environment.get(name) === undefined)).sort();
  const problems = [
    ...(changed.length > 0 ? [`process.env changed: ${changed.join(', ')}`] : []),
    ...(process.cwd() !== workingDirectory ? [`the working directory changed to ${process.cwd()}`] : []),
    ...(currentUmask() !== mask ? [`the umask changed to ${currentUmask()}`] : []),
  ];
  if (problems.length > 0) throw new Error(`this test file shares its worker process with others but left it changed (${problems.join('; ')}): restore it, or give the file its own process (// vitest: own process)`);
});
