import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { normalizeReportedPath } from '../../protocol/conflicts.js';
import type { ImplManifest, WiringDeclaration } from '../../protocol/schema/impl-schema.js';
import { editImpl } from '../../store/manifest-file.js';
import type { StepDefinition } from '../step.js';
import { manifestOf, type FinalizeContext } from './context.js';
import { ensureTargetCheckout } from './target.js';

/** A post_merge_checklist item. */
export interface ChecklistItem {
  description: string;
  command?: string;
}

/** A post_merge_checklist group. */
export interface ChecklistGroup {
  title: string;
  items: ChecklistItem[];
}

/** A file created by the wave, read from the merged target. */
export interface CreatedFile {
  path: string;
  text: string;
}

const groupTitles = {
  api: 'API Route Registration',
  react: 'React Navigation Wiring',
  cli: 'CLI Command Registration',
  background: 'Background Service Initialization',
  wiring: 'Wiring Obligations (E35)',
} as const;

function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

function camelCommand(name: string): string {
  return `new${name.split('-').filter(Boolean).map((part) => part.charAt(0).toUpperCase() + part.slice(1)).join('')}Cmd`;
}

/**
 * M5: integration tasks the merged wave implies, from the files it created (the Go patterns,
 * generalized beyond Go): HTTP handlers to register (Go `pkg/api/*_handler.go` with
 * `func (s *Server) handleX`), React components to put in navigation (`…/components/*.tsx` with
 * a default export), CLI commands to register (Go `cmd/**\/*_cmd.go` with a cobra `Use:`, and
 * `…/commands/<name>.ts|js|py`), background work to start (goroutines, tickers,
 * `setInterval`, threads) — plus the wave's E35 wiring declarations. Pure.
 */
