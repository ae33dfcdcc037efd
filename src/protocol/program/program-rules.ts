import type { Finding } from '../../errors/finding.js';
import { gateTypes, riskLevels, slugPattern } from '../schema/impl-schema.js';
import { programImplStatuses, programStates, type ProgramManifest } from '../schema/program-schema.js';
import { resolveFreezeAt } from './freeze-at.js';
import { programFinding, type ProgramRule, type ProgramRuleContext } from './program-rule.js';

/**
 * Codes of the PROGRAM rules. Go registry codes where Go has the rule (reference §7.3); new
 * codes for the §15 rules Go lacks (reference §12 item 9).
 */
export const programCodes = {
  requiredField: 'V005_REQUIRED_FIELDS_MISSING',
  invalidState: 'V008_INVALID_STATE',
  invalidGateType: 'V010_INVALID_GATE_TYPE',
  invalidPreMortemRisk: 'V015_INVALID_PRE_MORTEM_RISK',
  invalidSlug: 'V018_INVALID_SLUG_FORMAT',
  tierMismatch: 'V025_TIER_MISMATCH',
  tierOrder: 'V026_TIER_ORDER_VIOLATION',
  invalidConsumer: 'V027_INVALID_CONSUMER',
  invalidDependency: 'V028_INVALID_DEPENDENCY',
  p1FileOverlap: 'V029_P1_FILE_OVERLAP',
  p2ContractRedefinition: 'V030_P2_CONTRACT_REDEFINITION',
  implFileMissing: 'V031_IMPL_FILE_MISSING',
  implStateMismatch: 'V032_IMPL_STATE_MISMATCH',
  completionBounds: 'V033_COMPLETION_BOUNDS',
  totalMismatch: 'V034_IMPLS_TOTAL_MISMATCH',
  p1Violation: 'V035_P1_VIOLATION',
  invalidEnum: 'V036_INVALID_ENUM',
  cycle: 'V051_PROGRAM_CYCLE',
  slugFileName: 'V052_SLUG_FILENAME_MISMATCH',
  invalidFreezeAt: 'V053_INVALID_FREEZE_AT',
  tierSequence: 'V054_TIER_SEQUENCE',
  contractLocation: 'V055_CONTRACT_LOCATION_CONFLICT',
  duplicateImpl: 'V056_DUPLICATE_IMPL_SLUG',
} as const;

function blank(value: string | undefined): boolean {
  return (value ?? '').trim() === '';
}

function quote(value: string | undefined): string {
  return JSON.stringify(value ?? '');
}

/** slug → index of its first `impls` entry (later duplicates are V056). */
function implIndex(manifest: ProgramManifest): Map<string, number> {
  const index = new Map<string, number>();
  manifest.impls.forEach((impl, position) => {
    if (impl.slug !== undefined && !index.has(impl.slug)) index.set(impl.slug, position);
  });
  return index;
}

/** slug → the `tier` field of its first `impls` entry (the Go rules compare these). */
function implTiers(manifest: ProgramManifest): Map<string, number | undefined> {
  const tiers = new Map<string, number | undefined>();
  for (const impl of manifest.impls) if (impl.slug !== undefined && !tiers.has(impl.slug)) tiers.set(impl.slug, impl.tier);
  return tiers;
}

function showTier(tier: number | undefined): string {
  return tier === undefined ? '?' : String(tier);
}

