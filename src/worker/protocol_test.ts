import { ok, rejects, strictEqual as equal } from "node:assert/strict";
import * as Comlink from "comlink";
import { EngineError } from "../contract/errors.ts";
import { installErrorTransfer } from "./protocol.ts";

Deno.test("comlink carries an EngineError's type, message, param and cause across a port", async () => {
  installErrorTransfer();
  const { port1, port2 } = new MessageChannel();
  Comlink.expose({
    fail(): never {
      throw EngineError.invalidField(
        "response_format",
        "cannot constrain",
        EngineError.shutdown("x"),
      );
    },
    plain(): never {
      throw EngineError.shutdown("stopped");
    },
  }, port1);
  const remote = Comlink.wrap<{ fail(): void; plain(): void }>(port2);
  try {
    await rejects(remote.fail(), (e: unknown) => {
      ok(e instanceof EngineError, String(e));
      equal(e.type, "InvalidArgument");
      equal(e.param, "response_format");
      equal(e.message, "response_format: cannot constrain");
      ok(e.cause instanceof EngineError && e.cause.type === "EngineShutdown");
      return true;
    });
    await rejects(remote.plain(), (e: unknown) => {
      ok(e instanceof EngineError, String(e));
      equal(e.param, undefined);
      return true;
    });
  } finally {
    remote[Comlink.releaseProxy]();
    port1.close();
    port2.close();
  }
});
