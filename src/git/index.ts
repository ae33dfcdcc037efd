export type { CommitOptions, Git, MergeTreeResult, StatusEntry, WorktreeEntry } from './git-port.js';
export { createGit, type CreateGitOptions, type GitConfigSource, type GitVersion } from './git-cli.js';
export { GitError } from './git-error.js';
export { runGit, type RunGitOptions } from './run-git.js';
