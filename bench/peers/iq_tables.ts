/**
 * Writes `shaders/tables/<grid>.json`: the lookup grids of ggml's imatrix i-quants, read
 * back from ggml itself (`dequantize_row_*` through FFI, `ggml.ts`) rather than typed in. For each
 * grid entry a block is crafted with scale d = 1.0 (f16 0x3c00), the smallest sub-block scale, no
 * sign bits and the entry's index in one 8-element group; ggml dequantizes it and the entry's
 * values are the output divided by the known group scale (exact: all of these are small
 * integers times powers of two). It also checks the sign rule Kiln uses in place of ggml's
 * 128-entry `ksigns` table (7 stored sign bits, the 8th their parity, so every group has an even
 * number of minus signs) against what ggml decodes for all 128 sign codes.
 *
 *   node_modules/.bin/deno run -A bench/peers/iq_tables.ts           write the tables
 *   node_modules/.bin/deno run -A bench/peers/iq_tables.ts --check   exit 1 if a committed one differs
 *
 * A table holds `entries` grid entries of `values` values each (unsigned bytes, or signed bytes
 * for iq1s), entry after entry, 4 to a little-endian u32 word: the words the WGSL fragments bind
 * as `array<u32>` (binding 7) and the CPU decoders get as an argument. The files store them
 * packed (`levels` and `codes`, src/gpu/quant/tables.ts): a grid has 3 or 8 distinct values.
 */
import { runCli } from "../../src/adapters/deno/flags.ts";
import { type Ggml, type GgmlType, openGgml } from "./ggml.ts";

/** A grid: its file name, size, the type it is read from and how to craft its probe blocks. */
interface Grid {
  name: string;
  type: string;
  entries: number;
  /** Values per entry: 8 (two words) or 4 (one word). */
  values: number;
  signed: boolean;
  /**
   * Write index `index` into group `group` (0..31: sub-block group >> 2, position group & 3) of
   * the zeroed block `b` (d already set); returns the element offset of its values and their
   * scale (the output is value * scale, plus `bias` for iq1s).
   */
  place(
    b: Uint8Array,
    group: number,
    index: number,
  ): { at: number; scale: number };
  bias?: number;
}

const setU16 = (b: Uint8Array, at: number, v: number) => {
  b[at] = v & 0xff;
  b[at + 1] = v >> 8;
};

const GRIDS: Grid[] = [
  {
    // d at 0, then per 32 weights two u32: four 8-bit indices, then 4 × 7 sign bits and a 4-bit
    // scale (0 here: group scale d · 0.5 · 0.25).
    name: "iq2xxs",
    type: "iq2_xxs",
    entries: 256,
    values: 8,
    signed: false,
    place(b, g, i) {
      b[2 + 8 * (g >> 2) + (g & 3)] = i;
      return { at: 8 * g, scale: 0.125 };
    },
  },
  {
    // d at 0, 32 u16 at 2: a 9-bit index and 7 sign bits; 8 scale bytes at 66.
    name: "iq2xs",
    type: "iq2_xs",
    entries: 512,
    values: 8,
    signed: false,
    place(b, g, i) {
      setU16(b, 2 + 2 * g, i);
      return { at: 8 * g, scale: 0.125 };
    },
  },
  {
    // d at 0, 32 low index bytes at 2, 32 sign bytes at 34, 8 qh bytes at 66 (2 high bits per
    // group), 8 scale bytes at 74.
    name: "iq2s",
    type: "iq2_s",
    entries: 1024,
    values: 8,
    signed: false,
    place(b, g, i) {
      b[2 + g] = i & 0xff;
      b[66 + (g >> 2)]! |= (i >> 8) << (2 * (g & 3));
      return { at: 8 * g, scale: 0.125 };
    },
  },
  {
    // d at 0, 64 index bytes at 2 (one per 4 weights), 8 u32 of signs and scale at 66.
    name: "iq3xxs",
    type: "iq3_xxs",
    entries: 256,
    values: 4,
    signed: false,
    place(b, g, i) {
      b[2 + g] = i;
      return { at: 4 * g, scale: 0.25 };
    },
  },
  {
    // d at 0, 64 low index bytes at 2, 8 qh bytes at 66 (one high bit per 4 weights), 32 sign
    // bytes at 74, 4 scale bytes at 106 (0 here: group scale d · 1).
    name: "iq3s",
    type: "iq3_s",
    entries: 512,
    values: 4,
    signed: false,
    place(b, g, i) {
      b[2 + g] = i & 0xff;
      b[66 + (g >> 3)]! |= (i >> 8) << (g & 7);
      return { at: 4 * g, scale: 1 };
    },
  },
  {
    // d at 0, 32 low index bytes at 2, 8 u16 at 34: 3 high index bits per group, a 3-bit scale
    // (0 here: d · 1) and the delta's sign (0: +1/8).
    name: "iq1s",
    type: "iq1_s",
    entries: 2048,
    values: 8,
    signed: true,
    bias: 0.125,
    place(b, g, i) {
      b[2 + g] = i & 0xff;
      const at = 34 + 2 * (g >> 2);
      setU16(b, at, (b[at]! | (b[at + 1]! << 8)) | ((i >> 8) << (3 * (g & 3))));
      return { at: 8 * g, scale: 1 };
    },
  },
];