// §15.1: required fields (Go checks title/program_slug/state only; the rest are the spec's
// "Required: Yes" columns). A NOT_SUITABLE program may legitimately have no impls/tiers.
const requiredFields: ProgramRule = {
  name: 'program-required-fields',
  reference: 'program-manifest.txt §15.1',
  codes: [programCodes.requiredField],
  check({ manifest, locate }) {
    const findings: Finding[] = [];
    const missing = (path: ReadonlyArray<string | number>, label: string) =>
      findings.push(programFinding(locate, programCodes.requiredField, `${label} is required`, path));
    if (blank(manifest.title)) missing(['title'], 'title');
    if (blank(manifest.program_slug)) missing(['program_slug'], 'program_slug');
    if (blank(manifest.state)) missing(['state'], 'state');
    const notSuitable = (manifest.state ?? '').trim() === 'NOT_SUITABLE';
    if (!notSuitable && manifest.impls.length === 0) missing(['impls'], 'impls');
    if (!notSuitable && manifest.tiers.length === 0) missing(['tiers'], 'tiers');
    if (manifest.completion === undefined) {
      if (!notSuitable) missing(['completion'], 'completion');
    } else {
      for (const key of ['tiers_complete', 'tiers_total', 'impls_complete', 'impls_total', 'total_agents', 'total_waves'] as const) {
        if (manifest.completion[key] === undefined) missing(['completion', key], `completion.${key}`);
      }
    }
    manifest.program_contracts.forEach((contract, index) => {
      for (const key of ['name', 'definition', 'location'] as const) {
        if (blank(contract[key])) missing(['program_contracts', index, key], `program_contracts[${index}].${key}`);
      }
      contract.consumers.forEach((consumer, consumerIndex) => {
        for (const key of ['impl', 'usage'] as const) {
          if (blank(consumer[key])) {
            missing(['program_contracts', index, 'consumers', consumerIndex, key], `program_contracts[${index}].consumers[${consumerIndex}].${key}`);
          }
        }
      });
    });
    manifest.impls.forEach((impl, index) => {
      if (blank(impl.slug)) missing(['impls', index, 'slug'], `impls[${index}].slug`);
      if (blank(impl.title)) missing(['impls', index, 'title'], `impls[${index}].title`);
      if (impl.tier === undefined) missing(['impls', index, 'tier'], `impls[${index}].tier`);
      // A missing status is reported by V036 (as Go does: "" is an invalid status).
    });
    manifest.tiers.forEach((tier, index) => {
      if (tier.number === undefined) missing(['tiers', index, 'number'], `tiers[${index}].number`);
      if (tier.impls.length === 0) missing(['tiers', index, 'impls'], `tiers[${index}].impls`);
    });
    manifest.tier_gates.forEach((gate, index) => {
      if (blank(gate.type)) missing(['tier_gates', index, 'type'], `tier_gates[${index}].type`);
      if (blank(gate.command)) missing(['tier_gates', index, 'command'], `tier_gates[${index}].command`);
      // §7.1 marks `required` as required: a gate silently defaulting to advisory is unsafe.
      if (gate.required === undefined) missing(['tier_gates', index, 'required'], `tier_gates[${index}].required`);
    });
    manifest.pre_mortem.forEach((row, index) => {
      for (const key of ['scenario', 'likelihood', 'impact', 'mitigation'] as const) {
        if (blank(row[key])) missing(['pre_mortem', index, key], `pre_mortem[${index}].${key}`);
      }
    });
    return findings;
  },
};

// §15.1 / §9.1: state enum. REPLANNING (spec, E34) is accepted; the `PROGRAM_*` names of
// state-machine.md / execution-rules.txt are accepted with a warning pointing at the short name.
const programState: ProgramRule = {
  name: 'program-state',
  reference: 'program-manifest.txt §9.1, §15.1',
  codes: [programCodes.invalidState],
  check({ manifest, locate }) {
    const state = manifest.state ?? '';
    if (state.trim() === '' || (programStates as readonly string[]).includes(state)) return [];
    const short = state.startsWith('PROGRAM_') ? state.slice('PROGRAM_'.length) : undefined;
    if (short !== undefined && (programStates as readonly string[]).includes(short)) {
      return [
        programFinding(
          locate,
          programCodes.invalidState,
          `state "${state}" is the state-machine.md name — write "${short}"`,
          ['state'],
          'warning',
          `state: ${short}`,
        ),
      ];
    }
    return [
      programFinding(locate, programCodes.invalidState, `state ${quote(state)} is invalid — must be one of: ${programStates.join(', ')}`, ['state']),
    ];
  },
};

