/**
 * The `sandbox` section of polywave.config.json (network allow-list, extra writable directories),
 * shared by agents and gates.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { runGit } from '../git/run-git.js';
import { configuredSandbox, locateProjectConfig, parseProjectConfig } from '../store/project-config.js';
import type { SandboxSettings } from './sandbox-plan.js';

/**
 * The `sandbox` settings of the polywave.config.json found from `directory` upwards (empty when there
 * is none or it is unreadable) — as COMMITTED when the file is in a git repository. These settings
 * widen every later sandbox of the repository, and sandboxed code can write the main checkout (a
 * post-merge gate, verify-build's test run, a solo-wave agent): outside attack X4 wrote a config with
 * `sandbox.writable: ["~"]` there, and the next gate wrote `~/.bashrc`. So a working-tree file that
 * differs from HEAD's is not trusted: HEAD's version is used (none: the defaults). A config outside
 * any repository is read as it is.
 */
export async function readSandboxSettings(directory: string): Promise<SandboxSettings> {
  try {
    const configPath = await locateProjectConfig(directory);
    if (configPath === undefined) return {};
    const text = await readFile(configPath, 'utf8');
    const committed = await committedText(configPath);
    const trusted = committed === undefined ? text : committed.text;
    if (trusted === undefined) return {};
    return configuredSandbox(parseProjectConfig(trusted).config);
  } catch {
    return {};
  }
}

/**
 * HEAD's content of `file` (`text` undefined when HEAD has no such file), or undefined when `file`
 * is not in a git work tree.
 */
async function committedText(file: string): Promise<{ text: string | undefined } | undefined> {
  const cwd = path.dirname(file);
  const inRepository = await runGit(['rev-parse', '--is-inside-work-tree'], { cwd }).then(
    (output) => output.trim() === 'true',
    () => false,
  );
  if (!inRepository) return undefined;
  // `HEAD:./name` is relative to cwd (no top-level path to compute through symlinks).
  return runGit(['show', `HEAD:./${path.basename(file)}`], { cwd }).then(
    (output) => ({ text: output }),
    () => ({ text: undefined }),
  );
}
