/** Page-side helper: run named checks and publish them on `window.__kiln` for the driver. */
export interface CheckResult {
  name: string;
  passed: boolean;
  message?: string;
}

declare global {
  var __kiln: { done: boolean; results: CheckResult[] } | undefined;
}

export async function runChecks(
  checks: ReadonlyArray<readonly [string, () => Promise<string | void>]>,
): Promise<void> {
  const results: CheckResult[] = [];
  globalThis.__kiln = { done: false, results };
  for (const [name, fn] of checks) {
    try {
      const message = await fn();
      results.push(
        message === undefined ? { name, passed: true } : { name, passed: true, message },
      );
    } catch (e) {
      results.push({
        name,
        passed: false,
        message: e instanceof Error ? e.stack ?? e.message : String(e),
      });
    }
    const line = document.createElement("pre");
    const last = results[results.length - 1]!;
    line.textContent = `${last.passed ? "ok  " : "FAIL"} ${name}${
      last.message ? `: ${last.message}` : ""
    }`;
    document.body.append(line);
  }
  globalThis.__kiln.done = true;
}