// §5.2 / §15.1: IMPL status enum. `in-progress` (what Go's IMPLStateToStatus and sync write) is
// accepted with a warning suggesting `executing`.
const implStatuses: ProgramRule = {
  name: 'program-impl-status',
  reference: 'program-manifest.txt §5.2, §15.1',
  codes: [programCodes.invalidEnum],
  check({ manifest, locate }) {
    const findings: Finding[] = [];
    manifest.impls.forEach((impl, index) => {
      const status = impl.status ?? '';
      if ((programImplStatuses as readonly string[]).includes(status)) return;
      if (status === 'in-progress') {
        findings.push(
          programFinding(
            locate,
            programCodes.invalidEnum,
            `IMPL ${quote(impl.slug)} has legacy status "in-progress" — use "executing"`,
            ['impls', index, 'status'],
            'warning',
            'status: executing',
          ),
        );
        return;
      }
      findings.push(
        programFinding(
          locate,
          programCodes.invalidEnum,
          `IMPL ${quote(impl.slug)} has invalid status ${quote(status)} — must be one of: ${programImplStatuses.join(', ')}`,
          ['impls', index, 'status'],
        ),
      );
    });
    return findings;
  },
};

// P1 (§15.3): no IMPL depends on another IMPL of its own tier.
const p1Independence: ProgramRule = {
  name: 'program-p1-independence',
  reference: 'P1, program-manifest.txt §15.3',
  codes: [programCodes.p1Violation],
  check({ manifest, locate }) {
    const findings: Finding[] = [];
    const tiers = implTiers(manifest);
    manifest.impls.forEach((impl, index) => {
      impl.depends_on.forEach((dependency, dependencyIndex) => {
        if (!tiers.has(dependency) || impl.tier === undefined) return;
        const dependencyTier = tiers.get(dependency);
        if (dependencyTier !== impl.tier) return;
        findings.push(
          programFinding(
            locate,
            programCodes.p1Violation,
            `IMPL ${quote(impl.slug)} (tier ${impl.tier}) depends on ${quote(dependency)} (tier ${dependencyTier}) — IMPLs within the same tier must be independent`,
            ['impls', index, 'depends_on', dependencyIndex],
          ),
        );
      });
    });
    return findings;
  },
};

// §6.1 / §15.2: tiers reference defined IMPLs; every IMPL is in exactly one tier; an IMPL's own
// `tier` agrees with the tier listing it (Go lacks the last check).
const tierMembership: ProgramRule = {
  name: 'program-tier-membership',
  reference: 'program-manifest.txt §6.1, §15.2',
  codes: [programCodes.tierMismatch],
  check({ manifest, locate }) {
    const findings: Finding[] = [];
    const defined = implIndex(manifest);
    const listedIn = new Map<string, number[]>();
    manifest.tiers.forEach((tier, tierIndex) => {
      tier.impls.forEach((slug, slugIndex) => {
        if (!defined.has(slug)) {
          findings.push(
            programFinding(
              locate,
              programCodes.tierMismatch,
              `tier ${showTier(tier.number)} references IMPL ${quote(slug)} which is not defined in impls section`,
              ['tiers', tierIndex, 'impls', slugIndex],
            ),
          );
        }
        const numbers = listedIn.get(slug) ?? [];
        numbers.push(tier.number ?? 0);
        listedIn.set(slug, numbers);
      });
    });
    for (const [slug, index] of defined) {
      const numbers = listedIn.get(slug) ?? [];
      const impl = manifest.impls[index]!;
      if (numbers.length === 0) {
        findings.push(programFinding(locate, programCodes.tierMismatch, `IMPL ${quote(slug)} is not assigned to any tier`, ['impls', index, 'slug']));
      } else if (numbers.length > 1) {
        findings.push(
          programFinding(locate, programCodes.tierMismatch, `IMPL ${quote(slug)} appears in multiple tiers: [${numbers.join(' ')}]`, ['impls', index, 'slug']),
        );
      } else if (impl.tier !== undefined && impl.tier !== numbers[0]) {
        findings.push(
          programFinding(
            locate,
            programCodes.tierMismatch,
            `IMPL ${quote(slug)} has tier ${impl.tier} but is listed in tier ${numbers[0]}`,
            ['impls', index, 'tier'],
          ),
        );
      }
    }
    return findings;
  },
};

