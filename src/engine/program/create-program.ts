import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import type { Finding } from '../../errors/finding.js';
import { isBlocking } from '../../errors/finding.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { parseProgram } from '../../protocol/parse-program.js';
import { buildProgramFromImpls, type BuiltProgram } from '../../protocol/program/tier-assignment.js';
import { validateProgram } from '../../protocol/program/validate-program.js';
import { updateFileLocked } from '../../store/locked-write.js';
import { relativePosix } from './program-file.js';
import { loadSourceImpls } from './program-sources.js';

/** Options of {@link createProgram}. */
export interface CreateProgramOptions {
  /** IMPL slugs, file names or paths (at least two). */
  implReferences: readonly string[];
  /** Repository root: slugs are looked up in its docs/IMPL/, the manifest goes to its docs/PROGRAM/. */
  repoRoot: string;
  slug?: string;
  title?: string;
  /** `created` / `updated` (YYYY-MM-DD). */
  date: string;
}

/** The create-program JSON (Go keys; `validation_errors` only when the manifest would be invalid). */
export interface CreateProgramResult extends BuiltProgram {
  /** Relative to the repository root, as Go prints it. */
  manifest_path: string;
  validation_errors?: Finding[];
  /** The manifest was written (false when validation failed: nothing is written then). */
  written: boolean;
}

/** Renders a new manifest (2-space YAML, keys in the given order, a header comment). */
export function renderProgramYaml(manifest: object, comment: string): string {
  return `# ${comment}\n${stringify(manifest, { lineWidth: 0 })}`;
}

/**
 * create-program (E28, P1): a PROGRAM manifest from at least two existing IMPL docs, tiers from
 * file-ownership overlap (`buildProgramFromImpls`), written to
 * `<repoRoot>/docs/PROGRAM/PROGRAM-<slug>.yaml`. The generated manifest is validated first; when
 * it is invalid (e.g. an IMPL slug that is not kebab-case) nothing is written and the findings are
 * returned (Go writes it anyway). Refuses (X001, exit 2, nothing written): fewer than two IMPLs,
 * unreadable IMPLs, a PROGRAM file that already exists (never overwritten).
 */
export async function createProgram(options: CreateProgramOptions): Promise<CreateProgramResult> {
  const references = options.implReferences.map((reference) => reference.trim()).filter((reference) => reference !== '');
  if (references.length < 2) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `--from-impls needs at least 2 IMPLs (got ${references.length})` });
  }
  const sources = await loadSourceImpls(references, options.repoRoot);
  const built = buildProgramFromImpls({ impls: sources, date: options.date, ...(options.slug !== undefined ? { slug: options.slug } : {}), ...(options.title !== undefined ? { title: options.title } : {}) });
  const slug = built.manifest.program_slug;
  const fileName = `PROGRAM-${slug}.yaml`;
  const manifestPath = path.join(options.repoRoot, 'docs', 'PROGRAM', fileName);
  const text = renderProgramYaml(built.manifest, `PROGRAM: ${slug} (create-program from ${sources.map((source) => source.slug).join(', ')})`);
  const parsed = parseProgram(text);
  const findings = parsed.manifest ? validateProgram(parsed.manifest, { locate: parsed.locate, fileName }) : parsed.findings;
  const errors = findings.filter(isBlocking);
  const result: CreateProgramResult = { manifest_path: relativePosix(options.repoRoot, manifestPath), ...built, written: false };
  if (errors.length > 0) return { ...result, validation_errors: errors };

  if (existsSync(manifestPath)) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${result.manifest_path} already exists — choose another --slug, or add IMPLs to it with import-impls` });
  }
  await mkdir(path.dirname(manifestPath), { recursive: true });
  await updateFileLocked(
    manifestPath,
    (current) => {
      // Re-checked under the lock: a concurrent create-program of the same slug must not be overwritten.
      if (current !== '' || existsSync(manifestPath)) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${result.manifest_path} already exists` });
      return text;
    },
    { allowMissing: true },
  );
  return { ...result, written: true };
}
