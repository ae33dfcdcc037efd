import { isDeepStrictEqual } from 'node:util';
import { isMap, isSeq, parseDocument, type YAMLMap, type YAMLSeq } from 'yaml';
import { PolywaveError } from '../errors/polywave-error.js';
import { parseImpl } from '../protocol/parse-impl.js';
import type { ImplManifest } from '../protocol/schema/impl-schema.js';
import { solveWaves, type WaveSolution } from '../protocol/wave-solver.js';
import { applyEdits, type YamlEdit } from '../protocol/yaml/index.js';

/** One reassignment `solve` makes (Go: `agent X: wave a → wave b`). */
export interface WaveChange {
  agent: string;
  from: number;
  to: number;
}

/** What {@link planSolve} decided for a manifest text. */
export interface SolvePlan {
  solution: WaveSolution;
  /** Agents whose declared wave differs from the computed one, sorted by agent ID. */
  changes: WaveChange[];
  agentCount: number;
  /** Waves before and after (non-empty waves after the rewrite). */
  waveCountBefore: number;
  waveCountAfter: number;
  /** The rewritten manifest text (the input unchanged when there are no changes). */
  text: string;
}

/**
 * `solve`: wave numbers from the agents' `dependencies` (the same layering `validate --solver`
 * checks, protocol/wave-solver.ts), and the manifest text rewritten so each agent sits in its
 * computed wave. The rewrite moves each agent's block of lines — comments, quoting and
 * everything else inside it byte for byte — into its new wave, drops waves left empty, adds
 * missing ones (`number`, `agents`) in numeric order, and updates the `wave:` of the agents'
 * `file_ownership` rows. The result is re-parsed and must mean exactly the old data with the
 * membership changed (else a Document-level rewrite is tried, then N094). Throws SOLVER_CYCLE
 * / SOLVER_MISSING_DEP (exit 1) when the dependency graph has no solution.
 */
export function planSolve(text: string, manifest: ImplManifest): SolvePlan {
  const solution = solveWaves(manifest);
  if (!solution.valid) {
    const first = solution.errors[0]!;
    const messages = first.code === 'SOLVER_CYCLE' ? [describeCycles(manifest)] : solution.errors.map((error) => error.message);
    throw new PolywaveError({ code: first.code, message: `cannot solve: ${messages.join('; ')}`, exitCode: 1 });
  }
  const changes = solution.assignments
    .filter((assignment) => assignment.declared_wave !== assignment.computed_wave)
    .map((assignment) => ({ agent: assignment.agent, from: assignment.declared_wave, to: assignment.computed_wave }))
    .sort((a, b) => a.agent.localeCompare(b.agent));
  const agentCount = manifest.waves.reduce((count, wave) => count + (wave.agents ?? []).length, 0);
  const waveCountBefore = manifest.waves.length;
  const target = new Map(solution.assignments.map((assignment) => [assignment.agent, assignment.computed_wave]));
  if (changes.length === 0) return { solution, changes, agentCount, waveCountBefore, waveCountAfter: waveCountBefore, text };

  const expected = expectedData(parseImpl(text).data as Record<string, unknown>, target);
  const candidates = [() => rewriteBySegments(text, target), () => rewriteByDocument(text, target)];
  for (const candidate of candidates) {
    let rewritten: string | undefined;
    try {
      rewritten = withOwnershipWaves(candidate(), target);
    } catch {
      rewritten = undefined;
    }
    if (rewritten === undefined) continue;
    const reparsed = parseImpl(rewritten);
    if (!reparsed.fatal && isDeepStrictEqual(reparsed.data, expected)) {
      return { solution, changes, agentCount, waveCountBefore, waveCountAfter: (expected.waves as unknown[]).length, text: rewritten };
    }
  }
  throw new PolywaveError({ code: 'N094_MANIFEST_SAVE_FAILED', message: 'solve: could not rewrite the wave membership without changing other content; nothing written', exitCode: 2 });
}

/**
 * What a SOLVER_CYCLE really is: each agent that depends on itself ("agent B depends on itself"),
 * each group of agents that reach each other ("agents A, B depend on each other"), and the agents
 * only blocked by those ("C waits on them"). Agents are named in ID order.
 */
