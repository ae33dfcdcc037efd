/**
 * This process's mount table (`/proc/self/mountinfo`): where a path lies in its file system, and the other places the
 * same files are mounted (bind mounts: a devcontainer's `/workspaces/x` of `/src/x`, `docker -v $PWD/tools:/opt/tools`).
 * A path hidden or judged by its name is the same files at every such place (outside round X45: X45-02, X45-11).
 */
import { lstatSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** A mount: its device (`major:minor`), the directory of that file system it shows (`root`), and where. */
export interface MountEntry {
  device: string;
  root: string;
  mountPoint: string;
}

/** Whether `file` is `dir` or inside it (both absolute). */
export function within(file: string, dir: string): boolean {
  return file === dir || file.startsWith(dir.endsWith(path.sep) ? dir : `${dir}${path.sep}`);
}

/** The lines of /proc/self/mountinfo (octal escapes undone); empty where there is none (not Linux). */
export function mountTable(): MountEntry[] {
  let text: string;
  try {
    text = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return [];
  }
  const unescape = (value: string) => value.replace(/\\([0-7]{3})/g, (_match, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
  const mounts: MountEntry[] = [];
  for (const line of text.split('\n')) {
    const fields = line.split(' ');
    if (fields.length < 5) continue;
    mounts.push({ device: fields[2]!, root: unescape(fields[3]!), mountPoint: unescape(fields[4]!) });
  }
  return mounts;
}

/**
 * Where a real path lies in its file system: the device of the mount that shows it (the last mounted of the deepest
 * mount point above it) and its path inside that file system — the same for a directory and any bind mount of it or of
 * a directory above it (`<repo>/tools` bound at `/opt/tools`: both are `<dev>:<fs path of repo>/tools`).
 */
export function fileSystemLocation(mounts: readonly MountEntry[], real: string): { device: string; inside: string } | undefined {
  let best: MountEntry | undefined;
  for (const mount of mounts) {
    if (!within(real, mount.mountPoint)) continue;
    if (best === undefined || mount.mountPoint.length >= best.mountPoint.length) best = mount;
  }
  if (best === undefined) return undefined;
  const rest = path.relative(best.mountPoint, real);
  return { device: best.device, inside: rest === '' ? best.root : path.join(best.root, rest) };
}

/**
 * The other places each of `paths` (real paths) can be reached at through a mount of the same file system (X45-11: the
 * main checkout bound at a second path — its `.env`, its `.git/config` unmasked, another agent's worktree were read
 * there): for a mount showing a directory at or above a path, the path's place under that mount; for a mount showing
 * a directory inside a path (a part of it mounted elsewhere), the whole mount point. Only places that exist, never a
 * path itself or one inside `paths` already.
 */
export function mountAliases(paths: readonly string[], mounts: readonly MountEntry[] = mountTable()): string[] {
  if (mounts.length === 0 || paths.length === 0) return [];
  const aliases = new Set<string>();
  const exists = (file: string): boolean => {
    try {
      lstatSync(file);
      return true;
    } catch {
      return false;
    }
  };
  for (const original of paths) {
    const at = fileSystemLocation(mounts, original);
    if (at === undefined) continue;
    for (const mount of mounts) {
      if (mount.device !== at.device) continue;
      let alias: string | undefined;
      if (within(at.inside, mount.root)) {
        const rest = path.relative(mount.root, at.inside);
        alias = rest === '' ? mount.mountPoint : path.join(mount.mountPoint, rest);
      } else if (within(mount.root, at.inside)) {
        alias = mount.mountPoint;
      }
      if (alias === undefined || paths.some((entry) => within(alias, entry)) || !exists(alias)) continue;
      aliases.add(alias);
    }
  }
  // (one inside another found is covered by it)
  return [...aliases].filter((alias) => ![...aliases].some((other) => other !== alias && within(alias, other)));
}
