// The conformance kit and the mock engine run in Node (a bundle of the TypeScript sources).
import { before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = fileURLToPath(new URL("../../", import.meta.url));
let kiln;

before(async () => {
  const out = join(mkdtempSync(join(tmpdir(), "kiln-node-")), "kiln.mjs");
  const deno = join(root, "node_modules", ".bin", "deno");
  execFileSync(deno, ["bundle", "--quiet", "--platform=browser", "-o", out, "test/node/entry.ts"], {
    cwd: root,
    stdio: "inherit",
  });
  kiln = await import(pathToFileURL(out).href);
});

test("the mock engine passes the conformance kit in Node", async () => {
  const report = await kiln.runConformanceReport(() => new kiln.MockEngine());
  assert.equal(report.passed, true, kiln.formatReport(report));
  assert.equal(report.checks.length, 13);
  for (const c of report.checks) {
    assert.equal(typeof c.name, "string");
    assert.equal(typeof c.ms, "number");
    assert.equal(c.passed, true);
  }
  await kiln.runConformance(() => new kiln.MockEngine());
});

for (
  const kind of [
    "NoTerminalChunk",
    "CleanupWithoutStartFailed",
    "CompletionTokensMismatch",
    "MidStreamCancellationNotObserved",
    "PreAbortedRequestNotCancelled",
  ]
) {
  test(`a broken engine fails in Node with ${kind}`, async () => {
    await assert.rejects(kiln.runConformance(kiln.brokenEngine(kind)), (e) => e.kind === kind);
  });
}

test("wire JSON parses in Node too", () => {
  const req = kiln.parseRequest('{"token_ids":[1],"_HEALTH_CHECK":true}');
  assert.equal(req.is_probe, true);
  assert.throws(() => kiln.parseRequest('{"token_ids":[-1]}'), (e) => e.type === "InvalidArgument");
});
