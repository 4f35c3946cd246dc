/**
 * `urlSource` / `urlFiles` against the servers users have: Range honoured or ignored, HEAD
 * refused or sizeless, and a single-page-app server that answers an HTML page for every missing
 * file. Every read is checked against the file on disk, and the server counts what it sent.
 */
import {
  deepStrictEqual as deepEqual,
  match,
  ok,
  rejects,
  strictEqual as equal,
} from "node:assert/strict";
import { EngineError } from "../contract/errors.ts";
import { dirFiles } from "../adapters/deno/file_source.ts";
import { rangeServer, type RangeServerOptions } from "../../test/support/range_server.ts";
import { openCheckpoint } from "../model/checkpoint.ts";
import { loadText } from "../text/load.ts";
import { readCheckpoint, type TensorInfo } from "./safetensors.ts";
import type { ByteSource } from "./source.ts";
import { urlFiles, urlSource } from "./url_source.ts";

const FORTUNE = new URL("../../models/fortune/", import.meta.url).pathname;
const WEIGHTS = "model.safetensors";
const SIZE = (await Deno.stat(FORTUNE + WEIGHTS)).size;
const SPA = "<!doctype html>\n<html><body><div id=app></div></body></html>\n";

/**
 * Every tensor of fortune read over HTTP, checked against the disk: the first alone, then
 * `check()`, then all the others at once.
 */
async function readAllTensors(base: string, check = () => {}): Promise<void> {
  const remote = await readCheckpoint(urlFiles(base).open);
  const local = await readCheckpoint(dirFiles(FORTUNE).open);
  equal(remote.size, local.size);
  const read = (t: TensorInfo) => t.source.read(t.offset, t.length);
  const [first, ...rest] = [...remote.keys()];
  deepEqual(await read(remote.get(first!)!), await read(local.get(first!)!));
  check();
  const got = await Promise.all(rest.map((n) => read(remote.get(n)!)));
  const want = await Promise.all(rest.map((n) => read(local.get(n)!)));
  got.forEach((g, i) => deepEqual(g, want[i]));
}

async function withServer(
  options: RangeServerOptions,
  run: (s: ReturnType<typeof rangeServer>) => Promise<void>,
): Promise<void> {
  const server = rangeServer(FORTUNE, options);
  try {
    await run(server);
  } finally {
    await server.shutdown();
  }
}

const gets = (s: ReturnType<typeof rangeServer>, path: string) =>
  s.served.filter((r) => r.method === "GET" && r.path === path);

Deno.test("a server that ignores Range: the file is downloaded once and every read sliced", async () => {
  await withServer({ range: false }, async (s) => {
    const once = () => equal(gets(s, WEIGHTS).length, 1, JSON.stringify(gets(s, WEIGHTS)));
    await readAllTensors(s.base, once);
    once();
    equal(s.bytesSent(WEIGHTS), SIZE);
  });
});

Deno.test("a server that honours Range is read by ranges, never whole", async () => {
  for (const acceptRanges of [undefined, "bytes"]) {
    await withServer({ ...(acceptRanges ? { acceptRanges } : {}) }, async (s) => {
      await readAllTensors(s.base);
      const all = gets(s, WEIGHTS);
      ok(all.length > 2 && all.every((r) => r.status === 206), `${acceptRanges}: all 206`);
      ok(s.bytesSent(WEIGHTS) <= SIZE, `${s.bytesSent(WEIGHTS)} bytes`);
    });
  }
});

Deno.test("Accept-Ranges: none reads the file whole at once, without asking for a range", async () => {
  await withServer({ range: false, acceptRanges: "none" }, async (s) => {
    await readAllTensors(s.base);
    deepEqual(gets(s, WEIGHTS).map((r) => r.range), [null]);
    equal(s.bytesSent(WEIGHTS), SIZE);
  });
});

