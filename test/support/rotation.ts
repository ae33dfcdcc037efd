/**
 * Bounded matrices for the CI suite (its budget is 30 minutes on 2 cores, and it is CPU-bound).
 *
 * A matrix whose every cell costs real work (a kill point and its restart, an edit over every corpus
 * file) runs a slice of its cells per run: `count` consecutive cells (wrapping) from an offset that
 * moves with the UTC day, so consecutive days take the next cells and the whole matrix is covered
 * over a few days of CI runs. The chosen cells are named in the label (put it in the test's name),
 * so a failure is re-run with the same slice.
 *
 * - `POLYWAVE_TEST_FULL=1` runs every cell (the full matrix: before a release, or by hand);
 * - `POLYWAVE_TEST_ROTATION_DAY=<n>` pins the day (re-running a failure seen on another day).
 */
export interface RotatingSlice<T> {
  items: T[];
  label: string;
  /** True when every cell runs. */
  full: boolean;
}

/** The UTC day number the rotation uses (days since 1970-01-01, or POLYWAVE_TEST_ROTATION_DAY). */
export function rotationDay(env: Readonly<Record<string, string | undefined>> = process.env, now = Date.now()): number {
  const pinned = env.POLYWAVE_TEST_ROTATION_DAY;
  if (pinned !== undefined && /^\d+$/.test(pinned)) return Number(pinned);
  return Math.floor(now / 86_400_000);
}

/** `count` of `items` for today's run (all of them with POLYWAVE_TEST_FULL=1 or when count covers them). */
export function rotatingSlice<T>(items: readonly T[], count: number, env: Readonly<Record<string, string | undefined>> = process.env, now = Date.now()): RotatingSlice<T> {
  if (env.POLYWAVE_TEST_FULL === '1' || count >= items.length) return { items: [...items], label: `all ${items.length}`, full: true };
  const size = Math.max(1, Math.floor(count));
  const day = rotationDay(env, now);
  const offset = (day * size) % items.length;
  const indexes = Array.from({ length: size }, (_, index) => (offset + index) % items.length).sort((a, b) => a - b);
  return {
    items: indexes.map((index) => items[index]!),
    label: `${size} of ${items.length} (POLYWAVE_TEST_ROTATION_DAY=${day}; POLYWAVE_TEST_FULL=1 for all)`,
    full: false,
  };
}

/** A share (0 < share ≤ 1) of `items` for today's run: a slice of ⌈share × length⌉ consecutive items. */
export function rotatingShare<T>(items: readonly T[], share: number, env: Readonly<Record<string, string | undefined>> = process.env, now = Date.now()): RotatingSlice<T> {
  return rotatingSlice(items, Math.ceil(items.length * share), env, now);
}
