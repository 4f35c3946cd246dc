import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { EngineError, ERROR_TYPES, serializeError } from "./errors.ts";

Deno.test("EngineError carries a Dynamo error type, message and cause", () => {
  const cause = new TypeError("inner");
  const e = new EngineError("ResourceExhausted", "no KV blocks", { cause });
  ok(e instanceof Error);
  equal(e.name, "EngineError");
  equal(e.type, "ResourceExhausted");
  equal(e.message, "no KV blocks");
  equal(e.cause, cause);
  equal(ERROR_TYPES.length, 10);
});

Deno.test("EngineError serialises to plain data and back (structured clone safe)", () => {
  const e = new EngineError("InvalidArgument", "request.top_p: bad", {
    cause: new EngineError("Unknown", "root"),
  });
  const data = structuredClone(e.toJSON());
  deepStrictEqual(Object.keys(data).sort(), ["cause", "message", "name", "stack", "type"]);
  const back = EngineError.fromJSON(data);
  ok(back instanceof EngineError);
  equal(back.type, "InvalidArgument");
  equal(back.message, e.message);
  equal(back.stack, e.stack);
  ok(back.cause instanceof EngineError);
  equal((back.cause as EngineError).message, "root");
  deepStrictEqual(JSON.parse(JSON.stringify(e)), JSON.parse(JSON.stringify(data)));
});

Deno.test("an EngineError's param survives its plain-data form, and only an EngineError's", () => {
  const e = EngineError.invalidField("max_tokens", "too many", new RangeError("inner"));
  equal(e.message, "max_tokens: too many");
  equal(e.param, "max_tokens");
  const data = structuredClone(e.toJSON());
  equal(data.param, "max_tokens");
  const back = EngineError.fromJSON(JSON.parse(JSON.stringify(data)));
  equal(back.param, "max_tokens");
  equal(back.type, "InvalidArgument");
  equal(back.cause instanceof EngineError && back.cause.param, undefined);
  ok(!("param" in EngineError.invalidArgument("no field").toJSON()));
  equal(EngineError.fromJSON({ ...data, param: 7 as unknown as string }).param, undefined);
});

Deno.test("foreign errors keep their name and become Unknown", () => {
  const data = serializeError(new RangeError("out"));
  equal(data.name, "RangeError");
  equal(data.type, "Unknown");
  const wrapped = EngineError.from(new RangeError("out"), "Disconnected");
  equal(wrapped.type, "Disconnected");
  ok(wrapped.message.includes("RangeError"));
  const same = new EngineError("Cancelled", "x");
  equal(EngineError.from(same), same);
  equal(
    EngineError.fromJSON({ name: "EngineError", type: "Bogus" as "Unknown", message: "m" }).type,
    "Unknown",
  );
});