Deno.test("HEAD refused (405) or sizeless: the size comes from a bytes=0-0 GET", async () => {
  for (const head of ["405", "no-size"] as const) {
    await withServer({ head }, async (s) => {
      const src = (await urlSource(`${s.base}${WEIGHTS}`))!;
      equal(src.size, SIZE, head);
      deepEqual(gets(s, WEIGHTS).map((r) => [r.range, r.status, r.bytes]), [["bytes=0-0", 206, 1]]);
      await readAllTensors(s.base);
    });
    // Without Range too: fortune's weights (under 16 MiB) come whole in the probe's answer and
    // are kept, so no second download.
    await withServer({ head, range: false }, async (s) => {
      const files = urlFiles(s.base);
      const src = (await files.open(WEIGHTS))!;
      equal(src.size, SIZE, head);
      const local = (await dirFiles(FORTUNE).open(WEIGHTS))!;
      deepEqual(await src.read(1000, 5000), await local.read(1000, 5000));
      equal(gets(s, WEIGHTS).length, 1);
      equal(s.bytesSent(WEIGHTS), SIZE);
      equal(await files.open("no-such.json"), undefined);
    });
  }
});

/** A fake server for one file: counts requests, ignores Range, can refuse HEAD or fail once. */
function fakeFile(bytes: Uint8Array, o: { head: boolean; failFirstGet?: boolean }) {
  const log: { method: string; range: string | null; cancelled: boolean }[] = [];
  let failed = false;
  const fetchFn = (_url: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const method = init?.method ?? "GET";
    const entry = { method, range: new Headers(init?.headers).get("range"), cancelled: false };
    log.push(entry);
    if (method === "HEAD") {
      return Promise.resolve(
        o.head
          ? new Response(null, { headers: { "content-length": String(bytes.length) } })
          : new Response(null, { status: 405 }),
      );
    }
    if (o.failFirstGet && !failed) {
      failed = true;
      return Promise.reject(new TypeError("connection reset"));
    }
    let at = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        if (at >= bytes.length) return c.close();
        c.enqueue(bytes.slice(at, at += 1 << 20));
      },
      cancel() {
        entry.cancelled = true;
      },
    }, { highWaterMark: 0 });
    return Promise.resolve(
      new Response(body, { headers: { "content-length": String(bytes.length) } }),
    );
  };
  return { log, fetchFn: fetchFn as typeof fetch };
}

Deno.test("no HEAD, no Range, a large file: the probe's whole-file answer is dropped, not kept", async () => {
  const bytes = new Uint8Array(20 << 20).map((_, i) => i * 7);
  const f = fakeFile(bytes, { head: false });
  const src = (await urlSource("http://h/big.bin", f.fetchFn))!;
  equal(src.size, bytes.length);
  deepEqual(f.log.map((r) => [r.method, r.range, r.cancelled]), [
    ["HEAD", null, false],
    ["GET", "bytes=0-0", true],
  ]);
  deepEqual(await src.read(bytes.length - 10, 10), bytes.subarray(bytes.length - 10));
  deepEqual(await src.read(3, 4), bytes.subarray(3, 7));
  equal(f.log.length, 3, "one download for both reads");
});

Deno.test("a failed whole download is retried by the next read; release() drops the copy", async () => {
  const bytes = new Uint8Array(4096).map((_, i) => i);
  const f = fakeFile(bytes, { head: true, failFirstGet: true });
  const src: ByteSource = (await urlSource("http://h/f.bin", f.fetchFn))!;
  await rejects(src.read(0, 8), (e) => e instanceof EngineError && e.type === "CannotConnect");
  deepEqual(await src.read(8, 8), bytes.subarray(8, 16));
  deepEqual(await src.read(100, 8), bytes.subarray(100, 108));
  equal(f.log.filter((r) => r.method === "GET").length, 2, "failed, then one download");
  src.release!();
  deepEqual(await src.read(0, 4), bytes.subarray(0, 4));
  equal(f.log.filter((r) => r.method === "GET").length, 3, "downloaded again after release");
});

