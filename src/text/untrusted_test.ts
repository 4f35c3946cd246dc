/** Issue 12: hostile tokenizer files, configs and chat templates give `EngineError`. */
import { ok, rejects, strictEqual as equal, throws } from "node:assert/strict";
import { EngineError } from "../contract/errors.ts";
import type { ModelFiles } from "../formats/source.ts";
import { blobSource } from "../formats/source.ts";
import { ChatTemplate } from "./chat.ts";
import { encodeChat, loadText } from "./load.ts";
import { parseTokenizer } from "./tokenizer.ts";
import { deepArray, TO_STRING } from "../../test/support/untrusted.ts";

function typed(type: string, ...needles: string[]) {
  return (e: unknown) => {
    ok(e instanceof EngineError && e.type === type, `not ${type}: ${(e as Error)?.stack ?? e}`);
    for (const n of needles) ok(e.message.includes(n), `${e.message} should mention ${n}`);
    return true;
  };
}
const invalid = (...needles: string[]) => typed("InvalidArgument", ...needles);

/** A tiny BPE `tokenizer.json` (ids: a=0, b=1, ab=2, <s>=3). */
export function tinyTokenizer(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    normalizer: null,
    pre_tokenizer: null,
    post_processor: null,
    decoder: null,
    added_tokens: [{ id: 3, content: "<s>", special: true }],
    model: { type: "BPE", vocab: { a: 0, b: 1, ab: 2 }, merges: ["a b"] },
    ...extra,
  };
}
const tok = (extra: Record<string, unknown>, config?: unknown) =>
  parseTokenizer(JSON.stringify(tinyTokenizer(extra)), config as Record<string, unknown>);

function memFiles(entries: Record<string, string>): ModelFiles {
  return {
    location: "mem/",
    open: (name) =>
      Promise.resolve(
        Object.hasOwn(entries, name) ? blobSource(new Blob([entries[name]!]), name) : undefined,
      ),
  };
}
const TOKENIZER = JSON.stringify(tinyTokenizer());

Deno.test("tokenizer.json: added_tokens that is a string, bad ids, vocab ids out of range", () => {
  equal(tok({}).vocabSize, 4);
  throws(() => tok({ added_tokens: "<s>" }), invalid("added_tokens: expected a list", '"<s>"'));
  for (const id of ["3", -1, 1.5, null, 2 ** 32, TO_STRING, deepArray()]) {
    throws(
      () => tok({ added_tokens: [{ id, content: "<s>" }] }),
      invalid("added_tokens[0].id"),
    );
  }
  throws(() => tok({ added_tokens: [null] }), invalid("added_tokens[0]"));
  throws(() => tok({ added_tokens: [{ id: 3, content: TO_STRING }] }), invalid("added_tokens[0]"));
  throws(
    () => tok({ model: { type: "BPE", vocab: { a: -1 }, merges: [] } }),
    invalid('model.vocab["a"]'),
  );
  throws(() => tok({ model: { type: TO_STRING } }), invalid('model type {"toString": 1}'));
  throws(() => tok({ model: { type: "BPE", vocab: "ab", merges: [] } }), invalid("model.vocab"));
  throws(
    () => tok({ model: { type: "Unigram", vocab: [["a", 0], ["b", 0]], unk_id: 50 } }),
    invalid("model.unk_id", "below 2"),
  );
  throws(() => tok({}, "null"), invalid("tokenizer_config.json: expected an object, got null"));
  throws(() => parseTokenizer("null"), invalid("tokenizer.json: expected an object, got null"));
});

Deno.test("byte tokenizer: vocab_size and BOS/EOS ids are checked", () => {
  const bytes = (extra: Record<string, unknown>) =>
    parseTokenizer(JSON.stringify({ type: "bytes", vocab_size: 260, ...extra }));
  equal(bytes({ bos_token_id: 256 }).bosTokenId, 256);
  for (const id of [-1, 1e300, 260, "1", TO_STRING]) {
    throws(() => bytes({ bos_token_id: id }), invalid("bos_token_id"));
    throws(() => bytes({ eos_token_id: id }), invalid("eos_token_id"));
  }
  throws(() => bytes({ vocab_size: 1e300 }), invalid("vocab_size"));
});

