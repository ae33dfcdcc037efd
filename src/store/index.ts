export { readTextFile, defaultMaxTextBytes, type ReadTextOptions } from './read-text.js';
export { updateFileLocked, withFileLock, writeFileAtomic, defaultLockTimeoutMs, type FileLockOptions, type UpdateFileOptions } from './locked-write.js';
export { resolveLockLocation, type LockLocation } from './lock-location.js';
export { isManifestScratchPath } from './atomic-file.js';
