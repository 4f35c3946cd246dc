/**
 * Fuzzing of GGUF headers: mutations of small valid models (one per registered 32-element block
 * type: random bytes, extreme counts and lengths written over the header, truncations, spliced
 * ranges) must load or be refused with `InvalidArgument`; `@huggingface/gguf`'s own errors only of the classes its corpus stands for.
 * An input is the list of edits made to the model, so a finding stays small. Scaled, seeded and
 * checked like the other fuzzers (`test/fuzz/harness.ts`, `deno task fuzz`).
 */
import { blobSource } from "../source.ts";
import { QUANT_FORMATS, QUANT_TYPES } from "../../gpu/formats/registry.ts";
import { readGgufFile } from "./header.ts";
import { openGguf } from "../../model/gguf/load.ts";
import { tinyGguf } from "../../model/gguf/test_model.ts";
import { ggufText } from "../../text/gguf/tokenizer.ts";
import { fuzz } from "../../../test/fuzz/harness.ts";

const EXTREMES = [
  0n,
  1n,
  7n,
  255n,
  0xffffn,
  0x7fffffffn,
  0xffffffffn,
  2n ** 53n,
  2n ** 63n,
  2n ** 64n - 1n,
];

/**
 * One edit: a byte set, a u64 or u32 written, a cut, or `n` bytes from `s` copied in at `d`; an
 * input may begin with `["base", t]`, the model whose first q projection is block type
 * `BASE_TYPES[t]` that the edits apply to (Q8_0 without it).
 */
type Edit =
  | ["base", number]
  | ["byte", number, number]
  | ["u64" | "u32", number, string]
  | ["cut", number]
  | ["splice", number, number, number];

function apply(out: Uint8Array<ArrayBuffer>, e: Edit): Uint8Array<ArrayBuffer> {
  if (e[0] === "base") return out;
  const view = new DataView(out.buffer);
  if (e[0] === "byte") out[e[1]] = e[2];
  else if (e[0] === "u64") view.setBigUint64(e[1], BigInt(e[2]), true);
  else if (e[0] === "u32") view.setUint32(e[1], Number(e[2]), true);
  else if (e[0] === "cut") return out.slice(0, e[1]);
  else {
    const [, s, n, d] = e as ["splice", number, number, number];
    const copy = new Uint8Array(out.length + n);
    copy.set(out.subarray(0, d));
    copy.set(out.subarray(s, s + n), d);
    copy.set(out.subarray(d), d + n);
    return copy.slice(0, out.length + n);
  }
  return out;
}

/** 1 to 4 random edits of `base`, mostly inside its first `header` bytes. */
function edits(base: Uint8Array<ArrayBuffer>, header: number, r: () => number): Edit[] {
  let out = new Uint8Array(base);
  const list: Edit[] = [];
  const at = (n = Math.min(header, out.length)) => Math.floor(r() * n);
  const count = 1 + at(4);
  for (let i = 0; i < count; i++) {
    const kind = at(5);
    let e: Edit;
    if (kind === 0) {
      e = ["byte", at(), at(256)];
    } else if (kind === 1 || kind === 2) {
      // A count, length, type or offset field overwritten with an extreme or random value.
      const v = r() < 0.7 ? EXTREMES[at(EXTREMES.length)]! : BigInt(at(2 ** 20));
      const o = Math.min(at(), out.length - 8);
      e = kind === 1
        ? ["u64", o, String(v & (2n ** 64n - 1n))]
        : ["u32", o, String(v & 0xffffffffn)];
    } else if (kind === 3) {
      e = ["cut", at(out.length)];
    } else {
      e = ["splice", at(), at(64), at()];
    }
    list.push(e);
    out = apply(out, e);
    if (out.length < 16) break;
  }
  return list;
}

/** The registered block types a 32-wide row holds: one base model each. */
const BASE_TYPES = QUANT_TYPES.filter((t) => QUANT_FORMATS[t].blockSize === 32);
const BASES = await Promise.all(BASE_TYPES.map(async (t) => {
  const bytes = tinyGguf({ qType: QUANT_FORMATS[t].ggmlType });
  const header = (await readGgufFile(blobSource(new Blob([bytes]), `${t}.gguf`))).dataOffset;
  return { bytes, header };
}));
const baseOf = (list: readonly Edit[]) =>
  BASES[list[0]?.[0] === "base" ? list[0][1] : BASE_TYPES.indexOf("Q8_0")]!;

Deno.test("fuzzed GGUF headers load or are refused with InvalidArgument", async () => {
  await fuzz({
    name: "GGUF header",
    corpus: "gguf_header",
    expect: ["InvalidArgument"],
    ms: 4000,
    runs: 400,
    // Few runs, still warming up: ~2.1 KiB per run measured over the last ~130 (28 B per run
    // over 1,100 runs at KILN_FUZZ_SCALE=5).
    heapPerRunBytes: 16 * 1024,
    generate: (r) => {
      const t = Math.floor(r() * BASES.length);
      const { bytes, header } = BASES[t]!;
      return [["base", t] as Edit, ...edits(bytes, header, r)];
    },
    run: async (list: Edit[]) => {
      const bytes = list.reduce(apply, new Uint8Array(baseOf(list).bytes));
      const m = await openGguf(
        "f.gguf",
        (name) => Promise.resolve(blobSource(new Blob([bytes]), name)),
      );
      ggufText(m.metadata, m.config.eosTokenIds);
    },
  });
});
