import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { describe, expect, it, onTestFinished } from 'vitest';
import { randomBytes } from 'node:crypto';
import { createBranchFetcher } from '../src/dispatch/branch-fetch.js';
import { packCommits, packMaxBytes, packMaxChars, unpackCommits } from '../src/dispatch/commit-pack.js';
import { assertRemoteReachable } from '../src/dispatch/redis-dispatcher.js';
import { createGit } from '../src/git/git-cli.js';
import { gitSpawnsOffloaded, offloadGitSpawns } from '../src/git/spawn-server.js';
import type { Git } from '../src/git/git-port.js';
import { agentJobId, assertGateJobIdentity, assertJobBaseRef, assertJobBranch, assertJobSize, assertJobIdentity, assertJobModel, checkQueueName, expectedGateJobId, expectedJobId, gateJobDataSchema, jobContentDigest, jobIdPattern, labelSubsets, normalizeRemote, queueNameFor, remoteKey, type AgentJobData, type GateJobData } from '../src/dispatch/job.js';
import { redactRedisUrl, redactUserinfo, redisOptionsFromUrl, remoteWithoutUserinfo } from '../src/dispatch/redis-url.js';
import { servesLabels } from '../src/dispatch/registry.js';
import { checkRelayedEvent, createLiveEventInbox, createLiveEventOutbox } from '../src/dispatch/live-events.js';
import { createErrorLog } from '../src/worker/worker.js';
import { parseProjectConfig } from '../src/store/project-config.js';
import { runCli } from './support/cli.js';
import { createTestRepo } from './support/git-repo.js';
import { createDispatchRepo, lettersScript, runWaveCli } from './dispatch-support.js';

// Issue 17 without Redis: job ids (E9), queue names per label set, the branch a job may push, URL
// parsing, polywave.config.json `dispatch`, and the commands' bad input.

describe('live worker events (issue 17 item 5)', () => {
  it('the worker relays each event once, in bounded batches, none beyond the cap; the orchestrator delivers each (run, seq) once and drops forged ones', () => {
    const outbox = createLiveEventOutbox({ max: 5, batch: 2 });
    const sent = [1, 2, 3, 4, 5, 6, 7].map((turn) => outbox.add({ type: 'turn-end', turn, usage: { inputTokens: 1, outputTokens: 2, cacheReadTokens: 0, cacheWriteTokens: 0 } }, 1000 + turn));
    expect(sent.map((event) => [event.seq, event.at])).toEqual([[0, 1001], [1, 1002], [2, 1003], [3, 1004], [4, 1005], [5, 1006], [6, 1007]]);
    const batches = [outbox.take(), outbox.take(), outbox.take(), outbox.take()];
    expect(batches.map((batch) => batch.map((event) => event.seq))).toEqual([[0, 1], [2, 3], [4], []]);
    expect([outbox.pending(), outbox.capped]).toEqual([false, 2]);
    const got: string[] = [];
    const inbox = createLiveEventInbox((event, meta) => got.push(`${event.type === 'turn-end' ? event.turn : event.type}@${meta.at}/${meta.worker}`));
    expect(inbox.fromProgress('w1:1', 'w1', [...batches[0]!, ...batches[1]!])).toBe(4);
    // A repeated update, a forged kind and a hostile value add nothing; the result brings only the rest.
    expect(inbox.fromProgress('w1:1', 'w1', [batches[0]![1], { type: 'agent-text', text: 'x', seq: 9, at: 1 }, 'junk', { type: 'turn-end', seq: 10 }])).toBe(0);
    expect(inbox.fromResult('w1:1', 'w1', sent)).toBe(3);
    expect(got).toEqual(['1@1001/w1', '2@1002/w1', '3@1003/w1', '4@1004/w1', '5@1005/w1', '6@1006/w1', '7@1007/w1']);
    // Another run of the job (another worker) is its own numbering; an older worker's result (no seq) is delivered as it is.
    expect(inbox.fromResult('w2:5', 'w2', [sent[0], { type: 'tool-call-end', toolCallId: 'c', tool: 'bash', isError: false, output: 'SECRET', durationMs: 3 }])).toBe(2);
    expect(got.slice(-2)).toEqual(['1@1001/w2', 'tool-call-end@undefined/w2']);
    // Never a time later than now (another machine's clock), never a tool's output.
    expect(checkRelayedEvent({ type: 'tool-call-end', tool: 't'.repeat(500), isError: 1, output: 'x', at: 5e15, seq: 1 }, 2000)).toEqual({ event: { type: 'tool-call-end', toolCallId: '', tool: 't'.repeat(200), isError: false, output: '', durationMs: 0 }, seq: 1, at: 2000 });
  });
});

