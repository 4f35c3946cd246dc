import { deepStrictEqual, ok, rejects, strictEqual as equal } from "node:assert/strict";
import { EngineError } from "../../contract/errors.ts";
import { fileSource } from "../../adapters/deno/file_source.ts";
import { parseConfig } from "../config.ts";
import { ropeInvFreq } from "../rope.ts";
import { blobSource } from "../../formats/source.ts";
import { encodeGguf, T, typed } from "../../formats/gguf/test_encoder.ts";
import { tinyGguf, tinyHfConfig, tinyMetadata, tinyTensors } from "./test_model.ts";
import { readGgufFile } from "../../formats/gguf/header.ts";
import { QUANT_FORMATS, QUANT_TYPES } from "../../gpu/formats/registry.ts";
import { llama3FromFreqFactors, openGguf, openGgufBlobs, openGgufUrl } from "./load.ts";

const blobOpen = (files: Record<string, Uint8Array<ArrayBuffer>>) => (name: string) =>
  Promise.resolve(
    files[name] === undefined ? undefined : blobSource(new Blob([files[name]!]), name),
  );

async function refused(p: Promise<unknown>, ...words: string[]): Promise<void> {
  await rejects(p, (e: unknown) => {
    ok(e instanceof EngineError, String(e));
    equal(e.type, "InvalidArgument");
    for (const w of words) ok(e.message.includes(w), `${e.message} should name ${w}`);
    return true;
  });
}

Deno.test("llama GGUF: the same config as config.json, HF names, HF shapes, q/k rows marked interleaved", async () => {
  const m = await openGguf("m.gguf", blobOpen({ "m.gguf": tinyGguf({ qType: 8 }) }));
  deepStrictEqual(m.config, parseConfig(tinyHfConfig()));
  const q = m.tensors.get("model.layers.0.self_attn.q_proj.weight")!;
  equal(q.ggufName, "blk.0.attn_q.weight");
  equal(q.dtype, "Q8_0");
  equal(q.ggmlType, 8);
  deepStrictEqual(q.shape, [32, 32]);
  equal(q.length, 32 * 34);
  deepStrictEqual(q.ropeInterleave, { heads: 4, headDim: 8 });
  deepStrictEqual(m.tensors.get("model.layers.1.self_attn.k_proj.weight")!.ropeInterleave, {
    heads: 2,
    headDim: 8,
  });
  equal(m.tensors.get("model.layers.0.self_attn.v_proj.weight")!.ropeInterleave, undefined);
  deepStrictEqual(m.tensors.get("model.embed_tokens.weight")!.shape, [277, 32]);
  deepStrictEqual(m.tensors.get("model.layers.0.mlp.down_proj.weight")!.shape, [32, 64]);
  ok(m.tensors.has("lm_head.weight"));
  equal(m.ropeInterleaved, true);
});

Deno.test("qwen2 GGUF with tied embeddings: biases, no permutation, the same config", async () => {
  const o = { arch: "qwen2", tied: true } as const;
  const m = await openGguf("q.gguf", blobOpen({ "q.gguf": tinyGguf(o) }));
  deepStrictEqual(m.config, parseConfig(tinyHfConfig(o)));
  equal(m.config.tieWordEmbeddings, true);
  equal(m.config.attentionBias, true);
  equal(m.ropeInterleaved, false);
  ok(m.tensors.has("model.layers.1.self_attn.k_proj.bias"));
});

function twoSplits(): [Uint8Array<ArrayBuffer>, Uint8Array<ArrayBuffer>] {
  const tensors = tinyTensors();
  const half = Math.floor(tensors.length / 2);
  const split = (no: number) => ({
    "split.no": typed(T.U16, no),
    "split.count": typed(T.U16, 2),
    "split.tensors.count": typed(T.I32, tensors.length),
  });
  return [
    encodeGguf({ ...tinyMetadata(), ...split(0) }, tensors.slice(0, half)),
    encodeGguf(split(1), tensors.slice(half)),
  ];
}

