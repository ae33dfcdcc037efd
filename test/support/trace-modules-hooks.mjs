// Loader hooks of trace-modules.mjs (they run on the loader's own thread).
import { appendFileSync } from 'node:fs';

let traceFile;

export function initialize(data) {
  traceFile = data.file;
}

export async function load(url, context, nextLoad) {
  if (traceFile) appendFileSync(traceFile, `${url}\n`);
  return nextLoad(url, context);
}
