import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { isBlocking, type Finding } from '../src/errors/finding.js';
import { parseImpl } from '../src/protocol/parse-impl.js';
import { parseProgram } from '../src/protocol/parse-program.js';
import { validateProgram } from '../src/protocol/program/index.js';
import { implJsonSchema } from '../src/protocol/schema/json-schema.js';
import { programJsonSchema } from '../src/protocol/schema/program-json-schema.js';
import { validateImpl } from '../src/protocol/validate-impl.js';
import { corpusRoot, repoRoot, runCli, specRoot } from './support/cli.js';
import { listYamlFiles, parseStdoutJson } from './support/cli-assert.js';

/**
 * (a) Our generated JSON Schemas accept every corpus manifest our validator accepts.
 * (b) The protocol's own schema (../spec/impl-manifest.schema.json) against the corpus: every
 *     rejection is either a real error (our validator reports the same field) or one of the
 *     differences documented in docs/schema-differences.md — and that document lists every
 *     structural difference between the two schemas, no more, no less.
 */

type Schema = Record<string, unknown>;

function compile(schema: Schema): ValidateFunction {
  const ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false, allowUnionTypes: true });
  addFormats.default(ajv);
  return ajv.compile(schema);
}

const corpusFiles = listYamlFiles(corpusRoot);
const isProgram = (file: string): boolean => file.split(path.sep).includes('PROGRAM');
const implFiles = corpusFiles.filter((file) => !isProgram(file));
const programFiles = corpusFiles.filter(isProgram);
const specSchema = JSON.parse(readFileSync(path.join(specRoot, 'impl-manifest.schema.json'), 'utf8')) as Schema;
const differencesDoc = readFileSync(path.join(repoRoot, 'docs', 'schema-differences.md'), 'utf8');

interface CorpusImpl {
  name: string;
  data: unknown;
  errors: Finding[];
}

const corpusImpls: CorpusImpl[] = implFiles.map((file) => {
  const parsed = parseImpl(readFileSync(file, 'utf8'));
  const findings = [...parsed.findings, ...(parsed.manifest ? validateImpl({ manifest: parsed.manifest, locate: parsed.locate }) : [])];
  return { name: path.relative(corpusRoot, file), data: parsed.data, errors: findings.filter(isBlocking) };
});

// ---------------------------------------------------------------------------------------------
// Structural diff of two JSON Schemas

interface SchemaDifference {
  /** Schema path: `$.waves[].agents[].id`, `$.completion_reports.*.status`. */
  path: string;
  kind: 'property-added' | 'property-missing' | 'required-relaxed' | 'required-added' | 'keyword' | 'alternatives' | 'property-names' | 'openness';
  /** Property (for property/required kinds) or keyword name. */
  name?: string;
  detail: string;
}

const ignoredKeywords = new Set(['description', 'properties', 'items', 'additionalProperties', '$defs', '$schema', '$id', 'title', 'required', 'propertyNames', 'anyOf', '$ref']);
/** zod writes safe-integer bounds on every integer; they mean "an integer", not a real bound. */
const safeIntegerBounds = new Set([Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER]);

function resolveSpec(node: Schema | undefined): Schema | undefined {
  let current = node;
  while (current && typeof current.$ref === 'string') {
    const name = current.$ref.split('/').pop()!;
    const { $ref: _ref, ...rest } = current;
    current = { ...((specSchema.$defs as Record<string, Schema>)[name] as Schema), ...rest };
  }
  return current;
}

function keywordsOf(node: Schema): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (ignoredKeywords.has(key)) continue;
    if ((key === 'minimum' || key === 'maximum') && safeIntegerBounds.has(value as number)) continue;
    result[key] = value;
  }
  return result;
}

