/**
 * Kiln's GGUF tokenizer against llama.cpp's, token for token: `test/fixtures/tokenizers/` holds a
 * small synthetic vocabulary per tokenizer type the popular model families use and the ids
 * llama.cpp's `llama_tokenize` gave for a fixed multilingual corpus (written by
 * `tools/fixtures/tokenizer_corpus.ts`; see its README). Each line must encode to exactly those ids
 * (BOS/EOS as the file's flags say, special-token text parsed; and without BOS/EOS when
 * `addSpecial` is off), and decode back to the text llama.cpp detokenizes them to wherever that is
 * the line itself; with `parseSpecial: false` it must encode as llama.cpp does with
 * `parse_special` off (special-token text as plain text).
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import { blobSource } from "../../formats/source.ts";
import { readGgufFile } from "../../formats/gguf/header.ts";
import { ggufText } from "./tokenizer.ts";

const DIR = new URL("../../../test/fixtures/tokenizers/", import.meta.url);

interface Expected {
  ids: number[];
  /** Absent where equal to `ids` less the BOS / EOS `add_special` adds. */
  plain?: number[];
  /** llama.cpp's text of `ids` less BOS / EOS; absent where it is the line itself. */
  detokenized?: string;
}
interface Manifest {
  lines: number;
  types: {
    name: string;
    file: string;
    bytes: number;
    pre: string | null;
    add_bos: boolean;
    add_eos: boolean;
  }[];
}

const manifest = JSON.parse(
  await Deno.readTextFile(new URL("manifest.json", DIR)),
) as Manifest;
const { corpus, expected } = JSON.parse(
  await Deno.readTextFile(new URL("expected.json", DIR)),
) as { corpus: string[]; expected: Record<string, Expected[]> };

async function textOf(file: string) {
  const bytes = await Deno.readFile(new URL(file, DIR));
  const gguf = await readGgufFile(blobSource(new Blob([bytes]), file));
  return ggufText(gguf.metadata);
}

Deno.test("the tokenizer fixtures: every type, every corpus line", () => {
  equal(corpus.length, manifest.lines);
  ok(manifest.types.length >= 10);
  for (const t of manifest.types) {
    equal(expected[t.name]?.length, corpus.length, t.name);
  }
});

/** llama.cpp's ids less the BOS / EOS its add_special put around them. */
function bare(t: Manifest["types"][number], ids: number[]): number[] {
  return ids.slice(t.add_bos ? 1 : 0, ids.length - (t.add_eos ? 1 : 0));
}

for (const t of manifest.types) {
  Deno.test(`llama.cpp tokenization, ${t.name}: every corpus line, ids and text`, async () => {
    const { tokenizer } = await textOf(t.file);
    const wrong: string[] = [];
    let decoded = 0;
    corpus.forEach((line, i) => {
      const want = expected[t.name]![i]!;
      const ids = tokenizer.encode(line);
      const inner = bare(t, want.ids);
      const kilnInner = tokenizer.encode(line, { addSpecial: false });
      if (!isDeepStrictEqual(ids, want.ids) || !isDeepStrictEqual(kilnInner, inner)) {
        wrong.push(`line ${i} ${JSON.stringify(line)}: kiln ${ids} llama.cpp ${want.ids}`);
        return;
      }
      if (want.detokenized === undefined) {
        equal(tokenizer.decode(inner, { skipSpecial: false }), line, `line ${i}`);
        decoded++;
      }
    });
    equal(wrong.length, 0, `${wrong.length}/${corpus.length} lines differ:\n${wrong.join("\n")}`);
    // Every type round-trips most lines in llama.cpp (not the ones with special-token text).
    ok(decoded >= corpus.length / 2, `${decoded} lines decoded`);
  });

  Deno.test(`llama.cpp tokenization, ${t.name}: special-token text as plain text`, async () => {
    const { tokenizer } = await textOf(t.file);
    // Special-token text is in some lines of every type's corpus: those are told apart.
    ok(expected[t.name]!.some((e) => e.plain !== undefined));
    const wrong = corpus.flatMap((line, i) => {
      const want = expected[t.name]![i]!.plain ?? bare(t, expected[t.name]![i]!.ids);
      const ids = tokenizer.encode(line, { addSpecial: false, parseSpecial: false });
      return isDeepStrictEqual(ids, want)
        ? []
        : [`line ${i} ${JSON.stringify(line)}: kiln ${ids} llama.cpp ${want}`];
    });
    equal(wrong.length, 0, `${wrong.length}/${corpus.length} lines differ:\n${wrong.join("\n")}`);
  });
}
