import type { Git } from '../git/git-port.js';
import { blobSpec, readBlobs } from './read-blobs.js';
import { codeFamilyOf, isBinaryText, isTestFile, lexSource, type CodeFamily } from './source-lexer.js';
import { extractSymbolsFromSource, packageOf, type SymbolKind, type TopLevelSymbol } from './symbols.js';

/**
 * E41 type collision detection across a wave's branches, for Go, TS/JS, Python and Rust (the Go
 * reference checks Go `type` declarations only; the E41 text asks for types, functions and
 * constants).
 *
 * For each agent: the files changed between `merge-base(base, ref)` and `ref` (non-test files of
 * the four families), read from the branch with one `git cat-file --batch` for the whole wave;
 * the top-level symbols the agent ADDED (absent from the same file at the merge base). Two agents
 * adding the same name to the same namespace in different files is a collision — the merge
 * compiles to a duplicate declaration even though no file conflicts.
 *
 * Namespace (`package`): the directory for Go, TS/JS and Rust, the dotted package path for
 * Python (`app/models/user.py` → `app.models`). Go counts every top-level name (one package
 * scope; methods as `Receiver.Method`); the other languages count only exported / `pub` /
 * public names, since module-private names can never meet. For TS/JS, Python and Rust,
 * where a file is its own module, a same-directory clash only breaks when a barrel
 * (`index.ts`, `__init__.py`, `mod.rs`) re-exports both: the check is deliberately conservative.
 */

/** One collision (Go `TypeCollision` + the kind and the files). */
export interface TypeCollision {
  type_name: string;
  package: string;
  kind: SymbolKind;
  /** Sorted. */
  agents: string[];
  /** Sorted, distinct. */
  files: string[];
  /** `Keep A, remove from B and C` (first agent in sort order kept). */
  resolution: string;
}

export interface CollisionReport {
  collisions: TypeCollision[];
  valid: boolean;
}

export interface DetectTypeCollisionsOptions {
  git: Git;
  /** The wave's base (base_commit or the branch the wave started from). */
  base: string;
  /** Each agent's branch or commit. Agents whose ref does not exist are skipped (no branch yet). */
  agents: ReadonlyArray<{ agentId: string; ref: string }>;
}

interface Definition {
  agentId: string;
  file: string;
  /** Go file with build constraints (`//go:build`, `_linux.go`…): one per platform is not a clash. */
  constrained: boolean;
  kind: SymbolKind;
  name: string;
  namespace: string;
  group: string;
}

/** E41 over the agents' branches; collisions sorted by package, then name. */
export async function detectTypeCollisions(options: DetectTypeCollisionsOptions): Promise<CollisionReport> {
  const { git } = options;
  const agents = await Promise.all(
    options.agents.map(async (agent) => {
      const tip = await git.tryRevParse(agent.ref);
      if (tip === undefined) return undefined;
      const base = (await git.mergeBase(options.base, tip)) ?? (await git.revParse(options.base));
      const changed = (await git.diffNameOnly(`${base}..${tip}`)).filter((file) => codeFamilyOf(file) !== undefined && !isTestFile(file));
      return { agentId: agent.agentId, tip, base, files: [...new Set(changed)].sort() };
    }),
  );
  const present = agents.filter((agent) => agent !== undefined);
  const texts = await readBlobs(
    git,
    present.flatMap((agent) => agent.files.flatMap((file) => [blobSpec(agent.tip, file), blobSpec(agent.base, file)])),
  );

  const definitions = new Map<string, Definition[]>();
  for (const agent of present) {
    for (const file of agent.files) {
      const text = texts.get(blobSpec(agent.tip, file));
      if (text === undefined || isBinaryText(text)) continue;
      const before = texts.get(blobSpec(agent.base, file));
      const existing = new Set(before === undefined || isBinaryText(before) ? [] : symbolsOf(file, before).map(symbolKey));
      const family = codeFamilyOf(file)!;
      const constrained = family === 'go' && hasGoBuildConstraints(file, text);
      for (const symbol of symbolsOf(file, text)) {
        if (existing.has(symbolKey(symbol))) continue;
        if (family !== 'go' && !symbol.exported) continue;
        const definition: Definition = {
          agentId: agent.agentId,
          file,
          constrained,
          kind: symbol.kind,
          name: symbolKey(symbol),
          namespace: packageOf(file),
          group: familyGroup(family),
        };
        const key = `${definition.group}\0${definition.namespace}\0${definition.name}`;
        const list = definitions.get(key);
        if (list) list.push(definition);
        else definitions.set(key, [definition]);
      }
    }
  }

  const collisions: TypeCollision[] = [];
  for (const list of definitions.values()) {
    const agentIds = [...new Set(list.map((definition) => definition.agentId))].sort(compareText);
    const files = [...new Set(list.map((definition) => definition.file))].sort(compareText);
    if (agentIds.length < 2 || files.length < 2) continue;
    // Platform variants (`dial_linux.go` / `dial_windows.go`) define the same names on purpose.
    if (list.every((definition) => definition.constrained)) continue;
    const first = [...list].sort((left, right) => compareText(left.agentId, right.agentId) || compareText(left.file, right.file))[0]!;
    collisions.push({
      type_name: first.name,
      package: first.namespace,
      kind: first.kind,
      agents: agentIds,
      files,
      resolution: `Keep ${agentIds[0]}, remove from ${agentIds.slice(1).join(' and ')}`,
    });
  }
  collisions.sort((left, right) => compareText(left.package, right.package) || compareText(left.type_name, right.type_name));
  return { collisions, valid: collisions.length === 0 };
}

const goPlatformSuffix =
  /_(aix|android|darwin|dragonfly|freebsd|hurd|illumos|ios|js|linux|nacl|netbsd|openbsd|plan9|solaris|wasip1|windows|zos|386|amd64|arm|arm64|loong64|mips|mipsle|mips64|mips64le|ppc64|ppc64le|riscv64|s390x|wasm)(_[a-z0-9]+)?\.go$/;

function hasGoBuildConstraints(file: string, text: string): boolean {
  return goPlatformSuffix.test(file) || /^\/\/(go:build|\s*\+build)\s/m.test(text.slice(0, 4096));
}

function symbolsOf(file: string, text: string): TopLevelSymbol[] {
  return extractSymbolsFromSource(lexSource(file, text));
}

/** Go methods are keyed by receiver (`Config.Validate`): two receivers may share a method name. */
function symbolKey(symbol: TopLevelSymbol): string {
  return symbol.receiver === undefined ? symbol.name : `${symbol.receiver}.${symbol.name}`;
}

/** TS and JS share module namespaces; the other families are separate worlds. */
function familyGroup(family: CodeFamily): string {
  return family === 'typescript' || family === 'javascript' ? 'js' : family;
}

function compareText(left: string, right: string): number {
  return left < right ? -1 : left > right ? 1 : 0;
}
