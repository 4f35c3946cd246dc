/**
 * Released blocks are never read (issue 22), on the GPU (lavapipe): the scheduler and block
 * manager drive the forward pass of a tiny Mistral with a window of 6 keys on every layer, two
 * sequences at once in a 6-block cache (blocks of 4) that neither would fit whole. Before every
 * step, every block no running sequence holds is filled with NaN, and the table entries of the
 * blocks a sequence dropped are pointed at a NaN block outside the cache's pool: a single read
 * of either would turn the logits NaN. Every step's logits stay finite, and each sequence's
 * greedy tokens equal those of the plain loop that keeps every block.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { RequestContext } from "../../contract/engine.ts";
import { kvWindow } from "../../model/attention_knobs.ts";
import { Forward } from "../../runtime/forward.ts";
import { defaultKvDtype, GpuModel } from "../../runtime/gpu_model.ts";
import { kvBytesPerElement } from "../../gpu/kernels/attention.ts";
import { BlockManager, DROPPED } from "./block_manager.ts";
import { Scheduler, type TokenSlots } from "./scheduler.ts";
import { Sequence } from "../sequence.ts";
import { request } from "../../../test/support/fortune_engine.ts";
import { testGpu } from "../../../test/support/gpu.ts";
import {
  referenceTokens,
  WINDOW,
  windowModel,
  windowPrompt,
} from "../../../test/support/window_model.ts";

const BS = 4, POOL = 6, POISON = POOL, PROMPT = 10, OUT = 40;

const idSlots: TokenSlots = { admit: () => {}, evict: () => {}, index: (s, p) => s.tokens[p]! };

function argmax(row: Float32Array): number {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i]! > row[best]!) best = i;
  return best;
}

Deno.test("dropped blocks and their table entries are never read: NaN there changes nothing", async () => {
  const prompts = [windowPrompt(3, PROMPT), windowPrompt(11, PROMPT)];
  const expected: number[][] = [];
  for (const p of prompts) expected.push(await referenceTokens(p, OUT));
  const ck = await windowModel();
  const c = ck.config;
  const kvDtype = defaultKvDtype(ck.weights);
  // One block more than the pool: the NaN block dropped entries are pointed at.
  const model = await GpuModel.fromCheckpoint(await testGpu(), ck, {
    blockSize: BS,
    kvBlocks: POOL + 1,
    kvDtype,
  });
  const fwd = new Forward(model);
  try {
    const blocks = new BlockManager({ numBlocks: POOL, blockSize: BS });
    const window = kvWindow(c, c.numLayers);
    equal(window, WINDOW);
    const sched = new Scheduler(
      blocks,
      { maxNumSeqs: 2, maxNumBatchedTokens: 64, kvWindow: window },
      idSlots,
    );
    ok((PROMPT + OUT) > 2 * POOL * BS, "together the sequences pass the cache twice over");
    const seqs = prompts.map((p) =>
      new Sequence(
        request(p, { stop_conditions: { max_tokens: OUT } }),
        new RequestContext(),
        sched.sequenceLimit(c.maxPositionEmbeddings),
      )
    );
    sched.waiting.push(...seqs);
    const blockBytes = BS * c.numKvHeads * c.headDim * kvBytesPerElement(kvDtype);
    const nan = new Uint32Array(blockBytes / 4).fill(kvDtype === "f32" ? 0x7fc00000 : 0x7e007e00);
    const q = model.gpu.device.queue;
    const poison = (id: number) => {
      for (let l = 0; l < c.numLayers; l++) {
        q.writeBuffer(model.kCache[l]!, id * blockBytes, nan);
        q.writeBuffer(model.vCache[l]!, id * blockBytes, nan);
      }
    };
    let steps = 0, pointed = 0;
    while (!sched.idle) {
      const step = sched.next();
      ok(step && steps++ < 500, "a step can run while sequences are unfinished");
      const live = new Set(sched.running.flatMap((s) => s.blocks!.blocks));
      for (let id = 0; id <= POOL; id++) if (!live.has(id)) poison(id);
      const table = Array.from(step.batch.blockTable);
      let t = 0;
      for (const { seq, count } of step.parts) {
        const offset = step.batch.tableOffsets[t]!;
        seq.blocks!.blocks.forEach((id, j) => {
          if (id === DROPPED) table[offset + j] = POISON, pointed++;
        });
        t += count;
      }
      const logits = await fwd.run({ ...step.batch, blockTable: table });
      ok(logits.every(Number.isFinite), `step ${steps}: the logits are finite`);
      for (const { seq, count } of step.parts) {
        seq.computed += count;
        blocks.commit(seq.blocks!, seq.tokens, seq.computed);
      }
      step.sampled.forEach((seq, i) => {
        seq.accept(argmax(logits.subarray(i * c.vocabSize, (i + 1) * c.vocabSize)), 0);
        if (seq.finished) sched.remove(seq);
      });
    }
    equal(sched.preemptions, 0, "both fit at once: nothing was recomputed from poisoned blocks");
    ok(sched.droppedBlocks >= 2 * 10, `${sched.droppedBlocks} blocks dropped`);
    ok(pointed > 0, "steps carried dropped entries, pointed at the NaN block");
    seqs.forEach((s, i) => deepStrictEqual(s.tokens.slice(PROMPT), expected[i], `sequence ${i}`));
    equal(blocks.used, 0);
  } finally {
    fwd.destroy();
    model.destroy();
  }
});
