/**
 * Commits pinned per checkout for a while (a stack per checkout: several concurrent pins of one checkout
 * are all kept until each is released). Used by the sandbox settings (a wave's base while it is finalized)
 * and by the throwaway checkout's ignore rules (verify-build's base).
 */
import { realpathSync } from 'node:fs';
import path from 'node:path';

export interface CheckoutPins {
  /** Pins `commit` for `checkout` until the returned release is called (a second call does nothing). */
  pin(checkout: string, commit: string): () => void;
  /** The commits pinned for `checkout`, oldest first. */
  of(checkout: string): string[];
  /** Every pinned checkout (its real path) with its commits. */
  entries(): IterableIterator<[string, string[]]>;
  readonly size: number;
}

/** `checkout` resolved, by its real path where it exists. */
export function checkoutKey(checkout: string): string {
  const key = path.resolve(checkout);
  try {
    return realpathSync(key);
  } catch {
    return key; // as given
  }
}

export function createCheckoutPins(): CheckoutPins {
  const pins = new Map<string, string[]>();
  return {
    pin(checkout, commit) {
      const key = checkoutKey(checkout);
      pins.set(key, [...(pins.get(key) ?? []), commit]);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const left = [...(pins.get(key) ?? [])];
        left.splice(left.indexOf(commit), 1);
        if (left.length === 0) pins.delete(key);
        else pins.set(key, left);
      };
    },
    of: (checkout) => [...(pins.get(checkoutKey(checkout)) ?? [])],
    entries: () => pins.entries(),
    get size() {
      return pins.size;
    },
  };
}
