// IMPL review: what the Scout planned and the critic said, the validation findings, and the
// buttons that move the plan on (Approve/Reject when REVIEWED, Run/Resume otherwise).

import { useEffect, useRef, useState } from 'preact/hooks';
import { api, type ImplDetail, type Launch, type Manifest } from '../api';
import { DependencyGraph, type GraphAgent } from '../components/Graph';
import { GridTable } from '../components/GridTable';
import { enc, Json, Section, StateBadge, Status, useLoad } from '../util';

export function graphAgents(detail: ImplDetail, statuses: Record<string, string> = {}): GraphAgent[] {
  const progress = new Map<string, string>();
  for (const wave of detail.progress?.waves ?? []) for (const agent of wave.agents) progress.set(agent.id, agent.status);
  return (detail.manifest?.waves ?? []).flatMap((wave) =>
    (wave.agents ?? []).map((agent) => ({ id: agent.id, wave: wave.number, dependencies: agent.dependencies ?? [], status: statuses[agent.id] ?? progress.get(agent.id) ?? 'pending' })),
  );
}

// BLOCKED is not runnable: `polywave run` stops at once on it (a human must decide).
const runnable = new Set(['REVIEWED', 'SCAFFOLD_PENDING', 'WAVE_PENDING', 'WAVE_EXECUTING', 'WAVE_MERGING', 'WAVE_VERIFIED', 'INTERRUPTED']);

/**
 * The last run started from this server for the plan (attack-serve-15 N2): running, or ended with
 * its exit code, the reason and the log's last lines (redacted by the server, rendered as text).
 * While it runs, the page asks again every 2 s until it ended, so a run's end (at once or after
 * minutes of log) shows without a reload.
 */
function LaunchPanel({ launch, onRefresh }: { launch: Launch; onRefresh: () => void }) {
  // attack-serve-17 X2: an interval for as long as the run is running, whatever the answer (the log
  // tail stops changing length at its 30-line cap); it stops when a refresh says the run ended.
  const refresh = useRef(onRefresh);
  refresh.current = onRefresh;
  useEffect(() => {
    if (!launch.running) return undefined;
    const timer = setInterval(() => refresh.current(), 2000);
    return () => clearInterval(timer);
  }, [launch.running, launch.pid]);
  const failed = !launch.running && launch.exit_code !== 0;
  const status = launch.running ? 'running' : launch.exit_code === 0 ? 'ended (exit 0)' : launch.exit_code === null ? (launch.from_log ? 'ended (outcome not in its log)' : 'ended (killed)') : `failed (exit ${launch.exit_code})`;
  return (
    <div class={`launch ${failed ? 'launch-failed' : ''}`} data-testid="launch" data-running={String(launch.running)} data-exit={launch.exit_code ?? ''}>
      <p>
        {launch.from_log ? 'Last run from a page (before this server started; from its log): ' : 'Last run from this page: '}
        <strong data-testid="launch-status" class={failed ? 'error' : launch.running ? '' : 'ok'}>{status}</strong>{' '}
        <span class="muted">
          {launch.pid > 0 ? `pid ${launch.pid}, ` : ''}started {launch.started_at}, log <span class="mono">{launch.log}</span>
        </span>
      </p>
      {launch.reason && (
        <p class={failed ? 'error' : ''} data-testid="launch-reason">
          {launch.reason}
        </p>
      )}
      {launch.hint && (
        <p class="hint" data-testid="launch-hint">
          {launch.hint}
        </p>
      )}
      {launch.log_tail.length > 0 && (
        <details open={failed}>
          <summary>Last lines of the log</summary>
          <pre class="code" data-testid="launch-log">
            {launch.log_tail.join('\n')}
          </pre>
        </details>
      )}
    </div>
  );
}