function diffSchemas(spec: Schema | undefined, ours: Schema | undefined, schemaPath: string, out: SchemaDifference[]): void {
  const resolved = resolveSpec(spec);
  if (!resolved || !ours) return;
  let oursNode = ours;
  if (Array.isArray(ours.anyOf) && !Array.isArray(resolved.anyOf)) {
    out.push({ path: schemaPath, kind: 'alternatives', detail: JSON.stringify(ours.anyOf) });
    // Compare the branch of the same type as the spec (the other branches are the difference).
    const same = (ours.anyOf as Schema[]).find((branch) => branch.type === resolved.type && !('const' in branch));
    if (!same) return;
    oursNode = same;
  }
  const specKeywords = keywordsOf(resolved);
  const ourKeywords = keywordsOf(oursNode);
  for (const keyword of new Set([...Object.keys(specKeywords), ...Object.keys(ourKeywords)])) {
    if (JSON.stringify(specKeywords[keyword]) !== JSON.stringify(ourKeywords[keyword])) {
      out.push({ path: schemaPath, kind: 'keyword', name: keyword, detail: `spec ${JSON.stringify(specKeywords[keyword])}, ours ${JSON.stringify(ourKeywords[keyword])}` });
    }
  }
  const isObject = resolved.type === 'object' || 'properties' in resolved || 'properties' in oursNode;
  if (isObject) {
    const specProperties = (resolved.properties ?? {}) as Record<string, Schema>;
    const ourProperties = (oursNode.properties ?? {}) as Record<string, Schema>;
    const specRequired = new Set((resolved.required ?? []) as string[]);
    const ourRequired = new Set((oursNode.required ?? []) as string[]);
    for (const name of specRequired) if (!ourRequired.has(name)) out.push({ path: schemaPath, kind: 'required-relaxed', name, detail: `spec requires ${name}` });
    for (const name of ourRequired) if (!specRequired.has(name)) out.push({ path: schemaPath, kind: 'required-added', name, detail: `we require ${name}` });
    const specOpen = resolved.additionalProperties !== false && typeof resolved.additionalProperties !== 'object';
    const ourOpen = oursNode.additionalProperties !== false && typeof oursNode.additionalProperties !== 'object';
    if (specOpen !== ourOpen) out.push({ path: schemaPath, kind: 'openness', detail: `spec ${specOpen ? 'open' : 'closed'}, ours ${ourOpen ? 'open' : 'closed'}` });
    for (const name of [...new Set([...Object.keys(specProperties), ...Object.keys(ourProperties)])].sort()) {
      const childPath = `${schemaPath}.${name}`;
      if (!(name in ourProperties)) out.push({ path: childPath, kind: 'property-missing', name, detail: 'only in the spec schema' });
      else if (!(name in specProperties)) out.push({ path: childPath, kind: 'property-added', name, detail: `only in ours: ${JSON.stringify(ourProperties[name]).slice(0, 120)}` });
      else diffSchemas(specProperties[name], ourProperties[name], childPath, out);
    }
    const specMap = typeof resolved.additionalProperties === 'object' ? (resolved.additionalProperties as Schema) : undefined;
    const ourMap = typeof oursNode.additionalProperties === 'object' ? (oursNode.additionalProperties as Schema) : undefined;
    if (specMap && ourMap) diffSchemas(specMap, ourMap, `${schemaPath}.*`, out);
    // `{type: string}` key names only say what JSON already guarantees.
    const keyRule = (node: Schema) => {
      const names = node.propertyNames as Schema | undefined;
      return names && !(Object.keys(names).length === 1 && names.type === 'string') ? JSON.stringify(names) : undefined;
    };
    if (keyRule(resolved) !== keyRule(oursNode)) out.push({ path: schemaPath, kind: 'property-names', detail: `spec ${keyRule(resolved) ?? 'any'}, ours ${keyRule(oursNode) ?? 'any'}` });
  }
  if (resolved.type === 'array') diffSchemas(resolved.items as Schema | undefined, oursNode.items as Schema | undefined, `${schemaPath}[]`, out);
}