Deno.test("reads wait for the first answer when the server has not said it has Range", async () => {
  const bytes = new Uint8Array(1000).map((_, i) => i);
  for (const accept of [null, "bytes"]) {
    const gate = Promise.withResolvers<void>();
    let asked = 0;
    const all = Promise.withResolvers<void>();
    const fetchFn = (async (_u: unknown, init?: RequestInit) => {
      if (init?.method === "HEAD") {
        const headers: Record<string, string> = { "content-length": "1000" };
        if (accept) headers["accept-ranges"] = accept;
        return new Response(null, { headers });
      }
      if (++asked === 3) all.resolve();
      await gate.promise;
      const [, a, b] = /bytes=(\d+)-(\d+)/.exec(new Headers(init?.headers).get("range")!)!;
      return new Response(bytes.slice(Number(a), Number(b) + 1), { status: 206 });
    }) as typeof fetch;
    const src = (await urlSource("http://h/f", fetchFn))!;
    const reads = [0, 100, 200].map((at) => src.read(at, 10));
    if (accept === "bytes") {
      await all.promise; // three requests out before any answer
    } else {
      await new Promise((r) => setTimeout(r, 0));
      equal(asked, 1, "one request until the server shows it honours Range");
    }
    gate.resolve();
    const got = await Promise.all(reads);
    got.forEach((g, i) => deepEqual(g, bytes.subarray(i * 100, i * 100 + 10)));
    equal(asked, 3);
  }
});

const htmlError = (file: string) => (e: unknown) => {
  ok(e instanceof EngineError && e.type === "InvalidArgument", String(e));
  ok(e.message.includes(file), e.message);
  match(e.message, /HTML page/);
  match(e.message, /single-page-app fallback/);
  match(e.message, /appType: "mpa"/);
  return true;
};

/** Fortune's optional files, hidden so the fallback page answers for them. */
const OPTIONAL = ["tokenizer_config.json", "generation_config.json"];

Deno.test("an SPA fallback (HTML for every missing file): optional files absent, required ones named", async () => {
  await withServer({ fallback: SPA, hide: OPTIONAL }, async (s) => {
    // Without tokenizer_config.json and generation_config.json, both are answered HTML.
    const text = await loadText(urlFiles(s.base));
    ok(text.tokenizer.encode("Hi").length > 0);
    equal((await openCheckpoint(urlFiles(s.base))).format, "safetensors");
    ok(s.served.some((r) => r.path === "tokenizer_config.json" && r.status === 200));
    const files = urlFiles(s.base);
    equal(await files.open("generation_config.json"), undefined);
    match(files.describeMissing!("generation_config.json"), /HTML page/);
    await rejects(urlSource(`${s.base}x.gguf`), htmlError(`${s.base}x.gguf`));
  });
  for (const missing of ["tokenizer.json", "config.json", WEIGHTS]) {
    await withServer({ fallback: SPA, hide: [missing] }, async (s) => {
      const load = missing === "tokenizer.json"
        ? loadText(urlFiles(s.base))
        : openCheckpoint(urlFiles(s.base));
      await rejects(load, htmlError(`${s.base}${missing}`));
    });
  }
  await withServer({ fallback: SPA }, async (s) => {
    await rejects(openCheckpoint(urlFiles(`${s.base}m.gguf`)), htmlError(`${s.base}m.gguf`));
  });
});

Deno.test("an SPA fallback sent as application/octet-stream: known by its body", async () => {
  await withServer(
    { fallback: SPA, fallbackType: "application/octet-stream", hide: OPTIONAL },
    async (s) => {
      ok((await loadText(urlFiles(s.base))).tokenizer.encode("Hi").length > 0, "optional: absent");
    },
  );
  for (const missing of ["tokenizer.json", "config.json", WEIGHTS]) {
    await withServer(
      { fallback: SPA, fallbackType: "application/octet-stream", hide: [missing] },
      async (s) => {
        const load = missing === "tokenizer.json"
          ? loadText(urlFiles(s.base))
          : openCheckpoint(urlFiles(s.base));
        await rejects(load, htmlError(`${s.base}${missing}`));
      },
    );
  }
  await withServer(
    { fallback: SPA, fallbackType: "application/octet-stream", hide: OPTIONAL },
    async (s) => {
      await rejects(openCheckpoint(urlFiles(`${s.base}m.gguf`)), htmlError(`${s.base}m.gguf`));
    },
  );
});
