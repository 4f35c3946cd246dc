// A 2 GB model in Chromium (SwiftShader WebGPU): the random-weight GGUF of Llama-3.2-3B's shape at
// Q4_K_M (test/support/big_model.ts; generated once into the ignored .cache/big-model/), served by
// the fault-injecting server (test/support/fault_server.mjs) on the same origin as a page that
// imports Kiln's sources (test/browser/pages/big_model.ts). Measured: `openModel` against a raw
// `fetch()` of the same bytes in the same page, the bytes the server sent, the peak JS heap of the
// page and of Kiln's worker (CDP) and the peak RSS of the renderer, GPU and network processes
// (/proc); the greedy tokens against `WebGpuEngine` in Deno on lavapipe. What waits on the model
// store and the shared engine (issue 24) is here as skipped tests whose reason says so; their
// bodies are the checks, to switch on as those land. Numbers land in test/artifacts/big_model.json.
import { after, before, test } from "node:test";
import assert, { ok } from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { launchBrowser } from "../support/browser.mjs";
import { startFaultServer } from "../support/fault_server.mjs";
import { sampleHeap } from "../support/heap_sampler.mjs";
import { ROOT } from "../support/package.mjs";
import { sampleChromiumMemory } from "../support/proc_memory.mjs";

const run = promisify(execFile);
const DENO = join(ROOT, "node_modules/.bin/deno");
const MODEL = "/models/big/llama-3b-q4km.gguf";
/** KV blocks of 16 tokens: enough for the prompt and a few tokens, small beside 2 GB. */
const KV_BLOCKS = 8;
/** Tokens generated (first token compared; both reported). */
const STEPS = 2;
/** A greedy pick is compared only where Deno's top-2 logprob margin is above this. */
const MARGIN = 0.05;
/** |Chromium's logprob − Deno's| of the first token (measured: 5e-4). */
const LOGPROB_TOL = 1e-2;
/** Bounds (ms): the first load over HTTP, and the generation on SwiftShader. */
const LOAD_MS = 15 * 60_000;
const GENERATE_MS = 10 * 60_000;
/** Issue 24's goal for the worker's peak JS heap while loading. */
const HEAP_GOAL = 256 * 2 ** 20;
/** What waits on the model store (OPFS cache, resume, integrity, quota) and the shared engine. */
const PENDING = "needs store/shared merge";

const MB = (n) => Math.round((n / 2 ** 20) * 10) / 10;
const report = {};
const rssMB = (peaks) =>
  Object.fromEntries(
    Object.entries(peaks).map(([k, v]) => [k, { max: MB(v.max), sum: MB(v.sum) }]),
  );
let model, server, browser, page;
const pageErrors = [];

const deno = async (script, env = {}) => {
  const { stdout } = await run(DENO, ["run", "-A", script], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    maxBuffer: 16 << 20,
    timeout: 20 * 60_000,
  });
  return JSON.parse(stdout.trim().split("\n").pop());
};

