// PROGRAM view (E32): tiers → IMPLs → waves progress, the frozen contracts and the tier gates.

import { api } from '../api';
import { enc, Json, Section, StateBadge, Status, useLoad } from '../util';

export function ProgramView({ repo, slug }: { repo: string; slug: string }) {
  const program = useLoad(`program:${repo}:${slug}`, () => api.program(repo, slug));
  const data = program.data;
  const title = (data?.manifest as { title?: string } | null | undefined)?.title;
  return (
    <main data-view="program">
      <p class="crumbs">
        <a href={`/r/${enc(repo)}`}>repository</a> / PROGRAM
      </p>
      <h1>
        {title ?? slug} {data && <StateBadge state={data.state} />}
      </h1>
      <Status error={program.error} loading={program.loading && !data} />
      {data && (
        <>
          <p class="muted mono">{data.file}</p>
          {data.tiers.map((tier) => (
            <Section key={tier.number} title={`Tier ${tier.number}`} id={`tier-${tier.number}`}>
              <table class="grid" data-testid={`tier-${tier.number}`}>
                <thead>
                  <tr>
                    <th>IMPL</th>
                    <th>State</th>
                    <th>Waves</th>
                    <th />
                  </tr>
                </thead>
                <tbody>
                  {tier.impls.map((impl) => (
                    <tr key={impl.slug}>
                      <td>
                        <a href={`/r/${enc(repo)}/impl/${enc(impl.slug)}`}>{impl.slug}</a>
                      </td>
                      <td>
                        <StateBadge state={impl.state} />
                      </td>
                      <td>
                        <progress max={Math.max(impl.waves_total, 1)} value={impl.waves_done} /> {impl.waves_done} / {impl.waves_total}
                      </td>
                      <td>
                        <a href={`/r/${enc(repo)}/impl/${enc(impl.slug)}/live`}>live</a>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
              {tier.gate !== undefined && tier.gate !== null && (
                <details>
                  <summary>Tier gate</summary>
                  <Json value={tier.gate} />
                </details>
              )}
            </Section>
          ))}
          <Section title="Frozen contracts" id="frozen">
            {data.frozen_contracts.length === 0 ? <p class="muted">No contract frozen yet.</p> : <Json value={data.frozen_contracts} />}
          </Section>
        </>
      )}
    </main>
  );
}
