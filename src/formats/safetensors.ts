/**
 * The safetensors format: an 8-byte little-endian header length, a JSON header mapping tensor
 * names to dtype, shape and data offsets, then the data. Every entry is checked against the
 * file before any byte of data is read.
 */
import { describe } from "../contract/describe.ts";
import { EngineError } from "../contract/errors.ts";
import type { WeightDtype } from "../gpu/dtype.ts";
import { DTYPE_BYTES } from "../gpu/dtype.ts";
import { htmlPage, looksLikeHtml } from "./html.ts";
import type { ByteSource, ModelFiles } from "./source.ts";

/** One tensor of a safetensors file. */
export interface TensorInfo {
  /** The tensor's name in the header. */
  name: string;
  /** Element type (F32, F16 or BF16). */
  dtype: WeightDtype;
  /** Dimensions, outermost first. */
  shape: number[];
  /** Absolute byte offset of the data in the file. */
  offset: number;
  /** Length of the data in bytes. */
  length: number;
  /** The file holding the data. */
  source: ByteSource;
}

/**
 * A tensor of raw bytes (safetensors dtype U8): the blocks and scales of MXFP4 experts, which
 * `fused_experts.ts` turns into weights. Only read where a caller asks for them.
 */
export interface ByteTensorInfo extends Omit<TensorInfo, "dtype"> {
  /** Bytes (safetensors U8). */
  dtype: "u8";
}

const DTYPES: Record<string, WeightDtype> = { F32: "f32", F16: "f16", BF16: "bf16" };
const MAX_HEADER = 100 * 1024 * 1024;

function corrupt(file: string, why: string, cause?: unknown): EngineError {
  return EngineError.invalidArgument(`${file}: ${why}`, cause);
}

/** A tensor name for a message: as it is when short and printable, else quoted and cut. */
function label(name: string): string {
  return name.length <= 200 && /^[\x21-\x7e]+$/.test(name) ? name : describe(name, 200);
}

/** The JSON header object of a safetensors file and its length in bytes. */
async function readHeaderJson(
  source: ByteSource,
): Promise<{ header: Record<string, unknown>; headerLen: number }> {
  const file = source.name;
  if (source.size < 8) {
    throw corrupt(file, `truncated: ${source.size} bytes, not a safetensors file`);
  }
  const prefix = await source.read(0, 8);
  const headerLen = Number(new DataView(prefix.buffer, prefix.byteOffset, 8).getBigUint64(0, true));
  if (headerLen > MAX_HEADER || 8 + headerLen > source.size) {
    // An HTML page (an SPA fallback's index.html) reads as an enormous header length.
    if (looksLikeHtml(await source.read(0, Math.min(source.size, 256)))) throw htmlPage(file);
    throw corrupt(
      file,
      `header length ${headerLen} runs past the end of the file (${source.size} bytes)`,
    );
  }
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(
      new TextDecoder("utf-8", { fatal: true }).decode(await source.read(8, headerLen)),
    );
  } catch (e) {
    throw corrupt(file, `header is not valid JSON (${(e as Error).message})`, e);
  }
  if (typeof header !== "object" || header === null || Array.isArray(header)) {
    throw corrupt(file, "header is not a JSON object");
  }
  return { header, headerLen };
}

/** One header entry, checked: its dtype, shape and data offsets within `dataSize` bytes. */
interface CheckedEntry {
  dtype: WeightDtype | "u8";
  shape: number[];
  begin: number;
  end: number;
}

/**
 * Check header entry `entry` (tensor `name`, as labelled) of `file`: a known dtype (U8 only
 * where `allowBytes`), a shape, and data offsets inside the data holding exactly its bytes.
 */
function checkEntry(
  file: string,
  name: string,
  entry: unknown,
  dataSize: number,
  allowBytes: boolean,
): CheckedEntry {
  if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
    throw corrupt(file, `tensor ${name}: expected an object, got ${describe(entry)}`);
  }
  const e = entry as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
  const dtype = typeof e.dtype === "string" && Object.hasOwn(DTYPES, e.dtype)
    ? DTYPES[e.dtype]
    : e.dtype === "U8" && allowBytes
    ? "u8"
    : undefined;
  if (dtype === undefined) {
    throw corrupt(file, `tensor ${name}: unsupported dtype ${describe(e.dtype)}`);
  }
  const shape = e.shape;
  if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
    throw corrupt(file, `tensor ${name}: bad shape ${describe(shape)}`);
  }
  const offs = e.data_offsets;
  if (
    !Array.isArray(offs) || offs.length !== 2 ||
    !offs.every((o) => Number.isSafeInteger(o) && o >= 0)
  ) {
    throw corrupt(file, `tensor ${name}: bad data_offsets ${describe(offs)}`);
  }
  const [begin, end] = offs as [number, number];
  if (end < begin || end > dataSize) {
    throw corrupt(
      file,
      `tensor ${name}: data_offsets [${begin}, ${end}] run past the end of the data (${dataSize} bytes)`,
    );
  }
  const expected = shape.reduce((a: number, b: number) => a * b, 1) *
    (dtype === "u8" ? 1 : DTYPE_BYTES[dtype]);
  if (!Number.isSafeInteger(expected) || end - begin !== expected) {
    throw corrupt(
      file,
      `tensor ${name}: ${end - begin} bytes for shape ${
        describe(shape)
      } of ${dtype} (expected ${expected})`,
    );
  }
  return { dtype, shape, begin, end };
}