describe('dispatch jobs', () => {
  it('gives one attempt on one base one deterministic id without BullMQ’s separator', () => {
    const id = agentJobId({ slug: 'billing', wave: 2, agentId: 'B3', baseCommit: '0123456789abcdef0123456789abcdef01234567', attempt: 1 });
    expect(id).toBe('billing.w2.B3.0123456789ab.a1');
    expect(id).not.toContain(':');
    expect(agentJobId({ slug: 'billing', wave: 2, agentId: 'B3', baseCommit: '0123456789abcdef0123456789abcdef01234567', attempt: 2 })).toBe('billing.w2.B3.0123456789ab.a2');
  });

  it('routes a job to the queue of its remote and sorted label set; a worker serves every subset of its labels of its own remote', () => {
    const key = remoteKey('file:///srv/git/repo.git');
    expect(key).toMatch(/^[0-9a-f]{12}$/);
    expect(queueNameFor([], key)).toBe(`polywave-agents.${key}`);
    expect(queueNameFor(['GPU', 'big', 'gpu'], key)).toBe(`polywave-agents.${key}@big+gpu`);
    expect(labelSubsets(['gpu', 'big']).map((subset) => queueNameFor(subset, key))).toEqual([`polywave-agents.${key}`, `polywave-agents.${key}@big`, `polywave-agents.${key}@gpu`, `polywave-agents.${key}@big+gpu`]);
    expect(servesLabels({ labels: ['gpu', 'macos'] }, ['gpu'])).toBe(true);
    expect(servesLabels({ labels: ['macos'] }, ['gpu'])).toBe(false);
    expect(servesLabels({ labels: [] }, [])).toBe(true);
    // Attack F6: a worker of another remote (or an older worker naming none) serves nothing here.
    expect(servesLabels({ labels: [], remote_key: key }, [], key)).toBe(true);
    expect(servesLabels({ labels: [], remote_key: remoteKey('file:///srv/git/other.git') }, [], key)).toBe(false);
    expect(servesLabels({ labels: [] }, [], key)).toBe(false);
    expect(() => queueNameFor(['no spaces'], key)).toThrow(expect.objectContaining({ code: 'DISPATCH_INVALID_LABEL', message: expect.stringMatching(/label "no spaces" must match/) }));
    // A named queue (--queue / --dispatch-queue): its own queues within the remote's; its workers serve
    // only it, and the default queues' workers not it.
    expect(queueNameFor([], key, 'team-b')).toBe(`polywave-agents.${key}.team-b`);
    expect(queueNameFor(['gpu'], key, 'team-b')).toBe(`polywave-agents.${key}.team-b@gpu`);
    expect(servesLabels({ labels: ['gpu'], remote_key: key, queue: 'team-b' }, ['gpu'], key, 'team-b')).toBe(true);
    expect(servesLabels({ labels: ['gpu'], remote_key: key, queue: 'team-b' }, ['gpu'], key)).toBe(false);
    expect(servesLabels({ labels: ['gpu'], remote_key: key }, ['gpu'], key, 'team-b')).toBe(false);
    expect(servesLabels({ labels: [], remote_key: remoteKey('file:///srv/git/other.git'), queue: 'team-b' }, [], key, 'team-b')).toBe(false);
    expect(checkQueueName('a_1-b')).toBe('a_1-b');
    for (const bad of ['', 'Team', 'a.b', 'a:b', 'a@b', 'a+b', '-a', 'x'.repeat(41)]) expect(() => checkQueueName(bad), bad).toThrow(expect.objectContaining({ code: 'DISPATCH_INVALID_QUEUE' }));
    expect(() => queueNameFor([], key, 'a.b')).toThrow(expect.objectContaining({ code: 'DISPATCH_INVALID_QUEUE' }));
  });

  it('keys a remote by its normalized URL: the same remote spelled without credentials, a trailing slash or .git, a plain path or localhost is one key', () => {
    expect(normalizeRemote('https://x-access-token:ghp_X@GitHub.com/Org/Repo.git/')).toBe('https://github.com/Org/Repo');
    expect(normalizeRemote('/srv/git/repo.git')).toBe('file:///srv/git/repo');
    expect(normalizeRemote('file://localhost/srv/git/repo.git')).toBe('file:///srv/git/repo');
    const key = remoteKey('file:///srv/git/repo.git');
    for (const spelling of ['file:///srv/git/repo', 'file:///srv/git/repo.git/', '/srv/git/repo.git', 'file://localhost/srv/git/repo.git', 'file://user:secret@localhost/srv/git/repo.git']) expect(remoteKey(spelling), spelling).toBe(key);
    expect(remoteKey('file:///srv/git/other.git')).not.toBe(key);
    expect(remoteKey('ssh://git@host/repo.git')).not.toBe(remoteKey('git@host:repo.git'));
  });

  it('lets a job push only its own agent branch', () => {
    expect(assertJobBranch({ slug: 'billing', wave: 1, agent: 'A', branch: 'polywave/billing/wave1-agent-A' })).toBe('polywave/billing/wave1-agent-A');
    for (const branch of ['main', 'polywave/billing/wave1-agent-B', 'polywave/other/wave1-agent-A', 'polywave/billing/wave2-agent-A', 'refs/heads/polywave/billing/wave1-agent-A']) {
      expect(() => assertJobBranch({ slug: 'billing', wave: 1, agent: 'A', branch })).toThrow(expect.objectContaining({ code: 'DISPATCH_REF_REFUSED' }));
    }
  });

  // Outside attack A17-07: a forged base_ref (an option, another ref) failed later as DISPATCH_REMOTE_UNREACHABLE.
  it('takes only the wave base of the job as its base_ref (DISPATCH_INVALID_JOB otherwise)', () => {
    expect(() => assertJobBaseRef({ slug: 'billing', wave: 2, base_ref: 'refs/polywave/base/billing/wave2' })).not.toThrow();
    for (const base_ref of ['--upload-pack=touch /tmp/x', '../../../../etc/passwd', 'refs/heads/main', 'refs/polywave/base/other/wave2', 'refs/polywave/base/billing/wave1', 'refs/polywave/base/billing/wave2:refs/heads/main']) {
      expect(() => assertJobBaseRef({ slug: 'billing', wave: 2, base_ref })).toThrow(expect.objectContaining({ code: 'DISPATCH_INVALID_JOB' }));
    }
  });

  // Outside attack A17-10: 10,000 owned and 10,000 frozen paths of ~4,000 characters each (within the per-field limits).
  it('bounds the owned and frozen paths of a job together', () => {
    expect(() => assertJobSize({ owned_files: ['src/a.ts'], frozen_paths: Array.from({ length: 2000 }, (_, index) => `src/contracts/c${index}.ts`) })).not.toThrow();
    const long = (tag: string) => Array.from({ length: 10_000 }, (_, index) => `${tag}/${String(index).padStart(5, '0')}${'x'.repeat(3990)}`);
    expect(() => assertJobSize({ owned_files: long('src'), frozen_paths: long('lib') })).toThrow(expect.objectContaining({ code: 'DISPATCH_INVALID_JOB', message: expect.stringMatching(/^job paths hold 79980000 characters \(owned and frozen together\), more than 1000000$/) }));
  });

  it('reads redis:// URLs and hides passwords in messages', () => {
    expect(redisOptionsFromUrl('redis://:s3cret@queue:6380/2')).toMatchObject({ host: 'queue', port: 6380, password: 's3cret', db: 2, maxRetriesPerRequest: null });
    expect(redisOptionsFromUrl('redis://127.0.0.1')).toMatchObject({ host: '127.0.0.1', port: 6379 });
    expect(redactRedisUrl('redis://:s3cret@queue:6380')).toBe('redis://:***@queue:6380');
    expect(() => redisOptionsFromUrl('http://queue:6379')).toThrow(expect.objectContaining({ code: 'DISPATCH_INVALID_URL' }));
  });

  it('never quotes a password or URL userinfo, also of URLs `new URL` cannot parse (attack F8, F9)', () => {
    expect(redactRedisUrl('redis://:hunter2@127.0.0.1:99999')).toBe('redis://***@127.0.0.1:99999');
    expect(() => redisOptionsFromUrl('redis://:hunter2@127.0.0.1:99999')).toThrow('not a Redis URL: "redis://***@127.0.0.1:99999" (expected redis://host:port)');
    expect(() => redisOptionsFromUrl('redis://:hunter2@127.0.0.1:16479/abc')).toThrow('redis://:***@127.0.0.1:16479/abc: the database must be a number (redis://host:port/0)');
    expect(() => redisOptionsFromUrl('http://:hunter2@x')).toThrow('not a Redis URL: "http://:***@x/" (expected redis://host:port)');
    expect(redactUserinfo("fatal: unable to access 'https://x-access-token:ghp_SECRET123@github.com/o/r.git/': 403 and ssh://git@h:22/r.git")).toBe("fatal: unable to access 'https://***@github.com/o/r.git/': 403 and ssh://***@h:22/r.git");
    expect(redactUserinfo('git@github.com:o/r.git file:///srv/r.git')).toBe('git@github.com:o/r.git file:///srv/r.git');
    // What a job carries as its remote: the URL without credentials.
    expect(remoteWithoutUserinfo('https://x-access-token:ghp_SECRET123@github.com/o/r.git')).toBe('https://github.com/o/r.git');
    expect(remoteWithoutUserinfo('file:///srv/r.git')).toBe('file:///srv/r.git');
  });

  it('gives up on a remote that does not answer within the start check’s bound (attack F11)', async () => {
    const started = Date.now();
    // A transport that hangs: git's ssh is a shell that sleeps.
    const check = assertRemoteReachable('ssh://u:pw@h.invalid/r.git', { cwd: os.tmpdir(), env: { ...process.env, GIT_SSH_COMMAND: 'sleep 3; true' }, timeoutMs: 500 });
    await expect(check).rejects.toMatchObject({ code: 'DISPATCH_REMOTE_UNREACHABLE', message: 'the shared remote ssh://***@h.invalid/r.git is unreachable (git ls-remote: no answer within 500 ms); nothing was started' });
    expect(Date.now() - started).toBeLessThan(2500);
  });

  it('hands ioredis an IPv6 literal without its brackets (attack F19)', () => {
    expect(redisOptionsFromUrl('redis://[::1]:16480')).toMatchObject({ host: '::1', port: 16480 });
    expect(redisOptionsFromUrl('redis://:pw@[fe80::1]/3')).toMatchObject({ host: 'fe80::1', port: 6379, db: 3 });
  });

  it('validates polywave.config.json `dispatch`', () => {
    const ok = parseProjectConfig(JSON.stringify({ repos: [{ name: 'r', path: '.' }], dispatch: { url: 'redis://q:6379', remote: 'ssh://git@h/r.git', queue: 'team-b', labels: { C: ['gpu'] }, label_wait_seconds: 5, outage_seconds: 30, gates: 'workers' } }));
    expect(ok.findings).toEqual([]);
    const bad = parseProjectConfig(JSON.stringify({ repos: [{ name: 'r', path: '.' }], dispatch: { url: 'http://q', queue: 'Team B', labels: { C: 'gpu' }, outage_seconds: -1, gates: 'remote' } }));
    expect(bad.findings.map((finding) => finding.field)).toEqual(['dispatch.url', 'dispatch.queue', 'dispatch.outage_seconds', 'dispatch.gates', 'dispatch.labels.C']);
    // F16: 0 is a number (not "unset"); a negative one and more labels than a worker takes are refused.
    expect(parseProjectConfig(JSON.stringify({ repos: [{ name: 'r', path: '.' }], dispatch: { label_wait_seconds: 0, outage_seconds: 0 } })).findings).toEqual([]);
    const more = parseProjectConfig(JSON.stringify({ repos: [{ name: 'r', path: '.' }], dispatch: { label_wait_seconds: -5, labels: { A: ['a', 'b', 'c', 'd', 'e', 'f', 'g'] } } }));
    expect(more.findings.map((finding) => finding.message)).toEqual(['dispatch.label_wait_seconds: must be a number of seconds from 0 to 86400', 'dispatch.labels.A: has 7 labels; a worker takes at most 6, so no worker could run it']);
    // A17-30: a key that names no agent (a typo of A) is refused, not silently ignored; an IMPL-scoped key is an agent.
    const keys = parseProjectConfig(JSON.stringify({ repos: [{ name: 'r', path: '.' }], dispatch: { labels: { a: ['gpu'], 'Agent A': ['gpu'], 'billing/B2': ['gpu'], C: ['gpu'] } } }));
    expect(keys.findings.map((finding) => finding.message)).toEqual([
      'dispatch.labels.a: is not an agent: a key is an agent ID (A, B2) or <impl-slug>/<agent ID>',
      'dispatch.labels.Agent A: is not an agent: a key is an agent ID (A, B2) or <impl-slug>/<agent ID>',
    ]);
  });
});

