/**
 * Maps `items` through `work` with at most `limit` calls in flight; results keep the input
 * order. The first rejection rejects the map without waiting for the calls still in flight, so
 * pass work that does not throw (gate runs return data).
 */
export async function mapBounded<Item, Result>(items: readonly Item[], limit: number, work: (item: Item, index: number) => Promise<Result>): Promise<Result[]> {
  const results = new Array<Result>(items.length);
  const width = Math.max(1, Math.min(Math.floor(limit) || 1, items.length));
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next;
      next += 1;
      results[index] = await work(items[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: width }, worker));
  return results;
}
