import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { corpusRoot } from './cli.js';

export { corpusRoot };

/** Every `.yaml`/`.yml` file under `dir` (the corpus by default), sorted. */
export function corpusYamlFiles(dir: string = corpusRoot): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) out.push(...corpusYamlFiles(full));
    else if (/\.ya?ml$/.test(name)) out.push(full);
  }
  return out.sort();
}
