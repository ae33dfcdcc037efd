import { fileActions, gateTypes } from '../schema/impl-schema.js';

/** Synonyms Scouts write for `file_ownership[].action` (Go `actionAliases`, §3.7). */
export const actionAliases: Readonly<Record<string, (typeof fileActions)[number]>> = {
  edit: 'modify',
  update: 'modify',
  change: 'modify',
  create: 'new',
  add: 'new',
  remove: 'delete',
};

/**
 * The canonical action for a non-canonical value — an alias (`update` → `modify`) or a case
 * variant (`Modify` → `modify`, `Update` → `modify`) — or undefined when there is none.
 */
export function canonicalAction(value: string): (typeof fileActions)[number] | undefined {
  const lower = value.toLowerCase();
  if (value !== lower && (fileActions as readonly string[]).includes(lower)) return lower as (typeof fileActions)[number];
  return Object.hasOwn(actionAliases, lower) ? actionAliases[lower] : undefined;
}

/**
 * The gate type `validate --fix` writes for a gate type: a case variant of a valid type becomes
 * that type (`Build` → `build`), anything else invalid becomes `custom` (Go `FixGateTypes`);
 * undefined when the type is already valid.
 */
export function canonicalGateType(value: string): (typeof gateTypes)[number] | undefined {
  if ((gateTypes as readonly string[]).includes(value)) return undefined;
  const lower = value.toLowerCase();
  if ((gateTypes as readonly string[]).includes(lower)) return lower as (typeof gateTypes)[number];
  return 'custom';
}
