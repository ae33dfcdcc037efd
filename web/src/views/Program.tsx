// PROGRAM view (E32): tiers → IMPLs → waves progress, the frozen contracts and the tier gates.

import { api } from '../api';
import { GridTable } from '../components/GridTable';
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
          <p class="muted">
            <span class="mono">{data.file}</span>
            {data.completion && (
              <span data-testid="program-completion">
                {' '}
                · {data.completion.tiers_complete} of {data.completion.tiers_total} tiers, {data.completion.impls_complete} of {data.completion.impls_total} IMPLs complete
                {data.current_tier !== undefined ? ` · current tier ${data.current_tier}` : ''}
              </span>
            )}
          </p>
          {data.tiers.map((tier) => (
            <Section key={tier.number} title={`Tier ${tier.number}${tier.complete ? ' — complete' : ''}`} id={`tier-${tier.number}`}>
              {tier.description && <p class="muted">{tier.description}</p>}
              <GridTable headers={['IMPL', 'Title', 'State', 'Waves', '']} testid={`tier-${tier.number}`}>
                {tier.impls.map((impl) => (
                  <tr key={impl.slug} data-program-impl={impl.slug}>
                    <td>
                      <a href={`/r/${enc(repo)}/impl/${enc(impl.slug)}`}>{impl.slug}</a>
                    </td>
                    <td>{impl.title ?? ''}</td>
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
              </GridTable>
              {tier.gate !== undefined && tier.gate !== null && (
                <details>
                  <summary>Tier gate result</summary>
                  <Json value={tier.gate} />
                </details>
              )}
            </Section>
          ))}
          <Section title="Tier gates" id="tier-gates">
            {(data.tier_gates ?? []).length === 0 ? (
              <p class="muted">No tier gates.</p>
            ) : (
              <GridTable headers={['Type', 'Command', 'Required', 'Description']}>
                {(data.tier_gates ?? []).map((gate, index) => (
                  <tr key={index}>
                    <td>{gate.type ?? ''}</td>
                    <td class="mono">{gate.command ?? ''}</td>
                    <td>{gate.required ? 'yes' : 'no'}</td>
                    <td>{gate.description ?? ''}</td>
                  </tr>
                ))}
              </GridTable>
            )}
          </Section>
          <Section title="Program contracts" id="frozen">
            {data.frozen_contracts.length === 0 ? (
              <p class="muted">No program contracts.</p>
            ) : (
              <GridTable headers={['Contract', 'Location', 'Frozen']} testid="contracts">
                {data.frozen_contracts.map((contract, index) => (
                  <tr key={index}>
                    <td>{String(contract.name ?? '')}</td>
                    <td class="mono">{String(contract.location ?? '')}</td>
                    <td>{contract.frozen ? `frozen at tier ${String(contract.frozen_at_tier ?? '?')}` : `not yet${contract.freeze_at ? ` (freezes at ${String(contract.freeze_at)})` : ''}`}</td>
                  </tr>
                ))}
              </GridTable>
            )}
          </Section>
        </>
      )}
    </main>
  );
}
