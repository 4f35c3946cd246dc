/**
 * Test-only: a minimal GGUF (v3, little-endian) encoder, so tests build their files byte by byte
 * instead of shipping binaries. Not the GGUF writer (that is `writer.ts`); it writes exactly what
 * it is given, so tests can also write files a real writer never would.
 */

/** GGUF metadata value types. */
export const T = {
  U8: 0,
  I8: 1,
  U16: 2,
  I16: 3,
  U32: 4,
  I32: 5,
  F32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  U64: 10,
  I64: 11,
  F64: 12,
} as const;

/** An explicitly typed value; plain values are inferred (see `infer`). */
export interface Typed {
  type: number;
  value: unknown;
  /** Element type of an array. */
  sub?: number;
}

export type Value = string | number | boolean | bigint | string[] | number[] | Typed;

export interface TestTensor {
  name: string;
  /** ggml type number. */
  type: number;
  /** ggml order: dims[0] is the row length. */
  dims: number[];
  data: Uint8Array;
  /** Override the data offset (relative to the data section) the info records. */
  offset?: number;
}

export const typed = (type: number, value: unknown, sub?: number): Typed =>
  sub === undefined ? { type, value } : { type, value, sub };

function infer(v: Value): Typed {
  if (typeof v === "object" && !Array.isArray(v)) return v;
  if (typeof v === "string") return typed(T.STRING, v);
  if (typeof v === "boolean") return typed(T.BOOL, v);
  if (typeof v === "bigint") return typed(T.U64, v);
  if (typeof v === "number") return typed(Number.isInteger(v) ? T.U32 : T.F32, v);
  const sub = v.every((x) => typeof x === "string")
    ? T.STRING
    : (v as number[]).every(Number.isInteger)
    ? T.I32
    : T.F32;
  return typed(T.ARRAY, v, sub);
}

class Bytes {
  parts: number[] = [];
  u8(x: number) {
    this.parts.push(x & 0xff);
  }
  fixed(n: number, set: (d: DataView) => void) {
    const b = new Uint8Array(n);
    set(new DataView(b.buffer));
    this.bytes(b);
  }
  bytes(b: Uint8Array) {
    for (const x of b) this.parts.push(x);
  }
  u32(x: number) {
    this.fixed(4, (d) => d.setUint32(0, x, true));
  }
  u64(x: number | bigint) {
    this.fixed(8, (d) => d.setBigUint64(0, BigInt(x), true));
  }
  str(s: string) {
    const b = new TextEncoder().encode(s);
    this.u64(b.length);
    this.bytes(b);
  }
  value(t: number, v: unknown, sub?: number) {
    switch (t) {
      case T.U8:
      case T.I8:
      case T.BOOL:
        return this.u8(Number(v));
      case T.U16:
      case T.I16:
        return this.fixed(2, (d) => d.setUint16(0, Number(v), true));
      case T.U32:
        return this.u32(Number(v));
      case T.I32:
        return this.fixed(4, (d) => d.setInt32(0, Number(v), true));
      case T.F32:
        return this.fixed(4, (d) => d.setFloat32(0, Number(v), true));
      case T.STRING:
        return this.str(String(v));
      case T.U64:
      case T.I64:
        return this.u64(BigInt(v as number));
      case T.F64:
        return this.fixed(8, (d) => d.setFloat64(0, Number(v), true));
      case T.ARRAY: {
        const items = v as unknown[];
        this.u32(sub!);
        this.u64(items.length);
        for (const x of items) this.value(sub!, x);
        return;
      }
    }
    throw new Error(`test encoder: unknown type ${t}`);
  }
}

/** A whole GGUF file: header, tensor infos, padding to `alignment`, then the data. */
export function encodeGguf(
  metadata: Record<string, Value>,
  tensors: readonly TestTensor[] = [],
  alignment = 32,
): Uint8Array<ArrayBuffer> {
  const b = new Bytes();
  b.parts.push(0x47, 0x47, 0x55, 0x46);
  b.u32(3);
  b.u64(tensors.length);
  b.u64(Object.keys(metadata).length);
  for (const [k, v] of Object.entries(metadata)) {
    const t = infer(v);
    b.str(k);
    b.u32(t.type);
    b.value(t.type, t.value, t.sub);
  }
  const pad = (n: number) => Math.ceil(n / alignment) * alignment;
  let offset = 0;
  const offsets: number[] = [];
  for (const t of tensors) {
    offsets.push(t.offset ?? offset);
    offset = pad(offset + t.data.length);
    b.str(t.name);
    b.u32(t.dims.length);
    for (const d of t.dims) b.u64(d);
    b.u32(t.type);
    b.u64(offsets[offsets.length - 1]!);
  }
  const start = pad(b.parts.length);
  const out = new Uint8Array(tensors.length ? start + offset : b.parts.length);
  out.set(b.parts);
  tensors.forEach((t, i) => out.set(t.data, start + offsets[i]!));
  return out;
}
