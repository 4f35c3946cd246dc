/**
 * The fields accepted with no effect (`user`, `metadata`, `service_tier`, `store: false`), on
 * both forms: accepted in OpenAI's shapes, refused by name in any other, `store: true` refused
 * (nothing is kept), `service_tier` echoed as `"default"`; other unknown fields still refused.
 */
import { deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict";
import { specFiles } from "../adapters/deno/file_source.ts";
import { EngineError } from "../contract/errors.ts";
import { loadText } from "../text/load.ts";
import { responseBody, usage } from "./format.ts";
import { parseJob } from "./requests.ts";

const FORTUNE = new URL("../../models/fortune/", import.meta.url).pathname;
const text = await loadText(specFiles({ kind: "dir", path: FORTUNE, name: "fortune" }));
const limits = { maxN: 8, contextLength: 512, maxLogprobs: 20 };
const FORMS = [false, true];
const job = (body: Record<string, unknown>, chat: boolean) =>
  parseJob(
    {
      model: "fortune",
      ...(chat ? { messages: [{ role: "user", content: "Hi" }] } : { prompt: "Hi" }),
      ...body,
    },
    chat,
    text,
    limits,
  );
const refused = (body: Record<string, unknown>, param: string, chat: boolean, says?: RegExp) =>
  throws(() => job(body, chat), (e: unknown) => {
    ok(e instanceof EngineError, String(e));
    strictEqual(e.type, "InvalidArgument");
    strictEqual(e.param, param, e.message);
    ok(e.message.startsWith(`${param}: `), e.message);
    ok(says === undefined || says.test(e.message), e.message);
    return true;
  });

const metadata = (pairs: number) =>
  Object.fromEntries(Array.from({ length: pairs }, (_, i) => [`k${i}`, "v"]));

Deno.test("user, metadata, service_tier and store: false are accepted on both forms", () => {
  for (const chat of FORMS) {
    const plain = job({}, chat);
    const all = job({
      user: "u-1",
      metadata: { ...metadata(15), ["k".repeat(64)]: "v".repeat(512) },
      service_tier: "auto",
      store: false,
    }, chat);
    // No effect on what the engine runs.
    deepStrictEqual(all.request(0), plain.request(0));
    for (const v of [null, undefined]) {
      job({ user: v, metadata: v, service_tier: v, store: v }, chat);
    }
    for (const tier of ["auto", "default", "flex", "scale", "priority"]) {
      strictEqual(job({ service_tier: tier }, chat).serviceTier, "default");
    }
    strictEqual(plain.serviceTier, undefined);
  }
});

Deno.test("service_tier is echoed as the tier that served the request, only when set", () => {
  for (const chat of FORMS) {
    const body = (b: Record<string, unknown>) =>
      responseBody(job(b, chat), "id", 0, [], usage(1, 0));
    strictEqual(body({ service_tier: "priority" }).service_tier, "default");
    ok(!("service_tier" in body({})));
  }
});

Deno.test("bad values of the no-effect fields, and store: true, are refused by name", () => {
  for (const chat of FORMS) {
    refused({ store: true }, "store", chat, /keeps no completions/);
    refused({ store: "no" }, "store", chat, /expected a boolean/);
    refused({ user: 5 }, "user", chat);
    refused({ service_tier: "turbo" }, "service_tier", chat, /got "turbo"/);
    refused({ service_tier: 1 }, "service_tier", chat);
    refused({ metadata: "x" }, "metadata", chat);
    refused({ metadata: ["x"] }, "metadata", chat);
    refused({ metadata: metadata(17) }, "metadata", chat, /at most 16 pairs, got 17/);
    refused({ metadata: { ["k".repeat(65)]: "v" } }, "metadata", chat, /65 characters/);
    refused({ metadata: { k: "v".repeat(513) } }, "metadata", chat, /"k": expected a string/);
    refused({ metadata: { k: 1 } }, "metadata", chat);
    // Every other unknown field is still refused by name.
    refused({ prediction: { type: "content", content: "x" } }, "prediction", chat);
    refused({ modalities: ["text"] }, "modalities", chat);
  }
});
