import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { programDemoManifest } from '../src/demo/program-project.js';
import { insertEvents, iterateEvents, openEventStore } from '../src/observability/event-store.js';
import { apiCall, browserSkipReason, launchChromium, makePlanRepo, screenshotDir, smallPlan, startServe, type PlanRepo, type Serve } from './support/browser.js';

// The UI of `polywave serve` in a real browser (issue 16, "What it must show" 1): Debian's Chromium
// driven by playwright-core, the real server (node bin/polywave.js serve) on a temporary
// repository, a run of scripted agents approved from the page; everything is asserted in the page
// without reloading, then a deep link is reloaded; at the end the store is replaced under the open
// live board (resync, then it follows the new store), a second plan is rejected from the page, and
// an agent whose journal is a symlink out of the repository shows it as unreadable. Screenshots
// land in test-artifacts/screenshots/.

const skip = browserSkipReason();
if (skip) console.warn(`serve-browser: skipped — ${skip}`);

interface RepoEntry {
  id: string;
  name: string;
  impls: Array<{ slug: string; state: string }>;
}

describe.skipIf(skip !== undefined)('polywave serve in Chromium', () => {
  const parent = mkdtempSync(path.join(os.tmpdir(), 'polywave-serve-browser-'));
  let plan: PlanRepo;
  let serve: Serve;
  let closeBrowser: (() => Promise<void>) | undefined;
  let page: Page;
  let repoId: string;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    mkdirSync(screenshotDir, { recursive: true });
    // One wave of three script agents (no API key), short pauses: a run takes ~10 s on an idle machine.
    // Beside it, the PROGRAM of `polywave demo --program` (its IMPLs not planned yet) for the PROGRAM view.
    plan = makePlanRepo(parent, 'one', 'tiny', smallPlan('tiny', [{ id: 'A', wave: 1 }, { id: 'B', wave: 1 }, { id: 'C', wave: 1 }], { stepDelayMs: 400 }), { 'docs/PROGRAM/PROGRAM-shop.yaml': programDemoManifest('REVIEWED') });
    serve = await startServe([plan.repo], { POLYWAVE_MODEL: `script:${plan.script}`, POLYWAVE_EVENTS_DB: path.join(parent, 'events.db') }, parent);
    const repos = await apiCall<{ repos: RepoEntry[] }>(serve, 'GET', '/api/repos');
    repoId = repos.json.repos[0]!.id;
    const chromium = await launchChromium();
    closeBrowser = chromium.close;
    page = chromium.context.pages()[0] ?? (await chromium.context.newPage());
    page.on('pageerror', (error) => pageErrors.push(error.message));
    // Every status each agent card shows, in order (recorded in the page, so nothing is missed between polls).
    await page.addInitScript(() => {
      const seen: Record<string, string[]> = {};
      (window as unknown as { __statuses: Record<string, string[]> }).__statuses = seen;
      const record = (element: Element) => {
        const agent = element.getAttribute('data-agent');
        const status = element.getAttribute('data-status');
        if (!agent || !status || !element.classList.contains('card')) return;
        const list = (seen[agent] ??= []);
        if (list[list.length - 1] !== status) list.push(status);
      };
      new MutationObserver((mutations) => {
        for (const mutation of mutations) {
          if (mutation.type === 'attributes') record(mutation.target as Element);
          mutation.addedNodes.forEach((node) => {
            if (node instanceof Element) {
              record(node);
              node.querySelectorAll('[data-agent]').forEach(record);
            }
          });
        }
      }).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-status'] });
    });
  }, 60_000);

  afterAll(async () => {
    await closeBrowser?.();
    await serve?.stop();
    // The run's own output (started by the server) next to the screenshots, for a failed test's reader.
    const logs = path.join(plan.repo, '.polywave-state', 'serve');
    if (existsSync(logs)) for (const name of readdirSync(logs)) copyFileSync(path.join(logs, name), path.join(screenshotDir, `run-${name}`));
    rmSync(parent, { recursive: true, force: true });
  });

  it('opens with the printed URL, approves a REVIEWED plan, follows the run live to COMPLETE, opens a journal, survives reload and back; resyncs on a replaced store, rejects a plan, shows an unreadable journal', async () => {
    // The printed URL sets the cookie and drops the token from the address.
    await page.goto(serve.url);
    expect(new URL(page.url()).search).toBe('');
    await page.locator('[data-view="repos"] [data-impl="tiny"]').waitFor();
    expect(await page.locator('[data-impl="tiny"] [data-state]').getAttribute('data-state')).toBe('REVIEWED');
    await page.screenshot({ path: path.join(screenshotDir, 'repositories.png'), fullPage: true });

    // IMPL review: ownership, contracts, gates, the graph; Approve is there because it is REVIEWED.
    await page.locator('[data-impl="tiny"] a', { hasText: 'tiny' }).first().click();
    await page.locator('[data-view="impl"] [data-testid="ownership"]').waitFor();
    expect(page.url()).toBe(`${serve.origin}/r/${repoId}/impl/tiny`);
    expect(await page.locator('[data-testid="ownership"] tbody tr').count()).toBe(3);
    expect(await page.locator('#contracts').textContent()).toContain('tinyValue');
    expect(await page.locator('#gates').textContent()).toContain('always passes');
    expect(await page.locator('#waves svg [data-graph-agent]').count()).toBe(3);
    expect(await page.locator('#waves svg .cluster').count()).toBe(1);
    // The validator's findings with their codes (this plan records no injection method: a warning).
    expect(await page.locator('[data-testid="findings"] td.mono').first().textContent()).toBe('E44_INJECTION_METHOD_MISSING');
    expect(await page.locator('#critic').textContent()).toContain('3 agent(s): briefs are complete');
    expect(await page.locator('[data-testid="reject"]').isVisible()).toBe(true);
    await page.screenshot({ path: path.join(screenshotDir, 'impl-review.png'), fullPage: true });

    // Approve from the page: the server starts the run (the POST carries the token header).
    await page.locator('[data-testid="approve"]').click();
    const approvedAt = performance.now();
    await expect.poll(() => page.locator('[data-testid="action-message"]').textContent(), { timeout: 10_000 }).toMatch(/run launched \(pid \d+\)/);
    // X17 X2: a second tab stays on the review page (never reloaded) while the run goes on past the log tail's 30 lines.
    // Its event stream is cut, so only the page's own polling can tell it the run ended.
    const watcher = await page.context().newPage();
    await watcher.route('**/api/events**', (route) => route.abort());
    await watcher.goto(`${serve.origin}/r/${repoId}/impl/tiny`);
    await watcher.locator('[data-testid="launch"]').waitFor({ timeout: 10_000 });

    // The live board, reached by a link (no reload from here on): cards go running → complete.
    await page.locator('[data-testid="open-live"]').click();
    await page.locator('[data-view="live"] [data-testid="card-A"]').waitFor();
    await expect.poll(() => page.locator('[data-testid="connection"]').textContent(), { timeout: 10_000 }).toContain('live');
    await page.locator('[data-testid="card-A"][data-status="running"], [data-testid="card-A"][data-status="complete"]').waitFor({ timeout: 40_000 });
    await page.screenshot({ path: path.join(screenshotDir, 'live-board-running.png'), fullPage: true });
    // The README's picture (docs/img/live-board.png is a copy of one of these): the top of the board,
    // once a card shows a tool call if that comes within 5 s (not asserted: the picture only).
    await page.locator('[data-agent].card dd', { hasText: /bash|write_file/ }).first().waitFor({ timeout: 5000 }).catch(() => undefined);
    await page.screenshot({ path: path.join(screenshotDir, 'live-board-top.png'), clip: { x: 0, y: 0, width: 1280, height: 640 } });
    await page.locator('[data-testid="impl-state"] [data-state="COMPLETE"]').waitFor({ timeout: 80_000 });
    // The watching tab saw the run end without a reload (by polling), though its tail had stopped growing at 30 lines before.
    await watcher.locator('[data-testid="launch"][data-running="false"]').waitFor({ timeout: 20_000 });
    expect(await watcher.locator('[data-testid="launch-status"]').textContent()).toBe('ended (exit 0)');
    expect((await watcher.locator('[data-testid="launch-log"]').textContent())!.split('\n')).toHaveLength(30);
    await watcher.close();
    for (const agent of ['A', 'B', 'C']) expect(await page.locator(`[data-testid="card-${agent}"]`).getAttribute('data-status')).toBe('complete');
    const statuses = await page.evaluate(() => (window as unknown as { __statuses: Record<string, string[]> }).__statuses);
    for (const agent of ['A', 'B', 'C']) {
      const seen = statuses[agent] ?? [];
      // Each card was seen running before complete, and complete last.
      expect(seen.indexOf('running'), `${agent}: ${seen.join(' → ')}`).toBeGreaterThanOrEqual(0);
      expect(seen.lastIndexOf('complete')).toBeGreaterThan(seen.indexOf('running'));
      expect(seen[seen.length - 1]).toBe('complete');
    }
    // The wave merged (each agent's merge shown as finalize-wave made it: agent-merge); the gate ran; each agent ran in the run's process.
    await expect.poll(() => page.locator('[data-testid="wave-1"]').getAttribute('data-wave-status'), { timeout: 10_000 }).toBe('merged');
    expect(await page.locator('[data-testid="card-merged"]').count()).toBe(3);
    const recorded = openEventStore(path.join(parent, 'events.db'), { readonly: true })!;
    try {
      const merges = [...iterateEvents(recorded, { impl: 'tiny', types: ['agent-merge'] })].map((row) => JSON.parse(row.payload) as { agent: string; branch: string; merged: number; total: number });
      expect(merges.map((merge) => [merge.agent, merge.branch, merge.merged, merge.total])).toEqual([
        ['A', 'polywave/tiny/wave1-agent-A', 1, 3],
        ['B', 'polywave/tiny/wave1-agent-B', 2, 3],
        ['C', 'polywave/tiny/wave1-agent-C', 3, 3],
      ]);
    } finally {
      recorded.close();
    }
    expect(await page.locator('[data-testid="card-where"]').allTextContents()).toEqual(['in-process', 'in-process', 'in-process']);
    expect(await page.locator('[data-testid="gate-results"]').textContent()).toContain('passed');
    await page.screenshot({ path: path.join(screenshotDir, 'live-board.png'), fullPage: true });

    // An agent's journal: its shell call and its report.
    await page.locator('[data-testid="card-A"] a.card-id').click();
    await page.locator('[data-view="agent"] [data-testid="journal"]').waitFor({ timeout: 10_000 });
    expect(page.url()).toBe(`${serve.origin}/r/${repoId}/impl/tiny/agent/A`);
    expect(await page.locator('[data-testid="journal"]').textContent()).toMatch(/ls src/);
    expect(await page.locator('#report').textContent()).toContain('complete');
    expect(await page.locator('[data-testid="agent-where"]').textContent()).toContain('in-process');
    await page.screenshot({ path: path.join(screenshotDir, 'agent.png'), fullPage: true });

    // Reload the deep link: the same view, same agent.
    await page.reload();
    await page.locator('[data-view="agent"] [data-testid="journal"]').waitFor({ timeout: 10_000 });
    expect(await page.locator('h1').first().textContent()).toContain('Agent A');
    // Back: the live board again, rebuilt from the store (COMPLETE, all cards complete).
    await page.goBack();
    await page.locator('[data-view="live"] [data-testid="impl-state"] [data-state="COMPLETE"]').waitFor({ timeout: 10_000 });
    await expect.poll(() => page.locator('[data-testid="card-C"]').getAttribute('data-status'), { timeout: 10_000 }).toBe('complete');
    console.log(`serve-browser: COMPLETE seen ${Math.round(performance.now() - approvedAt)} ms after Approve`);

    // The PROGRAM: tiers with their IMPLs and wave progress, tier gates, contracts.
    await page.locator('header nav a', { hasText: 'Repositories' }).click();
    await page.locator('[data-program="shop"] a').click();
    await page.locator('[data-view="program"] [data-testid="tier-1"]').waitFor({ timeout: 10_000 });
    expect(page.url()).toBe(`${serve.origin}/r/${repoId}/program/shop`);
    expect(await page.locator('[data-testid="tier-1"] [data-program-impl]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-program-impl')))).toEqual(['pricing', 'catalog']);
    expect(await page.locator('[data-testid="tier-2"] [data-program-impl]').count()).toBe(1);
    expect(await page.locator('[data-testid="contracts"]').textContent()).toContain('priceWithTax');
    expect(await page.locator('#tier-gates').textContent()).toContain('node --test');
    await page.screenshot({ path: path.join(screenshotDir, 'program.png'), fullPage: true });

    // Costs and history: the run is listed and charted.
    await page.locator('header nav a', { hasText: 'Costs' }).click();
    await page.locator('[data-view="costs"] [data-testid="runs"] tbody tr').first().waitFor({ timeout: 10_000 });
    await page.locator('[data-testid="chart-runs-duration"] canvas').waitFor({ timeout: 10_000 });
    await page.locator('[data-testid="metrics-totals"]').waitFor({ timeout: 10_000 });
    expect(await page.locator('[data-testid="metrics-totals"]').textContent()).toMatch(/3 of 3 agent attempts succeeded/);
    // What each run was for (attack X12 F6): the IMPL its events name.
    expect(await page.locator('[data-testid="run-for"]').first().textContent()).toContain('tiny');
    await page.screenshot({ path: path.join(screenshotDir, 'costs.png'), fullPage: true });

    // Dark theme by the toggle, kept across a reload.
    await page.locator('[data-testid="theme-toggle"]').click();
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
    await page.reload();
    await page.locator('[data-view="costs"]').waitFor();
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
    await page.goto(`${serve.origin}/r/${repoId}/impl/tiny/live`);
    await page.locator('[data-testid="card-A"][data-status="complete"]').waitFor({ timeout: 10_000 });
    await page.screenshot({ path: path.join(screenshotDir, 'live-board-dark.png'), fullPage: true });

    // The store replaced under the open live board: the page gets resync, refetches, and follows the new store.
    const store = path.join(parent, 'events.db');
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${store}${suffix}`, { force: true });
    const db = openEventStore(store)!;
    try {
      await expect.poll(() => page.locator('[data-testid="connection"]').getAttribute('data-resyncs'), { timeout: 10_000 }).toBe('1');
      await page.locator('[data-testid="card-A"][data-status="complete"]').waitFor({ timeout: 10_000 });
      const runId = '01TESTBROWSERRESYNC0000000';
      const payload = { type: 'agent-tool-call', slug: 'tiny', wave: 1, agent: 'A', tool: 'after_resync_probe' };
      // And an attempt of B that a worker ran (issue 17: the agent-end of a dispatched run names its worker).
      const dispatched = { type: 'agent-end', slug: 'tiny', wave: 1, agent: 'B', attempt: 2, status: 'complete', turns: 1, input_tokens: 0, output_tokens: 0, duration_ms: 5, dispatch: { dispatcher: 'redis', job_id: 'tiny.w1.B.x', worker: 'w2', stalls: 0 } };
      insertEvents(db, [
        { run_id: runId, seq: 1, ts: Date.now(), type: 'agent-tool-call', activity_type: null, slug: 'tiny', wave: 1, agent: 'A', program: null, payload: JSON.stringify(payload) },
        { run_id: runId, seq: 2, ts: Date.now(), type: 'agent-end', activity_type: null, slug: 'tiny', wave: 1, agent: 'B', program: null, payload: JSON.stringify(dispatched) },
      ], {
        run_id: runId,
        started_at: Date.now(),
        command: 'run docs/IMPL/IMPL-tiny.yaml',
        cwd: realpathSync(plan.repo),
        pid: 1,
      });
    } finally {
      db.close();
    }
    await page.locator('[data-testid="card-A"] dd', { hasText: 'after_resync_probe' }).waitFor({ timeout: 10_000 });
    await page.locator('[data-testid="card-B"] [data-testid="card-where"][data-worker="w2"]', { hasText: 'on w2' }).waitFor({ timeout: 10_000 });
    expect(await page.locator('[data-testid="connection"]').textContent()).toContain('live');

    // A second REVIEWED plan (written now: the views above expect tiny to be the only IMPL), whose agent's journal is a link out of the repository.
    writeFileSync(path.join(plan.repo, 'docs', 'IMPL', 'IMPL-veto.yaml'), smallPlan('veto', [{ id: 'A', wave: 1 }]).manifest);
    writeFileSync(path.join(parent, 'outside-journal.jsonl'), `${JSON.stringify({ ts: '2026-12-01T10:00:00.000Z', kind: 'tool_use', tool_name: 'Bash', input: { command: 'OUTSIDE-JOURNAL' } })}\n`);
    mkdirSync(path.join(plan.repo, '.polywave-state', 'veto', 'wave1', 'agent-A'), { recursive: true });
    symlinkSync(path.join(parent, 'outside-journal.jsonl'), path.join(plan.repo, '.polywave-state', 'veto', 'wave1', 'agent-A', 'index.jsonl'));
    // Reject it from the page (the reason asked in a prompt): BLOCKED in the page and in the file.
    await page.goto(`${serve.origin}/r/${repoId}/impl/veto`);
    await page.locator('[data-testid="reject"]').waitFor({ timeout: 10_000 });
    page.once('dialog', (dialog) => void dialog.accept('split agent A'));
    await page.locator('[data-testid="reject"]').click();
    await expect.poll(() => page.locator('[data-testid="action-message"]').textContent(), { timeout: 10_000 }).toBe('Rejected: BLOCKED');
    await page.locator('[data-view="impl"] [data-state="BLOCKED"]').first().waitFor({ timeout: 10_000 });
    expect(await page.locator('[data-testid="approve"]').count()).toBe(0);
    expect(readFileSync(path.join(plan.repo, 'docs', 'IMPL', 'IMPL-veto.yaml'), 'utf8')).toContain('state: BLOCKED');
    expect(readFileSync(path.join(plan.repo, '.polywave-state', 'serve', 'rejections.jsonl'), 'utf8')).toContain('"reason":"split agent A"');

    // Its agent's journal is a symlink out of the repository: listed as unreadable, never read.
    await page.goto(`${serve.origin}/r/${repoId}/impl/veto/agent/A`);
    const unreadable = page.locator('[data-view="agent"] [data-testid="unreadable"]');
    await unreadable.waitFor({ timeout: 10_000 });
    expect(await unreadable.locator('li').evaluateAll((items) => items.map((item) => [item.getAttribute('data-file'), item.textContent]))).toEqual([
      ['.polywave-state/veto/wave1/agent-A/index.jsonl', '.polywave-state/veto/wave1/agent-A/index.jsonl leads outside the repository (SERVE_PATH)'],
    ]);
    expect(await page.locator('main').textContent()).not.toContain('OUTSIDE-JOURNAL');
    await page.screenshot({ path: path.join(screenshotDir, 'agent-unreadable.png'), fullPage: true });

    // X15 N2: a run that fails at once is shown as failed — exit code, reason, the log's last lines — not "started" and
    // forgotten, and still after a reload. (A plan of one agent owning one file: the run refuses it, V047_TRIVIAL_SCOPE.)
    writeFileSync(path.join(plan.repo, 'docs', 'IMPL', 'IMPL-stuck.yaml'), smallPlan('stuck', [{ id: 'A', wave: 1 }]).manifest.replace('state: REVIEWED', 'state: WAVE_PENDING'));
    await page.goto(`${serve.origin}/r/${repoId}/impl/stuck`);
    await page.locator('[data-testid="run"]').click();
    await expect.poll(() => page.locator('[data-testid="action-message"]').textContent(), { timeout: 15_000 }).toMatch(/^Run launched \(pid \d+\)/);
    const launchPanel = page.locator('[data-testid="launch"][data-running="false"]');
    await launchPanel.waitFor({ timeout: 20_000 });
    for (const round of ['after the run', 'after a reload']) {
      expect(await page.locator('[data-testid="launch-status"]').textContent(), round).toBe('failed (exit 1)');
      expect(await page.locator('[data-testid="launch-reason"]').textContent(), round).toContain('V047_TRIVIAL_SCOPE');
      expect(await page.locator('[data-testid="launch-log"]').textContent(), round).toContain('run: stopped');
      if (round === 'after the run') {
        await page.screenshot({ path: path.join(screenshotDir, 'impl-launch-failed.png'), fullPage: true });
        await page.reload();
        await launchPanel.waitFor({ timeout: 10_000 });
      }
    }

    expect(pageErrors).toEqual([]);
    // ~25 s on an idle 2-core machine (the run ~10 s); the margin is for a loaded one.
  }, 120_000);
});
