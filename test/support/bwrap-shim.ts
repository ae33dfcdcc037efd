import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** A `bwrap` first on PATH that deletes `vanishing` when it is started the first time, then runs the real bubblewrap. */
export interface VanishingShim {
  /** The directory to put first on PATH. */
  bin: string;
  /** How many times bubblewrap was started through it. */
  starts(): number;
  /** PATH with the shim first. */
  path(base?: string): string;
}

/**
 * The race seen in CI, made certain: a directory the sandbox hides exists when polywave builds the bubblewrap
 * command line and is deleted (by another run's cleanup) before bubblewrap mounts over it. sandbox-runtime starts
 * bubblewrap by name, so a `bwrap` earlier on PATH sees each start; this one deletes `vanishing` at the first.
 */
export function vanishingShim(vanishing: string): VanishingShim {
  const real = (process.env.PATH ?? '').split(':').map((dir) => path.join(dir, 'bwrap')).find((candidate) => existsSync(candidate));
  if (!real) throw new Error('bwrap is not installed');
  const bin = mkdtempSync(path.join(os.tmpdir(), 'pw-bwrap-shim-'));
  mkdirSync(bin, { recursive: true });
  const count = path.join(bin, 'count');
  writeFileSync(count, '');
  const q = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;
  writeFileSync(
    path.join(bin, 'bwrap'),
    ['#!/bin/sh', `if [ ! -s ${q(count)} ]; then rm -rf ${q(vanishing)}; fi`, `echo x >> ${q(count)}`, `exec ${q(real)} "$@"`, ''].join('\n'),
  );
  chmodSync(path.join(bin, 'bwrap'), 0o755);
  return {
    bin,
    starts: () => readFileSync(count, 'utf8').split('\n').filter(Boolean).length,
    path: (base = process.env.PATH ?? '') => `${bin}:${base}`,
  };
}
