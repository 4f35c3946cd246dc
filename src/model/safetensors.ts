/**
 * The safetensors format: an 8-byte little-endian header length, a JSON header mapping tensor
 * names to dtype, shape and data offsets, then the data. Every entry is checked against the
 * file before any byte of data is read.
 */
import { EngineError } from "../contract/errors.ts";
import type { WeightDtype } from "../gpu/dtype.ts";
import { DTYPE_BYTES } from "../gpu/dtype.ts";
import type { ByteSource } from "./source.ts";

export interface TensorInfo {
  name: string;
  dtype: WeightDtype;
  shape: number[];
  /** Absolute offset of the data in the file, and its length in bytes. */
  offset: number;
  length: number;
  source: ByteSource;
}

const DTYPES: Record<string, WeightDtype> = { F32: "f32", F16: "f16", BF16: "bf16" };
const MAX_HEADER = 100 * 1024 * 1024;

function corrupt(file: string, why: string): EngineError {
  return EngineError.invalidArgument(`${file}: ${why}`);
}

/** Read and validate the header of a safetensors file. */
export async function readSafetensorsHeader(source: ByteSource): Promise<Map<string, TensorInfo>> {
  const file = source.name;
  if (source.size < 8) {
    throw corrupt(file, `truncated: ${source.size} bytes, not a safetensors file`);
  }
  const prefix = await source.read(0, 8);
  const headerLen = Number(new DataView(prefix.buffer, prefix.byteOffset, 8).getBigUint64(0, true));
  if (headerLen > MAX_HEADER || 8 + headerLen > source.size) {
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
    throw corrupt(file, `header is not valid JSON (${(e as Error).message})`);
  }
  if (typeof header !== "object" || header === null || Array.isArray(header)) {
    throw corrupt(file, "header is not a JSON object");
  }
  const dataStart = 8 + headerLen;
  const dataSize = source.size - dataStart;
  const tensors = new Map<string, TensorInfo>();
  const spans: [number, number, string][] = [];
  for (const [name, entry] of Object.entries(header)) {
    if (name === "__metadata__") continue;
    const e = entry as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    const dtype = DTYPES[String(e?.dtype)];
    if (dtype === undefined) {
      throw corrupt(file, `tensor ${name}: unsupported dtype ${JSON.stringify(e?.dtype)}`);
    }
    const shape = e.shape;
    if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
      throw corrupt(file, `tensor ${name}: bad shape ${JSON.stringify(shape)}`);
    }
    const offs = e.data_offsets;
    if (
      !Array.isArray(offs) || offs.length !== 2 ||
      !offs.every((o) => Number.isSafeInteger(o) && o >= 0)
    ) {
      throw corrupt(file, `tensor ${name}: bad data_offsets ${JSON.stringify(offs)}`);
    }
    const [begin, end] = offs as [number, number];
    if (end < begin || end > dataSize) {
      throw corrupt(
        file,
        `tensor ${name}: data_offsets [${begin}, ${end}] run past the end of the data (${dataSize} bytes)`,
      );
    }
    const expected = shape.reduce((a: number, b: number) => a * b, 1) * DTYPE_BYTES[dtype];
    if (end - begin !== expected) {
      throw corrupt(
        file,
        `tensor ${name}: ${
          end - begin
        } bytes for shape [${shape}] of ${dtype} (expected ${expected})`,
      );
    }
    spans.push([begin, end, name]);
    tensors.set(name, {
      name,
      dtype,
      shape,
      offset: dataStart + begin,
      length: end - begin,
      source,
    });
  }
  spans.sort((a, b) => a[0] - b[0]);
  for (let i = 1; i < spans.length; i++) {
    if (spans[i]![0] < spans[i - 1]![1]) {
      throw corrupt(file, `tensor ${spans[i]![2]}: data overlaps tensor ${spans[i - 1]![2]}`);
    }
  }
  return tensors;
}

/** Every tensor of a checkpoint: `model.safetensors`, or the shards of its index. */
export async function readCheckpoint(
  open: (name: string) => Promise<ByteSource | undefined>,
): Promise<Map<string, TensorInfo>> {
  const single = await open("model.safetensors");
  if (single) return await readSafetensorsHeader(single);
  const index = await open("model.safetensors.index.json");
  if (!index) {
    throw EngineError.invalidArgument("no model.safetensors or model.safetensors.index.json");
  }
  let map: Record<string, unknown>;
  try {
    map = JSON.parse(new TextDecoder().decode(await index.read(0, index.size))).weight_map;
  } catch (e) {
    throw EngineError.invalidArgument(`model.safetensors.index.json: ${(e as Error).message}`);
  }
  if (typeof map !== "object" || map === null) {
    throw EngineError.invalidArgument("model.safetensors.index.json: no weight_map");
  }
  const tensors = new Map<string, TensorInfo>();
  for (const shard of new Set(Object.values(map).map(String))) {
    if (shard.includes("/") || shard.includes("..")) {
      throw EngineError.invalidArgument(`index names a shard outside the model: ${shard}`);
    }
    const src = await open(shard);
    if (!src) throw EngineError.invalidArgument(`shard ${shard} named by the index is missing`);
    for (const [name, info] of await readSafetensorsHeader(src)) tensors.set(name, info);
  }
  for (const [name, shard] of Object.entries(map)) {
    if (tensors.get(name)?.source.name.endsWith(String(shard)) !== true) {
      throw EngineError.invalidArgument(
        `tensor ${name}: the index puts it in ${shard}, which does not hold it`,
      );
    }
  }
  return tensors;
}
