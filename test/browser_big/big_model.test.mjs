// A 2 GB model in Chromium (SwiftShader WebGPU): the random-weight GGUF of Llama-3.2-3B's shape at
// Q4_K_M (test/support/big_model.ts; generated once into the ignored .cache/big-model/), served by
// the fault-injecting server (test/support/fault_server.mjs) on the same origin as a page that
// imports Kiln's sources (test/browser/pages/big_model.ts). Measured: `openModel` against a raw
// `fetch()` of the same bytes in the same page, the bytes the server sent, the peak JS heap of the
// page and of Kiln's worker (CDP) and the peak RSS of the renderer, GPU and network processes
// (/proc); the greedy tokens against `WebGpuEngine` in Deno on lavapipe. Then the model store and
// the shared engine: a reload from OPFS, resume after a cut, a short entry refetched, the quota, two
// tabs, servers that lie. Numbers land in test/artifacts/big_model.json and
// bench/results/big-model-chromium.json.
import { after, before, test } from "node:test";
import assert, { ok } from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { chromium } from "playwright-core";
import { CHROMIUM_ARGS, chromiumPath } from "../support/browser.mjs";
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
const GENERATE_MS = 6 * 60_000;
/** Bound (ms) of the one token generated with the default KV cache (its RSS is what counts). */
const ONE_TOKEN_MS = 4 * 60_000;
/** Issue 24's goal for the worker's peak JS heap while loading. */
const HEAP_GOAL = 256 * 2 ** 20;
/** The HF-layout fortune model's weights, served with faults for the bad-server checks. */
const SMALL = "/models/fortune/";
const SMALL_WEIGHTS = `${SMALL}model.safetensors`;

const diag = (x) => console.log(`# ${JSON.stringify(x)}`);
const MB = (n) => Math.round((n / 2 ** 20) * 10) / 10;
const report = {};
const rssMB = (peaks) =>
  Object.fromEntries(
    Object.entries(peaks).map(([k, v]) => [k, { max: MB(v.max), sum: MB(v.sum) }]),
  );
let model, server, browser, page, profile;
const startedAt = Date.now();
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
  server = await startFaultServer({
    files: { [MODEL]: model.path, [SMALL_WEIGHTS]: join(ROOT, "models/fortune/model.safetensors") },
  });
  report.serverStartSeconds = (Date.now() - t1) / 1000;
  // A profile on disk, as a user's is: an off-the-record context (`browser.newPage()`) keeps
  // OPFS in memory, where Chromium drops bytes written through sync access handles past about
  // 1.5 GB (measured: 2,014,904,864 written, 1,560,030,665 kept), and gives each page its own
  // context (no SharedWorker between two tabs).
  profile = mkdtempSync(join(tmpdir(), "kiln-big-profile-"));
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath(),
    args: CHROMIUM_ARGS,
  });
  page = browser.pages()[0] ?? await browser.newPage();
  await openPage(page);
  report.setupSeconds = (Date.now() - t0) / 1000;
}, { timeout: 20 * 60_000 });

