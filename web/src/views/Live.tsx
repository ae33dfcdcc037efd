// The live wave board: one card per agent, updated from the SSE stream without reloading. The
// IMPL detail gives the starting point; every event is folded into the board (board.ts); a
// `resync` from the server (this page fell too far behind) refetches the detail.

import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { api, type ImplDetail } from '../api';
import { applyEvent, boardFromImpl, e19Actions, whereText, type AgentCard, type Board, type StreamEvent } from '../board';
import { DependencyGraph } from '../components/Graph';
import { useEventStream } from '../sse';
import { duration, enc, Section, StateBadge, Status, tokens, usd } from '../util';
import { graphAgents } from './Impl';

/** What the latency bench is told per card update (epoch ms). */
interface CardUpdate {
  agent: string;
  event_id: number;
  type: string;
  /** When the run emitted the event (its `ts`). */
  ts: number;
  /** When this page's EventSource delivered it. */
  received_at: number;
  /** When the card's DOM showed it (layout effect, before paint). */
  committed_at: number;
  /** After the next paint (effect). */
  shown_at: number;
}

declare global {
  interface Window {
    /** Set by the latency bench (page.exposeFunction): told when a card shows an event. */
    __polywaveCardUpdated?: (update: CardUpdate) => void;
  }
}

