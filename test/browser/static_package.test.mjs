// Kiln with no bundler: `npm pack`, the tarball's `package/dist/pkg/browser/` copied as `kiln/`
// beside a copy of examples/static/ and its `package/models/fortune/` as `models/fortune/`, all
// served by a plain static file server (no Vite, no npm install), and the page driven in
// Chromium (SwiftShader WebGPU): generate, then Stop, then a `response_format` reply (XGrammar, a
// chunk beside kiln_worker.js, loaded on that request). A second origin serves the same folder with
// CORS, as a CDN would, and kiln.js imported from there runs its worker through the same-origin
// shim. The browser build's service worker, registered by the page, hosts the engine too.
import { after, before, test } from "node:test";
import assert, { ok } from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, statSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { extname, join, normalize } from "node:path";
import { launchBrowser } from "../support/browser.mjs";
import { packKiln, ROOT } from "../support/package.mjs";

const TYPES = {
  ".html": "text/html",
  ".js": "text/javascript",
  ".json": "application/json",
  ".safetensors": "application/octet-stream",
};

/**
 * A static file server over `root` on 127.0.0.1 (ephemeral port), with HEAD and single byte
 * ranges as any file host or CDN has them; returns its port.
 */
async function serve(root, headers = {}) {
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, "http://x").pathname);
    let file = normalize(join(root, path));
    try {
      if (!file.startsWith(root)) throw new Error("outside");
      if (statSync(file).isDirectory()) file = join(file, "index.html");
      let body = readFileSync(file);
      const type = { "content-type": TYPES[extname(file)] ?? "text/plain", ...headers };
      const range = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? "");
      if (range) {
        const [start, end] = [Number(range[1]), Math.min(Number(range[2]), body.length - 1)];
        type["content-range"] = `bytes ${start}-${end}/${body.length}`;
        body = body.subarray(start, end + 1);
      }
      res.writeHead(range ? 206 : 200, { ...type, "content-length": body.length });
      res.end(req.method === "HEAD" ? undefined : body);
    } catch {
      res.writeHead(404, headers).end();
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(server);
  return server.address().port;
}

const servers = [];
let site, origin, browser, page;
const pageErrors = [];
const workers = [];

before(async () => {
  const tgz = packKiln();
  const unpacked = mkdtempSync(join(tmpdir(), "kiln-static-tgz-"));
  execFileSync("tar", ["-xzf", tgz, "-C", unpacked]);
  site = join(mkdtempSync(join(tmpdir(), "kiln-static-")), "site");
  cpSync(join(ROOT, "examples/static"), site, { recursive: true });
  cpSync(join(unpacked, "package/dist/pkg/browser"), join(site, "kiln"), { recursive: true });
  // The fortune model that ships in the package (docs/embedding.md).
  cpSync(join(unpacked, "package/models/fortune"), join(site, "models/fortune"), {
    recursive: true,
  });
  // localhost is a secure context, so navigator.gpu exists there.
  origin = `http://localhost:${await serve(site)}`;
  browser = await launchBrowser();
  page = await browser.newPage();
  page.on("pageerror", (e) => pageErrors.push(e.stack ?? e.message));
  page.on("worker", (w) => workers.push(w.url()));
  await page.goto(`${origin}/`);
}, { timeout: 120_000 });

after(async () => {
  await browser?.close();
  for (const s of servers) s.close();
});

const ready = () => page.waitForSelector("body[data-state=ready]", { timeout: 60_000 });

async function generate(prompt, maxTokens, seed = 1) {
  await page.fill("#prompt", prompt);
  await page.fill("#max-tokens", String(maxTokens));
  // Seeded: unseeded, fortune may draw EOS within the tokens asked for and end with "stop".
  await page.fill("#seed", String(seed));
  await page.click("#generate");
}

async function finished() {
  await page.waitForSelector("#finish[data-finish]", { timeout: 60_000 });
  await ready();
  return {
    output: await page.locator("#output").textContent(),
    finish: await page.getAttribute("#finish", "data-finish"),
  };
}

test("the tarball's browser build, served as static files, loads fortune and streams text", async () => {
  await ready();
  assert.equal(await page.locator("#status").textContent(), "ready: fortune");
  await generate("You will", 24);
  const { output, finish } = await finished();
  ok(output.startsWith("You will") && output.length > "You will".length + 5, output);
  assert.equal(finish, "length");
  assert.deepEqual(pageErrors, []);
  assert.deepEqual(workers, [`${origin}/kiln/kiln_worker.js`]);
});

