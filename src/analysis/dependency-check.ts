import { execFile } from 'node:child_process';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { cargoDependencies, goImports, goModule, packageNameOf, readSmall, scriptImports } from './imports.js';
import { codeFamilyOf, lexSource } from './source-lexer.js';

/**
 * `check-deps` (E21A-adjacent): before a wave runs, are the third-party packages its files
 * import available (declared and locked), and do the lock files agree with the declarations?
 * TypeScript/JavaScript (package.json + package-lock.json/pnpm-lock.yaml/yarn.lock), Go (go.mod +
 * go.sum), Python (requirements*.txt / pyproject.toml / poetry.lock) and Rust (Cargo.toml +
 * Cargo.lock). Go's tool checks Go files only.
 */

/** A package a file imports that nothing declares (Go's `MissingDep`). */
export interface MissingDependency {
  agent: string;
  package: string;
  required_by: string;
  /** The version a lock file holds although no manifest declares it ('' when none). */
  available_version: string;
}

/** The declared and the locked version disagree (Go's `VersionConflict`). */
export interface VersionConflict {
  agents: string[];
  package: string;
  /** `[declared, locked]`, e.g. `["^2.0.0 (package.json)", "1.4.2 (package-lock.json)"]`. */
  versions: string[];
  resolution_needed: boolean;
}

export interface DependencyReport {
  missing_deps: MissingDependency[];
  version_conflicts: VersionConflict[];
  recommendations: string[];
}

/** One file to check: repository-relative path, its agent, the repository directory. */
export interface DependencyFile {
  file: string;
  agent: string;
  root: string;
}

export interface CheckDependenciesOptions {
  files: readonly DependencyFile[];
  env?: Readonly<Record<string, string | undefined>>;
}

// ---------------------------------------------------------------------------------------------
// What each ecosystem declares and locks

interface NodeFacts {
  declared: Map<string, string>;
  locked: Map<string, { version: string; source: string }>;
  lockText: string;
  lockName?: string;
}

function nodeFacts(root: string): NodeFacts {
  const declared = new Map<string, string>();
  const manifestText = readSmall(path.join(root, 'package.json'));
  if (manifestText) {
    try {
      const manifest = JSON.parse(manifestText) as Record<string, unknown>;
      if (typeof manifest.name === 'string') declared.set(manifest.name, '*');
      for (const key of ['dependencies', 'devDependencies', 'peerDependencies', 'optionalDependencies']) {
        const section = manifest[key];
        if (section && typeof section === 'object') for (const [name, range] of Object.entries(section)) if (!declared.has(name)) declared.set(name, String(range));
      }
      const workspaces = manifest.workspaces;
      if (Array.isArray(workspaces) || (workspaces && typeof workspaces === 'object')) declared.set('\0workspaces', '*');
    } catch {
      // unparsable: declares nothing
    }
  }
  const locked = new Map<string, { version: string; source: string }>();
  const packageLock = readSmall(path.join(root, 'package-lock.json'));
  if (packageLock) {
    try {
      const lock = JSON.parse(packageLock) as { packages?: Record<string, { version?: string }>; dependencies?: Record<string, { version?: string }> };
      for (const [key, entry] of Object.entries(lock.packages ?? {})) {
        const match = /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)$/.exec(key);
        if (match && !key.slice(0, match.index).includes('node_modules') && entry.version) locked.set(match[1]!, { version: entry.version, source: 'package-lock.json' });
      }
      for (const [name, entry] of Object.entries(lock.dependencies ?? {})) if (!locked.has(name) && entry.version) locked.set(name, { version: entry.version, source: 'package-lock.json' });
    } catch {
      // unparsable lock: nothing locked
    }
  }
  const otherLock = ['pnpm-lock.yaml', 'yarn.lock', 'bun.lock'].map((name) => ({ name, text: readSmall(path.join(root, name)) })).find((lock) => lock.text !== undefined);
  return { declared, locked, lockText: otherLock?.text ?? '', ...(packageLock ? { lockName: 'package-lock.json' } : otherLock ? { lockName: otherLock.name } : {}) };
}

/** Major version of a semver range's lowest bound (`^2.1.0` → 2, `~1` → 1); undefined for tags, URLs, `*`. */
function rangeMajor(range: string): number | undefined {
  const match = /^\s*(?:[\^~]|>=?|=)?\s*v?(\d+)(?:\.|$|\s)/.exec(range);
  if (!match || /\|\||\s-\s|^\s*[<*x]/i.test(range)) return undefined;
  return Number(match[1]);
}

