/** Small text helpers shared by the engine's step details (prepare-wave, finalize-wave). */

/** Short form of a commit for messages. */
export function short(sha: string | undefined): string {
  return (sha ?? '').slice(0, 12);
}

/** Message of an unknown error. */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A list for a one-line detail: the first `max` items, then "… and N more". */
export function listForDetail(items: readonly string[], max = 15): string {
  if (items.length <= max) return items.join(', ');
  return `${items.slice(0, max).join(', ')} … and ${items.length - max} more`;
}
