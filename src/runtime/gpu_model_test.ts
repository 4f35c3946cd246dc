import { ok, rejects, strictEqual as equal, throws } from "node:assert/strict";
import { EngineError } from "../contract/errors.ts";
import { dirFiles } from "../adapters/deno/file_source.ts";
import { Forward } from "./forward.ts";
import { GpuModel } from "./gpu_model.ts";
import { checkFits } from "../model/weights.ts";
import { testGpu } from "../../test/support/gpu.ts";
import { MODELS } from "../../test/support/models.ts";

const dir = MODELS[0].dir.pathname;

Deno.test("a model beyond the device's buffer limits is ResourceExhausted, saying needed and allowed", async () => {
  const gpu = await testGpu();
  // llama-gqa-f32's rows are 256 bytes: bigger tensors split by rows, but a row cannot.
  const small = { ...gpu, caps: { ...gpu.caps, maxStorageBufferBindingSize: 128 } };
  await rejects(GpuModel.load(small, dirFiles(dir)), (e: unknown) => {
    ok(e instanceof EngineError && e.type === "ResourceExhausted", String(e));
    ok(/needs \d+ bytes per row/.test(e.message) && /allows 128/.test(e.message), e.message);
    return true;
  });
  throws(
    () => checkFits([], { maxStorageBufferBindingSize: 1, maxBufferSize: 1 }, -1),
    (e: unknown) => e instanceof EngineError && e.type === "ResourceExhausted",
  );
});

Deno.test("token ids outside the vocabulary and bad positions are InvalidArgument; the model keeps working", async () => {
  const gpu = await testGpu();
  let progress = 0;
  const model = await GpuModel.load(gpu, dirFiles(dir), {
    onProgress: (done, total) => (progress = done / total),
  });
  equal(progress, 1);
  const fwd = new Forward(model);
  try {
    const step = (tokens: number[], positions = tokens.map((_, i) => i)) => ({
      tokens,
      positions,
      slots: positions,
      tableOffsets: tokens.map(() => 0),
      blockTable: [0, 1],
      logitRows: [tokens.length - 1],
    });
    const invalid = (needle: string) => (e: unknown) =>
      e instanceof EngineError && e.type === "InvalidArgument" && e.message.includes(needle);
    await rejects(fwd.run(step([1, 260])), invalid("outside the vocabulary"));
    await rejects(fwd.run(step([1], [4096])), invalid("beyond the context"));
    await rejects(fwd.run(step([])), invalid("no tokens"));
    const logits = await fwd.run(step([1, 2, 3]));
    equal(logits.length, model.config.vocabSize);
    ok(logits.every(Number.isFinite));
  } finally {
    fwd.destroy();
    model.destroy();
  }
});

for (const m of MODELS.slice(0, 3)) {
  Deno.test(`${m.name}: weights split over bindings give the logits of whole ones`, async () => {
    const gpu = await testGpu();
    // 16 KiB bindings: the embedding (and LM head) split by rows, q/k/v and gate/up unstacked.
    const small = { ...gpu, caps: { ...gpu.caps, maxStorageBufferBindingSize: 16384 } };
    const opts = { kvBlocks: 2, kvDtype: "f32" as const };
    const [whole, split] = [
      await GpuModel.load(gpu, dirFiles(m.dir.pathname), opts),
      await GpuModel.load(small, dirFiles(m.dir.pathname), opts),
    ];
    ok(split.embed.parts.length > 1, `embedding in ${split.embed.parts.length} parts`);
    ok(split.layers[0]!.gateUp!.parts.length > 1, "gate/up unstacked");
    const [a, b] = [new Forward(whole), new Forward(split)];
    try {
      const prompt = [1, 7, 200, 3, 45];
      const step = (tokens: number[], from: number) => ({
        tokens,
        positions: tokens.map((_, i) => from + i),
        slots: tokens.map((_, i) => from + i),
        tableOffsets: tokens.map(() => 0),
        blockTable: [0, 1],
        logitRows: tokens.map((_, i) => i),
      });
      for (const [tokens, from] of [[prompt, 0], [[9], 5], [[255], 6]] as const) {
        const [x, y] = [await a.run(step([...tokens], from)), await b.run(step([...tokens], from))];
        const worst = x.reduce((w, v, j) => Math.max(w, Math.abs(v - y[j]!)), 0);
        ok(worst < 1e-4, `${m.name} at ${from}: max |whole - split| ${worst}`);
      }
    } finally {
      a.destroy();
      b.destroy();
      whole.destroy();
      split.destroy();
    }
  });
}

Deno.test("split-K decode attention gives the single pass's logits", async () => {
  const gpu = await testGpu();
  const model = await GpuModel.load(gpu, dirFiles(MODELS[MODELS.length - 1]!.dir.pathname));
  const [one, split] = [new Forward(model), new Forward(model, { attentionSplits: 3 })];
  try {
    const step = (tokens: number[], from: number) => ({
      tokens,
      positions: tokens.map((_, i) => from + i),
      slots: tokens.map((_, i) => from + i),
      tableOffsets: tokens.map(() => 0),
      blockTable: [0, 1, 2, 3, 4],
      logitRows: [tokens.length - 1],
    });
    const prompt = Array.from({ length: 40 }, (_, i) => 65 + (i % 26));
    await one.run(step(prompt, 0)); // fills the cache both read
    for (const [i, id] of [66, 67, 68].entries()) {
      const a = await one.run(step([id], 40 + i));
      const b = await split.run(step([id], 40 + i));
      const worst = a.reduce((m, v, j) => Math.max(m, Math.abs(v - b[j]!)), 0);
      ok(worst < 1e-4, `step ${i}: max |single - split| ${worst}`);
    }
  } finally {
    one.destroy();
    split.destroy();
    model.destroy();
  }
});

Deno.test("deno task verify: PASS on a fixture, FAIL (exit 1) against a tampered reference", async () => {
  const cli = new URL("../adapters/deno/verify.ts", import.meta.url).pathname;
  const run = async (...args: string[]) => {
    const r = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", cli, ...args],
      stdout: "piped",
      stderr: "piped",
    })
      .output();
    return { code: r.code, out: new TextDecoder().decode(r.stdout) };
  };
  const pass = await run("--model", dir);
  equal(pass.code, 0, pass.out);
  const lines = pass.out.trim().split("\n");
  equal(lines.at(-1), "verify: PASS");
  const first = JSON.parse(lines[0]!);
  for (const k of ["max_abs_err", "rel_l2", "greedy_agree", "greedy_checked"]) ok(k in first, k);
  const ref = JSON.parse(await Deno.readTextFile(`${dir}reference.json`));
  ref.prompts[0].logits[0][5] += 0.5;
  const tmp = await Deno.makeTempFile({ suffix: ".json" });
  await Deno.writeTextFile(tmp, JSON.stringify(ref));
  const fail = await run("--model", dir, "--reference", tmp);
  equal(fail.code, 1);
  ok(fail.out.trim().endsWith("verify: FAIL"));
  equal((await run()).code, 2);
  await Deno.remove(tmp);
});
