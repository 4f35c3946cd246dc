/**
 * For tests: the text of a model whose reply a test writes as Qwen3 would, fortune's tokenizer (a
 * token per byte) under Qwen3's chat template (`test/fixtures/chat_templates/`: `<think>`
 * reasoning, `<tool_call>` calls, `tools` and `enable_thinking` rendered).
 */
import { specFiles } from "../../src/adapters/deno/file_source.ts";
import { ChatTemplate } from "../../src/text/chat.ts";
import { loadText, type ModelText } from "../../src/text/load.ts";

const FORTUNE = new URL("../../models/fortune/", import.meta.url).pathname;
const QWEN3 = new URL("../fixtures/chat_templates/Qwen-Qwen3-0.6B.jinja", import.meta.url);
const fortune = await loadText(specFiles({ kind: "dir", path: FORTUNE, name: "fortune" }));

/** Fortune's tokenizer under Qwen3's chat template. */
export const qwen: ModelText = {
  tokenizer: fortune.tokenizer,
  chat: new ChatTemplate(Deno.readTextFileSync(QWEN3)),
};