export function describeCycles(manifest: ImplManifest): string {
  const dependencies = new Map<string, string[]>();
  for (const wave of manifest.waves) {
    for (const agent of wave.agents ?? []) {
      const id = agent.id ?? '';
      if (id === '' || dependencies.has(id)) continue;
      dependencies.set(id, [...new Set((agent.dependencies ?? []).map((dependency) => String(dependency).trim()).filter((dependency) => dependency !== ''))]);
    }
  }
  const reachable = (from: string): Set<string> => {
    const seen = new Set<string>();
    const stack = [...(dependencies.get(from) ?? [])];
    while (stack.length > 0) {
      const next = stack.pop()!;
      if (seen.has(next)) continue;
      seen.add(next);
      stack.push(...(dependencies.get(next) ?? []));
    }
    return seen;
  };
  const reach = new Map([...dependencies.keys()].map((id) => [id, reachable(id)]));
  const ids = [...dependencies.keys()].sort((a, b) => a.localeCompare(b));
  const parts: string[] = [];
  const inCycle = new Set<string>();
  for (const id of ids) {
    if (!(dependencies.get(id) ?? []).includes(id)) continue;
    parts.push(`agent ${id} depends on itself`);
    inCycle.add(id);
  }
  const grouped = new Set<string>();
  for (const id of ids) {
    if (grouped.has(id) || !reach.get(id)!.has(id)) continue;
    const group = ids.filter((other) => other === id || (reach.get(id)!.has(other) && reach.get(other)!.has(id)));
    group.forEach((member) => grouped.add(member));
    group.forEach((member) => inCycle.add(member));
    if (group.length > 1) parts.push(`agents ${group.join(', ')} depend on each other`);
  }
  const blocked = ids.filter((id) => !inCycle.has(id) && [...reach.get(id)!].some((other) => inCycle.has(other)));
  return `dependency cycle: ${parts.join('; ')}${blocked.length > 0 ? ` (${blocked.join(', ')} ${blocked.length === 1 ? 'waits' : 'wait'} on ${parts.length === 1 && inCycle.size === 1 ? 'it' : 'them'})` : ''} (I6)`;
}

/** The plain data the rewrite must produce: same as before, agents regrouped, empty waves gone. */
function expectedData(data: Record<string, unknown>, target: Map<string, number>): Record<string, unknown> {
  const waves = (Array.isArray(data.waves) ? data.waves : []) as Array<Record<string, unknown>>;
  const byNumber = new Map<number, Record<string, unknown>>();
  for (const wave of waves) byNumber.set(Number(wave.number), wave);
  const moved = new Map<number, Array<Record<string, unknown>>>();
  for (const wave of waves) {
    for (const agent of (Array.isArray(wave.agents) ? wave.agents : []) as Array<Record<string, unknown>>) {
      const to = target.get(String(agent.id)) ?? Number(wave.number);
      if (to === Number(wave.number)) continue;
      moved.set(to, [...(moved.get(to) ?? []), agent]);
    }
  }
  const numbers = [...new Set([...byNumber.keys(), ...moved.keys()])].sort((a, b) => a - b);
  const newWaves: Array<Record<string, unknown>> = [];
  for (const number of numbers) {
    const old = byNumber.get(number);
    const staying = ((old && Array.isArray(old.agents) ? old.agents : []) as Array<Record<string, unknown>>).filter((agent) => (target.get(String(agent.id)) ?? number) === number);
    const incoming = (moved.get(number) ?? []).slice().sort((a, b) => String(a.id).localeCompare(String(b.id)));
    const agents = [...staying, ...incoming];
    if (agents.length === 0) continue;
    newWaves.push(old ? { ...old, agents } : { number, agents });
  }
  const ownership = (Array.isArray(data.file_ownership) ? data.file_ownership : []) as Array<Record<string, unknown>>;
  const file_ownership = ownership.map((row) => {
    const to = target.get(String(row.agent));
    return to === undefined || row.wave === undefined || Number(row.wave) === to ? row : { ...row, wave: to };
  });
  return { ...data, waves: newWaves, ...(data.file_ownership !== undefined ? { file_ownership } : {}) };
}

