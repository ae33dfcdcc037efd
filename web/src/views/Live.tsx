// The live wave board: one card per agent, updated from the SSE stream without reloading. The
// IMPL detail gives the starting point; every event is folded into the board (board.ts); a
// `resync` from the server (this page fell too far behind) refetches the detail.
//
// Per burst of events (the frames of one received chunk, sse.ts) one state update and one render;
// a card re-renders only when its agent changed (or, while it runs, once a second for its elapsed
// time), the graph only when a status changed: one agent's event re-renders one card.

import { Component } from 'preact';
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, type ImplDetail } from '../api';
import { applyEvent, boardFromImpl, e19Actions, whereText, type AgentCard, type Board, type StreamEvent } from '../board';
import { DependencyGraph } from '../components/Graph';
import { useEventStream, type Received } from '../sse';
import { duration, enc, Section, StateBadge, Status, tokens, usd } from '../util';
import { graphAgents } from './Impl';
import type { GraphAgent } from '../components/Graph';

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
  /** How many events came in the same burst (folded in one update). */
  batch: number;
}

declare global {
  interface Window {
    /** Set by the latency bench (page.exposeFunction): told when a card shows an event. */
    __polywaveCardUpdated?: (update: CardUpdate) => void;
  }
}

/**
 * The current time, changing once a second while `active` (elapsed times of running agents) and
 * not between ticks: a render for an event does not change it, so cards that did not change are not re-rendered.
 */
function useNow(active: boolean): number {
  const [tick, setNow] = useState(Date.now());
  useEffect(() => {
    if (!active) return undefined;
    setNow(Date.now());
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [active]);
  return tick;
}

interface CardProps {
  card: AgentCard;
  href: string;
  /** The clock for the elapsed time; 0 for a card that is not running (its elapsed time does not move). */
  now: number;
}

/** A card re-renders only when its agent's card, its link or (while it runs) the clock changed. */
class MemoCard extends Component<CardProps> {
  override shouldComponentUpdate(next: CardProps): boolean {
    return next.card !== this.props.card || next.href !== this.props.href || next.now !== this.props.now;
  }
  override render() {
    return <Card {...this.props} />;
  }
}

/** The dependency graph re-renders only when its agents (memoised on the statuses and the IMPL) changed. */
class MemoGraph extends Component<{ agents: GraphAgent[]; hrefFor: (id: string) => string }> {
  override shouldComponentUpdate(next: { agents: GraphAgent[]; hrefFor: (id: string) => string }): boolean {
    return next.agents !== this.props.agents || next.hrefFor !== this.props.hrefFor;
  }
  override render() {
    return <DependencyGraph agents={this.props.agents} hrefFor={this.props.hrefFor} />;
  }
}

/** The gate results: re-rendered only when a gate event changed them (applyEvent keeps the array otherwise). */
class Gates extends Component<{ gates: Board['gates'] }> {
  override shouldComponentUpdate(next: { gates: Board['gates'] }): boolean {
    return next.gates !== this.props.gates;
  }
  override render() {
    const { gates } = this.props;
    return (
      <Section title="Gates" id="gates">
        {gates.length === 0 ? (
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
              {gates.map((gate, index) => (
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
    );
  }
}

/** The steps of prepare/finalize (up to 50): re-rendered only when a step-end changed them. */
class Steps extends Component<{ steps: Board['steps'] }> {
  override shouldComponentUpdate(next: { steps: Board['steps'] }): boolean {
    return next.steps !== this.props.steps;
  }
  override render() {
    const { steps } = this.props;
    return (
      <Section title="Steps" id="steps">
        {steps.length === 0 ? (
          <p class="muted">No step yet.</p>
        ) : (
          <ol class="steps">
            {steps.map((step, index) => (
              <li key={index} class={`step-${step.status}`}>
                <span class="mono">{step.command}</span> {step.wave !== undefined && <span class="muted">wave {step.wave}</span>} <strong>{step.step}</strong> {step.status} <span class="muted">{step.detail}</span>
              </li>
            ))}
          </ol>
        )}
      </Section>
    );
  }
}

function Card({ card, href, now }: CardProps) {
  // The clock ticks once a second: a card started since the last tick shows 0, not a negative time.
  const elapsed = card.startedAt === undefined ? undefined : Math.max(0, (card.endedAt ?? Math.max(now, card.startedAt)) - card.startedAt);
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
  const pending = useRef<Array<{ agent: string; event: StreamEvent; receivedAt: number; batch: number; committedAt?: number }>>([]);
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

  // One burst of events (sse.ts): folded into the board in one state update, so one render.
  const onEvents = useCallback(
    (received: Received[]) => {
      const mine = received.filter(({ event }) => !event.slug || event.slug === slug);
      if (mine.length === 0) return;
      if (!loaded.current) {
        for (const { event } of mine) buffered.current.push(event);
        return;
      }
      setBoard((old) => {
        if (!old) return old;
        let next = old;
        for (const { event, at } of mine) {
          const folded = applyEvent(next, event);
          next = folded.board;
          if (folded.agent && window.__polywaveCardUpdated) pending.current.push({ agent: folded.agent, event, receivedAt: at, batch: mine.length });
        }
        return next;
      });
      // The IMPL's state moves at these points: refetch it (once per burst).
      const moves = mine.some(({ event }) => {
        const activity = event.activity_type ?? (event.payload?.activity_type as string | undefined);
        return event.type === 'wave-run-start' || event.type === 'wave-run-end' || (event.type === 'activity' && (activity === 'wave_merge' || activity === 'impl_complete' || activity === 'wave_failed'));
      });
      if (moves) load(false);
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
  const connection = useEventStream({ query: { repo, impl: slug, after: '0' }, onEvents, onResync });

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
    for (const { agent, event, receivedAt, batch, committedAt } of shown)
      hook({ agent, event_id: event.id, type: event.type, ts: typeof event.ts === 'number' ? event.ts : Date.parse(event.ts), received_at: receivedAt, committed_at: committedAt ?? at, shown_at: at, batch });
  }, [board]);

  const cards = board ? Object.values(board.agents) : [];
  const running = cards.some((card) => card.status === 'running' || card.status === 'retrying');
  const now = useNow(running);
  const waves = board ? Object.values(board.waves).sort((a, b) => a.number - b.number) : [];
  const statusKey = cards.map((card) => `${card.id}=${card.status}`).join(' ');
  const agents = useMemo(() => (detail ? graphAgents(detail, Object.fromEntries(cards.map((card) => [card.id, card.status]))) : []), [detail, statusKey]);
  const hrefFor = useCallback((id: string) => `/r/${enc(repo)}/impl/${enc(slug)}/agent/${enc(id)}`, [repo, slug]);

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
                    <MemoCard key={card.id} card={card} now={card.startedAt !== undefined && card.endedAt === undefined ? now : 0} href={hrefFor(card.id)} />
                  ))}
              </div>
            </Section>
          ))}
          <Section title="Dependency graph" id="graph">
            <MemoGraph agents={agents} hrefFor={hrefFor} />
          </Section>
          <Gates gates={board.gates} />
          <Steps steps={board.steps} />
          <p class="muted small">{board.events} event(s) received.</p>
        </>
      )}
    </main>
  );
}
