// Compiles native/polywave-client.c (resident mode's thin client) into dist/native/polywave-client
// and installs it as bin/polywave-fast — the file every bin of the package points at (polywave,
// polywave-tools, sawtools, polywave-fast; docs/performance.md, "Resident mode"). Run by
// `npm run build` and by `postinstall`.
//
// Without a C compiler (or when the compile fails) nothing is compiled and bin/polywave-fast is a
// copy of the Node launcher's entry (a two-line JS file): every call works as before, only without
// the resident server. `npm pack` (prepack: this script with --portable) always ships that JS form,
// never a compiled binary; the install compiles it again for its own machine.
//
//   node scripts/build-native-client.mjs [--portable] [--after-pack] [--quiet]
//   CC=... picks the compiler (default cc); POLYWAVE_NO_NATIVE=1 skips the compile.
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const source = path.join(root, 'native', 'polywave-client.c');
const output = path.join(root, 'dist', 'native', 'polywave-client');
const fastBin = path.join(root, 'bin', 'polywave-fast');
// Under `npm pack` / `npm publish` every build (prepack, and `prepare`'s `npm run build` after it) makes the
// portable form; postpack (--after-pack) compiles again for this checkout.
const packing = ['pack', 'publish'].includes(process.env.npm_command ?? '') && !process.argv.includes('--after-pack');
const portable = process.argv.includes('--portable') || packing;
const quiet = process.argv.includes('--quiet');
const version = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).version;

/** Replaces `file` atomically with `write(temp)`'s result, executable. */
function install(file, write) {
  const temp = `${file}.${process.pid}.tmp`;
  write(temp);
  chmodSync(temp, 0o755);
  renameSync(temp, file);
}

const jsFallback = `#!/usr/bin/env node
// polywave (and polywave-tools, sawtools, polywave-fast) without a compiled client (in the npm tarball, or no C
// compiler at install time): the ordinary Node CLI.
// scripts/build-native-client.mjs replaces this file with dist/native/polywave-client when it compiles.
import './polywave.js';
`;

function compile() {
  if (portable || process.env.POLYWAVE_NO_NATIVE === '1' || process.platform === 'win32' || !existsSync(source)) return false;
  const cc = process.env.CC || 'cc';
  mkdirSync(path.dirname(output), { recursive: true });
  const temp = `${output}.${process.pid}.tmp`;
  const result = spawnSync(cc, ['-std=c99', '-O2', '-Wall', '-Wextra', `-DPOLYWAVE_VERSION="${version}"`, '-o', temp, source], { encoding: 'utf8' });
  if (result.error || result.status !== 0) {
    rmSync(temp, { force: true });
    if (!quiet && !result.error) process.stderr.write(`build-native-client: ${cc} failed, polywave-fast stays the Node launcher\n${result.stderr}`);
    return false;
  }
  chmodSync(temp, 0o755);
  renameSync(temp, output);
  return true;
}

/**
 * native/<name>.c → dist/native/<name>, for `platforms` (and `arches` when given); on failure a line saying `without`
 * (what runs instead) and false.
 */
function compileHelper(name, { platforms, arches, without }) {
  const helperSource = path.join(root, 'native', `${name}.c`);
  const helperOutput = path.join(root, 'dist', 'native', name);
  if (portable || process.env.POLYWAVE_NO_NATIVE === '1' || !platforms.includes(process.platform) || (arches && !arches.includes(process.arch)) || !existsSync(helperSource)) return false;
  const cc = process.env.CC || 'cc';
  mkdirSync(path.dirname(helperOutput), { recursive: true });
  const temp = `${helperOutput}.${process.pid}.tmp`;
  const result = spawnSync(cc, ['-std=c99', '-O2', '-Wall', '-Wextra', '-o', temp, helperSource], { encoding: 'utf8' });
  if (result.error || result.status !== 0) {
    rmSync(temp, { force: true });
    if (!quiet && !result.error) process.stderr.write(`build-native-client: ${cc} failed on ${name}.c (${without})\n${result.stderr}`);
    return false;
  }
  chmodSync(temp, 0o755);
  renameSync(temp, helperOutput);
  return true;
}

