// Agent detail: its task and files, its journal (tool calls, jail denials), its completion report
// and its diff against the wave's base.

import { api, type AgentDetail } from '../api';
import { whereText } from '../board';
import { enc, Json, Section, StateBadge, Status, useLoad } from '../util';

function timeOf(ts: string | number): string {
  const time = typeof ts === 'number' ? ts : Date.parse(ts);
  return Number.isFinite(time) ? new Date(time).toLocaleTimeString() : String(ts);
}

function Diff({ diff }: { diff: string }) {
  if (!diff) return <p class="muted">No diff (the agent's branch has no commit over its base, or it was merged and removed).</p>;
  return (
    <pre class="code diff" data-testid="diff">
      {diff.split('\n').map((line, index) => (
        <span key={index} class={line.startsWith('+') && !line.startsWith('+++') ? 'add' : line.startsWith('-') && !line.startsWith('---') ? 'del' : line.startsWith('@@') ? 'hunk' : ''}>
          {line}
          {'\n'}
        </span>
      ))}
    </pre>
  );
}

export function AgentView({ repo, slug, id }: { repo: string; slug: string; id: string }) {
  const agent = useLoad(`agent:${repo}:${slug}:${id}`, () => api.agent(repo, slug, id));
  const data = agent.data;
  const denials = data?.journal.filter((entry) => entry.denied) ?? [];
  return (
    <main data-view="agent">
      <p class="crumbs">
        <a href={`/r/${enc(repo)}`}>repository</a> / <a href={`/r/${enc(repo)}/impl/${enc(slug)}`}>{slug}</a> / <a href={`/r/${enc(repo)}/impl/${enc(slug)}/live`}>live</a> / agent
      </p>
      <h1>
        Agent {id} {data && <StateBadge state={data.status} />}
      </h1>
      <Status error={agent.error} loading={agent.loading && !data} />
      {data && (
        <>
          <p>
            Wave {data.wave}
            {data.dependencies?.length ? ` · after ${data.dependencies.join(', ')}` : ''}
            {data.runs_on && (
              <span data-testid="agent-where">
                {' · '}
                {whereText({ dispatcher: data.runs_on.dispatcher, ...(data.runs_on.worker ? { worker: data.runs_on.worker } : {}), ...(data.runs_on.host ? { host: data.runs_on.host } : {}) })}
                {data.runs_on.job_id ? <span class="muted mono small"> (job {data.runs_on.job_id})</span> : null}
              </span>
            )}
          </p>
          {data.task && (
            <Section title="Task">
              <pre class="prose">{data.task}</pre>
            </Section>
          )}
          <Section title="Owned files">
            <ul>
              {(data.files ?? []).map((file) => (
                <li key={file} class="mono">
                  {file}
                </li>
              ))}
            </ul>
          </Section>
          <Section title={`Journal (${journalCount(data)}${denials.length ? `, ${denials.length} denied by the jail` : ''})`} id="journal">
            {data.unreadable?.length ? (
              <div class="error" role="alert" data-testid="unreadable">
                <p>
                  {data.unreadable.length === 1 ? 'One file of this agent was not read' : `${data.unreadable.length} files of this agent were not read`} — the journal below may be incomplete:
                </p>
                <ul>
                  {data.unreadable.map((entry) => (
                    <li key={entry.file} data-file={entry.file}>
                      {entry.message} (<code>{entry.code}</code>)
                    </li>
                  ))}
                </ul>
              </div>
            ) : null}
            {data.journal.length === 0 ? (
              <p class="muted">No journal entries.</p>
            ) : (
              <table class="grid journal" data-testid="journal">
                <thead>
                  <tr>
                    <th>Time</th>
                    <th>Kind</th>
                    <th>Tool</th>
                    <th>Summary</th>
                  </tr>
                </thead>
                <tbody>
                  {data.journal.map((entry, index) => (
                    <tr key={index} class={entry.denied ? 'denied' : ''} data-kind={entry.kind}>
                      <td class="nowrap">{timeOf(entry.ts)}</td>
                      <td>{entry.kind}</td>
                      <td class="mono">{entry.tool ?? ''}</td>
                      <td>
                        {entry.denied ? <strong class="error">denied{typeof entry.denied === 'string' ? `: ${entry.denied}` : ''} </strong> : null}
                        <span class="mono small">{entry.summary}</span>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </Section>
          <Section title="Completion report" id="report">
            {data.report ? <Json value={data.report} /> : <p class="muted">No completion report yet.</p>}
          </Section>
          <Section title="Diff against the base" id="diff">
            <Diff diff={data.diff} />
          </Section>
        </>
      )}
    </main>
  );
}

/** "N entries", or — when the page shows only the newest — "the last N of M entries read" and whether the file's beginning was read at all. */
function journalCount(data: AgentDetail): string {
  const shown = data.journal.length.toLocaleString('en-US');
  const read = data.journal_read ?? data.journal.length;
  const cut = data.journal_cut_bytes ?? 0;
  const older = cut > 0 ? `; older entries of the ${(cut / 1048576).toFixed(1)} MB file not read` : '';
  if (read > data.journal.length) return `the last ${shown} of ${read.toLocaleString('en-US')} entries read${older}`;
  return `${shown} entries${cut > 0 ? ` — the newest only${older}` : ''}`;
}
