/**
 * The lookup tables some formats' fragments bind at `@group(0) @binding(7)` (see `format.ts`):
 * `shaders/tables/<name>.json`, `{ "source": "<how it was made>", "words": [u32, ...] }`, read
 * like shader text (the npm package inlines it) and uploaded once per device.
 */
import { EngineError } from "../../contract/errors.ts";
import { uploadBuffer } from "../buffers.ts";
import { shaderFile } from "../shader.ts";
import type { QuantTable } from "./format.ts";

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
  const words = (data as { words?: unknown } | null)?.words;
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

const loaded = new Map<string, Promise<Uint32Array>>();

/** The words of `table`, read once. */
export function loadQuantTable(table: QuantTable): Promise<Uint32Array> {
  let words = loaded.get(table.name);
  if (words === undefined) {
    words = shaderFile(`tables/${table.name}.json`).then((t) => parseQuantTable(table, t));
    words.catch(() => loaded.delete(table.name));
    loaded.set(table.name, words);
  }
  return words;
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
