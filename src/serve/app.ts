import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { getCookie, setCookie } from 'hono/cookie';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { denialsFileName } from '../engine/jail-denials.js';
import { journalPaths, type ToolEntry } from '../engine/journal.js';
import { PolywaveError } from '../errors/polywave-error.js';
import { runGit } from '../git/run-git.js';
import { eventsForMetrics, type Database, type EventFilter } from '../observability/event-store.js';
import { computeMetrics, metricsEventTypes } from '../observability/metrics.js';
import { branchName, legacyBranchName } from '../protocol/names.js';
import { programStatus } from '../protocol/program/status.js';
import { checkTransition } from '../protocol/state-machine.js';
import type { ImplManifest } from '../protocol/schema/impl-schema.js';
import { findAgent } from '../protocol/waves.js';
import { parseImpl } from '../protocol/parse-impl.js';
import { applyEdits } from '../protocol/yaml/index.js';
import { withFileLock, writeFileAtomic } from '../store/locked-write.js';
import { EventTail, parseRoots as repoRootsOf, rootsInRepo } from './event-tail.js';
import { countAgents, ManifestCache, waveProgress, type LoadedImpl, type LoadedManifest, type ServedRepo } from './manifests.js';
import { acquireRunLock, runInProgressCode } from '../cli/run-lock.js';
import { describeLaunch, launchFromLog, RunLauncher } from './runs.js';
import { appendConfined, checkAppendConfined, ConfinedReadError, maxManifestBytes, readConfined, readConfinedIfExists } from './safe-read.js';
import { cookieName, hostPolicy, originMatches, redactSecrets, secretRedactor, securityHeaders, serverSecretValues, tokenMatches } from './security.js';
import { streamEvents } from './sse.js';
import { etagMatches, StaticAssets } from './static-assets.js';
import { latencyTracer } from './trace.js';

export interface ServeAppOptions {
  repos: ServedRepo[];
  token: string;
  /** The port the server listens on (Host check, cookie name). */
  port: number;
  host: string;
  /** True when `--host` was given: its name is accepted in Host headers too (a wildcard accepts any). */
  explicitHost: boolean;
  storePath: string;
  /** The built UI (dist/web/); a missing directory serves a shell saying how to build it. */
  webRoot: string;
  /** bin/polywave.js, for the runs started from the page. */
  bin: string;
  version: string;
  env: Readonly<Record<string, string | undefined>>;
  now: () => Date;
  /** How often the store is polled for new rows (ms). */
  pollMs?: number;
  /** SSE heartbeat comment interval (ms). */
  heartbeatMs?: number;
  /** Recorder flush of the runs started from the page (POLYWAVE_EVENTS_FLUSH_MS; default 0 = each event written as it is emitted). */
  runFlushMs?: number;
  /** One line per unexpected server error (never the token). */
  log?: (line: string) => void;
}

export const maxBodyBytes = 1024 * 1024;
const maxFileBytes = 1024 * 1024;
const maxDiffBytes = 512 * 1024;
const maxJournalEntries = 2000;

/** Where an agent's newest attempt runs or ran (issue 17): `redis` with the worker's id once a worker took the job, else `in-process`. */
export interface RunsOn {
  dispatcher: string;
  /** The worker's id (`polywave worker --id`, default `<host>-<pid>`); null until a worker took the job, and for in-process agents. */
  worker: string | null;
  /** The worker's host (from the worker when it took the job, or its result). */
  host: string | null;
  job_id: string | null;
  /** Times the job stalled (its worker died) and was handed to another worker. */
  stalls: number | null;
  attempt: number;
  run_id: string;
  launched_at: string;
  /** The attempt's agent-end is stored (false: still running, or the run stopped without one). */
  ended: boolean;
}

/** The strings of a json_group_array answer (NULLs and non-strings dropped), sorted. */
function slugList(text: string): string[] {
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string' && item !== '').sort() : [];
  } catch {
    return [];
  }
}

/** The coded JSON error every /api route answers with. */
class HttpError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

function errorBody(code: string, message: string) {
  return { error: { code, message } };
}

const mimeTypes: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.woff': 'font/woff',
  '.txt': 'text/plain; charset=utf-8',
  '.map': 'application/json',
  '.webmanifest': 'application/manifest+json',
};

const notBuiltShell = '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>polywave serve</title></head>\n<body><h1>polywave serve</h1><p>UI not built: run <code>npm run build</code> in the polywave package, then reload.</p><p>The JSON API answers under <code>/api</code>.</p></body></html>\n';
const unauthorizedPage = '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>polywave serve — token needed</title></head>\n<body><h1>Token needed</h1><p>Open the URL printed by <code>polywave serve</code> (it ends with <code>?token=…</code>).</p></body></html>\n';

const escapeAttribute = (value: string) => value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

/** Statuses of the agents of one IMPL: the completion report wins; else a branch means in progress (E50). */
function agentStatus(report: { status?: string } | undefined, hasBranch: boolean): string {
  if (report?.status === 'complete') return 'complete';
  if (report?.status === 'partial' || report?.status === 'blocked') return 'blocked';
  return hasBranch ? 'in_progress' : 'not_started';
}

/** The agent's E5 branch name, or null for a wave/ID the name rules refuse. */
function safeBranch(slug: string, wave: number | undefined, id: string | undefined, legacy = false): string | null {
  if (wave === undefined || id === undefined) return null;
  try {
    return legacy ? legacyBranchName(wave, id) : branchName(slug, wave, id);
  } catch {
    return null;
  }
}

/** The JSON objects of a JSON-lines text (torn or foreign lines skipped). */
function jsonLines(text: string): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const value: unknown = JSON.parse(line);
      if (value && typeof value === 'object' && !Array.isArray(value)) out.push(value as Record<string, unknown>);
    } catch {
      // a torn last line
    }
  }
  return out;
}

function journalSummary(entry: ToolEntry): string {
  if (entry.kind === 'tool_result') return String(entry.preview ?? '').slice(0, 300);
  const input = entry.input ?? {};
  const first = ['command', 'file_path', 'path', 'pattern', 'url', 'description'].map((key) => input[key]).find((value) => typeof value === 'string');
  const text = typeof first === 'string' ? first : JSON.stringify(input);
  return text.length > 300 ? `${text.slice(0, 297)}...` : text;
}

