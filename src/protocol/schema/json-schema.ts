import { z } from 'zod';
import { buildImplSchemas } from './impl-schema.js';

/**
 * The JSON Schema (draft 2020-12) of the IMPL manifest, generated from the same zod field list
 * as the parser (export mode: enums, patterns, required fields, no additional properties).
 * Differences from ../spec/impl-manifest.schema.json are listed in docs/schema-differences.md.
 */
export function implJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(buildImplSchemas('export').manifest, { target: 'draft-2020-12', io: 'output', unrepresentable: 'any' }) as Record<string, unknown>;
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: 'https://polywave.dev/schemas/impl-manifest.schema.json',
    title: 'Polywave IMPL manifest',
    ...schema,
  };
}
