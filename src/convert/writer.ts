/**
 * A GGUF (version 3) writer: typed metadata of every GGUF value type and tensors of any ggml
 * type given as bytes. The layout: magic `GGUF`, version, tensor count, metadata count, the
 * metadata key/value pairs, one info record per tensor (name, dims innermost first, ggml type,
 * offset into the data section), padding to the alignment, then each tensor's bytes, each
 * starting on the alignment. Everything is little-endian.
 */
import { EngineError } from "../contract/errors.ts";

import { type GgufMetadata, type GgufValue, GgufValueType } from "../formats/gguf/value_types.ts";

export { type GgufMetadata, type GgufValue, GgufValueType };

/** ggml tensor types this writer knows: [type number, elements per block, bytes per block]. */
const GGML_TYPES = {
  F32: [0, 1, 4],
  F16: [1, 1, 2],
  Q4_0: [2, 32, 18],
  Q4_1: [3, 32, 20],
  Q5_0: [6, 32, 22],
  Q5_1: [7, 32, 24],
  Q8_0: [8, 32, 34],
  Q8_1: [9, 32, 36],
  Q2_K: [10, 256, 84],
  Q3_K: [11, 256, 110],
  Q4_K: [12, 256, 144],
  Q5_K: [13, 256, 176],
  Q6_K: [14, 256, 210],
  Q8_K: [15, 256, 292],
  IQ2_XXS: [16, 256, 66],
  IQ2_XS: [17, 256, 74],
  IQ3_XXS: [18, 256, 98],
  IQ1_S: [19, 256, 50],
  IQ4_NL: [20, 32, 18],
  IQ3_S: [21, 256, 110],
  IQ2_S: [22, 256, 82],
  IQ4_XS: [23, 256, 136],
  I8: [24, 1, 1],
  I16: [25, 1, 2],
  I32: [26, 1, 4],
  I64: [27, 1, 8],
  F64: [28, 1, 8],
  IQ1_M: [29, 256, 56],
  BF16: [30, 1, 2],
  TQ1_0: [34, 256, 54],
  TQ2_0: [35, 256, 66],
} as const satisfies Record<string, readonly [number, number, number]>;

/** ggml tensor type numbers (others are written unchecked). */
export const GgmlType = Object.fromEntries(
  Object.entries(GGML_TYPES).map(([name, [type]]) => [name, type]),
) as { readonly [K in keyof typeof GGML_TYPES]: (typeof GGML_TYPES)[K][0] };

const BLOCKS = new Map<number, readonly [number, number]>(
  Object.values(GGML_TYPES).map(([type, elems, bytes]) => [type, [elems, bytes]]),
);

/** A tensor's description: `shape` is row-major, outermost first (as safetensors and numpy). */
export interface GgufTensorSpec {
  /** The tensor's name in the file (`blk.0.attn_q.weight`, ...). */
  name: string;
  /** Its dimensions, outermost first. */
  shape: readonly number[];
  /** A ggml type number (`GgmlType`). */
  type: number;
  /** Bytes of data; checked against the shape for the types in `GgmlType`. */
  byteLength: number;
}

/** Bytes a tensor of a known ggml type takes, or undefined for a type this writer does not know. */
export function ggmlByteLength(
  type: number,
  shape: readonly number[],
): number | undefined {
  const block = BLOCKS.get(type);
  if (block === undefined) return undefined;
  const [elems, bytes] = block;
  const rowLen = shape.length === 0 ? 1 : shape[shape.length - 1]!;
  if (rowLen % elems !== 0) {
    throw EngineError.invalidArgument(
      `ggml type ${type}: rows of ${rowLen} are not a multiple of its block (${elems})`,
    );
  }
  return shape.reduce((a, d) => a * d, 1) / elems * bytes;
}

const MAGIC = 0x46554747; // "GGUF" read as a little-endian u32

class ByteWriter {
  #buf = new Uint8Array(1024);
  #view = new DataView(this.#buf.buffer);
  length = 0;

