/**
 * `KilnModel.responses` on a model opened as a page opens it (`openModel`, the engine in Kiln's
 * worker module): `responses.create` whole and streamed, `previous_response_id` continuing the
 * conversation kept on the page (and one not kept refused by name), and the requests counted in
 * the page's metrics.
 */
import { match, ok, rejects, strictEqual as equal } from "node:assert/strict";
import { EngineError } from "../contract/errors.ts";
import { rangeServer } from "../../test/support/range_server.ts";
import { openModel } from "./open.ts";

const FORTUNE = new URL("../../models/fortune/", import.meta.url).pathname;

Deno.test("openModel: responses.create whole, streamed, and continued", async () => {
  const server = rangeServer(FORTUNE);
  const model = await openModel({ model: server.base, engine: { kvBlocks: 64 } });
  try {
    const first = await model.responses.create({
      input: "Tell me a fortune",
      max_output_tokens: 6,
    });
    equal(first.object, "response");
    equal(first.model, "m");
    // Fortune may end its reply before the bound.
    ok(first.status === "incomplete" || first.status === "completed", first.status);
    ok(first.usage!.output_tokens <= 6);

    const types: string[] = [];
    let text = "";
    const stream = await model.responses.create({
      previous_response_id: first.id,
      input: "Another",
      max_output_tokens: 6,
      stream: true,
    });
    let previous: unknown;
    for await (const e of stream) {
      types.push(e.type);
      if (e.type === "response.output_text.delta") text += e.delta as string;
      if (e.type === "response.incomplete" || e.type === "response.completed") {
        previous = (e.response as { previous_response_id: unknown }).previous_response_id;
        // The earlier turn came first: the prompt is longer than this turn's alone.
        ok(
          (e.response as { usage: { input_tokens: number } }).usage.input_tokens >
            first.usage!.input_tokens,
        );
      }
    }
    equal(types[0], "response.created");
    ok(["response.incomplete", "response.completed"].includes(types.at(-1)!), types.join());
    equal(previous, first.id);
    ok(text.length > 0, "streamed text");

    await rejects(
      model.responses.create({ previous_response_id: "resp_gone", input: "x" }),
      (e) => e instanceof EngineError && e.param === "previous_response_id",
    );
    match(model.metricsText(), /dynamo_frontend_requests_total\{[^}]*status="success"[^}]*\} 2\n/);
  } finally {
    await model.close();
    await server.shutdown();
  }
});
