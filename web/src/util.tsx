import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';

export interface Loaded<T> {
  data: T | undefined;
  error: string | undefined;
  loading: boolean;
  reload: () => void;
}

/** Loads `load()` when `key` changes; `reload()` loads again keeping the old data meanwhile. */
export function useLoad<T>(key: string, load: () => Promise<T>): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: string; loading: boolean; key: string }>({ loading: true, key });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((old) => ({ ...(old.key === key ? old : {}), loading: true, key }));
    load().then(
      (data) => live && setState({ data, loading: false, key }),
      (error: unknown) => live && setState((old) => ({ ...(old.key === key ? old : {}), error: error instanceof Error ? error.message : String(error), loading: false, key })),
    );
    return () => {
      live = false;
    };
    // the key says when to load again
  }, [key, tick]);
  return { data: state.key === key ? state.data : undefined, error: state.key === key ? state.error : undefined, loading: state.loading, reload: () => setTick((t) => t + 1) };
}

export function Section({ title, children, id }: { title: string; children: ComponentChildren; id?: string }) {
  return (
    <section class="section" id={id}>
      <h2>{title}</h2>
      {children}
    </section>
  );
}

export function StateBadge({ state }: { state: string | undefined }) {
  const value = state ?? 'UNKNOWN';
  return (
    <span class={`badge state-${value.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`} data-state={value}>
      {value}
    </span>
  );
}

export function Status({ error, loading }: { error?: string | undefined; loading?: boolean }) {
  if (error) return <p class="error" role="alert">{error}</p>;
  if (loading) return <p class="muted">Loading…</p>;
  return null;
}

export function ago(when: string | number | undefined): string {
  if (when === undefined || when === '') return '—';
  const time = typeof when === 'number' ? when : Date.parse(when);
  if (!Number.isFinite(time)) return String(when);
  const seconds = Math.round((Date.now() - time) / 1000);
  if (seconds < 60) return `${Math.max(seconds, 0)} s ago`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.round(seconds / 3600)} h ago`;
  return new Date(time).toISOString().slice(0, 10);
}

export function duration(ms: number | undefined | null): string {
  if (ms === undefined || ms === null || !Number.isFinite(ms)) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

export function usd(value: number | undefined | null): string {
  if (value === undefined || value === null || !Number.isFinite(value)) return '—';
  return `$${value < 1 ? value.toFixed(4) : value.toFixed(2)}`;
}

export function tokens(value: number): string {
  return value >= 10_000 ? `${(value / 1000).toFixed(1)}k` : String(value);
}

export const enc = encodeURIComponent;

export function Json({ value }: { value: unknown }) {
  return <pre class="code">{typeof value === 'string' ? value : JSON.stringify(value, null, 2)}</pre>;
}