// §5.1: slugs identify IMPLs, so each is defined once (Go keeps the last silently).
const duplicateImpls: ProgramRule = {
  name: 'program-duplicate-impl',
  reference: 'program-manifest.txt §5.1',
  codes: [programCodes.duplicateImpl],
  check({ manifest, locate }) {
    const findings: Finding[] = [];
    const first = implIndex(manifest);
    manifest.impls.forEach((impl, index) => {
      if (impl.slug === undefined || blank(impl.slug)) return;
      const firstIndex = first.get(impl.slug)!;
      if (firstIndex === index) return;
      findings.push(
        programFinding(
          locate,
          programCodes.duplicateImpl,
          `IMPL slug ${quote(impl.slug)} is defined more than once (impls[${firstIndex}] and impls[${index}])`,
          ['impls', index, 'slug'],
        ),
      );
    });
    return findings;
  },
};

// §15.3: depends_on names defined IMPLs.
const dependencyValidity: ProgramRule = {
  name: 'program-dependency-exists',
  reference: 'program-manifest.txt §15.3',
  codes: [programCodes.invalidDependency],
  check({ manifest, locate }) {
    const findings: Finding[] = [];
    const defined = implIndex(manifest);
    manifest.impls.forEach((impl, index) => {
      impl.depends_on.forEach((dependency, dependencyIndex) => {
        if (defined.has(dependency)) return;
        findings.push(
          programFinding(
            locate,
            programCodes.invalidDependency,
            `IMPL ${quote(impl.slug)} depends on ${quote(dependency)} which does not exist`,
            ['impls', index, 'depends_on', dependencyIndex],
          ),
        );
      });
    });
    return findings;
  },
};

// §5.3 / §15.3: dependencies point to strictly earlier tiers (same tier also trips P1, as in Go).
const tierOrdering: ProgramRule = {
  name: 'program-tier-ordering',
  reference: 'program-manifest.txt §5.3, §15.3',
  codes: [programCodes.tierOrder],
  check({ manifest, locate }) {
    const findings: Finding[] = [];
    const tiers = implTiers(manifest);
    manifest.impls.forEach((impl, index) => {
      impl.depends_on.forEach((dependency, dependencyIndex) => {
        const dependencyTier = tiers.get(dependency);
        if (!tiers.has(dependency) || impl.tier === undefined || dependencyTier === undefined) return;
        if (impl.tier > dependencyTier) return;
        findings.push(
          programFinding(
            locate,
            programCodes.tierOrder,
            `IMPL ${quote(impl.slug)} (tier ${impl.tier}) depends on ${quote(dependency)} (tier ${dependencyTier}) — dependent IMPLs must be in strictly later tiers`,
            ['impls', index, 'depends_on', dependencyIndex],
          ),
        );
      });
    });
    return findings;
  },
};

/** Tarjan's strongly connected components, iterative, visiting nodes and edges in given order. */
function stronglyConnected(nodes: readonly string[], edges: ReadonlyMap<string, readonly string[]>): string[][] {
  let counter = 0;
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  for (const root of nodes) {
    if (order.has(root)) continue;
    const visit = (node: string) => {
      order.set(node, counter);
      low.set(node, counter);
      counter += 1;
      stack.push(node);
      onStack.add(node);
    };
    visit(root);
    const work: Array<{ node: string; next: number }> = [{ node: root, next: 0 }];
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const successors = edges.get(frame.node) ?? [];
      if (frame.next < successors.length) {
        const successor = successors[frame.next]!;
        frame.next += 1;
        if (!order.has(successor)) {
          visit(successor);
          work.push({ node: successor, next: 0 });
        } else if (onStack.has(successor)) {
          low.set(frame.node, Math.min(low.get(frame.node)!, order.get(successor)!));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) === order.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        components.push(component);
      }
    }
  }
  return components;
}