describe('dispatch commands: bad input', () => {
  it('refuses a non-Redis --dispatch, a worker without --remote, and a bad --redis URL with one coded line (exit 2)', async () => {
    const target = await createDispatchRepo('badurl', lettersScript());
    const before = readFileSync(target.implPath, 'utf8');
    const [dispatch, noRemote, badUrl, badQueue, badWorkerQueue] = await Promise.all([
      runWaveCli(target, 1, { extra: ['--dispatch', 'http://queue:6379'] }),
      runCli(['worker', '--redis', 'redis://127.0.0.1:1']),
      runCli(['workers', '--redis', 'queue:6379']),
      // A bad queue name is refused before Redis or the remote is asked anything.
      runWaveCli(target, 1, { extra: ['--dispatch', 'redis://127.0.0.1:1', '--dispatch-remote', 'file:///nonexistent', '--dispatch-queue', 'team:b'] }),
      runCli(['worker', '--redis', 'redis://127.0.0.1:1', '--remote', 'file:///nonexistent', '--queue', 'Team.B', '--dir', target.repo.sibling('never-made')]),
    ]);
    expect(badQueue).toMatchObject({ code: 2, stderr: 'polywave: error[DISPATCH_INVALID_QUEUE]: --dispatch-queue "team:b" must match ^[a-z0-9][a-z0-9_-]{0,39}$ (lower-case letters, digits, - and _)\n' });
    expect(badWorkerQueue).toMatchObject({ code: 2, stderr: 'polywave: error[DISPATCH_INVALID_QUEUE]: --queue "Team.B" must match ^[a-z0-9][a-z0-9_-]{0,39}$ (lower-case letters, digits, - and _)\n' });
    expect(existsSync(target.repo.sibling('never-made'))).toBe(false);
    expect(noRemote.code).toBe(2);
    expect(noRemote.stderr.trim().split('\n')).toHaveLength(1);
    expect(noRemote.stderr).toContain('--remote');
    expect(badUrl.code).toBe(2);
    expect(badUrl.stderr).toBe('polywave: error[DISPATCH_INVALID_URL]: not a Redis URL: "queue:6379" (expected redis://host:port)\n');
    expect(dispatch.code).toBe(2);
    expect(dispatch.stderr).toBe('polywave: error[DISPATCH_INVALID_URL]: --dispatch: not a Redis URL: "http://queue:6379" (expected redis://host:port, or inprocess)\n');
    expect(readFileSync(target.implPath, 'utf8')).toBe(before);
  });

  it('a redis:// --dispatch that does not parse (a port that is no number, a db that is no number) gets the same --dispatch: line and code as any other bad URL (exit 2)', async () => {
    const target = await createDispatchRepo('badport', lettersScript());
    const [port, db] = await Promise.all([runWaveCli(target, 1, { extra: ['--dispatch', 'redis://127.0.0.1:notaport'] }), runWaveCli(target, 1, { extra: ['--dispatch', 'redis://127.0.0.1:6379/abc'] })]);
    expect(port).toMatchObject({ code: 2, stdout: '', stderr: 'polywave: error[DISPATCH_INVALID_URL]: --dispatch: not a Redis URL: "redis://127.0.0.1:notaport" (expected redis://host:port, or inprocess)\n' });
    expect(db).toMatchObject({ code: 2, stdout: '', stderr: 'polywave: error[DISPATCH_INVALID_URL]: --dispatch: redis://127.0.0.1:6379/abc: the database must be a number (redis://host:port/0)\n' });
  });

  it('a dispatch.labels entry with an invalid label names the label and the allowed pattern (not "must be an array"); a non-array says what it found (exit 2)', async () => {
    const [invalid, notArray] = await Promise.all([
      createDispatchRepo('badlabel', lettersScript(), { config: { dispatch: { url: 'redis://127.0.0.1:1', labels: { P: ['gpu', 'GPU!'] } } } }),
      createDispatchRepo('notarray', lettersScript(), { config: { dispatch: { url: 'redis://127.0.0.1:1', labels: { P: 'gpu' } } } }),
    ]);
    const [first, second] = await Promise.all([runWaveCli(invalid, 1), runWaveCli(notArray, 1)]);
    expect(first).toMatchObject({ code: 2, stdout: '', stderr: `polywave: error[DISPATCH_INVALID_CONFIG]: ${invalid.repo.path('polywave.config.json')}: dispatch.labels.P: "GPU!" is not a valid label: a label must match ^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$ (letters, digits, - and _); nothing was started\n` });
    expect(second).toMatchObject({ code: 2, stdout: '', stderr: `polywave: error[DISPATCH_INVALID_CONFIG]: ${notArray.repo.path('polywave.config.json')}: dispatch.labels.P: must be an array of labels, found string; nothing was started\n` });
  });

  it('refuses a bad dispatch config, a lone --dispatch-remote, a leaky URL and an unreachable remote before anything changes (attack F8, F9, F11, F16, F17)', async () => {
    const target = await createDispatchRepo('badcfg', lettersScript(), { config: { dispatch: { url: 'redis://127.0.0.1:1', remote: 'file:///nonexistent/r.git', labels: { A: ['Bad Label'] }, label_wait_seconds: -1 } } });
    const plain = await createDispatchRepo('plain', lettersScript());
    const before = [readFileSync(target.implPath, 'utf8'), readFileSync(plain.implPath, 'utf8')];
    const secret = 'https://x-access-token:ghp_SECRET123@127.0.0.1:1/repo.git';
    const [config, lone, loneQueue, inprocess, password, remote] = await Promise.all([
      runWaveCli(target, 1),
      runWaveCli(plain, 1, { extra: ['--dispatch-remote', 'file:///nonexistent'] }),
      runWaveCli(plain, 1, { extra: ['--dispatch-queue', 'team-b'] }),
      runWaveCli(plain, 1, { extra: ['--dispatch', 'inprocess', '--dispatch-remote', 'file:///nonexistent'] }),
      runWaveCli(plain, 1, { extra: ['--dispatch', 'redis://:hunter2@127.0.0.1:99999', '--dispatch-remote', 'file:///nonexistent'] }),
      // Redis at port 1 is never asked: the remote is checked first.
      runWaveCli(plain, 1, { extra: ['--dispatch', 'redis://127.0.0.1:1', '--dispatch-remote', secret] }),
    ]);
    expect(config).toMatchObject({ code: 2, stderr: `polywave: error[DISPATCH_INVALID_CONFIG]: ${target.repo.path('polywave.config.json')}: dispatch.label_wait_seconds: must be a number of seconds from 0 to 86400; dispatch.labels.A: "Bad Label" is not a valid label: a label must match ^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$ (letters, digits, - and _); nothing was started\n` });
    expect(lone).toMatchObject({ code: 2, stderr: 'polywave: error[DISPATCH_NO_URL]: --dispatch-remote needs a Redis URL: --dispatch redis://host:port or dispatch.url in polywave.config.json; nothing was started\n' });
    expect(loneQueue).toMatchObject({ code: 2, stderr: 'polywave: error[DISPATCH_NO_URL]: --dispatch-queue needs a Redis URL: --dispatch redis://host:port or dispatch.url in polywave.config.json; nothing was started\n' });
    expect(inprocess).toMatchObject({ code: 2, stderr: 'polywave: error[DISPATCH_NO_URL]: --dispatch-remote needs the Redis dispatcher, not --dispatch inprocess; nothing was started\n' });
    expect(password).toMatchObject({ code: 2, stderr: 'polywave: error[DISPATCH_INVALID_URL]: --dispatch: not a Redis URL: "redis://***@127.0.0.1:99999" (expected redis://host:port, or inprocess)\n' });
    expect(remote.code).toBe(2);
    expect(remote.stderr).toMatch(/^polywave: error\[DISPATCH_REMOTE_UNREACHABLE\]: the shared remote https:\/\/\*\*\*@127\.0\.0\.1:1\/repo\.git is unreachable \(git ls-remote: .+\); nothing was started\n$/);
    for (const result of [config, lone, loneQueue, inprocess, password, remote]) expect(`${result.stdout}${result.stderr}`).not.toMatch(/hunter2|ghp_SECRET123/);
    // Nothing changed: manifests as they were, no worktree, no agent branch.
    expect([readFileSync(target.implPath, 'utf8'), readFileSync(plain.implPath, 'utf8')]).toEqual(before);
    for (const repo of [target.repo, plain.repo]) {
      expect((await repo.run(['worktree', 'list', '--porcelain'])).split('\n').filter((line) => line.startsWith('worktree '))).toHaveLength(1);
      expect((await repo.run(['for-each-ref', '--format=%(refname)', 'refs/heads'])).trim()).toBe('refs/heads/main');
    }
  });
});

