import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';

/** Toolchain kinds we recognise from marker files. */
export type ToolchainKind = 'go' | 'rust' | 'node' | 'python' | 'ruby' | 'make';

/** Package managers recognised from lock files (Node). */
export type PackageManager = 'npm' | 'pnpm' | 'yarn' | 'bun';

/** The commands a toolchain offers; a kind is absent when nothing sensible was found. */
export interface ToolchainCommands {
  build?: string;
  test?: string;
  lint?: string;
  typecheck?: string;
  /** Format in check mode (reports, does not rewrite) where the tool has one. */
  format?: string;
}

export type CommandKind = keyof ToolchainCommands;

/** The command kinds, in the order they are reported and combined. */
export const commandKinds: readonly CommandKind[] = ['build', 'test', 'lint', 'typecheck', 'format'];

/** One toolchain found in a repository. */
export interface Toolchain {
  kind: ToolchainKind;
  /** Directory relative to the scanned root, `/`-separated; `.` for the root itself. */
  directory: string;
  /** The files that identified it, relative to the root (marker first, then lock/config files). */
  markers: string[];
  /** Node only: from the nearest lock file (pnpm-lock.yaml, yarn.lock, bun.lock(b)), else `packageManager`, else npm. */
  packageManager?: PackageManager;
  commands: ToolchainCommands;
}

/**
 * What {@link detectToolchains} looks at: every file path (relative to the root, `/`-separated)
 * within the scan depth, and the text of the files it needs to read (see {@link filesToRead}).
 */
export interface ProjectSnapshot {
  files: readonly string[];
  contents: Readonly<Record<string, string>>;
}

/** Options of {@link scanProject}. */
export interface ScanOptions {
  /** Directory depth below the root that is scanned (root = 0). Default 2. */
  maxDepth?: number;
  /** Most files listed (protects against huge trees). Default 20 000. */
  maxFiles?: number;
  /** Largest file whose text is read. Default 1 MiB. */
  maxReadBytes?: number;
}

/** Directories never scanned: dependencies, build output, VCS data, test fixtures. */
export const skippedDirectories: ReadonlySet<string> = new Set(['node_modules', '.git', 'vendor', 'target', 'dist', 'testdata', '__pycache__', 'venv', '.venv']);

const markerFiles: Readonly<Record<string, ToolchainKind>> = {
  'go.mod': 'go',
  'Cargo.toml': 'rust',
  'package.json': 'node',
  'pyproject.toml': 'python',
  'setup.py': 'python',
  'requirements.txt': 'python',
  Gemfile: 'ruby',
  Makefile: 'make',
  makefile: 'make',
  GNUmakefile: 'make',
};

const kindOrder: readonly ToolchainKind[] = ['go', 'rust', 'node', 'python', 'ruby', 'make'];

/** True for a file name whose text {@link detectToolchains} needs. */
export function filesToRead(fileName: string): boolean {
  return (
    fileName in markerFiles ||
    fileName === 'setup.cfg' ||
    fileName === 'tox.ini' ||
    fileName === 'pnpm-workspace.yaml' ||
    /^requirements[-_.\w]*\.txt$/.test(fileName)
  );
}

/**
 * Lists `root` down to `maxDepth` (skipping {@link skippedDirectories} and other hidden
 * directories) and reads the marker files. Unreadable entries are skipped, never thrown.
 */
