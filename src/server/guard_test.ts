/**
 * The body's media type: JSON (any charset but UTF-8 refused) runs, anything else is a 415 whose
 * message names the type expected and the one given, in-process and through the server.
 */
import { ok, strictEqual as equal, throws } from "node:assert/strict";
import { checkJson } from "./guard.ts";
import { HttpError } from "./errors.ts";
import { mockServer } from "../../test/support/server.ts";

/** A POST with a JSON body sent as `type` (none when undefined). */
function post(type?: string): Request {
  const req = new Request("http://localhost/v1/completions", { method: "POST", body: "{}" });
  // A string body gets `text/plain;charset=UTF-8` unless a type is given: set or strip it.
  if (type === undefined) req.headers.delete("content-type");
  else req.headers.set("content-type", type);
  return req;
}

/** The 415 `checkJson` throws for `type`. */
function refused(type: string | undefined): HttpError {
  let error: HttpError | undefined;
  throws(() => checkJson(post(type)), (e: unknown) => {
    ok(e instanceof HttpError, String(e));
    error = e;
    return true;
  });
  equal(error!.status, 415);
  equal(error!.body().error.code, "unsupported_media_type");
  return error!;
}

Deno.test("checkJson: JSON types pass; every 415 names application/json and the type given", () => {
  for (
    const type of ["application/json", "application/json; charset=utf-8", "application/x+json"]
  ) {
    checkJson(post(type));
  }
  equal(refused(undefined).message, "Content-Type must be application/json (got none)");
  for (const type of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"]) {
    equal(refused(type).message, `Content-Type must be application/json (got ${type})`);
  }
  equal(
    refused("application/json; charset=latin1").message,
    "Content-Type must be application/json with charset=utf-8 or none " +
      "(got application/json; charset=latin1)",
  );
  // A long header is shown cut, not whole.
  const long = `text/${"x".repeat(500)}`;
  const message = refused(long).message;
  ok(message.length < 200 && message.includes(`(got text/xxx`) && message.endsWith("…)"), message);
});

Deno.test("the server's 415: the message names the type expected and the type given", async () => {
  const s = await mockServer();
  try {
    const res = await fetch(new URL("v1/chat/completions", s.url), {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: JSON.stringify({ model: "fortune", messages: [{ role: "user", content: "hi" }] }),
    });
    equal(res.status, 415);
    const { error } = await res.json();
    equal(error.message, "Content-Type must be application/json (got text/plain)");
    equal(error.type, "invalid_request_error");
  } finally {
    await s.close();
  }
});