describe('fetching agent branches (createBranchFetcher)', () => {
  it('fetches the branches of results that arrive together in ONE git fetch; a branch the remote lacks fails alone', async () => {
    // The shared remote: a bare clone of a repository with three agent branches (and a fourth made later).
    const source = await createTestRepo({ files: { 'README.md': 'x\n' } });
    const heads: Record<string, string> = {};
    for (const id of ['A', 'B', 'C', 'D']) {
      await source.run(['checkout', '--quiet', '-b', `polywave/f/wave1-agent-${id}`, 'main']);
      source.write(`${id}.txt`, `${id}\n`);
      heads[id] = await source.commitAll(`agent ${id}`);
    }
    const remoteDir = source.sibling('remote.git');
    await source.run(['clone', '--quiet', '--bare', source.dir, remoteDir]);
    // The orchestrator's repository: unrelated history, none of those commits.
    const local = await createTestRepo({ files: { 'other.txt': 'o\n' } });
    const fetches: string[][] = [];
    const gitOf = (directory: string): Git => {
      const git = createGit(directory, { env: local.env });
      return {
        ...git,
        run: (args, options) => {
          if (args[0] === 'fetch') fetches.push(args.filter((arg) => arg.startsWith('refs/')));
          return git.run(args, options);
        },
      };
    };
    const fetchBranch = createBranchFetcher(`file://${remoteDir}`, gitOf);
    const has = async (commit: string) => (await local.git.run(['cat-file', '-e', `${commit}^{commit}`], { allowExitCodes: [1, 128] })).exitCode === 0;

    await Promise.all(['A', 'B', 'C'].map((id) => fetchBranch(local.dir, `polywave/f/wave1-agent-${id}`)));
    expect(fetches).toEqual([['refs/heads/polywave/f/wave1-agent-A', 'refs/heads/polywave/f/wave1-agent-B', 'refs/heads/polywave/f/wave1-agent-C']]);
    for (const id of ['A', 'B', 'C']) expect(await has(heads[id]!)).toBe(true);
    expect(await has(heads.D!)).toBe(false);
    // No ref and no FETCH_HEAD written in the orchestrator's repository.
    expect((await local.run(['for-each-ref', '--format=%(refname)'])).trim()).toBe('refs/heads/main');
    expect(await local.git.run(['rev-parse', '--verify', '--quiet', 'FETCH_HEAD'], { allowExitCodes: [1] })).toMatchObject({ exitCode: 1 });

    fetches.length = 0;
    const [present, missing] = await Promise.allSettled([fetchBranch(local.dir, 'polywave/f/wave1-agent-D'), fetchBranch(local.dir, 'polywave/f/wave1-agent-E')]);
    expect(present.status).toBe('fulfilled');
    expect(missing.status).toBe('rejected');
    expect(String((missing as PromiseRejectedResult).reason)).toContain('polywave/f/wave1-agent-E');
    expect(fetches).toEqual([['refs/heads/polywave/f/wave1-agent-D', 'refs/heads/polywave/f/wave1-agent-E'], ['refs/heads/polywave/f/wave1-agent-D'], ['refs/heads/polywave/f/wave1-agent-E']]);
    expect(await has(heads.D!)).toBe(true);
  });

  it.each([
    ['in this process', false],
    ['through the git helper process (run-wave, program-execute, the worker)', true],
  ])("an agent's small commits travel as a pack (%s): unpacked into a repository holding the base; refused (--strict) where the base is missing; a large one is left to the fetch", async (_how, offloaded) => {
    offloadGitSpawns(offloaded);
    onTestFinished(() => offloadGitSpawns(false));
    const source = await createTestRepo({ files: { 'README.md': 'x\n' } });
    const base = await source.git.headCommit();
    await source.run(['checkout', '--quiet', '-b', 'polywave/p/wave1-agent-A']);
    source.write('src/a.txt', 'a\n');
    await source.commitAll('a');
    source.write('src/b.txt', 'b\n');
    const head = await source.commitAll('b');
    const pack = await packCommits(source.dir, source.env, head, base);
    expect(pack).toMatch(/^[A-Za-z0-9+/]+={0,2}$/);
    // The orchestrator's repository holds the base (a clone of main), not the agent's commits.
    const local = source.sibling('local');
    await source.run(['clone', '--quiet', '--no-local', '--single-branch', '--branch', 'main', source.dir, local]);
    const has = async (directory: string, commit: string) => (await createGit(directory, { env: source.env }).run(['cat-file', '-e', `${commit}^{commit}`], { allowExitCodes: [1, 128] })).exitCode === 0;
    expect(await has(local, head)).toBe(false);
    expect(await unpackCommits(local, source.env, pack!)).toBe(true);
    expect(await has(local, head)).toBe(true);
    expect(await createGit(local, { env: source.env }).run(['fsck', '--connectivity-only', '--no-dangling', head])).toMatchObject({ exitCode: 0 });
    // Where the base is missing (its tree and README are not in the pack), --strict writes nothing; nor is junk or an oversize text unpacked.
    const unrelated = await createTestRepo({ files: { 'other.txt': 'o\n' } });
    expect(await unpackCommits(unrelated.dir, unrelated.env, pack!)).toBe(false);
    expect(await has(unrelated.dir, head)).toBe(false);
    expect(await unpackCommits(local, source.env, 'not a pack!')).toBe(false);
    expect(await unpackCommits(local, source.env, 'A'.repeat(packMaxChars + 4))).toBe(false);
    source.write('src/big.txt', randomBytes(packMaxBytes).toString('hex'));
    expect(await packCommits(source.dir, source.env, await source.commitAll('big'), base)).toBeUndefined();
    expect(await packCommits(source.dir, source.env, '--all', base)).toBeUndefined();
    expect(gitSpawnsOffloaded()).toBe(offloaded);
  });
});

