/**
 * One GGUF file's header, read through a Kiln `ByteSource` (a path, a `Blob`, a URL with Range
 * requests) and parsed by `@huggingface/gguf`. The parser reads through a `fetch` it is handed;
 * Kiln hands it one that serves byte ranges of the source, so nothing but the header is read.
 *
 * The file is untrusted. The parser bounds its own counts (tensors, keys, array and string
 * lengths) and its buffer (~48 MB); on top of that the adapter lets it read at most one chunk
 * past the end of the file (the parser zero-fills its buffer there), and every tensor info is
 * checked here: its ggml type, dims (their product must stay below 2^53), byte length, offset
 * (aligned, inside the file) and that no two tensors overlap. Every failure, the parser's
 * included, is an `EngineError` (`InvalidArgument` for bad bytes; the parser's error kept as its
 * `cause`).
 */
import { EngineError } from "../../contract/errors.ts";
import type { WeightDtype } from "../../gpu/dtype.ts";
import { QUANT_BLOCKS, QUANT_TYPES, type QuantType } from "../../gpu/formats/blocks.ts";
import { htmlPage, looksLikeHtml } from "../html.ts";
import type { ByteSource } from "../source.ts";
import {
  GGMLQuantizationType,
  type GGUFTensorInfo,
  type GGUFTypedMetadata,
  GGUFValueType,
  parseGgufHeader,
} from "./lib.ts";
import { GgufMetadata } from "./metadata.ts";

/** A tensor's element type: a float dtype Kiln reads today or a ggml block-quantized type. */
export type GgufDtype = WeightDtype | QuantType;

/** A tensor as the file stores it (GGUF name, ggml dims: `dims[0]` is the row length). */
export interface GgufTensor {
  name: string;
  ggmlType: number;
  dtype: GgufDtype;
  dims: number[];
  /** Absolute offset of the data in `source`, and its length in bytes. */
  offset: number;
  length: number;
  source: ByteSource;
}

export interface GgufFile {
  source: ByteSource;
  version: number;
  metadata: GgufMetadata;
  tensors: GgufTensor[];
  /** Absolute offset where tensor data starts. */
  dataOffset: number;
}

const FLOAT_TYPES: Record<number, [WeightDtype, number]> = {
  0: ["f32", 4],
  1: ["f16", 2],
  30: ["bf16", 2],
};
/** The parser fetches 2 MB chunks and stops near 50 MB; refuse a header larger than this. */
const MAX_HEADER_BYTES = 40_000_000;
const MAX_ALIGNMENT = 1 << 20;
const MAX_DIMS = 4;

/** The name of ggml type `n` for messages. */
export function ggmlTypeName(n: number): string {
  const name = (GGMLQuantizationType as unknown as Record<number, string>)[n];
  return typeof name === "string" ? name : `unknown type ${n}`;
}

/** The Kiln dtype of ggml type `n`, or undefined when Kiln cannot read it. */
export function dtypeOfGgml(n: number): GgufDtype | undefined {
  const float = FLOAT_TYPES[n];
  if (float) return float[0];
  return QUANT_TYPES.find((t) => QUANT_BLOCKS[t].ggmlType === n);
}

/** A `fetch` over `source` that answers the parser's Range requests, and nothing else. */
function rangeFetch(source: ByteSource): typeof fetch {
  let pastEnd = 0;
  const fetchFn = async (_input: unknown, init?: RequestInit): Promise<Response> => {
    const range = new Headers(init?.headers).get("range") ?? "";
    const m = /^bytes=(\d+)-(\d+)$/.exec(range);
    if (!m) throw new Error(`unexpected request ${JSON.stringify(range)}`);
    const start = Number(m[1]);
    const end = Math.min(Number(m[2]) + 1, source.size);
    if (start >= MAX_HEADER_BYTES) {
      throw EngineError.invalidArgument(
        `${source.name}: the GGUF header runs past ${MAX_HEADER_BYTES} bytes`,
      );
    }
    if (start >= source.size && ++pastEnd > 1) {
      throw EngineError.invalidArgument(
        `${source.name}: the GGUF header runs past the end of the file (${source.size} bytes)`,
      );
    }
    const bytes = start < end ? await source.read(start, end - start) : new Uint8Array(0);
    return new Response(bytes as BodyInit, {
      status: 206,
      headers: { "content-range": `bytes ${start}-${start + bytes.length}/${source.size}` },
    });
  };
  return fetchFn as typeof fetch;
}

