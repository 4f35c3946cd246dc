import { ok } from "node:assert/strict";
import * as ort from "onnxruntime-web/wasm";
import { parseReference } from "../../src/model/verify.ts";
import { openCheckpoint } from "./read_checkpoint.ts";
import { onnxDecoder } from "./to_onnx.ts";

const fortune = new URL("../../models/fortune/", import.meta.url).pathname;
ort.env.wasm.wasmPaths = new URL("../../node_modules/onnxruntime-web/dist/", import.meta.url).href;
ort.env.wasm.numThreads = 1;

const i64 = (rows: number[]) =>
  new ort.Tensor("int64", BigInt64Array.from(rows.map(BigInt)), [
    1,
    rows.length,
  ]);

Deno.test("the fortune model's ONNX export (F32, wasm EP) reproduces HF's logits: prompt in one run, then cached steps", async () => {
  const ck = await openCheckpoint(fortune);
  const session = await ort.InferenceSession.create(
    await onnxDecoder(ck, { dtype: "f32" }),
  );
  const ref = parseReference(
    await Deno.readTextFile(`${fortune}reference.json`),
  );
  const { numLayers, numKvHeads, headDim, vocabSize } = ck.config;
  let worst = 0;
  for (const p of ref.prompts.slice(0, 2)) {
    let past: Record<string, ort.Tensor> = {};
    for (let i = 0; i < numLayers; i++) {
      for (const kv of ["key", "value"]) {
        past[`past_key_values.${i}.${kv}`] = new ort.Tensor(
          "float32",
          new Float32Array(0),
          [1, numKvHeads, 0, headDim],
        );
      }
    }
    // The prompt in one run (every position's logits), then the greedy tokens one at a time.
    const steps = [p.input_ids, ...p.greedy_tokens.slice(0, 4).map((t) => [t])];
    const want = [...p.logits, ...p.greedy_step_logits.slice(1, 5)];
    let done = 0, row = 0;
    for (const ids of steps) {
      const total = done + ids.length;
      const r = await session.run({
        input_ids: i64(ids),
        attention_mask: i64(Array(total).fill(1)),
        position_ids: i64(ids.map((_, i) => done + i)),
        ...past,
      });
      const logits = r.logits!.data as Float32Array;
      for (let s = 0; s < ids.length; s++, row++) {
        const w = want[row]!;
        for (let v = 0; v < vocabSize; v++) {
          worst = Math.max(worst, Math.abs(logits[s * vocabSize + v]! - w[v]!));
        }
      }
      past = {};
      for (let i = 0; i < numLayers; i++) {
        for (const kv of ["key", "value"]) {
          past[`past_key_values.${i}.${kv}`] = r[`present.${i}.${kv}`]!;
        }
      }
      done = total;
    }
  }
  await session.release();
  ok(worst <= 1e-3, `max |logit error| ${worst}`);
});
