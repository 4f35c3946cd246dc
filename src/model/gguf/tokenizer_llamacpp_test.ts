/**
 * Kiln's GGUF tokenizer against llama.cpp's, token for token: `test/fixtures/tokenizers/` holds a
 * small synthetic vocabulary per tokenizer type the popular model families use and the ids
 * llama.cpp's `llama_tokenize` gave for a fixed multilingual corpus (written by
 * `bench/peers/tokenizer_corpus.ts`; see its README). Each line must encode to exactly those ids
 * (BOS/EOS as the file's flags say, special-token text parsed), and decode back to the text
 * llama.cpp detokenizes them to wherever that is the line itself.
 */
import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { blobSource } from "../source.ts";
import { readGgufFile } from "./header.ts";
import { ggufText } from "./tokenizer.ts";

const DIR = new URL("../../../test/fixtures/tokenizers/", import.meta.url);

interface Expected {
  ids: number[];
  plain: number[];
  detokenized: string;
}
interface Manifest {
  lines: number;
  types: { name: string; file: string; bytes: number; pre: string | null }[];
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

for (const t of manifest.types) {
  Deno.test(`llama.cpp tokenization, ${t.name}: every corpus line, ids and text`, async () => {
    const { tokenizer } = await textOf(t.file);
    const wrong: string[] = [];
    corpus.forEach((line, i) => {
      const want = expected[t.name]![i]!;
      const ids = tokenizer.encode(line);
      try {
        deepStrictEqual(ids, want.ids);
      } catch {
        wrong.push(
          `line ${i} ${JSON.stringify(line)}: kiln ${ids} llama.cpp ${want.ids}`,
        );
        return;
      }
      if (want.detokenized === line) {
        equal(tokenizer.decode(ids, { skipSpecial: false }), line);
      }
    });
    equal(
      wrong.length,
      0,
      `${wrong.length}/${corpus.length} lines differ:\n${wrong.join("\n")}`,
    );
  });
}
