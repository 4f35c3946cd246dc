// The browser tests' fault-injecting server (test/support/fault_server.mjs) does what its faults
// say, on a small random file: Range and ETag as a file host has them, `x-linked-etag` the file's
// sha256, a cut after N body bytes once, Range ignored, a lying Content-Length, HTML, changed
// bytes and ETag, and a log of every request.
import { after, before, test } from "node:test";
import assert, { ok } from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFaultServer } from "../support/fault_server.mjs";

const SIZE = 3 << 20;
const bytes = randomBytes(SIZE);
let dir, server, url;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "kiln-fault-"));
  writeFileSync(join(dir, "m.gguf"), bytes);
  server = await startFaultServer({ files: { "/m.gguf": join(dir, "m.gguf") }, vite: false });
  url = `${server.origin}/m.gguf`;
});

after(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Read a response's body to its end; the bytes, or the error that ended it. */
async function body(res) {
  const parts = [];
  try {
    for await (const c of res.body) parts.push(c);
    return { bytes: Buffer.concat(parts) };
  } catch (e) {
    return { bytes: Buffer.concat(parts), error: e };
  }
}

test("HEAD, GET and a Range, with the ETag and x-linked-etag of the file's sha256", async () => {
  server.reset();
  const sha = createHash("sha256").update(bytes).digest("hex");
  const head = await fetch(url, { method: "HEAD" });
  assert.equal(head.status, 200);
  assert.equal(head.headers.get("content-length"), String(SIZE));
  assert.equal(head.headers.get("x-linked-etag"), `"${sha}"`);
  assert.equal(head.headers.get("etag"), `"${sha}"`);
  const whole = await body(await fetch(url));
  ok(whole.bytes.equals(bytes));
  const part = await fetch(url, { headers: { range: "bytes=100-199" } });
  assert.equal(part.status, 206);
  assert.equal(part.headers.get("content-range"), `bytes 100-199/${SIZE}`);
  ok((await body(part)).bytes.equals(bytes.subarray(100, 200)));
  assert.deepEqual(
    server.requests.map((r) => [r.method, r.range, r.status, r.bytes]),
    [["HEAD", null, 200, 0], ["GET", null, 200, SIZE], ["GET", "bytes=100-199", 206, 100]],
  );
  assert.equal(server.bytesSent("/m.gguf"), SIZE + 100);
});

test("cutAfter closes the connection once after that many body bytes of the path", async () => {
  server.reset();
  const cut = 1_500_000;
  server.setFaults("/m.gguf", { cutAfter: cut });
  const first = await body(await fetch(url));
  ok(first.error, "the body ended in an error");
  assert.equal(first.bytes.length, cut);
  ok(first.bytes.equals(bytes.subarray(0, cut)));
  const resumed = await fetch(url, { headers: { range: `bytes=${cut}-` } });
  ok((await body(resumed)).bytes.equals(bytes.subarray(cut)), "the next request is whole");
  assert.deepEqual(server.requests.map((r) => r.cut), [true, false]);
});

test("ignoreRange answers 200 with the whole file; html answers a page", async () => {
  server.reset();
  server.setFaults("/m.gguf", { ignoreRange: true });
  const res = await fetch(url, { headers: { range: "bytes=0-9" } });
  assert.equal(res.status, 200);
  assert.equal((await body(res)).bytes.length, SIZE);
  server.setFaults("/m.gguf", { html: true });
  const page = await fetch(url);
  assert.equal(page.headers.get("content-type"), "text/html");
  ok((await page.text()).startsWith("<!doctype html>"));
});

test("lieLength: a Content-Length over the body ends it early, one under truncates it", async () => {
  server.reset();
  server.setFaults("/m.gguf", { lieLength: 1000 });
  const more = await fetch(url, { headers: { range: "bytes=0-999" } });
  assert.equal(more.headers.get("content-length"), "2000");
  const got = await body(more);
  ok(got.error, "the body ended before its Content-Length");
  assert.equal(got.bytes.length, 1000);
  server.setFaults("/m.gguf", { lieLength: -10 });
  const less = await fetch(url, { headers: { range: "bytes=0-999" } });
  assert.equal((await body(less)).bytes.length, 990);
});

test("changeAfter: after N GETs the bytes and the ETag change; x-linked-etag does not", async () => {
  server.reset();
  server.setFaults("/m.gguf", { changeAfter: 1 });
  const a = await fetch(url, { headers: { range: "bytes=0-99" } });
  const aBytes = (await body(a)).bytes;
  const b = await fetch(url, { headers: { range: "bytes=0-99" } });
  const bBytes = (await body(b)).bytes;
  ok(aBytes.equals(bytes.subarray(0, 100)));
  ok(!bBytes.equals(aBytes), "the second Range's bytes differ");
  assert.notEqual(a.headers.get("etag"), b.headers.get("etag"));
  assert.equal(a.headers.get("x-linked-etag"), b.headers.get("x-linked-etag"));
});

test("throttle holds a body to about its rate", async () => {
  server.reset();
  server.setFaults("/m.gguf", { throttle: 4 << 20 });
  const t0 = Date.now();
  await body(await fetch(url, { headers: { range: `bytes=0-${(2 << 20) - 1}` } }));
  const seconds = (Date.now() - t0) / 1000;
  ok(seconds >= 0.4, `2 MB at 4 MB/s took ${seconds} s`);
});
