import { deepStrictEqual, strictEqual as equal } from "node:assert/strict";
import * as output from "./output.ts";

Deno.test("token() is a non-terminal chunk with one token", () => {
  deepStrictEqual(output.token(7), { token_ids: [7] });
  equal(output.isTerminal(output.token(7)), false);
});

Deno.test("terminal constructors carry Dynamo's finish reasons and no tokens", () => {
  const cases = [
    [output.stop(), "stop"],
    [output.length(), "length"],
    [output.eos(), "eos"],
    [output.cancelled(), "cancelled"],
  ] as const;
  for (const [chunk, reason] of cases) {
    deepStrictEqual(chunk, { token_ids: [], finish_reason: reason });
    equal(output.isTerminal(chunk), true);
  }
  deepStrictEqual(output.error("boom"), { token_ids: [], finish_reason: { error: "boom" } });
  equal(output.finishKind({ error: "boom" }), "error");
});

Deno.test("withTokens and withUsage return new chunks", () => {
  const base = output.stop();
  const t = output.withTokens(base, [1, 2]);
  deepStrictEqual(t, { token_ids: [1, 2], finish_reason: "stop" });
  deepStrictEqual(base.token_ids, [], "the original is untouched");
  const u = output.withUsage(t, output.usage(3, 2));
  deepStrictEqual(u.completion_usage, { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 });
});

Deno.test("usage total saturates at 2^32-1", () => {
  equal(output.usage(0xffff_fff0, 0x20).total_tokens, 0xffff_ffff);
  equal(output.usage(0xffff_fffe, 1).total_tokens, 0xffff_ffff);
  equal(output.usage(10, 5).total_tokens, 15);
});