after(async () => {
  await browser?.close();
  await server?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
  mkdirSync(join(ROOT, "test/artifacts"), { recursive: true });
  writeFileSync(join(ROOT, "test/artifacts/big_model.json"), JSON.stringify(report, null, 2));
  // The measured figures as a bench result (bench/results/, committed when refreshed).
  if (report.load?.seconds) {
    const bench = {
      bench: "big-model-chromium",
      date: new Date().toISOString(),
      adapter: report.load.runtimeData?.adapter,
      shape: "llama-3.2-3b q4_k_m (random weights)",
      bytes: model.bytes,
      note: "test/browser_big/big_model.test.mjs: openModel over HTTP (first load, store on), " +
        "from OPFS (reload) against reading the same OPFS file in the page in 8 MiB slices; " +
        "GPU process peak RSS (/proc) at the first generate against the engine's ledger",
      results: {
        rawFetch: report.rawFetch,
        firstLoad: { seconds: report.load.seconds, mbPerS: report.load.mbPerS },
        opfsReload: report.opfsReload,
        opfsVsRead: report.opfsVsRead,
        workerHeapMB: report.heapMB,
        gpuMemorySmallKv: report.gpuMemorySmallKv,
        gpuMemoryDefaultKv: report.gpuMemoryDefaultKv,
        resume: report.resume,
        twoTabs: report.twoTabs,
        suiteSeconds: (Date.now() - startedAt) / 1000,
      },
    };
    writeFileSync(
      join(ROOT, "bench/results/big-model-chromium.json"),
      JSON.stringify(bench, null, 2) + "\n",
    );
  }
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

// Bounded memory: issue 24's goal, 256 MB of worker heap (V8 heap plus ArrayBuffer backing
// stores) while loading, downloading included. The download reads each body into one reused
// buffer and the upload reads OPFS straight into its staging chunk, so the garbage that once
// made the peak (216-402 MB of dropped 8 MiB slices and fetch chunks) is gone: 81 MB measured.
test("the worker's peak JS heap while loading stays within 256 MB", (t) => {
  ok(report.heapMB, "the first load ran");
  const peak = report.heapMB.workerUsed + report.heapMB.workerBacking;
  t.diagnostic(`worker peak ${peak.toFixed(1)} MB; issue 24's goal ${MB(HEAP_GOAL)} MB`);
  ok(
    peak <= MB(HEAP_GOAL),
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
  const genPeaks = rss.stop().peaks;
  report.rssMBGenerate = rssMB(genPeaks);
  report.gpuMemorySmallKv = gpuVsLedger({ runtime_data: report.load.runtimeData }, genPeaks);
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

// ---- The model store (OPFS), the GPU memory against the ledger, the shared engine. ----

async function loadCached(p = page, engine = { kvBlocks: KV_BLOCKS }) {
  const r = await p.evaluate(
    ([url, engine]) => globalThis.__big.load(url, { cache: true, engine }),
    [MODEL, engine],
  );
  ok(!r.error, `openModel({ cache: true }): ${r.error}\n${pageErrors.join("\n")}`);
  return r;
}

/** The GPU process's peak RSS against the engine's ledger (`runtime_data.gpu_memory_bytes`). */
function gpuVsLedger(config, rss) {
  const ledger = config.runtime_data.gpu_memory_bytes;
  const gpu = rss["gpu-process"]?.max ?? 0;
  return {
    ledgerMB: Object.fromEntries(Object.entries(ledger).map(([k, v]) => [k, MB(v)])),
    gpuProcessMB: MB(gpu),
    overheadMB: MB(gpu - ledger.total),
    overOfTotal: Math.round((gpu / ledger.total) * 100) / 100,
    overOfWeights: Math.round((gpu / ledger.weights) * 100) / 100,
    kvBlocks: config.runtime_data.kv_blocks,
  };
}

test("GPU process RSS at the first generate against the ledger (small KV)", () => {
  ok(report.gpuMemorySmallKv, "the first load and generate ran");
  const ledger = report.load.runtimeData.gpu_memory_bytes;
  ok(ledger.total >= ledger.weights, "the ledger's total holds its weights");
  ok(ledger.weights >= model.bytes * 0.9, `weights ${ledger.weights} on the ledger`);
  diag(report.gpuMemorySmallKv);
  ok(report.gpuMemorySmallKv.gpuProcessMB > 0, "the GPU process was sampled");
});

test("a reload comes from OPFS: no network bytes for the model", async () => {
  await big("close");
  server.reset();
  // The heap again, with no download: what the upload from OPFS alone holds.
  const heap = await sampleHeap(page);
  const r = await loadCached();
  const h = await heap.stop();
  report.opfsReload = {
    seconds: r.seconds,
    mbPerS: MB(model.bytes) / r.seconds,
    phases: r.phases,
    workerHeapMB: { used: MB(h.worker.used), backing: MB(h.worker.backing), samples: h.samples },
  };
  diag(report.opfsReload);
  assert.equal(server.bytesSent(MODEL), 0, "bytes sent for a cached model");
  ok(h.samples > 0 && h.worker.used + h.worker.backing <= HEAP_GOAL, "worker heap from OPFS");
  assert.deepEqual(server.requests.filter((q) => q.path === MODEL), [], "requests for the model");
});

test("load from OPFS against reading the same bytes from OPFS in the page", {
  timeout: 10 * 60_000,
}, async () => {
  ok(report.opfsReload, "the reload ran");
  await big("close");
  // Each way of uploading, beside a plain read of the same file just before it (the machine is
  // shared: a read and a load taken minutes apart are not comparable).
  const ways = {
    write: { via: "write" },
    staging: { via: "staging" },
  };
  const out = {};
  for (const [name, upload] of Object.entries(ways)) {
    const read = await big("opfsRead", 8 << 20);
    ok(!read.error, `OPFS read: ${read.error}`);
    assert.equal(read.bytes, model.bytes, "the read covered the cached file");
    server.reset();
    const r = await loadCached(page, { kvBlocks: KV_BLOCKS, upload });
    assert.equal(server.bytesSent(MODEL), 0, `the ${name} load came from OPFS too`);
    await big("close");
    const w = r.phases.weights;
    out[name] = {
      readSeconds: read.seconds,
      loadSeconds: r.seconds,
      uploadSeconds: w.last - w.first,
      loadRatio: read.seconds / r.seconds,
      uploadRatio: read.seconds / (w.last - w.first),
      phases: r.phases,
    };
    diag({ [name]: out[name] });
  }
  report.opfsVsRead = out;
});

test("GPU process RSS at the first generate against the ledger (default KV)", {
  timeout: ONE_TOKEN_MS + 10 * 60_000,
}, async () => {
  const r = await loadCached(page, {});
  const rss = sampleChromiumMemory();
  const got = await within(big("greedy", [128000, 72, 101], 1), ONE_TOKEN_MS, "one token");
  const peaks = rss.stop().peaks;
  await big("close");
  report.gpuMemoryDefaultKv = { ...gpuVsLedger(r.config, peaks), generate: got };
  diag(report.gpuMemoryDefaultKv);
  ok(!got.error, `generate: ${got.error}`);
  const kv = r.config.runtime_data.gpu_memory_bytes.kv;
  ok(
    kv > report.load.runtimeData.gpu_memory_bytes.kv,
    `default KV ${kv} is above ${KV_BLOCKS} blocks'`,
  );
});

test("a short OPFS entry is fetched again, never used", async () => {
  await big("close");
  const cut = await big("truncateLargestOpfsFile", Math.floor(model.bytes / 2));
  ok(typeof cut === "string", `truncate: ${cut.error}`);
  server.reset();
  await loadCached();
  await big("close");
  const sent = server.bytesSent(MODEL);
  report.shortEntryRefetchBytes = sent;
  // A short entry is deleted and fetched whole (never resumed: it claimed to be complete).
  ok(sent >= model.bytes * 0.99, `${sent} bytes refetched for a ${model.bytes}-byte file`);
  const files = await big("opfsFiles");
  ok(files.some((f) => f.size === model.bytes), "the entry is whole again");
});

test("a download cut at 40% resumes from there", async () => {
  await big("close");
  const del = await big("call", "deleteCachedModel", `${server.origin}${MODEL}`);
  assert.equal(del.value, true, `deleteCachedModel: ${JSON.stringify(del)}`);
  server.reset();
  const cut = Math.floor(model.bytes * 0.4);
  server.setFaults(MODEL, { cutAfter: cut });
  const first = await big("load", MODEL, { cache: true, engine: { kvBlocks: KV_BLOCKS } });
  const cutAt = server.requests.findIndex((q) => q.cut);
  ok(cutAt >= 0, "the server cut a response");
  const cutReq = server.requests[cutAt];
  const cutStart = Number(/^bytes=(\d+)-/.exec(cutReq.range ?? "")?.[1] ?? 0);
  let after = server.requests.slice(cutAt + 1);
  if (first.error) {
    // The store gave up after the cut: the next load must continue, not restart.
    report.resume = { gaveUp: first.error };
    const before = server.requests.length;
    await loadCached();
    after = server.requests.slice(before);
  }
  const next = after.find((q) => q.method === "GET" && q.path === MODEL && q.range);
  const start = Number(/^bytes=(\d+)-/.exec(next?.range ?? "")?.[1] ?? 0);
  report.resume = { ...report.resume, cut, cutRange: cutReq.range, nextRange: next?.range };
  report.resume.bytesSent = server.bytesSent();
  diag(report.resume);
  ok(
    start > cutStart,
    `the first Range after the cut starts at ${start}, the cut one at ${cutStart}`,
  );
  ok(
    start >= model.bytes * 0.39,
    `the first Range after the cut starts at ${start} (cut at ${cut})`,
  );
  ok(server.bytesSent() <= model.bytes * 1.1, "the resumed download sent about the file once");
  await big("close");
});

test("two tabs share one engine: the model is loaded once", {
  timeout: 10 * 60_000,
}, async () => {
  await big("close");
  const second = await browser.newPage();
  let rss;
  try {
    await openPage(second);
    server.reset();
    rss = sampleChromiumMemory();
    const load = (p) =>
      p.evaluate(
        ([url, kv]) =>
          globalThis.__big.load(url, { cache: true, share: true, engine: { kvBlocks: kv } }),
        [MODEL, KV_BLOCKS],
      );
    // Bounded: a shared engine that never answers is a failure, not a hung suite.
    const a = await within(load(page), 3 * 60_000, "the first tab's shared engine");
    const b = await within(load(second), 60_000, "the second tab's shared engine");
    ok(!a.error && !b.error, `${a.error ?? ""} ${b.error ?? ""}`);
    const peaks = rss.stop().peaks;
    rss = undefined;
    report.twoTabs = {
      seconds: [a.seconds, b.seconds],
      sharing: [a.sharing, b.sharing],
      gpuMB: MB(peaks["gpu-process"]?.max ?? 0),
    };
    diag(report.twoTabs);
    assert.deepEqual(report.twoTabs.sharing, ["origin", "origin"], "both tabs share");
    ok(b.uploaded === 0, `the second tab uploaded ${b.uploaded} bytes`);
    ok(server.bytesSent(MODEL) <= model.bytes * 0.01, "the cached model was not downloaded");
    ok(peaks["gpu-process"].max < 2 * model.bytes, "the GPU process holds the weights once");
    await second.evaluate(() => globalThis.__big.close());
  } finally {
    rss?.stop(); // its interval would keep the process (and the suite) from ending
    await second.close();
    await big("close");
  }
});

test("a model larger than the quota is refused with a typed error", async () => {
  await big("close");
  await big("call", "deleteCachedModel", `${server.origin}${MODEL}`);
  const cdp = await page.context().newCDPSession(page);
  const quota = 256 * 2 ** 20;
  await cdp.send("Storage.overrideQuotaForOrigin", { origin: server.origin, quotaSize: quota });
  try {
    server.reset();
    const r = await big("load", MODEL, { cache: true, engine: { kvBlocks: KV_BLOCKS } });
    const sent = server.bytesSent(MODEL);
    report.quota = { ...r, bytesSent: sent };
    diag(report.quota);
    ok(r.error, "the load was refused");
    assert.equal(r.type, "ResourceExhausted", r.error);
    ok(/\d{6,}/.test(r.error), `the error names the bytes: ${r.error}`);
    // Chromium enforces this override on writes but does not report it through
    // `navigator.storage.estimate()` (measured: still 10 GiB), so the store's check before the
    // download passes and the refusal comes at the first write past the quota: the download
    // stops there instead of going on (a real quota, which estimate() reports, is refused before
    // any byte: src/store/store_test.ts, test/browser/store).
    ok(sent < quota + (64 << 20), `${sent} bytes sent against a ${quota}-byte quota`);
  } finally {
    await cdp.send("Storage.overrideQuotaForOrigin", { origin: server.origin });
    await cdp.detach();
    await big("call", "deleteCachedModel", `${server.origin}${MODEL}`);
  }
});

// ---- Bad servers (issue 24, item 8): the fortune model's weights (9.6 MB, HF layout). ----

const FORTUNE_PROMPT = [256, 72, 101, 108, 108, 111];

async function smallLoad() {
  const r = await big("load", SMALL, { cache: true });
  if (r.error) return r;
  const g = await big("greedy", FORTUNE_PROMPT, 2);
  await big("close");
  return { ...r, greedy: g };
}

test(
  "a server that lies, ignores Range, answers HTML or changes the file: typed error or clean restart",
  {
    timeout: 10 * 60_000,
  },
  async () => {
    const base = `${server.origin}${SMALL}`;
    await big("call", "deleteCachedModel", base);
    server.reset();
    const clean = await smallLoad();
    ok(!clean.error && !clean.greedy.error, `clean load: ${clean.error ?? clean.greedy.error}`);
    const want = clean.greedy.ids;
    const faults = {
      longerLength: { lieLength: 4096 },
      shorterLength: { lieLength: -4096 },
      ignoreRange: { ignoreRange: true },
      html: { html: true },
      changedBetweenRanges: { changeAfter: 1 },
      cutThenChanged: { cutAfter: 3 << 20, changeAfter: 2 },
    };
    report.badServers = {};
    for (const [name, f] of Object.entries(faults)) {
      await big("call", "deleteCachedModel", base);
      server.reset();
      server.setFaults(SMALL_WEIGHTS, f);
      const r = await smallLoad();
      const requests = server.requests.filter((q) => q.path === SMALL_WEIGHTS)
        .map((q) => `${q.method} ${q.range ?? "-"} ${q.status} ${q.bytes}${q.cut ? " cut" : ""}`);
      server.reset();
      // The next load, from whatever the fault left in the store, must give the same tokens.
      const again = await smallLoad();
      report.badServers[name] = {
        outcome: r.error ? `${r.type}: ${r.error}` : `loaded, tokens ${r.greedy.ids}`,
        requests: requests.slice(0, 8),
        next: again.error ? `${again.type}: ${again.error}` : `tokens ${again.greedy.ids}`,
      };
      diag({ [name]: report.badServers[name] });
      if (r.error) ok(r.type, `${name}: an untyped error: ${r.error}`);
      else assert.deepEqual(r.greedy.ids, want, `${name}: a model loaded with other tokens`);
      ok(!again.error, `${name}: the next load failed: ${again.error}`);
      assert.deepEqual(again.greedy.ids, want, `${name}: the next load's tokens`);
    }
  },
);