Deno.test("split GGUF from Files, a URL with Range requests and a path", async () => {
  const [a, b] = twoSplits();
  const names = ["m-00001-of-00002.gguf", "m-00002-of-00002.gguf"];
  const fromFiles = await openGgufBlobs([new File([b], names[1]!), new File([a], names[0]!)]);
  equal(fromFiles.files.length, 2);
  deepStrictEqual(fromFiles.config, parseConfig(tinyHfConfig()));
  equal(fromFiles.tensors.get("lm_head.weight")!.source.name, names[1]);

  const served = new Map([[`http://h/${names[0]}`, a], [`http://h/${names[1]}`, b]]);
  let ranged = 0;
  const fakeFetch = (input: string | URL | Request, init?: RequestInit) => {
    const body = served.get(String(input));
    if (!body) return Promise.resolve(new Response(null, { status: 404 }));
    if (init?.method === "HEAD") {
      return Promise.resolve(
        new Response(null, { headers: { "content-length": String(body.length) } }),
      );
    }
    const [, s, e] = /bytes=(\d+)-(\d+)/.exec(new Headers(init?.headers).get("range")!)!;
    ranged++;
    return Promise.resolve(
      new Response(body.slice(Number(s), Number(e) + 1), { status: 206 }),
    );
  };
  const fromUrl = await openGgufUrl(`http://h/${names[0]}`, fakeFetch as typeof fetch);
  equal(fromUrl.tensors.size, fromFiles.tensors.size);
  ok(ranged >= 2, "read with Range requests");

  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeFile(`${dir}/${names[0]}`, a);
    await Deno.writeFile(`${dir}/${names[1]}`, b);
    const fromPath = await openGguf(`${dir}/${names[0]}`, fileSource);
    deepStrictEqual(fromPath.config, fromFiles.config);
    await Deno.remove(`${dir}/${names[1]}`);
    await refused(openGguf(`${dir}/${names[0]}`, fileSource), names[1]!);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  await refused(
    openGguf(names[1]!, blobOpen({ [names[1]!]: b })),
    "first split",
  );
});

Deno.test("bad metadata and tensors are refused naming the key or tensor", async () => {
  const open = (bytes: Uint8Array<ArrayBuffer>) =>
    openGguf("x.gguf", blobOpen({ "x.gguf": bytes }));
  const meta = tinyMetadata();
  const tensors = tinyTensors();
  await refused(
    open(encodeGguf({ ...meta, "general.architecture": "mamba" }, tensors)),
    "general.architecture",
    "mamba",
  );
  await refused(
    open(encodeGguf({ ...meta, "llama.attention.sliding_window": 1_000_000 }, tensors)),
    "llama.attention.sliding_window",
    "longer than the context",
  );
  await refused(
    open(encodeGguf({ ...meta, "llama.attn_logit_softcapping": typed(T.F32, -2) }, tensors)),
    "llama.attn_logit_softcapping",
  );
  await refused(
    open(encodeGguf({ ...meta, "llama.block_count": "two" }, tensors)),
    "llama.block_count",
    "string",
  );
  await refused(
    open(encodeGguf({ ...meta, "llama.attention.head_count": typed(T.F32, 4.5) }, tensors)),
    "llama.attention.head_count",
  );
  await refused(open(encodeGguf({ ...meta, "llama.expert_count": 8 }, tensors)), "expert_count");
  await refused(
    open(encodeGguf({ ...meta, "llama.attention.head_count": 8 }, tensors)),
    "self_attn",
    "does not match the config",
  );
  // Q8_1 (ggml type 9, llama.cpp's activation format): a block type Kiln does not decode.
  const q81 = tensors.map((t) =>
    t.name === "blk.1.attn_v.weight" ? { ...t, type: 9, data: new Uint8Array(16 * 36) } : t
  );
  await refused(open(encodeGguf(meta, q81)), "blk.1.attn_v.weight", "Q8_1");
  const misaligned = tensors.map((t, i) => i === 3 ? { ...t, offset: 8 } : t);
  await refused(open(encodeGguf(meta, misaligned)), "multiple of 32");
  const overlap = tensors.map((t, i) => i === 3 ? { ...t, offset: 0 } : t);
  await refused(open(encodeGguf(meta, overlap)), "overlaps");
  const full = encodeGguf(meta, tensors);
  await refused(open(full.slice(0, full.length - 64)), "past the end");
  await refused(open(encodeGguf(meta, tensors.slice(1))), "model.embed_tokens.weight", "missing");
  const k4 = [{ name: "w", type: 12, dims: [100, 2], data: new Uint8Array(288) }];
  await refused(open(encodeGguf(meta, k4)), "tensor w", "Q4_K blocks of 256");
  const huge = [{ name: "w", type: 0, dims: [2 ** 32, 2 ** 32, 2 ** 20], data: new Uint8Array(4) }];
  await refused(open(encodeGguf(meta, huge)), "tensor w", "2^53");
  await refused(open(new Uint8Array(0)), "x.gguf");
});

