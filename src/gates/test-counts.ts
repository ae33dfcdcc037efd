/**
 * Test counts from a gate's output (E40 `agent_performance.tests_passed` / `tests_failed`): the
 * summary lines the common runners print at the end of a run. Every summary found is added up
 * (`cargo test` prints one per crate, `go test -v` one line per test), so a gate that runs several
 * suites counts them all. Output without a known summary gives undefined — never a guessed 0.
 *
 * Runners recognised: Vitest, Jest, node:test and other TAP producers, Mocha, pytest, cargo test,
 * go test -v (and `go test -json` is not parsed: its lines carry `"Action":"pass"` per test).
 * No maintained library parses these summaries across runners (each runner's own reporter
 * package only reads its own structured output), so the patterns live here, one per runner.
 */
export interface TestCounts {
  passed: number;
  failed: number;
}

// ANSI colour codes (runners colour their summaries when they think they write to a terminal).
// eslint-disable-next-line no-control-regex
const ansi = /\u001b\[[0-9;]*m/g;

interface Pattern {
  /** Matched per line (global); each match adds what `counts` returns. */
  line: RegExp;
  counts(match: RegExpExecArray): Partial<TestCounts>;
}

const number = (text: string | undefined): number => (text === undefined ? 0 : Number(text));

/** Runners whose summary is one line with both numbers. */
const summaries: Pattern[] = [
  // Vitest: "      Tests  3 passed | 1 failed (4)" (also "| 2 skipped")
  { line: /^\s*Tests\s+(?:(\d+) failed\s*\|\s*)?(?:(\d+) passed)?.*\(\d+\)\s*$/gm, counts: (m) => ({ failed: number(m[1]), passed: number(m[2]) }) },
  // Jest: "Tests:       1 failed, 3 passed, 4 total"
  { line: /^\s*Tests:\s+(?:(\d+) failed, )?(?:\d+ skipped, )?(?:\d+ todo, )?(?:(\d+) passed, )?\d+ total\s*$/gm, counts: (m) => ({ failed: number(m[1]), passed: number(m[2]) }) },
  // pytest: "===== 3 passed, 1 failed in 0.12s =====", and with -q "1 failed, 2 passed in 2.62s" (any order, with warnings/skipped)
  {
    line: /^=*\s*((?:\d+ (?:passed|failed|skipped|errors?|warnings?|deselected|xfailed|xpassed)(?:, )?)+) in [\d.]+s(?: \([^)]*\))?\s*=*\s*$/gm,
    counts: (m) => ({ passed: number(/(\d+) passed/.exec(m[1]!)?.[1]), failed: number(/(\d+) failed/.exec(m[1]!)?.[1]) + number(/(\d+) errors?\b/.exec(m[1]!)?.[1]) }),
  },
  // cargo test: "test result: ok. 3 passed; 0 failed; 0 ignored; …" (one per test binary)
  { line: /^test result: \w+\. (\d+) passed; (\d+) failed;/gm, counts: (m) => ({ passed: number(m[1]), failed: number(m[2]) }) },
];

/** Runners that print the two numbers on separate lines. */
const split: Array<{ passed: RegExp; failed: RegExp }> = [
  // node:test / TAP: "# pass 4" / "# fail 0" (node --test's spec reporter: "ℹ pass 4" / "ℹ fail 0")
  { passed: /^(?:#|ℹ) pass (\d+)\s*$/gm, failed: /^(?:#|ℹ) fail (\d+)\s*$/gm },
  // Mocha: "  4 passing (12ms)" / "  1 failing"
  { passed: /^\s*(\d+) passing\b/gm, failed: /^\s*(\d+) failing\s*$/gm },
];

/** go test -v: one line per test (subtests indented: counted too, as go test itself reports them). */
const goTest = { passed: /^\s*--- PASS: /gm, failed: /^\s*--- FAIL: /gm };

function sum(text: string, pattern: RegExp): number | undefined {
  let total: number | undefined;
  for (const match of text.matchAll(pattern)) total = (total ?? 0) + number(match[1]);
  return total;
}

function count(text: string, pattern: RegExp): number {
  return [...text.matchAll(pattern)].length;
}

/** The tests a gate's output reports as passed and failed, or undefined when it reports none. */
export function parseTestCounts(output: string): TestCounts | undefined {
  const text = output.replace(ansi, '').replace(/\r/g, '');
  let found = false;
  const total: TestCounts = { passed: 0, failed: 0 };
  for (const pattern of summaries) {
    for (const match of text.matchAll(pattern.line)) {
      const counts = pattern.counts(match as RegExpExecArray);
      if (counts.passed === 0 && counts.failed === 0 && !/\b0 (?:passed|failed)\b/.test(match[0])) continue;
      found = true;
      total.passed += counts.passed ?? 0;
      total.failed += counts.failed ?? 0;
    }
  }
  for (const pattern of split) {
    const passed = sum(text, pattern.passed);
    const failed = sum(text, pattern.failed);
    if (passed === undefined && failed === undefined) continue;
    found = true;
    total.passed += passed ?? 0;
    total.failed += failed ?? 0;
  }
  const goPassed = count(text, goTest.passed);
  const goFailed = count(text, goTest.failed);
  if (goPassed + goFailed > 0) {
    found = true;
    total.passed += goPassed;
    total.failed += goFailed;
  }
  return found ? total : undefined;
}

/** Adds counts up; undefined stays undefined only when every part is. */
export function addTestCounts(parts: ReadonlyArray<TestCounts | undefined>): TestCounts | undefined {
  const known = parts.filter((part): part is TestCounts => part !== undefined);
  if (known.length === 0) return undefined;
  return known.reduce((total, part) => ({ passed: total.passed + part.passed, failed: total.failed + part.failed }), { passed: 0, failed: 0 });
}
