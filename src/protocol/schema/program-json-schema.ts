import { z } from 'zod';
import { buildProgramSchemas } from './program-schema.js';

/** The JSON Schema (draft 2020-12) of the PROGRAM manifest, from the same zod field list as the parser. */
export function programJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(buildProgramSchemas('export').manifest, { target: 'draft-2020-12', io: 'output', unrepresentable: 'any' }) as Record<string, unknown>;
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: 'https://polywave.dev/schemas/program-manifest.schema.json',
    title: 'Polywave PROGRAM manifest',
    ...schema,
  };
}
