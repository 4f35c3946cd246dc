/** The KV cache's size rule, without a GPU: four contexts, the buffer limit, an explicit size. */
import { strictEqual as equal, throws } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { chooseKvSize, KV_CONTEXTS } from "./kv_size.ts";

const MiB = 1024 * 1024;
/** lavapipe's limits (Mesa 22.3): 2 GiB buffers, 128 MiB storage bindings. */
const LAVAPIPE = { maxBufferSize: 2 ** 31 - 1, maxStorageBufferBindingSize: 128 * MiB };
const fortune = { maxPositionEmbeddings: 1024, numLayers: 6, numKvHeads: 4, headDim: 32 };
/** An 8B Llama 3 shape (8,192 context, 32 layers, 8 KV heads of 128). */
const llama8k = { maxPositionEmbeddings: 8192, numLayers: 32, numKvHeads: 8, headDim: 128 };

Deno.test("kv size: four contexts when one layer's buffer holds them", () => {
  const f = chooseKvSize(fortune, "f16", 16, LAVAPIPE);
  equal(f.blocks, KV_CONTEXTS * 1024 / 16);
  equal(f.source, "context");
  equal(f.layerBytes, f.blocks * 16 * 4 * 32 * 2);
  equal(f.totalBytes, 2 * 6 * f.layerBytes);
  equal(f.bufferLimit, 128 * MiB);
  // The report's model: 8,192 tokens of context now get four of them, not 4,096 tokens.
  const l = chooseKvSize(llama8k, "f16", 16, LAVAPIPE);
  equal(l.blocks * 16, KV_CONTEXTS * 8192);
  equal(l.source, "context");
  equal(l.layerBytes, 64 * MiB);
  equal(chooseKvSize(fortune, "f32", 16, LAVAPIPE).layerBytes, 2 * f.layerBytes);
});

Deno.test("kv size: as many blocks as one buffer holds when four contexts would not fit", () => {
  const long = { ...llama8k, maxPositionEmbeddings: 131072 };
  const k = chooseKvSize(long, "f16", 16, LAVAPIPE);
  equal(k.source, "limit");
  equal(k.blocks, (128 * MiB) / (16 * 8 * 128 * 2));
  equal(k.layerBytes, 128 * MiB);
  // maxBufferSize counts too when it is the smaller limit.
  const small = chooseKvSize(long, "f16", 16, { ...LAVAPIPE, maxBufferSize: 32 * MiB });
  equal(small.blocks, k.blocks / 4);
  equal(small.bufferLimit, 32 * MiB);
});

Deno.test("kv size: an explicit size wins, and must be a positive whole number", () => {
  const k = chooseKvSize(fortune, "f16", 16, LAVAPIPE, 8);
  equal(k.blocks, 8);
  equal(k.source, "option");
  for (const bad of [0, -1, 1.5, Number.NaN]) {
    throws(
      () => chooseKvSize(fortune, "f16", 16, LAVAPIPE, bad),
      (e: unknown) => e instanceof EngineError && e.type === "InvalidArgument",
    );
  }
});
