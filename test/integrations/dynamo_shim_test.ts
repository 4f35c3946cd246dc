/**
 * The Dynamo worker shim (`integrations/dynamo/kiln_engine.py`) against a live `serve`, driven
 * from Debian's python3 with python3-aiohttp and no Dynamo installed
 * (`integrations/dynamo/test_kiln_engine.py` checks the chunk streams, cancellation, typed
 * errors, drain and cleanup).
 */
import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { startServer } from "../server/server.ts";
import { PYTHON } from "../support/python.ts";

const SHIM = new URL("../../integrations/dynamo/", import.meta.url).pathname;

Deno.test("the Dynamo worker shim drives serve's engine endpoint from Python", async () => {
  const s = await startServer();
  try {
    const out = await new Deno.Command(PYTHON, {
      args: [`${SHIM}test_kiln_engine.py`, "--url", s.url],
      cwd: SHIM,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    equal(out.code, 0, stderr);
    const got = JSON.parse(new TextDecoder().decode(out.stdout));
    equal(got.config.model, "fortune");
    equal(got.tokens, 12);
    deepStrictEqual(got.concurrent, [8, 9, 10, 11]);
    ok(got.cancelled_after >= 3 && got.cancelled_after < 900);
    equal(got.bad_token, "InvalidArgument");
  } finally {
    await s.stop();
  }
});