function product(name: string, dims: readonly number[], bad: (why: string) => EngineError) {
  let n = 1;
  for (const d of dims) {
    if (d !== 0 && n > Number.MAX_SAFE_INTEGER / d) {
      throw bad(`tensor ${name}: dims [${dims}] hold more than 2^53 elements`);
    }
    n *= d;
  }
  return n;
}

const SCALAR_BYTES: Partial<Record<number, number>> = {
  [GGUFValueType.UINT8]: 1,
  [GGUFValueType.INT8]: 1,
  [GGUFValueType.BOOL]: 1,
  [GGUFValueType.UINT16]: 2,
  [GGUFValueType.INT16]: 2,
  [GGUFValueType.UINT32]: 4,
  [GGUFValueType.INT32]: 4,
  [GGUFValueType.FLOAT32]: 4,
  [GGUFValueType.UINT64]: 8,
  [GGUFValueType.INT64]: 8,
  [GGUFValueType.FLOAT64]: 8,
};
const utf8Bytes = (s: string) => new TextEncoder().encode(s).length;

/** Bytes a value of `type` takes in the file, or undefined for a nested array. */
function valueBytes(type: number, value: unknown, sub?: number): number | undefined {
  if (type === GGUFValueType.STRING) return 8 + utf8Bytes(String(value));
  if (type !== GGUFValueType.ARRAY) return SCALAR_BYTES[type];
  if (sub === undefined || sub === GGUFValueType.ARRAY || !Array.isArray(value)) return undefined;
  let n = 12;
  for (const v of value) n += valueBytes(sub, v)!;
  return n;
}

/**
 * The parser cuts a string short, silently, when it crosses the end of the chunk it has read
 * (2 MB chunks). Re-count the bytes of every key, value and tensor info as parsed: a cut string
 * (or one that is not UTF-8) does not add up to the section's length.
 */
function checkLengths(
  typed: GGUFTypedMetadata,
  infos: readonly GGUFTensorInfo[],
  range: [number, number],
  bad: (why: string) => EngineError,
): void {
  let kv = 24;
  for (const [key, entry] of Object.entries(typed)) {
    if (key === "version" || key === "tensor_count" || key === "kv_count") continue;
    const n = valueBytes(entry.type, entry.value, "subType" in entry ? entry.subType : undefined);
    if (n === undefined) throw bad(`metadata ${key}: nested arrays are not supported`);
    kv += 8 + utf8Bytes(key) + 4 + n;
  }
  let ti = 0;
  for (const t of infos) ti += 8 + utf8Bytes(t.name) + 4 + 8 * t.shape.length + 4 + 8;
  if (kv !== range[0] || ti !== range[1] - range[0]) {
    throw bad(
      "the header does not add up (a string that is not UTF-8, a repeated key, or one cut " +
        "short where the parser's 2 MB reads end)",
    );
  }
}

/** The parser's reading of `source`'s header; any failure is an `EngineError`. */
async function parseHeader(source: ByteSource) {
  try {
    return await parseGgufHeader("https://kiln.invalid/model.gguf", {
      fetch: rangeFetch(source),
      typedMetadata: true,
    });
  } catch (e) {
    // An HTML page (an SPA fallback's index.html) has no GGUF magic: say what it is.
    const html = await source.read(0, Math.min(source.size, 256)).then(looksLikeHtml, () => false);
    if (html) throw htmlPage(source.name);
    throw EngineError.fromLibrary(
      "@huggingface/gguf",
      `${source.name}: not a readable GGUF file`,
      e,
    );
  }
}

/** Bytes of a tensor of ggml type `ggmlType` and `dims` (quantized rows must be whole blocks). */
function tensorBytes(
  name: string,
  ggmlType: number,
  dtype: GgufDtype,
  dims: readonly number[],
  bad: (why: string) => EngineError,
): number {
  const elements = product(name, dims, bad);
  const float = FLOAT_TYPES[ggmlType];
  if (float) return elements * float[1];
  const f = QUANT_BLOCKS[dtype as QuantType];
  if (dims[0]! % f.blockSize !== 0) {
    throw bad(
      `tensor ${name}: rows of ${
        dims[0]
      } elements are not whole ${f.type} blocks of ${f.blockSize}`,
    );
  }
  return (elements / f.blockSize) * f.blockBytes;
}

