import { api, type Repo } from '../api';
import { GridTable } from '../components/GridTable';
import { ago, enc, StateBadge, Status, useLoad } from '../util';

function RepoBlock({ repo }: { repo: Repo }) {
  return (
    <section class="section repo" data-repo={repo.id}>
      <h2>
        <a href={`/r/${enc(repo.id)}`}>{repo.name}</a> <span class="muted small">{repo.path}</span>
      </h2>
      {repo.programs.length > 0 && (
        <GridTable headers={['PROGRAM', 'Title', 'State', 'Tiers', 'IMPLs', 'Last activity']}>
          {repo.programs.map((program) => (
            <tr key={program.slug} data-program={program.slug}>
              <td>
                <a href={`/r/${enc(repo.id)}/program/${enc(program.slug)}`}>{program.slug}</a>
              </td>
              <td>{program.title ?? ''}</td>
              <td>
                <StateBadge state={program.state} />
              </td>
              <td class="num">{program.tiers ?? '—'}</td>
              <td class="num">{program.impls ?? '—'}</td>
              <td>{ago(program.updated_at)}</td>
            </tr>
          ))}
        </GridTable>
      )}
      {repo.impls.length === 0 ? (
        <p class="muted">No IMPL docs (docs/IMPL/IMPL-*.yaml) in this repository.</p>
      ) : (
        <GridTable headers={['IMPL', 'Title', 'State', 'Waves', 'Agents', 'Last activity', '']}>
          {repo.impls.map((impl) => (
            <tr key={impl.slug} data-impl={impl.slug}>
              <td>
                <a href={`/r/${enc(repo.id)}/impl/${enc(impl.slug)}`}>{impl.slug}</a>
              </td>
              <td>{impl.title ?? ''}</td>
              <td>
                <StateBadge state={impl.state} />
              </td>
              <td class="num">{impl.waves ?? '—'}</td>
              <td class="num">{impl.agents ?? '—'}</td>
              <td>{ago(impl.updated_at)}</td>
              <td>
                <a href={`/r/${enc(repo.id)}/impl/${enc(impl.slug)}/live`}>live board</a>
              </td>
            </tr>
          ))}
        </GridTable>
      )}
    </section>
  );
}

export function Repos({ repo }: { repo?: string }) {
  const repos = useLoad('repos', api.repos);
  const shown = (repos.data?.repos ?? []).filter((entry) => !repo || entry.id === repo);
  return (
    <main data-view="repos">
      <h1>{repo ? (shown[0]?.name ?? repo) : 'Repositories'}</h1>
      <Status error={repos.error} loading={repos.loading && !repos.data} />
      {repos.data && shown.length === 0 && <p class="muted">{repo ? `No repository ${repo} is served.` : 'No repositories.'}</p>}
      {shown.map((entry) => (
        <RepoBlock key={entry.id} repo={entry} />
      ))}
    </main>
  );
}