export async function scanProject(root: string, options: ScanOptions = {}): Promise<ProjectSnapshot> {
  const maxDepth = options.maxDepth ?? 2;
  const maxFiles = options.maxFiles ?? 20_000;
  const maxReadBytes = options.maxReadBytes ?? 1024 * 1024;
  const files: string[] = [];
  const contents: Record<string, string> = {};
  const walk = async (relative: string, depth: number): Promise<void> => {
    let entries;
    try {
      entries = await readdir(relative === '.' ? root : path.join(root, relative), { withFileTypes: true });
    } catch {
      return;
    }
    entries.sort((left, right) => (left.name < right.name ? -1 : left.name > right.name ? 1 : 0));
    const subdirectories: string[] = [];
    for (const entry of entries) {
      if (files.length >= maxFiles) return;
      const child = relative === '.' ? entry.name : `${relative}/${entry.name}`;
      if (entry.isDirectory()) {
        if (!skippedDirectories.has(entry.name) && !entry.name.startsWith('.')) subdirectories.push(child);
      } else if (entry.isFile()) {
        files.push(child);
        if (filesToRead(entry.name)) {
          const text = await readSmallText(path.join(root, child), maxReadBytes);
          if (text !== undefined) contents[child] = text;
        }
      }
    }
    if (depth < maxDepth) for (const directory of subdirectories) await walk(directory, depth + 1);
  };
  await walk('.', 0);
  return { files, contents };
}

async function readSmallText(filePath: string, maxBytes: number): Promise<string | undefined> {
  try {
    if ((await stat(filePath)).size > maxBytes) return undefined;
    return (await readFile(filePath, 'utf8')).replace(/^\uFEFF/, '');
  } catch {
    return undefined;
  }
}

/**
 * The toolchains of the repository at `repoDir`: scans it (depth ≤ 2) and classifies the
 * markers. Several toolchains for mixed repositories, each with its own directory.
 */
export async function detectToolchain(repoDir: string, options: ScanOptions = {}): Promise<Toolchain[]> {
  return detectToolchains(await scanProject(repoDir, options));
}

/**
 * Pure: the toolchains found in a snapshot, ordered by directory (root first) then kind.
 * A sub-directory package covered by a workspace of the same kind higher up (npm/yarn/pnpm
 * workspaces, a Cargo `[workspace]`, a uv workspace) is not reported separately. A Makefile is
 * reported only when it has a recognised target.
 */
export function detectToolchains(snapshot: ProjectSnapshot): Toolchain[] {
  const fileSet = new Set(snapshot.files);
  const directories = new Map<string, string[]>();
  for (const file of snapshot.files) {
    const directory = dirnameOf(file);
    const list = directories.get(directory) ?? [];
    list.push(baseOf(file));
    directories.set(directory, list);
  }
  const toolchains: Toolchain[] = [];
  const sortedDirectories = [...directories.keys()].sort(compareDirectories);
  for (const directory of sortedDirectories) {
    const names = new Set(directories.get(directory));
    const context: DirectoryContext = { directory, names, fileSet, snapshot };
    const kinds = new Set<ToolchainKind>();
    for (const name of names) {
      const kind = markerFiles[name];
      if (kind) kinds.add(kind);
    }
    for (const kind of kindOrder) {
      if (!kinds.has(kind)) continue;
      if (directory !== '.' && coveredByWorkspace(kind, directory, snapshot, fileSet)) continue;
      const toolchain = detectors[kind](context);
      if (toolchain) toolchains.push(toolchain);
    }
  }
  return toolchains;
}

interface DirectoryContext {
  directory: string;
  names: ReadonlySet<string>;
  fileSet: ReadonlySet<string>;
  snapshot: ProjectSnapshot;
}

const detectors: Record<ToolchainKind, (context: DirectoryContext) => Toolchain | undefined> = {
  go: (context) => ({
    kind: 'go',
    directory: context.directory,
    markers: [join(context.directory, 'go.mod')],
    commands: { build: 'go build ./...', test: 'go test ./...', lint: 'go vet ./...', format: 'gofmt -l .' },
  }),
  rust: (context) => ({
    kind: 'rust',
    directory: context.directory,
    markers: [join(context.directory, 'Cargo.toml')],
    commands: { build: 'cargo build', test: 'cargo test', lint: 'cargo clippy -- -D warnings', format: 'cargo fmt --check' },
  }),
  node: detectNode,
  python: detectPython,
  ruby: (context) => {
    const has = (name: string): boolean => context.names.has(name) || [...context.fileSet].some((file) => file.startsWith(`${join(context.directory, name)}/`));
    const commands: ToolchainCommands = { test: has('.rspec') || has('spec') ? 'bundle exec rspec' : 'bundle exec rake test' };
    if (context.names.has('.rubocop.yml')) commands.lint = 'bundle exec rubocop';
    return { kind: 'ruby', directory: context.directory, markers: [join(context.directory, 'Gemfile')], commands };
  },
  make: detectMake,
};