Deno.test("encode ids outside the vocabulary and the library's own throws are InvalidArgument", () => {
  // WordPiece with an unk_token missing from its vocabulary yields an id the vocab lacks.
  const wp = tok({
    added_tokens: [],
    model: { type: "WordPiece", vocab: { a: 0, b: 1 }, unk_token: "[UNK]" },
  });
  throws(() => wp.encode("abc"), invalid("tokenizer: encode"));
  // A Split pre-tokenizer with a number for a pattern is accepted, then throws a TypeError.
  const split = () =>
    tok({ pre_tokenizer: { type: "Split", pattern: { String: 5 }, behavior: "Isolated" } });
  throws(() => split().encode("ab"), invalid("tokenizer"));
  throws(() => tok({}).decode([0.5]), invalid("tokenizer: decode failed"));
  throws(() => tok({}).encode(TO_STRING as string), invalid("encode: expected a string"));
  equal(tok({}).decode(tok({}).encode("abab")), "ab ab");
});

Deno.test("loadText: null or wrong-typed generation_config, config, tokenizer_config", async () => {
  const load = (files: Record<string, string>) =>
    loadText(memFiles({ "tokenizer.json": TOKENIZER, ...files }));
  await load({});
  for (const name of ["generation_config.json", "config.json", "tokenizer_config.json"]) {
    for (const text of ["null", "[]", "3", '"x"']) {
      await rejects(load({ [name]: text }), invalid(name, "expected a JSON object"));
    }
    await rejects(load({ [name]: "{" }), invalid(name, "not JSON"));
  }
  for (const id of [-1, 1e300, "2", TO_STRING, [deepArray()]]) {
    await rejects(
      load({ "generation_config.json": JSON.stringify({ eos_token_id: id }) }),
      invalid("generation_config.json: eos_token_id"),
    );
  }
  await rejects(
    load({ "config.json": JSON.stringify({ eos_token_id: 99 }) }),
    invalid("eos_token_id", "below 4"),
  );
  const ok3 = await load({ "config.json": JSON.stringify({ eos_token_id: [3] }) });
  equal(ok3.tokenizer.eosTokenIds.join(), "3");
});

Deno.test("chat_template of the wrong shape is InvalidArgument", async () => {
  for (
    const t of [[null], [], [{ name: "default" }], [{ template: 5 }], 5, TO_STRING, deepArray()]
  ) {
    throws(() => ChatTemplate.fromConfig({ chat_template: t }), invalid("chat_template"));
  }
  await rejects(
    loadText(
      memFiles({
        "tokenizer.json": TOKENIZER,
        "tokenizer_config.json": JSON.stringify({ chat_template: [null] }),
      }),
    ),
    invalid("chat_template[0]", "null"),
  );
  ok(ChatTemplate.fromConfig({ chat_template: null }).isDefault);
  const named = [{ name: "tool", template: "T" }, { name: "default", template: "D" }];
  equal(ChatTemplate.fromConfig({ chat_template: named }).render([]), "D");
});

Deno.test("chat templates render under a budget: loops, huge ranges, huge strings, widths", () => {
  const msgs = [{ role: "user", content: "hi" }];
  const exhausted = (...n: string[]) => typed("ResourceExhausted", ...n);
  throws(
    () => new ChatTemplate("{% for i in range(100000000) %}x{% endfor %}").render(msgs),
    exhausted("100000000"),
  );
  throws(
    () =>
      new ChatTemplate(
        "{% for i in range(1000) %}{% for j in range(1000) %}{{ j }}{% endfor %}{% endfor %}",
        false,
        { maxSteps: 10_000 },
      ).render(msgs),
    exhausted("more than 10000 steps"),
  );
  throws(
    () =>
      new ChatTemplate(
        '{% set ns = namespace(s="x") %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}',
      ).render(msgs),
    exhausted("characters exceeds"),
  );
  throws(
    () => new ChatTemplate('{{ "a\nb" | indent(500000000) }}').render(msgs),
    exhausted("argument 500000000"),
  );
  throws(
    () =>
      new ChatTemplate(
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        false,
        { timeoutMs: 50, maxSteps: 1e12 },
      ).render(msgs),
    exhausted("took more than 50 ms"),
  );
  throws(() => new ChatTemplate("{{ raise_exception('no') }}").render(msgs), invalid("no"));
  throws(
    () => new ChatTemplate("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}").render(msgs),
    (e) => e instanceof EngineError,
  );
  const text = {
    tokenizer: tok({}),
    chat: new ChatTemplate("{% for i in range(100000000) %}{% endfor %}"),
  };
  throws(() => encodeChat(text, msgs), exhausted("100000000"));
  const today = new ChatTemplate(
    "{{ strftime_now('%Y-%m-%d %b') }}{{ range(3) | join(',') }}{{ True }}",
  )
    .render(msgs);
  ok(/^\d{4}-\d\d-\d\d [A-Z][a-z]{2}0,1,2true$/.test(today), today);
});
