import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { PolywaveError } from '../errors/polywave-error.js';
import { normalizeReportedPath } from '../protocol/conflicts.js';
import { integrationChecklist, mergeChecklist, type ChecklistGroup, type CreatedFile } from './finalize/populate-checklist.js';
import { editImpl } from '../store/manifest-file.js';

/** Options of {@link populateIntegrationChecklist}. */
export interface PopulateChecklistOptions {
  implPath: string;
  /** Where the `action: new` files are read from when they exist (default: the IMPL's repository). */
  repoRoot: string;
}

/** The Go `populate-integration-checklist` JSON. */
export interface PopulateChecklistResult {
  success: boolean;
  groups_added: number;
  items_added: number;
  groups: Array<{ title: string; item_count: number }>;
}

function pascalCase(name: string): string {
  return name.split(/[-_.\s]+/).filter(Boolean).map((part) => part.charAt(0).toUpperCase() + part.slice(1)).join('');
}

/**
 * Before the waves run, the `action: new` files do not exist yet: stand-in text from the path so
 * the M5 patterns still see a handler, a component or a command (the Go tool decides from the path
 * too). A file that exists is read as it is.
 */
function stubText(file: string): string {
  const name = path.posix.basename(file);
  if (/_handler\.go$/.test(name)) return `func (s *Server) handle${pascalCase(name.replace(/_handler\.go$/, ''))}(`;
  if (name.endsWith('.tsx')) return `export default function ${pascalCase(name.replace(/\.tsx$/, ''))}() {}`;
  if (/_cmd\.go$/.test(name)) return `cobra.Command{ Use: "${name.replace(/_cmd\.go$/, '').replace(/_/g, '-')}" }`;
  return '';
}

/**
 * E16D / M5 before execution: `post_merge_checklist` groups derived from every `action: new` row
 * of `file_ownership` (API handlers to register, React components to put in navigation, CLI
 * commands to register, background services to start) plus every wiring declaration (E35) —
 * the same patterns finalize-wave's M5 step applies to the files a wave created. Idempotent:
 * existing groups keep their items, only missing items are added. Written through the locked,
 * format-preserving writer; nothing is written when nothing is added.
 */
export async function populateIntegrationChecklist(options: PopulateChecklistOptions): Promise<PopulateChecklistResult> {
  return editImpl(options.implPath, async (parsed) => {
    const manifest = parsed.manifest;
    if (!manifest) {
      const first = parsed.findings.find((finding) => finding.severity === 'error' || finding.severity === 'fatal');
      throw new PolywaveError({ code: first?.code ?? 'V001_MANIFEST_INVALID', message: `${options.implPath}: ${first?.message ?? 'manifest is not usable'} (run: polywave validate)` });
    }
    const files: CreatedFile[] = [];
    for (const row of manifest.file_ownership ?? []) {
      if (row.action !== 'new' || !row.file) continue;
      const relative = normalizeReportedPath(row.file);
      let text: string;
      try {
        text = await readFile(path.join(options.repoRoot, relative), 'utf8');
      } catch {
        text = stubText(relative);
      }
      files.push({ path: relative, text });
    }
    const detected = integrationChecklist(files, manifest.wiring ?? []);
    const current: ChecklistGroup[] = (manifest.post_merge_checklist?.groups ?? []).map((group) => ({
      title: group.title ?? '',
      items: (group.items ?? []).map((item) => ({ description: item.description ?? '', ...(item.command ? { command: item.command } : {}) })),
    }));
    const merged = mergeChecklist(current, detected);
    const result: PopulateChecklistResult = {
      success: true,
      groups_added: merged.groupsAdded,
      items_added: merged.itemsAdded,
      groups: merged.groups.map((group) => ({ title: group.title, item_count: group.items.length })),
    };
    return { edits: merged.itemsAdded === 0 ? [] : [{ path: ['post_merge_checklist', 'groups'], value: merged.groups }], outcome: result };
  });
}