/** `file_ownership[i].wave` follows the agent (format-preserving scalar edits). */
function withOwnershipWaves(text: string, target: Map<string, number>): string {
  const data = parseImpl(text).data as Record<string, unknown> | null;
  const rows = (data && Array.isArray(data.file_ownership) ? data.file_ownership : []) as Array<Record<string, unknown>>;
  const edits: YamlEdit[] = [];
  rows.forEach((row, index) => {
    const to = target.get(String(row.agent));
    if (to !== undefined && row.wave !== undefined && Number(row.wave) !== to) edits.push({ path: ['file_ownership', index, 'wave'], value: to });
  });
  return applyEdits(text, edits);
}

interface Segment {
  start: number;
  end: number;
}

function lineStartOf(text: string, offset: number): number {
  return text.lastIndexOf('\n', offset - 1) + 1;
}

function nextLineStart(text: string, offset: number): number {
  if (offset > 0 && text[offset - 1] === '\n') return offset;
  const newline = text.indexOf('\n', offset);
  return newline === -1 ? text.length : newline + 1;
}

/** Start of a block-sequence item's lines: its dash line plus the comment/blank lines right above it at (or left of) the dash column. */
function itemStart(text: string, contentOffset: number, floor: number): { start: number; column: number } {
  const dashLine = lineStartOf(text, contentOffset);
  const dashColumn = text.slice(dashLine, contentOffset).indexOf('-');
  let start = dashLine;
  while (start > floor) {
    const previous = lineStartOf(text, start - 1);
    const line = text.slice(previous, start - 1);
    const trimmed = line.trimStart();
    const isBlank = trimmed === '' || trimmed === '\r';
    const isOwnComment = trimmed.startsWith('#') && line.length - trimmed.length <= dashColumn;
    if (!isBlank && !isOwnComment) break;
    start = previous;
  }
  return { start, column: dashColumn };
}

function blockItems(text: string, seq: YAMLSeq, floor: number): Array<Segment & { column: number; node: unknown }> | undefined {
  if (seq.flow || !seq.range) return undefined;
  const items: Array<Segment & { column: number; node: unknown }> = [];
  let lower = floor;
  for (const node of seq.items) {
    const range = (node as { range?: [number, number, number] }).range;
    if (!range) return undefined;
    const { start, column } = itemStart(text, range[0], lower);
    if (column < 0) return undefined;
    items.push({ start, end: nextLineStart(text, range[2]), column, node });
    lower = items[items.length - 1]!.end;
  }
  for (let index = 0; index + 1 < items.length; index += 1) items[index]!.end = items[index + 1]!.start;
  return items;
}

function reindent(block: string, from: number, to: number): string {
  if (from === to) return block;
  return block
    .split('\n')
    .map((line) => {
      if (line.trim() === '') return line;
      if (to > from) return ' '.repeat(to - from) + line;
      const strip = from - to;
      if (!/^ *$/.test(line.slice(0, strip))) throw new Error('cannot re-indent');
      return line.slice(strip);
    })
    .join('\n');
}

