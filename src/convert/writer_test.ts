import { deepStrictEqual, rejects, strictEqual as equal, throws } from "node:assert/strict";
import { gguf } from "@huggingface/gguf";
import { EngineError } from "../contract/errors.ts";
import {
  encodeGguf,
  ggmlByteLength,
  GgmlType,
  ggufLayout,
  type GgufMetadata,
  type GgufTensor,
  GgufValueType as T,
} from "./writer.ts";

/** Parse GGUF bytes with Hugging Face's parser, serving them through a Range-aware fetch. */
function parse(bytes: Uint8Array) {
  const fetchBytes = (_url: string | URL | Request, init?: RequestInit) => {
    const range = new Headers(init?.headers).get("Range");
    const m = range?.match(/bytes=(\d+)-(\d+)/);
    const body = m ? bytes.slice(Number(m[1]), Number(m[2]) + 1) : bytes.slice();
    return Promise.resolve(new Response(body.buffer as ArrayBuffer, { status: m ? 206 : 200 }));
  };
  return gguf("https://example.invalid/model.gguf", {
    fetch: fetchBytes as typeof fetch,
    typedMetadata: true,
  });
}

const bytesOf = (n: number, seed: number) =>
  Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 255);

function tensor(name: string, shape: number[], type: number, byteLength?: number): GgufTensor {
  const len = byteLength ?? ggmlByteLength(type, shape)!;
  const data = bytesOf(len, name.length);
  return { name, shape, type, byteLength: len, data: () => data };
}

const META: GgufMetadata = {
  "general.architecture": { type: T.STRING, value: "llama" },
  "t.u8": { type: T.UINT8, value: 255 },
  "t.i8": { type: T.INT8, value: -128 },
  "t.u16": { type: T.UINT16, value: 65535 },
  "t.i16": { type: T.INT16, value: -32768 },
  "t.u32": { type: T.UINT32, value: 4294967295 },
  "t.i32": { type: T.INT32, value: -2147483648 },
  "t.f32": { type: T.FLOAT32, value: 0.5 },
  "t.bool": { type: T.BOOL, value: true },
  "t.string": { type: T.STRING, value: "héllo ✓" },
  "t.u64": { type: T.UINT64, value: 18446744073709551615n },
  "t.i64": { type: T.INT64, value: -9223372036854775808n },
  "t.f64": { type: T.FLOAT64, value: 1e-300 },
  "t.ints": { type: T.ARRAY, itemType: T.INT32, value: [1, -2, 3] },
  "t.strings": { type: T.ARRAY, itemType: T.STRING, value: ["a", "", "ccc"] },
  "t.empty": { type: T.ARRAY, itemType: T.STRING, value: [] },
  "t.nested": {
    type: T.ARRAY,
    itemType: T.ARRAY,
    value: [{ type: T.ARRAY, itemType: T.UINT8, value: [1, 2] }],
  },
};

Deno.test("a GGUF file round-trips through Hugging Face's parser: every value type, tensor infos and data", async () => {
  const tensors = [
    tensor("token_embd.weight", [7, 5], GgmlType.F32),
    tensor("blk.0.attn_q.weight", [3, 2, 9], GgmlType.F16),
    tensor("blk.0.ffn_up.weight", [2, 64], GgmlType.Q8_0),
    tensor("pos", [13], GgmlType.I32),
    tensor("odd", [3], 99, 5), // a type this writer does not know: written as given
  ];
  const file = await encodeGguf(META, tensors);
  const { metadata, typedMetadata, tensorInfos, tensorDataOffset } = await parse(file);
  const m = metadata as Record<string, unknown>;
  equal(m.version, 3);
  equal(m.tensor_count, 5n);
  equal(m.kv_count, BigInt(Object.keys(META).length));
  for (const [key, v] of Object.entries(META)) {
    if (v.type === T.ARRAY && v.itemType === T.ARRAY) continue;
    const want = v.type === T.FLOAT32 ? Math.fround(v.value) : v.value;
    deepStrictEqual(m[key], want, key);
    equal(typedMetadata[key]?.type, v.type, key);
  }
  deepStrictEqual(m["t.nested"], [[1, 2]]);
  equal(typedMetadata["t.ints"]?.subType, T.INT32);

  equal(Number(tensorDataOffset) % 32, 0);
  for (const [i, t] of tensors.entries()) {
    const info = tensorInfos[i]!;
    equal(info.name, t.name);
    deepStrictEqual(info.shape, [...t.shape].reverse().map(BigInt), t.name); // innermost first
    equal(Number(info.dtype), t.type);
    equal(Number(info.offset) % 32, 0);
    const start = Number(tensorDataOffset + info.offset);
    deepStrictEqual(file.subarray(start, start + t.byteLength), await t.data(), t.name);
  }
});

Deno.test("general.alignment sets the data alignment", async () => {
  const meta: GgufMetadata = new Map([["general.alignment", { type: T.UINT32, value: 64 }]]);
  const tensors = [tensor("a", [3], GgmlType.F32), tensor("b", [5], GgmlType.F16)];
  const layout = ggufLayout(meta, tensors);
  equal(layout.header.length % 64, 0);
  deepStrictEqual(layout.offsets, [0, 64]);
  const { tensorInfos, tensorDataOffset } = await parse(await encodeGguf(meta, tensors));
  equal(Number(tensorDataOffset), layout.header.length);
  equal(tensorInfos[1]!.offset, 64n);
});

Deno.test("bad metadata and tensors are refused with InvalidArgument", async () => {
  const invalid = (e: unknown) => e instanceof EngineError && e.type === "InvalidArgument";
  const one = (v: GgufMetadata) => () => ggufLayout(v, []);
  throws(one({ k: { type: T.UINT8, value: 256 } }), invalid);
  throws(one({ k: { type: T.INT8, value: 1.5 } }), invalid);
  throws(one({ k: { type: T.UINT64, value: -1n } }), invalid);
  throws(one({ k: { type: T.ARRAY, itemType: T.UINT16, value: [1, -1] } }), invalid);
  throws(one({ "general.alignment": { type: T.UINT32, value: 24 } }), invalid);
  throws(() => ggufLayout({}, [tensor("a", [4], GgmlType.F16, 6)]), invalid); // 8 bytes needed
  throws(() => ggufLayout({}, [tensor("a", [3, 20], GgmlType.Q4_0, 36)]), invalid); // rows of 20
  throws(() => ggufLayout({}, [tensor("a", [2], 0), tensor("a", [2], 0)]), invalid);
  throws(() => ggufLayout({}, [tensor("a", [0, 2], 0, 0)]), invalid);
  const short = { ...tensor("a", [4], GgmlType.F32), data: () => new Uint8Array(8) };
  await rejects(encodeGguf({}, [short]), invalid);
});
