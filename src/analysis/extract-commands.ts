import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { parseYamlSafe, toPlain } from '../protocol/yaml/index.js';
import { detectToolchains, parseMakefileTargets, pickMakeTarget, scanProject, type Toolchain } from './toolchain.js';

/**
 * H2: the build/test/lint/format commands of a repository — the Go `commands.CommandSet`
 * (reference/engine-cli.md §7.8). Empty string = not found (the Go tool prints empty strings).
 */
export interface CommandSet {
  /** `go`, `rust`, `node`, `python` (language defaults and CI), `npm`/`pnpm`/`yarn`/`bun` (package.json), `make` (Makefile); may be '' for CI sets. */
  toolchain: string;
  build: string;
  test: { full: string; focusedPattern: string };
  lint: { check: string; fix: string };
  format: { check: string; fix: string };
  /** Files the winning set came from, relative to the root (`/`-separated). */
  detectionSources: string[];
}

/** One source of commands (a parser) with its priority; the highest priority that finds something wins. */
export interface CommandSource {
  name: string;
  priority: number;
  extract(root: string, options: ExtractOptions): Promise<CommandSet | undefined>;
}

/** Options of {@link extractCommands}. */
export interface ExtractOptions {
  /** Host platform (`process.platform`), for skipping CI jobs of other operating systems. Default `linux`. */
  platform?: string;
}

/** Size cap for any file read here (a CI config or build file is far smaller). */
const maxFileBytes = 1024 * 1024;

function emptySet(toolchain: string, detectionSources: string[]): CommandSet {
  return { toolchain, build: '', test: { full: '', focusedPattern: '' }, lint: { check: '', fix: '' }, format: { check: '', fix: '' }, detectionSources };
}

function hasAnyCommand(set: CommandSet): boolean {
  return [set.build, set.test.full, set.test.focusedPattern, set.lint.check, set.lint.fix, set.format.check, set.format.fix].some((command) => command !== '');
}

