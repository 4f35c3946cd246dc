/**
 * `WebGpuEngine` on the hybrid models of the family fixtures (LFM2: three short-convolution layers
 * around one attention layer; Granite 4.0-H: three Mamba2 layers around one attention layer),
 * whose sequences each keep a recurrent state beside their KV blocks: requests
 * run together, in prompt chunks of any size, preempted and readmitted, or beside one aborted
 * midway, stream what each streams alone (greedy and seeded), and the float64 reference's greedy
 * tokens; a repeated prompt is computed again (no prefix is reused, as `runtime_data` and the
 * metrics say); speculative decoding is refused by name; the state's memory is counted.
 */
import { deepStrictEqual, ok, rejects, strictEqual as equal } from "node:assert/strict";
import { RequestContext } from "../../contract/engine.ts";
import { EngineError } from "../../contract/errors.ts";
import { EngineMetrics } from "../../contract/metrics/engine_metrics.ts";
import type { PreprocessedRequest } from "../../contract/types.ts";
import { dirFiles } from "../../adapters/deno/file_source.ts";
import { openCheckpoint } from "../../model/checkpoint.ts";
import { ReferenceModel } from "../../reference/model.ts";
import { collect, request } from "../../../test/support/fortune_engine.ts";
import { testGpu } from "../../../test/support/gpu.ts";
import { WebGpuEngine } from "./engine.ts";
import type { WebGpuEngineOptions } from "./options.ts";

/**
 * The families, with one sequence's state in bytes worked out by hand from their configs: LFM2,
 * 3 convolution layers × 2 rows × 32 channels; Granite 4.0-H, 3 Mamba2 layers × (3 rows × 128
 * channels + 64 channels × 16 state values); f32.
 */
const FAMILIES = [
  {
    family: "lfm2",
    kinds: ["short_conv", "attention", "short_conv", "short_conv"],
    state: 3 * 2 * 32 * 4,
  },
  {
    // Qwen3.5: 3 delta net layers × (3 rows × 64 conv channels + 4 value heads × 8 × 8 state).
    family: "qwen35",
    kinds: ["delta_net", "delta_net", "delta_net", "attention"],
    state: 3 * (3 * 64 + 4 * 8 * 8) * 4,
  },
  {
    family: "granitehybrid",
    kinds: ["mamba2", "mamba2", "attention", "mamba2"],
    state: 3 * (3 * 128 + 64 * 16) * 4,
  },
];

