/**
 * The Scaffold Agent prompt: materialise the shared types of I2/E45 as type-only files, E22
 * build verification before committing, and the per-file status (`committed (<sha>)` or
 * `FAILED: <error>`, message-formats "Scaffolds Section Format").
 */
import { scaffoldPath, type ImplManifest, type ScaffoldFile } from '../../protocol/schema/impl-schema.js';
import type { RenderedPrompt } from './index.js';

export const version = '1.0.0';

export interface ScaffoldPromptInput {
  manifest: ImplManifest;
  /** Absolute path of the IMPL manifest. */
  implPath: string;
  /** Absolute repository root; the agent works on the current branch there (no worktree). */
  repoRoot: string;
  /** The scaffolds to create; default: every scaffold whose status is not `committed…`. */
  scaffolds?: readonly ScaffoldFile[];
  /** E22 build verification command (e.g. `npx tsc --noEmit`, `go build ./pkg/types/...`). */
  buildCommand?: string;
  /** E22 dependency resolution / cleanup commands to run before the build (e.g. `npm install`, `go mod tidy`). */
  dependencyCommands?: readonly string[];
}

function fence(text: string, language = ''): string {
  let marker = '```';
  while (text.includes(marker)) marker += '`';
  return `${marker}${language}\n${text.replace(/\n+$/, '')}\n${marker}`;
}

/** The scaffolds still to create: not yet `committed`. */
export function pendingScaffolds(manifest: ImplManifest): ScaffoldFile[] {
  return (manifest.scaffolds ?? []).filter((scaffold) => !/^committed/.test((scaffold.status ?? '').trim()));
}

function systemPrompt(slug: string): string {
  const commitMessage = `scaffold: add shared types for ${slug} [Polywave:scaffold:${slug}]`;
  return `# Role: Polywave Scaffold Agent (prompt v${version})

You turn the shared types of an IMPL manifest into committed source files before the first wave starts (I2: interface contracts precede parallel implementation). Every wave agent imports these files and none may change them, so one broken scaffold breaks the whole wave.

## Scope
- Write only the scaffold files listed in the task. Touch no other file; the manifest is updated by the orchestrator from your report.
- Types only: type and interface declarations, structs and classes without behaviour, enums, type aliases, constants, and the imports and package/module declarations they need. No function bodies, no logic, no tests.
- Use exactly the names, members and signatures of each scaffold's \`contents\` and of the interface contracts. Do not rename, add or drop members, and do not "improve" a definition. Keep the doc comments the contents carry.
- Place each file so that its import path resolves as given.
- A file that already exists with the specified content counts as done; do not rewrite it.

## Steps (E22)
1. Check you are in the repository root given in the task: \`git rev-parse --show-toplevel\` must print it. If it does not, stop and report every file \`FAILED: wrong repository\`.
2. Create each scaffold file.
3. Dependency resolution: run the dependency commands given in the task, if any (e.g. \`npm install\`, \`go get ./...\`, \`cargo fetch\`, \`uv sync\`), then cleanup where the toolchain has one (\`go mod tidy\`).
4. Build verification: run the build command of the task (without one: \`npx tsc --noEmit\` or \`npm run build\` for TypeScript, \`go build\` of the scaffold packages, \`cargo build\`, \`python -m py_compile\` on the files). It must pass with the scaffold files present.
5. If a step fails because of a mistake in your files that you can fix without changing any specified name or shape (a missing import, a wrong package line), fix it and run the steps again. If the specification itself cannot compile as written, do not change it.
6. On any remaining failure: commit nothing, and report the failing files as \`FAILED: <error>\` (see Report). A failed scaffold stops the feature until a human revises the contracts; that is the correct outcome, not something to work around.
7. On success: stage only the scaffold files and commit them in one commit on the current branch:
   \`POLYWAVE_ALLOW_MAIN_COMMIT=1 git commit -m "${commitMessage}"\`
   (the variable lets this orchestrator-sanctioned commit through the main-branch guard). Record the short SHA (\`git rev-parse --short HEAD\`).

## Report
Your final answer is exactly one YAML block listing every scaffold file of the task:

\`\`\`yaml
scaffold_results:
  - file: <path>
    status: committed (<sha>)
  - file: <path>
    status: "FAILED: <first line of the error, with file:line>"
\`\`\`

- After a successful commit every file is \`committed (<sha>)\` with the same SHA.
- After a failure nothing is committed: each file the error points at is \`FAILED: <error>\`; if the error cannot be attributed to a file, mark every file \`FAILED: <error>\`; files that are fine but were not committed stay \`pending\`.
The orchestrator writes these statuses into the manifest's \`scaffolds\`; do not edit the manifest.
`;
}

/** Renders the Scaffold Agent prompt: user = the IMPL, the repository, the build and every scaffold to create. */
export function renderScaffoldPrompt(input: ScaffoldPromptInput): RenderedPrompt {
  const { manifest } = input;
  const slug = manifest.feature_slug ?? '';
  const scaffolds = input.scaffolds ?? pendingScaffolds(manifest);
  const out: string[] = [];
  out.push('## IMPL Doc Path', '', `\`${input.implPath}\``, '', `Feature: ${manifest.title ?? slug} (\`${slug}\`)`, '');
  out.push('## Repository Root', '', `\`${input.repoRoot}\``, '');
  out.push('## Build Verification (E22)', '');
  const deps = input.dependencyCommands ?? [];
  if (deps.length > 0) out.push('Dependency commands, in order:', '', ...deps.map((command) => `- \`${command}\``), '');
  out.push(input.buildCommand ? `Build command: \`${input.buildCommand}\`` : 'No build command was given: use the toolchain default from your instructions.', '');

  out.push(`## Scaffold Files (${scaffolds.length})`, '');
  if (scaffolds.length === 0) out.push('(none: report an empty `scaffold_results` list)', '');
  for (const scaffold of scaffolds) {
    const file = scaffoldPath(scaffold) || '(no path)';
    out.push(`### \`${file}\``, '');
    if (scaffold.import_path) out.push(`Import path: \`${scaffold.import_path}\``);
    out.push(`Current status: ${scaffold.status ?? 'pending'}`, '');
    out.push(scaffold.contents ? fence(scaffold.contents) : '(no contents given: derive the types from the interface contracts below whose location is this file)', '');
  }

  const contracts = manifest.interface_contracts ?? [];
  if (contracts.length > 0) {
    out.push('## Interface Contracts (reference)', '', 'The scaffold contents must agree with these definitions.', '');
    for (const contract of contracts) {
      out.push(`### ${contract.name ?? '(unnamed)'}${contract.location ? ` (\`${contract.location}\`)` : ''}`, '');
      if (contract.definition) out.push(fence(contract.definition), '');
    }
  }
  return { system: systemPrompt(slug), user: `${out.join('\n').replace(/\n+$/, '')}\n` };
}
