// In Chromium (SwiftShader WebGPU, or a real GPU with CHROMIUM_ARGS): decode products with one
// thread per output row against 32 threads per row reduced through workgroup memory, side by
// side on the same adapter. Prints the JSON report (ms per product and the ratio) and writes it
// with --out FILE.
//
//   node bench/matvec_browser.mjs [--out bench/results/matvec-threads-swiftshader.json]
import { writeFileSync } from "node:fs";
import { runFlags } from "../scripts/flags.mjs";

const { out } = runFlags({
  name: "matvec_browser",
  command: "node bench/matvec_browser.mjs",
  about: "Decode products in Chromium, one thread per output row against 32 threads per row; " +
    "prints the JSON report.",
  flags: { out: { type: "string", arg: "FILE", help: "also write the JSON report here" } },
});
const { launchBrowser, startServer } = await import("../test/support/browser.mjs");
const { server, origin } = await startServer();
const browser = await launchBrowser();
try {
  const page = await browser.newPage();
  await page.goto(`${origin}/bench/pages/matvec.html`);
  await page.waitForFunction(() => globalThis.__kiln?.done === true, null, { timeout: 600_000 });
  const report = await page.evaluate(() => globalThis.__kiln.report);
  const json = JSON.stringify(report, null, 2);
  console.log(json);
  if (out) writeFileSync(out, json + "\n");
} finally {
  await browser.close();
  await server.close();
}