/** The current time, re-rendering every second while `active` (elapsed times of running agents). */
function useNow(active: boolean): number {
  const [tick, setNow] = useState(Date.now());
  useEffect(() => {
    if (!active) return undefined;
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [active]);
  return Math.max(tick, Date.now());
}

function Card({ card, href, now }: { card: AgentCard; href: string; now: number }) {
  const elapsed = card.startedAt === undefined ? undefined : (card.endedAt ?? now) - card.startedAt;
  const failed = card.status === 'failed' || card.status === 'blocked' || card.status === 'partial' || card.status === 'retrying';
  const where = whereText(card);
  return (
    <article class={`card status-${card.status}`} data-agent={card.id} data-status={card.status} data-testid={`card-${card.id}`}>
      <header>
        <a href={href} class="card-id">
          {card.id}
        </a>
        <span class="card-status" data-testid="card-status">
          {card.status}
        </span>
        {card.attempt > 1 && <span class="muted small">attempt {card.attempt}</span>}
        {card.merged && (
          <span class="badge wave-merged small" data-testid="card-merged">
            merged
          </span>
        )}
      </header>
      {where && (
        <p class="muted small where" data-testid="card-where" data-dispatcher={card.dispatcher ?? ''} data-worker={card.worker ?? ''} title={card.stalls ? `the job stalled ${card.stalls}× (a worker died) and was handed to another worker` : undefined}>
          {where}
          {card.stalls ? ` · ${card.stalls} stall(s)` : ''}
        </p>
      )}
      <dl class="metrics">
        <dt>elapsed</dt>
        <dd>{duration(elapsed)}</dd>
        <dt>turns</dt>
        <dd data-testid="card-turns">{card.turns}</dd>
        <dt>tokens</dt>
        <dd>
          {tokens(card.inputTokens)} in / {tokens(card.outputTokens)} out
        </dd>
        <dt>cost</dt>
        <dd>{usd(card.costUsd)}</dd>
        <dt>last tool</dt>
        <dd class={card.lastToolDenied ? 'error' : card.lastToolError ? 'warn' : ''}>
          {card.lastTool ?? '—'}
          {card.lastToolDenied ? ` (denied: ${card.lastToolDenied})` : ''}
        </dd>
      </dl>
      {card.model && (
        <p class="muted small" title={card.model}>
          {/* a script:/path/to/file model shown by its file name */}
          {card.model.replace(/^([\w-]+:).*\/([^/]+)$/, '$1$2')}
        </p>
      )}
      {failed && (card.failureType || card.note) && (
        <div class="failure" data-testid="card-failure">
          {card.failureType && (
            <p>
              E19 <strong>{card.failureType}</strong>: {card.action ?? e19Actions[card.failureType] ?? ''}
            </p>
          )}
          {card.note && <p class="small">{card.note}</p>}
        </div>
      )}
      {card.files.length > 0 && (
        <details class="files">
          <summary>{card.files.length} owned file(s)</summary>
          <ul>
            {card.files.map((file) => (
              <li key={file} class="mono small">
                {file}
              </li>
            ))}
          </ul>
        </details>
      )}
    </article>
  );
}

export function LiveBoard({ repo, slug }: { repo: string; slug: string }) {
  const [detail, setDetail] = useState<ImplDetail>();
  const [board, setBoard] = useState<Board>();
  const [error, setError] = useState<string>();
  const pending = useRef<Array<{ agent: string; event: StreamEvent; receivedAt: number; committedAt?: number }>>([]);
  const buffered = useRef<StreamEvent[]>([]);
  const loaded = useRef(false);

  const load = useCallback(
    (reset: boolean) => {
      api.impl(repo, slug).then(
        (fresh) => {
          setDetail(fresh);
          setError(undefined);
          if (reset || !loaded.current) {
            let next = boardFromImpl(fresh);
            // Events that arrived before the detail: fold them in now.
            for (const event of buffered.current) next = applyEvent(next, event).board;
            buffered.current = [];
            loaded.current = true;
            setBoard(next);
          } else {
            setBoard((old) => (old ? { ...old, state: fresh.state } : boardFromImpl(fresh)));
          }
        },
        (failure: unknown) => setError(failure instanceof Error ? failure.message : String(failure)),
      );
    },
    [repo, slug],
  );

  useEffect(() => {
    loaded.current = false;
    buffered.current = [];
    setBoard(undefined);
    load(true);
  }, [repo, slug]);

  const onEvent = useCallback(
    (event: StreamEvent) => {
      const receivedAt = Date.now();
      if (event.slug && event.slug !== slug) return;
      if (!loaded.current) {
        buffered.current.push(event);
        return;
      }
      setBoard((old) => {
        if (!old) return old;
        const { board: next, agent } = applyEvent(old, event);
        if (agent && window.__polywaveCardUpdated) pending.current.push({ agent, event, receivedAt });
        return next;
      });
      const activity = event.activity_type ?? (event.payload?.activity_type as string | undefined);
      // The IMPL's state moves at these points: refetch it.
      if (event.type === 'wave-run-start' || event.type === 'wave-run-end' || (event.type === 'activity' && (activity === 'wave_merge' || activity === 'impl_complete' || activity === 'wave_failed'))) load(false);
    },
    [slug, load],
  );

  // A resync (the store was replaced, or this page's cursor is ahead of it): rebuild from a fresh detail, and hold the
  // events that arrive meanwhile until it is there (folded on top, as on the first load) — never lost under the reset.
  const [resyncs, setResyncs] = useState(0);
  const onResync = useCallback(() => {
    loaded.current = false;
    buffered.current = [];
    setResyncs((count) => count + 1);
    load(true);
  }, [load]);
  const connection = useEventStream({ query: { repo, impl: slug, after: '0' }, onEvent, onResync });

  // Only when the latency bench listens: when the cards' DOM shows the events, and after the paint.
  useLayoutEffect(() => {
    const at = Date.now();
    for (const entry of pending.current) entry.committedAt ??= at;
  }, [board]);
  useEffect(() => {
    const shown = pending.current;
    pending.current = [];
    const hook = window.__polywaveCardUpdated;
    if (!hook) return;
    const at = Date.now();
    for (const { agent, event, receivedAt, committedAt } of shown)
      hook({ agent, event_id: event.id, type: event.type, ts: typeof event.ts === 'number' ? event.ts : Date.parse(event.ts), received_at: receivedAt, committed_at: committedAt ?? at, shown_at: at });
  }, [board]);

  const cards = board ? Object.values(board.agents) : [];
  const running = cards.some((card) => card.status === 'running' || card.status === 'retrying');
  const now = useNow(running);
  const waves = board ? Object.values(board.waves).sort((a, b) => a.number - b.number) : [];
  const statuses = Object.fromEntries(cards.map((card) => [card.id, card.status]));

  return (
    <main data-view="live">
      <p class="crumbs">
        <a href={`/r/${enc(repo)}`}>repository</a> / <a href={`/r/${enc(repo)}/impl/${enc(slug)}`}>{slug}</a> / live
      </p>
      <h1>
        {detail?.manifest?.title ?? slug}{' '}
        <span data-testid="impl-state">
          <StateBadge state={board?.state ?? detail?.state} />
        </span>{' '}
        <span class={`conn conn-${connection}`} data-testid="connection" data-resyncs={resyncs} title={resyncs ? `live event stream (state refetched ${resyncs}× after a resync)` : 'live event stream'}>
          {connection === 'open' ? '● live' : connection === 'reconnecting' ? '◌ reconnecting' : '○ connecting'}
          {resyncs > 0 ? ' ↻' : ''}
        </span>
      </h1>
      <Status error={error} loading={!board && !error} />
      {board && detail && (
        <>
          {waves.map((wave) => (
            <Section key={wave.number} title={`Wave ${wave.number}`} id={`wave-${wave.number}`}>
              <p class="wave-line" data-testid={`wave-${wave.number}`} data-wave-status={wave.status}>
                <span class={`badge wave-${wave.status}`}>{wave.status}</span>
                {wave.durationMs !== undefined && <span class="muted"> {duration(wave.durationMs)}</span>}
                {wave.costUsd !== undefined && <span class="muted"> · {usd(wave.costUsd)}</span>}
                {wave.status === 'merging' && wave.mergeTotal !== undefined && (
                  <span data-testid={`wave-${wave.number}-merge`}>
                    {' · '}merged {wave.merged} of {wave.mergeTotal}
                  </span>
                )}
                {' · '}
                {cards.filter((card) => card.wave === wave.number && card.status === 'complete').length} of {cards.filter((card) => card.wave === wave.number).length} agents complete
              </p>
              <progress max={Math.max(cards.filter((card) => card.wave === wave.number).length, 1)} value={cards.filter((card) => card.wave === wave.number && card.status === 'complete').length} />
              <div class="cards">
                {cards
                  .filter((card) => card.wave === wave.number)
                  .map((card) => (
                    <Card key={card.id} card={card} now={now} href={`/r/${enc(repo)}/impl/${enc(slug)}/agent/${enc(card.id)}`} />
                  ))}
              </div>
            </Section>
          ))}
          <Section title="Dependency graph" id="graph">
            <DependencyGraph agents={graphAgents(detail, statuses)} hrefFor={(id) => `/r/${enc(repo)}/impl/${enc(slug)}/agent/${enc(id)}`} />
          </Section>
          <Section title="Gates" id="gates">
            {board.gates.length === 0 ? (
              <p class="muted">No gate has run yet.</p>
            ) : (
              <table class="grid" data-testid="gate-results">
                <thead>
                  <tr>
                    <th>Gate</th>
                    <th>Scope</th>
                    <th>Wave</th>
                    <th>Command</th>
                    <th>Result</th>
                    <th>Duration</th>
                  </tr>
                </thead>
                <tbody>
                  {board.gates.map((gate, index) => (
                    <tr key={index}>
                      <td>{gate.gate}</td>
                      <td>{gate.scope ?? ''}</td>
                      <td class="num">{gate.wave ?? ''}</td>
                      <td class="mono">{gate.command}</td>
                      <td class={gate.passed ? 'ok' : 'error'}>
                        {gate.passed ? 'passed' : 'failed'}
                        {gate.fromCache ? ' (cached)' : ''}
                      </td>
                      <td>{duration(gate.durationMs)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </Section>
          <Section title="Steps" id="steps">
            {board.steps.length === 0 ? (
              <p class="muted">No step yet.</p>
            ) : (
              <ol class="steps">
                {board.steps.map((step, index) => (
                  <li key={index} class={`step-${step.status}`}>
                    <span class="mono">{step.command}</span> {step.wave !== undefined && <span class="muted">wave {step.wave}</span>} <strong>{step.step}</strong> {step.status} <span class="muted">{step.detail}</span>
                  </li>
                ))}
              </ol>
            )}
          </Section>
          <p class="muted small">{board.events} event(s) received.</p>
        </>
      )}
    </main>
  );
}
