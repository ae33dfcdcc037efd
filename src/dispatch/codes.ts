/** Issue 17: the stable codes of the Redis dispatcher and `polywave worker`. */
export const dispatchCodes = {
  /** `--dispatch`/`--redis` is not a redis:// URL (exit 2). */
  invalidUrl: 'DISPATCH_INVALID_URL',
  /** Redis did not answer at start (exit 2, nothing changed). */
  redisUnreachable: 'DISPATCH_REDIS_UNREACHABLE',
  /** Redis evicts any key under memory pressure (`maxmemory-policy allkeys-*`): it would drop running jobs (A21-41); nothing starts (exit 2). */
  redisEvicts: 'DISPATCH_REDIS_EVICTS',
  /** Redis went away mid-run for longer than the outage limit: the attempt fails as E19 transient. */
  redisLost: 'DISPATCH_REDIS_LOST',
  /**
   * Outside round A23-25: Redis is full — maxmemory reached with no key it may evict (`noeviction`) — and refuses writes
   * ("OOM command not allowed…"): at start, nothing starts (exit 2); mid-run, the attempt fails with it (escalate:
   * Redis stays full until its operator acts), nothing merged.
   */
  redisFull: 'DISPATCH_REDIS_FULL',
  /** No live worker has the job's labels (after a bounded wait). */
  noWorker: 'DISPATCH_NO_WORKER',
  /** A worker was asked to push a ref outside `polywave/<slug>/wave<N>-agent-<id>`. */
  refRefused: 'DISPATCH_REF_REFUSED',
  /** The shared remote cannot be fetched from or pushed to (a config error naming the URL). */
  remoteUnreachable: 'DISPATCH_REMOTE_UNREACHABLE',
  /**
   * Outside round A25-08: the shared remote refuses to replace an agent branch (it denies non-fast-forward updates:
   * `receive.denyNonFastForwards`, which `git init --shared` sets, or a branch protection) — a job's re-run, which starts
   * from the wave's base, cannot replace what an earlier run pushed (config: escalate, naming the setting).
   */
  remoteNoForce: 'DISPATCH_REMOTE_NO_FORCE',
  /** The agent branch on the remote is not at the commit the job result names (a second run overwrote it). */
  branchMismatch: 'DISPATCH_BRANCH_MISMATCH',
  /** The job's commit is here but the orchestrator's local worktree of the agent refused the fast-forward to it (its own untracked files in the way; A22-18). */
  worktreeUpdate: 'DISPATCH_WORKTREE_UPDATE_FAILED',
  /** A job of the agent left in flight is awaited by another live orchestrator: two runs of one wave at once (A19-13). */
  jobOwned: 'DISPATCH_JOB_OWNED',
  /** A malformed job (bad fields, unknown version). */
  invalidJob: 'DISPATCH_INVALID_JOB',
  /** The dispatcher needs a remote (`--dispatch-remote` or `dispatch.remote`). */
  noRemote: 'DISPATCH_NO_REMOTE',
  /** `--dispatch-remote` without a Redis URL to dispatch through (attack F17; exit 2). */
  noUrl: 'DISPATCH_NO_URL',
  /** polywave.config.json's `dispatch` block is invalid (attack F16; exit 2, nothing started). */
  invalidConfig: 'DISPATCH_INVALID_CONFIG',
  /** A label (a worker's `--label`, an agent's label) is not `[a-z0-9][a-z0-9_-]{0,31}`, or a worker has more than 6 (attack F15; exit 2). */
  invalidLabel: 'DISPATCH_INVALID_LABEL',
  /** A queue name (`polywave worker --queue`, `--dispatch-queue`, `dispatch.queue`) is not `[a-z0-9][a-z0-9_-]{0,39}` (exit 2, nothing started). */
  invalidQueue: 'DISPATCH_INVALID_QUEUE',
  /** `polywave worker --id` names a worker that is live now (attack F15; exit 2, nothing started). */
  workerIdInUse: 'DISPATCH_WORKER_ID_IN_USE',
  /** The worker's `--dir` could not be registered (the /tmp scratch parent unusable), so other workers' sandboxes of this host would not hide it (A17-12): the worker does not start (exit 2). */
  dirUnregistered: 'DISPATCH_WORKER_DIR_UNREGISTERED',
  /** The worker's `--dir` is a live worker's, or lies inside or around one (A18-01/14): the worker does not start (exit 2). */
  dirInUse: 'DISPATCH_WORKER_DIR_IN_USE',
  /** The job's base commit is not on the shared remote, even after fetching its base ref (attack F18: the ref was moved meanwhile; transient). */
  baseMissing: 'DISPATCH_BASE_MISSING',
  /** The job's lock was lost before its push (it ran past its lock; another worker has it): nothing pushed (attack F12; transient). */
  lockLost: 'DISPATCH_LOCK_LOST',
  /** The agent branch on the remote moved while the job ran (another run of it pushed): nothing pushed (attack F12; transient). */
  branchMoved: 'DISPATCH_BRANCH_MOVED',
  /**
   * A cross-repo wave (E51: agents in several repositories) run through the Redis dispatcher (A20-34: every repository's
   * wave base went to the one base ref of the shared remote, and the pushes raced): refused before anything starts (exit 2).
   */
  crossRepo: 'DISPATCH_CROSS_REPO',
  /**
   * A job hit a disk error (full, over quota) on several workers in turn, each of whose `--dir` could be written again once
   * the job's own files (a failed fetch's temporary objects, its worktree) were removed: the job does not fit there (its
   * base, or what its agent writes) — the job's failure (config, E19 escalate), not the workers' (A21-25, A21-33).
   */
  jobTooLarge: 'DISPATCH_JOB_TOO_LARGE',
  /**
   * Outside round A21-43: dispatch over Redis without a dispatch key (POLYWAVE_DISPATCH_KEY, POLYWAVE_DISPATCH_KEY_FILE, a
   * worker's --dispatch-key-file), or one too short or unreadable: nothing starts (exit 2).
   */
  keyMissing: 'DISPATCH_KEY_MISSING',
  /**
   * Outside round A23-37: the dispatch key's file is readable by other users of the machine (mode `o+r`): refused, exit 2,
   * naming the file and `chmod 600` (a file its group can read is taken with a warning).
   */
  keyExposed: 'DISPATCH_KEY_EXPOSED',
  /**
   * A21-43/A21-11: a job, a progress record or a result in Redis without a valid signature of the dispatch key (forged by
   * a Redis writer, or signed with another key): a worker refuses the job, an orchestrator the result (the attempt
   * fails, nothing of it merged) and ignores the progress record.
   */
  forged: 'DISPATCH_FORGED',
  /**
   * Issue 17 (replays): a result signed with the dispatch key, but by another run or for another enqueue of the same job
   * id than the one this orchestrator awaits (an earlier run's result re-delivered, an earlier job's answer): refused as
   * a forged one is (the attempt fails, nothing of it merged). Also a worker's refusal of a signed job no live
   * orchestrator awaits (no valid, fresh signed claim naming its enqueue: an old job re-added to a queue) — nothing
   * fetched or run (src/dispatch/job-claim.ts).
   */
  replayed: 'DISPATCH_REPLAYED',
  /**
   * Version skew: a worker was given a job of a format it does not run (`v`: newer — an orchestrator of a later polywave —
   * or older — one before claim-bound jobs), or (orchestrator side) a worker of an older polywave refused the job's
   * format: the job fails naming both versions (config: escalate, no retry), nothing run.
   */
  versionSkew: 'DISPATCH_VERSION_SKEW',
  /**
   * Outside round A22-24: a job the orchestrator gave up on (its watch's timeout: the agent's limit + 120 s), or one that
   * ran past that bound on its worker: the worker stops it and fails it with this code, never handing it back.
   */
  givenUp: 'DISPATCH_GIVEN_UP',
  /** The job failed on its worker without a coded reason; also: the run that finished reported nothing while a lost run's report was written (transient). */
  workerFailed: 'DISPATCH_WORKER_FAILED',
} as const;