  #reserve(n: number): number {
    const at = this.length;
    if (at + n > this.#buf.length) {
      const next = new Uint8Array(Math.max(this.#buf.length * 2, at + n));
      next.set(this.#buf.subarray(0, at));
      this.#buf = next;
      this.#view = new DataView(next.buffer);
    }
    this.length += n;
    return at;
  }
  /** Reserve n bytes and return the view to write them through (valid after any growth). */
  #at(n: number): DataView {
    this.#reserve(n);
    return this.#view;
  }
  u8(v: number) {
    this.#at(1).setUint8(this.length - 1, v);
  }
  i8(v: number) {
    this.#at(1).setInt8(this.length - 1, v);
  }
  u16(v: number) {
    this.#at(2).setUint16(this.length - 2, v, true);
  }
  i16(v: number) {
    this.#at(2).setInt16(this.length - 2, v, true);
  }
  u32(v: number) {
    this.#at(4).setUint32(this.length - 4, v, true);
  }
  i32(v: number) {
    this.#at(4).setInt32(this.length - 4, v, true);
  }
  f32(v: number) {
    this.#at(4).setFloat32(this.length - 4, v, true);
  }
  f64(v: number) {
    this.#at(8).setFloat64(this.length - 8, v, true);
  }
  u64(v: bigint | number) {
    this.#at(8).setBigUint64(this.length - 8, BigInt(v), true);
  }
  i64(v: bigint | number) {
    this.#at(8).setBigInt64(this.length - 8, BigInt(v), true);
  }
  bytes(b: Uint8Array) {
    const at = this.#reserve(b.length); // may replace #buf: reserve before reading it
    this.#buf.set(b, at);
  }
  string(s: string) {
    const b = new TextEncoder().encode(s);
    this.u64(b.length);
    this.bytes(b);
  }
  pad(alignment: number) {
    this.#reserve((alignment - this.length % alignment) % alignment);
  }
  finish(): Uint8Array {
    return this.#buf.slice(0, this.length);
  }
}

function bad(key: string, why: string): EngineError {
  return EngineError.invalidArgument(`GGUF metadata ${key}: ${why}`);
}

function checkInt(
  key: string,
  v: number | bigint,
  min: bigint,
  max: bigint,
): void {
  const b = typeof v === "bigint" ? v : Number.isInteger(v) ? BigInt(v) : undefined;
  if (b === undefined || b < min || b > max) {
    throw bad(key, `${v} is out of range`);
  }
}

const RANGES: Partial<Record<GgufValueType, readonly [bigint, bigint]>> = {
  0: [0n, 0xffn],
  1: [-0x80n, 0x7fn],
  2: [0n, 0xffffn],
  3: [-0x8000n, 0x7fffn],
  4: [0n, 0xffffffffn],
  5: [-0x80000000n, 0x7fffffffn],
  10: [0n, 0xffffffffffffffffn],
  11: [-0x8000000000000000n, 0x7fffffffffffffffn],
};

function writeScalar(
  w: ByteWriter,
  key: string,
  type: GgufValueType,
  v: unknown,
): void {
  const range = RANGES[type];
  if (range !== undefined) {
    if (typeof v !== "number" && typeof v !== "bigint") {
      throw bad(key, "expected an integer");
    }
    checkInt(key, v, range[0], range[1]);
  }
  switch (type) {
    case 0:
      return w.u8(Number(v));
    case 1:
      return w.i8(Number(v));
    case 2:
      return w.u16(Number(v));
    case 3:
      return w.i16(Number(v));
    case 4:
      return w.u32(Number(v));
    case 5:
      return w.i32(Number(v));
    case 10:
      return w.u64(v as bigint | number);
    case 11:
      return w.i64(v as bigint | number);
    case 6:
    case 12:
      if (typeof v !== "number") throw bad(key, "expected a number");
      return type === 6 ? w.f32(v) : w.f64(v);
    case 7:
      if (typeof v !== "boolean") throw bad(key, "expected a boolean");
      return w.u8(v ? 1 : 0);
    case 8:
      if (typeof v !== "string") throw bad(key, "expected a string");
      return w.string(v);
    default:
      throw bad(key, `unknown value type ${type}`);
  }
}

function writeValue(w: ByteWriter, key: string, value: GgufValue): void {
  if (value.type !== GgufValueType.ARRAY) {
    return writeScalar(w, key, value.type, value.value);
  }
  w.u32(value.itemType);
  w.u64(value.value.length);
  for (const item of value.value) {
    if (value.itemType === GgufValueType.ARRAY) {
      writeValue(w, key, item as GgufValue);
    } else writeScalar(w, key, value.itemType, item);
  }
}

function entries(meta: GgufMetadata): [string, GgufValue][] {
  return meta instanceof Map ? [...meta] : Object.entries(meta as Record<string, GgufValue>);
}

/** Where a GGUF file's parts lie: the header bytes, then each tensor's place in the data section. */
export interface GgufLayout {
  /** Magic to the end of the padding after the tensor infos. */
  header: Uint8Array;
  /** Each tensor's offset inside the data section (aligned). */
  offsets: number[];
  /** Bytes of the data section, padding included. */
  dataLength: number;
  /** The data section's alignment in bytes (`general.alignment`, default 32). */
  alignment: number;
}

/**
 * Lay out a GGUF file: the header bytes and where each tensor's data goes. The alignment is
 * `general.alignment` when the metadata sets it (a UINT32 power of two), else 32.
 */
export function ggufLayout(
  meta: GgufMetadata,
  tensors: readonly GgufTensorSpec[],
): GgufLayout {
  const kv = entries(meta);
  const align = kv.find(([k]) => k === "general.alignment")?.[1];
  let alignment = 32;
  if (align !== undefined) {
    if (
      align.type !== GgufValueType.UINT32 || align.value <= 0 ||
      (align.value & (align.value - 1))
    ) {
      throw bad("general.alignment", "must be a UINT32 power of two");
    }
    alignment = align.value;
  }
  const w = new ByteWriter();
  w.u32(MAGIC);
  w.u32(3);
  w.u64(tensors.length);
  w.u64(kv.length);
  for (const [key, value] of kv) {
    w.string(key);
    w.u32(value.type);
    writeValue(w, key, value);
  }
  const names = new Set<string>();
  const offsets: number[] = [];
  let offset = 0;
  for (const t of tensors) {
    if (names.has(t.name)) {
      throw EngineError.invalidArgument(
        `GGUF tensor ${t.name}: duplicate name`,
      );
    }
    names.add(t.name);
    if (!t.shape.every((d) => Number.isSafeInteger(d) && d > 0)) {
      throw EngineError.invalidArgument(
        `GGUF tensor ${t.name}: bad shape [${t.shape}]`,
      );
    }
    const expected = ggmlByteLength(t.type, t.shape);
    if (expected !== undefined && expected !== t.byteLength) {
      throw EngineError.invalidArgument(
        `GGUF tensor ${t.name}: ${t.byteLength} bytes, but type ${t.type} [${t.shape}] takes ${expected}`,
      );
    }
    w.string(t.name);
    w.u32(t.shape.length);
    for (let i = t.shape.length - 1; i >= 0; i--) w.u64(t.shape[i]!);
    w.u32(t.type);
    w.u64(offset);
    offsets.push(offset);
    offset += t.byteLength;
    offset += (alignment - offset % alignment) % alignment;
  }
  w.pad(alignment);
  return { header: w.finish(), offsets, dataLength: offset, alignment };
}

/** A tensor to write: its spec and its bytes (read when the writer reaches it). */
export interface GgufTensor extends GgufTensorSpec {
  /** The tensor's bytes, as the file holds them (called once, when the writer reaches it). */
  data: () => Promise<Uint8Array> | Uint8Array;
}

/**
 * Write a whole GGUF file to `write`, one tensor at a time (never the whole file in memory).
 * Returns the number of bytes written.
 */
export async function writeGguf(
  write: (bytes: Uint8Array) => Promise<unknown> | unknown,
  meta: GgufMetadata,
  tensors: readonly GgufTensor[],
): Promise<number> {
  const layout = ggufLayout(meta, tensors);
  await write(layout.header);
  let at = 0;
  for (const [i, t] of tensors.entries()) {
    const gap = layout.offsets[i]! - at;
    if (gap > 0) await write(new Uint8Array(gap));
    const bytes = await t.data();
    if (bytes.length !== t.byteLength) {
      throw EngineError.invalidArgument(
        `GGUF tensor ${t.name}: data has ${bytes.length} bytes, the spec says ${t.byteLength}`,
      );
    }
    await write(bytes);
    at = layout.offsets[i]! + bytes.length;
  }
  if (layout.dataLength > at) {
    await write(new Uint8Array(layout.dataLength - at));
  }
  return layout.header.length + layout.dataLength;
}

/** Write a GGUF file into memory (tests, small models). */
export async function encodeGguf(
  meta: GgufMetadata,
  tensors: readonly GgufTensor[],
): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  const total = await writeGguf((b) => parts.push(b.slice()), meta, tensors);
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
