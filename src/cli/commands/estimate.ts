import { existsSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { costJournalName } from '../../agents/cost-meter.js';
import { estimatePlan, historyFromCostEvents, type HistoryCostEvent, type PlannedAgent } from '../../agents/estimate.js';
import { resolveModelSpec } from '../../agents/model-spec.js';
import { ownedFiles } from '../../engine/brief.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { createGit } from '../../git/git-cli.js';
import { parseImpl } from '../../protocol/parse-impl.js';
import { parseProgram } from '../../protocol/parse-program.js';
import type { ImplManifest } from '../../protocol/schema/impl-schema.js';
import { loadImpl } from '../../store/manifest-file.js';
import { readProgramImplDocs } from '../../store/program-impl-docs.js';
import { readTextFile } from '../../store/read-text.js';
import { resolveManifestPath } from '../../store/resolve-path.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { requireManifest, requireProgram } from './shared.js';

/** Prompt characters of an IMPL not scouted yet (a PROGRAM entry without a doc): a typical brief. */
const unscoutedPromptChars = 3000;

async function fileSize(file: string): Promise<number> {
  return stat(file).then(
    (info) => (info.isFile() ? info.size : 0),
    () => 0,
  );
}

/** The agents of an IMPL with their context sizes. */
async function agentsOfImpl(manifest: ImplManifest, slug: string, repoDir: string, model: string | undefined, env: Readonly<Record<string, string | undefined>>): Promise<PlannedAgent[]> {
  const contracts = JSON.stringify(manifest.interface_contracts ?? []).length;
  const agents: PlannedAgent[] = [];
  for (const wave of manifest.waves ?? []) {
    for (const agent of wave.agents ?? []) {
      const id = agent.id ?? '';
      const files = [...new Set(ownedFiles(manifest, wave.number ?? 0, id))];
      const sizes = await Promise.all(files.map((file) => fileSize(path.resolve(repoDir, file))));
      agents.push({
        slug,
        wave: wave.number ?? 0,
        agent: id,
        model: resolveModelSpec(agent.model?.trim() || model, env),
        promptChars: (agent.task ?? '').length + contracts,
        ownedFiles: files.length,
        ownedBytes: sizes.reduce((sum, size) => sum + size, 0),
      });
    }
  }
  return agents;
}

/** `cost` events of every agent journal under `.polywave-state/` (run-wave keeps them in cost.jsonl). */
async function journalCostEvents(repoDir: string): Promise<HistoryCostEvent[]> {
  const root = path.join(repoDir, '.polywave-state');
  const found: HistoryCostEvent[] = [];
  const walk = async (directory: string, depth: number): Promise<void> => {
    const entries = await readdir(directory, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      const full = path.join(directory, entry.name);
      if (entry.isDirectory() && !entry.isSymbolicLink() && depth < 4) await walk(full, depth + 1);
      else if (entry.isFile() && entry.name === costJournalName) found.push(...parseEventLines(await readFile(full, 'utf8').catch(() => '')));
    }
  };
  await walk(root, 0);
  return found;
}

/** The `cost` events of NDJSON text (`run-wave --json`, `events export`, a cost.jsonl); other lines are skipped. */
function parseEventLines(text: string): HistoryCostEvent[] {
  const events: HistoryCostEvent[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim().startsWith('{')) continue;
    try {
      const value = JSON.parse(line) as Record<string, unknown>;
      // `events export` rows carry the event as `payload`.
      const event = (typeof value.payload === 'object' && value.payload !== null ? value.payload : value) as Record<string, unknown>;
      if (event.type === 'cost' && typeof event.input_tokens === 'number') events.push(event as unknown as HistoryCostEvent);
    } catch {
      // not an event line
    }
  }
  return events;
}

const runKey = (event: HistoryCostEvent): string => `${event.slug ?? ''}\0${event.wave ?? ''}\0${event.agent ?? ''}\0${event.attempt ?? 1}`;

/** The `cost` events of the event store (none when it is absent, unreadable or switched off: the estimate goes on without them). */
async function storeCostEvents(options: Record<string, unknown>, io: CommandIo): Promise<HistoryCostEvent[]> {
  if (io.env.POLYWAVE_NO_EVENTS === '1') return [];
  try {
    const { openStoreForQuery } = await import('../event-store-reader.js');
    const { db } = await openStoreForQuery(options, io);
    if (!db) return [];
    try {
      const { iterateEvents } = await import('../../observability/event-store.js');
      const events: HistoryCostEvent[] = [];
      for (const row of iterateEvents(db, { types: ['cost'] }, 500_000)) {
        try {
          events.push(JSON.parse(row.payload) as HistoryCostEvent);
        } catch {
          // a row we cannot read is no history
        }
      }
      return events;
    } finally {
      db.close();
    }
  } catch (error) {
    io.stderr(`estimate: warning: event store not read (${error instanceof Error ? error.message.split('\n')[0] : String(error)})\n`);
    return [];
  }
}

