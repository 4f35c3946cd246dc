/**
 * A request id a client sends is a label, never a key: against `serve` (fortune's engine in its
 * worker, where requests crossed to the worker by their id), a client that borrows another's `x-request-id` (or a completion's own id) and
 * leaves cancels only its own request; a request whose id a later, shorter one reused is still
 * cancelled when its own client leaves; a thousand requests under one constant id, some left
 * before any byte, some midway, end as each client decided, and leave no block, slot or gauge
 * behind.
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import type { LLMEngineOutput } from "../../src/contract/types.ts";
import { bytes } from "../support/fortune_engine.ts";
import { ndjsonLines, postGenerate } from "../support/engine_route.ts";
import { type RunningServer, startServer } from "./server.ts";
import { rng } from "../support/random.ts";

type Served = RunningServer;

const long = (maxTokens: number, prompt = "A long one") =>
  JSON.stringify({
    token_ids: bytes(prompt),
    stop_conditions: { max_tokens: maxTokens, ignore_eos: true },
  });

/** A streaming request under `id`, its first chunk read; `leave()` hangs up. */
async function open(s: Served, id: string, maxTokens: number) {
  const client = new AbortController();
  const res = await postGenerate(s.url, long(maxTokens), { "x-request-id": id }, client.signal);
  equal(res.status, 200);
  equal(res.headers.get("x-request-id"), id, "the label comes back");
  const chunks = ndjsonLines(res);
  const first = await chunks.next();
  ok(!first.done && first.value.token_ids.length > 0);
  return {
    chunks,
    tokens: first.value.token_ids.length,
    async leave() {
      client.abort();
      await chunks.return(undefined).catch(() => {});
    },
    /** Read to the end: the tokens and the last chunk. */
    async rest(): Promise<{ tokens: number; last: LLMEngineOutput }> {
      let tokens = this.tokens, last = first.value;
      for await (const c of chunks) {
        tokens += c.token_ids.length;
        last = c;
      }
      return { tokens, last };
    },
  };
}

/** The value of each unlabelled-or-labelled series of `/metrics` whose name is `name`, summed. */
async function metric(s: Served, name: string, labels = ""): Promise<number> {
  const text = await (await fetch(`${s.url}/metrics`)).text();
  return text.split("\n")
    .filter((l) => l.startsWith(`${name}{`) && l.includes(labels))
    .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
}

/** The engine's load as routers scrape it: requests running and waiting, blocks in use. */
const load = async (s: Served) =>
  await metric(s, "vllm:num_requests_running") + await metric(s, "vllm:num_requests_waiting") +
  await metric(s, "dynamo_component_kvstats_active_blocks");

/**
 * Wait until the engine holds no request and no block. Bounded at 5 s: a request its client
 * left is freed at the engine's next step, while one the engine could not stop would hold its
 * slot for the tens of seconds its hundreds of tokens take.
 */
async function idle(s: Served, what: string): Promise<void> {
  let held = await load(s);
  for (let i = 0; i < 100 && held > 0; i++) {
    await new Promise((r) => setTimeout(r, 50));
    held = await load(s);
  }
  equal(held, 0, what);
}