/** Each documented difference (docs/schema-differences.md) and the structural differences it covers. */
const documented: Array<{ id: string; covers: (difference: SchemaDifference) => boolean }> = [
  { id: 'interviewing-state', covers: (d) => d.path === '$.state' && d.kind === 'keyword' && d.name === 'enum' },
  { id: 'agent-context-source', covers: (d) => d.path === '$.waves[].agents[].context_source' && d.kind === 'property-added' },
  {
    id: 'scaffold-file-alias',
    covers: (d) => (d.path === '$.scaffolds[].file' && d.kind === 'property-added') || (d.path === '$.scaffolds[]' && d.kind === 'required-relaxed' && d.name === 'file_path'),
  },
  { id: 'scaffold-status-values', covers: (d) => d.path === '$.scaffolds[].status' && d.kind === 'keyword' && (d.name === 'enum' || d.name === 'pattern') },
  {
    id: 'scaffold-ownership-row',
    covers: (d) => (d.path === '$.file_ownership[].agent' && d.kind === 'alternatives') || (d.path === '$.file_ownership[].wave' && d.kind === 'keyword' && d.name === 'minimum'),
  },
  { id: 'wave-minimum-in-rules', covers: (d) => d.path === '$.waves[].number' && d.kind === 'keyword' && d.name === 'minimum' },
  {
    id: 'gate-scheduling-fields',
    covers: (d) => d.kind === 'property-added' && ['$.quality_gates.gates[].phase', '$.quality_gates.gates[].parallel_group', '$.quality_gates.gates[].timeout_seconds'].includes(d.path),
  },
  { id: 'v048-exempt', covers: (d) => d.path === '$.file_ownership[].v048_exempt' && d.kind === 'property-added' },
  { id: 'conflict-pattern', covers: (d) => d.path === '$.file_ownership[].conflict_pattern' && d.kind === 'property-added' },
  { id: 'original-branch', covers: (d) => d.path === '$.original_branch' && d.kind === 'property-added' },
  { id: 'report-usage', covers: (d) => d.path === '$.completion_reports.*.usage' && d.kind === 'property-added' },
  { id: 'wiring-description', covers: (d) => d.kind === 'property-added' && (d.path === '$.wiring[].description' || d.path === '$.wiring_validation_reports.*.gaps[].declaration.description') },
  { id: 'critic-review-shape', covers: (d) => d.path.startsWith('$.critic_report.agent_reviews.*') && (d.kind === 'property-added' || d.kind === 'openness') },
  {
    id: 'known-issue-title',
    covers: (d) => d.path === '$.known_issues[]' && ((d.kind === 'required-added' && d.name === 'title') || (d.kind === 'required-relaxed' && d.name === 'description')),
  },
  {
    id: 'pre-mortem-empty-values',
    covers: (d) => d.kind === 'alternatives' && ['$.pre_mortem.overall_risk', '$.pre_mortem.rows[].likelihood', '$.pre_mortem.rows[].impact'].includes(d.path),
  },
  { id: 'agent-files-optional', covers: (d) => d.path === '$.waves[].agents[]' && d.kind === 'required-relaxed' && d.name === 'files' },
  {
    id: 'relaxed-required',
    covers: (d) =>
      d.kind === 'required-relaxed' &&
      [
        '$.quality_gates|level',
        '$.quality_gates.gates[]|required',
        '$.pre_mortem|overall_risk',
        '$.pre_mortem|rows',
        '$.pre_mortem.rows[]|likelihood',
        '$.pre_mortem.rows[]|impact',
        '$.post_merge_checklist|groups',
        '$.post_merge_checklist.groups[]|items',
        '$.completion_reports.*.interface_deviations[]|downstream_action_required',
        '$.completion_reports.*.dedup_stats|hits',
        '$.completion_reports.*.dedup_stats|misses',
        '$.completion_reports.*.dedup_stats|tokens_saved_estimate',
        '$.integration_connectors[]|reason',
        '$.integration_reports.*|wave',
        '$.integration_reports.*|summary',
        '$.integration_reports.*.gaps[]|agent_id',
        '$.integration_reports.*.gaps[]|category',
        '$.integration_reports.*.gaps[]|reason',
        '$.integration_reports.*.gaps[]|suggested_fix',
        '$.stub_reports.*.hits[]|context',
        '$.wiring_validation_reports.*|summary',
      ].includes(`${d.path}|${d.name}`),
  },
  { id: 'feature-slug-pattern', covers: (d) => d.path === '$.feature_slug' && d.kind === 'keyword' && d.name === 'pattern' },
  { id: 'report-key-pattern', covers: (d) => d.kind === 'property-names' && (d.path === '$.completion_reports' || d.path === '$.stub_reports') },
  { id: 'timestamp-format', covers: (d) => d.path === '$.worktrees_created_at' && d.kind === 'keyword' && d.name === 'format' },
];

function documentedIdOf(difference: SchemaDifference): string | undefined {
  return documented.find((entry) => entry.covers(difference))?.id;
}

/** The ids in the first column of the differences table of docs/schema-differences.md. */
function idsInDoc(): string[] {
  return [...differencesDoc.matchAll(/^\| `([a-z0-9-]+)` \|/gm)].map((match) => match[1]!);
}

