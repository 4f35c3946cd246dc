/**
 * The fuzz harness itself: each of its checks fails when it should (a leak, an error that is not
 * an EngineError, a wrong kind, an input that hangs, a library class the corpus does not stand
 * for, a corpus input whose outcome changed), and the classification and corpus format hold.
 */
import {
  deepStrictEqual as deepEqual,
  ok,
  rejects,
  strictEqual as equal,
} from "node:assert/strict";
import { Template } from "@huggingface/jinja";
import { EngineError } from "../../src/contract/errors.ts";
import { fromCorpusJson, toCorpusJson } from "./corpus.ts";
import { fuzz } from "./harness.ts";
import { classify, libraryClass, outcomeLabel } from "./outcome.ts";

const invalid = (cause?: unknown) => EngineError.invalidArgument("refused", cause);
const parse = (text: string) => {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw invalid(e);
  }
};
const heapRuns = { ms: 3000, runs: 400 };
/** Too few runs to measure the heap (and no GC between runs): the other checks only. */
const quick = { ms: 3000, runs: 60 };

Deno.test("harness: a leak of 100 KiB per run fails the heap check; garbage that is freed passes", async () => {
  let kept: number[][] = [];
  await rejects(
    fuzz({
      name: "leak 100 KiB",
      expect: ["InvalidArgument"],
      ...heapRuns,
      generate: () => 0,
      run: () => void kept.push(new Array(12_800).fill(0.5)),
    }),
    /the heap grew by \d+(\.\d+)? bytes per run/,
  );
  kept = [];
  const rep = await fuzz({
    name: "garbage 100 KiB",
    expect: ["InvalidArgument"],
    ...heapRuns,
    generate: () => 0,
    run: () => void new Array(12_800).fill(0.5),
  });
  ok(rep.heapPerRun !== undefined && rep.heapPerRun < 4096, `${rep.heapPerRun}`);
  equal(kept.length, 0);
});

Deno.test("harness: an error that is not an EngineError, or of another kind, fails", async () => {
  await rejects(
    fuzz({
      name: "TypeError",
      expect: ["InvalidArgument"],
      ...quick,
      generate: (r) => r(),
      run: (x) => {
        if (x < 0.5) throw new TypeError("boom");
      },
    }),
    /threw TypeError past Kiln/,
  );
  await rejects(
    fuzz({
      name: "wrong kind",
      expect: ["InvalidArgument"],
      ...quick,
      generate: () => 0,
      run: () => {
        throw new EngineError("Cancelled", "not what this input gives");
      },
    }),
    /refused as Cancelled, expected InvalidArgument/,
  );
});

Deno.test("harness: an input that hangs fails (it is slow again when run again)", async () => {
  const busy = (ms: number) => {
    const end = performance.now() + ms;
    while (performance.now() < end) { /* an input that takes 2.5 times the guard, each time */ }
  };
  let made = 0;
  await rejects(
    fuzz({
      name: "hang",
      expect: ["InvalidArgument"],
      ...quick,
      hangMs: 100,
      generate: () => ++made === 30, // run 30 hangs
      run: (hangs: boolean) => hangs ? busy(250) : undefined,
    }),
    /took \d+ ms, and \d+ again/,
  );
});

Deno.test("harness: a library class fails unless the corpus stands for it; a changed replay fails", async () => {
  const target = {
    name: "JSON",
    expect: ["InvalidArgument"] as const,
    ...quick,
    generate: (r: () => number) => r() < 0.5 ? "{" : "{}",
    run: parse,
  };
  await rejects(fuzz(target), /new class: JSON\.parse threw SyntaxError/);
  const rep = await fuzz({ ...target, corpus: "selftest_json" });
  ok((rep.by.get("JSON.parse threw SyntaxError")?.count ?? 0) > 0);
  await rejects(
    fuzz({ ...target, corpus: "selftest_json", run: () => {} }),
    /selftest_json\.jsonl line 1 .*recorded InvalidArgument \(JSON\.parse threw SyntaxError\), now accepted/,
  );
});

Deno.test("outcomes name the library and the Kiln file a crash came through", () => {
  let jinja: unknown;
  try {
    new Template("{% for x in y %}");
  } catch (e) {
    jinja = e;
  }
  const o = classify(EngineError.fromLibrary("@huggingface/jinja", "chat template", jinja));
  ok(o.kind === "refused" && o.by === "@huggingface/jinja", JSON.stringify(o));
  equal(libraryClass(o), "@huggingface/jinja threw TypeError via harness_test.ts");
  equal(outcomeLabel(classify(invalid())), "InvalidArgument (Kiln)");
  equal(outcomeLabel(classify(undefined, true)), "accepted");
  const thrown = classify(new RangeError("x"));
  ok(thrown.kind === "thrown" && outcomeLabel(thrown).startsWith("not an EngineError"));
  const err = EngineError.fromLibrary("lib", "file.json", new TypeError("t"));
  equal(err.message, "file.json: lib threw TypeError: t");
  ok(err.cause instanceof TypeError);
  equal(EngineError.fromLibrary("lib", "x", err), err);
});

Deno.test("corpus inputs keep bytes (UTF-8 as text, else base64) and own __proto__ keys", () => {
  const input = {
    text: new TextEncoder().encode("ab\u0000🙂"),
    bin: Uint8Array.of(0xff, 0xfe, 0),
    nested: [JSON.parse('{"__proto__":{"x":1}}')],
  };
  const json = JSON.parse(JSON.stringify(toCorpusJson(input)));
  deepEqual(json.text, { $utf8: "ab\u0000🙂" });
  deepEqual(json.bin, { $base64: "//4A" });
  const back = fromCorpusJson(json) as typeof input;
  deepEqual([...back.text], [...input.text]);
  deepEqual([...back.bin], [...input.bin]);
  ok(Object.hasOwn(back.nested[0], "__proto__"));
});