function detectNode(context: DirectoryContext): Toolchain | undefined {
  const { directory, names } = context;
  const manifestPath = join(directory, 'package.json');
  const manifest = parseJsonObject(context.snapshot.contents[manifestPath]);
  const scripts = stringRecord(manifest?.scripts);
  const markers = [manifestPath];
  const manager = packageManagerFor(directory, manifest, context);
  if (manager.lockFile) markers.push(manager.lockFile);
  const packageManager = manager.packageManager;
  const run = (script: string): string => `${packageManager} run ${script}`;
  const exec = execPrefix[packageManager];
  const commands: ToolchainCommands = {};

  if (scripts.build !== undefined) commands.build = run('build');
  const testScript = scripts.test;
  if (testScript !== undefined && !/no test specified/.test(testScript)) commands.test = packageManager === 'bun' ? 'bun run test' : `${packageManager} test`;
  else {
    const dependencies = { ...stringRecord(manifest?.dependencies), ...stringRecord(manifest?.devDependencies) };
    if ('vitest' in dependencies) commands.test = `${exec} vitest run`;
    else if ('jest' in dependencies) commands.test = `${exec} jest`;
    else if ('mocha' in dependencies) commands.test = `${exec} mocha`;
  }
  const typecheckScript = ['typecheck', 'type-check', 'check-types', 'tsc'].find((name) => scripts[name] !== undefined);
  if (typecheckScript) commands.typecheck = run(typecheckScript);
  else if (names.has('tsconfig.json')) commands.typecheck = `${exec} tsc --noEmit`;
  // Without a build script a TypeScript project's compile check is its build gate.
  if (commands.build === undefined && commands.typecheck !== undefined) commands.build = commands.typecheck;

  if (scripts.lint !== undefined) commands.lint = run('lint');
  else if ([...names].some((name) => /^eslint\.config\.(?:js|mjs|cjs|ts|mts|cts)$/.test(name) || /^\.eslintrc(?:\.(?:js|cjs|json|yml|yaml))?$/.test(name)) || manifest?.eslintConfig !== undefined) {
    commands.lint = `${exec} eslint .`;
  } else if (names.has('biome.json') || names.has('biome.jsonc')) commands.lint = `${exec} biome check .`;

  const formatScript = ['format:check', 'fmt:check', 'prettier:check', 'check-format', 'format'].find((name) => scripts[name] !== undefined);
  if (formatScript) commands.format = run(formatScript);
  else if ([...names].some((name) => /^\.prettierrc(?:\.\w+)?$/.test(name) || /^prettier\.config\.\w+$/.test(name)) || manifest?.prettier !== undefined) {
    commands.format = `${exec} prettier --check .`;
  }
  return { kind: 'node', directory, markers, packageManager, commands };
}

const execPrefix: Record<PackageManager, string> = { npm: 'npx', pnpm: 'pnpm exec', yarn: 'yarn', bun: 'bunx' };

const lockFiles: ReadonlyArray<[string, PackageManager]> = [
  ['pnpm-lock.yaml', 'pnpm'],
  ['yarn.lock', 'yarn'],
  ['bun.lockb', 'bun'],
  ['bun.lock', 'bun'],
  ['package-lock.json', 'npm'],
];