/** A cycle through `start` inside one strongly connected component, following edges in order. */
function cycleThrough(start: string, members: ReadonlySet<string>, edges: ReadonlyMap<string, readonly string[]>): string[] {
  const path = [start];
  const next = [0];
  const visited = new Set([start]);
  while (path.length > 0) {
    const node = path[path.length - 1]!;
    const successors = (edges.get(node) ?? []).filter((successor) => members.has(successor));
    const position = next[next.length - 1]!;
    if (position >= successors.length) {
      path.pop();
      next.pop();
      continue;
    }
    next[next.length - 1] = position + 1;
    const successor = successors[position]!;
    if (successor === start) return [...path, start];
    if (!visited.has(successor)) {
      visited.add(successor);
      path.push(successor);
      next.push(0);
    }
  }
  return [start, start];
}

/**
 * §15.3: the IMPL dependency graph has no cycles (Go only implies this through V026). One finding
 * per cycle group (strongly connected component), showing one concrete cycle that starts at the
 * group's first IMPL in manifest order.
 */
export function findDependencyCycles(manifest: ProgramManifest): Array<{ path: string[]; index: number }> {
  const defined = implIndex(manifest);
  const nodes = [...defined.keys()];
  const edges = new Map<string, string[]>();
  for (const slug of nodes) {
    const impl = manifest.impls[defined.get(slug)!]!;
    edges.set(slug, impl.depends_on.filter((dependency) => defined.has(dependency)));
  }
  const cycles: Array<{ path: string[]; index: number }> = [];
  for (const component of stronglyConnected(nodes, edges)) {
    const members = new Set(component);
    const start = component.reduce((best, slug) => (defined.get(slug)! < defined.get(best)! ? slug : best));
    const selfLoop = edges.get(start)!.includes(start);
    if (component.length === 1 && !selfLoop) continue;
    cycles.push({ path: cycleThrough(start, members, edges), index: defined.get(start)! });
  }
  return cycles.sort((left, right) => left.index - right.index);
}

const dependencyCycles: ProgramRule = {
  name: 'program-dependency-cycle',
  reference: 'program-manifest.txt §15.3',
  codes: [programCodes.cycle],
  check({ manifest, locate }) {
    return findDependencyCycles(manifest).map(({ path, index }) =>
      programFinding(
        locate,
        programCodes.cycle,
        `dependency cycle among IMPLs: ${path.map((slug) => quote(slug)).join(' → ')}`,
        ['impls', index, 'depends_on'],
      ),
    );
  },
};

// §4.2 / §15.4: consumers name defined IMPLs.
const contractConsumers: ProgramRule = {
  name: 'program-contract-consumers',
  reference: 'program-manifest.txt §4.2, §15.4',
  codes: [programCodes.invalidConsumer],
  check({ manifest, locate }) {
    const findings: Finding[] = [];
    const defined = implIndex(manifest);
    manifest.program_contracts.forEach((contract, index) => {
      contract.consumers.forEach((consumer, consumerIndex) => {
        // A missing consumer impl is reported by V005.
        if (blank(consumer.impl) || defined.has(consumer.impl!)) return;
        findings.push(
          programFinding(
            locate,
            programCodes.invalidConsumer,
            `program contract ${quote(contract.name)} references consumer IMPL ${quote(consumer.impl)} which does not exist`,
            ['program_contracts', index, 'consumers', consumerIndex, 'impl'],
          ),
        );
      });
    });
    return findings;
  },
};

/**
 * The longest program or IMPL slug the tier loop can run (outside round P19-02): a slug names files and refs whose
 * names must fit in 255 bytes — `IMPL-<slug>.yaml` and its lock file `IMPL-<slug>.yaml.<16 hex>.lock` (slug + 32), the
 * IMPL branch `…/tier<N>-impl-<slug>` and its `.lock`, `PROGRAM-<slug>.yaml.<16 hex>.lock` (slug + 35). A 250-character
 * IMPL slug passed validation, then its Scout failed three times (the doc's name too long) and the PROGRAM BLOCKED.
 */
export const maxProgramSlugLength = 200;

const shownSlug = (slug: string): string => (slug.length > 60 ? `${slug.slice(0, 60)}…` : slug);

