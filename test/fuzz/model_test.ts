/** Fuzzed config.json, safetensors headers and sharded indexes give `InvalidArgument` only. */
import { parseConfig } from "../../src/model/config.ts";
import { readCheckpoint, readSafetensorsHeader } from "../../src/formats/safetensors.ts";
import { blobSource } from "../../src/formats/source.ts";
import { mutateBytes, mutateJson } from "./fuzz.ts";
import { fuzz } from "./harness.ts";

const CONFIG = {
  architectures: ["LlamaForCausalLM"],
  model_type: "llama",
  hidden_size: 64,
  intermediate_size: 128,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  head_dim: 16,
  vocab_size: 100,
  max_position_embeddings: 512,
  rms_norm_eps: 1e-5,
  rope_theta: 10000,
  rope_scaling: {
    rope_type: "llama3",
    factor: 8,
    low_freq_factor: 1,
    high_freq_factor: 4,
    original_max_position_embeddings: 256,
  },
  hidden_act: "silu",
  tie_word_embeddings: false,
  torch_dtype: "bfloat16",
  bos_token_id: 1,
  eos_token_id: [2, 3],
};
const HEADER = {
  __metadata__: { format: "pt" },
  a: { dtype: "F32", shape: [2, 2], data_offsets: [0, 16] },
  b: { dtype: "BF16", shape: [4], data_offsets: [16, 24] },
  c: { dtype: "F16", shape: [0, 3], data_offsets: [24, 24] },
};
const EXTRA = ["F16", "F32", "BF16", [0, 16], [16, 24], [2, 2], 16, 24, "a", "s1.safetensors"];
const encode = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

function safetensors(header: unknown, data: Uint8Array, length?: number): Uint8Array<ArrayBuffer> {
  const json = encode(header);
  const out = new Uint8Array(8 + json.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(length ?? json.length), true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return out;
}
const source = (bytes: Uint8Array<ArrayBuffer>, name: string) =>
  blobSource(new Blob([bytes]), name);

Deno.test("fuzzed config.json: parseConfig refuses with InvalidArgument", async () => {
  await fuzz({
    name: "config.json",
    corpus: "config_json",
    expect: ["InvalidArgument"],
    generate: (r) =>
      r() < 0.3
        ? new TextDecoder().decode(mutateBytes(encode(CONFIG), r))
        : mutateJson(CONFIG, r, [16, 100, "llama", "linear", "default", 2]),
    run: (input: unknown) => parseConfig(input),
  });
});

Deno.test("fuzzed safetensors headers: readSafetensorsHeader refuses with InvalidArgument", async () => {
  const data = new Uint8Array(24);
  const base = safetensors(HEADER, data);
  await fuzz({
    name: "safetensors header",
    corpus: "safetensors_header",
    expect: ["InvalidArgument"],
    generate: (r) => {
      const kind = r();
      return kind < 0.5
        ? safetensors(mutateJson(HEADER, r, EXTRA), data)
        : kind < 0.6
        ? safetensors(HEADER, data, Math.floor(r() * 2 ** 40))
        : mutateBytes(base, r);
    },
    run: (bytes: Uint8Array<ArrayBuffer>) => readSafetensorsHeader(source(bytes, "f.safetensors")),
  });
});

Deno.test("fuzzed sharded indexes: readCheckpoint refuses with InvalidArgument", async () => {
  const shard = (names: string[], off = 0) =>
    safetensors(
      Object.fromEntries(names.map((n, i) => [n, {
        dtype: "F32",
        shape: [1],
        data_offsets: [off + 4 * i, off + 4 * i + 4],
      }])),
      new Uint8Array(4 * names.length),
    );
  const shards: Record<string, Uint8Array<ArrayBuffer>> = {
    "s1.safetensors": shard(["a", "b"]),
    "s2.safetensors": shard(["c"]),
  };
  const INDEX = {
    metadata: { total_size: 12 },
    weight_map: { a: "s1.safetensors", b: "s1.safetensors", c: "s2.safetensors" },
  };
  await fuzz({
    name: "sharded index",
    corpus: "sharded_index",
    expect: ["InvalidArgument"],
    generate: (r) =>
      r() < 0.3 ? mutateBytes(encode(INDEX), r) : encode(mutateJson(INDEX, r, EXTRA)),
    run: (index: Uint8Array<ArrayBuffer>) => {
      const files: Record<string, Uint8Array<ArrayBuffer>> = {
        ...shards,
        "model.safetensors.index.json": index,
      };
      return readCheckpoint((name) =>
        Promise.resolve(Object.hasOwn(files, name) ? source(files[name]!, name) : undefined)
      );
    },
  });
});