async function readSmall(filePath: string): Promise<string | undefined> {
  try {
    const stats = await stat(filePath);
    if (!stats.isFile() || stats.size > maxFileBytes) return undefined;
    return (await readFile(filePath, 'utf8')).replace(/^\uFEFF/, '');
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// CI commands: classification (pure)

/** Joins shell continuation lines and drops blanks and comments. */
export function splitScriptLines(script: string): string[] {
  const lines: string[] = [];
  let pending = '';
  for (const raw of script.replace(/\r\n?/g, '\n').split('\n')) {
    const line = raw.trim();
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1).trim()} `;
      continue;
    }
    const joined = (pending + line).trim();
    pending = '';
    if (joined === '' || joined.startsWith('#')) continue;
    lines.push(joined);
  }
  if (pending.trim() !== '') lines.push(pending.trim());
  return lines;
}

const runner = String.raw`(?:npm|pnpm|yarn|bun)`;
const buildPattern = new RegExp(String.raw`\bgo build\b|\bcargo build\b|\b${runner}(?: run)? build\b|\bmake build\b|\bpython3? -m build\b|\bmvn\b.*\b(?:package|compile|verify)\b|\bgradlew?\b.*\bbuild\b|\bdotnet build\b|\btsc\b`);
const testPattern = new RegExp(String.raw`\bgo test\b|\bcargo (?:test|nextest)\b|\b${runner}(?: run)? test\b|\bnpm t\b|\bpytest\b|\bpython3? -m (?:pytest|unittest)\b|\bmake (?:test|check)\b|\bvitest\b|\bjest\b|\bmvn\b.*\btest\b|\bdotnet test\b|\bbundle exec (?:rspec|rake test)\b`);
const lintPattern = new RegExp(String.raw`\bgo vet\b|\bgolangci-lint\b|\bstaticcheck\b|\bcargo clippy\b|\beslint\b|\bbiome (?:check|lint)\b|\b${runner}(?: run)? lint\b|\bruff check\b|\bruff \.|\bflake8\b|\bpylint\b|\bmake (?:lint|vet)\b|\brubocop\b`);
const formatPattern = new RegExp(String.raw`\bgofmt\b|\bgoimports\b|\bcargo fmt\b|\bprettier\b|\bblack\b(?![-\w])|\bruff format\b|\b${runner}(?: run)? (?:format|fmt)\b|\bmake (?:fmt|format)\b|\bisort\b`);
const formatCheckPattern = /--check\b|(?:^|\s)-l(?:\s|$)|--list-different\b|(?:^|\s)-d(?:\s|$)|--diff\b|[:-]check\b|\bcheck[-:]/;
const focusedPattern = /\s-run[\s=]|\s--testNamePattern\b|\s-k\s|\s-t\s/;

/** Commands that set up or describe the environment, never a gate (`npm ci`, `echo`, `cd`). */
const setupPattern = /^(?:echo|printf|cd|export|mkdir|cp|mv|rm|cat|ls|pwd|sudo apt|sudo apt-get|apt|apt-get|brew|choco|curl|wget|git|npm (?:ci|install|i)|pnpm (?:install|i)|yarn install|yarn|pip3? install|python3? -m pip|go (?:mod|install|get)|rustup|cargo install)(?:\s|$)/;

/** Pure: classifies CI script lines into the Go CommandSet fields (first match per field wins). */
export function classifyCiCommands(commands: readonly string[]): Omit<CommandSet, 'toolchain' | 'detectionSources'> {
  const set = emptySet('', []);
  for (const command of commands) {
    const bare = stripEnvPrefix(command);
    // Judge only the parts that are not set-up (`pip install pytest && pytest` is a test line).
    const meaningful = bare
      .split(/&&|\|\||;/)
      .map((part) => stripEnvPrefix(part.trim()))
      .filter((part) => part !== '' && !setupPattern.test(part));
    if (meaningful.length === 0) continue;
    const lower = meaningful.join(' && ').toLowerCase();
    // A line may fill several fields (`npm run build && npm test`), as in Go.
    if (buildPattern.test(lower) && set.build === '') set.build = command;
    if (testPattern.test(lower)) {
      if (set.test.full === '') set.test.full = command;
      if (set.test.focusedPattern === '' && focusedPattern.test(` ${bare}`)) set.test.focusedPattern = command;
    }
    if (lintPattern.test(lower)) {
      if (/--fix\b/.test(bare)) {
        if (set.lint.fix === '') set.lint.fix = command;
      } else if (set.lint.check === '') set.lint.check = command;
    }
    if (formatPattern.test(lower)) {
      if (formatCheckPattern.test(bare)) {
        if (set.format.check === '') set.format.check = command;
      } else if (set.format.fix === '') set.format.fix = command;
    }
  }
  const { build, test, lint, format } = set;
  return { build, test, lint, format };
}

function stripEnvPrefix(command: string): string {
  return command.replace(/^(?:[A-Za-z_][A-Za-z0-9_]*=(?:'[^']*'|"[^"]*"|\S*)\s+)+/, '');
}

/** Pure: the dominant language of CI commands (ties: go > rust > node > python), or ''. */
export function toolchainFromCommands(commands: readonly string[]): string {
  const counts = { go: 0, rust: 0, node: 0, python: 0 };
  for (const command of commands) {
    const lower = stripEnvPrefix(command).toLowerCase();
    if (/\bcargo\b|\brustc\b/.test(lower)) counts.rust += 1;
    else if (/(?:^|\s)go\s|^gofmt\b|\bgolangci-lint\b/.test(lower)) counts.go += 1;
    else if (/\b(?:npm|pnpm|yarn|bun|npx|node)\s/.test(lower)) counts.node += 1;
    else if (/\bpython3?\s|\bpytest\b|\bruff\b|\bpip3?\s/.test(lower)) counts.python += 1;
  }
  let best = '';
  let max = 0;
  for (const [name, count] of Object.entries(counts)) {
    if (count > max) {
      max = count;
      best = name;
    }
  }
  return best;
}

// ---------------------------------------------------------------------------------------------
// GitHub Actions and GitLab CI (pure over text; bad YAML yields no commands, never a throw)

/** Bad YAML (syntax, too deep, alias bombs, binary) is no YAML: undefined, never a throw. */
function parseYamlValue(text: string): unknown {
  const parsed = parseYamlSafe(text, { maxBytes: maxFileBytes });
  if (!parsed.ok) return undefined;
  try {
    return toPlain(parsed.document);
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function envEntries(value: unknown): Array<[string, string]> {
  if (!isRecord(value)) return [];
  const entries: Array<[string, string]> = [];
  for (const [key, entry] of Object.entries(value)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) continue;
    if (typeof entry !== 'string' && typeof entry !== 'number' && typeof entry !== 'boolean') continue;
    const text = String(entry);
    // Expressions (secrets, matrix values) cannot be reproduced outside the CI runner.
    if (text.includes('${{')) continue;
    entries.push([key, text]);
  }
  return entries;
}

function envPrefix(...layers: unknown[]): string {
  const merged = new Map<string, string>();
  for (const layer of layers) for (const [key, value] of envEntries(layer)) merged.set(key, value);
  const keys = [...merged.keys()].sort();
  return keys.map((key) => `${key}=${quoteValue(merged.get(key)!)} `).join('');
}

function quoteValue(value: string): string {
  return /^[A-Za-z0-9_./:@%+,=-]*$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

const platformWords: Record<string, string> = { linux: 'ubuntu', darwin: 'macos', win32: 'windows' };

function runsOnHost(job: Record<string, unknown>, platform: string): boolean {
  const host = platformWords[platform] ?? 'ubuntu';
  const matches = (label: string): boolean => {
    const lower = label.toLowerCase();
    if (lower.includes('${{')) return true;
    if (/ubuntu|linux/.test(lower)) return host === 'ubuntu';
    if (/macos|mac\b|osx/.test(lower)) return host === 'macos';
    if (/windows|win\b/.test(lower)) return host === 'windows';
    return true; // self-hosted or custom labels: cannot tell
  };
  const strategy = isRecord(job.strategy) ? job.strategy : undefined;
  const matrix = strategy && isRecord(strategy.matrix) ? strategy.matrix : undefined;
  if (matrix && Array.isArray(matrix.os) && matrix.os.length > 0) {
    return matrix.os.some((label) => typeof label === 'string' && matches(label));
  }
  if (typeof job['runs-on'] === 'string') return matches(job['runs-on']);
  return true;
}

/**
 * Pure: the `run:` lines of one GitHub Actions workflow, in document order, with the merged
 * workflow/job/step `env` as an inline prefix (`GOWORK=off go test ./...`). Jobs that only run
 * on another operating system (`strategy.matrix.os`, `runs-on`) are skipped.
 */
export function githubWorkflowCommands(text: string, options: ExtractOptions = {}): string[] {
  const workflow = parseYamlValue(text);
  if (!isRecord(workflow) || !isRecord(workflow.jobs)) return [];
  const commands: string[] = [];
  for (const job of Object.values(workflow.jobs)) {
    if (!isRecord(job) || !Array.isArray(job.steps)) continue;
    if (!runsOnHost(job, options.platform ?? 'linux')) continue;
    for (const step of job.steps) {
      if (!isRecord(step) || typeof step.run !== 'string') continue;
      const prefix = envPrefix(workflow.env, job.env, step.env);
      for (const line of splitScriptLines(step.run)) commands.push(prefix + line);
    }
  }
  return commands;
}

const gitlabReservedKeys = new Set(['default', 'include', 'stages', 'variables', 'workflow', 'image', 'services', 'before_script', 'after_script', 'cache', 'spec']);

/** Pure: the `script:` lines of the jobs of a `.gitlab-ci.yml`, in document order (hidden `.jobs` skipped). */
export function gitlabCiCommands(text: string): string[] {
  const pipeline = parseYamlValue(text);
  if (!isRecord(pipeline)) return [];
  const commands: string[] = [];
  const collect = (value: unknown): void => {
    if (typeof value === 'string') commands.push(...splitScriptLines(value));
    else if (Array.isArray(value)) for (const item of value) collect(item);
  };
  for (const [name, job] of Object.entries(pipeline)) {
    if (gitlabReservedKeys.has(name) || name.startsWith('.') || !isRecord(job)) continue;
    collect(job.script);
  }
  return commands;
}

function setFromCi(commands: string[], sources: string[]): CommandSet | undefined {
  const set: CommandSet = { toolchain: toolchainFromCommands(commands), ...classifyCiCommands(commands), detectionSources: sources };
  return hasAnyCommand(set) ? set : undefined;
}

/** GitHub Actions workflows (`.github/workflows/*.y(a)ml`), priority 100 as in Go. */
export const githubActionsSource: CommandSource = {
  name: 'github-actions',
  priority: 100,
  async extract(root, options) {
    const directory = path.join(root, '.github', 'workflows');
    let names: string[];
    try {
      names = (await readdir(directory)).filter((name) => /\.ya?ml$/.test(name)).sort();
    } catch {
      return undefined;
    }
    const all: string[] = [];
    const sources: string[] = [];
    for (const name of names) {
      const text = await readSmall(path.join(directory, name));
      if (text === undefined) continue;
      const commands = githubWorkflowCommands(text, options);
      // Only files that contribute a gate-like command are sources.
      if (commands.length > 0 && hasAnyCommand({ ...emptySet('', []), ...classifyCiCommands(commands) })) {
        all.push(...commands);
        sources.push(`.github/workflows/${name}`);
      }
    }
    return all.length > 0 ? setFromCi(all, sources) : undefined;
  },
};

/** GitLab CI (`.gitlab-ci.yml`), priority 90 (the Go tool has no GitLab parser). */
export const gitlabCiSource: CommandSource = {
  name: 'gitlab-ci',
  priority: 90,
  async extract(root) {
    for (const name of ['.gitlab-ci.yml', '.gitlab-ci.yaml']) {
      const text = await readSmall(path.join(root, name));
      if (text === undefined) continue;
      const commands = gitlabCiCommands(text);
      return commands.length > 0 ? setFromCi(commands, [name]) : undefined;
    }
    return undefined;
  },
};

// ---------------------------------------------------------------------------------------------
// polywave.config.json, Makefile, package.json

/**
 * polywave.config.json at the root, priority 200 (the explicit override). Reads the snake_case
 * keys `init` writes (`build_command`, `test_command`, `lint_command`, `format_command`) and the
 * camelCase keys the Go extractor reads (`buildCommand`, `testCommand`, `lintCommand`);
 * snake_case wins when both are set. Malformed JSON is skipped silently, as in Go.
 */
export const polywaveConfigSource: CommandSource = {
  name: 'polywave-config',
  priority: 200,
  async extract(root) {
    const text = await readSmall(path.join(root, 'polywave.config.json'));
    if (text === undefined) return undefined;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return undefined;
    }
    if (!isRecord(value)) return undefined;
    const pick = (...keys: string[]): string => {
      for (const key of keys) {
        const entry = value[key];
        if (typeof entry === 'string' && entry.trim() !== '') return entry;
      }
      return '';
    };
    const set = emptySet('', ['polywave.config.json']);
    set.build = pick('build_command', 'buildCommand');
    set.test.full = pick('test_command', 'testCommand');
    set.lint.check = pick('lint_command', 'lintCommand');
    set.format.check = pick('format_command', 'formatCommand');
    if (!hasAnyCommand(set)) return undefined;
    set.toolchain = toolchainFromCommands([set.build, set.test.full, set.lint.check].filter((command) => command !== ''));
    return set;
  },
};

/**
 * Pure: a CommandSet from Makefile text (toolchain `make`), or undefined when no target is
 * recognised. Targets are chosen by name (`build`, `test`, `lint`, `fmt-check`/`fmt`, …).
 */
export function commandsFromMakefile(text: string, source = 'Makefile'): CommandSet | undefined {
  const targets = parseMakefileTargets(text).map((target) => target.name);
  const set = emptySet('make', [source]);
  const make = (target: string | undefined): string => (target ? `make ${target}` : '');
  set.build = make(pickMakeTarget(targets, 'build'));
  set.test.full = make(pickMakeTarget(targets, 'test'));
  set.lint.check = make(pickMakeTarget(targets, 'lint'));
  set.lint.fix = make(['lint-fix', 'fix'].find((name) => targets.includes(name)));
  const formatCheck = ['fmt-check', 'format-check', 'check-format', 'check-fmt', 'fmtcheck', 'formatcheck'].find((name) => targets.includes(name));
  const formatFix = ['fmt', 'format'].find((name) => targets.includes(name));
  set.format.check = make(formatCheck);
  set.format.fix = make(formatFix);
  return hasAnyCommand(set) ? set : undefined;
}

/** Makefile at the root, priority 50. */
export const makefileSource: CommandSource = {
  name: 'makefile',
  priority: 50,
  async extract(root) {
    for (const name of ['GNUmakefile', 'makefile', 'Makefile']) {
      const text = await readSmall(path.join(root, name));
      if (text !== undefined) return commandsFromMakefile(text, name);
    }
    return undefined;
  },
};

/**
 * Pure: a CommandSet from package.json text (toolchain = package manager), or undefined when it
 * has no recognised script. Scripts run as `<pm> run <name>` like the Go extractor.
 */
export function commandsFromPackageJson(text: string, packageManager = 'npm'): CommandSet | undefined {
  let manifest: unknown;
  try {
    manifest = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isRecord(manifest) || !isRecord(manifest.scripts)) return undefined;
  const scripts = manifest.scripts;
  const pick = (names: string[]): string => {
    const name = names.find((candidate) => typeof scripts[candidate] === 'string' && !(candidate === 'test' && /no test specified/.test(scripts[candidate] as string)));
    return name ? `${packageManager} run ${name}` : '';
  };
  const set = emptySet(packageManager, ['package.json']);
  set.build = pick(['build', 'compile']);
  set.test.full = pick(['test', 'test:unit', 'test:e2e']);
  set.lint.check = pick(['lint', 'eslint', 'lint:check']);
  set.lint.fix = pick(['lint:fix', 'fix']);
  set.format.check = pick(['format:check', 'fmt:check', 'prettier:check', 'check-format']);
  set.format.fix = pick(['format', 'fmt', 'prettier', 'format:fix']);
  const workspaces = Array.isArray(manifest.workspaces) ? manifest.workspaces : isRecord(manifest.workspaces) && Array.isArray(manifest.workspaces.packages) ? manifest.workspaces.packages : [];
  const firstWorkspace = workspaces.find((entry): entry is string => typeof entry === 'string');
  if (set.test.full !== '' && firstWorkspace) set.test.focusedPattern = `${set.test.full} --workspace=${firstWorkspace}`;
  return hasAnyCommand(set) ? set : undefined;
}

/** package.json scripts at the root, priority 40. */
export const packageJsonSource: CommandSource = {
  name: 'package-json',
  priority: 40,
  async extract(root) {
    const text = await readSmall(path.join(root, 'package.json'));
    if (text === undefined) return undefined;
    const toolchain = detectToolchains({ files: ['package.json', ...(await lockFilesAt(root))], contents: { 'package.json': text } }).find((entry) => entry.kind === 'node');
    return commandsFromPackageJson(text, toolchain?.packageManager ?? 'npm');
  },
};

async function lockFilesAt(root: string): Promise<string[]> {
  const found: string[] = [];
  for (const name of ['pnpm-lock.yaml', 'yarn.lock', 'bun.lockb', 'bun.lock', 'package-lock.json']) {
    try {
      if ((await stat(path.join(root, name))).isFile()) found.push(name);
    } catch {
      // absent
    }
  }
  return found;
}

// ---------------------------------------------------------------------------------------------
// Language defaults (priority 0)

/**
 * Pure: the fallback set from the root toolchain (first of go, rust, node, python as in Go).
 * Go and Rust match the Go tool exactly; Node and Python use what {@link detectToolchains}
 * found instead of commands that would fail (`npm run build` without a build script).
 */
export function languageDefaults(toolchains: readonly Toolchain[]): CommandSet | undefined {
  const root = toolchains.filter((toolchain) => toolchain.directory === '.');
  for (const kind of ['go', 'rust', 'node', 'python'] as const) {
    const toolchain = root.find((entry) => entry.kind === kind);
    if (!toolchain) continue;
    const sources = toolchain.markers.slice(0, 1);
    if (kind === 'go') {
      const set = emptySet('go', sources);
      set.build = 'go build ./...';
      set.test = { full: 'go test ./...', focusedPattern: 'go test ./{package} -run {TestPrefix}' };
      set.lint.check = 'go vet ./...';
      set.format.fix = 'gofmt -w .';
      return set;
    }
    if (kind === 'rust') {
      const set = emptySet('rust', sources);
      set.build = 'cargo build';
      set.test = { full: 'cargo test', focusedPattern: 'cargo test {module_name}' };
      set.lint.check = 'cargo clippy -- -D warnings';
      set.format = { check: 'cargo fmt -- --check', fix: 'cargo fmt' };
      return set;
    }
    const commands = toolchain.commands;
    if (kind === 'node') {
      const set = emptySet('node', sources);
      set.build = commands.build ?? '';
      set.test = { full: commands.test ?? '', focusedPattern: commands.test ? `${commands.test} -- {module}` : '' };
      set.lint.check = commands.lint ?? '';
      set.format.check = commands.format ?? '';
      if (hasAnyCommand(set)) return set;
      continue;
    }
    const set = emptySet('python', sources);
    set.test = { full: commands.test ?? 'pytest', focusedPattern: `${commands.test ?? 'pytest'} {path}` };
    set.lint.check = commands.lint ?? 'ruff check .';
    set.format.fix = commands.format ? commands.format.replace(' --check', '') : 'black .';
    return set;
  }
  return undefined;
}

/** The language-defaults source (priority 0): root markers only. */
export const languageDefaultsSource: CommandSource = {
  name: 'language-defaults',
  priority: 0,
  async extract(root) {
    return languageDefaults(detectToolchains(await scanProject(root, { maxDepth: 0 })));
  },
};

/** The sources `extract-commands` uses, as registered by the Go tool plus GitLab CI. */
export const defaultCommandSources: readonly CommandSource[] = [githubActionsSource, gitlabCiSource, polywaveConfigSource, makefileSource, packageJsonSource, languageDefaultsSource];

/**
 * H2: runs every source on `root` and returns the set of the highest priority that found
 * something (single winner, no field-level merge — as in Go), or undefined when no toolchain
 * was detected. A source that fails (unreadable, malformed) is skipped, never thrown.
 */
export async function extractCommands(root: string, options: ExtractOptions = {}, sources: readonly CommandSource[] = defaultCommandSources): Promise<CommandSet | undefined> {
  const ordered = [...sources].sort((left, right) => right.priority - left.priority);
  for (const source of ordered) {
    let set: CommandSet | undefined;
    try {
      set = await source.extract(root, options);
    } catch {
      set = undefined;
    }
    if (set) return set;
  }
  return undefined;
}
