/**
 * Parsing many files at once (a cold cache): a bounded pool of worker threads, each with its own
 * tree-sitter runtime. The worker runs this same module (in the tsc output and in the CLI bundle
 * alike: `import.meta.url` is whichever file holds it) and answers `{id, items}` messages with the
 * facts of each item. Small batches parse in process (a worker's start-up — loading the WASM
 * grammar — costs more than it saves); `POLYWAVE_ANALYSIS_WORKERS=0` disables the pool.
 */
import { availableParallelism } from 'node:os';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { extractFacts, type ExtractPart, type FileFacts } from './extract.js';
import type { Lang } from './types.js';

export interface ParseItem {
  lang: Lang;
  text: string;
  /** Only this part of the facts (extract.ts). */
  part?: ExtractPart;
}

/** Below this many files, parsing in process is faster than starting workers. */
const minimumForPool = 300;
const chunkSize = 100;

interface Request {
  id: number;
  items: ParseItem[];
}

if (!isMainThread && (workerData as { polywaveAnalysisWorker?: boolean } | null)?.polywaveAnalysisWorker === true && parentPort) {
  const port = parentPort;
  port.on('message', (request: Request) => {
    void (async () => {
      const facts: FileFacts[] = [];
      for (const item of request.items) facts.push(await extractFacts(item.lang, item.text, item.part));
      port.postMessage({ id: request.id, facts });
    })().catch((error: unknown) => port.postMessage({ id: request.id, error: String(error) }));
  });
}

/**
 * The pool size: by default one worker per core beyond the first, at most 4 — so none on a 2-core
 * machine, where bench/analysis.mjs measured no gain (2,000 TS files: 3.0–3.3 s with 1 or 2 workers,
 * the machine shared). `POLYWAVE_ANALYSIS_WORKERS=N` overrides (0/1 = in process).
 */
export function poolSize(env: Readonly<Record<string, string | undefined>> = {}): number {
  const configured = env.POLYWAVE_ANALYSIS_WORKERS;
  if (configured !== undefined && /^\d+$/.test(configured)) return Math.min(Number(configured), 8);
  return Math.min(availableParallelism() - 1, 4);
}

/** Facts for every item, in order. */
export async function extractMany(items: readonly ParseItem[], workers: number): Promise<FileFacts[]> {
  if (items.length < minimumForPool || workers < 2) {
    const facts: FileFacts[] = [];
    for (const item of items) facts.push(await extractFacts(item.lang, item.text, item.part));
    return facts;
  }
  const chunks: ParseItem[][] = [];
  for (let start = 0; start < items.length; start += chunkSize) chunks.push(items.slice(start, start + chunkSize));
  const results: FileFacts[][] = new Array<FileFacts[]>(chunks.length);
  const pool = Array.from({ length: Math.min(workers, chunks.length) }, () => new Worker(new URL(import.meta.url), { workerData: { polywaveAnalysisWorker: true } }));
  let next = 0;
  try {
    await Promise.all(
      pool.map(
        (worker) =>
          new Promise<void>((resolve, reject) => {
            const send = () => {
              if (next >= chunks.length) {
                resolve();
                return;
              }
              const id = next;
              next += 1;
              worker.postMessage({ id, items: chunks[id]! } satisfies Request);
            };
            worker.on('message', (answer: { id: number; facts?: FileFacts[]; error?: string }) => {
              if (answer.error !== undefined || !answer.facts) {
                reject(new Error(`analysis worker failed: ${answer.error ?? 'no facts'}`));
                return;
              }
              results[answer.id] = answer.facts;
              send();
            });
            worker.on('error', reject);
            worker.on('exit', (code) => {
              if (next < chunks.length || results.some((entry) => entry === undefined)) reject(new Error(`analysis worker exited (${code})`));
            });
            send();
          }),
      ),
    );
  } finally {
    await Promise.all(pool.map((worker) => worker.terminate()));
  }
  return results.flat();
}
