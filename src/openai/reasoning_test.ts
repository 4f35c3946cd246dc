/**
 * Reasoning readers on replies of each convention: the reasoning and the content of a reply read
 * whole, cut into two pieces at every character, and fed a character at a time are the same;
 * `<think>` blocks opened by the reply or by the prompt, closed by the prompt (thinking switched
 * off), cut or never closed; gpt-oss's channels, a cut header, text outside any channel. The
 * conventions are found in the real templates of `test/fixtures/chat_templates/`, and how each
 * template's rendered prompt leaves the reply is read from its tail.
 */
import { deepStrictEqual, strictEqual as equal } from "node:assert/strict";
import { ChatTemplate } from "../text/chat.ts";
import {
  detectReasoning,
  parseReasoning,
  REASONING_CONVENTIONS,
  type ReasoningConvention,
  type ReasoningStep,
  type ReplyStart,
} from "./reasoning.ts";

const think = REASONING_CONVENTIONS.get("</think>")!;
const harmony = REASONING_CONVENTIONS.get("<|channel|>")!;

/** A reply, how the prompt left it, and what it must give. */
interface Case {
  name: string;
  convention: ReasoningConvention;
  start: ReplyStart;
  reply: string;
  want: ReasoningStep;
}

const CASES: Case[] = [
  {
    name: "think: a block, then the answer (the layout's whitespace dropped)",
    convention: think,
    start: "open",
    reply: "<think>\nThe user greets me.\nI greet back.\n</think>\n\nHello there!",
    want: { reasoning: "The user greets me.\nI greet back.", content: "Hello there!" },
  },
  {
    name: "think: no block is all content",
    convention: think,
    start: "open",
    reply: "\nHello <think> is a tag",
    want: { reasoning: "", content: "\nHello <think> is a tag" },
  },
  {
    name: "think: an empty block",
    convention: think,
    start: "open",
    reply: "<think>\n\n</think>\n\nHi.",
    want: { reasoning: "", content: "Hi." },
  },
  {
    name: "think: cut inside the reasoning (a cut end tag is reasoning text)",
    convention: think,
    start: "open",
    reply: "<think>\nStep one. Step two.\n</thi",
    want: { reasoning: "Step one. Step two.\n</thi", content: "" },
  },
  {
    name: "think: opened by the prompt",
    convention: think,
    start: "inside",
    reply: "Hmm, 2 + 2.\n</think>\n\n4",
    want: { reasoning: "Hmm, 2 + 2.", content: "4" },
  },
  {
    name: "think: closed by the prompt (thinking off) is all content, tags and all",
    convention: think,
    start: "closed",
    reply: "<think>x</think>4",
    want: { reasoning: "", content: "<think>x</think>4" },
  },
  {
    name: "think: a second block is content",
    convention: think,
    start: "open",
    reply: "<think>a</think>b<think>c</think>",
    want: { reasoning: "a", content: "b<think>c</think>" },
  },
  {
    name: "harmony: analysis, then final",
    convention: harmony,
    start: "open",
    reply: "<|channel|>analysis<|message|>User asks 2+2. Answer 4.<|end|>" +
      "<|start|>assistant<|channel|>final<|message|>2 + 2 = 4.",
    want: { reasoning: "User asks 2+2. Answer 4.", content: "2 + 2 = 4." },
  },
  {
    name: "harmony: a preamble on commentary is content; a return ends the final message",
    convention: harmony,
    start: "open",
    reply: "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>commentary" +
      "<|message|>Checking. <|end|><|start|>assistant<|channel|>final<|message|>Done.<|return|>",
    want: { reasoning: "Think.", content: "Checking. Done." },
  },
  {
    name: "harmony: cut inside the analysis",
    convention: harmony,
    start: "open",
    reply: "<|channel|>analysis<|message|>Long thought<|e",
    want: { reasoning: "Long thought<|e", content: "" },
  },
  {
    name: "harmony: cut inside the final message's header (the header is dropped)",
    convention: harmony,
    start: "open",
    reply: "<|channel|>analysis<|message|>T<|end|><|start|>assistant<|channel|>fin",
    want: { reasoning: "T", content: "" },
  },
  {
    name: "harmony: text outside any channel is content",
    convention: harmony,
    start: "open",
    reply: "Plain answer.",
    want: { reasoning: "", content: "Plain answer." },
  },
];

