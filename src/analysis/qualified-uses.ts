/**
 * Which references of a name are uses of a qualified symbol — `Type.Member` or `pkg.Name` — as
 * `check-callers Type.Member` answers, and the E46/wave-structure checks ask for a task's
 * `Type.Method()` (one rule for both: outside round X54-07 found check-test-cascade keeping method
 * calls only, so Rust `Type::new()` and the uses inside `assert_eq!` were dropped).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Reference } from './engine/types.js';

/**
 * `Type.Member` (a capitalised qualifier): member uses only — `x.Member()`, `x.Member` (a field, a
 * method value), a Go struct literal's key `T{Member: …}`. `pkg.Func`: uses written `pkg.Func`, or
 * any use inside a directory named `pkg` (the package itself).
 */
export function qualifiedUse(root: string, qualifier: string, reference: Reference, lineCache: Map<string, string[]>, rustPathsChecked = false): boolean {
  if (/^\p{Lu}/u.test(qualifier)) {
    if (reference.kind === 'method-call' || reference.fieldKey) return true;
    const before = textBefore(root, reference, lineCache);
    // (`rustPathsChecked`: the engine resolved the path's type against the definition — any `X::member` is its)
    if (rustPathsChecked && reference.file.endsWith('.rs') && /::\s*$/u.test(before)) return true;
    // (a Rust associated function called through its type, `Type::method(&x)`, is the method too)
    // (`pkg.Func()`, `pkg.Var`: a package's or module's, no object's member — the extraction tells them)
    return (/\.\s*$/u.test(before) && !reference.packageMember && reference.kind !== 'call' && reference.kind !== 'import' && reference.kind !== 'reexport') || before.match(/([\p{L}\p{N}_]+)\s*::\s*$/u)?.[1] === qualifier;
  }
  if (reference.file.split('/').slice(0, -1).includes(qualifier)) return true;
  return memberUse(root, reference, lineCache) === qualifier;
}

/** The identifier written before `.` at the reference (`a` in `a.Do`), if any. */
function memberUse(root: string, reference: Reference, lineCache: Map<string, string[]>): string | undefined {
  return /([\p{L}\p{N}_$]+)\s*\.\s*$/u.exec(textBefore(root, reference, lineCache))?.[1];
}

/** The reference's line up to it. */
function textBefore(root: string, reference: Reference, lineCache: Map<string, string[]>): string {
  let lines = lineCache.get(reference.file);
  if (!lines) {
    lines = (() => {
      try {
        return readFileSync(path.join(root, reference.file), 'utf8').split(/\r?\n/);
      } catch {
        return [];
      }
    })();
    lineCache.set(reference.file, lines);
  }
  // (the last 256 characters: a qualifier is short, and the patterns above on a 100 KB line took seconds — X55-03)
  return (lines[reference.line - 1] ?? '').slice(Math.max(0, reference.column - 1 - 256), reference.column - 1);
}