/** Where tensor data lies in the file: its start, alignment, and the file holding it. */
interface DataLayout {
  source: ByteSource;
  dataOffset: number;
  alignment: number;
}

/**
 * Tensor info `info`, checked: a ggml type Kiln reads, 1 to `MAX_DIMS` dims, a whole number of
 * blocks per row, and an aligned offset with its bytes inside the file.
 */
function checkedTensor(
  info: GGUFTensorInfo,
  at: DataLayout,
  bad: (why: string) => EngineError,
): GgufTensor {
  const { source, dataOffset, alignment } = at;
  const name = info.name;
  const ggmlType = Number(info.dtype);
  const dtype = dtypeOfGgml(ggmlType);
  if (dtype === undefined) {
    throw bad(
      `tensor ${name}: ggml type ${ggmlTypeName(ggmlType)} is not supported ` +
        `(F32, F16, BF16, ${QUANT_TYPES.join(", ")})`,
    );
  }
  if (info.shape.length < 1 || info.shape.length > MAX_DIMS) {
    throw bad(`tensor ${name}: ${info.shape.length} dims (1 to ${MAX_DIMS} supported)`);
  }
  const dims = info.shape.map(Number);
  if (!dims.every((d) => Number.isSafeInteger(d) && d >= 0)) {
    throw bad(`tensor ${name}: bad dims [${info.shape}]`);
  }
  const length = tensorBytes(name, ggmlType, dtype, dims, bad);
  const rel = info.offset;
  if (rel > BigInt(Number.MAX_SAFE_INTEGER) || Number(rel) % alignment !== 0) {
    throw bad(`tensor ${name}: data offset ${rel} is not a multiple of ${alignment}`);
  }
  const offset = dataOffset + Number(rel);
  if (!Number.isSafeInteger(offset + length) || offset + length > source.size) {
    throw bad(
      `tensor ${name}: ${length} bytes at offset ${offset} run past the end of the file (${source.size} bytes)`,
    );
  }
  return { name, ggmlType, dtype, dims, offset, length, source };
}

/** Refuse two tensors whose (non-empty) data overlap. */
function checkOverlaps(tensors: readonly GgufTensor[], bad: (why: string) => EngineError): void {
  const spans = tensors.filter((t) => t.length > 0).sort((a, b) => a.offset - b.offset);
  for (let i = 1; i < spans.length; i++) {
    const [a, b] = [spans[i - 1]!, spans[i]!];
    if (b.offset < a.offset + a.length) {
      throw bad(`tensor ${b.name}: data overlaps tensor ${a.name}`);
    }
  }
}

/** Read and check the header of one GGUF file. */
export async function readGgufFile(source: ByteSource): Promise<GgufFile> {
  const file = source.name;
  const bad = (why: string) => EngineError.invalidArgument(`${file}: ${why}`);
  const parsed = await parseHeader(source);
  const raw = parsed.metadata as unknown as Record<string, unknown>;
  const version = Number(raw.version);
  if (version < 2) throw bad(`GGUF version ${version} is not supported (2 or 3)`);
  if (!parsed.littleEndian) throw bad("big-endian GGUF files are not supported");
  const headerEnd = parsed.tensorInfoByteRange[1];
  if (headerEnd > source.size) {
    throw bad(`the header runs past the end of the file (${source.size} bytes)`);
  }
  checkLengths(parsed.typedMetadata, parsed.tensorInfos, parsed.tensorInfoByteRange, bad);
  const metadata = new GgufMetadata(raw, file);
  const alignment = metadata.count("general.alignment", 32);
  if (alignment > MAX_ALIGNMENT || (alignment & (alignment - 1)) !== 0) {
    throw metadata.refuse("general.alignment", `${alignment} is not a power of two up to 2^20`);
  }
  const dataOffset = Math.ceil(headerEnd / alignment) * alignment;
  const tensors: GgufTensor[] = [];
  const names = new Set<string>();
  for (const info of parsed.tensorInfos) {
    if (names.has(info.name)) throw bad(`tensor ${info.name} appears twice`);
    names.add(info.name);
    tensors.push(checkedTensor(info, { source, dataOffset, alignment }, bad));
  }
  checkOverlaps(tensors, bad);
  return { source, version, metadata, tensors, dataOffset };
}