Deno.test("request ids: a client borrowing another's id and leaving cancels only its own request", async () => {
  const s = await startServer();
  try {
    // The thief holds the id first; the victim's request, under the same id, comes after.
    const thief = await open(s, "victim", 400);
    const victim = await open(s, "victim", 48);
    await thief.leave();
    const { tokens, last } = await victim.rest();
    equal(last.finish_reason, "length", "the victim ran to its end");
    equal(tokens, 48);
    await idle(s, "the thief's request cancelled, every block freed");

    // The OpenAI route's victim: thieves hold the ids a process once numbered its requests by
    // (req-1, req-2, ...), the victim's completion starts, and they leave.
    const thieves = await Promise.all(
      Array.from({ length: 12 }, (_, i) => open(s, `req-${i + 1}`, 400)),
    );
    const res = await fetch(new URL("/v1/completions", s.url), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: "fortune",
        prompt: "Once",
        max_tokens: 40,
        ignore_eos: true,
        stream: true,
      }),
    });
    const events = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let sse = "";
    while (!sse.includes("\n\n")) sse += (await events.read()).value ?? "";
    await Promise.all(thieves.map((t) => t.leave()));
    for (;;) {
      const { value, done } = await events.read();
      if (done) break;
      sse += value;
    }
    const finishes = [...sse.matchAll(/"finish_reason":"(\w+)"/g)].map((m) => m[1]);
    equal(finishes.at(-1), "length", sse.slice(-400));
    ok(sse.trimEnd().endsWith("data: [DONE]"));
    await idle(s, "the thieves' requests cancelled, every block freed");
  } finally {
    await s.stop();
  }
});

Deno.test("request ids: a request whose id a later, shorter one reused still stops when its client leaves", async () => {
  const s = await startServer();
  try {
    const first = await open(s, "dup", 900);
    const second = await open(s, "dup", 4);
    const done = await second.rest();
    equal(done.last.finish_reason, "length");
    equal(done.tokens, 4);
    await first.leave();
    await idle(s, "the first request cancelled and its blocks freed");
  } finally {
    await s.stop();
  }
});

type Plan = { kind: "read"; tokens: number } | { kind: "before" } | { kind: "midway" };

Deno.test("request ids: a thousand requests under one constant id end as each client decided", async () => {
  const s = await startServer(["--kv-blocks", "96", "--max-queued", "64"]);
  try {
    const random = rng(36);
    const plans: Plan[] = Array.from({ length: 1000 }, () => {
      const r = random();
      if (r < 0.2) return { kind: "before" };
      if (r < 0.45) return { kind: "midway" };
      return { kind: "read", tokens: 1 + Math.floor(random() * 6) };
    });
    const count = (status: string) =>
      metric(s, "dynamo_frontend_requests_total", `status="${status}"`);
    let next = 0, bad = 0;
    const problems: string[] = [];
    const worker = async () => {
      while (next < plans.length) {
        const i = next++, plan = plans[i]!;
        const client = new AbortController();
        const maxTokens = plan.kind === "read" ? plan.tokens : 300;
        const body = long(maxTokens, `${i}`);
        const req = postGenerate(s.url, body, { "x-request-id": "same" }, client.signal);
        if (plan.kind === "before") {
          client.abort();
          await req.then((r) => r.body?.cancel(), () => {});
          continue;
        }
        const res = await req;
        const chunks = ndjsonLines(res);
        if (plan.kind === "midway") {
          await chunks.next();
          client.abort();
          await chunks.return(undefined).catch(() => {});
          continue;
        }
        let tokens = 0, last: LLMEngineOutput | undefined;
        for await (const c of chunks) {
          tokens += c.token_ids.length;
          last = c;
        }
        if (last?.finish_reason !== "length" || tokens !== maxTokens) {
          bad++;
          problems.push(`#${i}: ${tokens}/${maxTokens} tokens, ${last?.finish_reason}`);
        }
      }
    };
    await Promise.all(Array.from({ length: 24 }, worker));
    equal(bad, 0, problems.slice(0, 5).join("\n"));
    const reads = plans.filter((p) => p.kind === "read").length;
    const midway = plans.filter((p) => p.kind === "midway").length;
    await idle(s, "every request left has let its slot and blocks go");
    equal(await metric(s, "dynamo_frontend_inflight_requests"), 0);
    equal(await count("success"), reads, "every request read to the end succeeded");
    equal(await count("error"), 0, "none failed");
    // Every midway request was cut ~299 tokens short of its end. One left before its response
    // may not have reached the engine at all, or have been counted.
    const cancelled = await count("cancelled");
    ok(cancelled >= midway && cancelled <= plans.length - reads, `${cancelled} cancelled`);
  } finally {
    await s.stop();
  }
});
