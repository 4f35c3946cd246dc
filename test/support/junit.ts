/**
 * Counts the test cases of a JUnit XML report, read with a real XML parser (`fast-xml-parser`):
 * Node's reporter writes `>` unescaped inside attributes, which is legal XML and which a
 * regular expression over the text miscounted (3 passes and 1 failure read as 1 and 1).
 */
import { XMLParser } from "fast-xml-parser";

export interface Counts {
  passed: number;
  failed: number;
  skipped: number;
}

type Node = Record<string, unknown>;

const parser = new XMLParser({
  ignoreAttributes: true,
  // Elements that may repeat are always arrays; an empty `<testcase/>` reads as "".
  isArray: (name) => ["testsuite", "testcase", "failure", "error", "skipped"].includes(name),
});

/**
 * Count `<testcase>` elements wherever they are nested (Deno lists test steps as cases beside
 * their test; Node nests a test with subtests as a `<testsuite>` of its cases): one holding
 * `<failure>` or `<error>` failed, one holding `<skipped>` was skipped, any other passed.
 */
export function countJunit(xml: string): Counts {
  const counts: Counts = { passed: 0, failed: 0, skipped: 0 };
  const visit = (node: unknown): void => {
    if (typeof node !== "object" || node === null) return;
    for (const [name, value] of Object.entries(node as Node)) {
      const items = Array.isArray(value) ? value : [value];
      if (name !== "testcase") {
        items.forEach(visit);
        continue;
      }
      for (const c of items) {
        const has = (k: string) => typeof c === "object" && c !== null && k in c;
        if (has("failure") || has("error")) counts.failed++;
        else if (has("skipped")) counts.skipped++;
        else counts.passed++;
      }
    }
  };
  visit(parser.parse(xml));
  return counts;
}
