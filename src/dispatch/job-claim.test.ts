import { describe, expect, it } from 'vitest';
import { explainOldWorker, jobFormat, jobFormatSkew, polywaveVersion } from './job-claim.js';
import { kindOfFailure } from './redis-dispatcher.js';

// Version skew (issue 17): the worker's refusal of a job format it does not run, and how the orchestrator reports it.
describe('job format (version skew)', () => {
  it('a worker refuses a newer format whatever its signature, an older one only when signed; both versions named', () => {
    expect(jobFormatSkew({ v: jobFormat }, 'job', 'j', 'w1', true)).toBeUndefined();
    expect(jobFormatSkew({ v: 3, polywave: '9.0.0' }, 'job', 'j', 'w1', false)).toBe(`DISPATCH_VERSION_SKEW: job j has job format 3 (polywave 9.0.0), newer than worker w1 runs: job format 2 (polywave ${polywaveVersion()}); upgrade the worker to the orchestrator's polywave`);
    expect(jobFormatSkew({ v: 1 }, 'gate job', 'j', 'w1', true)).toMatch(/^DISPATCH_VERSION_SKEW: gate job j has job format 1 \(a polywave without a version in its jobs\), older than worker w1 runs: .*upgrade the orchestrator/);
    // (an unsigned older job is a forged one: DISPATCH_FORGED decides)
    expect(jobFormatSkew({ v: 1 }, 'job', 'j', 'w1', false)).toBeUndefined();
  });

  it('the orchestrator reports skew as a config failure (no relaunch), and an older worker\'s `v` refusal as skew', () => {
    expect(kindOfFailure('DISPATCH_VERSION_SKEW: job j has job format 3')).toBe('config');
    expect(explainOldWorker('DISPATCH_INVALID_JOB: job a.w1.A.x: v Invalid literal value, expected 1')).toMatch(/^DISPATCH_VERSION_SKEW: a worker of an older polywave \(job format 1\) took the job and refused it/);
    expect(explainOldWorker('DISPATCH_INVALID_JOB: job a.w1.A.x: prompt too long')).toBe('DISPATCH_INVALID_JOB: job a.w1.A.x: prompt too long');
  });
});