/**
 * The Hono app of `polywave serve`: security middleware, the JSON API of
 * /work/coord/serve-api.md (docs/serve.md), SSE from the event store, the UI's static files.
 */
export function createServeApp(options: ServeAppOptions): { app: Hono; tail: EventTail; launcher: RunLauncher; close: () => void } {
  const repos = new Map(options.repos.map((repo) => [repo.id, repo]));
  const cache = new ManifestCache();
  const tail = new EventTail(options.storePath, options.pollMs ?? 20);
  tail.start();
  // POLYWAVE_SERVE_TRACE=<file> (benches): where each event's time went inside the server (docs/serve.md "Measured").
  const tracer = options.env.POLYWAVE_SERVE_TRACE ? latencyTracer(options.env.POLYWAVE_SERVE_TRACE, tail) : undefined;
  const launcher = new RunLauncher({ bin: options.bin, storePath: options.storePath, env: options.env, now: options.now, flushMs: options.runFlushMs ?? 0 });
  const hostAllowed = hostPolicy({ host: options.host, port: options.port, explicitHost: options.explicitHost });
  const cookie = cookieName(options.port);
  const token = options.token;
  // What never leaves by value: the token, and the values of the server's own credential variables (OPENAI_API_KEY=…, any shape).
  const secrets = [token, ...serverSecretValues(options.env)];
  // Same answer as redactSecrets(value, secrets), remembering the strings it already redacted (events repeat them).
  const redactAnswer = secretRedactor(secrets);
  const json = (c: Context, value: unknown, status: ContentfulStatusCode = 200) => c.json(redactAnswer(value) as object, status);

  const app = new Hono();

  app.onError((error, c) => {
    if (error instanceof HttpError || error instanceof ConfinedReadError) return c.json(errorBody(error.code, error.message), error.status);
    if (PolywaveError.isInstance(error)) return c.json(errorBody(error.code, redactSecrets(error.message, secrets)), 422);
    options.log?.(`polywave serve: internal error on ${c.req.method} ${c.req.path}: ${redactSecrets(error instanceof Error ? error.message : String(error), secrets)}\n`);
    return c.json(errorBody('SERVE_INTERNAL', 'internal server error'), 500);
  });

  // 1. Headers on every answer; Host (DNS rebinding) and Origin (cross-site) before anything else.
  app.use('*', async (c, next) => {
    for (const [name, value] of Object.entries(securityHeaders)) c.header(name, value);
    if (c.req.path.startsWith('/api/')) c.header('Cache-Control', 'no-store');
    const hostHeader = c.req.header('host');
    if (!hostAllowed(hostHeader)) return c.json(errorBody('SERVE_HOST', 'Host header does not name this server (DNS rebinding protection): use the printed URL'), 403);
    const origin = c.req.header('origin');
    if (origin !== undefined && !originMatches(origin, hostHeader!)) return c.json(errorBody('SERVE_ORIGIN', 'cross-origin request refused'), 403);
    await next();
  });

  // 2. Token: the printed URL's ?token= becomes an HttpOnly SameSite=Strict cookie (then a redirect without it).
  app.use('*', async (c, next) => {
    const url = new URL(c.req.url);
    const given = url.searchParams.get('token');
    if (c.req.method === 'GET' && given !== null && !url.pathname.startsWith('/api/')) {
      if (!tokenMatches(token, given)) return c.html(unauthorizedPage, 401);
      setCookie(c, cookie, token, { httpOnly: true, sameSite: 'Strict', path: '/' });
      url.searchParams.delete('token');
      c.header('Cache-Control', 'no-store');
      // One leading slash: `//host` would be a protocol-relative redirect to another site.
      return c.redirect(`/${url.pathname.replace(/^[/\\]+/, '')}${url.search}`, 302);
    }
    const header = c.req.header('x-polywave-token');
    const headerOk = tokenMatches(token, header);
    const cookieOk = tokenMatches(token, getCookie(c, cookie));
    const isApi = url.pathname === '/api' || url.pathname.startsWith('/api/');
    const safe = c.req.method === 'GET' || c.req.method === 'HEAD';
    if (safe ? headerOk || cookieOk : headerOk) {
      await next();
      return;
    }
    if (!safe && cookieOk) return c.json(errorBody('SERVE_CSRF', `${c.req.method} needs the X-Polywave-Token header (the cookie alone is not enough)`), 403);
    if (!isApi) return c.html(unauthorizedPage, 401);
    return c.json(errorBody('SERVE_AUTH', 'missing or wrong token: open the URL printed by polywave serve'), 401);
  });

  app.use(
    '/api/*',
    bodyLimit({ maxSize: maxBodyBytes, onError: (c) => c.json(errorBody('SERVE_TOO_LARGE', `request body over ${maxBodyBytes} bytes`), 413) }),
  );

  const repoOf = (id: string): ServedRepo => {
    const repo = repos.get(id);
    if (!repo) throw new HttpError(404, 'SERVE_NOT_FOUND', `no repository "${id}" is served`);
    return repo;
  };
  // Runs, events and metrics are those of the served repositories (`?repo=` narrows to one): the store is per user.
  const scopeOf = (repoId: string | undefined): ServedRepo[] => (repoId ? [repoOf(repoId)] : [...repos.values()]);
  /** SQL: `column` (a path) is one of `scope`'s repositories or below one. */
  const pathIn = (scope: ServedRepo[], column: string): { sql: string; params: unknown[] } => ({
    sql: `(${scope.map(() => `${column} = ? OR substr(${column}, 1, ?) = ?`).join(' OR ') || '0'})`,
    // SQLite's substr counts characters (code points), as the spread does.
    params: scope.flatMap((repo) => [repo.path, [...repo.path].length + 1, `${repo.path}${path.sep}`]),
  });
  /**
   * SQL: the run row `alias` worked on one of `scope`'s repositories — one of the roots it recorded
   * (`repos`, a JSON array: `--repo-dir`, every repository of a cross-repo wave), or its cwd when it
   * recorded none (older runs). The same rule as EventTail.runRoots.
   */
  const runsIn = (scope: ServedRepo[], alias: string): { sql: string; params: unknown[] } => {
    const roots = pathIn(scope, 'root.value');
    const cwd = pathIn(scope, `${alias}.cwd`);
    return {
      sql: `(CASE WHEN (CASE WHEN json_valid(${alias}.repos) THEN json_array_length(${alias}.repos) ELSE 0 END) > 0 THEN EXISTS (SELECT 1 FROM json_each(${alias}.repos) AS root WHERE ${roots.sql}) ELSE ${cwd.sql} END)`,
      params: [...roots.params, ...cwd.params],
    };
  };
  // Slugs name files (docs/IMPL/IMPL-<slug>.yaml): only slug characters, never a path.
  const checkSlug = (slug: string) => {
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(slug) || slug.includes('..')) throw new HttpError(404, 'SERVE_NOT_FOUND', `"${slug.slice(0, 100)}" is not a slug`);
  };
  const implOf = async (repo: ServedRepo, slug: string): Promise<LoadedImpl & { manifest: ImplManifest }> => {
    checkSlug(slug);
    const loaded = await cache.findImpl(repo, slug);
    if (!loaded) throw new HttpError(404, 'SERVE_NOT_FOUND', `no IMPL "${slug}" in ${repo.name}`);
    if (!loaded.parsed.manifest) throw new HttpError(422, loaded.findings[0]?.code ?? 'V001_MANIFEST_INVALID', `${loaded.relative}: ${loaded.findings[0]?.message ?? 'not a usable manifest'}`);
    return { ...loaded, manifest: loaded.parsed.manifest };
  };
  const findingsOf = (loaded: { findings: LoadedImpl['findings'] }) =>
    loaded.findings.map((finding) => ({ code: finding.code, severity: finding.severity, message: finding.message, ...(finding.field ? { field: finding.field } : {}), ...(finding.line ? { line: finding.line } : {}) }));
  // Agent branches per IMPL, reused while refs/heads/polywave/<slug>/ and packed-refs keep their mtimes (no git process per answer).
  const branchCache = new Map<string, { key: string; branches: Set<string> }>();
  const refsKey = (repo: ServedRepo, slug: string): string | undefined => {
    const gitDir = path.join(repo.path, '.git');
    try {
      if (!statSync(gitDir).isDirectory()) return undefined;
    } catch {
      return undefined;
    }
    const mtime = (file: string) => {
      try {
        return String(statSync(file).mtimeMs);
      } catch {
        return '-';
      }
    };
    return `${mtime(path.join(gitDir, 'refs', 'heads', 'polywave', slug))}|${mtime(path.join(gitDir, 'packed-refs'))}|${mtime(path.join(gitDir, 'refs', 'heads', 'polywave'))}`;
  };
  const branchesOf = async (repo: ServedRepo, slug: string): Promise<Set<string>> => {
    const key = refsKey(repo, slug);
    const cached = branchCache.get(`${repo.id}\0${slug}`);
    if (key !== undefined && cached?.key === key) return cached.branches;
    let branches: Set<string>;
    try {
      const out = await runGit(['for-each-ref', '--format=%(refname:short)', `refs/heads/polywave/${slug}/`], { cwd: repo.path, env: options.env });
      branches = new Set(out.split('\n').filter(Boolean));
    } catch {
      branches = new Set();
    }
    if (key !== undefined) branchCache.set(`${repo.id}\0${slug}`, { key, branches });
    return branches;
  };

  app.get('/api/health', (c) => json(c, { ok: true, version: options.version }));

  /**
   * Issue 17: where each agent of an IMPL ran last, from the stored `agent-launch` (its `dispatcher`) and
   * `agent-end` (its `dispatch`: the worker's id, the job, stalls) of the served repositories' runs. Kept per
   * repository and IMPL and brought up to date from the rows stored since the last answer (the slug index walks
   * only those): a store of 100 runs of a 20-agent IMPL is read once, not on every answer.
   */
  interface RunsOnCache {
    generation: number;
    afterId: number;
    agents: Map<string, RunsOn>;
  }
  const runsOnCaches = new Map<string, RunsOnCache>();
  type LaunchRow = { id: number; run_id: string; ts: number; type: string; agent: string; payload: string };
  let runsOnQuery: { db: Database; rows: (slug: string, afterId: number) => LaunchRow[] } | undefined;
  const runsOnOf = (repo: ServedRepo, slug: string): Map<string, RunsOn> => {
    const db = tail.database();
    if (!db) return new Map();
    const key = `${repo.id}\0${slug}`;
    let cache = runsOnCaches.get(key);
    if (!cache || cache.generation !== tail.generation) {
      cache = { generation: tail.generation, afterId: 0, agents: new Map() };
      runsOnCaches.set(key, cache);
    }
    if (runsOnQuery?.db !== db) {
      const statement = db.prepare(`SELECT id, run_id, ts, type, agent, payload FROM events WHERE slug = ? AND id > ? AND type IN ('agent-launch', 'agent-running', 'agent-end') AND agent IS NOT NULL ORDER BY id`);
      runsOnQuery = { db, rows: (forSlug, afterId) => statement.all(forSlug, afterId) as LaunchRow[] };
    }
    const inRepo = (runId: string) => rootsInRepo(tail.runRoots(runId), repo.path);
    const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : null);
    // Materialized (the connection runs nothing else while a statement iterates; runRoots reads below).
    for (const row of runsOnQuery.rows(slug, cache.afterId)) {
      cache.afterId = row.id;
      if (!inRepo(row.run_id)) continue;
      let payload: Record<string, unknown>;
      try {
        payload = JSON.parse(row.payload) as Record<string, unknown>;
      } catch {
        continue;
      }
      const attempt = typeof payload.attempt === 'number' ? payload.attempt : 0;
      if (row.type === 'agent-launch') {
        cache.agents.set(row.agent, { dispatcher: text(payload.dispatcher) ?? 'in-process', worker: null, host: null, job_id: null, stalls: null, attempt, run_id: row.run_id, launched_at: new Date(row.ts).toISOString(), ended: false });
        continue;
      }
      // The end of the newest launch (same run and attempt); attempt 0 (E9: found complete, not launched) says nothing about where it ran.
      const entry = cache.agents.get(row.agent);
      if (attempt === 0 || !entry || entry.run_id !== row.run_id || entry.attempt !== attempt) continue;
      // A worker took the job (while it runs: the result has not come back yet; again after a stall).
      if (row.type === 'agent-running') {
        if (entry.ended) continue;
        entry.dispatcher = text(payload.dispatcher) ?? entry.dispatcher;
        entry.worker = text(payload.worker);
        entry.host = text(payload.host);
        entry.job_id = text(payload.job_id);
        continue;
      }
      const dispatch = payload.dispatch && typeof payload.dispatch === 'object' ? (payload.dispatch as Record<string, unknown>) : undefined;
      entry.ended = true;
      if (dispatch) {
        entry.dispatcher = text(dispatch.dispatcher) ?? entry.dispatcher;
        entry.worker = text(dispatch.worker);
        entry.host = text(dispatch.host);
        entry.job_id = text(dispatch.job_id);
        entry.stalls = typeof dispatch.stalls === 'number' ? dispatch.stalls : null;
      }
    }
    return cache.agents;
  };

  /** Newest event time (ISO) per IMPL slug or PROGRAM slug of `repo`'s runs: the "last activity" of the lists. */
  const lastActivity = (repo: ServedRepo, column: 'slug' | 'program', slugs: string[]): Map<string, string> => {
    const db = tail.database();
    const out = new Map<string, string>();
    if (!db || slugs.length === 0) return out;
    const scope = runsIn([repo], 'runs');
    const rows = db
      .prepare(`SELECT ${column} AS key, MAX(ts) AS ts FROM events WHERE ${column} IN (${slugs.map(() => '?').join(', ')}) AND run_id IN (SELECT run_id FROM runs WHERE ${scope.sql}) GROUP BY ${column}`)
      .all(...slugs, ...scope.params) as Array<{ key: string; ts: number }>;
    for (const row of rows) out.set(row.key, new Date(row.ts).toISOString());
    return out;
  };

  // What /api/repos says of every IMPL and PROGRAM, with its own `counts` in the middle (keys in docs/serve.md's order).
  const listed = <Counts extends object>(doc: LoadedManifest<unknown>, manifest: { title?: string; state?: string } | null, counts: Counts, activity: Map<string, string>) => ({
    slug: doc.slug,
    file: doc.relative,
    title: manifest?.title ?? '',
    state: manifest?.state ?? '',
    ...counts,
    updated_at: new Date(doc.mtimeMs).toISOString(),
    last_event_at: activity.get(doc.slug) ?? null,
  });

  app.get('/api/repos', async (c) => {
    const eventId = tail.poll();
    const out = [];
    for (const repo of repos.values()) {
      const loadedImpls = await cache.allImpls(repo);
      const loadedPrograms = await cache.allPrograms(repo);
      const implActivity = lastActivity(repo, 'slug', loadedImpls.map((impl) => impl.slug));
      const programActivity = lastActivity(repo, 'program', loadedPrograms.map((program) => program.slug));
      const impls = loadedImpls.map((impl) => {
        const manifest = impl.parsed.manifest;
        return {
          ...listed(impl, manifest, { waves: manifest?.waves?.length ?? 0, agents: manifest ? countAgents(manifest) : 0 }, implActivity),
          valid: manifest !== null && !impl.findings.some((finding) => finding.severity === 'error' || finding.severity === 'fatal'),
        };
      });
      const programs = loadedPrograms.map((program) => {
        const manifest = program.parsed.manifest;
        return listed(program, manifest, { tiers: manifest?.tiers?.length ?? 0, impls: manifest?.impls?.length ?? 0 }, programActivity);
      });
      out.push({ id: repo.id, name: repo.name, path: repo.path, impls, programs });
    }
    return json(c, { repos: out, event_id: eventId });
  });

  app.get('/api/repos/:repo/impls/:slug', async (c) => {
    const repo = repoOf(c.req.param('repo'));
    // The store's newest row before the state is read: an EventSource opened with ?after=<event_id> misses nothing.
    const eventId = tail.poll();
    const loaded = await implOf(repo, c.req.param('slug'));
    const manifest = loaded.manifest;
    const branches = await branchesOf(repo, loaded.slug);
    const reports = manifest.completion_reports ?? {};
    const ownership = manifest.file_ownership ?? [];
    const runsOn = runsOnOf(repo, loaded.slug);
    const waves = (manifest.waves ?? []).map((wave) => ({
      number: wave.number,
      agents: (wave.agents ?? []).map((agent) => {
        const branch = safeBranch(loaded.slug, wave.number, agent.id);
        const hasBranch = branch !== null && branches.has(branch);
        const files = ownership.filter((entry) => entry.agent === agent.id && (entry.wave === undefined || entry.wave === wave.number)).map((entry) => entry.file);
        const report = agent.id === undefined ? undefined : reports[agent.id];
        return { id: agent.id, status: agentStatus(report, hasBranch), report_status: report?.status ?? null, files: files.length > 0 ? files : (agent.files ?? []), branch, branch_exists: hasBranch, runs_on: (agent.id !== undefined ? runsOn.get(agent.id) : undefined) ?? null };
      }),
    }));
    return json(c, {
      repo: repo.id,
      slug: loaded.slug,
      file: loaded.relative,
      state: manifest.state ?? '',
      updated_at: new Date(loaded.mtimeMs).toISOString(),
      manifest: loaded.parsed.data,
      findings: findingsOf(loaded),
      progress: { waves, ...waveProgress(manifest) },
      launch: await (async () => {
        const last = launcher.latest(repo.path, loaded.slug);
        return last ? describeLaunch(last, loaded.relative) : launchFromLog(repo.path, loaded.slug, loaded.file, loaded.relative);
      })(),
      event_id: eventId,
    });
  });

  app.get('/api/repos/:repo/impls/:slug/agents/:agent', async (c) => {
    const repo = repoOf(c.req.param('repo'));
    const loaded = await implOf(repo, c.req.param('slug'));
    const id = c.req.param('agent');
    const found = findAgent(loaded.manifest, id);
    if (!found) throw new HttpError(404, 'SERVE_NOT_FOUND', `no agent "${id}" in IMPL ${loaded.slug}`);
    const { agent, wave } = found;
    const report = loaded.manifest.completion_reports?.[id] ?? null;
    if (wave.number === undefined) throw new HttpError(422, 'V001_MANIFEST_INVALID', `the wave of agent ${id} has no number`);
    const paths = journalPaths(repo.path, loaded.slug, wave.number, id);
    // Both files through the confined reader (a symlink out of the repository or a FIFO is listed in `unreadable`, never read); the last 2 MB of each.
    const reads = await Promise.all(
      [paths.index, path.join(paths.dir, denialsFileName)].map(async (file) => {
        try {
          const read = await readConfinedIfExists(repo.path, file, { maxBytes: maxManifestBytes, tail: true });
          return { lines: jsonLines(read?.buffer.toString('utf8') ?? ''), ...(read?.truncated ? { cut: read.size } : {}) };
        } catch (error) {
          if (!(error instanceof ConfinedReadError)) throw error;
          return { lines: [], unreadable: { file: path.relative(repo.path, file).split(path.sep).join('/'), code: error.code, message: error.message } };
        }
      }),
    );
    const [entries, denials] = reads.map((read) => read.lines) as [ToolEntry[], Array<Record<string, unknown>>];
    const unreadable = reads.flatMap((read) => (read.unreadable ? [read.unreadable] : []));
    // attack-serve-15 N8: the page says when it shows only the newest entries (how many were read, the file's size when only its end was read).
    const journalCut = reads.reduce((size, read) => size + ((read as { cut?: number }).cut ?? 0), 0);
    const journalAll = [
      ...entries.map((entry) => ({ ts: String(entry.ts ?? ''), kind: String(entry.kind ?? 'tool_use'), ...(typeof entry.tool_name === 'string' && entry.tool_name ? { tool: entry.tool_name } : {}), summary: journalSummary(entry) })),
      ...denials
        .filter((denial) => typeof denial.code === 'string' && typeof denial.tool === 'string')
        .map((denial) => ({ ts: String(denial.ts ?? ''), kind: 'denial', tool: denial.tool as string, summary: `${denial.code as string}: ${String(denial.reason ?? '')}${typeof denial.target === 'string' && denial.target ? ` (${denial.target})` : ''}`, denied: true })),
    ]
      .sort((a, b) => (a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : 0));
    const journal = journalAll.slice(-maxJournalEntries);
    // The diff of the agent's branch against its base (the wave's base commit, else HEAD's merge base), capped.
    let diff = '';
    let diffTruncated = false;
    let branch: string | null = null;
    for (const candidate of [safeBranch(loaded.slug, wave.number, id), safeBranch(loaded.slug, wave.number, id, true)]) {
      if (candidate === null) continue;
      try {
        await runGit(['rev-parse', '--verify', '--quiet', `refs/heads/${candidate}`], { cwd: repo.path, env: options.env });
        branch = candidate;
        break;
      } catch {
        // not this name
      }
    }
    if (branch) {
      const base = wave.base_commit?.trim() && !wave.base_commit.trim().startsWith('-') ? wave.base_commit.trim() : 'HEAD';
      try {
        diff = await runGit(['diff', '--no-color', '--no-ext-diff', `${base}...refs/heads/${branch}`, '--'], { cwd: repo.path, env: options.env, timeoutMs: 10_000 });
      } catch {
        diff = '';
      }
      if (Buffer.byteLength(diff) > maxDiffBytes) {
        diff = Buffer.from(diff).subarray(0, maxDiffBytes).toString('utf8');
        diffTruncated = true;
      }
    }
    const files = (loaded.manifest.file_ownership ?? []).filter((entry) => entry.agent === id && (entry.wave === undefined || entry.wave === wave.number)).map((entry) => entry.file);
    return json(c, {
      id,
      wave: wave.number,
      task: agent.task ?? '',
      files: files.length > 0 ? files : (agent.files ?? []),
      dependencies: agent.dependencies ?? [],
      model: agent.model ?? null,
      status: agentStatus(report ?? undefined, branch !== null),
      branch,
      report,
      runs_on: runsOnOf(repo, loaded.slug).get(id) ?? null,
      journal,
      journal_read: journalAll.length,
      journal_cut_bytes: journalCut,
      unreadable,
      diff,
      diff_truncated: diffTruncated,
    });
  });

  app.get('/api/repos/:repo/programs/:slug', async (c) => {
    const repo = repoOf(c.req.param('repo'));
    const slug = c.req.param('slug');
    checkSlug(slug);
    const eventId = tail.poll();
    const loaded = await cache.findProgram(repo, slug);
    if (!loaded) throw new HttpError(404, 'SERVE_NOT_FOUND', `no PROGRAM "${slug}" in ${repo.name}`);
    const manifest = loaded.parsed.manifest;
    if (!manifest) throw new HttpError(422, loaded.findings[0]?.code ?? 'V001_MANIFEST_INVALID', `${loaded.relative}: ${loaded.findings[0]?.message ?? 'not a usable manifest'}`);
    const impls = await cache.allImpls(repo);
    const states = new Map<string, string | undefined>();
    const progress = new Map<string, { total: number; complete: number }>();
    for (const impl of impls) {
      if (!impl.parsed.manifest || states.has(impl.slug)) continue;
      states.set(impl.slug, impl.parsed.manifest.state);
      progress.set(impl.slug, waveProgress(impl.parsed.manifest));
    }
    const status = programStatus(manifest, states, progress);
    return json(c, {
      repo: repo.id,
      slug: loaded.slug,
      file: loaded.relative,
      state: manifest.state ?? '',
      manifest: loaded.parsed.data,
      findings: findingsOf(loaded),
      tiers: status.tier_statuses.map((tier) => ({
        number: tier.number,
        description: tier.description ?? '',
        complete: tier.complete,
        impls: tier.impl_statuses.map((impl) => ({ slug: impl.slug, title: impl.title, state: impl.disk_state ?? impl.status, status: impl.status, waves_done: impl.waves?.complete ?? 0, waves_total: impl.waves?.total ?? 0 })),
      })),
      tier_gates: manifest.tier_gates ?? [],
      frozen_contracts: status.contract_statuses,
      completion: status.completion,
      current_tier: status.current_tier,
      event_id: eventId,
    });
  });

  app.get('/api/repos/:repo/file', async (c) => {
    const repo = repoOf(c.req.param('repo'));
    const requested = c.req.query('path') ?? '';
    const file = confinedPath(repo.path, requested);
    // Read through one descriptor (O_NOFOLLOW, O_NONBLOCK, fstat, its /proc path inside the repository): no check-then-read race.
    const { buffer } = await readConfined(repo.path, file, { maxBytes: maxFileBytes, shown: requested });
    if (buffer.includes(0)) throw new HttpError(415, 'SERVE_BINARY', `${requested} is not a text file`);
    return json(c, { path: path.relative(repo.path, file).split(path.sep).join('/'), content: buffer.toString('utf8') });
  });

  app.get('/api/runs', (c) => {
    const db = tail.database();
    const limit = Math.min(Math.max(Number(c.req.query('limit') ?? 50) || 50, 1), 1000);
    if (!db) return json(c, { runs: [] });
    const clauses: string[] = [];
    const params: unknown[] = [];
    const impl = c.req.query('impl');
    const program = c.req.query('program');
    const repoId = c.req.query('repo');
    if (impl) {
      clauses.push('r.run_id IN (SELECT DISTINCT run_id FROM events WHERE slug = ?)');
      params.push(impl);
    }
    if (program) {
      clauses.push('r.run_id IN (SELECT DISTINCT run_id FROM events WHERE program = ?)');
      params.push(program);
    }
    const scope = runsIn(scopeOf(repoId), 'r');
    clauses.push(scope.sql);
    params.push(...scope.params);
    const rows = db
      .prepare(
        `SELECT r.run_id, r.command, r.started_at, r.cwd, r.repos, COUNT(e.id) AS events, json_group_array(DISTINCT e.slug) AS slugs, json_group_array(DISTINCT e.program) AS programs, MIN(e.ts) AS first_ts, MAX(e.ts) AS last_ts,
          SUM(CASE WHEN e.type = 'cost' THEN json_extract(e.payload, '$.cost_usd') END) AS cost_calls,
          SUM(CASE WHEN e.type = 'agent-end' THEN json_extract(e.payload, '$.cost_usd') END) AS cost_agents
         FROM runs r LEFT JOIN events e ON e.run_id = r.run_id ${clauses.length > 0 ? `WHERE ${clauses.join(' AND ')}` : ''}
         GROUP BY r.run_id ORDER BY r.started_at DESC LIMIT ?`,
      )
      .all(...params, limit) as Array<{ run_id: string; command: string; started_at: number; cwd: string | null; repos: string | null; events: number; slugs: string; programs: string; first_ts: number | null; last_ts: number | null; cost_calls: number | null; cost_agents: number | null }>;
    return json(c, {
      runs: rows.map((row) => ({
        run_id: row.run_id,
        command: row.command,
        started_at: new Date(row.started_at).toISOString(),
        cwd: row.cwd,
        repos: repoRootsOf(row.repos),
        // What the run was for (the Costs page's runs table): the IMPL and PROGRAM slugs its events name.
        impls: slugList(row.slugs),
        programs: slugList(row.programs),
        events: row.events,
        cost_usd: row.cost_calls ?? row.cost_agents ?? null,
        duration_ms: row.first_ts !== null && row.last_ts !== null ? row.last_ts - Math.min(row.first_ts, row.started_at) : null,
      })),
    });
  });

  app.get('/api/metrics', (c) => {
    const impl = c.req.query('impl');
    const program = c.req.query('program');
    if (!impl && !program) throw new HttpError(400, 'SERVE_BAD_REQUEST', 'metrics needs ?impl=SLUG or ?program=SLUG');
    const scope = program ? { program } : { impl: impl! };
    const db = tail.database();
    // Only the runs of the served repositories (the store is per user: other repositories' runs share it).
    const served = [...repos.values()].map((repo) => repo.path);
    const inServed = (roots: readonly string[]) => served.some((root) => rootsInRepo(roots, root));
    return json(c, computeMetrics(db ? eventsForMetrics(db, scope, metricsEventTypes).filter((row) => inServed(tail.runRoots(row.run_id))) : [], scope));
  });

  app.get('/api/launches', (c) => json(c, { launches: launcher.list().map((run) => ({ pid: run.pid, slug: run.slug, repo: [...repos.values()].find((repo) => repo.path === run.repo)?.id ?? null, started_at: run.started_at, running: run.running, exit_code: run.exit_code, log: run.log })) }));

  app.get('/api/events', (c) => {
    // A row id: decimal digits only (`1e3`, `0x10`, ` 5`, `-1` are not ids).
    const rowId = (text: string | undefined): number | undefined => {
      if (text === undefined || !/^\d{1,16}$/.test(text)) return undefined;
      const id = Number(text);
      return Number.isSafeInteger(id) ? id : undefined;
    };
    // Last-Event-ID comes from the browser (what the server sent): one that is not a row id is treated as absent —
    // a 400 would end the EventSource for good. The stream then starts at `?after=`, or at the store's current
    // position with a `resync` first (the page refetches what it shows).
    const header = c.req.header('last-event-id');
    // `<epoch>-<row>` as sent (attack-serve-15 N7), or a bare row id (a client of an older server, curl).
    const sent = header === undefined ? undefined : /^(?:([0-9a-f]{10}|none)-)?(\d{1,16})$/.exec(header);
    const fromHeader = sent ? rowId(sent[2]) : undefined;
    const headerEpoch = fromHeader !== undefined ? sent?.[1] : undefined;
    const query = c.req.query('after');
    let after = fromHeader;
    if (after === undefined && query !== undefined && query !== '') {
      after = rowId(query);
      if (after === undefined) throw new HttpError(400, 'SERVE_BAD_REQUEST', 'after must be a row id (decimal digits)');
    }
    // attack-serve-17 X4: a bare row id in Last-Event-ID (a tab of a pre-epoch server) cannot tell whether the store was
    // replaced while it was away: `resync` first, then the rows after it. `?after=` (curl) stays a plain row id.
    const bareHeaderId = fromHeader !== undefined && sent?.[1] === undefined && after === fromHeader;
    const resyncFirst = (after === undefined && header !== undefined && header !== '') || bareHeaderId;
    const filter: EventFilter = {};
    const impl = c.req.query('impl');
    const program = c.req.query('program');
    if (impl) filter.impl = impl;
    if (program) filter.program = program;
    return streamEvents(c, { tail, filter, after, ...(headerEpoch !== undefined && after === fromHeader ? { epoch: headerEpoch } : {}), ...(resyncFirst ? { resyncFirst: true } : {}), repoPaths: scopeOf(c.req.query('repo')).map((repo) => repo.path), heartbeatMs: options.heartbeatMs ?? 15_000, redact: redactAnswer, ...(tracer ? { trace: tracer.stream(c.req.header('user-agent')) } : {}) });
  });

  const readBody = async (c: Context): Promise<Record<string, unknown>> => {
    const text = await c.req.text();
    if (text.trim() === '') return {};
    try {
      const value: unknown = JSON.parse(text);
      if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
    } catch {
      // fall through
    }
    throw new HttpError(400, 'SERVE_BAD_REQUEST', 'the body must be a JSON object');
  };
  const modelArgs = (body: Record<string, unknown>): string[] => {
    const model = body.model;
    if (model === undefined) return [];
    // A word character first: never an option such as `--help` handed on to `polywave run --model`.
    if (typeof model !== 'string' || !/^\w[\w.:/@+-]{0,199}$/.test(model)) throw new HttpError(400, 'SERVE_BAD_REQUEST', 'model must be a model string such as anthropic:claude-sonnet-4-5');
    return ['--model', model];
  };

  // Approve and Run: `polywave run` started on the IMPL, unless a run of it started here is still running.
  const startRun = async (c: Context, repo: ServedRepo, loaded: LoadedImpl, body: Record<string, unknown>) => {
    if (launcher.running(repo.path, loaded.slug) || launcher.isStarting(repo.path, loaded.slug)) throw new HttpError(409, 'SERVE_BUSY', `a run of ${loaded.slug} started here is still running`);
    const run = await launcher.start({ repo: repo.path, implPath: loaded.file, slug: loaded.slug, extraArgs: modelArgs(body) });
    // attack-serve-15 N1: the run found its plan's run lock held (another server, a terminal): nothing started.
    if (run.busy !== undefined) throw new HttpError(409, 'SERVE_BUSY', run.busy);
    return json(c, { started: true, pid: run.pid, running: run.running, exit_code: run.exit_code });
  };

  app.post('/api/repos/:repo/impls/:slug/approve', async (c) => {
    const repo = repoOf(c.req.param('repo'));
    const body = await readBody(c);
    const loaded = await implOf(repo, c.req.param('slug'));
    if (loaded.manifest.state !== 'REVIEWED') throw new HttpError(409, 'SERVE_STATE', `IMPL ${loaded.slug} is ${loaded.manifest.state ?? 'without a state'}, not REVIEWED: only a reviewed plan is approved`);
    return startRun(c, repo, loaded, body);
  });

  app.post('/api/repos/:repo/impls/:slug/run', async (c) => {
    const repo = repoOf(c.req.param('repo'));
    const body = await readBody(c);
    const loaded = await implOf(repo, c.req.param('slug'));
    const state = loaded.manifest.state ?? '';
    if (state === 'COMPLETE' || state === 'NOT_SUITABLE' || state === 'SCOUT_PENDING' || state === 'SCOUT_VALIDATING' || state === 'INTERVIEWING')
      throw new HttpError(409, 'SERVE_STATE', `IMPL ${loaded.slug} is ${state || 'without a state'}: nothing to run or resume`);
    // attack-serve-15 N2: `polywave run` stops at once on a BLOCKED plan; say so instead of starting a run that cannot go on.
    if (state === 'BLOCKED') throw new HttpError(409, 'SERVE_STATE', `IMPL ${loaded.slug} is BLOCKED: a human must decide (see polywave agent-status ${loaded.relative}); a run would stop at once`);
    return startRun(c, repo, loaded, body);
  });

  app.post('/api/repos/:repo/impls/:slug/reject', async (c) => {
    const repo = repoOf(c.req.param('repo'));
    const body = await readBody(c);
    const reason = body.reason === undefined ? '' : body.reason;
    if (typeof reason !== 'string' || reason.length > 4000) throw new HttpError(400, 'SERVE_BAD_REQUEST', 'reason must be a string of at most 4000 characters');
    const loaded = await implOf(repo, c.req.param('slug'));
    // A rejected plan: REVIEWED → BLOCKED (the only non-advancing move the state machine allows from REVIEWED), checked under the manifest lock.
    // The edit re-reads the IMPL under the lock through the confined reader (not the store's path read, which follows
    // links): an IMPL swapped for a symlink out of the repository, a FIFO or a hard link since it was loaded is
    // refused (SERVE_PATH / SERVE_NOT_FILE), nothing of it reaches the answer, and nothing is written.
    // attack-serve-15 N5: the rejection log is checked (through the confinement) before the plan changes: a log that
    // leads outside the repository refuses the reject with nothing changed. Once the plan is BLOCKED, a log that still
    // cannot be written is a warning in a success answer, never a failure after the change.
    const logFile = path.join(repo.path, '.polywave-state', 'serve', 'rejections.jsonl');
    await checkAppendConfined(repo.path, logFile);
    // attack-serve-15 N8: no reject while a run of the plan is starting or running (here or anywhere): Reject holds
    // the plan's run lock while it edits, so Approve and Reject sent together do not both answer success.
    if (launcher.running(repo.path, loaded.slug) || launcher.isStarting(repo.path, loaded.slug)) throw new HttpError(409, 'SERVE_BUSY', `a run of ${loaded.slug} started here is starting or running`);
    let releaseRunLock: () => void;
    try {
      releaseRunLock = acquireRunLock(repo.path, loaded.file);
    } catch (error) {
      if (PolywaveError.isInstance(error) && error.code === runInProgressCode) throw new HttpError(409, 'SERVE_BUSY', error.message);
      if (PolywaveError.isInstance(error)) throw new HttpError(403, 'SERVE_PATH', error.message);
      throw error;
    }
    let previous: string;
    try {
      previous = await withFileLock(loaded.file, async () => {
        const read = await readConfined(repo.path, loaded.file, { maxBytes: maxManifestBytes, shown: loaded.relative });
        let text: string;
        try {
          text = new TextDecoder('utf-8', { fatal: true }).decode(read.buffer).replace(/^\uFEFF/, '');
        } catch {
          throw new HttpError(422, 'V046_PARSE_ERROR', `${loaded.relative}: not UTF-8 text`);
        }
        const parsed = parseImpl(text);
        if (parsed.fatal || !parsed.manifest) throw new HttpError(422, parsed.findings[0]?.code ?? 'V001_MANIFEST_INVALID', `${loaded.relative}: ${parsed.findings[0]?.message ?? 'not a usable manifest'}`);
        const state = parsed.manifest.state;
        if (state !== 'REVIEWED') throw new HttpError(409, 'SERVE_STATE', `IMPL ${loaded.slug} is ${state ?? 'without a state'}, not REVIEWED: only a reviewed plan is rejected`);
        const check = checkTransition(state, 'BLOCKED', parsed.manifest);
        if (!check.ok) throw new HttpError(409, check.finding.code, check.finding.message);
        // Written to the real path that was read (a temp file beside it, renamed over it: never through a link).
        await writeFileAtomic(read.real, applyEdits(text, [{ path: ['state'], value: 'BLOCKED' }]));
        return state;
      });
    } finally {
      releaseRunLock();
    }
    let warning: string | undefined;
    try {
      await appendConfined(repo.path, logFile, `${JSON.stringify({ ts: options.now().toISOString(), slug: loaded.slug, previous_state: previous, state: 'BLOCKED', reason })}\n`);
    } catch (error) {
      warning = `the plan is BLOCKED, but the reason was not logged to .polywave-state/serve/rejections.jsonl: ${error instanceof Error ? error.message : String(error)}`;
    }
    return json(c, { state: 'BLOCKED', previous_state: previous, reason, ...(warning ? { warning } : {}) });
  });

  app.all('/api/*', (c) => c.json(errorBody('SERVE_NOT_FOUND', `no API route ${c.req.method} ${c.req.path}`), 404));

  // The UI: its files from dist/web/ (hashed assets cached for a year), the shell for every other path.
  let shellCache: { mtimeMs: number; html: string } | undefined;
  const shell = (): string => {
    const index = path.join(options.webRoot, 'index.html');
    let html: string;
    try {
      const stats = statSync(index);
      if (!shellCache || shellCache.mtimeMs !== stats.mtimeMs) shellCache = { mtimeMs: stats.mtimeMs, html: readFileSync(index, 'utf8') };
      html = shellCache.html;
    } catch {
      html = notBuiltShell;
    }
    const meta = `<meta name="polywave-token" content="${escapeAttribute(token)}">`;
    // The built index.html carries an empty placeholder (web/index.html); otherwise the tag goes first in <head>.
    const placeholder = /<meta\s+name="polywave-token"\s+content="[^"]*"\s*\/?>/i;
    if (placeholder.test(html)) return html.replace(placeholder, () => meta);
    return /<head[^>]*>/i.test(html) ? html.replace(/<head[^>]*>/i, (tag) => `${tag}\n${meta}`) : `${meta}\n${html}`;
  };
  const webReal = existsSync(options.webRoot) ? realpathSync(options.webRoot) : undefined;
  const assets = new StaticAssets();
  app.get('*', async (c) => {
    const pathname = c.req.path;
    if (webReal && pathname !== '/' && !pathname.endsWith('/')) {
      let relative: string;
      try {
        relative = decodeURIComponent(pathname).replace(/^\/+/, '');
      } catch {
        relative = '';
      }
      if (relative !== '' && !relative.split('/').includes('..') && !relative.includes('\0') && relative !== 'index.html') {
        const candidate = path.join(webReal, relative);
        try {
          const real = realpathSync(candidate);
          if (real.startsWith(`${webReal}${path.sep}`) && statSync(real).isFile()) {
            // Compressed (br or gzip, as the browser accepts; made once per file version) with a strong ETag per coding.
            const file = await assets.get(real, c.req.header('accept-encoding'));
            const hashed = relative.startsWith('assets/');
            c.header('Content-Type', mimeTypes[path.extname(real).toLowerCase()] ?? 'application/octet-stream');
            c.header('Cache-Control', hashed ? 'public, max-age=31536000, immutable' : 'no-cache');
            c.header('ETag', file.etag);
            if (file.varies) c.header('Vary', 'Accept-Encoding');
            if (etagMatches(c.req.header('if-none-match'), file.etag)) return c.body(null, 304);
            if (file.encoding !== 'identity') c.header('Content-Encoding', file.encoding);
            return c.body(file.body as Buffer<ArrayBuffer>);
          }
        } catch {
          // not a file of the UI: the shell (client-side route)
        }
        if (relative.startsWith('assets/')) return c.text('not found', 404);
      }
    }
    c.header('Cache-Control', 'no-store');
    return c.html(shell());
  });

  return {
    app,
    tail,
    launcher,
    close: () => tail.close(),
  };
}

