import { COLLECTION_STYLE, constructFromEvents, defineMappingTag, defineScalarTag, EVENT_ID, NOT_RESOLVED, parseEvents, Schema, seqTag, strTag, type Event } from 'js-yaml';
import { defaultMaxYamlBytes, defaultMaxYamlDepth } from './safe-parse.js';

/**
 * The fast read path of a manifest: js-yaml builds the plain data directly (about 5× less CPU
 * than composing a `yaml` Document, which keeps every node, range and comment for format-
 * preserving edits and line numbers). It gives exactly what `toPlain(parseYamlSafe(text).document)`
 * gives, or nothing: every input where the two could differ is left to the full parse —
 *
 * - any js-yaml error: syntax errors, duplicate keys (E16 findings come from the full parse),
 *   more than one document, an empty document, depth over the limit;
 * - anchors and aliases (`maxAliases: 0`; the full parse bounds alias expansion);
 * - explicit tags (`!!str`, `!custom`…) and directives (`%YAML`, `%TAG`), where the full parse may
 *   warn or resolve differently;
 * - null and collection map keys (`~:`, `? [a]`), which `toPlain` spells by their source text;
 * - flow collections (`[`/`{`) whose closing bracket may sit at its parent's indentation, which
 *   the full parse warns about (any flow collection not closed on its own line falls back);
 * - text over the size limit or holding control characters (the full parse's coded errors).
 *
 * Scalars follow `toPlain`'s yaml.v3-like rule: a plain scalar is a number or a boolean only when
 * `String(value)` gives back its source text (`42`, `1.5`, `true`), else it stays the text as
 * written (`0123`, `1.10`, `True`, `1e3`, `.inf`); `~`, `null`, `Null`, `NULL` and the empty
 * scalar are null. Quoted and block scalars are strings.
 *
 * Proven equal on every corpus manifest and on generated edge cases by
 * src/protocol/yaml/fast-plain.test.ts (the same data, or a fallback — never a different value).
 */
export function loadPlainFast(text: string): { value: unknown } | undefined {
  if (text.length > defaultMaxYamlBytes / 3) return undefined;
  if (controlCharacter.test(text)) return undefined;
  try {
    const events = parseEvents(text, { maxDepth: defaultMaxYamlDepth });
    if (!plainEvents(text, events)) return undefined;
    const documents = constructFromEvents(events, { source: text, schema: plainSchema, maxAliases: 0 });
    if (documents.length !== 1) return undefined;
    const value = documents[0];
    return { value: value === undefined ? null : value };
  } catch {
    return undefined;
  }
}

// C0 controls other than tab, LF and CR, DEL, and a byte order mark: the full parse's coded errors.
// eslint-disable-next-line no-control-regex
const controlCharacter = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufeff]/;

/**
 * True when the event stream holds nothing the full parse could report or spell differently:
 * no directive, no anchor, alias or explicit tag, and no flow collection over more than one line.
 */
function plainEvents(text: string, events: readonly Event[]): boolean {
  for (const event of events) {
    switch (event.type) {
      case EVENT_ID.DOCUMENT:
        if (event.directives.length > 0) return false;
        break;
      case EVENT_ID.ALIAS:
        return false;
      case EVENT_ID.SCALAR:
        if (event.anchorStart !== -1 || event.tagStart !== -1) return false;
        break;
      case EVENT_ID.SEQUENCE:
      case EVENT_ID.MAPPING:
        if (event.anchorStart !== -1 || event.tagStart !== -1) return false;
        if (event.style === COLLECTION_STYLE.FLOW && event.start !== -1 && !closesOnItsLine(text, event.start)) return false;
        break;
      default:
        break;
    }
  }
  return true;
}

/**
 * True when the flow collection opening at `start` visibly closes on the same line (quotes and
 * nesting followed). Anything else (a newline first, an unclosed quote) counts as multi-line: the
 * full parse may warn about the closing bracket's indentation there.
 */
function closesOnItsLine(text: string, start: number): boolean {
  let depth = 0;
  for (let index = start; index < text.length; index += 1) {
    const char = text[index];
    if (char === '\n' || char === '\r') return false;
    if (char === '[' || char === '{') depth += 1;
    else if (char === ']' || char === '}') {
      depth -= 1;
      if (depth === 0) return true;
    } else if (char === '"' || char === "'") {
      for (index += 1; index < text.length; index += 1) {
        const inner = text[index];
        if (inner === '\n' || inner === '\r') return false;
        if (char === '"' && inner === '\\') index += 1;
        else if (inner === char) {
          if (char === "'" && text[index + 1] === "'") index += 1;
          else break;
        }
      }
    }
  }
  return false;
}

const plainInteger = /^[-+]?[0-9]+$/;
const plainFloat = /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$/;

const nullTag = defineScalarTag<null>('tag:yaml.org,2002:null', {
  implicit: true,
  implicitFirstChars: ['', '~', 'n', 'N'],
  resolve: (source, isExplicit) => (!isExplicit && (source === '' || source === '~' || source === 'null' || source === 'Null' || source === 'NULL') ? null : NOT_RESOLVED),
  identify: (value) => value === null,
});

const boolTag = defineScalarTag<boolean>('tag:yaml.org,2002:bool', {
  implicit: true,
  implicitFirstChars: ['t', 'f'],
  resolve: (source, isExplicit) => (isExplicit ? NOT_RESOLVED : source === 'true' ? true : source === 'false' ? false : NOT_RESOLVED),
  identify: (value) => typeof value === 'boolean',
});

const numberTag = defineScalarTag<number>('tag:yaml.org,2002:float', {
  implicit: true,
  implicitFirstChars: ['-', '+', '.', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9'],
  resolve: (source, isExplicit) => {
    if (isExplicit || !(plainInteger.test(source) || plainFloat.test(source))) return NOT_RESOLVED;
    const value = Number(source);
    return String(value) === source ? value : NOT_RESOLVED;
  },
  identify: (value) => typeof value === 'number',
});

const plainMapTag = defineMappingTag<Record<string, unknown>>('tag:yaml.org,2002:map', {
  create: () => ({}),
  identify: (value) => value !== null && typeof value === 'object' && !Array.isArray(value),
  addPair: (target, key, value) => {
    // Null and collection keys are spelled by their source text by toPlain: leave them to it.
    if (key === null || typeof key === 'object') return 'key needs the full parse';
    const name = String(key);
    if (name === '__proto__') Object.defineProperty(target, name, { value, enumerable: true, writable: true, configurable: true });
    else target[name] = value;
    return '';
  },
  has: (target, key) => key !== null && typeof key !== 'object' && Object.prototype.hasOwnProperty.call(target, String(key)),
  keys: (target) => Object.keys(target),
  get: (target, key) => target[String(key)],
});

const plainSchema = new Schema([strTag, seqTag, plainMapTag, nullTag, boolTag, numberTag]);
