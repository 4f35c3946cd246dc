// `npm run conformance:browser`: the conformance kit in Chromium (SwiftShader WebGPU) against the
// mock engine, against WorkerEngine on the fortune model, and against the ort engine (onnxruntime-
// web) in a Web Worker on fortune's ONNX export; one line per check, exit 0 when all pass.
import { runFlags } from "./flags.mjs";

runFlags({
  name: "conformance:browser",
  command: "npm run conformance:browser",
  about: "The conformance kit in Chromium against the mock engine, WorkerEngine on fortune and " +
    "the ort engine on fortune's ONNX export; one line per check, exit 0 when all pass.",
  flags: {},
});
const { launchBrowser, runPage, startServer } = await import("../test/support/browser.mjs");
const { onnxFortunePath } = await import("../test/support/onnx_web.mjs");

const { server, origin } = await startServer();
const browser = await launchBrowser();
let failed = 0;
try {
  const { results } = await runPage(
    browser,
    origin,
    `test/browser/pages/conformance.html?onnx=${encodeURIComponent(onnxFortunePath())}`,
    900_000,
  );
  for (const r of results) {
    if (!r.passed) failed++;
    console.log(
      `${r.passed ? "ok  " : "FAIL"} ${r.name}${r.message && !r.passed ? `  ${r.message}` : ""}`,
    );
  }
  console.log(
    failed === 0
      ? `conformance (browser): PASS (${results.length} checks)`
      : `conformance (browser): FAIL (${failed})`,
  );
} finally {
  await browser.close();
  await server.close();
}
process.exit(failed === 0 ? 0 : 1);