function Actions({ repo, slug, state, onChange }: { repo: string; slug: string; state: string; onChange: () => void }) {
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState<string>();
  const [error, setError] = useState<string>();
  const act = async (what: () => Promise<unknown>, done: string) => {
    setBusy(true);
    setError(undefined);
    setMessage(undefined);
    try {
      const answer = (await what()) as { pid?: number; state?: string; running?: boolean; exit_code?: number | null; warning?: string };
      // A launched run is not a succeeded one: its outcome is the panel below (it may fail in seconds).
      const ended = answer.running === false ? `; it already ended (exit ${answer.exit_code ?? '?'}), see below` : '; its outcome is shown below';
      setMessage(answer.pid ? `${done} (pid ${answer.pid})${ended}` : answer.state ? `${done}: ${answer.state}${answer.warning ? ` (warning: ${answer.warning})` : ''}` : done);
      onChange();
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      setBusy(false);
    }
  };
  const reviewed = state === 'REVIEWED';
  return (
    <div class="actions">
      {reviewed && (
        <>
          <button type="button" class="primary" data-testid="approve" disabled={busy} onClick={() => act(() => api.approve(repo, slug), 'Approved — run launched')}>
            Approve and run
          </button>
          <button
            type="button"
            class="danger"
            data-testid="reject"
            disabled={busy}
            onClick={() => {
              const reason = window.prompt('Why is the plan rejected?');
              if (reason) void act(() => api.reject(repo, slug, reason), 'Rejected');
            }}
          >
            Reject
          </button>
        </>
      )}
      {!reviewed && runnable.has(state) && (
        <button type="button" class="primary" data-testid="run" disabled={busy} onClick={() => act(() => api.run(repo, slug), 'Run launched')}>
          {state === 'SCAFFOLD_PENDING' || state === 'WAVE_PENDING' ? 'Run' : 'Resume'}
        </button>
      )}
      {state === 'BLOCKED' && <span class="muted">BLOCKED: a human must decide (polywave agent-status); a run would stop at once.</span>}
      <a class="button" href={`/r/${enc(repo)}/impl/${enc(slug)}/live`} data-testid="open-live">
        Live board
      </a>
      {message && (
        // A launch is not a success (its outcome is the panel below): said in the neutral colour.
        <span class={/launched/.test(message) ? '' : 'ok'} role="status" data-testid="action-message">
          {message}
        </span>
      )}
      {error && (
        <span class="error" role="alert">
          {error}
        </span>
      )}
    </div>
  );
}

function Ownership({ manifest }: { manifest: Manifest }) {
  const rows = manifest.file_ownership ?? [];
  if (rows.length === 0) return <p class="muted">No file ownership.</p>;
  return (
    <GridTable headers={['File', 'Agent', 'Wave', 'Action', 'Depends on']} testid="ownership">
      {rows.map((row) => (
        <tr key={`${row.file}-${row.agent}`}>
          <td class="mono">{row.file}</td>
          <td>{row.agent}</td>
          <td class="num">{row.wave ?? ''}</td>
          <td>{row.action ?? ''}</td>
          <td>{(row.depends_on ?? []).join(', ')}</td>
        </tr>
      ))}
    </GridTable>
  );
}

function Contracts({ manifest }: { manifest: Manifest }) {
  const contracts = manifest.interface_contracts ?? [];
  if (contracts.length === 0) return <p class="muted">No interface contracts.</p>;
  return (
    <div class="stack">
      {contracts.map((contract, index) => (
        <details key={index} open={contracts.length <= 4}>
          <summary>
            <strong>{String(contract.name ?? `contract ${index + 1}`)}</strong> <span class="muted mono">{String(contract.location ?? '')}</span>
          </summary>
          {contract.description ? <p>{String(contract.description)}</p> : null}
          {contract.definition ? <pre class="code">{String(contract.definition)}</pre> : null}
        </details>
      ))}
    </div>
  );
}

function Scaffolds({ manifest }: { manifest: Manifest }) {
  const scaffolds = manifest.scaffolds ?? [];
  if (scaffolds.length === 0) return <p class="muted">No scaffolds.</p>;
  return (
    <GridTable headers={['File', 'Import path', 'Status']}>
      {scaffolds.map((scaffold, index) => (
        <tr key={index}>
          <td class="mono">{String(scaffold.file_path ?? scaffold.file ?? '')}</td>
          <td class="mono">{String(scaffold.import_path ?? '')}</td>
          <td>{String(scaffold.status ?? '')}</td>
        </tr>
      ))}
    </GridTable>
  );
}

