import { ok, strictEqual as equal } from "node:assert/strict";
import { ratioText, readmeRows } from "./readme_rows.ts";
import type { BenchReport } from "./report.ts";
import type { PeerReport } from "./peer_report.ts";

const decode = (batch: number, kiln: number, peer: number) => ({
  batch,
  tokens_per_s: [{ kiln, peer }],
  kiln_over_peer: kiln / peer,
});

function report(peers: PeerReport[]): BenchReport {
  return {
    bench: "kiln-bench",
    adapter: "lavapipe",
    date: "2026-11-25T00:00:00.000Z",
    runtime_data: {},
    deno: "2.9.6",
    options: {},
    probe: { bytes: 1, dispatches: 1, seconds_per_dispatch: 1, gb_per_s: 1, timer: "timestamp" },
    shapes: [{
      shape: "fortune",
      model_dir: "models/fortune",
      skipped: [],
      decode: [1, 8].map((batch) => ({
        batch,
        tokens_per_stream: 128,
        timed_tokens: 127 * batch,
        seconds: 1,
        tokens_per_s: batch === 1 ? 114 : 380,
        max_steps_in_flight: 2,
      })),
      peers,
    }],
  };
}

Deno.test("ratios as docs/benchmarks.md writes them", () => {
  equal(ratioText(3.92), "3.9×");
  equal(ratioText(51.24), "51×");
  equal(ratioText(114 / 680), "0.17×");
  equal(ratioText(Number.NaN), "-");
});

Deno.test("a publishable peer's ratios are printed, a withheld one's are not, with why", () => {
  const md = readmeRows([report([
    {
      name: "llama.cpp-cpu",
      status: "ok",
      decode: [
        {
          ...decode(1, 114, 680),
          threads: {
            chosen: 1,
            tried: [{ threads: 1, tokens_per_s: [680] }, { threads: 2, tokens_per_s: [400] }],
          },
        },
        decode(8, 380, 1000),
      ],
      publishable: true,
    },
    {
      name: "starved",
      status: "ok",
      decode: [decode(1, 23, 0.93), decode(8, 95, 1.85)],
      publishable: false,
      withheld: ["batch 1 decode: 2 threads ran at 0.93 tok/s: the cores were not free"],
    },
    { name: "old", status: "ok", decode: [decode(1, 23, 0.93)] },
    { name: "away", status: "unavailable", reason: "not installed" },
  ])]);
  const lines = md.split("\n");
  equal(lines[0], "| model | Kiln decode, tok/s | ÷ llama.cpp-cpu | ÷ starved | ÷ old | ÷ away |");
  equal(
    lines[2],
    "| fortune (batch 1 / 8) | 114 / 380 | 0.17× / 0.38× | withheld (see below) | " +
      "withheld (see below) | unavailable |",
  );
  ok(md.includes("- fortune, llama.cpp-cpu, batch 1: 1 thread (tried 1: 680, 2: 400 tok/s)."));
  ok(md.includes("- fortune, starved: ratio withheld: batch 1 decode: 2 threads ran at 0.93"));
  ok(
    md.includes("- fortune, old: ratio withheld: this run predates the starvation and load guard"),
  );
  ok(md.includes("- fortune, away: unavailable: not installed."));
  ok(!md.includes("25×") && !md.includes("51×"), "no starved ratio anywhere");
});
