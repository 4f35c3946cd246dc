/** Counts the test cases of a JUnit XML report. */
export interface Counts {
  passed: number;
  failed: number;
  skipped: number;
}

/**
 * Count `<testcase>` elements; one holding `<failure>` or `<error>` failed, one holding
 * `<skipped>` was skipped. A test case holding nested test cases (steps) counts once per leaf.
 */
export function countJunit(xml: string): Counts {
  const counts: Counts = { passed: 0, failed: 0, skipped: 0 };
  const re = /<testcase\b[^>]*?(\/>|>([\s\S]*?)<\/testcase>)/g;
  for (const match of xml.matchAll(re)) {
    const body = match[2] ?? "";
    if (/<(failure|error)\b/.test(body)) counts.failed++;
    else if (/<skipped\b/.test(body)) counts.skipped++;
    else counts.passed++;
  }
  return counts;
}
