/** OrtEngine on bad exports: each failure is an InvalidArgument naming the file, input or op. */
import { ok, rejects } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { blobSource, type ModelFiles } from "../../formats/source.ts";
import { onnxFortune } from "../../../test/support/onnx_fortune.ts";
import { badGraph } from "../../../test/support/onnx_bad_graph.ts";
import { OrtEngine } from "./engine.ts";
import { isOnnxExport } from "./session.ts";

const CONFIG = JSON.stringify({
  model_type: "llama",
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 4,
  hidden_size: 128,
  vocab_size: 260,
  max_position_embeddings: 64,
});

/** In-memory files by name (`location` "mem"). */
function memFiles(files: Record<string, Uint8Array | string>): ModelFiles {
  return {
    location: "mem",
    open: (name) => {
      const f = files[name];
      return Promise.resolve(
        f === undefined ? undefined : blobSource(new Blob([f as BlobPart]), name),
      );
    },
  };
}

async function startFails(
  files: ModelFiles,
  how: "wasm" | "webgpu" | { ep: "wasm" | "webgpu"; variant: string },
  ...needles: string[]
): Promise<void> {
  const e = new OrtEngine({
    files,
    name: "bad",
    ...(typeof how === "string"
      ? { executionProvider: how }
      : { executionProvider: how.ep, variant: how.variant }),
  });
  await rejects(e.start(0n), (err: unknown) => {
    ok(err instanceof EngineError, String(err));
    ok(err.type === "InvalidArgument", `${err.type}: ${err.message}`);
    for (const n of needles) ok(err.message.includes(n), `"${err.message}" names ${n}`);
    return true;
  });
  await e.cleanup();
}

for (const ep of ["wasm", "webgpu"] as const) {
  Deno.test(`${ep} EP: missing, garbage and wrongly laid out .onnx files are typed errors`, async () => {
    await startFails(memFiles({ "config.json": CONFIG }), ep, "onnx/model.onnx");
    await startFails(
      memFiles({ "config.json": CONFIG, "onnx/model.onnx": "x" }),
      { ep, variant: "model_fp16" },
      "onnx/model_fp16.onnx",
    );
    const garbage = new Uint8Array(1000).map((_, i) => (i * 97) & 0xff);
    await startFails(
      memFiles({ "config.json": CONFIG, "onnx/model.onnx": garbage }),
      ep,
      "mem/onnx/model.onnx",
      "protobuf",
    );
    // An SPA fallback's index.html in place of the graph: said so, not a protobuf error.
    await startFails(
      memFiles({ "config.json": CONFIG, "onnx/model.onnx": "\n<!DOCTYPE html><html></html>" }),
      ep,
      "onnx/model.onnx",
      "an HTML page",
    );
    for (const missing of ["position_ids", "past_key_values.1.value", "attention_mask"]) {
      await startFails(
        memFiles({ "config.json": CONFIG, "model.onnx": badGraph({ skip: [missing] }) }),
        ep,
        "mem/model.onnx",
        `input ${missing}`,
      );
    }
    await startFails(
      memFiles({ "config.json": CONFIG, "onnx/model.onnx": badGraph({ op: "Mish" }) }),
      ep,
      "mem/onnx/model.onnx",
      "op Mish",
    );
    await startFails(memFiles({ "onnx/model.onnx": badGraph() }), ep, "config.json");
  });
}

Deno.test("isOnnxExport: an onnx/*.onnx or a top-level *.onnx", async () => {
  ok(await isOnnxExport(memFiles({ "onnx/model_q4f16.onnx": "x" })));
  ok(await isOnnxExport(memFiles({ "model.onnx": "x" })));
  ok(!await isOnnxExport(memFiles({ "model.safetensors": "x", "config.json": CONFIG })));
  const { dirFiles } = await import("../../adapters/deno/file_source.ts");
  ok(await isOnnxExport(dirFiles(await onnxFortune())));
});
