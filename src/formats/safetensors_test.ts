import { ok, rejects, strictEqual as equal } from "node:assert/strict";
import { EngineError } from "../contract/errors.ts";
import { readCheckpoint, readSafetensorsHeader } from "./safetensors.ts";
import { blobSource, type ByteSource } from "./source.ts";
import { urlFiles } from "./url_source.ts";
import { dirFiles, fileSource } from "../adapters/deno/file_source.ts";
import { parseConfig } from "../model/config.ts";
import { mapWeights } from "../model/weights.ts";
import { MODELS } from "../../test/support/models.ts";
import { rangeServer } from "../../test/support/range_server.ts";

function file(header: unknown, data = new Uint8Array(0), lengthOverride?: number): ByteSource {
  const json = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + json.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(lengthOverride ?? json.length), true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return blobSource(new Blob([out]), "test.safetensors");
}

function invalid(needle: string) {
  return (e: unknown) => {
    ok(e instanceof EngineError && e.type === "InvalidArgument", String(e));
    ok(e.message.includes(needle), `${e.message} should mention ${needle}`);
    return true;
  };
}

Deno.test("a valid header maps names to dtype, shape and absolute offsets", async () => {
  const data = new Uint8Array(24);
  const tensors = await readSafetensorsHeader(file({
    __metadata__: { format: "pt" },
    a: { dtype: "F32", shape: [2, 2], data_offsets: [0, 16] },
    b: { dtype: "BF16", shape: [4], data_offsets: [16, 24] },
  }, data));
  equal(tensors.size, 2);
  const b = tensors.get("b")!;
  equal(b.dtype, "bf16");
  equal(b.length, 8);
  equal(b.offset, b.source.size - 8);
});

Deno.test("corrupt files are InvalidArgument naming the tensor", async () => {
  const d = new Uint8Array(16);
  await rejects(
    readSafetensorsHeader(blobSource(new Blob([new Uint8Array(4)]), "x")),
    invalid("truncated"),
  );
  await rejects(readSafetensorsHeader(file({}, d, 1e6)), invalid("past the end"));
  await rejects(
    readSafetensorsHeader(file({ w: { dtype: "F32", shape: [4], data_offsets: [0, 32] } }, d)),
    invalid("tensor w"),
  );
  await rejects(
    readSafetensorsHeader(file({ w: { dtype: "F32", shape: [3], data_offsets: [0, 16] } }, d)),
    invalid("tensor w"),
  );
  await rejects(
    readSafetensorsHeader(file({ w: { dtype: "I8", shape: [16], data_offsets: [0, 16] } }, d)),
    invalid("unsupported dtype"),
  );
  await rejects(
    readSafetensorsHeader(file({ w: { dtype: "F32", shape: [-1], data_offsets: [0, 4] } }, d)),
    invalid("bad shape"),
  );
  await rejects(
    readSafetensorsHeader(file({
      a: { dtype: "F32", shape: [3], data_offsets: [0, 12] },
      b: { dtype: "F32", shape: [2], data_offsets: [8, 16] },
    }, d)),
    invalid("overlaps"),
  );
  const bad = new Uint8Array(12);
  new DataView(bad.buffer).setBigUint64(0, 4n, true);
  bad.set([0x7b, 0x7b, 0x7b, 0x7b], 8);
  await rejects(
    readSafetensorsHeader(blobSource(new Blob([bad]), "bad")),
    invalid("not valid JSON"),
  );
});

Deno.test("dtype or shape that disagrees with the config is refused before any upload", async () => {
  const dir = MODELS[0].dir.pathname;
  const config = parseConfig(await Deno.readTextFile(`${dir}config.json`));
  const tensors = await readCheckpoint(dirFiles(dir).open);
  mapWeights(config, tensors);
  let e = rejectsSync(() => mapWeights({ ...config, intermediateSize: 161 }, tensors));
  ok(e.includes("model.layers.0.mlp.gate_proj.weight"), e);
  e = rejectsSync(() => mapWeights({ ...config, numLayers: 3 }, tensors));
  ok(e.includes("model.layers.2.") && e.includes("missing"), e);
  e = rejectsSync(() => mapWeights({ ...config, attentionBias: true }, tensors));
  ok(e.includes("q_proj.bias"), e);
});

function rejectsSync(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    ok(e instanceof EngineError && e.type === "InvalidArgument");
    return e.message;
  }
  throw new Error("expected a refusal");
}

Deno.test("a sharded checkpoint (index + two shards) reads the same tensors", async () => {
  const dir = MODELS[0].dir.pathname;
  const whole = await readCheckpoint(dirFiles(dir).open);
  const src = (await fileSource(`${dir}model.safetensors`))!;
  const names = [...whole.keys()].sort();
  const half = Math.ceil(names.length / 2);
  const tmp = await Deno.makeTempDir();
  const shards = [names.slice(0, half), names.slice(half)];
  const weightMap: Record<string, string> = {};
  for (const [i, shard] of shards.entries()) {
    const header: Record<string, unknown> = {};
    const parts: Uint8Array[] = [];
    let off = 0;
    for (const n of shard) {
      const t = whole.get(n)!;
      header[n] = {
        dtype: t.dtype.toUpperCase(),
        shape: t.shape,
        data_offsets: [off, off + t.length],
      };
      parts.push(await src.read(t.offset, t.length));
      off += t.length;
      weightMap[n] = `model-0000${i + 1}-of-00002.safetensors`;
    }
    const json = new TextEncoder().encode(JSON.stringify(header));
    const out = new Uint8Array(8 + json.length + off);
    new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
    out.set(json, 8);
    let p = 8 + json.length;
    for (const part of parts) (out.set(part, p), p += part.length);
    await Deno.writeFile(`${tmp}/model-0000${i + 1}-of-00002.safetensors`, out);
  }
  await Deno.writeTextFile(
    `${tmp}/model.safetensors.index.json`,
    JSON.stringify({ weight_map: weightMap }),
  );
  const sharded = await readCheckpoint(dirFiles(tmp).open);
  equal(sharded.size, whole.size);
  for (const n of names) {
    const [a, b] = [whole.get(n)!, sharded.get(n)!];
    const [x, y] = [
      await a.source.read(a.offset, a.length),
      await b.source.read(b.offset, b.length),
    ];
    ok(x.every((v, i) => v === y[i]), `${n} bytes differ`);
  }
  await Deno.remove(`${tmp}/model-00002-of-00002.safetensors`);
  await rejects(readCheckpoint(dirFiles(tmp).open), invalid("missing"));
  await Deno.remove(tmp, { recursive: true });
});

Deno.test("a checkpoint over HTTP with Range requests; a 404 names the URL", async () => {
  const dir = MODELS[0].dir.pathname;
  const server = rangeServer(dir);
  try {
    const { base, ranges } = server;
    const tensors = await readCheckpoint(urlFiles(base).open);
    const local = await readCheckpoint(dirFiles(dir).open);
    equal(tensors.size, local.size);
    const t = tensors.get("model.norm.weight")!;
    const l = local.get("model.norm.weight")!;
    const [x, y] = [
      await t.source.read(t.offset, t.length),
      await l.source.read(l.offset, l.length),
    ];
    ok(x.every((v, i) => v === y[i]));
    ok(ranges.length >= 2 && ranges.every((r) => r.startsWith("bytes=")), "read by ranges");
    equal(await urlFiles(base).open("missing.json"), undefined);
  } finally {
    await server.shutdown();
  }
});