// ---------------------------------------------------------------------------------------------
// ajv errors → schema paths and our field paths

function pointerSegments(pointer: string): string[] {
  return pointer === '' ? [] : pointer.slice(1).split('/').map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** `/waves/0/agents/1/id` → `waves[0].agents[1].id` (the `field` format of our findings). */
function fieldOf(segments: readonly string[]): string {
  let field = '';
  for (const segment of segments) field += /^\d+$/.test(segment) ? `[${segment}]` : field === '' ? segment : `.${segment}`;
  return field;
}

/** The schema path (as in {@link SchemaDifference}) of an instance location, walking the spec schema. */
function schemaPathOf(segments: readonly string[]): string {
  let node = resolveSpec(specSchema);
  let result = '$';
  for (const segment of segments) {
    if (!node) return `${result}.?`;
    if (node.type === 'array') {
      result += '[]';
      node = resolveSpec(node.items as Schema);
    } else if (node.properties && segment in (node.properties as Record<string, Schema>)) {
      result += `.${segment}`;
      node = resolveSpec((node.properties as Record<string, Schema>)[segment]);
    } else if (typeof node.additionalProperties === 'object') {
      result += '.*';
      node = resolveSpec(node.additionalProperties as Schema);
    } else {
      result += `.${segment}`;
      node = undefined;
    }
  }
  return result;
}

/** The structural difference an ajv error of the spec schema runs into, if any. */
function differenceFor(error: ErrorObject): SchemaDifference | undefined {
  const segments = pointerSegments(error.instancePath);
  const at = schemaPathOf(segments);
  const params = error.params as Record<string, unknown>;
  const candidates = structuralDifferences.filter((difference) => {
    switch (error.keyword) {
      case 'additionalProperties':
        return difference.kind === 'property-added' && difference.path === `${at}.${String(params.additionalProperty)}`;
      case 'required':
        return difference.kind === 'required-relaxed' && difference.path === at && difference.name === params.missingProperty;
      case 'propertyNames':
      case 'pattern':
        return (difference.path === at && (difference.kind === 'keyword' || difference.kind === 'alternatives')) || (difference.kind === 'property-names' && `${difference.path}.*` === at);
      default:
        return difference.path === at && (difference.kind === 'alternatives' || (difference.kind === 'keyword' && difference.name === error.keyword));
    }
  });
  return candidates[0];
}

/** Errors of `validate` at an instance location, or under it. */
function errorsAt(errors: readonly ErrorObject[] | null | undefined, instancePath: string): ErrorObject[] {
  return (errors ?? []).filter((error) => error.instancePath === instancePath || error.instancePath.startsWith(`${instancePath}/`));
}

const ourImplSchema = implJsonSchema();
const structuralDifferences: SchemaDifference[] = [];
diffSchemas(specSchema, ourImplSchema, '$', structuralDifferences);

describe('(a) our generated JSON Schemas accept every corpus manifest our validator accepts', () => {
  it('`polywave schema impl|program` prints exactly implJsonSchema()/programJsonSchema()', async () => {
    const impl = await runCli(['schema', 'impl']);
    expect(impl.code, impl.stderr).toBe(0);
    expect(parseStdoutJson(impl)).toEqual(JSON.parse(JSON.stringify(ourImplSchema)));
    const program = await runCli(['schema', 'program']);
    expect(program.code, program.stderr).toBe(0);
    expect(parseStdoutJson(program)).toEqual(JSON.parse(JSON.stringify(programJsonSchema())));
  });

  it('IMPL: ajv (2020-12, strict) with our schema accepts every manifest our validator calls valid', () => {
    const validate = compile(ourImplSchema);
    const valid = corpusImpls.filter((impl) => impl.data !== null && impl.errors.length === 0);
    expect(valid.length).toBeGreaterThan(100);
    const rejected = valid.filter((impl) => !validate(impl.data)).map((impl) => `${impl.name}: ${JSON.stringify(validate.errors)}`);
    expect(rejected).toEqual([]);
  });

  it('IMPL: our schema is not accept-all (it rejects what the validator rejects for shape)', () => {
    const validate = compile(ourImplSchema);
    const base = { title: 't', feature_slug: 'a-b', verdict: 'SUITABLE' };
    expect(validate(base)).toBe(true);
    expect(validate({ ...base, state: 'DANCING' })).toBe(false);
    expect(validate({ ...base, colour: 'blue' })).toBe(false);
    expect(validate({ ...base, waves: [{ number: 1, agents: [{ id: 'a1', task: 'x' }] }] })).toBe(false);
    expect(validate({ title: 't', verdict: 'SUITABLE' })).toBe(false);
  });

  it('PROGRAM: ajv with our program schema accepts every PROGRAM manifest our validator calls valid', () => {
    const validate = compile(programJsonSchema());
    let checked = 0;
    for (const file of programFiles) {
      const parsed = parseProgram(readFileSync(file, 'utf8'));
      if (!parsed.manifest) continue;
      const findings = [...parsed.findings, ...validateProgram(parsed.manifest, { locate: parsed.locate, fileName: path.basename(file) })];
      if (findings.some(isBlocking)) continue;
      expect(validate(parsed.data), `${path.relative(corpusRoot, file)}: ${JSON.stringify(validate.errors)}`).toBe(true);
      checked += 1;
    }
    expect(checked).toBeGreaterThanOrEqual(2);
  });
});

describe('(b) the protocol schema vs ours: every difference documented, every corpus rejection explained', () => {
  it('docs/schema-differences.md lists exactly the structural differences between the two schemas', () => {
    const undocumented = structuralDifferences.filter((difference) => documentedIdOf(difference) === undefined);
    expect(undocumented, 'differences without a row in docs/schema-differences.md').toEqual([]);
    const used = new Set(structuralDifferences.map(documentedIdOf));
    const inDoc = idsInDoc();
    expect([...new Set(inDoc)].sort()).toEqual(documented.map((entry) => entry.id).sort());
    expect(inDoc.filter((id) => !used.has(id)), 'documented differences that no longer exist').toEqual([]);
  });

  it('every spec-schema rejection of a corpus IMPL manifest is a real error or a documented difference', () => {
    const validateSpec = compile(specSchema);
    const validateOurs = compile(ourImplSchema);
    const histogram = new Map<string, number>();
    const unexplained: string[] = [];
    let rejectedManifests = 0;
    let errorCount = 0;
    for (const impl of corpusImpls) {
      if (impl.data === null) continue;
      if (validateSpec(impl.data)) continue;
      rejectedManifests += 1;
      validateOurs(impl.data);
      const ourErrors = validateOurs.errors;
      for (const error of validateSpec.errors ?? []) {
        errorCount += 1;
        const segments = pointerSegments(error.instancePath);
        const params = error.params as Record<string, unknown>;
        const extra = typeof params.additionalProperty === 'string' ? params.additionalProperty : typeof params.missingProperty === 'string' ? params.missingProperty : undefined;
        const fields = [fieldOf(segments), ...(extra ? [fieldOf([...segments, extra])] : [])];
        let category: string | undefined;
        // 1. A real error: our validator reports an error at the same field.
        if (impl.errors.some((finding) => finding.field !== undefined && fields.includes(finding.field))) category = 'rejected by polywave too';
        // 2. A documented difference — and our schema does accept the value there.
        if (!category) {
          const difference = differenceFor(error);
          const id = difference ? documentedIdOf(difference) : undefined;
          if (id && errorsAt(ourErrors, error.instancePath).length === 0) category = id;
        }
        if (!category) {
          unexplained.push(`${impl.name}: ${error.keyword} at ${error.instancePath || '/'} ${JSON.stringify(error.params)} (${schemaPathOf(segments)})`);
          continue;
        }
        histogram.set(category, (histogram.get(category) ?? 0) + 1);
      }
    }
    console.log(
      `spec schema rejects ${rejectedManifests} of ${corpusImpls.length} corpus IMPL manifests (${errorCount} errors):\n` +
        [...histogram.entries()]
          .sort((left, right) => right[1] - left[1])
          .map(([category, count]) => `${String(count).padStart(5)}  ${category}`)
          .join('\n'),
    );
    expect(unexplained).toEqual([]);
    expect(rejectedManifests).toBeGreaterThan(0);
    // Every category used is documented (or is a real error).
    for (const category of histogram.keys()) if (category !== 'rejected by polywave too') expect(idsInDoc()).toContain(category);
  });
});