/**
 * native/polywave-seccomp.c → dist/native/polywave-seccomp (Linux): the sandbox's extra seccomp filter
 * (socketpair of Unix datagram sockets, which sandbox-runtime's own filter lets through). Without a C
 * compiler there is none, and src/sandbox/wrap-in-sandbox.ts runs commands without it (status detail says so).
 */
const compileSeccomp = () => compileHelper('polywave-seccomp', { platforms: ['linux'], arches: ['x64', 'arm64'], without: 'the sandbox runs without its datagram filter' });

/**
 * native/polywave-executor.c → dist/native/polywave-executor (Linux, macOS): the agents' tool executor
 * in C (src/agents/sandbox/tool-executor.ts starts it inside each agent's sandbox; a sandboxed executor
 * start measured ~70 ms of CPU with it against ~140 ms with node's). Without a C compiler there is none, and the
 * executor is `node -e` toolExecutorMain as before.
 */
const compileExecutor = () => compileHelper('polywave-executor', { platforms: ['linux', 'darwin'], without: "the agents' tool executor stays node" });

/**
 * native/polywave-spawn.c → dist/native/polywave-spawn (Linux: pipe2, posix_spawn_file_actions_addchdir_np): the git helper process of
 * src/git/spawn-server.ts in C — posix_spawn instead of Node's fork of a whole process per git
 * command (~3.5 ms of CPU each from node, ~0.1 ms here). Without a C compiler the helper stays node.
 */
const compileSpawnHelper = () => compileHelper('polywave-spawn', { platforms: ['linux'], without: 'the git helper process stays node' });

/**
 * A git checkout installs itself as a devDependency (`"polywave": "file:."`, for `node_modules/.bin/sawtools`), and
 * npm links those bins before this checkout's own `prepare` built bin/polywave-fast (bin/ holds only polywave.js in
 * git): npm skips a bin whose file is missing. Here, once the file exists, the missing or outdated links of our own
 * bins in <root>/node_modules/.bin are made — only when <root>/node_modules/<name> is this very checkout, and only
 * links that are absent or already point into it.
 */
function relinkOwnBins() {
  if (portable || process.platform === 'win32') return;
  const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
  const self = path.join(root, 'node_modules', manifest.name);
  try {
    if (realpathSync(self) !== realpathSync(root)) return;
  } catch {
    return;
  }
  const binDir = path.join(root, 'node_modules', '.bin');
  for (const [name, target] of Object.entries(manifest.bin ?? {})) {
    const link = path.join(binDir, name);
    const want = path.join('..', manifest.name, target);
    let current;
    try {
      current = lstatSync(link).isSymbolicLink() ? readlinkSync(link) : null;
    } catch {
      current = undefined;
    }
    if (current === want || current === null) continue;
    if (current !== undefined && !path.resolve(binDir, current).startsWith(`${self}${path.sep}`)) continue;
    if (!existsSync(path.join(root, target))) continue;
    rmSync(link, { force: true });
    mkdirSync(binDir, { recursive: true });
    symlinkSync(want, link);
  }
}

try {
  // The npm tarball carries no compiled code: dist/native/ is left out of it by package.json's
  // "files" ("!dist/native"), not deleted here — deleting it while packing took the seccomp filter
  // away from every polywave running from this checkout meanwhile (their sandbox became unavailable).
  compileSeccomp();
  compileExecutor();
  compileSpawnHelper();
  if (compile()) {
    install(fastBin, (temp) => copyFileSync(output, temp));
    if (!quiet) console.log(`build-native-client: ${path.relative(root, output)} and bin/polywave-fast (native client)`);
  } else {
    install(fastBin, (temp) => writeFileSync(temp, jsFallback));
    if (!quiet) console.log('build-native-client: no native client; bin/polywave-fast is the Node launcher');
  }
  relinkOwnBins();
} catch (error) {
  // An install must never fail because of the optional client.
  if (!quiet) process.stderr.write(`build-native-client: skipped (${error instanceof Error ? error.message : String(error)})\n`);
}
