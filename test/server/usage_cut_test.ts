/**
 * Usage and `dynamo_frontend_*` for requests cut short, and on the engine route: a client that
 * cancels (whole, or streamed once it has read the tokens sent so far) and an engine that fails
 * after 10 tokens, on chat, completions and the Responses API; and `/v1/engine/generate` ending by
 * EOS, `max_tokens`, cancel and error. The count each must equal is the one the client read (the
 * streamed text tokenized, or the token ids of the NDJSON lines) and the engine's own record of
 * what it handed out; none is taken from the server's own counting.
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import {
  bodyOf,
  call,
  checkCounted,
  type Route,
  settled,
  sseData,
  streamSeen,
  type UsageServer,
  usageServer,
} from "../support/usage_probe.ts";

const CHUNK = 5, AT = 10;
const SCRIPT = "Fortune favours the bold, and the bold read on.";
const ROUTES = ["chat", "completions", "responses"] as const;
const PATHS: Record<Route, string> = {
  chat: "/v1/chat/completions",
  completions: "/v1/completions",
  responses: "/v1/responses",
};
const tokenCount = (s: UsageServer, text: string) =>
  s.tokenizer.encode(text, { addSpecial: false }).length;

/** Read `res`'s events until their text is `want`, then cancel: what the client was streamed. */
async function readUntil(route: Route, res: Response, want: string): Promise<string> {
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let raw = "", text = "";
  while (text !== want) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the stream ended at ${JSON.stringify(text)}`);
    raw += dec.decode(value, { stream: true });
    const complete = raw.slice(0, raw.lastIndexOf("\n") + 1);
    text = streamSeen(route, res.status, sseData(complete)).text;
  }
  await reader.cancel();
  return text;
}

Deno.test("a cancelled request counts the tokens generated before it, whole and streamed", async () => {
  const s = await usageServer(CHUNK);
  try {
    s.engine.plan = { text: SCRIPT, end: { kind: "hold", at: AT } };
    for (const route of ROUTES) {
      for (const stream of [false, true]) {
        const before = await s.counts();
        const holding = s.engine.holding(), ended = s.engine.ended();
        const ac = new AbortController();
        const reply = fetch(`${s.base}${PATHS[route]}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(bodyOf(route, stream, {})),
          signal: ac.signal,
        });
        await holding;
        if (stream) {
          const streamed = await readUntil(route, await reply, SCRIPT.slice(0, AT));
          equal(tokenCount(s, streamed), AT, "the streamed text, tokenized");
        } else {
          ac.abort();
          await reply.catch(() => {});
        }
        await ended;
        const after = await settled(s, before);
        const label = `${route} ${stream ? "streamed" : "whole"} cancelled`;
        checkCounted(
          s,
          label,
          undefined,
          { tokens: AT, status: "cancelled", usage: false },
          before,
          after,
        );
      }
    }
  } finally {
    await s.close();
  }
});

Deno.test("an engine failing after 10 tokens: the error counted with the tokens it generated", async () => {
  const s = await usageServer(CHUNK);
  try {
    s.engine.plan = { text: SCRIPT, end: { kind: "error", at: AT } };
    for (const route of ROUTES) {
      for (const stream of [false, true]) {
        const before = await s.counts();
        const seen = await call(s, route, bodyOf(route, stream, {}));
        const after = await settled(s, before);
        const label = `${route} ${stream ? "streamed" : "whole"} failed`;
        ok(seen.error, `${label}: the client was told`);
        if (stream) equal(seen.text, SCRIPT.slice(0, AT), `${label}: the text streamed`);
        // Only a Responses stream reports usage on failure (`response.failed`).
        const usage = stream && route === "responses";
        checkCounted(s, label, seen, { tokens: AT, status: "error", usage }, before, after);
      }
    }
  } finally {
    await s.close();
  }
});

/** POST a request to the engine route; its NDJSON lines' token ids and last finish reason. */
async function engineRoute(
  s: UsageServer,
  maxTokens: number,
  cancelAt?: number,
): Promise<{ ids: number[]; finish: unknown }> {
  const res = await fetch(`${s.base}/v1/engine/generate`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "fortune",
      token_ids: [256, 72, 105],
      stop_conditions: { max_tokens: maxTokens },
      sampling_options: {},
      output_options: {},
      eos_token_ids: [],
      annotations: [],
    }),
  });
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let raw = "", ids: number[] = [], finish: unknown;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    raw += dec.decode(value, { stream: true });
    const lines = raw.split("\n").slice(0, -1).map((l) => JSON.parse(l));
    ids = lines.flatMap((c) => c.token_ids);
    finish = lines.at(-1)?.finish_reason;
    if (cancelAt !== undefined && ids.length >= cancelAt) {
      await reader.cancel();
      break;
    }
  }
  return { ids, finish };
}

Deno.test("the engine route: its metrics equal the token ids streamed, however it ends", async () => {
  const s = await usageServer(CHUNK);
  const all = s.tokenizer.encode(SCRIPT, { addSpecial: false });
  const cases = [
    { name: "EOS", end: { kind: "eos" as const }, max: 100, tokens: all.length, status: "success" },
    { name: "max_tokens", end: { kind: "eos" as const }, max: 12, tokens: 12, status: "success" },
    {
      name: "cancel",
      end: { kind: "hold" as const, at: AT },
      max: 100,
      tokens: AT,
      status: "cancelled",
    },
    {
      name: "error",
      end: { kind: "error" as const, at: AT },
      max: 100,
      tokens: AT,
      status: "error",
    },
  ] as const;
  try {
    for (const c of cases) {
      s.engine.plan = { text: SCRIPT, end: c.end };
      const before = await s.counts();
      const ended = s.engine.ended();
      const got = await engineRoute(s, c.max, c.name === "cancel" ? AT : undefined);
      await ended;
      const after = await settled(s, before);
      const label = `engine route ${c.name}`;
      equal(JSON.stringify(got.ids), JSON.stringify(all.slice(0, c.tokens)), `${label}: ids`);
      if (c.name === "error") ok(typeof got.finish === "object", `${label}: an error finish`);
      checkCounted(
        s,
        label,
        undefined,
        { tokens: c.tokens, status: c.status, usage: false },
        before,
        after,
      );
    }
  } finally {
    await s.close();
  }
});
