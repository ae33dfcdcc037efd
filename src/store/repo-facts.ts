import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * File facts for the repository-aware validation rules (E16_FILE_NOT_FOUND, V048 LOC budget):
 * does a manifest path exist, how many lines does it have. A `repo:` naming another repository
 * (MR01 multi-repo rows) resolves to a sibling directory of `root`.
 */
export function repoFileFacts(root: string): { fileExists: (file: string, repo?: string) => boolean; countLines: (file: string, repo?: string) => number | undefined } {
  const resolveIn = (file: string, repo?: string) => {
    const base = repo && repo !== path.basename(root) ? path.join(path.dirname(root), repo) : root;
    return path.join(base, file);
  };
  return {
    fileExists: (file, repo) => existsSync(resolveIn(file, repo)),
    countLines: (file, repo) => {
      try {
        const text = readFileSync(resolveIn(file, repo), 'utf8');
        return text.length === 0 ? 0 : text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
      } catch {
        return undefined;
      }
    },
  };
}
