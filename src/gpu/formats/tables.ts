/**
 * The lookup tables of some formats (see `format.ts`): `shaders/tables/<name>.json`,
 * `{ "source": "<the script that made it>", "words": [u32, ...] }`, read like shader text (the
 * npm package inlines it), handed to the registry for the CPU decoders, and uploaded once per
 * device for the fragments, which read them at `@group(0) @binding(7)`.
 *
 * A table whose bytes take few distinct values (the i-quants' grids: 3 or 8) may be stored
 * packed instead of `words`: `"levels": [byte, ...]` (−128..255; a negative one is its two's
 * complement byte) and `"codes"`, base64 of one code per byte of the words (byte i of the table is
 * `levels[code i]`), each code `bits` = ⌈log2(levels)⌉ bits, bit k of the stream being bit k % 8
 * of byte ⌊k / 8⌋. The package inlines these files, so this keeps the grids ~9 KiB, not ~80.
 */
import { EngineError } from "../../contract/errors.ts";
import { uploadBuffer } from "../buffers.ts";
import { shaderFile } from "../shader.ts";
import type { QuantTable } from "./format.ts";
import { provideQuantTable, QUANT_FORMATS, QUANT_TYPES, type QuantType } from "./registry.ts";

/** The words of `table` from the text of its data file; a malformed file is an invalid argument. */
export function parseQuantTable(table: QuantTable, text: string): Uint32Array {
  const fail = (why: string) =>
    EngineError.invalidArgument(`table shaders/tables/${table.name}.json: ${why}`);
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    throw fail(`not JSON (${(e as Error).message})`);
  }
  const { words, levels, codes } = (data ?? {}) as Record<string, unknown>;
  if (levels !== undefined || codes !== undefined) return unpack(table, levels, codes, fail);
  if (!Array.isArray(words)) throw fail("no `words` array");
  if (words.length !== table.words) {
    throw fail(`${words.length} words, the format expects ${table.words}`);
  }
  const out = new Uint32Array(words.length);
  words.forEach((v, i) => {
    if (!(Number.isInteger(v) && v >= 0 && v <= 0xffffffff)) {
      throw fail(`word ${i} (${JSON.stringify(v)}) is not a u32`);
    }
    out[i] = v;
  });
  return out;
}

/** The words of a packed table (`levels` and `codes`, see above). */
function unpack(
  table: QuantTable,
  levels: unknown,
  codes: unknown,
  fail: (why: string) => EngineError,
): Uint32Array {
  if (!Array.isArray(levels) || levels.length < 2 || levels.length > 256) {
    throw fail("`levels` is not an array of 2 to 256 bytes");
  }
  levels.forEach((v, i) => {
    if (!(Number.isInteger(v) && v >= -128 && v <= 255)) {
      throw fail(`level ${i} (${JSON.stringify(v)}) is not a byte`);
    }
  });
  const bits = Math.ceil(Math.log2(levels.length));
  const count = 4 * table.words;
  let packed: string;
  try {
    packed = atob(typeof codes === "string" ? codes : "!");
  } catch {
    throw fail("`codes` is not base64");
  }
  if (packed.length !== Math.ceil((count * bits) / 8)) {
    throw fail(
      `${packed.length} bytes of codes, ${count} ${bits}-bit codes take ${
        Math.ceil((count * bits) / 8)
      }`,
    );
  }
  const out = new Uint32Array(table.words);
  for (let i = 0; i < count; i++) {
    let code = 0;
    for (let b = 0; b < bits; b++) {
      const k = i * bits + b;
      code |= ((packed.charCodeAt(k >> 3) >> (k & 7)) & 1) << b;
    }
    if (code >= levels.length) throw fail(`code ${i} (${code}) names no level`);
    out[i >> 2] = (out[i >> 2]! | ((levels[code] & 0xff) << (8 * (i & 3)))) >>> 0;
  }
  return out;
}

const loaded = new Map<string, Promise<Uint32Array>>();

/** The words of `table`, read once (and given to the registry's CPU decoders). */
export function loadQuantTable(table: QuantTable): Promise<Uint32Array> {
  let words = loaded.get(table.name);
  if (words === undefined) {
    words = shaderFile(`tables/${table.name}.json`).then((t) => {
      const w = parseQuantTable(table, t);
      provideQuantTable(table, w);
      return w;
    });
    words.catch(() => loaded.delete(table.name));
    loaded.set(table.name, words);
  }
  return words;
}

/** Load the tables of `types` (default: every registered format), so `dequantize` can decode them. */
export async function loadQuantTables(types: readonly QuantType[] = QUANT_TYPES): Promise<void> {
  const tables = types.map((t) => QUANT_FORMATS[t].table).filter((t) => t !== undefined);
  await Promise.all(tables.map(loadQuantTable));
}

const buffers = new WeakMap<GPUDevice, Map<string, Promise<GPUBuffer>>>();

/** The storage buffer `kiln:table:<name>` holding `table` on `device`, made once per device. */
export function quantTableBuffer(device: GPUDevice, table: QuantTable): Promise<GPUBuffer> {
  let perDevice = buffers.get(device);
  if (perDevice === undefined) buffers.set(device, perDevice = new Map());
  let buffer = perDevice.get(table.name);
  if (buffer === undefined) {
    buffer = loadQuantTable(table).then((w) => uploadBuffer(device, `kiln:table:${table.name}`, w));
    buffer.catch(() => perDevice.delete(table.name));
    perDevice.set(table.name, buffer);
  }
  return buffer;
}
