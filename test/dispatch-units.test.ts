import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createBranchFetcher } from '../src/dispatch/branch-fetch.js';
import { createGit } from '../src/git/git-cli.js';
import type { Git } from '../src/git/git-port.js';
import { agentJobId, assertJobBranch, assertJobIdentity, assertJobModel, expectedJobId, jobContentDigest, jobIdPattern, labelSubsets, queueNameFor, type AgentJobData } from '../src/dispatch/job.js';
import { redactRedisUrl, redisOptionsFromUrl } from '../src/dispatch/redis-url.js';
import { servesLabels } from '../src/dispatch/registry.js';
import { parseProjectConfig } from '../src/store/project-config.js';
import { runCli } from './support/cli.js';
import { createTestRepo } from './support/git-repo.js';
import { createDispatchRepo, lettersScript, runWaveCli } from './dispatch-support.js';

// Issue 17 without Redis: job ids (E9), queue names per label set, the branch a job may push, URL
// parsing, polywave.config.json `dispatch`, and the commands' bad input.

describe('dispatch jobs', () => {
  it('gives one attempt on one base one deterministic id without BullMQ’s separator', () => {
    const id = agentJobId({ slug: 'billing', wave: 2, agentId: 'B3', baseCommit: '0123456789abcdef0123456789abcdef01234567', attempt: 1 });
    expect(id).toBe('billing.w2.B3.0123456789ab.a1');
    expect(id).not.toContain(':');
    expect(agentJobId({ slug: 'billing', wave: 2, agentId: 'B3', baseCommit: '0123456789abcdef0123456789abcdef01234567', attempt: 2 })).toBe('billing.w2.B3.0123456789ab.a2');
  });

  it('routes a job to the queue of its sorted label set; a worker serves every subset of its labels', () => {
    expect(queueNameFor([])).toBe('polywave-agents');
    expect(queueNameFor(['GPU', 'big', 'gpu'])).toBe('polywave-agents@big+gpu');
    expect(labelSubsets(['gpu', 'big']).map((subset) => queueNameFor(subset))).toEqual(['polywave-agents', 'polywave-agents@big', 'polywave-agents@gpu', 'polywave-agents@big+gpu']);
    expect(servesLabels({ labels: ['gpu', 'macos'] }, ['gpu'])).toBe(true);
    expect(servesLabels({ labels: ['macos'] }, ['gpu'])).toBe(false);
    expect(servesLabels({ labels: [] }, [])).toBe(true);
    expect(() => queueNameFor(['no spaces'])).toThrow(/label "no spaces" must match/);
  });

  it('lets a job push only its own agent branch', () => {
    expect(assertJobBranch({ slug: 'billing', wave: 1, agent: 'A', branch: 'polywave/billing/wave1-agent-A' })).toBe('polywave/billing/wave1-agent-A');
    for (const branch of ['main', 'polywave/billing/wave1-agent-B', 'polywave/other/wave1-agent-A', 'polywave/billing/wave2-agent-A', 'refs/heads/polywave/billing/wave1-agent-A']) {
      expect(() => assertJobBranch({ slug: 'billing', wave: 1, agent: 'A', branch })).toThrow(expect.objectContaining({ code: 'DISPATCH_REF_REFUSED' }));
    }
  });

  it('reads redis:// URLs and hides passwords in messages', () => {
    expect(redisOptionsFromUrl('redis://:s3cret@queue:6380/2')).toMatchObject({ host: 'queue', port: 6380, password: 's3cret', db: 2, maxRetriesPerRequest: null });
    expect(redisOptionsFromUrl('redis://127.0.0.1')).toMatchObject({ host: '127.0.0.1', port: 6379 });
    expect(redactRedisUrl('redis://:s3cret@queue:6380')).toBe('redis://:***@queue:6380');
    expect(() => redisOptionsFromUrl('http://queue:6379')).toThrow(expect.objectContaining({ code: 'DISPATCH_INVALID_URL' }));
  });

  it('validates polywave.config.json `dispatch`', () => {
    const ok = parseProjectConfig(JSON.stringify({ repos: [{ name: 'r', path: '.' }], dispatch: { url: 'redis://q:6379', remote: 'ssh://git@h/r.git', labels: { C: ['gpu'] }, label_wait_seconds: 5, outage_seconds: 30 } }));
    expect(ok.findings).toEqual([]);
    const bad = parseProjectConfig(JSON.stringify({ repos: [{ name: 'r', path: '.' }], dispatch: { url: 'http://q', labels: { C: 'gpu' }, outage_seconds: -1 } }));
    expect(bad.findings.map((finding) => finding.field)).toEqual(['dispatch.url', 'dispatch.outage_seconds', 'dispatch.labels.C']);
  });
});

describe('dispatch commands: bad input', () => {
  it('refuses a non-Redis --dispatch, a worker without --remote, and a bad --redis URL with one coded line (exit 2)', async () => {
    const target = await createDispatchRepo('badurl', lettersScript());
    const before = readFileSync(target.implPath, 'utf8');
    const [dispatch, noRemote, badUrl] = await Promise.all([
      runWaveCli(target, 1, { extra: ['--dispatch', 'http://queue:6379'] }),
      runCli(['worker', '--redis', 'redis://127.0.0.1:1']),
      runCli(['workers', '--redis', 'queue:6379']),
    ]);
    expect(noRemote.code).toBe(2);
    expect(noRemote.stderr.trim().split('\n')).toHaveLength(1);
    expect(noRemote.stderr).toContain('--remote');
    expect(badUrl.code).toBe(2);
    expect(badUrl.stderr).toBe('polywave: error[DISPATCH_INVALID_URL]: not a Redis URL: "queue:6379" (expected redis://host:port)\n');
    expect(dispatch.code).toBe(2);
    expect(dispatch.stderr).toBe('polywave: error[DISPATCH_INVALID_URL]: --dispatch: not a Redis URL: "http://queue:6379" (expected redis://host:port, or inprocess)\n');
    expect(readFileSync(target.implPath, 'utf8')).toBe(before);
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
});

describe('job identity and models (attack F1, F2, F5)', () => {
  const data = (overrides: Partial<AgentJobData> = {}): AgentJobData => {
    const job: AgentJobData = { v: 1, job_id: '', slug: 'billing', wave: 2, agent: 'B3', attempt: 1, role: 'wave', model: 'script:', script_text: 'version: 1\n', system_prompt: 's', prompt: 'p', base_commit: '0123456789abcdef0123456789abcdef01234567', branch: 'polywave/billing/wave2-agent-B3', base_ref: 'refs/polywave/base/billing/wave2', owned_files: ['src/b.ts'], frozen_paths: [], limits: {}, labels: [], remote: 'file:///r.git', enqueued_at: 1, ...overrides };
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
      [good, `${good.job_id.slice(0, -1)}0`],
      [{ ...data({ prompt: 'changed' }), job_id: good.job_id }, good.job_id],
    ] as const) {
      expect(() => assertJobIdentity(job, bullId)).toThrow(expect.objectContaining({ code: 'DISPATCH_INVALID_JOB' }));
    }
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
    expect(refused('script:/etc/passwd', [], 'x')).toThrow(/never a path on the worker/);
    expect(refused('script:')).toThrow(/needs script_text/);
    expect(refused('anthropic:claude-sonnet-4-5', [], 'version: 1\n')).toThrow(/script_text is only for the script: model/);
  });
});
