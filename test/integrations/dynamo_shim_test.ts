/**
 * The Dynamo worker shim (`integrations/dynamo/kiln_engine.py`) against a live `serve`, driven
 * from Debian's python3 with python3-aiohttp (`integrations/dynamo/test_kiln_engine.py` checks
 * the chunk streams, cancellation, typed errors, quiescence and cleanup): without Dynamo, and
 * with stand-in `dynamo` packages of Dynamo 1.3's and 1.5's Python APIs, each driven as that
 * version's worker drives an engine (flat config and `drain()`; `llm` registration, the health
 * probe, the endpoint and control hooks and `is_quiescent()`).
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { startServer } from "../server/server.ts";
import { PYTHON } from "../support/python.ts";

const SHIM = new URL("../../integrations/dynamo/", import.meta.url).pathname;

async function shim(url: string, dynamo: string) {
  const out = await new Deno.Command(PYTHON, {
    args: [`${SHIM}test_kiln_engine.py`, "--url", url, "--dynamo", dynamo],
    cwd: SHIM,
    stdout: "piped",
    stderr: "piped",
  }).output();
  equal(out.code, 0, `${dynamo}: ${new TextDecoder().decode(out.stderr)}`);
  return JSON.parse(new TextDecoder().decode(out.stdout));
}

Deno.test("the Dynamo worker shim drives serve's engine endpoint from Python: no Dynamo, 1.3, 1.5", async () => {
  const s = await startServer();
  try {
    for (const dynamo of ["none", "1.3", "1.5"]) {
      const got = await shim(s.url, dynamo);
      equal(got.dynamo, dynamo);
      equal(got.config.model, "fortune");
      equal(got.config.kv_cache_block_size, 16);
      ok(got.config.total_kv_blocks > 0 && got.config.max_num_seqs > 0, dynamo);
      equal(got.tokens, 12);
      deepStrictEqual(got.concurrent, [8, 9, 10, 11]);
      ok(got.cancelled_after >= 3 && got.cancelled_after < 900);
      equal(got.bad_token, "InvalidArgument");
      // Only a Dynamo install has a ZMQ listener to hand Kiln's KV events to.
      deepStrictEqual(got.kv_sources, dynamo === "none" ? [] : [["tcp://127.0.0.1:5557", 0]]);
      if (dynamo === "1.5") {
        // The nested registration carries every fact, with one data-parallel rank.
        equal(got.config.data_parallel_size, 1);
        equal(got.config.data_parallel_start_rank, 0);
      }
      // 1.5's hooks (which the shim has without Dynamo too): a served probe, controls refused.
      equal(got.probe_tokens, dynamo === "1.3" ? undefined : 1);
      equal(got.control, dynamo === "1.3" ? undefined : "error");
    }
  } finally {
    await s.stop();
  }
});