// §3 / §5.1: program_slug and IMPL slugs are kebab-case (and short enough to name files and refs, P19-02).
const slugFormats: ProgramRule = {
  name: 'program-slug-format',
  reference: 'program-manifest.txt §3, §5.1',
  codes: [programCodes.invalidSlug],
  check({ manifest, locate }) {
    const findings: Finding[] = [];
    const slug = manifest.program_slug ?? '';
    if (slug !== '' && !slugPattern.test(slug)) {
      findings.push(
        programFinding(locate, programCodes.invalidSlug, `program_slug ${quote(shownSlug(slug))} is not kebab-case (lowercase letters, digits, hyphens only)`, ['program_slug']),
      );
    } else if (slug.length > maxProgramSlugLength) {
      findings.push(
        programFinding(locate, programCodes.invalidSlug, `program_slug ${quote(shownSlug(slug))} has ${slug.length} characters: at most ${maxProgramSlugLength} (it names the PROGRAM's files and branches, each name at most 255 bytes)`, ['program_slug']),
      );
    }
    manifest.impls.forEach((impl, index) => {
      if (impl.slug === undefined || impl.slug === '') return;
      if (!slugPattern.test(impl.slug)) {
        findings.push(
          programFinding(
            locate,
            programCodes.invalidSlug,
            `IMPL slug ${quote(shownSlug(impl.slug))} is not kebab-case (lowercase letters, digits, hyphens only)`,
            ['impls', index, 'slug'],
          ),
        );
      } else if (impl.slug.length > maxProgramSlugLength) {
        findings.push(
          programFinding(
            locate,
            programCodes.invalidSlug,
            `IMPL slug ${quote(shownSlug(impl.slug))} has ${impl.slug.length} characters: at most ${maxProgramSlugLength} (it names the IMPL doc, its IMPL branch and their lock files, each name at most 255 bytes)`,
            ['impls', index, 'slug'],
          ),
        );
      }
    });
    return findings;
  },
};

// §15.5: completion counters are consistent with the manifest (Go checks only the bounds and
// impls_total; tiers_total == len(tiers) uses the same "total mismatch" code).
const completionConsistency: ProgramRule = {
  name: 'program-completion-consistency',
  reference: 'program-manifest.txt §15.5',
  codes: [programCodes.completionBounds, programCodes.totalMismatch],
  check({ manifest, locate }) {
    const completion = manifest.completion;
    if (completion === undefined) return [];
    const findings: Finding[] = [];
    const { tiers_complete, tiers_total, impls_complete, impls_total } = completion;
    if (tiers_complete !== undefined && tiers_total !== undefined && tiers_complete > tiers_total) {
      findings.push(
        programFinding(locate, programCodes.completionBounds, `tiers_complete (${tiers_complete}) exceeds tiers_total (${tiers_total})`, [
          'completion',
          'tiers_complete',
        ]),
      );
    }
    if (impls_complete !== undefined && impls_total !== undefined && impls_complete > impls_total) {
      findings.push(
        programFinding(locate, programCodes.completionBounds, `impls_complete (${impls_complete}) exceeds impls_total (${impls_total})`, [
          'completion',
          'impls_complete',
        ]),
      );
    }
    if (impls_total !== undefined && impls_total !== manifest.impls.length) {
      findings.push(
        programFinding(
          locate,
          programCodes.totalMismatch,
          `impls_total (${impls_total}) must equal the number of impls entries (${manifest.impls.length})`,
          ['completion', 'impls_total'],
        ),
      );
    }
    if (tiers_total !== undefined && tiers_total !== manifest.tiers.length) {
      findings.push(
        programFinding(
          locate,
          programCodes.totalMismatch,
          `tiers_total (${tiers_total}) must equal the number of tiers entries (${manifest.tiers.length})`,
          ['completion', 'tiers_total'],
        ),
      );
    }
    return findings;
  },
};

// §2 / §15.2: program_slug matches the file name PROGRAM-<slug>.yaml (only when a name is given).
const slugMatchesFileName: ProgramRule = {
  name: 'program-slug-file-name',
  reference: 'program-manifest.txt §2, §15.2',
  codes: [programCodes.slugFileName],
  check({ manifest, locate, fileName }) {
    if (fileName === undefined || blank(manifest.program_slug)) return [];
    const base = fileName.split(/[\\/]/).pop() ?? fileName;
    const match = /^PROGRAM-(.+)\.ya?ml$/.exec(base);
    const slug = manifest.program_slug!;
    if (match && match[1] === slug) return [];
    return [
      programFinding(
        locate,
        programCodes.slugFileName,
        `program_slug ${quote(slug)} does not match file name ${quote(base)} (expected PROGRAM-${slug}.yaml)`,
        ['program_slug'],
      ),
    ];
  },
};

