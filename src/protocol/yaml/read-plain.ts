import type { Document, LineCounter } from 'yaml';
import type { Finding } from '../../errors/finding.js';
import { loadPlainFast } from './fast-plain.js';
import { locatePath } from './locate.js';
import { parseYamlSafe, type YamlParseResult } from './safe-parse.js';
import { toPlain } from './to-plain.js';

/** Where a field lives in the source text (line/column of a field path). */
export type LocateFn = (path: ReadonlyArray<string | number>) => { line: number; column: number } | undefined;

/** Options of {@link readPlain}. */
export interface ReadPlainOptions {
  /** Always compose the `yaml` Document (writers edit it); else only when something asks for it. */
  document?: boolean;
}

/** The outcome of {@link readPlain}. */
export type PlainReadResult =
  | {
      ok: true;
      data: unknown;
      findings: Finding[];
      locate: LocateFn;
      /** The composed Document and its line counter: built on first use when the fast path read the text. */
      full: () => { document: Document.Parsed; lineCounter: LineCounter };
    }
  | { ok: false; findings: Finding[]; locate: LocateFn; full?: () => { document: Document.Parsed; lineCounter: LineCounter } };

const noLocation: LocateFn = () => undefined;

/**
 * Reads YAML text into plain data (what `toPlain` gives) with the findings of
 * {@link parseYamlSafe}, cheaply: the fast path ({@link loadPlainFast}) answers when the text is
 * plain manifest YAML without duplicate keys, aliases, tags or anything the full parse would
 * report; the `yaml` Document, needed for line numbers and edits, is then composed only when
 * `locate` or `full` is called. Everything else goes through the full parse, as before.
 */
export function readPlain(text: string, options: ReadPlainOptions = {}): PlainReadResult {
  if (!options.document) {
    const fast = loadPlainFast(text);
    if (fast) {
      let composed: { document: Document.Parsed; lineCounter: LineCounter } | undefined;
      const full = (): { document: Document.Parsed; lineCounter: LineCounter } => {
        if (composed) return composed;
        const parsed = parseYamlSafe(text);
        // The fast path accepts only text the full parse accepts (proven by fast-plain.test.ts);
        // if that ever failed, refuse loudly rather than locate against nothing.
        if (!parsed.ok) throw new Error(`YAML fast path accepted text the full parse refuses: ${parsed.findings[0]?.message ?? ''}`);
        composed = { document: parsed.document, lineCounter: parsed.lineCounter };
        return composed;
      };
      const locate: LocateFn = (path) => {
        const { document, lineCounter } = full();
        return locatePath(document, lineCounter, [...path]);
      };
      return { ok: true, data: fast.value, findings: [], locate, full };
    }
  }
  return fromFullParse(parseYamlSafe(text));
}

function fromFullParse(parsed: YamlParseResult): PlainReadResult {
  if (!parsed.ok) return { ok: false, findings: parsed.findings, locate: noLocation };
  const { document, lineCounter } = parsed;
  const full = (): { document: Document.Parsed; lineCounter: LineCounter } => ({ document, lineCounter });
  const locate: LocateFn = (path) => locatePath(document, lineCounter, [...path]);
  try {
    return { ok: true, data: toPlain(document), findings: [...parsed.findings], locate, full };
  } catch (error) {
    const code = (error as { code?: string }).code ?? 'V046_PARSE_ERROR';
    return { ok: false, findings: [...parsed.findings, { code, message: (error as Error).message, severity: 'fatal' }], locate, full };
  }
}

/**
 * Gives `target` the `document` and `lineCounter` properties of a manifest parse result, composed
 * on first read when the fast path was taken (enumerable, so a spread copy still carries them).
 */
export function attachDocument<Target extends object>(target: Target, read: PlainReadResult): Target {
  const full = read.full;
  if (!full) return target;
  Object.defineProperties(target, {
    document: { get: () => full().document, enumerable: true, configurable: true },
    lineCounter: { get: () => full().lineCounter, enumerable: true, configurable: true },
  });
  return target;
}
