import { randomBytes } from 'node:crypto';

const alphabet = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'; // Crockford base32, as in ULIDs

/** A ULID-shaped run id: 10 characters of milliseconds then 16 random ones — sorts by start time. */
export function newRunId(now: Date): string {
  let time = now.getTime();
  let head = '';
  for (let index = 0; index < 10; index += 1) {
    head = alphabet[time % 32]! + head;
    time = Math.floor(time / 32);
  }
  const random = randomBytes(16);
  let tail = '';
  for (let index = 0; index < 16; index += 1) tail += alphabet[random[index]! % 32];
  return head + tail;
}