/** The nearest lock file in the directory or an ancestor (workspace roots hold the lock file). */
function packageManagerFor(directory: string, manifest: Record<string, unknown> | undefined, context: DirectoryContext): { packageManager: PackageManager; lockFile?: string } {
  for (const candidate of ancestorsOf(directory)) {
    for (const [lockFile, packageManager] of lockFiles) {
      const lockPath = join(candidate, lockFile);
      if (context.fileSet.has(lockPath)) return { packageManager, lockFile: lockPath };
    }
  }
  const declared = typeof manifest?.packageManager === 'string' ? /^(npm|pnpm|yarn|bun)@/.exec(manifest.packageManager)?.[1] : undefined;
  return { packageManager: (declared as PackageManager | undefined) ?? 'npm' };
}

function detectPython(context: DirectoryContext): Toolchain {
  const { directory, names, snapshot } = context;
  const text = (name: string): string => snapshot.contents[join(directory, name)] ?? '';
  const markers = ['pyproject.toml', 'setup.py', 'requirements.txt'].filter((name) => names.has(name)).map((name) => join(directory, name));
  const pyproject = text('pyproject.toml');
  const setupCfg = text('setup.cfg');
  const toxIni = text('tox.ini');
  const requirements = [...names]
    .filter((name) => /^requirements[-_.\w]*\.txt$/.test(name))
    .map((name) => text(name))
    .join('\n');
  // Listed as a dependency: a requirements line, a PEP 621 string ("ruff>=0.4") or a Poetry key (ruff = "^0.4").
  const listed = (tool: string): boolean =>
    new RegExp(`^\\s*${tool}\\b`, 'm').test(requirements) || new RegExp(`["']${tool}(?:[<>=~!\\[; "']|$)`, 'm').test(pyproject) || new RegExp(`^\\s*${tool}\\s*=`, 'm').test(pyproject);
  const section = (source: string, name: string): boolean => new RegExp(`^\\[${name.replace(/\./g, '\\.')}(?:\\]|\\.)`, 'm').test(source);

  let prefix = '';
  if (names.has('uv.lock')) {
    prefix = 'uv run ';
    markers.push(join(directory, 'uv.lock'));
  } else if (names.has('poetry.lock')) {
    prefix = 'poetry run ';
    markers.push(join(directory, 'poetry.lock'));
  }
  const commands: ToolchainCommands = { test: `${prefix}pytest` };
  const ruff = names.has('ruff.toml') || names.has('.ruff.toml') || section(pyproject, 'tool.ruff') || listed('ruff');
  const flake8 = names.has('.flake8') || section(setupCfg, 'flake8') || section(toxIni, 'flake8') || listed('flake8');
  const mypy = names.has('mypy.ini') || names.has('.mypy.ini') || section(pyproject, 'tool.mypy') || section(setupCfg, 'mypy') || listed('mypy');
  const black = section(pyproject, 'tool.black') || listed('black');
  if (ruff) commands.lint = `${prefix}ruff check .`;
  else if (flake8) commands.lint = `${prefix}flake8`;
  if (mypy) commands.typecheck = `${prefix}mypy .`;
  if (black) commands.format = `${prefix}black --check .`;
  else if (ruff && (section(pyproject, 'tool.ruff.format') || names.has('ruff.toml') || names.has('.ruff.toml'))) commands.format = `${prefix}ruff format --check .`;
  return { kind: 'python', directory, markers, commands };
}

function detectMake(context: DirectoryContext): Toolchain | undefined {
  const makefileName = ['GNUmakefile', 'makefile', 'Makefile'].find((name) => context.names.has(name))!;
  const makefilePath = join(context.directory, makefileName);
  const targets = parseMakefileTargets(context.snapshot.contents[makefilePath] ?? '').map((target) => target.name);
  const commands: ToolchainCommands = {};
  for (const kind of commandKinds) {
    const target = pickMakeTarget(targets, kind);
    if (target) commands[kind] = `make ${target}`;
  }
  if (Object.keys(commands).length === 0) return undefined;
  return { kind: 'make', directory: context.directory, markers: [makefilePath], commands };
}

