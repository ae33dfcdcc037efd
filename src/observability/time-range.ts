/**
 * A `--since`/`--until`/`--older-than` value as milliseconds since the epoch: a duration back from
 * `now` (`90s`, `15m`, `24h`, `7d`, `2w`, Go's `24h`/`7d`/`30d` style) or an ISO date/time.
 * Undefined when the text is neither.
 */
export function parseTimeBound(value: string, now: Date): number | undefined {
  const trimmed = value.trim();
  const duration = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)$/i.exec(trimmed);
  if (duration) {
    const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };
    return now.getTime() - Number(duration[1]) * units[duration[2]!.toLowerCase()]!;
  }
  if (!/^\d{4}-\d{2}-\d{2}/.test(trimmed)) return undefined;
  const time = Date.parse(trimmed);
  return Number.isNaN(time) ? undefined : time;
}
