/**
 * The text layer's edges over the real fortune engine (lavapipe): min_tokens holds back stop
 * strings, echo, streamed text_offset equal to the whole response's, top_logprobs that keep every
 * alternative (byte tokens labelled `bytes:\xNN`), ranks from 0, unsupported engine fields.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { RequestContext } from "../../src/contract/engine.ts";
import { EngineError } from "../../src/contract/errors.ts";
import { specFiles } from "../../src/adapters/deno/file_source.ts";
import { loadText } from "../../src/text/load.ts";
import { collect, FORTUNE, fortuneEngine, request } from "../support/fortune_engine.ts";
import { testServer } from "../support/server.ts";

const engine = await fortuneEngine();
const config = await engine.start(1n);
const text = await loadText(specFiles({ kind: "dir", path: FORTUNE, name: "fortune" }));
const server = testServer(engine);
server.ready(config, text);

const post = (body: Record<string, unknown>) =>
  server.fetch(
    new Request("http://localhost/v1/completions", {
      method: "POST",
      headers: { "content-type": "application/json", host: "localhost" },
      body: JSON.stringify({ model: "fortune", temperature: 0, ignore_eos: true, ...body }),
    }),
  );
type Choice = {
  text: string;
  finish_reason: string | null;
  logprobs: {
    tokens: string[];
    text_offset: number[];
    top_logprobs: Record<string, number>[];
  } | null;
};
const whole = async (body: Record<string, unknown>) => {
  const res = await post(body);
  equal(res.status, 200, await res.clone().text());
  return ((await res.json()) as { choices: Choice[] }).choices[0]!;
};
const streamed = async (body: Record<string, unknown>) => {
  const res = await post({ ...body, stream: true });
  const events = (await res.text()).split("\n\n").filter((e) => e.startsWith("data: {"));
  return events.map((e) => (JSON.parse(e.slice(6)) as { choices: Choice[] }).choices[0]!);
};

Deno.test({
  name: "text layer over fortune: min_tokens, echo, text_offset, top_logprobs, ranks",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const free = await whole({ prompt: "You will", max_tokens: 24 });
    const first = free.text.trim()[0]!;
    ok(first !== undefined && free.text.length > 10, free.text);

    await t.step("min_tokens holds back a stop string", async () => {
      // Without min_tokens, a stop string at the first character ends the text at once.
      const early = await whole({ prompt: "You will", max_tokens: 24, stop: [first] });
      equal(early.finish_reason, "stop");
      ok(early.text.length < free.text.indexOf(first) + 1);
      const held = await whole({
        prompt: "You will",
        max_tokens: 24,
        stop: [first],
        min_tokens: 12,
        logprobs: 0,
      });
      ok(held.logprobs!.tokens.length >= 12, `${held.logprobs!.tokens.length} tokens`);
      ok(free.text.startsWith(held.text), "the same greedy text, cut later");
    });

    await t.step("echo puts the prompt first, whole and streamed", async () => {
      const echoed = await whole({ prompt: "You will", max_tokens: 8, echo: true });
      equal(echoed.text, "You will" + (await whole({ prompt: "You will", max_tokens: 8 })).text);
      const chunks = await streamed({ prompt: "You will", max_tokens: 8, echo: true });
      equal(chunks.map((c) => c.text).join(""), echoed.text);
    });

    await t.step(
      "streamed text_offset equals the whole response's, with a stop string",
      async () => {
        const body = {
          prompt: "You will",
          max_tokens: 20,
          logprobs: 1,
          stop: [free.text.slice(8, 10)],
        };
        const all = await whole(body);
        const chunks = await streamed(body);
        const offsets = chunks.flatMap((c) => c.logprobs?.text_offset ?? []);
        deepStrictEqual(offsets, all.logprobs!.text_offset);
      },
    );

    await t.step(
      "top_logprobs keeps all 20 alternatives (byte tokens as bytes:\\xNN)",
      async () => {
        // After a UTF-8 lead byte, the likely next tokens are continuation bytes, each of which
        // decodes alone to U+FFFD: as text keys they collided and entries were lost.
        const prompt = [...text.tokenizer.encode("Caf"), 0xc3];
        const got = await whole({ prompt, max_tokens: 2, logprobs: 20 });
        for (const top of got.logprobs!.top_logprobs) {
          equal(Object.keys(top).length, 20, JSON.stringify(Object.keys(top)));
        }
        const labels = got.logprobs!.top_logprobs.flatMap((top) => Object.keys(top));
        ok(
          labels.some((l) => /^bytes:(\\x[0-9a-f]{2})+$/.test(l)),
          "a partial UTF-8 byte among them",
        );
        ok(labels.every((l) => !l.includes("\uFFFD")));
      },
    );

    await t.step("engine top_logprobs rank from 0 (the most likely)", async () => {
      const { chunks } = await collect(
        engine,
        request([1, 89, 111, 117], { output_options: { logprobs: 3 } }),
      );
      const ranks = chunks.find((c) => c.top_logprobs)!.top_logprobs![0]!.map((t) => t.rank);
      deepStrictEqual(ranks, [0, 1, 2]);
    });

    await t.step("engine fields it does not honour are refused, naming them", async () => {
      for (
        const [field, over] of [
          ["best_of", { sampling_options: { best_of: 2 } }],
          [
            "guided_decoding.backend",
            { sampling_options: { guided_decoding: { json: {}, backend: "outlines" } } },
          ],
          ["prompt_logprobs", { output_options: { prompt_logprobs: 1 } }],
        ] as const
      ) {
        let error: unknown;
        try {
          for await (const _ of engine.generate(request([1, 2], over), new RequestContext())) {
            // a refused request yields nothing
          }
        } catch (e) {
          error = e;
        }
        ok(error instanceof EngineError && error.type === "InvalidArgument", String(error));
        ok(String(error).includes(field));
      }
      let error: unknown;
      const bare = { ...request([1, 2]) } as Partial<ReturnType<typeof request>>;
      delete bare.stop_conditions;
      try {
        for await (const _ of engine.generate(bare as never, new RequestContext())) {
          // refused
        }
      } catch (e) {
        error = e;
      }
      ok(error instanceof EngineError && error.type === "InvalidArgument", String(error));
      ok(String(error).includes("stop_conditions"));
    });
    await engine.cleanup();
  },
});