/** A target of a Makefile, in file order. */
export interface MakefileTarget {
  name: string;
  dependencies: string[];
  /** Recipe lines (tab-indented), with `@`/`-` prefixes removed. */
  recipe: string[];
}

/**
 * Pure: the explicit targets of a Makefile — not special targets (`.PHONY`), pattern rules
 * (`%`), variable assignments (`X := y`, `X ?= y`) or targets built from variables.
 */
export function parseMakefileTargets(text: string): MakefileTarget[] {
  const targets: MakefileTarget[] = [];
  const byName = new Map<string, MakefileTarget>();
  let current: MakefileTarget[] = [];
  let inDefine = false;
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  for (let index = 0; index < lines.length; index += 1) {
    let line = lines[index]!;
    while (line.endsWith('\\') && index + 1 < lines.length) {
      index += 1;
      line = `${line.slice(0, -1)} ${lines[index]!.trim()}`;
    }
    if (inDefine) {
      if (/^\s*endef\b/.test(line)) inDefine = false;
      continue;
    }
    if (line.startsWith('\t')) {
      const command = line.trim().replace(/^[@+-]+/, '').trim();
      if (command !== '' && !command.startsWith('#')) for (const target of current) target.recipe.push(command);
      continue;
    }
    current = [];
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    if (/^(?:override\s+|export\s+)?define\b/.test(trimmed)) {
      inDefine = true;
      continue;
    }
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const head = line.slice(0, colon);
    // `X = a:b`, `X := y`, `X ::= y` are variable assignments, not rules.
    if (head.includes('=')) continue;
    let rest = line.slice(colon + 1);
    if (rest.startsWith(':')) rest = rest.slice(1);
    if (rest.startsWith('=')) continue;
    const [dependencyPart, inlineRecipe] = splitOnce(rest.split('#')[0]!, ';');
    // `target: VAR = value` sets a target-specific variable: no dependencies, no recipe.
    const targetVariable = /^\s*[\w.-]+\s*[:+?!]?=/.test(dependencyPart);
    for (const name of head.trim().split(/\s+/)) {
      if (name === '' || name.startsWith('.') || name.includes('%') || name.includes('$') || /^(?:export|override|include|-include|sinclude|ifeq|ifneq|ifdef|ifndef|else|endif|vpath|unexport)$/.test(name)) continue;
      let target = byName.get(name);
      if (!target) {
        target = { name, dependencies: [], recipe: [] };
        byName.set(name, target);
        targets.push(target);
      }
      if (targetVariable) continue;
      target.dependencies.push(...dependencyPart.trim().split(/\s+/).filter((dependency) => dependency !== '' && dependency !== '|'));
      if (inlineRecipe !== undefined && inlineRecipe.trim() !== '') target.recipe.push(inlineRecipe.trim());
      current.push(target);
    }
  }
  return targets;
}

const makeTargetPreferences: Record<CommandKind, { exact: string[]; pattern?: RegExp; exclude?: RegExp }> = {
  build: { exact: ['build', 'compile', 'all'], pattern: /^build\b|\bbuild$/, exclude: /docker|image|release|clean|dist|docs?\b/ },
  test: { exact: ['test', 'tests', 'check', 'test-all', 'test-unit', 'unit-test', 'unit'], pattern: /^tests?\b|\btests?$/, exclude: /docker|e2e|integration|bench|cover|watch/ },
  lint: { exact: ['lint', 'vet', 'check-lint'], pattern: /^lint\b|\blint$/, exclude: /fix/ },
  typecheck: { exact: ['typecheck', 'type-check', 'types', 'mypy', 'tsc'] },
  format: { exact: ['fmt-check', 'format-check', 'check-format', 'check-fmt', 'fmtcheck', 'formatcheck', 'fmt', 'format'] },
};

