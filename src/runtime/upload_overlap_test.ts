/**
 * `LoadOptions.beside`: what an engine runs while its weights upload (its pipelines compile). It
 * starts once every buffer exists and before the last weight byte is read; the load waits for
 * both; a failure on either side fails the load, stops the fills still queued, and frees the
 * model's buffers (fortune on lavapipe, its sources slowed and counted).
 */
import { ok, rejects, strictEqual as equal } from "node:assert/strict";
import { dirFiles } from "../adapters/deno/file_source.ts";
import { EngineError } from "../contract/errors.ts";
import { memoryLedger } from "../gpu/memory_ledger.ts";
import { testGpu } from "../../test/support/gpu.ts";
import { FORTUNE } from "../../test/support/fortune_engine.ts";
import { GpuModel } from "./gpu_model.ts";
import type { ByteSource, ModelFiles } from "../formats/source.ts";
import { weightList } from "../model/weights.ts";

/** Fortune's files; `readInto` waits a tick per piece, counts bytes, and fails past `failAt`. */
function slowFiles(failAt = Infinity) {
  const seen = { bytes: 0 };
  const files: ModelFiles = dirFiles(FORTUNE);
  const wrap = (s: ByteSource): ByteSource => ({
    name: s.name,
    size: s.size,
    read: (o, n) => s.read(o, n),
    readInto: async (o, into) => {
      await new Promise((r) => setTimeout(r, 1));
      if (seen.bytes + into.length > failAt) {
        throw EngineError.invalidArgument(`${s.name}: unreadable at ${o}`);
      }
      await s.readInto!(o, into);
      seen.bytes += into.length;
    },
  });
  return {
    seen,
    files: { ...files, open: async (n: string) => await files.open(n).then((s) => s && wrap(s)) },
  };
}

Deno.test("upload: beside starts with every buffer made, before the last weight byte; the load waits for it", async () => {
  const gpu = await testGpu();
  const { seen, files } = slowFiles();
  let atStart = -1, finished = false;
  const model = await GpuModel.load(gpu, files, {
    kvBlocks: 2,
    beside: async (m) => {
      atStart = seen.bytes;
      ok(m.embed.parts.length > 0 && m.lmHead && m.finalNorm, "the model's buffers exist");
      equal(m.layers.length, m.config.numLayers);
      equal(m.kCache.length, m.config.numLayers, "and its KV cache");
      await new Promise((r) => setTimeout(r, 50));
      finished = true;
    },
  });
  try {
    const total = weightList(model.weights).reduce((n, t) => n + t.length, 0);
    ok(atStart >= 0 && atStart < total / 2, `beside began after ${atStart} of ${total} bytes`);
    ok(finished, "the load settled after beside");
    ok(seen.bytes >= total * 0.9, `${seen.bytes} bytes read`);
  } finally {
    model.destroy();
  }
});

Deno.test("upload: a failed read fails the load after beside settles, and frees the model's buffers", async () => {
  const gpu = await testGpu();
  const ledger = memoryLedger(gpu.device);
  const before = ledger.snapshot();
  const { files } = slowFiles(2 << 20);
  let besideDone = false;
  await rejects(
    GpuModel.load(gpu, files, {
      kvBlocks: 2,
      beside: async () => {
        await new Promise((r) => setTimeout(r, 30));
        besideDone = true;
      },
    }),
    (e: unknown) => e instanceof EngineError && /unreadable/.test(e.message),
  );
  ok(besideDone, "beside settled before the load failed");
  const after = ledger.snapshot();
  equal(after.weights, before.weights, "weights freed");
  equal(after.kv, before.kv, "KV freed");
});

Deno.test("upload: a failing beside fails the load and stops the fills not yet begun", async () => {
  const gpu = await testGpu();
  const { seen, files } = slowFiles();
  await rejects(
    GpuModel.load(gpu, files, {
      kvBlocks: 2,
      beside: () => Promise.reject(new EngineError("Unknown", "compile failed")),
    }),
    /compile failed/,
  );
  // Fortune's weights are ~9.5 MB in many buffers: at most the fill under way finished.
  ok(seen.bytes < 4 << 20, `${seen.bytes} bytes read after beside failed`);
});
