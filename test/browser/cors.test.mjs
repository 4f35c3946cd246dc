// `serve` seen from real Chromium pages: a page of a `--cors-origins` origin streams a chat
// completion through a CORS preflight (Authorization, JSON and an `x-stainless-*` header, as the
// `openai` client sends); a page of another origin is blocked; and a DNS-rebinding page (a name
// the browser resolves to 127.0.0.1, so it is same-origin with the server) gets 421.
import { after, before, test } from "node:test";
import { match, ok, strictEqual as equal } from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { chromiumPath } from "../support/browser.mjs";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const KEY = "k";

// Pages come from a real server: Playwright answers CORS preflights itself on routed pages.
const pages = createServer((_, res) => {
  res.writeHead(200, { "content-type": "text/html" });
  res.end("<!doctype html><title>page</title>");
});
let APP, OTHER, child, kiln, browser;

before(async () => {
  await new Promise((r) => pages.listen(0, "127.0.0.1", r));
  APP = `http://localhost:${pages.address().port}`;
  OTHER = `http://127.0.0.1:${pages.address().port}`;
  child = spawn(`${ROOT}node_modules/.bin/deno`, [
    "run",
    "-A",
    "--unstable-no-legacy-abort",
    `${ROOT}src/adapters/deno/serve.ts`,
    ...["--model", `${ROOT}models/fortune`, "--name", "fortune", "--port", "0"],
    ...["--api-key", KEY, "--cors-origins", APP],
  ], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "", err = "";
  child.stderr.on("data", (d) => (err += d));
  kiln = await new Promise((resolve, reject) => {
    child.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/\S+)/);
      if (m) resolve(m[1]);
    });
    child.on("exit", (code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
  for (let i = 0; i < 600; i++) {
    const r = await fetch(`${kiln}/health`).catch(() => undefined);
    if (r?.status === 200) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  browser = await chromium.launch({
    executablePath: chromiumPath(),
    args: [
      "--no-sandbox",
      "--headless=new",
      // The rebinding: evil.test resolves to 127.0.0.1.
      "--host-resolver-rules=MAP evil.test 127.0.0.1",
      // The rebinding page comes from `route` (no address), which Chrome's Local Network Access
      // counts as public and would block before Kiln sees the request; off, Chrome behaves as
      // browsers without it do, so what is tested is the server's own defence.
      "--disable-features=LocalNetworkAccessChecks",
    ],
  });
});

after(async () => {
  await browser?.close();
  child?.kill("SIGTERM");
  pages.close();
});

/** A tab on an empty page of `origin`. */
async function pageOf(origin) {
  const tab = await browser.newPage();
  await tab.goto(`${origin}/`);
  return tab;
}

test("a listed origin streams a chat completion through a preflight", async () => {
  const tab = await pageOf(APP);
  const got = await tab.evaluate(async ({ kiln, key }) => {
    const res = await fetch(`${kiln}/v1/chat/completions`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
        "x-stainless-os": "Linux",
      },
      body: JSON.stringify({
        model: "fortune",
        messages: [{ role: "user", content: "hi" }],
        max_tokens: 4,
        stream: true,
      }),
    });
    return { status: res.status, type: res.headers.get("content-type"), text: await res.text() };
  }, { kiln, key: KEY });
  await tab.close();
  equal(got.status, 200);
  equal(got.type, "text/event-stream");
  ok(got.text.trimEnd().endsWith("data: [DONE]"), got.text);
  match(got.text, /"finish_reason":"length"/);
});

test("a page of an origin not listed cannot call the server", async () => {
  const tab = await pageOf(OTHER);
  const got = await tab.evaluate(async ({ kiln, key }) => {
    try {
      const r = await fetch(`${kiln}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
      return `HTTP ${r.status}`;
    } catch (e) {
      return e.name;
    }
  }, { kiln, key: KEY });
  await tab.close();
  equal(got, "TypeError", "the browser refused the answer");
});

test("a DNS-rebinding page, same-origin with the server, gets 421", async () => {
  // The attacker's page, served from evil.test before its name was re-pointed (same-origin
  // requests need no preflight, so `route` serving it changes nothing below).
  const evil = `http://evil.test:${new URL(kiln).port}`;
  const tab = await browser.newPage();
  await tab.route(
    `${evil}/`,
    (r) => r.fulfill({ contentType: "text/html", body: "<!doctype html><title>evil</title>" }),
  );
  await tab.goto(`${evil}/`);
  const got = await tab.evaluate(async (key) => {
    const r = await fetch("/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "fortune", messages: [{ role: "user", content: "hi" }] }),
    });
    return { status: r.status, body: await r.json() };
  }, KEY);
  await tab.close();
  equal(got.status, 421);
  equal(got.body.error.code, "host_not_allowed");
});
