// polywave serve's UI: deep-linkable views over the JSON API and the SSE stream. preact-iso's
// router keeps the view in the URL (reload and back land on the same view); links are plain <a>.

import { render } from 'preact';
import { useState } from 'preact/hooks';
import { LocationProvider, Route, Router } from 'preact-iso/router';
import lazy from 'preact-iso/lazy';
import { Repos } from './views/Repos';
import { ImplView } from './views/Impl';
import { LiveBoard } from './views/Live';
import { AgentView } from './views/Agent';
import { ProgramView } from './views/Program';
import { applyTheme, saveTheme, storedTheme, type Theme } from './theme';
import './style.css';

// The costs view carries the chart library: loaded when opened.
const Costs = lazy(() => import('./views/Costs').then((module) => module.Costs));

function ThemeToggle() {
  const [theme, setTheme] = useState<Theme>(() => applyTheme(storedTheme()));
  const next: Theme = theme === 'dark' ? 'light' : 'dark';
  return (
    <button
      type="button"
      class="ghost"
      data-testid="theme-toggle"
      aria-label={`switch to ${next} theme`}
      title={`switch to ${next} theme`}
      onClick={() => {
        saveTheme(next);
        setTheme(next);
      }}
    >
      {theme === 'dark' ? '☀' : '☾'}
    </button>
  );
}

function NotFound() {
  return (
    <main>
      <h1>Not found</h1>
      <p>
        No view at this address. <a href="/">Repositories</a>
      </p>
    </main>
  );
}

function App() {
  return (
    <LocationProvider>
      <header class="top">
        <a href="/" class="brand">
          polywave
        </a>
        <nav>
          <a href="/">Repositories</a>
          <a href="/costs">Costs</a>
        </nav>
        <ThemeToggle />
      </header>
      <Router>
        <Route path="/" component={Repos} />
        <Route path="/r/:repo" component={Repos} />
        <Route path="/r/:repo/impl/:slug" component={ImplView} />
        <Route path="/r/:repo/impl/:slug/live" component={LiveBoard} />
        <Route path="/r/:repo/impl/:slug/agent/:id" component={AgentView} />
        <Route path="/r/:repo/program/:slug" component={ProgramView} />
        <Route path="/costs" component={Costs} />
        <Route default component={NotFound} />
      </Router>
    </LocationProvider>
  );
}

applyTheme(storedTheme());
render(<App />, document.getElementById('app')!);