/** Refuse two tensors whose data (`[begin, end, label]` spans) overlap. */
function checkOverlaps(file: string, spans: [number, number, string][]): void {
  spans.sort((a, b) => a[0] - b[0]);
  for (let i = 1; i < spans.length; i++) {
    if (spans[i]![0] < spans[i - 1]![1]) {
      throw corrupt(file, `tensor ${spans[i]![2]}: data overlaps tensor ${spans[i - 1]![2]}`);
    }
  }
}

/**
 * Read and validate the header of a safetensors file. U8 tensors go to `bytes` when it is given
 * (otherwise they are refused as an unsupported dtype).
 */
export async function readSafetensorsHeader(
  source: ByteSource,
  bytes?: Map<string, ByteTensorInfo>,
): Promise<Map<string, TensorInfo>> {
  const file = source.name;
  const { header, headerLen } = await readHeaderJson(source);
  const dataStart = 8 + headerLen;
  const dataSize = source.size - dataStart;
  const tensors = new Map<string, TensorInfo>();
  const spans: [number, number, string][] = [];
  for (const [key, entry] of Object.entries(header)) {
    if (key === "__metadata__") continue;
    const name = label(key);
    const { dtype, shape, begin, end } = checkEntry(
      file,
      name,
      entry,
      dataSize,
      bytes !== undefined,
    );
    spans.push([begin, end, name]);
    const at = { name: key, shape, offset: dataStart + begin, length: end - begin, source };
    if (dtype === "u8") bytes!.set(key, { ...at, dtype });
    else tensors.set(key, { ...at, dtype });
  }
  checkOverlaps(file, spans);
  return tensors;
}

/**
 * Every tensor of a checkpoint: `model.safetensors`, or the shards of its index. `files` (where
 * `open` opens from) names a missing file in messages as it describes it. U8 tensors go to
 * `bytes` when given (else they are refused).
 */
export async function readCheckpoint(
  open: (name: string) => Promise<ByteSource | undefined>,
  files?: Pick<ModelFiles, "location" | "describeMissing">,
  bytes?: Map<string, ByteTensorInfo>,
): Promise<Map<string, TensorInfo>> {
  const why = (name: string) => {
    const text = files?.describeMissing?.(name);
    return text === undefined ? "" : ` (${text})`;
  };
  const single = await open("model.safetensors");
  if (single) return await readSafetensorsHeader(single, bytes);
  const index = await open(INDEX);
  if (!index) {
    throw EngineError.invalidArgument(
      `${files ? `${files.location}: ` : ""}no model.safetensors or ${INDEX}${
        why("model.safetensors")
      }`,
    );
  }
  const indexBytes = await index.read(0, index.size);
  if (looksLikeHtml(indexBytes)) throw htmlPage(index.name);
  const map = weightMap(indexBytes);
  const tensors = new Map<string, TensorInfo>();
  const from = new Map<string, string>();
  for (const shard of new Set(Object.values(map))) {
    const src = await open(shard);
    if (!src) {
      throw EngineError.invalidArgument(
        `shard ${describe(shard)} named by the index is missing${why(shard)}`,
      );
    }
    const shardBytes = bytes && new Map<string, ByteTensorInfo>();
    for (const [name, info] of await readSafetensorsHeader(src, shardBytes)) {
      tensors.set(name, info);
      from.set(name, shard);
    }
    for (const [name, info] of shardBytes ?? []) {
      bytes!.set(name, info);
      from.set(name, shard);
    }
  }
  for (const [name, shard] of Object.entries(map)) {
    if (from.get(name) !== shard) {
      throw EngineError.invalidArgument(
        `tensor ${label(name)}: the index puts it in ${describe(shard)}, which does not hold it`,
      );
    }
  }
  return tensors;
}

const INDEX = "model.safetensors.index.json";
const MAX_INDEX = 64 * 1024 * 1024;
/** Longest shard file name accepted (the usual file-system limit, in UTF-8 bytes). */
const MAX_SHARD_NAME = 255;

/** The `weight_map` of an index: tensor name to shard file name, every name checked. */
function weightMap(bytes: Uint8Array): Record<string, string> {
  if (bytes.length > MAX_INDEX) {
    throw EngineError.invalidArgument(`${INDEX}: ${bytes.length} bytes is too large for an index`);
  }
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (e) {
    throw EngineError.invalidArgument(`${INDEX}: not valid JSON (${(e as Error).message})`, e);
  }
  const map = typeof json === "object" && json !== null && !Array.isArray(json)
    ? (json as Record<string, unknown>).weight_map
    : undefined;
  if (typeof map !== "object" || map === null || Array.isArray(map)) {
    throw EngineError.invalidArgument(
      `${INDEX}: expected an object with a weight_map object, got ${describe(json)}`,
    );
  }
  for (const [name, shard] of Object.entries(map)) checkShardName(name, shard);
  return map as Record<string, string>;
}

function checkShardName(tensor: string, shard: unknown): void {
  const why = typeof shard !== "string"
    ? "is not a string"
    : shard === "" || shard === "." || shard === ".."
    ? "is not a file name"
    : /[/\\]/.test(shard)
    ? "names a file outside the model directory"
    // deno-lint-ignore no-control-regex
    : /[\u0000-\u001f\u007f]/.test(shard)
    ? "contains a control character"
    : new TextEncoder().encode(shard).length > MAX_SHARD_NAME
    ? `is longer than ${MAX_SHARD_NAME} bytes`
    : undefined;
  if (why !== undefined) {
    throw EngineError.invalidArgument(
      `${INDEX}: weight_map[${describe(tensor, 120)}] = ${describe(shard)} ${why}`,
    );
  }
}