// §6.1 / §15.2: tier numbers are 1, 2, 3, … in listing order.
const tierSequence: ProgramRule = {
  name: 'program-tier-sequence',
  reference: 'program-manifest.txt §6.1, §15.2',
  codes: [programCodes.tierSequence],
  check({ manifest, locate }) {
    const offending = manifest.tiers.findIndex((tier, index) => tier.number !== undefined && tier.number !== index + 1);
    if (offending < 0) return [];
    const found = manifest.tiers.map((tier) => showTier(tier.number)).join(', ');
    return [
      programFinding(
        locate,
        programCodes.tierSequence,
        `tier numbers must be sequential starting from 1 — found [${found}] (tiers[${offending}].number is ${manifest.tiers[offending]!.number}, expected ${offending + 1})`,
        ['tiers', offending, 'number'],
      ),
    ];
  },
};

// §4.1 / §15.4: freeze_at names a tier boundary (see resolveFreezeAt for the accepted forms).
const freezeAtValidity: ProgramRule = {
  name: 'program-freeze-at',
  reference: 'program-manifest.txt §4.1, §15.4, E30',
  codes: [programCodes.invalidFreezeAt],
  check({ manifest, locate }) {
    const findings: Finding[] = [];
    manifest.program_contracts.forEach((contract, index) => {
      const point = resolveFreezeAt(manifest, contract.freeze_at);
      if (point.kind !== 'invalid') return;
      findings.push(
        programFinding(
          locate,
          programCodes.invalidFreezeAt,
          `program contract ${quote(contract.name)} freeze_at ${quote(contract.freeze_at)} ${point.reason}`,
          ['program_contracts', index, 'freeze_at'],
          'error',
          'write "tier-N" (or "Tier N completion") for a defined tier N',
        ),
      );
    });
    return findings;
  },
};