/** `promise`'s value, or `{ error }` when it takes more than `ms` (the timer then cleared). */
async function within(promise, ms, what) {
  let timer;
  const late = new Promise((r) => {
    timer = setTimeout(() => r({ error: `no ${what} within ${ms / 1000} s` }), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

const big = (name, ...args) =>
  page.evaluate(([name, args]) => globalThis.__big[name](...args), [name, args]);

async function openPage(p) {
  p.on("pageerror", (e) => pageErrors.push(e.stack ?? e.message));
  await p.goto(`${server.origin}/test/browser/pages/big_model.html`);
  await p.waitForFunction(() => globalThis.__big !== undefined, null, { timeout: 120_000 });
}

before(async () => {
  const t0 = Date.now();
  model = await deno("test/support/big_model.ts");
  report.model = { path: model.path, bytes: model.bytes, reused: model.reused };
  report.generateSeconds = model.seconds;
  const t1 = Date.now();
  server = await startFaultServer({ files: { [MODEL]: model.path } });
  report.serverStartSeconds = (Date.now() - t1) / 1000;
  browser = await launchBrowser();
  page = await browser.newPage();
  await openPage(page);
  report.setupSeconds = (Date.now() - t0) / 1000;
}, { timeout: 20 * 60_000 });

after(async () => {
  await browser?.close();
  await server?.close();
  mkdirSync(join(ROOT, "test/artifacts"), { recursive: true });
  writeFileSync(join(ROOT, "test/artifacts/big_model.json"), JSON.stringify(report, null, 2));
  console.log(`big model report: ${JSON.stringify(report)}`);
});

test(
  "a 2 GB GGUF loads through openModel over HTTP: time against a raw fetch, bytes sent, peak memory",
  {
    timeout: LOAD_MS + 5 * 60_000,
  },
  async (t) => {
    const raw = await big("rawFetch", MODEL);
    ok(!raw.error, `raw fetch: ${raw.error}`);
    assert.equal(raw.bytes, model.bytes, "the raw fetch read the whole file");
    server.reset();
    const rss = sampleChromiumMemory();
    const heap = await sampleHeap(page);
    const load = await within(
      big("load", MODEL, { engine: { kvBlocks: KV_BLOCKS } }),
      LOAD_MS,
      "an engine",
    );
    const heapPeaks = await heap.stop();
    const rssPeaks = rss.stop();
    const sent = server.bytesSent(MODEL);
    const gets = server.requests.filter((r) => r.path === MODEL && r.method === "GET");
    Object.assign(report, {
      rawFetch: { seconds: raw.seconds, mbPerS: MB(raw.bytes) / raw.seconds },
      load: load.error ? load : {
        seconds: load.seconds,
        mbPerS: MB(model.bytes) / load.seconds,
        vsRaw: raw.seconds / load.seconds,
        runtimeData: load.config.runtime_data,
      },
      network: { bytes: sent, requests: gets.length, ranges: gets.slice(0, 5).map((r) => r.range) },
      heapMB: {
        pageUsed: MB(heapPeaks.page.used),
        pageBacking: MB(heapPeaks.page.backing),
        workerUsed: MB(heapPeaks.worker.used),
        workerBacking: MB(heapPeaks.worker.backing),
        samples: heapPeaks.samples,
      },
      rssMB: rssMB(rssPeaks.peaks),
    });
    t.diagnostic(JSON.stringify({ load: report.load, rawFetch: report.rawFetch }));
    t.diagnostic(JSON.stringify({ network: report.network, heapMB: report.heapMB }));
    t.diagnostic(JSON.stringify({ rssMB: report.rssMB }));
    ok(!load.error, `openModel: ${load.error}\n${pageErrors.join("\n")}`);
    ok(heapPeaks.samples > 0 && heapPeaks.worker.used > 0, "the worker's heap was sampled");
    ok(rssPeaks.peaks["gpu-process"]?.max > 0, "the GPU process's RSS was sampled");
    // Every weight byte crossed the network once; a loader that fetched the file twice (or a
    // whole-file GET after Ranges) would send more than 1.1 times it.
    ok(sent >= model.bytes * 0.99, `only ${sent} of ${model.bytes} bytes were sent`);
    ok(sent <= model.bytes * 1.1, `${sent} bytes sent for a ${model.bytes}-byte file`);
  },
);

test("the worker's peak JS heap while loading is within issue 24's 256 MB", {
  skip: "needs streamed upload merge (measured and reported by the first-load test today)",
}, () => {
  ok(report.heapMB, "the first load ran");
  ok(
    report.heapMB.workerUsed + report.heapMB.workerBacking <= MB(HEAP_GOAL),
    `worker heap ${report.heapMB.workerUsed} MB + ${report.heapMB.workerBacking} MB of buffers`,
  );
});

test("the greedy tokens in Chromium match WebGpuEngine's in Deno on lavapipe", {
  timeout: GENERATE_MS + 20 * 60_000,
}, async (t) => {
  ok(report.load && !report.load.error, "the model is loaded (first test)");
  const ref = await deno("test/support/big_reference.ts", { KILN_BIG_STEPS: String(STEPS) });
  report.deno = ref;
  const rss = sampleChromiumMemory();
  const got = await within(big("greedy", ref.prompt, STEPS), GENERATE_MS, "the tokens");
  report.chromium = got;
  report.rssMBGenerate = rssMB(rss.stop().peaks);
  t.diagnostic(JSON.stringify({ deno: ref, chromium: got, rssMB: report.rssMBGenerate }));
  ok(!got.error, `generate: ${got.error}\n${pageErrors.join("\n")}`);
  assert.equal(got.ids.length, STEPS);
  for (const row of [...got.top, ...ref.top]) {
    ok(row.every(([, lp]) => Number.isFinite(lp)), `a logprob is not finite: ${row}`);
  }
  const margin = ref.top[0][0][1] - ref.top[0][1][1];
  report.firstTokenMargin = margin;
  if (margin > MARGIN) {
    assert.equal(got.ids[0], ref.ids[0], "the first token");
    // The same kernels on two CPU adapters: the chosen token's logprob agrees closely too.
    const diff = Math.abs(got.top[0][0][1] - ref.top[0][0][1]);
    ok(
      diff <= LOGPROB_TOL,
      `first token's logprob: Chromium ${got.top[0][0][1]}, Deno ${ref.top[0][0][1]}`,
    );
  } else t.diagnostic(`Deno's top-2 margin ${margin} is a near-tie: the first token is not held`);
  // The second is held only while the first agreed (then both saw the same input).
  const margin2 = ref.top[1][0][1] - ref.top[1][1][1];
  if (got.ids[0] === ref.ids[0] && margin2 > MARGIN) assert.equal(got.ids[1], ref.ids[1]);
});

// ---- Waiting on the model store and the shared engine (issue 24, items 1 and 5). ----

async function loadCached(p = page) {
  const r = await p.evaluate(
    ([url, kv]) => globalThis.__big.load(url, { cache: true, engine: { kvBlocks: kv } }),
    [MODEL, KV_BLOCKS],
  );
  ok(!r.error, `openModel({ cache: true }): ${r.error}`);
  return r;
}

test("a reload comes from OPFS: no network bytes for the model", { skip: PENDING }, async () => {
  await big("close");
  await loadCached();
  await big("close");
  server.reset();
  const r = await loadCached();
  report.opfsReloadSeconds = r.seconds;
  assert.equal(server.bytesSent(MODEL), 0, "bytes sent for a cached model");
  assert.deepEqual(server.requests.filter((q) => q.method === "GET" && q.path === MODEL), []);
});

test("a download cut at 40% resumes from there", { skip: PENDING }, async () => {
  await big("close");
  await big("call", "deleteCachedModel", `${server.origin}${MODEL}`);
  server.reset();
  const cut = Math.floor(model.bytes * 0.4);
  server.setFaults(MODEL, { cutAfter: cut });
  const first = await big("load", MODEL, { cache: true, engine: { kvBlocks: KV_BLOCKS } });
  const cutAt = server.requests.findIndex((q) => q.cut);
  ok(cutAt >= 0, "the server cut a response");
  if (first.error) {
    // The store gave up after the cut: the next load must continue, not restart.
    const before = server.requests.length;
    await loadCached();
    const next = server.requests.slice(before).find((q) => q.method === "GET" && q.path === MODEL);
    const start = Number(/^bytes=(\d+)-/.exec(next?.range ?? "")?.[1] ?? 0);
    ok(start >= cut - (16 << 20), `the next load's first Range starts at ${start}, cut at ${cut}`);
  } else {
    // The store retried by itself: the request after the cut starts near the cut.
    const next = server.requests.slice(cutAt + 1).find((q) => q.method === "GET");
    const start = Number(/^bytes=(\d+)-/.exec(next?.range ?? "")?.[1] ?? 0);
    ok(start >= cut - (16 << 20), `the retry's first Range starts at ${start}, cut at ${cut}`);
  }
  ok(server.bytesSent() <= model.bytes * 1.1, "the resumed download sent about the file once");
});

test("a corrupted OPFS entry is fetched again, never used", { skip: PENDING }, async () => {
  await big("close");
  await loadCached();
  await big("close");
  const corrupted = await big("corruptLargestOpfsFile", Math.floor(model.bytes / 2));
  ok(typeof corrupted === "string", `corrupt: ${corrupted.error}`);
  server.reset();
  await loadCached();
  ok(server.bytesSent(MODEL) > 0, "the corrupt entry was fetched again");
});

test("a model larger than the quota is refused with a typed error", { skip: PENDING }, async () => {
  await big("close");
  await big("call", "deleteCachedModel", `${server.origin}${MODEL}`);
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Storage.overrideQuotaForOrigin", {
    origin: server.origin,
    quotaSize: 256 * 2 ** 20,
  });
  try {
    server.reset();
    const r = await big("load", MODEL, { cache: true, engine: { kvBlocks: KV_BLOCKS } });
    ok(r.error, "the load was refused");
    assert.equal(r.type, "InvalidArgument", r.error);
    ok(/\d/.test(r.error), `the error names the bytes: ${r.error}`);
    ok(server.bytesSent(MODEL) < 64 << 20, "the refusal came before the download");
  } finally {
    await cdp.send("Storage.overrideQuotaForOrigin", { origin: server.origin });
    await cdp.detach();
  }
});

test("two tabs share one engine: the model is loaded once", { skip: PENDING }, async () => {
  await big("close");
  const second = await browser.newPage();
  try {
    await openPage(second);
    server.reset();
    const rss = sampleChromiumMemory();
    const load = (p) =>
      p.evaluate(
        ([url, kv]) =>
          globalThis.__big.load(url, { cache: true, share: true, engine: { kvBlocks: kv } }),
        [MODEL, KV_BLOCKS],
      );
    const [a, b] = [await load(page), await load(second)];
    ok(!a.error && !b.error, `${a.error ?? ""} ${b.error ?? ""}`);
    const peaks = rss.stop().peaks;
    report.twoTabsGpuMB = MB(peaks["gpu-process"]?.max ?? 0);
    ok(server.bytesSent(MODEL) <= model.bytes * 1.1, "the model was downloaded at most once");
    ok(peaks["gpu-process"].max < 2 * model.bytes, "the GPU process holds the weights once");
  } finally {
    await second.close();
  }
});
