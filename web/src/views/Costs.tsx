// Costs and history from the observability store: per run (/api/runs), per wave, agent and model
// (/api/metrics for one IMPL or PROGRAM), as uPlot charts with the numbers in tables beside them.

import { useState } from 'preact/hooks';
import { api, type RunRow } from '../api';
import { BarChart } from '../components/BarChart';
import { duration, Section, Status, usd, useLoad } from '../util';

interface UsageRow {
  cost_usd: number | null;
  input_tokens: number;
  output_tokens: number;
}
interface MetricsAnswer {
  runs: number;
  events: number;
  totals: UsageRow & { agent_attempts: number; agents_succeeded: number; success_rate: number | null; wave_duration_ms: number };
  agents: Array<UsageRow & { agent: string; wave: number | null; attempts: number; duration_ms: number; models: string[] }>;
  waves: Array<UsageRow & { wave: number; runs: number; duration_ms: number; success_rate: number | null }>;
  models: Array<UsageRow & { model: string; calls: number }>;
  gates: { executed: number; passed: number; failed: number };
}

const money = (value: number) => (value === 0 ? '$0' : value < 1 ? `$${value.toFixed(3)}` : `$${value.toFixed(2)}`);
const seconds = (value: number) => `${(value / 1000).toFixed(value < 10_000 ? 1 : 0)} s`;

function Metrics({ scope }: { scope: string }) {
  const [kind, slug] = scope.split(':') as [string, string];
  const metrics = useLoad(`metrics:${scope}`, () => api.metrics({ [kind]: slug }) as Promise<unknown> as Promise<MetricsAnswer>);
  const data = metrics.data;
  return (
    <>
      <Status error={metrics.error} loading={metrics.loading && !data} />
      {data && (
        <>
          <p data-testid="metrics-totals">
            {data.runs} run(s) · {data.events} event(s) · total {usd(data.totals.cost_usd)} · {data.totals.agents_succeeded} of {data.totals.agent_attempts} agent attempts succeeded · gates {data.gates.passed}/{data.gates.executed} passed
          </p>
          <div class="charts">
            <BarChart title="Duration per wave" testid="chart-waves" labels={data.waves.map((wave) => `wave ${wave.wave}`)} series={[{ label: 'duration', values: data.waves.map((wave) => wave.duration_ms), color: '#2563eb', format: seconds }]} />
            <BarChart title="Cost per wave" labels={data.waves.map((wave) => `wave ${wave.wave}`)} series={[{ label: 'cost', values: data.waves.map((wave) => wave.cost_usd ?? 0), color: '#d97706', format: money }]} />
            <BarChart title="Cost per agent" testid="chart-agents" labels={data.agents.map((agent) => agent.agent)} series={[{ label: 'cost', values: data.agents.map((agent) => agent.cost_usd ?? 0), color: '#d97706', format: money }]} />
            <BarChart title="Duration per agent" labels={data.agents.map((agent) => agent.agent)} series={[{ label: 'duration', values: data.agents.map((agent) => agent.duration_ms), color: '#2563eb', format: seconds }]} />
            <BarChart title="Cost per model" testid="chart-models" labels={data.models.map((model) => model.model)} series={[{ label: 'cost', values: data.models.map((model) => model.cost_usd ?? 0), color: '#7c3aed', format: money }]} />
          </div>
        </>
      )}
    </>
  );
}

export function Costs() {
  const runs = useLoad('runs', () => api.runs({ limit: '50' }));
  const repos = useLoad('repos', api.repos);
  const listed = (repos.data?.repos ?? []).flatMap((repo) => [...repo.impls.map((impl) => ({ scope: `impl:${impl.slug}`, last: impl.last_event_at ?? '' })), ...repo.programs.map((program) => ({ scope: `program:${program.slug}`, last: program.last_event_at ?? '' }))]);
  const scopes = listed.map((entry) => entry.scope);
  const [picked, setPicked] = useState<string>();
  // Opens on the IMPL or PROGRAM with the newest run activity (ISO times sort as text), not the first by name.
  const newest = listed.reduce<{ scope: string; last: string } | undefined>((best, entry) => (entry.last !== '' && (!best || entry.last > best.last) ? entry : best), undefined);
  const scope = picked ?? newest?.scope ?? scopes[0];
  const rows = [...(runs.data?.runs ?? [])].reverse();
  // Run ids are ULIDs: their first characters are the time and repeat; label a bar by command and start time.
  const runLabel = (run: RunRow) => {
    const started = typeof run.started_at === 'number' ? run.started_at : Date.parse(run.started_at);
    return `${run.command} ${Number.isFinite(started) ? new Date(started).toLocaleTimeString() : run.run_id.slice(-6)}`;
  };
  return (
    <main data-view="costs">
      <h1>Costs and history</h1>
      <Section title="Runs" id="runs">
        <Status error={runs.error} loading={runs.loading && !runs.data} />
        {runs.data && (
          <>
            <div class="charts">
              <BarChart title="Cost per run" testid="chart-runs-cost" labels={rows.map(runLabel)} series={[{ label: 'cost', values: rows.map((run) => run.cost_usd ?? 0), color: '#d97706', format: money }]} />
              <BarChart title="Duration per run" testid="chart-runs-duration" labels={rows.map(runLabel)} series={[{ label: 'duration', values: rows.map((run) => run.duration_ms ?? 0), color: '#2563eb', format: seconds }]} />
            </div>
            <table class="grid" data-testid="runs">
              <thead>
                <tr>
                  <th>Run</th>
                  <th>Command</th>
                  <th>For</th>
                  <th>Started</th>
                  <th>Events</th>
                  <th>Duration</th>
                  <th>Cost</th>
                </tr>
              </thead>
              <tbody>
                {(runs.data.runs ?? []).map((run) => (
                  <tr key={run.run_id}>
                    <td class="mono">{run.run_id}</td>
                    <td class="mono">{run.command}</td>
                    <td class="mono" data-testid="run-for">{[...(run.impls ?? []), ...(run.programs ?? []).map((slug) => `program ${slug}`)].join(', ')}</td>
                    <td>{typeof run.started_at === 'number' ? new Date(run.started_at).toLocaleString() : run.started_at}</td>
                    <td class="num">{run.events ?? ''}</td>
                    <td>{duration(run.duration_ms)}</td>
                    <td>{usd(run.cost_usd)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </>
        )}
      </Section>
      <Section title="Per wave, agent and model" id="metrics">
        {scopes.length === 0 ? (
          <p class="muted">No IMPL or PROGRAM to measure.</p>
        ) : (
          <>
            <label>
              Scope{' '}
              <select value={scope} onChange={(event) => setPicked((event.target as HTMLSelectElement).value)} data-testid="metrics-scope">
                {scopes.map((entry) => (
                  <option key={entry} value={entry}>
                    {entry.replace(':', ' ')}
                  </option>
                ))}
              </select>
            </label>
            {scope && <Metrics scope={scope} />}
          </>
        )}
      </Section>
    </main>
  );
}
