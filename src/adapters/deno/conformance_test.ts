import { ok, strictEqual as equal } from "node:assert/strict";

const cli = new URL("./conformance.ts", import.meta.url).pathname;

async function run(...args: string[]) {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", cli, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code, out: dec.decode(stdout), err: dec.decode(stderr) };
}

Deno.test("conformance CLI: mock passes with one line per check and exit 0", async () => {
  const { code, out } = await run("--engine", "mock");
  equal(code, 0, out);
  const lines = out.trim().split("\n");
  equal(lines.length, 14);
  ok(lines.slice(0, 13).every((l) => l.startsWith("ok ")));
  equal(lines[13], "conformance: PASS (13 checks)");
});

Deno.test("conformance CLI: a broken engine exits 1 and names its kind", async () => {
  const { code, out } = await run("--engine", "broken:ChunkAfterTerminal");
  equal(code, 1);
  ok(out.includes("FAIL single_generate"), out);
  ok(out.trim().endsWith("conformance: FAIL ChunkAfterTerminal"), out);
});

Deno.test("conformance CLI: engines that miss a mid-stream or a pre-aborted cancel fail that check", async () => {
  for (
    const [kind, check] of [
      ["MidStreamCancellationNotObserved", "cancellation_mid_stream"],
      ["PreAbortedRequestNotCancelled", "cancellation_pre_aborted"],
    ]
  ) {
    const { code, out } = await run("--engine", `broken:${kind}`);
    equal(code, 1, out);
    ok(out.includes("ok   cancellation "), out);
    ok(out.includes(`FAIL ${check}`), out);
    ok(out.trim().endsWith(`conformance: FAIL ${kind}`), out);
  }
});

Deno.test("conformance CLI: an unknown engine exits 2 with usage", async () => {
  const { code, err } = await run("--engine", "nope");
  equal(code, 2);
  ok(err.includes("usage:") && err.includes("unknown engine: nope"));
  equal((await run("--engine", "broken:NotAKind")).code, 2);
});
