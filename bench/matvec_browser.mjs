// In Chromium (SwiftShader WebGPU, or a real GPU with CHROMIUM_ARGS): decode products with one
// thread per output row against 64 threads per row reduced through workgroup memory, side by
// side on the same adapter. Prints the JSON report (ms per product and the ratio) and writes it
// with --out FILE.
//
//   node bench/matvec_browser.mjs [--out bench/results/matvec-threads-swiftshader.json]
import { writeFileSync } from "node:fs";
import { launchBrowser, startServer } from "../test/support/browser.mjs";

const out = process.argv.includes("--out") ? process.argv[process.argv.indexOf("--out") + 1] : "";
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