test("Stop ends a long generation midway with finish cancelled", async () => {
  await generate("A", 900);
  await page.waitForSelector("body[data-state=generating]");
  await page.click("#stop");
  const { output, finish } = await finished();
  assert.equal(finish, "cancelled");
  ok(output.length < 900, `${output.length} characters`);
  assert.deepEqual(pageErrors, []);
});

test("kiln.js from another origin (a CDN with CORS) starts its worker and generates", async () => {
  const cdn = `http://127.0.0.1:${await serve(join(site, "kiln"), {
    "access-control-allow-origin": "*",
  })}/kiln.js`;
  const out = await page.evaluate(async (url) => {
    const { openModel } = await import(url);
    const model = await openModel({ model: new URL("models/fortune/", location.href) });
    let text = "", finish;
    // Greedy: a sampled fortune may end (EOS) within 8 bytes, and "stop" would be right then.
    const options = { max_tokens: 8, temperature: 0 };
    for await (const piece of model.generate("You will", options)) {
      text += piece.text;
      finish = piece.finish ?? finish;
    }
    await model.close();
    return { text, finish };
  }, cdn);
  assert.equal(out.finish, "length", JSON.stringify(out));
  assert.equal(out.text.length, 8, JSON.stringify(out)); // fortune's tokens are bytes
  assert.deepEqual(pageErrors, []);
  assert.equal(workers.length, 2);
  assert.match(workers[1], new RegExp(`^blob:${origin}/`), "the worker is a same-origin blob shim");
});

test("the browser build's worker loads XGrammar (its own chunk) and honours response_format", async () => {
  const schema = {
    type: "object",
    properties: {
      mood: { enum: ["calm", "wild"] },
      luck: { type: "integer", minimum: 1, maximum: 9 },
    },
    required: ["mood", "luck"],
    additionalProperties: false,
  };
  const out = await page.evaluate(async (schema) => {
    const { openModel } = await import(new URL("kiln/kiln.js", location.href).href);
    const model = await openModel({ model: new URL("models/fortune/", location.href) });
    try {
      const r = await model.chat.completions.create({
        messages: [{ role: "user", content: "A fortune as JSON" }],
        max_tokens: 200,
        temperature: 1,
        seed: 2,
        response_format: { type: "json_schema", json_schema: { name: "f", schema } },
      });
      return { content: r.choices[0].message.content, finish: r.choices[0].finish_reason };
    } finally {
      await model.close();
    }
  }, schema);
  assert.equal(out.finish, "stop", JSON.stringify(out));
  const value = JSON.parse(out.content);
  assert.deepEqual(Object.keys(value).sort(), ["luck", "mood"]);
  ok(["calm", "wild"].includes(value.mood) && value.luck >= 1 && value.luck <= 9, out.content);
  assert.deepEqual(pageErrors, []);
});

test("the browser build's service worker, registered by the page, hosts the engine and honours response_format (XGrammar inlined: a service worker cannot import())", async () => {
  const out = await page.evaluate(async () => {
    const { openModel } = await import(new URL("kiln/kiln.js", location.href).href);
    const url = new URL("kiln/kiln_service_worker.js", location.href).href;
    await navigator.serviceWorker.register(url, { type: "module" });
    // The script URL is enough: openModel finds its registration and waits for it to activate.
    const model = await openModel({
      model: new URL("models/fortune/", location.href),
      share: "service-worker",
      serviceWorker: url,
    });
    try {
      let text = "";
      for await (const piece of model.generate("You will", { max_tokens: 8 })) text += piece.text;
      const r = await model.chat.completions.create({
        messages: [{ role: "user", content: "A fortune as JSON" }],
        max_tokens: 200,
        temperature: 1,
        seed: 2,
        response_format: { type: "json_object" },
      });
      const c = r.choices[0];
      return { sharing: model.sharing, text, content: c.message.content, finish: c.finish_reason };
    } finally {
      await model.close();
    }
  });
  assert.equal(out.sharing, "service-worker", JSON.stringify(out));
  ok(out.text.length > 0, out.text);
  assert.equal(out.finish, "stop", JSON.stringify(out));
  assert.equal(typeof JSON.parse(out.content), "object", out.content);
  assert.deepEqual(pageErrors, []);
});
