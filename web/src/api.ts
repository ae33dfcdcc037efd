// The client of the `polywave serve` JSON API (/work/coord/serve-api.md is the contract). Every
// request carries the per-start token from the shell's meta tag; POSTs need it (the cookie alone is
// refused there, CSRF), GETs accept it too.

export function token(): string {
  const meta = document.querySelector<HTMLMetaElement>('meta[name="polywave-token"]');
  return meta?.content ?? '';
}

export interface ApiErrorBody {
  error?: { code?: string; message?: string };
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

async function request<T>(method: string, url: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { 'X-Polywave-Token': token(), Accept: 'application/json' };
  const init: RequestInit = { method, headers, credentials: 'same-origin' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const response = await fetch(url, init);
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!response.ok) {
    const error = (parsed as ApiErrorBody | undefined)?.error;
    throw new ApiError(response.status, error?.code ?? `HTTP_${response.status}`, error?.message ?? (text.slice(0, 200) || response.statusText));
  }
  return parsed as T;
}

export const getJSON = <T>(url: string): Promise<T> => request<T>('GET', url);
export const postJSON = <T>(url: string, body: unknown = {}): Promise<T> => request<T>('POST', url, body);

const enc = encodeURIComponent;

// ---- Shapes of the API answers (only the fields the UI reads) ----

export interface ImplSummary {
  slug: string;
  file: string;
  title?: string;
  state: string;
  waves?: number;
  agents?: number;
  updated_at?: string;
  last_event_at?: string | null;
}
export interface ProgramSummary {
  slug: string;
  file: string;
  title?: string;
  state: string;
  tiers?: number;
  impls?: number;
  updated_at?: string;
  last_event_at?: string | null;
}
export interface Repo {
  id: string;
  name: string;
  path: string;
  impls: ImplSummary[];
  programs: ProgramSummary[];
}

export interface Finding {
  code: string;
  severity: string;
  message: string;
  field?: string;
}

/** Where an agent's newest attempt ran (issue 17; serve-api.md `runs_on`). */
export interface RunsOn {
  dispatcher: string;
  worker: string | null;
  host?: string | null;
  job_id?: string | null;
  stalls?: number | null;
  attempt?: number;
  ended?: boolean;
}

export interface ProgressAgent {
  id: string;
  status: string;
  files?: string[];
  branch?: string;
  runs_on?: RunsOn | null;
}

/** The parsed IMPL manifest: yaml keys as they are (the UI treats every part as optional). */
export type Manifest = Record<string, unknown> & {
  title?: string;
  feature_slug?: string;
  state?: string;
  waves?: Array<{ number: number; type?: string; agents?: Array<{ id: string; task?: string; files?: string[]; dependencies?: string[]; model?: string }> }>;
  file_ownership?: Array<{ file: string; agent: string; wave?: number; action?: string; depends_on?: string[] }>;
  interface_contracts?: Array<Record<string, unknown>>;
  scaffolds?: Array<Record<string, unknown>>;
  quality_gates?: { level?: string; gates?: Array<{ type?: string; command?: string; required?: boolean; description?: string; timing?: string }> };
  critic_report?: { verdict?: string; summary?: string; issue_count?: number; reviewed_at?: string; agent_reviews?: Record<string, unknown> };
  completion_reports?: Record<string, Record<string, unknown>>;
};

export interface ImplDetail {
  slug: string;
  file: string;
  state: string;
  manifest: Manifest | null;
  findings: Finding[];
  progress: { waves: Array<{ number: number; agents: ProgressAgent[] }> };
  /** The last run this server started for the plan (running or ended). */
  launch?: Launch | null;
}

export interface Launch {
  pid: number;
  started_at: string;
  running: boolean;
  exit_code: number | null;
  log: string;
  log_tail: string[];
  reason: string | null;
  hint: string | null;
  /** Read from the log on disk (started before this server process): exit code from the log's last lines, or null. */
  from_log?: boolean;
}

export interface JournalEntry {
  ts: string | number;
  kind: string;
  tool?: string;
  summary: string;
  denied?: boolean | string;
}

export interface AgentDetail {
  id: string;
  wave: number;
  task?: string;
  files?: string[];
  dependencies?: string[];
  status: string;
  report: Record<string, unknown> | null;
  /** Journal entries read (the page shows the newest 2,000) and the bytes of journal files whose beginning was not read. */
  journal_read?: number;
  journal_cut_bytes?: number;
  runs_on?: RunsOn | null;
  journal: JournalEntry[];
  /** Journal/denials files the server refused to read (a symlink out of the repository, a FIFO…): listed, never read. */
  unreadable?: Array<{ file: string; code: string; message: string }>;
  diff: string;
}

export interface ProgramDetail {
  slug: string;
  file: string;
  state: string;
  manifest: Record<string, unknown> | null;
  findings?: Finding[];
  tiers: Array<{ number: number; description?: string; complete?: boolean; impls: Array<{ slug: string; title?: string; state: string; status?: string; waves_done: number; waves_total: number }>; gate?: unknown }>;
  tier_gates?: Array<{ type?: string; command?: string; required?: boolean; description?: string }>;
  frozen_contracts: Array<{ name?: string; location?: string; frozen?: boolean; frozen_at_tier?: number; freeze_at?: string } & Record<string, unknown>>;
  completion?: { tiers_complete: number; tiers_total: number; impls_complete: number; impls_total: number };
  current_tier?: number;
}

export interface RunRow {
  run_id: string;
  command: string;
  started_at: string | number;
  cwd?: string;
  /** The IMPL and PROGRAM slugs the run's events name. */
  impls?: string[];
  programs?: string[];
  events?: number;
  cost_usd?: number | null;
  duration_ms?: number | null;
}

export const api = {
  repos: () => getJSON<{ repos: Repo[] }>('/api/repos'),
  impl: (repo: string, slug: string) => getJSON<ImplDetail>(`/api/repos/${enc(repo)}/impls/${enc(slug)}`),
  agent: (repo: string, slug: string, id: string) => getJSON<AgentDetail>(`/api/repos/${enc(repo)}/impls/${enc(slug)}/agents/${enc(id)}`),
  program: (repo: string, slug: string) => getJSON<ProgramDetail>(`/api/repos/${enc(repo)}/programs/${enc(slug)}`),
  runs: (query: Record<string, string> = {}) => getJSON<{ runs: RunRow[] }>(`/api/runs?${new URLSearchParams(query).toString()}`),
  metrics: (query: Record<string, string>) => getJSON<Record<string, unknown>>(`/api/metrics?${new URLSearchParams(query).toString()}`),
  approve: (repo: string, slug: string) => postJSON<{ started: boolean; pid?: number }>(`/api/repos/${enc(repo)}/impls/${enc(slug)}/approve`),
  reject: (repo: string, slug: string, reason: string) => postJSON<{ state: string }>(`/api/repos/${enc(repo)}/impls/${enc(slug)}/reject`, { reason }),
  run: (repo: string, slug: string) => postJSON<{ started: boolean; pid?: number }>(`/api/repos/${enc(repo)}/impls/${enc(slug)}/run`),
};