describe('job identity and models (attack F1, F2, F5)', () => {
  const data = (overrides: Partial<AgentJobData> = {}): AgentJobData => {
    const job: AgentJobData = { v: 2, polywave: '0.1.0', job_id: '', slug: 'billing', wave: 2, agent: 'B3', attempt: 1, role: 'wave', model: 'script:', script_text: 'version: 1\n', system_prompt: 's', prompt: 'p', base_commit: '0123456789abcdef0123456789abcdef01234567', branch: 'polywave/billing/wave2-agent-B3', base_ref: 'refs/polywave/base/billing/wave2', owned_files: ['src/b.ts'], frozen_paths: [], limits: {}, labels: [], remote: 'file:///r.git', enqueued_at: 1, ...overrides };
    return overrides.job_id === undefined ? { ...job, job_id: expectedJobId(job) } : job;
  };

  it('names a job by its content: other prompt, model, script, files or remote → another id; enqueue time and key order do not count', () => {
    const id = data().job_id;
    expect(id).toMatch(/^billing\.w2\.B3\.0123456789ab\.a1\.[0-9a-f]{12}$/);
    expect(id).toMatch(jobIdPattern);
    expect(data({ enqueued_at: 99 }).job_id).toBe(id);
    const reordered = Object.fromEntries(Object.entries(data()).reverse()) as AgentJobData;
    expect(jobContentDigest(reordered)).toBe(jobContentDigest(data()));
    const others = [{ prompt: 'p2' }, { model: 'anthropic:claude-sonnet-4-5', script_text: undefined }, { script_text: 'version: 1\n# redo\n' }, { owned_files: ['src/c.ts'] }, { remote: 'file:///other.git' }, { system_prompt: 's2' }].map((change) => data(change).job_id);
    expect(new Set([id, ...others]).size).toBe(others.length + 1);
  });

  it('refuses a job whose id is a path, is not its BullMQ id, or is not the id its content implies', () => {
    const good = data();
    expect(() => assertJobIdentity(good, good.job_id)).not.toThrow();
    for (const [job, bullId] of [
      [data({ job_id: '../../victim' }), '../../victim'],
      [data({ job_id: `${good.job_id}/../../x` }), `${good.job_id}/../../x`],
      [good, `${good.job_id.slice(0, -1)}${good.job_id.endsWith('0') ? '1' : '0'}`],
      [{ ...data({ prompt: 'changed' }), job_id: good.job_id }, good.job_id],
    ] as const) {
      expect(() => assertJobIdentity(job, bullId)).toThrow(expect.objectContaining({ code: 'DISPATCH_INVALID_JOB' }));
    }
  });

  it('gate jobs: named by their commit and content; a path-like, foreign or mismatched id and unknown gate fields are refused', () => {
    const gate = (change: Partial<GateJobData> = {}): GateJobData => {
      const value: GateJobData = { v: 2, polywave: '0.1.0', kind: 'gate', job_id: '', slug: 'billing', wave: 2, agent: 'B3', branch: 'polywave/billing/wave2-agent-B3', head: 'ab'.repeat(20), gates: [{ type: 'test', command: 'npm test', required: true }], docs_only: false, labels: [], remote: 'file:///r.git', enqueued_at: 1, ...change };
      return { ...value, job_id: change.job_id ?? expectedGateJobId(value) };
    };
    const good = gate();
    expect(good.job_id).toMatch(/^billing\.w2\.B3\.gate\.abababababab\.[0-9a-f]{12}$/);
    expect(gate({ enqueued_at: 5 }).job_id).toBe(good.job_id);
    expect(gate({ gates: [{ type: 'test', command: 'npm test -- --bail', required: true }] }).job_id).not.toBe(good.job_id);
    expect(() => assertGateJobIdentity(good, good.job_id)).not.toThrow();
    for (const [job, bullId] of [[gate({ job_id: '../../x' }), '../../x'], [good, 'other'], [{ ...gate({ head: 'cd'.repeat(20) }), job_id: good.job_id }, good.job_id]] as const) {
      expect(() => assertGateJobIdentity(job, bullId)).toThrow(expect.objectContaining({ code: 'DISPATCH_INVALID_JOB' }));
    }
    expect(gateJobDataSchema.safeParse(good).success).toBe(true);
    expect(gateJobDataSchema.safeParse({ ...good, gates: [{ command: 'x', env: { A: '1' } }] }).success).toBe(false);
    expect(gateJobDataSchema.safeParse({ ...good, head: 'main' }).success).toBe(false);
  });

  it('runs job models that name no endpoint; one that does only with a matching --model-allow prefix; scripts only as text', () => {
    for (const model of ['anthropic:claude-sonnet-4-5', 'openai:gpt-4o', 'ollama:qwen2.5-coder:32b', 'claude-code:', 'cli:claude', 'cli:codex:gpt-5', 'claude-sonnet-4-5']) expect(() => assertJobModel({ model }, [])).not.toThrow();
    expect(() => assertJobModel({ model: 'script:', script_text: 'version: 1\n' }, [])).not.toThrow();
    const refused = (model: string, allow: string[] = [], scriptText?: string) => () => assertJobModel({ model, ...(scriptText !== undefined ? { script_text: scriptText } : {}) }, allow);
    expect(refused('openai-compatible:http://evil.example/v1#gpt')).toThrow(/^model "openai-compatible:http:\/\/evil\.example\/v1#gpt": names its own endpoint/);
    expect(refused('openai-compatible:http://evil.example/v1#gpt', ['openai-compatible:http://gateway:4000/'])).toThrow(expect.objectContaining({ code: 'DISPATCH_INVALID_JOB' }));
    expect(() => assertJobModel({ model: 'openai-compatible:http://gateway:4000/v1#m' }, ['openai-compatible:http://gateway:4000/'])).not.toThrow();
    expect(refused('cli:my-agent')).toThrow(/names an agent CLI this worker does not run/);
    expect(() => assertJobModel({ model: 'cli:my-agent' }, ['cli:my-agent'])).not.toThrow();
    // Outside round A20: an entry allows at a boundary, never as a bare string prefix.
    expect(() => assertJobModel({ model: 'openai-compatible:http://gateway:4000/v1#m' }, ['openai-compatible:http://gateway:4000'])).not.toThrow();
    expect(() => assertJobModel({ model: 'openai-compatible:http://gateway:4000#m' }, ['openai-compatible:http://gateway:4000'])).not.toThrow();
    expect(refused('openai-compatible:http://gateway:40001/v1#m', ['openai-compatible:http://gateway:4000'])).toThrow(/names its own endpoint/);
    expect(refused('openai-compatible:http://gateway:4000.evil.example/v1#m', ['openai-compatible:http://gateway:4000'])).toThrow(/names its own endpoint/);
    expect(refused('cli:my-agent-evil', ['cli:my-agent'])).toThrow(/names an agent CLI/);
    expect(() => assertJobModel({ model: 'cli:my-agent:opus' }, ['cli:my-agent'])).not.toThrow();
    expect(refused('script:/etc/passwd', [], 'x')).toThrow(/never a path on the worker/);
    expect(refused('script:')).toThrow(/needs script_text/);
    expect(refused('anthropic:claude-sonnet-4-5', [], 'version: 1\n')).toThrow(/script_text is only for the script: model/);
  });
});

describe('worker logging during a Redis outage (attack F17)', () => {
  it('logs one line when Redis goes away and one when it is back, not one per reconnect error', () => {
    const lines: string[] = [];
    let now = 0;
    const errors = createErrorLog((line) => lines.push(line), { now: () => now, quietMs: 30_000 });
    // ~10 reconnect errors a second for 25 s, from the registry client and every BullMQ Worker.
    for (let tick = 0; tick < 250; tick += 1) {
      now += 100;
      errors.error(new Error('connect ECONNREFUSED 127.0.0.1:6379'), tick % 2 === 0);
      errors.error(new Error('Connection is closed.'), true);
    }
    errors.connected();
    errors.connected();
    // Other errors: once per distinct message within the quiet time.
    errors.error(new Error('Missing lock for job x'), true);
    errors.error(new Error('Missing lock for job x'), true);
    now += 31_000;
    errors.error(new Error('Missing lock for job x'), true);
    expect(lines).toEqual(['Redis unreachable (connect ECONNREFUSED 127.0.0.1:6379); waiting for it to come back', 'Redis is back', 'bullmq: Missing lock for job x', 'bullmq: Missing lock for job x']);
  });
});