for (const { family, kinds, state } of FAMILIES) {
  const DIR = new URL(`../../../test/fixtures/families/${family}/`, import.meta.url).pathname;
  const TOKENS: number[] = JSON.parse(await Deno.readTextFile(`${DIR}manifest.json`)).tokens;
  const FILES = () => dirFiles(`${DIR}model.gguf`);
  const model = family;

  /** Four prompts of different lengths, one seeded, each asking for 12 tokens. */
  const REQUESTS: PreprocessedRequest[] = [
    request(TOKENS.slice(0, 50), { model, stop_conditions: { max_tokens: 12 } }),
    request(TOKENS.slice(0, 9), { model, stop_conditions: { max_tokens: 12 } }),
    request(TOKENS.slice(0, 33), {
      model,
      stop_conditions: { max_tokens: 12 },
      sampling_options: { temperature: 0.9, seed: 7 },
    }),
    request([1, ...TOKENS.slice(20, 44)], { model, stop_conditions: { max_tokens: 12 } }),
  ];

  const withEngine = async <T>(
    options: Partial<WebGpuEngineOptions>,
    run: (e: WebGpuEngine) => Promise<T>,
  ): Promise<T> => {
    const e = new WebGpuEngine({ files: FILES(), name: model, gpu: await testGpu(), ...options });
    await e.start(0n);
    try {
      return await run(e);
    } finally {
      await e.cleanup();
    }
  };

  /** Each request alone on a roomy engine (one sequence at a time, whole prompts). */
  const ALONE: number[][] = await withEngine({ kvBlocks: 32 }, async (e) => {
    const out: number[][] = [];
    for (const r of REQUESTS) out.push((await collect(e, r)).ids);
    return out;
  });

  Deno.test(`${family}: alone, the greedy requests stream the float64 reference's tokens`, async () => {
    const ck = await openCheckpoint(FILES());
    const ref = await ReferenceModel.load(ck.config, ck.weights);
    let compared = 0;
    for (const i of [0, 1, 3]) {
      const g = ref.greedy(REQUESTS[i]!.token_ids, 12);
      // Up to the first near-tie, where f32 and float64 may part.
      const tie = g.margins.findIndex((m) => m < 0.01);
      const n = tie < 0 ? 12 : tie;
      deepStrictEqual(ALONE[i]!.slice(0, n), g.tokens.slice(0, n), `request ${i}`);
      compared += n;
    }
    ok(compared >= 20, `only ${compared} tokens before near-ties`);
  });

  Deno.test(`${family}: together, in prompt chunks of 7 and of 4, the requests stream what they stream alone`, async () => {
    for (const chunk of [7, 4]) {
      await withEngine({ kvBlocks: 32, maxNumBatchedTokens: chunk }, async (e) => {
        const together = await Promise.all(REQUESTS.map((r) => collect(e, r)));
        deepStrictEqual(together.map((r) => r.ids), ALONE, `chunks of ${chunk}`);
        equal(e.usedBlocks, 0);
      });
    }
  });

  Deno.test(`${family}: a cache too small for all four preempts and readmits, and the streams are unchanged`, async () => {
    // 5 blocks of 16 tokens: the longest request alone needs 4.
    await withEngine({ kvBlocks: 5, pipelineDepth: 3 }, async (e) => {
      const together = await Promise.all(REQUESTS.map((r) => collect(e, r)));
      deepStrictEqual(together.map((r) => r.ids), ALONE);
      ok(e.steps.preemptions > 0, "the small cache forced preemption");
      equal(e.usedBlocks, 0);
    });
  });

  Deno.test(`${family}: a request aborted early or midway leaves the others' streams and the next request's unchanged`, async () => {
    await withEngine({ kvBlocks: 32, maxNumBatchedTokens: 8 }, async (e) => {
      for (const after of [0, 5]) {
        const ctx = new RequestContext();
        let seen = 0;
        const aborted = (async () => {
          for await (const c of e.generate(REQUESTS[0]!, ctx)) {
            seen += c.token_ids.length;
            if (seen >= after) ctx.stop();
          }
        })();
        if (after === 0) ctx.stop();
        const others = await Promise.all(REQUESTS.slice(1).map((r) => collect(e, r)));
        await aborted;
        deepStrictEqual(others.map((r) => r.ids), ALONE.slice(1), `abort after ${after}`);
        // The aborted sequence's state slot is taken by the next request, which starts clean.
        deepStrictEqual((await collect(e, REQUESTS[0]!)).ids, ALONE[0]);
      }
      equal(e.usedBlocks, 0);
    });
  });

  Deno.test(`${family}: a repeated prompt is computed again, and runtime_data and the metrics say prefixes are not reused`, async () => {
    const e = new WebGpuEngine({ files: FILES(), name: model, gpu: await testGpu(), kvBlocks: 32 });
    const config = await e.start(0n);
    try {
      const metrics = EngineMetrics.fromHierarchy({
        namespace: "ns",
        component: "c",
        endpoint: "e",
        workerId: 1n,
      });
      await e.setupMetrics({ model, component: "c", model_load_time_seconds: 0, metrics });
      const rd = config.runtime_data!;
      equal(rd.prefix_caching, false);
      ok(String(rd.prefix_caching_off_because).includes("recurrent"));
      const recurrent = rd.recurrent as Record<string, unknown>;
      deepStrictEqual(recurrent.layer_kinds, kinds);
      equal(recurrent.state_bytes_per_sequence, state);
      equal(recurrent.state_slots, config.max_num_seqs);
      const first = await collect(e, REQUESTS[0]!);
      const second = await collect(e, REQUESTS[0]!);
      deepStrictEqual(second.ids, first.ids);
      deepStrictEqual(e.cachedBlockHashes(), [], "no block was cached");
      const text = metrics.render().body;
      ok(/^dynamo_component_prefix_cache_enabled\{[^}]*\} 0$/m.test(text), text);
      const stateBytes = text.match(
        /^dynamo_component_gpu_memory_bytes\{[^}]*kind="state"[^}]*\} (\d+)/m,
      );
      equal(Number(stateBytes?.[1] ?? -1), config.max_num_seqs! * state);
    } finally {
      await e.cleanup();
    }
  });

  Deno.test(`${family}: speculative decoding is refused by name, twice, and a plain engine starts after`, async () => {
    for (let i = 0; i < 2; i++) {
      const e = new WebGpuEngine({
        files: FILES(),
        name: model,
        gpu: await testGpu(),
        kvBlocks: 32,
        speculative: { method: "ngram", numSpeculativeTokens: 3 },
      });
      await rejects(
        e.start(0n),
        (err: unknown) =>
          err instanceof EngineError && err.type === "InvalidArgument" &&
          err.message.includes("speculative") && err.message.includes(family),
      );
    }
    await withEngine({ kvBlocks: 32 }, async (e) => {
      deepStrictEqual((await collect(e, REQUESTS[1]!)).ids, ALONE[1]);
    });
  });

  Deno.test(`${family}: a prompt longer than the whole cache is refused, and the engine serves the next`, async () => {
    await withEngine({ kvBlocks: 2 }, async (e) => {
      await rejects(
        collect(e, REQUESTS[0]!),
        (err: unknown) => err instanceof EngineError && err.type === "InvalidArgument",
      );
      deepStrictEqual((await collect(e, REQUESTS[1]!)).ids, ALONE[1]);
    });
  });
}