/** Read grid `g` out of ggml: 32 entries per crafted block. */
function extract(ggml: Ggml, g: Grid): Int32Array {
  const t = must(ggml, g.type);
  const out = new Int32Array(g.entries * g.values);
  const perBlock = t.blockSize / g.values;
  for (let first = 0; first < g.entries; first += perBlock) {
    const b = new Uint8Array(t.blockBytes);
    setU16(b, 0, 0x3c00);
    const places = [];
    for (let k = 0; k < perBlock && first + k < g.entries; k++) {
      places.push({ index: first + k, ...g.place(b, k, first + k) });
    }
    const y = ggml.dequantize(t, b, t.blockSize);
    for (const { index, at, scale } of places) {
      for (let j = 0; j < g.values; j++) {
        const v = (y[at + j]! - (g.bias ?? 0)) / scale;
        const ok = Number.isInteger(v) &&
          (g.signed ? v >= -128 && v < 128 : v >= 0 && v < 256);
        if (!ok) {
          throw new Error(
            `${g.name}[${index}][${j}]: ${y[at + j]} is not a byte`,
          );
        }
        out[index * g.values + j] = v;
      }
    }
  }
  return out;
}

function must(ggml: Ggml, name: string): GgmlType {
  const t = ggml.typeNamed(name);
  if (t === undefined) throw new Error(`ggml has no type ${name}`);
  return t;
}

/** Kiln's sign rule: the 8 sign bits of a 7-bit code (bit 7 makes the count of ones even). */
const signsOf = (code: number): number => {
  let ones = 0;
  for (let v = code; v > 0; v >>= 1) ones += v & 1;
  return code | ((ones & 1) << 7);
};

/** Check `signsOf` against ggml's IQ2_XS decoding of every sign code (grid entry 0). */
function checkSigns(ggml: Ggml): void {
  const t = must(ggml, "iq2_xs");
  for (let code = 0; code < 128; code++) {
    const b = new Uint8Array(t.blockBytes);
    setU16(b, 0, 0x3c00);
    setU16(b, 2, code << 9);
    const y = ggml.dequantize(t, b, t.blockSize);
    let mask = 0;
    for (let j = 0; j < 8; j++) {
      if (y[j] === 0) {
        throw new Error("iq2xs grid entry 0 has a zero: cannot read signs");
      }
      if (y[j]! < 0) mask |= 1 << j;
    }
    if (mask !== signsOf(code)) {
      throw new Error(
        `sign code ${code}: ggml gives ${mask}, the parity rule ${signsOf(code)}`,
      );
    }
  }
}

/**
 * The table file of `g` with `values` (entry after entry), packed (see src/gpu/quant/tables.ts):
 * the distinct values as `levels`, and per value the index of its level in ⌈log2(levels)⌉ bits.
 */
function tableFile(g: Grid, values: Int32Array): string {
  const levels = [...new Set(values)].sort((a, b) => a - b);
  const bits = Math.ceil(Math.log2(levels.length));
  const codes = new Uint8Array(Math.ceil((values.length * bits) / 8));
  values.forEach((v, i) => {
    const code = levels.indexOf(v);
    for (let b = 0; b < bits; b++) {
      const k = i * bits + b;
      codes[k >> 3]! |= ((code >> b) & 1) << (k & 7);
    }
  });
  const file = {
    source: "bench/peers/iq_tables.ts",
    grid: g.name,
    from: `ggml's dequantize_row_${g.type}`,
    entries: g.entries,
    values: g.values,
    levels,
    codes: codes.toBase64(),
  };
  return JSON.stringify(file, null, 2) + "\n";
}

if (import.meta.main) {
  const { flags } = runCli({
    name: "iq_tables",
    command: "deno run -A bench/peers/iq_tables.ts",
    about: "Writes shaders/tables/iq*.json: the i-quants' grids, read back out of ggml itself.",
    flags: {
      check: { type: "boolean", help: "compare with the committed files instead of writing them" },
    },
  });
  const check = flags.check;
  const ggml = await openGgml();
  checkSigns(ggml);
  console.log("ksigns: ggml's 128 sign codes follow the parity rule");
  const dir = new URL("../../shaders/tables/", import.meta.url);
  let differs = false;
  for (const g of GRIDS) {
    const text = tableFile(g, extract(ggml, g));
    const file = new URL(`${g.name}.json`, dir);
    if (check) {
      const now = await Deno.readTextFile(file).catch(() => "");
      if (now !== text) {
        console.error(`${g.name}: the committed table differs from ggml's`);
        differs = true;
      } else console.log(`${g.name}: matches ggml`);
    } else {
      await Deno.mkdir(dir, { recursive: true });
      await Deno.writeTextFile(file, text);
      console.log(`${g.name}: ${g.entries} entries of ${g.values}`);
    }
  }
  ggml.close();
  if (differs) Deno.exit(1);
}
