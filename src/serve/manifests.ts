import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Finding } from '../errors/finding.js';
import { parseImpl, type ImplParseResult } from '../protocol/parse-impl.js';
import { parseProgram, type ProgramParseResult } from '../protocol/parse-program.js';
import { validateProgram } from '../protocol/program/validate-program.js';
import type { ImplManifest } from '../protocol/schema/impl-schema.js';
import { validateImpl } from '../protocol/validate-impl.js';
import { listManifestFiles } from '../store/list-manifests.js';
import { ConfinedReadError, maxManifestBytes, readConfined } from './safe-read.js';

/** One repository served: its id in URLs is `<basename>-<8 hex of sha256(realpath)>` (stable across restarts). */
export interface ServedRepo {
  id: string;
  name: string;
  /** Real path of the repository root. */
  path: string;
}

export function repoFor(root: string): ServedRepo {
  const real = realpathSync(root);
  const name = path.basename(real);
  const hash = createHash('sha256').update(real).digest('hex').slice(0, 8);
  return { id: `${name.replace(/[^A-Za-z0-9._-]/g, '_')}-${hash}`, name, path: real };
}

/** A manifest file as parsed and validated, with the stat it was read at. */
export interface LoadedManifest<Parsed> {
  file: string;
  /** Path relative to the repository (forward slashes). */
  relative: string;
  slug: string;
  parsed: Parsed;
  /** Parse findings plus the validator's (E16, I1–I6, … for an IMPL), computed once per file version. */
  findings: Finding[];
  mtimeMs: number;
  size: number;
}

export type LoadedImpl = LoadedManifest<ImplParseResult>;
export type LoadedProgram = LoadedManifest<ProgramParseResult>;

const slugFromFile = (file: string, prefix: string) => path.basename(file).replace(new RegExp(`^${prefix}-`), '').replace(/\.ya?ml$/i, '');

/**
 * Parsed manifests keyed by file, reused while the file's mtime and size are unchanged: answering
 * for an IMPL of 20 agents is then a stat and a lookup, not a YAML parse (≤ 50 ms, bench/serve.mjs).
 * Files are read through {@link readConfined}: a manifest that is a symlink out of the repository,
 * a FIFO, a device or over 2 MB is refused (not listed; asked for by slug, its coded refusal).
 */
export class ManifestCache {
  private readonly impls = new Map<string, LoadedImpl>();
  private readonly programs = new Map<string, LoadedProgram>();
  /** Why a manifest file was refused, while it stays so: what a request for its slug answers. */
  private readonly refused = new Map<string, ConfinedReadError>();

  impl(repo: ServedRepo, file: string): Promise<LoadedImpl | undefined> {
    return this.load(this.impls, repo, file, (text) => {
      const parsed = parseImpl(text);
      const findings: Finding[] = [...parsed.findings];
      if (parsed.manifest) findings.push(...validateImpl({ manifest: parsed.manifest, locate: parsed.locate }));
      return { parsed, findings, slug: parsed.manifest?.feature_slug || slugFromFile(file, 'IMPL') };
    });
  }

  program(repo: ServedRepo, file: string): Promise<LoadedProgram | undefined> {
    return this.load(this.programs, repo, file, (text) => {
      const parsed = parseProgram(text);
      const findings: Finding[] = [...parsed.findings];
      if (parsed.manifest) findings.push(...validateProgram(parsed.manifest, { locate: parsed.locate, fileName: file }));
      return { parsed, findings, slug: parsed.manifest?.program_slug || slugFromFile(file, 'PROGRAM') };
    });
  }

  /** `file` from `cache` while its mtime and size are unchanged, else read and `parse`d again; undefined once it is gone. */
  private async load<Parsed>(
    cache: Map<string, LoadedManifest<Parsed>>,
    repo: ServedRepo,
    file: string,
    parse: (text: string) => { parsed: Parsed; findings: Finding[]; slug: string },
  ): Promise<LoadedManifest<Parsed> | undefined> {
    let stats;
    try {
      stats = statSync(file);
    } catch {
      cache.delete(file);
      this.refused.delete(file);
      return undefined;
    }
    const cached = cache.get(file);
    if (cached && cached.mtimeMs === stats.mtimeMs && cached.size === stats.size) return cached;
    const relative = path.relative(repo.path, file).split(path.sep).join('/');
    let read;
    try {
      read = await readConfined(repo.path, file, { maxBytes: maxManifestBytes, shown: relative });
    } catch (error) {
      cache.delete(file);
      if (!(error instanceof ConfinedReadError)) throw error;
      if (error.code === 'SERVE_NOT_FOUND') return undefined;
      this.refused.set(file, error);
      throw error;
    }
    this.refused.delete(file);
    const { parsed, findings, slug } = parse(read.buffer.toString('utf8'));
    const loaded: LoadedManifest<Parsed> = {
      file,
      relative,
      slug,
      parsed,
      findings,
      mtimeMs: read.mtimeMs,
      size: read.size,
    };
    cache.set(file, loaded);
    return loaded;
  }