export function integrationChecklist(files: readonly CreatedFile[], wiring: readonly WiringDeclaration[]): ChecklistGroup[] {
  const groups: Record<keyof typeof groupTitles, ChecklistItem[]> = { api: [], react: [], cli: [], background: [], wiring: [] };
  for (const file of files) {
    const name = path.posix.basename(file.path);
    if (/^pkg\/api\/[^/]+_handler\.go$/.test(file.path)) {
      const handlers = [...file.text.matchAll(/^func\s*\(\s*\w+\s+\*Server\s*\)\s*(handle\w+)\s*\(/gm)].map((match) => match[1]!);
      if (handlers.length > 0) groups.api.push({ description: `Register routes in server.go for ${handlers.join(', ')}`, command: `grep ${shellQuote(handlers[0]!)} pkg/api/server.go` });
    }
    const component = /(^|\/)components\/[^/]+\.tsx$/.test(file.path) && !/\/ui\//.test(file.path) && !/(test|spec)\.tsx$/.test(name);
    if (component) {
      const match = /export\s+default\s+function\s+(\w+)/.exec(file.text) ?? /export\s+default\s+(?!function\b|class\b|const\b|let\b)(\w+)/.exec(file.text);
      if (match) {
        const app = path.posix.join(path.posix.dirname(path.posix.dirname(file.path)), 'App.tsx');
        groups.react.push({ description: `Add ${match[1]} to App.tsx navigation`, command: `grep ${shellQuote(match[1]!)} ${app}` });
      }
    }
    if (/^cmd\/(?:.+\/)?[^/]+_cmd\.go$/.test(file.path)) {
      const use = /cobra\.Command\s*\{[^}]*?Use:\s*"([^"\s]+)/s.exec(file.text)?.[1];
      if (use) {
        const main = path.posix.join(path.posix.dirname(file.path), 'main.go');
        groups.cli.push({ description: `Register ${use} in ${main}`, command: `grep ${shellQuote(camelCommand(use))} ${main}` });
      }
    } else if (/(^|\/)commands\/[^/]+\.(ts|js|mjs|py)$/.test(file.path) && !/(\.test|\.spec|_test)\.\w+$/.test(name)) {
      const command = name.replace(/\.(ts|js|mjs|py)$/, '');
      if (command !== 'index' && command !== 'shared' && command !== '__init__') {
        groups.cli.push({ description: `Register the ${command} command in the CLI's command table`, command: `grep -rn ${shellQuote(`'${command}'`)} ${path.posix.dirname(path.posix.dirname(file.path))}` });
      }
    }
    const background =
      (name.endsWith('.go') && /\bgo\s+(func\(|[\w.]+\()|time\.NewTicker|time\.Ticker|context\.Background\(\)/.test(file.text)) ||
      (/\.(ts|js|mjs)$/.test(name) && /\bsetInterval\s*\(/.test(file.text)) ||
      (name.endsWith('.py') && /threading\.Thread\s*\(|asyncio\.create_task\s*\(/.test(file.text));
    if (background) groups.background.push({ description: `Verify if ${name} needs initialization in Server constructor` });
  }
  for (const declaration of wiring) {
    if (!declaration.symbol || !declaration.must_be_called_from) continue;
    groups.wiring.push({
      description: `Call ${declaration.symbol} (defined in ${declaration.defined_in ?? '?'}) from ${declaration.must_be_called_from}${declaration.integration_pattern ? ` (${declaration.integration_pattern})` : ''}`,
      command: `grep -n ${shellQuote(declaration.symbol)} ${declaration.must_be_called_from}`,
    });
  }
  return (Object.keys(groupTitles) as Array<keyof typeof groupTitles>).filter((key) => groups[key].length > 0).map((key) => ({ title: groupTitles[key], items: groups[key] }));
}

/**
 * Adds `detected` to `existing` idempotently: a group with the same title gains only items whose
 * description it lacks; new groups are appended. Returns the merged groups and what was added.
 */
export function mergeChecklist(existing: readonly ChecklistGroup[], detected: readonly ChecklistGroup[]): { groups: ChecklistGroup[]; groupsAdded: number; itemsAdded: number } {
  const groups = existing.map((group) => ({ title: group.title, items: [...group.items] }));
  let groupsAdded = 0;
  let itemsAdded = 0;
  for (const group of detected) {
    const found = groups.find((candidate) => candidate.title === group.title);
    if (found === undefined) {
      groups.push({ title: group.title, items: [...group.items] });
      groupsAdded += 1;
      itemsAdded += group.items.length;
      continue;
    }
    for (const item of group.items) {
      if (found.items.some((candidate) => candidate.description === item.description)) continue;
      found.items.push(item);
      itemsAdded += 1;
    }
  }
  return { groups, groupsAdded, itemsAdded };
}

/** The files `action: new` of this wave, as they are in the merged target. */
async function createdFiles(context: FinalizeContext, manifest: ImplManifest): Promise<CreatedFile[]> {
  const files: CreatedFile[] = [];
  for (const repo of context.repos) {
    const rows = (manifest.file_ownership ?? []).filter((row) => {
      if (row.wave !== context.wave || row.action !== 'new' || !row.file) return false;
      const agent = context.agents.find((item) => item.id === row.agent);
      return agent === undefined ? repo.primary : agent.repo === repo;
    });
    if (rows.length === 0) continue;
    await ensureTargetCheckout(context, repo);
    for (const row of rows) {
      const relative = normalizeReportedPath(row.file!);
      try {
        files.push({ path: relative, text: await readFile(path.join(repo.targetDir, relative), 'utf8') });
      } catch {
        // Not created after all: nothing to wire.
      }
    }
  }
  return files;
}

/** Step 4.5 (M5, advisory): `post_merge_checklist` gains the wave's integration tasks. */
export const populateChecklistStep: StepDefinition<FinalizeContext> = {
  name: 'populate-integration-checklist',
  joinsBackground: true,
  advisory: true,
  async run(context) {
    if (context.dryRun) return { status: 'skipped', detail: 'dry run: post_merge_checklist not updated' };
    const manifest = manifestOf(context);
    const detected = integrationChecklist(await createdFiles(context, manifest), (manifest.wiring ?? []).filter((entry) => entry.wave === context.wave));
    if (detected.length === 0) return { status: 'success', detail: 'M5: no integration tasks detected in the files this wave created' };
    const outcome = await editImpl(context.implPath, (parsed) => {
      const current = (parsed.manifest?.post_merge_checklist?.groups ?? []).map((group) => ({ title: group.title ?? '', items: (group.items ?? []).map((item) => ({ description: item.description ?? '', ...(item.command ? { command: item.command } : {}) })) }));
      const merged = mergeChecklist(current, detected);
      if (merged.itemsAdded === 0) return { edits: [], outcome: merged };
      return { edits: [{ path: ['post_merge_checklist', 'groups'], value: merged.groups }], outcome: merged };
    });
    manifest.post_merge_checklist = { groups: outcome.groups } as ImplManifest['post_merge_checklist'];
    return {
      status: 'success',
      detail: outcome.itemsAdded === 0 ? 'M5: post_merge_checklist already lists every detected task' : `M5: ${outcome.itemsAdded} item(s) added to post_merge_checklist (${detected.map((group) => `${group.title}: ${group.items.length}`).join(', ')})`,
      data: { groups_added: outcome.groupsAdded, items_added: outcome.itemsAdded, groups: outcome.groups.map((group) => ({ title: group.title, item_count: group.items.length })) },
    };
  },
};