Deno.test("every registered block type: byte counts checked against the blocks, truncation and unknown types refused naming the tensor", async () => {
  const read = (bytes: Uint8Array<ArrayBuffer>) =>
    readGgufFile(blobSource(new Blob([bytes]), "x.gguf"));
  const meta = { "general.architecture": "llama" };
  for (const type of QUANT_TYPES) {
    const f = QUANT_FORMATS[type];
    // Long enough that a short w overlaps it before the file ends.
    const after = {
      name: "v",
      type: 0,
      dims: [f.blockBytes],
      data: new Uint8Array(4 * f.blockBytes),
    };
    // 32 blocks: two fewer bytes-worth of blocks is more than the 32-byte alignment can pad.
    const dims = [4 * f.blockSize, 8];
    const bytes = 32 * f.blockBytes;
    const w = (data: Uint8Array, t = f.ggmlType) => ({ name: "w", type: t, dims, data });
    const good = await read(encodeGguf(meta, [w(new Uint8Array(bytes)), after]));
    deepStrictEqual(
      good.tensors.map((t) => [t.name, t.dtype, t.length]),
      [["w", type, bytes], ["v", "f32", 4 * f.blockBytes]],
      type,
    );
    // Data two blocks short of what the type and dims need: the next tensor starts inside it.
    const short = w(new Uint8Array(bytes - 2 * f.blockBytes));
    await refused(read(encodeGguf(meta, [short, after])), "tensor v", "overlaps tensor w");
    // The same as the last tensor, and a file cut inside w's last block.
    await refused(read(encodeGguf(meta, [after, short])), "tensor w", "past the end");
    const whole = encodeGguf(meta, [after, w(new Uint8Array(bytes))]);
    await refused(read(whole.slice(0, whole.length - 1)), "tensor w", "past the end");
    // A row that is not whole blocks.
    const ragged = {
      name: "w",
      type: f.ggmlType,
      dims: [f.blockSize + 16, 2],
      data: new Uint8Array(4 * f.blockBytes),
    };
    await refused(read(encodeGguf(meta, [ragged])), "tensor w", `${type} blocks of ${f.blockSize}`);
  }
  // ggml numbers Kiln does not read: a retired one (Q4_2), an activation format (Q8_K) and ones
  // past the end of ggml's list; the refusal names the tensor, the type and what is supported.
  for (
    const [t, name] of [[4, "4"], [15, "Q8_K"], [99, "unknown type 99"], [
      2 ** 31,
      "unknown",
    ]] as const
  ) {
    const bad = { name: "w", type: t, dims: [256, 2], data: new Uint8Array(1024) };
    await refused(read(encodeGguf(meta, [bad])), "tensor w", name, "is not supported", "IQ2_XXS");
  }
});

Deno.test("Llama 3 RoPE frequency factors become llama3 scaling", async () => {
  const scaling = {
    type: "llama3",
    factor: 8,
    lowFreqFactor: 1,
    highFreqFactor: 4,
    originalMaxPositionEmbeddings: 8192,
  } as const;
  const [dim, theta] = [128, 500000];
  const base = ropeInvFreq(dim, theta);
  const scaled = ropeInvFreq(dim, theta, scaling);
  const divisors = Float32Array.from(base, (b, i) => b / scaled[i]!);
  deepStrictEqual(llama3FromFreqFactors(divisors, dim, theta), scaling);
  const odd = divisors.map((x, i) => i === 40 ? x * 1.5 : x);
  equal(llama3FromFreqFactors(odd, dim, theta), undefined);

  const meta = tinyMetadata();
  const factors = Float32Array.from(
    ropeInvFreq(8, 10000),
    (b, i) => b / ropeInvFreq(8, 10000, { ...scaling, factor: 4 })[i]!,
  );
  const withFreqs = [
    ...tinyTensors(),
    { name: "rope_freqs.weight", type: 0, dims: [4], data: new Uint8Array(factors.buffer) },
  ];
  const m = await openGguf("x.gguf", blobOpen({ "x.gguf": encodeGguf(meta, withFreqs) }));
  deepStrictEqual(m.config.ropeScaling, { ...scaling, factor: 4 });
  // Factors no Llama 3 parameters give (an original context other than 8192) are used as stored.
  const other = Float32Array.from([1, 2.5, 8, 7]);
  const withOther = [
    ...tinyTensors(),
    { name: "rope_freqs.weight", type: 0, dims: [4], data: new Uint8Array(other.buffer) },
  ];
  const o = await openGguf("x.gguf", blobOpen({ "x.gguf": encodeGguf(meta, withOther) }));
  deepStrictEqual(o.config.ropeScaling, { type: "factors", factors: [1, 2.5, 8, 7] });
  const zero = Float32Array.from([1, 0, 8, 7]);
  const withZero = [
    ...tinyTensors(),
    { name: "rope_freqs.weight", type: 0, dims: [4], data: new Uint8Array(zero.buffer) },
  ];
  await refused(
    openGguf("x.gguf", blobOpen({ "x.gguf": encodeGguf(meta, withZero) })),
    "rope_freqs.weight",
    "factor 1",
  );
});

Deno.test("a string the parser would cut at its 2 MB read boundary is refused, not truncated", async () => {
  const open = (bytes: Uint8Array<ArrayBuffer>) =>
    readGgufFile(blobSource(new Blob([bytes]), "long.gguf"));
  const fine = await open(encodeGguf({ pad: "a".repeat(1_000_000), s: "b".repeat(400_000) }));
  equal((fine.metadata.get("s") as string).length, 400_000);
  await refused(
    open(encodeGguf({ pad: "a".repeat(1_000_000), s: "b".repeat(1_500_000) })),
    "long.gguf",
    "does not add up",
  );
});
