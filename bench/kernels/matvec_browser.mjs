// In Chromium (SwiftShader WebGPU, or a real GPU with CHROMIUM_ARGS): a benchmark page of
// bench/kernels/pages/ or bench/probes/pages/ — `matvec` (default): decode products with one thread per output row against 32
// threads per row reduced through workgroup memory, side by side on the same adapter; `dp4a`:
// bench/probes/dp4a_run.ts. Prints the page's JSON report and writes it with --out FILE.
//
//   node bench/kernels/matvec_browser.mjs [--page matvec|dp4a] [--quick] [--out FILE.json]
import { writeFileSync } from "node:fs";
import process from "node:process";
import { runFlags } from "../../scripts/flags.mjs";

const { out, page: name, quick } = runFlags({
  name: "matvec_browser",
  command: "node bench/kernels/matvec_browser.mjs",
  about: "A benchmark page in Chromium: decode products, one thread per output row against 32 " +
    "threads per row (matvec), or dot4I8Packed against float products (dp4a); prints the JSON " +
    "report.",
  flags: {
    page: { type: "string", arg: "matvec|dp4a", default: "matvec", help: "the page" },
    quick: { type: "boolean", help: "dp4a: one small shape (checks the plumbing)" },
    out: { type: "string", arg: "FILE", help: "also write the JSON report here" },
  },
});
if (!["matvec", "dp4a"].includes(name)) {
  console.error(`matvec_browser: --page: matvec or dp4a, got ${JSON.stringify(name)}`);
  process.exit(2);
}
const { launchBrowser, startServer } = await import("../../test/support/browser.mjs");
const { server, origin } = await startServer();
const browser = await launchBrowser();
try {
  const page = await browser.newPage();
  const dir = name === "dp4a" ? "bench/probes/pages" : "bench/kernels/pages";
  await page.goto(`${origin}/${dir}/${name}.html${quick ? "?quick" : ""}`);
  await page.waitForFunction(() => globalThis.__kiln?.done === true, null, { timeout: 600_000 });
  const report = await page.evaluate(() => globalThis.__kiln.report);
  const json = JSON.stringify(report, null, 2);
  console.log(json);
  if (out) writeFileSync(out, json + "\n");
} finally {
  await browser.close();
  await server.close();
}