/** The line-preserving rewrite (see planSolve). Throws when the layout is not plain block YAML. */
function rewriteBySegments(text: string, target: Map<string, number>): string {
  const document = parseDocument(text);
  const wavesNode = document.get('waves', true);
  if (!isSeq(wavesNode) || wavesNode.items.length === 0) throw new Error('waves is not a block sequence');
  const waveItems = blockItems(text, wavesNode, 0);
  if (!waveItems) throw new Error('flow waves');
  const lastWave = waveItems[waveItems.length - 1]!;
  lastWave.end = Math.max(lastWave.end, nextLineStart(text, wavesNode.range![2]));

  interface WaveParts {
    number: number;
    prefix: string;
    suffix: string;
    agentColumn: number;
    agents: Array<{ id: string; text: string; column: number }>;
  }
  const parts: WaveParts[] = [];
  for (const item of waveItems) {
    const wave = item.node as YAMLMap;
    if (!isMap(wave)) throw new Error('wave is not a mapping');
    const agentsNode = wave.get('agents', true);
    if (!isSeq(agentsNode) || agentsNode.items.length === 0) throw new Error('wave without block agents');
    const agentItems = blockItems(text, agentsNode, item.start);
    if (!agentItems) throw new Error('flow agents');
    const firstAgent = agentItems[0]!;
    const lastAgent = agentItems[agentItems.length - 1]!;
    parts.push({
      number: Number(wave.get('number')),
      prefix: text.slice(item.start, firstAgent.start),
      suffix: text.slice(lastAgent.end, item.end),
      agentColumn: firstAgent.column,
      agents: agentItems.map((agentItem) => ({ id: String((agentItem.node as YAMLMap).get('id')), text: text.slice(agentItem.start, agentItem.end), column: agentItem.column })),
    });
  }
  const waveColumn = waveItems[0]!.column;
  const agentColumn = parts[0]!.agentColumn;
  const keyIndent = ' '.repeat(waveColumn + 2);
  const incoming = new Map<number, Array<{ id: string; text: string; column: number }>>();
  for (const part of parts) {
    for (const agent of part.agents) {
      const to = target.get(agent.id) ?? part.number;
      if (to !== part.number) incoming.set(to, [...(incoming.get(to) ?? []), agent]);
    }
  }
  const numbers = [...new Set([...parts.map((part) => part.number), ...incoming.keys()])].sort((a, b) => a - b);
  const newline = text.includes('\r\n') ? '\r\n' : '\n';
  let rebuilt = '';
  for (const number of numbers) {
    const part = parts.find((candidate) => candidate.number === number);
    const column = part?.agentColumn ?? agentColumn;
    const staying = (part?.agents ?? []).filter((agent) => (target.get(agent.id) ?? number) === number);
    const moved = (incoming.get(number) ?? []).slice().sort((a, b) => a.id.localeCompare(b.id));
    const agents = [...staying, ...moved];
    if (agents.length === 0) continue;
    const body = agents.map((agent) => {
      const block = reindent(agent.text, agent.column, column);
      return block.endsWith('\n') ? block : `${block}${newline}`;
    });
    if (part) rebuilt += part.prefix + body.join('') + part.suffix;
    else rebuilt += `${' '.repeat(waveColumn)}- number: ${number}${newline}${keyIndent}agents:${newline}${body.join('')}`;
    if (!rebuilt.endsWith('\n')) rebuilt += newline;
  }
  const start = waveItems[0]!.start;
  const end = lastWave.end;
  const tail = text.slice(end);
  return text.slice(0, start) + (end === text.length && !text.endsWith('\n') ? rebuilt.replace(/\r?\n$/, '') : rebuilt) + tail;
}

/** Fallback: move the agent nodes with the yaml Document API (comments attached to nodes kept). */
function rewriteByDocument(text: string, target: Map<string, number>): string {
  const document = parseDocument(text);
  const wavesNode = document.get('waves', true);
  if (!isSeq(wavesNode)) throw new Error('no waves');
  const byNumber = new Map<number, YAMLMap>();
  for (const wave of wavesNode.items) if (isMap(wave)) byNumber.set(Number(wave.get('number')), wave);
  const moves: Array<{ to: number; node: YAMLMap; id: string }> = [];
  for (const [number, wave] of byNumber) {
    const agents = wave.get('agents', true);
    if (!isSeq(agents)) continue;
    agents.items = agents.items.filter((node) => {
      const id = String((node as YAMLMap).get('id'));
      const to = target.get(id) ?? number;
      if (to === number) return true;
      moves.push({ to, node: node as YAMLMap, id });
      return false;
    });
  }
  for (const move of moves.sort((a, b) => a.id.localeCompare(b.id))) {
    let wave = byNumber.get(move.to);
    if (!wave) {
      wave = document.createNode({ number: move.to, agents: [] }) as YAMLMap;
      byNumber.set(move.to, wave);
    }
    (wave.get('agents', true) as unknown as YAMLSeq).items.push(move.node);
  }
  wavesNode.items = [...byNumber.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, wave]) => wave)
    .filter((wave) => ((wave.get('agents', true) as YAMLSeq | undefined)?.items.length ?? 0) > 0);
  return document.toString();
}
