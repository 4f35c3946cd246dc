/**
 * `serve --speculative-config` (vLLM's flag) on the fortune model, by prompt lookup and with a
 * draft model (llama.cpp's Q2_K of fortune, opened in the worker as `--model` is): a greedy
 * completion over HTTP is the same text as without it, the worker's speculation counters reach
 * `/metrics`, and a bad config stops serve before it loads anything (exit 2, the flag named).
 */
import { ok, strictEqual as equal } from "node:assert/strict";
import { startServer } from "./server.ts";

const CONFIG = '{"method":"ngram","num_speculative_tokens":4,"prompt_lookup_min":1}';
const Q2K = new URL("../fixtures/llamacpp/fortune/Q2_K.gguf", import.meta.url).pathname;
const DRAFT = JSON.stringify({ model: Q2K, num_speculative_tokens: 3 });

async function complete(url: string): Promise<string> {
  const res = await fetch(`${url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "fortune",
      prompt: "la la la la la la",
      max_tokens: 48,
      temperature: 0,
    }),
  });
  equal(res.status, 200);
  return (await res.json()).choices[0].text;
}

Deno.test("serve --speculative-config: the same greedy text, and the counters on /metrics", async () => {
  const plain = await startServer();
  let want: string;
  try {
    want = await complete(plain.url);
  } finally {
    await plain.stop();
  }
  for (const config of [CONFIG, DRAFT]) {
    const spec = await startServer(["--speculative-config", config]);
    try {
      equal(await complete(spec.url), want, config);
      const text = await (await fetch(`${spec.url}/metrics`)).text();
      const value = (name: string) =>
        Number(text.match(new RegExp(`^${name}_total\\{[^}]*\\} (\\S+)$`, "m"))?.[1]);
      const drafted = value("dynamo_component_spec_decode_num_draft_tokens");
      const accepted = value("dynamo_component_spec_decode_num_accepted_tokens");
      ok(accepted > 0 && accepted <= drafted, `${config}: accepted ${accepted} of ${drafted}`);
      ok(value("dynamo_component_spec_decode_num_drafts") > 0);
    } finally {
      await spec.stop();
    }
  }
});

Deno.test("serve: a bad --speculative-config exits 2 naming the flag, before loading", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL("../../src/adapters/deno/serve.ts", import.meta.url).pathname,
      "--speculative-config",
      '{"method":"ngram","k":3}',
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  equal(out.code, 2);
  const err = new TextDecoder().decode(out.stderr);
  ok(/--speculative-config: unknown key "k"/.test(err), err);
  ok(!/listening/.test(new TextDecoder().decode(out.stdout)));
});