  /** Every IMPL manifest of the repository (docs/IMPL and docs/IMPL/complete), unreadable ones skipped. */
  async allImpls(repo: ServedRepo): Promise<LoadedImpl[]> {
    const out: LoadedImpl[] = [];
    for (const file of listManifestFiles(path.join(repo.path, 'docs', 'IMPL'), 'IMPL')) {
      try {
        const loaded = await this.impl(repo, file);
        if (loaded) out.push(loaded);
      } catch {
        // unreadable (permissions, vanished): not listed
      }
    }
    return out;
  }

  /** Every PROGRAM manifest: docs/PROGRAM/ (and complete/) and docs/PROGRAM-*.yaml. */
  async allPrograms(repo: ServedRepo): Promise<LoadedProgram[]> {
    const files = new Set(listManifestFiles(path.join(repo.path, 'docs', 'PROGRAM'), 'PROGRAM'));
    try {
      for (const name of readdirSync(path.join(repo.path, 'docs'))) if (/^PROGRAM-.*\.ya?ml$/.test(name)) files.add(path.join(repo.path, 'docs', name));
    } catch {
      // no docs/
    }
    const out: LoadedProgram[] = [];
    for (const file of [...files].sort()) {
      try {
        const loaded = await this.program(repo, file);
        if (loaded) out.push(loaded);
      } catch {
        // unreadable: not listed
      }
    }
    return out;
  }

  /**
   * The IMPL of `slug` (its feature_slug, else its file name), preferring docs/IMPL over complete/;
   * throws the {@link ConfinedReadError} of a refused `IMPL-<slug>.yaml` when no readable one has it.
   */
  async findImpl(repo: ServedRepo, slug: string): Promise<LoadedImpl | undefined> {
    const direct = path.join(repo.path, 'docs', 'IMPL', `IMPL-${slug}.yaml`);
    const quick = await this.impl(repo, direct).catch(() => undefined);
    if (quick && quick.slug === slug) return quick;
    const found = (await this.allImpls(repo)).find((impl) => impl.slug === slug);
    if (found) return found;
    const refused = this.refusal(repo, 'IMPL', slug);
    if (refused) throw refused;
    return undefined;
  }

  /** The PROGRAM of `slug`; throws the {@link ConfinedReadError} of a refused `PROGRAM-<slug>.yaml` when no readable one has it. */
  async findProgram(repo: ServedRepo, slug: string): Promise<LoadedProgram | undefined> {
    const found = (await this.allPrograms(repo)).find((program) => program.slug === slug);
    if (found) return found;
    const refused = this.refusal(repo, 'PROGRAM', slug);
    if (refused) throw refused;
    return undefined;
  }

  /** The refusal of a manifest file of `repo` named `<prefix>-<slug>.yaml` that is still there. */
  private refusal(repo: ServedRepo, prefix: 'IMPL' | 'PROGRAM', slug: string): ConfinedReadError | undefined {
    for (const [file, error] of this.refused) {
      if (!file.startsWith(`${repo.path}${path.sep}`) || !path.basename(file).startsWith(`${prefix}-`) || slugFromFile(file, prefix) !== slug) continue;
      try {
        lstatSync(file);
        return error;
      } catch {
        this.refused.delete(file);
      }
    }
    return undefined;
  }
}

/** Waves in all and waves whose every agent has a `complete` report. */
export function waveProgress(manifest: ImplManifest): { total: number; complete: number } {
  const waves = manifest.waves ?? [];
  const reports = manifest.completion_reports ?? {};
  const complete = waves.filter((wave) => (wave.agents ?? []).length > 0 && (wave.agents ?? []).every((agent) => agent.id !== undefined && reports[agent.id]?.status === 'complete')).length;
  return { total: waves.length, complete };
}

export function countAgents(manifest: ImplManifest): number {
  return (manifest.waves ?? []).reduce((sum, wave) => sum + (wave.agents ?? []).length, 0);
}
