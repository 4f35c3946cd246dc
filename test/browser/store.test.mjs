// The model store in Chromium: OPFS (writable streams on the page, sync access handles in a
// dedicated worker) and Cache Storage, each through a download cut at 40% and resumed from
// there, a reload with no request, a truncated and a flipped entry fetched again, a byte
// flipped at rest caught by its chunk hash on read (no SHA-256 given), and a quota refusal;
// the fortune model's weights, served by the Vite server over the repository.
import { test } from "node:test";
import { ok } from "node:assert/strict";
import { useBrowser } from "../support/browser.mjs";

const run = useBrowser();

test("model store: OPFS and Cache Storage, page and dedicated worker", async () => {
  const { results, logs } = await run("test/browser/pages/store.html", 300_000);
  for (const r of results) {
    console.log(`${r.passed ? "ok  " : "FAIL"} ${r.name}${r.message ? `: ${r.message}` : ""}`);
  }
  const failed = results.filter((r) => !r.passed);
  ok(results.length >= 16, `${results.length} checks\n${logs.join("\n")}`);
  ok(
    failed.length === 0,
    failed.map((r) => `${r.name}: ${r.message}`).join("\n") + logs.join("\n"),
  );
});
