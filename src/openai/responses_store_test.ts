/**
 * `ResponseStore`'s bounds: at most `maxResponses` kept (the oldest dropped first, 0 keeps
 * none), each for at most `maxAgeMs` on the store's clock; what it keeps is the conversation a
 * continuation starts from (the earlier items, then the output as input items).
 */
import { deepStrictEqual, strictEqual as equal, throws } from "node:assert/strict";
import { ResponseStore } from "./responses_store.ts";
import type { ResponseObject, ResponseOutputItem } from "./responses_types.ts";

const response = (id: string, output: ResponseOutputItem[] = []): ResponseObject => ({
  id,
  object: "response",
  created_at: 0,
  status: "completed",
  error: null,
  incomplete_details: null,
  model: "m",
  output,
  usage: null,
});

Deno.test("ResponseStore keeps at most maxResponses, dropping the oldest first", () => {
  const store = new ResponseStore(2, 60_000);
  store.put(response("a"), []);
  store.put(response("b"), []);
  store.put(response("c"), []);
  equal(store.size, 2);
  equal(store.get("a"), undefined);
  equal(store.get("b")?.response.id, "b");
  equal(store.get("c")?.response.id, "c");
  const none = new ResponseStore(0);
  none.put(response("a"), []);
  equal(none.get("a"), undefined);
  throws(() => new ResponseStore(-1), RangeError);
  throws(() => new ResponseStore(1, 0), RangeError);
});

Deno.test("ResponseStore forgets a response maxAgeMs after it was kept", () => {
  let now = 1_000;
  const store = new ResponseStore(10, 500, () => now);
  store.put(response("a"), []);
  now += 300;
  store.put(response("b"), []);
  now += 199;
  equal(store.get("a")?.response.id, "a");
  now += 1; // a is 500 ms old
  equal(store.get("a"), undefined);
  equal(store.get("b")?.response.id, "b");
  now += 300;
  equal(store.get("b"), undefined);
  equal(store.size, 0);
});

Deno.test("ResponseStore keeps the conversation: the earlier items, then the output as input items", () => {
  const store = new ResponseStore();
  const output: ResponseOutputItem[] = [
    {
      type: "reasoning",
      id: "rs_1",
      summary: [],
      content: [{ type: "reasoning_text", text: "Think." }],
      status: "completed",
    },
    {
      type: "message",
      id: "msg_1",
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: "Hi.", annotations: [] }],
    },
    {
      type: "function_call",
      id: "fc_1",
      call_id: "call_1",
      name: "f",
      arguments: "{}",
      status: "completed",
    },
  ];
  store.put(response("a", output), [{ type: "message", role: "user", content: "Hello" }]);
  deepStrictEqual(store.get("a")?.items, [
    { type: "message", role: "user", content: "Hello" },
    { type: "reasoning", text: "Think." },
    { type: "message", role: "assistant", content: "Hi." },
    { type: "function_call", call_id: "call_1", name: "f", arguments: "{}" },
  ]);
});
