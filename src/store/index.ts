export { readTextFile, defaultMaxTextBytes, type ReadTextOptions } from './read-text.js';
export {
  updateFileLocked,
  withFileLock,
  writeFileAtomic,
  defaultLockTimeoutMs,
  defaultStaleLockMs,
  type FileLockOptions,
  type UpdateFileOptions,
  type LockOwner,
} from './locked-write.js';