/**
 * `estimate <impl|program> [--model M] [--history <ndjson>] [--no-history]` — forecasts the tokens
 * and cost of a plan before it runs (agents, owned files, past actuals). Prints the estimate as
 * JSON on stdout and one summary line on stderr. Exit 0, 2 bad input.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const target = args[0]?.trim() ?? '';
  if (target === '') throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'estimate needs an IMPL or PROGRAM manifest (path or slug)' });
  const isProgram = /(^|[/\\])PROGRAM-[^/\\]+\.ya?ml$/i.test(target);
  const manifestPath = resolveManifestPath(target, { cwd: io.cwd, kind: isProgram ? 'program' : 'impl' }).path;
  const model = typeof options.model === 'string' && options.model.trim() !== '' ? options.model.trim() : undefined;
  const repoDir = typeof options.repoDir === 'string' && options.repoDir.trim() !== '' ? path.resolve(io.cwd, options.repoDir) : await createGit(path.dirname(manifestPath), { env: io.env }).topLevel().catch(() => path.dirname(manifestPath));

  const planned: PlannedAgent[] = [];
  let kind: 'impl' | 'program' = 'impl';
  let slug: string;
  const text = await readTextFile(manifestPath);
  if (isProgram || (/^program_slug:/m.test(text) && !/^feature_slug:/m.test(text))) {
    kind = 'program';
    const program = requireProgram(parseProgram(text), manifestPath);
    slug = program.program_slug ?? '';
    const docs = await readProgramImplDocs(repoDir, program);
    for (const impl of program.impls ?? []) {
      const doc = docs.get(impl.slug ?? '');
      const implManifest = doc ? parseImpl(await readTextFile(doc.path)).manifest : undefined;
      if (implManifest) {
        planned.push(...(await agentsOfImpl(implManifest, impl.slug ?? '', repoDir, model, io.env)));
        continue;
      }
      // Not scouted yet: the PROGRAM's estimated_agents with a typical brief.
      const count = Math.max(1, impl.estimated_agents ?? 2);
      for (let index = 1; index <= count; index += 1) planned.push({ slug: impl.slug ?? '', wave: 1, agent: `?${index}`, model: resolveModelSpec(model, io.env), promptChars: unscoutedPromptChars, ownedFiles: 0, ownedBytes: 0 });
    }
  } else {
    const manifest = requireManifest((await loadImpl(manifestPath)).parsed, manifestPath);
    slug = manifest.feature_slug ?? path.basename(manifestPath).replace(/^IMPL-|\.ya?ml$/g, '');
    planned.push(...(await agentsOfImpl(manifest, slug, repoDir, model, io.env)));
  }

  if (planned.length === 0) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `${path.relative(io.cwd, manifestPath) || manifestPath} has no agents to estimate (no waves with agents${kind === 'program' ? ' and no IMPLs' : ''}: not a planned ${kind === 'program' ? 'PROGRAM' : 'IMPL'} manifest)` });
  }
  const sources: string[] = [];
  const events: HistoryCostEvent[] = [];
  const seen = new Set<string>();
  if (options.history !== false) {
    if (typeof options.history === 'string' && options.history.trim() !== '') {
      const historyPath = path.resolve(io.cwd, options.history);
      if (!existsSync(historyPath)) throw new PolywaveError({ code: 'N005_IMPL_NOT_FOUND', message: `--history: file not found: ${historyPath}` });
      const fromFile = parseEventLines(await readTextFile(historyPath, { maxBytes: 256 * 1024 * 1024 }));
      events.push(...fromFile);
      for (const event of fromFile) seen.add(runKey(event));
      sources.push(`${path.relative(io.cwd, historyPath) || historyPath} (${fromFile.length} cost event(s))`);
    }
    // The event store (issue 14): every recorded run's cost events, from any repository of this user.
    // Each source adds only the agent runs an earlier one did not hold (no run counted twice).
    const fromStore = (await storeCostEvents(options, io)).filter((event) => !seen.has(runKey(event)));
    if (fromStore.length > 0) {
      events.push(...fromStore);
      sources.push(`the event store (${fromStore.length} cost event(s))`);
    }
    for (const event of fromStore) seen.add(runKey(event));
    // The journals' cost.jsonl.
    const fromJournals = (await journalCostEvents(repoDir)).filter((event) => !seen.has(runKey(event)));
    if (fromJournals.length > 0) {
      events.push(...fromJournals);
      sources.push(`agent journals under .polywave-state (${fromJournals.length} cost event(s))`);
    }
  }
  const history = historyFromCostEvents(events);
  const estimate = estimatePlan(planned, history ? { ...history, source: sources.join(' + ') } : undefined);
  printJson(io, { target: manifestPath, kind, slug, ...estimate });
  const { totals } = estimate;
  io.stderr(
    `estimate: ${totals.agents} agent(s), ~${totals.calls} model call(s), ~${totals.input_tokens.toLocaleString('en-US')} input + ${totals.output_tokens.toLocaleString('en-US')} output tokens, ${totals.cost_usd === null ? 'cost unknown (a model is not in the pricing table)' : `~$${totals.cost_usd.toFixed(2)}`} (${estimate.method}${history ? `, ${history.runs} past run(s)` : ''})\n`,
  );
  return 0;
}
