/**
 * GGUF files quantized by llama.cpp itself (`test/fixtures/llamacpp/`, written by
 * `tools/fixtures/llama_quantize.ts`): each file's sha256 and its tensors' ggml types are those the
 * manifest recorded; a file whose every tensor type Kiln reads (F32, F16, BF16 and the quant
 * registry's `QUANT_FORMATS`) loads and runs on the GPU within the f32 bound of float64 logits
 * on its dequantized weights (`test_parity.ts`); any other file is refused on load with an
 * `InvalidArgument` naming its first unreadable tensor and that tensor's type. A type added to
 * the registry moves its files from the second check to the first.
 */
import {
  deepStrictEqual as deepEqual,
  ok,
  rejects,
  strictEqual as equal,
} from "node:assert/strict";
import { EngineError } from "../contract/errors.ts";
import { QUANT_FORMATS, QUANT_TYPES } from "../gpu/formats/registry.ts";
import { openCheckpoint } from "../model/checkpoint.ts";
import { fileListFiles } from "../formats/source.ts";
import { checkParity, parityCase } from "../../test/support/gguf_parity.ts";
import { testGpu } from "../../test/support/gpu.ts";
import { LLAMACPP_DIR, readManifest, tensorTypes } from "../../test/support/llamacpp.ts";
import { MODELS } from "../../test/support/models.ts";

/** ggml type numbers Kiln reads: F32 (0), F16 (1), BF16 (30) and every registered block type. */
const READABLE = new Set([0, 1, 30, ...QUANT_TYPES.map((t) => QUANT_FORMATS[t].ggmlType)]);

/** Prompts (from each model's reference.json) and greedy steps per file: lavapipe is slow. */
const PROMPTS = 1;
const STEPS = 6;

const manifest = await readManifest();

async function fileOf(path: string): Promise<File> {
  return new File([await Deno.readFile(new URL(path, LLAMACPP_DIR))], path.split("/").pop()!);
}

Deno.test("the llama.cpp manifest lists files of every model, with K-quants in some", () => {
  for (const m of MODELS) ok(manifest.files.some((f) => f.model === m.name), m.name);
  const names = new Set(manifest.files.flatMap((f) => Object.keys(f.tensor_types)));
  for (const t of ["q4_K", "q6_K", "q2_K", "q3_K", "tq1_0"]) ok(names.has(t), t);
});

for (const f of manifest.files) {
  const label = `llama.cpp ${f.model} ${f.ftype}`;
  Deno.test(`${label}: sha256 and tensor types as the manifest records`, async () => {
    const bytes = await Deno.readFile(new URL(f.file, LLAMACPP_DIR));
    equal(bytes.byteLength, f.bytes);
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)).toHex();
    equal(digest, f.sha256);
    const tensors = await tensorTypes(bytes);
    deepEqual(tensors, f.tensors);
    const counts: Record<string, number> = {};
    for (const [, id] of tensors) {
      const name = manifest.ggml_types[id];
      ok(name !== undefined, `ggml type ${id} is named in the manifest`);
      counts[name] = (counts[name] ?? 0) + 1;
    }
    deepEqual(counts, f.tensor_types);
  });

  const unreadable = f.tensors.find(([, id]) => !READABLE.has(id));
  if (unreadable !== undefined) {
    const [tensor, id] = unreadable;
    const type = manifest.ggml_types[id]!;
    Deno.test(`${label}: refused on load (tensor ${tensor} is ${type})`, async () => {
      const files = fileListFiles([await fileOf(f.file)]);
      await rejects(openCheckpoint(files), (e: unknown) => {
        ok(e instanceof EngineError, `an EngineError: ${e}`);
        equal(e.type, "InvalidArgument");
        ok(e.message.includes(`tensor ${tensor}:`), e.message);
        ok(e.message.toLowerCase().includes(`ggml type ${type.toLowerCase()} `), e.message);
        return true;
      });
    });
    continue;
  }
  const model = MODELS.find((m) => m.name === f.model);
  if (model === undefined) throw new Error(`${f.file}: no model ${f.model} in the test models`);
  Deno.test(`${label}: logits match float64 on the dequantized weights`, async () => {
    const checkpoint = await openCheckpoint(fileListFiles([await fileOf(f.file)]));
    const c = await parityCase(
      checkpoint,
      new URL("reference.json", model.dir),
      f.model,
      PROMPTS,
      STEPS,
    );
    await checkParity(await testGpu(), c, label);
  });
}
