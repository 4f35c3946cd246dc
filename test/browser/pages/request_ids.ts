/**
 * Page of test/browser/request_ids.test.mjs: on fortune through `openModel` (the engine in the
 * page's worker, then in Kiln's SharedWorker), contexts that carry the same `requestId` reach
 * only their own requests: one that borrows another's id and stops leaves the other running, one
 * whose id a later, shorter request reused still stops, and a thousand requests under one
 * constant id, some stopped before they start and some midway, end as each caller decided and
 * leave no block behind.
 */
import { RequestContext } from "../../../src/contract/engine.ts";
import type { LLMEngineOutput, PreprocessedRequest } from "../../../src/contract/types.ts";
import { type KilnModel, openModel } from "../../../src/worker/open.ts";
import { runChecks } from "./report.ts";
import { rng } from "../../support/random.ts";

function assert(cond: unknown, message: string): asserts cond {
  if (!cond) throw new Error(message);
}

const request = (maxTokens: number, prompt = "A long one"): PreprocessedRequest => ({
  model: "fortune",
  token_ids: [256, ...new TextEncoder().encode(prompt)],
  stop_conditions: { max_tokens: maxTokens, ignore_eos: true },
  sampling_options: { temperature: 0 },
  output_options: {},
  eos_token_ids: [],
  annotations: [],
});

/** A request under `id`, its first chunk read; `stop()` cancels it through its own context. */
async function open(model: KilnModel, id: string, maxTokens: number) {
  const ctx = new RequestContext({ requestId: id });
  const chunks = model.engine.generate(request(maxTokens), ctx)[Symbol.asyncIterator]();
  const first = await chunks.next();
  assert(!first.done && first.value.token_ids.length > 0, "a first token");
  return {
    ctx,
    async rest(): Promise<{ tokens: number; last: LLMEngineOutput }> {
      let tokens = first.value.token_ids.length, last = first.value;
      for (let c = await chunks.next(); !c.done; c = await chunks.next()) {
        tokens += c.value.token_ids.length;
        last = c.value;
      }
      return { tokens, last };
    },
  };
}

/** Wait (bounded at 5 s) until the engine holds no block and the host no stream. */
async function idle(model: KilnModel, what: string): Promise<void> {
  let s = await model.engine.stats();
  for (let i = 0; i < 100 && (s!.usedBlocks > 0 || s!.streams > 0); i++) {
    await new Promise((r) => setTimeout(r, 50));
    s = await model.engine.stats();
  }
  assert(s && s.usedBlocks === 0 && s.streams === 0, `${what}: ${JSON.stringify(s)}`);
}

async function borrowed(model: KilnModel): Promise<string> {
  const thief = await open(model, "victim", 400);
  const victim = await open(model, "victim", 24);
  thief.ctx.stop();
  await model.engine.abort(thief.ctx); // by its context: never the victim
  const thiefEnd = await thief.rest();
  assert(thiefEnd.last.finish_reason === "cancelled", `thief ${thiefEnd.last.finish_reason}`);
  const { tokens, last } = await victim.rest();
  assert(
    last.finish_reason === "length" && tokens === 24,
    `victim ${tokens} ${last.finish_reason}`,
  );
  await idle(model, "every block freed");
  return `thief cancelled after ${thiefEnd.tokens} tokens; victim ${tokens} tokens`;
}

async function reused(model: KilnModel): Promise<string> {
  const first = await open(model, "dup", 900);
  const second = await open(model, "dup", 4);
  const done = await second.rest();
  assert(done.last.finish_reason === "length" && done.tokens === 4, `second ${done.tokens}`);
  first.ctx.stop();
  const end = await first.rest();
  assert(end.last.finish_reason === "cancelled", `first ended ${end.last.finish_reason}`);
  await idle(model, "the first request's blocks freed");
  return `first cancelled after ${end.tokens} tokens`;
}

/** One request under the constant id, stopped as `plan` says; a problem, or undefined. */
async function one(
  model: KilnModel,
  i: number,
  r: number,
  len: number,
): Promise<string | undefined> {
  const ctx = new RequestContext({ requestId: "same" });
  const before = r < 0.2, midway = r >= 0.2 && r < 0.45;
  if (before) ctx.stop();
  const maxTokens = before || midway ? 300 : len;
  let tokens = 0, last: LLMEngineOutput | undefined;
  for await (const c of model.engine.generate(request(maxTokens, `${i}`), ctx)) {
    tokens += c.token_ids.length;
    last = c;
    if (midway && tokens > 0) ctx.stop();
  }
  const want = before || midway ? "cancelled" : "length";
  if (last?.finish_reason !== want) return `#${i}: ${last?.finish_reason}, wanted ${want}`;
  if (want === "length" && tokens !== maxTokens) return `#${i}: ${tokens}/${maxTokens} tokens`;
  if (before && tokens > 0) return `#${i}: ${tokens} tokens after an abort before the start`;
  return undefined;
}

async function thousand(model: KilnModel): Promise<string> {
  const random = rng(36);
  const plans = Array.from({ length: 1000 }, () => [random(), 1 + Math.floor(random() * 4)]);
  const problems: string[] = [];
  let next = 0;
  const worker = async () => {
    while (next < plans.length) {
      const i = next++;
      const problem = await one(model, i, plans[i]![0]!, plans[i]![1]!);
      if (problem) problems.push(problem);
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: 16 }, worker));
  assert(problems.length === 0, problems.slice(0, 5).join("; "));
  await idle(model, "no block left");
  const s = await model.engine.stats();
  return `1000 requests in ${((performance.now() - t0) / 1000).toFixed(1)} s; ${
    JSON.stringify(s!.requests)
  }`;
}

const checks: [string, () => Promise<string | void>][] = [];
for (const share of [false, true]) {
  const where = share ? "shared worker" : "page worker";
  let model: KilnModel | undefined;
  const on = (f: (m: KilnModel) => Promise<string>) => async () => {
    model ??= await openModel({
      model: "/models/fortune/",
      cache: false,
      share,
      engine: { kvBlocks: 96 },
    });
    return await f(model);
  };
  checks.push(
    [`${where}: borrowing another's id and stopping ends only its own request`, on(borrowed)],
    [`${where}: a request whose id a later one reused still stops`, on(reused)],
  );
  // The thousand once, through the SharedWorker: its tab host sits on the same worker host as
  // the page's worker, so that path is the longer of the two.
  if (share) {
    checks.push([`${where}: 1000 requests under one id end as each caller decided`, on(thousand)]);
  }
  checks.push([`${where}: closed`, async () => void await model?.close()]);
}
await runChecks(checks);
