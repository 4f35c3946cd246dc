/**
 * A layer's experts split into buffers of whole experts (`LoadOptions.maxSlabBytes`, the path a
 * slab bigger than one binding takes) give the logits the one-buffer load gives: the Qwen3-MoE
 * fixture (F32 GGUF) and gpt-oss's (MXFP4 experts, per-expert biases, clamped SwiGLU), 4 experts
 * each, on both kernel paths. The split is forced at three down matrices' bytes: the gate/up
 * slab (twice the bytes per expert) goes to 4 buffers of one expert, the down slab to 2 (3 + 1).
 * Only the order of the residual adds changes, so the logits agree to float rounding: within
 * 1e-5·(1 + max |logit|). A split below one expert is refused naming the slab.
 */
import { deepStrictEqual, ok, rejects } from "node:assert/strict";
import { EngineError } from "../contract/errors.ts";
import { dirFiles } from "../adapters/deno/file_source.ts";
import { openCheckpoint } from "../model/checkpoint.ts";
import { GpuModel } from "./gpu_model.ts";
import { familyFixture, gpuLogits, maxAbsDiff } from "../../test/support/family_fixture.ts";
import { testGpu, withErrorScopes } from "../../test/support/gpu.ts";

const ROOT = new URL("../../test/fixtures/families/", import.meta.url).pathname;

const fixtures = {
  "qwen3moe F32": () => familyFixture("qwen3moe").gguf(),
  "gpt-oss MXFP4": () => openCheckpoint(dirFiles(`${ROOT}gpt-oss/model.mxfp4_moe.gguf`)),
};

for (const [name, open] of Object.entries(fixtures)) {
  for (const paths of ["cpu", "gpu"] as const) {
    Deno.test(`${name} (${paths} paths): experts split into buffers give the one-buffer logits`, async () => {
      const ck = await open();
      const gpu = await testGpu(paths);
      const tokens = familyFixture(name.startsWith("qwen") ? "qwen3moe" : "gpt-oss").manifest
        .tokens;
      const expert0 = ck.weights.layers[0]!.experts![0]!;
      const down = expert0.down, gateUpBytes = expert0.gate.length + expert0.up.length;
      // The slabs' label stem in layer l.
      const stem = (l: number) =>
        ck.weights.layers[l]!.experts![0]!.gate.name.replace(/\.0\.gate_proj\.weight$/, "");
      await withErrorScopes(gpu.device, async () => {
        const load = (maxSlabBytes?: number) =>
          GpuModel.fromCheckpoint(gpu, ck, {
            kvDtype: "f32",
            ...(maxSlabBytes ? { maxSlabBytes } : {}),
          });
        const whole = await load();
        const split = await load(3 * down.length);
        try {
          const labels = (m: GpuModel) =>
            m.layers.map((l) => [
              l.experts!.gateUp.parts.map((p) => `${p.buffer.label}:${p.experts}`),
              l.experts!.down.parts.map((p) => `${p.buffer.label}:${p.experts}`),
            ]);
          deepStrictEqual(
            labels(whole),
            whole.layers.map((_, l) => [[`${stem(l)}.gate_up[0..3]:4`], [
              `${stem(l)}.down[0..3]:4`,
            ]]),
          );
          deepStrictEqual(
            labels(split),
            split.layers.map((_, l) => [
              [0, 1, 2, 3].map((e) => `${stem(l)}.gate_up[${e}..${e}]:1`),
              [`${stem(l)}.down[0..2]:3`, `${stem(l)}.down[3..3]:1`],
            ]),
          );
          const want = await gpuLogits(whole, tokens);
          const got = await gpuLogits(split, tokens);
          const scale = want.reduce(
            (m, row) => row.reduce((n, v) => Math.max(n, Math.abs(v)), m),
            0,
          );
          const err = maxAbsDiff(got, want);
          console.log(`  split vs whole: max|err| ${err.toExponential(2)} (max |logit| ${scale})`);
          ok(err <= 1e-5 * (1 + scale), `${err}`);
        } finally {
          whole.destroy();
          split.destroy();
        }
        // Below one expert's gate/up matrices: the first slab uploaded is refused.
        await rejects(
          load(gateUpBytes - 1),
          (e: unknown) =>
            e instanceof EngineError && e.type === "ResourceExhausted" &&
            e.message.includes(`${stem(0)}.gate_up`) &&
            e.message.includes(`${gateUpBytes} bytes`),
        );
      });
    });
  }
}
