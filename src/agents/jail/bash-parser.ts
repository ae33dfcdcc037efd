/**
 * The bash parser behind the static bash check: tree-sitter-bash (the grammar `@vscode/tree-sitter-wasm`
 * ships, run by `web-tree-sitter`), loaded lazily on the first check — commands that never check a
 * bash command never load the WASM.
 *
 * tree-sitter gives the full concrete syntax tree (every word, quote, expansion, substitution,
 * here-document, compound command) with positions. It is error-tolerant: a tree with an ERROR or
 * MISSING node is refused by the caller. To say precisely why, such a command is re-parsed by
 * mvdan/sh (`sh-syntax`, loaded only then), the stricter parser: either it is not valid bash (its
 * message), or it is valid bash in a form tree-sitter does not follow.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { Node, Parser, Tree } from 'web-tree-sitter';

export type { Node as BashNode, Tree as BashTree } from 'web-tree-sitter';

export interface BashParser {
  /** Parses a command (synchronous once loaded). The caller deletes the tree. */
  parse(source: string): Tree;
}

let loading: Promise<BashParser> | undefined;

/** Whether the parser's WASM has been requested in this process (commands that check no bash never load it). */
export function isBashParserLoaded(): boolean {
  return loading !== undefined;
}

/** The parser, loaded once per process on first use; a failed load is retried by the next call. */
export function loadBashParser(): Promise<BashParser> {
  loading ??= createParser().catch((error: unknown) => {
    loading = undefined;
    throw error;
  });
  return loading;
}

async function createParser(): Promise<BashParser> {
  const { Parser: ParserClass, Language } = await import('web-tree-sitter');
  await ParserClass.init();
  const grammar = createRequire(import.meta.url).resolve('@vscode/tree-sitter-wasm/wasm/tree-sitter-bash.wasm');
  const language = await Language.load(grammar);
  const parser: Parser = new ParserClass();
  parser.setLanguage(language);
  return {
    parse(source) {
      const tree = parser.parse(source);
      if (tree === null) throw new Error('tree-sitter returned no tree');
      return tree;
    },
  };
}

/** Where tree-sitter gave up: the first ERROR or MISSING node (depth first), or undefined for a clean tree. */
export function findSyntaxError(root: Node): { line: number; column: number; near: string; missing: boolean } | undefined {
  if (!root.hasError) return undefined;
  const pending: Node[] = [root];
  while (pending.length > 0) {
    const node = pending.pop()!;
    if (node.isError || node.isMissing) {
      const near = node.isMissing ? node.type : node.text.split('\n')[0]!.slice(0, 40);
      return { line: node.startPosition.row + 1, column: node.startPosition.column + 1, near, missing: node.isMissing };
    }
    if (!node.hasError) continue;
    for (let index = node.childCount - 1; index >= 0; index -= 1) pending.push(node.child(index)!);
  }
  return { line: 1, column: 1, near: '', missing: false };
}

let mvdanSh: Promise<(source: string) => Promise<unknown>> | undefined;

/** sh-syntax's parser over a WASM module compiled once (its own `parse` recompiles it on every call). */
function loadMvdanSh(): Promise<(source: string) => Promise<unknown>> {
  mvdanSh ??= (async () => {
    const { getProcessor } = await import('sh-syntax');
    const module = await WebAssembly.compile(await readFile(createRequire(import.meta.url).resolve('sh-syntax/main.wasm')));
    const processor = getProcessor((imports) => WebAssembly.instantiate(module, imports));
    return (source: string) => processor(source);
  })().catch((error: unknown) => {
    mvdanSh = undefined;
    throw error;
  });
  return mvdanSh;
}

/**
 * mvdan/sh's verdict on a command tree-sitter could not parse: its error message with line and
 * column when the command is not valid bash, `undefined` when it is valid bash.
 */
export async function diagnoseWithMvdanSh(source: string): Promise<string | undefined> {
  const parse = await loadMvdanSh();
  try {
    await parse(source);
    return undefined;
  } catch (error) {
    if (typeof error === 'object' && error !== null && 'Text' in error && typeof error.Text === 'string') {
      const position = 'Pos' in error && typeof error.Pos === 'object' && error.Pos !== null ? (error.Pos as { Line?: number; Col?: number }) : undefined;
      return position?.Line !== undefined && position.Col !== undefined ? `line ${position.Line}, column ${position.Col}: ${error.Text}` : error.Text;
    }
    const message = error instanceof Error ? error.message : String(error);
    const located = /^(\d+):(\d+): (.*)$/s.exec(message);
    return located ? `line ${located[1]}, column ${located[2]}: ${located[3]}` : message;
  }
}