/** The best target name of a Makefile for a kind of command, or undefined. */
export function pickMakeTarget(targets: readonly string[], kind: CommandKind): string | undefined {
  const preference = makeTargetPreferences[kind];
  for (const name of preference.exact) if (targets.includes(name)) return name;
  if (preference.pattern) {
    return targets.find((name) => preference.pattern!.test(name.toLowerCase()) && !(preference.exclude?.test(name.toLowerCase()) ?? false));
  }
  return undefined;
}

function coveredByWorkspace(kind: ToolchainKind, directory: string, snapshot: ProjectSnapshot, fileSet: ReadonlySet<string>): boolean {
  for (const ancestor of ancestorsOf(dirnameOf(`${directory}/x`)).slice(1)) {
    if (kind === 'node') {
      const manifest = parseJsonObject(snapshot.contents[join(ancestor, 'package.json')]);
      if (manifest?.workspaces !== undefined || fileSet.has(join(ancestor, 'pnpm-workspace.yaml'))) return true;
    } else if (kind === 'rust') {
      if (/^\[workspace\]/m.test(snapshot.contents[join(ancestor, 'Cargo.toml')] ?? '')) return true;
    } else if (kind === 'python') {
      if (/^\[tool\.uv\.workspace\]/m.test(snapshot.contents[join(ancestor, 'pyproject.toml')] ?? '')) return true;
    }
  }
  return false;
}

/**
 * The project-wide commands for a set of toolchains (what `init` writes to polywave.config.json).
 * Per kind: a root Makefile target wins (it is the project's own entry point); otherwise the
 * toolchains' commands are chained with `&&`, a sub-directory one as `(cd <dir> && <command>)`.
 */
export function combineCommands(toolchains: readonly Toolchain[]): ToolchainCommands {
  const combined: ToolchainCommands = {};
  for (const kind of commandKinds) {
    const rootMake = toolchains.find((toolchain) => toolchain.kind === 'make' && toolchain.directory === '.' && toolchain.commands[kind]);
    if (rootMake) {
      combined[kind] = rootMake.commands[kind]!;
      continue;
    }
    const parts: string[] = [];
    for (const toolchain of toolchains) {
      const command = toolchain.commands[kind];
      if (!command) continue;
      // A sub-directory Makefile stands in for the other toolchains of its directory.
      if (toolchain.kind !== 'make' && toolchains.some((other) => other.kind === 'make' && other.directory === toolchain.directory && other.commands[kind])) continue;
      const part = toolchain.directory === '.' ? command : `(cd ${shellQuote(toolchain.directory)} && ${command})`;
      if (!parts.includes(part)) parts.push(part);
    }
    if (parts.length > 0) combined[kind] = parts.join(' && ');
  }
  return combined;
}

/** Quotes a word for sh when it holds anything beyond a safe set of characters. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_./:@%+,=-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

function parseJsonObject(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function stringRecord(value: unknown): Record<string, string> {
  const record: Record<string, string> = {};
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return record;
  for (const [key, entry] of Object.entries(value)) if (typeof entry === 'string') record[key] = entry;
  return record;
}

function splitOnce(text: string, separator: string): [string, string | undefined] {
  const index = text.indexOf(separator);
  return index < 0 ? [text, undefined] : [text.slice(0, index), text.slice(index + 1)];
}

function dirnameOf(file: string): string {
  const index = file.lastIndexOf('/');
  return index < 0 ? '.' : file.slice(0, index);
}

function baseOf(file: string): string {
  return file.slice(file.lastIndexOf('/') + 1);
}

function join(directory: string, name: string): string {
  return directory === '.' ? name : `${directory}/${name}`;
}

/** `a/b` → [`a/b`, `a`, `.`]. */
function ancestorsOf(directory: string): string[] {
  const result: string[] = [];
  let current = directory;
  for (;;) {
    result.push(current);
    if (current === '.') return result;
    current = dirnameOf(current);
  }
}

function compareDirectories(left: string, right: string): number {
  if (left === right) return 0;
  if (left === '.') return -1;
  if (right === '.') return 1;
  return left < right ? -1 : 1;
}
