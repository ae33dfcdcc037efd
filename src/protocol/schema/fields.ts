import { z } from 'zod';

/**
 * Schema building blocks shared by the IMPL and PROGRAM schemas.
 *
 * One factory builds two variants from the same field list:
 * - `model`: tolerant. Only *types* are checked (enums, patterns and required-ness are the
 *   job of the named validation rules, which give protocol-exact messages). Scalars are
 *   coerced the way Go's yaml.v3 decodes them (numbers into string fields keep their text,
 *   YAML 1.1 booleans, whole floats into ints). Arrays default to `[]`.
 * - `export`: strict. Enums, patterns, required fields and `additionalProperties: false`,
 *   used for `polywave schema impl` (JSON Schema) and conformance tests.
 */
export type SchemaMode = 'model' | 'export';

const yamlTrue = new Set(['y', 'Y', 'yes', 'Yes', 'YES', 'on', 'On', 'ON', 'true', 'True', 'TRUE']);
const yamlFalse = new Set(['n', 'N', 'no', 'No', 'NO', 'off', 'Off', 'OFF', 'false', 'False', 'FALSE']);

function nullToUndefined(value: unknown): unknown {
  return value === null ? undefined : value;
}

/**
 * Model-mode leaf schemas are immutable and carry no per-field data, so one instance serves every
 * field: the IMPL model has ~100 string fields, and building zod schemas is a measurable part of
 * a CLI call (each instance sets up dozens of closures). Export mode builds fresh ones, so the
 * JSON Schema export never sees a shared node.
 */
const sharedModelLeaves: { string?: z.ZodType; stringItem?: z.ZodType; int?: z.ZodType; bool?: z.ZodType } = {};

/** A string field; numbers and booleans written unquoted become their text. */
export function stringField(mode: SchemaMode) {
  if (mode === 'export') return z.string();
  return (sharedModelLeaves.string ??= buildModelString()) as ReturnType<typeof buildModelString>;
}

function buildModelString() {
  return z.preprocess((value) => {
    if (typeof value === 'number' || typeof value === 'boolean') return String(value);
    return nullToUndefined(value);
  }, z.string().optional());
}

/** A string list item (numbers/booleans become their text in model mode). */
export function stringItem(mode: SchemaMode) {
  if (mode === 'export') return z.string();
  return (sharedModelLeaves.stringItem ??= buildModelStringItem()) as ReturnType<typeof buildModelStringItem>;
}

function buildModelStringItem() {
  return z.preprocess((value) => (typeof value === 'number' || typeof value === 'boolean' ? String(value) : value), z.string());
}

/** A string field restricted to `values` in export mode (the rules check it in model mode). */
export function enumField<const Values extends readonly [string, ...string[]]>(mode: SchemaMode, values: Values) {
  if (mode === 'export') return z.enum(values);
  return stringField(mode);
}

/** A string field with a regex in export mode. */
export function patternField(mode: SchemaMode, pattern: RegExp) {
  if (mode === 'export') return z.string().regex(pattern);
  return stringField(mode);
}

/** An integer field; accepts whole floats and digit strings like Go's decoder. */
export function intField(mode: SchemaMode) {
  if (mode === 'export') return z.int();
  return (sharedModelLeaves.int ??= buildModelInt()) as ReturnType<typeof buildModelInt>;
}

function buildModelInt() {
  return z.preprocess((value) => {
    if (typeof value === 'string' && /^[-+]?\d+(\.0+)?$/.test(value.trim())) return Number(value.trim());
    if (typeof value === 'number' && Number.isFinite(value) && Number.isInteger(Math.trunc(value)) && value === Math.trunc(value)) return value;
    return nullToUndefined(value);
  }, z.int().optional());
}

/** A boolean field; accepts the YAML 1.1 words (`yes`, `on`, …) Go's decoder accepts. */
export function boolField(mode: SchemaMode) {
  if (mode === 'export') return z.boolean();
  return (sharedModelLeaves.bool ??= buildModelBool()) as ReturnType<typeof buildModelBool>;
}

function buildModelBool() {
  return z.preprocess((value) => {
    if (typeof value === 'string') {
      if (yamlTrue.has(value)) return true;
      if (yamlFalse.has(value)) return false;
    }
    return nullToUndefined(value);
  }, z.boolean().optional());
}

/** A list field; `null`/absent become `[]` in model mode. */
export function listField<Item extends z.ZodType>(mode: SchemaMode, item: Item) {
  if (mode === 'export') return z.array(item);
  return z.preprocess(nullToUndefined, z.array(item).default([]));
}

/** A map with free keys (agent IDs, `wave{N}`, …). */
export function mapField<Value extends z.ZodType>(mode: SchemaMode, value: Value) {
  if (mode === 'export') return z.record(z.string(), value);
  return z.preprocess(nullToUndefined, z.record(z.string(), value).optional());
}

/** An optional nested object field (null means absent). */
export function objectField<Shape extends z.ZodType>(mode: SchemaMode, shape: Shape) {
  if (mode === 'export') return shape;
  return z.preprocess(nullToUndefined, shape.optional());
}

/**
 * An object: strict (no additional properties) in export mode; in model mode unknown keys are
 * dropped from the value and reported separately by `findUnknownKeys` (V013) with their line.
 */
export function objectOf<Shape extends z.ZodRawShape>(mode: SchemaMode, shape: Shape) {
  return mode === 'export' ? z.strictObject(shape) : z.object(shape);
}

/**
 * In export mode, marks the listed keys required and leaves the others optional; in model mode
 * every key is optional (required-ness is reported by V005 rules with protocol messages).
 */
export function withRequired<Shape extends z.ZodRawShape>(mode: SchemaMode, shape: Shape, required: ReadonlyArray<keyof Shape>): Shape {
  if (mode === 'model') return shape;
  const result: Record<string, z.ZodType> = {};
  for (const [key, schema] of Object.entries(shape)) {
    result[key] = required.includes(key) ? (schema as z.ZodType) : (schema as z.ZodType).optional();
  }
  return result as unknown as Shape;
}
