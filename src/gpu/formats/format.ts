/**
 * The contract of one weight format. Each format is two files, `<fragment>.ts` in this folder
 * (exporting its geometry `<TYPE>_BLOCK`, one {@linkcode quantBlock} call, and its
 * {@linkcode WeightFormat}: codec and fragment name)
 * and `shaders/formats/<fragment>.wgsl`, plus one line in the registry `registry.ts` (and the
 * geometry's line in `blocks.ts`, which header-only code reads without the codecs); its GPU decoder is the WGSL fragment `shaders/formats/<fragment>.wgsl`,
 * which the product and embedding kernels import (`shaders/product/matvec.wgsl`, composed by
 * `../shader_compose.ts` per format).
 *
 * A fragment defines exactly
 *
 * ```wgsl
 * const BLOCK_ELEMS: u32;                          // = blockSize
 * const BLOCK_BYTES: u32;                          // = blockBytes
 * fn load_slice(b: u32, s: u32) -> Raw             // raw words of slice s of the block at byte b
 * fn decode(r: Raw, s: u32) -> array<vec4<f32>, 8> // its 32 weights: 8 groups of 4 consecutive
 * fn group_elem(s: u32, g: u32) -> u32             // element offset in the block of group g
 * ```
 *
 * plus private helpers prefixed with its own name (`q5_0_...`). The float formats (F32, F16,
 * BF16: `formats/f32.ts`, `f16.ts`, `bf16.ts`, in the same `registry.ts`) are formats too,
 * a "block" being 32 consecutive elements: their fragments import `lib/float_words` instead,
 * which binds the weights as `array<vec4<u32>>` and declares their `Raw` (`BLOCK_BYTES / 16`
 * vec4 words) and the whole-block reader `float_block`. A block format
 * begins with the line `//! import lib/quant_words` (and imports any other `shaders/lib/`
 * fragment it shares, as `lib/k_scales` for Q4_K and Q5_K, `lib/iq_signs` for the i-quants'
 * sign bits and first words), which declares the weights
 * `w: array<u32>` at binding 2, `struct Raw { q: array<u32, 8>, h: vec4<u32> }` and the
 * readers `word_at`, `half_at`, `span` (even byte offsets), `byte_at` (any offset), `byte_of`,
 * `nib_lo`, `nib_hi`, `bits_each`, `i8x4`. A slice is any 32 weights of the block forming 8
 * runs of 4 consecutive elements whose raw words fit `Raw`; `fragments_test.ts` checks the
 * geometry, names and bindings.
 *
 * Lookup tables (the i-quants' grids): a format with a `table` declares in its fragment
 * `@group(0) @binding(7) var<storage, read> grid: array<u32>;`, and its CPU `decode` gets the same
 * words as its last argument. The words are the data file `shaders/tables/<name>.json`
 * (`{ "source": "<the script that made it>", "words": [u32, ...] }`, generated from ggml by a
 * committed script, never typed in), read like shader text (the npm package inlines it) by
 * `tables.ts`: `await loadQuantTables()` before `dequantize` of a tabled type (which refuses
 * otherwise); the kernels bind the storage buffer `kiln:table:<name>`, made once per device
 * (`quantTableBuffer`), at binding 7 for that format only.
 * @module
 */

/** A lookup table a format's fragment reads at `@group(0) @binding(7)`. */
export interface QuantTable {
  /** The data file `shaders/tables/<name>.json`. */
  name: string;
  /** Its length in u32 words (checked when it loads). */
  words: number;
}

/**
 * A format's geometry: what a GGUF header needs to size and check a tensor. Each format file
 * exports it on its own as `<TYPE>_BLOCK` (the registry of these is `blocks.ts`), so code that
 * only reads headers (the page's side of a worker, in a browser) keeps none of the codecs.
 */
export interface QuantBlock {
  /** Kiln's name: ggml's type name upper-cased ("Q4_K", "IQ2_XXS", "MXFP4"). */
  readonly type: string;
  /** ggml's `ggml_type` number, as GGUF tensor infos store it. */
  readonly ggmlType: number;
  /** Elements per block (32 or 256). */
  readonly blockSize: number;
  /** Bytes per block. */
  readonly blockBytes: number;
  /** The WGSL fragment `shaders/formats/<fragment>.wgsl` (and this file's name in `src/gpu/formats/`). */
  readonly fragment: string;
}

/** One block-quantized format: geometry, float64 CPU codec, WGSL fragment, random blocks. */
export interface WeightFormat extends QuantBlock {
  /**
   * Decode the block at byte `offset` of `bytes` to `out[outOffset..+blockSize)`, bit-exact with
   * ggml; `table` is the words of the format's `table` (undefined for formats without one).
   */
  decode(
    bytes: Uint8Array,
    offset: number,
    out: Float64Array,
    outOffset: number,
    table?: Uint32Array,
  ): void;
  /**
   * Optional round-to-nearest quantizer: encode `values[offset..+blockSize)` as one block at
   * byte `outOffset` of `out`. Formats without one load from GGUF files but `quantize` refuses them.
   */
  encode?(values: ArrayLike<number>, offset: number, out: Uint8Array, outOffset: number): void;
  /**
   * Write one well-formed random block at byte `offset` of `out` (every quant, scale and high
   * bit random, scales sized to keep weights within about ±1); `next()` is a uniform u32.
   */
  randomBlock(out: Uint8Array, offset: number, next: () => number): void;
  /** The lookup table the fragment binds at binding 7, if any. */
  readonly table?: QuantTable;
}

/** The geometry of the block type `T`, its fragment named after it in lower case. */
export interface QuantBlockOf<T extends string> {
  readonly type: T;
  readonly ggmlType: number;
  readonly blockSize: number;
  readonly blockBytes: number;
  readonly fragment: Lowercase<T>;
}

/**
 * A format's geometry from its ggml name, number and block shape; the fragment (and file) name is
 * the lower-cased type: `quantBlock("Q4_0", 2, 32, 18)`.
 */
export function quantBlock<const T extends string>(
  type: T,
  ggmlType: number,
  blockSize: number,
  blockBytes: number,
): QuantBlockOf<T> {
  return { type, ggmlType, blockSize, blockBytes, fragment: type.toLowerCase() as Lowercase<T> };
}
