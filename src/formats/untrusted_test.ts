/** Issue 12: hostile config.json, safetensors headers, indexes and paths give `EngineError`. */
import { ok, rejects, throws } from "node:assert/strict";
import { dirFiles, fileSource } from "../adapters/deno/file_source.ts";
import { parseConfig } from "../model/config.ts";
import { readCheckpoint, readSafetensorsHeader } from "./safetensors.ts";
import { blobSource, type ByteSource } from "./source.ts";
import { deepArray, invalid, TO_STRING } from "../../test/support/untrusted.ts";

const CONFIG = {
  architectures: ["LlamaForCausalLM"],
  hidden_size: 64,
  intermediate_size: 128,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  vocab_size: 100,
  bos_token_id: 1,
  eos_token_id: 2,
};
const config = (extra: Record<string, unknown>) => parseConfig({ ...CONFIG, ...extra });

function safetensors(header: unknown, data = new Uint8Array(0)): Uint8Array<ArrayBuffer> {
  const json = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + json.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return out;
}
const source = (bytes: Uint8Array<ArrayBuffer>, name = "t.safetensors"): ByteSource =>
  blobSource(new Blob([bytes]), name);

/** A checkpoint of in-memory files. */
function files(entries: Record<string, Uint8Array<ArrayBuffer> | string>) {
  return (name: string) => {
    const v = Object.hasOwn(entries, name) ? entries[name] : undefined;
    if (v === undefined) return Promise.resolve(undefined);
    const bytes = typeof v === "string" ? new TextEncoder().encode(v) : v;
    return Promise.resolve(source(bytes, name));
  };
}

Deno.test("config: deep arrays and {toString:1} in architectures, rope_type, torch_dtype", () => {
  parseConfig(CONFIG);
  for (const bad of [deepArray(), TO_STRING]) {
    throws(() => config({ architectures: [bad] }), invalid("config.architectures"));
    throws(() => config({ rope_scaling: { rope_type: bad } }), invalid("rope_scaling.rope_type"));
    throws(() => config({ torch_dtype: bad }), invalid("config.torch_dtype"));
    throws(() => config({ hidden_size: bad }), invalid("config.hidden_size"));
    throws(() => config({ hidden_act: bad }), invalid("config.hidden_act"));
  }
  throws(() => config({ architectures: ["constructor"] }), invalid("unsupported architecture"));
  throws(() => config({ torch_dtype: "toString" }), invalid("unsupported dtype"));
  throws(() => config({ rope_scaling: 7 }), invalid("rope_scaling: expected an object, got 7"));
});

Deno.test("config: integers above 2^53 or 2^31 and out-of-range BOS/EOS ids are refused", () => {
  throws(() => config({ hidden_size: 1e300 }), invalid("config.hidden_size", "1e+300"));
  throws(() => config({ vocab_size: 2 ** 53 + 2 }), invalid("config.vocab_size"));
  throws(() => config({ num_hidden_layers: 2 ** 31 }), invalid("config.num_hidden_layers"));
  for (const id of [-1, 1e300, 100, 1.5, "2", TO_STRING]) {
    throws(() => config({ bos_token_id: id }), invalid("config.bos_token_id", "below vocab_size"));
    throws(() => config({ eos_token_id: id }), invalid("config.eos_token_id"));
    throws(() => config({ eos_token_id: [2, id] }), invalid("config.eos_token_id"));
  }
  // JSON has no Infinity, but a parsed object built in code can hold one.
  throws(() => config({ eos_token_id: Infinity }), invalid("config.eos_token_id", "Infinity"));
  ok(config({ bos_token_id: null }).bosTokenId === undefined);
});

Deno.test("safetensors: dtype or entries of the wrong shape are InvalidArgument", async () => {
  for (const dtype of [deepArray(), TO_STRING, "constructor", "__proto__"]) {
    await rejects(
      readSafetensorsHeader(
        source(safetensors({ w: { dtype, shape: [0], data_offsets: [0, 0] } })),
      ),
      invalid("tensor w: unsupported dtype"),
    );
  }
  for (const entry of [null, 5, [], deepArray()]) {
    await rejects(
      readSafetensorsHeader(source(safetensors({ w: entry }))),
      invalid("tensor w: expected an object"),
    );
  }
  const huge = { dtype: "F32", shape: [2 ** 40, 2 ** 40], data_offsets: [0, 0] };
  await rejects(readSafetensorsHeader(source(safetensors({ w: huge }))), invalid("tensor w"));
  const shape = { dtype: "F32", shape: deepArray(), data_offsets: [0, 0] };
  await rejects(readSafetensorsHeader(source(safetensors({ w: shape }))), invalid("bad shape"));
});

Deno.test("index: weight_map values and shard names that are not plain file names", async () => {
  const shard = safetensors(
    { w: { dtype: "F32", shape: [1], data_offsets: [0, 4] } },
    new Uint8Array(4),
  );
  const index = (map: unknown) => JSON.stringify({ weight_map: map });
  const open = (map: unknown) =>
    files({ "model.safetensors.index.json": index(map), "a.st": shard });
  ok((await readCheckpoint(open({ w: "a.st" }))).has("w"));
  for (const bad of [deepArray(), TO_STRING, 3, null]) {
    await rejects(readCheckpoint(open({ w: bad })), invalid('weight_map["w"]', "not a string"));
  }
  for (
    const [name, why] of [
      ["", "is not a file name"],
      [".", "is not a file name"],
      ["..", "is not a file name"],
      ["a\0b", "control character"],
      ["x".repeat(300), "longer than 255 bytes"],
      ["../a.st", "outside the model"],
      ["sub/a.st", "outside the model"],
      ["sub\\a.st", "outside the model"],
    ]
  ) await rejects(readCheckpoint(open({ w: name })), invalid(why!));
  for (const bad of [deepArray(), TO_STRING, "x", [], null]) {
    await rejects(readCheckpoint(open(bad)), invalid("weight_map"));
  }
  await rejects(
    readCheckpoint(files({ "model.safetensors.index.json": "null" })),
    invalid("expected an object with a weight_map object, got null"),
  );
  await rejects(
    readCheckpoint(files({ "model.safetensors.index.json": "{" })),
    invalid("not valid JSON"),
  );
  await rejects(readCheckpoint(open({ w: "b.st" })), invalid('shard "b.st"', "missing"));
  await rejects(readCheckpoint(open({ v: "a.st" })), invalid("tensor v", "does not hold it"));
});

Deno.test("on disk: model.safetensors or a shard that is a directory, names the OS refuses", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/model.safetensors`);
    await rejects(
      readCheckpoint(dirFiles(dir).open),
      invalid("model.safetensors", "is a directory"),
    );
    await Deno.remove(`${dir}/model.safetensors`);
    await Deno.mkdir(`${dir}/shard`);
    await Deno.writeTextFile(
      `${dir}/model.safetensors.index.json`,
      JSON.stringify({ weight_map: { w: "shard" } }),
    );
    await rejects(readCheckpoint(dirFiles(dir).open), invalid("shard", "is a directory"));
    await rejects(fileSource(`${dir}/${"x".repeat(300)}`), invalid("x".repeat(40)));
    await rejects(fileSource(`${dir}/a\0b`), invalid(dir));
    ok(await fileSource(`${dir}/absent`) === undefined);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