/**
 * `path` (relative to the repository) resolved for reading: absolute paths, `..` segments,
 * anything inside `.git` and symlinks leading outside the repository are refused (403); a path
 * that does not exist is 404.
 */
export function confinedPath(root: string, requested: string): string {
  if (requested === '' || requested.includes('\0')) throw new HttpError(400, 'SERVE_BAD_REQUEST', 'path is required');
  const normalized = requested.replace(/\\/g, '/');
  if (path.isAbsolute(requested) || normalized.startsWith('/') || /^[A-Za-z]:/.test(normalized)) throw new HttpError(403, 'SERVE_PATH', 'absolute paths are refused: give a path relative to the repository');
  if (normalized.endsWith('/')) throw new HttpError(404, 'SERVE_NOT_FOUND', `${requested} is not a file (a path ending in "/")`);
  const segments = normalized.split('/');
  if (segments.includes('..')) throw new HttpError(403, 'SERVE_PATH', '".." is refused: give a path inside the repository');
  if (segments.some((segment) => segment.toLowerCase() === '.git')) throw new HttpError(403, 'SERVE_PATH', 'files inside .git are not served');
  const candidate = path.join(root, ...segments);
  let real: string;
  try {
    real = realpathSync(candidate);
  } catch {
    throw new HttpError(404, 'SERVE_NOT_FOUND', `${requested} does not exist`);
  }
  const inside = real === root || real.startsWith(`${root}${path.sep}`);
  if (!inside) throw new HttpError(403, 'SERVE_PATH', `${requested} leads outside the repository`);
  const relative = path.relative(root, real).split(path.sep);
  if (relative.some((segment) => segment.toLowerCase() === '.git')) throw new HttpError(403, 'SERVE_PATH', 'files inside .git are not served');
  return real;
}
