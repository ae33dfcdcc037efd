import type { z } from 'zod';

/** A key present in the data but not defined by the schema at that place. */
export interface UnknownKey {
  path: (string | number)[];
  key: string;
}

interface ZodInternals {
  _zod: { def: Record<string, unknown> & { type: string } };
}

function definitionOf(schema: unknown): (Record<string, unknown> & { type: string }) | undefined {
  return (schema as ZodInternals | undefined)?._zod?.def;
}

/** Peels wrappers (optional, nullable, default, preprocess pipes) down to the structural schema. */
function unwrap(schema: unknown): unknown {
  let current = schema;
  for (let guard = 0; guard < 20; guard += 1) {
    const definition = definitionOf(current);
    if (!definition) return current;
    if (definition.type === 'optional' || definition.type === 'nullable' || definition.type === 'default' || definition.type === 'prefault') {
      current = definition.innerType;
    } else if (definition.type === 'pipe') {
      const inner = definitionOf(definition.in);
      current = inner && inner.type === 'transform' ? definition.out : definition.in;
    } else {
      return current;
    }
  }
  return current;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Walks `data` alongside the (model-mode) zod schema and lists every key the schema does not
 * define (V013), in document order. Subtrees under unknown keys are not visited. The known-key
 * lists therefore come from the one schema definition and cannot drift from it.
 */
export function findUnknownKeys(schema: z.ZodType, data: unknown): UnknownKey[] {
  const found: UnknownKey[] = [];
  const stack: Array<{ schema: unknown; value: unknown; path: (string | number)[] }> = [{ schema, value: data, path: [] }];
  while (stack.length > 0) {
    const item = stack.pop()!;
    const structural = unwrap(item.schema);
    const definition = definitionOf(structural);
    if (!definition) continue;
    const children: Array<{ schema: unknown; value: unknown; path: (string | number)[] }> = [];
    if (definition.type === 'object' && isPlainObject(item.value)) {
      const shape = definition.shape as Record<string, unknown>;
      for (const [key, value] of Object.entries(item.value)) {
        if (Object.hasOwn(shape, key)) children.push({ schema: shape[key], value, path: [...item.path, key] });
        else found.push({ path: item.path, key });
      }
    } else if (definition.type === 'array' && Array.isArray(item.value)) {
      item.value.forEach((value, index) => children.push({ schema: definition.element, value, path: [...item.path, index] }));
    } else if (definition.type === 'record' && isPlainObject(item.value)) {
      for (const [key, value] of Object.entries(item.value)) children.push({ schema: definition.valueType, value, path: [...item.path, key] });
    }
    // Depth-first in document order: push children reversed.
    for (let index = children.length - 1; index >= 0; index -= 1) stack.push(children[index]!);
  }
  return found;
}
