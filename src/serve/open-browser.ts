import { spawn } from 'node:child_process';

/**
 * The commands that open `url` in the user's browser, in the order they are tried: each entry of
 * `$BROWSER` (colon-separated, as xdg-utils and Python's webbrowser read it; `%s` in an entry is
 * replaced by the URL, else the URL is appended; split on spaces, no shell), then the platform's
 * opener (`open`, `cmd /c start`, `xdg-open`).
 */
export function browserCommands(url: string, env: Readonly<Record<string, string | undefined>>, platform: NodeJS.Platform = process.platform): Array<[string, string[]]> {
  const out: Array<[string, string[]]> = [];
  for (const entry of (env.BROWSER ?? '').split(platform === 'win32' ? ';' : ':')) {
    const words = entry.trim().split(/\s+/).filter(Boolean);
    if (words.length === 0) continue;
    const substituted = words.some((word) => word.includes('%s'));
    const args = words.slice(1).map((word) => word.replaceAll('%s', url));
    out.push([words[0]!.replaceAll('%s', url), substituted ? args : [...args, url]]);
  }
  out.push(platform === 'darwin' ? ['open', [url]] : platform === 'win32' ? ['cmd', ['/c', 'start', '', url]] : ['xdg-open', [url]]);
  return out;
}

/**
 * Opens `url` with the first of {@link browserCommands} that starts (a command that cannot be
 * spawned — missing, not executable — moves on to the next). Detached, output ignored; nothing is
 * awaited beyond the start. Resolves with the command that started, or undefined when none did
 * (the URL is printed anyway).
 */
export async function openBrowser(url: string, env: Readonly<Record<string, string | undefined>>): Promise<string | undefined> {
  for (const [command, args] of browserCommands(url, env)) {
    const started = await new Promise<boolean>((resolve) => {
      try {
        const child = spawn(command, args, { detached: true, stdio: 'ignore', env: { ...env } as NodeJS.ProcessEnv });
        child.once('error', () => resolve(false));
        child.once('spawn', () => {
          child.unref();
          resolve(true);
        });
      } catch {
        resolve(false);
      }
    });
    if (started) return command;
  }
  return undefined;
}