/** Read `pieces` one by one, then finish. */
function read(c: Case, pieces: string[]): ReasoningStep {
  const reader = c.convention.reader(c.start);
  const got: ReasoningStep = { reasoning: "", content: "" };
  for (const step of [...pieces.map((p) => reader.push(p)), reader.finish()]) {
    got.reasoning += step.reasoning;
    got.content += step.content;
  }
  return got;
}

for (const c of CASES) {
  Deno.test(`reasoning: ${c.name}: whole, split at every character, char by char`, () => {
    deepStrictEqual(parseReasoning(c.convention, c.reply, c.start), c.want, "whole");
    for (let k = 0; k <= c.reply.length; k++) {
      deepStrictEqual(read(c, [c.reply.slice(0, k), c.reply.slice(k)]), c.want, `split at ${k}`);
    }
    deepStrictEqual(read(c, [...c.reply]), c.want, "char by char");
  });
}

Deno.test("reasoning: a marker cut by the stream is held back, never given out in pieces", () => {
  const reader = think.reader("open");
  deepStrictEqual(reader.push("<thi"), { reasoning: "", content: "" });
  equal(reader.mode, "undecided");
  deepStrictEqual(reader.push("nk>Plan"), { reasoning: "Plan", content: "" });
  equal(reader.mode, "reasoning");
  deepStrictEqual(reader.push(" it.\n</th"), { reasoning: " it.", content: "" });
  deepStrictEqual(reader.push("ink>\n\n"), { reasoning: "", content: "" });
  equal(reader.mode, "content");
  deepStrictEqual(reader.push("Done"), { reasoning: "", content: "Done" });
  const h = harmony.reader("open");
  deepStrictEqual(h.push("<|channel|>analysis<|mess"), { reasoning: "", content: "" });
  equal(h.mode, "undecided");
  deepStrictEqual(h.push("age|>A<|e"), { reasoning: "A", content: "" });
  deepStrictEqual(h.push("nd|><|start|>assistant<|channel|>final<|message|>B"), {
    reasoning: "",
    content: "B",
  });
});

const fixture = (name: string) =>
  new ChatTemplate(
    Deno.readTextFileSync(
      new URL(`../../test/fixtures/chat_templates/${name}.jinja`, import.meta.url),
    ),
  );

Deno.test("reasoning: conventions found in the real templates, none where there is none", () => {
  const found = (name: string) => detectReasoning(fixture(name).source)?.name;
  equal(found("Qwen-Qwen3-0.6B"), "think");
  equal(found("HuggingFaceTB-SmolLM3-3B"), "think");
  equal(found("openai-gpt-oss-120b"), "harmony");
  for (
    const name of [
      "Qwen-Qwen2.5-7B-Instruct",
      "meta-llama-Llama-3.1-8B-Instruct",
      "mistralai-Mistral-Nemo-Instruct-2407",
      "google-gemma-2-2b-it",
      "microsoft-Phi-3.5-mini-instruct",
    ]
  ) equal(found(name), undefined, name);
});

Deno.test("reasoning: how each template's generation prompt leaves the reply", () => {
  const user = [{ role: "user", content: "Hi" }];
  const start = (t: ChatTemplate, variables: Record<string, unknown> = {}) =>
    detectReasoning(t.source)!.start(t.render(user, {}, { variables }));
  const qwen3 = fixture("Qwen-Qwen3-0.6B"), smol = fixture("HuggingFaceTB-SmolLM3-3B");
  equal(start(qwen3), "open");
  equal(start(qwen3, { enable_thinking: false }), "closed");
  equal(start(smol), "open");
  equal(start(smol, { enable_thinking: false }), "closed");
  // Qwen3's template with the generation prompt opening the block, as DeepSeek-R1's and
  // Qwen3-thinking's templates do.
  const opened = new ChatTemplate(
    qwen3.source.replace(
      "'<|im_start|>assistant\\n' }}",
      "'<|im_start|>assistant\\n<think>\\n' }}",
    ),
  );
  equal(start(opened), "inside");
  equal(start(fixture("openai-gpt-oss-120b"), {}), "open");
});