function goSumModules(root: string): Map<string, string> {
  const modules = new Map<string, string>();
  for (const line of (readSmall(path.join(root, 'go.sum')) ?? '').split('\n')) {
    const [module, version] = line.trim().split(/\s+/);
    if (module && version) modules.set(module, version.replace(/\/go\.mod$/, ''));
  }
  return modules;
}

function normalizePython(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, '-');
}

/** Import names whose distribution has another name. */
const pythonDistributions: Record<string, string> = {
  yaml: 'pyyaml', PIL: 'pillow', cv2: 'opencv-python', sklearn: 'scikit-learn', bs4: 'beautifulsoup4', dateutil: 'python-dateutil',
  jwt: 'pyjwt', dotenv: 'python-dotenv', magic: 'python-magic', serial: 'pyserial', Crypto: 'pycryptodome', OpenSSL: 'pyopenssl',
  attr: 'attrs', google: 'protobuf', pkg_resources: 'setuptools', setuptools: 'setuptools', git: 'gitpython', zmq: 'pyzmq', usb: 'pyusb',
  docx: 'python-docx', pptx: 'python-pptx', multipart: 'python-multipart', jose: 'python-jose', slugify: 'python-slugify', lxml: 'lxml',
};

function pythonDeclared(root: string): Map<string, { version: string; source: string }> {
  const declared = new Map<string, { version: string; source: string }>();
  const add = (raw: string, source: string) => {
    const match = /^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*([<>=!~^][^;#]*)?/.exec(raw);
    if (match && !declared.has(normalizePython(match[1]!))) declared.set(normalizePython(match[1]!), { version: (match[2] ?? '').trim(), source });
  };
  for (const name of ['requirements.txt', 'requirements-dev.txt', 'requirements_dev.txt', 'dev-requirements.txt', 'requirements-test.txt']) {
    for (const line of (readSmall(path.join(root, name)) ?? '').split('\n')) if (!/^\s*(#|-|$)/.test(line)) add(line, name);
  }
  const pyproject = readSmall(path.join(root, 'pyproject.toml')) ?? '';
  for (const match of pyproject.matchAll(/^\s*(?:dependencies|requires|[\w-]+)\s*=\s*\[([\s\S]*?)\]/gm)) for (const item of match[1]!.matchAll(/["']([^"']+)["']/g)) add(item[1]!, 'pyproject.toml');
  let inPoetry = false;
  for (const line of pyproject.split('\n')) {
    const table = /^\s*\[([^\]]+)\]/.exec(line);
    if (table) inPoetry = /^tool\.poetry\.(?:dev-|group\.[\w-]+\.)?dependencies$/.test(table[1]!.trim());
    else if (inPoetry) {
      const key = /^\s*([A-Za-z0-9._-]+)\s*=/.exec(line)?.[1];
      if (key && key !== 'python') add(key, 'pyproject.toml');
    }
  }
  const projectName = /^\s*name\s*=\s*["']([^"']+)["']/m.exec(pyproject)?.[1];
  if (projectName) add(projectName, 'pyproject.toml');
  const poetryLock = readSmall(path.join(root, 'poetry.lock')) ?? readSmall(path.join(root, 'uv.lock')) ?? '';
  for (const match of poetryLock.matchAll(/\[\[package\]\]\s*\nname\s*=\s*"([^"]+)"\s*\nversion\s*=\s*"([^"]+)"/g)) {
    if (!declared.has(normalizePython(match[1]!))) declared.set(normalizePython(match[1]!), { version: match[2]!, source: 'lock' });
  }
  return declared;
}

/** Standard modules assumed when no python3 can list them (the common ones). */
const fallbackPythonStdlib = new Set(
  ('__future__ abc argparse array ast asyncio atexit base64 binascii bisect builtins calendar codecs collections colorsys concurrent configparser contextlib copy csv ctypes ' +
    'dataclasses datetime decimal difflib dis doctest email enum errno faulthandler filecmp fnmatch fractions functools gc getpass gettext glob graphlib gzip hashlib heapq hmac html http ' +
    'importlib inspect io ipaddress itertools json keyword linecache locale logging math mimetypes mmap multiprocessing numbers operator optparse os pathlib pdb pickle pkgutil platform ' +
    'posixpath pprint queue random re reprlib resource runpy sched secrets select selectors shlex shutil signal site socket sqlite3 ssl stat statistics string struct subprocess sys ' +
    'sysconfig tarfile tempfile textwrap threading time timeit token tokenize traceback tracemalloc types typing unicodedata unittest urllib uuid venv warnings weakref webbrowser ' +
    'wsgiref xml zipfile zlib zoneinfo').split(' '),
);

let pythonStdlib: Promise<Set<string> | undefined> | undefined;

/** The running python3's standard library module names (3.10+), undefined without one. */
function pythonStandardLibrary(env?: Readonly<Record<string, string | undefined>>): Promise<Set<string> | undefined> {
  pythonStdlib ??= new Promise((resolve) => {
    // isolated, from / (not the temp directory, whose parents a version manager would search: X24): no module of the working directory can shadow the standard library's (X21-12)
    execFile('python3', ['-I', '-c', 'import sys; print("\\n".join(sorted(sys.stdlib_module_names)))'], { timeout: 10_000, env: env as NodeJS.ProcessEnv, cwd: '/' }, (error, stdout) => {
      resolve(error ? undefined : new Set(stdout.split('\n').map((line) => line.trim()).filter(Boolean)));
    });
  });
  return pythonStdlib;
}

/** Top-level modules a Python source imports absolutely (`import a.b`, `from a import b`). */
export function pythonImports(filePath: string, text: string): string[] {
  const code = lexSource(filePath, text).code;
  const modules = new Set<string>();
  for (const match of code.matchAll(/^[ \t]*import[ \t]+([^\n#]+)/gm)) {
    for (const part of match[1]!.split(',')) {
      const name = part.trim().split(/\s+/)[0]!.split('.')[0]!;
      if (/^[A-Za-z_]\w*$/.test(name)) modules.add(name);
    }
  }
  for (const match of code.matchAll(/^[ \t]*from[ \t]+([A-Za-z_][\w.]*)[ \t]+import\b/gm)) modules.add(match[1]!.split('.')[0]!);
  return [...modules];
}

function cargoLockPackages(root: string): Map<string, string> {
  const packages = new Map<string, string>();
  for (const match of (readSmall(path.join(root, 'Cargo.lock')) ?? '').matchAll(/\[\[package\]\]\s*\nname\s*=\s*"([^"]+)"\s*\nversion\s*=\s*"([^"]+)"/g)) packages.set(match[1]!.replace(/-/g, '_'), match[2]!);
  return packages;
}

// ---------------------------------------------------------------------------------------------

/**
 * Checks the given files (missing ones, e.g. `action: new` files not written yet, are skipped):
 * every imported third-party package must be declared by the repository's manifest or present
 * in its lock file; a declared range whose major version differs from the locked version is a
 * conflict (`npm install` / `go mod tidy` needed). Deterministic order.
 */
export async function checkDependencies(options: CheckDependenciesOptions): Promise<DependencyReport> {
  const missing = new Map<string, MissingDependency>();
  const conflicts = new Map<string, VersionConflict>();
  const builtins = new Set(builtinModules);
  const nodeCache = new Map<string, NodeFacts>();
  const localPython = new Map<string, Set<string>>();

  const addMissing = (entry: MissingDependency) => missing.set(`${entry.agent}\0${entry.package}\0${entry.required_by}`, entry);
  const addConflict = (name: string, agent: string, versions: string[]) => {
    const existing = conflicts.get(name);
    if (existing) {
      if (!existing.agents.includes(agent)) existing.agents.push(agent);
    } else conflicts.set(name, { agents: [agent], package: name, versions, resolution_needed: true });
  };

  for (const { file, agent, root } of [...options.files].sort((a, b) => a.file.localeCompare(b.file))) {
    const absolute = path.resolve(root, file);
    const text = readSmall(absolute);
    if (text === undefined) continue;
    const family = codeFamilyOf(file);
    if (family === 'typescript' || family === 'javascript') {
      const facts = nodeCache.get(root) ?? nodeFacts(root);
      nodeCache.set(root, facts);
      for (const specifier of scriptImports(file, text)) {
        if (/^[./#~]/.test(specifier) || specifier.startsWith('@/') || specifier.startsWith('node:') || builtins.has(specifier) || builtins.has(specifier.split('/')[0]!)) continue;
        if (/^[a-z][a-z0-9+.-]*:/i.test(specifier)) continue; // URL / protocol imports (npm:, https:, virtual:)
        const name = packageNameOf(specifier);
        const range = facts.declared.get(name);
        const lockedEntry = facts.locked.get(name);
        const inOtherLock = facts.lockText !== '' && new RegExp(`(^|["'/\\s])${name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}@`, 'm').test(facts.lockText);
        if (range === undefined && lockedEntry === undefined && !inOtherLock) {
          if (facts.declared.has('\0workspaces')) continue; // a workspace package may be declared by a sibling
          addMissing({ agent, package: name, required_by: file, available_version: '' });
          continue;
        }
        if (range !== undefined && lockedEntry !== undefined) {
          const declaredMajor = rangeMajor(range);
          const lockedMajor = rangeMajor(lockedEntry.version);
          if (declaredMajor !== undefined && lockedMajor !== undefined && declaredMajor !== lockedMajor) addConflict(name, agent, [`${range} (package.json)`, `${lockedEntry.version} (${lockedEntry.source})`]);
        }
      }
    } else if (family === 'go') {
      const module = goModule(path.dirname(absolute), root);
      const sums = goSumModules(root);
      const within = (importPath: string, prefix: string) => importPath === prefix || importPath.startsWith(`${prefix}/`);
      for (const importPath of goImports(text)) {
        const first = importPath.split('/')[0]!;
        if (!first.includes('.') || importPath === 'C') continue;
        if (module && module.module !== '' && within(importPath, module.module)) continue;
        if (module?.replaces.some((replaced) => within(importPath, replaced))) continue;
        const required = module?.requires.filter((candidate) => within(importPath, candidate)).sort((a, b) => b.length - a.length)[0];
        const summed = [...sums.keys()].filter((candidate) => within(importPath, candidate)).sort((a, b) => b.length - a.length)[0];
        if (required === undefined) {
          addMissing({ agent, package: summed ?? importPath, required_by: file, available_version: summed ? sums.get(summed)! : '' });
        } else if (summed === undefined && sums.size > 0) {
          addConflict(required, agent, [`${required} required by go.mod`, 'no go.sum entry (run go mod tidy)']);
        }
      }
    } else if (family === 'python') {
      const stdlib = await pythonStandardLibrary(options.env);
      const declared = pythonDeclared(root);
      let local = localPython.get(root);
      if (!local) {
        local = new Set<string>();
        localPython.set(root, local);
      }
      for (const module of pythonImports(file, text)) {
        if ((stdlib ?? fallbackPythonStdlib).has(module)) continue;
        if (local.has(module)) continue;
        const onDisk = [path.join(root, `${module}.py`), path.join(root, module), path.join(root, 'src', module), path.join(root, 'src', `${module}.py`), path.join(path.dirname(absolute), `${module}.py`), path.join(path.dirname(absolute), module)];
        if (onDisk.some((candidate) => readSmall(candidate) !== undefined || readSmall(path.join(candidate, '__init__.py')) !== undefined)) {
          local.add(module);
          continue;
        }
        const distribution = normalizePython(pythonDistributions[module] ?? module);
        if (declared.has(distribution) || declared.has(normalizePython(module))) continue;
        addMissing({ agent, package: pythonDistributions[module] ?? module, required_by: file, available_version: '' });
      }
    } else if (family === 'rust') {
      const dependencies = cargoDependencies(path.dirname(absolute), root);
      const locked = cargoLockPackages(root);
      const code = lexSource(file, text).code;
      const localModules = new Set(['std', 'core', 'alloc', 'crate', 'self', 'super', 'proc_macro', 'test']);
      for (const match of code.matchAll(/\bmod\s+(\w+)\s*[;{]/g)) localModules.add(match[1]!);
      const crates = new Set<string>();
      for (const match of code.matchAll(/^[ \t]*(?:pub(?:\([^)]*\))?[ \t]+)?use[ \t]+:{0,2}(\w+)/gm)) crates.add(match[1]!);
      for (const match of code.matchAll(/\bextern\s+crate\s+(\w+)/g)) crates.add(match[1]!);
      for (const crate of [...crates].sort()) {
        if (localModules.has(crate) || dependencies?.has(crate)) continue;
        addMissing({ agent, package: crate, required_by: file, available_version: locked.get(crate) ?? '' });
      }
    }
  }

  const missingDeps = [...missing.values()].sort((a, b) => a.package.localeCompare(b.package) || a.required_by.localeCompare(b.required_by) || a.agent.localeCompare(b.agent));
  const versionConflicts = [...conflicts.values()].sort((a, b) => a.package.localeCompare(b.package)).map((conflict) => ({ ...conflict, agents: conflict.agents.sort() }));
  const recommendations: string[] = [];
  if (missingDeps.length > 0) {
    const packages = [...new Set(missingDeps.map((dependency) => dependency.package))];
    recommendations.push(`Declare and install ${packages.length} missing package(s) before the wave: ${packages.join(', ')}`);
  }
  if (versionConflicts.length > 0) recommendations.push(`Reconcile ${versionConflicts.length} declaration/lock mismatch(es) (npm install, go mod tidy, cargo update) before the wave`);
  if (recommendations.length === 0) recommendations.push('No dependency conflicts detected');
  return { missing_deps: missingDeps, version_conflicts: versionConflicts, recommendations };
}
