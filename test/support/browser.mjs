// deno-lint-ignore-file explicit-module-boundary-types
// Browser test support (Node): a Vite dev server over the repository (it serves the TypeScript
// sources to the page as modules) and Debian's Chromium driven by playwright-core with
// SwiftShader WebGPU. Pages report their checks on `window.__kiln`.
import { after, before } from "node:test";
import { chromium } from "playwright-core";
import { createServer } from "vite";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--headless=new",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--enable-unsafe-webgpu",
  "--use-webgpu-adapter=swiftshader",
];

export function chromiumPath() {
  const path = process.env.CHROMIUM_PATH ??
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => existsSync(p));
  if (!path) {
    throw new Error("Chromium not found: apt-get install chromium (or set CHROMIUM_PATH)");
  }
  return path;
}

/**
 * Start a Vite dev server on 127.0.0.1 (ephemeral port) rooted at the repository; `plugins` are
 * Vite plugins to add (a middleware counting requests, say).
 */
export async function startServer(plugins = []) {
  const server = await createServer({
    root: ROOT,
    configFile: false,
    logLevel: "warn",
    clearScreen: false,
    server: { host: "127.0.0.1", port: 0, strictPort: false, hmr: false, watch: null },
    optimizeDeps: { noDiscovery: true, include: [] },
    plugins,
  });
  await server.listen();
  const address = server.httpServer?.address();
  if (!address || typeof address === "string") throw new Error("vite did not bind a port");
  // localhost is a secure context, so navigator.gpu exists there.
  return { server, origin: `http://localhost:${address.port}` };
}

export async function launchBrowser() {
  return await chromium.launch({ executablePath: chromiumPath(), args: CHROMIUM_ARGS });
}

/**
 * Open `page` (a path under the repository) and wait for `window.__kiln.done`; returns
 * `{results: [{name, passed, message}], logs}`.
 */
export async function runPage(browser, origin, page, timeoutMs = 300_000) {
  const tab = await browser.newPage();
  const logs = [];
  tab.on("console", (m) => logs.push(`[${m.type()}] ${m.text()}`));
  tab.on("pageerror", (e) => logs.push(`[pageerror] ${e.stack ?? e.message}`));
  try {
    await tab.goto(`${origin}/${page}`);
    await tab.waitForFunction(() => globalThis.__kiln?.done === true, null, { timeout: timeoutMs });
    const results = await tab.evaluate(() => globalThis.__kiln.results);
    return { results, logs };
  } catch (e) {
    throw new Error(`${page}: ${e.message}\n${logs.join("\n")}`);
  } finally {
    await tab.close();
  }
}

/**
 * Register before/after hooks for a test file: a Vite server and a Chromium shared by its tests.
 * Returns `run(page, timeoutMs)` for `runPage` against them.
 */
export function useBrowser() {
  let server, origin, browser;
  before(async () => {
    ({ server, origin } = await startServer());
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });
  return (page, timeoutMs) => runPage(browser, origin, page, timeoutMs);
}