function Gates({ manifest }: { manifest: Manifest }) {
  const gates = manifest.quality_gates?.gates ?? [];
  if (gates.length === 0) return <p class="muted">No quality gates.</p>;
  return (
    <>
      {manifest.quality_gates?.level && <p>Level: {manifest.quality_gates.level}</p>}
      <GridTable headers={['Type', 'Command', 'Required', 'Timing', 'Description']}>
        {gates.map((gate, index) => (
          <tr key={index}>
            <td>{gate.type ?? ''}</td>
            <td class="mono">{gate.command ?? ''}</td>
            <td>{gate.required ? 'yes' : 'no'}</td>
            <td>{gate.timing ?? 'pre-merge'}</td>
            <td>{gate.description ?? ''}</td>
          </tr>
        ))}
      </GridTable>
    </>
  );
}

function Critic({ manifest }: { manifest: Manifest }) {
  const report = manifest.critic_report;
  if (!report) return <p class="muted">No critic report.</p>;
  return (
    <div>
      <p>
        Verdict: <StateBadge state={report.verdict} /> {report.issue_count !== undefined && <span>{report.issue_count} issue(s)</span>} {report.reviewed_at && <span class="muted">reviewed {report.reviewed_at}</span>}
      </p>
      {report.summary && <p>{report.summary}</p>}
      {report.agent_reviews && Object.keys(report.agent_reviews).length > 0 && (
        <details>
          <summary>Per-agent reviews</summary>
          <Json value={report.agent_reviews} />
        </details>
      )}
    </div>
  );
}

export function ImplView({ repo, slug }: { repo: string; slug: string }) {
  const detail = useLoad(`impl:${repo}:${slug}`, () => api.impl(repo, slug));
  const data = detail.data;
  const manifest = data?.manifest;
  return (
    <main data-view="impl">
      <p class="crumbs">
        <a href={`/r/${enc(repo)}`}>repository</a> / IMPL
      </p>
      <h1>
        {manifest?.title ?? slug} {data && <StateBadge state={data.state} />}
      </h1>
      <Status error={detail.error} loading={detail.loading && !data} />
      {data && (
        <>
          <p class="muted mono">{data.file}</p>
          <Actions repo={repo} slug={slug} state={data.state} onChange={detail.reload} />
          {data.launch && <LaunchPanel launch={data.launch} onRefresh={detail.reload} />}
          <Section title="Validation findings" id="findings">
            {data.findings.length === 0 ? (
              <p class="ok">No findings: the plan validates.</p>
            ) : (
              <GridTable headers={['Code', 'Severity', 'Field', 'Message']} testid="findings">
                {data.findings.map((finding, index) => (
                  <tr key={index} class={`severity-${finding.severity}`}>
                    <td class="mono">{finding.code}</td>
                    <td>{finding.severity}</td>
                    <td class="mono">{finding.field ?? ''}</td>
                    <td>{finding.message}</td>
                  </tr>
                ))}
              </GridTable>
            )}
          </Section>
          {manifest && (
            <>
              <Section title="Waves and agents" id="waves">
                <DependencyGraph agents={graphAgents(data)} hrefFor={(id) => `/r/${enc(repo)}/impl/${enc(slug)}/agent/${enc(id)}`} />
                {(manifest.waves ?? []).map((wave) => (
                  <div key={wave.number} class="wave-plan">
                    <h3>
                      Wave {wave.number} {wave.type === 'integration' && <span class="muted">(integration)</span>}
                    </h3>
                    <ul class="agents">
                      {(wave.agents ?? []).map((agent) => (
                        <li key={agent.id}>
                          <a href={`/r/${enc(repo)}/impl/${enc(slug)}/agent/${enc(agent.id)}`}>
                            <strong>{agent.id}</strong>
                          </a>{' '}
                          {agent.dependencies?.length ? <span class="muted">after {agent.dependencies.join(', ')} </span> : null}
                          {agent.model ? <span class="muted">[{agent.model}] </span> : null}
                          <span class="task">{(agent.task ?? '').split('\n')[0]}</span>
                        </li>
                      ))}
                    </ul>
                  </div>
                ))}
              </Section>
              <Section title="File ownership" id="ownership">
                <Ownership manifest={manifest} />
              </Section>
              <Section title="Interface contracts" id="contracts">
                <Contracts manifest={manifest} />
              </Section>
              <Section title="Scaffolds" id="scaffolds">
                <Scaffolds manifest={manifest} />
              </Section>
              <Section title="Quality gates" id="gates">
                <Gates manifest={manifest} />
              </Section>
              <Section title="Critic report" id="critic">
                <Critic manifest={manifest} />
              </Section>
            </>
          )}
        </>
      )}
    </main>
  );
}