/** Normalises a repo-relative path for comparison: `./a//b` and `a/b` are the same file. */
export function normalizeRelativePath(path: string): string {
  let text = path.trim().replace(/\\/g, '/').replace(/\/{2,}/g, '/');
  while (text.startsWith('./')) text = text.slice(2);
  return text.replace(/\/\.\//g, '/');
}

/**
 * The file a program contract's `location` names, normalised: the spec's value is a file path, and a
 * symbol or line suffix people add (`pkg/types.go#Session`, `src/api.ts:12`) is not part of it — P2
 * (ownership of a frozen contract's file), the freeze (E30) and §15.4 all compare files.
 */
export function contractLocationFile(location: string | undefined): string {
  return normalizeRelativePath((location ?? '').replace(/#[^/]*$/, '').replace(/:\d+(?::\d+)?$/, ''));
}

/** Why `file` (normalised, repo-relative) cannot hold a program contract: the orchestrator's or git's own place. */
export function orchestratorOwnedPlace(file: string): string | undefined {
  const first = file.split('/')[0]!;
  if (first === '.git') return 'inside the git directory';
  if (file.startsWith('docs/PROGRAM/') || file.startsWith('docs/IMPL/') || file === 'docs/CONTEXT.md' || first === '.polywave-state' || first === '.claude') {
    return 'a file polywave writes (manifests, CONTEXT.md, worktrees, state)';
  }
  return undefined;
}

// §15.4: no two program contracts materialize to the same file.
const contractLocations: ProgramRule = {
  name: 'program-contract-locations',
  reference: 'program-manifest.txt §15.4',
  codes: [programCodes.contractLocation],
  check({ manifest, locate }) {
    const findings: Finding[] = [];
    const owners = new Map<string, number>();
    manifest.program_contracts.forEach((contract, index) => {
      if (blank(contract.location)) return;
      const location = contractLocationFile(contract.location!);
      const owner = orchestratorOwnedPlace(location);
      if (owner !== undefined) {
        // P12-02: a contract on the orchestrator's own files (the PROGRAM manifest itself: its blob changes at
        // every state write, so the freeze is stale at once and every later tier gate fails P2).
        findings.push(
          programFinding(
            locate,
            programCodes.contractLocation,
            `program contract ${quote(contract.name)} has location ${quote(location)}, ${owner} — a contract's file is one an IMPL's agents write and commit`,
            ['program_contracts', index, 'location'],
            'error',
            'put the contract in a source file (e.g. src/types.ts, pkg/api/types.go)',
          ),
        );
        return;
      }
      const first = owners.get(location);
      if (first === undefined) {
        owners.set(location, index);
        return;
      }
      findings.push(
        programFinding(
          locate,
          programCodes.contractLocation,
          `program contracts ${quote(manifest.program_contracts[first]!.name)} and ${quote(contract.name)} both have location ${quote(location)} — no two contracts may write to the same file`,
          ['program_contracts', index, 'location'],
        ),
      );
    });
    return findings;
  },
};

// §7.1: tier gates reuse the IMPL QualityGate, whose type is an enum (Go V010 wording).
const tierGateTypes: ProgramRule = {
  name: 'program-tier-gate-type',
  reference: 'program-manifest.txt §7.1',
  codes: [programCodes.invalidGateType],
  check({ manifest, locate }) {
    const findings: Finding[] = [];
    manifest.tier_gates.forEach((gate, index) => {
      if (blank(gate.type) || (gateTypes as readonly string[]).includes(gate.type!)) return;
      findings.push(
        programFinding(
          locate,
          programCodes.invalidGateType,
          `tier gate type ${quote(gate.type)} is invalid — must be one of: ${gateTypes.join(', ')}`,
          ['tier_gates', index, 'type'],
        ),
      );
    });
    return findings;
  },
};

// §12.1: pre-mortem likelihood/impact are low|medium|high (Go V015 wording).
const preMortemRisk: ProgramRule = {
  name: 'program-pre-mortem-risk',
  reference: 'program-manifest.txt §12.1',
  codes: [programCodes.invalidPreMortemRisk],
  check({ manifest, locate }) {
    const findings: Finding[] = [];
    manifest.pre_mortem.forEach((row, index) => {
      for (const key of ['likelihood', 'impact'] as const) {
        const value = row[key];
        if (blank(value) || (riskLevels as readonly string[]).includes(value!)) continue;
        findings.push(
          programFinding(
            locate,
            programCodes.invalidPreMortemRisk,
            `pre_mortem[${index}].${key} has invalid value ${quote(value)} — must be one of: ${riskLevels.join(', ')}`,
            ['pre_mortem', index, key],
          ),
        );
      }
    });
    return findings;
  },
};

/**
 * Every PROGRAM rule, in the order findings are reported: first the Go `ValidateProgram` order
 * (reference §7.3), then the §15 rules Go lacks, then tier-gate and pre-mortem enums.
 */
export const programRules: readonly ProgramRule[] = [
  requiredFields,
  programState,
  implStatuses,
  p1Independence,
  tierMembership,
  duplicateImpls,
  dependencyValidity,
  tierOrdering,
  dependencyCycles,
  contractConsumers,
  slugFormats,
  completionConsistency,
  slugMatchesFileName,
  tierSequence,
  freezeAtValidity,
  contractLocations,
  tierGateTypes,
  preMortemRisk,
];

/**
 * Runs rules over one context: rule order, then each rule's emission order. A rule that throws
 * (a bug, never bad input) becomes a fatal finding instead of a stack trace.
 */
export function runProgramRules(context: ProgramRuleContext, rules: readonly ProgramRule[] = programRules): Finding[] {
  const findings: Finding[] = [];
  for (const rule of rules) {
    try {
      findings.push(...rule.check(context));
    } catch (error) {
      findings.push({
        code: 'V001_MANIFEST_INVALID',
        message: `rule ${rule.name} (${rule.reference}) failed: ${error instanceof Error ? error.message : String(error)}`,
        severity: 'fatal',
      });
    }
  }
  return findings;
}
