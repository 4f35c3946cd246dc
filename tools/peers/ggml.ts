/**
 * ggml itself, through Deno FFI on node-llama-cpp's prebuilt `libggml-base.so` (a dev-only peer,
 * installed in `tools/peers/node_modules`): the block geometry of each `ggml_type`, ggml's
 * quantizer (`ggml_quantize_chunk`, the code `llama-quantize` runs per tensor) and its
 * `dequantize_row_*` functions. Ground truth for Kiln's block decoders; nothing in `src/` uses it.
 */
import { ensurePeerDeps, peersDir } from "./deps.ts";

const LIB = "node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so";

const core = {
  ggml_type_name: { parameters: ["i32"], result: "pointer" },
  ggml_blck_size: { parameters: ["i32"], result: "i64" },
  ggml_type_size: { parameters: ["i32"], result: "usize" },
  ggml_quantize_init: { parameters: ["i32"], result: "void" },
  ggml_quantize_requires_imatrix: { parameters: ["i32"], result: "bool" },
  ggml_quantize_chunk: {
    parameters: ["i32", "buffer", "buffer", "i64", "i64", "i64", "buffer"],
    result: "usize",
  },
} as const satisfies Deno.ForeignLibraryInterface;

/** One ggml type as this build of ggml describes it. */
export interface GgmlType {
  /** The `ggml_type` number (as GGUF tensor infos store it). */
  id: number;
  /** ggml's name, e.g. `q4_K`, `iq2_xxs`. */
  name: string;
  /** Elements per block. */
  blockSize: number;
  /** Bytes per block. */
  blockBytes: number;
}

export interface Ggml {
  /** The type numbered `id`, or undefined when this build has none (or a removed one). */
  type(id: number): GgmlType | undefined;
  /** The type called `name` (case-insensitive), or undefined. */
  typeNamed(name: string): GgmlType | undefined;
  /** Whether ggml refuses to quantize `type` without an importance matrix. */
  requiresImatrix(type: GgmlType): boolean;
  /**
   * `rows` rows of `cols` values quantized by ggml (`imatrix`: one weight per column; ggml
   * ignores it for types that take none).
   */
  quantize(
    type: GgmlType,
    values: Float32Array,
    rows: number,
    cols: number,
    imatrix?: Float32Array,
  ): Uint8Array;
  /** ggml's `dequantize_row_<name>` over whole blocks: `count` f32 values. */
  dequantize(type: GgmlType, bytes: Uint8Array, count: number): Float32Array;
  close(): void;
}

/**
 * ggml exports no type count and does not bound-check a type number: the table is read up to
 * the first entry that is not a plain name with a sane block (GGML_TYPE_COUNT, 43 in this build).
 */
const MAX_TYPE = 64;

/** Open ggml (installing the peers once if they are absent). */
export async function openGgml(): Promise<Ggml> {
  await ensurePeerDeps();
  const lib = Deno.dlopen(`${peersDir}${LIB}`, core);
  const s = lib.symbols;
  const types = new Map<number, GgmlType>();
  for (let id = 0; id < MAX_TYPE; id++) {
    const p = s.ggml_type_name(id);
    if (p === null) break;
    const name = new Deno.UnsafePointerView(p).getCString();
    const blockSize = Number(s.ggml_blck_size(id));
    const blockBytes = Number(s.ggml_type_size(id));
    if (blockSize > 1024 || blockBytes > 4096 || blockSize < 0) break;
    // Removed types keep a name ("TYPE_Q4_0_4_4 REMOVED, ...") and a zero block size.
    if (blockSize === 0 || !/^[a-z][a-z0-9_]*$/i.test(name)) continue;
    types.set(id, { id, name, blockSize, blockBytes });
  }
  const dequantizers = new Map<
    string,
    (x: Uint8Array, y: Float32Array, k: bigint) => void
  >();
  const dequantizer = (t: GgmlType) => {
    let f = dequantizers.get(t.name);
    if (f === undefined) {
      const one = Deno.dlopen(
        `${peersDir}${LIB}`,
        {
          [`dequantize_row_${t.name}`]: {
            parameters: ["buffer", "buffer", "i64"],
            result: "void",
          },
        } as const,
      );
      const sym = one.symbols[`dequantize_row_${t.name}`] as unknown as (
        x: Uint8Array,
        y: Float32Array,
        k: bigint,
      ) => void;
      dequantizers.set(t.name, f = sym);
    }
    return f;
  };
  const blocks = (t: GgmlType, count: number) => {
    if (!Number.isInteger(count) || count < 0 || count % t.blockSize !== 0) {
      throw new Error(
        `${t.name}: ${count} is not a whole number of ${t.blockSize}-element blocks`,
      );
    }
    return count / t.blockSize;
  };
  const initialised = new Set<number>();
  return {
    type: (id) => types.get(id),
    typeNamed: (name) =>
      [...types.values()].find((t) => t.name.toLowerCase() === name.toLowerCase()),
    requiresImatrix: (t) => s.ggml_quantize_requires_imatrix(t.id),
    quantize(t, values, rows, cols, imatrix) {
      if (values.length !== rows * cols) {
        throw new Error(
          `${t.name}: ${values.length} values is not ${rows}x${cols}`,
        );
      }
      const out = new Uint8Array(rows * blocks(t, cols) * t.blockBytes);
      if (!initialised.has(t.id)) {
        s.ggml_quantize_init(t.id);
        initialised.add(t.id);
      }
      const wrote = Number(
        s.ggml_quantize_chunk(
          t.id,
          values,
          out,
          0n,
          BigInt(rows),
          BigInt(cols),
          imatrix ?? null as unknown as Uint8Array,
        ),
      );
      if (wrote !== out.byteLength) {
        throw new Error(
          `${t.name}: ggml wrote ${wrote} bytes, expected ${out.byteLength}`,
        );
      }
      return out;
    },
    dequantize(t, bytes, count) {
      const need = blocks(t, count) * t.blockBytes;
      if (bytes.byteLength !== need) {
        throw new Error(
          `${t.name}: ${count} values take ${need} bytes, got ${bytes.byteLength}`,
        );
      }
      const out = new Float32Array(count);
      dequantizer(t)(bytes, out, BigInt(count));
      return out;
    },
    close: () => lib.close(),
  };
}
